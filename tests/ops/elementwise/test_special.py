"""erf / erfc and xlogy / xdivy (vecjac/_src/ops/elementwise/special.py): accuracy
against math.erf / math.erfc over the whole range and the tails, special values, forward
of xlogy / xdivy against NumPy with broadcasting and their value at x = 0, dtype rules,
errors. Gradients, JVPs, float32 gradients and pfor of these ops: tests/test_registry.py,
through the samples of their op blocks."""
import math

import numpy as np
import pytest

import vecjac as vj

RNG = np.random.default_rng(1234)


def _real(shape):
    return RNG.uniform(-2.0, 2.0, shape)


def _positive(shape):
    return RNG.uniform(0.3, 3.0, shape)


_erf_ref = np.vectorize(math.erf)
_erfc_ref = np.vectorize(math.erfc)


# -- erf / erfc accuracy (independent oracle: math.erf / math.erfc) ------------------------
@pytest.mark.parametrize("n", [5, 20001])  # small arrays and the vectorized path
def test_erf_accuracy(n):
    x = np.concatenate([np.linspace(-7.0, 7.0, n), np.geomspace(1e-300, 1e-3, 7),
                        -np.geomspace(1e-300, 1e-3, 7)])
    ref = _erf_ref(x)
    got = vj.math.erf(x).numpy()
    rel = np.abs(got - ref) / np.maximum(np.abs(ref), 1e-300)
    assert rel.max() < 1e-15


def test_erf_special_values():
    x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 6.0, -30.0] + [0.3] * 40)
    out = vj.math.erf(x).numpy()
    np.testing.assert_array_equal(out[:4], [0.0, -0.0, 1.0, -1.0])
    assert np.signbit(out[1]) and np.isnan(out[4])
    np.testing.assert_array_equal(out[5:7], [1.0, -1.0])
    assert vj.math.erf(np.float32(0.5)).dtype == np.float32
    np.testing.assert_allclose(vj.math.erf(np.linspace(-3, 3, 50).astype(np.float32)).numpy(),
                               _erf_ref(np.linspace(-3, 3, 50)), rtol=1e-6, atol=1e-7)


def test_erfc_accuracy_in_the_tail():
    x = np.concatenate([np.linspace(-6.0, 26.0, 3001), [0.0, 1.0, 2.0]])
    ref = _erfc_ref(x)
    got = vj.math.erfc(x).numpy()
    nonzero = ref > 0
    rel = np.abs(got[nonzero] - ref[nonzero]) / ref[nonzero]
    assert rel.max() < 1e-13  # 1 - erf would lose everything past x ~ 6
    np.testing.assert_array_equal(got[~nonzero], 0.0)


# -- xlogy / xdivy -------------------------------------------------------------------------
BINARY = {"xlogy": (vj.math.xlogy, lambda x, y: x * np.log(y)),
          "xdivy": (vj.math.xdivy, lambda x, y: x / y)}


@pytest.mark.parametrize("name", sorted(BINARY))
@pytest.mark.parametrize("sx,sy", [((), ()), ((3,), (3,)), ((3, 1), (4,)), ((), (2, 3))])
def test_special_binary_forward(name, sx, sy):
    f, ref = BINARY[name]
    x, y = _real(sx), _positive(sy)
    out = f(x, y)
    assert out.shape == np.broadcast_shapes(sx, sy)
    np.testing.assert_allclose(out.numpy(), ref(x, y), rtol=1e-14)


@pytest.mark.parametrize("name", sorted(BINARY))
def test_special_binary_zero_x(name):
    f, _ = BINARY[name]
    x = vj.constant([0.0, 0.0, 2.0])
    y = vj.constant([0.0, np.nan, 4.0])
    with vj.GradientTape() as tape:
        tape.watch([x, y])
        out = f(x, y)
        total = vj.reduce_sum(out)
    gx, gy = tape.gradient(total, [x, y])
    assert out.numpy()[0] == 0.0 and out.numpy()[1] == 0.0  # 0 even for y = 0 or NaN
    assert gx.numpy()[0] == 0.0 and gy.numpy()[0] == 0.0  # as TF: no NaN at x = 0
    expected_gx = np.log(4.0) if name == "xlogy" else 0.25
    np.testing.assert_allclose(gx.numpy()[2], expected_gx)


def test_special_binary_errors():
    with pytest.raises(TypeError, match="xlogy: x must be a floating"):
        vj.math.xlogy(np.array([1, 2]), np.array([1.0, 2.0]))
    with pytest.raises(TypeError, match="xdivy: x and y must have the same dtype"):
        vj.math.xdivy(np.float32([1.0]), np.float64([1.0]))
    with pytest.raises(ValueError, match="xlogy: shapes are not broadcastable"):
        vj.math.xlogy(np.ones(3), np.ones(4))


def test_erf_rejects_complex():
    with pytest.raises(TypeError, match="erf: x must be a real"):
        vj.math.erf(np.array([1j]))
