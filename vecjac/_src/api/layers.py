"""Keras-like layers: Dense, BatchNormalization, Sequential (enough for the guides).

Layers are vj.Modules that create their Variables on the first call, from the input's
last dimension, inside their name scope, so names follow Keras: the first Dense is
"dense" with variables "dense/kernel:0" and "dense/bias:0", the next "dense_1", ...
The default dtype is float64 (NumPy's rule, where Keras uses float32); a float32 input
to a layer built without `dtype` builds float32 variables.
"""
import functools
import math
import numbers

import numpy as np

from vecjac._src.core.dispatch import convert_to_tensor
from vecjac._src.core.tensor import Tensor
from vecjac._src.core.variables import Module, Variable
from vecjac._src.ops.array.shaping import reshape, stop_gradient
from vecjac._src.ops.elementwise.logic import cast
from vecjac._src.ops.elementwise.unary import exp, rsqrt, square, tanh
from vecjac._src.ops.linalg.products import matmul
from vecjac._src.ops.nn import activations as nn
from vecjac._src.ops.random import sampling as vj_random
from vecjac._src.ops.reduce.reductions import reduce_mean

__all__ = ["Layer", "Dense", "BatchNormalization", "Sequential"]


# -- initializers --------------------------------------------------------------------------


def _uniform(shape, limit, dtype):
    return np.array(vj_random.uniform(shape, minval=-limit, maxval=limit, dtype=dtype)._value)


def _normal(shape, stddev, dtype):
    """Normal draws truncated at two standard deviations (redrawn), as Keras does."""
    def draw(n):
        return np.array(vj_random.normal((n,), dtype=np.float64)._value).reshape(n)
    size = int(math.prod(shape))
    values = draw(size)
    bad = np.abs(values) > 2
    while bad.any():
        values[bad] = draw(int(bad.sum()))
        bad = np.abs(values) > 2
    return (values * stddev).reshape(shape).astype(dtype)


def _fans(shape):
    if len(shape) < 1:
        return 1, 1
    if len(shape) == 1:
        return shape[0], shape[0]
    receptive = int(math.prod(shape[:-2])) if len(shape) > 2 else 1
    return shape[-2] * receptive, shape[-1] * receptive


def _variance_scaling(scale, mode, distribution):
    def init(shape, dtype):
        fan_in, fan_out = _fans(shape)
        n = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2}[mode]
        var = scale / max(1.0, n)
        if distribution == "uniform":
            return _uniform(shape, math.sqrt(3 * var), dtype)
        return _normal(shape, math.sqrt(var) / 0.87962566103423978, dtype)
    return init


_INITIALIZERS = {
    "zeros": lambda shape, dtype: np.zeros(shape, dtype),
    "ones": lambda shape, dtype: np.ones(shape, dtype),
    "glorot_uniform": _variance_scaling(1.0, "fan_avg", "uniform"),
    "glorot_normal": _variance_scaling(1.0, "fan_avg", "normal"),
    "he_uniform": _variance_scaling(2.0, "fan_in", "uniform"),
    "he_normal": _variance_scaling(2.0, "fan_in", "normal"),
    "lecun_uniform": _variance_scaling(1.0, "fan_in", "uniform"),
    "lecun_normal": _variance_scaling(1.0, "fan_in", "normal"),
}


def _initializer(init, layer, arg):
    if isinstance(init, str):
        if init not in _INITIALIZERS:
            raise ValueError(f"{layer}: unknown {arg} {init!r}; expected one of "
                             f"{sorted(_INITIALIZERS)} or a callable (shape, dtype)")
        return _INITIALIZERS[init]
    if callable(init):
        return init
    raise TypeError(f"{layer}: {arg} must be a name or a callable (shape, dtype), "
                    f"got {type(init).__name__}")


