"""Indexing: gather, gather_nd, x[key], boolean_mask, where_indices, one_hot, scatters.

Forward against NumPy's take / advanced indexing / add.at and loops over batch dimensions
for every argument form; gradients on large arrays, complex and integer inputs; keys that
vary over a pfor loop; bad inputs. Gradients, float32, pfor and Jacobians of GatherV2,
StridedSlice and OneHot (which gather, gather_nd, x[key] and boolean_mask run):
tests/test_registry.py, through their samples. The scatters are compositions of several
ops: checked here in full.
"""
import numpy as np
import pytest

import vecjac as vj
from vecjac._src.core.registry import lib
from tests.ops.array.test_shaping import ITERS, check_float32, check_pfor_combos, rand
from vecjac.testing import check_grads, check_pfor

RNG = np.random.default_rng(1)


def ints(high, *shape, low=0):
    return RNG.integers(low, high, shape)


def np_gather(params, indices, axis, batch_dims):
    if batch_dims == 0:
        return np.take(params, indices, axis=axis)
    return np.stack([np_gather(p, i, axis - 1, batch_dims - 1)
                     for p, i in zip(params, indices)])


# -- gather ------------------------------------------------------------------------------
GATHER = [  # params shape, indices, axis, batch_dims
    ((5,), ints(5, 3), 0, 0),
    ((5,), np.array(2), 0, 0),
    ((4, 3), np.array([[0, 3], [-1, 1], [2, 2]]), 0, 0),  # duplicates and a negative
    ((2, 4, 3), ints(4, 2), 1, 0),
    ((2, 4, 3), ints(3, 2, 2), -1, 0),
    ((2, 4, 3), ints(4, 2, 5), 1, 1),
    ((2, 3, 4, 2), ints(4, 2, 3, 2), 2, 2),
    ((2, 3, 4), ints(4, 2, 5), 2, 1),
]


@pytest.mark.parametrize("shape,indices,axis,batch_dims", GATHER)
def test_gather(shape, indices, axis, batch_dims):
    params = rand(*shape)
    expected = np_gather(params, indices, axis % len(shape), batch_dims)
    out = vj.gather(params, indices, axis=axis, batch_dims=batch_dims)
    assert out.shape == expected.shape
    np.testing.assert_array_equal(out.numpy(), expected)


def test_gather_gradient_scatters_duplicates_in_float32_and_complex():
    idx = np.array([1, 1, 0, 1, -1])
    for dtype in (np.float32, np.complex128):
        x = vj.constant(np.ones((3, 2), dtype))
        with vj.GradientTape() as tape:
            tape.watch(x)
            y = vj.gather(x, idx)
        seed = vj.constant(np.ones((5, 2), dtype) * (1 - 2j if dtype == np.complex128 else 1))
        g = tape.gradient(y, x, output_gradients=seed)
        assert g.dtype == dtype
        expected = np.zeros((3, 2), dtype)
        np.add.at(expected, idx, 1 - 2j if dtype == np.complex128 else 1)
        np.testing.assert_array_equal(g.numpy(), expected)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("axis,batch_dims", [(0, 0), (1, 0), (1, 1)])
def test_gather_gradient_on_large_arrays(dtype, axis, batch_dims):
    # above ~1000 elements the scatter-add takes its bincount path
    params = rand(6, 40, 9).astype(dtype)
    size = params.shape[axis]
    indices = RNG.integers(-size, size, (6, 70) if batch_dims else (70,))
    g = rand(*np_gather(params, indices, axis, batch_dims).shape).astype(dtype)
    x = vj.constant(params)
    with vj.GradientTape() as tape:
        tape.watch(x)
        y = vj.gather(x, indices, axis=axis, batch_dims=batch_dims)
    grad = tape.gradient(y, x, output_gradients=vj.constant(g))
    expected = np.zeros_like(params)
    if batch_dims:
        for b in range(6):
            np.add.at(expected[b], (indices[b] % size,), g[b])
    else:
        np.add.at(np.moveaxis(expected, axis, 0), indices % size, np.moveaxis(g, axis, 0))
    assert grad.dtype == dtype
    tol = 1e-5 if dtype == np.float32 else 1e-12  # float32 oracle sums in float32
    np.testing.assert_allclose(grad.numpy(), expected, rtol=tol, atol=tol)


