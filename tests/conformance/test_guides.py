"""TensorFlow's two autodiff guides, ported by replacing `tf.` with `vj.` (and
`tf.keras.layers` with `vj.layers`), asserting the numbers the guides print.

Source: shared/seeds (TF's "Introduction to gradients and automatic differentiation" and
"Advanced automatic differentiation"). Plots are replaced by the array code that feeds them.
"""
import re

import numpy as np
import pytest

import vecjac as vj


# ---------------------------------------------------------------------------------------
# Introduction to gradients and automatic differentiation
# ---------------------------------------------------------------------------------------
def test_gradient_tapes_scalar():
    x = vj.Variable(3.0)
    with vj.GradientTape() as tape:
        y = x ** 2
    dy_dx = tape.gradient(y, x)
    assert dy_dx.numpy() == 6.0


def test_gradient_tapes_any_tensor_and_dict_sources():
    w = vj.Variable(vj.random.normal((3, 2)), name='w')
    b = vj.Variable(vj.zeros(2, dtype=vj.float32), name='b')
    x = [[1., 2., 3.]]
    with vj.GradientTape(persistent=True) as tape:
        y = x @ w + b
        loss = vj.reduce_mean(y ** 2)
    [dl_dw, dl_db] = tape.gradient(loss, [w, b])
    assert w.shape == (3, 2) and dl_dw.shape == (3, 2)
    # closed form: loss = mean(y^2) over 2 outputs -> dl/dy = y, dl/dw = x^T y
    yv = np.array(x) @ w.numpy() + b.numpy()
    np.testing.assert_allclose(dl_dw.numpy(), np.array(x).T @ yv, rtol=1e-6)
    np.testing.assert_allclose(dl_db.numpy(), yv[0], rtol=1e-6)
    my_vars = {
        'w': vj.Variable(vj.random.normal((3, 2)), name='w'),
        'b': vj.Variable(vj.zeros(2, dtype=vj.float32), name='b')
    }
    grad = tape.gradient(loss, my_vars)
    assert grad['b'] is None  # these new variables were not used to compute loss


def test_gradients_with_respect_to_a_model():
    layer = vj.layers.Dense(2, activation='relu')
    x = vj.constant([[1., 2., 3.]])
    with vj.GradientTape() as tape:
        # Forward pass
        y = layer(x)
        loss = vj.reduce_mean(y ** 2)
    # Calculate gradients with respect to every trainable variable
    grad = tape.gradient(loss, layer.trainable_variables)
    lines = [f'{var.name}, shape: {g.shape}' for var, g in zip(layer.trainable_variables, grad)]
    assert re.fullmatch(r"dense(_\d+)?/kernel:0, shape: \(3, 2\)", lines[0])
    assert re.fullmatch(r"dense(_\d+)?/bias:0, shape: \(2,\)", lines[1])


def test_controlling_what_the_tape_watches():
    # A trainable variable
    x0 = vj.Variable(3.0, name='x0')
    # Not trainable
    x1 = vj.Variable(3.0, name='x1', trainable=False)
    # Not a Variable: A variable + tensor returns a tensor.
    x2 = vj.Variable(2.0, name='x2') + 1.0
    # Not a variable
    x3 = vj.constant(3.0, name='x3')
    with vj.GradientTape() as tape:
        y = (x0 ** 2) + (x1 ** 2) + (x2 ** 2)
    grad = tape.gradient(y, [x0, x1, x2, x3])
    assert grad[0].numpy() == 6.0 and grad[1:] == [None, None, None]
    assert [var.name for var in tape.watched_variables()] == ['x0:0']


def test_watch_a_tensor():
    x = vj.constant(3.0)
    with vj.GradientTape() as tape:
        tape.watch(x)
        y = x ** 2
    # dy = 2x * dx
    dy_dx = tape.gradient(y, x)
    assert dy_dx.numpy() == 6.0


