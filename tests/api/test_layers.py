"""vj.layers: Dense and BatchNormalization (shapes, Keras names, gradients, statistics)."""
import re

import numpy as np
import pytest

import vecjac as vj
from vecjac.layers import BatchNormalization, Dense, Sequential
from vecjac.testing import check_grads, numerical_jacobian

RNG = np.random.default_rng(3)


def _suffix_name(name, base):
    return re.fullmatch(rf"{base}(_\d+)?", name) is not None


# -- Dense ------------------------------------------------------------------------------------
@pytest.mark.parametrize("in_shape, units", [((4,), 3), ((5, 4), 3), ((2, 5, 4), 1)])
def test_dense_shapes_and_values(in_shape, units):
    layer = Dense(units)
    assert layer.trainable_variables == [] and not layer.built
    x = RNG.standard_normal(in_shape)
    y = layer(x)
    assert y.shape == in_shape[:-1] + (units,) and layer.built
    assert layer.kernel.shape == (in_shape[-1], units) and layer.bias.shape == (units,)
    np.testing.assert_allclose(y.numpy(), x @ layer.kernel.numpy() + layer.bias.numpy(),
                               rtol=1e-12)


def test_dense_keras_names():
    first, second = Dense(2), Dense(2)
    first(np.ones((1, 3)))
    second(np.ones((1, 3)))
    assert _suffix_name(first.name, "dense") and _suffix_name(second.name, "dense")
    assert first.name != second.name
    assert [v.name for v in first.trainable_variables] == [
        f"{first.name}/kernel:0", f"{first.name}/bias:0"]
    assert first.trainable_variables[0] is first.kernel
    assert first.trainable_variables[1] is first.bias
    named = Dense(2, name="head")
    named(np.ones((1, 3)))
    assert named.kernel.name.startswith("head") and named.kernel.name.endswith("/kernel:0")


def test_dense_default_initializers():
    layer = Dense(50)
    layer(np.ones((1, 30)))
    limit = np.sqrt(6.0 / (30 + 50))  # glorot uniform
    k = layer.kernel.numpy()
    assert k.dtype == np.float64
    assert np.all(np.abs(k) <= limit) and k.std() > limit / 3  # really spread, not zeros
    np.testing.assert_array_equal(layer.bias.numpy(), np.zeros(50))
    he = Dense(200, kernel_initializer="he_normal")
    he(np.ones((1, 300)))
    k, std = he.kernel.numpy(), np.sqrt(2.0 / 300)
    assert abs(k.std() / std - 1) < 0.05 and np.abs(k).max() <= 2 * std / 0.8796 + 1e-12
    custom = Dense(2, kernel_initializer=lambda shape, dtype: np.full(shape, 0.5, dtype),
                   bias_initializer="ones")
    np.testing.assert_array_equal(custom(np.ones((1, 3))).numpy(), [[2.5, 2.5]])


@pytest.mark.parametrize("activation, fn", [
    ("relu", lambda z: np.maximum(z, 0)),
    ("tanh", np.tanh),
    ("sigmoid", lambda z: 1 / (1 + np.exp(-z))),
    ("elu", lambda z: np.where(z > 0, z, np.expm1(z))),
    ("softmax", lambda z: np.exp(z) / np.exp(z).sum(-1, keepdims=True)),
    ("linear", lambda z: z),
    (None, lambda z: z),
    (lambda t: t * t, lambda z: z * z),
])
def test_dense_activations(activation, fn):
    if isinstance(activation, str) and activation not in ("linear", "tanh") and not hasattr(
            vj.nn, activation):
        pytest.skip(f"vj.nn.{activation} is not available yet")
    layer = Dense(4, activation=activation)
    x = RNG.standard_normal((3, 5))
    y = layer(x)
    z = x @ layer.kernel.numpy() + layer.bias.numpy()
    np.testing.assert_allclose(y.numpy(), fn(z), rtol=1e-12, atol=1e-15)


def test_dense_without_bias():
    layer = Dense(3, use_bias=False)
    x = RNG.standard_normal((2, 4))
    y = layer(x)
    assert layer.bias is None and layer.trainable_variables == [layer.kernel]
    np.testing.assert_allclose(y.numpy(), x @ layer.kernel.numpy(), rtol=1e-12)


def test_dense_float32_follows_input():
    layer = Dense(2)
    y = layer(np.ones((1, 3), np.float32))
    assert layer.kernel.dtype == np.float32 and y.dtype == np.float32
    layer64 = Dense(2, dtype="float64")
    assert layer64(np.ones((1, 3), np.float32)).dtype == np.float64  # cast to the layer


