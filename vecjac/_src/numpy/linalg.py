"""np.linalg on Tensors (vecjac/_src/numpy/dispatch.py): solve, inv, det, slogdet, cholesky,
svd, eigh, eigvalsh, eig, eigvals, qr, pinv, lstsq, matrix_power, norm (every vector and
matrix order), matrix_norm, vector_norm, svdvals.

NumPy's conventions where they differ from vj.linalg's: np.linalg.svd returns (U, S, Vh)
with full_matrices=True by default (vj.linalg.svd: s, u, v); np.linalg.solve and lstsq
take a 1-D b as one vector; np.linalg.pinv's rcond default is 1e-15 (vj.linalg.pinv:
10 * max(m, n) * eps). np.linalg.lstsq returns (x, residuals, rank, s) with x, residuals
and s differentiable Tensors (through the pseudo-inverse and the SVD) and rank an int.
np.linalg.eig and eigvals return complex Tensors always (NumPy returns real arrays when
every eigenvalue is real): a dtype that depends on no value, as JAX's. Complex matrices
(complex64, complex128) take the same ops, whose rules hold for them (vj.linalg).
"""
import collections
import numbers
import operator

import numpy as np

from vecjac._src.composites import norm as _n
from vecjac._src.core.dispatch import apply
from vecjac._src.core.tensor import Tensor
from vecjac._src.numpy.functions import _axis, _axis_tuple, _float_common, _shape, _to_float
from vecjac._src.numpy.tables import _dtype, _functions, _Unsupported
from vecjac._src.ops.array import layout as _l
from vecjac._src.ops.array import shaping as _a
from vecjac._src.ops.elementwise import arithmetic as _m
from vecjac._src.ops.elementwise import logic as _lo
from vecjac._src.ops.elementwise import unary as _u
from vecjac._src.ops.linalg import decomposition as _dec
from vecjac._src.ops.linalg import eig as _eig_ops
from vecjac._src.ops.linalg import matrix as _la
from vecjac._src.ops.linalg import products as _lin
from vecjac._src.ops.linalg import qr as _qr
from vecjac._src.ops.reduce import reductions as _r
from vecjac._src.ops.reduce import sort as _so

SVDResult = collections.namedtuple("SVDResult", ["U", "S", "Vh"])
EighResult = collections.namedtuple("EighResult", ["eigenvalues", "eigenvectors"])
QRResult = collections.namedtuple("QRResult", ["Q", "R"])
EigResult = collections.namedtuple("EigResult", ["eigenvalues", "eigenvectors"])
SlogdetResult = collections.namedtuple("SlogdetResult", ["sign", "logabsdet"])


def _real_matrix(a, fn):
    """a as a floating (or complex) matrix of rank >= 2."""
    a = _to_float(a)
    if len(_shape(a)) < 2:
        raise np.linalg.LinAlgError(f"{fn}: a must be at least two-dimensional, got shape "
                                    f"{_shape(a)}")
    return a


def _square(a, fn):
    a = _real_matrix(a, fn)
    if _shape(a)[-1] != _shape(a)[-2]:
        raise np.linalg.LinAlgError(f"{fn}: the last two dimensions of a must be square, "
                                    f"got shape {_shape(a)}")
    return a


@_functions("vj.linalg.solve (1-D b: a vector)", "linalg.solve")
def _solve(a, b):
    a, b = _float_common([a, b])  # NumPy's promotion (a real b with a complex a)
    if len(_shape(b)) == 1:
        return _a.squeeze(_la.solve(a, _a.expand_dims(b, -1)), axis=-1)
    return _la.solve(a, b)


@_functions("vj.linalg.inv", "linalg.inv")
def _inv(a):
    return _la.inv(a)


@_functions("vj.linalg.det", "linalg.det")
def _det(a):
    return _la.det(a)


@_functions("vj.linalg.slogdet", "linalg.slogdet")
def _slogdet(a):
    return SlogdetResult(*_la.slogdet(a))


