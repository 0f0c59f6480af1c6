"""solve_ivp(..., jit=True) and odeint(..., jit=True): fun replayed as vj.function traces
in every SciPy run (vecjac/_src/api/scipy/ivp_backward.py: system, apart).

Expected values: the eager call (jit=False: fun evaluated op by op, the oracle of the
replay), central differences of SciPy's own solve, and the semantics written in the
docstring (a trace per run, closures read when traced, guards on values).
"""
import warnings

import numpy as np
import pytest
import scipy.integrate as si

import vecjac as vj

solve_ivp = vj.scipy.integrate.solve_ivp
odeint = vj.scipy.integrate.odeint
N = 32  # 1-D Brusselator, 2 N = 64 states: the sparse Jacobian, BDF
P = np.array([1.0, 3.0, 0.02])
Y0 = np.r_[1 + np.sin(2 * np.pi * np.arange(1, N + 1) / (N + 1)), np.full(N, 3.0)]


def brusselator(t, y, p):
    u, v = y[:N], y[N:]

    def laplacian(w):
        return (vj.concat([w[:1], w[:-1]], axis=0) - 2 * w +
                vj.concat([w[1:], w[-1:]], axis=0)) * (p[2] * (N + 1) ** 2)
    uuv = u * u * v
    return vj.concat([p[0] + uuv - (p[1] + 1) * u + laplacian(u),
                      p[1] * u - uuv + laplacian(v)], axis=0)


def final_state(p, jit, method="BDF"):
    return solve_ivp(brusselator, (0.0, 0.5), Y0, method=method, t_eval=[0.5], args=(p,),
                     rtol=1e-8, atol=1e-10, jit=jit).y[:, -1]


def loss(p, jit):
    return vj.reduce_sum(final_state(p, jit) ** 2)


def test_jit_values_and_derivatives_are_the_eager_ones():
    np.testing.assert_allclose(final_state(P, True).numpy(), final_state(P, False).numpy(),
                               rtol=1e-12, atol=1e-12)
    forward = {jit: vj.jacfwd(lambda p: final_state(p, jit))(P).numpy() for jit in (True, False)}
    np.testing.assert_allclose(forward[True], forward[False], rtol=1e-10, atol=1e-12)
    reverse = {jit: vj.grad(lambda p: loss(p, jit))(P).numpy() for jit in (True, False)}
    np.testing.assert_allclose(reverse[True], reverse[False], rtol=1e-10)


def test_jit_gradient_matches_central_differences_of_scipy():
    def scipy_loss(p):
        def rates(t, y):
            return np.asarray(brusselator(t, vj.constant(y), vj.constant(p)))
        y = si.solve_ivp(rates, (0.0, 0.5), Y0, method="LSODA", t_eval=[0.5], rtol=1e-11,
                         atol=1e-13).y[:, -1]
        return np.sum(y ** 2)
    got = vj.grad(lambda p: loss(p, True))(P).numpy()
    for j in range(3):
        e = np.zeros(3)
        e[j] = 1e-4 * P[j]
        expected = (scipy_loss(P + e) - scipy_loss(P - e)) / (2 * e[j])
        np.testing.assert_allclose(got[j], expected, rtol=1e-5)


def test_jit_traces_fun_once_per_run_not_per_evaluation():
    calls = []

    def counted(t, y, k):
        calls.append(1)
        return -k * y

    result = solve_ivp(counted, (0.0, 1.0), np.ones(3), args=(np.array([1.0, 2.0, 3.0]),),
                       rtol=1e-8, jit=True)
    assert result.nfev > 50
    # the first evaluation traces (fun called once) and solve_ivp's checks call it once
    assert len(calls) <= 3


def test_jit_reads_closures_when_traced_and_again_in_the_next_call():
    scale = np.array([1.0])

    def decay(t, y):
        return -scale * y

    first = solve_ivp(decay, (0.0, 1.0), [1.0], t_eval=[1.0], rtol=1e-10, atol=1e-12,
                      jit=True).y.numpy()
    scale[0] = 2.0  # a new call traces again: the new value
    second = solve_ivp(decay, (0.0, 1.0), [1.0], t_eval=[1.0], rtol=1e-10, atol=1e-12,
                       jit=True).y.numpy()
    np.testing.assert_allclose(first, np.exp(-1.0), rtol=1e-8)
    np.testing.assert_allclose(second, np.exp(-2.0), rtol=1e-8)


def test_jit_follows_a_python_branch_on_time():
    def switched(t, y, k):  # a rate that changes at t = 0.5: a guard on the comparison
        return -k * y if t < 0.5 else -2 * k * y

    def final(k, jit):
        return solve_ivp(switched, (0.0, 1.0), [1.0, 2.0], t_eval=[1.0], args=(k,),
                         rtol=1e-10, atol=1e-12, jit=jit).y[:, -1]
    k = np.array([1.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # traced again when the branch flips, not per value
        np.testing.assert_allclose(final(k, True).numpy(), final(k, False).numpy(),
                                   rtol=1e-12)
    np.testing.assert_allclose(final(k, True).numpy(), np.array([1.0, 2.0]) * np.exp(-1.5),
                               rtol=1e-6)
    # d/dk: -1.5 y(1)
    np.testing.assert_allclose(vj.jacfwd(lambda k: final(k, True))(k).numpy()[:, 0],
                               -1.5 * np.array([1.0, 2.0]) * np.exp(-1.5), rtol=1e-6)


def test_odeint_jit_values_and_gradient_are_the_eager_ones():
    def decay(y, t, k):
        return -k * y + 0.1 * vj.sin(t) * y[::-1]

    def total(k, jit):
        return vj.reduce_sum(odeint(decay, np.array([1.0, 0.5]), [0.0, 0.5, 1.0], args=(k,),
                                    rtol=1e-10, atol=1e-10, jit=jit))
    k = np.array([0.7, 1.3])
    np.testing.assert_allclose(total(k, True).numpy(), total(k, False).numpy(), rtol=1e-12)
    np.testing.assert_allclose(vj.grad(lambda k: total(k, True))(k).numpy(),
                               vj.grad(lambda k: total(k, False))(k).numpy(), rtol=1e-10)


@pytest.mark.parametrize("call", [
    lambda: solve_ivp(lambda t, y: -y, (0.0, 1.0), [1.0], jit="yes"),
    lambda: odeint(lambda y, t: -y, [1.0], [0.0, 1.0], jit="yes")])
def test_jit_must_be_a_bool(call):
    with pytest.raises((TypeError, ValueError), match="jit"):
        call()
