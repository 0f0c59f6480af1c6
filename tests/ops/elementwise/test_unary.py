"""Element-wise unary math (vecjac/_src/ops/elementwise/unary.py): forward against NumPy
and math (float64, and float32 to float32 accuracy), special values, dtype rules, errors.
Gradients, JVPs, float32 gradients and pfor of these ops: tests/test_registry.py, through
the samples of their op blocks. erf / erfc are in the table too; their accuracy and
xlogy / xdivy: tests/ops/elementwise/test_special.py."""
import math
import warnings

import numpy as np
import pytest

import vecjac as vj

RNG = np.random.default_rng(1234)


def _real(shape):
    return RNG.uniform(-2.0, 2.0, shape)


def _positive(shape):
    return RNG.uniform(0.3, 3.0, shape)


def _unit(shape):
    return RNG.uniform(-0.9, 0.9, shape)


def _above_one(shape):
    return RNG.uniform(1.2, 3.0, shape)


def _nonzero(shape):
    return RNG.uniform(0.3, 2.0, shape) * RNG.choice([-1.0, 1.0], shape)


def _tan_domain(shape):
    return RNG.uniform(-1.2, 1.2, shape)


_erf_ref = np.vectorize(math.erf)
_erfc_ref = np.vectorize(math.erfc)

# name: (vecjac function, oracle, input domain)
UNARY = {
    "exp": (vj.exp, np.exp, _real),
    "log": (vj.log, np.log, _positive),
    "log1p": (vj.math.log1p, np.log1p, _positive),
    "expm1": (vj.math.expm1, np.expm1, _real),
    "sqrt": (vj.sqrt, np.sqrt, _positive),
    "rsqrt": (vj.math.rsqrt, lambda x: 1 / np.sqrt(x), _positive),
    "square": (vj.square, np.square, _real),
    "abs": (vj.abs, np.abs, _nonzero),
    "sin": (vj.sin, np.sin, _real),
    "cos": (vj.cos, np.cos, _real),
    "tan": (vj.tan, np.tan, _tan_domain),
    "asin": (vj.asin, np.arcsin, _unit),
    "acos": (vj.acos, np.arccos, _unit),
    "atan": (vj.atan, np.arctan, _real),
    "sinh": (vj.sinh, np.sinh, _real),
    "cosh": (vj.cosh, np.cosh, _real),
    "tanh": (vj.tanh, np.tanh, _real),
    "asinh": (vj.math.asinh, np.arcsinh, _real),
    "acosh": (vj.math.acosh, np.arccosh, _above_one),
    "atanh": (vj.math.atanh, np.arctanh, _unit),
    "reciprocal": (vj.math.reciprocal, lambda x: 1 / x, _nonzero),
    "erf": (vj.math.erf, _erf_ref, _real),
    "erfc": (vj.math.erfc, _erfc_ref, _real),
}
# name -> (vecjac op, NumPy reference, TF's tape.gradient is None): TF 2.x registers no
# gradient for Floor, Ceil, Round (None) and zeros for Sign (checked with tensorflow-cpu)
PIECEWISE_CONSTANT = {
    "sign": (vj.sign, np.sign, False),
    "floor": (vj.math.floor, np.floor, True),
    "ceil": (vj.math.ceil, np.ceil, True),
    "round": (vj.math.round, np.round, True),
}
SHAPES = [(), (3,), (2, 3)]


@pytest.mark.parametrize("name", sorted(UNARY))
@pytest.mark.parametrize("shape", SHAPES)
def test_unary_forward_matches_oracle(name, shape):
    f, ref, domain = UNARY[name]
    x = domain(shape)
    out = f(x)
    assert out.shape == shape and out.dtype == np.float64
    np.testing.assert_allclose(out.numpy(), ref(x), rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_float32_values_are_accurate(name):
    """float32 to float32 accuracy (the registry only asks for closeness to float64)."""
    f, ref, domain = UNARY[name]
    x = domain((4,)).astype(np.float32)
    y = f(x)
    assert y.dtype == np.float32
    np.testing.assert_allclose(y.numpy(), ref(x.astype(np.float64)), rtol=2e-6, atol=1e-6)


@pytest.mark.parametrize("name", sorted(PIECEWISE_CONSTANT))
def test_piecewise_constant(name):
    f, ref, unconnected = PIECEWISE_CONSTANT[name]
    x = np.array([-2.5, -1.2, -0.5, 0.0, 0.5, 1.5, 2.5, 3.7])
    np.testing.assert_array_equal(f(x).numpy(), ref(x))
    xv = vj.constant(x)  # zero gradient, also at the jumps (0, +-0.5 for round)
    with vj.GradientTape(persistent=True) as tape:
        tape.watch(xv)
        y = vj.reduce_sum(f(xv) * xv)  # product rule: f(x) + x * f'(x) = f(x)
        z = vj.reduce_sum(f(xv))
    np.testing.assert_array_equal(tape.gradient(y, xv).numpy(), ref(x))
    if unconnected:
        assert tape.gradient(z, xv) is None
    np.testing.assert_array_equal(
        tape.gradient(z, xv, unconnected_gradients="zero").numpy(), np.zeros(8))
    # the functional transforms give zeros, in every mode, and say why
    for transform in (vj.grad, vj.jacfwd, vj.jacrev, vj.hessian):
        g = lambda v: vj.reduce_sum(f(v)) if transform in (vj.grad, vj.hessian) else f(v)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            d = transform(g)(x).numpy()
        assert not d.any() and d.shape == (8,) * (1 if transform is vj.grad else 2)
        if unconnected:
            assert any("only through ops without a derivative" in str(w.message)
                       for w in caught), transform


def test_round_is_half_to_even():
    np.testing.assert_array_equal(vj.math.round([0.5, 1.5, 2.5, -0.5]).numpy(),
                                  [0.0, 2.0, 2.0, -0.0])


def test_predicates():
    x = np.array([1.0, np.nan, np.inf, -np.inf])
    np.testing.assert_array_equal(vj.math.is_nan(x).numpy(), np.isnan(x))
    np.testing.assert_array_equal(vj.math.is_inf(x).numpy(), np.isinf(x))
    np.testing.assert_array_equal(vj.math.is_finite(x).numpy(), np.isfinite(x))
    assert vj.math.is_nan(x).dtype == np.bool_
    xv = vj.constant(x)
    with vj.GradientTape() as tape:
        tape.watch(xv)
        y = vj.math.is_nan(xv)
    with pytest.warns(UserWarning, match="must be floating"):
        assert tape.gradient(y, xv) is None  # not differentiable: never recorded


def test_integer_inputs_follow_numpy():
    assert vj.exp(np.array([1, 2])).dtype == np.float64
    assert vj.square(np.array([1, 2], dtype=np.int32)).dtype == np.int32
    assert vj.math.erf(np.array([0, 1])).dtype == np.float64


@pytest.mark.parametrize("fn", [vj.exp, vj.sin, vj.sqrt, vj.abs])
def test_unary_rejects_non_numeric(fn):
    with pytest.raises(TypeError, match="x must be a numeric"):
        fn(np.array([True, False]))
    with pytest.raises(TypeError):
        fn("abc")
