"""vj.linalg.svd, eigh, eigvalsh, pinv, lstsq: values against NumPy and closed forms, and
the degenerate cases the registry's samples (well-separated spectra) do not reach.

Gradients, JVPs, float32, pfor and Jacobians of generic inputs are the registry's job
(the samples of Svd, SelfAdjointEigV2, MatrixPinv, MatrixSolveLs)."""
import numpy as np
import pytest

import vecjac as vj
from vecjac.testing import check_grads, numerical_jacobian

RNG = np.random.default_rng(11)
T = vj.linalg.matrix_transpose


def _grad(f, x):
    t = vj.constant(x)
    with vj.GradientTape() as tape:
        tape.watch(t)
        y = f(t)
    return tape.gradient(y, t).numpy()


# -- values ----------------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(3, 3), (4, 2), (2, 5), (2, 3, 4)], ids=str)
@pytest.mark.parametrize("full", [False, True])
def test_svd_is_tf_order_with_numpys_values(shape, full):
    a = RNG.standard_normal(shape)
    s, u, v = vj.linalg.svd(a, full_matrices=full)
    eu, es, evh = np.linalg.svd(a, full_matrices=full)
    np.testing.assert_allclose(s.numpy(), es, rtol=1e-13)
    np.testing.assert_allclose(u.numpy(), eu, atol=1e-13)
    np.testing.assert_allclose(T(v).numpy(), evh, atol=1e-13)
    k = min(shape[-2:])
    rebuilt = (u[..., :k] * s[..., None, :]) @ T(v[..., :k])
    np.testing.assert_allclose(rebuilt.numpy(), a, atol=1e-12)
    np.testing.assert_allclose(vj.linalg.svd(a, compute_uv=False).numpy(), es, rtol=1e-13)


def test_eigh_reads_the_lower_triangle():
    a = RNG.standard_normal((2, 3, 3))
    e, v = vj.linalg.eigh(a)
    lower = np.tril(a) + np.swapaxes(np.tril(a, -1), -1, -2)
    ee, ev = np.linalg.eigh(lower)
    np.testing.assert_allclose(e.numpy(), ee, rtol=1e-13)
    np.testing.assert_allclose(np.abs(v.numpy()), np.abs(ev), atol=1e-12)
    np.testing.assert_allclose(vj.linalg.eigvalsh(a).numpy(), ee, rtol=1e-13)
    # the gradient is that of the lower triangle: zero above the diagonal
    g = _grad(lambda t: vj.reduce_sum(vj.linalg.eigvalsh(t) ** 3), a[0])
    assert np.all(np.triu(g, 1) == 0)