def test_gather_integer_params_has_no_gradient_and_works_in_pfor():
    check_pfor(lambda i: vj.gather(vj.constant([[1, 2], [3, 4]]), vj.stack([i % 2, 1 - i % 2]),
                                   axis=1), 4)


GATHER_BAD = [
    (lambda: vj.gather(rand(3), [0.5]), TypeError, "gather: indices must be integers"),
    (lambda: vj.gather(rand(), [0]), ValueError, "gather: params must have rank >= 1"),
    (lambda: vj.gather(rand(3), [3]), IndexError, "gather: index 3 is out of bounds"),
    (lambda: vj.gather(rand(3, 2), [0], axis=2), ValueError, "gather: axis=2"),
    (lambda: vj.gather(rand(3, 2), [[0]], batch_dims=2), ValueError, "gather: batch_dims=2"),
    (lambda: vj.gather(rand(3, 2), [[0]] * 2, batch_dims=1), ValueError,
     "gather: the first batch_dims=1 dimensions"),
    (lambda: vj.gather(rand(3, 2), [[0]] * 3, axis=0, batch_dims=1), ValueError,
     "gather: axis=0 must be >= batch_dims=1"),
    (lambda: vj.gather(rand(3, 2), [0], batch_dims=0.5), TypeError, "gather: batch_dims"),
]


@pytest.mark.parametrize("call,error,match", GATHER_BAD)
def test_gather_bad_inputs(call, error, match):
    with pytest.raises(error, match=match):
        call()


# -- gather_nd ---------------------------------------------------------------------------
def np_gather_nd(params, indices, batch_dims=0):
    if batch_dims:
        return np.stack([np_gather_nd(p, i, batch_dims - 1) for p, i in zip(params, indices)])
    if indices.shape[-1] == 0:  # empty index tuples select all of params
        return np.broadcast_to(params, indices.shape[:-1] + params.shape)
    return params[tuple(np.moveaxis(indices, -1, 0))]


GATHER_ND = [  # params shape, indices, batch_dims
    ((3, 4), np.array([[0, 1], [2, 3], [2, 3]]), 0),
    ((3, 4, 2), np.array([[1], [0]]), 0),
    ((3, 4, 2), np.array([[[1, 3, 0]], [[2, 0, 1]]]), 0),
    ((3, 4), np.zeros((2, 0), np.int64), 0),
    ((2, 4, 3), np.array([[[1], [3]], [[0], [0]]]), 1),
    ((2, 4, 3), np.array([[1, 2], [3, 0]]), 1),
]


@pytest.mark.parametrize("shape,indices,batch_dims", GATHER_ND)
def test_gather_nd(shape, indices, batch_dims):
    params = rand(*shape)
    expected = np_gather_nd(params, indices, batch_dims)
    out = vj.gather_nd(params, indices, batch_dims=batch_dims)
    assert out.shape == expected.shape
    np.testing.assert_array_equal(out.numpy(), expected)


GATHER_ND_BAD = [
    (lambda: vj.gather_nd(rand(3), 1), ValueError, "gather_nd: indices must have rank >= 1"),
    (lambda: vj.gather_nd(rand(3), [0.0]), TypeError, "gather_nd: indices must be integers"),
    (lambda: vj.gather_nd(rand(3), [[0, 1]]), ValueError, "gather_nd: index tuples of length 2"),
    (lambda: vj.gather_nd(rand(3, 2), [[3, 0]]), IndexError,
     "gather_nd: index 3 is out of bounds for axis 0"),
    (lambda: vj.gather_nd(rand(3, 2), [[0, -1]]), IndexError,
     "gather_nd: index -1 is out of bounds for axis 1"),
    (lambda: vj.gather_nd(rand(3, 2), [[0]], batch_dims=2), ValueError, "gather_nd: batch_dims=2"),
    (lambda: vj.gather_nd(rand(3, 2), [[0], [1]], batch_dims=1), ValueError,
     "gather_nd: the first batch_dims=1 dimensions"),
]


