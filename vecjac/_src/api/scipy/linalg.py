"""vj.scipy.linalg: differentiable scipy.linalg functions, with SciPy's signatures.

solve_triangular and cho_solve are vj.linalg.triangular_solve with SciPy's conventions
(1-D right-hand sides, `trans`, `unit_diagonal`, the (c, lower) pair of cho_factor);
expm, sqrtm and solve_sylvester are ops (vecjac/_src/ops/linalg/matrix_function.py), and
solve_banded (vecjac/_src/ops/linalg/banded.py). All but solve_banded (SciPy's shapes) batch
over leading axes, take real matrices (ints become float64, float16 float32; expm, sqrtm
and solve_sylvester complex ones too, complex64 or complex128) and, like
SciPy, raise ValueError for infinite or NaN entries where SciPy checks them
(`check_finite`) and numpy.linalg.LinAlgError (a ValueError) for a singular triangle.
`overwrite_b` / `overwrite_ab` are accepted and ignored (Tensors are immutable).
"""
import numpy as np

from vecjac._src.composites.norm import norm
from vecjac._src.core.dispatch import apply, to_input
from vecjac._src.core.shapes import as_bool, broadcast_shape
from vecjac._src.core.tensor import Tensor
from vecjac._src.ops.array.shaping import reshape
from vecjac._src.ops.elementwise.logic import cast
from vecjac._src.ops.elementwise.scipy_special import result_dtype
from vecjac._src.ops.linalg.banded import SolveBanded
from vecjac._src.ops.linalg.matrix import triangular_solve
from vecjac._src.ops.linalg.matrix_function import (MatrixExponential, MatrixSquareRoot,
                                                    SolveSylvester)
from vecjac._src.ops.linalg.products import matmul

__all__ = ["solve_triangular", "cho_solve", "solve_banded", "expm", "sqrtm",
           "solve_sylvester"]


def _operands(fn, names, args, shapes, complex_ok=False):
    """Real Tensors of one float dtype (complex_ok: or of one complex dtype, if any
    operand is complex); `shapes` per operand: "square", "matrix" (rank >= 2) or "rhs"
    (rank >= 1). Everything is checked before anything runs."""
    tensors = [to_input(a, args, fn, n) for a, n in zip(args, names)]
    for n, t, kind in zip(names, tensors, shapes):
        if not (t.dtype.kind in "iuf" or complex_ok and t.dtype in (np.complex64,
                                                                    np.complex128)):
            raise TypeError(f"{fn}: {n} must be a real (int or float) "
                            f"{'or complex ' if complex_ok else ''}array, got dtype "
                            f"{t.dtype}")
        rank = 1 if kind == "rhs" else 2
        if t.ndim < rank:
            raise ValueError(f"{fn}: {n} must have rank >= {rank}, got shape {t.shape}")
        if kind == "square" and t.shape[-1] != t.shape[-2]:
            raise ValueError(f"{fn}: {n} must be square (last two axes), got shape {t.shape}")
    dtype = result_dtype([t._value for t in tensors])
    dtype = np.dtype(np.float32) if dtype == np.float16 else dtype
    complexes = [t.dtype for t in tensors if t.dtype.kind == "c"]
    if complexes:  # NumPy's promotion of the complex and float dtypes (ints do not widen)
        dtype = np.result_type(*complexes, *[t.dtype for t in tensors if t.dtype.kind == "f"])
    return tensors, dtype


def _check_finite(fn, names, tensors):
    for n, t in zip(names, tensors):
        if not np.all(np.isfinite(t._value)):
            raise ValueError(f"{fn}: {n} must not contain infs or NaNs (check_finite=True)")


def _check_diagonal(fn, c, name):
    if c.size and np.any(np.diagonal(c._value, axis1=-2, axis2=-1) == 0):
        raise np.linalg.LinAlgError(f"{fn}: singular matrix (a zero on the diagonal of "
                                    f"{name})")


def _cast(tensors, dtype):
    return [t if t.dtype == dtype else cast(t, dtype) for t in tensors]