def _initial_value(init, shape, dtype, layer, arg):
    value = np.asarray(init(shape, dtype=dtype))
    if value.shape != tuple(shape):
        raise ValueError(f"{layer}: {arg} returned shape {value.shape}, expected {shape}")
    return value.astype(dtype, copy=False)


# -- activations ---------------------------------------------------------------------------
# Resolved at call time from vj.nn (then vj.math), so that a layer made before an
# activation is registered (or patched) uses the current function.
_ACTIVATIONS = ("linear", "relu", "relu6", "elu", "selu", "gelu", "sigmoid", "tanh",
                "softmax", "log_softmax", "softplus", "softsign", "swish", "silu",
                "leaky_relu", "exponential")


def _check_activation(activation, layer):
    if activation is None or callable(activation):
        return activation
    if isinstance(activation, str):
        if activation not in _ACTIVATIONS:
            raise ValueError(f"{layer}: unknown activation {activation!r}; expected one of "
                             f"{list(_ACTIVATIONS)}, None or a callable")
        return activation
    raise TypeError(f"{layer}: activation must be a name, None or a callable, "
                    f"got {type(activation).__name__}")


def _activate(activation, x):
    if activation is None or activation == "linear":
        return x
    if callable(activation):
        return activation(x)
    if activation == "exponential":
        return exp(x)
    if activation == "tanh":
        return tanh(x)
    return getattr(nn, activation)(x)  # the other names are vj.nn's activations


# -- layers --------------------------------------------------------------------------------
class Layer(Module):
    """A Module built lazily on its first call: subclasses write build() and call().

    `variables`, `trainable_variables` and `non_trainable_variables` are lists (Keras),
    empty until the layer is built.
    """

    def __init__(self, name=None, dtype=None):
        super().__init__(name=name)
        if dtype is not None:
            dtype = np.dtype(dtype)
            if dtype.kind != "f":
                raise TypeError(f"{type(self).__name__}: dtype must be floating, got {dtype}")
        self._dtype = dtype
        self.built = False

    @property
    def dtype(self):
        return self._dtype

    def __init_subclass__(cls, **kwargs):
        # a layer's build, called by its first call or explicitly (layer.build(shape), as
        # in Keras), creates its weights once, in its name scope
        super().__init_subclass__(**kwargs)
        if "build" in vars(cls):
            own_build = cls.build

            @functools.wraps(own_build)
            def build(self, input_shape):
                if self._dtype is None:
                    self._dtype = np.dtype(np.float64)
                with self.name_scope():
                    own_build(self, input_shape)
                self.built = True
            cls.build = build

    def _prepare(self, inputs):
        x = inputs if isinstance(inputs, Tensor) else convert_to_tensor(inputs)
        if not self.built:
            if self._dtype is None:
                self._dtype = x.dtype if x.dtype.kind == "f" else np.dtype(np.float64)
            self.build(x.shape)
        if x.dtype != self._dtype:
            x = cast(x, self._dtype)  # Keras casts inputs to the layer's dtype
        return x

    def build(self, input_shape):
        pass

    def _add_weight(self, name, shape, init, trainable, arg):
        value = _initial_value(init, shape, self._dtype, type(self).__name__, arg)
        return Variable(value, trainable=trainable, name=name)

    @property
    def variables(self):
        return list(super().variables)

    @property
    def trainable_variables(self):
        return list(super().trainable_variables)

    @property
    def non_trainable_variables(self):
        return list(super().non_trainable_variables)

    @property
    def weights(self):
        return self.trainable_variables + self.non_trainable_variables


