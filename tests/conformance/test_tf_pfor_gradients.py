"""TensorFlow's Jacobian tests for pfor, tensorflow/python/ops/parallel_for/gradients_test.py
(class GradientsTest and its model helpers, the TF 2.x version with the scan, while_loop,
parallel_iterations and embedding-lookup cases), ported to vecjac: `tf.` -> `vj.`.

TF's parallel_for.gradients.jacobian / batch_jacobian(output, inp, use_pfor) become
GradientTape.jacobian / batch_jacobian(target, source, experimental_use_pfor) (TF's tape
methods of the same names, which vecjac mirrors); control_flow_ops.pfor / for_loop become
vj.vectorize.pfor / vj.vectorize.for_loop, and a per-iteration fallback of pfor
(FallbackWarning) is an error in this file. As in TF, every result computed with pfor is
compared with the same result computed by a loop (experimental_use_pfor=False, or
for_loop). Since both run through vecjac, each is also compared with a value computed
without vecjac's derivatives: a closed form, or central differences of a plain NumPy
forward pass (the dense and LSTM models have one below) or, for the convolutional MNIST
model, of vecjac's forward pass run on perturbed weights (directional differences: its
parameters are too many for a full finite-difference Jacobian).

Adapted:
- tf_layers.Dense -> vj.layers.Dense. rnn_cell.BasicLSTMCell, rnn.dynamic_rnn, the Keras
  Conv2D / MaxPooling2D / Dropout layers of the MNIST model and functional_ops.scan have no
  vecjac counterpart; they are written here from vj ops (BasicLSTMCell's gates i, j, f, o
  with forget_bias 1; dynamic_rnn and scan as a vj.while_loop writing each step into a
  buffer with vj.tensor_scatter_nd_update, TensorArray's role). Dropout runs with
  training=False in both TF tests, where it is the identity, so it is left out.
- variables.trainable_variables() -> the model's vj.Module.trainable_variables. TF builds
  the layers' variables in the graph before running; here the models are called once
  before the pfor (a Variable is created outside vectorized code).
- Python floats: float64 here (TF float32), so the finite differences are meaningful;
  tolerances are tighter than TF's 1e-4 / 1e-3 accordingly.
- The dense relu models (fc tests) get small random biases instead of Keras' zeros, see
  small_random_bias; the MNIST model keeps zero biases.
- Beyond TF: the dynamic LSTM's batch Jacobian by the loop too, and the LSTM batch
  Hessian with two nested loops (TF's TODOs say neither worked there), and value checks
  of the scan and while_loop Jacobians whose shapes TF checks.
- test_no_path: parallel_for's batch_jacobian returns None for an unconnected output, but
  TF's GradientTape.batch_jacobian (the API vecjac mirrors) returns zeros of the result
  shape; the port asserts the tape's behaviour (None from jacobian, zeros from
  batch_jacobian).
- test_jacobian_unknown_shape, test_batch_jacobian_unknown_shape,
  test_batch_jacobian_bad_unknown_shapes: placeholders with unknown shapes and a
  session -> vj.function with input_signature=[vj.TensorSpec([None, None])] /
  TensorSpec(None), fed the same values. The bad-shape case raises vecjac's ValueError
  at the call, where TF's run-time assertion raises InvalidArgumentError.
- test_mnist_per_eg_grad / test_mnist_per_eg_jacobian run both of TF's layouts
  (channels_last is TF's CPU choice, channels_first its GPU one). The per-example
  Jacobian test cuts fc1 from 1024 to 64 units: with 1024 its Jacobian has 65 M entries
  per method (0.5 GB in float64, over 2 GB peak for the test); the per-example gradient
  test keeps TF's sizes.

Not ported:
- GradientsBenchmarks (benchmark_fc_batch_jacobian, benchmark_lstm_batch_jacobian,
  benchmark_lstm_hessian, benchmark_lstm_batch_hessian, benchmark_fc_per_eg_grad,
  benchmark_lstm_per_eg_grad, benchmark_mnist_per_eg_grad,
  benchmark_mnist_per_eg_jacobian, benchmark_fc_per_eg_jacobian): session timing
  benchmarks, not tests (vecjac's own are benchmarks/jacobians.py).
- The TF_ENABLE_WINOGRAD_NONFUSED environment switch of the MNIST tests: a cuDNN
  algorithm choice on GPUs.
"""
import collections
import contextlib
import functools

import numpy as np
import pytest

import vecjac as vj
from vecjac.testing import numerical_jacobian

# pfor must vectorize every op here: a per-iteration fallback would make pfor the loop
pytestmark = pytest.mark.filterwarnings("error::vecjac.vectorize.FallbackWarning")

USE_PFOR = pytest.mark.parametrize("use_pfor", [True, False], ids=["pfor", "loop"])
DATA_FORMATS = pytest.mark.parametrize("data_format", ["channels_last", "channels_first"])


@pytest.fixture(autouse=True)
def _seed():
    vj.random.set_seed(0)
    np.random.seed(0)


def c(x, dtype=np.float64):
    return vj.constant(np.asarray(x, dtype=dtype))


def num(t):
    return np.asarray(t.numpy() if hasattr(t, "numpy") else t)


