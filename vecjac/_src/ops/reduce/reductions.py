"""Reductions over axes: sum, mean, max, min, prod, logsumexp, euclidean norm, any, all,
argmax, argmin. The scans (cumsum, cumprod, cumulative_logsumexp): cumulative.py.

Public functions normalize `axis` (int, list, None) to a sorted tuple of non-negative
axes, or None for all axes, before the op runs; the converter shifts it past the loop
axis. Gradients broadcast the cotangent back over the reduced axes.
"""
import math

import numpy as np

from vecjac._src.core.dispatch import apply, to_input
from vecjac._src.core.registry import Op, lib, register
from vecjac._src.core.samples import Arg, Sample
from vecjac._src.core.shapes import as_dtype, normalize_axes, normalize_axis, sum_as_product
from vecjac._src.ops.array.shaping import BroadcastTo, broadcast_to, reshape, stop_gradient, transpose
from vecjac._src.ops.elementwise.complex_parts import conj_if_complex
from vecjac._src.ops.elementwise.logic import cast, equal, where
from vecjac._src.ops.elementwise.unary import abs as tensor_abs
from vecjac._src.ops.elementwise.unary import exp, is_finite, log, sqrt, square
from vecjac._src.transforms.forward.rules import linear
from vecjac._src.transforms.pfor.converters import reduction
from vecjac._src.transforms.pfor.structured import is_onehot, unravel
from vecjac._src.transforms.sparsity import patterns

__all__ = ["reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod",
           "reduce_logsumexp", "reduce_euclidean_norm", "reduce_any", "reduce_all", "argmax",
           "argmin", "reduce_variance", "reduce_std"]


def _int_dtype(x):
    """Keep small integer dtypes (NumPy would widen int32 sums to int64; TF does not)."""
    return x.dtype if x.dtype.kind in "iu" else None


def _sum(x, axis, keepdims):
    """np.sum over `axis` (a sorted tuple or None). A run of adjacent axes before the
    last one (a bias's gradient over the batch axis, pfor's stacked reductions) is a
    product with a vector of ones instead: NumPy reduces such an axis row by row, with
    short inner loops, and BLAS is 2-10x faster for inner sizes up to 512 (240 x 64 x 16
    over axis 1: 0.36 -> 0.05 ms). vecjac/_src/core/shapes.py: sum_as_product."""
    if x.dtype.kind == "f" and x.dtype.itemsize >= 4 and x.flags.c_contiguous:
        dims = sum_as_product(x.shape, axis)
        if dims is not None:
            out = np.matmul(np.ones(dims[1], x.dtype), x.reshape(dims))
            shape = x.shape
            return out.reshape(_kept_shape(shape, axis) if keepdims else
                               shape[:axis[0]] + shape[axis[-1] + 1:])
    # np.sum's own reduction, without its Python wrapper (1 us of a small function's sum)
    return np.add.reduce(x, axis=axis, dtype=_int_dtype(x), keepdims=keepdims)


def _kept_shape(shape, axis):
    """Shape of the reduction's output with keepdims=True."""
    if axis is None:
        return (1,) * len(shape)
    return tuple(1 if i in axis else d for i, d in enumerate(shape))


def _expand_back(g, x, axis):
    """Cotangent of a reduction's output, broadcast back to x's shape."""
    if axis is None:  # every axis reduced: g (shape () or all ones) broadcasts as it is
        return broadcast_to(g, x.shape)
    kept = _kept_shape(x.shape, axis)
    if g.shape != kept:
        g = reshape(g, kept)
    return broadcast_to(g, x.shape)


def _expand_back_array(g, shape, axis):
    """_expand_back on an ndarray g, for a rule on arrays: the same values."""
    if axis is not None:
        kept = _kept_shape(shape, axis)
        if g.shape != kept:
            g = g.reshape(kept)
    return g if g.shape == shape else BroadcastTo.forward(g, shape)


