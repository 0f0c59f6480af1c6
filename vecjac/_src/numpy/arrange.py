"""NumPy's element-rearranging functions on Tensors (vecjac/_src/numpy/dispatch.py): flip,
flipud, fliplr, rot90, roll, repeat, tile, pad, tril, triu, insert, delete, resize.

Each moves elements by a map that depends on shapes only (a reversal, a transpose, a
gather with constant indices, a constant mask), so it is one or two vecjac layout ops:
linear (JVP = the op on the tangent), with their gradients and pfor rules.
"""
import numbers

import numpy as np

from vecjac._src.core.dispatch import to_input
from vecjac._src.core.tensor import Tensor
from vecjac._src.numpy.functions import _axis, _axis_tuple, _cast_to, _flat, _plain_value, _shape
from vecjac._src.numpy.tables import _dtype, _functions, _Unsupported
from vecjac._src.ops.array import creation as _c
from vecjac._src.ops.array import indexing as _i
from vecjac._src.ops.array import layout as _l
from vecjac._src.ops.array import shaping as _a
from vecjac._src.ops.elementwise import logic as _lo


# -- reversals and rotations -----------------------------------------------------------------
def _reverse(m, axes):
    return _l.reverse(m, list(axes)) if axes else _a.identity(m)


@_functions("vj.reverse (axis=None: all axes)", "flip")
def _flip(m, axis=None):
    nd = len(_shape(m))
    return _reverse(m, range(nd) if axis is None else _axis_tuple(axis, nd, "np.flip"))


@_functions("vj.reverse of axis 0", "flipud")
def _flipud(m):
    if len(_shape(m)) < 1:
        raise ValueError("np.flipud: m must be at least 1-d, got a scalar")
    return _reverse(m, [0])


@_functions("vj.reverse of axis 1", "fliplr")
def _fliplr(m):
    if len(_shape(m)) < 2:
        raise ValueError(f"np.fliplr: m must be at least 2-d, got shape {_shape(m)}")
    return _reverse(m, [1])


@_functions("vj.reverse + vj.transpose", "rot90")
def _rot90(m, k=1, axes=(0, 1)):
    axes = tuple(axes)
    nd = len(_shape(m))
    if len(axes) != 2:
        raise ValueError(f"np.rot90: axes must have 2 entries, got {axes!r}")
    first, second = (_axis(ax, nd, "np.rot90", "axes") for ax in axes)
    if first == second:
        raise ValueError(f"np.rot90: axes must be different, got {axes!r}")
    k = int(k) % 4
    if k == 0:
        return _a.identity(m)
    if k == 2:
        return _reverse(m, [first, second])
    perm = list(range(nd))
    perm[first], perm[second] = perm[second], perm[first]
    if k == 1:
        return _a.transpose(_reverse(m, [second]), perm)
    return _reverse(_a.transpose(m, perm), [second])


@_functions("vj.gather with constant indices", "roll")
def _roll(a, shift, axis=None):
    shape = _shape(a)
    if axis is None:
        return _a.reshape(_roll(_flat(a), shift, 0), shape)
    shift = _plain_value(shift, "np.roll", "shift")
    pairs = np.broadcast(shift, np.asarray(axis))
    if pairs.ndim > 1:
        raise ValueError("np.roll: shift and axis must be scalars or 1-D sequences")
    total = {}
    for s, ax in pairs:
        ax = _axis(ax, len(shape), "np.roll")
        total[ax] = total.get(ax, 0) + int(s)
    for ax, s in sorted(total.items()):
        n = shape[ax]
        if n and s % n:
            a = _i.gather(a, (np.arange(n) - s) % n, axis=ax)
    return a


@_functions("vj.gather with constant indices (axis=None: flattened)", "repeat")
def _repeat(a, repeats, axis=None):
    if axis is None:
        a, axis = _flat(a), 0
    else:
        axis = _axis(axis, len(_shape(a)), "np.repeat")
    n = _shape(a)[axis]
    counts = _plain_value(repeats, "np.repeat", "repeats")
    if counts.size and counts.dtype.kind not in "iub":
        raise TypeError(f"np.repeat: repeats must be integers, got dtype {counts.dtype}")
    if (counts < 0).any():
        raise ValueError("np.repeat: repeats may not contain negative values")
    try:
        counts = np.broadcast_to(counts, (n,))
    except ValueError:
        raise ValueError(f"np.repeat: repeats of shape {counts.shape} do not match the "
                         f"{n} elements along axis {axis}") from None
    return _i.gather(a, np.repeat(np.arange(n), counts), axis=axis)


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


# -- triangles -------------------------------------------------------------------------------
def _triangle(lower, fn):
    def adapter(m, k=0):
        shape = _shape(m)
        if not shape:
            raise ValueError(f"{fn}: m must be at least 1-d, got a scalar")
        rows, cols = shape[-2:] if len(shape) > 1 else (shape[-1], shape[-1])
        k = int(_plain_value(k, fn, "k"))
        mask = np.tri(rows, cols, k, dtype=bool) if lower else \
            ~np.tri(rows, cols, k - 1, dtype=bool)
        # a select, not a product with the mask: inf and NaN outside the triangle go too
        return _lo.where(Tensor(mask), m, Tensor(np.zeros((), _dtype(m))))
    return adapter


