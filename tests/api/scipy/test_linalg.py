"""vj.scipy.linalg (vecjac/_src/api/scipy/linalg.py) against scipy.linalg: values in
SciPy's conventions (1-D right-hand sides, trans, unit_diagonal, cho_factor's pair,
batches, banded storage), the derivatives of the compositions against finite
differences, and the derivative rules of the matrix-function ops against independent
formulas (scipy.linalg.expm_frechet, the Sylvester equation of sqrtm). Gradients, JVPs,
second order and pfor of the ops themselves are the registry's (samples in
vecjac/_src/ops/linalg/matrix_function.py).
"""
import numpy as np
import pytest
import scipy.linalg as sla

import vecjac as vj
from vecjac.testing import check_grads, numerical_jacobian

L = vj.scipy.linalg
RNG = np.random.default_rng(3)
A = RNG.standard_normal((4, 4)) + 4 * np.eye(4)
B4 = RNG.standard_normal((4, 2))
SPD = A @ A.T


@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("trans", [0, 1, 2, "N", "T", "C"])
@pytest.mark.parametrize("unit", [False, True])
def test_solve_triangular_matches_scipy(lower, trans, unit):
    for b in (B4, B4[:, 0]):
        got = L.solve_triangular(A, b, trans=trans, lower=lower, unit_diagonal=unit)
        expected = sla.solve_triangular(A, b, trans=trans, lower=lower, unit_diagonal=unit)
        np.testing.assert_allclose(got.numpy(), expected, rtol=1e-12)


def test_solve_triangular_batches_and_differentiates():
    a = np.stack([A, A.T + np.eye(4)])
    got = L.solve_triangular(a, B4, lower=True)
    for k in range(2):
        np.testing.assert_allclose(got.numpy()[k], sla.solve_triangular(a[k], B4, lower=True),
                                   rtol=1e-12)
    check_grads(lambda m, b: L.solve_triangular(m, b, lower=True, trans="T"), [A, B4])
    check_grads(lambda m, b: L.solve_triangular(m, b, unit_diagonal=True), [A, B4[:, 1]])
    m = vj.constant(A)
    with vj.GradientTape() as tape:  # the unread triangle and a unit diagonal: no gradient
        tape.watch(m)
        y = L.solve_triangular(m, B4, lower=True, unit_diagonal=True)
    g = tape.gradient(y, m).numpy()
    assert np.all(np.triu(g) == 0)
    with pytest.raises(np.linalg.LinAlgError, match="solve_triangular: singular"):
        L.solve_triangular(np.triu(A) - np.diag(np.diag(A)), B4)
    with pytest.raises(ValueError, match="infs or NaNs"):
        L.solve_triangular(A, np.full(4, np.nan))
    assert np.isnan(L.solve_triangular(A, np.full(4, np.nan), check_finite=False).numpy()).all()


@pytest.mark.parametrize("lower", [True, False])
def test_cho_solve_matches_scipy_and_differentiates(lower):
    c_and_lower = sla.cho_factor(SPD, lower=lower)  # the other triangle holds garbage
    for b in (B4, B4[:, 0]):
        np.testing.assert_allclose(L.cho_solve(c_and_lower, b).numpy(),
                                   sla.cho_solve(c_and_lower, b), rtol=1e-12)
    c = c_and_lower[0]
    check_grads(lambda f, b: L.cho_solve((f, lower), b), [c, B4])
    # solving with the factor of A is differentiable in A through vj.linalg.cholesky
    chol = np.linalg.cholesky(SPD)
    np.testing.assert_allclose(
        L.cho_solve((vj.linalg.cholesky(SPD), True), B4).numpy(), np.linalg.solve(SPD, B4),
        rtol=1e-12)
    check_grads(lambda f: L.cho_solve((f, True), B4), [chol])


def test_expm_matches_scipy_and_eigendecomposition():
    for a in (A / 4, 3 * A, np.zeros((3, 3)), RNG.standard_normal((2, 3, 3))):
        np.testing.assert_allclose(L.expm(a).numpy(), sla.expm(a), rtol=1e-12, atol=1e-13)
    w, q = np.linalg.eigh(SPD / 20)
    np.testing.assert_allclose(L.expm(SPD / 20).numpy(), q @ np.diag(np.exp(w)) @ q.T,
                               rtol=1e-11, atol=1e-12)
    assert L.expm(np.eye(2, dtype=np.float32)).dtype == np.float32


@pytest.mark.parametrize("scale", [0.2, 1.0, 4.0])  # small norms and scaling-and-squaring
def test_expm_derivative_is_scipys_frechet_derivative(scale):
    a, e = scale * RNG.standard_normal((4, 4)), RNG.standard_normal((4, 4))
    x = vj.constant(a)
    with vj.autodiff.ForwardAccumulator(x, vj.constant(e)) as acc:
        y = L.expm(x)
    expected = sla.expm_frechet(a, e, compute_expm=False)
    np.testing.assert_allclose(acc.jvp(y).numpy(), expected, rtol=1e-10, atol=1e-12)
    with vj.GradientTape() as tape:  # the VJP is the adjoint: <G, L(A, E)> = <L(A^T, G), E>
        tape.watch(x)
        y = L.expm(x)
    g = RNG.standard_normal((4, 4))
    vjp = tape.gradient(y, x, output_gradients=vj.constant(g)).numpy()
    np.testing.assert_allclose(np.sum(vjp * e), np.sum(g * expected), rtol=1e-10)