def assert_all_close(actual, expected, rtol=1e-7, atol=1e-9):
    """TF's run_and_assert_equal: two nests of results, leaf by leaf."""
    actual, expected = vj.nest.flatten(actual), vj.nest.flatten(expected)
    assert len(actual) == len(expected)
    for a, e in zip(actual, expected):
        a, e = num(a), num(e)
        assert a.shape == e.shape
        np.testing.assert_allclose(a, e, rtol=rtol, atol=atol)


def fd_hessian(f, x, eps=1e-4):
    """Central differences of central differences: f(x).shape + x.shape + x.shape."""
    return numerical_jacobian(lambda z: numerical_jacobian(f, z, eps), x, eps)


def small_random_bias(shape, dtype):
    """Bias initializer for the relu models checked by finite differences: with Keras'
    zero biases, a layer whose inputs are all zero sits exactly on relu's kink, where
    central differences measure half the slope (TF's gradient takes relu'(0) = 0)."""
    return vj.random.uniform(shape, -0.1, 0.1, dtype=dtype).numpy()


def l2_loss(t):
    return vj.reduce_sum(vj.square(t)) / 2.


def sigmoid(z):
    return 1. / (1. + np.exp(-z))


@contextlib.contextmanager
def shifted(variables, deltas):
    """Temporarily adds deltas to the Variables' values (for directional differences)."""
    saved = [num(v).copy() for v in variables]
    for v, s, d in zip(variables, saved, deltas):
        v.assign(s + d)
    try:
        yield
    finally:
        for v, s in zip(variables, saved):
            v.assign(s)


def unit_direction(rng, variables, k):
    """A random unit direction in the k-th Variable, zero in the others. One variable at a
    time and a unit length keep the differences' steps small enough (1e-6 in all) that no
    relu or max-pool kink of the MNIST model falls inside them (a step of 1e-6 in every
    one of its 3 M weights crosses several)."""
    directions = [np.zeros(u.shape) for u in variables]
    d = rng.standard_normal(variables[k].shape)
    directions[k] = d / np.linalg.norm(d)
    return directions


def directional_fd(f, variables, directions, eps=1e-6):
    """(f(w + eps d) - f(w - eps d)) / (2 eps) for NumPy-valued f of the Variables."""
    with shifted(variables, [eps * d for d in directions]):
        plus = np.asarray(f(), dtype=np.float64)
    with shifted(variables, [-eps * d for d in directions]):
        minus = np.asarray(f(), dtype=np.float64)
    return (plus - minus) / (2 * eps)


# == Models ==================================================================================
class FullyConnectedModel(vj.Module):

    def __init__(self, activation_size, num_layers):
        super().__init__()
        self.dense_layers = [vj.layers.Dense(activation_size, activation=vj.nn.relu,
                                             bias_initializer=small_random_bias)
                             for _ in range(num_layers)]

    def __call__(self, inp):
        activation = inp
        for layer in self.dense_layers:
            activation = layer(activation)
        return activation


def np_dense(x, kernel, bias, relu=True):
    y = x @ kernel + bias
    return np.maximum(y, 0.) if relu else y


def np_fc(x, weights):
    """NumPy forward pass of FullyConnectedModel; weights: (kernel, bias) per layer."""
    for kernel, bias in zip(weights[::2], weights[1::2]):
        x = np_dense(x, kernel, bias)
    return x


def fully_connected_model_fn(tape, batch_size, activation_size, num_layers):
    model = FullyConnectedModel(activation_size, num_layers)
    inp = vj.random.normal([batch_size, activation_size])
    tape.watch(inp)
    return model, inp, model(inp)


LSTMStateTuple = collections.namedtuple("LSTMStateTuple", ["c", "h"])


class BasicLSTMCell(vj.Module):
    """TF's BasicLSTMCell: z = [x, h] @ kernel + bias split into gates i, j, f, o;
    c' = c * sigmoid(f + forget_bias) + sigmoid(i) * tanh(j); h' = tanh(c') * sigmoid(o)."""

    def __init__(self, num_units, forget_bias=1.0):
        super().__init__()
        self.num_units, self.forget_bias = num_units, forget_bias
        self.kernel = self.bias = None

    def zero_state(self, batch_size, dtype=vj.float64):
        return LSTMStateTuple(vj.zeros([batch_size, self.num_units], dtype),
                              vj.zeros([batch_size, self.num_units], dtype))

    def __call__(self, inputs, state):
        if self.kernel is None:
            rows, cols = inputs.shape[-1] + self.num_units, 4 * self.num_units
            limit = np.sqrt(6. / (rows + cols))
            self.kernel = vj.Variable(vj.random.uniform([rows, cols], -limit, limit),
                                      name="kernel")
            self.bias = vj.Variable(np.zeros(cols), name="bias")
        z = vj.matmul(vj.concat([inputs, state.h], axis=1), self.kernel) + self.bias
        i, j, f, o = vj.split(z, 4, axis=1)
        new_c = (state.c * vj.sigmoid(f + self.forget_bias)
                 + vj.sigmoid(i) * vj.tanh(j))
        new_h = vj.tanh(new_c) * vj.sigmoid(o)
        return new_h, LSTMStateTuple(new_c, new_h)


def np_lstm_cell(x, c, h, kernel, bias, forget_bias=1.0):
    i, j, f, o = np.split(np.concatenate([x, h], axis=1) @ kernel + bias, 4, axis=1)
    new_c = c * sigmoid(f + forget_bias) + sigmoid(i) * np.tanh(j)
    return new_c, np.tanh(new_c) * sigmoid(o)


