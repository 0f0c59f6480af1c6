"""Creation ops and shape queries: zeros, ones, fill, *_like, eye, linspace, range, shape,
size, rank. Oracles: NumPy's constructors, closed forms, finite differences. Gradients,
float32 and pfor of Fill, ZerosLike and OnesLike: tests/test_registry.py (samples);
linspace is a composition of other ops and is checked here in full.
"""
import numpy as np
import pytest

import vecjac as vj
from tests.ops.array.test_shaping import check_float32, check_pfor_combos, rand
from vecjac.testing import check_grads, check_pfor


# -- zeros, ones, fill, *_like -----------------------------------------------------------
@pytest.mark.parametrize("shape,expected", [
    ((2, 3), (2, 3)), ([4], (4,)), (3, (3,)), ((), ()), ([0, 2], (0, 2)),
    (vj.constant([2, 1]), (2, 1)), ((vj.constant(2), np.int32(3)), (2, 3)),
    (np.array([1, 2], np.int64), (1, 2))])
def test_zeros_ones_shapes(shape, expected):
    for fn, value in ((vj.zeros, 0.0), (vj.ones, 1.0)):
        out = fn(shape)
        assert out.shape == expected and out.dtype == np.float64
        np.testing.assert_array_equal(out.numpy(), np.full(expected, value))
    assert vj.zeros((2,), dtype=vj.int32).dtype == np.int32
    assert vj.ones((2,), dtype="float32").dtype == np.float32


def test_zeros_ones_shape_from_vj_shape_inside_pfor():
    x = vj.constant(rand(3, 2, 4))
    out = vj.vectorize.pfor(lambda i: vj.gather(x, i) + vj.ones(vj.shape(vj.gather(x, i))), 3)
    np.testing.assert_allclose(out.numpy(), x.numpy() + 1)


def test_fill_values_and_dtypes():
    out = vj.fill([2, 3], 1.5)
    np.testing.assert_array_equal(out.numpy(), np.full((2, 3), 1.5))
    assert vj.fill((2,), np.int32(4)).dtype == np.int32
    assert vj.fill((2,), np.float32(4)).dtype == np.float32


@pytest.mark.parametrize("fn,value", [(vj.zeros_like, 0), (vj.ones_like, 1)])
def test_like_ops(fn, value):
    x = rand(2, 3).astype(np.float32)
    out = fn(x)
    assert out.dtype == np.float32 and out.shape == (2, 3)
    np.testing.assert_array_equal(out.numpy(), np.full((2, 3), value))
    assert fn(x, dtype=vj.int64).dtype == np.int64
    assert fn(vj.constant([1, 2])).dtype == np.int64
    x = vj.constant(rand(3))  # not differentiable: no gradient flows through fn(x)
    with vj.GradientTape() as tape:
        tape.watch(x)
        y = vj.reduce_sum(fn(x) * x)
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), np.full(3, value, float))


