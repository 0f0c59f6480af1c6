"""A stiff ODE with SciPy's BDF and vecjac's sparse Jacobian (issue 26's goal): the 2-D
Brusselator on an N x N periodic grid (2 N^2 states), t in [0, 1], rtol 1e-6, atol 1e-8.

Run:  python benchmarks/stiff_ode.py [--n 32] [--no-jacobian]
      python benchmarks/stiff_ode.py --sensitivities [--n 32] [--repeat 3]
Rows: SciPy with a hand-given `jac_sparsity` (colored finite differences), a hand-written
sparse `jac` (the formula in scipy.sparse), and `jac=vj.scipy.jac(rhs, argnums=1,
sparse=True)` (detection and coloring included, in the first call), with and without
jit; `--no-jacobian` adds SciPy with no Jacobian at all (minutes at N = 32). Each row is
one solve in this process (the rows interleave with their repetitions); times are the
minimum of `--repeat` solves, and every solution is compared with the first one.

--sensitivities (issue 27): the same problem's derivatives, side by side in CPU seconds
(time.process_time; first call / best of --repeat, interleaved) and as multiples of
vecjac's primal solve:
- forward sensitivities (vj.jacfwd) of y(1) for the 3 scalar parameters (A, B, alpha)
  = (1, 3.4, 0.5), with the sensitivities out of (default) and in the error control;
- the adjoint gradient (vj.grad, adjoint="interpolated") of 0.5 |y(1)|^2 with respect
  to 2 N^2 spatially varying parameters, the rates A and B of every cell;
- SciPy central differences for reference: 2 solves per parameter (jac_sparsity), run
  for the 3 parameters, and 4 N^2 solves for the per-cell rates (one solve's time
  multiplied, not run);
- the primal solve, forward sensitivities and the gradient again with jit=True (fun and
  the Jacobian replayed as vj.function traces), also as multiples of the jit primal.
Errors: forward sensitivities against SciPy's central differences at rtol 1e-10 (hand
Jacobian, relative step 1e-4), normwise per parameter; the gradient along one random
direction v against the central difference of the loss along v (SciPy, rtol 1e-10).
"""
import argparse
import os
import time

for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"):  # before NumPy loads BLAS
    os.environ.setdefault(_name, "1")

import numpy as np  # noqa: E402
import scipy.sparse as sp  # noqa: E402
from scipy.integrate import solve_ivp  # noqa: E402

import vecjac as vj  # noqa: E402

ALPHA = 0.5


def setup(n):
    scale = ALPHA * n ** 2

    def rhs_vj(t, y):
        s = vj.reshape(y, (n, n, 2))
        u, v = s[..., 0], s[..., 1]

        def lap(w):
            return (vj.roll(w, 1, 0) + vj.roll(w, -1, 0) + vj.roll(w, 1, 1) + vj.roll(w, -1, 1)
                    - 4.0 * w) * scale
        uuv = u * u * v
        return vj.reshape(vj.stack([1.0 + uuv - 4.4 * u + lap(u), 3.4 * u - uuv + lap(v)], -1),
                          (-1,))

    def rhs_np(t, y):
        s = y.reshape(n, n, 2)
        u, v = s[..., 0], s[..., 1]

        def lap(w):
            return (np.roll(w, 1, 0) + np.roll(w, -1, 0) + np.roll(w, 1, 1) +
                    np.roll(w, -1, 1) - 4.0 * w) * scale
        uuv = u * u * v
        return np.stack([1.0 + uuv - 4.4 * u + lap(u), 3.4 * u - uuv + lap(v)], -1).reshape(-1)

    idx = np.arange(n * n * 2).reshape(n, n, 2)
    lap_rows, lap_cols = [], []
    for s in (0, 1):
        for di, dj in ((1, 0), (-1, 0), (0, 1), (0, -1)):
            lap_rows.append(idx[..., s].reshape(-1))
            lap_cols.append(np.roll(np.roll(idx[..., s], di, 0), dj, 1).reshape(-1))
    lap = sp.csr_array((np.full(8 * n * n, scale), (np.concatenate(lap_rows),
                                                    np.concatenate(lap_cols))),
                       shape=(2 * n * n, 2 * n * n))
    ui, vi = idx[..., 0].reshape(-1), idx[..., 1].reshape(-1)

    def jac_hand(t, y):
        u, v = y[ui], y[vi]
        rows = np.concatenate([ui, ui, vi, vi])
        cols = np.concatenate([ui, vi, ui, vi])
        vals = np.concatenate([2 * u * v - 4.4 - 4 * scale, u * u,
                               3.4 - 2 * u * v, -u * u - 4 * scale])
        return (sp.csr_array((vals, (rows, cols)), shape=lap.shape) + lap).tocsc()

    x = np.arange(n) / n
    X, Y = np.meshgrid(x, x, indexing="ij")
    y0 = np.stack([22 * Y * (1 - Y) ** 1.5, 27 * X * (1 - X) ** 1.5], axis=-1).reshape(-1)
    pattern = (jac_hand(0.0, y0) != 0).astype(int)
    return rhs_vj, rhs_np, jac_hand, pattern, y0


