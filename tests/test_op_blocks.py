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
from vecjac._src.core.registry import Op, is_builtin
from vecjac._src.core.samples import Arg
from vecjac._src.ops import kernels
from vecjac._src.transforms.function import fusion

WITH_DERIVATIVE = sorted(name for name, op in OPS.items() if op.derivative is not None)
DIMS = {"n": 3, "m": 2}
RNG = np.random.default_rng(7)


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


# -- the replay compiler reads per-op facts from built-in blocks only -----------------------
class _ClaimingMul(Op):
    """A user op named as the built-in Mul, claiming every replay fact of Mul; its forward
    is not a product (x * y + 1), so a replay that believed the claims would be wrong."""
    name = "Mul"
    inplace_ufunc = np.multiply
    fresh_output = True
    fusion_code = fusion.MUL
    scalar_expression = "{0} * {1}"

    def forward(self, x, y):
        return x * y + 1.0


class _ClaimingSelect(Op):
    """A user op claiming to be a where(cond, x, y) (it returns x + y where cond)."""
    name = "SelectV2"
    selects_by_condition = True

    def forward(self, cond, x, y):
        return np.where(cond, x + y, y)


CLAIMING_MUL = _ClaimingMul()
DEFOP_MUL = vj.defop("OpBlocksUserMul", lambda x, y: x * y + 1.0)
for _fact, _value in vars(_ClaimingMul).items():
    if _fact in ("inplace_ufunc", "fresh_output", "fusion_code", "scalar_expression"):
        setattr(type(DEFOP_MUL), _fact, _value)


def _plan(f):
    return next(iter(f._entries.values())).plans[0]


def _user_steps(steps):
    return [s for s in steps if s.kind == "op" and not is_builtin(s.op)
            and type(s.op).__name__ not in ("_ChainOp", "_FusedOp")]


@pytest.mark.parametrize("user_op", [CLAIMING_MUL, DEFOP_MUL], ids=["named Mul", "defop"])
def test_a_user_op_is_not_fused_into_a_segment(user_op):
    def f(x, c):
        for _ in range(30):  # a long run of small float64 steps: one fused segment
            x = apply(user_op, x, c) * 0.5
        return x
    g = vj.function(f)
    for _ in range(4):  # trace, warm-up replays, then the compiled segment
        x, c = vj.constant(RNG.standard_normal(5)), vj.constant(RNG.standard_normal(5))
        np.testing.assert_array_equal(g(x, c).numpy(), _eager(f, x, c))
    plan = _plan(g)
    assert len(_user_steps(plan.fused_steps)) == 30  # every one still its own step
    assert all(s.op is not user_op for s in plan.fused_steps if s.kind == "op"
               for s in getattr(s.op.forward, "steps", ()))


@pytest.mark.parametrize("user_op", [CLAIMING_MUL, DEFOP_MUL], ids=["named Mul", "defop"])
def test_a_user_op_is_not_written_in_place_nor_chained(user_op):
    def f(x, c):
        a = vj.exp(x)                     # a fresh array, dead after the next step
        b = apply(user_op, a, c)          # a user "ufunc" would write into a
        d = vj.tanh(b) * 2.0              # tanh could write into b, were b fresh
        return apply(user_op, d, d) - 1.0  # a chain candidate over a large shape
    g = vj.function(f)
    for _ in range(4):
        x = vj.constant(RNG.standard_normal((150, 150)) * 0.1)
        c = vj.constant(RNG.standard_normal((150, 150)))
        np.testing.assert_array_equal(g(x, c).numpy(), _eager(f, x, c))
    plan = _plan(g)
    users = _user_steps(plan.fused_steps)
    assert len(users) == 2 and all(s.into is None for s in users)
    produced_by_user = {s.outs[0] for s in users}
    assert all(s.into not in produced_by_user for s in plan.fused_steps
               if s.kind == "op" and s.into is not None)


def test_a_user_select_is_replayed_not_replaced_by_a_branch():
    claiming = _ClaimingSelect()

    def f(x, y):
        return apply(claiming, vj.constant(np.ones(3, bool)), x, y)  # a constant cond
    g = vj.function(f)
    for _ in range(3):
        x, y = vj.constant(RNG.standard_normal(3)), vj.constant(RNG.standard_normal(3))
        np.testing.assert_array_equal(g(x, y).numpy(), (x + y).numpy())
    assert len(_user_steps(_plan(g).steps)) == 1


def _eager(f, *args):
    return f(*args).numpy()
