"""vj.scipy.integrate.solve_ivp against SciPy's solve_ivp and closed forms.

Values: SciPy's (same method, same options). Derivatives: central finite differences of
SciPy's own solve_ivp at tight tolerances (a nonlinear system; y0, args and t_eval), for
every method, forward and reverse; second order against the closed form of a linear
decay; the backward-instability check of the adjoint; bad input.
"""
import numpy as np
import pytest
import scipy.integrate as si

import vecjac as vj

solve_ivp = vj.scipy.integrate.solve_ivp
TIGHT = dict(rtol=1e-11, atol=1e-11)
METHODS = ["RK45", "RK23", "DOP853", "Radau", "BDF", "LSODA"]


def lotka_volterra(t, y, a, b):
    prey, predator = y[0], y[1]
    return vj.stack([a[0] * prey - b * prey * predator,
                     -a[1] * predator + 0.1 * prey * predator])


def lotka_volterra_np(t, y, a, b):
    return np.array([a[0] * y[0] - b * y[0] * y[1], -a[1] * y[1] + 0.1 * y[0] * y[1]])


Y0, A, B = np.array([2.0, 1.0]), np.array([1.1, 0.4]), 0.4
T_EVAL = np.array([0.2, 0.5])


def scipy_y(y0, a, b, t_eval, method):
    return si.solve_ivp(lotka_volterra_np, (0.0, 0.6), y0, method=method, t_eval=t_eval,
                        args=(a, b), rtol=1e-12, atol=1e-12).y


def central(f, x, eps=1e-5):
    x = np.asarray(x, float)
    cols = []
    for k in range(x.size):
        e = np.zeros_like(x)
        e.flat[k] = eps
        cols.append((f(x + e) - f(x - e)) / (2 * eps))
    return np.stack(cols, axis=-1)


def test_values_and_result_match_scipy():
    res = solve_ivp(lotka_volterra, (0.0, 1.0), Y0, t_eval=T_EVAL, args=(A, B), **TIGHT)
    ref = si.solve_ivp(lotka_volterra_np, (0.0, 1.0), Y0, t_eval=T_EVAL, args=(A, B), **TIGHT)
    np.testing.assert_allclose(res.y.numpy(), ref.y, rtol=1e-13)
    np.testing.assert_array_equal(res.t.numpy(), ref.t)
    assert res.success and res.nfev == ref.nfev and res.status == 0
    # without t_eval: SciPy's steps (NumPy), y at them
    res = solve_ivp(lotka_volterra, (0.0, 1.0), Y0, args=(A, B))
    ref = si.solve_ivp(lotka_volterra_np, (0.0, 1.0), Y0, args=(A, B))
    np.testing.assert_array_equal(res.t, ref.t)
    np.testing.assert_allclose(res.y.numpy(), ref.y, rtol=1e-12)