def setup_parameters(n):
    """The Brusselator of setup() with its rates as arguments (y laid out (n, n, 2)):
    rhs(t, y, p) with p = (A, B, alpha), rhs_cells(t, y, q) with q = (A, B) per cell
    (2, n, n) and alpha fixed; NumPy versions and their sparse Jacobians."""
    def lap_vj(w):
        return (vj.roll(w, 1, 0) + vj.roll(w, -1, 0) + vj.roll(w, 1, 1) + vj.roll(w, -1, 1)
                - 4.0 * w) * n ** 2

    def terms_vj(y, a, b, alpha):
        s = vj.reshape(y, (n, n, 2))
        u, v = s[..., 0], s[..., 1]
        uuv = u * u * v
        return vj.reshape(vj.stack([a + uuv - (b + 1.0) * u + alpha * lap_vj(u),
                                    b * u - uuv + alpha * lap_vj(v)], -1), (-1,))

    def rhs(t, y, p):
        return terms_vj(y, p[0], p[1], p[2])

    def rhs_cells(t, y, q):
        return terms_vj(y, q[0], q[1], ALPHA)

    idx = np.arange(n * n * 2).reshape(n, n, 2)
    rows, cols = [], []
    for s in (0, 1):
        for di, dj in ((1, 0), (-1, 0), (0, 1), (0, -1)):
            rows.append(idx[..., s].reshape(-1))
            cols.append(np.roll(np.roll(idx[..., s], di, 0), dj, 1).reshape(-1))
    neighbours = sp.csr_array((np.full(8 * n * n, float(n ** 2)),
                               (np.concatenate(rows), np.concatenate(cols))),
                              shape=(2 * n * n, 2 * n * n))
    ui, vi = idx[..., 0].reshape(-1), idx[..., 1].reshape(-1)

    def rhs_np(t, y, a, b, alpha):  # a, b: numbers or (n, n) per cell
        s = y.reshape(n, n, 2)
        u, v = s[..., 0], s[..., 1]

        def lap(w):
            return (np.roll(w, 1, 0) + np.roll(w, -1, 0) + np.roll(w, 1, 1) +
                    np.roll(w, -1, 1) - 4.0 * w) * n ** 2
        uuv = u * u * v
        return np.stack([a + uuv - (b + 1.0) * u + alpha * lap(u),
                         b * u - uuv + alpha * lap(v)], -1).reshape(-1)

    def jac_np(t, y, a, b, alpha):
        u, v = y[ui], y[vi]
        a, b = np.broadcast_to(a, (n, n)).reshape(-1), np.broadcast_to(b, (n, n)).reshape(-1)
        r = np.concatenate([ui, ui, vi, vi])
        c = np.concatenate([ui, vi, ui, vi])
        vals = np.concatenate([2 * u * v - b - 1.0 - 4 * alpha * n ** 2, u * u,
                               b - 2 * u * v, -u * u - 4 * alpha * n ** 2])
        return (sp.csr_array((vals, (r, c)), shape=neighbours.shape) +
                alpha * neighbours).tocsc()
    return rhs, rhs_cells, rhs_np, jac_np


def cpu(fn):
    start = time.process_time()
    out = fn()
    return time.process_time() - start, out


