"""The two tf.nn ops behind MobileNet-style layers: depthwise_conv2d (TF's
tf.nn.depthwise_conv2d) and fused_batch_norm (TF's tf.compat.v1.nn.fused_batch_norm).

Both are composites of existing ops, like conv_ops.py, so that tapes, forward mode, pfor
and the sparsity tracer need no rule of their own and every order of derivative comes
free:
- depthwise_conv2d pads the input, takes each offset of the window as a strided slice
  (conv_ops' slices, in the same C order as the filter's window axes) and accumulates
  slice[..., c, None] * filter[offset][c, m] over the window: per channel, no im2col
  matrix (a depthwise filter has no sum over channels for a matmul to exploit), and the
  (c, m) axes reshaped to c * multiplier + m are TF's output channel order. Memory: one
  output-sized temporary per window offset on a tape.
- fused_batch_norm is moments over every axis but the channels, then
  (x - mean) * (rsqrt(variance + epsilon) * scale) + offset in TF's kernel's order, and
  the statistics TF returns: the Bessel-corrected variance in training, mixed with the
  running ones when exponential_avg_factor != 1; the given mean and variance in
  inference.
Argument checks (data_format, strides, dilations, padding) are conv_ops' own helpers.
"""
import math
import numbers

import numpy as np

from vecjac._src.composites.conv import (_channels_first, _float, _layout, _padding, _prepare,
                                         _slices, _spatial_ints)
from vecjac._src.core.registry import lib
from vecjac._src.ops.array.layout import pad
from vecjac._src.ops.array.shaping import expand_dims, reshape
from vecjac._src.ops.elementwise.unary import rsqrt
from vecjac._src.ops.nn.activations import _like, moments

__all__ = ["depthwise_conv2d", "fused_batch_norm"]


# -- depthwise_conv2d ------------------------------------------------------------------------
def _int_list(value, length, fn, arg, form):
    """value itself if it is a list / tuple / array of `length` entries (TypeError or
    ValueError otherwise); conv_ops' _spatial_ints then checks the entries."""
    if isinstance(value, (str, bytes, dict)) or not isinstance(
            value, (list, tuple, np.ndarray)):
        raise TypeError(f"{fn}: {arg} must be a list of {length} ints {form}, got "
                        f"{type(value).__name__} {value!r}")
    if len(value) != length:
        raise ValueError(f"{fn}: {arg} must be a list of {length} ints {form}, got "
                         f"{list(value)!r}")
    return value


