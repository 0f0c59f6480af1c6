"""Shape and layout ops: reshape ... split, tile, pad, reverse, slice, strided_slice.

Every public function: forward against NumPy (every argument form), dtype rules and bad
inputs. Gradients, float32, pfor and Jacobians of the ops they run: tests/test_registry.py,
through the samples of the op blocks. The helpers here are shared by test_indexing.py and
test_creation.py (for functions that are compositions of several ops).
"""
import itertools

import numpy as np
import pytest

import vecjac as vj
from vecjac.testing import check_pfor

ITERS = 3
RNG = np.random.default_rng(0)


def rand(*shape, dtype=np.float64):
    return RNG.standard_normal(shape).astype(dtype)


# -- shared helpers ----------------------------------------------------------------------
def check_pfor_combos(f, args, stacked=None, grad=True, iters=ITERS):
    """check_pfor of f(*args) for every non-empty set of stacked args.

    A stacked arg k is vj.gather(S_k, i) with S_k = stacked[k] (default: random normals of
    shape (iters,) + args[k].shape). With grad, the loop also returns the per-iteration
    gradients of sum(w * f) w.r.t. every float arg, computed by a tape inside the loop.
    """
    args = [np.asarray(a) for a in args]
    stacked = list(stacked) if stacked is not None else [None] * len(args)
    for k, a in enumerate(args):
        if stacked[k] is None:
            stacked[k] = (RNG.standard_normal((iters,) + a.shape).astype(a.dtype)
                          if a.dtype.kind == "f" else np.stack([a] * iters))
    out_shape = np.shape(f(*[vj.constant(a) for a in args]))
    w = vj.constant(RNG.standard_normal(out_shape))
    for mask in itertools.product([False, True], repeat=len(args)):
        if not any(mask):
            continue

        def loop_fn(i, mask=mask):
            xs = [vj.gather(vj.constant(s), i) if m else vj.constant(a)
                  for a, s, m in zip(args, stacked, mask)]
            floats = [x for x in xs if x.dtype.kind == "f"]
            with vj.GradientTape() as tape:
                for x in floats:
                    tape.watch(x)
                y = f(*xs)
                loss = vj.reduce_sum(vj.cast(y, w.dtype) * w)
            if not (grad and floats):
                return y
            grads = tape.gradient(loss, floats)
            return [y] + [vj.zeros_like(x) if g is None else g for x, g in zip(floats, grads)]
        check_pfor(loop_fn, iters)


def check_float32(f, args):
    """float32 inputs give float32 values and gradients."""
    xs = [vj.constant(np.asarray(a).astype(np.float32)) if np.asarray(a).dtype.kind == "f"
          else vj.constant(a) for a in args]
    floats = [x for x in xs if x.dtype.kind == "f"]
    with vj.GradientTape() as tape:
        for x in floats:
            tape.watch(x)
        y = f(*xs)
        loss = vj.reduce_sum(y * y)
    assert y.dtype == np.float32
    for g in tape.gradient(loss, floats):
        assert g is None or g.dtype == np.float32