def test_watch_accessed_variables_false():
    x0 = vj.Variable(0.0)
    x1 = vj.Variable(10.0)
    with vj.GradientTape(watch_accessed_variables=False) as tape:
        tape.watch(x1)
        y0 = vj.math.sin(x0)
        y1 = vj.nn.softplus(x1)
        y = y0 + y1
        ys = vj.reduce_sum(y)
    grad = tape.gradient(ys, {'x0': x0, 'x1': x1})
    assert grad['x0'] is None
    assert abs(grad['x1'].numpy() - 0.9999546) < 1e-7


def test_intermediate_results():
    x = vj.constant(3.0)
    with vj.GradientTape() as tape:
        tape.watch(x)
        y = x * x
        z = y * y
    # dz_dx = 2 * y, where y = x ** 2
    assert tape.gradient(z, y).numpy() == 18.0


def test_persistent_tape():
    x = vj.constant([1, 3.0])
    with vj.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * x
        z = y * y
    np.testing.assert_array_equal(tape.gradient(z, x).numpy(), [4., 108.])
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), [2., 6.])
    del tape


def test_gradients_of_non_scalar_targets():
    x = vj.Variable(2.0)
    with vj.GradientTape(persistent=True) as tape:
        y0 = x ** 2
        y1 = 1 / x
    assert tape.gradient(y0, x).numpy() == 4.0
    assert tape.gradient(y1, x).numpy() == -0.25

    x = vj.Variable(2.0)
    with vj.GradientTape() as tape:
        y0 = x ** 2
        y1 = 1 / x
    assert tape.gradient({'y0': y0, 'y1': y1}, x).numpy() == 3.75

    x = vj.Variable(2.)
    with vj.GradientTape() as tape:
        y = x * [3., 4.]
    assert tape.gradient(y, x).numpy() == 7.0


def test_element_wise_gradient_of_sum():
    x = vj.linspace(-10.0, 10.0, 200 + 1)
    with vj.GradientTape() as tape:
        tape.watch(x)
        y = vj.nn.sigmoid(x)
    dy_dx = tape.gradient(y, x)
    s = 1 / (1 + np.exp(-np.linspace(-10, 10, 201)))
    np.testing.assert_allclose(np.asarray(dy_dx), s * (1 - s), rtol=1e-10)
    assert np.asarray(x).shape == np.asarray(y).shape == (201,)  # what plt.plot receives


def test_control_flow():
    x = vj.constant(1.0)
    v0 = vj.Variable(2.0)
    v1 = vj.Variable(2.0)
    with vj.GradientTape(persistent=True) as tape:
        tape.watch(x)
        if x > 0.0:
            result = v0
        else:
            result = v1 ** 2
    dv0, dv1 = tape.gradient(result, [v0, v1])
    assert str(dv0) == "vj.Tensor(1.0, shape=(), dtype=float64)"
    assert dv1 is None
    assert tape.gradient(result, x) is None


def test_getting_a_gradient_of_none():
    x = vj.Variable(2.)
    y = vj.Variable(3.)
    with vj.GradientTape() as tape:
        z = y * y
    assert tape.gradient(z, x) is None


def test_replaced_a_variable_with_a_tensor():
    x = vj.Variable(2.0)
    printed = []
    for epoch in range(2):
        with vj.GradientTape() as tape:
            y = x + 1
        printed.append((type(x).__name__, tape.gradient(y, x)))
        x = x + 1  # This should be `x.assign_add(1)`
    assert printed[0][0] == "Variable" and printed[0][1].numpy() == 1.0
    assert printed[1][0] == "Tensor" and printed[1][1] is None


def test_did_calculations_outside_of_vecjac():
    x = vj.Variable([[1.0, 2.0],
                     [3.0, 4.0]], dtype=vj.float32)
    with vj.GradientTape() as tape:
        x2 = x ** 2
        # This step is calculated with NumPy
        y = np.mean(np.asarray(x2), axis=0)
        # Like most ops, reduce_mean will cast the NumPy array to a constant tensor
        y = vj.reduce_mean(y, axis=0)
    assert tape.gradient(y, x) is None


