"""The colorings of sparse Jacobians and Hessians with numba and without (issue 26).

Run:  python benchmarks/sparse_fallback.py [--quick] [--only WORDS]

VECJAC_DISABLE_NUMBA=1 (vecjac/_src/ops/kernels.py) keeps numba off: the distance-2
coloring then runs the NumPy residue-class greedy (vecjac/_src/api/coloring.py), and
the star, acyclic and bicoloring loops (vecjac/_src/api/coloring_kernels.py) run as
plain Python, up to their Python work bounds (beyond, the next coloring down is used:
distance-2 instead of star or acyclic, unidirectional instead of bicoloring).

Each (pattern, numba on / off) runs in a child process of its own; in it the coloring
of the plan runs twice: "cold" is the first time (numba's import and cache load
included when it is on), "warm" the second. CPU seconds (time.process_time).
Patterns, built directly (no tracing):
- Jacobian, fwd: the periodic 2-D Brusselator (5-point stencil, 2 species);
- Hessian: a periodic 5-point stencil on an s x s grid (star and acyclic), and a
  tridiagonal one (the chained Rosenbrock's);
- Jacobian, bidirectional: an arrowhead (dense first row and column, the diagonal).
"""
import json
import os
import subprocess
import sys
import time

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, os.environ.get("VECJAC_ROOT")
                or os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from vecjac._src.api import acyclic, bicoloring, coloring  # noqa: E402


def _pattern(rows, cols, shape):
    p = sp.csr_array((np.ones(rows.size, dtype=bool), (rows, cols)), shape=shape)
    p.sum_duplicates()
    p.sort_indices()
    return p


def brusselator(s):
    idx = np.arange(s * s * 2).reshape(s, s, 2)
    rows, cols = [], []
    for k in (0, 1):
        for shift in ((1, 0), (-1, 0), (0, 1), (0, -1), (0, 0)):
            rows.append(idx[..., k].ravel())
            cols.append(np.roll(idx[..., k], shift, (0, 1)).ravel())
        rows.append(idx[..., k].ravel())
        cols.append(idx[..., 1 - k].ravel())
    return _pattern(np.concatenate(rows), np.concatenate(cols), (2 * s * s,) * 2)


def stencil(s):
    idx = np.arange(s * s).reshape(s, s)
    shifts = ((1, 0), (-1, 0), (0, 1), (0, -1), (0, 0))
    rows = np.concatenate([idx.ravel()] * len(shifts))
    cols = np.concatenate([np.roll(idx, d, (0, 1)).ravel() for d in shifts])
    return _pattern(rows, cols, (s * s,) * 2)


def tridiagonal(n):
    i = np.arange(n)
    rows = np.concatenate([i, i[1:], i[:-1]])
    cols = np.concatenate([i, i[:-1], i[1:]])
    return _pattern(rows, cols, (n, n))


def arrowhead(n):
    i = np.arange(n)
    rows = np.concatenate([i, np.zeros(n, dtype=int), i])
    cols = np.concatenate([i, i, np.zeros(n, dtype=int)])
    return _pattern(rows, cols, (n, n))


def _d2(p):
    return coloring.column_coloring(p)


def _bicolor(p):
    """What make_plan does: the unidirectional colorings first (None: n colors), then
    the bicoloring where it needs fewer products."""
    fwd, rev = coloring.column_coloring(p), coloring.row_coloring(p)
    best = min([c[1] for c in (fwd, rev) if c is not None], default=max(p.shape))
    r = bicoloring.bicoloring(p, best)
    return None, f"unidirectional: {best}" if r is None else min(best, r[2] + r[3])


def _star(p):
    return coloring.symmetric_coloring(p)


def _acyclic(p):
    """coloring="acyclic", or the star coloring it falls back to when too large."""
    r = acyclic.acyclic_coloring(p)
    return r if r is not None else (None, f"star: {coloring.symmetric_coloring(p)[1]}")


CASES = {  # name: (pattern builder, coloring, sizes (grid side or n))
    "Brusselator Jacobian, distance-2": (brusselator, _d2, (71, 224, 708)),
    "5-point Hessian, star": (stencil, _star, (100, 316, 1000)),
    "5-point Hessian, acyclic": (stencil, _acyclic, (100, 316, 1000)),
    "tridiagonal Hessian, acyclic": (tridiagonal, _acyclic, (10**4, 10**5, 10**6)),
    "arrowhead Jacobian, bicoloring": (arrowhead, _bicolor, (10**4, 10**5, 10**6)),
}


def child(name, size):
    build, color, _ = CASES[name]
    p = build(size)
    times, count = [], None
    for _ in range(2):
        t = time.process_time()
        count = color(p)[1]
        times.append(time.process_time() - t)
    return dict(n=p.shape[1], nnz=int(p.nnz), colors=count, cold=times[0], warm=times[1])


def run(name, size, numba):
    env = dict(os.environ, VECJAC_DISABLE_NUMBA="0" if numba else "1")
    out = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", name,
                          str(size)], capture_output=True, text=True, env=env, check=False)
    if out.returncode:
        raise RuntimeError(out.stderr[-2000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    if "--child" in sys.argv:
        i = sys.argv.index("--child")
        print(json.dumps(child(sys.argv[i + 1], int(sys.argv[i + 2]))))
        return
    quick = "--quick" in sys.argv
    print("| coloring | n | nnz | colors numba | NumPy / Python | time numba cold / warm "
          "| NumPy / Python |")
    print("|---|---|---|---|---|---|---|")
    only = sys.argv[sys.argv.index("--only") + 1] if "--only" in sys.argv else ""
    for name, (_, _, sizes) in CASES.items():
        if only not in name:
            continue
        for size in sizes[:2] if quick else sizes:
            on, off = run(name, size, True), run(name, size, False)
            print(f"| {name} | {on['n']:,} | {on['nnz']:,} | {on['colors']} | {off['colors']} "
                  f"| {on['cold']:.2f} / {on['warm']:.2f} s | {off['warm']:.2f} s |",
                  flush=True)


if __name__ == "__main__":
    main()
