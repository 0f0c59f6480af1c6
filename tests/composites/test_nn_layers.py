"""vj.nn.depthwise_conv2d and vj.nn.fused_batch_norm (vecjac/_src/composites/nn_layers.py).

Values are checked against NumPy references written here element by element (index
loops, zero padding by bounds checks, statistics by explicit sums: independent of the
slice / reshape formulas of the implementation) and against the examples of TF's
documentation; derivatives against finite differences in forward and reverse mode, to
second order; pfor against the plain loop with loop-variant inputs; errors name the
function and the argument. TF's own pfor tests of both functions are ported in
tests/conformance/test_tf_pfor_*.py.
"""
import math

import numpy as np
import pytest

import vecjac as vj
import vecjac._src.composites.nn_layers
from vecjac.testing import check_grads

RNG = np.random.default_rng(5)


# -- references ------------------------------------------------------------------------------
def same_pads(size, window, stride):
    """TF's "SAME": output ceil(size / stride), the padding split with the extra one after."""
    total = max((math.ceil(size / stride) - 1) * stride + window - size, 0)
    return total // 2, total - total // 2


def ref_depthwise(x, w, stride, dilation, padding):
    """x NHWC, w (fh, fw, c, m); padding "VALID", "SAME" or ((top, bottom), (left, right))."""
    n, h, wd, c = x.shape
    fh, fw, _, m = w.shape
    dh, dw = dilation
    if padding == "VALID":
        (top, bottom), (left, right) = (0, 0), (0, 0)
    elif padding == "SAME":
        (top, bottom) = same_pads(h, (fh - 1) * dh + 1, stride)
        (left, right) = same_pads(wd, (fw - 1) * dw + 1, stride)
    else:
        (top, bottom), (left, right) = padding
    oh = (h + top + bottom - (fh - 1) * dh - 1) // stride + 1
    ow = (wd + left + right - (fw - 1) * dw - 1) // stride + 1
    out = np.zeros((n, oh, ow, c * m), x.dtype)
    for b in range(n):
        for i in range(oh):
            for j in range(ow):
                for k in range(c):
                    for q in range(m):
                        total = 0.0
                        for di in range(fh):
                            for dj in range(fw):
                                r = i * stride + di * dh - top
                                s = j * stride + dj * dw - left
                                if 0 <= r < h and 0 <= s < wd:
                                    total += w[di, dj, k, q] * x[b, r, s, k]
                        out[b, i, j, k * m + q] = total
    return out


def ref_batch_norm(x, scale, offset, eps, mean=None, variance=None, factor=1.0,
                   training=True):
    """x channels last, any rank: per channel, sums over every other index."""
    c = x.shape[-1]
    flat = x.reshape(-1, c)
    count = flat.shape[0]
    y = np.zeros_like(flat)
    batch_mean, batch_var = np.zeros(c), np.zeros(c)
    for ch in range(c):
        if training:
            mu = sum(float(flat[r, ch]) for r in range(count)) / count
            var = sum((float(flat[r, ch]) - mu) ** 2 for r in range(count)) / count
            batch_mean[ch] = factor * mu + (1 - factor) * (mean[ch] if factor != 1 else 0)
            unbiased = var * count / max(count - 1, 1)
            batch_var[ch] = factor * unbiased + (1 - factor) * (
                variance[ch] if factor != 1 else 0)
        else:
            mu, var = mean[ch], variance[ch]
            batch_mean[ch], batch_var[ch] = mu, var
        for r in range(count):
            y[r, ch] = (flat[r, ch] - mu) / math.sqrt(var + max(eps, 1.001e-5)) * \
                scale[ch] + offset[ch]
    return y.reshape(x.shape), batch_mean, batch_var


def nchw(a):
    return np.moveaxis(a, -1, 1)