class Dense(Layer):
    """Fully connected layer: activation(inputs @ kernel + bias) (Keras' Dense).

    `kernel` has shape (inputs.shape[-1], units) and `bias` (units,). Inputs of any
    rank >= 1 work on their last axis; output shape inputs.shape[:-1] + (units,).
    `activation` is None/"linear", a name ("relu", "tanh", "sigmoid", "softmax", ...)
    or a callable.

    >>> layer = vj.layers.Dense(3, activation="relu")
    >>> layer(vj.ones((2, 4))).shape
    (2, 3)
    >>> [v.name for v in layer.trainable_variables]   # doctest: +SKIP
    ['dense/kernel:0', 'dense/bias:0']
    """

    def __init__(self, units, activation=None, use_bias=True,
                 kernel_initializer="glorot_uniform", bias_initializer="zeros",
                 dtype=None, name=None):
        if not isinstance(units, numbers.Integral) or isinstance(units, bool) or units < 1:
            raise ValueError(f"Dense: units must be a positive int, got {units!r}")
        if not isinstance(use_bias, (bool, np.bool_)):
            raise TypeError(f"Dense: use_bias must be a bool, got {use_bias!r}")
        self.units = int(units)
        self.activation = _check_activation(activation, "Dense")
        self.use_bias = bool(use_bias)
        self._kernel_init = _initializer(kernel_initializer, "Dense", "kernel_initializer")
        self._bias_init = _initializer(bias_initializer, "Dense", "bias_initializer")
        self.kernel = None   # created before bias, so trainable_variables = [kernel, bias]
        self.bias = None
        super().__init__(name=name, dtype=dtype)

    def build(self, input_shape):
        if len(input_shape) < 1:
            raise ValueError(f"Dense: inputs must have rank >= 1, got shape {input_shape}")
        n_in = input_shape[-1]
        self.kernel = self._add_weight("kernel", (n_in, self.units), self._kernel_init,
                                       True, "kernel_initializer")
        if self.use_bias:
            self.bias = self._add_weight("bias", (self.units,), self._bias_init, True,
                                         "bias_initializer")

    def __call__(self, inputs):
        x = self._prepare(inputs)
        if x.ndim < 1 or x.shape[-1] != self.kernel.shape[0]:
            raise ValueError(f"Dense {self.name}: inputs must have last dimension "
                             f"{self.kernel.shape[0]} (the layer is built for it), got "
                             f"shape {x.shape}")
        y = matmul(x, self.kernel)
        if self.bias is not None:
            y = y + self.bias
        return _activate(self.activation, y)


