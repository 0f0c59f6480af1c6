# %% [markdown]
# # Advanced automatic differentiation with vecjac
#
# This notebook follows TensorFlow's guide *Advanced automatic differentiation*, with `tf.`
# replaced by `vj.` (and `tf.keras.layers` by the small `vj.layers`): controlling the
# recording, custom gradients, several tapes, higher-order gradients, Jacobians, Hessians
# and batch Jacobians. vecjac computes Jacobians with a pfor-style vectorization of the
# backward pass, like TensorFlow; see `pfor_vs_loop.ipynb` for how.

# %%
import warnings

import numpy as np
import matplotlib as mpl
import matplotlib.pyplot as plt

import vecjac as vj

mpl.rcParams["figure.figsize"] = (8, 6)
vj.random.set_seed(0)

# %% [markdown]
# ## Controlling gradient recording
#
# `tape.stop_recording()` pauses the tape for a block (a metric, an intermediate result
# you will not differentiate); `tape.reset()` throws away everything recorded so far.

# %%
x = vj.Variable(2.0)
y = vj.Variable(3.0)

with vj.GradientTape() as t:
    x_sq = x * x
    with t.stop_recording():
        y_sq = y * y
    z = x_sq + y_sq

grad = t.gradient(z, {"x": x, "y": y})
print("dz/dx:", grad["x"])  # 2*x => 4
print("dz/dy:", grad["y"])

# %%
reset = True
with vj.GradientTape() as t:
    y_sq = y * y
    if reset:
        t.reset()  # forget the recording so far
    z = x * x + y_sq

grad = t.gradient(z, {"x": x, "y": y})
print("dz/dx:", grad["x"])
print("dz/dy:", grad["y"])
assert grad["y"] is None

# %% [markdown]
# ## Stopping the gradient on one path
#
# `vj.stop_gradient` is the precise tool: it blocks one path without touching the tape.

# %%
with vj.GradientTape() as t:
    y_sq = y**2
    z = x**2 + vj.stop_gradient(y_sq)

grad = t.gradient(z, {"x": x, "y": y})
print("dz/dx:", grad["x"])
print("dz/dy:", grad["y"])

# %% [markdown]
# ## Custom gradients
#
# `vj.custom_gradient` replaces the gradient of a function: here an identity whose
# backward pass clips the incoming gradient's norm to 0.5. (TF's SavedModel section does
# not apply: vecjac has no graph serialization; its traced method, below, does.)

# %%
@vj.custom_gradient
def clip_gradients(y):
    def backward(dy):
        return vj.clip_by_norm(dy, 0.5)
    return y, backward


v = vj.Variable(2.0)
with vj.GradientTape() as t:
    output = clip_gradients(v * v)
g = t.gradient(output, v)
print(g)  # backward clips the incoming 1.0 to 0.5; times d(v*v)/dv = 4 gives 2.0
assert g.numpy() == 2.0

# %% [markdown]
# The gradient function must be traceable when the computation is a `vj.function`
# (TF's `tf.function`): the method is traced once per input signature and replayed,
# and a tape outside it still uses the custom gradient.

# %%
class MyModule(vj.Module):
    @vj.function(input_signature=[vj.TensorSpec(None)])
    def call_custom_grad(self, x):
        return clip_gradients(x)


model = MyModule()
model.call_custom_grad(vj.constant([1.0, 2.0]))  # traced
with vj.GradientTape() as t:
    output = model.call_custom_grad(v * v)
g = t.gradient(output, v)
print(g)
assert g.numpy() == 2.0

# %% [markdown]
# ## Multiple tapes
#
# Tapes are independent: each one records what it watches.

# %%
x0 = vj.constant(0.0)
x1 = vj.constant(0.0)

with vj.GradientTape() as tape0, vj.GradientTape() as tape1:
    tape0.watch(x0)
    tape1.watch(x1)
    y0 = vj.math.sin(x0)
    y1 = vj.nn.sigmoid(x1)
    ys = vj.reduce_sum(y0 + y1)

print(tape0.gradient(ys, x0).numpy())  # cos(0) = 1
print(tape1.gradient(ys, x1).numpy())  # sigmoid'(0) = 0.25

# %% [markdown]
# ### Higher-order gradients
#
# A gradient computed inside an outer tape is recorded by it, so it can be differentiated
# again.

# %%
x = vj.Variable(1.0)
with vj.GradientTape() as t2:
    with vj.GradientTape() as t1:
        y = x * x * x
    dy_dx = t1.gradient(y, x)
d2y_dx2 = t2.gradient(dy_dx, x)

