"""Neural-network ops (TF's tf.nn): activations, softmax family, losses, moments, batch norm.

Activations whose gradient is cheapest from the output (sigmoid, elu, softmax,
log_softmax) or that need a stable forward (sigmoid, softplus) are op blocks; the rest
are composites of existing ops, so their gradients, Hessians and pfor rules come free.
Kinks follow TF: relu, relu6 and leaky_relu take the "x > 0" side's neighbour at the
kink, i.e. relu'(0) = 0, relu6'(6) = 0, leaky_relu'(0) = alpha.
"""
import math
import numbers

import numpy as np

from vecjac._src.core.dispatch import apply, convert_to_tensor, to_input
from vecjac._src.core.registry import Op, lib, register
from vecjac._src.core.samples import Arg, Sample
from vecjac._src.core.shapes import broadcast_shape, normalize_axes, normalize_axis
from vecjac._src.ops.array.creation import ones_like
from vecjac._src.ops.array.shaping import reshape
from vecjac._src.ops.elementwise.arithmetic import squared_difference
from vecjac._src.ops.elementwise.extrema import minimum
from vecjac._src.ops.elementwise.family import ARRAYS, UnaryWithDerivative
from vecjac._src.ops.elementwise.logic import cast, greater, less, logical_and, where
from vecjac._src.ops.elementwise.special import erf
from vecjac._src.ops.elementwise.unary import abs as tensor_abs
from vecjac._src.ops.elementwise.unary import exp, rsqrt, tanh
from vecjac._src.ops.reduce.reductions import reduce_mean, reduce_sum
from vecjac._src.transforms.forward.rules import linear_in, self_adjoint
from vecjac._src.transforms.pfor import structured as structured_rules
from vecjac._src.transforms.pfor.converters import axis_shift, elementwise
from vecjac._src.transforms.sparsity import patterns

__all__ = ["sigmoid", "relu", "relu6", "elu", "selu", "gelu", "leaky_relu", "softplus",
           "softsign", "silu", "swish", "softmax", "log_softmax",
           "sigmoid_cross_entropy_with_logits", "softmax_cross_entropy_with_logits",
           "moments", "batch_normalization", "bias_add"]


def _float_input(x, fn, arg="features"):
    # real floats only: the forwards (np.where on x >= 0, logaddexp, erf) have no complex
    # meaning, and NumPy would drop the imaginary part silently
    x = to_input(x, (), fn, arg)
    if x.dtype.kind != "f":
        raise TypeError(f"{fn}: {arg} must be a floating-point (real) tensor, got dtype "
                        f"{x.dtype}")
    return x


def _real_input(x, fn, arg="features"):
    x = to_input(x, (), fn, arg)
    if x.dtype.kind not in "iuf":
        raise TypeError(f"{fn}: {arg} must be a real numeric tensor, got dtype {x.dtype}")
    return x


def _like(value, x, fn, arg):
    """A companion argument of x: Python numbers and lists take x's dtype (as TF's
    float32 literals would); Tensors, Variables and arrays keep theirs."""
    if isinstance(value, (list, tuple, numbers.Number)):
        return convert_to_tensor(value, dtype=x.dtype, name=f"{fn}: {arg}")
    return to_input(value, (x,), fn, arg)


def _greater(x, y):
    return greater(x, y)


def _cast(x, dtype):
    return cast(x, dtype)


def _select(cond, a, b):
    return where(cond, a, b)


# -- element-wise activations (op blocks) ------------------------------------------------
@register
class Sigmoid(UnaryWithDerivative):
    samples = (Sample("sigmoid", Arg.float(2, "n", lo=-5.0, hi=5.0)),
               Sample("sigmoid", Arg.float()))

    def forward(self, x):
        # exp of -|x| never overflows; each branch is exact on its own side
        e = np.exp(-np.abs(x))
        return np.where(x >= 0, 1 / (1 + e), e / (1 + e))

    @staticmethod
    def dydx(x, y, xp=ARRAYS):
        return y * (1 - y)  # the factor first: one pass over the (stacked) cotangent


