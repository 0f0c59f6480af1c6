"""vj.scipy.integrate.odeint against scipy.integrate.odeint and closed forms.

Values are SciPy's (same solver, same options). Derivatives: against the closed-form
solution of a linear decay (first and second order, both modes), finite differences of
SciPy's own odeint at tight tolerances (a nonlinear system, every argument: y0, t, args),
and check_grads to order 2; pfor (vectorized_map over initial conditions, jacfwd) against
the plain loop. The registry checks the op's first-order rules (vecjac/_src/api/scipy/odeint.py).
"""
import numpy as np
import pytest
import scipy.integrate as si

import vecjac as vj
from vecjac.testing import check_grads, numerical_jacobian

odeint = vj.scipy.integrate.odeint
TIGHT = dict(rtol=1e-12, atol=1e-12)


def lotka_volterra(y, t, a, b, c, d):
    prey, predator = y[0], y[1]
    return vj.stack([a * prey - b * prey * predator, -c * predator + d * prey * predator])


def forced(y, t, a1, a2):  # autograd's test system: explicit time, a mean over the state
    return -np.sqrt(t) - y + a1 - np.mean((y + a2) ** 2)


def test_values_match_scipy():
    t = np.linspace(0.0, 4.0, 9)
    args = (1.1, 0.4, 0.4, 0.1)
    y0 = np.array([10.0, 5.0])
    np.testing.assert_allclose(odeint(lotka_volterra, y0, t, args=args).numpy(),
                               si.odeint(lambda y, s, *p: lotka_volterra(
                                   vj.constant(y), s, *p).numpy(), y0, t, args=args),
                               rtol=1e-12)
    # SciPy's conventions: a number y0, a non-tuple args, tfirst, decreasing times
    got = odeint(lambda y, s, k: -k * y, 2.0, [1.0, 0.5, 0.0], args=0.7, **TIGHT)
    assert got.shape == (3, 1)
    np.testing.assert_allclose(got.numpy()[:, 0], 2.0 * np.exp(0.7 * np.array([0, 0.5, 1.0])),
                               rtol=1e-10)
    got = odeint(lambda s, y: -y * s, np.array([1.0]), [0.0, 1.0], tfirst=True, **TIGHT)
    np.testing.assert_allclose(got.numpy()[1, 0], np.exp(-0.5), rtol=1e-10)


@pytest.mark.parametrize("mode", ["rev", "fwd"])
def test_linear_decay_derivatives_are_the_closed_form(mode):
    # y(t) = y0 exp(-k (t - t0)): d/dk, d/dy0, d/dt and d2/dk2 in closed form
    t = np.array([0.2, 0.7, 1.5])
    y0, k = 1.3, 0.8

    def solve(y0_, t_, k_):
        return odeint(lambda y, s, kk: -kk * y, vj.reshape(y0_, (1,)), t_, args=(k_,),
                      **TIGHT)[:, 0]
    jac = vj.jacobian(solve, argnums=(0, 1, 2), mode=mode)(np.array(y0), t, np.array(k))
    dt = t - t[0]
    y = y0 * np.exp(-k * dt)
    np.testing.assert_allclose(jac[0].numpy(), np.exp(-k * dt), rtol=1e-8)
    np.testing.assert_allclose(jac[2].numpy(), -dt * y, rtol=1e-8, atol=1e-12)
    expected_t = np.diag(-k * y)          # d y_i / d t_i
    expected_t[:, 0] = k * y              # moving t0 shifts the whole solution
    expected_t[0, 0] = 0.0                # y(t0) = y0 whatever t0
    np.testing.assert_allclose(jac[1].numpy(), expected_t, rtol=1e-8, atol=1e-10)
    second = vj.jacobian(vj.jacobian(lambda kk: solve(np.array(y0), t, kk), mode=mode),
                         mode=mode)(np.array(k))
    np.testing.assert_allclose(second.numpy(), dt ** 2 * y, rtol=1e-7, atol=1e-12)


def test_nonlinear_derivatives_match_finite_differences_of_scipy():
    rng = np.random.default_rng(0)
    y0, a1, a2 = rng.standard_normal(3), rng.standard_normal(3), rng.standard_normal(3)
    t = np.linspace(0.1, 0.2, 4)
    values = [y0, t, a1, a2]
    for k in range(4):
        def ours(x, k=k):
            v = list(values)
            v[k] = x
            return odeint(forced, v[0], v[1], args=(v[2], v[3]), **TIGHT)

        def scipys(x, k=k):
            v = list(values)
            v[k] = x
            return si.odeint(forced, v[0], v[1], args=(v[2], v[3]), **TIGHT)
        # eps 1e-4: central differences of an adaptive solver at smaller steps see its
        # step-size decisions (errors of 4e-5 measured at eps 1e-6); truncation is ~1e-9
        expected = numerical_jacobian(scipys, values[k], eps=1e-4)
        for mode in ("rev", "fwd"):
            np.testing.assert_allclose(vj.jacobian(ours, mode=mode)(values[k]).numpy(),
                                       expected, rtol=1e-6, atol=1e-8)
    check_grads(lambda *v: odeint(forced, v[0], v[1], args=(v[2], v[3])), values, order=2,
                modes=("fwd", "rev"))


