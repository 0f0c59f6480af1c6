"""vj.image: TF's tf.image (adjust_contrast only, for the autodiff guide)."""
from .ops.image_ops import *  # noqa: F401,F403
