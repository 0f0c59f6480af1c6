"""Differential checks against TensorFlow (float64 convolutions, float32 pooling, as TF's
CPU kernels support them): values and gradients of vj.nn's convolutions and pooling
against tf.nn's. Skipped where TensorFlow is not installed (it is not a dependency;
`pip install -e ".[peers]"` installs tensorflow-cpu, as CI does)."""
import itertools

import numpy as np
import pytest

import vecjac as vj

tf = pytest.importorskip("tensorflow")
RNG = np.random.default_rng(5)
SHAPES = {1: (2, 9, 3), 2: (2, 7, 8, 3), 3: (1, 5, 6, 5, 2)}


def _tf_conv(n, x, w, s, pad, d):
    if n == 1:
        return tf.nn.conv1d(x, w, stride=s, padding=pad, dilations=d)
    return getattr(tf.nn, f"conv{n}d")(x, w, strides=[1] + [s] * n + [1], padding=pad,
                                        dilations=[1] + [d] * n + [1])


def _value_and_grads(run, x, w, u, lib):
    xs, ws = lib.constant(x), lib.constant(w)
    with lib.GradientTape() as tape:
        tape.watch([xs, ws])
        y = run(xs, ws)
        loss = lib.reduce_sum(y * u)
    return [np.asarray(t) for t in [y] + list(tape.gradient(loss, [xs, ws]))]


@pytest.mark.parametrize("n, k, s, pad", list(itertools.product(
    [1, 2, 3], [1, 3], [1, 2], ["VALID", "SAME"])))
def test_convolutions_and_their_gradients_match_tf(n, k, s, pad):
    x = RNG.standard_normal(SHAPES[n])
    w = RNG.standard_normal((k,) * n + (SHAPES[n][-1], 4))
    u = RNG.standard_normal(_tf_conv(n, x, w, s, pad, 1).shape)
    fn = getattr(vj.nn, f"conv{n}d")
    ours = _value_and_grads(lambda a, b: fn(a, b, s, pad), x, w, u, vj)
    theirs = _value_and_grads(lambda a, b: _tf_conv(n, a, b, s, pad, 1), x, w, u, tf)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-10)


def test_dilated_convolution_matches_tf():  # TF's CPU kernels have no dilated gradients
    x, w = RNG.standard_normal((2, 9, 8, 3)), RNG.standard_normal((3, 2, 3, 4))
    for pad in ("VALID", "SAME"):
        np.testing.assert_allclose(vj.nn.conv2d(x, w, 1, pad, dilations=2).numpy(),
                                   _tf_conv(2, x, w, 1, pad, 2).numpy(), rtol=1e-10, atol=1e-10)


# TF's 3-D pooling places SAME windows differently when the stride exceeds the window
# (its padding goes negative); vecjac uses the documented formula of 1-D/2-D: not compared
@pytest.mark.parametrize("n, k, s, pad, kind", [
    case for case in itertools.product([1, 2, 3], [2, 3], [1, 2, 3], ["VALID", "SAME"],
                                       ["max", "avg"]) if not (case[0] == 3 and case[2] > case[1])])
def test_pooling_and_its_gradient_match_tf(n, k, s, pad, kind):
    x = RNG.standard_normal(SHAPES[n]).astype(np.float32)
    name = f"{kind}_pool{n}d"
    ref = getattr(tf.nn, name)(x, ksize=k, strides=s, padding=pad)
    u = RNG.standard_normal(ref.shape).astype(np.float32)
    xs, xt = vj.constant(x), tf.constant(x)
    with vj.GradientTape() as t1, tf.GradientTape() as t2:
        t1.watch(xs)
        t2.watch(xt)
        ours = getattr(vj.nn, name)(xs, k, s, pad)
        theirs = getattr(tf.nn, name)(xt, ksize=k, strides=s, padding=pad)
        l1, l2 = vj.reduce_sum(ours * u), tf.reduce_sum(theirs * u)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(t1.gradient(l1, xs).numpy(), t2.gradient(l2, xt).numpy(),
                               rtol=1e-5, atol=1e-5)


def test_layouts_explicit_padding_and_convolution_match_tf():
    x, w = RNG.standard_normal((2, 7, 8, 3)), RNG.standard_normal((3, 3, 3, 4))
    explicit = [[0, 0], [1, 2], [0, 3], [0, 0]]
    np.testing.assert_allclose(vj.nn.conv2d(x, w, 2, explicit).numpy(),
                               tf.nn.conv2d(x, w, 2, explicit).numpy(), rtol=1e-10)
    np.testing.assert_allclose(vj.nn.convolution(x, w, 2, "SAME").numpy(),
                               tf.nn.convolution(x, w, 2, "SAME").numpy(), rtol=1e-10)
    nchw = vj.nn.conv2d(np.transpose(x, (0, 3, 1, 2)), w, 1, "SAME", data_format="NCHW")
    np.testing.assert_allclose(np.transpose(nchw.numpy(), (0, 2, 3, 1)),
                               tf.nn.conv2d(x, w, 1, "SAME").numpy(), rtol=1e-10)