@_functions("vj.linalg.cholesky", "linalg.cholesky")
def _cholesky(a, /, *, upper=False):
    lower = _la.cholesky(a)
    return _lin.conj_transpose(lower) if upper else lower


@_functions("vj.linalg.matrix_transpose", "matrix_transpose", "linalg.matrix_transpose")
def _matrix_transpose(x):
    return _lin.matrix_transpose(x)


# -- decompositions ------------------------------------------------------------------------
@_functions("vj.linalg.svd (returns U, S, Vh)", "linalg.svd")
def _svd(a, full_matrices=True, compute_uv=True, hermitian=False):
    a = _real_matrix(a, "np.linalg.svd")
    if hermitian:
        return _hermitian_svd(a, compute_uv)
    if not compute_uv:
        return _dec.svd(a, compute_uv=False)
    s, u, v = _dec.svd(a, full_matrices=bool(full_matrices))
    return SVDResult(u, s, _lin.conj_transpose(v))


def _hermitian_svd(a, compute_uv):
    """NumPy's hermitian=True path: from eigh, |e| sorted descending, signs moved into Vh
    (Vh = (u * sign(e))^H)."""
    if not compute_uv:
        s = _u.abs(_dec.eigvalsh(a))
        return _l.reverse(_so.sort(s), [-1])
    e, u = _dec.eigh(a)
    s = _u.abs(e)
    nd = len(_shape(s))
    order = _l.reverse(apply(_so.ArgSort, s, axis=nd - 1, descending=False, stable=False),
                       [-1])
    signs = _so.take_along_axis(_u.sign(e), order, nd - 1)
    s = _so.take_along_axis(s, order, nd - 1)
    u = _so.take_along_axis(u, _a.broadcast_to(_a.expand_dims(order, -2), _shape(u)), nd)
    return SVDResult(u, s, _lin.conj_transpose(_m.multiply(u, _a.expand_dims(signs, -2))))


@_functions("vj.linalg.svd(compute_uv=False)", "linalg.svdvals")
def _svdvals(x, /):
    return _dec.svd(_real_matrix(x, "np.linalg.svdvals"), compute_uv=False)


def _lower(a, UPLO, fn):
    if UPLO not in ("L", "U"):
        raise ValueError(f"{fn}: UPLO must be 'L' or 'U', got {UPLO!r}")
    a = _square(a, fn)
    # the upper triangle of a is the lower one of a^H (for complex a too)
    return a if UPLO == "L" else _lin.conj_transpose(a)


@_functions("vj.linalg.eigh", "linalg.eigh")
def _eigh(a, UPLO="L"):
    return EighResult(*_dec.eigh(_lower(a, UPLO, "np.linalg.eigh")))


@_functions("vj.linalg.eigvalsh", "linalg.eigvalsh")
def _eigvalsh(a, UPLO="L"):
    return _dec.eigvalsh(_lower(a, UPLO, "np.linalg.eigvalsh"))


@_functions("vj.linalg.eig (always complex)", "linalg.eig")
def _eig(a):
    return EigResult(*_eig_ops.eig(_square(a, "np.linalg.eig")))


@_functions("vj.linalg.eigvals (always complex)", "linalg.eigvals")
def _eigvals(a):
    return _eig_ops.eigvals(_square(a, "np.linalg.eigvals"))


@_functions("vj.linalg.qr (mode 'reduced' or 'complete'; 'r' gives R)", "linalg.qr")
def _qr_np(a, mode="reduced"):
    if mode not in ("reduced", "complete", "r"):
        raise _Unsupported(f"mode={mode!r}")
    q, r = _qr.qr(_real_matrix(a, "np.linalg.qr"), full_matrices=mode == "complete")
    return r if mode == "r" else QRResult(q, r)


def _cutoff(rcond, fn):
    if np.ndim(rcond) != 0:
        raise _Unsupported("an array rcond")
    rcond = float(rcond)
    if not rcond >= 0:
        raise ValueError(f"{fn}: rcond must be non-negative, got {rcond}")
    return rcond


