"""vj.autodiff: TF's tf.autodiff namespace (ForwardAccumulator, GradientTape)."""
from vecjac._src.transforms.forward.accumulator import ForwardAccumulator  # noqa: F401
from vecjac._src.transforms.tape.tape import GradientTape  # noqa: F401