def test_sqrtm_matches_scipy_and_its_derivative_solves_sylvester():
    for a in (SPD, A, RNG.standard_normal((2, 3, 3)) + 3 * np.eye(3)):
        x = L.sqrtm(a).numpy()
        np.testing.assert_allclose(x, sla.sqrtm(a), rtol=1e-10)
        np.testing.assert_allclose(x @ x, a, rtol=1e-10, atol=1e-12)
    e = RNG.standard_normal((4, 4))
    t = vj.constant(A)
    with vj.autodiff.ForwardAccumulator(t, vj.constant(e)) as acc:
        x = L.sqrtm(t)
    dx = acc.jvp(x).numpy()
    np.testing.assert_allclose(x.numpy() @ dx + dx @ x.numpy(), e, rtol=1e-10, atol=1e-12)
    with pytest.raises(ValueError, match="sqrtm: A has eigenvalues on the negative real"):
        L.sqrtm(-SPD)
    with pytest.warns(DeprecationWarning):
        expected = sla.sqrtm(A, disp=False)
    got = L.sqrtm(A, disp=False)
    np.testing.assert_allclose(got[0].numpy(), expected[0], rtol=1e-10)
    np.testing.assert_allclose(got[1].numpy(), expected[1], atol=1e-12)


def test_solve_sylvester_matches_scipy_and_batches():
    b = RNG.standard_normal((3, 3)) + 3 * np.eye(3)
    q = RNG.standard_normal((4, 3))
    x = L.solve_sylvester(A, b, q).numpy()
    np.testing.assert_allclose(x, sla.solve_sylvester(A, b, q), rtol=1e-11)
    np.testing.assert_allclose(A @ x + x @ b, q, atol=1e-12)
    qs = RNG.standard_normal((2, 1, 4, 3))
    bs = np.stack([b, b.T])
    got = L.solve_sylvester(A, bs, qs).numpy()
    assert got.shape == (2, 2, 4, 3)
    for i in range(2):
        for j in range(2):
            np.testing.assert_allclose(got[i, j], sla.solve_sylvester(A, bs[j], qs[i, 0]),
                                       rtol=1e-11)
    check_grads(lambda m, n, r: L.solve_sylvester(m, n, r), [A, bs, qs])


def _banded(lower, upper, m, rng):
    """A well-conditioned band in diagonal ordered form, and its dense matrix."""
    ab = rng.uniform(-0.5, 0.5, (lower + upper + 1, m))
    ab[upper] += 3.0
    dense = np.zeros((m, m))
    for i in range(m):
        for j in range(max(0, i - lower), min(m, i + upper + 1)):
            dense[i, j] = ab[upper + i - j, j]
    return ab, dense


@pytest.mark.parametrize("lower, upper", [(0, 0), (1, 1), (2, 0), (0, 2), (2, 1)])
@pytest.mark.parametrize("m", [1, 5])
def test_solve_banded_matches_scipy_and_dense_derivatives(lower, upper, m):
    ab, dense = _banded(lower, upper, m, RNG)
    for b in (RNG.standard_normal(m), RNG.standard_normal((m, 2))):
        x = L.solve_banded((lower, upper), ab, b)
        np.testing.assert_allclose(x.numpy(), sla.solve_banded((lower, upper), ab, b),
                                   rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(dense @ x.numpy(), b, atol=1e-12)
    # the gradient of <w, x>: b_bar = A^-T w and A_bar = -b_bar x^T, on the band only
    w = RNG.standard_normal((m, 2))
    g_ab, g_b = vj.grad(lambda a, r: vj.reduce_sum(w * L.solve_banded((lower, upper), a, r)),
                        argnums=(0, 1))(ab, b)
    x = np.linalg.solve(dense, b)
    b_bar = np.linalg.solve(dense.T, w)
    a_bar = -b_bar @ x.T
    expected = np.zeros_like(ab)
    for i in range(m):
        for j in range(max(0, i - lower), min(m, i + upper + 1)):
            expected[upper + i - j, j] = a_bar[i, j]
    np.testing.assert_allclose(g_b.numpy(), b_bar, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(g_ab.numpy(), expected, rtol=1e-10, atol=1e-12)
    check_grads(lambda a, r: L.solve_banded((lower, upper), a, r), [ab, b[:, 0]], order=2)


def test_solve_banded_jacobians_and_errors():
    ab, dense = _banded(1, 2, 6, RNG)
    b = RNG.standard_normal(6)
    inverse = np.linalg.inv(dense)
    solve = lambda r: L.solve_banded((1, 2), ab, r)  # noqa: E731
    for mode in ("fwd", "rev"):  # pfor over the seeds, both ways: the inverse
        np.testing.assert_allclose(vj.jacobian(solve, mode=mode)(b).numpy(), inverse,
                                   rtol=1e-10, atol=1e-12)
    jac = vj.jacobian(lambda a: L.solve_banded((1, 2), a, b))(ab).numpy()
    np.testing.assert_allclose(jac, numerical_jacobian(
        lambda a: sla.solve_banded((1, 2), a, b), ab), rtol=1e-6, atol=1e-8)
    singular = ab.copy()
    singular[:, 2] = 0.0
    with pytest.raises(np.linalg.LinAlgError):
        L.solve_banded((1, 2), singular, b)
    with pytest.raises(ValueError, match="l_and_u"):
        L.solve_banded((1, 2, 3), ab, b)
    with pytest.raises(ValueError, match="rows"):
        L.solve_banded((1, 1), ab, b)
    with pytest.raises(ValueError, match="infs or NaNs"):
        L.solve_banded((1, 2), ab, np.full(6, np.nan))
