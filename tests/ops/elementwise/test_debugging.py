"""vj.debugging.check_numerics (vecjac/_src/ops/elementwise/debugging.py): the value passes unchanged,
NaN / Inf raise ValueError (TF's InvalidArgumentError) with TF's wording after the
message, in every transform: tapes (the gradient is checked too), forward mode, pfor (one
check of the stacked value, no per-iteration loop) and vj.function's replay."""

import numpy as np
import pytest

import vecjac as vj
from vecjac._src.ops.elementwise import debugging as debugging_ops
from vecjac.testing import check_grads, numerical_jacobian

RNG = np.random.default_rng(5)
check_numerics = vj.debugging.check_numerics


def test_finite_values_pass_unchanged():
    x = RNG.normal(size=(2, 3))
    np.testing.assert_array_equal(check_numerics(x, "x").numpy(), x)
    f32 = check_numerics(x.astype(np.float32), "")
    assert f32.dtype == np.float32 and f32.shape == (2, 3)
    assert float(check_numerics(2.5, "scalar")) == 2.5
    assert check_numerics(np.zeros((0, 3)), "empty").shape == (0, 3)


@pytest.mark.parametrize("values,found", [
    ([1.0, np.nan], "NaN"), ([np.inf, 1.0], "Inf"), ([-np.inf, 0.0], "Inf"),
    ([np.nan, -np.inf], "Inf and NaN")])
def test_nan_and_inf_raise_with_tf_wording(values, found):
    with pytest.raises(ValueError, match=f"^check_numerics: Checking b : Tensor had {found} "
                                         "values"):
        check_numerics(np.array(values), "Checking b")


def test_bad_arguments():
    with pytest.raises(TypeError, match="check_numerics: message must be a str, got int"):
        check_numerics([1.0], 3)
    with pytest.raises(TypeError, match="check_numerics: tensor must be a floating point"):
        check_numerics(np.array([1, 2]), "ints")
    with pytest.raises(TypeError, match="check_numerics: tensor must be a floating point"):
        check_numerics(np.array([1j]), "complex")


def test_gradient_passes_through_and_is_checked():
    x = RNG.normal(size=(2, 3))
    check_grads(lambda v: check_numerics(v * v, "square") * 3.0, [x], order=2,
                modes=("fwd", "rev"))
    jac = vj.jacobian(lambda v: check_numerics(vj.sin(v), "sin"), mode="rev")(x).numpy()
    np.testing.assert_allclose(jac, numerical_jacobian(np.sin, x), rtol=1e-6, atol=1e-9)
    # TF checks the cotangent too, naming the gradient and the message
    t = vj.constant([1.0, 2.0])
    with vj.GradientTape() as tape:
        tape.watch(t)
        loss = vj.reduce_sum(check_numerics(t, "t") * np.inf)
    with pytest.raises(ValueError, match="gradient of check_numerics. t : Tensor had Inf"):
        tape.gradient(loss, t)


def test_forward_mode_checks_the_tangent():
    x = vj.constant([1.0, 2.0])
    with vj.autodiff.ForwardAccumulator(x, vj.constant([1.0, -1.0])) as acc:
        y = check_numerics(x * x, "y")
    np.testing.assert_allclose(acc.jvp(y).numpy(), [2.0, -4.0])
    with pytest.raises(ValueError, match="tangent of check_numerics. y : Tensor had NaN"), \
            vj.autodiff.ForwardAccumulator(x, vj.constant([np.nan, 1.0])):
        check_numerics(x * x, "y")


def test_pfor_checks_the_stacked_value_once(monkeypatch):
    seen = []

    def counting(x, check=debugging_ops._problem):
        seen.append(x.shape)
        return check(x)
    monkeypatch.setattr(debugging_ops, "_problem", counting)
    batch = RNG.normal(size=(5, 3))
    out = vj.vectorize.pfor(lambda i: check_numerics(vj.gather(batch, i), "row"), 5,
                            fallback_to_while_loop=False)
    np.testing.assert_array_equal(out.numpy(), batch)
    assert seen == [(5, 3)]  # one check of all iterations, not five
    batch[3, 1] = np.nan
    with pytest.raises(ValueError, match="check_numerics: row : Tensor had NaN values"):
        vj.vectorized_map(lambda r: check_numerics(r, "row"), vj.constant(batch))


def test_function_replay_checks_new_values():
    f = vj.function(lambda v: check_numerics(v * 2.0, "doubled"))
    np.testing.assert_array_equal(f(np.array([1.0, 2.0])).numpy(), [2.0, 4.0])
    np.testing.assert_array_equal(f(np.array([3.0, 4.0])).numpy(), [6.0, 8.0])
    with pytest.raises(ValueError, match="doubled : Tensor had Inf values"):
        f(np.array([np.inf, 1.0]))
