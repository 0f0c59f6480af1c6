"""A port of TensorFlow's forward-mode tests, tensorflow/python/eager/forwardprop_test.py
(ForwardpropTest, ControlFlowTests, HessianTests; the TF 2.2-era version with
_gradfwd and the fused batch-norm tests), to vj.autodiff.ForwardAccumulator.

Expected values come from closed forms, central differences (NumPy, in the inputs' dtype)
or the same derivative in reverse mode (vj.GradientTape), never from the accumulator
under test. Jacobians in forward mode are also taken with the accumulator inside
vj.vectorized_map (jacfwd) where _check_gradients gets pfor=True.
A case where vecjac differs from TF is marked xfail(strict=True) with the difference.

Not ported (they cannot apply to vecjac):
- testJVPFunctionUsedByAccumulatorForOps: replaces TF's JVP dispatcher through pywrap.
- testPushPopAccumulatorState: forwardprop_util.push_forwardprop_state (TF internal).
- testShouldRecordAndStopRecord, testRecordingSelectively, testRecordingWithJVPIndices,
  testSpecialForwardFunctionUsed: tape_lib.should_record_backprop / stop_recording /
  record_operation*, TFE_Py_TapeSetPossibleGradientTypes (TF-internal tape API).
- testJVPPacking's forwardprop_util.pack_tangents assertions (its public jvp values are
  ported in test_jvp_of_an_inner_tangent_watched_by_an_outer_accumulator).
- testMirroredVariableWatched: tf.distribute MirroredStrategy.
Adapted:
- testJVPFunction calls TF's private _jvp_dispatch for Add and Mul: the same numbers
  through a public accumulator.
- testMultipleWatchesAdd's extra watches use the private `_watch` of both libraries
  (vecjac's takes the leaf index and count as well).
- Keras Conv2D and tf.nn.fused_batch_norm have no vecjac counterpart: a valid 2-D
  convolution is built from slices and matmul, fused batch norm from vj.nn.moments and
  vj.nn.batch_normalization (what the fused kernel computes). map_fn is a Python loop.
- Sizes are cut where TF's are large (testReusingJVP's 256x2096 matrices,
  testFusedBatchNormGradsInference's 4x10x10x2 input) to keep the file fast.
- ControlFlowTests rely on autograph: here Python `for`/`if` on Tensors inside
  vj.function (guards), plus one explicit vj.while_loop.
- TF's assert_no_new_pyobjects_executing_eagerly becomes weak references and counts of
  live vj.Tensors where the test is about memory.
"""
import functools
import gc
import weakref

import numpy as np
import pytest

import vecjac as vj
from vecjac.autodiff import ForwardAccumulator

X11_35_DERIVATIVES = [1.1 ** 3.5, 3.5 * 1.1 ** 2.5, 3.5 * 2.5 * 1.1 ** 1.5,
                      3.5 * 2.5 * 1.5 * 1.1 ** 0.5]
DECORATORS = pytest.mark.parametrize("decorator", [vj.function, lambda f: f],
                                     ids=["function", "eager"])


# -- helpers (the TF file's _jvp, _jacfwd, _grad, _hvp, _test_gradients) -------------------
def _jvp(f, primals, tangents):
    with ForwardAccumulator(primals, tangents) as acc:
        out = f(*primals)
    return out, acc.jvp(out, unconnected_gradients="zero")


def _flat(out):
    return np.concatenate([np.ravel(np.asarray(o, dtype=np.float64))
                           for o in vj.nest.flatten(out)])


def _jacfwd(f, primals):
    """One [out_size, primal_size] Jacobian per primal, one accumulator per column."""
    masks = [vj.zeros_like(p) for p in primals]
    jacobians = []
    for k, p in enumerate(primals):
        columns = []
        for i in range(int(np.prod(p.shape))):
            masks[k] = vj.reshape(vj.one_hot(i, int(np.prod(p.shape)), dtype=p.dtype), p.shape)
            columns.append(_flat(_jvp(f, primals, list(masks))[1]))
        masks[k] = vj.zeros_like(p)
        jacobians.append(np.stack(columns, axis=1))
    return jacobians


def _vectorize_parameters(f, params, use_pfor):
    """f(tangents) for one one-hot tangent per parameter element, stacked on axis 0."""
    sizes = [int(np.prod(p.shape)) for p in params]
    total = sum(sizes)

    def one(index):
        pieces = vj.split(vj.one_hot(index, total, dtype=params[0].dtype), sizes)
        return f([vj.reshape(v, p.shape) for p, v in zip(params, pieces)])
    if use_pfor:
        return vj.vectorized_map(one, vj.range(total))
    outs = [one(vj.constant(i)) for i in range(total)]
    return vj.nest.map_structure(lambda *xs: vj.stack(xs), *outs)