@pytest.mark.parametrize("call,error,match", GATHER_ND_BAD)
def test_gather_nd_bad_inputs(call, error, match):
    with pytest.raises(error, match=match):
        call()


# -- x[key] ------------------------------------------------------------------------------
X4 = rand(3, 4, 2, 5)
KEYS = [
    (slice(None), 0, slice(None), 0),       # the guide's j[:, 0, :, 0]
    (1,), (-1,), (Ellipsis,), (slice(None),), (slice(None, None, -1),),
    (slice(3, 0, -2), slice(None), 1), (Ellipsis, slice(None, None, -2)),
    (None, 0, Ellipsis, None, -1), (slice(1, 2), None, slice(-3, None)),
    (Ellipsis, 1, slice(None)), (slice(10, 20),),
    ([2, 0, 2],), ([[1, -1], [0, 0]], Ellipsis, 3), (slice(None), [3, 1]),
    (0, slice(None), [1, 0]), (slice(None), [0, 1], 1),         # int + array adjacency
    ([0, 2], slice(None), [1, 1]), (slice(None), [1, 2], slice(None), [4, 0]),  # separated
    ([0, 1], [2, 3], 1), (None, [1, 2], None),
    (np.array([True, False, True]),), (slice(None), X4[0, :, :, 0] > 0),
    (X4[..., 0, 0] > 0, slice(None, None, -1)), ([],),
    (np.int64(1), np.int32(-2)),
]


@pytest.mark.parametrize("key", KEYS, ids=[str(k)[:40] for k in KEYS])
def test_getitem_matches_numpy(key):
    x = vj.constant(X4)
    expected = X4[key]
    out = x[key]
    assert out.shape == expected.shape
    np.testing.assert_array_equal(out.numpy(), expected)


def test_getitem_with_tensor_and_variable_keys():
    x = vj.constant(X4)
    np.testing.assert_array_equal(x[vj.constant(2)].numpy(), X4[2])
    np.testing.assert_array_equal(x[vj.constant([2, 0]), 1].numpy(), X4[[2, 0], 1])
    np.testing.assert_array_equal(x[vj.Variable(1, trainable=False)].numpy(), X4[1])
    np.testing.assert_array_equal(x[:, vj.constant(1):vj.constant(3)].numpy(), X4[:, 1:3])


@pytest.mark.parametrize("loop_fn_of", [
    lambda x: lambda i: x[i],
    lambda x: lambda i: x[-1 - i],
    lambda x: lambda i: x[:, i],
    lambda x: lambda i: x[i, i],
    lambda x: lambda i: x[i, :, 1, i],
    lambda x: lambda i: x[i, ::-1][1:, i],
    lambda x: lambda i: x[vj.stack([i, 2 - i]), ..., 0],
    lambda x: lambda i: x[i][[0, 2], None, ..., i],
], ids=["x[i]", "x[-1-i]", "x[:,i]", "x[i,i]", "x[i,:,1,i]", "x[i,::-1][1:,i]",
        "x[[i,2-i],...,0]", "x[i][[0,2],None,...,i]"])
def test_getitem_with_loop_index(loop_fn_of):
    x = vj.constant(rand(3, 3, 4, 3))
    check_pfor(loop_fn_of(x), 3)

    def grad_fn(i):  # per-iteration gradient, tape inside the loop
        with vj.GradientTape() as tape:
            tape.watch(x)
            y = vj.reduce_sum(vj.sin(loop_fn_of(x)(i)))
        return tape.gradient(y, x)
    check_pfor(grad_fn, 3)


