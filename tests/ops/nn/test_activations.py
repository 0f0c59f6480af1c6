"""tf.nn ops: activations, softmax family, cross entropies, moments, batch normalization.

Forward against NumPy (float64, and float32 accuracy), TF's values at kinks and at large
magnitudes, dtype rules, bad inputs. Gradients, float32, pfor and Jacobians of the
functions that are one op (sigmoid, relu, relu6, elu, leaky_relu, softplus, softmax,
log_softmax): tests/test_registry.py, through their samples; here only for the
compositions of several ops (selu, gelu, softsign, silu/swish, the cross entropies,
moments, batch_normalization), which the registry does not see as one.
"""
import math
import warnings

import numpy as np
import pytest

import vecjac as vj
from vecjac.testing import check_grads, check_pfor, numerical_jacobian

RNG = np.random.default_rng(0)


def _away_from_kinks(shape):
    """Random values kept away from 0 and 6 (the kinks of relu-like activations)."""
    z = RNG.standard_normal(shape) * 3
    z = np.where(np.abs(z) < 0.2, z + 0.5, z)
    return np.where(np.abs(z - 6) < 0.2, z + 0.5, z)


def _np_sigmoid(x):
    return 1 / (1 + np.exp(-x))


_erf = np.vectorize(math.erf)
_SELU_A, _SELU_S = 1.6732632423543772, 1.0507009873554805

# (name, vecjac function, NumPy oracle)
UNARY = [
    ("sigmoid", vj.nn.sigmoid, _np_sigmoid),
    ("relu", vj.nn.relu, lambda x: np.maximum(x, 0)),
    ("relu6", vj.nn.relu6, lambda x: np.minimum(np.maximum(x, 0), 6)),
    ("elu", vj.nn.elu, lambda x: np.where(x > 0, x, np.exp(x) - 1)),
    ("selu", vj.nn.selu, lambda x: _SELU_S * np.where(x > 0, x, _SELU_A * (np.exp(x) - 1))),
    ("gelu", vj.nn.gelu, lambda x: 0.5 * x * (1 + _erf(x / np.sqrt(2)))),
    ("gelu_tanh", lambda x: vj.nn.gelu(x, approximate=True),
     lambda x: 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))),
    ("leaky_relu", vj.nn.leaky_relu, lambda x: np.where(x > 0, x, 0.2 * x)),
    ("leaky_relu_0.5", lambda x: vj.nn.leaky_relu(x, alpha=0.5),
     lambda x: np.where(x > 0, x, 0.5 * x)),
    ("softplus", vj.nn.softplus, lambda x: np.log(1 + np.exp(x))),
    ("softsign", vj.nn.softsign, lambda x: x / (1 + np.abs(x))),
    ("silu", vj.nn.silu, lambda x: x * _np_sigmoid(x)),
    ("swish_beta", lambda x: vj.nn.swish(x, beta=2.0), lambda x: x * _np_sigmoid(2 * x)),
    ("softmax", vj.nn.softmax,
     lambda x: np.exp(x) / np.exp(x).sum(-1, keepdims=True)),
    ("log_softmax", vj.nn.log_softmax,
     lambda x: x - np.log(np.exp(x).sum(-1, keepdims=True))),
    ("softmax_axis0", lambda x: vj.nn.softmax(x, axis=0),
     lambda x: np.exp(x) / np.exp(x).sum(0, keepdims=True)),
    ("log_softmax_axis0", lambda x: vj.nn.log_softmax(x, axis=0),
     lambda x: x - np.log(np.exp(x).sum(0, keepdims=True))),
]
IDS = [u[0] for u in UNARY]
SOFTMAX = {"softmax", "log_softmax", "softmax_axis0", "log_softmax_axis0"}
COMPOSITE = [u for u in UNARY if u[0] in
             {"selu", "gelu", "gelu_tanh", "softsign", "silu", "swish_beta"}]
COMPOSITE_IDS = [u[0] for u in COMPOSITE]


def _shapes(name):
    return [(4,), (2, 3)] if name in SOFTMAX else [(), (5,), (2, 3)]


@pytest.mark.parametrize("name,f,oracle", UNARY, ids=IDS)
def test_unary_forward(name, f, oracle):
    for shape in _shapes(name):
        x = _away_from_kinks(shape)
        np.testing.assert_allclose(f(vj.constant(x)).numpy(), oracle(x), rtol=1e-12,
                                   atol=1e-12)
    x32 = vj.constant(_away_from_kinks((2, 3)).astype(np.float32))
    y = f(x32)
    assert y.dtype == np.float32
    np.testing.assert_allclose(y.numpy(), oracle(x32.numpy().astype(np.float64)), rtol=1e-5,
                               atol=1e-6)


