"""Non-stiff ODE sensitivities side by side (issue 27): Lotka-Volterra, 4 parameters.

    python benchmarks/lotka_volterra.py [--repeat 5]

dy1/dt = a y1 - b y1 y2, dy2/dt = -c y2 + d y1 y2, y0 = (10, 5), (a, b, c, d) =
(1.1, 0.4, 0.4, 0.1), outputs at 50 times in [0, 10]; loss: the sum of squares of the
outputs. The gradient of the loss with respect to the 4 parameters, by:
- vecjac: vj.grad of vj.scipy.integrate.solve_ivp (RK45, rtol 1e-8, atol 1e-10), reverse
  mode (the default adjoint, y read from the forward run), and vj.jacfwd of the
  trajectory (forward sensitivities) contracted with the loss's gradient;
- JAX: jax.grad of jax.experimental.ode.odeint (Dormand-Prince, same tolerances), eager
  and jax.jit (first call: tracing and compilation; then repeated calls);
- torchdiffeq: odeint_adjoint and plain backprop through odeint (dopri5), if installed.
Each system also reports its gradient's largest relative difference from vecjac's
reverse mode (the solvers differ, so ~1e-6 is agreement at these tolerances).
Wall-clock medians of `--repeat` calls after the first, interleaved per round; the
machine is shared, compare within one run.
"""
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import vecjac as vj  # noqa: E402

P0 = np.array([1.1, 0.4, 0.4, 0.1])
Y0 = np.array([10.0, 5.0])
T = np.linspace(0.0, 10.0, 50)
RTOL, ATOL = 1e-8, 1e-10


def vecjac_loss(p):
    def rhs(t, y, p):
        return vj.stack([p[0] * y[0] - p[1] * y[0] * y[1], -p[2] * y[1] + p[3] * y[0] * y[1]])
    sol = vj.scipy.integrate.solve_ivp(rhs, (0.0, 10.0), Y0, t_eval=T, args=(p,),
                                       rtol=RTOL, atol=ATOL)
    return vj.reduce_sum(sol.y ** 2)


def vecjac_trajectory(p):
    def rhs(t, y, p):
        return vj.stack([p[0] * y[0] - p[1] * y[0] * y[1], -p[2] * y[1] + p[3] * y[0] * y[1]])
    return vj.scipy.integrate.solve_ivp(rhs, (0.0, 10.0), Y0, t_eval=T, args=(p,),
                                        rtol=RTOL, atol=ATOL).y


def systems():
    grad = vj.grad(vecjac_loss)
    jac = vj.jacfwd(vecjac_trajectory)

    def forward_sensitivities(p):
        y = vecjac_trajectory(p).numpy()
        return np.einsum("dt,dtp->p", 2 * y, jac(p).numpy())
    out = {"vecjac reverse": lambda: grad(P0).numpy(),
           "vecjac forward sens.": lambda: forward_sensitivities(P0)}
    try:
        import jax
        from jax.experimental.ode import odeint
        jax.config.update("jax_enable_x64", True)
        jnp = jax.numpy

        def jloss(p):
            def rhs(y, t, p):
                return jnp.stack([p[0] * y[0] - p[1] * y[0] * y[1],
                                  -p[2] * y[1] + p[3] * y[0] * y[1]])
            return jnp.sum(odeint(rhs, jnp.asarray(Y0), jnp.asarray(T), p, rtol=RTOL,
                                  atol=ATOL) ** 2)
        jgrad = jax.grad(jloss)
        jitted = jax.jit(jgrad)
        out["JAX eager"] = lambda: np.asarray(jgrad(jnp.asarray(P0)))
        out["jax.jit"] = lambda: np.asarray(jitted(jnp.asarray(P0)))
    except ImportError:
        pass
    try:
        import torch
        import torchdiffeq
        torch.set_default_dtype(torch.float64)

        class LV(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.p = torch.nn.Parameter(torch.tensor(P0))

            def forward(self, t, y):
                p = self.p
                return torch.stack([p[0] * y[0] - p[1] * y[0] * y[1],
                                    -p[2] * y[1] + p[3] * y[0] * y[1]])

        def torch_grad(solver):
            def run():
                f = LV()
                y = solver(f, torch.tensor(Y0), torch.tensor(T), rtol=RTOL, atol=ATOL)
                (y ** 2).sum().backward()
                return f.p.grad.numpy().copy()
            return run
        out["torchdiffeq adjoint"] = torch_grad(torchdiffeq.odeint_adjoint)
        out["torchdiffeq backprop"] = torch_grad(torchdiffeq.odeint)
    except ImportError:
        pass
    return out


def main():
    repeat = int(sys.argv[sys.argv.index("--repeat") + 1]) if "--repeat" in sys.argv else 5
    runs = systems()
    first, times, grads = {}, {k: [] for k in runs}, {}
    for name, run in runs.items():
        t0 = time.perf_counter()
        grads[name] = run()
        first[name] = time.perf_counter() - t0
    for _ in range(repeat):
        for name, run in runs.items():
            t0 = time.perf_counter()
            run()
            times[name].append(time.perf_counter() - t0)
    ref = grads["vecjac reverse"]
    base = statistics.median(times["vecjac reverse"])
    print("| system | first call | repeated call (median) | / vecjac reverse | max rel. diff |")
    print("|---|---|---|---|---|")
    for name in runs:
        med = statistics.median(times[name])
        diff = np.max(np.abs(grads[name] - ref) / np.abs(ref))
        print(f"| {name} | {first[name] * 1e3:.1f} ms | {med * 1e3:.2f} ms | "
              f"{med / base:.2f} | {diff:.1e} |")


if __name__ == "__main__":
    main()