def test_took_gradients_through_an_integer():
    x = vj.Variable([[2, 2],
                     [2, 2]])
    with vj.GradientTape() as tape:
        # The path to x1 is blocked by the `int` dtype here.
        y = vj.cast(x, vj.float32)
        y = vj.reduce_sum(x)
    with pytest.warns(UserWarning) as record:
        assert tape.gradient(y, x) is None
    messages = [str(w.message) for w in record]
    assert any("target tensor must be floating" in m for m in messages)
    assert any("source tensor must be floating" in m for m in messages)


def test_took_gradients_through_a_stateful_object():
    x0 = vj.Variable(3.0)
    x1 = vj.Variable(0.0)
    with vj.GradientTape() as tape:
        # Update x1 = x1 + x0.
        x1.assign_add(x0)
        # The tape starts recording from x1.
        y = x1 ** 2  # y = (x1 + x0)**2
    assert tape.gradient(y, x0) is None


def test_no_gradient_registered():
    image = vj.Variable([[[0.5, 0.0, 0.0]]])
    delta = vj.Variable(0.1)
    with vj.GradientTape() as tape:
        new_image = vj.image.adjust_contrast(image, delta)
    with pytest.raises(LookupError, match="gradient registry has no entry for: AdjustContrastv2"):
        tape.gradient(new_image, [image, delta])


def test_zeros_instead_of_none():
    x = vj.Variable([2., 2.])
    y = vj.Variable(3.)
    with vj.GradientTape() as tape:
        z = y ** 2
    g = tape.gradient(z, x, unconnected_gradients=vj.UnconnectedGradients.ZERO)
    assert str(g) == "vj.Tensor([0. 0.], shape=(2,), dtype=float64)"


# ---------------------------------------------------------------------------------------
# Advanced automatic differentiation
# ---------------------------------------------------------------------------------------
def test_stop_recording():
    x = vj.Variable(2.0)
    y = vj.Variable(3.0)
    with vj.GradientTape() as t:
        x_sq = x * x
        with t.stop_recording():
            y_sq = y * y
        z = x_sq + y_sq
    grad = t.gradient(z, {'x': x, 'y': y})
    assert grad['x'].numpy() == 4.0 and grad['y'] is None


def test_reset():
    x = vj.Variable(2.0)
    y = vj.Variable(3.0)
    reset = True
    with vj.GradientTape() as t:
        y_sq = y * y
        if reset:
            # Throw out all the tape recorded so far.
            t.reset()
        z = x * x + y_sq
    grad = t.gradient(z, {'x': x, 'y': y})
    assert grad['x'].numpy() == 4.0 and grad['y'] is None


def test_stop_gradient():
    x = vj.Variable(2.0)
    y = vj.Variable(3.0)
    with vj.GradientTape() as t:
        y_sq = y ** 2
        z = x ** 2 + vj.stop_gradient(y_sq)
    grad = t.gradient(z, {'x': x, 'y': y})
    assert grad['x'].numpy() == 4.0 and grad['y'] is None


def test_custom_gradients():
    # Establish an identity operation, but clip during the gradient pass.
    @vj.custom_gradient
    def clip_gradients(y):
        def backward(dy):
            return vj.clip_by_norm(dy, 0.5)
        return y, backward
    v = vj.Variable(2.0)
    with vj.GradientTape() as t:
        output = clip_gradients(v * v)
    assert t.gradient(output, v).numpy() == 2.0  # calls "backward", which clips 4 to 2

    # "Custom gradients in SavedModel": the traced method (vecjac has no SavedModel; the
    # gradient through the function is the point)
    class MyModule(vj.Module):
        @vj.function(input_signature=[vj.TensorSpec(None)])
        def call_custom_grad(self, x):
            return clip_gradients(x)
    model = MyModule()
    v = vj.Variable(2.0)
    for _ in range(2):  # a traced call, then one under the tape
        with vj.GradientTape() as t:
            output = model.call_custom_grad(v * v)
        assert t.gradient(output, v).numpy() == 2.0
        model.call_custom_grad(v * v)