def test_pinv_default_cutoff_is_tfs():
    a = RNG.standard_normal((4, 3)) @ np.diag([1.0, 1.0, 1e-15]) @ RNG.standard_normal((3, 3))
    np.testing.assert_allclose(vj.linalg.pinv(a).numpy(),
                               np.linalg.pinv(a, rcond=10 * 4 * np.finfo(float).eps),
                               rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(vj.linalg.pinv(a, rcond=0.5).numpy(),
                               np.linalg.pinv(a, rcond=0.5), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("m,n", [(5, 3), (3, 3), (2, 4)])
@pytest.mark.parametrize("fast", [True, False])
def test_lstsq_solutions(m, n, fast):
    a, b = RNG.standard_normal((m, n)), RNG.standard_normal((m, 2))
    x = vj.linalg.lstsq(a, b, fast=fast).numpy()
    np.testing.assert_allclose(x, np.linalg.lstsq(a, b, rcond=None)[0], rtol=1e-9, atol=1e-10)
    lam = 0.3  # ridge: (a^T a + lam I) x = a^T b for every shape
    x = vj.linalg.lstsq(a, b, l2_regularizer=lam, fast=fast).numpy()
    np.testing.assert_allclose(a.T @ a @ x + lam * x, a.T @ b, rtol=1e-9, atol=1e-10)


def test_lstsq_fast_needs_full_rank():
    a = np.outer(RNG.standard_normal(4), RNG.standard_normal(3))
    b = RNG.standard_normal((4, 1))
    with pytest.raises(np.linalg.LinAlgError, match="lstsq: matrix is rank deficient"):
        vj.linalg.lstsq(a, b)
    x = vj.linalg.lstsq(a, b, fast=False).numpy()  # minimum norm, any rank
    np.testing.assert_allclose(x, np.linalg.lstsq(a, b, rcond=None)[0], atol=1e-10)


@pytest.mark.parametrize("call,error,match", [
    (lambda: vj.linalg.svd(np.ones(3)), ValueError, "svd: tensor must have rank >= 2"),
    (lambda: vj.linalg.eigh(np.ones((2, 3))), ValueError, "eigh: tensor must be square"),
    (lambda: vj.linalg.svd(np.full((2, 2), np.nan)), ValueError, "svd: the SVD did not"),
    (lambda: vj.linalg.pinv(np.eye(2), rcond=-1.0), ValueError, "pinv: rcond"),
    (lambda: vj.linalg.lstsq(np.eye(2), np.ones(2)), ValueError, "lstsq: rhs must have rank"),
    (lambda: vj.linalg.lstsq(np.eye(2), np.ones((3, 1))), ValueError, "lstsq: rhs has shape"),
    (lambda: vj.linalg.lstsq(np.eye(2), np.ones((2, 1)), l2_regularizer=-1.0), ValueError,
     "lstsq: l2_regularizer"),
    (lambda: vj.linalg.svd(np.eye(2), full_matrices=1), TypeError, "svd: full_matrices"),
])
def test_errors_name_function_and_argument(call, error, match):
    with pytest.raises(error, match=match):
        call()


# -- degenerate spectra --------------------------------------------------------------------
def _orthogonal(n):
    q, _ = np.linalg.qr(RNG.standard_normal((n, n)))
    return q


def _rebuilt_svd(w):
    def f(t):
        s, u, v = vj.linalg.svd(t)
        return vj.reduce_sum(((u * s[None, :]) @ T(v)) * w)
    return f


def _rebuilt_eigh(w):
    def f(t):
        e, v = vj.linalg.eigh(t)
        return vj.reduce_sum(((v * e[None, :]) @ T(v)) * w)
    return f


def test_svd_at_repeated_singular_values():
    """Functions of the singular values alone have the exact gradient even where values
    repeat (nuclear norm of 2 Q: Q); a gradient through the vectors where two values tie
    exactly is NaN (the vectors are not unique there), never a silent number."""
    q = _orthogonal(3)
    g = _grad(lambda t: vj.reduce_sum(vj.linalg.svd(t, compute_uv=False)), 2 * q)
    np.testing.assert_allclose(g, q, atol=1e-12)
    a = np.diag([2.0, 2.0, 1.0])  # LAPACK returns the tie exactly
    g = _grad(lambda t: vj.reduce_sum(vj.linalg.svd(t)[0] ** 2), a)
    np.testing.assert_allclose(g, 2 * a, atol=1e-12)
    w = RNG.standard_normal((3, 3))
    assert np.isnan(_grad(_rebuilt_svd(w), a)).any()
    # apart from ties the vectors differentiate: rebuilding gives back the weights
    np.testing.assert_allclose(_grad(_rebuilt_svd(w), np.diag([3.0, 2.0, 1.0])), w,
                               atol=1e-10)


def test_eigh_at_repeated_eigenvalues():
    q = _orthogonal(3)
    a = q @ np.diag([1.0, 1.0, 3.0]) @ q.T
    g = _grad(lambda t: vj.reduce_sum(vj.linalg.eigvalsh(t)), a)  # the trace
    np.testing.assert_allclose(g, np.eye(3), atol=1e-12)
    g = _grad(lambda t: vj.reduce_sum(vj.linalg.eigvalsh(t) ** 2), np.diag([1.0, 1.0, 3.0]))
    np.testing.assert_allclose(g, np.diag([2.0, 2.0, 6.0]), atol=1e-12)
    w = RNG.standard_normal((3, 3))
    assert np.isnan(_grad(_rebuilt_eigh(w), np.diag([1.0, 1.0, 3.0]))).any()
    # the rebuilt matrix is the symmetric one the lower triangle defines
    expected = np.tril(w + w.T, -1) + np.diag(np.diag(w))
    np.testing.assert_allclose(_grad(_rebuilt_eigh(w), np.diag([1.0, 2.0, 3.0])), expected,
                               atol=1e-10)


def test_spectral_norm_gradient_is_the_top_singular_pair():
    a = RNG.standard_normal((4, 3))
    eu, _, evh = np.linalg.svd(a)
    g = _grad(lambda t: vj.norm(t, ord=2, axis=(0, 1)), a)
    np.testing.assert_allclose(g, np.outer(eu[:, 0], evh[0]), atol=1e-12)
    check_grads(lambda t: vj.norm(t, ord=2, axis=(0, 1)), [a], order=2)


def test_pinv_gradient_matches_finite_differences_at_constant_rank():
    b, c = RNG.standard_normal((4, 2)), RNG.standard_normal((2, 3))  # rank 2 of 3

    def f(b_):
        return vj.linalg.pinv(vj.constant(b_) @ c)
    numeric = numerical_jacobian(lambda v: f(v).numpy(), b)
    x = vj.constant(b)
    with vj.GradientTape() as tape:
        tape.watch(x)
        y = vj.linalg.pinv(x @ c)
    np.testing.assert_allclose(tape.jacobian(y, x).numpy(), numeric, rtol=1e-6, atol=1e-7)
