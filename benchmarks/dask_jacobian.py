"""A large dense Jacobian on Dask (2 local worker processes) against single-process vecjac.

Run: python benchmarks/dask_jacobian.py [--sizes 5000,20000] [--rank 50] [--row-block R]
                                       [--zarr DIR]

f(x) = tanh(U (V^T x)) + x^3 with U, V of n x rank: its Jacobian
diag(1 - tanh(z)^2) U V^T + diag(3 x^2) is dense (n x n, 8 n^2 bytes: 3.2 GB at
n = 20,000) while f itself stores only 2 n x rank numbers. Each measurement runs in a
fresh process (so that the RSS high-water marks belong to it alone):

- single: `vj.jacobian(f)(x)` in one process, BLAS limited to one thread (as Dask's
  workers are), then its row sums; and again with parallel_iterations = the rows of a
  Dask block (the same blocking, in one process; last column).
- dask: a LocalCluster(n_workers=2, threads_per_worker=1, processes=True);
  `vj.dask.jacobian(f)(x)` with the default row_block (256 MiB blocks), reduced to row
  sums on the workers (`J.sum(axis=1)`), so that the 3.2 GB are never gathered; or
  written to zarr with --zarr. Timed twice: on fresh workers (imports, numba's first
  compilations and the shipping of f count) and again on the same, warm workers.

Both results' row sums are checked against the closed form J @ 1. Peak memory is
resource.getrusage's ru_maxrss of each process (workers via client.run; the client
process also hosts the scheduler). Rows per second per core: n / seconds / cores used.
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


def run_single(n, rank, parallel_iterations=None):
    f, x, expected = problem(n, rank)
    start = time.perf_counter()
    J = vj.jacobian(f, parallel_iterations=parallel_iterations)(x).numpy()
    seconds = time.perf_counter() - start
    sums = J.sum(axis=1)
    return dict(seconds=seconds, client_peak_mb=peak_mb(), worker_peak_mb=[],
                max_rel_err=float(np.max(np.abs(sums - expected) / np.abs(expected).max())),
                row_sums=sums.tolist())


def run_dask(n, rank, zarr_dir, row_block):
    # imported here so that the single-process measurement's memory excludes dask
    import dask.array as da
    from distributed import Client, LocalCluster

    import vecjac.dask as vjd
    f, x, expected = problem(n, rank)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=":0", silence_logs=logging.ERROR) as cluster, \
            Client(cluster) as client:
        times = []
        for attempt in ("cold", "warm"):
            start = time.perf_counter()
            J = vjd.jacobian(f, row_block=row_block)(x)
            if zarr_dir:
                J.to_zarr(os.path.join(zarr_dir, f"jac-{n}-{attempt}.zarr"), overwrite=True)
                sums = da.from_zarr(os.path.join(zarr_dir, f"jac-{n}-{attempt}.zarr")) \
                    .sum(axis=1).compute()
            else:
                sums = J.sum(axis=1).compute()
            times.append(time.perf_counter() - start)
        workers = client.run(peak_mb)
    return dict(seconds=times[0], warm_seconds=times[1], client_peak_mb=peak_mb(),
                worker_peak_mb=sorted(workers.values()), blocks=len(J.chunks[0]),
                row_block=J.chunks[0][0],
                max_rel_err=float(np.max(np.abs(sums - expected) / np.abs(expected).max())),
                row_sums=sums.tolist())


def measure(mode, n, rank, zarr_dir, row_block):
    """One measurement in a fresh Python process; its JSON result. row_block: rows per
    task (dask) or parallel_iterations (single)."""
    cmd = [sys.executable, __file__, "--child", mode, "--sizes", str(n), "--rank", str(rank)]
    if row_block:
        cmd += ["--row-block", str(row_block)]
    if zarr_dir:
        cmd += ["--zarr", zarr_dir]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="5000,20000")
    parser.add_argument("--rank", type=int, default=50)
    parser.add_argument("--zarr", default=None, help="write J to zarr stores in this folder")
    parser.add_argument("--row-block", type=int, default=None,
                        help="rows per task (default: vecjac.dask's 256 MiB budget)")
    parser.add_argument("--child", choices=("single", "dask"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    if args.child:
        run = (lambda n, r: run_single(n, r, args.row_block)) if args.child == "single" \
            else (lambda n, r: run_dask(n, r, args.zarr, args.row_block))
        print(json.dumps(run(sizes[0], args.rank)))
        return
    print(f"# {datetime.date.today()}, {os.cpu_count()} cores, f(x) = tanh(U V^T x) + x^3, "
          f"rank {args.rank}, float64{', written to zarr' if args.zarr else ''}")
    print("| n | J size | single s | dask s (cold / warm) | dask / single (cold / warm) | "
          "rows/s/core single | rows/s/core dask (warm) | peak MB single | "
          "peak MB dask workers | peak MB dask client | blocks x rows | "
          "single, p = rows: s / peak MB |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for n in sizes:
        single = measure("single", n, args.rank, None, None)
        dask_ = measure("dask", n, args.rank, args.zarr, args.row_block)
        # one process, chunked like the dask blocks (vj.jacobian's parallel_iterations)
        chunked = measure("single", n, args.rank, None, dask_["row_block"]) \
            if dask_["blocks"] > 1 else None
        for name, r in (("single", single), ("dask", dask_), ("chunked", chunked)):
            assert r is None or r["max_rel_err"] < 1e-10, (name, r["max_rel_err"])
        diff = np.max(np.abs(np.array(single["row_sums"]) - np.array(dask_["row_sums"])))
        print(f"| {n} | {8 * n * n / 1e9:.2f} GB | {single['seconds']:.2f} | "
              f"{dask_['seconds']:.2f} / {dask_['warm_seconds']:.2f} | "
              f"{dask_['seconds'] / single['seconds']:.2f} / "
              f"{dask_['warm_seconds'] / single['seconds']:.2f} | "
              f"{n / single['seconds']:.0f} | {n / dask_['warm_seconds'] / 2:.0f} | "
              f"{single['client_peak_mb']:.0f} | "
              f"{' / '.join(f'{m:.0f}' for m in dask_['worker_peak_mb'])} | "
              f"{dask_['client_peak_mb']:.0f} | {dask_['blocks']} x {dask_['row_block']} | "
              + (f"{chunked['seconds']:.2f} / {chunked['client_peak_mb']:.0f} |" if chunked
                 else "- |"))
        print(f"<!-- n={n}: max |row sums single - dask| = {diff:.2e}; relative error "
              f"against the closed form: single {single['max_rel_err']:.1e}, dask "
              f"{dask_['max_rel_err']:.1e} -->")


if __name__ == "__main__":
    main()
