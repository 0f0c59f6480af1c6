"""vj.nn convolutions and pooling against direct NumPy loops (an independent oracle: one
dot product, max or mean per output element), their derivatives in both modes, pfor
against the loop, and the argument checks. tests/conformance/test_against_tf.py compares them with
TensorFlow where it is installed."""
import itertools

import numpy as np
import pytest

import vecjac as vj
from vecjac.testing import check_grads

RNG = np.random.default_rng(11)


def same_pads(sizes, windows, strides):
    pads = []
    for n, w, s in zip(sizes, windows, strides):
        total = max((-(-n // s) - 1) * s + w - n, 0)
        pads.append((total // 2, total - total // 2))
    return pads


def reference_conv(x, w, strides, dilations, padding):
    """Channels-last convolution, one output element at a time."""
    nsp = w.ndim - 2
    kernel, sizes = w.shape[:nsp], x.shape[1:-1]
    windows = [(k - 1) * d + 1 for k, d in zip(kernel, dilations)]
    pads = same_pads(sizes, windows, strides) if padding == "SAME" else [(0, 0)] * nsp
    xp = np.pad(x, [(0, 0)] + pads + [(0, 0)])
    outs = [(n + b + a - win) // s + 1 for n, (b, a), win, s in zip(sizes, pads, windows, strides)]
    out = np.zeros((x.shape[0], *outs, w.shape[-1]))
    for b in range(x.shape[0]):
        for pos in itertools.product(*[range(m) for m in outs]):
            for off in itertools.product(*[range(k) for k in kernel]):
                at = tuple(p * s + o * d for p, s, o, d in zip(pos, strides, off, dilations))
                out[(b, *pos)] += xp[(b, *at)] @ w[off]
    return out


def reference_pool(x, k, s, padding, kind):
    nsp = x.ndim - 2
    kernel, strides, sizes = (k,) * nsp, (s,) * nsp, x.shape[1:-1]
    pads = same_pads(sizes, kernel, strides) if padding == "SAME" else [(0, 0)] * nsp
    outs = [(n + b + a - w) // st + 1 for n, (b, a), w, st in zip(sizes, pads, kernel, strides)]
    out = np.zeros((x.shape[0], *outs, x.shape[-1]))
    for pos in itertools.product(*[range(m) for m in outs]):
        window = tuple(slice(max(p * st - b, 0), min(p * st - b + w, n))
                       for p, st, (b, _), w, n in zip(pos, strides, pads, kernel, sizes))
        block = x[(slice(None), *window, slice(None))].reshape(x.shape[0], -1, x.shape[-1])
        out[(slice(None), *pos, slice(None))] = block.max(1) if kind == "max" else block.mean(1)
    return out


@pytest.mark.parametrize("nsp, k, s, d, padding", [
    (1, 3, 1, 1, "VALID"), (1, 2, 2, 1, "SAME"), (1, 3, 1, 2, "SAME"),
    (2, 3, 1, 1, "SAME"), (2, 2, 2, 1, "VALID"), (2, 3, 2, 1, "SAME"), (2, 2, 1, 2, "VALID"),
    (2, 1, 3, 1, "SAME"), (3, 2, 1, 1, "SAME"), (3, 2, 2, 1, "VALID")])
def test_convolutions_match_the_direct_sum(nsp, k, s, d, padding):
    x = RNG.standard_normal((2,) + (6, 7, 5)[:nsp] + (3,))
    w = RNG.standard_normal((k,) * nsp + (3, 4))
    want = reference_conv(x, w, (s,) * nsp, (d,) * nsp, padding)
    fn = {1: vj.nn.conv1d, 2: vj.nn.conv2d, 3: vj.nn.conv3d}[nsp]
    got = fn(x, w, s, padding, dilations=d)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(vj.nn.convolution(x, w, s, padding, dilations=d).numpy(), want,
                               rtol=1e-12, atol=1e-12)


def test_conv2d_layouts_full_form_arguments_explicit_padding_and_batch_axes():
    x = RNG.standard_normal((2, 7, 8, 3))
    w = RNG.standard_normal((3, 2, 3, 4))
    want = reference_conv(x, w, (2, 1), (1, 1), "SAME")
    got = vj.nn.conv2d(np.transpose(x, (0, 3, 1, 2)), w, [1, 1, 2, 1], "SAME",
                       data_format="NCHW")
    np.testing.assert_allclose(np.transpose(got.numpy(), (0, 2, 3, 1)), want, rtol=1e-12)
    got = vj.nn.conv2d(x, w, [1, 2, 1, 1], "SAME", dilations=[1, 1, 1, 1])
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12)
    explicit = vj.nn.conv2d(x, w, 1, [[0, 0], [1, 0], [2, 1], [0, 0]])
    padded = np.pad(x, [(0, 0), (1, 0), (2, 1), (0, 0)])
    np.testing.assert_allclose(explicit.numpy(), reference_conv(padded, w, (1, 1), (1, 1), "VALID"),
                               rtol=1e-12)
    many = RNG.standard_normal((2, 3, 7, 8, 3))  # two batch axes
    got = vj.nn.conv2d(many, w, 1, "VALID")
    want = reference_conv(many.reshape(6, 7, 8, 3), w, (1, 1), (1, 1), "VALID")
    np.testing.assert_allclose(got.numpy(), want.reshape((2, 3) + want.shape[1:]), rtol=1e-12)


@pytest.mark.parametrize("nsp", [1, 2, 3])
@pytest.mark.parametrize("kind", ["max", "avg"])
@pytest.mark.parametrize("k, s, padding", [(2, 2, "VALID"), (3, 2, "SAME"), (3, 1, "SAME"),
                                           (2, 3, "SAME")])
def test_pooling_matches_the_direct_max_and_mean(nsp, kind, k, s, padding):
    x = RNG.standard_normal((2,) + (7, 6, 5)[:nsp] + (3,)).astype(np.float32)
    fn = getattr(vj.nn, f"{kind}_pool{nsp}d")
    got = fn(x, k, s, padding)
    assert got.dtype == np.float32
    want = reference_pool(x.astype(np.float64), k, s, padding, kind)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-6, atol=1e-6)
    generic = getattr(vj.nn, f"{kind}_pool")(x, [k] * nsp, [s] * nsp, padding)
    np.testing.assert_array_equal(generic.numpy(), got.numpy())


def test_derivatives_in_both_modes_to_second_order():
    x = RNG.standard_normal((1, 4, 5, 2))
    w = RNG.standard_normal((2, 2, 2, 3))
    check_grads(lambda a, b: vj.nn.conv2d(a, b, 2, "SAME") ** 2, [x, w], order=2,
                modes=("fwd", "rev"))
    check_grads(lambda a: vj.nn.avg_pool2d(a, 2, 1, "SAME") ** 2, [x], order=2,
                modes=("fwd", "rev"))
    # distinct values: no ties, so the max is differentiable everywhere near x
    distinct = RNG.permutation(40).reshape(1, 4, 5, 2) / 7.0
    check_grads(lambda a: vj.nn.max_pool2d(a, 3, 2, "SAME") ** 2, [distinct], order=2,
                modes=("fwd", "rev"))


def test_a_tie_in_max_pooling_sends_the_gradient_to_the_first_offset_as_tf():
    x = vj.constant(np.array([[[1.0], [3.0], [3.0], [2.0]]]))  # (1, 4, 1)
    with vj.GradientTape() as tape:
        tape.watch(x)
        y = vj.reduce_sum(vj.nn.max_pool1d(x, 3, 1, "VALID"))  # windows [1,3,3], [3,3,2]
    np.testing.assert_array_equal(tape.gradient(y, x).numpy()[0, :, 0], [0, 2, 0, 0])


def test_jacobians_by_pfor_equal_the_loop():
    x = vj.constant(RNG.standard_normal((2, 5, 4, 2)))
    w = vj.constant(RNG.standard_normal((3, 3, 2, 2)))
    with vj.GradientTape(persistent=True) as tape:
        tape.watch([x, w])
        y = vj.nn.max_pool2d(vj.tanh(vj.nn.conv2d(x, w, 1, "SAME")), 2, 2, "SAME")
    for source in (x, w):
        fast = tape.jacobian(y, source)
        loop = tape.jacobian(y, source, experimental_use_pfor=False)
        np.testing.assert_allclose(fast.numpy(), loop.numpy(), rtol=1e-12, atol=1e-14)
    per_example = vj.vectorized_map(lambda xi: vj.nn.conv2d(xi[None], w, 2, "VALID")[0], x)
    np.testing.assert_allclose(per_example.numpy(), vj.nn.conv2d(x, w, 2, "VALID").numpy(),
                               rtol=1e-12)


@pytest.mark.parametrize("call, error, match", [
    (lambda x, w: vj.nn.conv2d(x, w[:, :, :1], 1, "SAME"), ValueError, "1 input channels"),
    (lambda x, w: vj.nn.conv2d(x, w, 0, "SAME"), ValueError, "strides must be positive"),
    (lambda x, w: vj.nn.conv2d(x, w, [1, 2, 2, 2], "SAME"), ValueError, "batch and channel"),
    (lambda x, w: vj.nn.conv2d(x, w, [1, 1, 1], "SAME"), ValueError, "1, 2 or 4 ints"),
    (lambda x, w: vj.nn.conv2d(x, w, 1.5, "SAME"), TypeError, "strides must be an int"),
    (lambda x, w: vj.nn.conv2d(x, w, 1, "FULL"), ValueError, "padding must be 'VALID'"),
    (lambda x, w: vj.nn.conv2d(x, w, 1, [[1, 1]] * 4), ValueError, "0 along the batch"),
    (lambda x, w: vj.nn.conv2d(x, w, 1, "SAME", data_format="NWC"), ValueError,
     "data_format must be 'NHWC' or 'NCHW'"),
    (lambda x, w: vj.nn.conv2d(x[0], w, 1, "SAME"), ValueError, "rank >= 4"),
    (lambda x, w: vj.nn.conv2d(x, w[0], 1, "SAME"), ValueError, "filters must have rank 4"),
    (lambda x, w: vj.nn.conv2d(x, np.ones((9, 1, 2, 1)), 1, "VALID"), ValueError,
     "output size would be negative"),
    (lambda x, w: vj.nn.conv2d(x, w.astype(np.float32), 1, "SAME"), TypeError, "one dtype"),
    (lambda x, w: vj.nn.conv2d(x.astype(np.int64), w, 1, "SAME"), TypeError,
     "input must be floating"),
    (lambda x, w: vj.nn.max_pool2d(x, 2, 1, [[0, 0]] * 4), ValueError, "'VALID' or 'SAME'"),
    (lambda x, w: vj.nn.max_pool(x[0, 0], 2, 1, "SAME"), ValueError, "rank 3, 4 or 5"),
    (lambda x, w: vj.nn.avg_pool2d(x, [2, 2, 2], 1, "SAME"), ValueError, "ksize"),
])
def test_bad_arguments_are_named_before_any_work(call, error, match):
    x, w = np.ones((1, 4, 4, 2)), np.ones((2, 2, 2, 3))
    with pytest.raises(error, match=match):
        call(x, w)


def test_gradient_of_a_batch_jacobian_of_conv2d_in_a_function():
    # TF's JacobianTest.test_grad_jacobian_conv, smaller: d/dx sum(batch_jacobian(...))
    kernel = vj.ones([3, 3, 1, 4], dtype=vj.float64)

    @vj.function
    def inner(x):
        with vj.GradientTape() as tape:
            tape.watch(x)
            y = vj.nn.conv2d(x, kernel, strides=(1, 1), padding="SAME", data_format="NHWC")
            reduced = vj.reduce_sum(y ** 2.0, axis=[2, 3])
        return vj.reduce_sum(tape.batch_jacobian(reduced, x))

    x0 = RNG.standard_normal((3, 4, 4, 1))
    with vj.GradientTape() as tape:
        x = vj.constant(x0)
        tape.watch(x)
        y = inner(x)
    grad = tape.gradient(y, x).numpy()
    numerical = np.zeros_like(x0)
    for i in np.ndindex(x0.shape):
        e = np.zeros_like(x0)
        e[i] = 1e-5
        numerical[i] = (float(inner(vj.constant(x0 + e))) - float(inner(vj.constant(x0 - e)))) / 2e-5
    np.testing.assert_allclose(grad, numerical, rtol=1e-5, atol=1e-6)
