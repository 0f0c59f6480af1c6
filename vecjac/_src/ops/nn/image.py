"""vj.image: TF's tf.image: adjust_contrast, and the colour functions rgb_to_hsv,
hsv_to_rgb, adjust_hue, adjust_saturation.

AdjustContrastv2 deliberately has no gradient, as in TF: differentiating through it
raises LookupError("gradient registry has no entry for: AdjustContrastv2"), the example
the TF autodiff guide uses. vj.RegisterGradient("AdjustContrastv2") can add one.

The colour functions are composites of maximum, minimum, where, abs, floormod and
stack, following TF's kernels formula by formula (colorspace_op.h, adjust_hue_op.cc,
adjust_saturation_op.cc), so that tapes, forward mode and pfor need no rule of their
own. They are differentiable piecewise, in the pixels and in delta / saturation_factor
(TF registers a gradient for RGBToHSV only), the derivative at a branch point (two
channels equal, the hue wrapping round) being one of the one-sided ones. Divisions by the
spread max - min and by the value use a denominator of 1 where the other branch of the
where is taken: 0 / 0 there would not change the value but would make the gradient NaN.
"""
import numpy as np

from vecjac._src.core.context import value_read
from vecjac._src.core.dispatch import apply, to_input
from vecjac._src.core.registry import Op, lib, register
from vecjac._src.core.samples import Arg, Sample
from vecjac._src.ops.array.shaping import reshape, stack, unstack
from vecjac._src.ops.elementwise.arithmetic import floormod
from vecjac._src.ops.elementwise.extrema import maximum, minimum
from vecjac._src.ops.elementwise.logic import cast, where
from vecjac._src.ops.elementwise.unary import abs as _abs
from vecjac._src.transforms.sparsity import patterns

__all__ = ["adjust_contrast", "rgb_to_hsv", "hsv_to_rgb", "adjust_hue", "adjust_saturation"]


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


# -- colour ------------------------------------------------------------------------------
def _rgb(images, fn, arg, ints, min_rank=1):
    """A tensor of pixels along the last axis (3 channels)."""
    x = to_input(images, fn=fn, arg=arg)
    kinds, shown = ("iuf", "real numeric") if ints else ("f", "floating-point")
    if x.dtype.kind not in kinds:
        raise TypeError(f"{fn}: {arg} must be {shown}, got dtype {x.dtype}")
    if x.ndim < min_rank:
        raise ValueError(f"{fn}: {arg} must have rank >= {min_rank}, got shape {x.shape}")
    if x.shape[-1] != 3:
        raise ValueError(f"{fn}: {arg} must have 3 channels (last dimension of size 3), got "
                         f"shape {x.shape}")
    return x


def _factor(value, fn, arg):
    """A real scalar argument (cast to the computation's dtype once everything is checked)."""
    f = to_input(value, (), fn, arg)
    if f.dtype.kind not in "iuf":
        raise TypeError(f"{fn}: {arg} must be a real number, got dtype {f.dtype}")
    if f.ndim != 0:
        raise ValueError(f"{fn}: {arg} must be a scalar, got shape {f.shape}")
    return f


def _to_float(x):
    """Integer pixels as [0, 1] float32 (TF's convert_image_dtype); floats unchanged."""
    if x.dtype.kind == "f":
        return x
    return cast(x, np.float32) * np.float32(1 / np.iinfo(x.dtype).max)


def _from_float(y, dtype):
    """Back to integer pixels, saturating (TF's convert_image_dtype, saturate=True)."""
    if np.dtype(dtype).kind == "f":
        return y
    info = np.iinfo(dtype)
    top = np.float32(info.max)
    if top > info.max:  # float32(2**31 - 1) is 2**31: the largest float32 below instead
        top = np.nextafter(top, np.float32(0))
    return cast(minimum(maximum(y * np.float32(info.max + 0.5), np.float32(info.min)), top),
                dtype)


def _spread(r, g, b):
    """(max, min) over the channels."""
    return maximum(maximum(r, g), b), minimum(minimum(r, g), b)


def _hue(r, g, b, vmax, spread, turn=1.0):
    """Hue in [0, turn): the position on the colour hexagon (turn / 3 green, 2 turn / 3
    blue), 0 for grays. turn=1: TF's RGBToHSV arithmetic (the differences times
    1 / (6 spread)); turn=6: AdjustHue's (the differences over the spread)."""
    colored = spread > 0
    safe = where(colored, spread, 1.0)
    if turn == 1.0:
        norm = (1.0 / safe) * (1.0 / 6.0)
        gb, br, rg = norm * (g - b), norm * (b - r), norm * (r - g)
    else:
        gb, br, rg = (g - b) / safe, (b - r) / safe, (r - g) / safe
    h = where(r == vmax, gb, where(g == vmax, br + turn / 3.0, rg + 2.0 * turn / 3.0))
    h = where(colored, h, 0.0)  # 0 already; the where makes its derivative 0 too, as TF's
    return where(h < 0, h + turn, h)


