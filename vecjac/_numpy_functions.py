"""The NumPy-function half of the dispatch table (vecjac/numpy_dispatch.py): adapters.

Each adapter takes the arguments exactly as NumPy's function does and expresses the call
with vecjac ops, so its result is differentiable and vectorizable. Where NumPy's meaning
differs from the TF-style op (axis=None means all axes; np.dot contracts a's last axis
with b's second-to-last; np.split takes split points; var has ddof) the adapter says so.
An argument an adapter cannot express raises _Unsupported: NumPy then computes the call on
plain arrays (with a NotDifferentiableWarning once per function).
"""
import math
import numbers

import numpy as np

from ._numpy_tables import _dtype, _functions, _is_vj, _Unsupported
from .ops import array_ops as _a
from .ops import creation_ops as _c
from .ops import index_ops as _i
from .ops import layout_ops as _l
from .ops import math_ops as _m
from .ops import norm_ops as _n
from .ops import reduce_ops as _r
from .ops import unary_ops as _u


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
    return x if dtype is None or _dtype(x) == np.dtype(dtype) else _m.cast(x, dtype)


def _widen_int(x):
    """np.sum / np.prod accumulate small integers and bools in the default integer type."""
    dt = _dtype(x)
    if dt.kind == "b" or (dt.kind == "i" and dt.itemsize < 8):
        return _m.cast(x, np.int64)
    if dt.kind == "u" and dt.itemsize < 8:
        return _m.cast(x, np.uint64)
    return x


def _to_float(x):
    return x if _dtype(x).kind in "fc" else _m.cast(x, np.float64)


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
        x = a if _dtype(a).kind == "b" else _m.not_equal(a, 0)
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


_functions("vj.cumsum", "cumsum")(_cumulative(_r.cumsum))
_functions("vj.cumprod", "cumprod")(_cumulative(_r.cumprod))


# -- joining and splitting -----------------------------------------------------------------
def _common(arrays, dtype):
    arrays = list(arrays)
    # Python scalars stay weak (NumPy 2's rule): np.where(c, float32_tensor, 0.0) is float32
    target = np.dtype(dtype) if dtype is not None else np.result_type(
        *[x if isinstance(x, (int, float, complex)) else _dtype(x) for x in arrays])
    return [_cast_to(x, target) for x in arrays]


@_functions("vj.concat (axis=None: flattened)", "concatenate")
def _concatenate(arrays, axis=0, out=None, *, dtype=None, casting=None):
    arrays = _common(arrays, dtype)
    if axis is None:
        return _a.concat([_flat(x) for x in arrays], axis=0)
    return _a.concat(arrays, axis=axis)


@_functions("vj.stack", "stack")
def _stack(arrays, axis=0, out=None, *, dtype=None, casting=None):
    return _a.stack(_common(arrays, dtype), axis=axis)


@_functions("vj.concat of 2-D views", "vstack", "row_stack")
def _vstack(tup, *, dtype=None, casting=None):
    return _a.concat([_atleast_2d(x) for x in _common(tup, dtype)], axis=0)


@_functions("vj.concat (axis 0 for 1-D, else 1)", "hstack")
def _hstack(tup, *, dtype=None, casting=None):
    arrays = [_atleast_1d(x) for x in _common(tup, dtype)]
    return _a.concat(arrays, axis=0 if len(_shape(arrays[0])) == 1 else 1)


@_functions("vj.split (split points -> sizes)", "split")
def _split(ary, indices_or_sections, axis=0):
    if isinstance(indices_or_sections, numbers.Integral):
        n = _shape(ary)[axis]
        if n % indices_or_sections:
            raise ValueError(f"np.split: array split does not result in an equal division "
                             f"({n} into {indices_or_sections})")
        return _a.split(ary, int(indices_or_sections), axis=axis)
    n = _shape(ary)[axis]
    points = [min(max(int(p) + (n if p < 0 else 0), 0), n) for p in indices_or_sections]
    bounds = [0] + points + [n]
    if any(b < a for a, b in zip(bounds, bounds[1:])):
        raise _Unsupported("decreasing split points")
    return _a.split(ary, [b - a for a, b in zip(bounds, bounds[1:])], axis=axis)


# -- shapes --------------------------------------------------------------------------------
@_functions("vj.reshape", "reshape")
def _reshape(a, shape=None, order="C", *, newshape=None, copy=None):
    if order != "C":
        raise _Unsupported(f"order={order!r}")
    shape = newshape if shape is None else shape
    return _a.reshape(a, [shape] if isinstance(shape, numbers.Integral) else shape)


@_functions("vj.reshape(a, [-1])", "ravel")
def _ravel(a, order="C"):
    if order not in ("C", "K", "A"):
        raise _Unsupported(f"order={order!r}")
    return _flat(a)


@_functions("vj.transpose", "transpose", "permute_dims")
def _transpose(a, axes=None):
    return _a.transpose(a, perm=None if axes is None else list(axes))


@_functions("vj.transpose", "swapaxes")
def _swapaxes(a, axis1, axis2):
    perm = list(range(len(_shape(a))))
    perm[axis1], perm[axis2] = perm[axis2], perm[axis1]
    return _a.transpose(a, perm)