def np_lstm(inputs, c, h, kernel, bias):
    for x in inputs:
        c, h = np_lstm_cell(x, c, h, kernel, bias)
    return c, h


def lstm_model_fn(tapes, batch_size, state_size, steps, inputs_size=None):
    """The LSTM's final c from its initial c, which each of `tapes` watches."""
    inputs_size = inputs_size or state_size
    inputs = [vj.random.normal([batch_size, inputs_size]) for _ in range(steps)]
    cell = BasicLSTMCell(state_size)
    init_state = cell.zero_state(batch_size)
    for tape in tapes:
        tape.watch(init_state.c)
    state = init_state
    for inp in inputs:
        _, state = cell(inp, state)
    return cell, inputs, init_state.c, state.c


def dynamic_rnn(cell, inputs, sequence_length, initial_state):
    """rnn.dynamic_rnn, batch-major: past an example's length its state is carried over
    and its output is zero."""
    batch_size, max_steps = inputs.shape[0], inputs.shape[1]
    outputs = vj.zeros([max_steps, batch_size, cell.num_units], inputs.dtype)

    def body(time, state, outputs):
        output, new_state = cell(vj.gather(inputs, time, axis=1), state)
        alive = vj.expand_dims(time < sequence_length, 1)
        state = LSTMStateTuple(*(vj.where(alive, n, o) for n, o in zip(new_state, state)))
        output = vj.where(alive, output, vj.zeros_like(output))
        outputs = vj.tensor_scatter_nd_update(outputs, vj.reshape(time, [1, 1]),
                                              vj.expand_dims(output, 0))
        return time + 1, state, outputs

    _, final_state, outputs = vj.while_loop(
        lambda time, *_: time < max_steps, body, [vj.constant(0), initial_state, outputs])
    return vj.transpose(outputs, [1, 0, 2]), final_state


def np_dynamic_lstm(inputs, sequence_length, kernel, bias, units):
    c = np.zeros((inputs.shape[0], units))
    h = np.zeros_like(c)
    for t in range(inputs.shape[1]):
        new_c, new_h = np_lstm_cell(inputs[:, t], c, h, kernel, bias)
        alive = (t < sequence_length)[:, None]
        c, h = np.where(alive, new_c, c), np.where(alive, new_h, h)
    return c


def dynamic_lstm_model_fn(tape, batch_size, state_size, max_steps):
    # constant inputs and lengths, as in TF (there: so that session runs agree)
    inputs = c(np.random.rand(batch_size, max_steps, state_size))
    sequence_length = c(np.random.randint(0, size=[batch_size], high=max_steps + 1),
                        np.int64)
    tape.watch(inputs)
    cell = BasicLSTMCell(state_size)
    initial_state = cell.zero_state(batch_size)
    return cell, inputs, sequence_length, dynamic_rnn(
        cell, inputs, sequence_length=sequence_length, initial_state=initial_state)


class Conv2D(vj.Module):
    """Keras Conv2D(filters, kernel_size, padding="same", data_format, activation)."""

    def __init__(self, filters, kernel_size, data_format, activation=None):
        super().__init__()
        self.filters, self.kernel_size, self.activation = filters, kernel_size, activation
        self.layout = "NHWC" if data_format == "channels_last" else "NCHW"
        self.kernel = self.bias = None

    def __call__(self, x):
        if self.kernel is None:
            cin = x.shape[-1] if self.layout == "NHWC" else x.shape[1]
            shape = [self.kernel_size, self.kernel_size, cin, self.filters]
            limit = np.sqrt(6. / (self.kernel_size ** 2 * (cin + self.filters)))
            self.kernel = vj.Variable(vj.random.uniform(shape, -limit, limit), name="kernel")
            self.bias = vj.Variable(np.zeros(self.filters), name="bias")
        y = vj.nn.conv2d(x, self.kernel, strides=1, padding="SAME", data_format=self.layout)
        y = y + (self.bias if self.layout == "NHWC" else vj.reshape(self.bias, [-1, 1, 1]))
        return self.activation(y) if self.activation else y


class Mnist(vj.Module):
    """TF's test copy of the official MNIST model (dropout omitted: training=False)."""

    def __init__(self, data_format, fc1_units=1024):
        super().__init__()
        if data_format == "channels_first":
            self._input_shape = [-1, 1, 28, 28]
        else:
            assert data_format == "channels_last"
            self._input_shape = [-1, 28, 28, 1]
        self.layout = "NHWC" if data_format == "channels_last" else "NCHW"
        self.conv1 = Conv2D(32, 5, data_format, activation=vj.nn.relu)
        self.conv2 = Conv2D(64, 5, data_format, activation=vj.nn.relu)
        self.fc1 = vj.layers.Dense(fc1_units, activation=vj.nn.relu)
        self.fc2 = vj.layers.Dense(10)

    def max_pool2d(self, y):
        return vj.nn.max_pool2d(y, ksize=2, strides=2, padding="SAME", data_format=self.layout)

    def __call__(self, inputs, training):
        assert not training  # TF's tests only run the model with training=False
        y = vj.reshape(inputs, self._input_shape)
        y = self.max_pool2d(self.conv1(y))
        y = self.max_pool2d(self.conv2(y))
        y = vj.reshape(y, [y.shape[0], -1])
        return self.fc2(self.fc1(y))


