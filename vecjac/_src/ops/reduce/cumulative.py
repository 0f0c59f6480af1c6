"""Scans along one axis: cumsum, cumprod and cumulative_logsumexp (a running logaddexp,
stable where a shift by the maximum is not).

Public functions normalize `axis` to one non-negative axis before the op runs; the
converter shifts it past the loop axis. `exclusive` shifts the scan by one (the
identity first), `reverse` scans from the end; the adjoint of a scan is the scan in the
other direction.
"""
import numpy as np

from vecjac._src.core.arguments import real_input
from vecjac._src.core.context import value_read
from vecjac._src.core.dispatch import apply, to_input
from vecjac._src.core.registry import Op, lib, register
from vecjac._src.core.samples import Arg, Sample
from vecjac._src.core.shapes import as_bool, normalize_axis
from vecjac._src.core.tensor import Tensor
from vecjac._src.ops.array.shaping import expand_dims, transpose
from vecjac._src.ops.elementwise.complex_parts import conj_if_complex
from vecjac._src.ops.elementwise.logic import greater, where
from vecjac._src.ops.elementwise.unary import exp, is_finite, log
from vecjac._src.ops.reduce.reductions import _int_dtype, reduce_sum
from vecjac._src.transforms.forward.rules import linear
from vecjac._src.transforms.pfor.converters import axis_shift
from vecjac._src.transforms.sparsity import patterns

__all__ = ["cumsum", "cumprod", "cumulative_logsumexp"]


# -- scans -------------------------------------------------------------------------------
def _scan_np(accumulate, x, axis, exclusive, reverse, identity):
    # (`accumulate`: the ndarray method, np.cumsum's own work without its Python wrapper)
    if reverse:
        x = np.flip(x, axis)
    out = accumulate(x, axis=axis, dtype=_int_dtype(x))
    if exclusive:  # shift by one along axis, the identity entering first
        shifted = np.empty_like(out)
        head = [slice(None)] * x.ndim
        head[axis] = slice(0, 1)
        body, prev = list(head), list(head)
        body[axis], prev[axis] = slice(1, None), slice(0, -1)
        shifted[tuple(head)] = identity
        shifted[tuple(body)] = out[tuple(prev)]
        out = shifted
    return np.flip(out, axis) if reverse else out


@register
class Cumsum(Op):
    complex_rules = True
    pattern = patterns.scan
    jvp = linear
    samples = (Sample("cumsum", Arg.float(2, "n"), axis=1),
               Sample("cumsum", Arg.float("n", 2), exclusive=True, reverse=True),
               Sample("cumsum", Arg.float(2, "n"), axis=-1, exclusive=True))
    samples += (Sample("cumsum", Arg.float("m", "n"), axis=1, dim_range=(0, 3)),)
    converter = axis_shift("axis")

    def forward(self, x, axis, exclusive, reverse):
        return _scan_np(np.ndarray.cumsum, x, axis, exclusive, reverse, 0)

    def gradient(self, e, g):
        a = e.attrs  # the adjoint of a scan is the scan in the other direction
        return cumsum(g, a["axis"], exclusive=a["exclusive"], reverse=not a["reverse"])


@register
class Cumprod(Op):
    complex_rules = True
    pattern = patterns.scan
    samples = (Sample("cumprod", Arg.float(2, "n"), axis=1),
               Sample("cumprod", Arg.float("n", 3, zeros=0.3), exclusive=True),
               Sample("cumprod", Arg.float(4, zeros=0.3), reverse=True),
               Sample("cumprod", Arg.float(2, "n", zeros=0.3), axis=1, exclusive=True, reverse=True))
    converter = axis_shift("axis")

    def forward(self, x, axis, exclusive, reverse):
        return _scan_np(np.ndarray.cumprod, x, axis, exclusive, reverse, 1)

    def gradient(self, e, g):
        x, y = e.inputs[0], e.outputs[0]
        axis, exclusive, reverse = e.attrs["axis"], e.attrs["exclusive"], e.attrs["reverse"]
        # Looking at the values only picks between two exact formulas: without zeros,
        # cumsum(g * y) / x (O(n)) equals the true gradient on a neighbourhood of x, so
        # all its derivatives are right too; with zeros, the O(n^2) form below.
        value_read(x, "internal", _has_zero)
        if not _has_zero(x._value):
            return cumsum(g * conj_if_complex(y), axis, exclusive=exclusive,
                          reverse=not reverse) / conj_if_complex(x)
        return _cumprod_grad_with_zeros(x, g, axis, exclusive, reverse)


def _has_zero(v):
    return bool(np.any(v == 0))


