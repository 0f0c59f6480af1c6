"""vj.scipy.optimize's solutions, differentiated by the implicit function theorem.

Expected derivatives come from central finite differences of the SciPy solver itself run
at tight tolerance on plain NumPy (never from vecjac), or from closed forms; forward and
reverse mode, second order where cheap; errors for failed solves and singular Jacobians.
"""
import pathlib
import re
import warnings

import numpy as np
import pytest
import scipy.optimize as so
from hypothesis import given, settings
from hypothesis import strategies as st

import vecjac as vj
from vecjac._src.api.scipy.solvers import SPARSE_ABOVE

opt = vj.scipy.optimize


def central(f, theta, eps=1e-6):
    """d f / d theta (f: NumPy (p,) -> NumPy (n,)) by central differences: (n, p)."""
    theta = np.asarray(theta, float)
    cols = []
    for k in range(theta.size):
        e = np.zeros_like(theta)
        e[k] = eps
        cols.append((f(theta + e) - f(theta - e)) / (2 * eps))
    return np.stack(cols, axis=-1)


A = np.array([[4.0, 1.0, 0.5], [0.3, 3.0, -1.0], [0.2, -0.4, 5.0]])


def F(x, theta, scale):
    return vj.linalg.matvec(A, x) + scale * np.tanh(x) - theta


def F_numpy(x, theta, scale):
    return A @ x + scale * np.tanh(x) - theta


THETA = np.array([0.7, -1.2, 2.0])


def scipy_root(theta):
    return so.root(F_numpy, np.zeros(3), args=(theta, 1.5), tol=1e-14).x


@pytest.mark.parametrize("method", ["hybr", "lm", "krylov"])
def test_root_derivatives_match_finite_differences_of_scipy(method):
    expected = central(scipy_root, THETA)
    options = {"fatol": 1e-13} if method == "krylov" else None
    tol = None if method == "krylov" else 1e-13

    def solve(theta):
        return opt.root(F, np.zeros(3), args=(theta, 1.5), method=method, tol=tol,
                        options=options).x
    res = opt.root(F, np.zeros(3), args=(THETA, 1.5), method=method, tol=tol, options=options)
    assert isinstance(res, so.OptimizeResult) and res.success
    np.testing.assert_allclose(res.x.numpy(), scipy_root(THETA), rtol=1e-9, atol=1e-10)
    for mode in ("rev", "fwd"):
        got = vj.jacobian(solve, mode=mode)(THETA).numpy()
        np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-9)


def test_root_second_order_is_the_closed_form():
    # x^3 + x = theta: x' = 1/(3x^2 + 1), x'' = -6 x x'^3
    G = lambda x, th: x ** 3 + x - th  # noqa: E731
    theta = np.array(2.0)  # x* = 1
    for outer, inner in (("rev", "rev"), ("fwd", "rev"), ("fwd", "fwd")):
        d2 = vj.jacobian(vj.jacobian(lambda th: opt.root(G, [0.5], args=(th,), tol=1e-14).x[0],
                                     mode=inner), mode=outer)(theta)
        np.testing.assert_allclose(d2.numpy(), -6 * 0.25 ** 3, rtol=1e-8)


def test_nested_args_and_x0_gets_no_derivative():
    params = {"theta": THETA, "scale": [1.5], "label": "ignored"}

    def G(x, p):
        return F(x, p["theta"], p["scale"][0])

    def solve(x0, theta):
        return opt.root(G, x0, args=({"theta": theta, "scale": [1.5], "label": "x"},),
                        tol=1e-13).x
    dx0, dth = vj.jacobian(solve, argnums=(0, 1))(np.zeros(3), THETA)
    np.testing.assert_array_equal(dx0.numpy(), 0.0)
    np.testing.assert_allclose(dth.numpy(), central(scipy_root, THETA), rtol=1e-6)
    dscale = vj.grad(lambda s: vj.reduce_sum(opt.root(
        G, np.zeros(3), args=({"theta": THETA, "scale": [s], "label": 1},), tol=1e-13).x))(
        np.array(1.5))
    fd = central(lambda s: so.root(F_numpy, np.zeros(3), args=(THETA, s[0]), tol=1e-14).x,
                 np.array([1.5])).sum()
    np.testing.assert_allclose(dscale.numpy(), fd, rtol=1e-6)
    assert params["label"] == "ignored"