def depthwise_conv2d(input, filter, strides, padding, data_format=None, dilations=None,
                     name=None):
    """Depthwise 2-D convolution (TF's tf.nn.depthwise_conv2d): each input channel k is
    convolved with its own filter[:, :, k, q] for every q < channel_multiplier,

        output[b, i, j, k * channel_multiplier + q] = sum_{di, dj}
            filter[di, dj, k, q] * input[b, strides[1] * i + dilations[0] * di,
                                         strides[2] * j + dilations[1] * dj, k]

    (padded input; like TF, the window is not flipped). input: (batch, height, width,
    in_channels) for "NHWC" (the default) or (batch, in_channels, height, width) for
    "NCHW"; filter: (filter_height, filter_width, in_channels, channel_multiplier).
    Output: (batch, out_height, out_width, in_channels * channel_multiplier), channels
    first for "NCHW". strides: 4 ints, 1 along the batch and channel axes, equal along
    height and width (as TF's kernel requires); padding: "VALID", "SAME" or explicit
    [before, after] pairs for the 4 axes (zeros for batch and channels); dilations: 2
    ints (TF's rate), and strides must be 1 when one of them is > 1.

    >>> x = np.array([[1., 2.], [3., 4.], [5., 6.]], np.float32).reshape((1, 3, 2, 1))
    >>> kernel = np.array([[1., 2.], [3., 4.]], np.float32).reshape((2, 1, 1, 2))
    >>> vj.nn.depthwise_conv2d(x, kernel, strides=[1, 1, 1, 1], padding="VALID").numpy()
    array([[[[10., 14.],
             [14., 20.]],
    <BLANKLINE>
            [[18., 26.],
             [22., 32.]]]], dtype=float32)
    """
    fn = "depthwise_conv2d"
    x = _float(input, fn, "input")
    w = _float(filter, fn, "filter")
    if w.ndim != 4:
        raise ValueError(f"{fn}: filter must have rank 4 (filter_height, filter_width, "
                         f"in_channels, channel_multiplier), got shape {w.shape}")
    if x.dtype != w.dtype:
        raise TypeError(f"{fn}: input and filter must have one dtype, got {x.dtype} and "
                        f"{w.dtype}")
    first = _channels_first(data_format, 2, fn)
    form = "[1, 1, stride, stride] (NCHW)" if first else "[1, stride, stride, 1] (NHWC)"
    strides = _spatial_ints(_int_list(strides, 4, fn, "strides", form), 2, first, fn,
                            "strides")
    if strides[0] != strides[1]:
        # TF's DepthwiseConv2dNative supports equal row and column strides only
        raise ValueError(f"{fn}: strides must be equal along height and width (as TF's "
                         f"kernel requires), got {strides[0]} and {strides[1]}")
    if dilations is None:
        dilations = (1, 1)
    else:
        dilations = _spatial_ints(_int_list(dilations, 2, fn, "dilations",
                                            "[rate_height, rate_width]"),
                                  2, first, fn, "dilations")
    if max(dilations) > 1 and max(strides) > 1:
        raise ValueError(f"{fn}: strides must be 1 when a dilation is > 1 (atrous "
                         f"convolution, as TF documents), got strides {list(strides)} "
                         f"and dilations {list(dilations)}")
    sizes, channels = _layout(x, 2, first, fn)
    if w.shape[2] != channels:
        raise ValueError(f"{fn}: filter has {w.shape[2]} input channels (shape {w.shape}), "
                         f"the input has {channels} (shape {x.shape})")
    kernel = w.shape[:2]
    windows = [(k - 1) * d + 1 for k, d in zip(kernel, dilations)]
    pads, outs = _padding(padding, 2, first, sizes, windows, strides, fn, True)
    x, restore = _prepare(x, 2, first)  # the first op: every check is done
    if any(b or a for b, a in pads):
        x = pad(x, [[0, 0]] + [list(p) for p in pads] + [[0, 0]])
    multiplier = w.shape[3]
    taps = reshape(w, (math.prod(kernel), channels, multiplier))
    out = None
    # _slices yields the window offsets in C order, the order of taps' first axis
    for k, piece in enumerate(_slices(x, kernel, strides, dilations, outs)):
        term = expand_dims(piece, -1) * taps[k]
        out = term if out is None else out + term
    # (..., c, m) -> channel c * multiplier + m: TF's order
    return restore(reshape(out, out.shape[:3] + (channels * multiplier,)))


# -- fused_batch_norm ------------------------------------------------------------------------
_BN_FORMATS = {4: ("NHWC", "NCHW"), 5: ("NDHWC", "NCDHW")}
# TF raises epsilon to this floor before its kernel runs (cuDNN's minimum), on every device
_MIN_EPSILON = 1.001e-5


def _real(value, fn, arg):
    if not isinstance(value, numbers.Real) or isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{fn}: {arg} must be a real number, got {type(value).__name__} "
                        f"{value!r}")
    if not math.isfinite(value):
        raise ValueError(f"{fn}: {arg} must be finite, got {value!r}")
    return float(value)


def _channel_vector(value, x, channels, fn, arg):
    v = _like(value, x, fn, arg)
    if v.dtype != x.dtype:
        raise TypeError(f"{fn}: {arg} dtype {v.dtype} differs from x dtype {x.dtype}")
    if v.shape != (channels,):
        raise ValueError(f"{fn}: {arg} must be a vector of the {channels} channels of x "
                         f"(shape {x.shape}), got shape {v.shape}")
    return v


