"""Large dense Jacobians near the memory limit: the 1-D Bratu residual, asked for densely.

Run:  python benchmarks/dense_jacobian.py [--n 5000 10000] [--rounds 5] [--variants ...]
      python benchmarks/dense_jacobian.py --compare OLD_TREE [--n 5000] [--rounds 5]
      (JAX: run with the peer venv, e.g.
       PYTHONPATH=/path/to/this/checkout /work/peers/bin/python benchmarks/dense_jacobian.py)

F(u) = (u[i-1] - 2 u[i] + u[i+1]) / h^2 + lam exp(u[i]) with zero boundary values: a
tridiagonal Jacobian, asked for as a dense (n, n) array (n = 5000: 200 MB; n = 10^4:
800 MB). Written three ways, as users write it: `concat` (vj.concat of slices and
vj.zeros), `numpy` (np.concatenate / np.exp on Tensors), `diff` (np.diff with
prepend/append zeros).

Systems, timed interleaved (one call of each per round, medians over the rounds; the
machine is shared, so absolute times move, ratios less):
- write once: `a = np.empty((n, n)); a[...] = 1.0` (the floor of any dense result);
- vecjac vj.jacobian mode auto / fwd / rev: `first` (a fresh vj.jacobian, so mode and
  output size are learned in the call) and `repeated` (the same function again);
- jax.jit(jax.jacfwd(F)) and jax.jit(jax.jacrev(F)) when jax imports (after a compiling
  call), float64.
Column `+read` times the call followed by one read pass over the result (np.add.reduce):
a result whose zeros were never written (calloc'd pages) pays for them there.

Every result is checked against the analytic tridiagonal Jacobian before timing.
--compare OLD_TREE runs the vecjac systems of OLD_TREE (a directory holding `vecjac/`,
e.g. `git archive` of an older commit) and of this checkout in alternating child
processes, and prints both medians and new / old.
"""
import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

LAM = 1.0
VARIANTS = ("concat", "numpy", "diff")
MODES = ("auto", "fwd", "rev")


def residuals(vj, n):
    h = 1.0 / (n + 1)

    def concat(u):
        z = vj.zeros([1], dtype=u.dtype)
        up = vj.concat([u[1:], z], 0)
        um = vj.concat([z, u[:-1]], 0)
        return (um - 2.0 * u + up) / (h * h) + LAM * vj.exp(u)

    def numpy_(u):
        z = np.zeros(1)
        up = np.concatenate([u[1:], z])
        um = np.concatenate([z, u[:-1]])
        return (um - 2.0 * u + up) / (h * h) + LAM * np.exp(u)

    def diff(u):
        return np.diff(u, 2, prepend=0.0, append=0.0) / (h * h) + LAM * np.exp(u)
    return {"concat": concat, "numpy": numpy_, "diff": diff}


def exact(u):
    n = len(u)
    h2 = (1.0 / (n + 1)) ** 2
    J = np.zeros((n, n))
    i = np.arange(n)
    J[i, i] = -2.0 / h2 + LAM * np.exp(u)
    J[i[:-1], i[:-1] + 1] = 1.0 / h2
    J[i[1:], i[1:] - 1] = 1.0 / h2
    return J


def check(name, J, reference):
    J = np.asarray(J)
    if J.shape != reference.shape:
        raise AssertionError(f"{name}: a Jacobian of shape {J.shape}")
    if not np.allclose(J, reference, rtol=1e-12, atol=1e-6):
        raise AssertionError(f"{name}: wrong Jacobian (max error "
                             f"{np.max(np.abs(J - reference))})")


def write_once(n):
    def run():
        a = np.empty((n, n))
        a[...] = 1.0
        return a
    return run


def vecjac_systems(n, variants, modes):
    import vecjac as vj
    u = np.linspace(0.0, 0.1, n)
    systems = {}
    for variant in variants:
        F = residuals(vj, n)[variant]
        for mode in modes:
            def first(F=F, mode=mode):
                return vj.jacobian(F, mode=mode)(u).numpy()
            repeated_fn = vj.jacobian(F, mode=mode)

            def repeated(J=repeated_fn):
                return J(u).numpy()
            systems[f"vecjac {mode} first ({variant})"] = first
            systems[f"vecjac {mode} repeated ({variant})"] = repeated
    return u, systems


def jax_systems(n):
    try:
        import jax
    except ImportError:
        return {}
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    h = 1.0 / (n + 1)

    def F(u):
        z = jnp.zeros(1, u.dtype)
        up = jnp.concatenate([u[1:], z])
        um = jnp.concatenate([z, u[:-1]])
        return (um - 2.0 * u + up) / (h * h) + LAM * jnp.exp(u)
    u = jnp.asarray(np.linspace(0.0, 0.1, n))
    out = {}
    for name, transform in (("jacfwd", jax.jacfwd), ("jacrev", jax.jacrev)):
        fn = jax.jit(transform(F))
        fn(u).block_until_ready()  # compile

        def run(fn=fn):
            return np.asarray(fn(u).block_until_ready())
        out[f"jax.jit({name})"] = run
    return out