def test_sparse_root_matches_dense():
    n = 30

    def chain(x, theta):  # tridiagonal Jacobian
        left = vj.concat([vj.zeros(1, dtype=x.dtype), x[:-1]], axis=0)
        right = vj.concat([x[1:], vj.zeros(1, dtype=x.dtype)], axis=0)
        return 3.0 * x + np.tanh(x) - 0.5 * (left + right) - theta
    theta = np.linspace(-1.0, 1.0, n)
    for mode in ("rev", "fwd"):
        dense = vj.jacobian(lambda t: opt.root(chain, np.zeros(n), args=(t,), tol=1e-13).x,
                            mode=mode)(theta)
        sparse = vj.jacobian(lambda t: opt.root(chain, np.zeros(n), args=(t,), tol=1e-13,
                                                sparse=True).x, mode=mode)(theta)
        np.testing.assert_allclose(sparse.numpy(), dense.numpy(), rtol=1e-10, atol=1e-13)
    # second order through SparseSolve
    h = vj.hessian(lambda t: vj.reduce_sum(opt.root(chain, np.zeros(n), args=(t,), tol=1e-13,
                                                    sparse=True).x ** 2))(theta[:n])
    hd = vj.hessian(lambda t: vj.reduce_sum(opt.root(chain, np.zeros(n), args=(t,),
                                                     tol=1e-13).x ** 2))(theta)
    np.testing.assert_allclose(h.numpy(), hd.numpy(), rtol=1e-8, atol=1e-12)


def test_fixed_point_derivative():
    def g(x, c):
        return np.sqrt(c / (x + 10))  # SciPy's docstring example

    c = np.array([10.0, 12.0])
    got = vj.jacobian(lambda c: opt.fixed_point(g, [1.2, 1.3], args=(c,), xtol=1e-14))(c)
    fd = central(lambda c: so.fixed_point(lambda x: np.sqrt(c / (x + 10)), [1.2, 1.3],
                                          xtol=1e-14), c)
    np.testing.assert_allclose(got.numpy(), fd, rtol=1e-6)


def test_minimize_derivative_is_the_hessian_solve():
    # argmin 0.5 x^T Q x + sum cosh(x) - b^T x: d x*/d b by finite differences of SciPy
    Q = np.array([[3.0, 0.5], [0.5, 2.0]])

    def f(x, b):
        return 0.5 * vj.reduce_sum(x * vj.linalg.matvec(Q, x)) + vj.reduce_sum(np.cosh(x)) - \
            vj.reduce_sum(b * x)

    def f_np(x, b):
        return 0.5 * x @ Q @ x + np.cosh(x).sum() - b @ x, Q @ x + np.sinh(x) - b

    b = np.array([1.0, -2.0])
    # closed form: grad = Q x + sinh(x) - b = 0, so dx*/db = (Q + diag(cosh x*))^-1 at the
    # minimum (found by SciPy's root on the gradient, in NumPy)
    x = so.root(lambda x: f_np(x, b)[1], np.zeros(2), tol=1e-14).x
    fd = np.linalg.inv(Q + np.diag(np.cosh(x)))
    for method in ("BFGS", "trust-exact", "Newton-CG"):
        for mode in ("rev", "fwd"):
            # tighter, BFGS and trust-exact stop with success False (precision loss)
            tol = 1e-7 if method == "BFGS" else 1e-8
            got = vj.jacobian(lambda b: opt.minimize(f, np.zeros(2), args=(b,), method=method,
                                                     tol=tol).x, mode=mode)(b)
            np.testing.assert_allclose(got.numpy(), fd, rtol=1e-6, atol=1e-9)
    assert vj.scipy.minimize is opt.minimize and vj.scipy.root is opt.root
    assert vj.scipy.fun_and_jac is opt.fun_and_jac


