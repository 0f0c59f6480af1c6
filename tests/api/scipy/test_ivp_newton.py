"""Forward sensitivities of vj.scipy.integrate.solve_ivp on stiff systems: one Newton
block for [y, ydot_1 .. ydot_k] (vecjac/_src/api/scipy/ivp_newton.py) and the
sensitivities in or out of the error control.

Expected values: central finite differences of SciPy's own solve_ivp at tight tolerances
(with a hand-written Jacobian), the primal solve's own steps, SciPy's BDF on the full
augmented system, and the RMS norm written out.
"""
import functools

import numpy as np
import pytest
import scipy.integrate as si
import scipy.sparse as sp

import vecjac as vj
from vecjac._src.api.scipy import ivp_newton
from vecjac._src.api.scipy.ivp_backward import run
from vecjac._src.api.scipy.ivp_systems import tangent_dynamics

solve_ivp = vj.scipy.integrate.solve_ivp
N = 32  # 1-D Brusselator: 2 N = 64 states, vecjac's sparse Jacobian (SPARSE_MIN)
P = np.array([1.0, 3.0, 0.02])
X = np.arange(1, N + 1) / (N + 1)
Y0 = np.r_[1 + np.sin(2 * np.pi * X), np.full(N, 3.0)]
T_EVAL = np.array([0.25, 0.5])


def brusselator(t, y, p):
    u, v = y[:N], y[N:]

    def laplacian(w):  # no-flux ends
        return (vj.concat([w[:1], w[:-1]], axis=0) - 2 * w +
                vj.concat([w[1:], w[-1:]], axis=0)) * (p[2] * (N + 1) ** 2)
    uuv = u * u * v
    return vj.concat([p[0] + uuv - (p[1] + 1) * u + laplacian(u),
                      p[1] * u - uuv + laplacian(v)], axis=0)


def _laplacian_matrix():
    main = np.full(N, -2.0)
    main[[0, -1]] = -1.0
    return sp.diags([np.ones(N - 1), main, np.ones(N - 1)], [-1, 0, 1]) * (N + 1) ** 2


def brusselator_np(t, y, p):
    u, v = y[:N], y[N:]
    L = _laplacian_matrix() * p[2]
    uuv = u * u * v
    return np.r_[p[0] + uuv - (p[1] + 1) * u + L @ u, p[1] * u - uuv + L @ v]


def brusselator_jac(t, y, p):
    u, v = y[:N], y[N:]
    L = _laplacian_matrix() * p[2]
    return sp.bmat([[sp.diags(2 * u * v - p[1] - 1) + L, sp.diags(u * u)],
                    [sp.diags(p[1] - 2 * u * v), sp.diags(-u * u) + L]], format="csc")


@functools.lru_cache(maxsize=None)
def reference():
    """d y(T_EVAL) / dp (2 N, 2, 3): central differences of SciPy's BDF with the
    hand-written Jacobian at rtol 1e-11 (relative steps 1e-4)."""
    def solve(p):
        return si.solve_ivp(brusselator_np, (0.0, 0.5), Y0, method="BDF", t_eval=T_EVAL,
                            args=(p,), jac=brusselator_jac, rtol=1e-11, atol=1e-13).y
    cols = []
    for j in range(3):
        e = np.zeros(3)
        e[j] = 1e-4 * P[j]
        cols.append((solve(P + e) - solve(P - e)) / (2 * e[j]))
    return np.stack(cols, axis=-1)


def assert_close(got, expected, rtol):
    """Normwise per parameter: the largest error over the largest entry."""
    error = np.abs(got - expected).max(axis=(0, 1)) / np.abs(expected).max(axis=(0, 1))
    assert np.all(error <= rtol), f"relative errors {error}"


@pytest.mark.parametrize("method, control", [("BDF", False), ("BDF", True), ("Radau", False)])
def test_sensitivities_match_central_differences(method, control):
    S = vj.jacfwd(lambda p: solve_ivp(brusselator, (0.0, 0.5), Y0, method=method,
                                      t_eval=T_EVAL, args=(p,), rtol=1e-8, atol=1e-10,
                                      sensitivity_error_control=control).y)(P)
    assert_close(S.numpy(), reference(), 2e-6)