# == create_* helpers: (pfor result, loop result, what the reference needs) ================
def create_fc_batch_jacobian(batch_size, activation_size, num_layers):
    with vj.GradientTape(persistent=True) as tape:
        model, inp, output = fully_connected_model_fn(tape, batch_size, activation_size,
                                                      num_layers)
    pfor_jacobian = tape.batch_jacobian(output, inp, experimental_use_pfor=True)
    while_jacobian = tape.batch_jacobian(output, inp, experimental_use_pfor=False)
    return pfor_jacobian, while_jacobian, (model, inp)


def create_lstm_batch_jacobian(batch_size, state_size, steps, inputs_size=None):
    with vj.GradientTape(persistent=True) as tape:
        cell, inputs, inp, output = lstm_model_fn([tape], batch_size, state_size, steps,
                                                  inputs_size)
    pfor_jacobian = tape.batch_jacobian(output, inp, experimental_use_pfor=True)
    while_jacobian = tape.batch_jacobian(output, inp, experimental_use_pfor=False)
    return pfor_jacobian, while_jacobian, (cell, inputs)


def create_dynamic_lstm_batch_jacobian(batch_size, state_size, max_steps):
    with vj.GradientTape(persistent=True) as tape:
        cell, inp, lengths, (_, final_state) = dynamic_lstm_model_fn(
            tape, batch_size, state_size, max_steps)
        columns = [vj.gather(final_state.c, i, axis=1) for i in range(state_size)]
    pfor_jacobian = tape.batch_jacobian(final_state.c, inp, experimental_use_pfor=True)
    # TF's while_loop Jacobian could not run through dynamic_rnn: one gradient per column
    while_gradients = [tape.gradient(column, inp) for column in columns]
    # vecjac's can (beyond TF)
    loop_jacobian = tape.batch_jacobian(final_state.c, inp, experimental_use_pfor=False)
    return pfor_jacobian, while_gradients, (cell, inp, lengths, loop_jacobian)


def create_lstm_batch_hessian(batch_size, state_size, steps):
    with vj.GradientTape(persistent=True) as outer:
        with vj.GradientTape() as inner:
            cell, inputs, inp, output = lstm_model_fn([outer, inner], batch_size,
                                                      state_size, steps)
        pfor_jacobian = inner.batch_jacobian(output, inp, experimental_use_pfor=True)
        pfor_jacobian = vj.reshape(pfor_jacobian, [batch_size, -1])
    pfor_hessian = outer.batch_jacobian(pfor_jacobian, inp, experimental_use_pfor=True)
    while_hessian = outer.batch_jacobian(pfor_jacobian, inp, experimental_use_pfor=False)
    return pfor_hessian, while_hessian, (cell, inputs, inp)


def create_lstm_hessian(batch_size, state_size, steps):
    with vj.GradientTape(persistent=True) as outer:
        with vj.GradientTape() as inner:
            cell, inputs, _, output = lstm_model_fn([inner], batch_size, state_size, steps)
        weights = cell.trainable_variables
        pfor_jacobians = inner.jacobian(output, weights, experimental_use_pfor=True)
    pfor_hessians = [outer.jacobian(x, weights, experimental_use_pfor=True)
                     for x in pfor_jacobians]
    while_hessians = [outer.jacobian(x, weights, experimental_use_pfor=False)
                      for x in pfor_jacobians]
    return pfor_hessians, while_hessians, (cell, inputs)


def create_fc_per_eg_grad(batch_size, activation_size, num_layers):
    inp = vj.random.normal([batch_size, activation_size])
    layers = [vj.layers.Dense(activation_size, activation=vj.nn.relu,
                              bias_initializer=small_random_bias)
              for _ in range(num_layers)]
    projection = vj.layers.Dense(1, bias_initializer=small_random_bias)

    def forward(activation):
        for layer in layers:
            activation = layer(activation)
        return l2_loss(projection(activation))

    forward(inp[:1])  # builds the variables
    variables = [v for layer in layers + [projection] for v in layer.trainable_variables]

    def loop_fn(i):
        with vj.GradientTape() as tape:
            loss = forward(vj.expand_dims(vj.gather(inp, i), 0))
        return tape.gradient(loss, variables)

    pfor_outputs = vj.vectorize.pfor(loop_fn, batch_size)
    while_outputs = vj.vectorize.for_loop(loop_fn, batch_size)
    return pfor_outputs, while_outputs, (inp, variables)


def create_lstm_per_eg_grad(batch_size, state_size, steps):
    inputs = [vj.random.normal([batch_size, state_size]) for _ in range(steps)]
    cell = BasicLSTMCell(state_size)
    init_state = cell.zero_state(batch_size)

    def model_fn(inps, state):
        with vj.GradientTape() as tape:
            for inp in inps:
                _, state = cell(inp, state)
            output = l2_loss(state.c)
        return tape.gradient(output, cell.trainable_variables)

    model_fn(inputs, init_state)  # builds the variables

    def loop_fn(i):
        loop_inputs = [vj.expand_dims(vj.gather(x, i), 0) for x in inputs]
        loop_init_state = LSTMStateTuple(
            *[vj.expand_dims(vj.gather(x, i), 0) for x in init_state])
        return model_fn(loop_inputs, loop_init_state)

    pfor_outputs = vj.vectorize.pfor(loop_fn, batch_size)
    while_outputs = vj.vectorize.for_loop(loop_fn, batch_size)
    return pfor_outputs, while_outputs, (cell, inputs)


