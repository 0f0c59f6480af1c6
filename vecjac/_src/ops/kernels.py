"""numba kernels, compiled when first needed repeatedly, with cache=True (never at import).

Only kernels that beat their NumPy counterpart in benchmarks/kernels.py live here:
- scatter_add_rows: the gradient of gather (out[b, idx[b, i], :] += vals[b, i, :]).
  np.add.at is slow and the bincount formulation builds int64 index arrays as large as
  the data; the compiled loop is 5-10x faster than bincount on large inputs.
- scale_rows: out[i, :] = m[i, :] * d[i], the structured rule of "one-hot rows @ matrix"
  (ScaledRows). NumPy's broadcast multiply m * d[:, None] runs at about half the memory
  bandwidth; the loop runs at the speed of a copy (0.22 vs 0.50 ms for 1000 x 1000).
- outer_rows: out[a, i, k] = d[a, i] * r[a, k], the structured rule of "one-hot columns
  @ matrix" (batch_jacobian seeds), and matrix products with an inner dimension of 1
  (column_times_row). NumPy's broadcast d[:, :, None] * r[:, None, :] runs
  its inner loop over k only (short rows, per-row overhead): 0.17 vs 0.03 ms for
  (17, 256) x (17, 64). outer_rows_scaled also multiplies by m[i, k] in the same pass
  (the activation gradient that follows): 0.05 ms against 0.10 for kernel + NumPy.
  (A fused elu-gradient kernel was measured too and did not beat NumPy: not kept.)
- times_rows: out[k, j] = x[k, j] * y[j], a stacked value (n, *S) times a value of shape
  S: every forward-mode JVP of an elementwise op under jacfwd (tangents times the
  derivative). NumPy's loop that broadcasts y over the leading axis runs well below the
  speed of a same-shape product: 1.3x faster for 8 x 4000 (benchmarks/kernels.py).
  times_rows_add: a[k, j] * b[j] + c[j] * d[k, j] in one pass, the product rule's
  tangent (MulAdd) under jacfwd, where NumPy makes three passes and a temporary: 2.8x.
  Tangents stored transposed ((n, m) in Fortran order, the tangents of jacfwd through a
  matrix) run scale_rows and scale_rows_add on the transpose at the same speed, where
  NumPy slows down further: 2.1x and 3.4x. Strided operands (a species of an
  interleaved state, x.reshape(n, n, 2)[..., 0], and its tangents) run the same loops
  on the views, without copies: 2x over NumPy's three passes for (8, 708, 708) (18 against
  9 ms); a strided times_rows alone is no faster than NumPy, so it declines them.
- plus_mid, plus_swapped: x + y for 3-D operands of one shape (a, b, c) where y is
  broadcast over the middle axis (a bias's cotangent, a (a, 1, c) view) or stored with
  its last two axes swapped (a transposed product's cotangent). NumPy's loop then runs
  over c values at a time, or reads y with a stride: 220 and 210 us for (240, 64, 16),
  where the kernels take 83 and 144 (benchmarks/kernels.py; workload 12's Hessian).
- sincos: sin(x) and cos(x) in one loop, where the C library computes both for the price
  of about one: forward mode's value and derivative of sin and cos (1.6x for 4000
  values). The C library's sin and cos, which NumPy also calls for float64
  where it has no vectorized version of its own (as on AVX2 machines): the same bits
  there, within an ulp elsewhere.

numba is imported lazily, and only for inputs above a size threshold, so small problems
never pay its import and cache-load time (0.4-0.5 s). A kernel is compiled on its fourth
request in a process (WARMUP_REQUESTS): a kernel saves 0.1-10 ms per call, so a one-off
Jacobian in a notebook is faster with NumPy (4 ms instead of 0.4 s for a 256-example
batch Jacobian), while loops (optimizers, benchmarks) switch to the kernel after three
calls. Kernels and NumPy versions do the same floating-point operations in the same order.
Set VECJAC_DISABLE_NUMBA=1 to always use the NumPy versions (used by the benchmarks for
the comparison). Each kernel says on the "vecjac" logger (INFO) when it is compiled.
If numba is missing or fails to compile, the NumPy version is used.
"""
import importlib
import logging
import math
import os

import numpy as np

