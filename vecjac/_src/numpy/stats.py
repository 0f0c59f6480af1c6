"""NumPy's statistics on Tensors (vecjac/_src/numpy/dispatch.py): nansum, nanmean, nanprod,
average, ptp, median, percentile, quantile, cov, corrcoef.

Each follows NumPy's own algorithm with vecjac ops (the same formulas in the same order,
so values agree to rounding). NaN entries of the nan* reductions are replaced by the
neutral element (vj.where), so they get zero gradient. Order statistics (median,
percentile, quantile) sort with ArgSort and gather: the positions are constant almost
everywhere, and each cotangent returns to the entries the result interpolates between.
"""
import warnings

import numpy as np

from vecjac._src.composites import norm as _n
from vecjac._src.core.dispatch import apply, to_input
from vecjac._src.core.tensor import Tensor
from vecjac._src.numpy.functions import (_axis_tuple, _cast_to, _keep, _mean, _no, _prod, _sum,
                                         _to_float)
from vecjac._src.numpy.tables import _dtype, _functions, _is_vj, _Unsupported
from vecjac._src.ops.array import creation as _c
from vecjac._src.ops.array import indexing as _i
from vecjac._src.ops.array import shaping as _a
from vecjac._src.ops.elementwise import arithmetic as _m
from vecjac._src.ops.elementwise import logic as _lo
from vecjac._src.ops.elementwise import unary as _u
from vecjac._src.ops.linalg import matrix as _la
from vecjac._src.ops.linalg import products as _lin
from vecjac._src.ops.reduce import reductions as _r
from vecjac._src.ops.reduce import sort as _so


def _axes_of(axis, ndim, fn):
    return None if axis is None else _axis_tuple(axis, ndim, fn)


def _kept(shape, axes):
    return tuple(1 if axes is None or k in axes else d for k, d in enumerate(shape))


# -- reductions that skip NaN ----------------------------------------------------------------
def _nan_to(a, fill, fn):
    """NumPy's _replace_nan: floating NaN entries become `fill` (their gradient is 0)."""
    kind = _dtype(a).kind
    if kind == "c":
        raise _Unsupported("complex values")
    if kind != "f":
        return a
    a = to_input(a, fn=fn, arg="a")
    filled = _c.zeros_like(a) if fill == 0 else _c.ones_like(a)
    return _lo.where(_u.is_nan(a), filled, a)


@_functions("vj.reduce_sum of vj.where(is_nan, 0, a)", "nansum")
def _nansum(a, axis=None, dtype=None, out=None, keepdims=np._NoValue, initial=np._NoValue,
            where=np._NoValue):
    _no(initial=initial, where=where if where is not True else None)
    return _sum(_nan_to(a, 0, "np.nansum"), axis, dtype, None, keepdims)


@_functions("vj.reduce_prod of vj.where(is_nan, 1, a)", "nanprod")
def _nanprod(a, axis=None, dtype=None, out=None, keepdims=np._NoValue, initial=np._NoValue,
             where=np._NoValue):
    _no(initial=initial, where=where if where is not True else None)
    return _prod(_nan_to(a, 1, "np.nanprod"), axis, dtype, None, keepdims)


@_functions("vj.reduce_sum of vj.where(is_nan, 0, a) / the count of the others", "nanmean")
def _nanmean(a, axis=None, dtype=None, out=None, keepdims=np._NoValue, *, where=np._NoValue):
    fn = "np.nanmean"
    _no(where=where if where is not True else None)
    if _dtype(a).kind != "f":
        return _mean(_nan_to(a, 0, fn), axis, dtype, None, keepdims)
    if dtype is not None and np.dtype(dtype).kind not in "fc":
        raise TypeError(f"{fn}: a is inexact, so dtype must be inexact, got {dtype!r}")
    a = to_input(a, fn=fn, arg="a")
    axes = _axes_of(axis, a.ndim, fn)
    count = _r.reduce_sum(_lo.cast(_lo.logical_not(_u.is_nan(a)), np.intp), axis=axes,
                          keepdims=_keep(keepdims))
    total = _sum(_nan_to(a, 0, fn), axes, dtype, None, keepdims)
    # NumPy's true_divide(total, count, out=total): the quotient in total's dtype
    return _cast_to(_m.divide(total, count), total.dtype)


