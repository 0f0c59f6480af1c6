"""vj.math.sparse_segment_sum / sparse_segment_mean / sparse_segment_sqrt_n
(vecjac/_src/composites/sparse_segment.py).

Values are checked against NumPy references written here with explicit loops (one
picked row at a time; not the implementation's gather / scatter formulas) and against
the examples of TF's documentation; derivatives against finite differences in forward
and reverse mode (orders 1 and 2) and against loop references of the gradient; pfor
against the plain loop with loop-variant data, indices and segment ids; bad arguments
raise errors naming the function and the argument before any op is recorded. TF's own
ported pfor tests are in tests/conformance/test_tf_pfor_*.py (-k sparse).
"""
import math

import numpy as np
import pytest

import vecjac as vj
import vecjac._src.composites.sparse_segment
from vecjac.testing import check_grads, check_pfor, numerical_jacobian
from vecjac.vectorize import pfor

RNG = np.random.default_rng(7)
SEGMENT = {"sum": vj.math.sparse_segment_sum, "mean": vj.math.sparse_segment_mean,
           "sqrt_n": vj.math.sparse_segment_sqrt_n}


# -- references ------------------------------------------------------------------------------
def ref_segment(kind, data, indices, segment_ids, num_segments=None):
    n = num_segments if num_segments is not None else (
        int(segment_ids[-1]) + 1 if len(segment_ids) else 0)
    out = np.zeros((n,) + data.shape[1:], np.float64)
    count = np.zeros(n, int)
    for i, s in zip(indices, segment_ids):
        out[s] += data[i]
        count[s] += 1
    for s in range(n):
        if count[s] and kind == "mean":
            out[s] /= count[s]
        elif count[s] and kind == "sqrt_n":
            out[s] /= math.sqrt(count[s])
    return out


def ref_segment_grad(kind, data, indices, segment_ids, weights):
    """d/ddata of sum(weights * output): each picked row i gets weights[segment_ids[i]],
    scaled by 1 / count (mean) or 1 / sqrt(count) (sqrt_n) of its segment."""
    count = {}
    for s in segment_ids:
        count[s] = count.get(s, 0) + 1
    g = np.zeros(data.shape)
    for i, s in zip(indices, segment_ids):
        scale = {"sum": 1.0, "mean": 1.0 / count[s], "sqrt_n": 1.0 / math.sqrt(count[s])}[kind]
        g[i] += weights[s] * scale
    return g




# -- sparse_segment_*: values ------------------------------------------------------------------
def test_sparse_segment_sum_of_tf_docs_examples():
    c = vj.constant([[1, 2, 3, 4], [-1, -2, -3, -4], [5, 6, 7, 8]], dtype=vj.int32)
    sss = vj.math.sparse_segment_sum
    np.testing.assert_array_equal(sss(c, [0, 1], [0, 0]).numpy(), [[0, 0, 0, 0]])
    np.testing.assert_array_equal(sss(c, [0, 1], [0, 1]).numpy(),
                                  [[1, 2, 3, 4], [-1, -2, -3, -4]])
    np.testing.assert_array_equal(sss(c, [0, 2], [0, 1]).numpy(), [[1, 2, 3, 4], [5, 6, 7, 8]])
    np.testing.assert_array_equal(sss(c, [0, 1], [0, 0], num_segments=3).numpy(),
                                  np.zeros((3, 4)))
    got = sss(c, [0, 1], [0, 2], num_segments=4)
    np.testing.assert_array_equal(got.numpy(), [[1, 2, 3, 4], [0, 0, 0, 0],
                                                [-1, -2, -3, -4], [0, 0, 0, 0]])
    assert got.dtype == np.int32
    # segment_sum(c, [0, 0, 1]) is the sparse sum over every row
    np.testing.assert_array_equal(sss(c, [0, 1, 2], [0, 0, 1]).numpy(),
                                  vj.math.segment_sum(c, [0, 0, 1]).numpy())


CASES = [  # (data shape, indices, segment_ids, num_segments)
    ((6, 3), [0, 2, 2, 5, 1, 3], [0, 0, 1, 1, 1, 4], None),   # repeats, empty segments
    ((6,), [5, 4, 3], [0, 1, 1], 4),                           # trailing empty segments
    ((4, 2, 3), [3, 0, 3, 3], [1, 1, 2, 2], None),             # empty first segment
    ((3, 2), [1], [0], 1),
]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("kind", ["sum", "mean", "sqrt_n"])
@pytest.mark.parametrize("shape, indices, segment_ids, num_segments", CASES, ids=str)
def test_sparse_segment_matches_loops(shape, indices, segment_ids, num_segments, kind, dtype):
    data = RNG.standard_normal(shape).astype(dtype)
    for ind_dtype in (np.int32, np.int64):
        got = SEGMENT[kind](data, np.array(indices, ind_dtype), np.array(segment_ids, ind_dtype),
                            num_segments=num_segments)
        want = ref_segment(kind, data, indices, segment_ids, num_segments)
        assert got.dtype == dtype and got.shape == want.shape
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-6 if dtype == np.float32 else 1e-14)