def _rhs_as_matrix(fn, a, b):
    """b as (..., n, k) (a 1-D b is one column), checked against a (..., n, n)."""
    n = a.shape[-1]
    vector = b.ndim == 1
    if b.shape[0 if vector else -2] != n:
        raise ValueError(f"{fn}: b has shape {b.shape}, its {'length' if vector else 'axis -2'}"
                         f" must equal the size {n} of a (shape {a.shape})")
    if not vector:
        broadcast_shape(fn, a.shape[:-2], b.shape[:-2], names=("a batch", "b batch"))
    return vector


_TRANS = {0: False, "N": False, "n": False, 1: True, "T": True, "t": True, 2: True,
          "C": True, "c": True}


def solve_triangular(a, b, trans=0, lower=False, unit_diagonal=False, overwrite_b=False,
                     check_finite=True):
    """x with a x = b (a^T x = b for trans 1 / 'T' or 2 / 'C'), a triangular.

    Only the lower (upper) triangle of a is read; unit_diagonal takes its diagonal as
    ones. a: (..., n, n); b: (n,) or (..., n, k); output b's shape (batch broadcast).
    """
    fn = "vj.scipy.linalg.solve_triangular"
    (a, b), dtype = _operands(fn, ("a", "b"), (a, b), ("square", "rhs"))
    vector = _rhs_as_matrix(fn, a, b)
    if isinstance(trans, (bool, np.bool_)) or not isinstance(trans, (int, str)) or \
            trans not in _TRANS:
        raise ValueError(f"{fn}: trans must be 0, 1, 2, 'N', 'T' or 'C', got {trans!r}")
    lower, unit = as_bool(lower, fn, "lower"), as_bool(unit_diagonal, fn, "unit_diagonal")
    as_bool(overwrite_b, fn, "overwrite_b")
    if as_bool(check_finite, fn, "check_finite"):
        _check_finite(fn, ("a", "b"), (a, b))
    if not unit:
        _check_diagonal(fn, a, "a")
    a, b = _cast((a, b), dtype)
    if unit:  # the diagonal is not read: it is not differentiated either
        eye = np.eye(a.shape[-1], dtype=dtype)
        a = a * Tensor(1 - eye) + Tensor(eye)
    x = triangular_solve(a, reshape(b, (b.shape[0], 1)) if vector else b, lower=lower,
                         adjoint=_TRANS[trans])
    return reshape(x, x.shape[:-1]) if vector else x


def cho_solve(c_and_lower, b, overwrite_b=False, check_finite=True):
    """x with A x = b, given (c, lower) = scipy.linalg.cho_factor(A): A = L L^T with L the
    lower triangle of c (lower=True) or A = U^T U with U its upper triangle.

    c: (..., n, n); b: (n,) or (..., n, k); output b's shape (batch broadcast).
    Differentiable in c (its triangle) and b.
    """
    fn = "vj.scipy.linalg.cho_solve"
    if not isinstance(c_and_lower, (tuple, list)) or len(c_and_lower) != 2:
        raise TypeError(f"{fn}: c_and_lower must be the pair (c, lower) that cho_factor "
                        f"returns, got {type(c_and_lower).__name__}")
    c, lower = c_and_lower
    lower = as_bool(lower, fn, "c_and_lower[1] (lower)")
    (c, b), dtype = _operands(fn, ("c_and_lower[0] (c)", "b"), (c, b), ("square", "rhs"))
    vector = _rhs_as_matrix(fn, c, b)
    as_bool(overwrite_b, fn, "overwrite_b")
    if as_bool(check_finite, fn, "check_finite"):
        _check_finite(fn, ("c_and_lower[0] (c)", "b"), (c, b))
    _check_diagonal(fn, c, "c_and_lower[0] (c)")
    c, b = _cast((c, b), dtype)
    rhs = reshape(b, (b.shape[0], 1)) if vector else b
    # L L^T x = b: L y = b, L^T x = y;  U^T U x = b: U^T y = b, U x = y
    y = triangular_solve(c, rhs, lower=lower, adjoint=not lower)
    x = triangular_solve(c, y, lower=lower, adjoint=lower)
    return reshape(x, x.shape[:-1]) if vector else x


