# %% [markdown]
# # Sensitivities of solver solutions: a steady state and a stiff trajectory
#
# A model is often not a formula but the answer of a solver: the steady state of a
# reaction network is a root of its rate equations, a trajectory is what an ODE integrator
# returns. `vj.scipy.optimize` and `vj.scipy.integrate` run SciPy's own solvers and return
# their results as Tensors that vecjac differentiates with respect to the parameters, without
# unrolling the solver's iterations:
#
# - a root $x^*$ of $F(x, \theta) = 0$ by the implicit function theorem,
#   $\partial x^*/\partial\theta = -(\partial F/\partial x)^{-1}\,\partial F/\partial\theta$:
#   one linear solve per direction, whatever the solver did to find $x^*$;
# - an ODE solution $y(t; \theta)$ by integrating more ODEs: the sensitivity equations
#   forwards (forward mode, one column per parameter) or the adjoint equations backwards
#   (reverse mode, one row per scalar output, the cheap way to the gradient of a loss).
#
# Three parts: the steady state of a small enzymatic pathway, the stiff Robertson kinetics
# with BDF, and a parameter fit that uses the derivatives of the trajectory.

# %%
import time

import matplotlib.pyplot as plt
import numpy as np
import scipy.integrate
import scipy.optimize

import vecjac as vj

plt.rcParams["figure.figsize"] = (11, 4.5)

# %% [markdown]
# ## 1. The steady state of a pathway, with `vj.scipy.optimize.root`
#
# A linear pathway $\to x_1 \to x_2 \to x_3 \to$ whose first step is inhibited by its end
# product $x_3$ (feedback inhibition), with a leak of $x_1$ and Michaelis-Menten kinetics in
# the middle:
#
# $$\dot x_1 = \frac{V_0}{1 + (x_3/K_i)^2} - \frac{V_1 x_1}{K_1 + x_1} - d_1 x_1, \quad
#   \dot x_2 = \frac{V_1 x_1}{K_1 + x_1} - \frac{V_2 x_2}{K_2 + x_2}, \quad
#   \dot x_3 = \frac{V_2 x_2}{K_2 + x_2} - k_3 x_3.$$
#
# (The model and its values are made up for this notebook.) The steady state $x^*(\theta)$ is
# the root of the right-hand side; `vj.scipy.optimize.root` calls SciPy's `root` (with
# vecjac's exact Jacobian as `jac=`) and returns `x` as a Tensor that depends on the
# parameters passed in `args`.

# %%
NAMES = ["V0", "Ki", "V1", "K1", "d1", "V2", "K2", "k3"]
theta0 = np.array([10.0, 1.0, 8.0, 2.0, 0.5, 6.0, 1.0, 1.0])


def pathway(x, theta):
    """d(x1, x2, x3)/dt at x for the parameters theta (8,)."""
    V0, Ki, V1, K1, d1, V2, K2, k3 = (theta[i] for i in range(8))
    v0 = V0 / (1.0 + (x[2] / Ki) ** 2)
    v1 = V1 * x[0] / (K1 + x[0])
    v2 = V2 * x[1] / (K2 + x[1])
    return vj.stack([v0 - v1 - d1 * x[0], v1 - v2, v2 - k3 * x[2]])


def steady_state(theta):
    sol = vj.scipy.optimize.root(pathway, np.ones(3), args=(theta,), tol=1e-12)
    assert sol.success, sol.message
    return sol.x


x_star = steady_state(theta0)
print("x* =", x_star.numpy(), " |F(x*)| =", np.abs(pathway(x_star, theta0).numpy()).max())

# %% [markdown]
# The sensitivity matrix $S = \partial x^*/\partial\theta$ (3 x 8) is the Jacobian of
# `steady_state`, as of any other function: `vj.jacobian` picks reverse mode here (3 rows
# against 8 columns), three adjoint solves with $(\partial F/\partial x)^T$, all at once.
# Forward mode gives the same matrix from eight solves; and the implicit function theorem
# written out by hand, from the Jacobians of `pathway` alone, gives it too.

