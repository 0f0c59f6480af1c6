"""The array API's `linalg` extension (`xp.linalg`) on vecjac Tensors.

Each function runs the np.linalg function of the same name on Tensors, so NumPy's dispatch
(vecjac/_src/numpy/linalg.py) picks the vecjac op: cholesky, det, eigh, inv, qr, slogdet,
solve, svd and the norms are differentiable (with vecjac's rules, e.g. eigh's derivative
needs distinct eigenvalues). `matrix_rank` is an integer (computed by NumPy, no derivative);
an argument the adapters cannot express (pinv's rtol) runs in NumPy, which refuses or warns
under a transform like any NumPy function without a vecjac op.
"""
import collections

import numpy as np

from vecjac._src.numpy.array_api_dtypes import STANDARD
from vecjac._src.numpy.array_api_elementwise import as_tensor, wrap

EighResult = collections.namedtuple("EighResult", ["eigenvalues", "eigenvectors"])
QRResult = collections.namedtuple("QRResult", ["Q", "R"])
SlogdetResult = collections.namedtuple("SlogdetResult", ["sign", "logabsdet"])
SVDResult = collections.namedtuple("SVDResult", ["U", "S", "Vh"])

# the same functions as the main namespace's
matmul = STANDARD["matmul"]
matrix_transpose = STANDARD["matrix_transpose"]
tensordot = STANDARD["tensordot"]
vecdot = STANDARD["vecdot"]


def _square(x, name):
    x = as_tensor(x, f"{name}: x")
    if x.ndim < 2 or x.shape[-1] != x.shape[-2]:
        raise ValueError(f"{name}: x must be a stack of square matrices (shape (..., n, n)), "
                         f"got shape {x.shape}")
    return x


def cholesky(x, /, *, upper=False):
    lower = wrap(np.linalg.cholesky(_square(x, "cholesky")))
    return matrix_transpose(lower) if upper else lower


def cross(x1, x2, /, *, axis=-1):
    x1, x2 = as_tensor(x1, "cross: x1"), as_tensor(x2, "cross: x2")
    last = axis - max(x1.ndim, x2.ndim) if axis >= 0 else axis  # counted from the end
    if not (-min(x1.ndim, x2.ndim) <= last < 0) or x1.shape[last] != 3 or \
            x2.shape[last] != 3:
        raise ValueError(f"cross: x1 and x2 need length 3 along axis {axis}, got shapes "
                         f"{x1.shape} and {x2.shape}")
    return wrap(np.linalg.cross(x1, x2, axis=last))


def det(x, /):
    return wrap(np.linalg.det(_square(x, "det")))


def diagonal(x, /, *, offset=0):
    return wrap(np.linalg.diagonal(as_tensor(x, "diagonal: x"), offset=offset))


def eigh(x, /):
    return EighResult(*wrap(tuple(np.linalg.eigh(_square(x, "eigh")))))


def eigvalsh(x, /):
    return wrap(np.linalg.eigvalsh(_square(x, "eigvalsh")))


def inv(x, /):
    return wrap(np.linalg.inv(_square(x, "inv")))


def matrix_norm(x, /, *, keepdims=False, ord="fro"):  # noqa: A002 (the standard's name)
    return wrap(np.linalg.matrix_norm(as_tensor(x, "matrix_norm: x"), keepdims=keepdims,
                                      ord=ord))


def matrix_power(x, n, /):
    return wrap(np.linalg.matrix_power(_square(x, "matrix_power"), n))


def matrix_rank(x, /, *, rtol=None):
    x = as_tensor(x, "matrix_rank: x")
    return wrap(np.linalg.matrix_rank(x.numpy(), rtol=rtol))


def outer(x1, x2, /):
    return wrap(np.linalg.outer(as_tensor(x1, "outer: x1"), as_tensor(x2, "outer: x2")))


def pinv(x, /, *, rtol=None):
    return wrap(np.linalg.pinv(as_tensor(x, "pinv: x"), rtol=rtol))


def qr(x, /, *, mode="reduced"):
    if mode not in ("reduced", "complete"):
        raise ValueError(f"qr: mode must be 'reduced' or 'complete', got {mode!r}")
    return QRResult(*wrap(tuple(np.linalg.qr(as_tensor(x, "qr: x"), mode=mode))))


def slogdet(x, /):
    return SlogdetResult(*wrap(tuple(np.linalg.slogdet(_square(x, "slogdet")))))


def solve(x1, x2, /):
    return wrap(np.linalg.solve(_square(x1, "solve"), as_tensor(x2, "solve: x2")))


def svd(x, /, *, full_matrices=True):
    return SVDResult(*wrap(tuple(np.linalg.svd(as_tensor(x, "svd: x"),
                                               full_matrices=full_matrices))))


def svdvals(x, /):
    return wrap(np.linalg.svdvals(as_tensor(x, "svdvals: x")))


def trace(x, /, *, offset=0, dtype=None):
    """The sum of each matrix's diagonal, in sum's dtype (integers widened to int64)."""
    return STANDARD["sum"](diagonal(x, offset=offset), axis=-1, dtype=dtype)


def vector_norm(x, /, *, axis=None, keepdims=False, ord=2):  # noqa: A002
    return wrap(np.linalg.vector_norm(as_tensor(x, "vector_norm: x"), axis=axis,
                                      keepdims=keepdims, ord=ord))
