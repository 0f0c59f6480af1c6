"""Matrix decompositions and least squares (TF's tf.linalg): svd, eigh, eigvalsh, pinv, lstsq.
Batched over the leading axes like the rest of vj.linalg (the pfor rule is
`elementwise`: the loop axis is one more batch axis). float32, float64, complex64 and
complex128: for complex matrices read every ^T below as the conjugate transpose ^H (the
convention of ops/elementwise/complex_parts.py; products.conj_transpose records nothing
for real matrices, so the real rules keep their bits); singular values and eigh's
eigenvalues are real.

Gradients are the standard closed forms, written with vecjac ops (so they differentiate
and vectorize again):
- svd (reduced, A = U diag(s) V^T, k = min(m, n)), with F_ij = 1 / (s_j^2 - s_i^2):
    gA = U [diag(gs) + (F o (U^T gU - gU^T U)) S + S (F o (V^T gV - gV^T V))] V^T
         + (I - U U^T) gU S^-1 V^T + U S^-1 gV^T (I - V V^T)
  (the last two terms only for non-square A);
- eigh (A symmetric, read from its lower triangle), with F_ij = 1 / (e_j - e_i):
    G = V (diag(ge) + F o (V^T gV)) V^T, and gA the lower triangle of G + G^T with G's
    own diagonal (the exact gradient of a function of the lower triangle);
- pinv (X = A^+, constant rank): gA = -X^T g X^T + (I - A X) g^T X X^T
                                        + X^T X g^T (I - X A);
- lstsq (normal equations, MatrixSolveLs as TF): see MatrixSolveLs.

Degenerate spectra. Singular values and eigenvalues, and anything computed from them
alone, always have the right gradient and JVP (no 1 / gap term reaches them: the vectors'
cotangents are zero). Where two values tie exactly, the vectors are not unique and have
no derivative: a gradient or tangent that reaches them through such a pair is NaN, never
a silent number (that includes functions that do not depend on the basis inside the
degenerate subspace, such as u diag(s) v^T, whose derivative exists but is a 0 / 0 these
formulas cannot resolve). Near a tie the 1 / gap terms are large and lose accuracy, as in
every autodiff system. A zero singular value of a non-square matrix is a tie of the same
kind for the projection terms. With full_matrices=True on a non-square matrix the extra
columns of u (or v) are an arbitrary orthonormal complement: a gradient or tangent that
reaches them is NaN.

Complex phases (gauge). A complex singular vector pair (u_i, v_i) is unique only up to a
common phase e^{it}, an eigenvector of eigh up to its own: u and v have no derivative,
only functions invariant under these phases do (s, u diag(s) v^H, |u|^2 elementwise, the
projectors u_i u_i^H). The rules fix one phase convention (the SVD: d(u^H u)_ii =
-d(v^H v)_ii, adding i Im(u^H da v)_ii / (2 s_i) to the real formulas, NaN where s_i = 0
if used; eigh: (v^H dv)_ii = 0), in which the JVP and the gradient are adjoint; for
invariant functions both are the true derivatives, whatever phases LAPACK picks.
"""
import numpy as np

from vecjac._src.core.dispatch import apply
from vecjac._src.core.registry import Op, lib, register
from vecjac._src.core.samples import Arg, Sample
from vecjac._src.core.tensor import Tensor
from vecjac._src.ops.array.shaping import broadcast_to, concat, expand_dims
from vecjac._src.ops.elementwise.arithmetic import unbroadcast
from vecjac._src.ops.elementwise.complex_parts import Real
from vecjac._src.ops.elementwise.logic import equal, logical_and, logical_or, not_equal, where
from vecjac._src.ops.linalg.matrix import (_bool, _linalg_error, _matrix, _matrix_and_rhs,
                                           _np_adjoint, _triangle_mask, diag, diag_part, solve)
from vecjac._src.ops.linalg.products import conj_transpose, matmul, matrix_transpose
from vecjac._src.ops.reduce.reductions import reduce_any
from vecjac._src.transforms.pfor.converters import elementwise
from vecjac._src.transforms.sparsity import patterns

__all__ = ["svd", "eigh", "eigvalsh", "pinv", "lstsq"]


# -- helpers of the gradient formulas ---------------------------------------------------
def _used(*cotangents):
    """(..., 1, 1): does any of these cotangents (tangents) of vectors reach the matrix?
    Not where only the values are used: their zero cotangents keep ties harmless."""
    flags = [reduce_any(not_equal(c, 0), axis=(-2, -1), keepdims=True)
             for c in cotangents]
    return flags[0] if len(flags) == 1 else logical_or(flags[0], flags[1])


