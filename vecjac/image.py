"""vj.image: TF's tf.image (adjust_contrast, adjust_hue, adjust_saturation, rgb_to_hsv,
hsv_to_rgb)."""
from .ops.image_ops import *  # noqa: F401,F403