# %%
S = vj.jacobian(steady_state)(theta0).numpy()
S_fwd = vj.jacobian(steady_state, mode="fwd")(theta0).numpy()
F_x = vj.jacobian(pathway, argnums=0)(x_star, theta0).numpy()
F_theta = vj.jacobian(pathway, argnums=1)(x_star, theta0).numpy()
S_ift = -np.linalg.solve(F_x, F_theta)
print("S:", S.shape, " max |S - S_fwd| =", f"{np.abs(S - S_fwd).max():.1e}",
      " max |S - S_ift| =", f"{np.abs(S - S_ift).max():.1e}")

# %% [markdown]
# An independent check: central differences of SciPy's `root` itself (NumPy in and out), two
# solves per parameter with a step relative to the parameter. Their error is about
# $h^2$ plus the solver's tolerance over $h$: around 1e-10 here.

# %%
def scipy_steady_state(theta):
    sol = scipy.optimize.root(lambda x: pathway(x, theta).numpy(), np.ones(3), tol=1e-13)
    assert sol.success
    return sol.x


columns = []
for j in range(len(theta0)):
    h = 1e-5 * theta0[j]
    step = np.zeros_like(theta0)
    step[j] = h
    columns.append((scipy_steady_state(theta0 + step) - scipy_steady_state(theta0 - step))
                   / (2 * h))
S_fd = np.stack(columns, axis=1)
error = np.abs(S - S_fd).max() / np.abs(S_fd).max()
print(f"max |S - S_fd| / max |S_fd| = {error:.1e}")
assert error < 1e-6

# %% [markdown]
# Parameters and concentrations have different units; the scaled sensitivities
# $\partial \ln x_i^* / \partial \ln\theta_j$ (the percent change of $x_i^*$ per percent
# change of $\theta_j$, the *concentration control coefficients* of metabolic control
# analysis) compare them. They show the structure of the pathway: $V_2$ and $K_2$ move only
# $x_2$ (nothing depends on $x_2$ but the step it feeds, which carries at steady state the
# flux the rest of the pathway sets: $V_2$ and $K_2$ only decide how much $x_2$ that takes),
# and $k_3$ lowers $x_3$ but raises everything upstream, by relieving the inhibition.
#
# A check that needs no solver: multiplying every rate by the same factor (the enzyme
# amounts $V_0, V_1, d_1, V_2, k_3$) only speeds the dynamics up, so the steady state does not
# move, and their scaled sensitivities sum to zero in each row (the summation theorem).

# %%
scaled = S * theta0 / x_star.numpy()[:, None]
rate_scales = [NAMES.index(n) for n in ("V0", "V1", "d1", "V2", "k3")]
print("sum over the rate scales, per species:", scaled[:, rate_scales].sum(axis=1))
assert np.abs(scaled[:, rate_scales].sum(axis=1)).max() < 1e-12

fig, ax = plt.subplots(figsize=(9, 3.2))
limit = np.abs(scaled).max()
im = ax.imshow(scaled, cmap="RdBu_r", vmin=-limit, vmax=limit)
for (i, j), value in np.ndenumerate(scaled):
    ax.text(j, i, f"{value:.2f}", ha="center", va="center", fontsize=9)
ax.set_xticks(range(len(NAMES)), NAMES)
ax.set_yticks(range(3), ["x1*", "x2*", "x3*"])
ax.set_title(r"Scaled sensitivities $\partial \ln x_i^* / \partial \ln \theta_j$")
_ = fig.colorbar(im, ax=ax)

# %% [markdown]
# The derivative is local; a sweep of the inflow $V_0$ shows what it predicts. At each $V_0$,
# `vj.jvp` returns the root and its derivative $\partial x^*/\partial V_0$ together (one
# solve, then one linear solve for the tangent); the short segments are the tangents
# $x^* + (\partial x^*/\partial V_0)\,\Delta V_0$ at a few points. The feedback makes
# the response saturate: a tenfold inflow raises $x_3^*$ only about 2.5-fold.

