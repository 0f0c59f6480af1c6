"""Binary arithmetic, comparisons, logic, cast and where: forward against NumPy with
broadcasting, TF's semantics at special points (ties, pow at x <= 0), dtype rules (weak
Python scalars keep float32) and argument errors. Gradients, JVPs, float32 and pfor of
these ops are checked by tests/test_registry.py through the samples of their op blocks."""
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


# -- comparisons and logic -----------------------------------------------------------------
COMPARE = {"equal": np.equal, "not_equal": np.not_equal, "greater": np.greater,
           "greater_equal": np.greater_equal, "less": np.less, "less_equal": np.less_equal}
LOGIC = {"logical_and": np.logical_and, "logical_or": np.logical_or,
         "logical_xor": np.logical_xor}


@pytest.mark.parametrize("name", sorted(COMPARE))
def test_comparisons(name):
    f, ref = getattr(vj, name), COMPARE[name]
    x = np.array([[1.0], [2.0], [3.0]])
    y = np.array([1.0, 2.5, 3.0, 0.0])
    out = f(x, y)
    assert out.dtype == np.bool_
    np.testing.assert_array_equal(out.numpy(), ref(x, y))
    xv = vj.constant(x)
    with vj.GradientTape() as tape:
        tape.watch(xv)
        z = vj.where(f(xv, y), xv * 2.0, xv * 3.0)
    # the condition passes no gradient; the selected branch does
    np.testing.assert_allclose(tape.gradient(z, xv).numpy(),
                               np.where(ref(x, y), 2.0, 3.0).sum(axis=1, keepdims=True))


@pytest.mark.parametrize("name", sorted(LOGIC))
def test_logical(name):
    f, ref = getattr(vj, name), LOGIC[name]
    a = np.array([[True], [False]])
    b = np.array([True, False, True])
    np.testing.assert_array_equal(f(a, b).numpy(), ref(a, b))


def test_logical_not_and_operators():
    a = vj.constant([True, False])
    np.testing.assert_array_equal(vj.logical_not(a).numpy(), [False, True])
    np.testing.assert_array_equal((~a).numpy(), [False, True])
    np.testing.assert_array_equal((a & [True, True]).numpy(), [True, False])
    np.testing.assert_array_equal((a | [False, True]).numpy(), [True, True])
    np.testing.assert_array_equal((a ^ [True, True]).numpy(), [False, True])
    x = vj.constant([1.0, 2.0])
    np.testing.assert_array_equal((x == 2.0).numpy(), [False, True])
    np.testing.assert_array_equal((x < 2.0).numpy(), [True, False])


# -- cast --------------------------------------------------------------------------------
def test_cast_forward_and_gradient_dtype():
    x = vj.constant([1.5, -2.5])
    np.testing.assert_array_equal(vj.cast(x, vj.int32).numpy(), np.array([1, -2]))
    assert vj.cast(x, "float32").dtype == np.float32
    with vj.GradientTape() as tape:
        tape.watch(x)
        y = vj.cast(x, vj.float32) * 2.0
    g = tape.gradient(y, x)
    assert g.dtype == np.float64
    np.testing.assert_array_equal(g.numpy(), [2.0, 2.0])


def test_cast_to_int_has_no_gradient():
    x = vj.constant([1.5, 2.5])
    with vj.GradientTape() as tape:
        tape.watch(x)
        y = vj.cast(vj.cast(x, vj.int64), vj.float64)
    assert tape.gradient(y, x) is None


def test_cast_errors():
    with pytest.raises(TypeError, match="cast: dtype"):
        vj.cast([1.0], "not-a-dtype")
    with pytest.raises(TypeError, match="cast: dtype must be numeric"):
        vj.cast([1.0], str)
    with pytest.raises(TypeError, match="cast: dtype"):
        vj.cast([1.0], None)


# -- where ---------------------------------------------------------------------------------
@pytest.mark.parametrize("sc,sx,sy", [((3,), (3,), (3,)), ((3, 1), (4,), ()),
                                      ((), (2, 3), (2, 3)), ((2, 3), (3,), (2, 1))])
def test_where_forward(sc, sx, sy):
    cond = RNG.uniform(size=sc) > 0.5
    x, y = _any(sx), _any(sy)
    out = vj.where(cond, x, y)
    np.testing.assert_array_equal(out.numpy(), np.where(cond, x, y))


def test_where_python_scalar_takes_the_tensor_dtype():
    x = vj.constant(np.ones(3, np.float32))
    out = vj.where(np.array([True, False, True]), x * 2.0, 0.0)
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out.numpy(), [2.0, 0.0, 2.0])


def test_where_errors():
    with pytest.raises(TypeError, match="where: condition must be a bool"):
        vj.where(np.array([1.0]), 1.0, 2.0)
    with pytest.raises(ValueError, match="where: give both x and y"):
        vj.where(np.array([True]), 1.0)
    with pytest.raises(ValueError, match="where: shapes are not broadcastable"):
        vj.where(np.array([True, False]), np.ones(3), 0.0)


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