print("dy_dx:", dy_dx.numpy())      # 3 * x**2 => 3.0
print("d2y_dx2:", d2y_dx2.numpy())  # 6 * x => 6.0
assert (dy_dx.numpy(), d2y_dx2.numpy()) == (3.0, 6.0)

# %% [markdown]
# #### Example: input gradient regularization
#
# Penalize the size of the gradient of a model's output with respect to its input: the
# inner tape gives the input gradient, the outer tape differentiates its norm with respect
# to the model's variables.

# %%
x = vj.random.normal([7, 5])
layer = vj.layers.Dense(10, activation=vj.nn.relu)

with vj.GradientTape() as t2:
    with vj.GradientTape(watch_accessed_variables=False) as t1:
        t1.watch(x)
        out = vj.reduce_sum(layer(x) ** 2)
    g1 = t1.gradient(out, x)       # 1. the input gradient
    g1_mag = vj.norm(g1)           # 2. its magnitude
dg1_mag = t2.gradient(g1_mag, layer.trainable_variables)  # 3. w.r.t. the model

print([var.shape for var in dg1_mag])

# %% [markdown]
# ## Jacobians
#
# `tape.jacobian(target, sources)` gives the derivative of every element of the target
# with respect to every element of each source: its shape is `target.shape +
# source.shape`.
#
# ### Scalar source

# %%
x = vj.linspace(-10.0, 10.0, 200 + 1)
delta = vj.Variable(0.0)

with vj.GradientTape() as tape:
    y = vj.nn.sigmoid(x + delta)
dy_dx = tape.jacobian(y, delta)
print(y.shape, dy_dx.shape)

plt.plot(x, y, label="y")
plt.plot(x, dy_dx, label="dy/dx")
plt.legend()
_ = plt.xlabel("x")

# %% [markdown]
# ### Tensor source
#
# The Jacobian of a layer's `(7, 10)` output with respect to its `(5, 10)` kernel has
# shape `(7, 10, 5, 10)`; summing over the target axes gives back the gradient.

# %%
x = vj.random.normal([7, 5])
layer = vj.layers.Dense(10, activation=vj.nn.relu)
with vj.GradientTape(persistent=True) as tape:
    y = layer(x)

j = tape.jacobian(y, layer.kernel)
g = tape.gradient(y, layer.kernel)
j_sum = vj.reduce_sum(j, axis=[0, 1])
delta = vj.reduce_max(abs(g - j_sum)).numpy()
print(y.shape, layer.kernel.shape, j.shape)
print("delta:", delta)
assert delta < 1e-12

# %% [markdown]
# #### Example: Hessian
#
# The Jacobian of a gradient is a Hessian. For a two-layer model and the first layer's
# `(5, 8)` kernel it has shape `(5, 8, 5, 8)`; flattened, a `(40, 40)` symmetric matrix.

# %%
x = vj.random.normal([7, 5])
layer1 = vj.layers.Dense(8, activation=vj.nn.relu)
layer2 = vj.layers.Dense(6, activation=vj.nn.relu)

with vj.GradientTape() as t2:
    with vj.GradientTape() as t1:
        x = layer1(x)
        x = layer2(x)
        loss = vj.reduce_mean(x**2)
    g = t1.gradient(loss, layer1.kernel)
h = t2.jacobian(g, layer1.kernel)
print(f"layer.kernel.shape: {layer1.kernel.shape}")
print(f"h.shape: {h.shape}")

n_params = vj.reduce_prod(layer1.kernel.shape)
g_vec = vj.reshape(g, [n_params, 1])
h_mat = vj.reshape(h, [n_params, n_params])
np.testing.assert_allclose(h_mat.numpy(), h_mat.numpy().T, atol=1e-12)


# %%
def imshow_zero_center(image, **kwargs):
    lim = vj.reduce_max(abs(image))
    plt.imshow(image, vmin=-lim, vmax=lim, cmap="seismic", **kwargs)
    plt.colorbar()


imshow_zero_center(h_mat)
_ = plt.title("Hessian of the loss w.r.t. layer1.kernel (40 x 40)")

# %% [markdown]
# A damped Newton step solves `(H + eps I) update = g` (a solve, never an inverse):

# %%
eps = 1e-3
eye_eps = vj.eye(h_mat.shape[0]) * eps
update = vj.linalg.solve(h_mat + eye_eps, g_vec)
_ = layer1.kernel.assign_sub(vj.reshape(update, layer1.kernel.shape))

