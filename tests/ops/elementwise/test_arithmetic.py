"""Binary arithmetic (vecjac/_src/ops/elementwise/arithmetic.py): forward against NumPy
with broadcasting, TF's semantics at special points (ties, pow at x <= 0), dtype rules
(weak Python scalars keep float32) and argument errors. Gradients, JVPs, float32 and pfor
of these ops are checked by tests/test_registry.py through the samples of their op
blocks."""
import numpy as np
import pytest

import vecjac as vj

RNG = np.random.default_rng(7)

# name: (vecjac function, NumPy oracle, domain of x, domain of y)
_any = lambda s: RNG.uniform(-2.0, 2.0, s)  # noqa: E731
_pos = lambda s: RNG.uniform(0.5, 2.0, s)  # noqa: E731
_away = lambda s: RNG.uniform(0.5, 2.0, s) * RNG.choice([-1.0, 1.0], s)  # noqa: E731
BINARY = {
    "add": (vj.add, np.add, _any, _any),
    "subtract": (vj.subtract, np.subtract, _any, _any),
    "multiply": (vj.multiply, np.multiply, _any, _any),
    "divide": (vj.divide, np.divide, _any, _away),
    "pow": (vj.pow, np.power, _pos, _any),
    "maximum": (vj.maximum, np.maximum, _any, _any),
    "minimum": (vj.minimum, np.minimum, _any, _any),
    "squared_difference": (vj.math.squared_difference, lambda x, y: (x - y) ** 2, _any, _any),
}
SHAPE_PAIRS = [((), ()), ((3,), (3,)), ((3, 1), (4,)), ((), (2, 3)), ((2, 1, 3), (4, 1))]


@pytest.mark.parametrize("name", sorted(BINARY))
@pytest.mark.parametrize("sx,sy", SHAPE_PAIRS)
def test_binary_forward_matches_numpy(name, sx, sy):
    f, ref, dx, dy = BINARY[name]
    x, y = dx(sx), dy(sy)
    out = f(x, y)
    assert out.shape == np.broadcast_shapes(sx, sy) and out.dtype == np.float64
    np.testing.assert_allclose(out.numpy(), ref(x, y), rtol=1e-14)


def test_operators_keep_float32():
    x = vj.constant(np.array([1.0, 2.0], dtype=np.float32))
    for out in (x + 2.0, 2.0 + x, x - 1, 1 - x, x * 3.0, 3.0 * x, x / 2.0, 2.0 / x,
                x ** 2, 2.0 ** x, -x, abs(x), x // 2.0, x % 1.5):
        assert out.dtype == np.float32, out
    np.testing.assert_array_equal((x + 2.0).numpy(), [3.0, 4.0])
    with vj.GradientTape() as tape:
        tape.watch(x)
        y = (x + 2.0) * x ** 2 / 3.0
    g = tape.gradient(y, x)
    assert g.dtype == np.float32
    np.testing.assert_allclose(g.numpy(), (3 * x.numpy() ** 2 + 4 * x.numpy()) / 3.0, rtol=1e-6)


def test_operators_with_numpy_arrays():
    x = vj.constant([1.0, 2.0])
    out = np.array([10.0, 20.0]) + x  # __array_priority__: the Tensor's operator runs
    assert isinstance(out, vj.Tensor)
    np.testing.assert_array_equal(out.numpy(), [11.0, 22.0])
    np.testing.assert_array_equal((x @ np.eye(2)).numpy(), [1.0, 2.0])


def test_pow_gradient_for_y_at_nonpositive_x_is_zero():
    x = vj.constant([0.0, -2.0, 2.0])
    y = vj.constant([2.0, 2.0, 2.0])
    with vj.GradientTape() as tape:
        tape.watch([x, y])
        out = vj.reduce_sum(vj.pow(x, y))
    gx, gy = tape.gradient(out, [x, y])
    np.testing.assert_allclose(gx.numpy(), [0.0, -4.0, 4.0])
    np.testing.assert_allclose(gy.numpy(), [0.0, 0.0, 4.0 * np.log(2.0)])


def test_pow_constant_exponents_at_zero():
    # d/dx x**0 = 0 everywhere (x**0 is 1), d2/dx2 x**1 = 0 everywhere: no 0 * inf NaN at 0
    x = np.array([0.0, 2.0])
    np.testing.assert_array_equal(vj.grad(lambda x: vj.reduce_sum(x ** 0.0))(x).numpy(),
                                  [0.0, 0.0])
    np.testing.assert_array_equal(vj.grad(lambda x: vj.reduce_sum(x ** 1.0))(x).numpy(),
                                  [1.0, 1.0])
    np.testing.assert_array_equal(vj.hessian(lambda x: vj.reduce_sum(x ** 1.0))(x).numpy(),
                                  np.zeros((2, 2)))
    np.testing.assert_array_equal(vj.hessian(lambda x: vj.reduce_sum(x ** 0.0))(x).numpy(),
                                  np.zeros((2, 2)))


@pytest.mark.parametrize("fn", [vj.maximum, vj.minimum])
def test_extremum_ties_go_to_x(fn):
    x, y = vj.constant([1.0, 2.0]), vj.constant([1.0, 0.0])
    with vj.GradientTape() as tape:
        tape.watch([x, y])
        out = vj.reduce_sum(fn(x, y))
    gx, gy = tape.gradient(out, [x, y])
    assert gx.numpy()[0] == 1.0 and gy.numpy()[0] == 0.0


def test_floor_ops():
    x, y = np.array([5.0, -5.0, 7.5]), np.array([3.0, 3.0, -2.0])
    np.testing.assert_array_equal(vj.math.floordiv(x, y).numpy(), np.floor_divide(x, y))
    np.testing.assert_array_equal(vj.math.floormod(x, y).numpy(), np.mod(x, y))


def test_negative():
    x = _any((2, 3))
    np.testing.assert_array_equal(vj.negative(x).numpy(), -x)


@pytest.mark.parametrize("fn", [vj.add, vj.subtract, vj.multiply, vj.divide, vj.pow,
                                vj.maximum, vj.minimum, vj.equal, vj.less])
def test_binary_shape_errors(fn):
    with pytest.raises(ValueError, match=r"shapes are not broadcastable: x shape \(3,\), "
                                         r"y shape \(4,\)"):
        fn(np.ones(3), np.ones(4))


def test_pow_integer_negative_exponent():
    with pytest.raises(ValueError, match="pow: an integer x cannot be raised"):
        vj.pow(np.array([2, 3]), -1)
    np.testing.assert_array_equal(vj.pow(np.array([2, 3]), 2).numpy(), [4, 9])


def test_binary_rejects_non_numeric():
    with pytest.raises(TypeError):
        vj.add(np.array(["a"]), 1.0)
