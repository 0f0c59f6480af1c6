"""Plain NumPy arrays against vj.constant: what reading a caller's array costs.

Run:  python benchmarks/raw_arrays.py [--rounds 15] [--quick]

Three workloads, each written twice: once on plain ndarrays (the caller's data, read in
place and lent read-only for the call: vecjac/_src/core/loans.py) and once on the same
data wrapped in vj.constant once, outside the timing (a Tensor vecjac owns):

- grad: the gradient of a logistic loss mean(softplus(X @ w) - y * (X @ w)), X 5000 x 2000
  float64 (80 MB);
- hvp: its Hessian-vector product (vj.hvp, reverse over forward);
- tall Jacobian: vj.jacobian of tanh(A @ p) * sin(B @ p), A and B 4000 x 8 (forward mode).

"repeated" times calls of one transformed function (after warm-up calls); "first" times
the first call of a freshly made one (vj.jacobian learns its mode on it), after a warm-up
of the process. Every call is timed on its own (a burst of calls on a loaded machine is
preempted more often than one short call), and the variants are interleaved (raw,
constant, constant, raw, ...) in this one process, so that noise from other work on the
machine hits both alike; the table gives medians and raw / constant (1.0: no cost for
passing plain arrays). Results are checked to agree before anything is timed.
"""
import argparse
import statistics
import time

import numpy as np

import vecjac as vj


def workloads(rng, quick):
    n, d = (1000, 400) if quick else (5000, 2000)
    X = rng.standard_normal((n, d)) / np.sqrt(d)
    y = (rng.random(n) < 0.5).astype(np.float64)
    w, v = 0.1 * rng.standard_normal(d), rng.standard_normal(d)
    A, B = rng.standard_normal((4000, 8)), rng.standard_normal((4000, 8))
    p = rng.standard_normal(8)

    def loss_on(X, y):
        def loss(w):
            z = X @ w
            return vj.reduce_mean(vj.nn.softplus(z) - y * z)
        return loss

    def tall_on(A, B):
        return lambda p: vj.tanh(A @ p) * vj.sin(B @ p)

    raw = {"loss": loss_on(X, y), "tall": tall_on(A, B)}
    const = {"loss": loss_on(vj.constant(X), vj.constant(y)),
             "tall": tall_on(vj.constant(A), vj.constant(B))}
    # (name, data -> fresh transformed call, repeated calls timed per round)
    return [
        (f"grad, logistic {n} x {d}", lambda f: (lambda g=vj.grad(f["loss"]): g(w)), 1),
        (f"hvp, logistic {n} x {d}", lambda f: (lambda: vj.hvp(f["loss"], w, v)), 1),
        ("tall Jacobian 4000 x 8", lambda f: (lambda j=vj.jacobian(f["tall"]): j(p)), 20),
    ], raw, const


def timed(call):
    t = time.perf_counter()
    call()
    return time.perf_counter() - t


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--quick", action="store_true", help="a 1000 x 400 X, 5 rounds")
    args = parser.parse_args()
    rounds = 5 if args.quick else args.rounds
    cases, raw, const = workloads(np.random.default_rng(0), args.quick)
    print("| workload | call | raw (ms) | constant (ms) | raw / constant |")
    print("|---|---|---|---|---|")
    for name, make, repeats in cases:
        r, c = make(raw), make(const)
        for _ in range(3):  # warm-up: numba's kernels, caches
            np.testing.assert_allclose(r().numpy(), c().numpy(), rtol=1e-12, atol=1e-15)
        times = {("first", "raw"): [], ("first", "const"): [],
                 ("repeated", "raw"): [], ("repeated", "const"): []}
        order = (("raw", raw, r), ("const", const, c))
        for k in range(rounds):
            for label, data, _ in (order if k % 2 == 0 else order[::-1]):
                times[("first", label)].append(timed(make(data)))
            for i in range(repeats):
                for label, _, call in (order if (k + i) % 2 == 0 else order[::-1]):
                    times[("repeated", label)].append(timed(call))
        for kind in ("first", "repeated"):
            tr = statistics.median(times[(kind, "raw")]) * 1e3
            tc = statistics.median(times[(kind, "const")]) * 1e3
            print(f"| {name} | {kind} | {tr:.3f} | {tc:.3f} | {tr / tc:.2f} |", flush=True)


if __name__ == "__main__":
    main()