# -- means and ranges ------------------------------------------------------------------------
def _weights(wgt, a, axes, fn):
    """NumPy's _weights_are_valid: weights of a's shape, or of the shape of a's `axes`
    (laid along them)."""
    if tuple(wgt.shape) == tuple(a.shape):
        return wgt
    if axes is None:
        raise TypeError(f"{fn}: axis must be given when the shapes of a {a.shape} and "
                        f"weights {wgt.shape} differ")
    if tuple(wgt.shape) != tuple(a.shape[k] for k in axes):
        raise ValueError(f"{fn}: the shape of weights {wgt.shape} must be that of a "
                         f"{a.shape} along axis {axes}")
    wgt = _a.transpose(wgt, [int(k) for k in np.argsort(axes)]) if len(axes) > 1 else wgt
    return _a.reshape(wgt, tuple(s if k in axes else 1 for k, s in enumerate(a.shape)))


@_functions("vj.reduce_mean / vj.reduce_sum(a * weights) / vj.reduce_sum(weights)",
            "average")
def _average(a, axis=None, weights=None, returned=False, *, keepdims=np._NoValue):
    fn = "np.average"
    a = to_input(a, fn=fn, arg="a")
    if a.dtype.kind not in "biuf":
        raise _Unsupported(f"dtype {a.dtype}")
    axes = _axes_of(axis, a.ndim, fn)
    keep = _keep(keepdims)
    if weights is None:
        avg = _r.reduce_mean(_to_float(a), axis=axes, keepdims=keep)
        scl = Tensor(np.asarray(a.size / max(avg.size, 1), avg.dtype))
    else:
        wgt = _weights(to_input(weights, fn=fn, arg="weights"), a, axes, fn)
        if wgt.dtype.kind not in "biuf":
            raise _Unsupported(f"weights of dtype {wgt.dtype}")
        extra = ("f8",) if a.dtype.kind in "biu" else ()
        dt = np.result_type(a.dtype, wgt.dtype, *extra)
        scl = _r.reduce_sum(_cast_to(wgt, dt), axis=axes, keepdims=keep)
        if getattr(scl, "_pfor", None) is None and np.any(np.asarray(scl._value) == 0):
            raise ZeroDivisionError(f"{fn}: weights sum to zero, can't be normalized")
        total = _r.reduce_sum(_m.multiply(_cast_to(a, dt), _cast_to(wgt, dt)), axis=axes,
                              keepdims=keep)
        avg = _m.divide(total, scl)
    if not returned:
        return avg
    if tuple(scl.shape) != tuple(avg.shape):
        scl = _a.broadcast_to(scl, tuple(avg.shape))
    return avg, scl


@_functions("vj.reduce_max - vj.reduce_min", "ptp")
def _ptp(a, axis=None, out=None, keepdims=np._NoValue):
    if _dtype(a).kind not in "iuf":
        raise _Unsupported(f"dtype {_dtype(a)}")
    a = to_input(a, fn="np.ptp", arg="a")
    axes, keep = _axes_of(axis, a.ndim, "np.ptp"), _keep(keepdims)
    return _m.subtract(_r.reduce_max(a, axis=axes, keepdims=keep),
                       _r.reduce_min(a, axis=axes, keepdims=keep))


