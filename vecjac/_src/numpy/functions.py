"""NumPy's reductions, selection and creation functions on Tensors, and the helpers every
vecjac/_numpy_*.py adapter module shares (dtype promotion, axes, structural arguments).

Each adapter takes the arguments exactly as NumPy's function does and expresses the call
with vecjac ops, so its result is differentiable and vectorizable. Where NumPy's meaning
differs from the TF-style op (axis=None means all axes; np.dot contracts a's last axis
with b's second-to-last; np.split takes split points; var has ddof) the adapter says so.
An argument an adapter cannot express raises _Unsupported: NumPy then computes the call on
plain arrays (with a NotDifferentiableWarning once per function).
"""
import math
import operator

import numpy as np
from numpy.lib.array_utils import normalize_axis_index, normalize_axis_tuple

from vecjac._src.composites import norm as _n
from vecjac._src.core.tensor import Tensor
from vecjac._src.numpy.tables import _dtype, _functions, _is_vj, _Unsupported
from vecjac._src.ops.array import creation as _c
from vecjac._src.ops.array import shaping as _a
from vecjac._src.ops.elementwise import arithmetic as _m
from vecjac._src.ops.elementwise import extrema as _extrema
from vecjac._src.ops.elementwise import logic as _lo
from vecjac._src.ops.elementwise import unary as _u
from vecjac._src.ops.reduce import cumulative
from vecjac._src.ops.reduce import reductions as _r


def _shape(x):
    return tuple(x.shape) if hasattr(x, "shape") else np.shape(x)


def _flat(x):
    return _a.reshape(x, [-1])


def _no(**given):
    """Decline the call when an argument NumPy offers is set to something non-default."""
    for name, value in given.items():
        if value is not None and value is not np._NoValue and value is not False:
            raise _Unsupported(f"argument {name}=")


def _axes(axis):
    if isinstance(axis, list):
        return tuple(axis)
    return axis


def _cast_to(x, dtype):
    return x if dtype is None or _dtype(x) == np.dtype(dtype) else _lo.cast(x, dtype)


def _widen_int(x):
    """np.sum / np.prod accumulate small integers and bools in the default integer type."""
    dt = _dtype(x)
    if dt.kind == "b" or (dt.kind == "i" and dt.itemsize < 8):
        return _lo.cast(x, np.int64)
    if dt.kind == "u" and dt.itemsize < 8:
        return _lo.cast(x, np.uint64)
    return x


def _to_float(x):
    return x if _dtype(x).kind in "fc" else _lo.cast(x, np.float64)


def _keep(keepdims):
    return False if keepdims is np._NoValue else bool(keepdims)


# -- reductions ----------------------------------------------------------------------------
@_functions("vj.reduce_sum", "sum")
def _sum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    _no(initial=initial, where=where if where is not True else None)
    x = _cast_to(a, dtype) if dtype is not None else _widen_int(a)
    return _r.reduce_sum(x, axis=_axes(axis), keepdims=_keep(keepdims))


@_functions("vj.reduce_prod", "prod")
def _prod(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    _no(initial=initial, where=where if where is not True else None)
    x = _cast_to(a, dtype) if dtype is not None else _widen_int(a)
    return _r.reduce_prod(x, axis=_axes(axis), keepdims=_keep(keepdims))


@_functions("vj.reduce_mean", "mean")
def _mean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=None):
    _no(where=where if where is not True else None)
    x = _cast_to(a, dtype) if dtype is not None else _to_float(a)
    return _r.reduce_mean(x, axis=_axes(axis), keepdims=_keep(keepdims))


def _extremum(vj_fn):
    def adapter(a, axis=None, out=None, keepdims=False, initial=None, where=None):
        _no(initial=initial, where=where if where is not True else None)
        return vj_fn(a, axis=_axes(axis), keepdims=_keep(keepdims))
    return adapter


_functions("vj.reduce_max", "max", "amax")(_extremum(_r.reduce_max))
_functions("vj.reduce_min", "min", "amin")(_extremum(_r.reduce_min))


