"""vj.image: TF's tf.image (adjust_contrast, adjust_hue, adjust_saturation, rgb_to_hsv,
hsv_to_rgb)."""
from vecjac._src.ops.nn.image import *  # noqa: F401,F403
