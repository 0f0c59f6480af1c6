"""Eager gradients of small NumPy functions: vj.grad against autograd and JAX (issue 30).

    /work/peers/bin/python benchmarks/eager_corpus.py [--scipy-source DIR] [--baseline TREE]
        [--rounds 5] [--out benchmarks/results/eager_corpus.md]

The corpus: SciPy's global-optimization benchmark functions (`go_benchmark_functions`,
about 270 classes with a `fun(self, x)` written in plain NumPy), found inside a SciPy
source tree given by --scipy-source (searched for the folder), or without one the dozen
functions of benchmarks/eager_corpus_functions.py. Each function's module source is loaded
once per system, with `numpy` bound to that system's module (`import numpy as np` and
`from numpy import sin, ...` both resolve through the loader's __import__): NumPy itself
for vecjac, whose Tensors take NumPy's protocols (np.sin(tensor) runs vj.sin), autograd.numpy
for autograd, jax.numpy for JAX (eager, float64; no jit). numpy.random, numpy.testing and
anything else import as usual, and a name a peer's module lacks falls back to NumPy's (the
call then fails and is counted).

Each function is differentiated at one point drawn uniformly from its bounds (seeded by its
name); a function a system cannot differentiate, or whose gradient differs from autograd's
(NaN equal, rtol 1e-6), is skipped for that system and counted by reason. Timing: CPU time
(time.process_time) of a batch of calls sized to about 2 ms, the systems interleaved
within each round, the minimum per call over --rounds rounds (the machine is shared: the
minimum is the least disturbed batch). --baseline TREE adds a second vecjac, imported from
another checkout into the same process, for before/after on the same corpus.
"""
import argparse
import builtins
import contextlib
import importlib
import math
import os
import statistics
import sys
import time
import types
import warnings
import zlib

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)


# -- loading one module source against a given numpy ---------------------------------------
class _NumpyAs(types.ModuleType):
    """`numpy` as a peer provides it: the peer's attribute, else NumPy's."""

    def __init__(self, peer):
        super().__init__(peer.__name__)
        self._peer = peer

    def __getattr__(self, name):
        try:
            return getattr(self._peer, name)
        except AttributeError:
            return getattr(np, name)


def _stub_common():
    common = types.ModuleType("common")

    @contextlib.contextmanager
    def safe_import():
        yield
    common.safe_import = safe_import
    return common


class SourceLoader:
    """Executes the modules of one folder with `numpy` resolving to `numpy_module`;
    relative imports (`from .go_benchmark import Benchmark`) load siblings the same way."""

    def __init__(self, folder, numpy_module, tag):
        self.folder, self.tag = folder, tag
        self.numpy = numpy_module if numpy_module is np else _NumpyAs(numpy_module)
        self.loaded = {}
        self.builtins = dict(vars(builtins))
        self.builtins["__import__"] = self._import

    def _import(self, name, globals=None, locals=None, fromlist=(), level=0):
        if level > 0:
            if name == "common":  # `from ..common import safe_import` (asv's helpers)
                return _stub_common()
            return self.module(name)
        if name == "numpy":
            return self.numpy
        return builtins.__import__(name, globals, locals, fromlist, level)

    def module(self, name):
        if name not in self.loaded:
            path = os.path.join(self.folder, name + ".py")
            with open(path) as f:
                code = compile(f.read(), path, "exec")
            namespace = {"__name__": f"{self.tag}.{name}", "__builtins__": self.builtins,
                         "__file__": path}
            self.loaded[name] = types.SimpleNamespace(**namespace)  # (cycles: placeholder)
            exec(code, namespace)
            self.loaded[name] = types.SimpleNamespace(**namespace)
        return self.loaded[name]


def find_go_functions(root):
    for folder, _, files in os.walk(root):
        if os.path.basename(folder) == "go_benchmark_functions" and "go_benchmark.py" in files:
            return folder
    raise SystemExit(f"--scipy-source: no go_benchmark_functions folder under {root}")


def scipy_corpus(loader):
    """[(name, fun, x0)] for every Benchmark subclass of the folder."""
    base = loader.module("go_benchmark").Benchmark
    out = []
    for fname in sorted(os.listdir(loader.folder)):
        if not fname.startswith("go_funcs_") or not fname.endswith(".py"):
            continue
        mod = loader.module(fname[:-3])
        for name, cls in sorted(vars(mod).items()):
            if isinstance(cls, type) and issubclass(cls, base) and cls is not base and \
                    cls.__module__ == f"{loader.tag}.{fname[:-3]}":
                try:
                    inst = cls()
                    lo, hi = np.array(inst.bounds, dtype=float).T
                except Exception as e:  # noqa: BLE001 (counted: the class is unusable)
                    out.append((name, None, f"construction: {type(e).__name__}"))
                    continue
                out.append((name, inst.fun, _point(name, lo, hi)))
    return out