# -- order statistics ------------------------------------------------------------------------
def _sorted_last(a, axis, fn):
    """(a sorted along the reduced axes, flattened into the last one; a's shape with 1 at
    the reduced axes (keepdims); the number of reduced entries)."""
    kind = _dtype(a).kind
    if kind == "c":
        raise TypeError(f"{fn}: a must be an array of real numbers, got dtype {_dtype(a)}")
    if kind not in "biuf":
        raise _Unsupported(f"dtype {_dtype(a)}")
    a = to_input(a, fn=fn, arg="a")
    axes = tuple(range(a.ndim)) if axis is None else _axis_tuple(axis, a.ndim, fn)
    others = [k for k in range(a.ndim) if k not in axes]
    x = _a.transpose(a, others + list(axes)) if a.ndim > 1 else a
    n = int(np.prod([a.shape[k] for k in axes], dtype=np.int64))
    if n == 0:
        raise _Unsupported("an empty reduction")  # NumPy: NaN and a RuntimeWarning
    x = _a.reshape(x, tuple(a.shape[k] for k in others) + (n,))
    order = apply(_so.ArgSort, x, axis=x.ndim - 1, descending=False, stable=False)
    return _so.take_along_axis(x, order, x.ndim - 1), _kept(a.shape, axes), n


def _nan_last(last, result):
    """NumPy's NaN check: a slice with a NaN (sorted last) gives NaN."""
    if last.dtype.kind != "f":
        return result
    return _lo.where(_u.is_nan(last), _cast_to(last, result.dtype), result)


@_functions("ArgSort + vj.gather of the middle one or two + vj.reduce_mean", "median")
def _median(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    s, kept, n = _sorted_last(a, axis, "np.median")
    half = n // 2
    middle = s[..., half:half + 1] if n % 2 else s[..., half - 1:half + 1]
    result = _nan_last(s[..., -1], _r.reduce_mean(_to_float(middle), axis=-1))
    return _a.reshape(result, kept) if keepdims else result


def _quantile(a, q, axis, method, keepdims, weights, interpolation, fn, scale):
    if weights is not None or interpolation is not None:
        raise _Unsupported("weights= or interpolation=")
    if method != "linear":
        raise _Unsupported(f"method={method!r}")
    if _is_vj(q):
        raise _Unsupported("a Tensor q (only a is differentiated)")
    if _dtype(a).kind == "b":
        raise _Unsupported("booleans")
    weak = type(q) in (int, float)
    q = np.true_divide(q, 100) if scale else np.asanyarray(q)
    if q.ndim > 2:
        raise ValueError(f"{fn}: q must be a scalar or 1-D, got shape {q.shape}")
    if not np.all((q >= 0) & (q <= 1)):
        raise ValueError(f"{fn}: q must be in the range [0, {100 if scale else 1}], got "
                         f"{(q * 100 if scale else q).tolist()}")
    s, kept, n = _sorted_last(a, axis, fn)
    virtual = np.asanyarray((n - 1) * q)  # NumPy's 'linear' method, _get_indexes, _lerp
    if virtual.dtype.kind in "iu":  # an integer q: the values themselves
        result = _i.gather(s, virtual.reshape(-1), axis=-1)
    else:
        v = virtual.reshape(-1)
        prev = np.floor(v)
        nxt = prev + 1
        prev[v >= n - 1], nxt[v >= n - 1] = -1, -1
        prev[v < 0], nxt[v < 0] = 0, 0
        prev, nxt = prev.astype(np.intp), nxt.astype(np.intp)
        gamma = np.asanyarray(v - prev, dtype=v.dtype)
        below = _i.gather(s, prev % n, axis=-1)
        above = _i.gather(s, nxt % n, axis=-1)
        t, rest = (float(gamma[0]), 1 - float(gamma[0])) if weak else (
            Tensor(gamma), Tensor(1 - gamma))
        diff = _m.subtract(above, below)
        result = _lo.where(gamma >= 0.5, _m.subtract(above, _m.multiply(diff, rest)),
                           _m.add(below, _m.multiply(diff, t)))
    result = _nan_last(s[..., -1:], result)
    shape = (kept if keepdims else tuple(s.shape[:-1]))
    result = _a.transpose(result, [result.ndim - 1] + list(range(result.ndim - 1)))
    return _a.reshape(result, tuple(q.shape) + shape)


@_functions("ArgSort + vj.gather of the neighbours + linear interpolation ('linear' method)",
            "percentile")
def _percentile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
                keepdims=False, *, weights=None, interpolation=None):
    return _quantile(a, q, axis, method, keepdims, weights, interpolation, "np.percentile",
                     True)


