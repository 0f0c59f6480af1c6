"""vj.sort, vj.argsort, vj.searchsorted (TF's names and conventions): values against NumPy,
directions, stability, dtypes. Gradients, pfor and float32 are the registry's job."""
import numpy as np
import pytest

import vecjac as vj

RNG = np.random.default_rng(3)


@pytest.mark.parametrize("axis", [-1, 0])
def test_sort_and_argsort_match_numpy(axis):
    x = RNG.standard_normal((3, 5))
    np.testing.assert_array_equal(vj.sort(x, axis=axis).numpy(), np.sort(x, axis=axis))
    np.testing.assert_array_equal(vj.sort(x, axis=axis, direction="DESCENDING").numpy(),
                                  -np.sort(-x, axis=axis))
    idx = vj.argsort(x, axis=axis)
    assert idx.dtype == np.int32  # TF's
    np.testing.assert_array_equal(idx.numpy(), np.argsort(x, axis=axis))


def test_stable_argsort_keeps_ties_in_order_both_ways():
    x = np.array([2, 1, 2, 0, 1, 2])
    np.testing.assert_array_equal(vj.argsort(x, stable=True).numpy(), [3, 1, 4, 0, 2, 5])
    np.testing.assert_array_equal(vj.argsort(x, direction="DESCENDING", stable=True).numpy(),
                                  [0, 2, 5, 1, 4, 3])


def test_nan_sorts_last():
    x = np.array([1.0, np.nan, -1.0])
    np.testing.assert_array_equal(vj.sort(x).numpy(), [-1.0, 1.0, np.nan])
    np.testing.assert_array_equal(vj.sort(x, direction="DESCENDING").numpy(),
                                  [1.0, -1.0, np.nan])


def test_sort_gradient_goes_back_to_where_each_value_came_from():
    x = vj.constant(np.array([3.0, 1.0, 2.0]))
    with vj.GradientTape() as tape:
        tape.watch(x)
        y = vj.reduce_sum(vj.sort(x) * vj.constant([1.0, 10.0, 100.0]))
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), [100.0, 1.0, 10.0])


def test_searchsorted_rows_and_sides():
    seq = np.sort(RNG.standard_normal((2, 6)), axis=-1)
    vals = np.concatenate([seq[:, 2:4], RNG.standard_normal((2, 3))], axis=-1)  # with ties
    for side in ("left", "right"):
        got = vj.searchsorted(seq, vals, side=side)
        assert got.dtype == np.int32
        expected = [np.searchsorted(s, v, side=side) for s, v in zip(seq, vals)]
        np.testing.assert_array_equal(got.numpy(), expected)
    got = vj.searchsorted(seq[0], vals[:1], out_type=np.int64)
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got.numpy(), [np.searchsorted(seq[0], vals[0])])


@pytest.mark.parametrize("call,error,match", [
    (lambda: vj.sort(1.0), ValueError, "sort: values must have rank >= 1"),
    (lambda: vj.sort([1.0, 2.0], direction="UP"), ValueError, "sort: direction"),
    (lambda: vj.argsort([1.0, 2.0], stable="yes"), TypeError, "argsort: stable"),
    (lambda: vj.sort([1.0 + 1j]), TypeError, "sort: values must be a real"),
    (lambda: vj.searchsorted(np.ones((2, 3)), np.ones((3, 3))), ValueError,
     "searchsorted: values must have the leading axes"),
    (lambda: vj.searchsorted([1.0], [1.0], side="middle"), ValueError, "searchsorted: side"),
    (lambda: vj.searchsorted([1.0], [1.0], out_type=np.float32), TypeError,
     "searchsorted: out_type"),
])
def test_errors_name_function_and_argument(call, error, match):
    with pytest.raises(error, match=match):
        call()
