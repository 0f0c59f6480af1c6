"""The adjugate adj(a) (a @ adj(a) = det(a) I): the derivative of the determinant,
d det(a) = tr(adj(a) da), for every square matrix, singular ones included.

det(a) * inv(a) is the adjugate only where a is invertible, and loses all accuracy near a
singular matrix (a huge inverse times a tiny determinant). From the SVD a = u diag(s) v^T
instead, with c = det(u) det(v) = +-1 and pi_i the product of the singular values but
s_i: adj(a) = c v diag(pi) u^T, exact whatever the rank. Its derivative needs no
division either: with P = u^T da v and R_ij the product of the singular values but s_i
and s_j (R_ii = pi_i),
    d adj(a) = c v M u^T,   M_ij = -R_ij P_ij (i != j),   M_ii = sum_{k != i} R_ik P_kk
(the 1 / (s_j^2 - s_i^2) terms of the SVD's derivative cancel), and the gradient is its
transpose: ga = u N v^T with H = c v^T g u, N_ij = -R_ij H_ij (i != j), N_kk =
sum_{i != k} R_ik H_ii. The rules compute u, s, v with vj.linalg.svd, so they differentiate
again (third derivatives of det inherit the SVD's: NaN where singular values repeat).
R takes n^3 values per matrix: the determinant uses the adjugate up to Adjugate.max_size (where
singular and nearly singular matrices are common: small systems, Jacobians of maps),
det(a) inv(a) above.

Complex a = u diag(s) v^H: the same with conjugate transposes, and c = det(u) conj(det(v))
a phase (the phase of det(a) where a is invertible), no longer locally constant. With u
and v frozen at the point, adj(a + da) = c v adj(diag(s) + u^H da v) u^H exactly, so the
first derivative above holds with P = u^H da v (gradient: H = conj(c) v^H g u, ga =
u N v^H); its own derivative sees c change, so for complex a c is computed
differentiably (the SVD's rules are right for it: c, like the whole rule, is invariant
under the phases of the singular vectors). That derivative (the adjugate's second, the
determinant's third) sums terms in 1 / s_k (of c and of the vectors' phases) that cancel
only analytically: accurate for invertible a, it loses all accuracy where a complex a is
(numerically) singular. Its value and first derivative stay exact there.
"""
import numpy as np

from vecjac._src.core.dispatch import apply
from vecjac._src.core.registry import Op, register
from vecjac._src.core.samples import Arg, Sample
from vecjac._src.core.tensor import Tensor
from vecjac._src.ops.array.shaping import broadcast_to, expand_dims, reshape, stop_gradient
from vecjac._src.ops.elementwise.complex_parts import conj_if_complex
from vecjac._src.ops.elementwise.logic import where
from vecjac._src.ops.elementwise.unary import sign
from vecjac._src.ops.linalg.decomposition import svd
from vecjac._src.ops.linalg.matrix import MatrixDeterminant, diag, diag_part
from vecjac._src.ops.linalg.products import conj_transpose, matmul
from vecjac._src.ops.reduce.reductions import reduce_prod, reduce_sum
from vecjac._src.transforms.pfor.converters import elementwise
from vecjac._src.transforms.sparsity import patterns

__all__ = []


def _products_but(s):
    """R[..., i, j]: the product of the values of s (..., n) but s_i and s_j."""
    n = s.shape[-1]
    k = np.arange(n)
    skip = (k[:, None, None] == k[None, None, :]) | (k[None, :, None] == k[None, None, :])
    spread = broadcast_to(expand_dims(expand_dims(s, -2), -2),
                              s.shape[:-1] + (n, n, n))
    return reduce_prod(where(Tensor(skip), Tensor(np.ones((), s.dtype)), spread),
                           axis=-1)


def _svd_parts(a):
    """u, v, the matrix R of products, and the sign c = det(u) det(v) (..., 1, 1) (the
    phase det(u) conj(det(v)) for complex a)."""
    s, u, v = svd(a)
    if a.dtype.kind == "c":  # a phase that moves with a: differentiable
        det_sign = apply(MatrixDeterminant, u) * conj_if_complex(apply(MatrixDeterminant, v))
    else:
        # +-1, locally constant: with vecjac ops all the same (u may be a pfor loop value)
        dets = [apply(MatrixDeterminant, stop_gradient(w)) for w in (u, v)]
        det_sign = sign(dets[0] * dets[1])
    return u, v, _products_but(s), reshape(det_sign, det_sign.shape + (1, 1))


def _off_diagonal(n, dtype):
    return Tensor((1.0 - np.eye(n)).astype(dtype))


@register
class Adjugate(Op):
    """adj(a) for square a (..., n, n): the transposed cofactor matrix."""
    complex_rules = True
    max_size = 64  # the determinant's gradient uses the adjugate up to this n (n^3 values)
    pattern = patterns.batched(2, 2)
    converter = elementwise  # batched over leading axes: the loop axis is one of them
    samples = (Sample(lambda a: apply(Adjugate, a), Arg.square("n", "n")),
               Sample(lambda a: apply(Adjugate, a), Arg.square(2, 3, 3)),
               Sample(lambda a: apply(Adjugate, a), Arg.float(3, 3)))

    def forward(self, a):
        u, s, vh = np.linalg.svd(a)
        n = a.shape[-1]
        pi = np.stack([np.prod(np.delete(s, i, axis=-1), axis=-1) for i in range(n)], -1)
        d = np.linalg.det(u) * np.linalg.det(vh)
        if a.dtype.kind == "c":  # the phase det(u) det(v^H), of modulus 1
            sign = (d / np.abs(d))[..., None, None]
            u, vh = u.conj(), vh.conj()
        else:
            sign = np.sign(d)[..., None, None]
        return sign * np.matmul(np.swapaxes(vh, -1, -2) * pi[..., None, :],
                                np.swapaxes(u, -1, -2))

    def jvp(self, e, t):
        if t is None:
            return None
        u, v, r, c = _svd_parts(e.inputs[0])
        p = matmul(conj_transpose(u), matmul(t, v))
        n = r.shape[-1]
        m = -r * p * _off_diagonal(n, r.dtype) + diag(reduce_sum(
            r * expand_dims(diag_part(p), -2) * _off_diagonal(n, r.dtype), axis=-1))
        return c * matmul(v, matmul(m, conj_transpose(u)))

    def gradient(self, e, g):
        u, v, r, c = _svd_parts(e.inputs[0])
        h = conj_if_complex(c) * matmul(conj_transpose(v), matmul(g, u))
        n = r.shape[-1]
        off = _off_diagonal(n, r.dtype)
        nn = -r * h * off + diag(reduce_sum(r * expand_dims(diag_part(h), -1) * off,
                                                axis=-2))
        return matmul(u, matmul(nn, conj_transpose(v)))