@_functions("ArgSort + vj.gather of the neighbours + linear interpolation ('linear' method)",
            "quantile")
def _quantile_fn(a, q, axis=None, out=None, overwrite_input=False, method="linear",
                 keepdims=False, *, weights=None, interpolation=None):
    return _quantile(a, q, axis, method, keepdims, weights, interpolation, "np.quantile",
                     False)


# -- covariance and correlation --------------------------------------------------------------
def _rows(x, dtype, rowvar, name, fn):
    """x as NumPy's cov sees it: at least 2-D, variables along the rows."""
    x = to_input(x, fn=fn, arg=name)
    if x.dtype.kind == "c":
        raise _Unsupported("complex values")
    if x.ndim > 2:
        raise ValueError(f"{fn}: {name} has more than 2 dimensions (shape {x.shape})")
    return _cast_to(x, dtype)


@_functions("vj.matmul of the centered rows / (n - ddof)", "cov")
def _cov(m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None, *,
         dtype=None):
    _no(fweights=fweights, aweights=aweights)
    return _covariance(m, y, rowvar, bias, ddof, dtype, "np.cov")


def _covariance(m, y, rowvar, bias, ddof, dtype, fn):
    if ddof is not None and ddof != int(ddof):
        raise ValueError(f"{fn}: ddof must be an integer, got {ddof!r}")
    if dtype is None:
        dtype = np.result_type(*[_dtype(v) for v in (m, y) if v is not None], np.float64)
    x = _rows(m, dtype, rowvar, "m", fn)
    one_d = x.ndim == 1
    x = _a.reshape(x, (1,) * (2 - x.ndim) + tuple(x.shape))
    if not rowvar and not one_d:
        x = _a.transpose(x, [1, 0])
    if x.shape[0] == 0:
        return Tensor(np.array([]).reshape(0, 0))
    if y is not None:
        v = _rows(y, dtype, rowvar, "y", fn)
        v = _a.reshape(v, (1,) * (2 - v.ndim) + tuple(v.shape))
        if not rowvar and v.shape[0] != 1:
            v = _a.transpose(v, [1, 0])
        if v.shape[1] != x.shape[1]:
            raise ValueError(f"{fn}: m and y must have the same number of observations, "
                             f"got {x.shape[1]} and {v.shape[1]}")
        x = _a.concat([x, v], 0)
    if ddof is None:
        ddof = 1 if bias == 0 else 0
    fact = x.shape[1] - ddof
    if fact <= 0:
        warnings.warn("Degrees of freedom <= 0 for slice", RuntimeWarning, stacklevel=3)
        fact = 0.0
    x = _m.subtract(x, _r.reduce_mean(x, axis=1, keepdims=True))
    c = _m.multiply(_lin.matmul(x, _a.transpose(x, [1, 0])), np.true_divide(1, fact))
    return _a.squeeze(c)


@_functions("np.cov / the outer product of its diagonal's square roots, clipped to "
            "[-1, 1]", "corrcoef")
def _corrcoef(x, y=None, rowvar=True, *, dtype=None):
    c = _covariance(x, y, rowvar, False, None, dtype, "np.corrcoef")
    if c.ndim == 0:
        return _m.divide(c, c)  # NumPy: 1, or NaN for a variance of 0, inf or NaN
    std = _u.sqrt(_la.diag_part(c))
    c = _m.divide(c, _a.expand_dims(std, 1))
    c = _m.divide(c, _a.expand_dims(std, 0))
    return _n.clip_by_value(c, -1.0, 1.0)