# -- the op table: (id, vecjac function, NumPy oracle, args) ------------------------------
CASES = [
    ("reshape", lambda x: vj.reshape(x, (3, 2)), lambda x: x.reshape(3, 2), [rand(2, 3)]),
    ("reshape-1", lambda x: vj.reshape(x, [-1, 2]), lambda x: x.reshape(-1, 2), [rand(6)]),
    ("reshape_scalar", lambda x: vj.reshape(x, (1, 1)), lambda x: x.reshape(1, 1), [rand()]),
    ("transpose", lambda x: vj.transpose(x), lambda x: x.T, [rand(2, 3, 4)]),
    ("transpose_perm", lambda x: vj.transpose(x, [1, -1, 0]),
     lambda x: x.transpose(1, 2, 0), [rand(2, 3, 4)]),
    ("expand_dims", lambda x: vj.expand_dims(x, -1), lambda x: x[..., None], [rand(2, 3)]),
    ("expand_dims_scalar", lambda x: vj.expand_dims(x, 0), lambda x: x[None], [rand()]),
    ("squeeze", lambda x: vj.squeeze(x), lambda x: x.squeeze(), [rand(1, 3, 1)]),
    ("squeeze_axis", lambda x: vj.squeeze(x, [-1]), lambda x: x.squeeze(-1), [rand(1, 3, 1)]),
    ("broadcast_to", lambda x: vj.broadcast_to(x, (2, 4, 3)),
     lambda x: np.broadcast_to(x, (2, 4, 3)), [rand(4, 1)]),
    ("broadcast_scalar", lambda x: vj.broadcast_to(x, [2, 2]),
     lambda x: np.broadcast_to(x, (2, 2)), [rand()]),
    ("concat0", lambda a, b: vj.concat([a, b], 0), lambda a, b: np.concatenate([a, b], 0),
     [rand(2, 3), rand(1, 3)]),
    ("concat-1", lambda a, b: vj.concat([a, b, a], axis=-1),
     lambda a, b: np.concatenate([a, b, a], -1), [rand(2, 3), rand(2, 1)]),
    ("stack", lambda a, b: vj.stack([a, b]), lambda a, b: np.stack([a, b]),
     [rand(2, 3), rand(2, 3)]),
    ("stack-1", lambda a, b: vj.stack([a, b, a], axis=-1), lambda a, b: np.stack([a, b, a], -1),
     [rand(2), rand(2)]),
    ("stack_scalars", lambda a, b: vj.stack([a, b]), lambda a, b: np.stack([a, b]),
     [rand(), rand()]),
    ("unstack", lambda x: vj.unstack(x, axis=1)[1] * 2 + vj.unstack(x, axis=1)[0],
     lambda x: x[:, 1] * 2 + x[:, 0], [rand(2, 3)]),
    ("split_equal", lambda x: vj.split(x, 2, axis=1)[1], lambda x: x[:, 2:], [rand(2, 4)]),
    ("split_sizes", lambda x: vj.split(x, [1, 3, 0])[1], lambda x: x[1:], [rand(4, 2)]),
    ("split_empty_piece", lambda x: vj.split(x, [1, 3, 0])[2], lambda x: x[4:], [rand(4, 2)]),
    ("identity", lambda x: vj.identity(x) * x, lambda x: x * x, [rand(3)]),
    ("tile", lambda x: vj.tile(x, [2, 3]), lambda x: np.tile(x, (2, 3)), [rand(2, 3)]),
    ("tile_1d", lambda x: vj.tile(x, vj.constant([3])), lambda x: np.tile(x, 3), [rand(2)]),
    ("tile_ones", lambda x: vj.tile(x, [1, 1]) * x, lambda x: x * x, [rand(2, 2)]),
    ("pad_constant", lambda x: vj.pad(x, [[1, 2], [0, 1]]),
     lambda x: np.pad(x, [[1, 2], [0, 1]]), [rand(2, 3)]),
    ("pad_constant_values", lambda x, c: vj.pad(x, [[1, 0], [2, 1]], constant_values=c),
     lambda x, c: np.pad(x, [[1, 0], [2, 1]], constant_values=c), [rand(2, 3), rand()]),
    ("pad_reflect", lambda x: vj.pad(x, [[1, 2], [2, 1]], "REFLECT"),
     lambda x: np.pad(x, [[1, 2], [2, 1]], "reflect"), [rand(3, 4)]),
    ("pad_symmetric", lambda x: vj.pad(x, [[2, 3], [0, 1]], mode="symmetric"),
     lambda x: np.pad(x, [[2, 3], [0, 1]], "symmetric"), [rand(3, 2)]),
    ("pad_tensor_paddings", lambda x: vj.pad(x, vj.constant([[2, 3]]), "symmetric"),
     lambda x: np.pad(x, [[2, 3]], "symmetric"), [rand(4)]),
    ("pad_reflect_3d", lambda x: vj.pad(x, [[0, 0], [1, 1], [1, 0]], "reflect"),
     lambda x: np.pad(x, [[0, 0], [1, 1], [1, 0]], "reflect"), [rand(2, 2, 3)]),
    ("pad_zero", lambda x: vj.pad(x, [[0, 0]], "SYMMETRIC") * x, lambda x: x * x, [rand(3)]),
    ("reverse", lambda x: vj.reverse(x, [0]), lambda x: x[::-1], [rand(3, 2)]),
    ("reverse_axes", lambda x: vj.reverse(x, [-1, 0]), lambda x: x[::-1, ::-1], [rand(3, 2)]),
    ("slice", lambda x: vj.slice(x, [1, 0], [2, -1]), lambda x: x[1:3, :], [rand(4, 3)]),
    ("slice_tensor_args", lambda x: vj.slice(x, vj.constant([0, 1, 1]), [-1, 1, 2]),
     lambda x: x[:, 1:2, 1:3], [rand(2, 3, 4)]),
    ("strided_slice", lambda x: vj.strided_slice(x, [1, 0], [4, 3], [2, -1], end_mask=2),
     lambda x: x[1:4:2, 0::-1], [rand(5, 3)]),
    ("strided_slice_masks", lambda x: vj.strided_slice(x, [0, 0, 1], [0, 0, 0], [1, 1, 1],
                                                       ellipsis_mask=1, new_axis_mask=2,
                                                       shrink_axis_mask=4),
     lambda x: x[..., None, 1], [rand(2, 3)]),
]
IDS = [c[0] for c in CASES]


