"""Reverse mode of vj.scipy.integrate.solve_ivp and odeint on the forward run
(adjoint="interpolated" and "checkpoint", vecjac/_src/api/scipy/ivp_backward.py) on stiff
problems, where adjoint="backsolve" fails.

Expected values: central finite differences of SciPy's own solve_ivp (Radau with the
hand-written Jacobian, rtol 1e-10, atol 1e-14) of Robertson's kinetics, and vecjac's
forward sensitivities (vj.jacfwd), which integrate no adjoint. Also: a sparse stiff
system (a 1-D Brusselator of 2 x 64 states) whose backward Newton matrix is sparse, the
forward run kept by the op and reused (no second forward solve for "interpolated"), the
checkpoints re-integrated once per segment, and the errors for bad arguments.
"""
import functools

import numpy as np
import pytest
import scipy.integrate as si
import scipy.sparse as sp

import vecjac as vj
from vecjac._src.api.scipy import ivp_backward

solve_ivp = vj.scipy.integrate.solve_ivp
odeint = vj.scipy.integrate.odeint
K = np.array([0.04, 3e7, 1e4])
Y0 = np.array([1.0, 0.0, 0.0])
T_EVAL = np.array([0.1, 0.4, 1.0])
TOL = {"BDF": dict(rtol=1e-7, atol=1e-11), "LSODA": dict(rtol=1e-8, atol=1e-12),
       "Radau": dict(rtol=1e-6, atol=1e-10)}  # about a second each, errors ~5e-6 or less


def robertson(t, y, k):
    return vj.stack([-k[0] * y[0] + k[2] * y[1] * y[2],
                     k[0] * y[0] - k[2] * y[1] * y[2] - k[1] * y[1] ** 2,
                     k[1] * y[1] ** 2])


def robertson_np(t, y, k):
    return np.array([-k[0] * y[0] + k[2] * y[1] * y[2],
                     k[0] * y[0] - k[2] * y[1] * y[2] - k[1] * y[1] ** 2,
                     k[1] * y[1] ** 2])


def robertson_jac(t, y, k):
    return np.array([[-k[0], k[2] * y[2], k[2] * y[1]],
                     [k[0], -k[2] * y[2] - 2 * k[1] * y[1], -k[2] * y[1]],
                     [0.0, 2 * k[1] * y[1], 0.0]])


@functools.lru_cache(maxsize=None)
def reference():
    """d y(T_EVAL) / d(k, y0), (3, 3, 6): central differences of SciPy's Radau at tight
    tolerances (relative steps 1e-4; 1e-8 for the zero starts)."""
    x = np.r_[K, Y0]

    def solve(x):
        return si.solve_ivp(robertson_np, (0.0, 1.0), x[3:], method="Radau", t_eval=T_EVAL,
                            args=(x[:3],), jac=robertson_jac, rtol=1e-10, atol=1e-14).y
    cols = []
    for j in range(6):
        h = 1e-4 * abs(x[j]) if x[j] else 1e-8
        e = np.zeros(6)
        e[j] = h
        cols.append((solve(x + e) - solve(x - e)) / (2 * h))
    return np.stack(cols, axis=-1)


@functools.lru_cache(maxsize=None)
def forward_jacobian(method):
    """The same Jacobian by vecjac's forward sensitivities (in the error control: the
    more accurate of the two modes)."""
    jk, jy = vj.jacobian(lambda k, y0: solve_ivp(robertson, (0.0, 1.0), y0, method=method,
                                                 t_eval=T_EVAL, args=(k,),
                                                 sensitivity_error_control=True,
                                                 **TOL[method]).y,
                         argnums=(0, 1), mode="fwd")(K, Y0)
    return np.concatenate([jk.numpy(), jy.numpy()], axis=-1)


def assert_close(got, expected, rtol):
    """Every entry to rtol of its own size (Robertson's entries span 16 decades)."""
    error = np.abs(got - expected) / np.abs(expected)
    assert np.all(error <= rtol), f"relative errors up to {error.max():.2g}"