def _nan(dtype):
    return Tensor(np.array(np.nan, dtype))


def _pairwise(num, values, sign, used):
    """num[..., i, j] / (values_j + sign * values_i) off the diagonal, 0 on it. Where two
    values tie (a zero denominator) the vectors are not unique: NaN if `used`, else 0. A
    select, not a safe reciprocal (whose slope 1 / tiny at 0 wrecks second derivatives)."""
    n = num.shape[-1]
    off = 1 - np.eye(n)
    num = num * Tensor(off.astype(num.dtype))
    den = expand_dims(values, -2) + sign * expand_dims(values, -1)
    zero = equal(den, 0)
    tie = logical_and(zero, Tensor(off.astype(bool)))
    quotient = num / where(zero, 1, den)
    return where(logical_and(tie, used), _nan(num.dtype), quotient)


def _over_columns(num, s, used):
    """num / s column by column (num (..., r, k), s (..., k)); NaN where s is 0 and
    `used` (the projection terms of a rank-deficient non-square matrix)."""
    zero = equal(expand_dims(s, -2), 0)
    quotient = num / where(zero, 1, expand_dims(s, -2))
    return where(logical_and(zero, used), _nan(num.dtype), quotient)


def _over_values(num, s):
    """num / s elementwise (vectors (..., k)); NaN where s is 0 and num is not (a phase
    term of a zero singular value), 0 where both are."""
    zero = equal(s, 0)
    quotient = num / where(zero, 1, s)
    return where(logical_and(zero, not_equal(num, 0)), _nan(num.dtype), quotient)


def _nan_where_nonzero(t, shape):
    """NaN of `shape` (..., r, c) in every matrix whose `t` (..., p, q) is not all zero,
    else 0: the derivative of an arbitrary choice, honestly undefined."""
    flag = reduce_any(not_equal(t, 0), axis=(-2, -1), keepdims=True)
    nan = Tensor(np.array(np.nan, t.dtype))
    zero = Tensor(np.zeros((), t.dtype))
    return broadcast_to(where(flag, nan, zero), shape)


def _spread(shape, dtype):
    """A constant (..., m, n) with singular values 1, 2, ..., k: added to small noise it
    makes well-separated spectra for the samples."""
    m, n = shape[-2:]
    k = min(m, n)
    c = np.zeros((m, n))
    c[np.arange(k), np.arange(k)] = np.arange(1, k + 1)
    return Tensor(np.broadcast_to(c, tuple(shape)).astype(dtype))


def _noise(*shape):
    return Arg.float(*shape, lo=-0.1, hi=0.1)


# -- svd ---------------------------------------------------------------------------------
def _svd_sample(full_matrices=False):
    """s and sign-invariant functions of the vectors (u * u, v * v): finite differences
    do not see LAPACK's choice of signs."""
    def sample(x):
        s, u, v = svd(x + _spread(x.shape, x.dtype), full_matrices=full_matrices)
        return s, u * u, v * v
    return sample


def _svd_tall_full(x):
    s, u, _ = svd(x + _spread(x.shape, x.dtype), full_matrices=True)
    return s, u[..., :2] * u[..., :2]


# vectors have a free phase per vector: test_complex_linalg.py checks phase-free functions
_PHASE = "complex singular / eigen vectors carry a free phase (test_complex_linalg.py)"