@pytest.mark.parametrize("kind", ["mean", "sqrt_n"])
def test_empty_segments_of_mean_and_sqrt_n_are_zero(kind):
    data = np.array([[4.0, 8.0], [1.0, 1.0]])
    got = SEGMENT[kind](data, [0, 0, 1], [1, 1, 3], num_segments=5).numpy()
    scale = 2.0 if kind == "mean" else math.sqrt(2.0)
    np.testing.assert_array_equal(got[[0, 2, 4]], np.zeros((3, 2)))
    np.testing.assert_allclose(got[1], [8.0 / scale, 16.0 / scale], rtol=1e-15)
    np.testing.assert_array_equal(got[3], [1.0, 1.0])


@pytest.mark.parametrize("kind", ["sum", "mean", "sqrt_n"])
def test_sparse_segment_of_no_indices(kind):
    data = RNG.standard_normal((3, 2))
    empty = np.zeros(0, np.int64)
    assert SEGMENT[kind](data, empty, empty).shape == (0, 2)
    np.testing.assert_array_equal(SEGMENT[kind](data, empty, empty, num_segments=2).numpy(),
                                  np.zeros((2, 2)))


def test_sparse_segment_sum_keeps_integer_data():
    got = vj.math.sparse_segment_sum(np.array([[1, 2], [3, 4]], np.int32), [1, 1, 0], [0, 0, 1])
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got.numpy(), [[6, 8], [1, 2]])


# -- sparse_segment_*: derivatives -------------------------------------------------------------
@pytest.mark.parametrize("kind", ["sum", "mean", "sqrt_n"])
@pytest.mark.parametrize("shape, indices, segment_ids, num_segments", CASES[:3], ids=str)
def test_sparse_segment_derivatives(shape, indices, segment_ids, num_segments, kind):
    f = lambda d: SEGMENT[kind](d, indices, segment_ids, num_segments=num_segments)  # noqa: E731
    check_grads(f, [RNG.standard_normal(shape)], order=2, modes=("fwd", "rev"))


@pytest.mark.parametrize("kind", ["sum", "mean", "sqrt_n"])
def test_sparse_segment_gradient_matches_loops(kind):
    shape, indices, segment_ids, _ = CASES[0]
    data = RNG.standard_normal(shape)
    w = RNG.standard_normal((5, 3))
    g = vj.grad(lambda d: vj.reduce_sum(SEGMENT[kind](d, indices, segment_ids) * w))(data)
    np.testing.assert_allclose(g.numpy(), ref_segment_grad(kind, data, indices, segment_ids, w),
                               rtol=1e-14)


@pytest.mark.parametrize("mode", ["rev", "fwd"])
@pytest.mark.parametrize("kind", ["sum", "mean", "sqrt_n"])
def test_sparse_segment_jacobian_matches_finite_differences(kind, mode):
    data = RNG.standard_normal((4, 2))
    f = lambda d: SEGMENT[kind](d, [3, 1, 1, 0], [0, 0, 2, 2], num_segments=4)  # noqa: E731
    np.testing.assert_allclose(np.asarray(vj.jacobian(f, mode=mode)(data)),
                               numerical_jacobian(f, data), atol=1e-8)


# -- sparse_segment_*: pfor --------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["sum", "mean", "sqrt_n"])
def test_sparse_segment_pfor_matches_the_loop(kind):
    data = vj.constant(RNG.standard_normal((3, 5, 2)))
    indices = vj.constant([[4, 0, 0, 2], [1, 1, 3, 3], [0, 2, 4, 4]])
    segment_ids = vj.constant([[0, 0, 2, 2], [1, 1, 1, 3], [0, 3, 3, 3]], dtype=vj.int32)
    op = SEGMENT[kind]

    def loop_fn(i):
        d, ind, seg = vj.gather(data, i), vj.gather(indices, i), vj.gather(segment_ids, i)
        with vj.GradientTape() as tape:
            tape.watch(d)
            out = op(d, ind, seg, num_segments=4)  # everything loop-variant
            total = vj.reduce_sum(out * out)
        return (out, tape.gradient(total, d),
                op(d, vj.gather(indices, 0), vj.gather(segment_ids, 0)),     # variant data
                op(vj.gather(data, 0), ind, vj.gather(segment_ids, 0)),      # variant indices
                op(vj.gather(data, 0), vj.gather(indices, 0), seg, num_segments=5))  # ids
    check_pfor(loop_fn, 3, rtol=1e-12, atol=1e-14, fallback_to_while_loop=False)