@_functions("vj.linalg.pinv", "linalg.pinv")
def _pinv(a, rcond=None, hermitian=False, *, rtol=np._NoValue):
    fn = "np.linalg.pinv"
    a = _real_matrix(a, fn)
    if rcond is None:
        rcond = 1e-15 if rtol is np._NoValue else \
            max(_shape(a)[-2:]) * np.finfo(_dtype(a)).eps if rtol is None else rtol
    elif rtol is not np._NoValue:
        raise ValueError(f"{fn}: rtol and rcond cannot both be set")
    return _dec.pinv(a, rcond=_cutoff(rcond, fn))


@_functions("vj.linalg.pinv @ b (x), vj.linalg.svd (s)", "linalg.lstsq")
def _lstsq(a, b, rcond=None):
    fn = "np.linalg.lstsq"
    a, b = _float_common([a, b])
    if a.ndim != 2 or b.ndim not in (1, 2):
        raise np.linalg.LinAlgError(f"{fn}: a must be 2-D and b 1-D or 2-D, got shapes "
                                    f"{a.shape} and {b.shape}")
    vector = b.ndim == 1
    if vector:
        b = _a.expand_dims(b, -1)
    m, n = a.shape
    if b.shape[0] != m:
        raise np.linalg.LinAlgError(f"{fn}: incompatible dimensions: a has {m} rows, b "
                                    f"{b.shape[0]}")
    rcond = np.finfo(np.float64).eps * max(m, n) if rcond is None else _cutoff(rcond, fn)
    x = _lin.matmul(_dec.pinv(a, rcond=rcond), b)
    s = _dec.svd(a, compute_uv=False)
    values = s._value.reshape(-1, s._value.shape[-1])  # every pfor iteration's
    ranks = {int(np.sum(v > rcond * v.max(initial=0))) for v in values} or {0}
    if len(ranks) > 1:
        raise ValueError(f"{fn}: the rank of a differs between pfor iterations {sorted(ranks)}"
                         ", so the residuals would differ in shape; use vj.linalg.lstsq")
    rank = ranks.pop()
    if rank == n and m > n:
        r = _m.subtract(b, _lin.matmul(a, x))
        residuals = _r.reduce_sum(_u.square(_u.abs(r) if r.dtype.kind == "c" else r), axis=0)
    else:
        residuals = Tensor(np.empty(0, a.dtype))
    return (_a.squeeze(x, axis=-1) if vector else x), residuals, rank, s


@_functions("repeated vj.matmul (binary powers), vj.linalg.inv for n < 0",
            "linalg.matrix_power")
def _matrix_power(a, n):
    fn = "np.linalg.matrix_power"
    try:
        n = operator.index(n)
    except TypeError:
        raise TypeError(f"{fn}: the exponent n must be an integer, got {n!r}") from None
    if len(_shape(a)) < 2 or _shape(a)[-1] != _shape(a)[-2]:
        raise np.linalg.LinAlgError(f"{fn}: a must be (a stack of) square matrices, got "
                                    f"shape {_shape(a)}")
    if n == 0:
        shape = _shape(a)
        return Tensor(np.broadcast_to(np.eye(shape[-1], dtype=_dtype(a)), shape).copy())
    if n < 0:
        a, n = _la.inv(_to_float(a)), -n
    if n == 1:
        return _a.identity(a)
    if n == 2:
        return _lin.matmul(a, a)
    if n == 3:
        return _lin.matmul(_lin.matmul(a, a), a)
    z = result = None
    while n > 0:  # NumPy's binary decomposition, for the same rounding
        z = a if z is None else _lin.matmul(z, z)
        n, bit = divmod(n, 2)
        if bit:
            result = z if result is None else _lin.matmul(result, z)
    return result