GETITEM_BAD = [
    (lambda x: x[3], IndexError, "getitem: index 3 is out of bounds for axis 0 with size 3"),
    (lambda x: x[0, -5], IndexError, "getitem: index -5 is out of bounds for axis 1"),
    (lambda x: x[:, [0, 4]], IndexError, "getitem: index 4 is out of bounds for axis 1"),
    (lambda x: x[0, 0, 0], IndexError, r"getitem: too many indices \(3\)"),
    (lambda x: x[[0], [0], [0]], IndexError, r"getitem: too many indices \(3\)"),
    (lambda x: x[..., 0, ...], IndexError, "single ellipsis"),
    (lambda x: x[[0, 1], [0, 1, 2]], IndexError, "could not be broadcast"),
    (lambda x: x[1.5], IndexError, "array indices must be integers or booleans"),
    (lambda x: x[::0], ValueError, "slice step cannot be zero"),
    (lambda x: x[0.5:], TypeError, "slice bounds must be ints"),
    # x[True] alone is NumPy's new axis (array API object); inside a tuple it is refused
    (lambda x: x[0, True], IndexError, "scalar boolean index"),
    (lambda x: x[np.array([True, False])], IndexError, r"boolean mask of shape \(2,\)"),
]


@pytest.mark.parametrize("call,error,match", GETITEM_BAD)
def test_getitem_bad_inputs(call, error, match):
    with pytest.raises(error, match=match):
        call(vj.constant(rand(3, 4)))


def test_getitem_loop_variant_mask_and_slice_bounds_are_rejected():
    x = vj.constant(rand(3, 4))
    with pytest.raises(ValueError, match="loop-variant boolean mask"):
        vj.vectorize.pfor(lambda i: x[vj.gather(x, i) > 0], 3)
    # loop-variant bounds giving the iterations different shapes cannot be stacked
    with pytest.raises(ValueError, match="slice bounds that vary over a pfor loop give the "
                                         "iterations different shapes"):
        vj.vectorize.pfor(lambda i: x[i:], 3)


@pytest.mark.filterwarnings("ignore::vecjac.vectorize.FallbackWarning")
def test_getitem_with_loop_variant_slice_bounds_runs_per_iteration():
    # TF's pfor falls back to the loop for a strided slice with a loop-variant begin:
    # vecjac too (DynamicStridedSlice), with values, gradients and tangents of the loop
    data = rand(4, 6, 3)
    keys = (lambda i: (slice(i, i + 2), 1), lambda i: (slice(i + 2, i, -1), Ellipsis),
            lambda i: (None, slice(5 - i, 2 - i, -2), slice(None)),
            lambda i: (slice(i, i + 1),), lambda i: (slice(None), slice(i, 6, 3 + i)))
    for key in keys:
        got = vj.vectorize.pfor(lambda i: vj.gather(vj.constant(data), i)[key(i)], 3).numpy()
        want = np.stack([data[k][key(k)] for k in range(3)])
        np.testing.assert_array_equal(got, want)
    x = vj.constant(data)
    w = rand(3, 2, 3)
    with vj.GradientTape() as tape:
        tape.watch(x)
        y = vj.vectorize.pfor(lambda i: vj.gather(x, i)[i:i + 2], 3)
        loss = vj.reduce_sum(y * w)
    want = np.zeros_like(data)
    for k in range(3):
        want[k, k:k + 2] += w[k]
    np.testing.assert_array_equal(tape.gradient(loss, x).numpy(), want)
    t = rand(4, 6, 3)
    with vj.autodiff.ForwardAccumulator(x, vj.constant(t)) as acc:
        y = vj.vectorize.pfor(lambda i: vj.gather(x, i)[i:i + 2], 3)
    np.testing.assert_array_equal(acc.jvp(y).numpy(), np.stack([t[k, k:k + 2]
                                                                for k in range(3)]))
    with pytest.raises(ValueError, match="fallback_to_while_loop=False"):
        vj.vectorize.pfor(lambda i: x[i][i:i + 1], 3, fallback_to_while_loop=False)
    with pytest.raises(TypeError, match="slice bounds must be int scalars"):
        vj.vectorize.pfor(lambda i: x[vj.cast(i, vj.float64):], 3)
    with pytest.raises(ValueError, match="cannot be combined with array indices"):
        vj.vectorize.pfor(lambda i: x[i:i + 1, [0, 1]], 3)