@pytest.mark.parametrize("method", METHODS)
def test_derivatives_match_finite_differences_of_scipy(method):
    tol = dict(rtol=1e-10, atol=1e-10)

    def ours(y0, a, b, t_eval):
        return solve_ivp(lotka_volterra, (0.0, 0.6), y0, method=method, t_eval=t_eval,
                         args=(a, b), **tol).y
    expected = [central(lambda y0: scipy_y(y0, A, B, T_EVAL, method), Y0),
                central(lambda a: scipy_y(Y0, a, B, T_EVAL, method), A),
                central(lambda b: scipy_y(Y0, A, b[0], T_EVAL, method), np.array([B]))[..., 0],
                central(lambda t: scipy_y(Y0, A, B, t, method), T_EVAL)]
    for mode in ("rev", "fwd"):
        got = vj.jacobian(ours, argnums=(0, 1, 2, 3), mode=mode)(Y0, A, np.array(B), T_EVAL)
        for g, e in zip(got, expected):
            np.testing.assert_allclose(g.numpy(), e, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("adjoint", ["interpolated", "checkpoint", "backsolve"])
def test_second_order_is_the_closed_form(adjoint):
    # y = y0 exp(-k t): d2 y(t)/dk2 = t^2 y, by reverse over reverse and fwd over fwd
    t = np.array([0.5, 1.0])

    def y(k):
        return solve_ivp(lambda s, y, k: -k * y, (0.0, 1.0), [1.5], t_eval=t, args=(k,),
                         adjoint=adjoint, **TIGHT).y[0]
    k = np.array(0.8)
    for mode in ("rev", "fwd"):
        d2 = vj.jacobian(vj.jacobian(y, mode=mode), mode=mode)(k)
        np.testing.assert_allclose(d2.numpy(), t ** 2 * 1.5 * np.exp(-0.8 * t), rtol=1e-7)


def test_stiff_system_forward_sensitivities_and_unstable_backsolve_raises():
    # Robertson-like stiff decay: BDF forward sensitivities and the default adjoint (on the
    # forward run's dense output) match finite differences; adjoint="backsolve"
    # integrates y backwards, where the fast mode explodes: it raises
    def stiff(t, y, k):
        return vj.stack([-k * y[0], -1e4 * (y[1] - y[0])])
    y0, k = np.array([1.0, 0.0]), np.array(0.5)
    fd = central(lambda kk: si.solve_ivp(lambda t, y: np.array([-kk[0] * y[0],
                                                                -1e4 * (y[1] - y[0])]),
                                         (0.0, 1.0), y0, method="BDF", t_eval=[1.0],
                                         rtol=1e-11, atol=1e-12).y[:, 0],
                 np.array([0.5]))[:, 0]

    def y_end(kk, adjoint="interpolated"):
        return solve_ivp(stiff, (0.0, 1.0), y0, method="BDF", t_eval=[1.0], args=(kk,),
                         rtol=1e-10, atol=1e-12, adjoint=adjoint).y[:, 0]
    np.testing.assert_allclose(vj.jacfwd(y_end)(k).numpy(), fd, rtol=1e-5)
    np.testing.assert_allclose(vj.jacrev(y_end)(k).numpy(), fd, rtol=1e-5)
    with pytest.raises(ValueError, match="unstable backwards in time"):
        vj.grad(lambda kk: y_end(kk, "backsolve")[1])(k)


def test_large_stiff_system_gets_a_sparse_jacobian():
    # a 1-D diffusion of 80 cells (>= SPARSE_MIN): BDF with vecjac's sparse Jacobian
    n = 80

    def heat(t, y, D):
        left = vj.concat([y[:1], y[:-1]], axis=0)
        right = vj.concat([y[1:], y[-1:]], axis=0)
        return D * (left - 2 * y + right) * n ** 2

    y0 = np.exp(-((np.linspace(0, 1, n) - 0.5) ** 2) * 20)
    res = solve_ivp(heat, (0.0, 0.01), y0, method="BDF", t_eval=[0.01], args=(np.array(0.1),),
                    rtol=1e-8, atol=1e-10)
    assert res.njev >= 1
    ref = si.solve_ivp(lambda t, y: 0.1 * n ** 2 * (np.r_[y[:1], y[:-1]] - 2 * y +
                                                     np.r_[y[1:], y[-1:]]),
                       (0.0, 0.01), y0, method="BDF", t_eval=[0.01], rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(res.y.numpy(), ref.y, rtol=1e-6, atol=1e-9)
    dD = vj.jacfwd(lambda D: vj.reduce_sum(solve_ivp(heat, (0.0, 0.01), y0, method="BDF",
                                                     t_eval=[0.01], args=(D,), rtol=1e-8,
                                                     atol=1e-10).y))(np.array(0.1))
    assert abs(float(dD.numpy())) < 1e-6  # mass is conserved (Neumann ends): d/dD = 0


def test_bad_input_raises():
    f = lambda t, y: -y  # noqa: E731
    with pytest.raises(ValueError, match="method must be one of"):
        solve_ivp(f, (0, 1), [1.0], method="Euler")
    with pytest.raises(NotImplementedError, match="events"):
        solve_ivp(f, (0, 1), [1.0], events=lambda t, y: y[0])
    for bad in ([0.5, 0.2], [0.5, np.nan], [0.5, 2.0]):
        with pytest.raises(ValueError, match="t_eval must be finite, sorted"):
            solve_ivp(f, (0, 1), [1.0], t_eval=bad)
    with pytest.raises(ValueError, match="t_eval must be a non-empty vector"):
        solve_ivp(f, (0, 1), [1.0], t_eval=[])
    with pytest.raises(ValueError, match="y0 must be finite"):
        solve_ivp(f, (0, 1), [np.inf])
    with pytest.raises(ValueError, match="y0 must be a non-empty real vector"):
        solve_ivp(f, (0, 1), np.ones((2, 2)))
    with pytest.raises(TypeError, match="dense_output"):
        solve_ivp(f, (0, 1), [1.0], dense_output="yes")
    with pytest.raises(ValueError, match="t_span must be finite"):
        solve_ivp(f, (0, np.inf), [1.0])
    # a failed call records nothing on an active tape
    y0 = vj.constant(np.array([1.0], np.float32))
    with vj.GradientTape() as tape:
        tape.watch(y0)
        with pytest.raises(ValueError):
            solve_ivp(f, (0, 1), y0, t_eval=[0.5, 0.2])
    assert not tape._entries
    with pytest.raises(ValueError, match="fun must return an array of y0's shape"):
        solve_ivp(lambda t, y: vj.concat([y, y], 0), (0, 1), [1.0])
    with pytest.raises(ValueError, match="jac is supplied by vecjac"):
        solve_ivp(f, (0, 1), [1.0], method="BDF", jac=lambda t, y: -np.eye(1))
    k = vj.constant(0.5)
    with vj.GradientTape() as tape:
        tape.watch(k)
        with pytest.raises(ValueError, match="pass it through args"):
            solve_ivp(lambda t, y: -k * y, (0, 1), [1.0])


def test_dense_output_of_a_differentiated_solve_refuses_instead_of_a_zero_derivative():
    # sol(t) is SciPy's interpolant: NumPy values with no derivative. Under a transform
    # they would count as constants (a gradient of 0 for exp(-k t)), so calling it raises
    def decay(t, y, k):
        return -k * y

    def through_sol(k):
        res = vj.scipy.integrate.solve_ivp(decay, (0.0, 1.0), np.array([1.0]), args=(k,),
                                           dense_output=True, rtol=1e-10, atol=1e-12)
        return res.sol(0.5)[0] + 0.0 * k
    for transform in (vj.grad, vj.jacfwd, vj.jacrev):
        with pytest.raises(ValueError, match="sol .dense_output=True. is SciPy's interpolant"):
            transform(through_sol)(np.array(2.0))
    # not differentiated: SciPy's interpolant as is (closed form exp(-k t))
    res = vj.scipy.integrate.solve_ivp(decay, (0.0, 1.0), np.array([1.0]), args=(2.0,),
                                       dense_output=True, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(res.sol(0.5), [np.exp(-1.0)], rtol=1e-8)
    # values only, explicitly, inside a transform
    with vj.GradientTape() as tape:
        k = vj.constant(2.0)
        tape.watch(k)
        res = vj.scipy.integrate.solve_ivp(decay, (0.0, 1.0), np.array([1.0]), args=(k,),
                                           dense_output=True, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(res.sol.scipy(0.5), [np.exp(-1.0)], rtol=1e-8)
    assert res.sol.t_min == 0.0  # the rest of SciPy's OdeSolution is there