# -- depthwise_conv2d: values ---------------------------------------------------------------
def test_depthwise_of_tf_docs_examples():
    x = np.array([[1., 2.], [3., 4.], [5., 6.]], np.float32).reshape((1, 3, 2, 1))
    kernel = np.array([[1., 2.], [3., 4]], np.float32).reshape((2, 1, 1, 2))
    got = vj.nn.depthwise_conv2d(x, kernel, strides=[1, 1, 1, 1], padding="VALID").numpy()
    np.testing.assert_array_equal(got, [[[[10, 14], [14, 20]], [[18, 26], [22, 32]]]])
    assert got.dtype == np.float32
    got = vj.nn.depthwise_conv2d(x, kernel, strides=[1, 1, 1, 1],
                                 padding=[[0, 0], [1, 0], [1, 0], [0, 0]]).numpy()
    np.testing.assert_array_equal(got, [[[[0, 0], [3, 4], [6, 8]],
                                         [[0, 0], [10, 14], [14, 20]],
                                         [[0, 0], [18, 26], [22, 32]]]])


CASES = [  # x shape (NHWC), filter shape, stride, dilations, padding
    ((2, 5, 6, 3), (3, 3, 3, 2), 1, (1, 1), "VALID"),
    ((1, 7, 6, 2), (3, 2, 2, 3), 2, (1, 1), "SAME"),
    ((2, 6, 5, 1), (2, 3, 1, 4), 3, (1, 1), "SAME"),
    ((1, 7, 7, 2), (3, 3, 2, 1), 1, (2, 3), "SAME"),
    ((1, 8, 6, 3), (2, 2, 3, 2), 1, (3, 2), "VALID"),
    ((2, 5, 4, 2), (3, 2, 2, 2), 2, (1, 1), ((1, 2), (0, 3))),
    ((1, 4, 5, 3), (2, 3, 3, 1), 1, (2, 1), ((2, 0), (1, 1))),
    ((1, 3, 3, 2), (1, 1, 2, 3), 1, (1, 1), "SAME"),
]


@pytest.mark.parametrize("xshape, wshape, stride, dilations, padding", CASES, ids=str)
def test_depthwise_matches_loops_in_both_layouts(xshape, wshape, stride, dilations, padding):
    x, w = RNG.standard_normal(xshape), RNG.standard_normal(wshape)
    expected = ref_depthwise(x, w, stride, dilations, padding)
    explicit = isinstance(padding, tuple)
    pad_nhwc = [[0, 0], list(padding[0]), list(padding[1]), [0, 0]] if explicit else padding
    got = vj.nn.depthwise_conv2d(x, w, [1, stride, stride, 1], pad_nhwc, data_format="NHWC",
                                 dilations=list(dilations))
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-12, atol=1e-12)
    pad_nchw = [[0, 0], [0, 0], list(padding[0]), list(padding[1])] if explicit else padding
    got = vj.nn.depthwise_conv2d(nchw(x), w, (1, 1, stride, stride), pad_nchw,
                                 data_format="NCHW", dilations=dilations)
    np.testing.assert_allclose(got.numpy(), nchw(expected), rtol=1e-12, atol=1e-12)


def test_depthwise_float32_stays_float32_and_agrees_with_conv2d_for_one_channel():
    x = RNG.standard_normal((2, 6, 5, 1)).astype(np.float32)
    w = RNG.standard_normal((3, 2, 1, 4)).astype(np.float32)
    got = vj.nn.depthwise_conv2d(x, w, [1, 2, 2, 1], "SAME")
    assert got.dtype == np.float32 and got.shape == (2, 3, 3, 4)
    np.testing.assert_allclose(got.numpy(), ref_depthwise(x, w, 2, (1, 1), "SAME"), rtol=1e-5,
                               atol=1e-5)
    # one input channel: a depthwise convolution is an ordinary one
    np.testing.assert_allclose(got.numpy(), vj.nn.conv2d(x, w, 2, "SAME").numpy(), rtol=1e-5,
                               atol=1e-6)


# -- depthwise_conv2d: derivatives, pfor -----------------------------------------------------
@pytest.mark.parametrize("data_format, stride, dilations, padding", [
    ("NHWC", 2, [1, 1], "SAME"), ("NCHW", 1, [2, 1], [[0, 0], [0, 0], [1, 0], [2, 1]])])
