"""NumPy's products and diagonals on Tensors (vecjac/_src/numpy/dispatch.py): dot, vdot, inner,
outer, tensordot, einsum (subscripts or sublists), matmul, vecdot, multi_dot, kron, cross,
trace, diagonal, diag.

np.dot contracts a's last axis with b's second-to-last; np.trace and np.diagonal default
to the first two axes (vecjac's ops use the last two) and take an offset; np.kron and
np.cross are products of reshaped / sliced operands, so their derivatives are the product
rule through vecjac ops.
"""
import operator
import warnings

import numpy as np

from vecjac._src.core.tensor import Tensor
from vecjac._src.numpy.functions import _axis, _cast_to, _common, _flat, _no, _shape, _widen_int
from vecjac._src.numpy.tables import _dtype, _functions, _Unsupported
from vecjac._src.ops.array import indexing as _i
from vecjac._src.ops.array import layout as _l
from vecjac._src.ops.array import shaping as _a
from vecjac._src.ops.elementwise import arithmetic as _m
from vecjac._src.ops.linalg import einsum as _ein
from vecjac._src.ops.linalg import matrix as _la
from vecjac._src.ops.linalg import products as _lin
from vecjac._src.ops.reduce import reductions as _r


# -- products ------------------------------------------------------------------------------
@_functions("vj.tensordot (a's last axis with b's second-to-last)", "dot")
def _dot(a, b, out=None):
    na, nb = len(_shape(a)), len(_shape(b))
    if na == 0 or nb == 0:
        return _m.multiply(a, b)
    return _ein.tensordot(a, b, axes=[[na - 1], [max(nb - 2, 0)]])


@_functions("vj.tensordot over the flattened arrays", "vdot")
def _vdot(a, b):
    if "c" in (_dtype(a).kind, _dtype(b).kind):
        raise _Unsupported("complex vdot")
    return _ein.tensordot(_flat(a), _flat(b), axes=1)


@_functions("vj.tensordot (last axes)", "inner")
def _inner(a, b):
    na, nb = len(_shape(a)), len(_shape(b))
    if na == 0 or nb == 0:
        return _m.multiply(a, b)
    return _ein.tensordot(a, b, axes=[[na - 1], [nb - 1]])


@_functions("vj.reshape + vj.multiply", "outer", "linalg.outer")
def _outer(a, b, out=None):
    return _m.multiply(_a.reshape(a, [-1, 1]), _a.reshape(b, [1, -1]))


@_functions("vj.tensordot", "tensordot", "linalg.tensordot")
def _tensordot(a, b, axes=2):
    return _ein.tensordot(a, b, axes=axes)


def _label(k):
    """NumPy's letter for the sublist label k (0-25: A-Z, 26-51: a-z)."""
    if k is Ellipsis:
        return "..."
    k = operator.index(k)
    if not 0 <= k < 52:
        raise ValueError(f"np.einsum: sublist labels must be in [0, 52), got {k}")
    return chr(ord("A") + k) if k < 26 else chr(ord("a") + k - 26)


def _sublist_form(operands):
    """(equation, arrays) of einsum(op0, sublist0, op1, sublist1, ..., [sublist_out])."""
    rest, arrays, terms = list(operands), [], []
    while len(rest) >= 2:
        arrays.append(rest.pop(0))
        terms.append("".join(_label(k) for k in rest.pop(0)))
    equation = ",".join(terms)
    if rest:
        equation += "->" + "".join(_label(k) for k in rest[0])
    return equation, arrays


@_functions("vj.einsum (subscripts or sublists)", "einsum")
def _einsum(*operands, out=None, optimize=False, **kwargs):
    _no(**kwargs)
    if not operands:
        raise ValueError("np.einsum: no operands given")
    if isinstance(operands[0], str):
        return _ein.einsum(operands[0], *operands[1:])
    equation, arrays = _sublist_form(operands)
    return _ein.einsum(equation, *arrays)


@_functions("vj.matmul", "linalg.matmul")
def _linalg_matmul(x1, x2):
    return _lin.matmul(x1, x2)


@_functions("vj.reduce_sum(x1 * x2, axis)", "linalg.vecdot")
def _vecdot(x1, x2, *, axis=-1):
    return _r.reduce_sum(_m.multiply(x1, x2), axis=axis)


@_functions("chained np.dot", "linalg.multi_dot")
def _multi_dot(arrays, *, out=None):
    result = arrays[0]
    for b in arrays[1:]:
        result = _dot(result, b)
    return result


@_functions("vj.reshape + broadcasting vj.multiply", "kron")
def _kron(a, b):
    sa, sb = _shape(a), _shape(b)
    if not sa or not sb:
        return _m.multiply(a, b)
    nd = max(len(sa), len(sb))
    sa, sb = (1,) * (nd - len(sa)) + sa, (1,) * (nd - len(sb)) + sb
    # a[i, j] * b[k, l] at (i, k, j, l), then merged pairwise: the block structure
    pa = _a.reshape(a, tuple(v for n in sa for v in (n, 1)))
    pb = _a.reshape(b, tuple(v for n in sb for v in (1, n)))
    return _a.reshape(_m.multiply(pa, pb), tuple(x * y for x, y in zip(sa, sb)))


def _cross_parts(a, b, fn, axisa, axisb):
    na, nb = len(_shape(a)), len(_shape(b))
    if na < 1 or nb < 1:
        raise ValueError(f"{fn}: a and b must be at least 1-d (vectors)")
    a = _move_last(a, _axis(axisa, na, fn, "axisa"))
    b = _move_last(b, _axis(axisb, nb, fn, "axisb"))
    da, db = _shape(a)[-1], _shape(b)[-1]
    if da not in (2, 3) or db not in (2, 3):
        raise ValueError(f"{fn}: incompatible dimensions for a cross product (each must be "
                         f"2 or 3), got {da} and {db}")
    a, b = _common([a, b], None)
    return a, b, da, db


