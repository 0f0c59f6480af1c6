"""Newton-Krylov with exact Jacobian-vector products against SciPy's finite differences
(issue 27).

    python benchmarks/newton_krylov.py [--quick] [--reps 3]

1. The 2-D Bratu problem (Dirichlet, lambda = 6, 5-point Laplacian) on m x m grids,
   n = 10^4 and ~10^5, solved to f_tol = 1e-8 from zero by
   - vj.scipy.optimize.newton_krylov (default: F and its JVP replayed from vj.function
     traces made for the solve),
   - the same with jit=False (F and its JVP eager),
   - scipy.optimize.newton_krylov on a plain NumPy F (finite-difference products, what
     a SciPy user runs today), and on the same vecjac F.
   Reported: Newton iterations, how often F's Python body ran (under jit: while tracing
   only; eager and SciPy: once per residual and per product), the final
   residual, and CPU seconds (time.process_time: the machine is shared, CPU time is
   what each solve itself costs) for the first solve in the process and the median of
   the later ones, the contenders interleaved.
2. An ill-conditioned linear system H x = H 1 with H the 7 x 7 Hilbert matrix
   (condition ~5e8): the residual and the error in x each method reaches at f_tol from
   1e-6 to 1e-14 (SciPy raises NoConvergence; its last iterate is taken).
"""
import os
import statistics
import sys
import time

for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"):  # before NumPy loads BLAS
    os.environ.setdefault(_name, "1")

import numpy as np  # noqa: E402
import scipy.linalg as sl  # noqa: E402
import scipy.optimize as so  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import vecjac as vj  # noqa: E402

opt = vj.scipy.optimize


def bratu(u, lam, m):
    """-Laplace(u) - lam exp(u) = 0 up to sign, zero boundary values: written in NumPy,
    run on Tensors by vecjac's NumPy dispatch (what a user writes)."""
    U = u.reshape(m, m)
    Z = np.pad(U, 1)
    lap = (Z[:-2, 1:-1] + Z[2:, 1:-1] + Z[1:-1, :-2] + Z[1:-1, 2:] - 4 * U) * (m + 1) ** 2
    return (lap + lam * np.exp(U)).reshape(-1)


def bratu_contenders(m, lam=6.0, f_tol=1e-8):
    n = m * m
    counts = {}

    def counted(key, f):
        def wrapped(*a):
            counts[key] = counts.get(key, 0) + 1
            return f(*a)
        return wrapped

    def newton(key):
        def callback(x, f):
            counts[key + " newton"] = counts.get(key + " newton", 0) + 1
        return callback

    def vecjac_F(u):
        return bratu(u, lam, m)

    def contender(key, run):
        def solve():
            counts.pop(key, None)
            counts.pop(key + " newton", None)
            return np.asarray(run(key))
        return solve
    return counts, {
        "vecjac exact JVP (jit, default)": contender("jit", lambda k: opt.newton_krylov(
            counted(k, vecjac_F), np.zeros(n), f_tol=f_tol, callback=newton(k))),
        "vecjac exact JVP (jit=False)": contender("eager", lambda k: opt.newton_krylov(
            counted(k, vecjac_F), np.zeros(n), f_tol=f_tol, callback=newton(k), jit=False)),
        "SciPy FD, NumPy F": contender("fd-np", lambda k: so.newton_krylov(
            counted(k, lambda u: bratu(u, lam, m)), np.zeros(n), f_tol=f_tol,
            callback=newton(k))),
        "SciPy FD, vecjac F": contender("fd-vj", lambda k: so.newton_krylov(
            counted(k, lambda u: vecjac_F(vj.constant(u)).numpy()), np.zeros(n),
            f_tol=f_tol, callback=newton(k))),
    }


def bench_bratu(m, reps):
    counts, contenders = bratu_contenders(m)
    keys = {"vecjac exact JVP (jit, default)": "jit", "vecjac exact JVP (jit=False)": "eager",
            "SciPy FD, NumPy F": "fd-np", "SciPy FD, vecjac F": "fd-vj"}
    times = {name: [] for name in contenders}
    rows = {}
    for rep in range(reps + 1):
        for name, solve in contenders.items():
            start = time.process_time()
            x = solve()
            times[name].append(time.process_time() - start)
            if rep == 0:
                key = keys[name]
                rows[name] = {"newton": counts.get(key + " newton"),
                              "F calls": counts.get(key),
                              "residual": float(np.abs(bratu(x, 6.0, m)).max())}
    for name, row in rows.items():
        row["first s"] = times[name][0]
        row["repeated s"] = statistics.median(times[name][1:])
    return rows


def hilbert_rows(tols=(1e-6, 1e-8, 1e-10, 1e-12, 1e-14)):
    H = sl.hilbert(7)
    x_true = np.ones(7)
    b = H @ x_true

    def F(x):
        return H @ x - b
    rows = []
    for tol in tols:
        row = {"f_tol": tol}
        for name, solver in (("vecjac", opt.newton_krylov), ("SciPy", so.newton_krylov)):
            try:
                x, converged = np.asarray(solver(F, np.zeros(7), f_tol=tol, maxiter=200)), True
            except so.NoConvergence as e:
                x, converged = np.asarray(e.args[0]), False
            row[name] = (converged, float(np.abs(F(x)).max()), float(np.abs(x - x_true).max()))
        rows.append(row)
    return rows


def markdown(bratu_tables, hilbert):
    out = ["| grid (n) | contender | Newton iterations | F body runs | residual | first solve s "
           "| repeated solve s | repeated / SciPy FD NumPy F |", "|---|---|---|---|---|---|---|---|"]
    for m, rows in bratu_tables:
        ref = rows["SciPy FD, NumPy F"]["repeated s"]
        for name, r in rows.items():
            out.append(f"| {m}^2 ({m * m}) | {name} | {r['newton']} | {r['F calls']} | "
                       f"{r['residual']:.1e} | {r['first s']:.3f} | {r['repeated s']:.3f} | "
                       f"{r['repeated s'] / ref:.2f} |")
    out += ["", "| f_tol | vecjac: converged, residual, error in x | SciPy FD: converged, "
            "residual, error in x |", "|---|---|---|"]
    for row in hilbert:
        cells = [f"{'yes' if c else 'no'}, {r:.1e}, {e:.1e}" for c, r, e in
                 (row["vecjac"], row["SciPy"])]
        out.append(f"| {row['f_tol']:.0e} | {cells[0]} | {cells[1]} |")
    return "\n".join(out)


def main():
    quick = "--quick" in sys.argv
    reps = int(sys.argv[sys.argv.index("--reps") + 1]) if "--reps" in sys.argv else 3
    grids = (50,) if quick else (100, 316)
    tables = [(m, bench_bratu(m, reps)) for m in grids]
    print(markdown(tables, hilbert_rows()))


if __name__ == "__main__":
    main()