def _jacfwd_pfor(f, primals):
    """_jacfwd with every column in one vectorized_map (an accumulator inside pfor)."""
    def column(tangents):
        return vj.reshape(_jvp(f, primals, tangents)[1], [-1])
    rows = np.asarray(_vectorize_parameters(column, primals, use_pfor=True)).T
    return np.split(rows, np.cumsum([int(np.prod(p.shape)) for p in primals])[:-1], axis=1)


def _jacrev(f, primals):
    """One [out_size, primal_size] Jacobian per primal, one tape.gradient per output."""
    with vj.GradientTape(persistent=True) as tape:
        tape.watch(primals)
        out = f(*primals)
    rows = []
    for i in range(int(np.prod(out.shape))):
        seed = vj.reshape(vj.one_hot(i, int(np.prod(out.shape)), dtype=out.dtype), out.shape)
        grads = tape.gradient(out, primals, output_gradients=seed,
                              unconnected_gradients="zero")
        rows.append([np.ravel(np.asarray(g)) for g in grads])
    return [np.stack([r[k] for r in rows]) for k in range(len(primals))]


def _jacnum(f, primals, delta):
    """Central differences, in the primals' dtype, one [out_size, primal_size] each."""
    values = [np.array(p, dtype=p.dtype) for p in primals]

    def at(k, i, step):
        moved = [w.copy() for w in values]
        moved[k].reshape(-1)[i] += step
        return _flat(f(*[vj.constant(w) for w in moved]))
    return [np.stack([(at(k, i, delta) - at(k, i, -delta)) / (2 * delta)
                      for i in range(v.size)], axis=1) for k, v in enumerate(values)]


def _grad(f, argnum=0):
    def gradient(*params):
        with vj.GradientTape() as tape:
            tape.watch(params)
            out = f(*params)
        return tape.gradient(out, params[argnum], unconnected_gradients="zero")
    return gradient


def _gradfwd(f, argnum=0):
    """The gradient of f in forward mode: one JVP per element of params[argnum]."""
    def gradient(*params):
        def single_jvp(mask):
            with ForwardAccumulator([params[argnum]], mask) as acc:
                out = f(*params)
            return acc.jvp(out)
        return _vectorize_parameters(single_jvp, [params[argnum]], use_pfor=False)
    return gradient


def _hvp(f, primals, tangents):
    with ForwardAccumulator(primals, tangents) as acc:
        with vj.GradientTape() as tape:
            tape.watch(primals)
            out = f(*primals)
            assert out.shape == ()
        return acc.jvp(tape.gradient(out, primals))


def _forward_over_back_hessian(f, params, use_pfor):
    return _vectorize_parameters(functools.partial(_hvp, f, params), params, use_pfor)


def _check_gradients(f, primals, order, delta=1e-5, rtol=1e-5, atol=1e-7, pfor=False):
    """Jacobians of f, grad(f), ... (order of them): reverse and forward mode against
    central differences, and against each other (closer)."""
    if order > 1:
        _check_gradients(_grad(f), primals, order - 1, delta, rtol, atol, pfor)
    numeric = _jacnum(f, primals, delta)
    back = _jacrev(f, primals)
    forward = _jacfwd(f, primals)
    for n, b, fw in zip(numeric, back, forward):
        np.testing.assert_allclose(b, n, rtol=rtol, atol=atol)
        np.testing.assert_allclose(fw, n, rtol=rtol, atol=atol)
        close = 1e-10 if primals[0].dtype == np.float64 else 1e-5
        np.testing.assert_allclose(fw, b, rtol=close, atol=close)
    if pfor:
        for fw, fp in zip(forward, _jacfwd_pfor(f, primals)):
            np.testing.assert_allclose(fp, fw, rtol=1e-12, atol=1e-12)


def _assign_range(variables):
    """TF's deterministic weights: range(-1, 1, 2 / size), reshaped."""
    for v in variables:
        n = int(np.prod(v.shape))
        v.assign(np.arange(-1.0, 1.0, 2.0 / n)[:n].reshape(v.shape).astype(v.dtype))


