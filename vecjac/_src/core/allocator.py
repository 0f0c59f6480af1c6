"""glibc malloc thresholds suited to large, short-lived NumPy temporaries.

Every op of a vectorized Jacobian allocates a fresh (iterations x size) array and frees
it a few ops later. glibc serves blocks above its mmap threshold (128 KiB at start) with
fresh mappings, raises that threshold only to the size of the blocks freed so far, and
gives free memory at the top of the heap back to the OS once it exceeds twice the
threshold. With a few multi-megabyte temporaries alive at once, every call then maps or
re-faults its memory: on the 2-core VM of benchmarks/ a batch Jacobian of a relu network
(256 x 32 -> 64 -> 16) took 1073 page faults and 2.8 ms per call, against 0 and 0.9 ms
with the thresholds below. (TensorFlow, JAX and PyTorch avoid this with allocators of
their own.)

`tune()` sets the mmap threshold glibc's own rule would reach after freeing one 32 MiB
block: arrays up to 32 MiB come from the heap. The trim threshold is 256 MiB, four times
what that rule would set: up to 256 MiB of free heap is kept for reuse instead of being
returned to the OS. A sparse Jacobian at a million unknowns holds several (colors x n)
tangents of 32 MiB at once and frees them together at the end of a call; with 64 MiB
the heap was trimmed after every call and refaulted by the next: 3,800 page faults and
about 40 of 170 ms per call (2-D Brusselator 708^2, benchmarks/sparse_scale.py). The
price: an idle process may keep up to 256 MiB it freed (its peak is unchanged). It runs
once at import, on Linux with glibc only; VECJAC_MALLOC_TUNING=0 leaves malloc alone.
"""
import ctypes
import os
import sys

M_TRIM_THRESHOLD = -1   # mallopt parameters, from glibc's malloc.h
M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 32 << 20  # glibc's own upper bound for its dynamic threshold (64-bit)
TRIM_THRESHOLD = 256 << 20  # a million-unknown Jacobian's temporaries (see above)

tuned = False


def tune():
    """Set the thresholds once; True if they are in effect (glibc, not switched off)."""
    global tuned
    if tuned:
        return True
    if os.environ.get("VECJAC_MALLOC_TUNING", "1").strip().lower() in ("0", "false", "no"):
        return False
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL("libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # not glibc (musl, ...): leave it alone
        return False
    tuned = bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and \
        bool(mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD))
    return tuned