@register
class Relu(Op):
    fresh_output = True
    pattern = patterns.elementwise
    jvp = self_adjoint
    samples = (Sample("relu", Arg.float(2, "n")), Sample("relu", Arg.float()))
    samples += (Sample("relu", Arg.float("m", "n"), dim_range=(0, 3)),)  # empty arrays too
    converter = elementwise

    def forward(self, x):
        return np.maximum(x, 0)

    # A selection, but not declared one (Op.selects, transforms/tape/zeros.py): carrying
    # its zeros cost 4-6% on the small relu Jacobians and Hessians of benchmarks/
    # (workloads 2 and 3), for singular ops *below* a relu, which are rare.
    # vj.maximum(x, 0.0) and vj.where(x > 0, x, 0.0) keep them.
    def gradient(self, e, g):
        return apply(ReluGrad, g, e.outputs[0])


@register
class ReluGrad(Op):
    """g where the relu output is positive, else 0 (linear in g)."""
    fresh_output = True
    pattern = patterns.broadcasting
    jvp = linear_in(0)
    covered_by = "Relu"
    converter = elementwise
    structured = structured_rules.scale_by(
        lambda y: _cast(_greater(y, 0), y.dtype))  # one-hot g: scale its nonzero

    def forward(self, g, y):
        return np.where(y > 0, g, 0).astype(g.dtype, copy=False)

    def gradient(self, e, gg):
        return apply(ReluGrad, gg, e.inputs[1]), None


@register
class Relu6(Op):
    pattern = patterns.elementwise
    jvp = self_adjoint
    samples = (Sample("relu6", Arg.float(2, "n", lo=-2.0, hi=8.0)),
               Sample("relu6", Arg.float(lo=-2.0, hi=8.0)))
    converter = elementwise

    def forward(self, x):
        return np.clip(x, 0, 6)

    def gradient(self, e, g):
        x = e.inputs[0]
        return g * cast(logical_and(greater(x, 0), less(x, 6)), g.dtype)


@register
class Elu(Op):
    pattern = patterns.elementwise
    jvp = self_adjoint
    samples = (Sample("elu", Arg.float(2, "n")), Sample("elu", Arg.float()))
    converter = elementwise

    def forward(self, x):
        # expm1(min(x, 0)) + max(x, 0): expm1 only of the non-positive part (no overflow
        # for large x); 3-4x faster than np.where's four passes
        out = np.expm1(np.minimum(x, 0))
        out += np.maximum(x, 0)  # in place on our temporary (a rebinding for 0-d values)
        return out

    def gradient(self, e, g):
        y = e.outputs[0]
        # the factor is 1 for x > 0 and exp(x) = y + 1 below: min(y, 0) + 1 (two cheap
        # ops, differentiable again for second order). g times one factor: one pass over
        # g, and a diagonal stays a diagonal under pfor
        return g * (minimum(y, 0) + 1)


@register
class LeakyRelu(Op):
    pattern = patterns.elementwise
    jvp = self_adjoint
    samples = (Sample("leaky_relu", Arg.float(2, "n")),
               Sample("leaky_relu", Arg.float(), alpha=0.3))
    converter = elementwise

    def forward(self, x, alpha):
        return np.where(x > 0, x, x * alpha)

    def gradient(self, e, g):
        x = e.inputs[0]
        return g * _select(greater(x, 0), ones_like(x), ones_like(x) * e.attrs["alpha"])


@register
class Softplus(Op):
    pattern = patterns.elementwise
    jvp = self_adjoint
    samples = (Sample("softplus", Arg.float(2, "n", lo=-5.0, hi=5.0)),
               Sample("softplus", Arg.float()))
    converter = elementwise

    def forward(self, x):
        return np.logaddexp(x, 0)  # log(1 + exp(x)) without overflow

    def gradient(self, e, g):
        return g * sigmoid(e.inputs[0])


def sigmoid(x, name=None):
    """1 / (1 + exp(-x)), element-wise, stable for large |x|. Shape: x.shape."""
    return apply(Sigmoid, _float_input(x, "sigmoid", "x"))


