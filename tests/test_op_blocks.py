"""Facts about an op that live in its block (docs/op_block.md), checked from the registry.

- every element-wise op's NumPy `derivative` (forward mode's fast path) gives the bits of
  its `gradient` rule with a cotangent of ones, and both match central differences of its
  forward; `value_and_derivative` agrees with forward and derivative;
- the replay compiler (vecjac/_src/transforms/function/) takes its per-op facts from the
  op objects of vecjac's own library: a user op that borrows a built-in name (vj.defop
  "Mul") is never written in place, fused into a segment or chained.
"""
import numpy as np
import pytest

import vecjac as vj
from tests.test_registry import OPS  # imports every module, so every op is registered
from vecjac._src.core.dispatch import apply
from vecjac._src.core.samples import Arg
from vecjac._src.ops import kernels

WITH_DERIVATIVE = sorted(name for name, op in OPS.items() if op.derivative is not None)
DIMS = {"n": 3, "m": 2}


def _sample_inputs(op, dtype=np.float64):
    """The float argument of each of op's unary samples, drawn as the registry tests do."""
    rng = np.random.default_rng(0)
    for sample in op.samples:
        args = [a for a in sample.args if isinstance(a, Arg)]
        assert len(args) == 1 and args[0].floating, (
            f"{op.name}: an op with a NumPy derivative is unary in a float input")
        yield args[0].value(rng, DIMS, dtype)


def test_the_fast_path_ops_are_known():
    """A block that loses its derivative (or an op that gains one) is a decision."""
    assert set(WITH_DERIVATIVE) >= {
        "Abs", "Acos", "Acosh", "Asin", "Asinh", "Cos", "Cosh", "Exp", "Expm1",
        "Reciprocal", "Rsqrt", "Sigmoid", "Sin", "Sinh", "Sqrt", "Square", "Tan", "Tanh"}


@pytest.mark.parametrize("name", WITH_DERIVATIVE)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_derivative_is_the_gradient_rule_in_numpy(name, dtype):
    op = OPS[name]
    for x in _sample_inputs(op, dtype):
        y = op.forward(x)
        fast = np.asarray(op.derivative(x, y))
        xt = vj.constant(x)
        with vj.GradientTape() as tape:
            tape.watch(xt)
            out = apply(op, xt)
        rule = tape.gradient(out, xt, output_gradients=vj.ones_like(out)).numpy()
        assert fast.dtype == rule.dtype == x.dtype
        # the same operations in the same order: the same bits (1 * v == v exactly)
        np.testing.assert_array_equal(fast, rule, err_msg=name)


@pytest.mark.parametrize("name", WITH_DERIVATIVE)
def test_derivative_matches_central_differences(name):
    op = OPS[name]
    for x in _sample_inputs(op):
        h = 1e-6 * np.maximum(1.0, np.abs(x))
        numeric = (op.forward(x + h) - op.forward(x - h)) / (2 * h)
        np.testing.assert_allclose(op.derivative(x, op.forward(x)), numeric, rtol=1e-6,
                                   atol=1e-8, err_msg=name)


@pytest.mark.parametrize("name", [n for n in WITH_DERIVATIVE
                                  if OPS[n].value_and_derivative is not None])
@pytest.mark.parametrize("size", [5, kernels.SINCOS_MIN_SIZE])  # NumPy, then the kernel
def test_value_and_derivative_agree_with_forward_and_derivative(name, size):
    op = OPS[name]
    x = np.random.default_rng(1).uniform(-4, 4, size)
    value, factor = op.value_and_derivative(x)
    expected = op.forward(x)
    np.testing.assert_allclose(value, expected, rtol=1e-15, atol=1e-15)
    np.testing.assert_allclose(factor, op.derivative(x, expected), rtol=1e-15, atol=1e-15)
    h = 1e-6
    np.testing.assert_allclose(factor, (op.forward(x + h) - op.forward(x - h)) / (2 * h),
                               atol=1e-8)