class _Conv2D(vj.layers.Layer):
    """Keras' Conv2D(filters, kernel_size) with 'valid' padding, NHWC, stride 1."""

    def __init__(self, filters, kernel_size, dtype=None):
        self.filters, self.size = filters, kernel_size
        self.kernel = self.bias = None
        super().__init__(dtype=dtype)

    def build(self, input_shape):
        rng = np.random.default_rng(3)
        shape = (self.size, self.size, input_shape[-1], self.filters)
        self.kernel = vj.Variable(rng.uniform(-0.5, 0.5, shape).astype(self.dtype))
        self.bias = vj.Variable(np.zeros(self.filters, self.dtype))

    def __call__(self, inputs):
        x = self._prepare(inputs)
        h, w = x.shape[1] - self.size + 1, x.shape[2] - self.size + 1
        out = None
        for i in range(self.size):
            for j in range(self.size):
                term = vj.matmul(x[:, i:i + h, j:j + w, :], self.kernel[i, j])
                out = term if out is None else out + term
        return out + self.bias


def _live_tensors():
    gc.collect()
    # type(), not isinstance: the heap may hold weak proxies to dead objects
    return sum(1 for o in gc.get_objects() if issubclass(type(o), vj.Tensor))


# -- ForwardpropTest -------------------------------------------------------------------------
def test_jvp_of_add_and_mul_with_tangents_on_both_inputs():
    a, b = vj.constant(1.0), vj.constant(3.0)
    with ForwardAccumulator([a, b], [vj.constant(1.0), vj.constant(5.0)]) as acc:
        y = a + b
    assert float(acc.jvp(y)) == 6.0
    a, b = vj.constant([4.0]), vj.constant([5.0])
    with ForwardAccumulator([a, b], [vj.constant([2.0]), vj.constant([3.0])]) as acc:
        y = a * b
    np.testing.assert_allclose(acc.jvp(y).numpy(), [2.0 * 5.0 + 3.0 * 4.0])


def test_many_shapes_one_after_another_including_empty():
    for n in range(32):  # TF's _TRACE_COUNT_LIMIT shapes, the first one empty
        x = vj.zeros([n])
        with ForwardAccumulator(x, vj.ones_like(x)) as acc:
            y = x + x
        assert acc.jvp(y).shape == (n,)
        np.testing.assert_array_equal(acc.jvp(y).numpy(), np.full(n, 2.0))


def test_watching_a_tensor_twice_raises():
    x = vj.constant(-2.0)
    with pytest.raises(ValueError, match="multiple times"):
        with ForwardAccumulator([x, x], [1.0, 2.0]):
            pass


def test_more_watches_add_to_the_tangent():
    x = vj.constant(-2.0)
    with ForwardAccumulator([x], [3.0]) as acc:
        assert float(acc.jvp(x)) == 3.0
        acc._watch(x, vj.constant(10.0), 0, 1)
        assert float(acc.jvp(x)) == 13.0
        acc._watch(x, vj.constant(11.0), 0, 1)
        assert float(acc.jvp(x)) == 24.0
        y = vj.constant(3.0) * x
    assert float(acc.jvp(x)) == 24.0
    assert float(acc.jvp(y)) == 72.0


def test_reenter_raises_while_recording_and_resumes_after_exit():
    x = vj.constant(-2.0)
    with ForwardAccumulator(x, 1.5) as acc:
        assert float(acc.jvp(x)) == 1.5
        y = 4.0 * x
        assert float(acc.jvp(y)) == 6.0
        with pytest.raises(ValueError, match="already recording"):
            with acc:
                pass
    z = 4.0 * x
    assert acc.jvp(z) is None
    with acc:
        yy = y * y
    assert float(acc.jvp(yy)) == 6.0 * -8.0 * 2.0


def test_tangents_of_dead_tensors_are_released():
    x = vj.ones([100])
    x_weak = weakref.ref(x)
    tangent = vj.constant(vj.zeros([100]))
    tangent_weak = weakref.ref(tangent)
    with ForwardAccumulator(x, tangent) as acc:
        derived = vj.constant(2.0) * x
        del tangent
        np.testing.assert_array_equal(acc.jvp(x).numpy(), np.zeros(100))
        del x
        assert x_weak() is None
        assert tangent_weak() is None  # the watched primal died: its tangent goes too
        derived_weak = weakref.ref(derived)
        derived_tangent_weak = weakref.ref(acc.jvp(derived))
        del derived
        assert derived_weak() is None
        assert derived_tangent_weak() is None


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_jvp_of_sin(dtype):
    primal, tangent = _jvp(vj.sin, (vj.constant(0.1, dtype=dtype),),
                           (vj.constant(0.2, dtype=dtype),))
    rtol = 1e-15 if dtype == np.float64 else 1e-6
    assert tangent.dtype == primal.dtype == dtype
    np.testing.assert_allclose(tangent.numpy(), np.cos(0.1) * 0.2, rtol=rtol)
    np.testing.assert_allclose(primal.numpy(), np.sin(0.1), rtol=rtol)