_functions("vj.where(constant triangle mask, m, 0)", "tril")(_triangle(True, "np.tril"))
_functions("vj.where(constant triangle mask, m, 0)", "triu")(_triangle(False, "np.triu"))


# -- insertions, deletions, resizing ---------------------------------------------------------
def _positions(obj, fn, kinds="iu"):
    """obj of np.insert / np.delete as NumPy sees it: a slice, or a plain integer (list)
    (np.delete: or a boolean mask); other dtypes are left to NumPy."""
    if isinstance(obj, slice):
        return obj
    obj = _plain_value(obj, fn, "obj")
    if obj.dtype.kind == "b" and "b" in kinds:
        return obj
    if obj.dtype.kind not in kinds and obj.size:
        raise _Unsupported(f"obj of dtype {obj.dtype}")
    if obj.ndim > 1:
        raise ValueError(f"{fn}: obj must be a slice, an integer or a 1-D sequence of "
                         f"integers, got shape {obj.shape}")
    return obj.astype(np.intp)


def _arr_axis(arr, axis, fn):
    arr = to_input(arr, fn=fn, arg="arr")
    if axis is None:
        return _flat(arr), 0
    return arr, _axis(axis, arr.ndim, fn)


def _in_bounds(obj, n, hi, axis, fn):
    """Integer positions in [-n, hi]: IndexError naming obj and the axis otherwise."""
    if not isinstance(obj, slice) and obj.dtype.kind != "b" and obj.size:
        bad = obj[(obj < -n) | (obj > hi)]
        if bad.size:
            raise IndexError(f"{fn}: obj: index {bad[0]} is out of bounds for axis {axis} "
                             f"with size {n}")


@_functions("vj.gather of arr and the broadcast values at NumPy's positions", "insert")
def _insert(arr, obj, values, axis=None):
    fn = "np.insert"
    arr, axis = _arr_axis(arr, axis, fn)
    n, nd = arr.shape[axis], arr.ndim
    obj = _positions(obj, fn)
    _in_bounds(obj, n, n, axis, fn)
    count = len(range(*obj.indices(n))) if isinstance(obj, slice) else obj.size
    values = to_input(values, fn=fn, arg="values")
    if count == 1:  # one position: NumPy inserts all of values there, as a block
        values = _a.reshape(values, (1,) * (nd - values.ndim) + tuple(values.shape))
        if not isinstance(obj, slice) and obj.ndim == 0:  # NumPy's moveaxis(values, 0, axis)
            rest = list(range(1, nd))
            values = _a.transpose(values, rest[:axis] + [0] + rest[axis:])
        count = values.shape[axis]
    block = list(arr.shape)
    block[axis] = count
    try:
        values = _a.broadcast_to(_cast_to(values, arr.dtype), tuple(block))
    except ValueError:
        raise ValueError(f"{fn}: values of shape {_shape(values)} cannot be inserted into "
                         f"a block of shape {tuple(block)}") from None
    order = np.insert(np.arange(n), obj, np.arange(n, n + count))  # NumPy's bookkeeping
    return _i.gather(_a.concat([arr, values], axis), order, axis=axis)


@_functions("vj.gather of the kept positions", "delete")
def _delete(arr, obj, axis=None):
    fn = "np.delete"
    arr, axis = _arr_axis(arr, axis, fn)
    n = arr.shape[axis]
    obj = _positions(obj, fn, "iub")
    _in_bounds(obj, n, n - 1, axis, fn)
    if not isinstance(obj, slice) and obj.dtype.kind == "b" and obj.shape != (n,):
        raise ValueError(f"{fn}: a boolean obj must have the length {n} of axis {axis}, got "
                         f"shape {obj.shape}")
    kept = np.delete(np.arange(n), obj)
    return _i.gather(arr, kept, axis=axis)


@_functions("vj.gather of the flattened array, repeated cyclically, + vj.reshape", "resize")
def _resize(a, new_shape):
    fn = "np.resize"
    shape = _plain_value(new_shape, fn, "new_shape").reshape(-1)
    if shape.dtype.kind not in "iu":
        raise TypeError(f"np.resize: new_shape must be integers, got {new_shape!r}")
    if (shape < 0).any():
        raise ValueError(f"{fn}: all elements of new_shape must be non-negative, got "
                         f"{tuple(shape.tolist())}")
    shape = tuple(int(k) for k in shape)
    flat = _flat(to_input(a, fn=fn, arg="a"))
    size = int(np.prod(shape, dtype=np.int64))
    if flat.shape[0] == 0 or size == 0:
        return _c.zeros(shape, dtype=flat.dtype)  # NumPy: zeros, nothing to repeat
    return _a.reshape(_i.gather(flat, np.arange(size) % flat.shape[0]), shape)
