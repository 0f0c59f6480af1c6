"""The rest of TF's tf.math: aliases of ops that live elsewhere (nn activations, SciPy's
special functions under TF's names and argument orders), compositions (add_n, the *_no_nan
family, lbeta, polyval, ...), integer/bool helpers (count_nonzero, bincount, top_k,
bucketize, ...), cross and approximate_equal (the segment reductions are
vecjac/_src/ops/reduce/segment.py).

cumulative_logsumexp is vecjac/_src/ops/reduce/cumulative.py's. Derivatives vecjac does
not implement (igamma in a, betainc in a and b, polygamma in its order)
raise LookupError, as vj.scipy.special does. Complex inputs: ComplexNotSupported.
"""
import collections
import functools
import math
import numbers

import numpy as np

from vecjac._src.core.arguments import read_ints as _read_ints
from vecjac._src.core.arguments import real_input as _real
from vecjac._src.core.dispatch import apply, to_input
from vecjac._src.core.registry import lib
from vecjac._src.core.shapes import (as_bool, as_dtype, as_int, as_shape, broadcast_shape,
                                     normalize_axes, normalize_axis)
from vecjac._src.core.tensor import Tensor
from vecjac._src.core.unconnected import ComplexNotSupported
from vecjac._src.ops.array.creation import _count, ones_like, zeros_like
from vecjac._src.ops.array.indexing import gather
from vecjac._src.ops.array.shaping import expand_dims, identity, reshape
from vecjac._src.ops.elementwise.arithmetic import add, multiply
from vecjac._src.ops.elementwise.complex_parts import angle, conj, imag, real  # noqa: F401
from vecjac._src.ops.elementwise.bessel import BesselI0, BesselI0e, BesselI1, BesselI1e
from vecjac._src.ops.elementwise.logic import (cast, equal, greater, greater_equal, less,
                                               logical_and, logical_not, not_equal, where)
from vecjac._src.ops.elementwise.scipy_special import (Betainc, Digamma, Erfcinv, Erfinv, Igamma,
                                                       Igammac, Lgamma, Ndtri, Polygamma, Xlog1py,
                                                       real_operands)
from vecjac._src.ops.elementwise.unary import Round, _real_unary
from vecjac._src.ops.elementwise.unary import abs as tensor_abs
from vecjac._src.ops.elementwise.unary import atan, is_finite, sign
from vecjac._src.ops.nn import activations as nn_ops
from vecjac._src.ops.reduce.cumulative import cumulative_logsumexp
from vecjac._src.ops.reduce.reductions import reduce_all, reduce_sum
from vecjac._src.ops.reduce.sort import ArgSort, searchsorted, take_along_axis

__all__ = ["sigmoid", "softmax", "log_softmax", "softplus", "softsign", "log_sigmoid",
           "lgamma", "digamma", "polygamma", "erfinv", "erfcinv", "ndtri", "betainc",
           "xlog1py", "igamma", "igammac", "bessel_i0", "bessel_i0e", "bessel_i1",
           "bessel_i1e", "atan2", "add_n", "accumulate_n", "divide_no_nan",
           "multiply_no_nan", "reciprocal_no_nan", "lbeta", "rint", "scalar_mul", "real",
           "imag", "conj", "angle", "cumulative_logsumexp", "polyval", "count_nonzero",
           "invert_permutation", "is_non_decreasing", "is_strictly_increasing",
           "in_top_k", "top_k", "cross", "approximate_equal", "bucketize"]

# -- aliases ---------------------------------------------------------------------------------
sigmoid, softmax, log_softmax = nn_ops.sigmoid, nn_ops.softmax, nn_ops.log_softmax
softplus, softsign = nn_ops.softplus, nn_ops.softsign


def _special(op, fn, names, *args):
    """A scipy.special op under TF's name `fn`: real inputs that broadcast."""
    return apply(op, *real_operands(f"{fn}", names, args, cast=False))