def _reduce(op, x, axis, keepdims, fn):
    x = to_input(x, (), fn, "input_tensor")
    if x.dtype.kind not in "biufc":
        raise TypeError(f"{fn}: expected a numeric tensor, got dtype {x.dtype}")
    axis = normalize_axes(axis, x.ndim, fn)
    if not isinstance(keepdims, (bool, np.bool_)):
        raise TypeError(f"{fn}: keepdims must be a bool, got {keepdims!r}")
    return apply(op, x, axis=axis, keepdims=bool(keepdims))


@register
class Sum(Op):
    complex_rules = True
    pattern = patterns.reduction
    jvp = linear
    samples = (Sample("reduce_sum", Arg.float(2, "n", 3), axis=1),
               Sample("reduce_sum", Arg.float(2, "n")),
               Sample("reduce_sum", Arg.float(2, 3, "n"), axis=(0, 2), keepdims=True),
               Sample("reduce_sum", Arg.float()))
    samples += (Sample("reduce_sum", Arg.float("m", "n"), axis=1, dim_range=(0, 3)),)
    converter = reduction

    def forward(self, x, axis, keepdims):
        return _sum(x, axis, keepdims)

    def structured(self, cx, x, axis, keepdims):
        """Sum of a one-hot value: d itself, or a one-hot value in the reduced shape."""
        if not is_onehot(x, cx.loop):
            return NotImplemented
        rank, lead = len(x.S), x.lead
        axes = set(range(rank)) if axis is None else set(axis)
        if any(i < lead for i in axes):
            return NotImplemented  # summing over the dense leading axes: not one-hot any more
        kept = [i for i in range(lead, rank) if i not in axes]
        shape = tuple(1 if i in axes else x.S[i] for i in range(rank)) if keepdims else \
            tuple(x.S[i] for i in range(rank) if i not in axes)
        if not kept:
            return reshape(x.d, (cx.iters,) + shape)
        idx = unravel(x)
        pos = np.ravel_multi_index(tuple(idx[i - lead] for i in kept),
                                   tuple(x.S[i] for i in kept))
        return x.with_(pos=pos, shape=shape)

    def gradient(self, e, g):
        return _expand_back(g, e.inputs[0], e.attrs["axis"])

    def array_gradient(self, e, g):  # the rule on arrays (op_block.md)
        return (_expand_back_array(g, e.inputs[0].shape, e.attrs["axis"]),)


@register
class Mean(Op):
    complex_rules = True
    pattern = patterns.reduction
    jvp = linear
    samples = (Sample("reduce_mean", Arg.float(2, "n", 3), axis=1),
               Sample("reduce_mean", Arg.float(2, "n")),
               Sample("reduce_mean", Arg.float(2, 3, "n"), axis=(0, 2), keepdims=True),
               Sample("reduce_mean", Arg.float()))
    converter = reduction

    def forward(self, x, axis, keepdims):
        if x.dtype.kind == "f" and x.dtype.itemsize >= 4 and axis:
            count = math.prod([x.shape[a] for a in axis])
            if count:
                out = _sum(x, axis, keepdims)
                out /= count  # as np.mean: the sum, then one division
                return out
        return np.mean(x, axis=axis, keepdims=keepdims)

    def gradient(self, e, g):
        x = e.inputs[0]
        axis = e.attrs["axis"]
        count = int(math.prod([x.shape[a] for a in (axis if axis is not None else range(x.ndim))]))
        return _expand_back(g / max(count, 1), x, axis)


class _Extremum(Op):
    converter = reduction

    def gradient(self, e, g):
        # The cotangent is shared equally among tied extreme elements (as TF).
        x, y = e.inputs[0], e.outputs[0]
        axis = e.attrs["axis"]
        hit = cast(equal(x, _expand_back(y, x, axis)), g.dtype)
        share = hit / Sum(hit, axis=axis, keepdims=True)  # kept shape: fits g's either way
        return _expand_back(g, x, axis) * share