# %%
def steady_state_of_inflow(V0):
    return steady_state(vj.concat([vj.reshape(V0, (1,)), theta0[1:]], axis=0))


inflows = np.linspace(1.0, 40.0, 40)
states, slopes = [], []
for V0 in inflows:
    x, dx = vj.jvp(steady_state_of_inflow, (V0,), (1.0,))
    states.append(x.numpy())
    slopes.append(dx.numpy())
states, slopes = np.array(states), np.array(slopes)

fig, axes = plt.subplots(1, 2)
for i, color in enumerate(["C0", "C1", "C2"]):
    axes[0].plot(inflows, states[:, i], color=color, label=f"x{i + 1}*")
    for k in range(3, 40, 9):
        dV = np.array([-3.0, 3.0])
        axes[0].plot(inflows[k] + dV, states[k, i] + slopes[k, i] * dV, color="k", lw=1)
    axes[1].plot(inflows, slopes[:, i] * inflows / states[:, i], color=color, label=f"x{i + 1}*")
axes[0].set_xlabel("V0")
axes[0].set_title("steady state and its tangents")
axes[1].set_xlabel("V0")
axes[1].set_title(r"$\partial \ln x_i^* / \partial \ln V_0$")
axes[0].legend()
_ = axes[1].legend()

# %% [markdown]
# The implicit rule is itself written with vecjac ops (the residual, its Jacobian, a
# differentiable linear solve), so it differentiates again: the curvature
# $\partial^2 x^*/\partial V_0^2$, which bends the curves away from their tangents, by
# forward over forward mode, against differences of the first derivative.

# %%
def slope(V0):
    return vj.jacfwd(steady_state_of_inflow)(V0)


curvature = vj.jacfwd(slope)(10.0).numpy()
h = 1e-4
curvature_fd = (slope(10.0 + h).numpy() - slope(10.0 - h).numpy()) / (2 * h)
print("d2 x* / dV0^2 at V0 = 10:", curvature, " max rel. error vs differences",
      f"{np.abs(curvature - curvature_fd).max() / np.abs(curvature_fd).max():.1e}")
assert np.allclose(curvature, curvature_fd, rtol=1e-6)

# %% [markdown]
# ## 2. A stiff trajectory: Robertson's kinetics with BDF
#
# Robertson's three-species reaction (H. H. Robertson, 1966; the standard stiff test problem,
# with its usual rate constants $k_1 = 0.04$, $k_2 = 3 \cdot 10^7$, $k_3 = 10^4$):
#
# $$A \xrightarrow{k_1} B, \quad B + B \xrightarrow{k_2} C + B,
#   \quad B + C \xrightarrow{k_3} A + C,$$
#
# starting from pure $A$. The rate constants span nine orders of magnitude and so do the time
# scales: $B$ reaches its quasi-steady level within $10^{-2}$ s, while $A$ turns into $C$ over
# $10^5$ s. An explicit method, held to steps of a few $10^{-4}$ s by the fast reactions, would
# need hundreds of millions of steps; BDF takes a few hundred.
#
# The parameters are the logarithms of the rate constants, so that the derivatives are the
# response to relative changes. `vj.scipy.integrate.solve_ivp` has SciPy's signature;
# parameters come in through `args`, and stiff methods get the Jacobian from vecjac.

# %%
def robertson(t, y, log_k):
    k = vj.exp(log_k)
    r1, r2, r3 = k[0] * y[0], k[1] * y[1] ** 2, k[2] * y[1] * y[2]
    return vj.stack([-r1 + r3, r1 - r2 - r3, r2])


log_k0 = np.log([0.04, 3e7, 1e4])
y0 = np.array([1.0, 0.0, 0.0])
TOL = dict(rtol=1e-8, atol=1e-12)
t_plot = np.logspace(-4, 5, 28)


