# %% [markdown]
# # Newton's method with vecjac
#
# A Newton step uses the gradient $g$ and the Hessian $H$ of the loss: solve
# $(H + \lambda I)\,d = g$ and move the parameters by $-d$. Near a minimum it converges
# quadratically (the number of correct digits doubles per step), where gradient descent
# converges linearly at a rate set by the conditioning of $H$.
#
# `vj.newton_step(loss_fn, variables)` does the whole step across several variables at
# once (full Hessian over all of them, a solve, the update of each variable; Hessian-free
# conjugate gradient for large problems). Its default `damping="auto"` takes the pure
# Newton step ($\lambda = 0$) wherever $H$ is positive definite and the step lowers the
# loss, so the last steps converge quadratically; elsewhere it adds Levenberg damping
# $\lambda$ until the step does lower it. We compare it with gradient descent
# and with `scipy.optimize.minimize` fed with vecjac derivatives (`vj.scipy`), on the
# Rosenbrock function and on a logistic regression.

# %%
import time
import warnings

import numpy as np
import matplotlib.pyplot as plt
import scipy.optimize

import vecjac as vj

plt.rcParams["figure.figsize"] = (11, 4.5)

# %% [markdown]
# ## The Rosenbrock function
#
# $f(x, y) = (1 - x)^2 + 100\,(y - x^2)^2$ has its minimum $f = 0$ at $(1, 1)$ at the end
# of a long curved valley; the classic start is $(-1.2, 1)$.

# %%
def rosenbrock(p):
    return (1.0 - p[0]) ** 2 + 100.0 * (p[1] - p[0] ** 2) ** 2


start = np.array([-1.2, 1.0])

# Newton: vj.newton_step updates the Variable in place and reports the step (the loss
# before it, the damping it took ...)
p = vj.Variable(start)
newton_path, dampings = [p.numpy().copy()], []
for _ in range(40):
    dampings.append(vj.newton_step(lambda: rosenbrock(p), [p]).damping)
    newton_path.append(p.numpy().copy())
    if float(rosenbrock(p)) < 1e-25:
        break

# pure Newton, damping=0.0: it warns (RuntimeWarning, with the losses) where a step raises f
q = vj.Variable(start)
pure_path = [q.numpy().copy()]
with warnings.catch_warnings(record=True) as raised:
    warnings.simplefilter("always", RuntimeWarning)
    for _ in range(20):
        vj.newton_step(lambda: rosenbrock(q), [q], damping=0.0)
        pure_path.append(q.numpy().copy())
        if float(rosenbrock(q)) < 1e-25:
            break
print(f"pure Newton warned {len(raised)} times, e.g.: {raised[0].message}")

# gradient descent, with the largest stable fixed step (the curvature is ~1300 at the start)
value_and_grad = vj.value_and_grad(rosenbrock)
x = start.copy()
gd_path = [x.copy()]
for _ in range(3000):
    _, g = value_and_grad(x)
    x = x - 1e-3 * np.asarray(g)
    gd_path.append(x.copy())

# SciPy with vecjac derivatives: exact Hessians (trust region), Hessian-vector products (CG)
scipy_paths = {}
for method in ["trust-exact", "Newton-CG"]:
    path = [start.copy()]
    result = vj.scipy.minimize(rosenbrock, start, method=method,
                               callback=lambda xk, path=path: path.append(np.copy(xk)))
    scipy_paths[method] = path
    print(f"scipy {method}: {result.nit} iterations, f = {result.fun:.2e}")

print(f"vj.newton_step: {len(newton_path) - 1} steps, f = {float(rosenbrock(p)):.2e}, "
      f"{sum(lam > 0 for lam in dampings)} of them damped")
print(f"pure Newton (damping=0.0): {len(pure_path) - 1} steps, f = "
      f"{float(rosenbrock(q)):.2e}")
print(f"gradient descent: 3000 steps, f = {float(rosenbrock(x)):.2e}")
assert float(rosenbrock(p)) < 1e-20 and len(newton_path) <= 30
assert np.all(np.diff([float(rosenbrock(v)) for v in newton_path]) <= 0)  # never rises
assert max(float(rosenbrock(v)) for v in pure_path) > 1e3  # pure Newton's jump, step 2


# %%
def losses(path):
    return np.array([float(rosenbrock(q)) for q in path])


runs = {"vj.newton_step": newton_path, "pure Newton (damping=0)": pure_path,
        "gradient descent (step 1e-3)": gd_path,
        "scipy trust-exact + vj.scipy": scipy_paths["trust-exact"],
        "scipy Newton-CG + vj.scipy": scipy_paths["Newton-CG"]}

fig, (ax0, ax1) = plt.subplots(1, 2)
xs, ys = np.meshgrid(np.linspace(-1.6, 1.6, 300), np.linspace(-0.6, 1.8, 300))
ax0.contour(xs, ys, rosenbrock(np.stack([xs, ys])), levels=np.logspace(-1, 3, 14),
            colors="lightgray", linewidths=0.8)
for label, path in runs.items():
    path = np.array(path)
    ax0.plot(path[:, 0], path[:, 1], ".-", ms=4, lw=1, label=label)
    ax1.semilogy(np.maximum(losses(path), 1e-22), ".-", ms=3, lw=1, label=label)
ax0.plot(1, 1, "k*", ms=12)
ax0.set_xlim(-1.6, 1.6)
ax0.set_ylim(-0.6, 1.8)
ax0.set_title("paths from (-1.2, 1)")
ax1.set_xscale("symlog", linthresh=10)
ax1.set_xlabel("iteration")
ax1.set_ylabel("f (floored at 1e-22)")
ax1.set_title("Rosenbrock: loss per iteration")
_ = ax1.legend(fontsize=8)

