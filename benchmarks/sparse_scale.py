"""Sparse Jacobians at scale (issue 26): the 2-D Brusselator up to a million unknowns and
an arrowhead Jacobian, vecjac alone (asdex's numbers at 708^2 are in docs/sparse.md).

Run:  python benchmarks/sparse_scale.py [--quick] [--modes]
      python benchmarks/sparse_scale.py --compare DIR [--reps 3]
      python benchmarks/sparse_scale.py --asdex PYTHON [--sizes 128,512,708]
(also `python benchmarks/sparse.py --scale`). --compare runs the children of another
checkout of vecjac (DIR, e.g. `git worktree add` or `git archive` of an older commit)
and of this one alternately, and prints the medians side by side: the machine is
shared, so the two sides see the same noise.

Each workload runs in a child process of its own, so that its peak RSS (the child's
resource.getrusage maxrss, taken right after the first call and again at the end) is
its own. In the child, in this order:
- first call: a fresh vj.sparse_jacobian(f)(x): detection + coloring + first evaluation
  (+ the check= product, as a user gets it);
- repeated call: the same prepared function again (median of the calls after the 3
  checked ones), and with jit=True (after 3 warm-up calls);
- detection alone (vj.jacobian_sparsity) and coloring alone (the plan's coloring of
  that pattern), each timed once more;
- colors against the lower bound (the densest row for forward mode, the densest column
  for reverse mode: the better of the two is the bound of a unidirectional coloring).
Medians over interleaved repetitions where there are several; the machine is shared.

--asdex PYTHON runs the same workloads, written in jax.numpy, through asdex (JAX's sparse
AD) in child processes of that interpreter (one with jax and asdex installed), each
beside a vecjac child: detection (asdex.jacobian_sparsity), coloring
(asdex.jacobian_coloring_from_sparsity), first evaluation (jacobian_from_coloring with
output_format="scipy_csr", called once); first call = their sum, as asdex.jacobian(f,
x)(x) does the three in turn; repeated call = that function again (it retraces f on
every call, as asdex's documentation says); "call jit" = jax.jit of the BCOO version,
after a warm-up call, with block_until_ready. A run that would take more than about 5
minutes or 6 GB (asdex on the arrowhead at n = 10^4: 10^4 colors, 7.5 GB) is skipped.
"""
import importlib
import json
import os
import resource
import statistics
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.environ.get("VECJAC_ROOT") or os.path.join(HERE, ".."))
import scipy.sparse  # noqa: E402, F401  (its import is not part of the first call)

import vecjac as vj  # noqa: E402
from vecjac._src.api import sparse as sparse_module  # noqa: E402

try:
    from vecjac._src.api.sparse_plan import make_plan  # noqa: E402
except ImportError:  # an older checkout (--compare): plans were made in sparse.py
    def make_plan(pattern, mode, hessian, dtype):
        return sparse_module._color(pattern, mode, hessian, dtype, "bench")

ALPHA = 10.0


def brusselator(n):
    """The periodic 2-D Brusselator on an n x n grid, two species interleaved."""
    scale = ALPHA * n ** 2

    def f(y):
        s = vj.reshape(y, (n, n, 2))
        u, v = s[..., 0], s[..., 1]

        def lap(w):
            return (vj.roll(w, 1, 0) + vj.roll(w, -1, 0) + vj.roll(w, 1, 1)
                    + vj.roll(w, -1, 1) - 4.0 * w) * scale
        uuv = u * u * v
        return vj.reshape(vj.stack([1.0 + uuv - 4.4 * u + lap(u), 3.4 * u - uuv + lap(v)],
                                   axis=-1), (-1,))
    x = np.random.default_rng(0).random(2 * n * n) + 0.5
    return f, x


