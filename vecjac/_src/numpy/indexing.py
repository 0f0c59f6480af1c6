"""NumPy's indexing, sorting and selection functions on Tensors (vecjac/_src/numpy/dispatch.py):
take, take_along_axis, put_along_axis, sort, argsort, partition, argpartition,
searchsorted, select.

Positions (argsort, argpartition, searchsorted) are computed by the non-differentiable
ops of vecjac/_src/ops/reduce/sort.py; values are gathered at them, so sort and partition are
differentiable in the values (each cotangent returns to where its value came from).
put_along_axis is functional: it returns the new array and writes nothing (Tensors are
immutable; NumPy's returns None after writing into arr), differentiable in arr (except
where overwritten) and in values.
"""
import numpy as np

from vecjac._src.core.dispatch import apply, to_input
from vecjac._src.core.tensor import Tensor
from vecjac._src.numpy.functions import _axis, _cast_to, _common, _flat, _no, _shape
from vecjac._src.numpy.tables import _dtype, _functions, _is_vj, _Unsupported
from vecjac._src.ops.array import indexing as _i
from vecjac._src.ops.array import layout as _l
from vecjac._src.ops.array import shaping as _a
from vecjac._src.ops.elementwise import arithmetic as _m
from vecjac._src.ops.elementwise import extrema as _extrema
from vecjac._src.ops.elementwise import logic as _lo
from vecjac._src.ops.reduce import sort as _so


def _indices(indices, fn):
    """indices as a Tensor of integers (a loop-variant one is fine)."""
    idx = to_input(indices, fn=fn, arg="indices")
    if idx.dtype.kind not in "iu":
        raise TypeError(f"{fn}: indices must be integers, got dtype {idx.dtype}")
    return idx


def _check_bounds(idx, n, fn, axis):
    v = idx._value
    if v.size and (v.min() < -n or v.max() >= n):
        bad = v[(v < -n) | (v >= n)].reshape(-1)[0]
        raise IndexError(f"{fn}: index {bad} is out of bounds for axis {axis} with size {n}")


@_functions("vj.gather (axis=None: flattened)", "take")
def _take(a, indices, axis=None, out=None, mode="raise"):
    if axis is None:
        a, axis = _flat(a), 0
    else:
        axis = _axis(axis, len(_shape(a)), "np.take")
    n = _shape(a)[axis]
    idx = _indices(indices, "np.take")
    if mode == "wrap":
        idx = _m.floormod(idx, max(n, 1))
    elif mode == "clip":
        idx = _extrema.minimum(_extrema.maximum(idx, 0), max(n - 1, 0))
    elif mode != "raise":
        raise ValueError(f"np.take: mode must be 'raise', 'wrap' or 'clip', got {mode!r}")
    _check_bounds(idx, n, "np.take", axis)
    return _i.gather(a, idx, axis=axis)


def _along_axis(arr, indices, axis, fn):
    """(arr, indices, axis) checked as NumPy's *_along_axis: same rank, integer indices;
    axis=None flattens arr and wants 1-D indices."""
    arr = to_input(arr, fn=fn, arg="arr")
    idx = _indices(indices, fn)
    if axis is None:
        if idx.ndim != 1:
            raise ValueError(f"{fn}: with axis=None, indices must be 1-D, got shape "
                             f"{idx.shape}")
        arr, axis = _flat(arr), 0
    else:
        axis = _axis(axis, arr.ndim, fn)
        if idx.ndim != arr.ndim:
            raise ValueError(f"{fn}: indices and arr must have the same number of "
                             f"dimensions, got shapes {idx.shape} and {arr.shape}")
    _check_bounds(idx, arr.shape[axis], fn, axis)
    return arr, idx, axis


@_functions("vj.gather with batch axes", "take_along_axis")
def _take_along_axis(arr, indices, axis=-1):
    arr, idx, axis = _along_axis(arr, indices, axis, "np.take_along_axis")
    return _so.take_along_axis(arr, idx, axis)


@_functions("vj.tensor_scatter_nd_update (functional: returns the result)", "put_along_axis")
def _put_along_axis(arr, indices, values, axis):
    fn = "np.put_along_axis"
    if not _is_vj(arr):
        raise TypeError(f"{fn}: arr is a NumPy array, which NumPy would write in place; a "
                        "Tensor cannot be written into it without losing its derivative. "
                        "Use new = np.put_along_axis(vj.constant(arr), indices, values, "
                        "axis) (vecjac returns the result instead of writing)")
    shape = _shape(arr)
    a, idx, ax = _along_axis(arr, indices, axis, fn)
    n, nd = a.shape[ax], a.ndim
    others = [k for k in range(nd) if k != ax]
    try:
        rows = np.broadcast_shapes(tuple(a.shape[k] for k in others),
                                   tuple(idx.shape[k] for k in others))
    except ValueError:
        raise ValueError(f"{fn}: indices of shape {idx.shape} do not broadcast against arr "
                         f"of shape {a.shape} outside axis {ax}") from None

    def moved(x):  # the axis last
        return _a.transpose(x, others + [ax]) if ax != nd - 1 else x
    # every index becomes a position in the flattened (axis-last) arr
    first = np.arange(int(np.prod([a.shape[k] for k in others], dtype=np.int64)))
    first = np.broadcast_to(first.reshape(tuple(a.shape[k] for k in others)), rows)
    idx = _a.broadcast_to(moved(idx), rows + (idx.shape[ax],))
    idx = _lo.where(_lo.less(idx, 0), _m.add(idx, n), idx)
    positions = _m.add(idx, Tensor((first * n)[..., None]))
    full = list(rows)
    full.insert(ax, idx.shape[-1])
    updates = moved(_a.broadcast_to(_cast_to(values, a.dtype), tuple(full)))
    flat = _l.tensor_scatter_nd_update(_flat(moved(a)), _a.expand_dims(positions, -1), updates)
    out = _a.reshape(flat, tuple(a.shape[k] for k in others) + (n,))
    if ax != nd - 1:
        out = _a.transpose(out, [others.index(k) if k != ax else nd - 1 for k in range(nd)])
    return _a.reshape(out, shape)