def create_mnist_per_eg_grad(batch_size, data_format, training):
    images = vj.random.uniform([batch_size, 28, 28])
    sparse_labels = np.random.randint(low=0, high=10, size=[batch_size])
    labels = np.zeros((batch_size, 10))
    labels[np.arange(batch_size), sparse_labels] = 1.
    model = Mnist(data_format)
    model(images[:1], training=training)  # builds the variables

    def loop_fn(i):
        image = vj.gather(images, i)
        label = vj.gather(c(labels), i)
        with vj.GradientTape() as tape:
            logits = vj.reshape(model(image, training=training), [-1])
            loss = vj.nn.softmax_cross_entropy_with_logits(labels=label, logits=logits)
        return tape.gradient(loss, model.trainable_variables)

    pfor_outputs = vj.vectorize.pfor(loop_fn, batch_size)
    while_outputs = vj.vectorize.for_loop(loop_fn, batch_size)
    return pfor_outputs, while_outputs, (model, images, labels)


def create_mnist_per_eg_jacobian(batch_size, data_format, training, fc1_units=1024):
    images = vj.random.uniform([batch_size, 28, 28])
    model = Mnist(data_format, fc1_units)
    model(images[:1], training=training)  # builds the variables

    def loop_fn(i, use_pfor):
        image = vj.gather(images, i)
        with vj.GradientTape(persistent=not use_pfor) as tape:
            logits = vj.reshape(model(image, training=training), [-1])
        return tape.jacobian(logits, model.trainable_variables,
                             experimental_use_pfor=use_pfor)

    pfor_outputs = vj.vectorize.pfor(functools.partial(loop_fn, use_pfor=True), batch_size)
    while_outputs = vj.vectorize.for_loop(functools.partial(loop_fn, use_pfor=False),
                                          batch_size)
    return pfor_outputs, while_outputs, (model, images)


def create_fc_per_eg_jacobians(batch_size, activation_size, num_layers):
    model = FullyConnectedModel(activation_size=activation_size, num_layers=num_layers)
    inp = vj.random.normal([batch_size, activation_size])
    with vj.GradientTape() as tape:
        output = model(inp)
    variables = model.trainable_variables
    jacobians = tape.jacobian(output, variables)

    def loop_fn(i, use_pfor):
        with vj.GradientTape(persistent=not use_pfor) as tape:
            inp_i = vj.expand_dims(vj.gather(inp, i), 0)
            output = vj.reshape(model(inp_i), [-1])
        return tape.jacobian(output, variables, experimental_use_pfor=use_pfor)

    per_eg_jacobians_pfor = vj.vectorize.pfor(functools.partial(loop_fn, use_pfor=True),
                                              batch_size)
    per_eg_jacobians_while = vj.vectorize.for_loop(
        functools.partial(loop_fn, use_pfor=False), batch_size)
    return jacobians, per_eg_jacobians_pfor, per_eg_jacobians_while, (model, inp)


# == GradientsTest ===========================================================================
@USE_PFOR
def test_no_path(use_pfor):
    x = c([[1.0]])
    y = c([[2.0]])
    with vj.GradientTape(persistent=True) as tape:
        tape.watch(x)
    assert tape.jacobian(y, x, experimental_use_pfor=use_pfor) is None
    # GradientTape.batch_jacobian: zeros of the result shape (parallel_for's: None)
    batch_jacobian = tape.batch_jacobian(y, x, experimental_use_pfor=use_pfor)
    assert batch_jacobian.shape == (1, 1, 1) and not num(batch_jacobian).any()


def _xtx_jacobian(x):
    """d(x^T x)_ij / dx_kl = delta_jl x_ki + delta_il x_kj."""
    n = x.shape[1]
    eye = np.eye(n)
    return (np.einsum("jl,ki->ijkl", eye, x) + np.einsum("il,kj->ijkl", eye, x))


def test_jacobian_fixed_shape():
    x = vj.random.uniform([2, 2])
    with vj.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = vj.matmul(x, x, transpose_a=True)
        rows = [[y[0][0], y[0][1]], [y[1][0], y[1][1]]]
    jacobian_pfor = tape.jacobian(y, x, experimental_use_pfor=True)
    jacobian_while = tape.jacobian(y, x, experimental_use_pfor=False)
    answer = np.array([[num(tape.gradient(e, x)) for e in row] for row in rows])
    assert_all_close(answer, jacobian_pfor)
    assert_all_close(answer, jacobian_while)
    assert_all_close(jacobian_pfor, _xtx_jacobian(num(x)))
    assert_all_close(jacobian_pfor, numerical_jacobian(lambda a: a.T @ a, num(x)), atol=1e-8)


def scan(fn, elems, initializer):
    """functional_ops.scan: a vj.while_loop writing each accumulator into a buffer."""
    n = elems.shape[0]
    buffer = vj.zeros([n] + list(initializer.shape), initializer.dtype)

    def body(i, a, buffer):
        a = fn(a, vj.gather(elems, i))
        return i + 1, a, vj.tensor_scatter_nd_update(buffer, vj.reshape(i, [1, 1]),
                                                     vj.expand_dims(a, 0))

    return vj.while_loop(lambda i, a, b: i < n, body, [vj.constant(0), initializer, buffer])[2]