# TF's names and argument orders; polygamma(a, x), betainc(a, b, x), igamma(a, x) (the
# regularized lower incomplete gamma P(a, x)) and igammac(a, x) = 1 - P(a, x) are
# differentiable in x only: a derivative in a or b raises LookupError
def lgamma(x, name=None): return _special(Lgamma, "lgamma", ("x",), x)
def digamma(x, name=None): return _special(Digamma, "digamma", ("x",), x)
def erfinv(x, name=None): return _special(Erfinv, "erfinv", ("x",), x)
def erfcinv(x, name=None): return _special(Erfcinv, "erfcinv", ("x",), x)
def ndtri(x, name=None): return _special(Ndtri, "ndtri", ("x",), x)
def bessel_i0(x, name=None): return _special(BesselI0, "bessel_i0", ("x",), x)
def bessel_i0e(x, name=None): return _special(BesselI0e, "bessel_i0e", ("x",), x)
def bessel_i1(x, name=None): return _special(BesselI1, "bessel_i1", ("x",), x)
def bessel_i1e(x, name=None): return _special(BesselI1e, "bessel_i1e", ("x",), x)
def polygamma(a, x, name=None): return _special(Polygamma, "polygamma", ("a", "x"), a, x)
def betainc(a, b, x, name=None): return _special(Betainc, "betainc", ("a", "b", "x"), a, b, x)
def xlog1py(x, y, name=None): return _special(Xlog1py, "xlog1py", ("x", "y"), x, y)
def igamma(a, x, name=None): return _special(Igamma, "igamma", ("a", "x"), a, x)
def igammac(a, x, name=None): return _special(Igammac, "igammac", ("a", "x"), a, x)
def rint(x, name=None): return _real_unary(Round, x, "rint")  # half to even, gradient 0


# -- helpers ---------------------------------------------------------------------------------
def _float_pair(x, y, fn, names=("x", "y")):
    xt, yt = _real(x, fn, names[0], "f", (x, y)), _real(y, fn, names[1], "f", (x, y))
    if xt.dtype != yt.dtype:
        raise TypeError(f"{fn}: {names[0]} and {names[1]} must have the same dtype, got "
                        f"{xt.dtype} and {yt.dtype}")
    broadcast_shape(fn, xt.shape, yt.shape, names=names)
    return xt, yt


# -- compositions ----------------------------------------------------------------------------
def log_sigmoid(x, name=None): return -nn_ops.softplus(-_real(x, "log_sigmoid", kinds="f"))


def atan2(y, x, name=None):
    """The angle of (x, y) in (-pi, pi], element-wise, broadcasting."""
    y, x = _float_pair(y, x, "atan2", ("y", "x"))
    return quadrant_atan(y, x)


def quadrant_atan(y, x):
    """atan2 of checked floating tensors of one dtype (also np.arctan2's adapter):
    atan(y/x) where |x| >= |y|, else pi/2 - atan(x/y), each branch where it is well
    conditioned, so the gradient is right everywhere but the origin; safe denominators
    keep the unused branch finite (a NaN there would poison the gradient)."""
    one = ones_like(x + y)
    xs = where(equal(x, 0), one, x)
    ys = where(equal(y, 0), one, y)
    near_x = atan(y / xs)
    turn = where(greater_equal(y, 0), one * math.pi, one * -math.pi)  # x's dtype
    near_x = where(less(x, 0), near_x + turn, near_x)
    near_y = sign(y) * (math.pi / 2) - atan(x / ys)
    return where(greater_equal(tensor_abs(x), tensor_abs(y)), near_x, near_y)


def add_n(inputs, name=None):
    """The element-wise sum of a non-empty list of tensors of one shape and dtype."""
    return _add_n(inputs, "add_n")


def _add_n(inputs, fn):
    if not isinstance(inputs, (list, tuple)) or not inputs:
        raise ValueError(f"{fn}: inputs must be a non-empty list of tensors of the same "
                         f"dtype and shape, got {inputs!r}")
    ts = [to_input(t, inputs, fn, f"inputs[{k}]") for k, t in enumerate(inputs)]
    for k, t in enumerate(ts[1:], 1):
        if t.shape != ts[0].shape:
            raise ValueError(f"{fn}: inputs must have the same shape, inputs[0] has "
                             f"{ts[0].shape} and inputs[{k}] has {t.shape}")
        if t.dtype != ts[0].dtype:
            raise TypeError(f"{fn}: inputs must have the same dtype, inputs[0] has "
                            f"{ts[0].dtype} and inputs[{k}] has {t.dtype}")
    return functools.reduce(add, ts[1:], identity(ts[0]))


def accumulate_n(inputs, shape=None, tensor_dtype=None, name=None):
    """add_n (TF's deprecated accumulate_n); shape and tensor_dtype, if given, must match."""
    fn = "accumulate_n"
    shape = None if shape is None else as_shape(shape, fn)
    dtype = None if tensor_dtype is None else as_dtype(tensor_dtype, fn, "tensor_dtype")
    out = _add_n(inputs, fn)
    if shape is not None and shape != out.shape:
        raise ValueError(f"{fn}: shape {shape} does not match the inputs' shape {out.shape}")
    if dtype is not None and dtype != out.dtype:
        raise TypeError(f"{fn}: tensor_dtype {dtype} does not match the inputs' dtype "
                        f"{out.dtype}")
    return out


