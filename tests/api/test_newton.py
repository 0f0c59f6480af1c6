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
        with pytest.raises(ValueError, match="damping must be a finite number >= 0"):
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