@pytest.mark.parametrize("call,error,match", [
    (lambda: vj.zeros((2, -1)), ValueError, "zeros: shape has a negative dimension"),
    (lambda: vj.ones([1.5]), TypeError, "ones: shape must be a list of ints"),
    (lambda: vj.ones([None]), TypeError, "ones: shape must be a list of ints"),
    (lambda: vj.zeros((2,), dtype="nope"), TypeError, "zeros: dtype"),
    (lambda: vj.fill([2], [1.0, 2.0]), ValueError, "fill: value must be a scalar"),
    (lambda: vj.fill([-2], 1.0), ValueError, "fill: dims has a negative dimension"),
    (lambda: vj.zeros_like(rand(2), dtype="nope"), TypeError, "zeros_like: dtype"),
])
def test_fill_family_bad_inputs(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_loop_variant_shapes_are_rejected():
    with pytest.raises(ValueError, match="zeros: shape cannot vary over a pfor loop"):
        vj.vectorize.pfor(lambda i: vj.zeros([i]), 2)
    with pytest.raises(ValueError, match="ones: shape cannot vary over a pfor loop"):
        vj.vectorize.pfor(lambda i: vj.ones(vj.stack([i])), 2)
    # one loop-variant entry in a list of ints (TF: "expected to be loop invariant")
    x = vj.constant(np.ones((2, 3)))
    with pytest.raises(ValueError, match="tile: multiples cannot vary over a pfor loop"):
        vj.vectorize.pfor(lambda i: vj.tile(x, [i, 1]), 2, fallback_to_while_loop=False)
    with pytest.raises(ValueError, match="broadcast_to: shape cannot vary over a pfor loop"):
        vj.vectorize.pfor(lambda i: vj.broadcast_to(x, [i + 1, 2, 3]), 2)


# -- eye ---------------------------------------------------------------------------------
@pytest.mark.parametrize("rows,cols,batch,dtype", [
    (3, None, None, None), (2, 4, None, vj.float32), (3, 2, [2], None),
    (2, None, (2, 1), vj.int32), (0, 2, None, None), (vj.constant(2), vj.constant(3), None, None)])
def test_eye(rows, cols, batch, dtype):
    out = vj.eye(rows, cols, batch_shape=batch, dtype=dtype)
    m = np.eye(int(rows), None if cols is None else int(cols), dtype=dtype or np.float64)
    expected = np.broadcast_to(m, tuple(batch or ()) + m.shape)
    assert out.dtype == expected.dtype and out.shape == expected.shape
    np.testing.assert_array_equal(out.numpy(), expected)


@pytest.mark.parametrize("call,error,match", [
    (lambda: vj.eye(-1), ValueError, "eye: num_rows must be >= 0"),
    (lambda: vj.eye(2.5), TypeError, "eye: num_rows must be an int"),
    (lambda: vj.eye(2, -3), ValueError, "eye: num_columns must be >= 0"),
    (lambda: vj.eye(2, batch_shape=[-1]), ValueError, "eye: batch_shape has a negative"),
    (lambda: vj.eye(2, dtype="nope"), TypeError, "eye: dtype"),
])
def test_eye_bad_inputs(call, error, match):
    with pytest.raises(error, match=match):
        call()


# -- linspace ----------------------------------------------------------------------------
@pytest.mark.parametrize("start,stop,num,axis", [
    (-10.0, 10.0, 200 + 1, 0), (0, 1, 5, 0), (2.0, 2.0, 1, 0), (1.0, 3.0, 0, 0),
    (np.array([0.0, 1.0]), 5.0, 4, 0), (np.array([0.0, 1.0]), np.array([[2.0], [3.0]]), 3, -1),
    (np.array([0.0, 1.0]), np.array([4.0, -1.0]), 3, 1)])
def test_linspace_forward(start, stop, num, axis):
    out = vj.linspace(start, stop, num, axis=axis)
    expected = np.linspace(start, stop, num, axis=axis)
    assert out.dtype == np.float64 and out.shape == expected.shape
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-14, atol=1e-14)
    if num:  # both end points are exact
        np.testing.assert_array_equal(np.take(out.numpy(), 0, axis=axis),
                                      np.broadcast_to(start, np.take(expected, 0, axis).shape))


def test_linspace_gradients_float32_and_pfor():
    def f(a, b):
        return vj.linspace(a, b, 5, axis=-1)
    args = [rand(2), rand(2)]
    check_grads(lambda a, b: vj.sin(f(a, b)), args, order=2)
    check_float32(f, args)
    assert vj.linspace(np.float32(0), np.float32(1), 3).dtype == np.float32
    check_pfor_combos(f, args)
    check_pfor_combos(lambda a: vj.linspace(a, 1.0, 4), [rand()])


@pytest.mark.parametrize("call,error,match", [
    (lambda: vj.linspace(0.0, 1.0, -1), ValueError, "linspace: num must be >= 0"),
    (lambda: vj.linspace(0.0, 1.0, 2.5), TypeError, "linspace: num must be an int"),
    (lambda: vj.linspace(np.zeros(2), np.zeros(3), 2), ValueError,
     "linspace: shapes are not broadcastable: start shape"),
    (lambda: vj.linspace(0.0, 1.0, 3, axis=2), ValueError, "linspace: axis=2"),
    (lambda: vj.linspace(np.complex128(1), 1.0, 3), TypeError, "linspace: start must be a real"),
])
def test_linspace_bad_inputs(call, error, match):
    with pytest.raises(error, match=match):
        call()


