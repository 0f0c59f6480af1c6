"""QR decomposition (TF's tf.linalg.qr), batched over leading axes; float32, float64,
complex64, complex128.

a = q @ r with q's columns orthonormal and r upper triangular (LAPACK's signs, as NumPy
and JAX). Derivatives, for a of shape (m, n), written with vecjac ops (so they
differentiate and vectorize again), all from a square or tall block (m >= n, reduced q):
- forward: with C = q^T da r^-1, split into its skew part W (strictly lower triangle of
  C minus its transpose) and the upper triangular rest U = C - W (q^T dq is skew, and
  dr r^-1 upper triangular): dr = U r, dq = da r^-1 - q U;
- reverse: with M = r gr^T - gq^T q, ga = (gq + q sym(M)) r^-T, sym(M) the symmetric
  matrix with M's lower triangle (its diagonal once);
- wide a (m < n): a = [x | y] with x square, q r_x = x and r = [r_x | q^T y]: the square
  rule on x, with q^T y's own derivatives added.
Complex a: every ^T above is ^H (products.conj_transpose; nothing recorded for real
matrices). LAPACK's complex QR (as NumPy's) makes r's diagonal real, which leaves q and r
locally unique (no phase freedom): q^H dq is anti-Hermitian with an imaginary diagonal,
so W gains i Im(C)_ii on its diagonal, and dually sym(M) takes Re(M)_ii on its diagonal;
both derivatives are the true ones of q and r.
The complete factorization of a tall matrix (full_matrices=True, m > n) has columns of q
that are an arbitrary orthonormal complement: its derivatives are undefined and raise
NotImplementedError, as TF. A singular a (a zero on r's diagonal) has no derivative of q:
the solves with r give inf / NaN, never a silent number.
"""
import numpy as np

from vecjac._src.core.dispatch import apply
from vecjac._src.core.registry import Op, register
from vecjac._src.core.samples import Arg, Sample
from vecjac._src.core.tensor import Tensor
from vecjac._src.ops.array.shaping import concat
from vecjac._src.ops.elementwise.complex_parts import Conj
from vecjac._src.ops.linalg.matrix import (_bool, _matrix, _triangle_mask, diag, diag_part,
                                           triangular_solve)
from vecjac._src.ops.linalg.products import conj_transpose, matmul, matrix_transpose
from vecjac._src.transforms.pfor.converters import elementwise
from vecjac._src.transforms.sparsity import patterns

__all__ = ["qr"]


def _times_r_inverse(b, r):
    """b r^-1 for upper triangular r: (r^-H b^H)^H."""
    return conj_transpose(triangular_solve(r, conj_transpose(b), lower=False,
                                           adjoint=True))


def _times_r_inverse_t(b, r):
    """b r^-H for upper triangular r: (r^-1 b^H)^H."""
    return conj_transpose(triangular_solve(r, conj_transpose(b), lower=False))


def _diagonal_part(x, real):
    """diag(Re x_ii) (real=True) or diag(i Im x_ii) of complex matrices x, in x's dtype."""
    d = diag_part(x)
    c = apply(Conj, d)
    return diag(((d + c) if real else (d - c)) * 0.5)


def _square_jvp(q, r, t):
    """(dq, dr) of the reduced QR of a square or tall matrix along t."""
    k = r.shape[-1]
    t_rinv = _times_r_inverse(t, r)
    c = matmul(conj_transpose(q), t_rinv)
    low = c * _triangle_mask(k, True, c.dtype, diagonal=0.0)
    upper = c - (low - conj_transpose(low))
    if c.dtype.kind == "c":  # q^H dq's diagonal: i Im(C)_ii (r's diagonal stays real)
        upper = upper - _diagonal_part(c, real=False)
    return t_rinv - matmul(q, upper), matmul(upper, r)


def _square_gradient(q, r, gq, gr):
    """The cotangent of a square or tall matrix from those of its reduced q and r."""
    k = r.shape[-1]
    m = matmul(r, conj_transpose(gr)) - matmul(conj_transpose(gq), q)
    low = m * _triangle_mask(k, True, m.dtype, diagonal=0.0)
    if m.dtype.kind == "c":
        sym = low + conj_transpose(low) + _diagonal_part(m, real=True)
    else:
        sym = low + matrix_transpose(low) + m * Tensor(np.eye(k, dtype=m.dtype))
    return _times_r_inverse_t(gq + matmul(q, sym), r)