def trajectory(log_k, y0=y0, t_eval=t_plot, adjoint="interpolated"):
    """y at t_eval, (3, len(t_eval))."""
    sol = vj.scipy.integrate.solve_ivp(robertson, (0.0, t_eval[-1]), y0, method="BDF",
                                       t_eval=t_eval, args=(log_k,), adjoint=adjoint, **TOL)
    return sol.y


start = time.perf_counter()
Y = trajectory(log_k0).numpy()
t_primal = time.perf_counter() - start
print(f"one solve: {t_primal:.2f} s")

# %% [markdown]
# ### Forward sensitivities
#
# 84 outputs, 3 parameters: forward mode. `vj.jacfwd` pushes one tangent per parameter; the
# three become one augmented system (the state and its three sensitivity columns) that BDF
# integrates in one run. Dividing by $y$ gives the normalized sensitivities
# $\partial \ln y_i / \partial \ln k_j$, plotted over log time.

# %%
start = time.perf_counter()
sens = vj.jacfwd(trajectory)(log_k0).numpy()  # (3 species, 28 times, 3 parameters)
print(f"forward sensitivities: {time.perf_counter() - start:.2f} s")
log_sens = sens / Y[:, :, None]

fig, axes = plt.subplots(1, 4, figsize=(15, 3.8))
for i, name in enumerate("ABC"):
    axes[0].loglog(t_plot, Y[i], label=name)
    for j in range(3):
        axes[i + 1].semilogx(t_plot, log_sens[i, :, j], label=f"$k_{j + 1}$")
    axes[i + 1].axhline(0, color="gray", lw=0.5)
    axes[i + 1].set_title(rf"$\partial \ln y_{name} / \partial \ln k_j$")
    axes[i + 1].set_xlabel("t")
axes[0].set_title("concentrations")
axes[0].set_xlabel("t")
axes[0].legend()
axes[3].legend()
fig.tight_layout()

# %% [markdown]
# The curves read like the mechanism. Early on, $B \approx k_1 t$ and $C \approx k_2 k_1^2 t^3/3$:
# the normalized sensitivities of $C$ to $(k_1, k_2, k_3)$ start at $(2, 1, 0)$, those of $B$
# at $(1, 0, 0)$. Once $B$ is quasi-steady and $C$ has built up, $B$ goes mostly back to $A$
# ($k_3 B C$ dominates its consumption), so $B \approx k_1 A / (k_3 C)$ and $A$ turns into $C$
# at the rate $k_2 B^2 = (k_2 / k_3^2)\,k_1^2 A^2 / C^2$: late, $A$ and $C$ depend on $k_2$ and
# $k_3$ only through $k_2/k_3^2$, and their sensitivities to $k_3$ are $-2$ times those to
# $k_2$ (part 3 comes back to this).

# %%
early = 0  # t = 1e-4
print("early, d ln C / d ln k:", np.round(log_sens[2, early], 4))
print("early, d ln B / d ln k:", np.round(log_sens[1, early], 4))
assert np.allclose(log_sens[2, early], [2.0, 1.0, 0.0], atol=0.01)
assert np.allclose(log_sens[1, early], [1.0, 0.0, 0.0], atol=0.01)
late = t_plot >= 1e2
ratio = log_sens[[0, 2]][:, late, 2] / log_sens[[0, 2]][:, late, 1]
print(f"t >= 100, A and C: (d ln y / d ln k3) / (d ln y / d ln k2) = -2 to within "
      f"{np.abs(ratio + 2).max():.1e}")
assert np.allclose(ratio, -2.0, rtol=0.02)

# %% [markdown]
# ### The gradient of a loss: reverse mode, checked
#
# A scalar loss of the trajectory, the mean squared misfit to noisy measurements of $A$ and $C$ at
# six times, has a gradient with respect to the rate constants and to the initial state
# $y_0$: six numbers. Reverse mode gets them in one backward pass: the adjoint equations,
# integrated from the last measurement back to $t = 0$, with the measurements' cotangents
# added at their times. Forward mode gets them from six tangents; central differences of
# SciPy's own `solve_ivp` (on a NumPy copy of the model, at tighter tolerance) from twelve
# solves. They agree to a few parts in a million: each is the derivative of the exact solution,
# computed to about the solver's tolerance (rtol $10^{-8}$).

