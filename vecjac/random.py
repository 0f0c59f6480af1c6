"""vj.random: seeded random tensors (TF's tf.random namespace)."""
from vecjac._src.ops.random.sampling import *  # noqa: F401,F403