@register
class Max(_Extremum):
    pattern = patterns.reduction
    samples = (Sample("reduce_max", Arg.float(2, "n", 3), axis=1),
               Sample("reduce_max", Arg.float(2, "n")),
               Sample("reduce_max", Arg.float(2, 3, "n"), axis=(0, 2), keepdims=True),
               Sample("reduce_max", Arg.float()))

    def forward(self, x, axis, keepdims):
        return np.max(x, axis=axis, keepdims=keepdims)


@register
class Min(_Extremum):
    pattern = patterns.reduction
    samples = (Sample("reduce_min", Arg.float(2, "n", 3), axis=1),
               Sample("reduce_min", Arg.float(2, "n")),
               Sample("reduce_min", Arg.float(2, 3, "n"), axis=(0, 2), keepdims=True),
               Sample("reduce_min", Arg.float()))

    def forward(self, x, axis, keepdims):
        return np.min(x, axis=axis, keepdims=keepdims)


@register
class Any(Op):
    samples = (Sample("reduce_any", Arg.bool(2, "n", 3), axis=1),
               Sample("reduce_any", Arg.bool(2, "n")),
               Sample("reduce_any", Arg.bool(2, 3, "n"), axis=(0, 2), keepdims=True),
               Sample("reduce_any", Arg.bool()))
    differentiable = False
    converter = reduction

    def forward(self, x, axis, keepdims):
        return np.any(x, axis=axis, keepdims=keepdims)


@register
class All(Op):
    samples = (Sample("reduce_all", Arg.bool(2, "n", 3), axis=1),
               Sample("reduce_all", Arg.bool(2, "n")),
               Sample("reduce_all", Arg.bool(2, 3, "n"), axis=(0, 2), keepdims=True),
               Sample("reduce_all", Arg.bool()))
    differentiable = False
    converter = reduction

    def forward(self, x, axis, keepdims):
        return np.all(x, axis=axis, keepdims=keepdims)


@register
class Prod(Op):
    complex_rules = True
    pattern = patterns.reduction
    samples = (Sample("reduce_prod", Arg.float(2, "n", 3), axis=1),
               Sample("reduce_prod", Arg.float(3, "n", zeros=0.3), axis=(0, 1), keepdims=True),
               Sample("reduce_prod", Arg.float(2, "n", 3, zeros=0.3), axis=(0, 2)),
               Sample("reduce_prod", Arg.float("n")), Sample("reduce_prod", Arg.float()))
    samples += (Sample("reduce_prod", Arg.float("m", "n"), axis=0, dim_range=(0, 3)),)
    converter = reduction

    def forward(self, x, axis, keepdims):
        return np.prod(x, axis=axis, keepdims=keepdims, dtype=_int_dtype(x))

    def gradient(self, e, g):
        # d prod / d x_i = product of the other elements, as the product of exclusive
        # cumulative products from the left and from the right: no division, so exact
        # where x has zeros (dividing the product by x_i is not).
        x = e.inputs[0]
        axis = e.attrs["axis"]
        reduced = tuple(range(x.ndim)) if axis is None else axis
        kept = tuple(i for i in range(x.ndim) if i not in reduced)
        perm = kept + reduced
        moved = transpose(x, perm)
        lead = moved.shape[:len(kept)]
        size = int(math.prod(moved.shape[len(kept):]))
        rows = reshape(moved, lead + (size,))
        last = len(lead)
        others = (lib.cumprod(rows, last, exclusive=True) *  # cumulative.py imports this
                  lib.cumprod(rows, last, exclusive=True, reverse=True))
        inverse = tuple(sorted(range(len(perm)), key=perm.__getitem__))  # (no NumPy call)
        others = transpose(reshape(others, moved.shape), inverse)
        return _expand_back(g, x, axis) * conj_if_complex(others)

    def array_gradient(self, e, g):  # the rule above on arrays, step by step (op_block.md)
        x, axis = e.inputs[0]._value, e.attrs["axis"]
        reduced = tuple(range(x.ndim)) if axis is None else axis
        kept = tuple(i for i in range(x.ndim) if i not in reduced)
        perm = kept + reduced
        moved = x.transpose(perm)
        lead = moved.shape[:len(kept)]
        rows = moved.reshape(lead + (int(math.prod(moved.shape[len(kept):])),))
        scan = lib.Cumprod.forward
        others = np.asarray(lib.Mul.forward(scan(rows, len(lead), True, False),
                                            scan(rows, len(lead), True, True)))
        inverse = tuple(sorted(range(len(perm)), key=perm.__getitem__))
        others = others.reshape(moved.shape).transpose(inverse)
        expanded = _expand_back_array(g, x.shape, axis)
        return (np.asarray(lib.Mul.forward(expanded, others)),)


