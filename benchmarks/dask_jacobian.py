"""A large dense Jacobian on Dask (2 local worker processes) against single-process vecjac.

Run: python benchmarks/dask_jacobian.py [--sizes 5000,20000] [--rank 50] [--row-block R]
                                       [--repeat 3] [--zarr DIR]

f(x) = tanh(U (V^T x)) + x^3 with U, V of n x rank: its Jacobian
diag(1 - tanh(z)^2) U V^T + diag(3 x^2) is dense (n x n, 8 n^2 bytes: 3.2 GB at
n = 20,000) while f itself stores only 2 n x rank numbers. Each measurement runs in a
fresh process (so that the RSS high-water marks belong to it alone):

- single: `vj.jacobian(f)(x)` in one process, BLAS limited to one thread (as Dask's
  workers are), then its row sums; and again with parallel_iterations = the rows of a
  Dask block (the same blocking, in one process).
- sync: `vj.dask.jacobian(f)(x)`'s blocks run one after another in one process (Dask's
  synchronous scheduler), reduced to row sums: blocking without distribution.
- cluster: a LocalCluster(n_workers=2, threads_per_worker=1, processes=True);
  `vj.dask.jacobian(f)(x)` with the default row_block (256 MiB blocks) or --row-block,
  reduced to row sums on the workers (`J.sum(axis=1)`), so that the 3.2 GB are never
  gathered; or written to zarr with --zarr. Timed on fresh workers (imports, numba's
  first compilations and the shipping of f count), then again on the same workers.

Each run reports its first call and the best of --repeat calls (the machine is shared).

Every run's row sums are checked against the closed form J @ 1. Peak memory is
resource.getrusage's ru_maxrss of each process (workers via client.run; the client
process also hosts the scheduler). Rows per second per core: n / seconds / processes.
The first line reports how much two busy processes get out of the machine's cores (on a
shared VM, two vCPUs may deliver the throughput of one).
"""
import argparse
import datetime
import json
import logging
import os
import resource
import subprocess
import sys
import time

# one BLAS thread per process, as Dask's nannies set for their workers
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

import vecjac as vj  # noqa: E402


def problem(n, rank, seed=0):
    rng = np.random.default_rng(seed)
    U = rng.standard_normal((n, rank)) / np.sqrt(rank)
    V = rng.standard_normal((n, rank)) / np.sqrt(n)
    x = rng.uniform(-1, 1, n)

    def f(x):
        return vj.tanh(U @ (V.T @ x)) + x ** 3

    row_sums = (1 - np.tanh(U @ (V.T @ x)) ** 2) * (U @ V.sum(axis=0)) + 3 * x ** 2
    return f, x, row_sums


def peak_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # kB on Linux


def _result(seconds, sums, expected, **extra):
    return dict(seconds=seconds, peak_mb=[peak_mb()], row_sums=sums.tolist(),
                max_rel_err=float(np.max(np.abs(sums - expected) / np.abs(expected).max())),
                **extra)


def best_of(repeat, run):
    """(first call's wall time, fastest wall time, last result) of `repeat` calls of
    run(). The first call in a process pays for fresh memory (page faults), numba's
    compilations and imports; the fastest is the one least disturbed by other processes
    on this shared machine."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        out = run()
        times.append(time.perf_counter() - start)
        if len(times) < repeat:
            del out  # the next call must not find this one's result still held
    return times[0], min(times), out


def run_single(n, rank, parallel_iterations, repeat):
    """vj.jacobian in this process (the full J is materialized, as its API returns it)."""
    f, x, expected = problem(n, rank)
    first, best, J = best_of(repeat, lambda: vj.jacobian(
        f, parallel_iterations=parallel_iterations)(x).numpy())
    return _result(best, J.sum(axis=1), expected, first_seconds=first)


def run_sync(n, rank, row_block, repeat):
    """vecjac.dask's blocks run one after the other in this process (Dask's synchronous
    scheduler), reduced to row sums: blocking and reduction without distribution."""
    import vecjac.dask as vjd
    f, x, expected = problem(n, rank)
    first, best, sums = best_of(repeat, lambda: vjd.jacobian(f, row_block=row_block)(x)
                                .sum(axis=1).compute(scheduler="synchronous"))
    return _result(best, sums, expected, first_seconds=first)


def run_cluster(n, rank, row_block, zarr_dir, repeat):
    """2 worker processes; timed on fresh workers, then (best of `repeat`) on the same,
    warm ones."""
    import dask.array as da
    from distributed import Client, LocalCluster

    import vecjac.dask as vjd
    f, x, expected = problem(n, rank)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=":0", silence_logs=logging.ERROR) as cluster, \
            Client(cluster) as client:
        times = []
        for attempt in ["cold"] + ["warm"] * repeat:
            start = time.perf_counter()
            J = vjd.jacobian(f, row_block=row_block)(x)
            if zarr_dir:
                store = os.path.join(zarr_dir, f"jac-{n}-{attempt}.zarr")
                J.to_zarr(store, overwrite=True)
                times.append(time.perf_counter() - start)
                sums = da.from_zarr(store).sum(axis=1).compute()  # checked, not timed
            else:
                sums = J.sum(axis=1).compute()
                times.append(time.perf_counter() - start)
        workers = client.run(peak_mb)
    out = _result(min(times[1:]), sums, expected, first_seconds=times[0],
                  blocks=len(J.chunks[0]), row_block=J.chunks[0][0])
    out["peak_mb"] = sorted(workers.values()) + out["peak_mb"]  # workers, then client
    return out


def cpu_scaling():
    """Wall time of a pure-Python loop alone and as two processes at once: how much two
    busy processes get out of this machine's cores."""
    code = "import time\nt = time.perf_counter()\ns = 0\nfor i in range(5_000_000): s += i\n" \
           "print(time.perf_counter() - t)"
    alone = float(subprocess.run([sys.executable, "-c", code], capture_output=True,
                                 text=True, check=True).stdout)
    pair = [subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
            for _ in range(2)]
    both = max(float(p.communicate()[0]) for p in pair)
    return alone, both


