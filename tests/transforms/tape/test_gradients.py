"""stop_gradient, custom_gradient, RegisterGradient / defop, missing gradients."""
import numpy as np
import pytest

import vecjac as vj
from vecjac.testing import check_grads


def test_stop_gradient_blocks_one_path():
    x = vj.Variable(2.0)
    y = vj.Variable(3.0)
    with vj.GradientTape() as t:
        z = x ** 2 + vj.stop_gradient(y ** 2) + vj.stop_gradient(x) * x
    grad = t.gradient(z, {"x": x, "y": y})
    assert grad["x"].numpy() == 2 * 2.0 + 2.0  # 2x from x**2, plus stop(x)=2 from the product
    assert grad["y"] is None


@vj.custom_gradient
def clip_gradients(y):
    def backward(dy):
        return vj.clip_by_norm(dy, 0.5) if hasattr(vj, "clip_by_norm") else dy * 0.5
    return y, backward


def test_custom_gradient_guide_example():
    v = vj.Variable(2.0)
    with vj.GradientTape() as t:
        output = clip_gradients(v * v)
    assert float(t.gradient(output, v)) == 2.0  # the guide: "clips 4 to 2"


@vj.custom_gradient
def log1pexp(x):
    e = vj.exp(x)

    def grad(dy):
        return dy * (1 - 1 / (1 + e))
    return vj.log(1 + e), grad


def test_custom_gradient_numerically_stable_rule_and_higher_order():
    x = vj.constant(100.0)
    with vj.GradientTape() as tape:
        tape.watch(x)
        y = log1pexp(x)
    assert float(tape.gradient(y, x)) == 1.0
    check_grads(lambda a: log1pexp(a), [np.array([0.3, -1.2])], order=2)


def test_custom_gradient_with_variables():
    w = vj.Variable(np.array([1.0, 2.0]))

    @vj.custom_gradient
    def scaled(x):
        def grad(dy, variables=None):
            return dy * w, [dy * x * 10.0]  # deliberately 10x for the variable
        return x * w, grad
    x = vj.constant(np.array([3.0, 4.0]))
    with vj.GradientTape() as tape:
        tape.watch(x)
        y = vj.reduce_sum(scaled(x))
    gx, gw = tape.gradient(y, [x, w])
    np.testing.assert_allclose(gx.numpy(), [1.0, 2.0])
    np.testing.assert_allclose(gw.numpy(), [30.0, 40.0])


def test_custom_gradient_reading_variables_needs_variables_kwarg():
    w = vj.Variable(2.0)

    @vj.custom_gradient
    def f(x):
        return x * w, lambda dy: dy * w
    with vj.GradientTape():
        with pytest.raises(TypeError, match="variables"):
            f(vj.constant(1.0))


def test_custom_gradient_vectorizes_in_jacobian():
    x = vj.constant(np.array([0.5, -1.0, 2.0]))
    with vj.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = log1pexp(x) * vj.reduce_sum(x)
    j = tape.jacobian(y, x)
    jl = tape.jacobian(y, x, experimental_use_pfor=False)
    np.testing.assert_allclose(j.numpy(), jl.numpy(), rtol=1e-12)
    s = 1 / (1 + np.exp(-x.numpy()))
    expected = np.diag(s * x.numpy().sum()) + np.log1p(np.exp(x.numpy()))[:, None]
    np.testing.assert_allclose(j.numpy(), expected, rtol=1e-12)


def test_custom_gradient_must_return_pair():
    @vj.custom_gradient
    def f(x):
        return x
    with pytest.raises(TypeError, match="grad_fn"):
        f(vj.constant(1.0))


SOFTCLIP = vj.defop("TestSoftClip", forward=lambda x: np.tanh(x))


def test_float_op_without_gradient_raises_lookup_error():
    x = vj.constant(0.3)
    with vj.GradientTape() as tape:
        tape.watch(x)
        y = SOFTCLIP(x)
    with pytest.raises(LookupError, match="TestSoftClip"):
        tape.gradient(y, x)