# %% [markdown]
# Over several variables this needs the full Hessian across all of them, which the guide
# leaves to "careful concatenation and slicing". vecjac does it for you:
# `vj.flat_hessian(loss_fn, variables)` returns the `(n, n)` matrix over every variable,
# `vj.unflatten_like(variables)` splits a flat vector back into the variables' shapes, and
# `vj.newton_step(loss_fn, variables)` applies one Newton update to all of them (undamped
# where the Hessian is positive definite and the step lowers the loss, Levenberg-damped
# where not). On a least-squares loss (a linear layer, kernel and bias together) the loss
# is quadratic, so one undamped Newton step lands exactly on the minimum.
# (`newton_optimization.ipynb` optimizes non-quadratic losses this way.)

# %%
x = vj.random.normal([20, 5])
targets = vj.random.normal([20, 3])
linear = vj.layers.Dense(3)


def least_squares():
    return vj.reduce_mean((linear(x) - targets) ** 2)


least_squares()  # the first call builds the layer's variables
variables = linear.trainable_variables  # kernel (5, 3) and bias (3,)
H = vj.flat_hessian(least_squares, variables)
unflatten = vj.unflatten_like(variables)
print("H:", H.shape, "pieces:", [tuple(p.shape) for p in unflatten(vj.zeros(H.shape[0]))])

step = vj.newton_step(least_squares, variables, damping=0.0)
print(f"loss before {step.loss:.6f}, after one Newton step {float(least_squares()):.6f}")

design = np.hstack([np.asarray(x), np.ones((20, 1))])
coef, *_ = np.linalg.lstsq(design, np.asarray(targets), rcond=None)
best = np.mean((design @ coef - np.asarray(targets)) ** 2)
print(f"least-squares minimum (np.linalg.lstsq) {best:.6f}")
assert abs(float(least_squares()) - best) < 1e-10

# %% [markdown]
# ### Batch Jacobian
#
# For a batch `x` of shape `(batch, ins)` and `y` of shape `(batch, outs)`, the full
# Jacobian has shape `(batch, outs, batch, ins)`. When examples do not interact, every
# `(batch, batch)` slice of it is diagonal.

# %%
x = vj.random.normal([7, 5])
layer1 = vj.layers.Dense(8, activation=vj.nn.elu)
layer2 = vj.layers.Dense(6, activation=vj.nn.elu)

with vj.GradientTape(persistent=True, watch_accessed_variables=False) as tape:
    tape.watch(x)
    y = layer1(x)
    y = layer2(y)

j = tape.jacobian(y, x)
print(y.shape, j.shape)

imshow_zero_center(j[:, 0, :, 0])
_ = plt.title("A (batch, batch) slice")


# %%
def plot_as_patches(j):
    # Reorder axes so the diagonals will each form a contiguous patch.
    j = vj.transpose(j, [1, 0, 3, 2])
    # Pad in between each patch.
    lim = vj.reduce_max(abs(j))
    j = vj.pad(j, [[0, 0], [1, 1], [0, 0], [1, 1]], constant_values=-lim)
    # Reshape to form a single image.
    s = j.shape
    j = vj.reshape(j, [s[0] * s[1], s[2] * s[3]])
    imshow_zero_center(j, extent=[-0.5, s[2] - 0.5, s[0] - 0.5, -0.5])


plot_as_patches(j)
_ = plt.title("All (batch, batch) slices are diagonal")

# %% [markdown]
# Summing over the duplicate batch axis, or taking the diagonal with `vj.einsum`, gives the
# `(batch, outs, ins)` result; `tape.batch_jacobian` computes it directly, without the
# batch-by-batch detour.

# %%
j_sum = vj.reduce_sum(j, axis=2)
j_select = vj.einsum("bxby->bxy", j)
jb = tape.batch_jacobian(y, x)
print(j_sum.shape, j_select.shape, jb.shape)

error = vj.reduce_max(abs(jb - j_sum))
print(error.numpy())
assert error.numpy() < 1e-12

# %% [markdown]
# ### When examples interact: batch normalization
#
# Batch normalization in training mode normalizes each example with statistics of the
# whole batch, so every output depends on every input: the slices are no longer diagonal.

# %%
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
print(f"j.shape: {j.shape}")

plot_as_patches(j)
_ = plt.title("These slices are not diagonal")
_ = plt.xlabel("Don't use `batch_jacobian`")

# %% [markdown]
# TensorFlow's `batch_jacobian` still returns something of the expected shape here, with
# an unclear meaning. vecjac returns the same but detects the interaction (with one extra
# vectorized iteration) and says so with `vj.InteractingExamplesWarning`.

# %%
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    jb = tape.batch_jacobian(y, x)
print(f"jb.shape: {jb.shape}")
for w in caught:
    print(f"{w.category.__name__}: {w.message}")
assert any(issubclass(w.category, vj.InteractingExamplesWarning) for w in caught)