def _cumprod_grad_with_zeros(x, g, axis, exclusive, reverse):
    """grad_i = sum_j [x_i enters y_j] g_j prod(x_k for k entering y_j, k != i)."""
    n = x.shape[axis]
    perm = tuple(i for i in range(x.ndim) if i != axis) + (axis,)
    xt, gt = transpose(x, perm), transpose(g, perm)
    last = x.ndim  # the new (..., i, k) layout has one more axis
    i, j = np.arange(n)[:, None], np.arange(n)[None, :]
    enters = {(False, False): i <= j, (True, False): i < j,
              (False, True): i >= j, (True, True): i > j}[(exclusive, reverse)]
    # without_i[..., i, k] = x_k, with x_i replaced by 1
    without_i = where(Tensor(np.eye(n, dtype=bool)), 1, expand_dims(xt, -2))
    partial = cumprod(without_i, last, exclusive=exclusive, reverse=reverse)
    weights = Tensor(enters.astype(x.dtype)) * expand_dims(gt, -2)
    grad = reduce_sum(conj_if_complex(partial) * weights, axis=last)
    return transpose(grad, tuple(np.argsort(perm).tolist()))


def _scan(op, x, axis, exclusive, reverse, fn):
    x = to_input(x, (), fn, "x")
    if x.dtype.kind not in "iufc":
        raise TypeError(f"{fn}: x must be a numeric (int, float or complex) tensor, got "
                        f"dtype {x.dtype}")
    if x.ndim == 0:
        raise ValueError(f"{fn}: x must have rank >= 1, got a scalar")
    axis = normalize_axis(axis, x.ndim, fn)
    for arg, v in (("exclusive", exclusive), ("reverse", reverse)):
        if not isinstance(v, (bool, np.bool_)):
            raise TypeError(f"{fn}: {arg} must be a bool, got {v!r}")
    return apply(op, x, axis=axis, exclusive=bool(exclusive), reverse=bool(reverse))


def cumsum(x, axis=0, exclusive=False, reverse=False, name=None):
    """Cumulative sum along `axis`; same shape as x.

    exclusive: element k sums the elements before k (the first is 0); reverse: scan from
    the end. cumsum([a, b, c], exclusive=True, reverse=True) = [b + c, c, 0].
    """
    return _scan(Cumsum, x, axis, exclusive, reverse, "cumsum")


def cumprod(x, axis=0, exclusive=False, reverse=False, name=None):
    """Cumulative product along `axis`; same shape as x (exclusive / reverse as cumsum,
    the exclusive identity being 1). The gradient is exact where x contains zeros."""
    return _scan(Cumprod, x, axis, exclusive, reverse, "cumprod")


# -- cumulative_logsumexp --------------------------------------------------------------------
@register
class CumulativeLogsumexp(Op):
    converter = axis_shift("axis")
    samples = (Sample("cumulative_logsumexp", Arg.float(2, "n"), axis=1),
               Sample("cumulative_logsumexp", Arg.float("n", 3), reverse=True),
               Sample("cumulative_logsumexp", Arg.float(4)))

    def forward(self, x, axis, exclusive, reverse):
        if reverse:
            x = np.flip(x, axis)
        out = np.logaddexp.accumulate(x, axis=axis) if x.shape[axis] else x.copy()
        if exclusive:
            pad = np.full(x.shape[:axis] + (1,) + x.shape[axis + 1:], -np.inf, x.dtype)
            out = np.concatenate([pad, np.delete(out, -1, axis)], axis)
        return np.flip(out, axis) if reverse else out

    @staticmethod
    def _signed_scan(v, before, after, attrs):
        """sum over the scan of v_j exp(before_j) times exp(after): scans of log(+-v)."""
        out = None
        for part in (v, -v):
            positive = greater(part, 0)
            logs = where(positive, log(where(positive, part, 1.0)), -np.inf)
            term = exp(apply(CumulativeLogsumexp, logs + before, **attrs) + after)
            out = term if out is None else out - term
        return out

    def gradient(self, e, g):  # dx_i = sum_{j after i} g_j exp(x_i - y_j), as TF
        y = e.outputs[0]
        y = where(is_finite(y), y, 0.0)  # exclusive's -inf: never summed
        attrs = dict(e.attrs, reverse=not e.attrs["reverse"])
        return self._signed_scan(g, -y, e.inputs[0], attrs)

    def jvp(self, e, t):  # dy_j = sum_{i before j} t_i exp(x_i - y_j)
        if t is None:
            return None
        y = e.outputs[0]
        return self._signed_scan(t, e.inputs[0], -where(is_finite(y), y, 0.0),
                                 e.attrs)


def cumulative_logsumexp(x, axis=0, exclusive=False, reverse=False, name=None):
    """log(cumsum(exp(x), axis)), computed stably (a running logaddexp)."""
    x = real_input(x, "cumulative_logsumexp", kinds="f")
    if x.ndim == 0:
        raise ValueError("cumulative_logsumexp: x must have rank >= 1, got a scalar")
    axis = normalize_axis(axis, x.ndim, "cumulative_logsumexp")
    return apply(CumulativeLogsumexp, x, axis=axis,
                 exclusive=as_bool(exclusive, "cumulative_logsumexp", "exclusive"),
                 reverse=as_bool(reverse, "cumulative_logsumexp", "reverse"))


lib.publish(globals(), __all__)
