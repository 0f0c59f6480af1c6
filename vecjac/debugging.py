"""vj.debugging: TF's tf.debugging namespace (check_numerics)."""
from vecjac._src.ops.elementwise.debugging import *  # noqa: F401,F403