@pytest.mark.parametrize("adjoint", ["interpolated", "checkpoint"])
@pytest.mark.parametrize("method", ["BDF", "Radau", "LSODA"])
def test_robertson_reverse_mode_matches_forward_mode_and_finite_differences(method, adjoint):
    # the Jacobian of y at three times (nine rows, one backward pass of nine adjoints)
    # w.r.t. the rate constants (args) and y0
    def ys(k, y0):
        return solve_ivp(robertson, (0.0, 1.0), y0, method=method, t_eval=T_EVAL, args=(k,),
                         adjoint=adjoint, **TOL[method]).y
    jk, jy = vj.jacobian(ys, argnums=(0, 1), mode="rev")(K, Y0)
    got = np.concatenate([jk.numpy(), jy.numpy()], axis=-1)
    assert np.all(np.isfinite(got))
    assert_close(got, forward_jacobian(method), 1e-5)
    assert_close(got, reference(), 2e-5)


def test_robertson_to_t_100():
    # the long horizon (y2's transient at 1e-4 and the slow decay to 100): the gradient
    # of a weighted sum of y(50), y(100) against forward sensitivities
    def loss(k, y0):
        y = solve_ivp(robertson, (0.0, 100.0), y0, method="LSODA", t_eval=[50.0, 100.0],
                      args=(k,), **TOL["LSODA"]).y
        return vj.reduce_sum(y * np.array([[1.0, 0.5], [1e4, 2e4], [2.0, 1.0]]))
    got = vj.grad(loss, argnums=(0, 1))(K, Y0)
    expected = vj.jacfwd(loss, argnums=(0, 1))(K, Y0)
    assert_close(np.r_[got[0].numpy(), got[1].numpy()],
                 np.r_[expected[0].numpy(), expected[1].numpy()], 1e-5)


def test_backsolve_refuses_robertson():
    # y integrated backwards with the adjoint diverges on the stiff system: an error, not
    # a number
    with pytest.raises(ValueError, match="unstable backwards in time"):
        vj.grad(lambda k: solve_ivp(robertson, (0.0, 1.0), Y0, method="LSODA", t_eval=T_EVAL,
                                    args=(k,), adjoint="backsolve", **TOL["LSODA"]).y[0, -1])(K)