# -- boolean_mask, where_indices ---------------------------------------------------------
@pytest.mark.parametrize("shape,mask_shape,axis", [
    ((4,), (4,), None), ((4, 3), (4,), 0), ((2, 4, 3), (4, 3), 1), ((2, 4), (4,), -1)])
def test_boolean_mask(shape, mask_shape, axis):
    x = rand(*shape)
    mask = RNG.random(mask_shape) > 0.4
    ax = 0 if axis is None else axis % len(shape)
    flat = x.reshape(shape[:ax] + (-1,) + shape[ax + len(mask_shape):])
    expected = np.compress(mask.reshape(-1), flat, axis=ax)

    np.testing.assert_array_equal(vj.boolean_mask(x, mask, axis=axis).numpy(), expected)


@pytest.mark.parametrize("call,error,match", [
    (lambda: vj.boolean_mask(rand(3), [1, 0, 1]), TypeError,
     "boolean_mask: mask must be a bool"),
    (lambda: vj.boolean_mask(rand(3), True), ValueError, "boolean_mask: mask must have rank >= 1"),
    (lambda: vj.boolean_mask(rand(3, 2), [True, False]), ValueError,
     r"boolean_mask: mask shape \(2,\) does not match tensor.shape\[0:1\]"),
    (lambda: vj.boolean_mask(rand(3, 2), [True, False], axis=2), ValueError, "boolean_mask: axis=2"),
])
def test_boolean_mask_bad_inputs(call, error, match):
    with pytest.raises(error, match=match):
        call()


@pytest.mark.parametrize("cond", [np.array([True, False, True]), RNG.random((3, 4)) > 0.5,
                                  np.array(True), np.array([[0, 2], [1, 0]]),
                                  np.zeros((2, 0), bool)])
def test_where_indices(cond):
    for out in (lib.where_indices(cond), vj.where(cond)):
        assert out.dtype == np.int64
        expected = np.argwhere(cond)
        assert out.shape == expected.shape
        np.testing.assert_array_equal(out.numpy(), expected)


def test_where_indices_in_pfor():
    cond = vj.constant(np.array([True, False, True]))
    check_pfor(lambda i: vj.cast(i, vj.int64) + vj.reduce_sum(vj.where(cond)), 3)  # invariant
    with pytest.raises(ValueError, match="where: .*loop-variant condition"):
        vj.vectorize.pfor(lambda i: vj.where(vj.gather(cond, i)), 3)


# -- one_hot -----------------------------------------------------------------------------
@pytest.mark.parametrize("indices,depth,axis,on,off,dtype", [
    (np.array([0, 2, 1, 5, -1]), 3, None, None, None, None),
    (np.array([[0, 1], [2, 0]]), 3, 0, 5.0, -1.0, np.float32),
    (np.array(1), 4, -1, 1, 0, np.int32),
])
def test_one_hot(indices, depth, axis, on, off, dtype):
    out = vj.one_hot(indices, depth, on_value=on, off_value=off, axis=axis, dtype=dtype)
    expected = np.where(indices[..., None] == np.arange(depth), 1 if on is None else on,
                        0 if off is None else off).astype(dtype or np.float64)
    if axis is not None and axis != -1:
        expected = np.moveaxis(expected, -1, axis)
    assert out.dtype == expected.dtype
    np.testing.assert_array_equal(out.numpy(), expected)


def test_one_hot_bad_inputs():
    with pytest.raises(TypeError, match="one_hot: indices must be integers"):
        vj.one_hot([0.5], 3)
    with pytest.raises(ValueError, match="one_hot: depth must be >= 0"):
        vj.one_hot([0], -1)
    with pytest.raises(ValueError, match="one_hot: axis=3"):
        vj.one_hot([0], 3, axis=3)


# -- tensor_scatter_nd_add / update ------------------------------------------------------
SCATTER = [  # tensor shape, indices
    ((5,), np.array([[1], [3], [1]])),
    ((4, 3), np.array([[0], [2]])),
    ((4, 3), np.array([[0, 1], [3, 2], [0, 1]])),
    ((2, 3, 2), np.array([[[1, 0]], [[0, 2]]])),
]