CHILDREN = {"single": lambda a, n: run_single(n, a.rank, a.row_block, a.repeat),
            "sync": lambda a, n: run_sync(n, a.rank, a.row_block, a.repeat),
            "cluster": lambda a, n: run_cluster(n, a.rank, a.row_block, a.zarr, a.repeat)}


def measure(mode, n, args, row_block):
    """One measurement in a fresh Python process (its own RSS high-water mark)."""
    cmd = [sys.executable, __file__, "--child", mode, "--sizes", str(n), "--rank",
           str(args.rank), "--repeat", str(args.repeat)]
    if row_block:
        cmd += ["--row-block", str(row_block)]
    if args.zarr and mode == "cluster":
        cmd += ["--zarr", args.zarr]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    result = json.loads(out.strip().splitlines()[-1])
    assert result["max_rel_err"] < 1e-10, (mode, n, result["max_rel_err"])
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="5000,20000")
    parser.add_argument("--rank", type=int, default=50)
    parser.add_argument("--zarr", default=None, help="write J to zarr stores in this folder")
    parser.add_argument("--row-block", type=int, default=None,
                        help="rows per task (default: vecjac.dask's 256 MiB budget)")
    parser.add_argument("--repeat", type=int, default=3,
                        help="calls per measurement; the fastest is reported")
    parser.add_argument("--child", choices=sorted(CHILDREN), help=argparse.SUPPRESS)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    if args.child:
        print(json.dumps(CHILDREN[args.child](args, sizes[0])))
        return
    alone, both = cpu_scaling()
    print(f"# {datetime.date.today()}, {os.cpu_count()} cores (two busy processes: "
          f"{2 * alone / both:.2f}x the throughput of one), f(x) = tanh(U V^T x) + x^3, "
          f"rank {args.rank}, float64, one BLAS thread per process; first call in a fresh "
          f"process (fresh workers) and best of {args.repeat}")
    print("| n | J | run | processes | wall s: first / best | / vj.jacobian: first / best "
          "| rows/s/core (best) | peak RSS MB |")
    print("|---|---|---|---|---|---|---|---|")
    for n in sizes:
        base = measure("single", n, args, None)
        cluster = measure("cluster", n, args, args.row_block)
        rb, nb = cluster["row_block"], cluster["blocks"]
        runs = [("vj.jacobian(f)(x)", 1, base)]
        if nb > 1:
            runs.append((f"vj.jacobian, parallel_iterations={rb}", 1,
                         measure("single", n, args, rb)))
        runs.append((f"vj.dask, {nb} x {rb} rows, 1 process (synchronous), row sums", 1,
                     measure("sync", n, args, args.row_block)))
        runs.append((f"vj.dask, {nb} x {rb} rows, 2 workers, "
                     f"{'to zarr' if args.zarr else 'row sums'}", 2, cluster))
        for label, procs, r in runs:
            mem = " / ".join(f"{m:.0f}" for m in r["peak_mb"])
            print(f"| {n} | {8 * n * n / 1e9:.2f} GB | {label} | {procs} | "
                  f"{r['first_seconds']:.2f} / {r['seconds']:.2f} | "
                  f"{r['first_seconds'] / base['first_seconds']:.2f} / "
                  f"{r['seconds'] / base['seconds']:.2f} | "
                  f"{n / r['seconds'] / procs:.0f} | {mem} |")
        diff = np.max(np.abs(np.array(base["row_sums"]) - np.array(cluster["row_sums"])))
        worst = max(r["max_rel_err"] for *_, r in runs)
        print(f"<!-- n={n}: max |row sums vj.jacobian - vj.dask| = {diff:.1e}; largest "
              f"relative error against the closed form {worst:.1e}; peak RSS of the "
              "2-worker runs: worker / worker / client (with the scheduler) -->")


if __name__ == "__main__":
    main()