def sensitivities(n, repeat):
    """The --sensitivities table (module docstring)."""
    _, _, _, pattern, y0 = setup(n)
    rhs, rhs_cells, rhs_np, jac_np = setup_parameters(n)
    p = np.array([1.0, 3.4, ALPHA])
    q = np.stack([np.full((n, n), 1.0), np.full((n, n), 3.4)])
    common = dict(method="BDF", rtol=1e-6, atol=1e-8, t_eval=[1.0])
    solve_ivp_vj = vj.scipy.integrate.solve_ivp

    def scipy_solve(a, b, alpha, **tol):
        options = dict(common, **tol)
        return solve_ivp(rhs_np, (0.0, 1.0), y0, args=(a, b, alpha), **options).y[:, -1]

    def forward(control, jit=False):
        return lambda: vj.jacfwd(lambda p: solve_ivp_vj(
            rhs, (0.0, 1.0), y0, args=(p,), sensitivity_error_control=control, jit=jit,
            **common).y[:, -1])(p)

    def loss(q, jit=False):
        y = solve_ivp_vj(rhs_cells, (0.0, 1.0), y0, args=(q,), jit=jit, **common).y[:, -1]
        return 0.5 * vj.reduce_sum(y * y)

    def central_differences_3():
        cols = []
        for j in range(3):
            e = np.zeros(3)
            e[j] = 1e-4 * p[j]
            cols.append((scipy_solve(*(p + e), jac_sparsity=pattern) -
                         scipy_solve(*(p - e), jac_sparsity=pattern)) / (2 * e[j]))
        return np.stack(cols, axis=1)
    primal_name = "vecjac primal solve_ivp (BDF, vecjac's sparse Jacobian)"
    gradient_name = f"adjoint gradient, {2 * n * n} per-cell parameters (vj.grad)"
    rows = {primal_name: lambda: solve_ivp_vj(rhs, (0.0, 1.0), y0, args=(p,), **common),
            "SciPy solve_ivp, jac_sparsity (reference)":
            lambda: scipy_solve(*p, jac_sparsity=pattern),
            "forward sensitivities, 3 parameters (jacfwd)": forward(False),
            "forward sensitivities, 3 parameters, sensitivity_error_control=True":
            forward(True),
            gradient_name: lambda: vj.grad(loss)(q),
            "SciPy central differences, 3 parameters (6 solves)": central_differences_3,
            "jit=True: primal solve_ivp": lambda: solve_ivp_vj(rhs, (0.0, 1.0), y0, args=(p,),
                                                               jit=True, **common),
            "jit=True: forward sensitivities, 3 parameters (jacfwd)": forward(False, True),
            f"jit=True: adjoint gradient, {2 * n * n} per-cell parameters":
            lambda: vj.grad(lambda q: loss(q, True))(q)}
    firsts, bests, values = {}, {name: [] for name in rows}, {}
    for name, run in rows.items():
        firsts[name], values[name] = cpu(run)
    for _ in range(repeat):
        for name, run in rows.items():
            bests[name].append(cpu(run)[0])
    primal = min(bests[primal_name])
    primal_jit = min(bests["jit=True: primal solve_ivp"])
    scipy_one = min(bests["SciPy solve_ivp, jac_sparsity (reference)"])

    # accuracy: SciPy's central differences at rtol 1e-10
    tight = dict(rtol=1e-10, atol=1e-12)
    cols = []
    for j in range(3):
        e = np.zeros(3)
        e[j] = 1e-4 * p[j]
        cols.append((scipy_solve(*(p + e), jac=jac_np, **tight) -
                     scipy_solve(*(p - e), jac=jac_np, **tight)) / (2 * e[j]))
    reference = np.stack(cols, axis=1)

    def error(S):
        S = np.asarray(S.numpy() if hasattr(S, "numpy") else S)
        worst = np.abs(S - reference).max(axis=0) / np.abs(reference).max(axis=0)
        return "/".join(f"{x:.0e}" for x in worst)
    v = np.random.default_rng(0).standard_normal(q.shape)
    h = 1e-4

    def loss_np(q):
        y = scipy_solve(q[0], q[1], ALPHA, jac=jac_np, **tight)
        return 0.5 * np.sum(y * y)
    along = (loss_np(q + h * v) - loss_np(q - h * v)) / (2 * h)
    def along_error(gradient):
        return f"{abs(float(np.sum(gradient.numpy() * v)) - along) / abs(along):.0e} along v"
    errors = {"forward sensitivities, 3 parameters (jacfwd)": error(values[
        "forward sensitivities, 3 parameters (jacfwd)"]),
        "forward sensitivities, 3 parameters, sensitivity_error_control=True": error(values[
            "forward sensitivities, 3 parameters, sensitivity_error_control=True"]),
        gradient_name: along_error(values[gradient_name]),
        "jit=True: forward sensitivities, 3 parameters (jacfwd)": error(values[
            "jit=True: forward sensitivities, 3 parameters (jacfwd)"]),
        f"jit=True: adjoint gradient, {2 * n * n} per-cell parameters": along_error(values[
            f"jit=True: adjoint gradient, {2 * n * n} per-cell parameters"]),
        "SciPy central differences, 3 parameters (6 solves)": error(values[
            "SciPy central differences, 3 parameters (6 solves)"])}
    print(f"Brusselator {n}^2 ({y0.size} states), BDF, t in [0, 1], rtol 1e-6, atol 1e-8; "
          f"CPU seconds, first / best of {repeat}\n")
    print("| computation | first s | best s | / primal | / jit primal | error vs SciPy "
          "central differences (rtol 1e-10): A/B/alpha |\n|---|---|---|---|---|---|")
    for name in rows:
        best = min(bests[name])
        print(f"| {name} | {firsts[name]:.3g} | {best:.3g} | {best / primal:.2f} | "
              f"{best / primal_jit:.2f} | {errors.get(name, '')} |")
    print(f"| SciPy central differences, {2 * n * n} per-cell parameters "
          f"({4 * n * n} solves, one solve's time x {4 * n * n}, not run) | | "
          f"{4 * n * n * scipy_one:.3g} | {4 * n * n * scipy_one / primal:.0f} | | |")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=32)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-jacobian", action="store_true")
    parser.add_argument("--sensitivities", action="store_true")
    args = parser.parse_args()
    if args.sensitivities:
        return sensitivities(args.n, args.repeat)
    rhs_vj, rhs_np, jac_hand, pattern, y0 = setup(args.n)
    common = dict(method="BDF", rtol=1e-6, atol=1e-8)

    def vecjac(jit):
        J = vj.scipy.jac(rhs_vj, argnums=1, sparse=True, jit=jit)
        return solve_ivp(J.fun, (0.0, 1.0), y0, jac=J, **common)
    rows = {"SciPy, jac_sparsity (colored differences)":
            lambda: solve_ivp(rhs_np, (0.0, 1.0), y0, jac_sparsity=pattern, **common),
            "SciPy, hand-written sparse jac":
            lambda: solve_ivp(rhs_np, (0.0, 1.0), y0, jac=jac_hand, **common),
            "vecjac: vj.scipy.jac(sparse=True), detection included": lambda: vecjac(False),
            "vecjac: vj.scipy.jac(sparse=True, jit=True), detection included":
            lambda: vecjac(True)}
    if args.no_jacobian:
        rows["SciPy, no Jacobian (dense differences)"] = \
            lambda: solve_ivp(rhs_np, (0.0, 1.0), y0, **common)
    times = {name: [] for name in rows}
    reference = None
    for _ in range(args.repeat):
        for name, run in rows.items():
            start = time.perf_counter()
            sol = run()
            times[name].append(time.perf_counter() - start)
            assert sol.success, name
            reference = sol.y[:, -1] if reference is None else reference
            err = np.max(np.abs(sol.y[:, -1] - reference)) / np.max(np.abs(reference))
            assert err < 1e-4, (name, err)
    print(f"Brusselator {args.n}^2 ({y0.size} states), BDF, t in [0, 1], rtol 1e-6\n")
    print("| Jacobian | time (min of %d) |\n|---|---|" % args.repeat)
    for name, ts in times.items():
        print(f"| {name} | {min(ts):.2f} s |")


if __name__ == "__main__":
    main()