def test_jacobian_scan_shape():
    x = vj.random.uniform([3, 4])  # shape x: [3, 4]
    elems = vj.random.uniform([6])
    with vj.GradientTape(persistent=True) as tape:
        tape.watch([x, elems])
        y = scan(lambda a, e: a + e, elems, initializer=x)  # shape y: [6, 3, 4]
    jacobian = tape.jacobian(y, x)
    assert jacobian.shape == (6, 3, 4, 3, 4)
    # beyond TF: y[t] = x + sum(elems[:t + 1]), so every step's Jacobian is the identity
    assert_all_close(y, num(x) + np.cumsum(num(elems))[:, None, None])
    assert_all_close(jacobian, np.broadcast_to(np.eye(12).reshape(3, 4, 3, 4),
                                               (6, 3, 4, 3, 4)))
    assert_all_close(jacobian, tape.jacobian(y, x, experimental_use_pfor=False))
    assert_all_close(tape.jacobian(y, elems), np.broadcast_to(
        np.tril(np.ones((6, 6)))[:, None, None, :], (6, 3, 4, 6)))


def test_jacobian_while_loop_shape():
    x = vj.random.uniform([3, 4])  # shape x: [3, 4]
    with vj.GradientTape(persistent=True) as tape:
        tape.watch(x)
        _, y = vj.while_loop(lambda i, a: i > 5., lambda i, a: (i + 1, a + i),
                             (c(0.), x))  # no iteration runs
        y = y[:2, :3]  # shape y: [2, 3]
    jacobian = tape.jacobian(y, x)
    assert jacobian.shape == (2, 3, 3, 4)
    expected = np.eye(12).reshape(3, 4, 3, 4)[:2, :3]
    assert_all_close(jacobian, expected)
    assert_all_close(tape.jacobian(y, x, experimental_use_pfor=False), expected)


def test_jacobian_unknown_shape():
    @vj.function(input_signature=[vj.TensorSpec([None, None])])
    def jacobians(x):
        with vj.GradientTape(persistent=True) as tape:
            tape.watch(x)
            y = vj.matmul(x, x, transpose_a=True)
            rows = [[y[0][0], y[0][1]], [y[1][0], y[1][1]]]
        answer = vj.stack([vj.stack([tape.gradient(e, x) for e in row]) for row in rows])
        return (answer, tape.jacobian(y, x, experimental_use_pfor=True),
                tape.jacobian(y, x, experimental_use_pfor=False))

    value = np.array([[1., 2], [3, 4]])
    ans, pfor_value, while_value = jacobians(value)
    assert_all_close(ans, pfor_value)
    assert_all_close(ans, while_value)
    assert_all_close(ans, _xtx_jacobian(value))


def test_jacobian_parallel_iterations():
    x = c([[1., 2], [3, 4]])
    with vj.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = vj.matmul(x, x)
    jacobian = tape.jacobian(y, x, parallel_iterations=2)
    assert_all_close(jacobian, tape.jacobian(y, x, parallel_iterations=3))
    # d(x x)_ij / dx_kl = delta_ik x_lj + x_ik delta_jl
    xv, eye = num(x), np.eye(2)
    assert_all_close(jacobian, np.einsum("ik,lj->ijkl", eye, xv)
                     + np.einsum("ik,jl->ijkl", xv, eye))


def test_batch_jacobian_bad_shapes():
    x = vj.random.uniform([2, 2])
    y = vj.random.uniform([3, 2])
    with vj.GradientTape() as tape:
        tape.watch(x)
    with pytest.raises(ValueError, match="Need first dimension of target"):
        tape.batch_jacobian(y, x, experimental_use_pfor=True)


def test_batch_jacobian_bad_unknown_shapes():
    @vj.function(input_signature=[vj.TensorSpec(None)])
    def batch_jacobian(x):
        with vj.GradientTape() as tape:
            tape.watch(x)
            y = vj.concat([x, x], axis=0)
        return tape.batch_jacobian(y, x)

    with pytest.raises(ValueError, match="Need first dimension of target"):
        batch_jacobian(np.array([[1., 2], [3, 4]]))


def _diag_of_each(two_x):
    """array_ops.diag of each example: out[b, i..., i...] = two_x[b, i...]."""
    b, size = two_x.shape[0], two_x[0].size
    diag = np.zeros((b, size, size))
    diag[:, np.arange(size), np.arange(size)] = two_x.reshape(b, size)
    return diag.reshape(two_x.shape + two_x.shape[1:])


def test_batch_jacobian_fixed_shape():
    x = vj.random.uniform([2, 3, 5])
    with vj.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * x
    batch_jacobian_pfor = tape.batch_jacobian(y, x, experimental_use_pfor=True)
    batch_jacobian_while = tape.batch_jacobian(y, x, experimental_use_pfor=False)
    answer = _diag_of_each(2 * num(x))
    assert answer.shape == (2, 3, 5, 3, 5)
    assert_all_close(answer, batch_jacobian_pfor)
    assert_all_close(answer, batch_jacobian_while)


