"""vecjac against its peers, side by side in one process: median times and ratios.

Run:  python benchmarks/compare.py [--quick] [--only 1,6] [--json benchmarks/results/compare.json]
Peers are optional (pip install -e ".[bench]"; PyTorch as `pip install torch==2.13.0`, the
CPU wheel); a system that is not installed is skipped. Every system's result is checked
against vecjac's before its time counts. Ratios are vecjac / system: below 1 means vecjac
is faster. The first call of each system (tracing, jit compilation) is not timed; the
systems are then timed in interleaved rounds (a noise burst on a shared machine hits all
of them alike) and each time is the median over all rounds.
"""
import argparse
import json
import os
import statistics
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from workloads import all_workloads  # noqa: E402
from vecjac._src.transforms.function import background  # noqa: E402
from workloads_forward import forward_workloads  # noqa: E402

ORDER = ["vecjac", "vecjac_function", "vecjac_fwd", "vecjac_loop", "numpy", "jax", "jax_jit", "torch_func",
         "tf_eager", "tf_function", "autograd"]


def sample_times(fn, min_runs, budget, max_runs):
    times = []
    start = time.perf_counter()
    while len(times) < min_runs or (time.perf_counter() - start < budget and
                                    len(times) < max_runs):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
        if time.perf_counter() - start > 4 * budget:
            break
    return times


def run(quick=False, only=None, json_path=None, rounds=None):
    """Each workload: every system warmed up and checked, then timed in `rounds`
    interleaved rounds (system after system, round after round), so that a burst of
    noise on the shared machine hits every system alike; medians over all rounds."""
    warnings.simplefilter("ignore")
    rng = np.random.default_rng(0)
    budget = 0.3 if quick else 1.5
    # 8 rounds of up to 125 calls: the host's noise comes in bursts of a fraction of a
    # second, and with 5 rounds of at most 40 calls (16 ms for workload 9) one burst
    # moved a median by 25% (vecjac and vecjac_fwd, the same computation, differed so)
    rounds = rounds or (2 if quick else 8)
    max_runs = 1000 // rounds
    results = []
    for workload in all_workloads(rng) + forward_workloads(rng):
        number = workload.name.split()[0]
        if only and number not in only:
            continue
        systems = workload.systems()
        reference = systems["vecjac"]()
        row = {"workload": workload.name, "times": {}, "errors": {}}
        timed, first_call = {}, {}
        for name in ORDER:
            if name not in systems:
                continue
            fn = systems[name]
            try:
                t0 = time.perf_counter()
                value = fn()  # warm-up: tracing / compilation
                first_call[name] = time.perf_counter() - t0
                err = float(np.max(np.abs(np.asarray(value) - reference)) /
                            max(1.0, float(np.max(np.abs(reference)))))
                if not np.isfinite(err) or err > 1e-6:
                    row["errors"][name] = f"result differs from vecjac (rel. err {err:.2e})"
                    continue
                timed[name] = []
            except Exception as e:  # a peer failing is reported, not fatal
                row["errors"][name] = f"{type(e).__name__}: {e}"[:200]
        for _ in range(rounds):
            for name in list(timed):
                fn, first = systems[name], first_call[name]
                try:
                    # let the previous system's worker threads go idle (OpenMP pools
                    # spin-wait for a while after their last op and steal the second core)
                    time.sleep(0.3)
                    if first < 5:  # untimed: caches and threads warm, and vj.function
                        for _ in range(3 if first < 0.1 else 2):  # past its warm-up calls
                            fn()
                    background.wait()  # vj.function's optimized replay built: steady state
                    timed[name] += sample_times(fn, 1 if first > 0.05 else 3,
                                                budget / rounds, max_runs)
                except Exception as e:
                    row["errors"][name] = f"{type(e).__name__}: {e}"[:200]
                    del timed[name]
        for name, times in timed.items():
            row["times"][name] = {"median_s": statistics.median(times), "runs": len(times),
                                  "first_call_s": first_call[name]}
        results.append(row)
        _print_row(row)
    if json_path:
        os.makedirs(os.path.dirname(json_path) or ".", exist_ok=True)
        with open(json_path, "w") as f:
            json.dump(results, f, indent=2)
    return results


def _print_row(row):
    times = row["times"]
    ours = times["vecjac"]["median_s"]
    traced = times.get("vecjac_function", {}).get("median_s")
    print(f"\n{row['workload']}")
    for name in ORDER:
        if name in times:
            t = times[name]["median_s"]
            ratio = "" if name == "vecjac" else f"  vecjac/{name} = {ours / t:7.3f}"
            if traced and name not in ("vecjac_function",):
                ratio += f"  vecjac_function/{name} = {traced / t:7.3f}"
            print(f"  {name:<16} {t * 1e3:10.3f} ms{ratio}")
        elif name in row["errors"]:
            print(f"  {name:<12} error: {row['errors'][name]}")
    sys.stdout.flush()


def write_markdown(results, path):
    """Median times and vecjac / peer ratios as a Markdown table."""
    names = [n for n in ORDER if any(n in r["times"] for r in results)]
    lines = ["| workload | " + " | ".join(names) + " |",
             "|---" * (len(names) + 1) + "|"]
    for r in results:
        ours = r["times"]["vecjac"]["median_s"]
        cells = []
        for n in names:
            t = r["times"].get(n)
            if t is None:
                cells.append("error" if n in r["errors"] else "-")
            elif n == "vecjac":
                cells.append(f"{ours * 1e3:.3g} ms")
            else:
                cells.append(f"{t['median_s'] * 1e3:.3g} ms ({ours / t['median_s']:.2f})")
        lines.append(f"| {r['workload']} | " + " | ".join(cells) + " |")
    traced = [r for r in results if "vecjac_function" in r["times"]]
    peers = [n for n in names if n not in ("vecjac_function",)]
    flines = ["| workload | " + " | ".join(peers) + " |", "|---" * (len(peers) + 1) + "|"]
    for r in traced:
        ours = r["times"]["vecjac_function"]["median_s"]
        cells = [f"{ours / r['times'][n]['median_s']:.2f}" if n in r["times"] else "-"
                 for n in peers]
        flines.append(f"| {r['workload']} | " + " | ".join(cells) + " |")
    with open(path, "w") as f:
        f.write("# vecjac against its peers\n\nMedian time per call; in parentheses vecjac / "
                "system (below 1: vecjac is faster). One process, float64, 2 cores; "
                "`python benchmarks/compare.py --markdown benchmarks/RESULTS.md`.\n\n")
        f.write("\n".join(lines) + "\n")
        if traced:
            f.write("\nvj.function (`vecjac_function`: traced once, replayed) / system, per "
                    "workload (below 1: vj.function is faster):\n\n")
            f.write("\n".join(flines) + "\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="shorter timing budget")
    parser.add_argument("--only", help="comma-separated workload numbers, e.g. 1,6")
    parser.add_argument("--json", help="write the results to this JSON file")
    parser.add_argument("--markdown", help="write the table of times and ratios here")
    parser.add_argument("--rounds", type=int, help="interleaved timing rounds (default 5, "
                        "2 with --quick)")
    args = parser.parse_args()
    only = set(args.only.split(",")) if args.only else None
    results = run(args.quick, only, args.json, args.rounds)
    if args.markdown:
        write_markdown(results, args.markdown)


if __name__ == "__main__":
    main()