def test_sensitivities_vectorize_over_initial_conditions():
    t = np.linspace(0.0, 2.0, 5)
    args = (1.1, 0.4, 0.4, 0.1)
    starts = np.array([[10.0, 5.0], [8.0, 4.0], [6.0, 6.0]])
    solve = lambda y0: odeint(lotka_volterra, y0, t, args=args)  # noqa: E731
    batched = vj.vectorized_map(solve, vj.constant(starts), fallback_to_while_loop=False)
    loop = np.stack([solve(s).numpy() for s in starts])
    np.testing.assert_allclose(batched.numpy(), loop, rtol=1e-12)
    jac_fwd = vj.jacfwd(solve)(starts[0]).numpy()
    jac_rev = vj.jacrev(solve)(starts[0]).numpy()
    np.testing.assert_allclose(jac_fwd, jac_rev, rtol=1e-6, atol=1e-8)
    expected = numerical_jacobian(lambda y0: si.odeint(lambda y, s, *p: lotka_volterra(
        vj.constant(y), s, *p).numpy(), y0, t, args=args, **TIGHT), starts[0])
    np.testing.assert_allclose(jac_fwd, expected, rtol=1e-5, atol=1e-7)


def test_parameters_as_tensors_and_variables():
    k = vj.Variable(0.5)
    with vj.GradientTape() as tape:
        y = odeint(lambda y, s, kk: -kk * y, np.array([1.0]), [0.0, 2.0], args=(k,),
                   **TIGHT)[1, 0]
    np.testing.assert_allclose(tape.gradient(y, k).numpy(), -2.0 * np.exp(-1.0),
                               rtol=1e-9)


def test_bad_input_raises_before_integrating():
    k = vj.Variable(0.5)
    with vj.GradientTape():  # a parameter closed over would lose its derivative
        with pytest.raises(ValueError, match="closure"):
            odeint(lambda y, s: -k * y, np.array([1.0]), [0.0, 1.0])
    with pytest.raises(ValueError, match="monotonically"):
        odeint(lambda y, s: -y, np.array([1.0]), [0.0, 1.0, 0.5])
    with pytest.raises(ValueError, match=r"shape \(2,\)"):
        odeint(lambda y, s: vj.reduce_sum(y), np.array([1.0, 2.0]), [0.0, 1.0])
    with pytest.raises(TypeError, match="callable"):
        odeint(3.0, np.array([1.0]), [0.0, 1.0])
    with pytest.raises(NotImplementedError, match="Dfun"):
        odeint(lambda y, s: -y, np.array([1.0]), [0.0, 1.0], Dfun=lambda y, s: -1.0)
    with pytest.raises(TypeError, match=r"args\[0\]"):
        odeint(lambda y, s, c: -y, np.array([1.0]), [0.0, 1.0], args=("x",))


# -- reverse mode on stiff systems: an error, never a NaN, inf or wrong gradient ----------
def stiff_pair(y, t, k, lam):  # y0 decays slowly; y1 follows it with rate lam
    return vj.stack([-k * y[0], -lam * (y[1] - y[0])])


def rober(y, t, k1, k2, k3):  # Robertson's kinetics
    a, b, c = y[0], y[1], y[2]
    return vj.stack([-k1 * a + k3 * b * c, k1 * a - k2 * b * b - k3 * b * c, k2 * b * b])


def _stiff_pair_end(k, lam=1e4):
    return odeint(stiff_pair, np.array([1.0, 0.0]), [0.0, 0.5, 1.0], args=(k, lam))[-1, 1]


def _rober_end(k1):
    return odeint(rober, np.array([1.0, 0.0, 0.0]), [0.0, 1.0], args=(k1, 3e3, 1e4))[-1, 0]


# name: (scalar function of one parameter, the parameter). Backwards in time the fast
# mode grows as exp(lam t): the backward run of y leaves the trajectory (the pair: |y|
# passes the bound within a few steps; Robertson with a milder k2: y comes back wrong),
# where the old rule returned a wrong gradient without a word (the pair: -0.018, not -0.61)
STIFF = {"stiff linear pair": (_stiff_pair_end, 0.5), "Robertson, k2 = 3e3": (_rober_end, 0.04)}


@pytest.mark.parametrize("mode", ["vj.grad", "GradientTape.gradient", "vj.jacrev"])
@pytest.mark.parametrize("case", list(STIFF))
def test_an_unstable_adjoint_raises_and_names_forward_mode(case, mode):
    f, p = STIFF[case]
    p = vj.constant(p)

    def tape_gradient(x):
        with vj.GradientTape() as tape:
            tape.watch(x)
            y = f(x)
        return tape.gradient(y, x)
    run = {"vj.grad": vj.grad(f), "GradientTape.gradient": tape_gradient,
           "vj.jacrev": vj.jacrev(f)}[mode]
    with pytest.raises(ValueError, match=r"unstable backwards in time.*vj\.jacfwd"):
        run(p)


def test_forward_mode_is_the_way_out_and_replays_check_again():
    """jacfwd gives the closed form where reverse mode raises; under vj.function, a
    replay at a stiff point raises too (a stable one was traced)."""
    k, lam, t = 0.5, 1e4, 1.0
    c = lam / (lam - k)  # y1 = c (exp(-k t) - exp(-lam t)), y0 = exp(-k t)
    exact = c / (lam - k) * (np.exp(-k * t) - np.exp(-lam * t)) - c * t * np.exp(-k * t)
    np.testing.assert_allclose(float(vj.jacfwd(_stiff_pair_end)(k)), exact, rtol=1e-5)
    grad = vj.function(vj.grad(_stiff_pair_end))
    mild = float(grad(np.array(k), np.array(2.0)))
    c2 = 2.0 / (2.0 - k)
    np.testing.assert_allclose(mild, c2 / (2.0 - k) * (np.exp(-k) - np.exp(-2.0))
                               - c2 * np.exp(-k), rtol=1e-5)
    with pytest.raises(ValueError, match="unstable backwards in time"):
        grad(np.array(k), np.array(lam))
