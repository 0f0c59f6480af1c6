"""Per-op Python overhead of vecjac's dispatch, and import time.

Run: python benchmarks/ops.py
Prints microseconds per op for tiny inputs (so NumPy's own work is negligible),
untaped, recorded on a tape and with an active ForwardAccumulator (the primal op plus
its tangent), next to the raw NumPy call for reference. vj.function rows: a replayed
plan of 200 primitives, per primitive; "overhead" is that minus the same NumPy calls
made directly (a chain of sin and add, which stays NumPy calls), and the fused
row is a chain of multiply and add (one compiled segment, vecjac/_src/transforms/function/fusion.py).
"""
import subprocess
import sys
import timeit

import numpy as np

import vecjac as vj


def per_call(fn, number=20000):
    best = min(timeit.repeat(fn, number=number, repeat=5))
    return best / number * 1e6


def _function_rows(a, n=100):
    def chain(x):  # sin breaks every fusable run: 2n NumPy calls
        for _ in range(n):
            x = vj.sin(x) + 1.0
        return x

    def numpy_chain(x):
        one = np.asarray(1.0)
        for _ in range(n):
            x = np.sin(x) + one
        return x

    def fusable(x):  # 2n multiply/add steps: one fused segment
        for _ in range(n):
            x = x * 0.5 + 1.0
        return x
    f, g = vj.function(chain), vj.function(fusable)
    x = vj.constant(a)
    for _ in range(4):  # trace, then past the fused segment's warm-up calls
        f(x), g(x)
    replay = per_call(lambda: f(x), number=200) / (2 * n)
    direct = per_call(lambda: numpy_chain(a), number=200) / (2 * n)
    eager = per_call(lambda: chain(x), number=20) / (2 * n)
    return [("vj.function replay, per primitive (NumPy steps)", replay),
            ("  the same NumPy calls made directly, per call", direct),
            ("  replay overhead per primitive", replay - direct),
            ("  eager vecjac, per primitive (for reference)", eager),
            ("vj.function replay, per primitive (fused segment)",
             per_call(lambda: g(x), number=200) / (2 * n))]


def main():
    a = np.array([1.0, 2.0])
    x = vj.constant(a)
    y = vj.constant(a)
    rows = []
    rows.append(("numpy a + a", per_call(lambda: a + a)))
    rows.append(("numpy np.exp(a)", per_call(lambda: np.exp(a))))
    rows.append(("vj x + y (untaped)", per_call(lambda: x + y)))
    rows.append(("vj exp(x) (untaped)", per_call(lambda: vj.exp(x))))
    rows.append(("vj x * 2.0 (untaped, weak scalar)", per_call(lambda: x * 2.0)))
    tape = vj.GradientTape(persistent=True)
    with tape:
        tape.watch(x)
        rows.append(("vj x + y (recorded)", per_call(lambda: x + y, number=5000)))
        rows.append(("vj exp(x) (recorded)", per_call(lambda: vj.exp(x), number=5000)))
    autodiff = getattr(vj, "autodiff", None)  # absent before forward mode (A/B runs)
    if autodiff is not None:
        with autodiff.ForwardAccumulator(x, vj.constant(a)):
            rows.append(("vj x + y (accumulator, x followed)", per_call(lambda: x + y,
                                                                       number=5000)))
            rows.append(("vj exp(x) (accumulator, x followed)",
                         per_call(lambda: vj.exp(x), number=5000)))
            rows.append(("vj y + y (accumulator active, not followed)",
                         per_call(lambda: y + y)))
    rows += _function_rows(a)
    t = subprocess.run([sys.executable, "-c",
                        "import time; t=time.perf_counter(); import vecjac; "
                        "print(time.perf_counter()-t)"], capture_output=True, text=True)
    rows.append(("import vecjac (s, not us)", float(t.stdout.strip())))
    width = max(len(r[0]) for r in rows)
    print(f"{'what':<{width}}  us/op")
    for name, us in rows:
        print(f"{name:<{width}}  {us:8.2f}")
    print("targets: < 5 us untaped, < 10 us recorded, import < 0.5 s, replay overhead "
          "< 1 us per primitive")


if __name__ == "__main__":
    main()