def reduce_sum(input_tensor, axis=None, keepdims=False, name=None):
    """Sum over `axis` (None: all axes); shape drops those axes unless keepdims."""
    return _reduce(Sum, input_tensor, axis, keepdims, "reduce_sum")


def reduce_mean(input_tensor, axis=None, keepdims=False, name=None):
    """Mean over `axis` (None: all axes)."""
    # integer inputs give float64 (NumPy's rule; TF would keep the integer dtype)
    return _reduce(Mean, input_tensor, axis, keepdims, "reduce_mean")


def reduce_max(input_tensor, axis=None, keepdims=False, name=None):
    x = to_input(input_tensor, fn="reduce_max", arg="input_tensor")
    if x.size == 0:
        raise ValueError(f"reduce_max: input is empty (input_tensor shape {x.shape})")
    return _reduce(Max, x, axis, keepdims, "reduce_max")


def reduce_min(input_tensor, axis=None, keepdims=False, name=None):
    x = to_input(input_tensor, fn="reduce_min", arg="input_tensor")
    if x.size == 0:
        raise ValueError(f"reduce_min: input is empty (input_tensor shape {x.shape})")
    return _reduce(Min, x, axis, keepdims, "reduce_min")


def _composite_args(x, axis, keepdims, fn, kinds="iufc"):
    """Checked input, axes and keepdims of a reduction built from other ops: validated
    here, before any op runs, so that errors name `fn` and nothing is half-recorded."""
    x = to_input(x, (), fn, "input_tensor")
    if x.dtype.kind not in kinds:
        if kinds == "f":
            raise TypeError(f"{fn}: input_tensor must be a floating-point (real) tensor, "
                            f"got dtype {x.dtype}")
        raise TypeError(f"{fn}: expected a numeric tensor as input_tensor, got dtype "
                        f"{x.dtype}")
    axes = normalize_axes(axis, x.ndim, fn)
    if not isinstance(keepdims, (bool, np.bool_)):
        raise TypeError(f"{fn}: keepdims must be a bool, got {keepdims!r}")
    return x, axes, bool(keepdims)


def reduce_prod(input_tensor, axis=None, keepdims=False, name=None):
    """Product over `axis` (None: all axes); shape drops those axes unless keepdims.

    The gradient is exact where the input contains zeros (no division by x).
    """
    return _reduce(Prod, input_tensor, axis, keepdims, "reduce_prod")


def reduce_euclidean_norm(input_tensor, axis=None, keepdims=False, name=None):
    """sqrt(sum(|x|^2)) over `axis` (None: all axes); shape as reduce_sum.

    As in TF, the gradient at a norm of exactly 0 is NaN (use vj.norm / clip_by_norm /
    l2_normalize forms that guard 0 when that matters).
    """
    x, axes, keepdims = _composite_args(input_tensor, axis, keepdims, "reduce_euclidean_norm")
    if x.dtype.kind in "iu":  # squares of small ints would wrap around: float64 (as mean)
        x = cast(x, np.float64)
    sq = square(tensor_abs(x)) if x.dtype.kind == "c" else square(x)
    return sqrt(reduce_sum(sq, axis=axes, keepdims=keepdims))


def reduce_any(input_tensor, axis=None, keepdims=False, name=None):
    return _reduce(Any, input_tensor, axis, keepdims, "reduce_any")


def reduce_all(input_tensor, axis=None, keepdims=False, name=None):
    return _reduce(All, input_tensor, axis, keepdims, "reduce_all")


