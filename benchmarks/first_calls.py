"""First calls (issue 30, "the first hour"): what vj.function's trace and the calls after it
cost, against one eager call, each workload in a fresh process.

Run:  python benchmarks/first_calls.py [--trees OLD,NEW] [--repeats 3] [--only rk4_grad,sparse]
                                      [--markdown benchmarks/results/first_calls.md]
A tree is a directory holding the package `vecjac/` (a git worktree of another commit);
without --trees the vecjac this script imports is measured. Every measurement is one child
process (`--child`): imports and a warm-up eager call first (reported as "eager, cold"),
then one timed eager call, then a fresh vj.function of the same computation: its first
call (the trace), calls 2, 3, 4 and 5 one by one, and the steady replay (median of the
calls that follow, for up to a second). Trees and repetitions are interleaved (old, new,
old, new, ...) so that a burst of noise on the shared machine hits both alike; the tables
give medians over the repetitions. Times are CPU time of the whole process
(time.process_time: a background compile counts) and wall time; ratios are to the eager
call of the same tree.

Workloads:
- rk4_jacfwd: vj.function(vj.jacfwd(trajectory)), a Lotka-Volterra trajectory written as
  a user writes it, 2000 explicit RK4 steps in a Python loop, d(4000 values)/d(4 params);
- rk4_grad: vj.function(vj.grad(sum of squares of the same trajectory));
- w8, w10: workloads 8 (J of Ax + x^3 - b, n = 1000) and 10 (RK4, 100 steps, vj.jacobian)
  of benchmarks/compare.py, as its `vecjac_function` system runs them;
- sparse: vj.sparse_jacobian of a 2-D Bratu residual on a 100 x 100 grid (no vj.function):
  "eager, cold" and "eager" are the first calls of two fresh prepared functions (pattern
  detection, coloring, one compressed product and its check), calls 1-5 and the steady
  call those of a third; sparse_jit: the same with jit=True (its products replayed as a
  vj.function).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
WORKLOADS = ("rk4_jacfwd", "rk4_grad", "w8", "w10", "sparse", "sparse_jit")
CALLS = ("eager_cold", "eager", "call1", "call2", "call3", "call4", "call5", "steady")


# -- the workloads (in the child) -----------------------------------------------------------
def _trajectory(vj, steps=2000, dt=0.01):
    import numpy as np
    y0 = np.array([10.0, 5.0])

    def trajectory(p):
        a, b, c, d = p[0], p[1], p[2], p[3]

        def rhs(y):
            x, z = y[0], y[1]
            return vj.stack([a * x - b * x * z, c * x * z - d * z])
        y, out = y0, []
        for _ in range(steps):
            k1 = rhs(y)
            k2 = rhs(y + dt / 2 * k1)
            k3 = rhs(y + dt / 2 * k2)
            k4 = rhs(y + dt * k3)
            y = y + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
            out.append(y)
        return vj.stack(out)
    return trajectory


def _bratu2d(vj, n=100, lam=1.0):
    h2 = (1.0 / (n + 1)) ** 2

    def residual(u):
        w = vj.pad(vj.reshape(u, (n, n)), [[1, 1], [1, 1]])
        lap = (w[2:, 1:-1] + w[:-2, 1:-1] + w[1:-1, 2:] + w[1:-1, :-2]
               - 4.0 * w[1:-1, 1:-1]) / h2
        return vj.reshape(lap + lam * vj.exp(w[1:-1, 1:-1]), (-1,))
    return residual, n * n


def build(name):
    """(eager function, its arguments, make_function) for one workload."""
    import numpy as np

    import vecjac as vj
    p = np.array([1.1, 0.4, 0.1, 0.4])
    if name == "rk4_jacfwd":
        g = vj.jacfwd(_trajectory(vj))
        return g, (p,), vj.function
    if name == "rk4_grad":
        trajectory = _trajectory(vj)
        g = vj.grad(lambda p: vj.reduce_sum(trajectory(p) ** 2))
        return g, (p,), vj.function
    if name in ("w8", "w10"):
        sys.path.insert(1, HERE)
        from workloads import NewtonSystem
        from workloads_forward import OdeSensitivity
        rng = np.random.default_rng(0)
        fn, args = (NewtonSystem(rng) if name == "w8" else OdeSensitivity(rng)).vjf()
        return fn, args, vj.function
    if name in ("sparse", "sparse_jit"):
        residual, size = _bratu2d(vj)
        u = np.linspace(0.0, 1.0, size)
        return None, (u,), lambda _: vj.sparse_jacobian(residual, jit=name == "sparse_jit")
    raise ValueError(f"unknown workload {name!r}; expected one of {WORKLOADS}")


def _timed(fn, *args):
    c, w = time.process_time(), time.perf_counter()
    fn(*args)
    return time.process_time() - c, time.perf_counter() - w


def child(name):
    import warnings
    warnings.simplefilter("ignore")
    import numpy as np  # noqa: F401  (imports are not timed)
    import scipy.sparse  # noqa: F401
    import vecjac as vj
    fn, args, make = build(name)
    out = {"vecjac": vj.__file__}
    if fn is None:  # sparse: the prepared function's own first calls
        fn = make(None)
        out["eager_cold"] = _timed(make(None), *args)  # a fresh function: its first call
        out["eager"] = _timed(make(None), *args)
    else:  # eagerly on Tensors (vj.function converts NumPy arguments itself)
        tensors = [vj.constant(a) for a in args]
        out["eager_cold"] = _timed(fn, *tensors)
        out["eager"] = _timed(fn, *tensors)
        fn = make(fn)
    for k in range(1, 6):
        out[f"call{k}"] = _timed(fn, *args)
    try:  # steady: once a background compile (where there is one) has finished
        from vecjac._src.transforms.function import background
        background.wait()
    except ImportError:
        pass
    steady, start = [], time.perf_counter()
    while len(steady) < 5 or (time.perf_counter() - start < 1.0 and len(steady) < 200):
        steady.append(_timed(fn, *args))
    out["steady"] = (statistics.median(c for c, _ in steady),
                     statistics.median(w for _, w in steady))
    print(json.dumps(out))


# -- the parent: interleaved child processes ------------------------------------------------
def run_child(tree, name):
    env = dict(os.environ)
    if tree:
        env["PYTHONPATH"] = tree + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH")
                                    else "")
    proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", name],
                          env=env, capture_output=True, text=True, timeout=3600)
    if proc.returncode:
        raise RuntimeError(f"{name} in {tree}: {proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _fmt(seconds):
    return f"{seconds * 1e3:.3g} ms" if seconds < 1 else f"{seconds:.3g} s"


def table(results, trees, names):
    """Markdown: per workload and tree, CPU times (and wall) with ratios to eager."""
    lines = []
    for name in names:
        lines.append(f"\n### {name}\n")
        lines.append("| tree | " + " | ".join(CALLS) + " |")
        lines.append("|---" * (len(CALLS) + 1) + "|")
        for tree in trees:
            runs = results[(tree, name)]
            med = {c: (statistics.median(r[c][0] for r in runs),
                       statistics.median(r[c][1] for r in runs)) for c in CALLS}
            eager = med["eager"][0]
            cells = []
            for c in CALLS:
                cpu, wall = med[c]
                cells.append(f"{_fmt(cpu)} ({cpu / eager:.2f}x; wall {_fmt(wall)})")
            lines.append(f"| {tree or 'this'} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--child")
    parser.add_argument("--trees", default="")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--only", default="")
    parser.add_argument("--markdown")
    a = parser.parse_args()
    if a.child:
        return child(a.child)
    trees = a.trees.split(",") if a.trees else [""]
    names = a.only.split(",") if a.only else list(WORKLOADS)
    results = {(t, n): [] for t in trees for n in names}
    for repeat in range(a.repeats):
        for name in names:
            for tree in trees:
                results[(tree, name)].append(run_child(tree, name))
                r = results[(tree, name)][-1]
                print(f"[{repeat}] {name} {tree or 'this'}: " + ", ".join(
                    f"{c} {_fmt(r[c][0])}" for c in CALLS), flush=True)
    text = table(results, trees, names)
    print(text)
    if a.markdown:
        with open(a.markdown, "w") as fh:
            fh.write("# First calls (benchmarks/first_calls.py)\n\nCPU time per call "
                     "(time.process_time of the child process), in parentheses the ratio "
                     "to one eager call of the same tree and the wall time; medians of "
                     f"{a.repeats} interleaved child processes per tree.\n" + text)


if __name__ == "__main__":
    main()