def test_least_squares_derivative():
    # fit y = p0 exp(p1 t): d p* / d y by finite differences of SciPy's least_squares
    t = np.linspace(0.0, 1.0, 6)
    y = 2.0 * np.exp(-1.3 * t) + np.array([0.01, -0.02, 0.015, 0.0, -0.01, 0.02])

    def r(p, y):
        return p[0] * np.exp(p[1] * t) - y

    # expected: the implicit function theorem written out in NumPy at SciPy's solution
    # (the Hessian of 0.5 |r|^2 with its second-order term), finite differences of
    # SciPy's least_squares being limited by its termination (gradient ~1e-10)
    p = so.least_squares(lambda p: p[0] * np.exp(p[1] * t) - y, [1.0, 0.0], xtol=1e-15,
                         ftol=1e-15, gtol=1e-15, method="lm").x
    e = np.exp(p[1] * t)
    res = p[0] * e - y
    J = np.stack([e, p[0] * t * e], axis=1)
    cross = (res * t * e).sum()
    H = J.T @ J + np.array([[0.0, cross], [cross, (res * p[0] * t * t * e).sum()]])
    fd = np.linalg.solve(H, J.T)
    for mode in ("rev", "fwd"):
        got = vj.jacobian(lambda y: opt.least_squares(r, [1.0, 0.0], args=(y,), xtol=1e-15,
                                                      ftol=1e-15, gtol=1e-15).x, mode=mode)(y)
        np.testing.assert_allclose(got.numpy(), fd, rtol=1e-6, atol=1e-9)


def test_minimize_and_least_squares_check_the_objective_not_its_gradient():
    # before solving, the closure check runs the user's function once; for minimize and
    # least_squares it must not run a backward pass (the residual J^T r or the gradient):
    # through an expensive fun (an ODE solve) that is an adjoint solve for nothing.
    # Backward passes through fun are counted: exactly the solver's own Jacobians.
    calls = []

    @vj.custom_gradient
    def counted(y):
        def backward(dy):
            calls.append(1)
            return dy
        return vj.identity(y), backward
    t = np.linspace(0.0, 1.0, 6)

    def r(p, y):
        return counted(p[0] * vj.exp(p[1] * t) - y)
    res = opt.least_squares(r, [1.0, 0.0], args=(2.0 * np.exp(-1.3 * t),))
    np.testing.assert_allclose(res.x.numpy(), [2.0, -1.3], rtol=1e-6)
    assert len(calls) == res.njev
    calls.clear()
    res = opt.minimize(lambda x, b: counted(vj.reduce_sum((x - b) ** 2)), np.zeros(2),
                       args=(np.ones(2),), method="BFGS")
    assert len(calls) == res.njev
    # the check itself still runs: a closure over a watched value raises
    b = vj.constant(np.ones(2))
    with vj.GradientTape() as tape:
        tape.watch(b)
        with pytest.raises(ValueError, match="pass it through args"):
            opt.minimize(lambda x: vj.reduce_sum((x - b) ** 2), np.zeros(2))
        with pytest.raises(ValueError, match="pass it through args"):
            opt.least_squares(lambda x: x - b, np.zeros(2))


def test_newton_krylov_exact_jvp():
    theta = np.array([0.5, 1.0, -0.5])
    x = opt.newton_krylov(F, np.zeros(3), args=(theta, 1.5), f_tol=1e-13)
    np.testing.assert_allclose(x.numpy(), so.root(F_numpy, np.zeros(3), args=(theta, 1.5),
                                                  tol=1e-14).x, rtol=1e-10)
    got = vj.jacobian(lambda t: opt.newton_krylov(F, np.zeros(3), args=(t, 1.5),
                                                  f_tol=1e-13))(theta)
    np.testing.assert_allclose(got.numpy(), central(
        lambda t: so.root(F_numpy, np.zeros(3), args=(t, 1.5), tol=1e-14).x, theta), rtol=1e-6)
    with pytest.raises(so.NoConvergence):
        opt.newton_krylov(F, np.zeros(3), args=(theta, 1.5), maxiter=1, f_tol=1e-14)