@register
class Svd(Op):
    """(s, u, v) of a = u diag(s) v^H, TF's order; full_matrices as NumPy's."""
    complex_rules = True
    n_outputs = 3
    pattern = patterns.batched(2, 1, 2, 2)
    converter = elementwise  # batched over leading axes: the loop axis is one of them
    samples = (Sample(_svd_sample(), _noise("m", "n"), no_complex=_PHASE),
               Sample(_svd_sample(), _noise(2, "m", 3), no_complex=_PHASE),
               Sample(_svd_sample(full_matrices=True), _noise(2, "n", "n"), no_complex=_PHASE),
               Sample(lambda x: svd(x + _spread(x.shape, x.dtype), compute_uv=False),
                      _noise(2, "m", "n")),
               # full_matrices on a tall matrix: s and the first k columns are defined
               Sample(_svd_tall_full, _noise(3, 2), no_complex=_PHASE))

    def forward(self, a, full_matrices):
        try:
            u, s, vh = np.linalg.svd(a, full_matrices=full_matrices)
        except np.linalg.LinAlgError:
            raise _linalg_error("svd", "the SVD did not converge (NaN or Inf in the "
                                "tensor?)") from None
        return s, u, np.ascontiguousarray(_np_adjoint(vh))

    def gradient(self, e, gs, gu, gv):
        a = e.inputs[0]
        s, u, v = e.outputs
        m, n = a.shape[-2:]
        k = min(m, n)
        extra = None
        if e.attrs["full_matrices"] and m != n:  # the complement columns: undefined
            tall = m > n
            g_extra = (gu if tall else gv)[..., k:]
            extra = _nan_where_nonzero(g_extra, a.shape)
            u, gu = (u[..., :k], gu[..., :k]) if tall else (u, gu)
            v, gv = (v, gv) if tall else (v[..., :k], gv[..., :k])
        ut, vt = conj_transpose(u), conj_transpose(v)
        used = _used(gu, gv)
        utgu, vtgv = matmul(ut, gu), matmul(vt, gv)
        x, y = utgu - conj_transpose(utgu), vtgv - conj_transpose(vtgv)
        # F o X S + S (F o Y), F_ij = 1 / (s_j^2 - s_i^2), split over s_j - s_i and
        # s_j + s_i: a quotient is then 0 / 0 only where two values tie
        middle = (diag(gs) + 0.5 * _pairwise(x + y, s, -1, used)
                  + 0.5 * _pairwise(x - y, s, 1, used))
        if a.dtype.kind == "c":  # the phase term: i Im(u^H gu - v^H gv)_ii / (2 s_i)
            middle = middle + diag(_over_values(0.5 * diag_part(x - y), 2 * s))
        ga = matmul(u, matmul(middle, vt))
        if m > k:
            ga = ga + matmul(_over_columns(gu - matmul(u, utgu), s, used), vt)
        if n > k:
            ga = ga + matmul(u, conj_transpose(_over_columns(gv - matmul(v, vtgv), s,
                                                             used)))
        return ga if extra is None else ga + extra

    def jvp(self, e, t):
        if t is None:
            return None
        a = e.inputs[0]
        s, u, v = e.outputs
        m, n = a.shape[-2:]
        k = min(m, n)
        cut = e.attrs["full_matrices"] and m != n
        uk, vk = (u[..., :k], v[..., :k]) if cut else (u, v)
        dp = matmul(conj_transpose(uk), matmul(t, vk))
        ds = diag_part(dp)
        used = _used(t)
        sym, skew = (dp + conj_transpose(dp)) * 0.5, (dp - conj_transpose(dp)) * 0.5
        along, across = _pairwise(sym, s, -1, used), _pairwise(skew, s, 1, used)
        if dp.dtype.kind == "c":  # s is real; the phases' share: i Im(dp_ii) / (2 s_i)
            ds = apply(Real, ds)
            across = across + diag(_over_values(diag_part(skew), 2 * s))
        du, dv = matmul(uk, along + across), matmul(vk, along - across)
        if m > k:
            du = du + _over_columns(matmul(t, vk) - matmul(uk, dp), s, used)
        if n > k:
            dv = dv + _over_columns(matmul(conj_transpose(t), uk)
                                    - matmul(vk, conj_transpose(dp)), s, used)
        if cut:
            if m > n:
                du = concat([du, _nan_where_nonzero(t, u.shape[:-1] + (m - k,))], -1)
            else:
                dv = concat([dv, _nan_where_nonzero(t, v.shape[:-1] + (n - k,))], -1)
        return ds, du, dv


def svd(tensor, full_matrices=False, compute_uv=True, name=None):
    """Singular value decomposition of each matrix, in TF's order and form:
    `s, u, v = svd(a)` with a = u @ diag(s) @ v^H (v, not NumPy's vh; v^T for real a).

    tensor: (..., m, n), k = min(m, n). s: (..., k), descending. u: (..., m, k) and v:
    (..., n, k), or (..., m, m) and (..., n, n) with full_matrices. compute_uv=False
    returns s alone. Differentiable (see the module docstring for repeated singular
    values; for complex a, only of functions invariant under the phases of the singular
    vector pairs). s is real. Example: `s = vj.linalg.svd(a, compute_uv=False)` (the
    spectral norm is s[..., 0]).
    """
    a = _matrix(tensor, "svd", "tensor", square=False)
    full = _bool(full_matrices, "svd", "full_matrices")
    uv = _bool(compute_uv, "svd", "compute_uv")
    s, u, v = apply(Svd, a, full_matrices=full and uv)
    return (s, u, v) if uv else s