def _boolean(vj_fn):
    def adapter(a, axis=None, out=None, keepdims=False, *, where=None):
        _no(where=where if where is not True else None)
        x = a if _dtype(a).kind == "b" else _lo.not_equal(a, 0)
        return vj_fn(x, axis=_axes(axis), keepdims=_keep(keepdims))
    return adapter


_functions("vj.reduce_any", "any")(_boolean(_r.reduce_any))
_functions("vj.reduce_all", "all")(_boolean(_r.reduce_all))


def _reduced_count(shape, axis):
    if axis is None:
        return int(math.prod(shape))
    axes = axis if isinstance(axis, tuple) else (axis,)
    return int(math.prod([shape[k] for k in axes]))


def _moment(vj_fn, sqrt):
    def adapter(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None,
                mean=None, correction=None):
        _no(where=where if where is not True else None, mean=mean)
        if correction is not None and correction is not np._NoValue:
            ddof = correction
        axis = _axes(axis)
        x = _cast_to(a, dtype) if dtype is not None else _to_float(a)
        result = vj_fn(x, axis=axis, keepdims=_keep(keepdims))
        if ddof:
            n = _reduced_count(_shape(a), axis)
            scale = n / (n - ddof) if n > ddof else float("inf")
            result = _m.multiply(result, float(np.sqrt(scale)) if sqrt else scale)
        return result
    return adapter


_functions("vj.reduce_variance (ddof: * n / (n - ddof))", "var")(
    _moment(_r.reduce_variance, False))
_functions("vj.reduce_std (ddof: * sqrt(n / (n - ddof)))", "std")(
    _moment(_r.reduce_std, True))


def _arg(vj_fn):
    def adapter(a, axis=None, out=None, *, keepdims=False):
        x, ax = (_flat(a), 0) if axis is None else (a, axis)
        result = vj_fn(x, axis=ax)
        if _keep(keepdims):
            result = (_a.reshape(result, (1,) * len(_shape(a))) if axis is None else
                      _a.expand_dims(result, ax))
        return result
    return adapter


_functions("vj.argmax (axis=None: of the flattened array)", "argmax")(_arg(_r.argmax))
_functions("vj.argmin (axis=None: of the flattened array)", "argmin")(_arg(_r.argmin))


def _cumulative(vj_fn):
    def adapter(a, axis=None, dtype=None, out=None):
        x = _cast_to(a, dtype) if dtype is not None else _widen_int(a)
        return vj_fn(_flat(x), axis=0) if axis is None else vj_fn(x, axis=axis)
    return adapter


_functions("vj.cumsum", "cumsum")(_cumulative(cumulative.cumsum))
_functions("vj.cumprod", "cumprod")(_cumulative(cumulative.cumprod))


# -- dtypes and axes -----------------------------------------------------------------------
def _common(arrays, dtype):
    arrays = list(arrays)
    # Python scalars stay weak (NumPy 2's rule): np.where(c, float32_tensor, 0.0) is float32
    target = np.dtype(dtype) if dtype is not None else np.result_type(
        *[x if isinstance(x, (int, float, complex)) else _dtype(x) for x in arrays])
    return [_cast_to(x, target) for x in arrays]


def _float_common(arrays):
    """_common, then ints and bools to float64 (NumPy's inexact result of ufuncs like
    np.logaddexp and of functions like np.linspace)."""
    arrays = _common(arrays, None)
    return [_to_float(x) for x in arrays]


def _axis(axis, ndim, fn, arg="axis"):
    """One axis as a non-negative int; NumPy's AxisError (a ValueError and an IndexError)
    naming the function and the argument."""
    try:
        axis = operator.index(axis)
    except TypeError:
        raise TypeError(f"{fn}: {arg} must be an integer, got {axis!r}") from None
    return normalize_axis_index(axis, ndim, msg_prefix=f"{fn}: {arg}")


