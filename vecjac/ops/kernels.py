"""numba kernels, compiled when first needed repeatedly, with cache=True (never at import).

Only kernels that beat their NumPy counterpart in benchmarks/kernels.py live here:
- scatter_add_rows: the gradient of gather (out[b, idx[b, i], :] += vals[b, i, :]).
  np.add.at is slow and the bincount formulation builds int64 index arrays as large as
  the data; the compiled loop is 5-10x faster than bincount on large inputs.
- scale_rows: out[i, :] = m[i, :] * d[i], the structured rule of "one-hot rows @ matrix"
  (ScaledRows). NumPy's broadcast multiply m * d[:, None] runs at about half the memory
  bandwidth; the loop runs at the speed of a copy (0.22 vs 0.50 ms for 1000 x 1000).
- outer_rows: out[a, i, k] = d[a, i] * r[a, k], the structured rule of "one-hot columns
  @ matrix" (batch_jacobian seeds). NumPy's broadcast d[:, :, None] * r[:, None, :] runs
  its inner loop over k only (short rows, per-row overhead): 0.17 vs 0.03 ms for
  (17, 256) x (17, 64). outer_rows_scaled also multiplies by m[i, k] in the same pass
  (the activation gradient that follows): 0.05 ms against 0.10 for kernel + NumPy.
  (A fused elu-gradient kernel was measured too and did not beat NumPy: not kept.)

numba is imported lazily, and only for inputs above a size threshold, so small problems
never pay its import and cache-load time (0.4-0.5 s). A kernel is compiled on its fourth
request in a process (WARMUP_REQUESTS): a kernel saves 0.1-10 ms per call, so a one-off
Jacobian in a notebook is faster with NumPy (4 ms instead of 0.4 s for a 256-example
batch Jacobian), while loops (optimizers, benchmarks) switch to the kernel after three
calls. Kernels and NumPy versions do the same floating-point operations in the same order.
Set VECJAC_DISABLE_NUMBA=1 to always use the NumPy versions (used by the benchmarks for
the comparison). If numba is missing or fails to compile, the NumPy version is used.
"""
import importlib
import os

import numpy as np

NUMBA_MIN_SIZE = 4096  # elements; below this the NumPy versions are as fast
WARMUP_REQUESTS = 3    # large requests served by NumPy before a kernel is compiled
_kernels = {}
_requests = {}
_broken = set()


def _scatter_add_rows_source(out, idx, vals):
    nb, m = idx.shape
    r = vals.shape[2]
    size = out.shape[1]
    for b in range(nb):
        for i in range(m):
            j = idx[b, i]
            if j < 0:
                j += size
            for c in range(r):
                out[b, j, c] += vals[b, i, c]


def _scale_rows_source(m, d, out):
    n, w = m.shape
    for i in range(n):
        s = d[i]
        for j in range(w):
            out[i, j] = m[i, j] * s


def _outer_rows_source(d, r, out):
    n, m = d.shape
    w = r.shape[1]
    for a in range(n):
        for i in range(m):
            s = d[a, i]
            for k in range(w):
                out[a, i, k] = s * r[a, k]


def _outer_rows_scaled_source(d, r, m, out):
    n, rows = d.shape
    w = r.shape[1]
    for a in range(n):
        for i in range(rows):
            s = d[a, i]
            for k in range(w):
                out[a, i, k] = s * r[a, k] * m[i, k]


def numba_enabled():
    return os.environ.get("VECJAC_DISABLE_NUMBA", "") not in ("1", "true", "yes")


def _kernel(name, source):
    if name in _broken or not numba_enabled():
        return None
    kernel = _kernels.get(name)
    if kernel is None:
        _requests[name] = seen = _requests.get(name, 0) + 1
        if seen <= WARMUP_REQUESTS:
            return None
        try:
            numba = importlib.import_module("numba")  # 0.4 s: only when a kernel pays
            kernel = _kernels[name] = numba.njit(cache=True, nogil=True)(source)
        except Exception:  # numba missing or unusable here: NumPy it is
            _broken.add(name)
            return None
    return kernel


def scatter_add_rows(out, idx, vals):
    """out[b, idx[b, i], :] += vals[b, i, :] in place with the numba kernel; out (nb, size,
    r), idx (nb, m), vals (nb, m, r); negative indices count from the end. Returns False
    (and does nothing) when the kernel is not used: small input, numba off or missing."""
    if vals.size < NUMBA_MIN_SIZE:
        return False
    kernel = _kernel("scatter_add_rows", _scatter_add_rows_source)
    if kernel is None:
        return False
    try:
        kernel(out, np.ascontiguousarray(idx), np.ascontiguousarray(vals))
    except Exception:  # an input numba cannot type: use NumPy from now on
        _broken.add("scatter_add_rows")
        return False
    return True


def _into_new(name, source, shape, dtype, *inputs):
    """Run kernel `name` on `inputs` into a new array `out` (its last argument); None
    when numba is off, missing or cannot type the inputs (then NumPy from now on)."""
    kernel = _kernel(name, source)
    if kernel is None:
        return None
    out = np.empty(shape, dtype=dtype)
    try:
        kernel(*[np.ascontiguousarray(x) for x in inputs], out)
    except Exception:
        _broken.add(name)
        return None
    return out


def scale_rows(m, d):
    """m * d[:, None] for a 2-D m with the numba kernel, or None when it is not used
    (small input, other ranks or dtypes, numba off or missing)."""
    if m.ndim != 2 or d.ndim != 1 or m.size < NUMBA_MIN_SIZE or m.dtype != d.dtype \
            or m.dtype.kind != "f":
        return None
    return _into_new("scale_rows", _scale_rows_source, m.shape, m.dtype, m, d)


def _outer_fits(d, r):
    return (d.ndim == 2 and r.ndim == 2 and d.shape[0] == r.shape[0] and d.dtype == r.dtype
            and d.dtype.kind == "f" and d.size * r.shape[1] >= NUMBA_MIN_SIZE)


def outer_rows(d, r):
    """d[:, :, None] * r[:, None, :] for 2-D d (n, i) and r (n, k) with the numba kernel,
    or None when it is not used (small output, other ranks or dtypes, numba off)."""
    if not _outer_fits(d, r):
        return None
    return _into_new("outer_rows", _outer_rows_source, d.shape + r.shape[1:], d.dtype, d, r)


def outer_rows_scaled(d, r, m):
    """outer_rows(d, r) * m for a 2-D m (i, k), in one pass; None when not used."""
    if not _outer_fits(d, r) or m.shape != d.shape[1:] + r.shape[1:] or m.dtype != d.dtype:
        return None
    return _into_new("outer_rows_scaled", _outer_rows_scaled_source, d.shape + r.shape[1:],
                     d.dtype, d, r, m)