def test_numeric_third_order_of_reductions():
    def f(x):
        pointwise = vj.sin(x) * vj.tan(x)
        return vj.reduce_prod(pointwise + vj.reduce_sum(pointwise), axis=1)
    _check_gradients(f, [vj.constant([[2.0, 3.0], [1.0, 4.0]])], order=3, pfor=True)


def test_custom_gradient_with_a_numpy_forward_pass():
    @vj.custom_gradient
    def f(x):
        return np.sin(x.numpy()), lambda dy: dy * vj.cos(x)
    _check_gradients(f, [vj.constant([1.0, 2.0])], order=3)


def test_recompute_grad():
    f = vj.recompute_grad(lambda x: vj.reduce_prod(vj.tanh(x) ** 2))
    _check_gradients(f, [vj.constant([1.0])], order=3)


def test_exception_in_custom_gradient_not_swallowed():
    @vj.custom_gradient
    def f(unused_x):
        def grad(unused_dy):
            raise ValueError("test_error_string")
        return 1.0, grad
    c, d = vj.constant(1.0), vj.constant(2.0)
    with ForwardAccumulator(c, d):
        with pytest.raises(ValueError, match="test_error_string"):
            f(c)


@pytest.mark.parametrize("value, op", [(-0.5, vj.nn.elu), ([0.5], vj.nn.elu),
                                       (0.5, vj.nn.swish), ([-0.5], vj.nn.swish)],
                         ids=["elu-m5", "elu-p5", "swish-p5", "swish-m5"])
def test_elementwise_nn_ops_to_third_order(value, op):
    _check_gradients(op, [vj.constant(value)], order=3, pfor=True)


@pytest.mark.parametrize("value, make, atol", [
    ([[0.1]], lambda: vj.layers.Dense(5, dtype=vj.float32), 1e-6),
    (np.arange(-1.0, 1.0, 2.0 / 32).reshape(1, 2, 4, 4),
     lambda: _Conv2D(2, 2, dtype=vj.float32), 1e-3),
], ids=["dense", "conv2d"])
def test_keras_layers_float32(value, make, atol):
    layer = make()
    x = vj.constant(value, dtype=vj.float32)
    layer.build(x.shape)
    _assign_range(layer.trainable_variables)
    _check_gradients(layer, [x], order=2, delta=1e-3, rtol=1e-2, atol=atol)


BATCH_NORM_INPUTS = pytest.mark.parametrize("value", [
    [[0.1], [0.2], [-0.3]], [[[[0.1, 2.0]]], [[[0.2, -3.0]]], [[[-0.3, 4.0]]]]],
    ids=["rank2", "rank4"])


@BATCH_NORM_INPUTS
@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_layer(value, training):
    layer = vj.layers.BatchNormalization()
    x = vj.constant(value)
    layer.build(x.shape)
    _check_gradients(functools.partial(layer, training=training), [x], order=2)


@BATCH_NORM_INPUTS
@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_layer_parameter_jacobians(value, training):
    layer = vj.layers.BatchNormalization()
    x = vj.constant(value)
    layer.build(x.shape)
    f = lambda x, *unused_variables: layer(x, training=training)  # noqa: E731
    primals = [x] + layer.trainable_variables
    for back, forward in zip(_jacrev(f, primals), _jacfwd(f, primals)):
        np.testing.assert_allclose(forward, back, rtol=1e-12, atol=1e-12)


def _bn_training(data_format):
    axes = [0, 2, 3] if data_format == "NCHW" else [0, 1, 2]

    def bn(x, scale, offset):
        mean, variance = vj.nn.moments(x, axes, keepdims=True)
        shape = [1, -1, 1, 1] if data_format == "NCHW" else [1, 1, 1, -1]
        return vj.nn.batch_normalization(x, mean, variance, vj.reshape(offset, shape),
                                         vj.reshape(scale, shape), 0.001)
    return bn


@pytest.mark.parametrize("data_format, x_shape, channels, back_over_forward", [
    ("NCHW", [4, 3, 2, 2], 3, False), ("NHWC", [4, 2, 2, 3], 3, False),
    ("NCHW", [2, 2, 1, 1], 2, True), ("NHWC", [2, 1, 1, 2], 2, True)],
    ids=["NCHW", "NHWC", "NCHW-forward", "NHWC-forward"])
def test_fused_batch_norm_training(data_format, x_shape, channels, back_over_forward):
    size = int(np.prod(x_shape))
    x = vj.constant(np.arange(-2.0, 1.0, 3.0 / size)[:size].reshape(x_shape))
    scale = vj.constant([1.0, 1.1, 0.9][:channels])
    offset = vj.constant([-0.5, -0.6, -0.7][:channels])
    bn = _bn_training(data_format)
    _check_gradients(bn, [x, scale, offset], order=2, rtol=1e-4, atol=1e-6)
    if back_over_forward:
        for k in range(3):
            _check_gradients(_gradfwd(bn, k), [x, scale, offset], order=1, rtol=1e-4,
                             atol=1e-6)