def arrowhead(n):
    """y_0 = sum(x * x), y_i = x_0 * x_i + x_i^3: one dense row, one dense column, the
    diagonal."""
    def f(x):
        head = vj.reshape(vj.reduce_sum(x * x), (1,))
        return vj.concat([head, x[0] * x[1:] + x[1:] ** 3], 0)
    x = np.random.default_rng(0).random(n) + 0.5
    return f, x


WORKLOADS = {"brusselator": brusselator, "arrowhead": arrowhead}


def brusselator_jax(n):
    """brusselator(n) in jax.numpy (for asdex)."""
    jnp = importlib.import_module("jax.numpy")
    scale = ALPHA * n ** 2

    def f(y):
        s = jnp.reshape(y, (n, n, 2))
        u, v = s[..., 0], s[..., 1]

        def lap(w):
            return (jnp.roll(w, 1, 0) + jnp.roll(w, -1, 0) + jnp.roll(w, 1, 1)
                    + jnp.roll(w, -1, 1) - 4.0 * w) * scale
        uuv = u * u * v
        return jnp.reshape(jnp.stack([1.0 + uuv - 4.4 * u + lap(u), 3.4 * u - uuv + lap(v)],
                                     axis=-1), (-1,))
    return f, brusselator(n)[1]


def arrowhead_jax(n):
    """arrowhead(n) in jax.numpy (for asdex)."""
    jnp = importlib.import_module("jax.numpy")

    def f(x):
        return jnp.concatenate([jnp.sum(x * x)[None], x[0] * x[1:] + x[1:] ** 3])
    return f, arrowhead(n)[1]


JAX_WORKLOADS = {"brusselator": brusselator_jax, "arrowhead": arrowhead_jax}


def _rss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _time(fn):
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def _cpu(fn):
    """CPU seconds of fn() (this process: on a shared machine, less noisy than wall time;
    NumPy runs these workloads on one thread)."""
    t = time.process_time()
    fn()
    return time.process_time() - t


def child(kind, size, mode, calls, jit=True):
    f, x = WORKLOADS[kind](size)
    rss0 = _rss_mb()
    prepared = vj.sparse_jacobian(f, mode=mode)
    first, jac = _time(lambda: prepared(x))
    rss_first = _rss_mb()
    for _ in range(3):  # the checked calls (check="auto")
        prepared(x)
    call = statistics.median(_time(lambda: prepared(x))[0] for _ in range(calls))
    call_cpu = statistics.median(_cpu(lambda: prepared(x)) for _ in range(calls))
    call_jit = float("nan")
    if jit:
        jitted = vj.sparse_jacobian(f, mode=mode, jit=True)
        for _ in range(4):
            jitted(x)
        call_jit = statistics.median(_time(lambda: jitted(x))[0] for _ in range(calls))
    detect, pattern = _time(lambda: vj.jacobian_sparsity(f, x))
    color, _ = _time(lambda: make_plan(pattern, mode, False, x.dtype))
    rows = int(np.diff(pattern.indptr).max())
    cols = int(np.bincount(pattern.indices, minlength=pattern.shape[1]).max())
    return dict(kind=kind, size=size, mode=prepared.mode, unknowns=int(x.size),
                nnz=int(pattern.nnz), first=first, call=call, call_cpu=call_cpu,
                call_jit=call_jit,
                detect=detect, color=color, colors=int(prepared.ncolors),
                bound=min(rows, cols), rss_before=rss0, rss_first=rss_first,
                rss_end=_rss_mb(), nnz_check=int(jac.nnz))


