"""A stiff ODE with SciPy's BDF and vecjac's sparse Jacobian (issue 26's goal): the 2-D
Brusselator on an N x N periodic grid (2 N^2 states), t in [0, 1], rtol 1e-6, atol 1e-8.

Run:  python benchmarks/stiff_ode.py [--n 32] [--no-jacobian]
Rows: SciPy with a hand-given `jac_sparsity` (colored finite differences), a hand-written
sparse `jac` (the formula in scipy.sparse), and `jac=vj.scipy.jac(rhs, argnums=1,
sparse=True)` (detection and coloring included, in the first call), with and without
jit; `--no-jacobian` adds SciPy with no Jacobian at all (minutes at N = 32). Each row is
one solve in this process (the rows interleave with their repetitions); times are the
minimum of `--repeat` solves, and every solution is compared with the first one.
"""
import argparse
import time

import numpy as np
import scipy.sparse as sp
from scipy.integrate import solve_ivp

import vecjac as vj

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


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=32)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-jacobian", action="store_true")
    args = parser.parse_args()
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