# -- norms ---------------------------------------------------------------------------------
def _vector_norm(x, ord, axes, keepdims, fn):
    if isinstance(ord, str):
        raise ValueError(f"{fn}: invalid norm order {ord!r} for vectors")
    if ord is None or ord == 2:
        return _n._vector_norm(x, "euclidean", axes, keepdims)
    absx = _u.abs(x)
    if ord == np.inf:
        return _r.reduce_max(absx, axis=axes, keepdims=keepdims)
    if ord == -np.inf:
        return _r.reduce_min(absx, axis=axes, keepdims=keepdims)
    if ord == 0:
        nonzero = _lo.cast(_lo.not_equal(x, 0), _dtype(absx))
        return _r.reduce_sum(nonzero, axis=axes, keepdims=keepdims)
    if ord == 1:
        return _r.reduce_sum(absx, axis=axes, keepdims=keepdims)
    p = float(ord)
    return _m.pow(_r.reduce_sum(_m.pow(absx, p), axis=axes, keepdims=keepdims), 1.0 / p)


def _matrix_norm(x, ord, axes, keepdims, fn):
    row, col = axes
    if row == col:
        raise ValueError(f"{fn}: the two matrix axes must differ, got {axes}")
    nd = len(_shape(x))
    if ord is None or ord in ("fro", "f"):
        out = _n._vector_norm(x, "euclidean", (row, col), False)
    elif ord in (2, -2, "nuc"):
        rest = [k for k in range(nd) if k not in axes]
        s = _dec.svd(_a.transpose(x, rest + [row, col]), compute_uv=False)
        reduce = {2: _r.reduce_max, -2: _r.reduce_min, "nuc": _r.reduce_sum}[ord]
        out = reduce(s, axis=-1)
    elif ord in (1, -1, np.inf, -np.inf):
        summed, over = (row, col) if ord in (1, -1) else (col, row)
        sums = _r.reduce_sum(_u.abs(x), axis=summed)
        over -= over > summed
        out = (_r.reduce_max if ord > 0 else _r.reduce_min)(sums, axis=over)
    else:
        raise ValueError(f"{fn}: invalid norm order {ord!r} for matrices")
    if keepdims:
        out = _a.reshape(out, tuple(1 if k in axes else d for k, d in enumerate(_shape(x))))
    return out


@_functions("vecjac reductions / vj.linalg.svd (orders 2, -2, 'nuc' of matrices)",
            "linalg.norm")
def _norm(x, ord=None, axis=None, keepdims=False):
    fn = "np.linalg.norm"
    x = _to_float(x)
    nd = len(_shape(x))
    if axis is None:
        if ord is None or (ord in ("f", "fro") and nd == 2) or (ord == 2 and nd == 1):
            return _n.norm(x, axis=None, keepdims=bool(keepdims))
        axis = tuple(range(nd))
    elif isinstance(axis, numbers.Integral):
        axis = (axis,)
    elif not isinstance(axis, tuple):
        raise TypeError(f"{fn}: axis must be None, an integer or a tuple of integers, got "
                        f"{axis!r}")
    if len(axis) == 1:
        return _vector_norm(x, ord, (_axis(axis[0], nd, fn),), bool(keepdims), fn)
    if len(axis) == 2:
        axes = (_axis(axis[0], nd, fn), _axis(axis[1], nd, fn))
        return _matrix_norm(x, ord, axes, bool(keepdims), fn)
    raise ValueError(f"{fn}: improper number of dimensions to norm ({len(axis)} axes)")


@_functions("vecjac reductions / vj.linalg.svd", "linalg.matrix_norm")
def _matrix_norm_fn(x, /, *, keepdims=False, ord="fro"):
    return _norm(x, ord=ord, axis=(-2, -1), keepdims=keepdims)


@_functions("vecjac reductions over any axes", "linalg.vector_norm")
def _vector_norm_fn(x, /, *, axis=None, keepdims=False, ord=2):
    fn = "np.linalg.vector_norm"
    x = _to_float(x)
    nd = len(_shape(x))
    axes = tuple(range(nd)) if axis is None else _axis_tuple(axis, nd, fn)
    return _vector_norm(x, ord, axes, bool(keepdims), fn)