def asdex_child(kind, size, calls):
    """asdex's side of one workload (run by an interpreter with jax and asdex)."""
    jax = importlib.import_module("jax")
    jax.config.update("jax_enable_x64", True)
    asdex = importlib.import_module("asdex")
    f, x = JAX_WORKLOADS[kind](size)
    xj = jax.numpy.asarray(x)
    rss0 = _rss_mb()
    detect, pattern = _time(lambda: asdex.jacobian_sparsity(f, xj))
    color, colored = _time(lambda: asdex.jacobian_coloring_from_sparsity(pattern))
    prepared = asdex.jacobian_from_coloring(f, colored, output_format="scipy_csr")
    evaluate, jac = _time(lambda: prepared(xj))
    rss_first = _rss_mb()
    call = statistics.median(_time(lambda: prepared(xj))[0] for _ in range(calls))
    call_cpu = statistics.median(_cpu(lambda: prepared(xj)) for _ in range(calls))
    jitted = jax.jit(asdex.jacobian_from_coloring(f, colored, output_format="bcoo"))
    warm, _ = _time(lambda: jitted(xj).data.block_until_ready())
    call_jit = statistics.median(_time(lambda: jitted(xj).data.block_until_ready())[0]
                                 for _ in range(calls))
    rows = int(np.diff(jac.indptr).max())
    cols = int(np.bincount(jac.indices, minlength=jac.shape[1]).max())
    return dict(kind=kind, size=size, mode=str(colored.mode), unknowns=int(x.size),
                nnz=int(jac.nnz), first=detect + color + evaluate, call=call,
                call_cpu=call_cpu, call_jit=call_jit, jit_first=warm, detect=detect, color=color,
                evaluate=evaluate, colors=int(colored.num_colors), bound=min(rows, cols),
                rss_before=rss0, rss_first=rss_first, rss_end=_rss_mb(), nnz_check=int(jac.nnz))