def divide_no_nan(x, y, name=None):
    """x / y, and 0 wherever y == 0 (also for x inf or NaN); gradients 0 there."""
    x, y = _float_pair(x, y, "divide_no_nan")
    zero = equal(y, 0)
    return where(zero, 0.0, x) / where(zero, 1.0, y)


def multiply_no_nan(x, y, name=None):
    """x * y, and 0 wherever y == 0 (also for x inf or NaN)."""
    x, y = _float_pair(x, y, "multiply_no_nan")
    dropped = logical_and(equal(y, 0), logical_not(is_finite(x)))
    return where(dropped, 0.0, x) * y + 0.0  # + 0.0: -0.0 -> 0.0, as TF


def reciprocal_no_nan(x, name=None):
    """1 / x, and 0 wherever x == 0; gradient 0 there."""
    x = _real(x, "reciprocal_no_nan", kinds="f")
    zero = equal(x, 0)
    return where(zero, 0.0, 1 / where(zero, 1.0, x))


def lbeta(x, name=None):
    """log|B(x)| = sum(lgamma(x), -1) - lgamma(sum(x, -1)), over the last axis (-inf there
    if it is empty)."""
    x = _real(x, "lbeta", kinds="f")
    if x.ndim == 0:
        raise ValueError("lbeta: x must have rank >= 1, got a scalar")
    return (reduce_sum(apply(Lgamma, x), axis=-1)
            - apply(Lgamma, reduce_sum(x, axis=-1)))


def scalar_mul(scalar, x, name=None):
    """scalar * x for a 0-d scalar."""
    s = to_input(scalar, (x,), "scalar_mul", "scalar")
    if s.ndim != 0:
        raise ValueError(f"scalar_mul: scalar must be 0-d, got shape {s.shape}")
    return s * to_input(x, (s,), "scalar_mul", "x")


def polyval(coeffs, x, name=None):
    """sum(coeffs[i] * x^(n-1-i)) by Horner's scheme: coeffs[0] is the highest power."""
    if not isinstance(coeffs, list):
        raise ValueError(f"polyval: coeffs must be a list, got {type(coeffs).__name__}")
    x = to_input(x, coeffs, "polyval", "x")
    if not coeffs:
        return zeros_like(x)
    cs = [to_input(c, (x,), "polyval", f"coeffs[{k}]") for k, c in enumerate(coeffs)]
    broadcast_shape("polyval", *[c.shape for c in cs], x.shape,
                    names=[f"coeffs[{k}]" for k in range(len(cs))] + ["x"])
    p = cs[0]
    for c in cs[1:]:
        p = c + p * x
    return p


# -- integer and bool helpers ----------------------------------------------------------------
def count_nonzero(input, axis=None, keepdims=None, dtype=np.int64, name=None):
    """The number of nonzero elements over `axis` (all axes for None), as `dtype`."""
    x = to_input(input, (), "count_nonzero", "input")
    axis = normalize_axes(axis, x.ndim, "count_nonzero")
    keep = False if keepdims is None else as_bool(keepdims, "count_nonzero", "keepdims")
    dt = as_dtype(dtype, "count_nonzero", kinds="iuf")
    nonzero = not_equal(x, False if x.dtype == np.bool_ else 0)
    return cast(reduce_sum(cast(nonzero, np.int64), axis=axis, keepdims=keep), dt)


def invert_permutation(x, name=None):
    """y with y[x[i]] = i, for a 1-d permutation x of 0..n-1."""
    t = to_input(x, (), "invert_permutation", "x")
    if t.ndim != 1:
        raise ValueError(f"invert_permutation: x must be 1-d, got shape {t.shape}")
    v = _read_ints(t, "invert_permutation", "x")
    if not np.array_equal(np.sort(v), np.arange(v.size)):
        raise ValueError(f"invert_permutation: x is not a permutation of 0..{v.size - 1}")
    return cast(apply(ArgSort, t, axis=0, descending=False, stable=True), t.dtype)


def _monotone(x, fn, compare):
    t = _real(x, fn, kinds="iuf")
    flat = reshape(t, (-1,))
    if flat.shape[0] < 2:
        return reduce_all(equal(flat, flat))  # True
    return reduce_all(compare(flat[1:], flat[:-1]))