def test_loop_variant_segment_ids_need_num_segments():
    ids = vj.constant([[0, 1], [0, 0]])
    with pytest.raises(ValueError, match="sparse_segment_sum: segment_ids cannot vary over a "
                                         "pfor loop when num_segments is None"):
        pfor(lambda i: vj.math.sparse_segment_sum(np.ones((2, 3)), [0, 1], vj.gather(ids, i)), 2)


def test_unsorted_ids_of_one_iteration_raise_under_pfor():
    ids = vj.constant([[0, 1], [1, 0]])
    with pytest.raises(ValueError, match="segment_ids must be sorted"):
        pfor(lambda i: vj.math.sparse_segment_mean(np.ones((2, 3)), [0, 1], vj.gather(ids, i),
                                                   num_segments=2), 2)


# -- sparse_segment_*: bad inputs --------------------------------------------------------------
@pytest.mark.parametrize("kind", ["sum", "mean", "sqrt_n"])
@pytest.mark.parametrize("kwargs, error, match", [
    (dict(data=1.5), ValueError, "data must have rank >= 1"),
    (dict(data=np.array(["a", "b"])), TypeError, "data must be"),
    (dict(indices=np.array([0.0, 1.0])), TypeError, "indices must be an int32 or int64"),
    (dict(segment_ids=np.array([0, 1], np.uint8)), TypeError,
     "segment_ids must be an int32 or int64"),
    (dict(indices=np.array([[0, 1]])), ValueError, r"indices must be a 1-D vector.*\(1, 2\)"),
    (dict(segment_ids=np.int64(0)), ValueError, r"segment_ids must be a 1-D vector.*\(\)"),
    (dict(indices=np.array([0, 1, 1])), ValueError,
     r"indices and segment_ids must have the same length.*\(3,\) and \(2,\)"),
    (dict(indices=np.array([0, 3])), ValueError, r"indices has 3, out of range \[0, 3\)"),
    (dict(indices=np.array([-1, 0])), ValueError, r"indices has -1, out of range \[0, 3\)"),
    (dict(segment_ids=np.array([1, 0])), ValueError, "segment_ids must be sorted"),
    (dict(segment_ids=np.array([-1, 0])), ValueError, "segment_ids must be >= 0, got -1"),
    (dict(num_segments=1), ValueError, r"segment_ids has 1, out of range \[0, num_segments=1\)"),
    (dict(num_segments=-1), ValueError, "num_segments must be >= 0"),
    (dict(num_segments=2.0), TypeError, "num_segments must be an int"),
])
def test_sparse_segment_bad_inputs_raise_before_any_work(kwargs, error, match, kind):
    fn = f"sparse_segment_{kind}"
    args = dict(data=RNG.standard_normal((3, 2)), indices=np.array([0, 2]),
                segment_ids=np.array([0, 1]), num_segments=None) | kwargs
    x0 = vj.constant([1.0])
    with vj.GradientTape() as tape:
        tape.watch(x0)
        with pytest.raises(error, match=f"{fn}: {match}"):
            getattr(vj.math, fn)(**args)
        assert tape._entries == []


@pytest.mark.parametrize("kind", ["mean", "sqrt_n"])
def test_mean_and_sqrt_n_take_float_data_only(kind):
    with pytest.raises(TypeError, match=f"sparse_segment_{kind}: data must be a float"):
        SEGMENT[kind](np.array([[1, 2]]), [0], [0])


# -- vj.function and the sparsity tracer ------------------------------------------------------
def test_function_replays_new_ids_and_rechecks_them():
    g = vj.function(lambda d, i, s: vj.math.sparse_segment_mean(d, i, s))
    data = RNG.standard_normal((4, 2))
    for i, s in (([0, 1, 2], [0, 0, 1]), ([3, 2, 1], [0, 1, 1]), ([0, 1], [0, 3])):
        got = g(data, np.array(i), np.array(s))  # the last: 4 rows, a new trace
        np.testing.assert_allclose(got.numpy(), ref_segment("mean", data, i, s), rtol=1e-14)
    with pytest.raises(ValueError, match="segment_ids must be sorted"):
        g(data, np.array([0, 1]), np.array([1, 0]))


def test_sparsity_pattern_is_exact():
    seg = vj.jacobian_sparsity(lambda d: vj.math.sparse_segment_sqrt_n(d, [2, 0, 2], [0, 0, 2]),
                               np.ones((3, 2))).toarray()
    expected = np.zeros((6, 6), bool)  # output (s, c) depends on data (indices in s, c)
    expected[[0, 0, 1, 1, 4, 5], [0, 4, 1, 5, 4, 5]] = True
    np.testing.assert_array_equal(seg, expected)
