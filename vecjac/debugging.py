"""vj.debugging: TF's tf.debugging namespace (check_numerics)."""
from .ops.debugging_ops import *  # noqa: F401,F403