@pytest.mark.parametrize("method", ["RK45", "DOP853"])
def test_the_three_adjoints_agree_on_a_non_stiff_system(method):
    # every input (y0, t_eval, args) of a nonlinear system with explicit methods
    def ys(y0, t_eval, a, adjoint):
        return solve_ivp(lambda t, y, a: vj.stack([a[0] * y[0] - a[1] * y[0] * y[1],
                                                   -a[2] * y[1] + 0.1 * y[0] * y[1]]),
                         (0.0, 0.6), y0, method=method, t_eval=t_eval, args=(a,), rtol=1e-10,
                         atol=1e-10, adjoint=adjoint).y
    inputs = (np.array([2.0, 1.0]), np.array([0.2, 0.35, 0.5]), np.array([1.1, 0.4, 0.4]))
    expected = vj.jacobian(lambda *x: ys(*x, "interpolated"), argnums=(0, 1, 2),
                           mode="fwd")(*inputs)
    for adjoint in ("interpolated", "checkpoint", "backsolve"):
        got = vj.jacobian(lambda *x: ys(*x, adjoint), argnums=(0, 1, 2), mode="rev")(*inputs)
        for g, e in zip(got, expected):
            np.testing.assert_allclose(g.numpy(), e.numpy(), rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("span,t_eval", [((0.0, 0.6), [0.0, 0.3, 0.6]),
                                         ((0.6, 0.0), [0.5, 0.2, 0.0]), ((0.0, 0.6), None)],
                         ids=["t_eval from t0", "backwards in time", "SciPy's steps"])
def test_output_times_at_t0_backwards_and_scipys_steps(span, t_eval):
    # an output at t0 (a zero-length interval: "backsolve" used to hand SciPy an empty
    # span), time running backwards, and t_eval=None (every step an output)
    def ys(y0, a, adjoint):
        return solve_ivp(lambda t, y, a: vj.stack([a[0] * y[0] - a[1] * y[0] * y[1],
                                                   -a[2] * y[1] + 0.1 * y[0] * y[1]]),
                         span, y0, t_eval=t_eval, args=(a,), rtol=1e-10, atol=1e-10,
                         adjoint=adjoint).y
    inputs = (np.array([2.0, 1.0]), np.array([1.1, 0.4, 0.4]))
    expected = vj.jacobian(lambda *x: ys(*x, "interpolated"), argnums=(0, 1),
                           mode="fwd")(*inputs)
    for adjoint in ("interpolated", "checkpoint", "backsolve"):
        got = vj.jacobian(lambda *x: ys(*x, adjoint), argnums=(0, 1), mode="rev")(*inputs)
        for g, e in zip(got, expected):
            np.testing.assert_allclose(g.numpy(), e.numpy(), rtol=1e-7, atol=1e-9)


def test_robertson_gradient_of_a_loss_with_args_in_a_nest():
    # a scalar loss of the trajectory (vj.grad), the rate constants in a dict
    weights = np.array([1.0, 1e4, 2.0])

    def loss(k, y0):
        y = solve_ivp(lambda t, y, p: robertson(t, y, p["k"]), (0.0, 1.0), y0,
                      method="BDF", t_eval=T_EVAL, args=({"k": k},), **TOL["BDF"]).y
        return vj.reduce_sum(y * weights[:, None])
    gk, gy = vj.grad(loss, argnums=(0, 1))(K, Y0)
    expected = np.einsum("i,ijk->k", weights, reference())
    assert_close(np.r_[gk.numpy(), gy.numpy()], expected, 2e-5)


@pytest.mark.parametrize("adjoint", ["interpolated", "checkpoint"])
def test_odeint_robertson_reverse_mode(adjoint):
    # odeint's values stay SciPy's odeint's; its reverse mode reads y from solve_ivp's LSODA
    t = np.r_[0.0, T_EVAL]

    def ys(k, y0):
        return odeint(lambda y, s, k: robertson(s, y, k), y0, t, args=(k,), rtol=1e-8,
                      atol=1e-12, adjoint=adjoint)
    values = ys(K, Y0).numpy()
    np.testing.assert_array_equal(values, si.odeint(robertson_np, Y0, t, args=(K,),
                                                    rtol=1e-8, atol=1e-12, tfirst=True))
    jk, jy = vj.jacobian(ys, argnums=(0, 1), mode="rev")(K, Y0)
    got = np.concatenate([jk.numpy(), jy.numpy()], axis=-1)[1:]
    assert_close(np.moveaxis(got, 0, 1), reference(), 2e-5)


def test_time_cotangents_on_a_stiff_system():
    # d y(t_i) / d t_i = f(y(t_i)) and moving t0 shifts the solution (autonomous system)
    def ys(t_eval):
        return solve_ivp(robertson, (0.0, 1.0), Y0, method="BDF", t_eval=t_eval, args=(K,),
                         **TOL["BDF"]).y
    jt = vj.jacobian(ys, mode="rev")(T_EVAL).numpy()   # (3, 3 times, 3 times)
    values = ys(T_EVAL).numpy()
    for i, s in enumerate(T_EVAL):
        rate = robertson_np(s, values[:, i], K)
        np.testing.assert_allclose(jt[:, i, i], rate, rtol=1e-5, atol=1e-12)
        np.testing.assert_array_equal(np.delete(jt[:, i, :], i, axis=-1), 0.0)


def brusselator(n):
    """1-D Brusselator, 2 x n states (u then v), no-flux ends, parameters (a, b, alpha)."""
    def rhs(t, y, p):
        u, v = y[:n], y[n:]

        def laplacian(w):
            left = vj.concat([w[:1], w[:-1]], axis=0)
            right = vj.concat([w[1:], w[-1:]], axis=0)
            return (left - 2 * w + right) * (p[2] * (n + 1) ** 2)
        uuv = u * u * v
        return vj.concat([p[0] + uuv - (p[1] + 1) * u + laplacian(u),
                          p[1] * u - uuv + laplacian(v)], axis=0)
    x = np.arange(1, n + 1) / (n + 1)
    return rhs, np.r_[1 + np.sin(2 * np.pi * x), np.full(n, 3.0)], np.array([1.0, 3.0, 0.02])


def test_brusselator_reverse_mode_with_a_sparse_adjoint_jacobian(monkeypatch):
    n = 64
    rhs, y0, p = brusselator(n)
    matrices = []
    original = ivp_backward._adjoint_jacobian

    def recording(*args):
        jac = original(*args)

        def spy(s, z):
            matrices.append(jac(s, z))
            return matrices[-1]
        return spy
    monkeypatch.setattr(ivp_backward, "_adjoint_jacobian", recording)

    def loss(p, y0):
        y = solve_ivp(rhs, (0.0, 1.0), y0, method="BDF", t_eval=[0.5, 1.0], args=(p,),
                      rtol=1e-7, atol=1e-9).y
        return vj.reduce_sum(y[:n, -1] ** 2) + vj.reduce_sum(y[n:, 0])
    gp, gy = vj.grad(loss, argnums=(0, 1))(p, y0)
    assert matrices and all(sp.issparse(m) and m.shape == (2 * n, 2 * n) for m in matrices)
    assert matrices[0].nnz <= 5 * 2 * n  # -(df/dy)^T: tridiagonal blocks and the coupling
    # forward sensitivities: the three parameters, and y0 along one direction
    np.testing.assert_allclose(gp.numpy(), vj.jacfwd(loss)(p, y0).numpy(), rtol=1e-4)
    direction = np.cos(np.arange(2 * n))
    _, along = vj.jvp(lambda y0: loss(p, y0), (y0,), (direction,))
    np.testing.assert_allclose(np.dot(gy.numpy(), direction), along.numpy(), rtol=1e-4)
    with pytest.raises(ValueError, match="unstable backwards in time"):
        vj.grad(lambda p: solve_ivp(rhs, (0.0, 1.0), y0, method="BDF", t_eval=[1.0], args=(p,),
                                    rtol=1e-7, atol=1e-9, adjoint="backsolve").y[0, 0])(p)


def test_the_forward_run_is_kept_once_and_checkpoints_reintegrate_once(monkeypatch):
    runs = []
    original = ivp_backward.run

    def counting(fun, y0, t0, t_end, *rest):
        runs.append((float(t0), float(t_end)))
        return original(fun, y0, t0, t_end, *rest)
    monkeypatch.setattr(ivp_backward, "run", counting)

    def y_end(k, **kw):
        return solve_ivp(robertson, (0.0, 1.0), Y0, method="LSODA", t_eval=T_EVAL, args=(k,),
                         **TOL["LSODA"], **kw).y[0, -1]
    vj.grad(y_end)(K)  # interpolated: the forward run's dense output, no second run
    assert runs == []
    vj.grad(lambda k: y_end(k, adjoint="checkpoint", checkpoints=4))(K)
    # one forward re-integration per segment between the outputs and 4 checkpoints, from
    # the last segment back (the checkpoints' values come from the op's own forward run)
    cuts = np.unique(np.r_[0.0, np.linspace(0.0, 1.0, 6)[1:-1], T_EVAL])
    assert runs == list(zip(cuts[:-1], cuts[1:]))[::-1]
    runs.clear()
    # odeint's op keeps nothing (its values are scipy.integrate.odeint's): one run of
    # solve_ivp's LSODA with dense output in the backward pass
    vj.grad(lambda k: odeint(lambda y, s, k: robertson(s, y, k), Y0, [0.0, 1.0],
                             args=(k,))[1, 0])(K)
    assert runs == [(0.0, 1.0)]


@pytest.mark.parametrize("checkpoints", [0, 1, 7])
def test_checkpoint_counts_agree(checkpoints):
    def y_end(k):
        return solve_ivp(robertson, (0.0, 1.0), Y0, method="BDF", t_eval=T_EVAL, args=(k,),
                         adjoint="checkpoint", checkpoints=checkpoints, **TOL["BDF"]).y[1, -1]
    assert_close(vj.grad(y_end)(K).numpy(), reference()[1, -1, :3], 2e-5)


def test_bad_adjoint_arguments_name_the_argument_and_the_choices():
    f = lambda t, y: -y  # noqa: E731
    for call in (lambda **kw: solve_ivp(f, (0, 1), [1.0], **kw),
                 lambda **kw: odeint(lambda y, s: -y, [1.0], [0.0, 1.0], **kw)):
        with pytest.raises(ValueError, match=r"adjoint must be one of 'interpolated', "
                                             r"'checkpoint', 'backsolve', got 'adjoints'"):
            call(adjoint="adjoints")
        with pytest.raises(ValueError, match="adjoint must be one of"):
            call(adjoint=None)
        with pytest.raises(ValueError, match="checkpoints applies to adjoint='checkpoint'"):
            call(checkpoints=4)
        with pytest.raises(ValueError, match="checkpoints must be a non-negative int"):
            call(adjoint="checkpoint", checkpoints=-1)
        with pytest.raises(ValueError, match="checkpoints must be a non-negative int"):
            call(adjoint="checkpoint", checkpoints=2.5)


def test_docstrings_state_the_choices_and_their_memory():
    for fn in (solve_ivp, odeint):
        doc = " ".join(fn.__doc__.split())
        for word in ("interpolated", "checkpoint", "backsolve", "memory", "rtol"):
            assert word in doc, f"{fn.__name__}'s docstring does not mention {word!r}"


def test_odeint_backsolve_refuses_a_stiff_system_instead_of_a_nan():
    # a stiff linear pair: y' = A y with eigenvalues -1 and -1000; backwards it explodes
    A = np.array([[-1.0, 0.0], [999.0, -1000.0]])

    def rhs(y, t, a):
        return vj.linalg.matvec(a, y)
    t = np.array([0.0, 0.5, 1.0])
    loss = lambda a: vj.reduce_sum(vj.scipy.integrate.odeint(  # noqa: E731
        rhs, np.array([1.0, 2.0]), t, args=(a,), adjoint="backsolve"))
    with pytest.raises(ValueError, match="unstable backwards"):
        vj.grad(loss)(A)
    # the default adjoint reads y from the forward run: finite, and equal to forward mode
    default = lambda a: vj.reduce_sum(vj.scipy.integrate.odeint(  # noqa: E731
        rhs, np.array([1.0, 2.0]), t, args=(a,)))
    g = vj.grad(default)(A).numpy()
    assert np.all(np.isfinite(g))
    fwd = vj.jacfwd(default)(A).numpy()
    np.testing.assert_allclose(g, fwd, rtol=1e-5, atol=1e-7)


def test_adjoint_tolerance_follows_the_loss_scale():
    # Robertson over [0, 1e3] (the case the solver_sensitivities notebook found): the
    # backward pass failed for a loss of size 1 and worked for the same loss times 1e-3.
    # Now the adjoint's atol scales with the cotangents, so every scale takes the same
    # steps (here: a first attempt that fails, a warning, then a looser atol): the
    # gradients are the same up to the factor, and agree with forward sensitivities.
    t_eval = np.logspace(-2, 3, 6)

    def loss(k, w):
        y = solve_ivp(robertson, (0.0, 1e3), Y0, method="BDF", t_eval=t_eval, args=(k,),
                      rtol=1e-8, atol=1e-12).y
        return w * vj.reduce_sum(y[0])
    forward = vj.jacfwd(lambda k: loss(k, 1.0))(K).numpy()
    grads = {}
    for w in (1.0, 1e3):
        with pytest.warns(RuntimeWarning, match="integrating again at atol"):
            grads[w] = vj.grad(loss)(K, w).numpy() / w
    np.testing.assert_allclose(grads[1e3], grads[1.0], rtol=1e-9)  # (w = 1e3 rounds)
    assert_close(grads[1.0], forward, 1e-6)
