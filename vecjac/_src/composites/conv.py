"""Convolutions and pooling (TF's tf.nn.conv1d/2d/3d, convolution, max_pool*, avg_pool*).

They are composites of existing ops, not op blocks: the input is padded, each offset of
the window is a strided slice of it, and
- a convolution concatenates the slices along the channels (the im2col matrix, window
  offsets in C order, then channels: the order of `filters` reshaped to
  (window * in_channels, out_channels)) and multiplies by the filters in one matmul;
- max pooling takes `maximum` of the slices one after the other (a tie sends the
  gradient to the earlier offset of the window, as TF's MaxPoolGrad does), over an input
  padded with -inf for "SAME";
- average pooling adds the slices and divides by the number of real (not padded)
  elements of each window, as TF does for "SAME".
Every slice, concat, matmul and reduction already has its gradient, JVP, pfor converter
and sparsity rule, so convolutions differentiate to any order, in both modes, and
vectorize inside jacobian / vectorized_map with no rule of their own. The price is the
im2col matrix: window-size times the output's memory for a convolution.

Layouts: channels last ("NWC", "NHWC", "NDHWC") or first ("NCW", "NCHW", "NCDHW": transposed
to channels last and back); extra leading batch axes are allowed. `strides`, `dilations`
and `ksize` take an int, one int per spatial axis, or TF's full form with 1 for the batch
and channel axes. `padding`: "VALID", "SAME" or, for convolutions, explicit
[before, after] pairs per axis (full form, zeros for batch and channels).
"""
import itertools
import math
import numbers

import numpy as np

from vecjac._src.core.dispatch import to_input
from vecjac._src.core.tensor import Tensor
from vecjac._src.ops.array.layout import pad
from vecjac._src.ops.array.shaping import concat, reshape, transpose
from vecjac._src.ops.elementwise.arithmetic import add, divide
from vecjac._src.ops.elementwise.extrema import maximum
from vecjac._src.ops.linalg.products import matmul

__all__ = ["convolution", "conv1d", "conv2d", "conv3d", "max_pool", "max_pool1d",
           "max_pool2d", "max_pool3d", "avg_pool", "avg_pool1d", "avg_pool2d", "avg_pool3d"]

_FORMATS = {1: ("NWC", "NCW"), 2: ("NHWC", "NCHW"), 3: ("NDHWC", "NCDHW")}


# -- argument checks ---------------------------------------------------------------------
def _channels_first(data_format, n, fn):
    last, first = _FORMATS[n]
    if data_format is None or data_format == last:
        return False
    if data_format == first:
        return True
    raise ValueError(f"{fn}: data_format must be {last!r} or {first!r}, got {data_format!r}")


def _spatial_ints(value, n, first, fn, arg):
    """One positive int per spatial axis from an int, a list of 1 or n ints, or TF's full
    form of n + 2 ints (1 along the batch and channel axes)."""
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        values = [value] * n
    else:
        if isinstance(value, (str, bytes, dict)) or not hasattr(value, "__len__"):
            raise TypeError(f"{fn}: {arg} must be an int or a list of ints, got "
                            f"{type(value).__name__}")
        values = list(value)
        if not all(isinstance(v, numbers.Integral) and not isinstance(v, bool)
                   for v in values):
            raise TypeError(f"{fn}: {arg} must be ints, got {values!r}")
        if len(values) == 1:
            values = values * n
        elif len(values) == n + 2:
            outer = (values[0], values[1]) if first else (values[0], values[-1])
            if outer != (1, 1):
                raise ValueError(f"{fn}: {arg} must be 1 along the batch and channel axes, "
                                 f"got {values}")
            values = values[2:] if first else values[1:-1]
        elif len(values) != n:
            raise ValueError(f"{fn}: {arg} must be an int or a list of 1, {n} or {n + 2} "
                             f"ints, got {values}")
    if any(v < 1 for v in values):
        raise ValueError(f"{fn}: {arg} must be positive, got {value!r}")
    return tuple(int(v) for v in values)