# -- sorting ---------------------------------------------------------------------------------
def _sortable(a, axis, fn):
    if _dtype(a).kind not in "biuf":
        raise _Unsupported(f"dtype {_dtype(a)}")
    x = to_input(a, fn=fn, arg="a")
    if axis is None:
        return _flat(x), 0
    return x, _axis(axis, x.ndim, fn)


def _argsort(a, axis, kind, order, stable, fn):
    _no(order=order)
    x, axis = _sortable(a, axis, fn)
    stable = bool(stable) or kind in ("stable", "mergesort")
    return x, apply(_so.ArgSort, x, axis=axis, descending=False, stable=stable), axis


@_functions("vj.gather at ArgSort's positions", "sort")
def _sort(a, axis=-1, kind=None, order=None, *, stable=None):
    x, idx, axis = _argsort(a, axis, kind, order, stable, "np.sort")
    return _so.take_along_axis(x, idx, axis)


@_functions("ArgSort (positions, not differentiable)", "argsort")
def _argsort_fn(a, axis=-1, kind=None, order=None, *, stable=None):
    return _argsort(a, axis, kind, order, stable, "np.argsort")[1]


def _argpartition(a, kth, axis, kind, order, fn):
    _no(order=order)
    x, axis = _sortable(a, axis, fn)
    n = x.shape[axis]
    kth = np.asarray(kth)
    if kth.dtype.kind not in "iu" or kth.ndim > 1:
        raise TypeError(f"{fn}: kth must be an int or a sequence of ints, got {kth!r}")
    if kth.size and (kth.min() < -n or kth.max() >= n):
        raise ValueError(f"{fn}: kth={kth.tolist()} is out of bounds for an axis of size {n}")
    return x, _so.argpartition(x, tuple(int(k) for k in kth.reshape(-1)), axis), axis


@_functions("vj.gather at ArgPartition's positions", "partition")
def _partition(a, kth, axis=-1, kind="introselect", order=None):
    x, idx, axis = _argpartition(a, kth, axis, kind, order, "np.partition")
    return _so.take_along_axis(x, idx, axis)


@_functions("ArgPartition (positions, not differentiable)", "argpartition")
def _argpartition_fn(a, kth, axis=-1, kind="introselect", order=None):
    return _argpartition(a, kth, axis, kind, order, "np.argpartition")[1]


@_functions("SearchSorted (positions, not differentiable)", "searchsorted")
def _searchsorted(a, v, side="left", sorter=None):
    fn = "np.searchsorted"
    if "c" in (_dtype(a).kind, _dtype(v).kind):
        raise _Unsupported("complex values")
    a = to_input(a, fn=fn, arg="a")
    if a.ndim != 1:
        raise ValueError(f"{fn}: a must be 1-D, got shape {a.shape}")
    if side not in ("left", "right"):
        raise ValueError(f"{fn}: side must be 'left' or 'right', got {side!r}")
    if sorter is not None:
        a = _i.gather(a, _indices(sorter, fn))
    return apply(_so.SearchSorted, a, to_input(v, (a,), fn, "v"), side=side)


# -- selection -------------------------------------------------------------------------------
@_functions("nested vj.where (first true condition wins)", "select")
def _select(condlist, choicelist, default=0):
    fn = "np.select"
    if len(condlist) != len(choicelist):
        raise ValueError(f"{fn}: condlist and choicelist must have the same length, got "
                         f"{len(condlist)} and {len(choicelist)}")
    if not condlist:
        raise ValueError(f"{fn}: condlist is empty")
    for k, c in enumerate(condlist):
        if _dtype(c) != np.bool_:
            raise TypeError(f"{fn}: condlist[{k}] must be a boolean array, got dtype "
                            f"{_dtype(c)}")
    *choices, result = _common(list(choicelist) + [default], None)
    shape = np.broadcast_shapes(*[_shape(x) for x in list(condlist) + list(choicelist)])
    result = _a.broadcast_to(result, shape)
    for cond, choice in zip(condlist[::-1], choices[::-1]):
        result = _lo.where(cond, choice, result)
    return result
