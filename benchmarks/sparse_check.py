"""The cost of sparse_jacobian's check= (a random-direction product against the compressed
result): first call and repeated calls with check="auto" (the default: the first 3
evaluations of a pattern), "always" and False, on benchmarks/sparse.py's workloads.

Run:  python benchmarks/sparse_check.py
Fresh prepared functions per first-call sample; medians; one process, interleaved.
"""
import statistics
import sys
import os
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import vecjac as vj  # noqa: E402
from sparse import bratu, brusselator  # noqa: E402

CASES = [("Bratu 1-D n=100000", bratu, np.full(100_000, 0.1)),
         ("Brusselator 2-D 128x128x2", brusselator,
          1.0 + 0.1 * np.random.default_rng(0).random(2 * 128 * 128))]


def main(rounds=5):
    print("| workload | check | first call | calls 2-3 | call 5+ |\n|---|---|---|---|---|")
    for name, f, x in CASES:
        rows = {c: ([], [], []) for c in ("auto", "always", False)}
        for _ in range(rounds):
            for check, (first, early, late) in rows.items():
                J = vj.sparse_jacobian(f, check=check)
                t = time.perf_counter()
                J(x)
                first.append(time.perf_counter() - t)
                for k in range(2, 8):
                    t = time.perf_counter()
                    J(x)
                    (early if k <= 3 else late if k >= 5 else []).append(
                        time.perf_counter() - t)
        for check, (first, early, late) in rows.items():
            print(f"| {name} | {check!r} | {statistics.median(first) * 1e3:.1f} ms | "
                  f"{statistics.median(early) * 1e3:.2f} ms | "
                  f"{statistics.median(late) * 1e3:.2f} ms |")


if __name__ == "__main__":
    main()