def test_multiple_tapes():
    x0 = vj.constant(0.0)
    x1 = vj.constant(0.0)
    with vj.GradientTape() as tape0, vj.GradientTape() as tape1:
        tape0.watch(x0)
        tape1.watch(x1)
        y0 = vj.math.sin(x0)
        y1 = vj.nn.sigmoid(x1)
        y = y0 + y1
        ys = vj.reduce_sum(y)
    assert tape0.gradient(ys, x0).numpy() == 1.0   # cos(x) => 1.0
    assert tape1.gradient(ys, x1).numpy() == 0.25  # sigmoid(x1)*(1-sigmoid(x1)) => 0.25


def test_higher_order_gradients():
    x = vj.Variable(1.0)  # Create a variable initialized to 1.0
    with vj.GradientTape() as t2:
        with vj.GradientTape() as t1:
            y = x * x * x
        # Compute the gradient inside the outer `t2` context manager
        # which means the gradient computation is differentiable as well.
        dy_dx = t1.gradient(y, x)
    d2y_dx2 = t2.gradient(dy_dx, x)
    assert dy_dx.numpy() == 3.0 and d2y_dx2.numpy() == 6.0


def test_input_gradient_regularization():
    x = vj.random.normal([7, 5])
    layer = vj.layers.Dense(10, activation=vj.nn.relu)
    with vj.GradientTape() as t2:
        # The inner tape only takes the gradient with respect to the input,
        # not the variables.
        with vj.GradientTape(watch_accessed_variables=False) as t1:
            t1.watch(x)
            y = layer(x)
            out = vj.reduce_sum(layer(x) ** 2)
        # 1. Calculate the input gradient.
        g1 = t1.gradient(out, x)
        # 2. Calculate the magnitude of the input gradient.
        g1_mag = vj.norm(g1)
    # 3. Calculate the gradient of the magnitude with respect to the model.
    dg1_mag = t2.gradient(g1_mag, layer.trainable_variables)
    assert [var.shape for var in dg1_mag] == [(5, 10), (10,)]
    assert y.shape == (7, 10)


def test_jacobian_scalar_source():
    x = vj.linspace(-10.0, 10.0, 200 + 1)
    delta = vj.Variable(0.0)
    with vj.GradientTape() as tape:
        y = vj.nn.sigmoid(x + delta)
    dy_dx = tape.jacobian(y, delta)
    assert y.shape == (201,) and dy_dx.shape == (201,)
    s = np.asarray(y)
    np.testing.assert_allclose(np.asarray(dy_dx), s * (1 - s), rtol=1e-10)


def test_jacobian_tensor_source():
    x = vj.random.normal([7, 5])
    layer = vj.layers.Dense(10, activation=vj.nn.relu)
    with vj.GradientTape(persistent=True) as tape:
        y = layer(x)
    assert y.shape == (7, 10)
    assert layer.kernel.shape == (5, 10)
    j = tape.jacobian(y, layer.kernel)
    assert j.shape == (7, 10, 5, 10)
    g = tape.gradient(y, layer.kernel)
    assert g.shape == (5, 10)
    j_sum = vj.reduce_sum(j, axis=[0, 1])
    delta = vj.reduce_max(abs(g - j_sum)).numpy()
    assert delta < 1e-3