NUMBA_MIN_SIZE = 4096  # elements; below this the NumPy versions are as fast
SINCOS_MIN_SIZE = 1024  # sin and cos cost ~10 ns a value: the kernel wins from far fewer
WARMUP_REQUESTS = 3    # large requests served by NumPy before a kernel is compiled
_kernels = {}
_requests = {}
_broken = set()
logger = logging.getLogger("vecjac")


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


def _times_rows_source(x, y, out):
    n, m = x.shape
    for k in range(n):
        for j in range(m):
            out[k, j] = x[k, j] * y[j]


def _times_rows_add_source(a, b, c, d, out):
    n, m = a.shape
    for k in range(n):
        for j in range(m):
            out[k, j] = a[k, j] * b[j] + c[j] * d[k, j]


def _times_planes_add_source(a, b, c, d, out):
    n, p, q = a.shape
    for k in range(n):
        for i in range(p):
            for j in range(q):
                out[k, i, j] = a[k, i, j] * b[i, j] + c[i, j] * d[k, i, j]


def _scale_rows_add_source(a, b, c, d, out):
    n, w = a.shape
    for i in range(n):
        s = b[i]
        t = c[i]
        for j in range(w):
            out[i, j] = a[i, j] * s + t * d[i, j]


def _plus_mid_source(x, y, out):
    a, b, c = x.shape
    for i in range(a):
        for j in range(b):
            for k in range(c):
                out[i, j, k] = x[i, j, k] + y[i, k]


def _plus_swapped_source(x, yt, out):
    a, b, c = x.shape
    for i in range(a):
        for j in range(b):
            for k in range(c):
                out[i, j, k] = x[i, j, k] + yt[i, k, j]


def _sincos_source(x, s, c):
    for i in range(x.size):
        s[i] = math.sin(x[i])
        c[i] = math.cos(x[i])


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
            logger.info("vecjac: numba kernel %s compiled (or loaded from numba's cache) "
                        "on its first call, after %d large requests served by NumPy",
                        name, WARMUP_REQUESTS)
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


def _rows_of(x, y):
    """The layout in which x (n, *S) and y (S) fit times_rows: "C" (both contiguous),
    "F" (x an (n, m) matrix stored transposed, as jacfwd's tangents of a linear model),
    or None: other shapes or dtypes, too small, or a layout where a copy would cost what
    the kernel saves."""
    if not (x.size >= NUMBA_MIN_SIZE and x.ndim == y.ndim + 1 and x.shape[1:] == y.shape
            and x.dtype == y.dtype and x.dtype.kind == "f" and y.flags.c_contiguous):
        return None
    if x.flags.c_contiguous:
        return "C"
    return "F" if x.ndim == 2 and x.flags.f_contiguous else None


def _strided_fits(a, b, c, d):
    """a, d (n, *S) and b, c (S) of one float dtype, S of rank 1 or 2, each stored in
    row-major order with gaps (views like x[..., 0]): the loop then walks memory forwards.
    Transposed operands are left to NumPy, which reorders its loops."""
    return (a.ndim in (2, 3) and a.size >= NUMBA_MIN_SIZE and a.shape == d.shape
            and b.shape == c.shape == a.shape[1:] and a.dtype.kind == "f"
            and a.dtype == b.dtype == c.dtype == d.dtype
            and all(_row_major(x) for x in (a, b, c, d)))


def _row_major(x):
    steps = [abs(s) for s, k in zip(x.strides, x.shape) if k > 1]
    return all(s >= t for s, t in zip(steps, steps[1:]))


def _run_rows(name, source, shape, *inputs):
    """Kernel `name` on 2-D and 1-D contiguous `inputs` into a new array of `shape`, or
    None (as _into_new, without its copies: these run on every op of a jacfwd)."""
    kernel = _kernels.get(name) or _kernel(name, source)
    if kernel is None:
        return None
    out = np.empty(shape, dtype=inputs[0].dtype)
    try:
        kernel(*inputs, out)
    except Exception:
        _broken.add(name)
        _kernels.pop(name, None)
        return None
    return out