# %%
t_obs = np.logspace(-2, 3, 6)
rng = np.random.default_rng(27)
SIGMA = 0.01
observed = [0, 2]  # A and C
data = trajectory(log_k0, t_eval=t_obs).numpy()[observed]
data = data + SIGMA * rng.standard_normal(data.shape)


def loss(log_k, y0, adjoint="interpolated"):
    misfit = trajectory(log_k, y0, t_obs, adjoint)[observed] - data
    return 0.5 * vj.reduce_mean(misfit ** 2)


log_k1 = log_k0 + np.array([0.1, -0.2, 0.2])   # away from the truth: a gradient to check
start = time.perf_counter()
loss(log_k1, y0)
t_loss = time.perf_counter() - start
gradients, timings = {}, {}
for adjoint in ("interpolated", "checkpoint"):
    start = time.perf_counter()
    g_k, g_y0 = vj.grad(loss, argnums=(0, 1))(log_k1, y0, adjoint)
    timings[f"reverse, adjoint={adjoint!r}"] = time.perf_counter() - start
    gradients[adjoint] = np.concatenate([g_k.numpy(), g_y0.numpy()])
start = time.perf_counter()
q1 = np.concatenate([log_k1, y0])   # all six at once for forward mode
gradients["forward"] = vj.jacfwd(lambda q: loss(q[:3], q[3:]))(q1).numpy()
timings["forward (6 tangents)"] = time.perf_counter() - start


def robertson_numpy(t, y, log_k):
    k = np.exp(log_k)
    r1, r2, r3 = k[0] * y[0], k[1] * y[1] ** 2, k[2] * y[1] * y[2]
    return np.array([-r1 + r3, r1 - r2 - r3, r2])


def scipy_loss(q):
    sol = scipy.integrate.solve_ivp(robertson_numpy, (0.0, t_obs[-1]), q[3:], method="BDF",
                                    t_eval=t_obs, args=(q[:3],), rtol=1e-12, atol=1e-16)
    return 0.5 * np.mean((sol.y[observed] - data) ** 2)


fd_steps = [1e-4] * 3 + [1e-5, 1e-8, 1e-5]  # B is ~1e-5: its step must stay far below
gradients["central differences"] = np.array(
    [(scipy_loss(q1 + h * e) - scipy_loss(q1 - h * e)) / (2 * h)
     for h, e in zip(fd_steps, np.eye(6))])

fd, fwd = gradients["central differences"], gradients["forward"]
print("gradient w.r.t. (log k1, log k2, log k3, A0, B0, C0), relative errors (max over entries"
      " / max entry):")
for name, g in gradients.items():
    err_fd = np.abs(g - fd).max() / np.abs(fd).max()
    err_fwd = np.abs(g - fwd).max() / np.abs(fwd).max()
    print(f"  {name:20s} {np.array2string(g, precision=6)}  vs forward {err_fwd:.1e}, "
          f"vs differences {err_fd:.1e}")
    assert err_fwd < 1e-5 and err_fd < 1e-5, name
for name, seconds in timings.items():
    print(f"{name:34s} {seconds:5.2f} s  ({seconds / t_loss:4.1f} x the loss alone, "
          f"{t_loss:.2f} s)")

# %% [markdown]
# What the `adjoint` options cost: the backward pass needs $y(t)$ along the way.
# `"interpolated"` (the default) keeps the forward run's dense output, SciPy's interpolant:
# up to six coefficients per state and forward step. `"checkpoint"` keeps $y$ only at the
# outputs and at a few more times (10 by default) and integrates each segment between them
# again on the way back: one more forward solve, in pieces, for memory that does not grow
# with the number of steps. Both integrate only the adjoint backwards, with BDF, as a stiff
# problem needs (the third option, `"backsolve"`, integrates $y$ backwards too: it raises
# here, Robertson's kinetics being unstable backwards in time).
#
# Here the three ways cost about the same. Forward mode's cost grows with the number of
# parameters (a sensitivity column each), reverse mode's with the number of measurement
# times (the backward integration restarts at each one, where the cotangent jumps) but not
# with the number of parameters: for thousands of parameters (a rate per grid cell) it is
# the only way.