@pytest.mark.parametrize("name,f,oracle,args", CASES, ids=IDS)
def test_forward_matches_numpy(name, f, oracle, args):
    out = f(*[vj.constant(a) for a in args])
    expected = oracle(*args)
    assert out.shape == expected.shape
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-14, atol=0)


def test_pad_keeps_integer_dtype_and_weak_constant():
    out = vj.pad(np.arange(3, dtype=np.int32), [[1, 1]], constant_values=7)
    assert out.dtype == np.int32
    np.testing.assert_array_equal(out.numpy(), [7, 0, 1, 2, 7])


def test_stop_gradient_blocks():
    x = vj.constant(rand(3))
    with vj.GradientTape() as tape:
        tape.watch(x)
        y = vj.reduce_sum(vj.stop_gradient(x) * x)
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), x.numpy())


BAD = [
    (lambda: vj.reshape(rand(2, 3), (4, 2)), ValueError, "reshape: cannot reshape"),
    (lambda: vj.reshape(rand(2, 3), (-1, 4)), ValueError, "reshape: cannot reshape"),
    (lambda: vj.reshape(rand(2, 3), (-1, -1)), ValueError, "reshape: shape"),
    (lambda: vj.transpose(rand(2, 3), [0, 0]), ValueError, "transpose: perm"),
    (lambda: vj.transpose(rand(2, 3), [0, 2]), ValueError, "transpose: perm=2"),
    (lambda: vj.expand_dims(rand(2), 3), ValueError, "expand_dims: axis=3"),
    (lambda: vj.squeeze(rand(2, 1), 0), ValueError, "squeeze: cannot squeeze axis 0"),
    (lambda: vj.broadcast_to(rand(3), (2, 2)), ValueError, "broadcast_to: cannot broadcast"),
    (lambda: vj.concat([], 0), ValueError, "concat: values"),
    (lambda: vj.concat([rand(2), rand(3, 1)], 0), ValueError, r"concat: values\[1\]"),
    (lambda: vj.concat([rand(), rand()], 0), ValueError, "concat: cannot concatenate scalars"),
    (lambda: vj.stack([rand(2), rand(3)]), ValueError, r"stack: values\[1\] has shape"),
    (lambda: vj.unstack(rand(2, 3), num=3), ValueError, "unstack: num=3"),
    (lambda: vj.unstack(rand()), ValueError, "unstack: cannot unstack a scalar"),
    (lambda: vj.split(rand(5), 2), ValueError, "split: cannot split axis 0 of size 5"),
    (lambda: vj.split(rand(5), [2, 2]), ValueError, "split: sizes"),
    (lambda: vj.tile(rand(2, 3), [2]), ValueError, "tile: multiples must have one entry"),
    (lambda: vj.tile(rand(2), [-1]), ValueError, "tile: multiples has a negative"),
    (lambda: vj.tile(rand(2), [1.5]), TypeError, "tile: multiples must be a list of ints"),
    (lambda: vj.pad(rand(2, 3), [[1, 1]]), ValueError,
     r"pad: paddings must be ints of shape \(rank, 2\) = \(2, 2\)"),
    (lambda: vj.pad(rand(2), [[-1, 1]]), ValueError, "pad: paddings must be non-negative"),
    (lambda: vj.pad(rand(2), [[1, 1]], "WRAP"), ValueError, "pad: mode must be"),
    (lambda: vj.pad(rand(3), [[3, 0]], "REFLECT"), ValueError, "pad: REFLECT paddings"),
    (lambda: vj.pad(rand(3), [[0, 4]], "SYMMETRIC"), ValueError, "pad: SYMMETRIC paddings"),
    (lambda: vj.pad(rand(3), [[1, 1]], constant_values=[1.0, 2.0]), ValueError,
     "pad: constant_values must be a scalar"),
    (lambda: vj.pad(rand(3), [[1, 1]], constant_values=np.float32(1)), TypeError,
     "pad: constant_values dtype"),
    (lambda: vj.reverse(rand(2, 3), [2]), ValueError, "reverse: axis=2"),
    (lambda: vj.reverse(rand(2, 3), [0, -2]), ValueError, "reverse: axis has repeated"),
    (lambda: vj.reverse(rand(2, 3), None), TypeError, "reverse: axis must be"),
    (lambda: vj.slice(rand(4), [1, 0], [1, 1]), ValueError, "slice: begin and size"),
    (lambda: vj.slice(rand(4), [5], [-1]), ValueError, r"slice: begin\[0\]=5"),
    (lambda: vj.slice(rand(4), [2], [3]), ValueError, r"slice: size\[0\]=3"),
    (lambda: vj.slice(rand(4), [0.5], [3]), TypeError, "slice: begin must be a list of ints"),
    (lambda: vj.strided_slice(rand(4), [0], [2, 3]), ValueError, "strided_slice: begin, end"),
    (lambda: vj.strided_slice(rand(4), [0], [2], [0]), ValueError, r"strided_slice: strides\[0\]"),
]