def _axis_tuple(axis, ndim, fn, arg="axis"):
    """An int or a sequence of ints as a tuple of distinct non-negative axes."""
    try:
        return normalize_axis_tuple(axis, ndim, argname=f"{fn}: {arg}")
    except TypeError:
        raise TypeError(f"{fn}: {arg} must be an integer or a tuple of integers, got "
                        f"{axis!r}") from None


def _plain_value(x, fn, arg):
    """The NumPy value of an argument that fixes the structure of the result (split points,
    repeat counts ...): it cannot vary over a pfor loop."""
    if _is_vj(x):
        if getattr(x, "_pfor", None) is not None:
            raise ValueError(f"{fn}: {arg} cannot vary over a pfor loop")
        return np.asarray(x._value if isinstance(x, Tensor) else x.read_value()._value)
    return np.asarray(x)


# -- selection and rounding ----------------------------------------------------------------
@_functions("vj.where", "where")
def _where(condition, *xy):
    if len(xy) != 2:
        raise _Unsupported("np.where(condition) (indices)")
    cond = condition if _dtype(condition) == np.bool_ else _lo.not_equal(condition, 0)
    x, y = _common(xy, None)
    return _lo.where(cond, x, y)


@_functions("vj.clip_by_value / vj.maximum / vj.minimum", "clip")
def _clip(a, a_min=np._NoValue, a_max=np._NoValue, out=None, *, min=np._NoValue,
          max=np._NoValue, **kwargs):
    _no(**kwargs)
    lo = min if a_min is np._NoValue else a_min
    hi = max if a_max is np._NoValue else a_max
    lo = None if lo is np._NoValue else lo
    hi = None if hi is np._NoValue else hi
    if lo is not None and hi is not None:
        a, lo, hi = _common([a, lo, hi], None)
        return _n.clip_by_value(a, lo, hi)
    if lo is not None:
        return _extrema.maximum(a, lo)
    if hi is not None:
        return _extrema.minimum(a, hi)
    return _a.identity(a)


@_functions("vj.round (decimals: scaled)", "round", "around")
def _round(a, decimals=0, out=None):
    if not decimals:
        return _u.round(a)
    scale = 10.0 ** decimals
    return _m.divide(_u.round(_m.multiply(a, scale)), scale)


@_functions("vj.sign(x) * vj.floor(vj.abs(x)) (as np.trunc)", "fix")
def _fix(x, out=None):
    return _m.multiply(_u.sign(x), _u.floor(_u.abs(x)))


# -- creation and introspection ------------------------------------------------------------
def _like(vj_fn):
    def adapter(a, dtype=None, order="K", subok=True, shape=None, *, device=None):
        _no(shape=shape)
        return vj_fn(a, dtype=dtype)
    return adapter


_functions("vj.zeros_like", "zeros_like", "empty_like")(_like(_c.zeros_like))
_functions("vj.ones_like", "ones_like")(_like(_c.ones_like))


@_functions("vj.ones_like * fill_value", "full_like")
def _full_like(a, fill_value, dtype=None, order="K", subok=True, shape=None, *, device=None):
    _no(shape=shape)
    ones = _c.ones_like(a, dtype=dtype)
    return _m.multiply(ones, np.asarray(fill_value, dtype=ones.dtype))


@_functions("vj.identity", "copy")
def _copy(a, order="K", subok=False):
    return _a.identity(a)


@_functions("Tensor.shape (per iteration inside pfor)", "shape")
def _np_shape(a):
    return tuple(_shape(a))


@_functions("Tensor.ndim", "ndim")
def _np_ndim(a):
    return len(_shape(a))


@_functions("Tensor.size / shape[axis]", "size")
def _np_size(a, axis=None):
    shape = _shape(a)
    return int(math.prod(shape)) if axis is None else shape[axis]


@_functions("np.result_type of the dtypes", "result_type")
def _result_type(*arrays_and_dtypes):
    return np.result_type(*[x.dtype if _is_vj(x) else x for x in arrays_and_dtypes])