def test_fused_batch_norm_inference():
    x = vj.constant(np.arange(-2.0, 1.0, 3.0 / 16).reshape(2, 2, 2, 2))
    scale, offset = vj.constant([1.0, 1.1]), vj.constant([-0.5, -0.6])
    mean, variance = vj.constant([-1.3, 1.4]), vj.constant([0.7, 0.9])

    def bn(x, scale, offset):
        return vj.nn.batch_normalization(x, mean, variance, offset, scale, 0.001)
    _check_gradients(bn, [x, scale, offset], order=2)


class _Model(vj.Module):
    def __init__(self):
        super().__init__()
        self._first_dense = vj.layers.Dense(18)
        self._conv = _Conv2D(2, 2)
        self._norm = vj.layers.BatchNormalization()
        self._second_dense = vj.layers.Dense(1)

    def __call__(self, x):
        x = vj.nn.relu(self._first_dense(x))
        x = self._norm(x)
        x = vj.nn.relu(self._conv(vj.reshape(x, [-1, 2, 3, 3])))
        return self._second_dense(x)


@DECORATORS
def test_variables_hvp_forward_over_back_matches_back_over_back(decorator):
    vj.random.set_seed(5)
    model = _Model()

    def loss():
        x = vj.constant([[-0.5, 1.0], [0.5, -1.0]])
        return vj.reduce_sum((model(x) - vj.constant([[-1.0], [2.0]])) ** 2.0)

    @decorator
    def compute_hvps():
        with vj.GradientTape() as tape:
            first = loss()
        vector = tape.gradient(first, model.trainable_variables)
        forward_over_back, = _hvp(lambda unused: loss(), [model.trainable_variables],
                                  [vector])
        with vj.GradientTape(persistent=True) as tape:
            tape.watch(model.trainable_variables)
            first_grads = tape.gradient(loss(), model.trainable_variables)
        back_over_back = tape.gradient(first_grads, model.trainable_variables,
                                       output_gradients=vector)
        return forward_over_back, back_over_back
    forward_over_back, back_over_back = compute_hvps()
    assert len(forward_over_back) == len(back_over_back) == 8
    for fb, bb in zip(forward_over_back, back_over_back):
        np.testing.assert_allclose(np.asarray(fb), np.asarray(bb), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("order, expected", list(enumerate(X11_35_DERIVATIVES)))
def test_higher_order_pure_forward(order, expected):
    def forwardgrad(f):
        def compute(primal):
            with ForwardAccumulator(primal, vj.constant(1.0)) as acc:
                out = f(primal)
            return acc.jvp(out)
        return compute
    f = lambda x: x ** 3.5  # noqa: E731
    for _ in range(order):
        f = forwardgrad(f)
    np.testing.assert_allclose(f(vj.constant(1.1)).numpy(), expected, rtol=1e-14)


@DECORATORS
def test_grad_pure_forward(decorator):
    f = decorator(lambda x: x ** 3.5)
    primal = vj.constant(1.1)
    f(primal)  # traced before: the accumulators see a replay, as TF's see a call op
    with ForwardAccumulator(primal, vj.constant(1.0)) as outer_acc:
        with ForwardAccumulator(primal, vj.constant(1.0)) as acc:
            primal_out = f(primal)
    inner_jvp = acc.jvp(primal_out)
    outer_jvp = outer_acc.jvp(inner_jvp)
    np.testing.assert_allclose(primal_out.numpy(), 1.1 ** 3.5, rtol=1e-14)
    np.testing.assert_allclose(inner_jvp.numpy(), 3.5 * 1.1 ** 2.5, rtol=1e-14)
    np.testing.assert_allclose(outer_jvp.numpy(), 3.5 * 2.5 * 1.1 ** 1.5, rtol=1e-14)
    assert acc.jvp(outer_acc.jvp(primal_out)) is None


def test_jvp_of_an_inner_tangent_watched_by_an_outer_accumulator():
    two, primal_in, inner_tangent = vj.constant(2.0), vj.constant(1.0), vj.constant(3.0)
    with ForwardAccumulator([primal_in, inner_tangent],
                            [vj.constant(2.0), vj.constant(4.0)]) as outer_acc:
        with ForwardAccumulator(primal_in, inner_tangent) as inner_acc:
            primal_out = primal_in * two
            assert float(inner_acc.jvp(primal_out)) == 6.0
            assert float(outer_acc.jvp(primal_out)) == 4.0
            assert float(outer_acc.jvp(inner_acc.jvp(primal_out))) == 8.0


def test_function_grad_in_function_pure_forward():
    @vj.function
    def take_gradients():
        f = vj.function(lambda x: x ** 3.5)
        primal = vj.constant(1.1)
        with ForwardAccumulator(primal, vj.constant(1.0)) as outer_acc:
            with ForwardAccumulator(primal, vj.constant(1.0)) as acc:
                primal_out = f(primal)
        inner_jvp = acc.jvp(primal_out)
        outer_jvp = outer_acc.jvp(inner_jvp)
        assert acc.jvp(outer_acc.jvp(primal_out)) is None
        return primal_out, inner_jvp, outer_jvp
    for _ in range(2):  # the trace, then a replay
        primal_out, inner_jvp, outer_jvp = take_gradients()
        np.testing.assert_allclose(primal_out.numpy(), 1.1 ** 3.5, rtol=1e-14)
        np.testing.assert_allclose(inner_jvp.numpy(), 3.5 * 1.1 ** 2.5, rtol=1e-14)
        np.testing.assert_allclose(outer_jvp.numpy(), 3.5 * 2.5 * 1.1 ** 1.5, rtol=1e-14)


def test_function_grad_to_third_order():
    f = vj.function(lambda x: vj.reduce_prod(vj.tanh(x) ** 2))
    _check_gradients(f, [vj.constant([1.0, 2.0])], order=3, pfor=True)


def test_reusing_jvp_of_a_function_for_two_primals():
    rng = np.random.default_rng(0)
    m1 = vj.constant(rng.uniform(size=(64, 96)))
    m2 = vj.identity(m1)
    t1, t2 = rng.uniform(size=(64, 96)), rng.uniform(size=(64, 96))
    matmul = vj.function(vj.matmul)
    matmul(m1, m1, transpose_b=True)  # traced before the accumulator
    with ForwardAccumulator([m1, m2], [vj.constant(t1), vj.constant(t2)]) as acc:
        result1 = matmul(m1, m1, transpose_b=True)
        result2 = matmul(m2, m2, transpose_b=True)
    m = m1.numpy()
    np.testing.assert_allclose(result1.numpy(), result2.numpy())
    np.testing.assert_allclose(acc.jvp(result1).numpy(), t1 @ m.T + m @ t1.T, rtol=1e-12)
    np.testing.assert_allclose(acc.jvp(result2).numpy(), t2 @ m.T + m @ t2.T, rtol=1e-12)


def _tanh_prod(x):
    return vj.reduce_prod(vj.tanh(x) ** 2)


def test_hvp_leaves_no_tensors_behind():
    primals, tangents = vj.constant([1.0, 2.0, 3.0]), vj.constant([3.0, 4.0, 5.0])
    for _ in range(2):  # warm up, as TF's decorator
        _hvp(_tanh_prod, (primals,), (tangents,))
    before = _live_tensors()
    _hvp(_tanh_prod, (primals,), (tangents,))
    assert _live_tensors() == before


def test_hvp_eager_and_in_function_match_back_over_back():
    primals, tangents = vj.constant([1.0, 2.0, 3.0]), vj.constant([3.0, 4.0, 5.0])
    eager, = _hvp(_tanh_prod, (primals,), (tangents,))
    hvp_function = vj.function(_hvp)
    hvp_function(_tanh_prod, (primals,), (tangents,))
    in_function, = hvp_function(_tanh_prod, (primals,), (tangents,))  # a replay
    with vj.GradientTape(persistent=True) as g:
        g.watch(primals)
        with vj.GradientTape() as gg:
            gg.watch(primals)
            out = _tanh_prod(primals)
        grad = vj.unstack(gg.gradient(out, primals))
    hessian = np.stack([g.gradient(grad[i], primals).numpy() for i in range(3)])
    expected = hessian @ tangents.numpy()
    np.testing.assert_allclose(eager.numpy(), expected, rtol=1e-12)
    np.testing.assert_allclose(in_function.numpy(), expected, rtol=1e-12)


def test_op_with_no_trainable_outputs():
    v = vj.Variable(1.0)
    with ForwardAccumulator(v, 11.0):
        v.assign_sub(0.5)
        assert float(v.numpy()) == 0.5


def test_variable_read_in_function():
    v = vj.Variable(1.0)
    with ForwardAccumulator(v, 11.0) as acc:
        f = vj.function(lambda: (v.read_value(), 2.0 * v.read_value()))
        for _ in range(2):  # the trace, then a replay
            result = f()
            np.testing.assert_allclose([r.numpy() for r in result], [1.0, 2.0])
            np.testing.assert_allclose([t.numpy() for t in acc.jvp(result)], [11.0, 22.0])


def _accumulator_and_tape(c, forward_prop_first):
    """Creation order does not matter: nesting decides who sees whom."""
    if forward_prop_first:
        acc = ForwardAccumulator(c, 0.1)
        return acc, vj.GradientTape()
    tape = vj.GradientTape()
    return ForwardAccumulator(c, 0.1), tape


@pytest.mark.parametrize("forward_prop_first", [True, False])
def test_forward_over_backward_tape_does_not_keep_jvp_computations(forward_prop_first):
    c = vj.constant(1.0)
    forward_accumulator, gradient_tape = _accumulator_and_tape(c, forward_prop_first)
    gc.disable()
    try:
        with gradient_tape:
            pass  # entering and leaving the tape first changes nothing
        with forward_accumulator as acc:
            with gradient_tape as tape:
                tape.watch(c)
                d = vj.cos(c)
                e = vj.cos(acc.jvp(d))
                vj.cos(e)
                weak_e = weakref.ref(e)
                del e
                assert weak_e() is None  # the tape inside did not record jvp(d)'s ops
            assert tape.gradient(acc.jvp(d), c) is None
    finally:
        gc.enable()


@pytest.mark.parametrize("forward_prop_first", [True, False])
def test_backward_over_forward(forward_prop_first):
    c = vj.constant(1.0)
    forward_accumulator, gradient_tape = _accumulator_and_tape(c, forward_prop_first)
    with gradient_tape as tape:
        with forward_accumulator as acc:
            tape.watch(c)
            d = vj.cos(c)
        np.testing.assert_allclose(tape.gradient(acc.jvp(d), c).numpy(), -0.1 * np.cos(1.0),
                                   rtol=1e-14)


def test_variable_watched():
    v = vj.Variable([1.0, 2.0, 3.0])
    with ForwardAccumulator(v, vj.constant([0.1, -0.2, 0.3])) as acc:
        np.testing.assert_allclose(acc.jvp(v).numpy(), [0.1, -0.2, 0.3])
        x = v * 2.0
        np.testing.assert_allclose(acc.jvp(x).numpy(), [0.2, -0.4, 0.6])
        x2 = v + 0.1
        np.testing.assert_allclose(acc.jvp(x2).numpy(), [0.1, -0.2, 0.3])


def test_unconnected_gradients():
    x = vj.constant(-1.0)
    with ForwardAccumulator(x, 0.1) as acc:
        np.testing.assert_allclose(acc.jvp(x, unconnected_gradients="zero").numpy(), 0.1)
        np.testing.assert_allclose(acc.jvp(x, unconnected_gradients="none").numpy(), 0.1)
        y = vj.constant(-2.0)
        np.testing.assert_allclose(acc.jvp(y, unconnected_gradients="zero").numpy(), 0.0)
        assert acc.jvp(y, unconnected_gradients="none") is None
        assert acc.jvp(y, unconnected_gradients=vj.UnconnectedGradients.NONE) is None


def test_variable_watched_inside_a_function_method():
    class _JVPModel(vj.Module):
        def __init__(self):
            super().__init__()
            self._v = None

        @vj.function
        def compute_jvps(self):
            if self._v is None:
                self._v = vj.Variable([1.0, 2.0, 3.0])
            with ForwardAccumulator(self._v, vj.constant([0.1, -0.2, 0.3])) as acc:
                x = self._v * 2.0
                x2 = self._v + 0.1
            return acc.jvp((self._v, x, x2))
    model = _JVPModel()
    for _ in range(2):
        v_jvp, x_jvp, x2_jvp = model.compute_jvps()
        np.testing.assert_allclose(v_jvp.numpy(), [0.1, -0.2, 0.3])
        np.testing.assert_allclose(x_jvp.numpy(), [0.2, -0.4, 0.6])
        np.testing.assert_allclose(x2_jvp.numpy(), [0.1, -0.2, 0.3])


def test_function_argument_unused():
    v = vj.constant(1.0)
    with ForwardAccumulator(v, 11.0) as acc:
        f = vj.function(lambda unused_x: vj.constant(1.0))
        for _ in range(2):  # the trace, then a replay
            result = f(v)
            assert float(result) == 1.0
            assert acc.jvp(result) is None


# -- ControlFlowTests --------------------------------------------------------------------------
@vj.function
def _has_loop(iters, y):
    ret = 0.0
    for i in vj.range(iters):
        ret += y * vj.cast(i, vj.float64)
    return ret


@vj.function
def _has_cond(k, y):
    if k > 1:
        ret = 3.0 * y
    else:
        ret = 0.0
    return ret


@vj.function
def _fprop_while(iters, y):
    with ForwardAccumulator(y, 1.0) as acc:
        ret = 0.0
        for i in vj.range(iters):
            ret += y * vj.cast(i, vj.float64)
    return acc.jvp(ret)


@vj.function
def _fprop_cond(k, y):
    with ForwardAccumulator(y, 1.0) as acc:
        if k > 1:
            ret = 3.0 * y
        else:
            ret = 0.0
    return acc.jvp(ret)


def test_jvp_of_function_with_loop():
    y = vj.constant(1.0)
    with ForwardAccumulator(y, 1.0) as acc:
        for iters, expected in ((5, 10.0), (5, 10.0), (3, 3.0)):  # trace, replay, guard
            assert float(acc.jvp(_has_loop(vj.constant(iters), y))) == expected


@pytest.mark.xfail(strict=True, reason="TF's autograph makes the `if` a tf.cond whose output "
                   "depends on y (jvp 0.); vj.function guards Python's `if`, and the false "
                   "branch's constant 0.0 has no tangent (jvp None)")
def test_jvp_of_function_with_cond():
    y = vj.constant(1.0)
    with ForwardAccumulator(y, 1.0) as acc:
        assert float(acc.jvp(_has_cond(vj.constant(5), y))) == 3.0
        np.testing.assert_allclose(acc.jvp(_has_cond(vj.constant(0), y)), 0.0)


def test_jvp_of_function_with_while_loop_op():
    def loop(iters, y):
        return vj.while_loop(lambda i, r: i < iters,
                             lambda i, r: (i + 1, r + y * vj.cast(i, vj.float64)),
                             (vj.constant(0), vj.constant(0.0)))[1]
    f = vj.function(loop)
    y = vj.constant(1.0)
    with ForwardAccumulator(y, 1.0) as acc:
        assert float(acc.jvp(f(vj.constant(5), y))) == 10.0


def test_accumulator_in_function_with_loop():
    assert float(_fprop_while(vj.constant(5), vj.constant(1.0))) == 10.0
    assert float(_fprop_while(vj.constant(4), vj.constant(1.0))) == 6.0


@pytest.mark.xfail(strict=True, reason="TF's autograph makes the `if` a tf.cond (jvp 0.); "
                   "here the false branch is the Python float 0.0, which acc.jvp rejects "
                   "(TypeError: not a Tensor)")
def test_accumulator_in_function_with_cond():
    assert float(_fprop_cond(vj.constant(5), vj.constant(1.0))) == 3.0
    assert float(_fprop_cond(vj.constant(0), vj.constant(1.0))) == 0.0


# -- HessianTests -----------------------------------------------------------------------------
def _hessian_1d_case():
    rng = np.random.RandomState([1, 2, 3])
    mat_value = rng.randn(4, 4)
    x_value = rng.randn(4)
    mat = vj.Variable(mat_value)

    def f(x):
        return vj.reduce_sum(x[:, None] * mat * x[None, :])
    return f, vj.constant(x_value), mat_value + mat_value.T


@pytest.mark.parametrize("use_pfor, decorator", [
    (False, lambda f: f), (False, vj.function), (True, vj.function), (True, lambda f: f)],
    ids=["loop", "loop-function", "pfor-function", "pfor"])
def test_hessian_1d(use_pfor, decorator):
    f, x, expected = _hessian_1d_case()
    hessian, = decorator(_forward_over_back_hessian)(f, [x], use_pfor=use_pfor)
    np.testing.assert_allclose(np.asarray(hessian), expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("use_pfor", [True, False], ids=["pfor", "loop"])
def test_hessian_of_variables(use_pfor):
    model = vj.layers.Dense(1)
    model.build([2])
    inputs = np.array([[-0.5, 1.0], [0.5, -1.0]])

    def loss(*unused_args):
        return vj.reduce_sum((model(vj.constant(inputs)) - vj.constant([[-1.0], [2.0]])) ** 2.0)
    kernel_hess, bias_hess = _forward_over_back_hessian(loss, [model.kernel, model.bias],
                                                        use_pfor=use_pfor)
    assert kernel_hess.shape == (3, 2, 1)
    assert bias_hess.shape == (3, 1)
    full = np.concatenate([np.reshape(kernel_hess, [3, 2]), np.asarray(bias_hess)], axis=1)
    design = np.concatenate([inputs, np.ones((2, 1))], axis=1)
    np.testing.assert_allclose(full, 2 * design.T @ design, rtol=1e-12, atol=1e-12)
