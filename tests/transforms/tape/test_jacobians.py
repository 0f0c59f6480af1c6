"""GradientTape.jacobian / batch_jacobian, Hessians and third order, against the plain
loop, finite differences and closed forms."""
import warnings

import numpy as np
import pytest

import vecjac as vj
from vecjac.testing import numerical_jacobian
from vecjac._src.transforms.pfor import structured

RNG = np.random.default_rng(42)


def mlp(x, w1, w2):
    return vj.tanh(vj.matmul(vj.tanh(vj.matmul(x, w1)), w2))


def mlp_np(x, w1, w2):
    return np.tanh(np.tanh(x @ w1) @ w2)


X = RNG.standard_normal((4, 3))
W1 = RNG.standard_normal((3, 5))
W2 = RNG.standard_normal((5, 2))


def record_mlp(persistent=True):
    w1 = vj.Variable(W1)
    tape = vj.GradientTape(persistent=persistent)
    with tape:
        y = mlp(vj.constant(X), w1, vj.constant(W2))
    return tape, y, w1


@pytest.mark.parametrize("use_pfor", [True, False])
def test_jacobian_matches_finite_differences(use_pfor):
    tape, y, w1 = record_mlp()
    j = tape.jacobian(y, w1, experimental_use_pfor=use_pfor)
    assert j.shape == (4, 2, 3, 5)
    expected = numerical_jacobian(lambda w: mlp_np(X, w, W2), W1)
    np.testing.assert_allclose(j.numpy(), expected, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("p", [None, 2, 3, 8, 100])
def test_parallel_iterations_identical(p):
    tape, y, w1 = record_mlp()
    ref = tape.jacobian(y, w1, experimental_use_pfor=False).numpy()
    np.testing.assert_allclose(tape.jacobian(y, w1, parallel_iterations=p).numpy(), ref,
                               rtol=1e-12, atol=1e-14)


def test_chunked_jacobian_counts_as_one_use_of_a_non_persistent_tape():
    tape, y, w1 = record_mlp(persistent=False)
    j = tape.jacobian(y, w1, parallel_iterations=3)
    expected = numerical_jacobian(lambda w: mlp_np(X, w, W2), W1)
    np.testing.assert_allclose(j.numpy(), expected, rtol=1e-6, atol=1e-8)
    with pytest.raises(RuntimeError, match="non-persistent"):
        tape.jacobian(y, w1)


def test_loop_mode_needs_a_persistent_tape():
    tape, y, w1 = record_mlp(persistent=False)
    with pytest.raises(RuntimeError, match="persistent=True"):
        tape.jacobian(y, w1, experimental_use_pfor=False)


def test_sources_structure_and_unconnected():
    x = vj.constant(X)
    a, b, c = vj.Variable(W1), vj.Variable(W2), vj.Variable(1.0)
    with vj.GradientTape(persistent=True) as tape:
        y = mlp(x, a, b)
    out = tape.jacobian(y, {"a": a, "rest": [b, c]})
    assert out["a"].shape == (4, 2, 3, 5) and out["rest"][0].shape == (4, 2, 5, 2)
    assert out["rest"][1] is None
    zero = tape.jacobian(y, c, unconnected_gradients=vj.UnconnectedGradients.ZERO)
    assert zero.shape == (4, 2) and not np.any(zero.numpy())


def test_scalar_source_guide_shape():
    x = vj.linspace(-10.0, 10.0, 200 + 1) if hasattr(vj, "linspace") else \
        vj.constant(np.linspace(-10.0, 10.0, 201))
    delta = vj.Variable(0.0)
    with vj.GradientTape() as tape:
        y = vj.nn.sigmoid(x + delta) if hasattr(vj.nn, "sigmoid") else 1 / (1 + vj.exp(-(x + delta)))
    dy = tape.jacobian(y, delta)
    assert y.shape == (201,) and dy.shape == (201,)
    s = 1 / (1 + np.exp(-np.linspace(-10, 10, 201)))
    np.testing.assert_allclose(dy.numpy(), s * (1 - s), rtol=1e-10)


def test_float32_stays_float32():
    x = vj.constant(X.astype(np.float32))
    w = vj.Variable(W1.astype(np.float32))
    with vj.GradientTape() as tape:
        y = vj.tanh(x @ w) * 2.0
    j = tape.jacobian(y, w)
    assert j.dtype == np.float32


def _boom(op, cx, x):
    raise TypeError("boom")


FAILS_WHEN_STACKED = vj.defop("TestFailsWhenStacked", forward=lambda x: x * 1.0,
                              gradient=lambda e, g: g, converter=_boom)


def _sin_with_failing_backward(v):
    return vj.sin(v), lambda dy: FAILS_WHEN_STACKED(dy) * vj.cos(v)


def test_vectorization_errors_mention_use_pfor():
    """An error while vectorizing the backward pass is a ValueError that points to
    experimental_use_pfor=False, and the plain loop then works."""
    x = vj.constant(X[0])
    with vj.GradientTape(persistent=True) as tape:
        tape.watch(x)
        z = vj.custom_gradient(_sin_with_failing_backward)(x)
    with pytest.raises(ValueError, match="experimental_use_pfor"):
        tape.jacobian(z, x)
    np.testing.assert_allclose(tape.jacobian(z, x, experimental_use_pfor=False).numpy(),
                               np.diag(np.cos(X[0])), rtol=1e-12)


# -- batch_jacobian ----------------------------------------------------------------------
def test_batch_jacobian_is_the_diagonal_of_the_full_jacobian():
    x = vj.constant(RNG.standard_normal((7, 5)))
    with vj.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = mlp(x, vj.constant(RNG.standard_normal((5, 8))), vj.constant(RNG.standard_normal((8, 6))))
    j = tape.jacobian(y, x)
    assert j.shape == (7, 6, 7, 5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # independent examples: no interaction warning
        jb = tape.batch_jacobian(y, x)
    assert jb.shape == (7, 6, 5)
    np.testing.assert_allclose(jb.numpy(), np.einsum("bxby->bxy", j.numpy()), rtol=1e-12)
    jl = tape.batch_jacobian(y, x, experimental_use_pfor=False)
    np.testing.assert_allclose(jl.numpy(), jb.numpy(), rtol=1e-12)
    for p in (2, 4):
        np.testing.assert_allclose(tape.batch_jacobian(y, x, parallel_iterations=p).numpy(),
                                   jb.numpy(), rtol=1e-12)


def test_batch_jacobian_higher_rank():
    x = vj.constant(RNG.standard_normal((3, 2, 2)))
    with vj.GradientTape() as tape:
        tape.watch(x)
        y = vj.reshape(vj.sin(x), (3, 4)) * 2.0
    jb = tape.batch_jacobian(y, x)
    assert jb.shape == (3, 4, 2, 2)
    c = 2 * np.cos(x.numpy())
    for b in range(3):
        np.testing.assert_allclose(jb.numpy()[b].reshape(4, 4), np.diag(c[b].reshape(-1)))


def test_batch_jacobian_warns_when_examples_interact():
    x = vj.constant(RNG.standard_normal((6, 3)))
    with vj.GradientTape(persistent=True) as tape:
        tape.watch(x)
        centered = x - vj.reduce_mean(x, axis=0, keepdims=True)  # couples the examples
        y = vj.tanh(centered)
    with pytest.warns(vj.InteractingExamplesWarning, match="not independent"):
        jb = tape.batch_jacobian(y, x)
    assert jb.shape == (6, 3, 3)
    # the documented meaning: per example, the sum over all target examples
    j = tape.jacobian(y, x)
    np.testing.assert_allclose(jb.numpy(), np.einsum("bxcy->cxy", j.numpy()), rtol=1e-10)


@pytest.mark.parametrize("structured_seeds", [False, True])
@pytest.mark.parametrize("direction, mix", [
    ("forward", lambda x: vj.cumsum(x, axis=0)),                  # example 0: itself only
    ("reverse", lambda x: vj.cumsum(x, axis=0, reverse=True)),    # the last: itself only
])
def test_batch_jacobian_probes_the_first_and_the_last_example(monkeypatch, structured_seeds,
                                                              direction, mix):
    # a cumulative sum over the batch leaves one end independent: a probe of example 0
    # alone missed the forward one; with the last example probed too, both warn
    monkeypatch.setattr(structured, "MIN_DENSE_SIZE", 0 if structured_seeds else 10 ** 9)
    x = vj.constant(RNG.standard_normal((5, 3)))
    with vj.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = vj.tanh(mix(x))
    with pytest.warns(vj.InteractingExamplesWarning, match="first or last example"):
        jb = tape.batch_jacobian(y, x)
    np.testing.assert_allclose(jb.numpy(), np.einsum("bxcy->cxy", tape.jacobian(y, x).numpy()),
                               rtol=1e-10)


@pytest.mark.parametrize("tshape, sshape, match", [
    ((5,), (5, 2), "rank at least 2"),
    ((5, 2), (5,), "rank at least 2"),
    ((5, 2), (4, 2), "first dimension")])
def test_batch_jacobian_shape_errors(tshape, sshape, match):
    s = vj.constant(np.ones(sshape))
    t = vj.constant(np.ones(tshape))
    with vj.GradientTape() as tape:
        tape.watch(s)
    with pytest.raises(ValueError, match=match):
        tape.batch_jacobian(t, s)


def test_batch_jacobian_unconnected_gives_zeros_of_target_dtype():
    x = vj.constant(np.ones((3, 2)))
    y = vj.constant(np.ones((3, 4), dtype=np.float32))
    with vj.GradientTape() as tape:
        tape.watch(x)
    jb = tape.batch_jacobian(y, x)
    assert jb.shape == (3, 4, 2) and jb.dtype == np.float32 and not np.any(jb.numpy())


# -- Hessians and beyond ------------------------------------------------------------------
def loss_np(w, x=X, w2=W2):
    return np.mean(np.tanh(np.tanh(x @ w) @ w2) ** 2)


def test_hessian_nested_tapes_matches_finite_differences():
    w = vj.Variable(W1)
    with vj.GradientTape() as t2:
        with vj.GradientTape() as t1:
            loss = vj.reduce_mean(mlp(vj.constant(X), w, vj.constant(W2)) ** 2)
        g = t1.gradient(loss, w)
    h = t2.jacobian(g, w)
    assert h.shape == (3, 5, 3, 5)

    def grad_np(wv):
        return numerical_jacobian(loss_np, wv, eps=1e-6)
    expected = numerical_jacobian(grad_np, W1, eps=1e-4)
    np.testing.assert_allclose(h.numpy(), expected, rtol=1e-4, atol=1e-6)
    hm = h.numpy().reshape(15, 15)
    np.testing.assert_allclose(hm, hm.T, atol=1e-12)


# separable: the one-hot seeds of the inner Jacobians stay structured through every rule
# (once test_third_order_through_structured_paths in tests/transforms/pfor/); coupled: the
# cross term x0 x1^2 mixes the seeds
@pytest.mark.parametrize("point, coupling", [((0.7, -0.3), 0.0), ((0.3, -0.7), 1.0)],
                         ids=["separable", "coupled"])
def test_third_order_jacobian_of_hessian(point, coupling):
    x = vj.constant(np.array(point))
    with vj.GradientTape() as t3:
        t3.watch(x)
        with vj.GradientTape() as t2:
            t2.watch(x)
            with vj.GradientTape() as t1:
                t1.watch(x)
                y = vj.reduce_sum(x ** 4)
                if coupling:  # no cross term at all otherwise: it would break the structure
                    y = y + coupling * x[0] * x[1] ** 2
            g = t1.gradient(y, x)
        h = t2.jacobian(g, x)
    d3 = t3.jacobian(h, x)
    a, b = point
    expected = np.zeros((2, 2, 2))
    expected[0, 0, 0] = 24 * a
    expected[1, 1, 1] = 24 * b
    expected[0, 1, 1] = expected[1, 0, 1] = expected[1, 1, 0] = 2.0 * coupling
    np.testing.assert_allclose(d3.numpy(), expected, rtol=1e-12, atol=1e-12)


def test_batch_hessian_via_batch_jacobian_of_gradient():
    xs = vj.constant(RNG.standard_normal((4, 3)))
    with vj.GradientTape() as t2:
        t2.watch(xs)
        with vj.GradientTape() as t1:
            t1.watch(xs)
            y = vj.reduce_sum(vj.sin(xs) * vj.reduce_sum(xs, axis=1, keepdims=True))
        g = t1.gradient(y, xs)
    hb = t2.batch_jacobian(g, xs)
    assert hb.shape == (4, 3, 3)
    for b in range(4):
        xb = xs.numpy()[b]

        def f(v):
            return np.sum(np.sin(v) * v.sum())
        gfun = lambda v: numerical_jacobian(f, v, eps=1e-6)  # noqa: E731
        np.testing.assert_allclose(hb.numpy()[b], numerical_jacobian(gfun, xb, eps=1e-4),
                                   rtol=1e-4, atol=1e-6)


def test_jacobian_of_gradient_inside_with_block_of_persistent_tape():
    x = vj.constant(np.array([1.0, 2.0]))
    with vj.GradientTape(persistent=True) as t:
        t.watch(x)
        y = vj.reduce_sum(x ** 3)
        g = t.gradient(y, x)
    h = t.jacobian(g, x)
    np.testing.assert_allclose(h.numpy(), np.diag(6 * x.numpy()))


def test_int_target_warns_and_gives_none():
    x = vj.constant(np.array([1.0, 2.0]))
    with vj.GradientTape() as tape:
        tape.watch(x)
        y = vj.cast(x, vj.int64)
    with pytest.warns(UserWarning, match="floating"):
        assert tape.jacobian(y, x) is None


def test_jacobian_target_must_be_a_tensor():
    x = vj.constant(1.0)
    with vj.GradientTape() as tape:
        tape.watch(x)
    with pytest.raises(TypeError, match="single Tensor"):
        tape.jacobian([x, x], x)


def test_float32_hessian_and_batch_jacobian_stay_float32():
    w = vj.Variable(W1.astype(np.float32))
    x = vj.constant(X.astype(np.float32))
    with vj.GradientTape() as t2:
        with vj.GradientTape() as t1:
            loss = vj.reduce_mean(vj.tanh(x @ w) ** 2)
        g = t1.gradient(loss, w)
    h = t2.jacobian(g, w)
    assert g.dtype == np.float32 and h.dtype == np.float32
    with vj.GradientTape() as tape:
        tape.watch(x)
        y = vj.tanh(x @ w)
    assert tape.batch_jacobian(y, x).dtype == np.float32