def test_batch_jacobian_unknown_shape():
    @vj.function(input_signature=[vj.TensorSpec(None)])
    def batch_jacobians(x):
        with vj.GradientTape(persistent=True) as tape:
            tape.watch(x)
            y = x * x
        return (tape.batch_jacobian(y, x, experimental_use_pfor=True),
                tape.batch_jacobian(y, x, experimental_use_pfor=False))

    value = np.array([[1., 2], [3, 4]])
    pfor_value, while_value = batch_jacobians(value)
    answer = np.stack([np.diag(2 * value[0]), np.diag(2 * value[1])])
    assert_all_close(answer, pfor_value)
    assert_all_close(answer, while_value)


def test_batch_jacobian_parallel_iterations():
    x = c([[1., 2], [3, 4]])
    w = np.array([[1., 2, 3, 4], [5, 6, 7, 8]])
    with vj.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = vj.matmul(x, c(w))
    batch_jacobian = tape.batch_jacobian(y, x, parallel_iterations=2)
    assert_all_close(batch_jacobian, tape.batch_jacobian(y, x, parallel_iterations=3))
    assert_all_close(batch_jacobian, np.stack([w.T, w.T]))


def test_fc_batch_jacobian():
    pfor_jacobian, while_jacobian, (model, inp) = create_fc_batch_jacobian(8, 4, 2)
    assert pfor_jacobian.shape == (8, 4, 4)
    assert_all_close(pfor_jacobian, while_jacobian)
    weights = [num(v) for v in model.trainable_variables]
    expected = [numerical_jacobian(lambda x: np_fc(x[None], weights)[0], row)
                for row in num(inp)]
    assert_all_close(pfor_jacobian, np.stack(expected), atol=1e-8)


def _lstm_c_of_init_c(cell, inputs, example):
    kernel, bias = num(cell.kernel), num(cell.bias)
    xs = [num(x)[example:example + 1] for x in inputs]

    def c_of_init_c(c0):
        return np_lstm(xs, c0[None], np.zeros((1, cell.num_units)), kernel, bias)[0][0]
    return c_of_init_c


def test_lstm_batch_jacobian():
    pfor_jacobian, while_jacobian, (cell, inputs) = create_lstm_batch_jacobian(
        8, 4, 2, inputs_size=128)
    assert pfor_jacobian.shape == (8, 4, 4)
    assert_all_close(pfor_jacobian, while_jacobian)
    expected = [numerical_jacobian(_lstm_c_of_init_c(cell, inputs, b), np.zeros(4))
                for b in range(8)]
    assert_all_close(pfor_jacobian, np.stack(expected), atol=1e-8)


def test_dynamic_lstm_batch_jacobian():
    pfor_jacobian, while_gradients, (cell, inp, lengths, loop_jacobian) = \
        create_dynamic_lstm_batch_jacobian(8, 4, 3)
    pfor = num(pfor_jacobian)
    assert pfor.shape == (8, 4, 3, 4)
    for i in range(4):
        assert_all_close(while_gradients[i], pfor[:, i, ...])
    assert_all_close(loop_jacobian, pfor)
    kernel, bias, lengths = num(cell.kernel), num(cell.bias), num(lengths)
    for b, x in enumerate(num(inp)):
        expected = numerical_jacobian(lambda z: np_dynamic_lstm(
            z[None], lengths[b:b + 1], kernel, bias, 4)[0], x)
        assert_all_close(pfor[b], expected, atol=1e-8)


def test_lstm_hessian():
    pfor_hessians, while_hessians, (cell, inputs) = create_lstm_hessian(2, 2, 2)
    assert_all_close(pfor_hessians, while_hessians)
    # central differences of the NumPy forward pass in the flattened (kernel, bias)
    kernel, bias = num(cell.kernel), num(cell.bias)
    xs, zeros = [num(x) for x in inputs], np.zeros((2, 2))

    def output(theta):
        return np_lstm(xs, zeros, zeros, theta[:kernel.size].reshape(kernel.shape),
                       theta[kernel.size:])[0]

    hessian = fd_hessian(output, np.concatenate([kernel.ravel(), bias]))
    for row, block in zip(pfor_hessians, np.split(hessian, [kernel.size], axis=-2)):
        for h, part in zip(row, np.split(block, [kernel.size], axis=-1)):
            assert_all_close(h, part.reshape(h.shape), rtol=1e-5, atol=1e-7)


def test_lstm_batch_hessian():
    pfor_hessian, while_hessian, (cell, inputs, inp) = create_lstm_batch_hessian(2, 2, 2)
    assert pfor_hessian.shape == (2, 4, 2)
    assert_all_close(pfor_hessian, while_hessian)
    expected = [fd_hessian(_lstm_c_of_init_c(cell, inputs, b), np.zeros(2)).reshape(4, 2)
                for b in range(2)]
    assert_all_close(pfor_hessian, np.stack(expected), rtol=1e-5, atol=1e-7)


def test_lstm_batch_hessian_nested_loops():
    # TF's TODO: two nested while_loop Jacobians did not work there; in vecjac they do
    with vj.GradientTape(persistent=True) as outer:
        with vj.GradientTape(persistent=True) as inner:
            cell, inputs, inp, output = lstm_model_fn([outer, inner], 2, 2, 2)
        jacobian = vj.reshape(inner.batch_jacobian(output, inp, experimental_use_pfor=False),
                              [2, -1])
    while_hessian = outer.batch_jacobian(jacobian, inp, experimental_use_pfor=False)
    expected = [fd_hessian(_lstm_c_of_init_c(cell, inputs, b), np.zeros(2)).reshape(4, 2)
                for b in range(2)]
    assert_all_close(while_hessian, np.stack(expected), rtol=1e-5, atol=1e-7)


