# %% [markdown]
# # Sparse Jacobians: a stiff reaction-diffusion system with `solve_ivp`
#
# The 2-D Brusselator couples two chemical species $u, v$ on a periodic grid:
#
# $$u_t = 1 + u^2 v - 4.4\,u + \alpha \Delta u, \qquad v_t = 3.4\,u - u^2 v + \alpha \Delta v$$
#
# with the 5-point Laplacian $\Delta$. Diffusion makes it stiff, so implicit solvers (BDF,
# Radau) are the right tool, and they need the Jacobian of the right-hand side. With
# $N \times N$ grid points it is a $2N^2 \times 2N^2$ matrix, but each equation involves
# only 6 unknowns: almost all of it is zero.
#
# `vj.sparse_jacobian(f)` (and `vj.scipy.jac(f, sparse=True)` for SciPy) detects which
# entries can be nonzero by tracing `f` once, groups columns that never share a row
# (*coloring*), and computes all columns of a group with one Jacobian-vector product:
# a handful of products instead of $2N^2$.

# %%
import time

import matplotlib.pyplot as plt
import numpy as np
from scipy.integrate import solve_ivp

import vecjac as vj

N, ALPHA = 16, 0.5
x = np.arange(N) / N


def brusselator(t, y):
    s = vj.reshape(y, (N, N, 2))           # species interleaved: y = [u00, v00, u01, v01, ...]
    u, v = s[..., 0], s[..., 1]
    scale = ALPHA * N ** 2

    def laplacian(w):
        return (vj.roll(w, 1, 0) + vj.roll(w, -1, 0) + vj.roll(w, 1, 1) + vj.roll(w, -1, 1)
                - 4.0 * w) * scale
    uuv = u * u * v
    du = 1.0 + uuv - 4.4 * u + laplacian(u)
    dv = 3.4 * u - uuv + laplacian(v)
    return vj.reshape(vj.stack([du, dv], axis=-1), (-1,))


X, Y = np.meshgrid(x, x, indexing="ij")
y0 = np.stack([22 * Y * (1 - Y) ** 1.5, 27 * X * (1 - X) ** 1.5], axis=-1).reshape(-1)
print("unknowns:", y0.size)

# %% [markdown]
# ## The pattern
#
# `vj.jacobian_sparsity` traces the function: every op says which input elements each of
# its output elements can depend on (a roll moves them, a product unites them). The result
# holds for *every* input, not just this one.

# %%
pattern = vj.jacobian_sparsity(lambda y: brusselator(0.0, y), y0)
print(f"{pattern.shape}, {pattern.nnz} possible nonzeros "
      f"({pattern.nnz / pattern.shape[0]:.0f} per row, {pattern.nnz / np.prod(pattern.shape):.2%})")
fig, axes = plt.subplots(1, 2, figsize=(11, 5))
axes[0].spy(pattern, markersize=0.3)
axes[0].set_title("Jacobian pattern")
axes[1].spy(pattern[:120, :120], markersize=2)
axes[1].set_title("top-left corner: u and v interleaved")
plt.show()

# %% [markdown]
# ## The coloring
#
# Two columns may share a color when no row has a nonzero in both: the Jacobian-vector
# product with the sum of their unit vectors then holds each column's entries in separate
# rows. Here a few colors cover all columns, so one Jacobian costs a few JVPs, all computed
# at once (vectorized over the colors).

# %%
jac = vj.scipy.jac(brusselator, argnums=1, sparse=True)   # solve_ivp calls jac(t, y)
J = jac(0.0, y0)
prepared = jac._sparse
print(prepared)
colors = prepared.colors.reshape(N, N, 2)
fig, axes = plt.subplots(1, 2, figsize=(10, 4.5))
for k, name in enumerate("uv"):
    im = axes[k].imshow(colors[..., k], cmap="tab10", vmin=0, vmax=9)
    axes[k].set_title(f"color of each {name} column")
plt.colorbar(im, ax=axes)
plt.show()
dense = vj.jacobian(lambda y: brusselator(0.0, y))(y0).numpy()
assert np.allclose(J.toarray(), dense, rtol=1e-12, atol=1e-9)

# %% [markdown]
# ## Solving the stiff system
#
# We solve to $t = 1$ with BDF two ways: vecjac's sparse Jacobian, and SciPy's finite
# differences with the pattern given (`jac_sparsity=`, also colored, but each color costs a
# function evaluation and the result is approximate). Then one Jacobian against the dense
# one, which costs one JVP per column.

# %%
def rhs(t, y):
    return brusselator(t, vj.constant(y)).numpy()


def timed(**kwargs):
    start = time.perf_counter()
    sol = solve_ivp(kwargs.pop("fun", rhs), (0.0, 1.0), y0, method="BDF", rtol=1e-6,
                    atol=1e-8, **kwargs)
    return sol, time.perf_counter() - start


runs = {
    "vecjac sparse": timed(fun=jac.fun, jac=jac),
    "finite differences (jac_sparsity)": timed(jac_sparsity=pattern),
}
for name, (sol, seconds) in runs.items():
    print(f"{name:36s} {seconds:6.2f} s   steps {sol.t.size:4d}   f evals {sol.nfev:5d}   "
          f"Jacobians {sol.njev:3d}")
reference = runs["vecjac sparse"][0].y[:, -1]
for name, (sol, _) in runs.items():
    assert sol.success
    assert np.allclose(sol.y[:, -1], reference, rtol=1e-3, atol=1e-5), name

# %%
dense_jac = vj.scipy.jac(brusselator, argnums=1)
y1 = reference + 0.01
for name, fn in [("sparse", jac), ("dense", dense_jac)]:
    fn(0.0, y1)  # the first call detects / learns (not timed)
    start = time.perf_counter()
    for _ in range(3):
        result = fn(0.0, y1 + _)
    print(f"one {name} Jacobian: {(time.perf_counter() - start) / 3 * 1e3:7.1f} ms")
assert np.allclose(jac(0.0, y1).toarray(), dense_jac(0.0, y1), rtol=1e-12, atol=1e-9)

# %%
u_end = runs["vecjac sparse"][0].y[:, -1].reshape(N, N, 2)[..., 0]
plt.imshow(u_end, cmap="viridis")
plt.title("u at t = 1")
plt.colorbar()
plt.show()

# %% [markdown]
# ## When to use sparse Jacobians
#
# - The Jacobian is large and most entries are structurally zero: discretized PDEs, chains,
#   graphs, local interactions. The cost is (number of colors) JVPs, independent of size.
# - The same function is differentiated many times (an implicit ODE solver, Newton
#   iterations): the pattern is detected and colored once per input shape.
# - Dense problems gain nothing: a dense row needs as many colors as columns. Use
#   `vj.jacobian` there.