def _weights(h6):
    """The share of the spread each channel gets at hue h6 = 6 * hue (TF's HSVToRGB):
    piecewise linear, 1 on the channel's own third of the hexagon, 0 on the opposite."""
    def clip01(t):
        return minimum(maximum(t, 0.0), 1.0)
    return (clip01(_abs(h6 - 3.0) - 1.0), clip01(2.0 - _abs(h6 - 2.0)),
            clip01(2.0 - _abs(h6 - 4.0)))


def _to_hsv(r, g, b):
    vmax, vmin = _spread(r, g, b)
    spread = vmax - vmin
    bright = vmax > 0
    s = where(bright, spread / where(bright, vmax, 1.0), 0.0)
    return _hue(r, g, b, vmax, spread), s, vmax


def _from_hsv(h, s, v):
    one_s = 1.0 - s
    return tuple((one_s + s * w) * v for w in _weights(h * 6.0))


def rgb_to_hsv(images, name=None):
    """RGB pixels (..., 3), last axis red, green, blue, to HSV (..., 3): hue in [0, 1)
    (0 red, 1/3 green, 2/3 blue; 0 for grays), saturation (max - min) / max (0 where
    max <= 0) and value max, as TF's tf.image.rgb_to_hsv. Floating-point images only.

    >>> vj.image.rgb_to_hsv(vj.constant([[1.0, 0.5, 0.0], [0.2, 0.2, 0.2]])).numpy()
    array([[0.08333333, 1.        , 1.        ],
           [0.        , 0.        , 0.2       ]])
    """
    r, g, b = unstack(_rgb(images, "rgb_to_hsv", "images", ints=False), axis=-1)
    return stack(list(_to_hsv(r, g, b)), axis=-1)


def hsv_to_rgb(images, name=None):
    """HSV pixels (..., 3) (hue in [0, 1], saturation, value) to RGB (..., 3), as TF's
    tf.image.hsv_to_rgb: the inverse of rgb_to_hsv. Floating-point images only.

    >>> vj.image.hsv_to_rgb(vj.constant([0.5, 1.0, 0.8])).numpy()
    array([0. , 0.8, 0.8])
    """
    h, s, v = unstack(_rgb(images, "hsv_to_rgb", "images", ints=False), axis=-1)
    return stack(list(_from_hsv(h, s, v)), axis=-1)


def _outside_unit(value):
    return not bool(np.all((-1 <= value) & (value <= 1)))


def adjust_hue(image, delta, name=None):
    """Rotate the hue of RGB images by `delta` turns (TF's tf.image.adjust_hue): each
    pixel keeps its max and min channels, its hue h becomes (h + delta) mod 1.

    image: (..., height, width, 3), rank >= 3; delta: a scalar in [-1, 1] (a value that
    varies over a pfor loop is not checked; it wraps round as well). Output: image's shape
    and dtype (integer images are processed as [0, 1] floats and saturated back).

    >>> vj.image.adjust_hue(vj.constant([[[1.0, 2.0, 3.0]]]), 0.2).numpy()
    array([[[2.4, 1. , 3. ]]])
    """
    fn = "adjust_hue"
    x = _rgb(image, fn, "image", ints=True, min_rank=3)
    d = _factor(delta, fn, "delta")
    if getattr(d, "_pfor", None) is None:
        value_read(d, "internal", _outside_unit)
        if _outside_unit(d._value):
            raise ValueError(f"{fn}: delta must be in the interval [-1, 1], got "
                             f"{d._value.item()!r}")
    y = _to_float(x)
    if d.dtype != y.dtype:
        d = cast(d, y.dtype)
    r, g, b = unstack(y, axis=-1)
    vmax, vmin = _spread(r, g, b)
    spread = vmax - vmin
    # TF's AdjustHue works on (hue, min, max) rather than through saturation and value,
    # so that pixels with max <= 0 keep their colour too
    h6 = floormod(_hue(r, g, b, vmax, spread, 6.0) + d * 6.0, 6.0)
    out = stack([vmin + spread * w for w in _weights(h6)], axis=-1)
    return _from_float(out, x.dtype)


def adjust_saturation(image, saturation_factor, name=None):
    """Scale the saturation of RGB images by `saturation_factor`, clipped to [0, 1] (TF's
    tf.image.adjust_saturation): RGB to HSV, s -> min(max(s * factor, 0), 1), back.

    image: (..., height, width, 3), rank >= 3; saturation_factor: a scalar. Output:
    image's shape and dtype (integer images are processed as [0, 1] floats and saturated
    back).

    >>> vj.image.adjust_saturation(vj.constant([[[0.2, 0.4, 0.8]]]), 0.5).numpy()
    array([[[0.5, 0.6, 0.8]]])
    """
    fn = "adjust_saturation"
    x = _rgb(image, fn, "image", ints=True, min_rank=3)
    f = _factor(saturation_factor, fn, "saturation_factor")
    y = _to_float(x)
    if f.dtype != y.dtype:
        f = cast(f, y.dtype)
    h, s, v = _to_hsv(*unstack(y, axis=-1))
    s = minimum(maximum(s * f, 0.0), 1.0)
    return _from_float(stack(list(_from_hsv(h, s, v)), axis=-1), x.dtype)


lib.publish(globals(), __all__)
