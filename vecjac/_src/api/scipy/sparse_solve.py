"""SparseSolve: x with A x = b (A^T x = b), A sparse with a fixed pattern, differentiable.

A is given as its nonzero values (nnz,) in the CSR order of a SparsePattern, so that the
values are a Tensor like any other: they come out of colored JVPs of a residual
(vecjac/_src/api/scipy/implicit.py) and their derivatives flow. The forward factorizes
with SuperLU (scipy.sparse.linalg.splu). The gradient is again a sparse solve, with the
transpose: for x = A^-1 b and cotangent g, lambda = A^-T g gives b_bar = lambda and
A_bar[i, j] = -lambda_i x_j on the pattern (A^T x = b: A_bar[i, j] = -x_i lambda_j).
The forward rule is the one derived from that VJP. pfor with the matrix loop-invariant
(the cotangents or tangents of a Jacobian) factorizes once and solves every iteration's
right-hand side as the columns of one matrix.
"""
import importlib

import numpy as np

from vecjac._src.core.dispatch import apply, to_input
from vecjac._src.core.registry import Op, register
from vecjac._src.core.samples import Arg, Sample
from vecjac._src.core.tensor import Tensor
from vecjac._src.ops.array.indexing import gather
from vecjac._src.ops.array.shaping import reshape, stack
from vecjac._src.ops.array.shaping import transpose as permute
from vecjac._src.ops.reduce.reductions import reduce_sum

__all__ = ["SparsePattern", "sparse_solve"]


def _sparse():
    # scipy.sparse.linalg: imported on first use, never with vecjac
    return importlib.import_module("scipy.sparse.linalg")


class SparsePattern:
    """The structure of a square sparse matrix (CSR indices and indptr, sorted), compared
    by identity: an attr of SparseSolve. `matrix(values)` is the scipy.sparse.csc of
    values on it."""

    def __init__(self, pattern):
        csr = importlib.import_module("scipy.sparse").csr_array(pattern)
        csr.sort_indices()
        m, n = csr.shape
        if m != n:
            raise ValueError(f"SparsePattern: the matrix must be square, got shape {csr.shape}")
        self.n, self.nnz, self.shape = n, csr.nnz, (n, n)
        self.indices = csr.indices.astype(np.int64)
        self.indptr = csr.indptr.astype(np.int64)
        self.rows = np.repeat(np.arange(n, dtype=np.int64), np.diff(self.indptr))
        self._last = None  # (values' bytes, SuperLU or the error): the last factorization

    def matrix(self, values):
        csr = importlib.import_module("scipy.sparse").csr_array(
            (np.asarray(values, np.float64), self.indices, self.indptr), shape=(self.n, self.n))
        return csr.tocsc()

    def factor(self, values):
        """SuperLU of the matrix, or ValueError if it is singular. The last one is kept,
        keyed by the values' bytes: the condition estimate, the solve and the adjoint
        solve at one point factorize once."""
        key = np.ascontiguousarray(values, np.float64).tobytes()
        if self._last is None or self._last[0] != key:
            try:
                lu = _sparse().splu(self.matrix(values))
            except RuntimeError as err:  # SuperLU: "Factor is exactly singular"
                lu = ValueError(f"sparse_solve: the matrix is singular ({err})")
            self._last = (key, lu)
        if isinstance(self._last[1], ValueError):
            raise self._last[1]
        return self._last[1]

    def rcond(self, values):
        """A reciprocal 1-norm condition estimate (0 for an exactly singular matrix)."""
        linalg = _sparse()
        a = self.matrix(values)
        if not np.all(np.isfinite(a.data)):
            return 0.0
        try:
            lu = self.factor(values)
        except ValueError:
            return 0.0
        inverse = linalg.LinearOperator((self.n, self.n), matvec=lu.solve,
                                        rmatvec=lambda v: lu.solve(v, trans="T"),
                                        dtype=np.float64)
        norm = linalg.onenormest(a)
        inverse_norm = linalg.onenormest(inverse)
        return 0.0 if norm == 0 or not np.isfinite(inverse_norm) else \
            1.0 / (norm * inverse_norm)

    def __repr__(self):
        return f"<SparsePattern {self.n} x {self.n}, nnz {self.nnz}>"