def test_depthwise_derivatives(data_format, stride, dilations, padding):
    x = RNG.standard_normal((1, 2, 5, 4) if data_format == "NCHW" else (1, 5, 4, 2))
    w = RNG.standard_normal((2, 3, 2, 2))
    strides = [1, 1, stride, stride] if data_format == "NCHW" else [1, stride, stride, 1]

    def f(a, b):
        return vj.nn.depthwise_conv2d(a, b, strides, padding, data_format, dilations)
    check_grads(f, [x, w], order=1, modes=("fwd", "rev"))
    # the output is bilinear: the second derivative is the cross term only
    check_grads(lambda a, b: f(a, b) ** 2, [x, w], order=2, modes=("fwd", "rev"))


def test_depthwise_jacobian_is_the_loop_reference_linear_map():
    w = RNG.standard_normal((2, 2, 2, 2))
    x = RNG.standard_normal((1, 3, 3, 2))
    f = lambda a: vj.nn.depthwise_conv2d(a, w, [1, 1, 1, 1], "SAME")  # noqa: E731
    expected = np.stack([ref_depthwise(e.reshape(x.shape), w, 1, (1, 1), "SAME").ravel()
                         for e in np.eye(x.size)], axis=1)
    for mode in ("fwd", "rev"):
        jac = np.asarray(vj.jacobian(f, mode=mode)(x)).reshape(expected.shape)
        np.testing.assert_allclose(jac, expected, atol=1e-12)
    # the sparsity tracer finds exactly the reference's structure (no conservative rule)
    pattern = vj.jacobian_sparsity(f, x).toarray()
    np.testing.assert_array_equal(pattern, expected != 0)


def test_depthwise_pfor_matches_the_loop():
    xs = RNG.standard_normal((3, 2, 6, 5, 2))
    ws = RNG.standard_normal((3, 3, 2, 2, 3))
    w0 = RNG.standard_normal((3, 2, 2, 3))

    def loop_fn(i):
        x, w = vj.gather(xs, i), vj.gather(ws, i)
        y = vj.nn.depthwise_conv2d(x, w, [1, 2, 2, 1], "SAME")
        with vj.GradientTape() as tape:  # per-iteration gradients, loop-variant seeds
            tape.watch(x)
            z = vj.reduce_sum(vj.nn.depthwise_conv2d(x * x, w0, [1, 1, 1, 1], "VALID",
                                                     dilations=[1, 2]) ** 2)
        return y, tape.gradient(z, x)
    got = vj.vectorize.pfor(loop_fn, 3, fallback_to_while_loop=False)
    loop = vj.vectorize.for_loop(loop_fn, 3)
    for g, e in zip(got, loop):
        np.testing.assert_allclose(g.numpy(), e.numpy(), rtol=1e-12, atol=1e-12)


# -- depthwise_conv2d: bad input ---------------------------------------------------------------
X, W = np.zeros((1, 5, 5, 2)), np.zeros((2, 2, 2, 3))


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(input=np.zeros((1, 5, 5, 2), int)), TypeError, "input must be floating point"),
    (dict(filter=np.zeros((2, 2, 2))), ValueError, r"filter must have rank 4 .* got shape"),
    (dict(filter=W.astype(np.float32)), TypeError, "input and filter must have one dtype"),
    (dict(filter=np.zeros((2, 2, 3, 1))), ValueError,
     r"filter has 3 input channels .* the input has 2"),
    (dict(input=np.zeros((5, 5, 2))), ValueError, "input must have rank >= 4"),
    (dict(strides=2), TypeError, r"strides must be a list of 4 ints \[1, stride, stride, 1\]"),
    (dict(strides=[2, 2]), ValueError, "strides must be a list of 4 ints"),
    (dict(strides=[1, 2, 2, 2]), ValueError, "strides must be 1 along the batch and channel"),
    (dict(strides=[1, 2, 1, 1]), ValueError, "strides must be equal along height and width"),
    (dict(strides=[1, 0, 0, 1]), ValueError, "strides must be positive"),
    (dict(strides=[1, 1.5, 1.5, 1]), TypeError, "strides must be ints"),
    (dict(dilations=2), TypeError, "dilations must be a list of 2 ints"),
    (dict(dilations=[1, 1, 1, 1]), ValueError, "dilations must be a list of 2 ints"),
    (dict(dilations=[0, 1]), ValueError, "dilations must be positive"),
    (dict(dilations=[2, 1], strides=[1, 2, 2, 1]), ValueError,
     "strides must be 1 when a dilation is > 1"),
    (dict(padding="FULL"), ValueError, "padding must be 'VALID', 'SAME' or explicit"),
    (dict(padding=[[0, 0], [1, 1], [1, 1]]), ValueError, "explicit padding must be 4 pairs"),
    (dict(padding=[[1, 0], [1, 1], [1, 1], [0, 0]]), ValueError,
     "padding must be 0 along the batch and channel axes"),
    (dict(input=np.zeros((1, 1, 5, 2))), ValueError, "window .* is larger than the padded"),
    (dict(data_format="NCDHW"), ValueError, "data_format must be 'NHWC' or 'NCHW'"),
])
def test_depthwise_bad_inputs(kwargs, error, match):
    args = dict(input=X, filter=W, strides=[1, 1, 1, 1], padding="VALID") | kwargs
    with pytest.raises(error, match=f"depthwise_conv2d: .*{match}"):
        vj.nn.depthwise_conv2d(**args)