# %%
dense = vj.scipy.integrate.solve_ivp(robertson, (0.0, t_obs[-1]), y0, method="BDF",
                                     t_eval=t_obs, args=(log_k1,), dense_output=True, **TOL)
steps = dense.sol.ts.size - 1
print(f"forward steps: {steps}; kept by 'interpolated': up to {steps * 6 * 3} floats; "
      f"by 'checkpoint': {(len(t_obs) + 10) * 3} floats plus one segment's interpolant")

# %% [markdown]
# ## 3. Fitting the rate constants
#
# With derivatives of the trajectory at hand, fitting is a few lines:
# `vj.scipy.optimize.least_squares` runs SciPy's trust-region least squares with vecjac's
# Jacobian of the residuals (forward sensitivities: 18 residuals x 3 parameters, one
# augmented BDF solve per Jacobian).
#
# The data must determine the parameters. The sensitivities above say that, late, $A$ and $C$
# depend on $k_2$ and $k_3$ only through $k_2/k_3^2$: from $A$ and $C$ alone the two are not
# determined separately, and a fit to them wanders off along that ratio. Measuring $B$ as
# well (at its $10^{-5}$ scale, with 1% relative noise on every measurement) separates them.
# Starting a factor $e$ away from each constant, the fit recovers all three to within about
# a percent; its solves use a looser tolerance (rtol $10^{-6}$), enough for 1% data.

# %%
Y_obs = trajectory(log_k0, t_eval=t_obs).numpy()
data3 = Y_obs * (1 + 0.01 * rng.standard_normal(Y_obs.shape))   # A, B and C, 1% noise


def residuals(log_k, data):
    sol = vj.scipy.integrate.solve_ivp(robertson, (0.0, t_obs[-1]), y0, method="BDF",
                                       t_eval=t_obs, args=(log_k,), rtol=1e-6, atol=1e-10)
    return vj.reshape((sol.y - data) / (0.01 * data), (-1,))


guess = log_k0 + np.array([1.0, -1.0, 1.0])
start = time.perf_counter()
fit = vj.scipy.optimize.least_squares(residuals, guess, args=(data3,))
print(f"least_squares: {time.perf_counter() - start:.1f} s, {fit.nfev} solves, "
      f"{fit.njev} Jacobians, chi^2 / 2 = {fit.cost:.1f} (18 residuals)")
for name, true, start_value, found in zip(["k1", "k2", "k3"], np.exp(log_k0), np.exp(guess),
                                          np.exp(fit.x.numpy())):
    print(f"  {name}: true {true:9.3g}   start {start_value:9.3g}   fitted {found:9.4g}"
          f"   ({found / true - 1:+.2%})")
assert np.allclose(fit.x.numpy(), log_k0, atol=0.05)

# %%
t_fine = np.logspace(-4, 4, 33)
fitted = trajectory(fit.x, t_eval=t_fine).numpy()
initial = trajectory(guess, t_eval=t_fine).numpy()
fig, axes = plt.subplots(1, 2)
for ax, species in zip(axes, ([0, 2], [1])):
    for i in species:
        name, scale = "ABC"[i], (1e4 if i == 1 else 1.0)
        line, = ax.semilogx(t_fine, scale * fitted[i], label=f"{name}, fitted")
        ax.semilogx(t_fine, scale * initial[i], ":", color=line.get_color(),
                    label=f"{name}, start")
        ax.plot(t_obs, scale * data3[i], "o", ms=5, color=line.get_color())
    ax.set_xlabel("t")
    ax.legend()
axes[0].set_title("A and C: data (dots), start and fit")
_ = axes[1].set_title(r"B ($\times 10^4$)")
