"""vj.nn.sparse_softmax_cross_entropy_with_logits (vecjac/_src/composites/sparse_xent.py).

Values are checked against NumPy references written here with explicit loops (one
example at a time; not the implementation's log_softmax / gather formulas) and against
the example of TF's documentation; derivatives against finite differences in forward
and reverse mode (orders 1 and 2) and against a loop reference of the gradient; pfor
against the plain loop with loop-variant logits and labels; bad arguments raise errors
naming the function and the argument before any op is recorded. TF's own ported pfor
tests are in tests/conformance/test_tf_pfor_*.py (-k sparse).
"""
import math

import numpy as np
import pytest

import vecjac as vj
import vecjac._src.composites.sparse_xent
from vecjac.testing import check_grads, check_pfor, numerical_jacobian
from vecjac.vectorize import pfor

RNG = np.random.default_rng(7)
XENT = vj.nn.sparse_softmax_cross_entropy_with_logits


# -- references ------------------------------------------------------------------------------
def ref_xent(labels, logits):
    """Per example: log(sum_j exp(x_j)) - x_label, summed in float64 after the maximum."""
    out = np.zeros(labels.shape)
    for idx in np.ndindex(*labels.shape):
        row = logits[idx].astype(np.float64)
        top = max(row)
        total = 0.0
        for v in row:
            total += math.exp(v - top)
        out[idx] = math.log(total) + top - row[labels[idx]]
    return out


def ref_xent_grad(labels, logits, weights):
    """d/dlogits of sum(weights * loss): weights * (softmax - one_hot), example by example."""
    g = np.zeros(logits.shape)
    for idx in np.ndindex(*labels.shape):
        row = logits[idx].astype(np.float64)
        e = [math.exp(v - max(row)) for v in row]
        for j in range(row.size):
            g[idx + (j,)] = weights[idx] * (e[j] / sum(e) - (j == labels[idx]))
    return g




