"""pfor, for_loop, vectorized_map: the loop contract, chunking, fallback and levels."""
import functools
import warnings

import numpy as np
import pytest

import vecjac as vj
from vecjac.testing import check_pfor
from vecjac.vectorize import FallbackWarning, for_loop, vectorized_map
from vecjac.vectorize import pfor

RNG = np.random.default_rng(0)
X = RNG.standard_normal((5, 3))
W = RNG.standard_normal((3, 4))


def body(i):
    x = vj.gather(vj.constant(X), i)          # stacked (3,)
    h = vj.tanh(vj.matmul(x, vj.constant(W)))  # stacked (4,)
    return {"h": h, "s": vj.reduce_sum(h * h), "c": vj.constant(W)}


def test_pfor_matches_loop_and_numpy():
    out = pfor(body, 5)
    expected = np.tanh(X @ W)
    np.testing.assert_allclose(out["h"].numpy(), expected, rtol=1e-12)
    np.testing.assert_allclose(out["s"].numpy(), (expected ** 2).sum(1), rtol=1e-12)
    # a loop-invariant output is tiled along the loop axis
    assert out["c"].shape == (5, 3, 4)
    np.testing.assert_array_equal(out["c"].numpy()[2], W)
    check_pfor(body, 5)


def test_none_outputs_stay_none():
    out = pfor(lambda i: (None, vj.cast(i, vj.float64)), 3)
    assert out[0] is None
    np.testing.assert_array_equal(out[1].numpy(), [0.0, 1.0, 2.0])


@pytest.mark.parametrize("p", [None, 2, 3, 5, 9])
def test_parallel_iterations_same_result(p):
    ref = for_loop(body, 5)
    out = pfor(body, 5, parallel_iterations=p)
    for k in ("h", "s", "c"):
        np.testing.assert_allclose(out[k].numpy(), ref[k].numpy(), rtol=1e-12)


@pytest.mark.parametrize("p, match", [(0, "positive integer"), (-3, "positive integer"),
                                      (1.5, "positive integer"), (1, "for_loop")])
def test_parallel_iterations_errors(p, match):
    with pytest.raises(ValueError, match=match):
        pfor(body, 5, parallel_iterations=p)


@pytest.mark.parametrize("bad", [-1, 2.5, "3", None])
def test_iters_errors(bad):
    with pytest.raises(ValueError, match="iters"):
        pfor(body, bad)


def test_loop_fn_not_callable():
    with pytest.raises(TypeError, match="loop_fn"):
        pfor(3, 3)


def test_nested_pfor():
    A = RNG.standard_normal((4, 3))

    def outer(i):
        a = vj.gather(vj.constant(A), i)  # (3,)

        def inner(j):
            return a * vj.cast(j, vj.float64) + vj.gather(a, j)
        return pfor(inner, 3)
    out = pfor(outer, 4)
    expected = A[:, None, :] * np.arange(3)[None, :, None] + A[:, :, None]
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-12)


def test_bool_of_loop_variant_value_points_to_cond():
    def loop_fn(i):
        if i > 2:
            return i
        return i
    with pytest.raises(TypeError, match="vj.cond"):
        pfor(loop_fn, 4)


def test_loop_variant_value_used_after_the_loop():
    leaked = []

    def loop_fn(i):
        leaked.append(i)
        return i
    pfor(loop_fn, 3)
    with pytest.raises(ValueError, match="finished"):
        leaked[0] + 1


# -- fallback ----------------------------------------------------------------------------
CUBE = vj.defop("TestCubeNoConverter", forward=lambda x: x ** 3,
                gradient=lambda e, g: g * 3 * e.inputs[0] * e.inputs[0])


def test_fallback_runs_per_iteration_with_a_warning():
    def loop_fn(i):
        return CUBE(vj.gather(vj.constant(X), i)) + 1.0
    with pytest.warns(FallbackWarning, match="TestCubeNoConverter"):
        out = pfor(loop_fn, 5, warn=True)
    np.testing.assert_allclose(out.numpy(), X ** 3 + 1, rtol=1e-12)


