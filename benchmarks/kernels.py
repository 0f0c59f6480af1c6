"""numba kernels against their NumPy versions: compile time and speed-up.

Run: python benchmarks/kernels.py
Compile time is measured in fresh processes: cold (empty numba cache) and warm (cache
on disk, as every later process sees it). Speed is the gather gradient (scatter-add)
with the kernel and with VECJAC_DISABLE_NUMBA=1 (np.bincount / np.add.at), and each
elementwise kernel against the NumPy expression it replaces (best of 200 calls).
"""
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

# first call of each kernel in a fresh process: numba import, compile or cache load
FIRST_CALLS = {
    "scatter_add_rows": "kernels.scatter_add_rows(np.zeros((1, 100, 64)), "
                        "np.zeros((1, 100), np.int64), np.ones((1, 100, 64)))",
    "scale_rows": "kernels.scale_rows(np.ones((100, 64)), np.ones(100))",
    "outer_rows": "kernels.outer_rows(np.ones((4, 100)), np.ones((4, 64)))",
    "outer_rows_scaled": "kernels.outer_rows_scaled(np.ones((4, 100)), np.ones((4, 64)), "
                         "np.ones((100, 64)))",
    "times_rows": "kernels.times_rows(np.ones((8, 1000)), np.ones(1000))",
    "times_rows_add": "kernels.times_rows_add(np.ones((8, 1000)), np.ones(1000), "
                      "np.ones(1000), np.ones((8, 1000)))",
    "sincos": "kernels.sincos(np.ones(2000))",
    "plus_layouts": "kernels.plus_layouts(np.ones((8, 64, 16)), "
                    "np.ones((8, 16, 64)).transpose(0, 2, 1))",
}


def first_call_seconds(cache_dir, call):
    code = ("import time, numpy as np\n"
            "from vecjac._src.ops import kernels\n"
            "kernels.WARMUP_REQUESTS = 0\n"
            f"t = time.perf_counter(); {call}\n"
            "print(time.perf_counter() - t)\n")
    env = {**os.environ, "NUMBA_CACHE_DIR": cache_dir, "VECJAC_DISABLE_NUMBA": ""}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env)
    return float(out.stdout.strip())


def scatter_timing(shape_g, n_params, disable):
    os.environ["VECJAC_DISABLE_NUMBA"] = "1" if disable else ""
    import vecjac as vj
    from vecjac._src.ops import kernels
    kernels.WARMUP_REQUESTS = 0  # kernel against NumPy from the first call
    rng = np.random.default_rng(0)
    x = vj.constant(rng.standard_normal((n_params,) + shape_g[1:]))
    idx = rng.integers(0, n_params, shape_g[0])

    def run():
        with vj.GradientTape() as tape:
            tape.watch(x)
            y = vj.reduce_sum(vj.gather(x, idx))
        return tape.gradient(y, x)
    run()
    n, t = 20, time.perf_counter()
    for _ in range(n):
        run()
    return (time.perf_counter() - t) / n


def main():
    for name, call in FIRST_CALLS.items():
        with tempfile.TemporaryDirectory() as cache:
            cold = first_call_seconds(cache, call)
            warm = first_call_seconds(cache, call)
        print(f"{name} first call: cold compile {cold:.2f} s, warm cache {warm:.2f} s "
              "(numba import included; paid once per process, from the fourth request above "
              "kernels.NUMBA_MIN_SIZE elements)")
    for shape, n_params in [((20000, 64), 1000), ((5000, 8), 5000), ((200, 30), 50)]:
        t_numpy = scatter_timing(shape, n_params, disable=True)
        t_numba = scatter_timing(shape, n_params, disable=False)
        print(f"gather gradient, cotangent {shape} -> params ({n_params}, ...): "
              f"numpy {t_numpy * 1e3:.3f} ms, numba {t_numba * 1e3:.3f} ms, "
              f"speed-up {t_numpy / t_numba:.1f}x")
    os.environ["VECJAC_DISABLE_NUMBA"] = ""
    elementwise_kernels()


def best_of(fn, reps=200):
    fn()
    best = float("inf")
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def elementwise_kernels():
    from vecjac._src.ops import kernels
    kernels.WARMUP_REQUESTS = 0
    rng = np.random.default_rng(0)
    m, v = rng.standard_normal((1000, 1000)), rng.standard_normal(1000)
    d, r, g = (rng.standard_normal(s) for s in ((17, 256), (17, 64), (256, 64)))
    t, u, f, h = (rng.standard_normal(s) for s in ((8, 4000), (8, 4000), 4000, 4000))
    tf, uf = np.asfortranarray(t), np.asfortranarray(u)  # jacfwd's tangents via a matrix
    x = rng.standard_normal((240, 64, 16))  # a stacked cotangent of workload 12
    bias = np.broadcast_to(rng.standard_normal((240, 1, 16)), x.shape)
    swapped = rng.standard_normal((240, 16, 64)).transpose(0, 2, 1)
    cases = [
        ("times_rows  t * f, t 8x4000 (stacked tangents times a derivative)",
         lambda: kernels.times_rows(t, f), lambda: t * f),
        ("times_rows  the same, t stored transposed", lambda: kernels.times_rows(tf, f),
         lambda: tf * f),
        ("times_rows_add  t * f + h * u (the product rule), 8x4000",
         lambda: kernels.times_rows_add(t, f, h, u), lambda: t * f + h * u),
        ("times_rows_add  the same, stored transposed",
         lambda: kernels.times_rows_add(tf, f, h, uf), lambda: tf * f + h * uf),
        ("sincos  sin(x), cos(x), 4000 values", lambda: kernels.sincos(f),
         lambda: (np.sin(f), np.cos(f))),
        ("plus_layouts  x + bias broadcast over the middle axis, 240x64x16",
         lambda: kernels.plus_layouts(x, bias), lambda: x + bias),
        ("plus_layouts  x + y stored with its last two axes swapped",
         lambda: kernels.plus_layouts(x, swapped), lambda: x + swapped),
        ("scale_rows  m * d[:, None], m 1000x1000", lambda: kernels.scale_rows(m, v),
         lambda: m * v[:, None]),
        ("outer_rows  d[:, :, None] * r[:, None, :], 17x256 x 17x64",
         lambda: kernels.outer_rows(d, r), lambda: d[:, :, None] * r[:, None, :]),
        ("outer_rows_scaled  (... ) * g, g 256x64",
         lambda: kernels.outer_rows_scaled(d, r, g),
         lambda: d[:, :, None] * r[:, None, :] * g),
    ]
    for name, fast, slow in cases:
        if fast() is None:
            print(f"{name}: kernel not used (numba off or missing)")
            continue
        np.testing.assert_allclose(fast(), slow(), rtol=1e-12, atol=1e-15)
        t_fast, t_slow = best_of(fast), best_of(slow)
        print(f"{name}: numpy {t_slow * 1e3:.3f} ms, numba {t_fast * 1e3:.3f} ms, "
              f"speed-up {t_slow / t_fast:.1f}x")


if __name__ == "__main__":
    main()
