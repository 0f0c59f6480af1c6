"""NumPy products and linear algebra on Tensors: np.dot, np.einsum, np.linalg.* adapters.

Part of the dispatch table of vecjac/numpy_dispatch.py (see vecjac/numpy_functions.py for
the conventions). np.dot contracts a's last axis with b's second-to-last; np.trace and
np.diagonal default to the first two axes (vecjac's ops use the last two); np.linalg.solve
treats a 1-D b as one vector.
"""
import collections
import numbers

import numpy as np

from ._numpy_tables import _dtype, _functions, _Unsupported
from ._numpy_functions import _cast_to, _flat, _no, _shape, _to_float
from .ops import array_ops as _a
from .ops import linalg_ops as _la
from .ops import linear_ops as _lin
from .ops import math_ops as _m
from .ops import norm_ops as _n
from .ops import reduce_ops as _r

# -- products ------------------------------------------------------------------------------
@_functions("vj.tensordot (a's last axis with b's second-to-last)", "dot")
def _dot(a, b, out=None):
    na, nb = len(_shape(a)), len(_shape(b))
    if na == 0 or nb == 0:
        return _m.multiply(a, b)
    return _lin.tensordot(a, b, axes=[[na - 1], [max(nb - 2, 0)]])


@_functions("vj.tensordot over the flattened arrays", "vdot")
def _vdot(a, b):
    if "c" in (_dtype(a).kind, _dtype(b).kind):
        raise _Unsupported("complex vdot")
    return _lin.tensordot(_flat(a), _flat(b), axes=1)


@_functions("vj.tensordot (last axes)", "inner")
def _inner(a, b):
    na, nb = len(_shape(a)), len(_shape(b))
    if na == 0 or nb == 0:
        return _m.multiply(a, b)
    return _lin.tensordot(a, b, axes=[[na - 1], [nb - 1]])


@_functions("vj.reshape + vj.multiply", "outer", "linalg.outer")
def _outer(a, b, out=None):
    return _m.multiply(_a.reshape(a, [-1, 1]), _a.reshape(b, [1, -1]))


@_functions("vj.tensordot", "tensordot", "linalg.tensordot")
def _tensordot(a, b, axes=2):
    return _lin.tensordot(a, b, axes=axes)


@_functions("vj.einsum", "einsum")
def _einsum(*operands, out=None, optimize=False, **kwargs):
    _no(**kwargs)
    if not operands or not isinstance(operands[0], str):
        raise _Unsupported("the sublist form of einsum")
    return _lin.einsum(operands[0], *operands[1:])


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


# -- linear algebra ------------------------------------------------------------------------
def _to_last_two(a, axis1, axis2):
    nd = len(_shape(a))
    axis1, axis2 = axis1 % nd, axis2 % nd
    perm = [k for k in range(nd) if k not in (axis1, axis2)] + [axis1, axis2]
    return a if perm == list(range(nd)) else _a.transpose(a, perm)


@_functions("vj.linalg.trace (axes moved last)", "trace")
def _trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    _no(offset=offset or None)
    return _la.trace(_cast_to(_to_last_two(a, axis1, axis2), dtype))


@_functions("vj.linalg.diag_part (axes moved last)", "diagonal")
def _diagonal(a, offset=0, axis1=0, axis2=1):
    _no(offset=offset or None)
    return _la.diag_part(_to_last_two(a, axis1, axis2))


@_functions("vj.linalg.diag / vj.linalg.diag_part", "diag")
def _diag(v, k=0):
    _no(k=k or None)
    nd = len(_shape(v))
    if nd == 1:
        return _la.diag(v)
    if nd == 2:
        return _la.diag_part(v)
    raise ValueError(f"np.diag: input must be 1- or 2-d, got shape {_shape(v)}")


@_functions("vj.linalg.trace", "linalg.trace")
def _linalg_trace(x, *, offset=0, dtype=None):
    _no(offset=offset or None)
    return _la.trace(_cast_to(x, dtype))


@_functions("vj.linalg.diag_part", "linalg.diagonal")
def _linalg_diagonal(x, *, offset=0):
    _no(offset=offset or None)
    return _la.diag_part(x)


@_functions("vj.linalg.solve (1-D b: a vector)", "linalg.solve")
def _solve(a, b):
    if len(_shape(b)) == 1:
        return _a.squeeze(_la.solve(a, _a.expand_dims(b, -1)), axis=-1)
    return _la.solve(a, b)


@_functions("vj.linalg.inv", "linalg.inv")
def _inv(a):
    return _la.inv(a)


@_functions("vj.linalg.det", "linalg.det")
def _det(a):
    return _la.det(a)


SlogdetResult = collections.namedtuple("SlogdetResult", ["sign", "logabsdet"])


@_functions("vj.linalg.slogdet", "linalg.slogdet")
def _slogdet(a):
    return SlogdetResult(*_la.slogdet(a))


@_functions("vj.linalg.cholesky", "linalg.cholesky")
def _cholesky(a, /, *, upper=False):
    lower = _la.cholesky(a)
    return _lin.matrix_transpose(lower) if upper else lower


@_functions("vj.linalg.matrix_transpose", "matrix_transpose", "linalg.matrix_transpose")
def _matrix_transpose(x):
    return _lin.matrix_transpose(x)


@_functions("vj.norm", "linalg.norm")
def _norm(x, ord=None, axis=None, keepdims=False):
    nd = len(_shape(x))
    if isinstance(axis, numbers.Integral):
        axis = (axis,)
    if axis is None and ord is not None:
        axis = tuple(range(nd))
    if axis is None or ord is None and len(axis) == 1:
        return _n.norm(_to_float(x), axis=axis if axis is None else axis[0],
                       keepdims=keepdims)
    axis = tuple(axis)
    matrix = len(axis) == 2
    if not isinstance(ord, (numbers.Real, str)) or isinstance(ord, bool):
        raise _Unsupported(f"ord={ord!r}")
    allowed = ord in (None, "fro", 1, 2, np.inf) if matrix else \
        (isinstance(ord, numbers.Real) and ord > 0)
    if not allowed or len(axis) > 2:
        raise _Unsupported(f"ord={ord!r}")
    try:
        return _n.norm(_to_float(x), ord="euclidean" if ord is None else ord,
                       axis=list(axis) if matrix else axis[0], keepdims=keepdims)
    except NotImplementedError as e:  # a norm vj.norm does not have yet (ord=2 of a matrix)
        raise _Unsupported(str(e)) from None  # NumPy computes it (a warning on a tape)