def relu(features, name=None):
    """max(features, 0), element-wise; gradient 0 at 0 (as TF). Shape: features.shape."""
    return apply(Relu, _real_input(features, "relu"))


def relu6(features, name=None):
    """min(max(features, 0), 6), element-wise; gradient 0 at 0 and 6. Shape unchanged."""
    return apply(Relu6, _real_input(features, "relu6"))


def elu(features, name=None):
    """features if > 0 else exp(features) - 1, element-wise. Shape unchanged."""
    return apply(Elu, _float_input(features, "elu"))


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def selu(features, name=None):
    """scale * (x if x > 0 else alpha * (exp(x) - 1)) with the self-normalizing constants."""
    x = _float_input(features, "selu")
    y = elu(x)
    return _select(greater(x, 0), y * _SELU_SCALE, y * (_SELU_SCALE * _SELU_ALPHA))


def gelu(features, approximate=False, name=None):
    """Gaussian error linear unit, element-wise. Shape unchanged.

    approximate=False: 0.5 x (1 + erf(x / sqrt(2))); True: the tanh approximation
    0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))).
    """
    x = _float_input(features, "gelu")
    if not isinstance(approximate, (bool, np.bool_)):
        raise TypeError(f"gelu: approximate must be a bool, got {approximate!r}")
    if approximate:
        inner = (x + 0.044715 * (x * x * x)) * math.sqrt(2 / math.pi)
        return 0.5 * x * (1 + tanh(inner))
    return 0.5 * x * (1 + erf(x * (1 / math.sqrt(2))))


def leaky_relu(features, alpha=0.2, name=None):
    """features if > 0 else alpha * features, element-wise. Shape unchanged."""
    x = _float_input(features, "leaky_relu")
    if not isinstance(alpha, numbers.Real) or isinstance(alpha, bool):
        raise TypeError(f"leaky_relu: alpha must be a real number, got {alpha!r}")
    return apply(LeakyRelu, x, alpha=float(alpha))


def softplus(features, name=None):
    """log(1 + exp(features)), element-wise, stable for large |x|. Shape unchanged."""
    return apply(Softplus, _float_input(features, "softplus"))


def softsign(features, name=None):
    """features / (1 + |features|), element-wise. Shape unchanged."""
    x = _float_input(features, "softsign")
    return x / (1 + tensor_abs(x))


def silu(features, beta=1.0, name=None):
    """features * sigmoid(beta * features) (swish), element-wise. Shape unchanged."""
    x = _float_input(features, "silu")
    if isinstance(beta, numbers.Real) and not isinstance(beta, bool) and beta == 1:
        return x * sigmoid(x)
    b = _like(beta, x, "silu", "beta")
    if b.dtype.kind != "f":
        raise TypeError(f"silu: beta must be a real float, got dtype {b.dtype}")
    broadcast_shape("silu", x.shape, b.shape, names=("features", "beta"))
    return x * sigmoid(x * b)


swish = silu


# -- softmax family ----------------------------------------------------------------------
@register
class Softmax(Op):
    pattern = patterns.along_axis("axis")
    jvp = self_adjoint  # diag(y) - y y^T is symmetric
    samples = (Sample("softmax", Arg.float(2, "n")), Sample("softmax", Arg.float("n", 3), axis=0),
               Sample("softmax", Arg.float(3)))
    samples += (Sample("softmax", Arg.float("m", 3), dim_range=(0, 3)),)  # empty arrays too
    converter = axis_shift("axis")

    def forward(self, x, axis):
        e = np.exp(x - np.max(x, axis=axis, keepdims=True))
        return e / np.sum(e, axis=axis, keepdims=True)

    def gradient(self, e, g):
        y = e.outputs[0]
        return y * (g - reduce_sum(g * y, axis=e.attrs["axis"], keepdims=True))


