"""flat_hessian (one Hessian over several variables) and newton_step."""
import numpy as np
import pytest

import vecjac as vj
from vecjac._src.api import newton
from vecjac.testing import numerical_jacobian

RNG = np.random.default_rng(1)
X = RNG.standard_normal((6, 3))
Y = RNG.standard_normal((6, 2))


def least_squares(W, b, dtype=np.float64):
    Xc, Yc = vj.constant(X.astype(dtype)), vj.constant(Y.astype(dtype))
    return lambda: 0.5 * vj.reduce_sum((vj.matmul(Xc, W) + b - Yc) ** 2)


def test_flat_hessian_closed_form_least_squares():
    W, b = vj.Variable(RNG.standard_normal((3, 2))), vj.Variable(np.zeros(2))
    H = vj.flat_hessian(least_squares(W, b), [W, b])
    unflatten = vj.unflatten_like([W, b])
    assert isinstance(H, vj.Tensor) and H.shape == (8, 8)  # the matrix itself (issue 6)
    assert np.linalg.eigvalsh(np.asarray(H)).min() > -1e-12  # np.asarray takes it as is
    k = 2
    expected = np.block([
        [np.kron(X.T @ X, np.eye(k)), np.kron(X.sum(0)[:, None], np.eye(k))],
        [np.kron(X.sum(0)[None, :], np.eye(k)), len(X) * np.eye(k)]])
    np.testing.assert_allclose(np.asarray(H), expected, rtol=1e-12, atol=1e-12)
    parts = unflatten(np.arange(8.0))
    assert [p.shape for p in parts] == [(3, 2), (2,)]
    np.testing.assert_array_equal(np.asarray(parts[0]), np.arange(6.0).reshape(3, 2))
    np.testing.assert_array_equal(np.asarray(unflatten.flatten(parts)), np.arange(8.0))
    assert unflatten.shapes == ((3, 2), (2,)) and unflatten.size == 8