def reduce_logsumexp(input_tensor, axis=None, keepdims=False, name=None):
    """log(sum(exp(x))) over `axis`, computed stably (max subtracted first)."""
    x, axes, keepdims = _composite_args(input_tensor, axis, keepdims, "reduce_logsumexp",
                                        kinds="f")
    if x.size == 0:
        raise ValueError(f"reduce_logsumexp: input is empty (input_tensor shape {x.shape})")
    m = stop_gradient(reduce_max(x, axis=axes, keepdims=True))
    # an infinite max (all -inf, or some +inf) would give inf - inf: shift by 0 instead
    m = where(is_finite(m), m, 0)
    with np.errstate(divide="ignore"):  # all -inf: log(0) = -inf is the answer
        out = log(reduce_sum(exp(x - m), axis=axes, keepdims=True)) + m
    return out if keepdims else _squeeze_axes(out, axes)


def _squeeze_axes(x, axes):
    shape = x.shape
    keep = tuple(d for i, d in enumerate(shape) if axes is not None and i not in axes)
    return reshape(x, keep)


def reduce_variance(input_tensor, axis=None, keepdims=False, name=None):
    """Mean of |x - mean|^2 over `axis` (real for complex x); shape as reduce_mean."""
    return _variance(*_composite_args(input_tensor, axis, keepdims, "reduce_variance"))


def _variance(x, axes, keepdims):
    d = x - reduce_mean(x, axis=axes, keepdims=True)
    return reduce_mean(square(tensor_abs(d)) if d.dtype.kind == "c" else d * d, axis=axes,
                       keepdims=keepdims)


def reduce_std(input_tensor, axis=None, keepdims=False, name=None):
    """Square root of reduce_variance; shape as reduce_mean."""
    x, axes, keepdims = _composite_args(input_tensor, axis, keepdims, "reduce_std")
    variance = _variance(x, axes, keepdims)
    count = x.size if axes is None else math.prod(x.shape[a] for a in axes)
    if count == 1:
        # the std of one value is identically 0 (so is its derivative): sqrt's derivative
        # at 0 is inf and inf * 0 would make the gradient NaN. The variance is the same 0.
        return variance
    return sqrt(variance)


class _ArgExtremum(Op):
    differentiable = False

    def converter(self, cx, x, axis, output_type):
        return apply(self, x, axis=axis + 1, output_type=output_type)


@register
class ArgMax(_ArgExtremum):
    samples = (Sample("argmax", Arg.float(2, "n", 3), axis=1), Sample("argmax", Arg.float("n")))

    def forward(self, x, axis, output_type):
        return np.argmax(x, axis=axis).astype(output_type)


@register
class ArgMin(_ArgExtremum):
    samples = (Sample("argmin", Arg.float(2, "n", 3), axis=-1), Sample("argmin", Arg.float("n")))

    def forward(self, x, axis, output_type):
        return np.argmin(x, axis=axis).astype(output_type)


def _arg(op, x, axis, output_type, fn):
    x = to_input(x, (), fn, "input")
    if x.ndim == 0:
        raise ValueError(f"{fn}: input must have rank >= 1, got a scalar")
    if x.size == 0:
        raise ValueError(f"{fn}: input is empty (shape {x.shape})")
    axis = normalize_axis(0 if axis is None else axis, x.ndim, fn)
    output_type = np.int64 if output_type is None else output_type  # TF: None is int64
    return apply(op, x, axis=axis, output_type=as_dtype(output_type, fn, "output_type", "iu"))


def argmax(input, axis=None, output_type=np.int64, name=None):
    """Index of the largest element along `axis` (default 0, as TF)."""
    return _arg(ArgMax, input, axis, output_type, "argmax")


def argmin(input, axis=None, output_type=np.int64, name=None):
    """Index of the smallest element along `axis` (default 0, as TF)."""
    return _arg(ArgMin, input, axis, output_type, "argmin")


lib.publish(globals(), __all__)