# -- range -------------------------------------------------------------------------------
@pytest.mark.parametrize("args,kwargs,expected", [
    ((5,), {}, np.arange(5, dtype=np.int32)),
    ((2, 9, 3), {}, np.arange(2, 9, 3, dtype=np.int32)),
    ((10, 0, -3), {}, np.arange(10, 0, -3, dtype=np.int32)),
    ((3, 1), {}, np.zeros(0, np.int32)),
    ((1, 2, 0.25), {}, np.arange(1, 2, 0.25)),
    ((0.5,), {}, np.arange(0.5)),
    ((5,), {"dtype": vj.float32}, np.arange(5, dtype=np.float32)),
    ((vj.constant(4),), {}, np.arange(4, dtype=np.int64)),
    ((np.float32(0), 1, np.float32(0.5)), {}, np.arange(0, 1, 0.5, dtype=np.float32)),
    ((vj.constant(np.int32(1)), 2**31 + 2, 2**31), {}, np.array([1, 2**31 + 1])),
    ((1, 2**31 + 2, 2**31), {}, np.array([1, 2**31 + 1])),  # too large for int32
])
def test_range(args, kwargs, expected):
    out = vj.range(*args, **kwargs)
    assert out.dtype == expected.dtype
    np.testing.assert_array_equal(out.numpy(), expected)


@pytest.mark.parametrize("call,error,match", [
    (lambda: vj.range(0, 5, 0), ValueError, "range: delta must be non-zero"),
    (lambda: vj.range([1, 2]), TypeError, "range: limit must be a real scalar"),
    (lambda: vj.range(0, "a"), TypeError, "range: limit must be a real scalar"),
    (lambda: vj.range(True), TypeError, "range: limit must be a real scalar"),
    (lambda: vj.range(3, dtype="nope"), TypeError, "range: dtype"),
    (lambda: vj.range(2**31 - 1, 2**31 + 1, dtype=vj.int32), ValueError, "range: values"),
])
def test_range_bad_inputs(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_range_inside_pfor():
    check_pfor(lambda i: vj.cast(i, vj.int32) * vj.range(4), 3)  # invariant range is hoisted
    with pytest.raises(ValueError, match="range: limit cannot vary over a pfor loop"):
        vj.vectorize.pfor(lambda i: vj.range(i), 3)


# -- shape, size, rank -------------------------------------------------------------------
@pytest.mark.parametrize("x", [rand(), rand(3), rand(2, 0, 4), np.ones((2, 3), bool)])
def test_shape_size_rank(x):
    s, n, r = vj.shape(x), vj.size(x), vj.rank(x)
    assert s.dtype == n.dtype == r.dtype == np.int32
    np.testing.assert_array_equal(s.numpy(), np.array(x.shape, np.int32))
    assert s.shape == (x.ndim,) and int(n) == x.size and int(r) == x.ndim
    assert vj.shape(x, out_type=vj.int64).dtype == np.int64
    assert vj.size(x, out_type="int64").dtype == np.int64


def test_shape_queries_are_per_iteration_inside_pfor():
    x = vj.constant(rand(4, 2, 3))

    def loop_fn(i):
        xi = vj.gather(x, i)
        return vj.shape(xi), vj.size(xi), vj.rank(xi)
    check_pfor(loop_fn, 4)
    s, n, r = vj.vectorize.pfor(loop_fn, 4)
    np.testing.assert_array_equal(s.numpy(), [[2, 3]] * 4)
    np.testing.assert_array_equal(n.numpy(), [6] * 4)


def test_shape_bad_out_type():
    with pytest.raises(TypeError, match="shape: out_type must be int32 or int64"):
        vj.shape(rand(2), out_type=vj.float32)
    with pytest.raises(TypeError, match="size: out_type must be int32 or int64"):
        vj.size(rand(2), out_type=vj.int8)