# -- sparse_softmax_cross_entropy_with_logits: values ----------------------------------------
def test_xent_of_tf_docs_example():
    logits = vj.constant([[2.0, -5.0, 0.5, -0.1], [0.0, 0.0, 1.9, 1.4],
                          [-100.0, 100.0, -100.0, -100.0]], dtype=vj.float32)
    labels = vj.constant([0, 3, 1], dtype=vj.int32)
    got = XENT(labels=labels, logits=logits)
    assert got.dtype == np.float32 and got.shape == (3,)
    # TF prints [0.29750752, 1.1448325, 0.]: equal to float32 rounding (a few ulps)
    np.testing.assert_allclose(got.numpy(), [0.29750752, 1.1448325, 0.0], rtol=1e-6, atol=0)
    assert not np.signbit(got.numpy()[2])  # a certain class costs +0.0, as TF's


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("label_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("shape", [(5, 4), (2, 3, 6), (3,), (1, 1)], ids=str)
def test_xent_matches_loops(shape, label_dtype, dtype):
    logits = (3 * RNG.standard_normal(shape)).astype(dtype)
    labels = RNG.integers(0, shape[-1], size=shape[:-1]).astype(label_dtype)
    got = XENT(labels=labels, logits=logits)
    assert got.dtype == dtype and got.shape == shape[:-1]
    rtol = 1e-6 if dtype == np.float32 else 1e-13
    np.testing.assert_allclose(got.numpy(), ref_xent(labels, logits), rtol=rtol, atol=rtol)


def test_xent_positional_and_keyword_calls_agree():
    logits, labels = RNG.standard_normal((4, 3)), np.array([2, 0, 1, 1])
    a = XENT(labels, logits).numpy()
    b = XENT(logits=logits, labels=labels).numpy()
    c = XENT(labels=vj.constant(labels), logits=vj.Variable(logits)).numpy()
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(a, c)


def test_xent_is_stable_for_extreme_logits():
    logits = np.array([[1e4, -1e4, 0.0], [-1e4, -1e4, -1e4], [-np.inf, 3.0, 1.0]],
                      np.float32)
    labels = np.array([1, 2, 1])
    got = XENT(labels=labels, logits=logits).numpy()
    assert np.isfinite(got).all()
    np.testing.assert_allclose(got, [2e4, math.log(3.0), math.log1p(math.exp(-2.0))],
                               rtol=1e-6)
    # a -inf logit of another class has probability 0: no NaN in the gradient either
    g = vj.grad(lambda x: vj.reduce_sum(XENT(labels=labels, logits=x)))(logits).numpy()
    assert np.isfinite(g).all() and g[2, 0] == 0.0


def test_xent_of_empty_batches():
    assert XENT(labels=np.zeros(0, np.int64), logits=np.zeros((0, 3))).shape == (0,)
    assert XENT(labels=np.zeros((2, 0), np.int32), logits=np.zeros((2, 0, 0))).shape == (2, 0)


# -- sparse_softmax_cross_entropy_with_logits: derivatives -----------------------------------
@pytest.mark.parametrize("shape", [(4, 3), (2, 2, 5)], ids=str)
def test_xent_derivatives(shape):
    labels = RNG.integers(0, shape[-1], size=shape[:-1])
    check_grads(lambda x: XENT(labels=labels, logits=x), [RNG.standard_normal(shape)],
                order=2, modes=("fwd", "rev"))


def test_xent_gradient_is_softmax_minus_one_hot():
    logits, labels = RNG.standard_normal((3, 2, 4)), RNG.integers(0, 4, size=(3, 2))
    w = RNG.standard_normal((3, 2))
    g = vj.grad(lambda x: vj.reduce_sum(XENT(labels=labels, logits=x) * w))(logits)
    np.testing.assert_allclose(g.numpy(), ref_xent_grad(labels, logits, w), rtol=1e-12,
                               atol=1e-15)


def test_xent_labels_carry_no_gradient():
    logits = vj.constant(RNG.standard_normal((2, 3)))
    labels = vj.constant([0, 2])
    with vj.GradientTape() as tape:
        tape.watch(logits)
        loss = vj.reduce_sum(XENT(labels=labels, logits=logits))
    with pytest.warns(UserWarning, match="must be floating"):  # the tape's, as TF's
        g_logits, g_labels = tape.gradient(loss, [logits, labels])
    assert g_labels is None and g_logits.shape == (2, 3)


@pytest.mark.parametrize("mode", ["rev", "fwd"])
def test_xent_jacobian_matches_finite_differences(mode):
    logits, labels = RNG.standard_normal((3, 4)), np.array([3, 0, 1])
    f = lambda x: XENT(labels=labels, logits=x)  # noqa: E731
    np.testing.assert_allclose(np.asarray(vj.jacobian(f, mode=mode)(logits)),
                               numerical_jacobian(f, logits), atol=1e-8)


# -- sparse_softmax_cross_entropy_with_logits: pfor ------------------------------------------
def test_xent_pfor_matches_the_loop_with_loop_variant_logits_and_labels():
    logits = vj.constant(RNG.standard_normal((4, 3, 5)))
    labels = vj.constant(RNG.integers(0, 5, size=(4, 3)).astype(np.int32))

    def loop_fn(i):
        x, z = vj.gather(logits, i), vj.gather(labels, i)
        with vj.GradientTape() as tape:
            tape.watch(x)
            loss = XENT(labels=z, logits=x)
            total = vj.reduce_sum(loss * loss)
        return (loss, tape.gradient(total, x),
                XENT(labels=vj.gather(labels, 0), logits=x),      # invariant labels
                XENT(labels=z, logits=vj.gather(logits, 0)))      # invariant logits
    check_pfor(loop_fn, 4, rtol=1e-12, atol=1e-14, fallback_to_while_loop=False)


# -- sparse_softmax_cross_entropy_with_logits: bad inputs ------------------------------------
@pytest.mark.parametrize("kwargs, error, match", [
    (dict(labels=None), ValueError, "both labels and logits are required"),
    (dict(logits=None), ValueError, "both labels and logits are required"),
    (dict(logits=1.5, labels=np.int64(0)), ValueError, "logits must have rank >= 1"),
    (dict(logits=np.ones((2, 3), int)), TypeError, "logits must be a floating-point"),
    (dict(labels=np.array([0.0, 1.0])), TypeError, "labels must be int32 or int64.*float64"),
    (dict(labels=np.array([0, 1], np.uint8)), TypeError, "labels must be int32 or int64"),
    (dict(labels=np.array([[0], [1]])), ValueError,
     r"labels must have rank 1 .*got labels shape \(2, 1\)"),
    (dict(labels=np.array([0, 1, 2])), ValueError,
     r"labels shape \(3,\) must equal logits shape without its last .* \(2,\)"),
    (dict(labels=np.array([0, 3])), ValueError, r"labels has 3, outside .*\[0, 3\)"),
    (dict(labels=np.array([-1, 0])), ValueError, r"labels has -1, outside .*\[0, 3\)"),
    (dict(logits=np.zeros((2, 0)), labels=np.array([0, 0])), ValueError,
     r"labels has 0, outside .*\[0, 0\)"),
])
def test_xent_bad_inputs_raise_before_any_work(kwargs, error, match):
    args = dict(labels=np.array([0, 2]), logits=RNG.standard_normal((2, 3))) | kwargs
    x0 = vj.constant([1.0])
    with vj.GradientTape() as tape:
        tape.watch(x0)
        with pytest.raises(error, match=f"sparse_softmax_cross_entropy_with_logits: {match}"):
            XENT(**args)
        assert tape._entries == []  # nothing ran, nothing recorded


def test_xent_out_of_range_label_of_one_iteration_raises_under_pfor():
    labels = vj.constant([[0, 1], [2, 4]])
    logits = vj.constant(RNG.standard_normal((2, 2, 4)))
    with pytest.raises(ValueError, match=r"labels has 4, outside .*\[0, 4\)"):
        pfor(lambda i: XENT(labels=vj.gather(labels, i), logits=vj.gather(logits, i)), 2)


# -- vj.function and the sparsity tracer ------------------------------------------------------
def test_function_replays_new_labels_and_rechecks_them():
    logits = RNG.standard_normal((3, 4))
    f = vj.function(lambda x, z: XENT(labels=z, logits=x))
    for z in ([0, 1, 2], [3, 3, 0]):
        np.testing.assert_allclose(f(logits, np.array(z)).numpy(), ref_xent(np.array(z), logits),
                                   rtol=1e-13)
    with pytest.raises(ValueError, match="labels has 4"):
        f(logits, np.array([0, 4, 1]))


def test_sparsity_pattern_is_exact():
    xent = vj.jacobian_sparsity(lambda x: XENT(labels=[0, 2], logits=x), np.ones((2, 3)))
    np.testing.assert_array_equal(xent.toarray(), np.kron(np.eye(2), np.ones((1, 3))))
