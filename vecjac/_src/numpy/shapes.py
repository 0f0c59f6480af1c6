"""NumPy's joining, splitting and shape functions on Tensors (vecjac/_src/numpy/dispatch.py):
concatenate, stack and the *stack / *split families, append, reshape, transpose and the
axis movers, expand_dims, squeeze, broadcasting, atleast_*d.

All are layout ops (reshape, transpose, concat, split, strided slices), so they are linear
and their derivatives, JVPs and pfor rules are those ops'. Arguments follow NumPy (split
points, not sizes; AxisError for a bad axis, naming the function and the argument).
"""
import numbers

import numpy as np

from vecjac._src.numpy.functions import (_axes, _axis, _axis_tuple, _common, _flat, _plain_value,
                                         _shape)
from vecjac._src.numpy.tables import _functions, _is_vj, _Unsupported
from vecjac._src.ops.array import indexing as _i
from vecjac._src.ops.array import shaping as _a


# -- joining -------------------------------------------------------------------------------
@_functions("vj.concat (axis=None: flattened)", "concatenate")
def _concatenate(arrays, axis=0, out=None, *, dtype=None, casting=None):
    arrays = _common(arrays, dtype)
    if axis is None:
        return _a.concat([_flat(x) for x in arrays], axis=0)
    return _a.concat(arrays, axis=axis)


@_functions("vj.concat (axis=None: both flattened)", "append")
def _append(arr, values, axis=None):
    return _concatenate([arr, values], axis=axis)


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


@_functions("vj.concat of 3-D views along axis 2", "dstack")
def _dstack(tup):
    return _a.concat([_atleast_3d(x) for x in _common(tup, None)], axis=2)


@_functions("vj.concat along axis 1 (1-D arrays as columns)", "column_stack")
def _column_stack(tup):
    columns = []
    for x in _common(tup, None):
        nd = len(_shape(x))
        columns.append(_a.reshape(x, (-1, 1)) if nd < 2 else x)
    return _a.concat(columns, axis=1)


# -- splitting -----------------------------------------------------------------------------
def _split_at(ary, points, axis, fn):
    """Pieces between NumPy's split points (Python slice semantics for each piece)."""
    n = _shape(ary)[axis]
    bounds = [0] + [int(p) for p in points] + [n]
    clipped = [min(max(b + n if b < 0 else b, 0), n) for b in bounds]
    if all(lo <= hi for lo, hi in zip(clipped, clipped[1:])):
        return list(_a.split(ary, [hi - lo for lo, hi in zip(clipped, clipped[1:])],
                             axis=axis))
    # decreasing points: empty and overlapping pieces, as NumPy's slices give them
    lead = (slice(None),) * axis
    return [_i.getitem(ary, lead + (slice(lo, hi),)) for lo, hi in zip(bounds, bounds[1:])]


def _sections(ary, indices_or_sections, axis, fn, equal):
    shape = _shape(ary)
    axis = _axis(axis, len(shape), fn)
    if isinstance(indices_or_sections, numbers.Integral) or np.ndim(indices_or_sections) == 0:
        sections = int(_plain_value(indices_or_sections, fn, "indices_or_sections"))
        if sections <= 0:
            raise ValueError(f"{fn}: indices_or_sections must be larger than 0, got "
                             f"{sections}")
        n = shape[axis]
        if equal and n % sections:
            raise ValueError(f"{fn}: array split does not result in an equal division "
                             f"({n} into {sections})")
        each, extra = divmod(n, sections)
        sizes = [each + 1] * extra + [each] * (sections - extra)
        return _split_at(ary, np.cumsum(sizes)[:-1], axis, fn)
    points = _plain_value(indices_or_sections, fn, "indices_or_sections")
    if points.ndim != 1 or (points.size and points.dtype.kind not in "iu"):
        raise TypeError(f"{fn}: indices_or_sections must be an int or a 1-D sequence of "
                        f"ints, got {indices_or_sections!r}")
    return _split_at(ary, points, axis, fn)


@_functions("vj.split (split points -> sizes)", "split")
def _split(ary, indices_or_sections, axis=0):
    return _sections(ary, indices_or_sections, axis, "np.split", equal=True)


@_functions("vj.split (unequal sections allowed)", "array_split")
def _array_split(ary, indices_or_sections, axis=0):
    return _sections(ary, indices_or_sections, axis, "np.array_split", equal=False)