def measure(systems, reference, rounds, read):
    """{name: [seconds]} (and name + " +read"), one call of each system per round."""
    for name, fn in systems.items():  # checked, and warmed up (numba, jit, page cache)
        r = fn()
        if name != "write once":
            check(name, r, reference)
        del r
        fn()
        gc.collect()
    times = {}
    for _ in range(rounds):
        for name, fn in systems.items():
            gc.collect()
            t = time.perf_counter()
            r = fn()
            dt = time.perf_counter() - t
            del r
            times.setdefault(name, []).append(dt)
            if read:
                gc.collect()
                t = time.perf_counter()
                r = fn()
                np.add.reduce(r, axis=None)
                dt = time.perf_counter() - t
                del r
                times.setdefault(name + " +read", []).append(dt)
    return times


def child(args):
    """One process: every system requested, `rounds` interleaved rounds; JSON out."""
    out = {}
    for n in args.n:
        reference = exact(np.linspace(0.0, 0.1, n))
        systems = {}
        if not args.vecjac_only:
            systems["write once"] = write_once(n)
        _, vsys = vecjac_systems(n, args.variants, args.modes)
        systems.update(vsys)
        if not args.vecjac_only and not args.no_jax:
            systems.update(jax_systems(n))
        out[str(n)] = measure(systems, reference, args.rounds, args.read)
        del reference
    return out


def table(results, rounds_label):
    """Medians and minima; the ratios compare minima (the least disturbed by the load of
    a shared machine): to writing the result once, and to the faster jax.jit mode."""
    lines = []
    for n, times in results.items():
        ref = min(times["write once"]) if "write once" in times else None
        jax_best = min([min(v) for k, v in times.items()
                        if k.startswith("jax") and "+read" not in k], default=None)
        lines.append(f"\nn = {n} ({int(n) ** 2 * 8 / 1e6:.0f} MB result), "
                     f"{rounds_label}")
        lines.append("| system | median s | min s | min / write once | min / best jax.jit |")
        lines.append("|---|---|---|---|---|")
        for name, v in times.items():
            m = min(v)
            r1 = f"{m / ref:.2f}" if ref else "-"
            r2 = f"{m / jax_best:.2f}" if jax_best else "-"
            lines.append(f"| {name} | {statistics.median(v):.4f} | {m:.4f} | {r1} | {r2} |")
    return "\n".join(lines)


def compare(args):
    """Old tree against this checkout, alternating child processes."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    trees = {"old": os.path.abspath(args.compare), "new": here}
    merged = {"old": {}, "new": {}}
    for r in range(args.rounds):
        for label in (("old", "new") if r % 2 == 0 else ("new", "old")):
            cmd = [sys.executable, os.path.abspath(__file__), "--child", "--vecjac-only",
                   "--rounds", "1", "--n", *map(str, args.n), "--variants", *args.variants,
                   "--modes", *args.modes] + (["--read"] if args.read else [])
            env = dict(os.environ, PYTHONPATH=trees[label])
            res = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
            for n, times in json.loads(res.stdout.strip().splitlines()[-1]).items():
                for name, ts in times.items():
                    merged[label].setdefault(n, {}).setdefault(name, []).extend(ts)
        print(f"round {r + 1} of {args.rounds} done", file=sys.stderr)
    for n in merged["new"]:
        print(f"\nn = {n}: medians of {args.rounds} alternating rounds")
        print("| system | old median (s) | new median (s) | new / old | old min | new min |\n"
              "|---|---|---|---|---|---|")
        for name, new in merged["new"][n].items():
            old = merged["old"].get(n, {}).get(name)
            if old:
                o, m = statistics.median(old), statistics.median(new)
                print(f"| {name} | {o:.4f} | {m:.4f} | {m / o:.3f} | {min(old):.4f} | "
                      f"{min(new):.4f} |")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, nargs="+", default=[5000, 10000])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=VARIANTS)
    parser.add_argument("--modes", nargs="+", default=list(MODES), choices=MODES)
    parser.add_argument("--read", action="store_true",
                        help="also time each call followed by one read pass")
    parser.add_argument("--no-jax", action="store_true")
    parser.add_argument("--compare", metavar="OLD_TREE")
    parser.add_argument("--json")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--vecjac-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.compare:
        return compare(args)
    results = child(args)
    if args.child:
        print(json.dumps(results))
        return
    print(table(results, f"{args.rounds} interleaved rounds"))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