# %% [markdown]
# Pure Newton is not monotone here: it jumps out of the valley to $f \approx 1.4 \cdot 10^3$
# at step 2 (and warns), and back, and happens to reach $f = 0$ in 7 steps.
# `vj.newton_step`'s default damps the steps that would raise $f$ (the early ones, in the
# curved valley) and follows the valley down; its last steps are pure Newton steps and
# converge quadratically. The trust-region method also guards each step and needs a few
# more; gradient descent, held back by the $\sim 1000{:}1$ conditioning of the valley,
# is still far away after 3000 steps. The
# contour plot is computed by calling `rosenbrock` on a NumPy grid: the same function
# works on plain arrays.
#
# ## Logistic regression, two variables
#
# A weight vector `w` and a bias `b`, a mean log-loss with a small L2 penalty. The loss is
# convex and smooth, the features are badly scaled on purpose (standard deviations from
# 0.5 to 3), which is what slows gradient descent down.

# %%
rng = np.random.default_rng(0)
n, d = 400, 5
X = rng.standard_normal((n, d)) * np.array([1.0, 2.0, 0.5, 1.0, 3.0])
w_true = rng.standard_normal(d)
labels = (rng.uniform(size=n) < 1 / (1 + np.exp(-(X @ w_true + 0.5)))).astype(float)
l2 = 1e-2


def log_loss(w, b):
    z = vj.linalg.matvec(X, w) + b
    return vj.reduce_mean(vj.nn.softplus(z) - labels * z) + 0.5 * l2 * vj.reduce_sum(w**2)


def log_loss_flat(theta):  # one parameter vector, for SciPy
    return log_loss(theta[:d], theta[d])


# %%
def timed(step, iters):
    """(loss per iteration, seconds elapsed at each) of a run that calls step() iters times."""
    f, t, t0 = [], [], time.perf_counter()
    for _ in range(iters + 1):
        f.append(float(step()))
        t.append(time.perf_counter() - t0)
    return np.array(f), np.array(t)


w, b = vj.Variable(np.zeros(d)), vj.Variable(0.0)


def newton_iteration():
    value = float(log_loss(w, b))
    vj.newton_step(lambda: log_loss(w, b), [w, b])  # convex: never damped
    return value


newton_f, newton_t = timed(newton_iteration, 8)
f_star = float(log_loss(w, b))
H = vj.flat_hessian(lambda: log_loss(w, b), [w, b])
print(f"Newton: f* = {f_star:.12f} after 8 steps; Hessian over (w, b): {H.shape}")

theta = np.zeros(d + 1)
grad_fn = vj.value_and_grad(log_loss_flat)


def gd_iteration():
    global theta
    value, g = grad_fn(theta)
    theta = theta - 0.1 * np.asarray(g)
    return value


gd_f, gd_t = timed(gd_iteration, 400)

# %% [markdown]
# SciPy takes vecjac derivatives through three adapters: `fun_and_jac(f)` (value and
# gradient, for `jac=True`), `hess(f)` and `hessp(f)` (Hessian-vector products). Written
# out, without the `vj.scipy.minimize` shortcut used above:

# %%
scipy_runs = {}
for method, extra in [("trust-exact", {"hess": vj.scipy.hess(log_loss_flat)}),
                      ("Newton-CG", {"hessp": vj.scipy.hessp(log_loss_flat)})]:
    trace = [(float(log_loss_flat(np.zeros(d + 1))), 0.0)]
    t0 = time.perf_counter()
    result = scipy.optimize.minimize(
        vj.scipy.fun_and_jac(log_loss_flat), np.zeros(d + 1), jac=True, method=method,
        callback=lambda xk, trace=trace, t0=t0: trace.append(
            (float(log_loss_flat(xk)), time.perf_counter() - t0)), **extra)
    scipy_runs[method] = np.array(trace)
    print(f"scipy {method}: {result.nit} iterations, f - f* = {result.fun - f_star:.1e}")

assert abs(newton_f[-1] - f_star) < 1e-14
assert gd_f[-1] - f_star > 1e-6  # gradient descent is still on its way

# %%
fig, (ax0, ax1) = plt.subplots(1, 2)
curves = {"vj.newton_step": (newton_f, newton_t),
          "gradient descent (step 0.1)": (gd_f, gd_t)}
curves.update({f"scipy {m} + vj.scipy": (r[:, 0], r[:, 1]) for m, r in scipy_runs.items()})
for label, (f, t) in curves.items():
    gap = np.maximum(f - f_star, 1e-16)
    ax0.semilogy(gap, ".-", ms=3, lw=1, label=label)
    ax1.loglog(np.maximum(t, 1e-4), gap, ".-", ms=3, lw=1, label=label)
ax0.set_xscale("symlog", linthresh=10)
ax0.set_xlabel("iteration")
ax0.set_ylabel("f - f* (floored at 1e-16)")
ax0.set_title("logistic regression: per iteration")
ax1.set_xlabel("seconds")
ax1.set_title("... and per second")
_ = ax0.legend(fontsize=8)

# %% [markdown]
# Newton's method needs about 6 steps to reach $f^*$ to machine precision; gradient
# descent has gained about three digits after 400 steps. Per second Newton still wins
# here, because with 6 parameters its Hessian is tiny. A Newton step costs more than a
# gradient step (one vectorized Jacobian of the gradient, then an $(n, n)$ solve), and
# that cost grows with the number of parameters `n`: above `vj.newton.CG_THRESHOLD`
# parameters `vj.newton_step` switches to conjugate gradient with Hessian-vector products,
# which never forms $H$.