def test_hessian_and_newton_step():
    x = vj.random.normal([7, 5])
    layer1 = vj.layers.Dense(8, activation=vj.nn.relu)
    layer2 = vj.layers.Dense(6, activation=vj.nn.relu)
    with vj.GradientTape() as t2:
        with vj.GradientTape() as t1:
            x = layer1(x)
            x = layer2(x)
            loss = vj.reduce_mean(x ** 2)
        g = t1.gradient(loss, layer1.kernel)
    h = t2.jacobian(g, layer1.kernel)
    assert layer1.kernel.shape == (5, 8) and h.shape == (5, 8, 5, 8)
    n_params = vj.reduce_prod(layer1.kernel.shape)
    g_vec = vj.reshape(g, [n_params, 1])
    h_mat = vj.reshape(h, [n_params, n_params])
    np.testing.assert_allclose(h_mat.numpy(), h_mat.numpy().T, atol=1e-12)  # symmetric
    lim = vj.reduce_max(abs(h_mat))  # what imshow_zero_center computes
    assert lim.numpy() >= 0
    eps = 1e-3
    eye_eps = vj.eye(h_mat.shape[0]) * eps
    # X(k+1) = X(k) - (∇²f(X(k)))^-1 @ ∇f(X(k))
    update = vj.linalg.solve(h_mat + eye_eps, g_vec)
    before = layer1.kernel.numpy().copy()
    _ = layer1.kernel.assign_sub(vj.reshape(update, layer1.kernel.shape))
    np.testing.assert_allclose(
        (h_mat.numpy() + eps * np.eye(40)) @ (before - layer1.kernel.numpy()).reshape(40, 1),
        g_vec.numpy(), rtol=1e-6, atol=1e-10)


def imshow_zero_center_data(image):
    lim = vj.reduce_max(abs(image))
    return np.asarray(image), float(lim)


def plot_as_patches(j):
    # Reorder axes so the diagonals will each form a contiguous patch.
    j = vj.transpose(j, [1, 0, 3, 2])
    # Pad in between each patch.
    lim = vj.reduce_max(abs(j))
    j = vj.pad(j, [[0, 0], [1, 1], [0, 0], [1, 1]],
               constant_values=-lim)
    # Reshape to form a single image.
    s = j.shape
    j = vj.reshape(j, [s[0] * s[1], s[2] * s[3]])
    return imshow_zero_center_data(j)


def test_batch_jacobian():
    x = vj.random.normal([7, 5])
    layer1 = vj.layers.Dense(8, activation=vj.nn.elu)
    layer2 = vj.layers.Dense(6, activation=vj.nn.elu)
    with vj.GradientTape(persistent=True, watch_accessed_variables=False) as tape:
        tape.watch(x)
        y = layer1(x)
        y = layer2(y)
    assert y.shape == (7, 6)
    j = tape.jacobian(y, x)
    assert j.shape == (7, 6, 7, 5)
    image, _ = imshow_zero_center_data(j[:, 0, :, 0])
    np.testing.assert_array_equal(image, np.diag(np.diag(image)))  # a diagonal slice
    patches, _ = plot_as_patches(j)
    assert patches.shape == (6 * 9, 5 * 9)  # (6, 7+2, 5, 7+2) flattened
    j_sum = vj.reduce_sum(j, axis=2)
    assert j_sum.shape == (7, 6, 5)
    j_select = vj.einsum('bxby->bxy', j)
    assert j_select.shape == (7, 6, 5)
    jb = tape.batch_jacobian(y, x)
    assert jb.shape == (7, 6, 5)
    error = vj.reduce_max(abs(jb - j_sum))
    assert error < 1e-3
    assert error.numpy() == 0.0


def test_batch_jacobian_with_batch_normalization():
    x = vj.random.normal([7, 5])
    layer1 = vj.layers.Dense(8, activation=vj.nn.elu)
    bn = vj.layers.BatchNormalization()
    layer2 = vj.layers.Dense(6, activation=vj.nn.elu)
    with vj.GradientTape(persistent=True, watch_accessed_variables=False) as tape:
        tape.watch(x)
        y = layer1(x)
        y = bn(y, training=True)
        y = layer2(y)
    j = tape.jacobian(y, x)
    assert j.shape == (7, 6, 7, 5)
    image, _ = imshow_zero_center_data(j[:, 0, :, 0])
    assert np.any(image != np.diag(np.diag(image)))  # "These slices are not diagonal"
    # TF silently returns "something of unclear meaning"; vecjac says so
    with pytest.warns(vj.InteractingExamplesWarning):
        jb = tape.batch_jacobian(y, x)
    assert jb.shape == (7, 6, 5)