def test_fallback_disabled_raises_naming_the_op():
    def loop_fn(i):
        return CUBE(vj.gather(vj.constant(X), i))
    with pytest.raises(ValueError, match="TestCubeNoConverter"):
        pfor(loop_fn, 5, fallback_to_while_loop=False)


def test_fallback_is_differentiable_and_jacobian_matches_loop():
    x = vj.constant(X[0])
    with vj.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = CUBE(x) * 2.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FallbackWarning)
        j = tape.jacobian(y, x)
    np.testing.assert_allclose(j.numpy(), np.diag(6 * X[0] ** 2), rtol=1e-12)


SQUARE_NDARRAY = vj.defop("TestSquareConverterGivesNdarray", forward=lambda x: x * x,
                          converter=lambda op, cx, x: x._value * x._value)
SQUARE_PER_ITERATION = vj.defop("TestSquareConverterDropsLoopAxis", forward=lambda x: x * x,
                                converter=lambda op, cx, x: (x * x)[0])
SQUARE_FAMILY = vj.defop("TestSquareFamilyConverter", forward=lambda x: x * x,
                         converter=vj.vectorize.elementwise)


@pytest.mark.parametrize("op, error, match", [
    (SQUARE_NDARRAY, TypeError, "converter of TestSquareConverterGivesNdarray returned an "
                                "object of type ndarray"),
    (SQUARE_PER_ITERATION, ValueError, r"converter of TestSquareConverterDropsLoopAxis "
                                       r"returned shape \(3,\).*cx.iters = 5"),
])
def test_user_converter_breaking_the_contract_is_named(op, error, match):
    # built-in and user converters share one contract: Tensors made with vecjac ops, loop
    # axis first (the per-iteration value was silently returned as the stacked one)
    with pytest.raises(error, match=match):
        pfor(lambda i: op(vj.gather(vj.constant(X), i)), 5)


def test_user_converter_can_be_a_family_rule():
    with warnings.catch_warnings():
        warnings.simplefilter("error", FallbackWarning)
        out = pfor(lambda i: SQUARE_FAMILY(vj.gather(vj.constant(X), i)), 5)
    np.testing.assert_array_equal(out.numpy(), X * X)


# -- vectorized_map ----------------------------------------------------------------------
def test_vectorized_map_nest_and_broadcast():
    a = RNG.standard_normal((6, 2))
    b = RNG.standard_normal((1, 2))  # first dimension 1 broadcasts
    out = vectorized_map(lambda e: e["a"] * e["b"], {"a": vj.constant(a), "b": vj.constant(b)})
    np.testing.assert_allclose(out.numpy(), a * b, rtol=1e-12)
    assert vj.vectorized_map is vectorized_map


def test_vectorized_map_errors():
    with pytest.raises(ValueError, match="first dimensions"):
        vectorized_map(lambda e: e, [vj.constant(np.ones((3, 2))), vj.constant(np.ones((4, 2)))])
    with pytest.raises(ValueError, match="rank >= 1"):
        vectorized_map(lambda e: e, vj.constant(1.0))


# -- the three level cases of ARCHITECTURE.md ---------------------------------------------
def test_per_example_gradients_tape_inside_loop():
    """A tape inside the loop differentiates each example: gradients w.r.t. the
    loop-invariant kernel come out per example, not summed."""
    w = vj.constant(W)

    def per_example(x):
        with vj.GradientTape() as tape:
            tape.watch(w)
            loss = vj.reduce_sum(vj.tanh(vj.matmul(x, w)) ** 2)
        return tape.gradient(loss, w)
    grads = vectorized_map(per_example, vj.constant(X))
    assert grads.shape == (5, 3, 4)
    for k in range(5):
        h = np.tanh(X[k] @ W)
        expected = np.outer(X[k], 2 * h * (1 - h ** 2))
        np.testing.assert_allclose(grads.numpy()[k], expected, rtol=1e-10)