def vendored_corpus(loader):
    return [(name, fn, _point(name, np.full(n, lo), np.full(n, hi)))
            for name, fn, lo, hi, n in loader.module("eager_corpus_functions").FUNCTIONS]


def _point(name, lo, hi):
    lo, hi = np.clip(lo, -1e3, 1e3), np.clip(hi, -1e3, 1e3)
    u = np.random.default_rng(zlib.crc32(name.encode())).uniform(size=lo.shape)
    return lo + (hi - lo) * u


# -- the systems ----------------------------------------------------------------------------
def import_vecjac(tree):
    """vecjac imported from `tree`, its modules then moved out of sys.modules so that
    another checkout can be imported beside it (the package imports nothing of its own
    lazily but dask)."""
    mine = {k: sys.modules.pop(k) for k in list(sys.modules)
            if k == "vecjac" or k.startswith("vecjac.")}
    sys.path.insert(0, tree)
    try:
        vj = importlib.import_module("vecjac")
    finally:
        sys.path.remove(tree)
    for k in [k for k in sys.modules if k == "vecjac" or k.startswith("vecjac.")]:
        del sys.modules[k]
    sys.modules.update(mine)
    return vj


def vecjac_system(vj):
    def make(fun):
        g = vj.grad(fun)
        return lambda x: g(x).numpy()
    return make


def autograd_system():
    import autograd
    return autograd.numpy, lambda fun: autograd.grad(fun)


def jax_system():
    import jax
    jax.config.update("jax_enable_x64", True)
    jax.config.update("jax_platforms", "cpu")
    import jax.numpy as jnp

    def make(fun):
        g = jax.grad(fun)
        return lambda x: np.asarray(g(x))
    return jnp, make


# -- timing ---------------------------------------------------------------------------------
def batch_size(call):
    t = time.process_time()
    call()
    one = max(time.process_time() - t, 1e-6)
    return max(1, min(2000, int(2e-3 / one)))


def per_call(call, n):
    t = time.process_time()
    for _ in range(n):
        call()
    return (time.process_time() - t) / n


def _reason(e):
    text = str(e).splitlines()[0] if str(e) else ""
    return f"{type(e).__name__}: {text[:70]}"


def prepare(corpora, makers, reference="autograd"):
    """{function: {system: gradient call}} for the calls that work and agree with the
    reference's gradient; {system: {reason: count}} for the others."""
    calls, skipped = {}, {s: {} for s in makers}
    names = [name for name, _, _ in corpora[reference]]
    for name in names:
        row, ref = {}, None
        for system in [reference] + [s for s in makers if s != reference]:
            entry = {n: (f, x) for n, f, x in corpora[system]}.get(name)
            if entry is None or entry[0] is None:
                why = "not loaded" if entry is None else entry[1]
                skipped[system][why] = skipped[system].get(why, 0) + 1
                continue
            fun, x0 = entry
            try:
                g = makers[system](fun)
                value = np.asarray(g(x0.copy()), dtype=float)
                g(x0.copy())
            except Exception as e:  # noqa: BLE001 (counted by reason)
                why = _reason(e)
                skipped[system][why] = skipped[system].get(why, 0) + 1
                continue
            if system == reference:
                ref = value
            elif ref is not None and (value.shape != ref.shape or not np.allclose(
                    value, ref, rtol=1e-6, atol=1e-12, equal_nan=True)):
                why = f"gradient differs from {reference}'s"
                skipped[system][why] = skipped[system].get(why, 0) + 1
                continue
            row[system] = (g, x0)
        if reference in row:
            calls[name] = row
    return calls, skipped


def time_corpus(calls, rounds):
    best = {name: {s: math.inf for s in row} for name, row in calls.items()}
    sizes = {name: {s: batch_size(lambda: g(x)) for s, (g, x) in row.items()}
             for name, row in calls.items()}
    for _ in range(rounds):
        for name, row in calls.items():
            for s, (g, x) in row.items():
                best[name][s] = min(best[name][s], per_call(lambda: g(x), sizes[name][s]))
    return best