# -- eigh --------------------------------------------------------------------------------
def _symmetric_spread(x):
    n = x.shape[-1]
    return Tensor(np.broadcast_to(np.diag(np.arange(1.0, n + 1)), x.shape).astype(x.dtype))


def _eigh_sample(x):
    e, v = eigh(x + _symmetric_spread(x))
    return e, v * v  # invariant under the sign of each eigenvector (LAPACK's choice)


@register
class SelfAdjointEigV2(Op):
    """(e, v) of a symmetric (Hermitian) matrix given by its lower triangle; e ascending
    and real."""
    complex_rules = True
    pattern = patterns.batched(2, 1, 2)
    n_outputs = 2
    converter = elementwise
    # v * v: invariant under the sign of each eigenvector (LAPACK's choice)
    samples = (Sample(_eigh_sample, _noise("n", "n"), no_complex=_PHASE),
               Sample(_eigh_sample, _noise(2, 3, 3), no_complex=_PHASE),
               Sample(lambda x: eigvalsh(x + _symmetric_spread(x)), _noise(2, "n", "n")))

    def forward(self, a):
        try:
            e, v = np.linalg.eigh(a, UPLO="L")
        except np.linalg.LinAlgError:
            raise _linalg_error("eigh", "the eigenvalues did not converge (NaN or Inf in "
                                "the tensor?)") from None
        return e, v

    def gradient(self, e, ge, gv):
        w, v = e.outputs
        p = matmul(conj_transpose(v), gv)
        # only the antisymmetric (anti-Hermitian) part of V^H gV survives the
        # symmetrization
        middle = diag(ge) + 0.5 * _pairwise(p - conj_transpose(p), w, -1, _used(gv))
        g = matmul(v, matmul(middle, conj_transpose(v)))
        n = g.shape[-1]
        # the adjoint of reading a Hermitian matrix from the lower triangle (the
        # diagonal's real part): (G + G^H) o (lower triangle, half diagonal)
        return (g + conj_transpose(g)) * _triangle_mask(n, True, g.dtype, 0.5)

    def jvp(self, e, t):
        if t is None:
            return None
        w, v = e.outputs
        n = t.shape[-1]
        if t.dtype.kind == "c":  # the Hermitian matrix of the lower triangle, Re diagonal
            half = t * _triangle_mask(n, True, t.dtype, 0.5)
            sym = half + conj_transpose(half)
        else:
            strict = t * _triangle_mask(n, True, t.dtype, 0.0)
            sym = t * _triangle_mask(n, True, t.dtype, 1.0) + matrix_transpose(strict)
        dp = matmul(conj_transpose(v), matmul(sym, v))
        de = apply(Real, diag_part(dp)) if dp.dtype.kind == "c" else diag_part(dp)
        return de, matmul(v, _pairwise(dp, w, -1, _used(t)))


def eigh(tensor, name=None):
    """Eigen-decomposition of symmetric (Hermitian) matrices: `e, v = eigh(a)` with
    a = v @ diag(e) @ v^H, e ascending (TF's and NumPy's order) and real.

    Only the lower triangle of `tensor` (..., n, n) is read (as TF; of the diagonal its
    real part); its gradient is that of the lower triangle. e: (..., n), v: (..., n, n),
    columns the eigenvectors (complex ones up to a phase each: only functions invariant
    under those phases have derivatives, see the module docstring).
    """
    return apply(SelfAdjointEigV2, _matrix(tensor, "eigh", "tensor"))


def eigvalsh(tensor, name=None):
    """Eigenvalues of symmetric (Hermitian) matrices (lower triangle read), ascending and
    real: (..., n)."""
    return apply(SelfAdjointEigV2, _matrix(tensor, "eigvalsh", "tensor"))[0]


# -- pinv --------------------------------------------------------------------------------
def _low_rank(b, c):
    return pinv(matmul(b, c))