def _directional_split(fn, min_ndim, axis_of):
    def adapter(ary, indices_or_sections):
        nd = len(_shape(ary))
        if nd < min_ndim:
            raise ValueError(f"{fn}: only works on arrays of {min_ndim} or more dimensions, "
                             f"got shape {_shape(ary)}")
        return _sections(ary, indices_or_sections, axis_of(nd), fn, equal=True)
    return adapter


_functions("vj.split along axis 0", "vsplit")(_directional_split("np.vsplit", 2, lambda nd: 0))
_functions("vj.split along axis 1 (axis 0 for 1-D)", "hsplit")(
    _directional_split("np.hsplit", 1, lambda nd: 1 if nd > 1 else 0))
_functions("vj.split along axis 2", "dsplit")(_directional_split("np.dsplit", 3, lambda nd: 2))


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
    nd = len(_shape(a))
    axis1, axis2 = _axis(axis1, nd, "np.swapaxes", "axis1"), _axis(axis2, nd, "np.swapaxes",
                                                                    "axis2")
    perm = list(range(nd))
    perm[axis1], perm[axis2] = perm[axis2], perm[axis1]
    return _a.transpose(a, perm)


@_functions("vj.transpose", "moveaxis")
def _moveaxis(a, source, destination):
    nd = len(_shape(a))
    src = _axis_tuple(source, nd, "np.moveaxis", "source")
    dst = _axis_tuple(destination, nd, "np.moveaxis", "destination")
    if len(src) != len(dst):
        raise ValueError(f"np.moveaxis: source and destination must have the same number "
                         f"of elements, got {source!r} and {destination!r}")
    order = [k for k in range(nd) if k not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return _a.transpose(a, order)


@_functions("vj.transpose", "rollaxis")
def _rollaxis(a, axis, start=0):
    nd = len(_shape(a))
    axis = _axis(axis, nd, "np.rollaxis")
    start = int(start) + (nd if start < 0 else 0)
    if not 0 <= start < nd + 1:
        raise np.exceptions.AxisError(f"np.rollaxis: start must satisfy {-nd} <= start < "
                                      f"{nd + 1}, got {start - (nd if start < 0 else 0)}")
    if axis < start:
        start -= 1
    order = [k for k in range(nd) if k != axis]
    order.insert(start, axis)
    return _a.transpose(a, order)


@_functions("vj.expand_dims", "expand_dims")
def _expand_dims(a, axis):
    count = 1 if isinstance(axis, numbers.Integral) else len(tuple(axis))
    for ax in sorted(_axis_tuple(axis, len(_shape(a)) + count, "np.expand_dims")):
        a = _a.expand_dims(a, ax)
    return a


@_functions("vj.broadcast_to", "broadcast_arrays")
def _broadcast_arrays(*args, subok=False):
    if not all(_is_vj(x) or np.asarray(x).dtype.kind in "biufc" for x in args):
        raise _Unsupported("non-numeric arguments")  # NumPy handles them (e.g. matplotlib)
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


def _atleast_3d(x):
    shape = _shape(x)
    if len(shape) >= 3:
        return x
    return _a.reshape(x, {0: (1, 1, 1), 1: (1,) + shape + (1,), 2: shape + (1,)}[len(shape)])


def _atleast(to):
    def adapter(*arys):
        out = tuple(to(x) for x in arys)
        return out[0] if len(out) == 1 else out
    return adapter


_functions("vj.reshape", "atleast_1d")(_atleast(_atleast_1d))
_functions("vj.reshape", "atleast_2d")(_atleast(_atleast_2d))
_functions("vj.reshape", "atleast_3d")(_atleast(_atleast_3d))


@_functions("vj.reshape of each input + vj.broadcast_to", "meshgrid")
def _meshgrid(*xi, copy=True, sparse=False, indexing="xy"):
    if indexing not in ("xy", "ij"):
        raise ValueError(f"np.meshgrid: indexing must be 'xy' or 'ij', got {indexing!r}")
    nd = len(xi)
    if not all(_is_vj(x) or np.asarray(x).dtype.kind in "biufc" for x in xi):
        raise _Unsupported("non-numeric arguments")
    shapes = [[1] * nd for _ in xi]
    for k, s in enumerate(shapes):
        s[k] = -1
    if indexing == "xy" and nd > 1:  # the first two axes swap: x varies along columns
        shapes[0][:2], shapes[1][:2] = [1, -1], [-1, 1]
    out = [_a.reshape(x, tuple(s)) for x, s in zip(xi, shapes)]
    if not sparse:
        shape = np.broadcast_shapes(*[_shape(x) for x in out])
        out = [_a.broadcast_to(x, shape) for x in out]
    return tuple(out)
