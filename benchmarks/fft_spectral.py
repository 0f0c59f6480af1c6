"""The gradient of a 2-D spectral smoothing loss through FFTs: vecjac against its peers,
side by side in one process.

    L(u) = sum |ifft2(H * fft2(u)) - d|^2 + lam * sum |k|^2 |fft2(u)|^2

u real (n x n, default 256 x 256), H a complex filter, d real data, |k|^2 the squared
wavenumbers: a deblurring misfit plus a smoothness penalty. vecjac runs it as NumPy code
on Tensors (np.fft.fft2 etc. dispatch to vecjac's FFT ops), eagerly (vj.grad) and
replayed (vj.function(vj.grad)); the peers (each skipped when not installed) run the same
formula: JAX eagerly (jax.grad, op by op) and compiled (jax.jit(jax.grad)), PyTorch's
torch.func.grad (eager), TensorFlow's GradientTape (eager) and tf.function. Everything is
float64 / complex128 and single-threaded (pocketfft in NumPy is; the others are pinned
with --threads 1, the default) so that the comparison is of the work, not the core count.

Run:  python benchmarks/fft_spectral.py [--n 256] [--rounds 5] [--threads 1]
      (the peers' venv: PYTHONPATH=. /work/peers/bin/python benchmarks/fft_spectral.py)
Each system's gradient is checked against vecjac's before its time counts. "first" is the
first call (tracing, compilation); "median" the median of the calls after it, timed in
interleaved rounds (a noise burst on a shared machine hits every system alike), with
the 10th percentile beside it (less sensitive to a loaded machine). Ratios are of the
medians, vecjac eager / system: below 1 means vecjac eager is faster.
"""
import argparse
import os
import statistics
import sys
import time
import warnings

import numpy as np

parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
parser.add_argument("--n", type=int, default=256, help="grid size (n x n)")
parser.add_argument("--rounds", type=int, default=5, help="interleaved timing rounds")
parser.add_argument("--calls", type=int, default=10, help="calls per system per round")
parser.add_argument("--threads", type=int, default=1, help="threads for the peers (0: theirs)")
parser.add_argument("--only", default="", help="comma-separated systems to run")
ARGS = parser.parse_args()

if ARGS.threads:
    os.environ.setdefault("OPENBLAS_NUM_THREADS", str(ARGS.threads))
    os.environ.setdefault("OMP_NUM_THREADS", str(ARGS.threads))
    os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false "
                                       "intra_op_parallelism_threads=1")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("JAX_ENABLE_X64", "1")
os.environ.setdefault("JAX_PLATFORMS", "cpu")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
warnings.simplefilter("ignore")

import vecjac as vj  # noqa: E402


def problem(n, seed=0):
    rng = np.random.default_rng(seed)
    k = np.fft.fftfreq(n) * n
    kx, ky = np.meshgrid(k, k, indexing="ij")
    k2 = kx ** 2 + ky ** 2
    H = np.exp(-k2 / (2 * (n / 16) ** 2)) * np.exp(1j * 0.01 * kx)  # a shifted Gaussian blur
    u = rng.standard_normal((n, n))
    d = np.real(np.fft.ifft2(H * np.fft.fft2(rng.standard_normal((n, n)))))
    return dict(u=u, H=H, d=d, k2=k2, lam=1e-4)


def vecjac_systems(p):
    H, d, k2, lam = p["H"], p["d"], p["k2"], p["lam"]

    def loss(u):  # NumPy code: np.fft on a Tensor runs vecjac's ops
        U = np.fft.fft2(u)
        r = np.fft.ifft2(H * U) - d
        return np.sum(np.abs(r) ** 2) + lam * np.sum(k2 * np.abs(U) ** 2)
    grad = vj.grad(loss)
    replay = vj.function(grad)
    return {"vecjac": lambda u: grad(u).numpy(),
            "vecjac_function": lambda u: replay(u).numpy()}


