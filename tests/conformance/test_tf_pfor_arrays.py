"""Layout and indexing: cases from TensorFlow's pfor test-suite (sources and differences:
tests/conformance/tf_pfor_support.py), vectorized by vecjac and checked against the loop."""
import functools

import numpy as np
import pytest

import vecjac as vj
from tests.conformance.tf_pfor_support import (Case, assert_pfor_matches_loop, class_ids,
                                               complex_draw, draw, half_sum_of_squares, over_rows,
                                               params, persistent_tape)
from vecjac.vectorize import pfor


# == layout and indexing ===================================================================
def gather_variants():
    x = draw([3, 3, 3, 3])

    def body(i):
        results = []
        for source in (x, vj.gather(x, i)):  # loop invariant, then loop variant
            for axis in (0, 2, -1):
                picks = [2, vj.cast(2, vj.int64), vj.cast(i, vj.int64), [i], [i, 2],
                         [[2, i], [i, 1]]]
                results += [vj.gather(source, p, axis=axis) for p in picks]
                results.append(vj.gather(source, 2, axis=vj.cast(axis, vj.int64)))
            for axis, picks in ((1, [0, 1, 2]), (2, [i, 1, 2]), (-1, [[2, i], [i, 1], [2, 1]])):
                results.append(vj.gather(source, picks, axis=axis, batch_dims=1))
        return results
    return body


def shapes_of_a_mix():
    x, y = draw([3, 2, 3]), draw([3])

    def body(i):
        mix = [vj.gather(x, i), x, y, vj.gather(y, i)]
        return vj.shape_n(mix), vj.shape_n(mix, out_type=vj.int64)
    return body


def sorted_lookups():
    rows = vj.cumsum(draw([3, 2, 4]), axis=-1)  # sorted along the last axis
    needles = draw([2, 3], low=-1, high=4.5)

    def body(i):
        haystack = vj.gather(rows, i)
        return [vj.searchsorted(haystack, needles, out_type=vj.int32, side="left"),
                vj.searchsorted(haystack, needles, out_type=vj.int64, side="right")]
    return body


def zeros_like_in_a_tuple(r):
    # TF's body has a trailing comma: a 1-tuple, which `+ r` turns into shape (1, 2, 3)
    wrapped = (vj.zeros_like(r),)
    return wrapped, wrapped + r


def identity_n_mix():
    x = draw([3, 4])
    return lambda i: vj.identity_n([x, vj.gather(x, i)])