def test_failed_solve_and_singular_jacobian_raise_on_differentiation():
    # no real root: x^2 + 1 + theta = 0 has none for theta > -1; SciPy reports failure
    G = lambda x, th: x ** 2 + 1.0 + th  # noqa: E731
    res = opt.root(G, [1.0], args=(np.array(0.5),))
    assert not res.success
    with pytest.raises(ValueError, match=r"did not converge on <lambda>.*residual norm"):
        vj.grad(lambda th: opt.root(G, [1.0], args=(th,)).x[0])(np.array(0.5))
    # a root where the Jacobian vanishes: x^2 - theta at theta = 0 (x* = 0, F'(x*) = 0)
    H = lambda x, th: x ** 3 - th  # noqa: E731
    with pytest.raises(ValueError, match=r"singular or ill-conditioned \(condition estimate"):
        vj.grad(lambda th: opt.root(H, [0.0], args=(th,)).x[0])(np.array(0.0))
    with pytest.raises(ValueError, match="jac is supplied by vecjac"):
        opt.root(H, [0.0], jac=lambda x: x)
    with pytest.raises(ValueError, match="must be 1-D"):
        opt.root(H, np.zeros((2, 2)))
    with pytest.raises(ValueError, match="bounds are active"):
        vj.grad(lambda b: opt.minimize(lambda x, b: vj.reduce_sum((x - b) ** 2), [0.5],
                                       args=(b,), bounds=[(0.0, 1.0)]).x[0])(np.array(2.0))


def test_closure_over_a_watched_value_raises():
    theta = vj.constant(THETA)
    with vj.GradientTape() as tape:
        tape.watch(theta)
        with pytest.raises(ValueError, match="pass it through args"):
            opt.root(lambda x: F(x, theta, 1.5), np.zeros(3))


@settings(max_examples=10, deadline=None)
@given(n=st.integers(1, 5), seed=st.integers(0, 2 ** 31 - 1))
def test_random_diagonally_dominant_problems(n, seed):
    # F(x, theta) = A x + tanh(x) - theta, A diagonally dominant: J = A + diag(1 - tanh^2)
    # regular, and dx*/dtheta = -J^-1 (-I) = J^-1 at the solution (closed form)
    rng = np.random.default_rng(seed)
    M = rng.uniform(-1, 1, (n, n))
    M += np.diag(np.abs(M).sum(axis=1) + 1.0)
    theta = rng.uniform(-2, 2, n)

    def G(x, th, M):
        return vj.linalg.matvec(M, x) + np.tanh(x) - th
    x = opt.root(G, np.zeros(n), args=(theta, M), tol=1e-13).x.numpy()
    expected = np.linalg.inv(M + np.diag(1 - np.tanh(x) ** 2))
    for mode in ("rev", "fwd"):
        got = vj.jacobian(lambda t: opt.root(G, np.zeros(n), args=(t, M), tol=1e-13).x,
                          mode=mode)(theta)
        np.testing.assert_allclose(got.numpy(), expected, rtol=1e-8, atol=1e-10)