@pytest.mark.parametrize("call,error,match", BAD)
def test_bad_inputs(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_loop_variant_shape_arguments_are_rejected():
    x = vj.constant(rand(3, 4))

    def loop_fn(i):
        return vj.slice(x, vj.stack([i, i]), [1, 1])
    with pytest.raises(ValueError, match="slice: begin cannot vary over a pfor loop"):
        vj.vectorize.pfor(loop_fn, 3)
    with pytest.raises(ValueError, match="pad: paddings cannot vary"):
        vj.vectorize.pfor(lambda i: vj.pad(x, vj.reshape(vj.stack([i, i, i, i]), (2, 2))), 3)


# -- roll by a loop-variant shift ----------------------------------------------------------
def test_roll_by_a_loop_variant_shift_vectorizes_and_differentiates():
    # pfor has no int for a shift computed from the loop index: the roll becomes a gather
    # at (arange(n) - shift) mod n, vectorized; values are np.roll's for each iteration
    x = rand(5, 4, 6)
    cases = ((lambda i: i, lambda k: k, 0),
             (lambda i: [i - 7, -1, i], lambda k: [k - 7, -1, k], [1, 2, 2]),
             (lambda i: vj.stack([i, 2 * i]), lambda k: [k, 2 * k], [0, -1]))
    for shift, np_shift, axis in cases:
        got = vj.vectorize.pfor(lambda i: vj.roll(vj.constant(x), shift(i), axis), 5,
                                fallback_to_while_loop=False).numpy()
        for k in range(5):
            np.testing.assert_array_equal(got[k], np.roll(x, np_shift(k), axis))
    # the gradient of a loop-variant roll is the opposite roll of the cotangent
    xt = vj.constant(x)
    with vj.GradientTape() as tape:
        tape.watch(xt)
        w = vj.constant(rand(5, 5, 4, 6))
        y = vj.vectorize.pfor(lambda i: vj.roll(xt, [i, 1], [0, 2]), 5)
        loss = vj.reduce_sum(y * w)
    want = sum(np.roll(w.numpy()[k], [-k, -1], [0, 2]) for k in range(5))
    np.testing.assert_allclose(tape.gradient(loss, xt).numpy(), want, rtol=1e-13)
    with pytest.raises(TypeError, match="roll: shift"):
        vj.vectorize.pfor(lambda i: vj.roll(vj.constant(x), vj.cast(i, vj.float64), 0), 2)
    with pytest.raises(ValueError, match="same length"):
        vj.vectorize.pfor(lambda i: vj.roll(vj.constant(x), [i, i], 0), 2)