def _padding(padding, n, first, sizes, windows, strides, fn, explicit):
    """[(before, after)] per spatial axis and the output sizes, as TF computes them."""
    if isinstance(padding, str) and padding.upper() in ("VALID", "SAME"):
        if padding.upper() == "VALID":
            pads = [(0, 0)] * n
        else:
            pads = []
            for size, window, stride in zip(sizes, windows, strides):
                total = max((math.ceil(size / stride) - 1) * stride + window - size, 0)
                pads.append((total // 2, total - total // 2))
    elif explicit and not isinstance(padding, (str, bytes, dict)) and \
            hasattr(padding, "__len__"):
        p = np.asarray(padding)
        if p.shape != (n + 2, 2) or (p.size and p.dtype.kind not in "iu"):
            raise ValueError(f"{fn}: explicit padding must be {n + 2} pairs of ints "
                             f"[before, after], one per axis, got {padding!r}")
        if (p < 0).any():
            raise ValueError(f"{fn}: padding must be non-negative, got {p.tolist()}")
        outer = p[[0, 1]] if first else p[[0, -1]]
        if outer.any():
            raise ValueError(f"{fn}: padding must be 0 along the batch and channel axes, "
                             f"got {p.tolist()}")
        pads = [tuple(int(v) for v in pair) for pair in (p[2:] if first else p[1:-1])]
    else:
        allowed = "'VALID', 'SAME' or explicit [before, after] pairs" if explicit else \
            "'VALID' or 'SAME'"
        raise ValueError(f"{fn}: padding must be {allowed}, got {padding!r}")
    outs = []
    for size, (b, a), window, stride in zip(sizes, pads, windows, strides):
        if size + b + a < window:
            raise ValueError(f"{fn}: the window ({window} with dilations) is larger than "
                             f"the padded input ({size + b + a}) along a spatial axis: the "
                             "output size would be negative")
        outs.append((size + b + a - window) // stride + 1)
    return pads, outs


def _layout(x, n, first, fn):
    """(spatial sizes, channels) of input x, checked before any op runs."""
    if x.ndim < n + 2:
        raise ValueError(f"{fn}: input must have rank >= {n + 2} (batch, {n} spatial axes, "
                         f"channels), got shape {x.shape}")
    lead = x.ndim - n - 1
    return (x.shape[lead + 1:], x.shape[lead]) if first else (x.shape[lead:-1], x.shape[-1])


def _prepare(x, n, first):
    """x as (batch, *spatial, channels) with the batch axes flattened, and the function
    that restores the caller's batch axes and layout."""
    lead = x.ndim - n - 1           # batch axes: (*batch, *spatial, C) or (*batch, C, *spatial)
    batch = x.shape[:lead]
    if first:
        x = transpose(x, tuple(range(lead)) + tuple(range(lead + 1, x.ndim)) + (lead,))
    flat = reshape(x, (-1,) + x.shape[lead:]) if lead != 1 else x

    def restore(y):
        y = reshape(y, batch + y.shape[1:]) if lead != 1 else y
        if first:
            y = transpose(y, tuple(range(lead)) + (y.ndim - 1,) +
                              tuple(range(lead, y.ndim - 1)))
        return y
    return flat, restore


def _float(x, fn, arg):
    x = to_input(x, fn=fn, arg=arg)
    if x.dtype.kind != "f":
        raise TypeError(f"{fn}: {arg} must be floating point, got dtype {x.dtype}")
    return x


def _slices(x, kernel, strides, dilations, outs):
    """The window's offsets, in C order: x[:, off_1 :: s_1 (outs_1 of them), ..., :]."""
    for offsets in itertools.product(*[range(k) for k in kernel]):
        key = (slice(None),) + tuple(
            slice(o * d, o * d + (m - 1) * s + 1, s)
            for o, d, s, m in zip(offsets, dilations, strides, outs)) + (slice(None),)
        yield x[key]


# -- convolution -------------------------------------------------------------------------
def convolution(input, filters, strides=None, padding="VALID", data_format=None,
                dilations=None, name=None):
    """N-D convolution (TF's tf.nn.convolution; 1 to 3 spatial axes, from filters' rank).

    `filters` has shape (*window, in_channels, out_channels); the output has
    out_channels channels. Like TF (and unlike signal processing), the window is not
    flipped: out[b, i, o] = sum_{k, c} x[b, i * stride + k * dilation, c] w[k, c, o].

    >>> x = np.arange(5.0).reshape(1, 5, 1)
    >>> vj.nn.convolution(x, np.ones((2, 1, 1)), padding="VALID").numpy()[0, :, 0]
    array([1., 3., 5., 7.])
    """
    fn = "convolution"
    w = _float(filters, fn, "filters")
    n = w.ndim - 2
    if n not in _FORMATS:
        raise ValueError(f"{fn}: filters must have rank 3, 4 or 5 (window, in_channels, "
                         f"out_channels), got shape {w.shape}")
    return _convolve(input, w, 1 if strides is None else strides, padding, data_format,
                     1 if dilations is None else dilations, n, fn)


def conv1d(input, filters, stride, padding, data_format="NWC", dilations=None, name=None):
    """1-D convolution (TF's tf.nn.conv1d): input (batch, width, in_channels), filters
    (width, in_channels, out_channels)."""
    return _convolve(input, filters, stride, padding, data_format,
                     1 if dilations is None else dilations, 1, "conv1d", "stride")


def conv2d(input, filters, strides, padding, data_format="NHWC", dilations=None, name=None):
    """2-D convolution (TF's tf.nn.conv2d): input (batch, height, width, in_channels),
    filters (height, width, in_channels, out_channels).

    >>> x = np.ones((1, 3, 3, 1))
    >>> vj.nn.conv2d(x, np.ones((2, 2, 1, 1)), strides=1, padding="SAME").numpy()[0, :, :, 0]
    array([[4., 4., 2.],
           [4., 4., 2.],
           [2., 2., 1.]])
    """
    return _convolve(input, filters, strides, padding, data_format,
                     1 if dilations is None else dilations, 2, "conv2d")


def conv3d(input, filters, strides, padding, data_format="NDHWC", dilations=None, name=None):
    """3-D convolution (TF's tf.nn.conv3d): input (batch, depth, height, width,
    in_channels), filters (depth, height, width, in_channels, out_channels)."""
    return _convolve(input, filters, strides, padding, data_format,
                     1 if dilations is None else dilations, 3, "conv3d")


def _convolve(input, filters, strides, padding, data_format, dilations, n, fn,
              strides_arg="strides"):
    x = _float(input, fn, "input")
    w = _float(filters, fn, "filters")
    if w.ndim != n + 2:
        raise ValueError(f"{fn}: filters must have rank {n + 2} ({n} window axes, "
                         f"in_channels, out_channels), got shape {w.shape}")
    if x.dtype != w.dtype:
        raise TypeError(f"{fn}: input and filters must have one dtype, got {x.dtype} and "
                        f"{w.dtype}")
    first = _channels_first(data_format, n, fn)
    strides = _spatial_ints(strides, n, first, fn, strides_arg)
    dilations = _spatial_ints(dilations, n, first, fn, "dilations")
    sizes, channels = _layout(x, n, first, fn)
    if w.shape[n] != channels:
        raise ValueError(f"{fn}: filters have {w.shape[n]} input channels (shape "
                         f"{w.shape}), the input has {channels} (shape {x.shape})")
    kernel = w.shape[:n]
    windows = [(k - 1) * d + 1 for k, d in zip(kernel, dilations)]
    pads, outs = _padding(padding, n, first, sizes, windows, strides, fn, True)
    x, restore = _prepare(x, n, first)  # the first op: every check is done
    if any(b or a for b, a in pads):
        x = pad(x, [[0, 0]] + [list(p) for p in pads] + [[0, 0]])
    pieces = list(_slices(x, kernel, strides, dilations, outs))
    cols = pieces[0] if len(pieces) == 1 else concat(pieces, axis=-1)
    depth = math.prod(kernel) * channels
    out = matmul(reshape(cols, (-1, depth)), reshape(w, (depth, w.shape[-1])))
    return restore(reshape(out, (x.shape[0],) + tuple(outs) + (w.shape[-1],)))


# -- pooling -----------------------------------------------------------------------------
def max_pool(input, ksize, strides, padding, data_format=None, name=None):
    """Max pooling over 1 to 3 spatial axes (TF's tf.nn.max_pool; from input's rank)."""
    return _pool(input, ksize, strides, padding, data_format, None, "max_pool", "max")


def max_pool1d(input, ksize, strides, padding, data_format="NWC", name=None):
    """1-D max pooling (TF's tf.nn.max_pool1d): input (batch, width, channels)."""
    return _pool(input, ksize, strides, padding, data_format, 1, "max_pool1d", "max")


def max_pool2d(input, ksize, strides, padding, data_format="NHWC", name=None):
    """2-D max pooling (TF's tf.nn.max_pool2d): input (batch, height, width, channels).

    >>> x = np.arange(16.0).reshape(1, 4, 4, 1)
    >>> vj.nn.max_pool2d(x, ksize=2, strides=2, padding="VALID").numpy()[0, :, :, 0]
    array([[ 5.,  7.],
           [13., 15.]])
    """
    return _pool(input, ksize, strides, padding, data_format, 2, "max_pool2d", "max")


def max_pool3d(input, ksize, strides, padding, data_format="NDHWC", name=None):
    """3-D max pooling (TF's tf.nn.max_pool3d): input (batch, depth, height, width,
    channels)."""
    return _pool(input, ksize, strides, padding, data_format, 3, "max_pool3d", "max")


def avg_pool(input, ksize, strides, padding, data_format=None, name=None):
    """Average pooling over 1 to 3 spatial axes (TF's tf.nn.avg_pool; from input's rank)."""
    return _pool(input, ksize, strides, padding, data_format, None, "avg_pool", "avg")


def avg_pool1d(input, ksize, strides, padding, data_format="NWC", name=None):
    """1-D average pooling (TF's tf.nn.avg_pool1d)."""
    return _pool(input, ksize, strides, padding, data_format, 1, "avg_pool1d", "avg")


def avg_pool2d(input, ksize, strides, padding, data_format="NHWC", name=None):
    """2-D average pooling (TF's tf.nn.avg_pool2d); with "SAME", each window averages its
    real elements only (the padding does not count)."""
    return _pool(input, ksize, strides, padding, data_format, 2, "avg_pool2d", "avg")


def avg_pool3d(input, ksize, strides, padding, data_format="NDHWC", name=None):
    """3-D average pooling (TF's tf.nn.avg_pool3d)."""
    return _pool(input, ksize, strides, padding, data_format, 3, "avg_pool3d", "avg")


def _pool(input, ksize, strides, padding, data_format, n, fn, kind):
    x = _float(input, fn, "input")
    if n is None:  # max_pool / avg_pool: the spatial rank from the input's
        n = x.ndim - 2
        if n not in _FORMATS:
            raise ValueError(f"{fn}: input must have rank 3, 4 or 5 (batch, 1 to 3 spatial "
                             f"axes, channels), got shape {x.shape}")
    first = _channels_first(data_format, n, fn)
    kernel = _spatial_ints(ksize, n, first, fn, "ksize")
    strides = _spatial_ints(strides, n, first, fn, "strides")
    sizes, _ = _layout(x, n, first, fn)
    pads, outs = _padding(padding, n, first, sizes, kernel, strides, fn, False)
    x, restore = _prepare(x, n, first)  # the first op: every check is done
    padded = any(b or a for b, a in pads)
    if padded:
        fill = -np.inf if kind == "max" else 0
        x = pad(x, [[0, 0]] + [list(p) for p in pads] + [[0, 0]], constant_values=fill)
    pieces = _slices(x, kernel, strides, (1,) * n, outs)
    out = next(pieces)
    for piece in pieces:
        out = maximum(out, piece) if kind == "max" else add(out, piece)
    if kind == "avg":
        out = divide(out, Tensor(_window_counts(sizes, pads, kernel, strides, outs,
                                                    x.dtype)))
    return restore(out)


def _window_counts(sizes, pads, kernel, strides, outs, dtype):
    """How many real (not padded) elements each window holds, shaped (*outs, 1)."""
    real = np.pad(np.ones(sizes, dtype), pads)
    count = np.zeros(outs, dtype)
    for offsets in itertools.product(*[range(k) for k in kernel]):
        count += real[tuple(slice(o, o + (m - 1) * s + 1, s)
                            for o, s, m in zip(offsets, strides, outs))]
    return count[..., None]