@register
class LogSoftmax(Op):
    pattern = patterns.along_axis("axis")
    samples = (Sample("log_softmax", Arg.float(2, "n")),
               Sample("log_softmax", Arg.float("n", 3), axis=0),
               Sample("log_softmax", Arg.float(3)))
    converter = axis_shift("axis")

    def forward(self, x, axis):
        shifted = x - np.max(x, axis=axis, keepdims=True)
        return shifted - np.log(np.sum(np.exp(shifted), axis=axis, keepdims=True))

    def gradient(self, e, g):
        axis = e.attrs["axis"]
        return g - exp(e.outputs[0]) * reduce_sum(g, axis=axis, keepdims=True)

    def jvp(self, e, t):
        if t is None:
            return None
        softmax = exp(e.outputs[0])
        return t - reduce_sum(softmax * t, axis=e.attrs["axis"], keepdims=True)


def _softmax_args(logits, axis, fn):
    x = _float_input(logits, fn, "logits")
    if x.ndim == 0:
        raise ValueError(f"{fn}: logits must have rank >= 1, got a scalar")
    if axis is None:
        axis = -1
    axis = normalize_axis(axis, x.ndim, fn)
    if x.shape[axis] == 0:  # TF gives an empty result only when other axes are empty too
        raise ValueError(f"{fn}: logits has size 0 along axis {axis} (shape {x.shape})")
    return x, axis


def softmax(logits, axis=None, name=None):
    """exp(logits) / sum(exp(logits), axis), computed stably. Shape: logits.shape."""
    x, ax = _softmax_args(logits, axis, "softmax")
    return apply(Softmax, x, axis=ax)


def log_softmax(logits, axis=None, name=None):
    """logits - log(sum(exp(logits), axis)), computed stably. Shape: logits.shape."""
    x, ax = _softmax_args(logits, axis, "log_softmax")
    return apply(LogSoftmax, x, axis=ax)


# -- losses ------------------------------------------------------------------------------
def sigmoid_cross_entropy_with_logits(labels=None, logits=None, name=None):
    """Element-wise -z log(sigmoid(x)) - (1 - z) log(1 - sigmoid(x)) for labels z, logits x.

    Computed as softplus(x) - x z, which never overflows. labels and logits must have
    the same shape; the result has that shape.
    """
    if labels is None or logits is None:
        raise ValueError("sigmoid_cross_entropy_with_logits: both labels and logits are "
                         "required")
    x = _float_input(logits, "sigmoid_cross_entropy_with_logits", "logits")
    z = _like(labels, x, "sigmoid_cross_entropy_with_logits", "labels")
    if z.dtype != x.dtype:
        raise TypeError(f"sigmoid_cross_entropy_with_logits: labels dtype {z.dtype} differs "
                        f"from logits dtype {x.dtype}")
    if z.shape != x.shape:
        raise ValueError(f"sigmoid_cross_entropy_with_logits: labels shape {z.shape} and "
                         f"logits shape {x.shape} must be equal")
    return softplus(x) - x * z


def softmax_cross_entropy_with_logits(labels, logits, axis=-1, name=None):
    """-sum(labels * log_softmax(logits), axis): one loss per example.

    labels and logits have the same shape; the result drops `axis`. Gradients flow to
    both labels and logits (as TF 2).
    """
    x, ax = _softmax_args(logits, axis, "softmax_cross_entropy_with_logits")
    z = _like(labels, x, "softmax_cross_entropy_with_logits", "labels")
    if z.dtype != x.dtype:
        raise TypeError(f"softmax_cross_entropy_with_logits: labels dtype {z.dtype} differs "
                        f"from logits dtype {x.dtype}")
    if z.shape != x.shape:
        raise ValueError(f"softmax_cross_entropy_with_logits: labels shape {z.shape} and "
                         f"logits shape {x.shape} must be equal")
    return -reduce_sum(z * apply(LogSoftmax, x, axis=ax), axis=ax)