def robertson(t, y, k):
    return vj.stack([-k[0] * y[0] + k[2] * y[1] * y[2],
                     k[0] * y[0] - k[2] * y[1] * y[2] - k[1] * y[1] ** 2,
                     k[1] * y[1] ** 2])


@pytest.mark.parametrize("method", ["RK45", "BDF", "Radau"])
def test_sensitivities_left_out_of_the_error_control_take_the_primal_steps(method):
    k, y0 = np.array([0.04, 3e7, 1e4]), np.array([1.0, 0.0, 0.0])
    end = 1e-3 if method == "RK45" else 0.05
    options = (("rtol", 1e-7), ("atol", 1e-11))
    primal = run(robertson, y0, 0.0, end, None, [k], method, options, "test")
    steps = {}
    for control in (False, True):
        augmented = run(tangent_dynamics(robertson, 3, 1, control), np.r_[y0, 0.0, 0.0, 0.0],
                        0.0, end, None, [k, np.array([1.0, 0.0, 0.0])], method, options,
                        "test")
        steps[control] = augmented.t
    # the same steps, up to rounding (the two error norms sum in other orders)
    np.testing.assert_allclose(steps[False], primal.t, rtol=1e-6)
    assert steps[True].size > primal.t.size  # the sensitivities' own error wants more


def test_tolerances_keep_the_primal_error_norm():
    rng = np.random.default_rng(0)
    d, n = 5, 20
    y, error = rng.standard_normal(n), rng.standard_normal(n)
    options = ivp_newton.tolerances({"rtol": 1e-4, "atol": 1e-6}, n, d)
    scale = options["atol"] + options["rtol"] * np.abs(y)
    primal_scale = 1e-6 + 1e-4 * np.abs(y[:d])
    rms = np.sqrt(np.mean((error / scale) ** 2))  # SciPy's norm, written out
    np.testing.assert_allclose(rms, np.sqrt(np.mean((error[:d] / primal_scale) ** 2)),
                               rtol=1e-12)
    assert ivp_newton.tolerances({"rtol": 1e-4}, n, n) == {"rtol": 1e-4}


def test_block_newton_factors_one_block_and_matches_the_full_system():
    # z = [y, ydot_1, ydot_2] for the 2 N-state Brusselator, ydot_j = dy/dp_j: BDF with
    # the one 2N x 2N Newton block against SciPy's BDF on the coupled 6N system
    d = 2 * N
    directions = np.eye(3)[:2]

    def rates(t, z):
        y = z[:d]
        L = _laplacian_matrix()
        u = y[:N]
        dfdp = np.stack([np.r_[np.ones(N), np.zeros(N)], np.r_[-u, u],
                         np.r_[L @ y[:N], L @ y[N:]]], axis=1)
        J = brusselator_jac(t, y, P)
        tangents = [J @ z[d * (j + 1):d * (j + 2)] + dfdp @ directions[j] for j in range(2)]
        return np.concatenate([brusselator_np(t, y, P)] + tangents)

    z0 = np.r_[Y0, np.zeros(2 * d)]
    method, options = ivp_newton.solver("BDF", d, 3, 3 * d, {"rtol": 1e-8, "atol": 1e-10})
    solver = method(rates, 0.0, z0, 0.5, jac=lambda t, z: brusselator_jac(t, z[:d], P),
                    **options)
    while solver.status == "running":
        solver.step()
    assert solver.status == "finished"
    assert solver.I.shape == (d, d) and solver.LU.shape == (d, d)
    # SciPy's own (differenced, coupled: the couplings' pattern is J's) Jacobian of the
    # whole system
    pattern = (brusselator_jac(0.0, Y0, P) != 0).astype(float)
    full = si.solve_ivp(rates, (0.0, 0.5), z0, method="BDF", rtol=1e-8, atol=1e-10,
                        t_eval=[0.5], jac_sparsity=sp.bmat([[pattern, None, None],
                                                            [pattern, pattern, None],
                                                            [pattern, None, pattern]]))
    np.testing.assert_allclose(solver.y, full.y[:, -1], rtol=1e-5,
                               atol=1e-5 * np.abs(full.y).max())


def test_sensitivity_error_control_must_be_a_bool():
    with pytest.raises((TypeError, ValueError), match="sensitivity_error_control"):
        solve_ivp(brusselator, (0.0, 1.0), Y0, method="BDF", args=(P,),
                  sensitivity_error_control="yes")
