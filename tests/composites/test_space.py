"""vj.nn.space_to_depth / depth_to_space, vj.space_to_batch_nd / space_to_batch /
batch_to_space (vecjac/_src/composites/space.py).

Values are checked against NumPy references written here entry by entry (loops over
indices, independent of the reshape / transpose formulas of the implementation) and
against the small examples of TF's documentation; derivatives against finite differences
in forward and reverse mode; errors name the argument. pfor against the loop: TF's own
tests in tests/conformance/test_tf_pfor_*.py.
"""
import itertools

import numpy as np
import pytest

import vecjac as vj
import vecjac._src.composites.space
from vecjac.testing import check_grads, numerical_jacobian

RNG = np.random.default_rng(11)


# -- references ------------------------------------------------------------------------------
def ref_space_to_depth(x, b):
    n, h, w, c = x.shape
    out = np.zeros((n, h // b, w // b, b * b * c), x.dtype)
    for i, j, bi, bj, ch in itertools.product(range(h // b), range(w // b), range(b),
                                              range(b), range(c)):
        out[:, i, j, (bi * b + bj) * c + ch] = x[:, i * b + bi, j * b + bj, ch]
    return out


def ref_depth_to_space(x, b):
    n, h, w, c = x.shape
    depth = c // (b * b)
    out = np.zeros((n, h * b, w * b, depth), x.dtype)
    for i, j, bi, bj, ch in itertools.product(range(h), range(w), range(b), range(b),
                                              range(depth)):
        out[:, i * b + bi, j * b + bj, ch] = x[:, i, j, (bi * b + bj) * depth + ch]
    return out


def ref_space_to_batch(x, block, paddings):
    """out[(block position, row-major) * batch + n, grid position..., rest...] =
    padded[n, grid * block + block position..., rest...]."""
    m = len(block)
    padded = np.pad(x, [(0, 0)] + [tuple(p) for p in paddings] + [(0, 0)] * (x.ndim - 1 - m))
    grid = [padded.shape[1 + i] // block[i] for i in range(m)]
    batch = x.shape[0]
    out = np.zeros((batch * int(np.prod(block)),) + tuple(grid) + x.shape[1 + m:], x.dtype)
    for pos_number, pos in enumerate(np.ndindex(*block)):
        for n in range(batch):
            for g in np.ndindex(*grid):
                src = (n,) + tuple(gi * bi + p for gi, bi, p in zip(g, block, pos))
                out[(pos_number * batch + n,) + g] = padded[src]
    return out


def ref_batch_to_space(x, block, crops):
    m = len(block)
    count = int(np.prod(block))
    batch = x.shape[0] // count
    full = [x.shape[1 + i] * block[i] for i in range(m)]
    out = np.zeros((batch,) + tuple(full) + x.shape[1 + m:], x.dtype)
    for pos_number, pos in enumerate(np.ndindex(*block)):
        for n in range(batch):
            for g in np.ndindex(*x.shape[1:1 + m]):
                dst = (n,) + tuple(gi * bi + p for gi, bi, p in zip(g, block, pos))
                out[dst] = x[(pos_number * batch + n,) + g]
    keep = (slice(None),) + tuple(slice(s, f - e) for (s, e), f in zip(crops, full))
    return out[keep]


# -- space_to_depth, depth_to_space ---------------------------------------------------------
def test_space_to_depth_of_tf_docs_examples():
    x = np.array([[[[1], [2]], [[3], [4]]]], float)
    np.testing.assert_array_equal(vj.nn.space_to_depth(x, 2).numpy(), [[[[1, 2, 3, 4]]]])
    x = np.arange(1.0, 13.0).reshape(1, 2, 2, 3)
    np.testing.assert_array_equal(vj.nn.space_to_depth(x, 2).numpy(),
                                  np.arange(1.0, 13.0).reshape(1, 1, 1, 12))
    np.testing.assert_array_equal(vj.nn.depth_to_space(np.arange(1.0, 13.0).reshape(1, 1, 1, 12),
                                                       2).numpy(), x)


@pytest.mark.parametrize("shape, b", [((2, 4, 6, 3), 2), ((1, 6, 3, 2), 3), ((3, 2, 2, 1), 2)],
                         ids=str)
def test_space_to_depth_and_back_match_loops(shape, b):
    x = RNG.standard_normal(shape)
    y = vj.nn.space_to_depth(x, b, data_format="NHWC").numpy()
    np.testing.assert_array_equal(y, ref_space_to_depth(x, b))
    np.testing.assert_array_equal(vj.nn.depth_to_space(y, b).numpy(), x)
    z = RNG.standard_normal(y.shape)
    np.testing.assert_array_equal(vj.nn.depth_to_space(z, b).numpy(), ref_depth_to_space(z, b))


def test_space_to_depth_derivatives():
    check_grads(lambda x: vj.nn.space_to_depth(x, 2), [RNG.standard_normal((1, 4, 2, 3))],
                modes=("fwd", "rev"))
    check_grads(lambda x: vj.nn.depth_to_space(x, 2), [RNG.standard_normal((2, 1, 2, 8))],
                modes=("fwd", "rev"))


@pytest.mark.parametrize("fn, args, match", [
    ("space_to_depth", (np.zeros((1, 4, 4, 1)), 1), "block_size must be >= 2, got 1"),
    ("space_to_depth", (np.zeros((1, 4, 4, 1)), 2.0), "block_size must be an int"),
    ("space_to_depth", (np.zeros((4, 4, 1)), 2), r"input must have rank 4 .* got shape"),
    ("space_to_depth", (np.zeros((1, 4, 6, 1)), 4), "height 4 and width 6 must be divisible"),
    ("depth_to_space", (np.zeros((1, 2, 2, 6)), 2), "depth 6 must be divisible by"),
    ("depth_to_space", (np.zeros((1, 2, 2, 4)), 0), "block_size must be >= 2"),
])
def test_space_to_depth_bad_inputs(fn, args, match):
    with pytest.raises((ValueError, TypeError), match=f"{fn}: .*{match}"):
        getattr(vj.nn, fn)(*args)


@pytest.mark.parametrize("fn", ["space_to_depth", "depth_to_space"])
def test_only_nhwc_is_supported(fn):
    with pytest.raises(ValueError, match=f"{fn}: data_format must be 'NHWC'.*'NCHW'"):
        getattr(vj.nn, fn)(np.zeros((1, 4, 4, 4)), 2, data_format="NCHW")


# -- space_to_batch_nd, batch_to_space -----------------------------------------------------
def test_space_to_batch_of_tf_docs_examples():
    x = np.array([[[[1], [2]], [[3], [4]]]], float)
    got = vj.space_to_batch_nd(x, [2, 2], [[0, 0], [0, 0]]).numpy()
    np.testing.assert_array_equal(got, [[[[1]]], [[[2]]], [[[3]]], [[[4]]]])
    np.testing.assert_array_equal(vj.batch_to_space(got, [2, 2], [[0, 0], [0, 0]]).numpy(), x)
    x = np.arange(1.0, 17.0).reshape(2, 2, 4, 1)
    got = vj.space_to_batch_nd(x, [2, 2], [[0, 0], [2, 0]]).numpy()
    assert got.shape == (8, 1, 3, 1)
    np.testing.assert_array_equal(got[..., 0], [[[0, 1, 3]], [[0, 9, 11]], [[0, 2, 4]],
                                                [[0, 10, 12]], [[0, 5, 7]], [[0, 13, 15]],
                                                [[0, 6, 8]], [[0, 14, 16]]])


@pytest.mark.parametrize("shape, block, paddings", [
    ((2, 4, 6, 3), [2, 3], [[0, 0], [0, 0]]),
    ((1, 3, 5, 2, 2), [2, 3], [[1, 0], [0, 1]]),
    ((2, 5), [3], [[1, 0]]),
    ((1, 2, 2, 2, 1), [1, 2, 2], [[0, 0], [1, 1], [0, 2]]),
], ids=str)
def test_space_to_batch_and_back_match_loops(shape, block, paddings):
    x = RNG.standard_normal(shape)
    y = vj.space_to_batch_nd(x, block, paddings).numpy()
    np.testing.assert_array_equal(y, ref_space_to_batch(x, block, paddings))
    np.testing.assert_array_equal(vj.space_to_batch(x, block, paddings).numpy(), y)
    np.testing.assert_array_equal(vj.nn.space_to_batch(x, block, paddings).numpy(), y)
    # cropping what was padded gives the input back
    np.testing.assert_array_equal(vj.batch_to_space(y, block, paddings).numpy(), x)
    crops = [[1, 0]] + [[0, 0]] * (len(block) - 1)
    z = RNG.standard_normal(y.shape)
    np.testing.assert_array_equal(vj.batch_to_space(z, block, crops).numpy(),
                                  ref_batch_to_space(z, block, crops))


def test_batch_to_space_takes_an_int_block_shape_and_any_dtype():
    x = np.arange(16).reshape(4, 2, 2, 1)
    got = vj.batch_to_space(x, 2, [[0, 1], [1, 0]]).numpy()
    np.testing.assert_array_equal(got, ref_batch_to_space(x, [2, 2], [[0, 1], [1, 0]]))
    assert got.dtype == np.int64
    mask = vj.space_to_batch_nd(np.ones((1, 2, 2), bool), [2], [[1, 1]]).numpy()
    np.testing.assert_array_equal(mask, ref_space_to_batch(np.ones((1, 2, 2), bool), [2],
                                                           [[1, 1]]))


def test_space_to_batch_derivatives():
    check_grads(lambda x: vj.space_to_batch_nd(x, [2, 3], [[1, 0], [0, 1]]),
                [RNG.standard_normal((1, 3, 5, 2))], modes=("fwd", "rev"))
    check_grads(lambda x: vj.batch_to_space(x, [2, 3], [[1, 2], [1, 0]]),
                [RNG.standard_normal((6, 2, 2, 2))], modes=("fwd", "rev"))


def test_per_example_gradients_under_pfor():
    x = RNG.standard_normal((3, 2, 4, 4, 1))

    def loop_fn(i):
        xi = vj.gather(x, i)
        with vj.GradientTape() as tape:
            tape.watch(xi)
            y = vj.batch_to_space(vj.space_to_batch_nd(xi * xi, [2, 2], [[0, 0], [0, 0]]),
                                  [2, 2], [[0, 0], [0, 0]])
            loss = vj.reduce_sum(vj.nn.space_to_depth(y, 2) ** 2)
        return tape.gradient(loss, xi)
    g = vj.vectorize.pfor(loop_fn, 3)
    np.testing.assert_allclose(g.numpy(), 4 * x ** 3, rtol=1e-12)


@pytest.mark.parametrize("mode", ["rev", "fwd"])
def test_jacobians_match_finite_differences(mode):
    moves = lambda a: vj.batch_to_space(vj.nn.depth_to_space(a, 2), [2, 1],  # noqa: E731
                                        [[1, 0], [0, 1]])
    a = RNG.standard_normal((2, 2, 2, 8))
    np.testing.assert_allclose(np.asarray(vj.jacobian(moves, mode=mode)(a)),
                               numerical_jacobian(moves, a), atol=1e-8)


def test_sparsity_patterns():
    x = np.ones((1, 4, 2, 1))
    for f in (lambda a: vj.nn.space_to_depth(a, 2),
              lambda a: vj.batch_to_space(vj.space_to_batch_nd(a, [2, 2], [[0, 0], [1, 1]]),
                                          [2, 2], [[0, 0], [1, 1]])):
        dense = vj.jacobian_sparsity(f, x).toarray()
        assert dense.shape == (8, 8)  # a permutation: each output is one input
        assert (dense.sum(axis=0) == 1).all() and (dense.sum(axis=1) == 1).all()


@pytest.mark.parametrize("fn, args, match", [
    ("space_to_batch_nd", (np.zeros((1, 4, 4)), [2, 2], [[0, 0]]),
     r"paddings must have shape \(M, 2\) = \(2, 2\)"),
    ("space_to_batch_nd", (np.zeros((1, 4, 4)), [2, 2], [[0, 0], [-1, 1]]),
     "paddings must be >= 0"),
    ("space_to_batch_nd", (np.zeros((1, 4, 4)), [2, 2], [[0, 0], [0.5, 0]]),
     "paddings must be ints"),
    ("space_to_batch_nd", (np.zeros((1, 4, 4)), [2, 2], [[0, 0], [0, 1]]),
     "padded to 5 is not divisible by block_shape"),
    ("space_to_batch_nd", (np.zeros((1, 4, 4)), [2, 0], [[0, 0], [0, 0]]),
     "block_shape must be >= 1"),
    ("space_to_batch_nd", (np.zeros((1, 4, 4)), [[2, 2]], [[0, 0], [0, 0]]),
     "block_shape must be a 1-D list"),
    ("space_to_batch_nd", (np.zeros((1, 4)), [2, 2], [[0, 0], [0, 0]]),
     r"input must have rank >= 1 \+ M = 3"),
    ("space_to_batch", (np.zeros((1, 4, 4)), [2, 2], [[0, 0], [0, 1]]), "not divisible"),
    ("batch_to_space", (np.zeros((3, 2, 2)), [2, 2], [[0, 0], [0, 0]]),
     r"input batch 3 is not divisible by prod\(block_shape\) = 4"),
    ("batch_to_space", (np.zeros((4, 2, 2)), [2, 2], [[2, 3], [0, 0]]),
     r"crops\[0\] = \[2, 3\] removes more than the 4"),
    ("batch_to_space", (np.zeros((4, 2, 2)), [2, 2], [[0, 0]]),
     r"crops must have shape \(M, 2\)"),
    ("batch_to_space", (np.zeros((4, 2, 2)), 2.5, [[0, 0], [0, 0]]), "block_shape must be ints"),
])
def test_space_to_batch_bad_inputs(fn, args, match):
    with pytest.raises((ValueError, TypeError), match=f"{fn}: .*{match}"):
        getattr(vj, fn)(*args)


def test_block_arguments_cannot_vary_over_a_loop():
    x = np.zeros((2, 1, 4, 4, 1))
    with pytest.raises(ValueError, match="space_to_batch_nd: block_shape cannot vary"):
        vj.vectorize.pfor(lambda i: vj.space_to_batch_nd(vj.gather(x, i), vj.stack([i + 1, 2]),
                                                          [[0, 0], [0, 0]]), 2)