def test_dense_gradients_tape_vs_finite_differences():
    layer = Dense(3, activation="tanh")
    x = RNG.standard_normal((4, 5))
    layer(x)
    k0, b0 = layer.kernel.numpy().copy(), layer.bias.numpy().copy()
    with vj.GradientTape() as tape:
        loss = vj.reduce_sum(layer(x) ** 2)
    gk, gb = tape.gradient(loss, layer.trainable_variables)

    def loss_np(k, b):
        return np.sum(np.tanh(x @ k + b) ** 2)
    np.testing.assert_allclose(gk.numpy(), numerical_jacobian(lambda k: loss_np(k, b0), k0),
                               rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(gb.numpy(), numerical_jacobian(lambda b: loss_np(k0, b), b0),
                               rtol=1e-6, atol=1e-8)
    # and with respect to the input, to second order
    check_grads(lambda t: layer(t), [x], order=2)


def test_dense_per_example_gradients_in_vectorized_map():
    layer = Dense(2, activation="tanh")
    xs = RNG.standard_normal((5, 3))
    layer(xs)

    def per_example(x):
        with vj.GradientTape() as tape:
            loss = vj.reduce_sum(layer(x) ** 2)
        return tape.gradient(loss, layer.kernel)
    per = vj.vectorized_map(per_example, vj.constant(xs))
    k, b = layer.kernel.numpy(), layer.bias.numpy()
    h = np.tanh(xs @ k + b)
    expected = np.einsum("ni,nj->nij", xs, 2 * h * (1 - h ** 2))
    np.testing.assert_allclose(per.numpy(), expected, rtol=1e-10)


@pytest.mark.parametrize("kwargs, err, match", [
    ({"units": 0}, ValueError, "units must be a positive int"),
    ({"units": 2, "activation": "swirl"}, ValueError, "unknown activation 'swirl'"),
    ({"units": 2, "activation": 3}, TypeError, "activation must be"),
    ({"units": 2, "kernel_initializer": "nope"}, ValueError, "unknown kernel_initializer"),
    ({"units": 2, "use_bias": "no"}, TypeError, "use_bias must be a bool"),
])
def test_dense_bad_arguments(kwargs, err, match):
    with pytest.raises(err, match=match):
        Dense(**kwargs)


def test_dense_input_dimension_mismatch():
    layer = Dense(2)
    layer(np.ones((1, 3)))
    with pytest.raises(ValueError, match=r"last dimension 3.*\(1, 4\)"):
        layer(np.ones((1, 4)))
    with pytest.raises(ValueError, match="rank >= 1"):
        Dense(2)(vj.constant(1.0))


# -- BatchNormalization ---------------------------------------------------------------------------
def _bn_np(x, mean, var, gamma, beta, eps, axis=-1):
    shape = [1] * x.ndim
    shape[axis] = x.shape[axis]
    r = lambda a: np.reshape(a, shape)  # noqa: E731
    return r(gamma) * (x - r(mean)) / np.sqrt(r(var) + eps) + r(beta)


def test_batchnorm_names_and_variables():
    bn = BatchNormalization()
    bn(np.ones((2, 3)))
    assert _suffix_name(bn.name, "batch_normalization")
    assert [v.name for v in bn.variables] == [f"{bn.name}/{n}:0" for n in (
        "gamma", "beta", "moving_mean", "moving_variance")]
    assert bn.trainable_variables == [bn.gamma, bn.beta]
    assert bn.non_trainable_variables == [bn.moving_mean, bn.moving_variance]


@pytest.mark.parametrize("shape, axis", [((8, 3), -1), ((6, 4, 2), 1), ((5, 2, 3), -1)])
def test_batchnorm_training_vs_inference(shape, axis):
    bn = BatchNormalization(axis=axis, momentum=0.9, epsilon=1e-3)
    x = RNG.standard_normal(shape) * 3.0 + 2.0
    ax = axis % len(shape)
    red = tuple(i for i in range(len(shape)) if i != ax)
    y_inf = bn(x)                         # fresh layer: moving stats 0 and 1
    n = shape[ax]
    np.testing.assert_allclose(y_inf.numpy(), x / np.sqrt(1 + 1e-3), rtol=1e-12)
    bn.gamma.assign(np.linspace(0.5, 2.0, n))
    bn.beta.assign(np.linspace(-1.0, 1.0, n))
    y_train = bn(x, training=True)
    mean, var = x.mean(axis=red), x.var(axis=red)
    np.testing.assert_allclose(
        y_train.numpy(), _bn_np(x, mean, var, bn.gamma.numpy(), bn.beta.numpy(), 1e-3, ax),
        rtol=1e-10, atol=1e-12)
    # moving stats moved towards the batch statistics
    np.testing.assert_allclose(bn.moving_mean.numpy(), 0.1 * mean, rtol=1e-12)
    np.testing.assert_allclose(bn.moving_variance.numpy(), 0.9 + 0.1 * var, rtol=1e-12)
    y_inf = bn(x, training=False)         # inference uses the moving statistics
    np.testing.assert_allclose(
        y_inf.numpy(), _bn_np(x, 0.1 * mean, 0.9 + 0.1 * var, bn.gamma.numpy(),
                              bn.beta.numpy(), 1e-3, ax), rtol=1e-10)
    np.testing.assert_allclose(bn.moving_mean.numpy(), 0.1 * mean, rtol=1e-12)  # unchanged


def test_batchnorm_moving_stats_converge():
    bn = BatchNormalization(momentum=0.5)
    x = RNG.standard_normal((10, 2)) * np.array([1.0, 4.0]) + np.array([3.0, -1.0])
    for _ in range(40):
        bn(x, training=True)
    np.testing.assert_allclose(bn.moving_mean.numpy(), x.mean(0), rtol=1e-9)
    np.testing.assert_allclose(bn.moving_variance.numpy(), x.var(0), rtol=1e-9)


def test_batchnorm_training_gradient_couples_examples():
    bn = BatchNormalization()
    x = RNG.standard_normal((5, 2))
    bn(x)
    xt = vj.constant(x)
    with vj.GradientTape(persistent=True) as tape:
        tape.watch(xt)
        y_train = bn(xt, training=True)
        y_inf = bn(xt, training=False)
    j_train = tape.jacobian(y_train, xt).numpy()
    j_inf = tape.jacobian(y_inf, xt).numpy()
    # training mode: output of example 0 depends on example 3 through the batch mean/var
    assert np.abs(j_train[0, :, 3, :]).max() > 1e-3
    assert np.abs(j_inf[0, :, 3, :]).max() == 0.0
    g, b = bn.gamma.numpy(), bn.beta.numpy()

    def f(flat):
        xx = flat.reshape(5, 2)
        return _bn_np(xx, xx.mean(0), xx.var(0), g, b, 1e-3)
    num = numerical_jacobian(f, x.reshape(-1)).reshape(5, 2, 5, 2)
    np.testing.assert_allclose(j_train, num, rtol=1e-6, atol=1e-8)
    # second order too (the batch statistics are differentiated, not stopped)
    check_grads(lambda t: bn(t, training=True), [x], order=2)


def test_batchnorm_gradients_for_gamma_and_beta():
    bn = BatchNormalization(epsilon=1e-2)
    x = RNG.standard_normal((6, 3))
    u = RNG.standard_normal((6, 3))
    with vj.GradientTape() as tape:
        loss = vj.reduce_sum(bn(x, training=True) * u)
    gg, gb = tape.gradient(loss, bn.trainable_variables)
    xhat = (x - x.mean(0)) / np.sqrt(x.var(0) + 1e-2)
    np.testing.assert_allclose(gg.numpy(), (u * xhat).sum(0), rtol=1e-10)
    np.testing.assert_allclose(gb.numpy(), u.sum(0), rtol=1e-12)


def test_batchnorm_center_scale_off_and_float32():
    bn = BatchNormalization(center=False, scale=False)
    y = bn(np.ones((4, 3), np.float32) * np.arange(4, dtype=np.float32)[:, None],
           training=True)
    assert bn.trainable_variables == [] and len(bn.variables) == 2
    assert y.dtype == np.float32 and bn.moving_mean.dtype == np.float32
    x = np.arange(4.0)
    np.testing.assert_allclose(y.numpy()[:, 0], (x - x.mean()) / np.sqrt(x.var() + 1e-3),
                               rtol=1e-5)


@pytest.mark.parametrize("kwargs, call, err, match", [
    ({"axis": 2}, {}, ValueError, "axis=2 is out of range"),
    ({"momentum": 1.5}, None, ValueError, "momentum must be in"),
    ({"epsilon": 0.0}, None, ValueError, "epsilon must be positive"),
    ({"axis": 0.5}, None, TypeError, "axis must be an int"),
    ({}, {"training": "yes"}, TypeError, "training must be a bool"),
])
def test_batchnorm_bad_arguments(kwargs, call, err, match):
    with pytest.raises(err, match=match):
        bn = BatchNormalization(**kwargs)
        bn(np.ones((3, 2)), **call)


def test_batchnorm_rank_mismatch_after_build():
    bn = BatchNormalization()
    bn(np.ones((3, 2)))
    with pytest.raises(ValueError, match="rank 2"):
        bn(np.ones((3, 2, 2)))
    with pytest.raises(ValueError, match="2 features"):
        bn(np.ones((3, 4)))


# -- Sequential ---------------------------------------------------------------------------
def test_sequential_collects_and_passes_training():
    model = Sequential([Dense(4, activation="tanh"), BatchNormalization(), Dense(1)])
    x = RNG.standard_normal((6, 3))
    y = model(x, training=True)
    assert y.shape == (6, 1)
    assert len(model.trainable_variables) == 6 and len(model.non_trainable_variables) == 2
    assert model.layers[1].moving_mean.numpy().any()  # training reached the BN layer
    with vj.GradientTape() as tape:
        loss = vj.reduce_sum(model(x, training=True) ** 2)
    grads = tape.gradient(loss, model.trainable_variables)
    assert all(g is not None and g.shape == v.shape
               for g, v in zip(grads, model.trainable_variables))
    with pytest.raises(TypeError, match=r"layers\[0\] must be callable"):
        Sequential([3])