@pytest.mark.parametrize("shape,indices", SCATTER)
@pytest.mark.parametrize("kind", ["add", "update"])
def test_tensor_scatter_nd(shape, indices, kind):
    tensor = rand(*shape)
    k = indices.shape[-1]
    updates = rand(*(indices.shape[:-1] + shape[k:]))
    expected = tensor.copy()
    positions = tuple(np.moveaxis(indices, -1, 0))
    if kind == "add":
        np.add.at(expected, positions, updates)
        fn = vj.tensor_scatter_nd_add
    else:  # the last of repeated updates wins
        for pos, u in zip(indices.reshape(-1, k), updates.reshape((-1,) + shape[k:])):
            expected[tuple(pos)] = u
        fn = vj.tensor_scatter_nd_update

    def f(t, u, i=indices):
        return fn(t, i, u)
    np.testing.assert_allclose(f(tensor, updates).numpy(), expected, rtol=1e-14)
    check_grads(lambda t, u: vj.sin(f(t, u)), [tensor, updates], order=2)
    check_float32(f, [tensor, updates])
    check_pfor_combos(f, [tensor, updates])
    # loop-variant indices (distinct within each iteration, so update is well defined)
    dims = shape[:k]
    flat = np.stack([RNG.permutation(int(np.prod(dims)))[:indices[..., 0].size]
                     for _ in range(ITERS)])
    stacked = np.stack(np.unravel_index(flat, dims), -1).reshape((ITERS,) + indices.shape)
    check_pfor_combos(lambda t, u, i: f(t, u, i), [tensor, updates, indices],
                      stacked=[None, None, stacked])


@pytest.mark.parametrize("call,error,match", [
    (lambda: vj.tensor_scatter_nd_add(rand(3), [[0]], rand(2)), ValueError,
     r"tensor_scatter_nd_add: updates must have shape .* = \(1,\), got \(2,\)"),
    (lambda: vj.tensor_scatter_nd_add(rand(3), [[0, 0]], rand(1)), ValueError,
     "tensor_scatter_nd_add: index tuples of length 2"),
    (lambda: vj.tensor_scatter_nd_update(rand(3), [[3]], rand(1)), IndexError,
     "tensor_scatter_nd_update: index 3 is out of bounds"),
    (lambda: vj.tensor_scatter_nd_update(rand(3), [0.0], rand(1)), TypeError,
     "tensor_scatter_nd_update: indices must be integers"),
    (lambda: vj.tensor_scatter_nd_add(rand(3), [[0]], rand(1).astype(np.float32)), TypeError,
     "tensor_scatter_nd_add: updates dtype float32"),
])
def test_tensor_scatter_nd_bad_inputs(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_tensor_scatter_nd_update_with_repeated_loop_variant_indices_keeps_the_last():
    # as in the loop (and with loop-invariant indices), the last update of a repeated
    # index tuple wins in each iteration, also for inf / NaN updates overwritten, and the
    # gradient reaches only the updates kept
    base = rand(4, 2)
    t = vj.constant(base)
    ups = vj.constant(np.array([[np.inf, np.nan], [1.0, 2.0], [3.0, 4.0]]))

    def loop_fn(i):
        idx = vj.reshape(vj.stack([i, (i + 1) % 4, i]), (3, 1))  # i repeats: the third wins
        return vj.tensor_scatter_nd_update(t, idx, ups * vj.cast(i + 1, vj.float64))
    with vj.GradientTape() as tape:
        tape.watch(ups)
        got = vj.vectorize.pfor(loop_fn, 4)
        loss = vj.reduce_sum(got)
    want = np.stack([loop_fn(k).numpy() for k in range(4)])
    np.testing.assert_array_equal(got.numpy(), want)
    for k in range(4):
        np.testing.assert_array_equal(want[k][k], (k + 1) * np.array([3.0, 4.0]))
    # each iteration keeps rows 1 and 2 of ups, scaled by i + 1: sum over i of (i + 1) = 10
    np.testing.assert_array_equal(tape.gradient(loss, ups).numpy(),
                                  [[0.0, 0.0], [10.0, 10.0], [10.0, 10.0]])