def test_per_example_hessians_tape_inside_loop():
    w = vj.constant(W[:, 0])

    def per_example(x):
        with vj.GradientTape() as t2:
            t2.watch(w)
            with vj.GradientTape() as t1:
                t1.watch(w)
                loss = vj.reduce_sum(x * w) ** 3
            g = t1.gradient(loss, w)
        return t2.jacobian(g, w)
    hs = vectorized_map(per_example, vj.constant(X))
    for k in range(5):
        s = X[k] @ W[:, 0]
        np.testing.assert_allclose(hs.numpy()[k], 6 * s * np.outer(X[k], X[k]), rtol=1e-10)


def test_tape_outside_loop_sees_vectorized_ops():
    """TF-style Jacobian: a tape outside the loop, gather(y, i) inside, gradient inside."""
    x = vj.constant(X[0])
    with vj.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = vj.sin(x) * vj.reduce_sum(x)

        def loop_fn(i):  # the tape must be recording to see gather(y, i), as in TF
            return tape.gradient(vj.gather(y, i), x)
        rows = pfor(loop_fn, 3)
        rows_loop = for_loop(loop_fn, 3)
    s = X[0].sum()
    expected = np.diag(np.cos(X[0]) * s) + np.sin(X[0])[:, None]
    np.testing.assert_allclose(rows.numpy(), expected, rtol=1e-12)
    np.testing.assert_allclose(rows_loop.numpy(), expected, rtol=1e-12)


def test_outer_tape_differentiates_through_pfor():
    """A third tape outside records the converters' plain ops: the Jacobian itself is
    differentiable (here d/dx of the trace of diag(cos x) = -sin x)."""
    x = vj.constant(X[1])
    with vj.GradientTape() as outer:
        outer.watch(x)
        with vj.GradientTape() as inner:
            inner.watch(x)
            y = vj.sin(x)
        j = inner.jacobian(y, x)
        tr = vj.reduce_sum(j * vj.constant(np.eye(3)))
    np.testing.assert_allclose(outer.gradient(tr, x).numpy(), -np.sin(X[1]), rtol=1e-12)


def test_iteration_index_values_and_dtype():
    out = pfor(lambda i: i * 2, 4)
    np.testing.assert_array_equal(out.numpy(), [0, 2, 4, 6])
    assert out.dtype.kind == "i"


def test_pfor_config_reductions_differentiate_and_follow_tf_rules():
    # TF's pfor_config: a loop_fn with that parameter gets reductions across iterations,
    # ordinary ops on the stacked value, so a tape outside the loop differentiates them
    data = np.random.default_rng(3).standard_normal((5, 3))
    x = vj.constant(data)
    with vj.GradientTape() as tape:
        tape.watch(x)
        out = vj.vectorize.pfor(
            lambda i, pfor_config: vj.gather(x, i) * pfor_config.reduce_sum(vj.gather(x, i)),
            5)
        loss = vj.reduce_sum(out)
    total = data.sum(0)
    np.testing.assert_allclose(out.numpy(), data * total, rtol=1e-13)
    np.testing.assert_allclose(tape.gradient(loss, x).numpy(), 2 * np.tile(total, (5, 1)),
                               rtol=1e-13)
    # reduce with several arguments sees each stacked over the 5 iterations
    seen = []
    vj.vectorize.pfor(lambda i, pfor_config: pfor_config.reduce(
        lambda a, b: seen.append((a.shape, b.shape)) or vj.reduce_sum(a), vj.gather(x, i),
        vj.cast(i, vj.float64)), 5)
    assert seen == [((5, 3), (5,))]

    def takes(i, pfor_config=None):
        assert pfor_config == "mine"  # bound by the caller: pfor passes none
        return vj.gather(x, i)
    vj.vectorize.pfor(functools.partial(takes, pfor_config="mine"), 5)
    with pytest.raises(ValueError, match="parallel_iterations"):
        vj.vectorize.pfor(lambda i, pfor_config: pfor_config.reduce_mean(vj.gather(x, i)),
                          5, parallel_iterations=2)
