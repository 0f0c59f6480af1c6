"""Comparisons, logic, cast and where (vecjac/_src/ops/elementwise/logic.py): forward
against NumPy with broadcasting, dtype rules (weak Python scalars take the tensor's
dtype), the dtype of gradients through cast, and argument errors. Gradients, JVPs,
float32 and pfor of these ops are checked by tests/test_registry.py through the samples
of their op blocks."""
import numpy as np
import pytest

import vecjac as vj

RNG = np.random.default_rng(7)
_any = lambda s: RNG.uniform(-2.0, 2.0, s)  # noqa: E731


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