# -- moments and batch normalization -----------------------------------------------------
def moments(x, axes, shift=None, keepdims=False, name=None):
    """(mean, variance) of x over `axes`; shapes drop `axes` unless keepdims.

    The variance is the mean squared deviation from the mean (divides by the count).
    `shift` is accepted and ignored, as in TF 2.
    """
    x = _float_input(x, "moments", "x")
    if axes is None:
        raise ValueError("moments: axes must be given (a list of axes), got None")
    ax = normalize_axes(axes, x.ndim, "moments", "axes")
    if not isinstance(keepdims, (bool, np.bool_)):
        raise TypeError(f"moments: keepdims must be a bool, got {keepdims!r}")
    mean = reduce_mean(x, axis=ax, keepdims=True)
    # TF wraps this mean in stop_gradient: harmless for first derivatives (the
    # variance's derivative w.r.t. the mean is zero) but wrong for Hessians, so not here
    variance = reduce_mean(squared_difference(x, mean), axis=ax, keepdims=True)
    if not keepdims:
        kept = tuple(d for i, d in enumerate(x.shape) if i not in ax)
        mean, variance = reshape(mean, kept), reshape(variance, kept)
    return mean, variance


def batch_normalization(x, mean, variance, offset, scale, variance_epsilon, name=None):
    """scale * (x - mean) / sqrt(variance + variance_epsilon) + offset, broadcasting.

    offset and scale may be None. Shape: x broadcast with the other arguments
    (normally x.shape).
    """
    x = _float_input(x, "batch_normalization", "x")
    args = {"mean": mean, "variance": variance, "offset": offset, "scale": scale}
    shapes, names = [x.shape], ["x"]
    for arg, v in list(args.items()):
        if v is None:
            if arg in ("mean", "variance"):
                raise ValueError(f"batch_normalization: {arg} is required, got None")
            continue
        v = _like(v, x, "batch_normalization", arg)
        if v.dtype != x.dtype:
            raise TypeError(f"batch_normalization: {arg} dtype {v.dtype} differs from x "
                            f"dtype {x.dtype}")
        args[arg] = v
        shapes.append(v.shape)
        names.append(arg)
    broadcast_shape("batch_normalization", *shapes, names=names)
    if not isinstance(variance_epsilon, numbers.Real) or isinstance(variance_epsilon, bool):
        raise TypeError(f"batch_normalization: variance_epsilon must be a real number, got "
                        f"{variance_epsilon!r}")
    inv = rsqrt(args["variance"] + float(variance_epsilon))
    if args["scale"] is not None:
        inv = inv * args["scale"]
    shift = -args["mean"] * inv
    if args["offset"] is not None:
        shift = args["offset"] + shift
    return x * inv + shift

def bias_add(value, bias, data_format=None, name=None):
    """value + bias along the channel axis (TF's tf.nn.bias_add): the last axis for
    "N...C" formats (default: NHWC, NWC, NDHWC), axis 1 for "NC..." ones (NCHW ...).
    bias: a vector of the channel count, of value's dtype."""
    fn = "bias_add"
    value = _float_input(value, fn, "value")
    bias = _like(bias, value, fn, "bias")
    if data_format is not None and (not isinstance(data_format, str) or not (
            data_format.startswith("N") and data_format.endswith("C") or
            data_format.startswith("NC"))):
        raise ValueError(f"{fn}: data_format must be like 'NHWC' or 'NCHW', got "
                         f"{data_format!r}")
    first = data_format is not None and data_format.startswith("NC")
    if value.ndim < (3 if first else 2) and first or value.ndim < 1:
        raise ValueError(f"{fn}: value must have rank >= {3 if first else 1} for "
                         f"data_format {data_format!r}, got shape {value.shape}")
    axis = 1 if first else value.ndim - 1
    if bias.ndim != 1 or bias.shape[0] != value.shape[axis]:
        raise ValueError(f"{fn}: bias must be a vector of the {value.shape[axis]} channels "
                         f"of value (shape {value.shape}, axis {axis}), got shape "
                         f"{bias.shape}")
    if bias.dtype != value.dtype:
        raise TypeError(f"{fn}: bias dtype {bias.dtype} differs from value dtype "
                        f"{value.dtype}")
    if first:
        bias = reshape(bias, bias.shape + (1,) * (value.ndim - 2))
    return value + bias


lib.publish(globals(), __all__)