def test_register_gradient_then_differentiate():
    op = vj.defop("TestCube", forward=lambda x: x ** 3)

    @vj.RegisterGradient("TestCube")
    def _cube_grad(entry, dy):
        x = entry.inputs[0]
        return dy * 3 * x * x
    check_grads(lambda a: op(a), [np.array([0.4, -1.3])], order=2)
    with pytest.raises(KeyError, match="two gradient"):
        vj.RegisterGradient("TestCube")(_cube_grad)
    with pytest.raises(LookupError, match="no op named"):
        vj.RegisterGradient("NoSuchOpAnywhere")(_cube_grad)


def test_defop_validates():
    with pytest.raises(ValueError, match="already registered"):
        vj.defop("Sin", forward=np.sin)
    with pytest.raises(TypeError, match="forward"):
        vj.defop("TestNotCallable", forward=3)


# -- recompute_grad ------------------------------------------------------------------------
def _counted(f):
    calls = []

    def counted(*args, **kwargs):
        calls.append(1)
        return f(*args, **kwargs)
    return counted, calls


def test_recompute_grad_keeps_nothing_of_f_and_runs_it_again_per_gradient():
    block, calls = _counted(lambda x, scale=1.0: vj.tanh(x) * vj.sin(x) * scale)
    g = vj.recompute_grad(block)
    x = vj.constant([0.3, -1.2, 2.0])
    with vj.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = vj.reduce_sum(g(x, scale=2.0) ** 2)
    assert len(calls) == 1
    # the tape holds the block as one entry, not tanh, sin and the products inside it
    assert [e.op.name for e in tape.recorded()] == ["IdentityN", "Square", "Sum"]
    v = x.numpy()
    inner = np.tanh(v) * np.sin(v) * 2.0
    d_inner = 2.0 * ((1 - np.tanh(v) ** 2) * np.sin(v) + np.tanh(v) * np.cos(v))
    for _ in range(2):
        np.testing.assert_allclose(tape.gradient(y, x).numpy(), 2 * inner * d_inner,
                                   rtol=1e-12)
    assert len(calls) == 3  # once forward, once per gradient


def test_recompute_grad_reaches_variables_and_skips_integer_arguments():
    w = vj.Variable([[1.0, -2.0], [0.5, 3.0]])
    g = vj.recompute_grad(lambda x, k: vj.reduce_sum(vj.tanh(vj.matmul(x, w)) * vj.cast(k, x.dtype)))
    x = vj.constant([[0.2, -0.4]])
    k = vj.constant(3)
    with vj.GradientTape() as tape:
        tape.watch(x)
        y = g(x, k)
    with pytest.warns(UserWarning, match="must be floating"):  # TF's warning for k
        gx, gw, gk = tape.gradient(y, [x, w, k])
    s = 3 * (1 - np.tanh(x.numpy() @ w.numpy()) ** 2)      # (1, 2)
    np.testing.assert_allclose(gx.numpy(), s @ w.numpy().T, rtol=1e-12)
    np.testing.assert_allclose(gw.numpy(), x.numpy().T @ s, rtol=1e-12)
    assert gk is None


def test_recompute_grad_higher_order_forward_mode_and_pfor():
    f = lambda x: vj.reduce_sum(vj.sin(x) * x ** 2)  # noqa: E731
    g = vj.recompute_grad(f)
    x = np.array([0.5, -1.0, 2.0])
    hess = np.diag(2 * np.sin(x) + 4 * x * np.cos(x) - x ** 2 * np.sin(x))
    np.testing.assert_allclose(vj.hessian(g)(x).numpy(), hess, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(vj.jacfwd(vj.grad(g))(x).numpy(), hess, rtol=1e-12, atol=1e-14)
    _, t = vj.jvp(g, (x,), (np.ones(3),))
    np.testing.assert_allclose(t.numpy(), np.sum(np.cos(x) * x ** 2 + 2 * x * np.sin(x)),
                               rtol=1e-12)
    check_grads(g, [x], order=2, modes=("fwd", "rev"))