def op_overheads(vj, number=20000):
    """us per op, CPU time, best of 5: the per-op path untaped and recorded."""
    a = np.array([1.0, 2.0])
    x, y = vj.constant(a), vj.constant(a)
    ops = [("x + y", lambda: x + y), ("x * 2.0 (weak scalar)", lambda: x * 2.0),
           ("np.sin(x)", lambda: np.sin(x)), ("x[0]", lambda: x[0]),
           ("np.floor(x)", lambda: np.floor(x))]
    rows = {}
    for label, fn in ops:
        rows[f"{label}, untaped"] = min(per_call(fn, number) for _ in range(5)) * 1e6
    with vj.GradientTape(persistent=True) as tape:
        tape.watch(x)
        for label, fn in ops:
            rows[f"{label}, recorded"] = min(per_call(fn, number // 4)
                                             for _ in range(5)) * 1e6
    return rows


def numpy_overheads(number=20000):
    a = np.array([1.0, 2.0])
    ops = [("x + y", lambda: a + a), ("x * 2.0 (weak scalar)", lambda: a * 2.0),
           ("np.sin(x)", lambda: np.sin(a)), ("x[0]", lambda: a[0]),
           ("np.floor(x)", lambda: np.floor(a))]
    return {f"{label}, untaped": min(per_call(fn, number) for _ in range(5)) * 1e6
            for label, fn in ops}


# -- an eager time loop: RK4 on a 3-state ODE ------------------------------------------------
def rk4_final_state(xp, p, steps=2000, h=1e-3):
    """Lorenz-63 with parameters p = (sigma, rho, beta), y0 = (1, 1, 1), classic RK4."""
    def rhs(y):
        return xp.stack([p[0] * (y[1] - y[0]), y[0] * (p[1] - y[2]) - y[1],
                         y[0] * y[1] - p[2] * y[2]])
    y = xp.ones(3)
    for _ in range(steps):
        k1 = rhs(y)
        k2 = rhs(y + 0.5 * h * k1)
        k3 = rhs(y + 0.5 * h * k2)
        k4 = rhs(y + h * k3)
        y = y + h / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
    return y


def rk4_rows(vjs, rounds):
    p = np.array([10.0, 28.0, 8.0 / 3.0])
    contenders = {"NumPy (no derivative)": lambda: rk4_final_state(np, p)}
    for label, vj in vjs.items():
        grad = vj.grad(lambda q: np.sum(rk4_final_state(np, q)))
        jacfwd = vj.jacfwd(lambda q: rk4_final_state(np, q))
        contenders[f"{label} vj.grad"] = lambda g=grad: g(p)
        contenders[f"{label} vj.jacfwd"] = lambda j=jacfwd: j(p)
    try:
        import autograd
        import autograd.numpy as anp
        ag = autograd.grad(lambda q: anp.sum(rk4_final_state(anp, q)))
        contenders["autograd grad"] = lambda: ag(p)
    except ImportError:
        pass
    for fn in contenders.values():
        fn()
    best = {k: math.inf for k in contenders}
    for _ in range(rounds):
        for k, fn in contenders.items():
            best[k] = min(best[k], per_call(fn, 1))
    return best


# -- report ---------------------------------------------------------------------------------
def _geomean(xs):
    return math.exp(statistics.fmean(math.log(x) for x in xs)) if xs else math.nan


def report(best, skipped, systems, overheads, rk4, source, rounds):
    lines = [f"# benchmarks/eager_corpus.py, one run ({time.strftime('%Y-%m-%d')}, shared "
             "2-core VM)", "",
             f"Corpus: {source}. One `grad` call per function at a point drawn from its "
             "bounds; CPU time (process_time) per call, the minimum over "
             f"{rounds} interleaved rounds of ~2 ms batches. Ratios: system / autograd "
             "(below 1: faster than autograd), over the functions both differentiate.", "",
             "| system | functions | median per call | geo-mean / autograd | faster than "
             "autograd |", "|---|---|---|---|---|"]
    for s in systems:
        if s == "autograd":
            names = [n for n in best if s in best[n]]
            lines.append(f"| autograd | {len(names)} | "
                         f"{statistics.median(best[n][s] for n in names) * 1e3:.3f} ms | "
                         "(reference) | |")
            continue
        names = [n for n in best if s in best[n] and "autograd" in best[n]]
        ratios = [best[n][s] / best[n]["autograd"] for n in names]
        lines.append(f"| {s} | {len(names)} | "
                     f"{statistics.median(best[n][s] for n in names) * 1e3:.3f} ms | "
                     f"{_geomean(ratios):.2f} | {sum(r < 1 for r in ratios)} of "
                     f"{len(ratios)} ({100 * sum(r < 1 for r in ratios) / max(1, len(ratios)):.0f}%) |")
    lines += ["", "Skipped (could not differentiate, or a gradient that differs from "
              "autograd's), by reason:", ""]
    for s in systems:
        for why, k in sorted(skipped[s].items(), key=lambda kv: -kv[1]):
            lines.append(f"- {s}: {k} x {why}")
    main = systems[0]
    worst = sorted([n for n in best if main in best[n]],
                   key=lambda n: -best[n][main] / best[n]["autograd"])[:10]
    cols = systems
    lines += ["", f"Worst 10 for {main} (per call, us):", "",
              "| function | " + " | ".join(cols) + f" | {main} / autograd |",
              "|---|" + "---|" * (len(cols) + 1)]
    for n in worst:
        lines.append(f"| {n} | " + " | ".join(
            f"{best[n][s] * 1e6:.0f}" if s in best[n] else "-" for s in cols)
            + f" | {best[n][main] / best[n]['autograd']:.2f} |")
    if overheads:
        labels = list(overheads[systems[0]]) if systems[0] in overheads else \
            list(next(iter(overheads.values())))
        lines += ["", "Per-op overhead (us per op, CPU time, best of 5 x 20000; 2-element "
                  "float64 Tensors; recorded: inside a GradientTape watching x):", "",
                  "| op | " + " | ".join(overheads) + " |", "|---|" + "---|" * len(overheads)]
        for lab in labels:
            lines.append(f"| {lab} | " + " | ".join(
                f"{o[lab]:.2f}" if lab in o else "-" for o in overheads.values()) + " |")
    if rk4:
        base = rk4["NumPy (no derivative)"]
        lines += ["", "RK4, 2000 steps of Lorenz-63 (3 states, 3 parameters), written with "
                  "np. calls and indexing; the best of the rounds:", "",
                  "| contender | time | / NumPy |", "|---|---|---|"]
        for k, v in rk4.items():
            lines.append(f"| {k} | {v * 1e3:.1f} ms | {v / base:.1f} |")
    lines += ["", "All functions (per call, us):", "",
              "| function | " + " | ".join(cols) + f" | {main} / autograd |",
              "|---|" + "---|" * (len(cols) + 1)]
    for n in sorted(best):
        ratio = (f"{best[n][main] / best[n]['autograd']:.2f}" if main in best[n] else "-")
        lines.append(f"| {n} | " + " | ".join(
            f"{best[n][s] * 1e6:.0f}" if s in best[n] else "-" for s in cols) + f" | {ratio} |")
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scipy-source", help="a SciPy source tree (its benchmarks/ folder)")
    parser.add_argument("--baseline", help="another vecjac checkout, timed beside this one")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--no-jax", action="store_true")
    parser.add_argument("--no-rk4", action="store_true")
    parser.add_argument("--out", help="write the markdown report here")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    vjs = {"vecjac": import_vecjac(REPO)}
    if args.baseline:
        vjs["vecjac baseline"] = import_vecjac(os.path.abspath(args.baseline))
    peers = {}
    try:
        peers["autograd"] = autograd_system()
    except ImportError:
        raise SystemExit("autograd is needed (the reference): run with /work/peers/bin/python")
    if not args.no_jax:
        try:
            peers["jax"] = jax_system()
        except ImportError:
            pass
    if args.scipy_source:
        folder, corpus, source = (find_go_functions(args.scipy_source), scipy_corpus,
                                  "SciPy's go_benchmark_functions")
    else:
        folder, corpus, source = HERE, vendored_corpus, "benchmarks/eager_corpus_functions.py"
    plain = corpus(SourceLoader(folder, np, "corpus_numpy"))
    corpora = {label: plain for label in vjs}
    makers = {label: vecjac_system(vj) for label, vj in vjs.items()}
    for label, (module, make) in peers.items():
        corpora[label] = corpus(SourceLoader(folder, module, f"corpus_{label}"))
        makers[label] = make
    calls, skipped = prepare(corpora, makers)
    best = time_corpus(calls, args.rounds)
    overheads = {"NumPy": numpy_overheads()}
    for label, vj in vjs.items():
        overheads[label] = op_overheads(vj)
    rk4 = None if args.no_rk4 else rk4_rows(vjs, args.rounds)
    text = report(best, skipped, list(makers), overheads, rk4, source, args.rounds)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