@register
class MatrixPinv(Op):
    """Moore-Penrose pseudo-inverse; singular values <= rcond * max(s) count as zero."""
    complex_rules = True
    pattern = patterns.batched(2, 2)
    converter = elementwise
    samples = (Sample(lambda x: pinv(x + _spread(x.shape, x.dtype)), _noise("m", "n")),
               Sample(lambda x: pinv(x + _spread(x.shape, x.dtype)), _noise(2, 3, "n")),
               # rank 1 (3 x n): the constant-rank formula, with the cut-off at work
               Sample(_low_rank, Arg.float(3, 1, lo=0.5, hi=2.0),
                      Arg.float(1, "n", lo=0.5, hi=2.0)),
               Sample(lambda a, b: lstsq(a + _spread(a.shape, a.dtype), b, fast=False),
                      _noise(3, "n"), Arg.float(3, 2)))

    def forward(self, a, rcond):
        try:
            return np.linalg.pinv(a, rcond=rcond)
        except np.linalg.LinAlgError:
            raise _linalg_error("pinv", "the SVD did not converge (NaN or Inf in a?)") \
                from None

    def gradient(self, e, g):
        a, x = e.inputs[0], e.outputs[0]
        xt, gt = conj_transpose(x), conj_transpose(g)
        left = gt - matmul(a, matmul(x, gt))      # (I - A X) g^T
        right = gt - matmul(matmul(gt, x), a)     # g^T (I - X A)
        return (-matmul(xt, matmul(g, xt)) + matmul(left, matmul(x, xt))
                + matmul(matmul(xt, x), right))

    def jvp(self, e, t):
        if t is None:
            return None
        a, x = e.inputs[0], e.outputs[0]
        xt, tt = conj_transpose(x), conj_transpose(t)
        return (-matmul(x, matmul(t, x))
                + matmul(matmul(x, xt), tt - matmul(matmul(tt, a), x))
                + matmul(tt - matmul(x, matmul(a, tt)), matmul(xt, x)))


def _rcond(rcond, a, fn):
    if rcond is None:  # TF's default: 10 * max(m, n) * eps
        return float(10 * max(a.shape[-2:]) * np.finfo(a.dtype).eps)
    if isinstance(rcond, (bool, np.bool_)) or not isinstance(rcond, (int, float, np.number)):
        raise TypeError(f"{fn}: rcond must be None or a non-negative float, got {rcond!r}")
    if not rcond >= 0:
        raise ValueError(f"{fn}: rcond must be non-negative, got {rcond!r}")
    return float(rcond)


def pinv(a, rcond=None, validate_args=False, name=None):
    """Moore-Penrose pseudo-inverse of each matrix (TF's tf.linalg.pinv).

    a: (..., m, n) -> (..., n, m). Singular values at most rcond * (largest) count as
    zero; rcond=None is 10 * max(m, n) * eps of a's dtype. Differentiable where the
    rank does not change (the usual case).
    """
    x = _matrix(a, "pinv", "a", square=False)
    return apply(MatrixPinv, x, rcond=_rcond(rcond, x, "pinv"))