LAYOUT_CASES = [
    Case("gather_variants", gather_variants),
    Case("gather_nd", over_rows(
        lambda i, r: [vj.gather_nd(r, [0], batch_dims=0), vj.gather_nd(r, [i], batch_dims=0),
                      vj.gather_nd(r, [[i], [i], [i]], batch_dims=1)], [3, 3, 3], index=True)),
    Case("shape_n", shapes_of_a_mix),
    Case("reshape", over_rows(lambda r: (vj.reshape(r, [-1]), vj.reshape(r, [1, 3, 1, -1])),
                              [3, 2, 3])),
    Case("broadcast_to", over_rows(
        lambda r: (vj.broadcast_to(r, [2, 2, 3]), vj.broadcast_to(r, [1, 2, 1, 3])),
        [3, 2, 1, 3])),
    Case("expand_dims", over_rows(
        lambda r: (vj.expand_dims(r, axis=-1), vj.expand_dims(r, axis=1)), [3, 2, 3])),
    Case("searchsorted", sorted_lookups),
    Case("slice", over_rows(lambda r: vj.slice(r, begin=(0, 1), size=(2, 1)), [3, 2, 3])),
    Case("tile", over_rows(lambda r: vj.tile(r, [2, 1]), [3, 2, 3])),
    Case("stack_with_an_invariant", over_rows(lambda r, other: vj.stack([r, other], axis=-1),
                                              [3, 2, 3], fixed=[[2, 3]]), iters=1),
    Case("unstack", over_rows(
        lambda r: (vj.unstack(r, 4, axis=-1), vj.unstack(r, 3, axis=1)), [3, 2, 3, 4])),
    Case("pad", over_rows(lambda r: vj.pad(r, vj.constant([[1, 2], [3, 4]]), mode="CONSTANT"),
                          [3, 2, 3])),
    Case("split_in_equal_parts", over_rows(
        lambda r: (vj.split(r, 2, axis=0), vj.split(r, 3, axis=-1)), [3, 2, 3])),
    Case("split_by_sizes", over_rows(
        lambda r: (vj.split(r, [2, 1, 3], axis=0), vj.split(r, [3], axis=-1)), [3, 6, 3])),
    Case("squeeze", over_rows(
        lambda r: (vj.squeeze(r, axis=0), vj.squeeze(r, axis=-1), vj.squeeze(r)), [5, 1, 2, 1])),
    Case("reverse", over_rows(
        lambda r: tuple(vj.reverse(r, axis=axes) for axes in ([0], [-1], [1, -1])), [3, 4, 2, 3])),
    Case("transpose", over_rows(lambda r: vj.transpose(r, [2, 1, 0]), [3, 2, 3, 4])),
    Case("zeros_like_in_a_tuple", over_rows(zeros_like_in_a_tuple, [3, 2, 3])),
    Case("concat_with_an_invariant", over_rows(
        lambda r, other: tuple(vj.concat([r, r, other], axis=axis) for axis in (0, -1)),
        [3, 2, 3], fixed=[[2, 3]])),
    Case("identity_n", identity_n_mix),
    Case("roll_by_three", over_rows(lambda r: vj.roll(r, 3, axis=1), [3, 6, 7])),
    Case("roll_by_the_index", over_rows(
        lambda i, r: vj.roll(r, [i - 2, -1, i], axis=[1, 2, 2]), [3, 5, 6, 7], index=True)),
    Case("roll_first_axis_by_the_index",
         over_rows(lambda i, r: vj.roll(r, i, axis=0), [5, 5, 6], index=True), iters=5),
    Case("ensure_shape", over_rows(lambda r: vj.ensure_shape(r, [6, 7]), [3, 6, 7])),
    Case("depth_to_space", over_rows(
        lambda r: vj.nn.depth_to_space(r, 2, data_format="NHWC"), [2, 3, 2, 2, 12]), iters=2),
    Case("space_to_depth", over_rows(
        lambda r: vj.nn.space_to_depth(r, 2, data_format="NHWC"), [2, 3, 12, 12, 3]), iters=2),
    Case("batch_to_space", over_rows(
        lambda r: vj.batch_to_space(r, [2, 3], [[1, 2], [1, 0]]), [7, 5 * 2 * 3, 2, 2, 3, 2]),
        iters=7),
    Case("space_to_batch_nd", over_rows(
        lambda r: vj.space_to_batch_nd(r, [2, 3], [[1, 2], [1, 0]]),
        [7, 5, 2 * 2 - 3, 2 * 3 - 1, 3, 2]), iters=7),
    Case("check_numerics", over_rows(lambda r: vj.debugging.check_numerics(r, "test_message"),
                                     [2, 3, 4]), iters=2),
]


@pytest.mark.parametrize("case", params(LAYOUT_CASES))
def test_layout_and_indexing_case_vectorizes(case):
    case.assert_vectorizes()


@pytest.mark.parametrize("query, want", [
    (lambda r: (vj.shape(r), vj.shape(r, out_type=vj.int64)), [[2, 3]] * 3),
    (lambda r: (vj.size(r), vj.size(r, out_type=vj.int64)), [6] * 3),
    (vj.rank, [2] * 3),
], ids=["shape", "size", "rank"])
def test_shape_query_vectorizes_to_a_constant(query, want):
    x = draw([3, 2, 3])
    answer = assert_pfor_matches_loop(lambda i: query(vj.gather(x, i)), 3)
    for leaf in vj.nest.flatten(answer):
        np.testing.assert_array_equal(leaf.numpy(), want)


def test_fill_with_the_index():
    filled = assert_pfor_matches_loop(lambda i: vj.fill((2, 3), i), 3)
    np.testing.assert_array_equal(filled.numpy(),
                                  np.broadcast_to(np.arange(3)[:, None, None], (3, 2, 3)))


def test_one_hot_vectorizes_to_numpy():
    labels = class_ids([3, 2, 3], 4)

    def body(i):
        row = vj.gather(labels, i)
        return (vj.one_hot(row, depth=4, on_value=2.0, off_value=-2.0),
                vj.one_hot(row, depth=4, axis=1))
    encoded = assert_pfor_matches_loop(body, 3)
    np.testing.assert_array_equal(encoded[0].numpy(),
                                  np.where(np.eye(4)[labels.numpy()] == 1, 2.0, -2.0))