def is_non_decreasing(x, name=None): return _monotone(x, "is_non_decreasing", greater_equal)
def is_strictly_increasing(x, name=None): return _monotone(x, "is_strictly_increasing", greater)


def in_top_k(targets, predictions, k, name=None):
    """Whether predictions[i, targets[i]] is among the k largest of row i (ties at the
    boundary count as in); False for out-of-range targets or non-finite rows."""
    fn = "in_top_k"
    p = _real(predictions, fn, "predictions", "f")
    t = to_input(targets, (), fn, "targets")
    if t.dtype.kind not in "iu":
        raise TypeError(f"{fn}: targets must be an integer tensor, got dtype {t.dtype}")
    if p.ndim != 2 or t.shape != p.shape[:1]:
        raise ValueError(f"{fn}: predictions must be 2-d (batch, classes) and targets 1-d "
                         f"(batch,), got shapes {p.shape} and {t.shape}")
    k = as_int(k, fn, "k")
    n = p.shape[1]
    if n == 0:  # no class: every target is out of range
        return cast(zeros_like(t), np.bool_)
    valid = logical_and(greater_equal(t, 0), less(t, n))
    safe = where(valid, t, 0)
    target = gather(p, reshape(safe, (-1, 1)), axis=1, batch_dims=1)  # (batch, 1)
    better = reduce_sum(cast(greater(p, target), np.int64), axis=1)
    finite = reduce_all(is_finite(p), axis=1)
    return logical_and(logical_and(valid, finite), less(better, k))


TopKV2 = collections.namedtuple("TopKV2", ["values", "indices"])


def top_k(input, k=1, sorted=True, name=None):
    """The k largest entries of the last axis (values, int32 indices), largest first;
    equal values keep their order. Values are differentiable (gradient scattered back)."""
    x = _real(input, "top_k", "input")
    if x.ndim == 0:
        raise ValueError("top_k: input must have rank >= 1, got a scalar")
    k = as_int(k, "top_k", "k", 0)
    if k > x.shape[-1]:
        raise ValueError(f"top_k: k={k} is larger than the last dimension {x.shape[-1]}")
    order = apply(ArgSort, x, axis=x.ndim - 1, descending=True, stable=True)
    idx = order[..., :k]
    return TopKV2(take_along_axis(x, idx, x.ndim - 1), cast(idx, np.int32))


# -- cross, approximate_equal, bucketize -----------------------------------------------------
_NEXT = np.array([1, 2, 0])  # component k -> k + 1 (mod 3)


def _same_dtype_and_shape(fn, name1, t1, name2, t2):
    """TF's pairwise ops (cross, approximate_equal) neither promote nor broadcast."""
    if t1.dtype != t2.dtype:
        raise TypeError(f"{fn}: {name1} and {name2} must have the same dtype, got {t1.dtype} "
                        f"and {t2.dtype}")
    if t1.shape != t2.shape:
        raise ValueError(f"{fn}: {name1} and {name2} must have the same shape, got "
                         f"{t1.shape} and {t2.shape}")


def cross(a, b, name=None):
    """The cross product of the 3-vectors on the last axis of a and b (TF's tf.linalg.cross,
    also tf.math.cross): a and b of one shape (..., 3) and one real dtype; output the same.
    Differentiable in both.

    >>> vj.math.cross([1.0, 0.0, 0.0], [0.0, 1.0, 0.0]).numpy()
    array([0., 0., 1.])
    """
    fn = "cross"
    at, bt = to_input(a, (a, b), fn, "a"), to_input(b, (a, b), fn, "b")
    for arg, t in (("a", at), ("b", bt)):
        if t.dtype.kind == "c":
            raise ComplexNotSupported(fn, f"{arg} has complex dtype {t.dtype}")
        if t.dtype.kind not in "iuf":
            raise TypeError(f"{fn}: {arg} must be a real numeric tensor, got dtype {t.dtype}")
    _same_dtype_and_shape(fn, "a", at, "b", bt)
    if at.ndim == 0 or at.shape[-1] != 3:
        raise ValueError(f"{fn}: a and b must have a last axis of size 3 (shape (..., 3)), "
                         f"got shape {at.shape}")
    # (a x b)_k = d_(k+1) for d_j = a_j b_(j+1) - a_(j+1) b_j: three gathers with constant
    # indices (exact sparsity patterns, scatter gradients) instead of six slices and a stack
    ax = at.ndim - 1
    d = at * gather(bt, _NEXT, axis=ax) - gather(at, _NEXT, axis=ax) * bt
    return gather(d, _NEXT, axis=ax)