def _undefined_complement(e):
    m, n = e.inputs[0].shape[-2:]
    if e.attrs["full_matrices"] and m > n:
        raise NotImplementedError(
            "qr: the derivative of the complete factorization of a tall matrix "
            f"(full_matrices=True, shape {e.inputs[0].shape}) is undefined: q's last "
            f"{m - n} columns are an arbitrary orthonormal complement; use "
            "full_matrices=False")


def _noise(*shape):
    return Arg.float(*shape, lo=-0.1, hi=0.1)


def _diagonal(x):
    """A constant with 1, 2, ... on the diagonal: added to small noise in the samples, it
    keeps r's diagonal far from 0 (and LAPACK's signs constant under finite differences)."""
    shape, dtype = x.shape, x.dtype
    m, n = shape[-2:]
    c = np.zeros((m, n))
    k = min(m, n)
    c[np.arange(k), np.arange(k)] = np.arange(1, k + 1)
    return Tensor(np.broadcast_to(c, tuple(shape)).astype(dtype))


@register
class Qr(Op):
    """(q, r) with a = q r (TF's tf.linalg.qr); full_matrices as TF's."""
    complex_rules = True
    n_outputs = 2
    pattern = patterns.batched(2, 2, 2)
    converter = elementwise  # batched over leading axes: the loop axis is one of them
    samples = (Sample(lambda x: qr(x + _diagonal(x)), _noise(4, 3)),          # tall
               Sample(lambda x: qr(x + _diagonal(x)), _noise(2, "n", "n")),    # batched
               Sample(lambda x: qr(x + _diagonal(x), full_matrices=True), _noise(3, 3)),
               Sample(lambda x: qr(x + _diagonal(x)), _noise(2, 5)))           # wide

    def forward(self, a, full_matrices):
        q, r = np.linalg.qr(a, mode="complete" if full_matrices else "reduced")
        return q, r

    def gradient(self, e, gq, gr):
        _undefined_complement(e)
        a = e.inputs[0]
        q, r = e.outputs
        m, n = a.shape[-2:]
        if m >= n:
            return _square_gradient(q, r, gq, gr)
        y = a[..., m:]
        gr_x, gr_y = gr[..., :m], gr[..., m:]
        gq_all = gq + matmul(y, conj_transpose(gr_y))  # r_y = q^H y
        gx = _square_gradient(q, r[..., :m], gq_all, gr_x)
        return concat([gx, matmul(q, gr_y)], axis=-1)

    def jvp(self, e, t):
        if t is None:
            return None
        _undefined_complement(e)
        a = e.inputs[0]
        q, r = e.outputs
        m, n = a.shape[-2:]
        if m >= n:
            return _square_jvp(q, r, t)
        dq, dr_x = _square_jvp(q, r[..., :m], t[..., :m])
        y = a[..., m:]
        dr_y = matmul(conj_transpose(dq), y) + matmul(conj_transpose(q), t[..., m:])
        return dq, concat([dr_x, dr_y], axis=-1)


def qr(input, full_matrices=False, name=None):
    """QR decomposition of each matrix (TF's tf.linalg.qr): `q, r = qr(a)`, a = q @ r.

    input: (..., m, n), k = min(m, n). q: (..., m, k) with orthonormal columns and r:
    (..., k, n) upper triangular (for complex input with a real diagonal, as LAPACK's); with full_matrices, q (..., m, m) and r (..., m, n).
    Differentiable in both modes (see the module docstring), but not for
    full_matrices=True on a tall matrix.

    >>> q, r = vj.linalg.qr(np.array([[3.0, 1.0], [4.0, 2.0]]))
    >>> np.allclose((q @ r).numpy(), [[3.0, 1.0], [4.0, 2.0]])
    True
    """
    a = _matrix(input, "qr", "input", square=False)
    full = _bool(full_matrices, "qr", "full_matrices")
    return apply(Qr, a, full_matrices=full)