# -- lstsq -------------------------------------------------------------------------------
@register
class MatrixSolveLs(Op):
    """x minimizing |a x - b|^2 + l2 |x|^2 by the normal equations (full rank):
    x = (a^H a + l2 I)^-1 a^H b for m >= n, a^H (a a^H + l2 I)^-1 b for m < n."""
    complex_rules = True
    pattern = patterns.batched(2, 2, 2)
    converter = elementwise
    samples = (Sample(lambda a, b: lstsq(a + _spread(a.shape, a.dtype), b),
                      _noise("m", "n"), Arg.float("m", 2)),
               Sample(lambda a, b: lstsq(a + _spread(a.shape, a.dtype), b, 0.5),
                      _noise(2, "m", 3), Arg.float("m", "k")),
               Sample(lambda a, b: lstsq(a + _spread(a.shape, a.dtype), b, 0.25, fast=False),
                      _noise(3, "n"), Arg.float(3, 1)))

    def forward(self, a, b, l2):
        m, n = a.shape[-2:]
        at = _np_adjoint(a)
        gram = (at @ a if m >= n else a @ at) + l2 * np.eye(min(m, n), dtype=a.dtype)
        # full rank, numerically: a Cholesky factor without tiny pivots (as TF, which
        # solves by Cholesky); otherwise the normal equations give noise
        if gram.size and not self._full_rank(gram):
            raise _linalg_error("lstsq", "matrix is rank deficient (a^T a is singular); "
                                "use fast=False or l2_regularizer > 0")
        return np.linalg.solve(gram, at @ b) if m >= n else at @ np.linalg.solve(gram, b)

    @staticmethod
    def _full_rank(gram):
        try:
            pivots = np.diagonal(np.linalg.cholesky(gram), axis1=-2, axis2=-1) ** 2
        except np.linalg.LinAlgError:
            return False
        scale = np.diagonal(gram, axis1=-2, axis2=-1).max(axis=-1, keepdims=True)
        return bool(np.all(pivots > 10 * gram.shape[-1] * np.finfo(gram.dtype).eps * scale))

    def _gram(self, a, l2):
        m, n = a.shape[-2:]
        at = conj_transpose(a)
        eye = Tensor(np.eye(min(m, n), dtype=a.dtype) * l2)
        return (matmul(at, a) if m >= n else matmul(a, at)) + eye

    def gradient(self, e, g):
        a, b = e.inputs
        x = e.outputs[0]
        gram = self._gram(a, e.attrs["l2"])
        m, n = a.shape[-2:]
        if m >= n:  # x = G^-1 a^T b, r = b - a x: ga = r w^T - a w x^T, gb = a w
            w = solve(gram, g)
            aw = matmul(a, w)
            ga = matmul(b - matmul(a, x), conj_transpose(w)) - matmul(aw, conj_transpose(x))
            gb = aw
        else:  # x = a^T y, y = H^-1 b: ga = y g^T - z x^T - y z^T a, gb = z = H^-1 a g
            y = solve(gram, b)
            z = solve(gram, matmul(a, g))
            ga = (matmul(y, conj_transpose(g)) - matmul(z, conj_transpose(x))
                  - matmul(y, matmul(conj_transpose(z), a)))
            gb = z
        return (unbroadcast(ga, a.shape) if e.needs[0] else None,
                unbroadcast(gb, b.shape) if e.needs[1] else None)

    def jvp(self, e, ta, tb):
        a, b = e.inputs
        x = e.outputs[0]
        gram = self._gram(a, e.attrs["l2"])
        m, n = a.shape[-2:]
        at = conj_transpose(a)
        if m >= n:  # dx = G^-1 (da^T r - a^T da x + a^T db)
            if ta is None and tb is None:
                return None
            rhs = 0
            if ta is not None:
                rhs = matmul(conj_transpose(ta), b - matmul(a, x)) - matmul(at, matmul(ta, x))
            if tb is not None:
                rhs = rhs + matmul(at, tb)
            return solve(gram, rhs)
        # dx = da^T y + a^T H^-1 (db - da x - a da^T y)
        y = solve(gram, b)
        inner, dx = 0, 0
        if ta is not None:
            inner = -matmul(ta, x) - matmul(a, matmul(conj_transpose(ta), y))
            dx = matmul(conj_transpose(ta), y)
        if tb is not None:
            inner = inner + tb
        return dx + matmul(at, solve(gram, inner))


def lstsq(matrix, rhs, l2_regularizer=0.0, fast=True, name=None):
    """Least-squares solutions of matrix @ x = rhs (TF's tf.linalg.lstsq).

    matrix: (..., m, n), rhs: (..., m, k), batch axes broadcast; output (..., n, k).
    fast=True solves the (regularized) normal equations: x minimizes
    |matrix x - rhs|^2 + l2_regularizer |x|^2 (m >= n), or is the minimum-norm solution
    a^T (a a^T + l2 I)^-1 rhs (m < n); matrix must have full rank unless l2 > 0.
    fast=False is the minimum-norm least-squares solution through the pseudo-inverse
    (any rank; with l2_regularizer > 0 the regularized problem as above).
    """
    a, b = _matrix_and_rhs(matrix, rhs, "lstsq", square=False)
    if isinstance(l2_regularizer, (bool, np.bool_)) or not isinstance(
            l2_regularizer, (int, float, np.integer, np.floating)):
        raise TypeError(f"lstsq: l2_regularizer must be a non-negative float, got "
                        f"{l2_regularizer!r}")
    if not l2_regularizer >= 0 or not np.isfinite(l2_regularizer):
        raise ValueError(f"lstsq: l2_regularizer must be a finite non-negative float, got "
                         f"{l2_regularizer!r}")
    if not _bool(fast, "lstsq", "fast") and l2_regularizer == 0:
        return matmul(apply(MatrixPinv, a, rcond=_rcond(None, a, "lstsq")), b)
    return apply(MatrixSolveLs, a, b, l2=float(l2_regularizer))


lib.publish(globals(), __all__ + ["Svd", "MatrixPinv"])
