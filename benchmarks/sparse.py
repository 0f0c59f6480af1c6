"""Sparse Jacobians and Hessians (issue 12): vecjac against asdex and hand-written scipy.sparse.

Run with jax and asdex installed (pip install vecjac[bench]):
    python benchmarks/sparse.py [--quick]
    python benchmarks/sparse.py --scale   (benchmarks/sparse_scale.py: the Brusselator
        up to 708^2 = 10^6 unknowns and an arrowhead, each in a child process)

Workloads (float64 everywhere):
- 1-D Bratu, n = 10^4 and 10^5: F(u) = (u[i-1] - 2 u[i] + u[i+1]) / h^2 + exp(u[i]),
  u = 0 beyond the ends (tridiagonal Jacobian);
- 2-D Brusselator on a 128 x 128 periodic grid, 2 species interleaved (32,768 unknowns,
  5-point Laplacian);
- chained Rosenbrock, n = 10^5: its Hessian (tridiagonal).
"first call" is what a user waits for once per input shape: sparsity detection +
coloring + first evaluation (asdex: asdex.jacobian(f, x)(x), its "prepare"; vecjac:
vj.sparse_jacobian(f)(x)), each time with a fresh function so nothing is cached
between repetitions (imports are done before timing: scipy.sparse for vecjac, jax for
asdex). "call" is the prepared function called again; "call jit" is vecjac's prepared
function with jit=True (its products replayed as a vj.function), after three warm-up
calls (the trace and the fused segments' warm-up). The hand-written assembly computes
the same matrix from its formula with scipy.sparse. One process, interleaved, minima of
the repetitions; ratios vecjac / asdex and vecjac / hand-written; values are checked
against the hand-written matrix (relative to its largest entry).
"""
import gc
import os
import sys
import time

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import vecjac as vj  # noqa: E402

try:
    import jax
    import jax.numpy as jnp
    jax.config.update("jax_enable_x64", True)
    import asdex
except ImportError:  # the vecjac columns alone
    jax = asdex = None


# -- the workloads, in vecjac, JAX and by hand --------------------------------------------
def bratu(u):
    h2 = (1.0 / (u.shape[0] + 1)) ** 2
    up = vj.pad(u, [[1, 1]])
    return (up[2:] - 2.0 * up[1:-1] + up[:-2]) / h2 + vj.exp(u)


def bratu_jax(u):
    h2 = (1.0 / (u.shape[0] + 1)) ** 2
    up = jnp.pad(u, 1)
    return (up[2:] - 2.0 * up[1:-1] + up[:-2]) / h2 + jnp.exp(u)


def bratu_hand(u):
    n = u.shape[0]
    h2 = (1.0 / (n + 1)) ** 2
    off = np.full(n - 1, 1.0 / h2)
    return sp.diags_array([off, -2.0 / h2 + np.exp(u), off], offsets=[-1, 0, 1],
                          format="csr")


N, ALPHA = 128, 10.0


def brusselator(y, np_=vj, roll=None):
    """du = 1 + u^2 v - 4.4 u + a lap(u), dv = 3.4 u - u^2 v + a lap(v), periodic."""
    roll = roll or vj.roll
    scale = ALPHA * N ** 2
    s = np_.reshape(y, (N, N, 2))
    u, v = s[..., 0], s[..., 1]

    def lap(w):
        return (roll(w, 1, 0) + roll(w, -1, 0) + roll(w, 1, 1) + roll(w, -1, 1)
                - 4.0 * w) * scale
    uuv = u * u * v
    du = 1.0 + uuv - 4.4 * u + lap(u)
    dv = 3.4 * u - uuv + lap(v)
    return np_.reshape(np_.stack([du, dv], axis=-1), (-1,))


def brusselator_jax(y):
    return brusselator(y, jnp, lambda w, s, a: jnp.roll(w, s, a))


def _brusselator_structure():
    idx = np.arange(N * N * 2).reshape(N, N, 2)
    rows, cols, kinds = [], [], []
    for s in (0, 1):
        for di, dj in ((1, 0), (-1, 0), (0, 1), (0, -1)):
            rows.append(idx[..., s].ravel())
            cols.append(np.roll(idx[..., s], (-di, -dj), (0, 1)).ravel())
            kinds.append(np.full(N * N, 0))
        rows += [idx[..., s].ravel()] * 2
        cols += [idx[..., 0].ravel(), idx[..., 1].ravel()]
        kinds += [np.full(N * N, 1 + 2 * s), np.full(N * N, 2 + 2 * s)]
    return np.concatenate(rows), np.concatenate(cols), np.concatenate(kinds)


_BRUSS = None


def brusselator_hand(y):
    global _BRUSS
    if _BRUSS is None:
        _BRUSS = _brusselator_structure()
    rows, cols, _ = _BRUSS
    s = y.reshape(N, N, 2)
    u, v = s[..., 0].ravel(), s[..., 1].ravel()
    scale = ALPHA * N ** 2
    nb = np.full(4 * N * N, scale)
    vals = np.concatenate([nb, 2 * u * v - 4.4 - 4 * scale, u * u,
                           nb, 3.4 - 2 * u * v, -u * u - 4 * scale])
    return sp.csr_array((vals, (rows, cols)), shape=(2 * N * N, 2 * N * N))


def rosenbrock(x):
    return vj.reduce_sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def rosenbrock_jax(x):
    return jnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def rosenbrock_hand(x):
    d = np.zeros_like(x)
    d[:-1] += 1200.0 * x[:-1] ** 2 - 400.0 * x[1:] + 2.0
    d[1:] += 200.0
    off = -400.0 * x[:-1]
    return sp.diags_array([off, d, off], offsets=[-1, 0, 1], format="csr")