def solve_banded(l_and_u, ab, b, overwrite_ab=False, overwrite_b=False, check_finite=True):
    """x with a x = b, a banded: (l, u) = l_and_u diagonals below and above the main one,
    given in diagonal ordered form ab[u + i - j, j] = a[i, j], shape (l + u + 1, M).

    b: (M,) or (M, K); x has b's shape. Differentiable in ab (the band; the unused corners
    of ab get a zero derivative) and b. A singular matrix raises LinAlgError, as SciPy.
    """
    fn = "vj.scipy.linalg.solve_banded"
    if (not isinstance(l_and_u, (tuple, list)) or len(l_and_u) != 2 or not all(
            isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))
            and v >= 0 for v in l_and_u)):
        raise ValueError(f"{fn}: l_and_u must be a pair (l, u) of non-negative ints, the "
                         f"numbers of lower and upper diagonals, got {l_and_u!r}")
    lower, upper = int(l_and_u[0]), int(l_and_u[1])
    (ab, b), dtype = _operands(fn, ("ab", "b"), (ab, b), ("matrix", "rhs"))
    if ab.ndim != 2 or b.ndim > 2:
        raise ValueError(f"{fn}: ab must be 2-D and b 1-D or 2-D (as in SciPy), got ab of "
                         f"shape {ab.shape} and b of shape {b.shape}")
    if ab.shape[0] != lower + upper + 1:
        raise ValueError(f"{fn}: ab must have l + u + 1 = {lower + upper + 1} rows for "
                         f"l_and_u = {(lower, upper)}, got shape {ab.shape}")
    if b.shape[0] != ab.shape[1]:
        raise ValueError(f"{fn}: b has {b.shape[0]} rows, it must have one per column of "
                         f"ab (shape {ab.shape})")
    as_bool(overwrite_ab, fn, "overwrite_ab")
    as_bool(overwrite_b, fn, "overwrite_b")
    if as_bool(check_finite, fn, "check_finite"):
        _check_finite(fn, ("ab", "b"), (ab, b))
    ab, b = _cast((ab, b), dtype)
    vector = b.ndim == 1
    x = apply(SolveBanded, ab, reshape(b, (b.shape[0], 1)) if vector else b,
              lower=lower, upper=upper)
    return reshape(x, x.shape[:-1]) if vector else x


def expm(A):
    """The matrix exponential of each matrix: (..., n, n) -> (..., n, n)."""
    (a,), dtype = _operands("vj.scipy.linalg.expm", ("A",), (A,), ("square",),
                            complex_ok=True)
    return apply(MatrixExponential, *_cast((a,), dtype))


def sqrtm(A, disp=True, blocksize=64):
    """The principal square root X of each matrix (X @ X = A): (..., n, n).

    A real A must have a real square root: ValueError where it is complex (an eigenvalue
    on the negative real axis); a complex A has its complex principal root. `blocksize` is ignored (deprecated in SciPy). disp=False returns
    (X, errest) with errest = ||X X - A||_F^2 / ||A||_F, as SciPy documents.
    """
    fn = "vj.scipy.linalg.sqrtm"
    (a,), dtype = _operands(fn, ("A",), (A,), ("square",), complex_ok=True)
    disp = as_bool(disp, fn, "disp")
    (a,) = _cast((a,), dtype)
    x = apply(MatrixSquareRoot, a)
    if disp:
        return x
    return x, norm(matmul(x, x) - a, axis=[-2, -1]) ** 2 / norm(a, axis=[-2, -1])


def solve_sylvester(a, b, q):
    """X with a X + X b = q: a (..., m, m), b (..., n, n), q (..., m, n) -> (..., m, n)
    (batch axes broadcast). Differentiable in a, b and q."""
    fn = "vj.scipy.linalg.solve_sylvester"
    tensors, dtype = _operands(fn, ("a", "b", "q"), (a, b, q), ("square", "square", "matrix"),
                               complex_ok=True)
    a, b, q = tensors
    if q.shape[-2:] != (a.shape[-1], b.shape[-1]):
        raise ValueError(f"{fn}: q must have shape (..., {a.shape[-1]}, {b.shape[-1]}) for a "
                         f"of shape {a.shape} and b of shape {b.shape}, got {q.shape}")
    broadcast_shape(fn, a.shape[:-2], b.shape[:-2], q.shape[:-2],
                    names=("a batch", "b batch", "q batch"))
    _check_finite(fn, ("a", "b", "q"), tensors)
    return apply(SolveSylvester, *_cast(tensors, dtype))
