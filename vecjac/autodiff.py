"""vj.autodiff: TF's tf.autodiff namespace (ForwardAccumulator, GradientTape)."""
from ._forward import ForwardAccumulator  # noqa: F401
from ._tape import GradientTape  # noqa: F401