@pytest.mark.parametrize("name,f,oracle", COMPOSITE, ids=COMPOSITE_IDS)
def test_composite_grads_and_float32(name, f, oracle):
    for shape in _shapes(name):
        check_grads(f, [_away_from_kinks(shape)], order=2)
    x32 = vj.constant(_away_from_kinks((2, 3)).astype(np.float32))
    with vj.GradientTape() as tape:
        tape.watch(x32)
        y = f(x32)
    assert tape.gradient(y, x32).dtype == np.float32


@pytest.mark.parametrize("name,f,oracle", COMPOSITE, ids=COMPOSITE_IDS)
def test_composite_pfor_and_jacobian(name, f, oracle):
    xs = _away_from_kinks((3, 2, 4))
    c = _away_from_kinks((2, 4))
    check_pfor(lambda i: f(vj.gather(xs, i)), 3)                  # stacked
    check_pfor(lambda i: f(c) * vj.cast(i, vj.float64), 3)        # loop-invariant input
    x = vj.constant(xs[0])
    with vj.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = f(x)
    jac = tape.jacobian(y, x)
    jac_loop = tape.jacobian(y, x, experimental_use_pfor=False)
    np.testing.assert_allclose(jac.numpy(), jac_loop.numpy(), rtol=1e-10, atol=1e-12)
    num = numerical_jacobian(lambda a: f(vj.constant(a)).numpy(), xs[0])
    np.testing.assert_allclose(jac.numpy(), num, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("name,f,oracle", COMPOSITE, ids=COMPOSITE_IDS)
def test_composite_per_example_gradients(name, f, oracle):
    """A tape inside the loop body: the backward pass itself runs under pfor."""
    xs = _away_from_kinks((3, 4))
    w = _away_from_kinks((4, 4)) * 0.3

    def loop_fn(i):
        wt = vj.constant(w)
        with vj.GradientTape() as tape:
            tape.watch(wt)
            y = vj.reduce_sum(f(vj.linalg.matvec(wt, vj.gather(xs, i))) ** 2)
        return tape.gradient(y, wt)
    check_pfor(loop_fn, 3)


def _grad(f, x):
    x = vj.constant(x)
    with vj.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    return tape.gradient(y, x).numpy()


def test_kinks_follow_tf():
    x = np.array([0.0, 6.0, -1.0, 3.0, 7.0])
    np.testing.assert_array_equal(_grad(vj.nn.relu, x), [0, 1, 0, 1, 1])
    np.testing.assert_array_equal(_grad(vj.nn.relu6, x), [0, 0, 0, 1, 0])
    np.testing.assert_allclose(_grad(lambda t: vj.nn.leaky_relu(t, 0.3), x),
                               [0.3, 1, 0.3, 1, 1])
    np.testing.assert_allclose(_grad(vj.nn.elu, np.array([0.0])), [1.0])
    np.testing.assert_allclose(_grad(vj.nn.softsign, np.array([0.0])), [1.0])


def test_relu_accepts_integers():
    y = vj.nn.relu(vj.constant(np.array([-2, 0, 3])))
    assert y.dtype == np.int64
    np.testing.assert_array_equal(y.numpy(), [0, 0, 3])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_large_magnitudes_are_stable(dtype):
    x = np.array([-1e4, -1000.0, -80.0, 0.0, 80.0, 1000.0, 1e4], dtype=dtype)
    fns = {
        "sigmoid": (vj.nn.sigmoid, [0, 0, _np_sigmoid(-80.0), 0.5, 1, 1, 1]),
        "softplus": (vj.nn.softplus, [0, 0, np.exp(-80.0), np.log(2), 80, 1000, 1e4]),
        "elu": (vj.nn.elu, [-1, -1, -1, 0, 80, 1000, 1e4]),
        "log_softmax": (vj.nn.log_softmax, x - x.max()),
        "softmax": (vj.nn.softmax, [0, 0, 0, 0, 0, 0, 1]),
        "sigmoid_xent": (lambda t: vj.nn.sigmoid_cross_entropy_with_logits(
            labels=vj.ones_like(t), logits=t), [1e4, 1000, 80, np.log(2), 0, 0, 0]),
    }
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for name, (f, expected) in fns.items():
            xt = vj.constant(x)
            with vj.GradientTape() as tape:
                tape.watch(xt)
                y = f(xt)
            g = tape.gradient(y, xt)
            assert y.dtype == dtype and np.all(np.isfinite(y.numpy())), name
            assert np.all(np.isfinite(g.numpy())), name
            np.testing.assert_allclose(y.numpy(), np.asarray(expected, dtype=np.float64),
                                       rtol=1e-6, atol=1e-30, err_msg=name)


# -- cross entropies -----------------------------------------------------------------------
def test_sigmoid_cross_entropy():
    z = RNG.uniform(size=(3, 4))
    x = RNG.standard_normal((3, 4)) * 3
    p = _np_sigmoid(x)
    expected = -z * np.log(p) - (1 - z) * np.log(1 - p)
    f = lambda a, b: vj.nn.sigmoid_cross_entropy_with_logits(labels=a, logits=b)  # noqa
    np.testing.assert_allclose(f(vj.constant(z), vj.constant(x)).numpy(), expected, rtol=1e-10)
    check_grads(f, [z, x], order=2)
    check_grads(f, [np.array(0.3), np.array(-1.5)], order=2)
    check_pfor(lambda i: f(vj.gather(z, i), vj.gather(x, i)), 3)
    check_pfor(lambda i: f(vj.gather(z, i), x[0]), 3)
    check_pfor(lambda i: f(z[0], vj.gather(x, i)), 3)
    y32 = f(vj.constant(z.astype(np.float32)), vj.constant(x.astype(np.float32)))
    assert y32.dtype == np.float32
    # at x = 0 the kink-free form gives sigmoid(0) - z
    np.testing.assert_allclose(_grad(lambda t: f(vj.constant(0.25), t), np.array(0.0)),
                               0.25)


@pytest.mark.parametrize("axis", [-1, 0])
def test_softmax_cross_entropy(axis):
    z = RNG.uniform(size=(3, 4))
    z = z / z.sum(axis, keepdims=True)
    x = RNG.standard_normal((3, 4))
    logp = x - np.log(np.exp(x).sum(axis, keepdims=True))
    f = lambda a, b: vj.nn.softmax_cross_entropy_with_logits(a, b, axis=axis)  # noqa
    np.testing.assert_allclose(f(vj.constant(z), vj.constant(x)).numpy(),
                               -(z * logp).sum(axis), rtol=1e-10)
    check_grads(f, [z, x], order=2)
    zs, xs = np.stack([z] * 2), np.stack([x, -x])
    check_pfor(lambda i: f(vj.gather(zs, i), vj.gather(xs, i)), 2)
    check_pfor(lambda i: f(vj.gather(zs, i), x), 2)
    check_pfor(lambda i: f(z, vj.gather(xs, i)), 2)
    assert f(z.astype(np.float32), x.astype(np.float32)).dtype == np.float32


# -- moments / batch normalization -----------------------------------------------------------
@pytest.mark.parametrize("axes,keepdims", [([0], False), ([0, 2], True), (-1, False),
                                           ([0, 1, 2], False)])
def test_moments(axes, keepdims):
    x = RNG.standard_normal((3, 4, 2))
    mean, var = vj.nn.moments(vj.constant(x), axes, keepdims=keepdims)
    ax = tuple(np.atleast_1d(axes) % 3)
    np.testing.assert_allclose(mean.numpy(), x.mean(ax, keepdims=keepdims), rtol=1e-12)
    np.testing.assert_allclose(var.numpy(), x.var(ax, keepdims=keepdims), rtol=1e-12)
    check_grads(lambda t: vj.nn.moments(t, axes, keepdims=keepdims), [x], order=2)
    xs = RNG.standard_normal((2, 3, 4, 2))
    check_pfor(lambda i: vj.nn.moments(vj.gather(xs, i), axes, keepdims=keepdims), 2)
    m32, v32 = vj.nn.moments(x.astype(np.float32), axes)
    assert m32.dtype == v32.dtype == np.float32


def test_batch_normalization():
    x = RNG.standard_normal((5, 3))
    mean, var = RNG.standard_normal(3), RNG.uniform(0.5, 2, 3)
    offset, scale = RNG.standard_normal(3), RNG.standard_normal(3)
    eps = 1e-3
    bn = lambda *a: vj.nn.batch_normalization(*a, variance_epsilon=eps)  # noqa
    expected = scale * (x - mean) / np.sqrt(var + eps) + offset
    np.testing.assert_allclose(bn(x, mean, var, offset, scale).numpy(), expected, rtol=1e-12)
    np.testing.assert_allclose(bn(x, mean, var, None, None).numpy(),
                               (x - mean) / np.sqrt(var + eps), rtol=1e-12)
    check_grads(bn, [x, mean, var, offset, scale], order=2)
    check_grads(lambda a, m, v: bn(a, m, v, None, None), [x, mean, var], order=2)
    xs = RNG.standard_normal((2, 5, 3))
    ms = RNG.standard_normal((2, 3))
    check_pfor(lambda i: bn(vj.gather(xs, i), mean, var, offset, scale), 2)
    check_pfor(lambda i: bn(x, vj.gather(ms, i), var, offset, scale), 2)
    check_pfor(lambda i: bn(vj.gather(xs, i), vj.gather(ms, i), var, None, scale), 2)
    f32 = [a.astype(np.float32) for a in (x, mean, var, offset, scale)]
    assert bn(*f32).dtype == np.float32


# -- top-level names and bad inputs ----------------------------------------------------------
def test_top_level_names():
    from vecjac._src.ops.nn import activations as nn_ops
    for name in nn_ops.__all__:
        assert getattr(vj, name) is getattr(vj.nn, name)
    assert vj.nn.swish is vj.nn.silu


@pytest.mark.parametrize("call,err,match", [
    (lambda: vj.nn.sigmoid(np.array([1, 2])), TypeError, "sigmoid: x must be a floating"),
    (lambda: vj.nn.softplus(np.array([1, 2])), TypeError, "softplus: features"),
    (lambda: vj.nn.relu(np.array([1j])), TypeError, "relu: features"),
    (lambda: vj.nn.leaky_relu(np.ones(2), alpha="x"), TypeError, "leaky_relu: alpha"),
    (lambda: vj.nn.gelu(np.ones(2), approximate="yes"), TypeError, "gelu: approximate"),
    (lambda: vj.nn.softmax(np.array(1.0)), ValueError, "softmax: logits must have rank"),
    (lambda: vj.nn.log_softmax(np.ones((2, 3)), axis=2), ValueError, "log_softmax: axis=2"),
    (lambda: vj.nn.softmax(np.ones(3), axis=0.5), TypeError, "softmax: axis"),
    (lambda: vj.nn.sigmoid_cross_entropy_with_logits(labels=np.ones(2), logits=np.ones(3)),
     ValueError, "labels shape"),
    (lambda: vj.nn.sigmoid_cross_entropy_with_logits(logits=np.ones(3)), ValueError,
     "labels and logits are required"),
    (lambda: vj.nn.sigmoid_cross_entropy_with_logits(
        labels=np.ones(2, np.float32), logits=np.ones(2)), TypeError, "labels dtype"),
    (lambda: vj.nn.softmax_cross_entropy_with_logits(np.ones((2, 3)), np.ones((3, 2))),
     ValueError, "labels shape"),
    (lambda: vj.nn.moments(np.ones((2, 3)), axes=[2]), ValueError, "moments: axes=2"),
    (lambda: vj.nn.moments(np.ones((2, 3)), axes=None), ValueError, "moments: axes"),
    (lambda: vj.nn.moments(np.ones((2, 3)), axes=[0], keepdims=1), TypeError, "keepdims"),
    (lambda: vj.nn.batch_normalization(np.ones((2, 3)), np.ones(4), np.ones(3), None, None,
                                       1e-3), ValueError, "batch_normalization: .*mean"),
    (lambda: vj.nn.batch_normalization(np.ones((2, 3)), np.ones(3), np.ones(3), None, None,
                                       "eps"), TypeError, "variance_epsilon"),
    (lambda: vj.nn.batch_normalization(np.ones(3), np.ones(3, np.float32), np.ones(3), None,
                                       None, 1e-3), TypeError, "mean dtype"),
])
def test_bad_inputs(call, err, match):
    with pytest.raises(err, match=match):
        call()


def test_python_literals_take_the_logits_dtype():
    x = vj.constant(np.array([[1.0, -2.0]], np.float32))
    y = vj.nn.sigmoid_cross_entropy_with_logits(labels=[[1.0, 0.0]], logits=x)
    z = vj.nn.softmax_cross_entropy_with_logits([[1.0, 0.0]], x)
    b = vj.nn.batch_normalization(x, 0.5, [1.0, 2.0], None, 2.0, 1e-3)
    assert y.dtype == z.dtype == b.dtype == np.float32
    np.testing.assert_allclose(y.numpy(), [[np.log1p(np.exp(-1.0)), np.log1p(np.exp(-2.0))]],
                               rtol=1e-6)


def test_bias_add_matches_numpy_and_differentiates():
    rng = np.random.default_rng(4)
    x, b = rng.standard_normal((2, 3, 4, 5)), rng.standard_normal(5)
    np.testing.assert_array_equal(vj.nn.bias_add(x, b).numpy(), x + b)
    b3 = rng.standard_normal(3)
    got = vj.nn.bias_add(x, b3, data_format="NCHW").numpy()
    np.testing.assert_array_equal(got, x + b3[None, :, None, None])
    vj.testing.check_grads(lambda v, c: vj.nn.bias_add(v, c, data_format="NCHW"), [x, b3])
    with pytest.raises(ValueError, match="channels"):
        vj.nn.bias_add(x, b3)
