"""vj.image: TF's tf.image (adjust_contrast only).

AdjustContrastv2 deliberately has no gradient, as in TF: differentiating through it
raises LookupError("gradient registry has no entry for: AdjustContrastv2"), the example
the TF autodiff guide uses. vj.RegisterGradient("AdjustContrastv2") can add one.
"""
import numpy as np

from .._dispatch import apply, to_input
from .. import _pattern_rules as patterns
from .._registry import Op, lib, register
from .._samples import Arg, Sample
from .array_ops import reshape
from .logic_ops import cast

__all__ = ["adjust_contrast"]


@register
class AdjustContrast(Op):
    """(x - mean) * factor + mean per image and channel, mean over height and width.

    No `gradient` method: register() marks the op has_gradient=False.
    """
    name = "AdjustContrastv2"
    pattern = patterns.along_axis(axes=(-3, -2))
    samples = (Sample("adjust_contrast", Arg.float(2, "n", 3), Arg.float(), no_grad="as TF"),
               Sample("adjust_contrast", Arg.float(2, 2, "n", 1), 1.5, no_grad="as TF"),
               Sample("adjust_contrast", Arg.int(2, "n", 3, hi=256, dtype=np.uint8), 0.5))

    def forward(self, images, contrast_factor):
        if images.dtype.kind == "f":
            x = images
        else:  # integer pixels: to [0, 1] floats and back, saturating (as TF)
            x = images.astype(np.float32) * np.float32(1 / np.iinfo(images.dtype).max)
        mean = np.mean(x, axis=(-3, -2), keepdims=True)
        out = (x - mean) * contrast_factor + mean
        if images.dtype.kind == "f":
            return out.astype(images.dtype, copy=False)
        info = np.iinfo(images.dtype)
        scaled = out * np.float32(info.max + 0.5)
        return np.clip(scaled, info.min, info.max).astype(images.dtype)

    def converter(self, cx, images, contrast_factor):
        s_images, s_factor = cx.stacked
        if s_factor:
            # one factor per iteration, broadcast over that iteration's image axes
            rank = images.ndim - 1 if s_images else images.ndim
            contrast_factor = reshape(contrast_factor, (cx.iters,) + (1,) * rank)
        return apply(self, images, contrast_factor)


def adjust_contrast(images, contrast_factor, name=None):
    """Adjust the contrast of images: (x - mean) * contrast_factor + mean.

    images: (..., height, width, channels), rank >= 3; the mean is per image and
    channel over height and width. contrast_factor: a scalar. Output: images.shape and
    dtype (integer images are processed as [0, 1] floats and saturated back).
    Not differentiable (as in TF).
    """
    x = to_input(images, fn="adjust_contrast", arg="images")
    if x.dtype.kind not in "iuf":
        raise TypeError(f"adjust_contrast: images must be real numeric, got dtype {x.dtype}")
    if x.ndim < 3:
        raise ValueError(f"adjust_contrast: images must have rank >= 3 (height, width, "
                         f"channels), got shape {x.shape}")
    work = x.dtype if x.dtype.kind == "f" else np.dtype(np.float32)
    f = to_input(contrast_factor, (x,) if x.dtype.kind == "f" else (), "adjust_contrast",
                 "contrast_factor")
    if f.ndim != 0:
        raise ValueError(f"adjust_contrast: contrast_factor must be a scalar, got shape "
                         f"{f.shape}")
    if f.dtype.kind not in "iuf":
        raise TypeError(f"adjust_contrast: contrast_factor must be a real number, got dtype "
                        f"{f.dtype}")
    if f.dtype != work:
        f = cast(f, work)
    return apply(AdjustContrast, x, f)


lib.publish(globals(), __all__)