def times_rows(x, y):
    """x * y for x of shape (n, *S) and y of shape S with the numba kernel (y broadcast
    over the leading axis), or None when it is not used. A transposed x gives a
    transposed result (scale_rows on x.T: the layout is kept for the ops that follow)."""
    layout = _rows_of(x, y)
    if layout is None:
        return None
    n, m = x.shape[0], y.size
    if layout == "F":
        out = _run_rows("scale_rows", _scale_rows_source, (m, n), x.T, y)
        return None if out is None else out.T
    out = _run_rows("times_rows", _times_rows_source, (n, m), x.reshape(n, m), y.reshape(m))
    return None if out is None else out.reshape(x.shape)


def times_rows_add(a, b, c, d):
    """a * b + c * d for a and d of shape (n, *S), b and c of shape S, in one pass with
    the numba kernel, or None when it is not used (a transposed a and d as times_rows;
    strided views of rank 2 or 3 read in place)."""
    layout = _rows_of(a, b)
    if layout is None or _rows_of(d, c) != layout or a.shape != d.shape:
        if _strided_fits(a, b, c, d):
            if a.ndim == 2:  # numba compiles the loop for these strides too
                return _run_rows("times_rows_add", _times_rows_add_source, a.shape, a, b, c, d)
            return _run_rows("times_planes_add", _times_planes_add_source, a.shape, a, b, c, d)
        return None
    n, m = a.shape[0], b.size
    if layout == "F":
        out = _run_rows("scale_rows_add", _scale_rows_add_source, (m, n), a.T, b, c, d.T)
        return None if out is None else out.T
    out = _run_rows("times_rows_add", _times_rows_add_source, (n, m), a.reshape(n, m),
                    b.reshape(m), c.reshape(m), d.reshape(n, m))
    return None if out is None else out.reshape(a.shape)


def plus_layouts(x, y):
    """x + y by a kernel when x is a C-contiguous 3-D array and y, of the same shape, is
    broadcast over the middle axis or stored with its last two axes swapped (or the
    other way round: addition commutes exactly); None otherwise."""
    if y.flags.c_contiguous:
        x, y = y, x
    if not (x.ndim == 3 and x.flags.c_contiguous and x.size >= NUMBA_MIN_SIZE
            and y.shape == x.shape and y.dtype == x.dtype and x.dtype.kind == "f"):
        return None
    a, b, c = x.shape
    step = y.itemsize
    if y.strides[1] == 0 and y.strides[2] == step:
        return _run_rows("plus_mid", _plus_mid_source, x.shape, x,
                         np.ascontiguousarray(y[:, 0, :]))
    if y.strides == (b * c * step, step, b * step):
        return _run_rows("plus_swapped", _plus_swapped_source, x.shape, x,
                         y.transpose(0, 2, 1))
    return None


def sincos(x):
    """(sin(x), cos(x)) by the numba kernel in one pass, or None when it is not used
    (small, not float64, not contiguous, numba off or missing)."""
    if x.dtype != np.float64 or x.size < SINCOS_MIN_SIZE or not x.flags.c_contiguous:
        return None
    kernel = _kernels.get("sincos") or _kernel("sincos", _sincos_source)
    if kernel is None:
        return None
    s, c = np.empty_like(x), np.empty_like(x)
    try:
        kernel(x.reshape(-1), s.reshape(-1), c.reshape(-1))
    except Exception:
        _broken.add("sincos")
        _kernels.pop("sincos", None)
        return None
    return s, c


def column_times_row(a, b):
    """a @ b for a of shape (..., m, 1) and b of shape (..., 1, n) (an inner dimension of
    1: outer products, one product per entry) by the outer_rows kernel, where NumPy's
    broadcast product loops over rows of n values (0.23 vs 0.04 ms for 15360 x 8). None
    when it is not used: batch shapes other than none or one shared leading axis."""
    m, n = a.shape[-2], b.shape[-1]
    if a.ndim == 2 and b.ndim == 2:
        out = outer_rows(a.reshape(1, m), b.reshape(1, n))
        return None if out is None else out.reshape(m, n)
    if a.ndim == 3 and b.ndim == 2:
        return outer_rows(a[..., 0], np.broadcast_to(b, (a.shape[0], n)))
    if a.ndim == 3 and b.ndim == 3 and a.shape[0] == b.shape[0]:
        return outer_rows(a[..., 0], b[:, 0, :])
    return None