def _move_last(x, axis):
    nd = len(_shape(x))
    return x if axis == nd - 1 else _a.transpose(
        x, [k for k in range(nd) if k != axis] + [axis])


@_functions("products of vecjac slices + vj.stack", "cross")
def _cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    fn = "np.cross"
    if axis is not None:
        axisa = axisb = axisc = axis
    a, b, da, db = _cross_parts(a, b, fn, axisa, axisb)
    if 2 in (da, db):
        warnings.warn("Arrays of 2-dimensional vectors are deprecated. Use arrays of "
                      "3-dimensional vectors instead. (deprecated in NumPy 2.0)",
                      DeprecationWarning, stacklevel=3)
    a0, a1, b0, b1 = a[..., 0], a[..., 1], b[..., 0], b[..., 1]
    z = _m.subtract(_m.multiply(a0, b1), _m.multiply(a1, b0))
    if da == db == 2:
        return z
    zero = Tensor(np.zeros((), _dtype(a)))
    a2 = a[..., 2] if da == 3 else zero
    b2 = b[..., 2] if db == 3 else zero
    x = _m.subtract(_m.multiply(a1, b2), _m.multiply(a2, b1)) if 3 == da == db else \
        _m.multiply(a1, b2) if da == 2 else _m.negative(_m.multiply(a2, b1))
    y = _m.subtract(_m.multiply(a2, b0), _m.multiply(a0, b2)) if 3 == da == db else \
        _m.negative(_m.multiply(a0, b2)) if da == 2 else _m.multiply(a2, b0)
    shape = np.broadcast_shapes(_shape(x), _shape(y), _shape(z))
    out = _a.stack([_a.broadcast_to(c, shape) for c in (x, y, z)], axis=-1)
    axisc = _axis(axisc, len(shape) + 1, fn, "axisc")
    if axisc == len(shape):
        return out
    order = list(range(len(shape)))
    order.insert(axisc, len(shape))
    return _a.transpose(out, order)


@_functions("products of vecjac slices + vj.stack", "linalg.cross")
def _linalg_cross(x1, x2, /, *, axis=-1):
    for name, x in (("x1", x1), ("x2", x2)):
        if not _shape(x) or _shape(x)[axis] != 3:
            raise ValueError(f"np.linalg.cross: {name} must be (arrays of) 3-dimensional "
                             f"vectors along axis {axis}, got shape {_shape(x)}")
    return _cross(x1, x2, axis=axis)


# -- diagonals -----------------------------------------------------------------------------
def _to_last_two(a, axis1, axis2, fn):
    nd = len(_shape(a))
    if nd < 2:
        raise ValueError(f"{fn}: the array must be at least 2-d, got shape {_shape(a)}")
    axis1, axis2 = _axis(axis1, nd, fn, "axis1"), _axis(axis2, nd, fn, "axis2")
    if axis1 == axis2:
        raise ValueError(f"{fn}: axis1 and axis2 cannot be the same, got {axis1}")
    perm = [k for k in range(nd) if k not in (axis1, axis2)] + [axis1, axis2]
    return a if perm == list(range(nd)) else _a.transpose(a, perm)


def _diagonal_last(x, offset):
    """Diagonal `offset` of the last two axes: above the main one for offset > 0."""
    offset = operator.index(offset)
    if offset > 0:
        x = _i.getitem(x, (Ellipsis, slice(offset, None)))
    elif offset < 0:
        x = _i.getitem(x, (Ellipsis, slice(-offset, None), slice(None)))
    return _la.diag_part(x)


@_functions("vj.linalg.diag_part (axes moved last; offset: a slice first)", "diagonal")
def _diagonal(a, offset=0, axis1=0, axis2=1):
    return _diagonal_last(_to_last_two(a, axis1, axis2, "np.diagonal"), offset)


@_functions("vj.linalg.diag_part (offset: a slice first)", "linalg.diagonal")
def _linalg_diagonal(x, /, *, offset=0):
    return _diagonal_last(_to_last_two(x, -2, -1, "np.linalg.diagonal"), offset)


def _summed_diagonal(d, dtype):
    d = _cast_to(d, dtype) if dtype is not None else _widen_int(d)
    return _r.reduce_sum(d, axis=-1)


@_functions("vj.reduce_sum of the diagonal (axes moved last)", "trace")
def _trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    return _summed_diagonal(_diagonal_last(_to_last_two(a, axis1, axis2, "np.trace"), offset),
                            dtype)


@_functions("vj.reduce_sum of the diagonal", "linalg.trace")
def _linalg_trace(x, /, *, offset=0, dtype=None):
    return _summed_diagonal(_linalg_diagonal(x, offset=offset), dtype)


@_functions("vj.linalg.diag + vj.pad (k) / the diagonal of a 2-D array", "diag")
def _diag(v, k=0):
    nd = len(_shape(v))
    k = operator.index(k)
    if nd == 2:
        return _diagonal_last(v, k)
    if nd != 1:
        raise ValueError(f"np.diag: v must be 1-d or 2-d, got shape {_shape(v)}")
    square = _la.diag(v)
    if not k:
        return square
    widths = [[0, k], [k, 0]] if k > 0 else [[-k, 0], [0, -k]]
    return _l.pad(square, widths, constant_values=Tensor(np.zeros((), _dtype(v))))