def workloads(quick=False):
    rng = np.random.default_rng(0)
    n_small, n_big = (1000, 10000) if quick else (10_000, 100_000)
    return [
        (f"Bratu 1-D n={n_small}", "jacobian", bratu, bratu_jax, bratu_hand,
         rng.random(n_small) * 0.1),
        (f"Bratu 1-D n={n_big}", "jacobian", bratu, bratu_jax, bratu_hand,
         rng.random(n_big) * 0.1),
        ("Brusselator 2-D 128x128x2", "jacobian", brusselator, brusselator_jax,
         brusselator_hand, rng.random(2 * N * N) + 0.5),
        (f"Rosenbrock Hessian n={n_big}", "hessian", rosenbrock, rosenbrock_jax,
         rosenbrock_hand, rng.random(n_big) * 2 - 1),
    ]


# -- timing ----------------------------------------------------------------------------------
def _seconds(fn):
    gc.collect()
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def vecjac_first(kind, f, x, jit=False):
    # a fresh closure: nothing cached from an earlier repetition
    g = (lambda v: f(v))
    prepared = (vj.sparse_jacobian if kind == "jacobian" else vj.sparse_hessian)(g, jit=jit)
    return prepared, prepared(x)


def asdex_first(kind, f, x):
    g = (lambda v: f(v))
    prepared = (asdex.jacobian if kind == "jacobian" else asdex.hessian)(
        g, x, output_format="scipy_csr")
    return prepared, prepared(x)


def relative_error(a, b):
    d = (sp.csr_array(a) - sp.csr_array(b))
    return float(abs(d).max() / abs(b).max()) if d.nnz else 0.0


def measure(name, kind, f, fj, hand, x, reps, call_reps):
    first_v, first_a, call_v, call_a, call_h, call_j = [], [], [], [], [], []
    xj = jnp.asarray(x) if asdex else None
    pj, _ = vecjac_first(kind, f, x, jit=True)
    for _ in range(3):
        pj(x)
    for _ in range(reps):  # interleaved
        t, (pv, jv) = _seconds(lambda: vecjac_first(kind, f, x))
        first_v.append(t)
        if asdex:
            t, (pa, ja) = _seconds(lambda: asdex_first(kind, fj, xj))
            first_a.append(t)
    for _ in range(call_reps):
        call_v.append(_seconds(lambda: pv(x))[0])
        call_j.append(_seconds(lambda: pj(x))[0])
        if asdex:
            call_a.append(_seconds(lambda: pa(xj))[0])
        call_h.append(_seconds(lambda: hand(x))[0])
    ref = hand(x)
    err = max(relative_error(pv(x), ref), relative_error(pj(x), ref))
    err_a = relative_error(ja, ref) if asdex else float("nan")
    return dict(name=name, first_v=min(first_v), first_a=min(first_a) if asdex else np.nan,
                call_v=min(call_v), call_a=min(call_a) if asdex else np.nan,
                call_h=min(call_h), call_j=min(call_j), err=err, err_a=err_a, colors=pv.ncolors, mode=pv.mode,
                colors_a=_asdex_colors(pa) if asdex else None, nnz=pv.pattern.nnz)


def _asdex_colors(prepared):
    return None


def main():
    if "--scale" in sys.argv:  # a million unknowns, arrowheads: benchmarks/sparse_scale.py
        import sparse_scale
        sparse_scale.main()
        return
    quick = "--quick" in sys.argv
    reps, call_reps = (2, 5) if quick else (3, 30)
    rows = []
    for name, kind, f, fj, hand, x in workloads(quick):
        r = measure(name, kind, f, fj, hand, x, reps, call_reps)
        rows.append(r)
        print(f"{name}: nnz {r['nnz']}, vecjac {r['colors']} colors ({r['mode']}); first call "
              f"vecjac {r['first_v']:.3f} s, asdex {r['first_a']:.3f} s "
              f"(ratio {r['first_v'] / r['first_a']:.2f}); call vecjac "
              f"{r['call_v'] * 1e3:.2f} ms, asdex {r['call_a'] * 1e3:.2f} ms "
              f"(ratio {r['call_v'] / r['call_a']:.2f}), hand {r['call_h'] * 1e3:.2f} ms "
              f"(ratio {r['call_v'] / r['call_h']:.2f}); call jit {r['call_j'] * 1e3:.2f} ms "
              f"(/asdex {r['call_j'] / r['call_a']:.2f}, /hand {r['call_j'] / r['call_h']:.2f})"
              f"; max rel. error vecjac "
              f"{r['err']:.1e}, asdex {r['err_a']:.1e}", flush=True)
    print()
    print("| workload | first call vecjac | asdex | ratio | call vecjac | asdex | ratio | "
          "hand-written | ratio | call jit | / asdex | / hand | colors | max rel. error |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['name']} | {r['first_v']:.3f} s | {r['first_a']:.3f} s | "
              f"{r['first_v'] / r['first_a']:.2f} | {r['call_v'] * 1e3:.2f} ms | "
              f"{r['call_a'] * 1e3:.2f} ms | {r['call_v'] / r['call_a']:.2f} | "
              f"{r['call_h'] * 1e3:.2f} ms | {r['call_v'] / r['call_h']:.2f} | "
              f"{r['call_j'] * 1e3:.2f} ms | {r['call_j'] / r['call_a']:.2f} | "
              f"{r['call_j'] / r['call_h']:.2f} | "
              f"{r['colors']} ({r['mode']}) | {r['err']:.0e} |")


if __name__ == "__main__":
    main()