def test_tile_by_the_index_is_an_error_without_fallback():
    x = draw([3, 2, 3])
    with pytest.raises(ValueError, match="loop"):
        pfor(lambda i: vj.tile(vj.gather(x, i), [i, 1]), 2, fallback_to_while_loop=False)


def test_strided_slice_and_its_gradient_vectorize():
    x = draw([3, 3, 4, 4, 2, 2, 2])
    tape = persistent_tape(x)

    def body(i):
        with tape:
            row = vj.gather(x, i)
            piece = row[:2, ::2, 1::3, ..., None, 1]
            loss = half_sum_of_squares(piece)
        return piece, tape.gradient(loss, row)
    sliced = assert_pfor_matches_loop(body, 3)
    np.testing.assert_array_equal(sliced[0].numpy(), x.numpy()[:, :2, ::2, 1::3, ..., None, 1])


def test_slice_bounds_from_the_index_need_the_fallback():
    x = draw([3, 3, 4, 4, 2, 2, 2])

    def body(i):
        return vj.gather(x, i)[i:i + 1, ...]
    assert_pfor_matches_loop(body, 3, fallback=True)
    with pytest.raises(ValueError, match="loop"):
        pfor(body, 3, fallback_to_while_loop=False)


@pytest.mark.parametrize("op, slope", [(vj.identity, 4.0), (vj.stop_gradient, 2.0)],
                         ids=["identity", "stop_gradient"])
def test_identity_like_op_and_its_gradient_vectorize(op, slope):
    x = draw([3, 5])
    tape = persistent_tape(x)

    def body(i):
        with tape:
            row = vj.gather(x, i)
            doubled = op(row) + row
            loss = half_sum_of_squares(doubled)
        return op(x), doubled, tape.gradient(loss, row)
    result = assert_pfor_matches_loop(body, 3)
    # d/dr (2r)^2 / 2 = 4r; with op(r) held constant, d/dr (c + r)^2 / 2 = c + r = 2r
    np.testing.assert_allclose(result[2].numpy(), slope * x.numpy(), rtol=1e-12)


def test_conjugate_transpose_of_complex_rows():
    z = complex_draw((3, 2, 3, 4))
    flipped = assert_pfor_matches_loop(
        lambda i: vj.transpose(vj.gather(z, i), [2, 1, 0], conjugate=True), 3)
    np.testing.assert_array_equal(flipped.numpy(), np.conj(z.numpy().transpose(0, 3, 2, 1)))


def scatter_without_static_shapes():
    @vj.function(input_signature=[vj.TensorSpec(shape=None, dtype=vj.int64)] * 3)
    def scatter(dense, where, values):
        return vj.tensor_scatter_nd_update(dense, where, values)
    return scatter


def scatter_elements(update, i):
    # four single elements of a length-8 vector, three at places that follow the index
    return update([0] * 8, [[i], [i + 1], [i + 3], [i + 2]], [i, i - 10, i + 11, 12])


def scatter_two_diagonals(i):
    places = [[[k, k] for k in range(5)], [[k, 4 - k] for k in range(5)]]
    values = vj.cast([[1, i, 1, 1, 1], [1, 1, i + 2, 1, i - 5]], vj.float64)
    return vj.tensor_scatter_nd_update(vj.zeros([5, 5]), places, values)


SCATTER_CASES = [
    Case("elements_unknown_shapes",
         lambda: functools.partial(scatter_elements, scatter_without_static_shapes()), iters=5),
    Case("elements", lambda: functools.partial(scatter_elements, vj.tensor_scatter_nd_update),
         iters=5),
    Case("rows", lambda: lambda i: vj.tensor_scatter_nd_update(
        vj.zeros([10, 3], dtype=vj.int64), [[i + 2], [4]], [[1, i * 2, 3], [i + 4, i - 5, 6]]),
        iters=5),
    Case("matrix_elements", lambda: lambda i: vj.tensor_scatter_nd_update(
        vj.zeros([10, 3], dtype=vj.int64), [[i + 2, 1], [4, 2]], [i, 5]), iters=5),
    Case("two_diagonals", lambda: scatter_two_diagonals, iters=5),
]


@pytest.mark.parametrize("case", params(SCATTER_CASES))
def test_scatter_update_at_index_dependent_places_vectorizes(case):
    updated = case.assert_vectorizes()
    if case.name == "elements":  # i = 1: places 1, 2, 4, 3 get 1, -9, 12, 12
        np.testing.assert_array_equal(updated.numpy()[1], [0, 1, -9, 12, 12, 0, 0, 0])