def fused_batch_norm(x, scale, offset, mean=None, variance=None, epsilon=0.001,
                     data_format="NHWC", is_training=True, name=None,
                     exponential_avg_factor=1.0):
    """Batch normalization over every axis of x but the channels (TF's
    tf.compat.v1.nn.fused_batch_norm). Returns (y, batch_mean, batch_var):

    - y = (x - m) * rsqrt(v + epsilon) * scale + offset, shape x.shape, where m, v are
      the batch's mean and biased variance in training, `mean` and `variance` in
      inference (is_training=False);
    - batch_mean, batch_var (shape (channels,)): in training the batch mean and the
      unbiased (Bessel-corrected, n / (n - 1)) variance, n = x.size / channels; with
      exponential_avg_factor f != 1, (1 - f) * mean + f * that mean and (1 - f) *
      variance + f * that variance (the running averages). In inference, `mean` and
      `variance` as given.

    x: rank 4 ("NHWC" or "NCHW") or rank 5 ("NDHWC" or "NCDHW"); None is channels last.
    scale, offset (and mean, variance when used): vectors of the channel count, of x's
    dtype. mean and variance are required in inference or when f != 1, and ignored
    otherwise (as TF's kernel ignores them). As in TF, epsilon is raised to at least
    1.001e-5. Derivatives are exact everywhere, including those TF's registered
    gradient leaves out (of batch_mean and batch_var, and w.r.t. mean and variance in
    inference).

    >>> x = np.array([0.0, 0.0, 3.0, 3.0]).reshape(1, 2, 2, 1)
    >>> y, m, v = vj.nn.fused_batch_norm(x, [1.0], [0.0])
    >>> float(m[0]), float(v[0])  # v: the unbiased variance 9 / 3 (y divides by 9 / 4)
    (1.5, 3.0)
    """
    fn = "fused_batch_norm"
    x = _float(x, fn, "x")
    if x.ndim not in _BN_FORMATS:
        raise ValueError(f"{fn}: x must have rank 4 or 5 (batch, spatial axes, channels), "
                         f"got shape {x.shape}")
    last, first = _BN_FORMATS[x.ndim]
    if data_format is not None and (not isinstance(data_format, str) or
                                    data_format not in (last, first)):
        raise ValueError(f"{fn}: data_format must be {last!r} or {first!r} for x of rank "
                         f"{x.ndim} (shape {x.shape}), got {data_format!r}")
    axis = 1 if data_format == first else x.ndim - 1
    if not isinstance(is_training, (bool, np.bool_)):
        raise TypeError(f"{fn}: is_training must be a bool, got "
                        f"{type(is_training).__name__} {is_training!r}")
    epsilon = _real(epsilon, fn, "epsilon")
    if epsilon < 0:  # TF would silently use its floor; a negative epsilon is a mistake
        raise ValueError(f"{fn}: epsilon must be >= 0, got {epsilon!r}")
    epsilon = max(epsilon, _MIN_EPSILON)
    factor = _real(exponential_avg_factor, fn, "exponential_avg_factor")
    channels = x.shape[axis]
    scale = _channel_vector(scale, x, channels, fn, "scale")
    offset = _channel_vector(offset, x, channels, fn, "offset")
    running = not is_training or factor != 1.0
    if running:
        when = "is_training is False" if not is_training else \
            "exponential_avg_factor != 1"
        for arg, value in (("mean", mean), ("variance", variance)):
            if value is None:
                raise ValueError(f"{fn}: {arg} is required (a vector of the {channels} "
                                 f"channels) when {when}, got None")
        mean = _channel_vector(mean, x, channels, fn, "mean")
        variance = _channel_vector(variance, x, channels, fn, "variance")
    # every check is done: the ops start here
    along = tuple(channels if i == axis else 1 for i in range(x.ndim))
    if is_training:
        batch_mean, batch_var = moments(x, [i for i in range(x.ndim) if i != axis],
                                        keepdims=True)
    else:
        batch_mean, batch_var = reshape(mean, along), reshape(variance, along)
    factors = rsqrt(batch_var + epsilon) * reshape(scale, along)
    y = (x - batch_mean) * factors + reshape(offset, along)
    if not is_training:
        return y, mean, variance
    n = x.size // channels if channels else 0  # elements per channel
    bessel = n / max(n - 1, 1)  # TF's kernel divides by 1 for a single element
    batch_mean = reshape(batch_mean, (channels,))
    batch_var = reshape(batch_var, (channels,))
    if factor == 1.0:
        return y, batch_mean, batch_var * bessel
    return (y, mean * (1.0 - factor) + batch_mean * factor,
            variance * (1.0 - factor) + batch_var * (factor * bessel))


lib.publish(globals(), __all__)