def jax_systems(p):
    import jax
    import jax.numpy as jnp
    jax.config.update("jax_enable_x64", True)
    H, d, k2, lam = (jnp.asarray(p[k]) for k in ("H", "d", "k2", "lam"))

    def loss(u):
        U = jnp.fft.fft2(u)
        r = jnp.fft.ifft2(H * U) - d
        return jnp.sum(jnp.abs(r) ** 2) + lam * jnp.sum(k2 * jnp.abs(U) ** 2)
    grad = jax.grad(loss)
    jitted = jax.jit(grad)
    return {"jax": lambda u: np.asarray(grad(u)),
            "jax_jit": lambda u: np.asarray(jitted(u))}


def torch_systems(p):
    import torch
    import torch.func
    if ARGS.threads:
        torch.set_num_threads(ARGS.threads)
    H, d, k2 = (torch.as_tensor(p[k]) for k in ("H", "d", "k2"))
    lam = p["lam"]

    def loss(u):
        U = torch.fft.fft2(u)
        r = torch.fft.ifft2(H * U) - d
        return torch.sum(torch.abs(r) ** 2) + lam * torch.sum(k2 * torch.abs(U) ** 2)
    grad = torch.func.grad(loss)
    return {"torch_func": lambda u: grad(torch.as_tensor(u)).numpy()}


def tf_systems(p):
    import tensorflow as tf
    tf.get_logger().setLevel("ERROR")  # its own gradient of cast(complex -> real) warns
    if ARGS.threads:
        tf.config.threading.set_intra_op_parallelism_threads(ARGS.threads)
        tf.config.threading.set_inter_op_parallelism_threads(ARGS.threads)
    H, d, k2 = (tf.constant(p[k]) for k in ("H", "d", "k2"))
    lam = p["lam"]

    def grad(u):
        with tf.GradientTape() as tape:
            tape.watch(u)
            U = tf.signal.fft2d(tf.cast(u, tf.complex128))
            r = tf.signal.ifft2d(H * U) - tf.cast(d, tf.complex128)
            loss = tf.reduce_sum(tf.abs(r) ** 2) + lam * tf.reduce_sum(k2 * tf.abs(U) ** 2)
        return tape.gradient(loss, u)
    compiled = tf.function(grad)
    return {"tf_eager": lambda u: grad(tf.constant(u)).numpy(),
            "tf_function": lambda u: compiled(tf.constant(u)).numpy()}


def main():
    p = problem(ARGS.n)
    u = p["u"]
    systems = {}
    skipped = []
    for make in (vecjac_systems, jax_systems, torch_systems, tf_systems):
        try:
            systems.update(make(p))
        except ImportError as e:
            skipped.append(f"{make.__name__[:-8]} ({e.name} not installed)")
    if ARGS.only:
        systems = {k: v for k, v in systems.items() if k in ARGS.only.split(",")}
    first, reference = {}, None
    for name, fn in systems.items():
        t = time.perf_counter()
        g = fn(u)
        first[name] = time.perf_counter() - t
        if reference is None:
            reference = g
        err = float(np.max(np.abs(g - reference)) / np.max(np.abs(reference)))
        assert err < 1e-10, f"{name}: gradient differs from vecjac's (relative {err:.2e})"
    times = {name: [] for name in systems}
    for _ in range(ARGS.rounds):
        for name, fn in systems.items():
            for _ in range(ARGS.calls):
                t = time.perf_counter()
                fn(u)
                times[name].append(time.perf_counter() - t)
    medians = {name: statistics.median(ts) for name, ts in times.items()}
    base = medians.get("vecjac")
    lows = {name: float(np.percentile(ts, 10)) for name, ts in times.items()}
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"gradient of a spectral smoothing loss, {ARGS.n} x {ARGS.n}, float64 / complex128, "
          f"threads: {ARGS.threads or 'default'}; {ARGS.rounds} rounds x {ARGS.calls} calls; "
          f"load average {load:.1f} on {os.cpu_count()} cores")
    print(f"{'system':<16}{'first call':>12}{'median':>11}{'10th pct':>11}"
          f"{'vecjac / system':>17}")
    for name in systems:
        ratio = f"{base / medians[name]:.2f}" if base else "-"
        print(f"{name:<16}{first[name] * 1e3:>10.1f}ms{medians[name] * 1e3:>9.2f}ms"
              f"{lows[name] * 1e3:>9.2f}ms{ratio:>17}")
    for s in skipped:
        print(f"skipped: {s}")


if __name__ == "__main__":
    main()