def approximate_equal(x, y, tolerance=1e-05, name=None):
    """abs(x - y) < tolerance, element-wise (TF's tf.math.approximate_equal): x and y of
    one shape and dtype; a bool tensor of that shape. Not differentiable.

    >>> vj.math.approximate_equal([1.0, 2.0], [1.000001, 2.1]).numpy()
    array([ True, False])
    """
    fn = "approximate_equal"
    xt, yt = to_input(x, (x, y), fn, "x"), to_input(y, (x, y), fn, "y")
    for arg, t in (("x", xt), ("y", yt)):
        if t.dtype.kind not in "iufc":
            raise TypeError(f"{fn}: {arg} must be a numeric tensor, got dtype {t.dtype}")
    _same_dtype_and_shape(fn, "x", xt, "y", yt)
    if isinstance(tolerance, bool) or not isinstance(tolerance, numbers.Real):
        raise TypeError(f"{fn}: tolerance must be a real number, got {tolerance!r}")
    if xt.dtype.kind in "iu":  # in float64: no wrap-around of unsigned differences, and a
        xt, yt = cast(xt, np.float64), cast(yt, np.float64)  # fractional tolerance
    return less(tensor_abs(xt - yt), float(tolerance))


def bucketize(input, boundaries, name=None):
    """The index of the bucket of each entry of `input` (TF's tf.math.bucketize): the
    number of boundaries <= the entry, so an entry equal to a boundary goes to the bucket
    above it (np.digitize's convention; NaN goes past the last). `boundaries`: a sorted
    (non-decreasing) list of numbers, compared in float64 (TF rounds them to float32).
    Output: int32, input's shape. Not differentiable.

    >>> vj.math.bucketize([-5.0, 10.0, 150.0, 5.0], [0.0, 10.0, 100.0]).numpy()
    array([0, 2, 3, 1], dtype=int32)
    """
    fn = "bucketize"
    x = _real(input, fn, "input")
    if not isinstance(boundaries, (list, tuple)):
        raise TypeError(f"{fn}: boundaries must be a list of floats, got "
                        f"{type(boundaries).__name__}")
    for k, v in enumerate(boundaries):
        if isinstance(v, bool) or not isinstance(v, numbers.Real):
            raise TypeError(f"{fn}: boundaries must be a list of floats, boundaries[{k}] "
                            f"is {v!r}")
    edges = np.array(boundaries, dtype=np.float64)
    if not (edges[1:] >= edges[:-1]).all():  # NaN fails too: it has no place in an order
        raise ValueError(f"{fn}: boundaries must be sorted (non-decreasing), got "
                         f"{list(boundaries)}")
    # side="right": after equal boundaries, so a boundary value starts the next bucket
    return searchsorted(edges, x, side="right", out_type=np.int32)


# -- sequences --------------------------------------------------------------------------
def linspace(start, stop, num, axis=0, name=None):
    """`num` evenly spaced values from start to stop, both included (TF's linspace).

    start and stop may be tensors of broadcastable shapes (float; ints become float64);
    the result is differentiable in both. Output shape: the broadcast shape of start and
    stop with `num` inserted at `axis`.
    """
    n = _count(num, "linspace", "num")
    a = to_input(start, (start, stop), "linspace", "start")
    b = to_input(stop, (start, stop), "linspace", "stop")
    for arg, t in (("start", a), ("stop", b)):
        if t.dtype.kind not in "iuf":
            raise TypeError(f"linspace: {arg} must be a real number, got dtype {t.dtype}")
    dtype = np.result_type(a.dtype, b.dtype)
    dtype = dtype if dtype.kind == "f" else np.dtype(np.float64)
    a, b = cast(a, dtype), cast(b, dtype)
    rank = len(broadcast_shape("linspace", a.shape, b.shape, names=("start", "stop")))
    ax = normalize_axis(axis, rank + 1, "linspace")
    # start * (1 - t) + stop * t hits both end points exactly
    t = np.arange(n, dtype=dtype) / max(n - 1, 1)
    t = t.reshape((n,) + (1,) * (rank - ax))
    a = reshape(a, (1,) * (rank - a.ndim) + a.shape)
    b = reshape(b, (1,) * (rank - b.ndim) + b.shape)
    return add(multiply(expand_dims(a, ax), Tensor(1 - t)), multiply(expand_dims(b, ax), Tensor(t)))


lib.publish(globals(), __all__ + ["linspace"])  # vj.linspace (tf.linspace), not vj.math