def run(kind, size, mode="auto", calls=7, root=None, jit=True, python=None):
    env = dict(os.environ)
    if root:
        env["VECJAC_ROOT"] = root
    role = "--asdex-child" if python else "--child"
    out = subprocess.run([python or sys.executable, os.path.abspath(__file__), role, kind,
                          str(size), mode, str(calls), str(int(jit))], capture_output=True,
                         text=True, check=False, env=env)
    if out.returncode:
        raise RuntimeError(out.stderr[-3000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    if "--child" in sys.argv:
        i = sys.argv.index("--child")
        kind, size, mode, calls, jit = sys.argv[i + 1:i + 6]
        print(json.dumps(child(kind, int(size), mode, int(calls), jit == "1")))
        return
    if "--asdex-child" in sys.argv:
        i = sys.argv.index("--asdex-child")
        kind, size, _, calls = sys.argv[i + 1:i + 5]
        print(json.dumps(asdex_child(kind, int(size), int(calls))))
        return
    if "--asdex" in sys.argv:
        against_asdex(sys.argv[sys.argv.index("--asdex") + 1])
        return
    if "--compare" in sys.argv:
        compare(sys.argv[sys.argv.index("--compare") + 1])
        return
    quick = "--quick" in sys.argv
    cases = [("brusselator", 128), ("brusselator", 512), ("brusselator", 708),
             ("arrowhead", 10_000)]
    if quick:
        cases = [("brusselator", 128), ("brusselator", 256), ("arrowhead", 2_000)]
    modes = ["auto"] + (["fwd", "rev", "bidirectional"] if "--modes" in sys.argv else [])
    print("| workload | unknowns | mode | first call | detection | coloring | call | call jit "
          "| colors (bound) | peak RSS first call / end |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for kind, size in cases:
        for mode in modes:
            try:
                r = run(kind, size, mode)
            except RuntimeError as e:
                print(f"| {kind} {size} | {mode}: failed: {str(e).splitlines()[-1]} |")
                continue
            label = f"{kind} {size}^2" if kind == "brusselator" else f"{kind} n={size}"
            print(f"| {label} | {r['unknowns']:,} | {r['mode']} | {r['first']:.3f} s | "
                  f"{r['detect']:.3f} s | {r['color']:.3f} s | {r['call'] * 1e3:.1f} ms | "
                  f"{r['call_jit'] * 1e3:.1f} ms | {r['colors']} ({r['bound']}) | "
                  f"{r['rss_first']:.0f} / {r['rss_end']:.0f} MB |", flush=True)


def against_asdex(python):
    """vecjac and asdex side by side, each workload in a child of its own, vecjac first."""
    sizes = [128, 512, 708]
    if "--sizes" in sys.argv:
        sizes = [int(v) for v in sys.argv[sys.argv.index("--sizes") + 1].split(",")]
    cases = [("brusselator", s) for s in sizes] + [("arrowhead", 10_000)]
    print("| workload | tool | mode | detection | coloring | first evaluation | first call "
          "| call | call (CPU) | call jit | colors (bound) | peak RSS first call / end |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for kind, size in cases:
        label = f"{kind} {size}^2" if kind == "brusselator" else f"{kind} n={size}"
        for tool in ("vecjac", "asdex"):
            if tool == "asdex" and kind == "arrowhead" and size >= 10_000:
                print(f"| {label} | asdex | skipped: 10^4 colors, 7.5 GB and 62 s first call "
                      "(issue 26), above this machine's shared budget |", flush=True)
                continue
            try:
                r = run(kind, size, calls=5, python=python if tool == "asdex" else None)
            except RuntimeError as e:
                print(f"| {label} | {tool}: failed: {str(e).splitlines()[-1]} |")
                continue
            # vecjac's first call is one call (cold); its detection and coloring are
            # timed again after it (warm), so its "first evaluation" is the rest
            evaluate = r.get("evaluate", r["first"] - r["detect"] - r["color"])
            print(f"| {label} | {tool} | {r['mode']} | {r['detect']:.2f} s | "
                  f"{r['color']:.2f} s | {evaluate:.2f} s | {r['first']:.2f} s | "
                  f"{_ms(r['call'])} | {_ms(r['call_cpu'])} | {_ms(r['call_jit'])} | "
                  f"{r['colors']} ({r['bound']}) | "
                  f"{r['rss_first'] / 1024:.2f} / {r['rss_end'] / 1024:.2f} GB |", flush=True)


def _ms(seconds):
    return f"{seconds:.2f} s" if seconds >= 1 else f"{seconds * 1e3:.1f} ms"


def _row(label, r):
    return (f"| {label} | {r['mode']} | {r['first']:.2f} s | {r['detect']:.2f} s | "
            f"{r['color']:.2f} s | {r['call'] * 1e3:.1f} ms | {r['call_cpu'] * 1e3:.1f} ms | "
            f"{r['call_jit'] * 1e3:.1f} ms | "
            f"{r['colors']} ({r['bound']}) | {r['rss_first']:.0f} MB |")


def compare(other):
    """Medians of --reps interleaved runs of `other` (before) and this checkout (after);
    the arrowhead's "before" (n colors: 2 s a call, 3 GB) runs once, without jit."""
    reps = int(sys.argv[sys.argv.index("--reps") + 1]) if "--reps" in sys.argv else 3
    this = os.path.join(HERE, "..")
    print("| workload | side | mode | first call | detection | coloring | call | call (CPU) "
          "| call jit | colors (bound) | peak RSS first call |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for kind, size in (("brusselator", 512), ("brusselator", 708), ("arrowhead", 10_000)):
        results = {"before": [], "after": []}
        for rep in range(reps):
            for side, root in (("before", other), ("after", this)):
                if kind == "arrowhead" and side == "before" and rep:
                    continue
                results[side].append(run(kind, size, calls=5, root=root,
                                         jit=not (kind == "arrowhead" and side == "before")))
        for side, rs in results.items():
            med = {k: (statistics.median(r[k] for r in rs) if isinstance(rs[0][k], float)
                       else rs[0][k]) for k in rs[0]}
            label = f"{kind} {size}^2" if kind == "brusselator" else f"{kind} n={size}"
            print(_row(label + f" ({len(rs)} runs)", med).replace(" | ", f" | {side} | ", 1),
                  flush=True)


if __name__ == "__main__":
    main()