def test_depthwise_bad_input_records_nothing():
    x = vj.constant(X)
    with vj.GradientTape() as tape:
        tape.watch(x)
        with pytest.raises(ValueError):
            vj.nn.depthwise_conv2d(x, W, [1, 1, 1, 1], "VALID", dilations=[1, 1, 1])
        y = vj.reduce_sum(x * 2.0)
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), np.full(X.shape, 2.0))


# -- fused_batch_norm: values ----------------------------------------------------------------
@pytest.mark.parametrize("shape", [(2, 3, 4, 3), (1, 1, 1, 2), (2, 2, 3, 2, 4)], ids=str)
@pytest.mark.parametrize("channels_first", [False, True], ids=["last", "first"])
def test_fused_batch_norm_training_matches_loops(shape, channels_first):
    x = RNG.standard_normal(shape) * 2 + 1
    c = shape[-1]
    scale, offset = RNG.standard_normal(c), RNG.standard_normal(c)
    y_ref, mean_ref, var_ref = ref_batch_norm(x, scale, offset, 0.01)
    fmt = ("NCHW", "NCDHW")[len(shape) - 4] if channels_first else ("NHWC", "NDHWC")[
        len(shape) - 4]
    y, mean, var = vj.nn.fused_batch_norm(nchw(x) if channels_first else x, scale, offset,
                                          epsilon=0.01, data_format=fmt)
    np.testing.assert_allclose(y.numpy(), nchw(y_ref) if channels_first else y_ref,
                               rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(mean.numpy(), mean_ref, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(var.numpy(), var_ref, rtol=1e-12, atol=1e-12)


def test_fused_batch_norm_returns_the_unbiased_variance_and_normalizes_with_the_biased():
    x = np.array([1.0, 2.0, 3.0, 6.0]).reshape(1, 2, 2, 1)  # mean 3, sum of squares 14
    y, mean, var = vj.nn.fused_batch_norm(x, [1.0], [0.0], epsilon=0.0)
    assert float(mean[0]) == 3.0
    np.testing.assert_allclose(var.numpy(), [14 / 3], rtol=1e-15)
    np.testing.assert_allclose(y.numpy().ravel(), (x.ravel() - 3) / math.sqrt(14 / 4 + 1.001e-5),
                               rtol=1e-14)


def test_fused_batch_norm_exponential_average():
    x = RNG.standard_normal((3, 2, 2, 3))
    scale, offset = RNG.standard_normal(3), RNG.standard_normal(3)
    old_mean, old_var = RNG.standard_normal(3), RNG.uniform(0.5, 2.0, 3)
    y_ref, mean_ref, var_ref = ref_batch_norm(x, scale, offset, 1e-3, old_mean, old_var,
                                              factor=0.3)
    y, mean, var = vj.nn.fused_batch_norm(x, scale, offset, old_mean, old_var,
                                          exponential_avg_factor=0.3)
    np.testing.assert_allclose(y.numpy(), y_ref, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(mean.numpy(), mean_ref, rtol=1e-12)
    np.testing.assert_allclose(var.numpy(), var_ref, rtol=1e-12)


@pytest.mark.parametrize("data_format", ["NHWC", "NCHW"])
def test_fused_batch_norm_inference_uses_the_given_statistics(data_format):
    x = RNG.standard_normal((2, 3, 2, 4)).astype(np.float32)
    scale, offset = RNG.standard_normal(4), RNG.standard_normal(4)
    mean, variance = RNG.standard_normal(4), RNG.uniform(0.5, 2.0, 4)
    y_ref, _, _ = ref_batch_norm(x.astype(float), scale, offset, 1e-7, mean, variance,
                                 training=False)
    first = data_format == "NCHW"
    args = [a.astype(np.float32) for a in (scale, offset, mean, variance)]
    y, m, v = vj.nn.fused_batch_norm(nchw(x) if first else x, *args, epsilon=1e-7,
                                     data_format=data_format, is_training=False,
                                     exponential_avg_factor=0.5)  # ignored in inference
    assert y.dtype == m.dtype == v.dtype == np.float32
    np.testing.assert_allclose(y.numpy(), nchw(y_ref) if first else y_ref, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(m.numpy(), args[2])
    np.testing.assert_array_equal(v.numpy(), args[3])


def test_fused_batch_norm_float32_and_python_lists_and_ignored_mean():
    x = RNG.standard_normal((2, 2, 2, 2)).astype(np.float32)
    # mean and variance are ignored in training with factor 1 (as TF's kernel)
    outs = vj.nn.fused_batch_norm(x, [1.0, 2.0], [0.5, 0.0], mean=[9.0, 9.0],
                                  variance=[9.0, 9.0])
    assert all(o.dtype == np.float32 for o in outs)
    ref = ref_batch_norm(x.astype(float), [1.0, 2.0], [0.5, 0.0], 1e-3)
    for o, r in zip(outs, ref):
        np.testing.assert_allclose(o.numpy(), r, rtol=1e-5, atol=1e-5)


# -- fused_batch_norm: derivatives, pfor -----------------------------------------------------
def test_fused_batch_norm_derivatives_training():
    x = RNG.standard_normal((2, 2, 3, 2))
    scale, offset = RNG.standard_normal(2), RNG.standard_normal(2)
    f = lambda a, s, o: vj.nn.fused_batch_norm(a, s, o, epsilon=0.1)  # noqa: E731
    check_grads(f, [x, scale, offset], order=2, modes=("fwd", "rev"))
    g = lambda a, s, o, m, v: vj.nn.fused_batch_norm(  # noqa: E731
        a, s, o, m, v, epsilon=0.1, data_format="NCHW", exponential_avg_factor=0.25)
    check_grads(g, [x, scale, offset, RNG.standard_normal(2), RNG.uniform(1, 2, 2)],
                order=1, modes=("fwd", "rev"))


def test_fused_batch_norm_derivatives_inference():
    x = RNG.standard_normal((2, 3, 2, 2, 3))
    args = [x, RNG.standard_normal(3), RNG.standard_normal(3), RNG.standard_normal(3),
            RNG.uniform(1, 2, 3)]
    f = lambda *a: vj.nn.fused_batch_norm(*a, is_training=False,  # noqa: E731
                                          data_format="NDHWC")[0]
    check_grads(f, args, order=2, modes=("fwd", "rev"))


def test_fused_batch_norm_gradient_is_tfs_kernel_formula():
    """TF's FusedBatchNormGrad: dx = scale rsqrt(v + eps) (dy - mean(dy) - (x - m)
    mean(dy (x - m)) / (v + eps)), per channel, v the biased variance."""
    x, dy = RNG.standard_normal((3, 2, 2, 2)), RNG.standard_normal((3, 2, 2, 2))
    scale, offset = RNG.standard_normal(2), RNG.standard_normal(2)
    xv = vj.constant(x)
    with vj.GradientTape() as tape:
        tape.watch(xv)
        y = vj.nn.fused_batch_norm(xv, scale, offset, epsilon=0.01)[0]
    dx = tape.gradient(y, xv, output_gradients=vj.constant(dy)).numpy()
    flat, g = x.reshape(-1, 2), dy.reshape(-1, 2)
    centered = flat - flat.mean(0)
    var = (centered ** 2).mean(0) + 0.01
    expected = scale / np.sqrt(var) * (g - g.mean(0) - centered * (g * centered).mean(0) / var)
    np.testing.assert_allclose(dx, expected.reshape(x.shape), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("is_training", [True, False])
def test_fused_batch_norm_pfor_matches_the_loop(is_training):
    xs = RNG.standard_normal((3, 2, 2, 3, 2))
    scales, offsets = RNG.standard_normal((3, 2)), RNG.standard_normal((3, 2))
    means, variances = RNG.standard_normal((3, 2)), RNG.uniform(0.5, 2, (3, 2))

    def loop_fn(i):
        x, s = vj.gather(xs, i), vj.gather(scales, i)
        with vj.GradientTape() as tape:
            tape.watch([x, s])
            outs = vj.nn.fused_batch_norm(
                x, s, vj.gather(offsets, i), vj.gather(means, i), vj.gather(variances, i),
                is_training=is_training, exponential_avg_factor=0.5)
            loss = vj.reduce_sum(outs[0] ** 2) + vj.reduce_sum(outs[2])
        return list(outs) + tape.gradient(loss, [x, s])
    got = vj.vectorize.pfor(loop_fn, 3, fallback_to_while_loop=False)
    loop = vj.vectorize.for_loop(loop_fn, 3)
    for g, e in zip(got, loop):
        np.testing.assert_allclose(g.numpy(), e.numpy(), rtol=1e-10, atol=1e-12)


# -- fused_batch_norm: bad input -------------------------------------------------------------
XB, C2 = np.ones((2, 2, 2, 2)), np.ones(2)


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(x=np.ones((2, 2, 2), float)), ValueError, "x must have rank 4 or 5"),
    (dict(x=np.ones((2, 2, 2, 2), int)), TypeError, "x must be floating point"),
    (dict(data_format="NDHWC"), ValueError,
     "data_format must be 'NHWC' or 'NCHW' for x of rank 4"),
    (dict(data_format=3), ValueError, "data_format must be"),
    (dict(is_training=1), TypeError, "is_training must be a bool, got int"),
    (dict(epsilon="0.1"), TypeError, "epsilon must be a real number"),
    (dict(epsilon=-1.0), ValueError, "epsilon must be >= 0"),
    (dict(epsilon=float("nan")), ValueError, "epsilon must be finite"),
    (dict(exponential_avg_factor=None), TypeError, "exponential_avg_factor must be a real"),
    (dict(scale=np.ones(3)), ValueError, r"scale must be a vector of the 2 channels .* \(3,\)"),
    (dict(offset=np.ones((2, 1))), ValueError, "offset must be a vector of the 2 channels"),
    (dict(scale=C2.astype(np.float32)), TypeError, "scale dtype float32 differs from x"),
    (dict(is_training=False), ValueError, "mean is required .* when is_training is False"),
    (dict(is_training=False, mean=C2), ValueError, "variance is required"),
    (dict(exponential_avg_factor=0.5), ValueError,
     "mean is required .* when exponential_avg_factor != 1"),
    (dict(is_training=False, mean=np.ones(3), variance=C2), ValueError,
     "mean must be a vector of the 2 channels"),
    (dict(is_training=False, mean=C2, variance="v"), (TypeError, ValueError), "variance"),
])
def test_fused_batch_norm_bad_inputs(kwargs, error, match):
    args = dict(x=XB, scale=C2, offset=C2) | kwargs
    with pytest.raises(error, match=f"fused_batch_norm: .*{match}"):
        vj.nn.fused_batch_norm(**args)


def test_module_surface():
    assert vecjac._src.composites.nn_layers.__all__ == ["depthwise_conv2d", "fused_batch_norm"]
    assert vj.nn.depthwise_conv2d is vecjac._src.composites.nn_layers.depthwise_conv2d