def test_fc_per_eg_grad():
    pfor_outputs, while_outputs, (inp, variables) = create_fc_per_eg_grad(8, 4, 2)
    assert [g.shape for g in pfor_outputs] == [(8,) + v.shape for v in variables]
    assert_all_close(pfor_outputs, while_outputs)
    weights = [num(v) for v in variables]
    for k, w in enumerate(weights):
        def loss(wk, x):
            ws = weights[:k] + [wk] + weights[k + 1:]
            out = np_dense(np_fc(x, ws[:-2]), ws[-2], ws[-1], relu=False)
            return np.sum(out ** 2) / 2
        for b, x in enumerate(num(inp)):
            expected = numerical_jacobian(lambda wk: loss(wk, x[None]), w)
            assert_all_close(pfor_outputs[k][b], expected, atol=1e-8)


def test_lstm_per_eg_grad():
    pfor_outputs, while_outputs, (cell, inputs) = create_lstm_per_eg_grad(8, 4, 2)
    assert [g.shape for g in pfor_outputs] == [(8, 8, 16), (8, 16)]
    assert_all_close(pfor_outputs, while_outputs)
    kernel, bias = num(cell.kernel), num(cell.bias)
    zeros = np.zeros((1, 4))
    for b in range(8):
        xs = [num(x)[b:b + 1] for x in inputs]
        d_kernel = numerical_jacobian(
            lambda k: np.sum(np_lstm(xs, zeros, zeros, k, bias)[0] ** 2) / 2, kernel)
        d_bias = numerical_jacobian(
            lambda v: np.sum(np_lstm(xs, zeros, zeros, kernel, v)[0] ** 2) / 2, bias)
        assert_all_close(pfor_outputs[0][b], d_kernel, atol=1e-8)
        assert_all_close(pfor_outputs[1][b], d_bias, atol=1e-8)


@DATA_FORMATS
def test_mnist_per_eg_grad(data_format):
    # training=False so that dropout gives the same result with pfor and the loop
    pfor_outputs, while_outputs, (model, images, labels) = create_mnist_per_eg_grad(
        4, data_format, training=False)
    variables = model.trainable_variables
    assert [g.shape for g in pfor_outputs] == [(4,) + v.shape for v in variables]
    assert_all_close(pfor_outputs, while_outputs, rtol=1e-6, atol=1e-10)

    def losses():  # the four examples' losses from one batched forward pass
        return num(vj.nn.softmax_cross_entropy_with_logits(
            labels=c(labels), logits=model(images, training=False)))

    rng = np.random.default_rng(1)
    for k, v in enumerate(variables):
        directions = unit_direction(rng, variables, k)
        actual = np.tensordot(num(pfor_outputs[k]), directions[k], axes=v.ndim)
        np.testing.assert_allclose(actual, directional_fd(losses, variables, directions),
                                   rtol=1e-6, atol=1e-8)


@DATA_FORMATS
def test_mnist_per_eg_jacobian(data_format):
    pfor_outputs, while_outputs, (model, images) = create_mnist_per_eg_jacobian(
        2, data_format, training=False, fc1_units=64)
    variables = model.trainable_variables
    assert [j.shape for j in pfor_outputs] == [(2, 10) + v.shape for v in variables]
    assert_all_close(pfor_outputs, while_outputs, rtol=1e-6, atol=1e-10)
    rng = np.random.default_rng(2)
    for k, v in enumerate(variables):
        directions = unit_direction(rng, variables, k)
        actual = np.tensordot(num(pfor_outputs[k]), directions[k], axes=v.ndim)
        expected = directional_fd(lambda: num(model(images, training=False)), variables,
                                  directions)  # (2, 10): both examples' logits
        np.testing.assert_allclose(actual, expected, rtol=1e-6, atol=1e-8)


def test_fc_jacobian():
    jacobians, per_eg_jacobians_pfor, per_eg_jacobians_while, (model, inp) = (
        create_fc_per_eg_jacobians(batch_size=8, activation_size=4, num_layers=2))
    # output[i] depends on inp[i] only: row i of the full Jacobian is example i's
    assert_all_close(jacobians, per_eg_jacobians_pfor)
    assert_all_close(jacobians, per_eg_jacobians_while)
    weights = [num(v) for v in model.trainable_variables]
    for k, w in enumerate(weights):
        def output(wk):
            return np_fc(num(inp), weights[:k] + [wk] + weights[k + 1:])
        assert_all_close(jacobians[k], numerical_jacobian(output, w), atol=1e-8)


def test_indexed_slice():
    inp = vj.random.uniform([3, 2])
    with vj.GradientTape(persistent=True) as tape:
        tape.watch(inp)
        output = vj.gather(inp, [0, 2])  # nn.embedding_lookup(inp, [0, 2])
    pfor_jacobian = tape.jacobian(output, inp, experimental_use_pfor=True)
    while_jacobian = tape.jacobian(output, inp, experimental_use_pfor=False)
    assert_all_close(while_jacobian, pfor_jacobian)
    assert_all_close(pfor_jacobian, np.eye(6).reshape(3, 2, 3, 2)[[0, 2]])