class BatchNormalization(Layer):
    """Normalizes over every axis but `axis` (Keras' BatchNormalization).

    `__call__(x, training=False)`: with training=True, uses the batch mean and variance
    over all axes except `axis` (which couples the examples of the batch, in values
    and gradients) and moves `moving_mean`/`moving_variance` towards them
    (moving = momentum * moving + (1 - momentum) * batch, with the batch's biased
    variance, as Keras' non-fused path); with training=False, uses the moving
    statistics. Output: gamma * (x - mean) / sqrt(variance + epsilon) + beta, x.shape.
    """

    def __init__(self, axis=-1, momentum=0.99, epsilon=1e-3, center=True, scale=True,
                 beta_initializer="zeros", gamma_initializer="ones",
                 moving_mean_initializer="zeros", moving_variance_initializer="ones",
                 dtype=None, name=None):
        if not isinstance(axis, numbers.Integral) or isinstance(axis, bool):
            raise TypeError(f"BatchNormalization: axis must be an int, got {axis!r}")
        for arg, v in (("momentum", momentum), ("epsilon", epsilon)):
            if not isinstance(v, numbers.Real) or isinstance(v, bool):
                raise TypeError(f"BatchNormalization: {arg} must be a real number, got {v!r}")
        if not 0 <= momentum <= 1:
            raise ValueError(f"BatchNormalization: momentum must be in [0, 1], got {momentum}")
        if epsilon <= 0:
            raise ValueError(f"BatchNormalization: epsilon must be positive, got {epsilon}")
        self.axis = int(axis)
        self.momentum = float(momentum)
        self.epsilon = float(epsilon)
        self.center = bool(center)
        self.scale = bool(scale)
        self._inits = {k: _initializer(v, "BatchNormalization", f"{k}_initializer")
                       for k, v in (("gamma", gamma_initializer), ("beta", beta_initializer),
                                    ("moving_mean", moving_mean_initializer),
                                    ("moving_variance", moving_variance_initializer))}
        self.gamma = None   # Keras' order: gamma, beta, moving_mean, moving_variance
        self.beta = None
        self.moving_mean = None
        self.moving_variance = None
        super().__init__(name=name, dtype=dtype)

    def _axis(self, rank):
        if not -rank <= self.axis < rank:
            raise ValueError(f"BatchNormalization: axis={self.axis} is out of range for "
                             f"inputs of rank {rank}")
        return self.axis % rank

    def build(self, input_shape):
        self._rank = len(input_shape)
        ax = self._axis(self._rank)
        shape = (input_shape[ax],)
        if self.scale:
            self.gamma = self._add_weight("gamma", shape, self._inits["gamma"], True,
                                          "gamma_initializer")
        if self.center:
            self.beta = self._add_weight("beta", shape, self._inits["beta"], True,
                                         "beta_initializer")
        self.moving_mean = self._add_weight("moving_mean", shape, self._inits["moving_mean"],
                                            False, "moving_mean_initializer")
        self.moving_variance = self._add_weight(
            "moving_variance", shape, self._inits["moving_variance"], False,
            "moving_variance_initializer")

    def __call__(self, inputs, training=False):
        if training is None:
            training = False
        if not isinstance(training, (bool, np.bool_)):
            raise TypeError(f"BatchNormalization: training must be a bool, got {training!r}")
        x = self._prepare(inputs)
        if x.ndim != self._rank:
            raise ValueError(f"BatchNormalization {self.name}: inputs must have rank "
                             f"{self._rank} (the layer is built for it), got shape {x.shape}")
        ax = self._axis(x.ndim)
        if x.shape[ax] != self.moving_mean.shape[0]:
            raise ValueError(f"BatchNormalization {self.name}: inputs must have "
                             f"{self.moving_mean.shape[0]} features on axis {self.axis}, "
                             f"got shape {x.shape}")
        param_shape = tuple(d if i == ax else 1 for i, d in enumerate(x.shape))
        if training:
            axes = tuple(i for i in range(x.ndim) if i != ax)
            mean = reduce_mean(x, axis=axes, keepdims=True)
            variance = reduce_mean(square(x - mean), axis=axes, keepdims=True)
            m = self.momentum
            # the update is an assignment, not part of the differentiated computation
            self.moving_mean.assign(self.moving_mean * m + reshape(
                stop_gradient(mean), self.moving_mean.shape) * (1 - m))
            self.moving_variance.assign(self.moving_variance * m + reshape(
                stop_gradient(variance), self.moving_variance.shape) * (1 - m))
        else:
            mean = reshape(self.moving_mean, param_shape)
            variance = reshape(self.moving_variance, param_shape)
        inv = rsqrt(variance + self.epsilon)
        if self.gamma is not None:
            inv = inv * reshape(self.gamma, param_shape)
        y = (x - mean) * inv
        if self.beta is not None:
            y = y + reshape(self.beta, param_shape)
        return y


class Sequential(Layer):
    """Calls its layers in order; `training` is passed to layers that take it."""

    def __init__(self, layers=None, name=None):
        layers = list(layers or [])
        for k, layer in enumerate(layers):
            if not callable(layer):
                raise TypeError(f"Sequential: layers[{k}] must be callable, got "
                                f"{type(layer).__name__}")
        self.layers = layers
        super().__init__(name=name)

    def add(self, layer):
        if not callable(layer):
            raise TypeError(f"Sequential.add: layer must be callable, got "
                            f"{type(layer).__name__}")
        self.layers.append(layer)

    def __call__(self, inputs, training=False):
        x = inputs
        for layer in self.layers:
            x = layer(x, training=training) if isinstance(layer, BatchNormalization) else (
                layer(x))
        return x