@register
class SparseSolve(Op):
    """x (n,) or (n, k) with A x = b (A^T x = b if transpose), A the values (nnz,) on
    the pattern (attr)."""
    name = "SparseSolve"
    samples = ()  # set below

    def forward(self, values, b, pattern, transpose):
        lu = pattern.factor(values)
        trans = "T" if transpose else "N"
        if b.ndim == 1:
            return lu.solve(np.asarray(b, np.float64), trans=trans)
        return lu.solve(np.ascontiguousarray(b, np.float64), trans=trans)

    def gradient(self, e, g):
        values, b = e.inputs
        x = e.outputs[0]
        pattern, trans = e.attrs["pattern"], e.attrs["transpose"]
        lam = apply(SparseSolve, values, g, pattern=pattern, transpose=not trans)
        g_values = None
        if e.needs[0]:
            rows, cols = Tensor(pattern.rows), Tensor(pattern.indices)
            left, right = (x, lam) if trans else (lam, x)
            products = -(gather(left, rows) * gather(right, cols))
            g_values = products if b.ndim == 1 else reduce_sum(products, axis=-1)
        return g_values, lam if e.needs[1] else None

    def converter(self, cx, values, b, pattern, transpose):
        trans = transpose
        stacked_values, stacked_b = cx.stacked
        if not stacked_values:  # one factorization, every iteration's rhs as columns
            n, iters = pattern.n, cx.iters
            if b.ndim == 2:  # (iters, n) -> (n, iters)
                x = apply(SparseSolve, values, permute(b, (1, 0)), pattern=pattern,
                          transpose=trans)
                return permute(x, (1, 0))
            k = b.shape[2]  # (iters, n, k) -> (n, k * iters)
            cols = reshape(permute(b, (1, 2, 0)), (n, k * iters))
            x = apply(SparseSolve, values, cols, pattern=pattern, transpose=trans)
            return permute(reshape(x, (n, k, iters)), (2, 0, 1))
        outs = [apply(SparseSolve, values[i], b[i] if stacked_b else b, pattern=pattern,
                      transpose=trans) for i in range(cx.iters)]
        return stack(outs)


def sparse_solve(pattern, values, rhs, transpose=False):
    """x with A x = rhs (A^T x = rhs if transpose), A = values (nnz,) on `pattern` (a
    SparsePattern), rhs (n,) or (n, k): differentiable in values and rhs."""
    fn = "sparse_solve"
    if not isinstance(pattern, SparsePattern):
        raise TypeError(f"{fn}: pattern must be a SparsePattern, got {type(pattern).__name__}")
    values = to_input(values, fn=fn, arg="values")
    rhs = to_input(rhs, fn=fn, arg="rhs")
    if values.shape != (pattern.nnz,):
        raise ValueError(f"{fn}: values must have shape ({pattern.nnz},) (the pattern's "
                         f"nonzeros), got {values.shape}")
    if rhs.ndim not in (1, 2) or rhs.shape[0] != pattern.n:
        raise ValueError(f"{fn}: rhs must have shape ({pattern.n},) or ({pattern.n}, k), got "
                         f"{rhs.shape}")
    return apply(SparseSolve, values, rhs, pattern=pattern, transpose=bool(transpose))


# The samples' matrix: a tridiagonal 3 x 3 pattern, made diagonally dominant from values
# in [-2, 2] (4 on the diagonal).
_SAMPLE = None


def _sample_pattern():
    global _SAMPLE
    if _SAMPLE is None:
        _SAMPLE = SparsePattern(np.eye(3, k=-1) + np.eye(3) + np.eye(3, k=1))
    return _SAMPLE


def _sample(values, rhs, transpose=False):
    shift = Tensor(4.0 * (_sample_pattern().rows == _sample_pattern().indices))
    return sparse_solve(_sample_pattern(), values * 0.5 + shift, rhs, transpose=transpose)


SparseSolve.samples = (
    Sample(_sample, Arg.float(7), Arg.float(3), no_f32="SuperLU factorizes in float64"),
    Sample(_sample, Arg.float(7), Arg.float(3, "k"), transpose=True,
           no_f32="SuperLU factorizes in float64"))