def test_readme_section_runs_and_says_true():
    text = (pathlib.Path(__file__).resolve().parents[3] / "README.md").read_text()
    section = text[text.index("## Differentiable solvers"):]
    block = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    ns = {}
    exec(compile(block, "README: Differentiable solvers", "exec"), ns)
    np.testing.assert_allclose(ns["res"].x.numpy(), [1.0, 2.0], rtol=1e-10)
    np.testing.assert_allclose(ns["dx"].numpy(), np.diag([0.25, 1 / 13]), rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(ns["sol"].y.numpy()[0], 2 * np.exp(-0.7 * np.array([0.5, 1.0])),
                               rtol=1e-8)
    np.testing.assert_allclose(ns["dk"].numpy(), -2 * np.exp(-0.7), rtol=1e-7)


@pytest.mark.parametrize("jit", [True, False])
def test_newton_krylov_jit_and_eager_solve_the_same_problem(jit):
    # Bratu 1-D, -u'' = exp(u) discretized: the reference is SciPy's own root (hybr) on NumPy
    n, lam = 40, 1.0
    h2 = (n + 1) ** 2

    def G(u, lam):
        z = np.concatenate([np.zeros(1), u, np.zeros(1)])
        return (z[:-2] - 2 * u + z[2:]) * h2 + lam * np.exp(u)
    G_np = lambda u: G(u, lam)  # noqa: E731
    expected = so.root(G_np, np.zeros(n), tol=1e-14).x
    x = opt.newton_krylov(G, np.zeros(n), args=(lam,), f_tol=1e-11, jit=jit)
    np.testing.assert_allclose(x.numpy(), expected, rtol=1e-9)
    res = opt.root(G, np.zeros(n), args=(lam,), method="krylov",
                   options={"fatol": 1e-11, "jit": jit})
    np.testing.assert_allclose(np.asarray(res.x), expected, rtol=1e-9)


def test_newton_krylov_jit_follows_python_branches_on_values():
    # F branches in Python on a value (a guard of the trace). From 0 the first Newton step
    # lands on 2 (branch x - 2), where F switches to x - 3: the only root is 3. A trace
    # that kept the first branch would stop at 2 with a residual it believes is 0.
    def F(x):
        if float(x[0]) > 1.0:
            return x - 3.0
        return x - 2.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", vj.NotDifferentiableWarning)
        x = opt.newton_krylov(F, np.zeros(2), f_tol=1e-12)
    np.testing.assert_allclose(x.numpy(), [3.0, 3.0], rtol=1e-12)


def test_newton_krylov_exact_products_reach_a_residual_finite_differences_cannot():
    # H x = H 1, H the 7 x 7 Hilbert matrix (condition ~5e8): SciPy's finite-difference
    # products stall near 1e-7 (benchmarks/newton_krylov.py); exact products do not
    H = 1.0 / (np.arange(7)[:, None] + np.arange(7)[None, :] + 1.0)
    b = H @ np.ones(7)
    x = opt.newton_krylov(lambda x: vj.linalg.matvec(H, x) - b, np.zeros(7), f_tol=1e-13,
                          maxiter=200)
    assert np.abs(H @ x.numpy() - b).max() <= 1e-13
    with pytest.raises(so.NoConvergence):
        so.newton_krylov(lambda x: H @ x - b, np.zeros(7), f_tol=1e-13, maxiter=200)


def test_newton_krylov_jit_must_be_a_bool():
    with pytest.raises(TypeError, match="newton_krylov: jit must be a bool, got 'yes'"):
        opt.newton_krylov(F, np.zeros(3), args=(THETA, 1.5), jit="yes")
    with pytest.raises(TypeError, match="root: jit must be a bool, got 1"):
        opt.root(F, np.zeros(3), args=(THETA, 1.5), method="krylov", options={"jit": 1})
    with pytest.raises(TypeError, match="newton_krylov: sparse must be a bool"):
        opt.newton_krylov(F, np.zeros(3), args=(THETA, 1.5), sparse="auto")


def test_newton_krylov_derivative_above_the_sparse_threshold_matches_scipy():
    # 2-D Bratu, 40 x 40 = 1600 unknowns (> SPARSE_ABOVE): the default derivative detects
    # dF/dx sparse; expected: central differences of SciPy's own newton_krylov in lambda
    m = 40
    assert m * m > SPARSE_ABOVE

    def bratu(u, lam):
        U = u.reshape(m, m)
        Z = np.pad(U, 1)
        return ((Z[:-2, 1:-1] + Z[2:, 1:-1] + Z[1:-1, :-2] + Z[1:-1, 2:] - 4 * U)
                * (m + 1) ** 2 + lam * np.exp(U)).reshape(-1)
    weights = np.random.default_rng(0).standard_normal(m * m)

    def scipy_loss(lam):
        return weights @ so.newton_krylov(lambda u: bratu(u, lam), np.zeros(m * m),
                                          f_tol=1e-12)
    expected = (scipy_loss(3.0 + 1e-4) - scipy_loss(3.0 - 1e-4)) / 2e-4
    got = vj.grad(lambda lam: vj.reduce_sum(weights * opt.newton_krylov(
        bratu, np.zeros(m * m), args=(lam,), f_tol=1e-12)))(np.array(3.0))
    np.testing.assert_allclose(float(got), expected, rtol=1e-6)