def test_flat_hessian_nonlinear_matches_finite_differences_of_gradient():
    a0, c0 = RNG.standard_normal((2, 2)), RNG.standard_normal(3)

    def loss_np(flat):
        a, c = flat[:4].reshape(2, 2), flat[4:]
        return np.sum(np.sin(a)) * np.sum(c ** 2) + np.sum(a) * c[0] ** 3

    def grad_np(flat):  # central differences of the loss: the oracle gradient
        return numerical_jacobian(loss_np, flat, eps=1e-5)

    a, c = vj.Variable(a0), vj.constant(c0)  # Tensors are accepted too
    def fn():
        return vj.reduce_sum(vj.sin(a)) * vj.reduce_sum(c ** 2) + vj.reduce_sum(a) * c[0] ** 3
    H = vj.flat_hessian(fn, {"a": a, "c": c})
    unflatten = vj.unflatten_like({"a": a, "c": c})
    flat = np.concatenate([a0.ravel(), c0])
    np.testing.assert_allclose(np.asarray(H), numerical_jacobian(grad_np, flat, eps=1e-4),
                               rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(np.asarray(H), np.asarray(H).T, atol=1e-12)
    parts = unflatten(flat)
    assert set(parts) == {"a", "c"} and parts["a"].shape == (2, 2)


def test_flat_hessian_agrees_with_tape_blocks_and_float32():
    W = vj.Variable(RNG.standard_normal((3, 2)).astype(np.float32))
    b = vj.Variable(np.ones(2, np.float32))
    H = vj.flat_hessian(lambda: vj.reduce_sum(vj.tanh(vj.matmul(vj.constant(
        X.astype(np.float32)), W) + b) ** 2), [W, b])
    assert H.dtype == np.float32 and H.shape == (8, 8)
    with vj.GradientTape(persistent=True) as t2:
        with vj.GradientTape() as t1:
            loss = vj.reduce_sum(vj.tanh(vj.matmul(vj.constant(X.astype(np.float32)), W)
                                         + b) ** 2)
        gW, gb = t1.gradient(loss, [W, b])
    HWb = np.asarray(t2.jacobian(gW, b)).reshape(6, 2)
    Hbb = np.asarray(t2.jacobian(gb, b))
    np.testing.assert_allclose(np.asarray(H)[:6, 6:], HWb, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.asarray(H)[6:, 6:], Hbb, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("method", ["solve", "cg", "auto"])
def test_newton_step_solves_a_quadratic_in_one_step(method):
    W, b = vj.Variable(np.zeros((3, 2))), vj.Variable(np.zeros(2))
    info = vj.newton_step(least_squares(W, b), [W, b], damping=0.0, method=method)
    X1 = np.hstack([X, np.ones((6, 1))])
    sol = np.linalg.lstsq(X1, Y, rcond=None)[0]
    np.testing.assert_allclose(W.numpy(), sol[:3], rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(b.numpy(), sol[3], rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(info.loss, 0.5 * np.sum(Y ** 2))
    assert info.method == ("cg" if method == "cg" else "solve")
    assert (info.cg_iterations > 0) == (method == "cg")
    assert info.step_norm > 0 and info.grad_norm > 0


def test_newton_step_damping_closed_form_and_float32():
    x = vj.Variable(np.array([3.0, -2.0], np.float32))
    c = np.array([1.0, 4.0])
    info = vj.newton_step(lambda: vj.reduce_sum(vj.constant(c.astype(np.float32)) * x ** 2),
                          [x], damping=0.5)
    g, H = 2 * c * np.array([3.0, -2.0]), np.diag(2 * c)
    expected = np.array([3.0, -2.0]) - np.linalg.solve(H + 0.5 * np.eye(2), g)
    assert x.dtype == np.float32
    np.testing.assert_allclose(x.numpy(), expected, rtol=1e-6)
    np.testing.assert_allclose(info.grad_norm, np.linalg.norm(g), rtol=1e-6)


def test_newton_rosenbrock_converges():
    xy = vj.Variable([-1.2, 1.0])

    def rosen():
        return (1.0 - xy[0]) ** 2 + 100.0 * (xy[1] - xy[0] ** 2) ** 2
    losses = [vj.newton_step(rosen, [xy], damping=1e-3).loss for _ in range(25)]
    np.testing.assert_allclose(xy.numpy(), [1.0, 1.0], atol=1e-8)
    assert losses[-1] < 1e-12 < losses[0]


def test_newton_logistic_regression_reaches_zero_gradient():
    rng = np.random.default_rng(3)
    data = rng.standard_normal((40, 3))
    labels = (data @ [1.0, -2.0, 0.5] + 0.3 * rng.standard_normal(40) > 0).astype(float)
    w, b = vj.Variable(np.zeros(3)), vj.Variable(0.0)

    def loss():
        z = vj.linalg.matvec(vj.constant(data), w) + b
        return vj.reduce_mean(vj.nn.softplus(z) - labels * z) + 0.05 * vj.reduce_sum(w ** 2)
    for method in ("solve", "cg"):
        w.assign(np.zeros(3)), b.assign(0.0)
        for _ in range(8):
            vj.newton_step(loss, [w, b], damping=0.0, method=method)
        p = 1 / (1 + np.exp(-(data @ w.numpy() + b.numpy())))
        grad_w = data.T @ (p - labels) / 40 + 0.1 * w.numpy()
        grad_b = np.mean(p - labels)
        assert np.linalg.norm(np.append(grad_w, grad_b)) < 1e-10, method


def test_auto_switches_to_cg_above_the_threshold(monkeypatch):
    assert newton.CG_THRESHOLD == 2000
    c = np.where(np.arange(2001) % 2, 1.0, 3.0)
    x = vj.Variable(np.ones(2001))
    info = vj.newton_step(lambda: vj.reduce_sum(vj.constant(c) * x ** 2), [x], damping=0.0)
    assert info.method == "cg" and info.cg_iterations <= 3
    np.testing.assert_allclose(x.numpy(), 0.0, atol=1e-10)
    monkeypatch.setattr(newton, "CG_THRESHOLD", 1)
    y = vj.Variable([1.0, 2.0])
    assert vj.newton_step(lambda: vj.reduce_sum(y ** 2), [y]).method == "cg"


def test_cg_negative_curvature_falls_back_to_gradient_direction():
    x = vj.Variable([1.0, 0.5])
    info = vj.newton_step(lambda: -vj.reduce_sum(x ** 2), [x], damping=0.0, method="cg")
    assert info.cg_iterations == 0
    np.testing.assert_allclose(x.numpy(), [3.0, 1.5])  # x - g with g = -2x: loss went down


def test_flat_hessian_and_newton_bad_inputs():
    x = vj.Variable([1.0, 2.0])
    f = lambda: vj.reduce_sum(x ** 2)  # noqa: E731
    with pytest.raises(ValueError, match=r"loss_fn must return a scalar, got shape \(2,\)"):
        vj.flat_hessian(lambda: x ** 2, [x])
    with pytest.raises(TypeError, match="loss_fn must be a callable"):
        vj.newton_step(3.0, [x])
    with pytest.raises(ValueError, match="non-empty"):
        vj.flat_hessian(f, [])
    with pytest.raises(TypeError, match=r"variables\[0\] must be a vj.Variable \(they are"):
        vj.newton_step(f, [vj.constant([1.0, 2.0])])
    with pytest.raises(TypeError, match=r"variables\[1\] must be a vj.Variable or vj.Tensor"):
        vj.flat_hessian(f, [x, np.ones(2)])
    with pytest.raises(TypeError, match=r"variables\[0\] must be floating.*int64"):
        vj.flat_hessian(f, [vj.Variable([1, 2])])
    with pytest.raises(TypeError, match="share one dtype.*float32, float64"):
        vj.flat_hessian(f, [x, vj.Variable(np.ones(2, np.float32))])
    for bad in (-1.0, float("nan"), "big", True):
        with pytest.raises(ValueError, match="damping must be 'auto' or a finite number >= 0"):
            vj.newton_step(f, [x], damping=bad)
    with pytest.raises(ValueError, match="method must be 'auto', 'solve' or 'cg'"):
        vj.newton_step(f, [x], method="lbfgs")
    with pytest.raises(ValueError, match="cg_max_iters"):
        vj.newton_step(f, [x], cg_max_iters=0)
    with pytest.raises(ValueError, match="singular; increase damping"):
        vj.newton_step(lambda: vj.reduce_sum(x) ** 2, [x], damping=0.0)
    unflatten = vj.unflatten_like([x])
    with pytest.raises(ValueError, match=r"flat must have shape \(2,\).*got shape \(3,\)"):
        unflatten(np.ones(3))
    np.testing.assert_array_equal(x.numpy(), [1.0, 2.0])  # nothing was applied


@pytest.mark.parametrize("method", ["solve", "cg"])
@pytest.mark.parametrize("what, loss", [
    ("loss", lambda x: vj.reduce_sum(x ** 2) + vj.constant(np.inf)),
    ("gradient", lambda x: vj.reduce_sum(vj.sqrt(x))),            # 1 / (2 sqrt(0)) = inf
    ("Hessian", lambda x: vj.reduce_sum(x ** 2) + x[0] ** 1.5),   # finite gradient at 0
])
@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # NumPy's divide-by-zero notices
def test_newton_step_refuses_non_finite_values_and_leaves_the_variables(method, what, loss):
    x = vj.Variable([0.0, 2.0])
    name = "Hessian-vector product" if (what, method) == ("Hessian", "cg") else what
    with pytest.raises(ValueError, match=f"newton_step: the {name} is not finite"):
        vj.newton_step(lambda: loss(x), [x], method=method)
    np.testing.assert_array_equal(x.numpy(), [0.0, 2.0])


# -- damping="auto" (the default) -----------------------------------------------------------
LOGISTIC_DATA = np.random.default_rng(5).standard_normal((60, 4)) * [1.0, 3.0, 0.5, 2.0]
LOGISTIC_LABELS = (LOGISTIC_DATA @ [0.5, -1.0, 2.0, 0.3]
                   + np.random.default_rng(6).standard_normal(60) > 0).astype(float)
L2 = 0.05


def _logistic_numpy(theta):
    """Gradient and Hessian of the regularized mean log-loss, in closed form."""
    z = LOGISTIC_DATA @ theta
    p = 1.0 / (1.0 + np.exp(-z))
    n = len(z)
    g = LOGISTIC_DATA.T @ (p - LOGISTIC_LABELS) / n + 2 * L2 * theta
    H = (LOGISTIC_DATA.T * (p * (1 - p))) @ LOGISTIC_DATA / n + 2 * L2 * np.eye(len(theta))
    return g, H


def _quartic_numpy(theta):  # sum (t - 1)^4 + t^2 + t0 t1: strictly convex
    g = 4 * (theta - 1) ** 3 + 2 * theta + np.array([theta[1], theta[0], 0.0])
    H = np.diag(12 * (theta - 1) ** 2 + 2) + np.array([[0, 1, 0], [1, 0, 0], [0, 0, 0.0]])
    return g, H


def _logistic_vj(theta):
    z = vj.linalg.matvec(vj.constant(LOGISTIC_DATA), theta)
    return vj.reduce_mean(vj.nn.softplus(z) - LOGISTIC_LABELS * z) + \
        L2 * vj.reduce_sum(theta ** 2)


def _quartic_vj(theta):
    return vj.reduce_sum((theta - 1.0) ** 4 + theta ** 2) + theta[0] * theta[1]


CONVEX = {"logistic": (_logistic_numpy, _logistic_vj, np.zeros(4)),
          "quartic": (_quartic_numpy, _quartic_vj, np.array([3.0, -2.0, 0.5]))}


def _plain_newton(derivatives, x0, iters):
    """Newton's iterates with an exact solve (numpy.linalg.solve), no damping."""
    xs = [np.array(x0, dtype=float)]
    for _ in range(iters):
        g, H = derivatives(xs[-1])
        xs.append(xs[-1] - np.linalg.solve(H, g))
    return xs


@pytest.mark.parametrize("name", sorted(CONVEX))
def test_auto_damping_takes_plain_newton_steps_on_a_convex_problem(name):
    """Strictly convex: the default takes the undamped steps, so it needs exactly as many
    iterations to 1e-12 as plain Newton with an exact solve, and the error contracts
    quadratically near the solution (e_{k+1} / e_k^2 bounded)."""
    derivatives, loss, x0 = CONVEX[name]
    x_star = _plain_newton(derivatives, x0, 60)[-1]
    assert np.linalg.norm(derivatives(x_star)[0]) < 1e-14
    plain = _plain_newton(derivatives, x0, 30)
    plain_errors = [np.linalg.norm(x - x_star) for x in plain]
    plain_count = next(k for k, e in enumerate(plain_errors) if e < 1e-12)
    theta = vj.Variable(x0)
    errors, steps = [np.linalg.norm(x0 - x_star)], []
    while errors[-1] >= 1e-12 and len(steps) < 30:
        steps.append(vj.newton_step(lambda: loss(theta), [theta]))
        errors.append(np.linalg.norm(theta.numpy() - x_star))
    assert len(steps) == plain_count, (len(steps), plain_count)
    assert all(step.damping == 0.0 for step in steps)
    np.testing.assert_allclose(errors, plain_errors[:len(errors)], rtol=1e-6, atol=1e-13)
    ratios = [e1 / e0 ** 2 for e0, e1 in zip(errors, errors[1:]) if e0 < 1e-1 and e1 > 1e-14]
    assert ratios and max(ratios) < 10.0, ratios
    assert all(b <= a for a, b in zip([s.loss for s in steps], [s.loss for s in steps][1:]))


def test_auto_damping_converges_in_fewer_steps_than_fixed_damping():
    """The old default (damping=1e-3) converges only linearly near the solution."""
    _, loss, x0 = CONVEX["logistic"]
    x_star = _plain_newton(_logistic_numpy, x0, 60)[-1]

    def count(**kwargs):
        theta = vj.Variable(x0)
        for k in range(60):
            if np.linalg.norm(theta.numpy() - x_star) < 1e-12:
                return k
            vj.newton_step(lambda: loss(theta), [theta], **kwargs)
    assert count() < count(damping=1e-3)


def _rosenbrock(p):
    return (1.0 - p[0]) ** 2 + 100.0 * (p[1] - p[0] ** 2) ** 2


@pytest.mark.parametrize("kwargs", [{}, {"method": "cg"}, {"sparse": True}])
def test_nonconvex_start_gets_damping_and_lowers_the_loss(kwargs):
    """At (0, 1) the Rosenbrock Hessian is indefinite (f_xx = -398): the step is damped,
    and the loss goes down; from there on the loss never rises and Newton reaches (1, 1)."""
    p = vj.Variable([0.0, 1.0])
    H = np.array([[2 - 400 * (1.0 - 0.0), 0.0], [0.0, 200.0]])
    assert np.linalg.eigvalsh(H).min() < 0
    first = vj.newton_step(lambda: _rosenbrock(p), [p], **kwargs)
    assert first.damping > 0
    assert float(_rosenbrock(p)) < first.loss == 101.0
    losses = [first.loss]
    for _ in range(60):
        losses.append(vj.newton_step(lambda: _rosenbrock(p), [p], **kwargs).loss)
        if losses[-1] < 1e-24:
            break
    assert all(b <= a for a, b in zip(losses, losses[1:]))
    np.testing.assert_allclose(p.numpy(), [1.0, 1.0], atol=1e-10)


def test_fixed_damping_warns_with_the_numbers_when_the_loss_rises():
    """Pure Newton from (-1.2, 1) jumps out of Rosenbrock's valley at step 2 (4.73 to
    1.4e3): the explicit damping is kept, with a RuntimeWarning giving both losses."""
    p = vj.Variable([-1.2, 1.0])
    vj.newton_step(lambda: _rosenbrock(p), [p], damping=0.0)
    with pytest.warns(RuntimeWarning, match=r"raised the loss from 4\.73188 to 1411\.85 "
                                            r"\(damping 0, \|d\| = 4\.95"):
        step = vj.newton_step(lambda: _rosenbrock(p), [p], damping=0.0)
    assert step.damping == 0.0 and float(_rosenbrock(p)) > 1e3  # the step was taken
    q = vj.Variable([-1.2, 1.0])
    losses = []
    for _ in range(3):  # the default never raises it
        losses.append(vj.newton_step(lambda: _rosenbrock(q), [q]).loss)
    assert losses[2] < losses[1] < losses[0]


def test_fixed_damping_step_is_the_damped_solve():
    p = vj.Variable([-1.2, 1.0])
    x, y = -1.2, 1.0
    g = np.array([-2 * (1 - x) - 400 * x * (y - x * x), 200 * (y - x * x)])
    H = np.array([[2 - 400 * (y - 3 * x * x), -400 * x], [-400 * x, 200.0]])
    step = vj.newton_step(lambda: _rosenbrock(p), [p], damping=1e-3)
    np.testing.assert_allclose(p.numpy(), [x, y] - np.linalg.solve(H + 1e-3 * np.eye(2), g),
                               rtol=1e-12)
    assert step.damping == 1e-3


def test_auto_damping_replays_in_a_function_as_eager():
    """vj.function replays the damping decisions (guards): the same iterates."""
    p1, p2 = vj.Variable([-1.2, 1.0]), vj.Variable([-1.2, 1.0])
    traced = vj.function(lambda: vj.newton_step(lambda: _rosenbrock(p2), [p2]).damping)
    for _ in range(25):
        eager = vj.newton_step(lambda: _rosenbrock(p1), [p1]).damping
        assert float(traced()) == eager
        np.testing.assert_array_equal(p2.numpy(), p1.numpy())
    np.testing.assert_allclose(p1.numpy(), [1.0, 1.0], atol=1e-10)