@_functions("vj.transpose", "moveaxis")
def _moveaxis(a, source, destination):
    nd = len(_shape(a))
    src = [s % nd for s in np.atleast_1d(source)]
    dst = [d % nd for d in np.atleast_1d(destination)]
    rest = [k for k in range(nd) if k not in src]
    perm = [None] * nd
    for s, d in zip(src, dst):
        perm[d] = s
    it = iter(rest)
    return _a.transpose(a, [p if p is not None else next(it) for p in perm])


@_functions("vj.expand_dims", "expand_dims")
def _expand_dims(a, axis):
    axes = (axis,) if isinstance(axis, numbers.Integral) else tuple(axis)
    nd = len(_shape(a)) + len(axes)
    for ax in sorted(ax % nd for ax in axes):
        a = _a.expand_dims(a, ax)
    return a


@_functions("vj.broadcast_to", "broadcast_arrays")
def _broadcast_arrays(*args, subok=False):
    shape = np.broadcast_shapes(*[_shape(x) for x in args])
    return tuple(_a.broadcast_to(x, shape) for x in args)


@_functions("vj.squeeze", "squeeze")
def _squeeze(a, axis=None):
    return _a.squeeze(a, axis=_axes(axis))


@_functions("vj.broadcast_to", "broadcast_to")
def _broadcast_to(array, shape, subok=False):
    return _a.broadcast_to(array, shape)


def _atleast_1d(x):
    return _a.reshape(x, [1]) if len(_shape(x)) == 0 else x


def _atleast_2d(x):
    nd = len(_shape(x))
    return _a.reshape(x, [1, -1]) if nd == 1 else _a.reshape(x, [1, 1]) if nd == 0 else x


@_functions("vj.reshape", "atleast_1d")
def _atleast_1d_fn(*arys):
    out = tuple(_atleast_1d(x) for x in arys)
    return out[0] if len(out) == 1 else out


@_functions("vj.reshape", "atleast_2d")
def _atleast_2d_fn(*arys):
    out = tuple(_atleast_2d(x) for x in arys)
    return out[0] if len(out) == 1 else out


@_functions("vj.reverse (axis=None: all axes)", "flip")
def _flip(m, axis=None):
    nd = len(_shape(m))
    axes = list(range(nd)) if axis is None else [axis] if isinstance(
        axis, numbers.Integral) else list(axis)
    return _l.reverse(m, axes)


@_functions("vj.roll (axis=None: flattened)", "roll")
def _roll(a, shift, axis=None):
    if axis is None:
        shape = _shape(a)
        return _a.reshape(_l.roll(_a.reshape(a, [-1]), shift, 0), shape)
    return _l.roll(a, shift, axis)


@_functions("vj.tile (reps padded to the rank)", "tile")
def _tile(A, reps):
    reps = (int(reps),) if isinstance(reps, numbers.Integral) else tuple(int(r) for r in reps)
    shape = _shape(A)
    if len(reps) > len(shape):
        A = _a.reshape(A, (1,) * (len(reps) - len(shape)) + shape)
    reps = (1,) * (len(_shape(A)) - len(reps)) + reps
    return _l.tile(A, list(reps))


@_functions("vj.pad (constant, reflect, symmetric)", "pad")
def _pad(array, pad_width, mode="constant", **kwargs):
    if not isinstance(mode, str) or mode not in ("constant", "reflect", "symmetric"):
        raise _Unsupported(f"mode={mode!r}")
    value = kwargs.pop("constant_values", 0)
    if kwargs.pop("reflect_type", "even") != "even" or kwargs or np.ndim(value) != 0:
        raise _Unsupported("arguments of np.pad")
    widths = np.broadcast_to(np.asarray(pad_width, dtype=np.int64), (len(_shape(array)), 2))
    return _l.pad(array, widths.tolist(), mode=mode.upper(), constant_values=value)


@_functions("vj.gather (axis=None: flattened)", "take")
def _take(a, indices, axis=None, out=None, mode="raise"):
    if mode != "raise":
        raise _Unsupported(f"mode={mode!r}")
    return _i.gather(_flat(a), indices) if axis is None else _i.gather(a, indices, axis=axis)


@_functions("differences of vecjac slices", "diff")
def _diff(a, n=1, axis=-1, prepend=None, append=None):
    _no(prepend=prepend, append=append)
    nd = len(_shape(a))
    axis = axis % nd
    hi = tuple(slice(1, None) if k == axis else slice(None) for k in range(nd))
    lo = tuple(slice(None, -1) if k == axis else slice(None) for k in range(nd))
    for _ in range(n):
        a = _m.subtract(_i.getitem(a, hi), _i.getitem(a, lo)) if _dtype(a) != np.bool_ \
            else _m.not_equal(_i.getitem(a, hi), _i.getitem(a, lo))
    return a


# -- selection and rounding ----------------------------------------------------------------
@_functions("vj.where", "where")
def _where(condition, *xy):
    if len(xy) != 2:
        raise _Unsupported("np.where(condition) (indices)")
    cond = condition if _dtype(condition) == np.bool_ else _m.not_equal(condition, 0)
    x, y = _common(xy, None)
    return _m.where(cond, x, y)


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
        return _m.maximum(a, lo)
    if hi is not None:
        return _m.minimum(a, hi)
    return _a.identity(a)


@_functions("vj.round (decimals: scaled)", "round", "around")
def _round(a, decimals=0, out=None):
    if not decimals:
        return _u.round(a)
    scale = 10.0 ** decimals
    return _m.divide(_u.round(_m.multiply(a, scale)), scale)


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
