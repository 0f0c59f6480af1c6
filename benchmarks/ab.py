"""Two vecjac checkouts against each other on compare.py's workloads: did a change slow it?

Run:  python benchmarks/ab.py OLD_TREE NEW_TREE [--only 9,10] [--rounds 6] [--budget 0.4]
Each round runs one process per tree, alternating (old, new, old, new, ...), so that a burst
of noise on the shared machine hits both alike; each process imports vecjac from its tree and
the workloads from this folder, warms every vecjac system up, then times it for `budget`
seconds. The table gives the median over all rounds per tree and new / old (above 1: the
new tree is slower). Only vecjac's systems are timed (peers are not needed). A tree is a
directory holding the package `vecjac/` (a git worktree of another commit, for instance:
`git worktree add /tmp/base HEAD~1`).
"""
import argparse
import importlib
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SYSTEMS = ("vecjac", "vecjac_function", "vecjac_fwd", "vecjac_loop")


def settle():
    """Wait for vj.function's background worker (trees that have one) to build the
    optimized replays: timing during that build measures the worker, not the replay."""
    try:
        background = importlib.import_module("vecjac._src.transforms.function.background")
    except ImportError:
        return
    background.wait()


def child(only, budget):
    """In a process whose sys.path starts with a tree: {workload: {system: [times]}}."""
    import warnings

    import numpy as np
    warnings.simplefilter("ignore")
    sys.path.insert(1, HERE)
    from workloads import all_workloads
    from workloads_forward import forward_workloads
    rng = np.random.default_rng(0)
    out = {}
    for workload in all_workloads(rng) + forward_workloads(rng):
        if only and workload.name.split()[0] not in only:
            continue
        systems = workload.systems()
        row = out[workload.name] = {}
        for name in SYSTEMS:
            if name not in systems:
                continue
            fn = systems[name]
            for _ in range(4):  # tracing, vj.function's warm-up replays, numba's compiles
                fn()
            settle()
            times, start = [], time.perf_counter()
            while len(times) < 3 or time.perf_counter() - start < budget:
                t = time.perf_counter()
                fn()
                times.append(time.perf_counter() - t)
            row[name] = times
    print(json.dumps(out))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("old")
    parser.add_argument("new")
    parser.add_argument("--only", help="comma-separated workload numbers, e.g. 9,10")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--budget", type=float, default=0.4, help="seconds per system")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    only = set(args.only.split(",")) if args.only else None
    if args.child:
        return child(only, args.budget)
    trees = {"old": os.path.abspath(args.old), "new": os.path.abspath(args.new)}
    for label, tree in trees.items():
        if not os.path.isdir(os.path.join(tree, "vecjac")):
            parser.error(f"{label} tree {tree} holds no vecjac/ package")
    times = {"old": {}, "new": {}}
    for r in range(args.rounds):
        for label in (("old", "new") if r % 2 == 0 else ("new", "old")):
            cmd = [sys.executable, os.path.abspath(__file__), args.old, args.new, "--child",
                   "--budget", str(args.budget)] + (["--only", args.only] if args.only else [])
            env = dict(os.environ, PYTHONPATH=trees[label])
            result = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True,
                                    cwd=trees[label])
            for workload, row in json.loads(result.stdout.strip().splitlines()[-1]).items():
                for system, ts in row.items():
                    times[label].setdefault((workload, system), []).extend(ts)
        print(f"round {r + 1} of {args.rounds} done", file=sys.stderr)
    print(f"| workload | system | old (ms) | new (ms) | new / old |\n|---|---|---|---|---|")
    for key in times["old"]:
        if key not in times["new"]:
            continue
        old, new = statistics.median(times["old"][key]), statistics.median(times["new"][key])
        print(f"| {key[0]} | {key[1]} | {old * 1e3:.3f} | {new * 1e3:.3f} | {new / old:.3f} |")


if __name__ == "__main__":
    main()
