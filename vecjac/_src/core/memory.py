"""Memory budget of dense Jacobians.

A dense Jacobian is written chunk by chunk into one preallocated result (pfor with
`parallel_iterations`); without an explicit `parallel_iterations`, the chunk size comes from
a working-memory budget, so that the peak stays near the result itself:
- the result must fit in the memory available now (MemAvailable on Linux): otherwise
  MemoryError before any work, naming the size and the ways out (vj.sparse_jacobian for
  sparse Jacobians, vj.dask.jacobian for blocks on a cluster);
- each chunk may use at most a third of the result's size and a quarter of the memory
  available at import, but never less than 64 MiB, below which chunking only costs time;
  `vj.set_memory_budget(nbytes)` sets the working memory per chunk instead;
- the first chunk is sized from the caller's estimate of one iteration's working memory,
  the later ones from what the first used (ChunkPlan), when that is less: seeds that stay
  structured run in two chunks, each written straight into the result.
"""
import math
import os

import numpy as np

_MIN_CHUNK_BYTES = 64 * 2 ** 20
_settings = {"budget": None}


def available_bytes():
    """Memory available to this process now (bytes), or None where it cannot be read."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


_DEFAULT = (available_bytes() or 8 * 2 ** 30) // 4


def set_memory_budget(nbytes=None):
    """The working memory a dense Jacobian may use per chunk, in bytes (None: the default
    rule, see vecjac/_src/core/memory.py). Chunks of a Jacobian computed without
    `parallel_iterations` are sized to it.

    >>> vj.set_memory_budget(2 ** 30)   # 1 GiB
    >>> vj.set_memory_budget(None)      # back to the default
    """
    if nbytes is not None and (not isinstance(nbytes, (int, np.integer))
                               or isinstance(nbytes, bool) or nbytes <= 0):
        raise ValueError(f"set_memory_budget: nbytes must be a positive int (bytes) or None, "
                         f"got {nbytes!r}")
    _settings["budget"] = None if nbytes is None else int(nbytes)


def _size(nbytes):
    return f"{nbytes / 2 ** 30:.2f} GiB" if nbytes >= 2 ** 30 else f"{nbytes / 2 ** 20:.1f} MiB"


def check_fits(what, shape, dtype):
    """MemoryError, before any work, when a result of `shape` cannot fit in memory."""
    nbytes = math.prod(shape) * np.dtype(dtype).itemsize
    if nbytes <= _MIN_CHUNK_BYTES:  # not worth reading /proc/meminfo (~40 us) on every call
        return nbytes
    available = available_bytes()
    if available is not None and nbytes > available:
        raise MemoryError(
            f"{what}: the dense result has shape {tuple(shape)} ({_size(nbytes)}) but only "
            f"{_size(available)} of memory is available. For a sparse Jacobian use "
            "vj.sparse_jacobian (or vj.sparse_hessian); to compute it in blocks on a "
            "cluster use vj.dask.jacobian.")
    return nbytes


class ChunkPlan:
    """Iterations per chunk of a loop sized by the memory budget. The first chunk runs
    `first` iterations, from the caller's estimate of one iteration's working memory
    (`row_bytes`); each later chunk is sized from what the chunks before used, as pfor
    counts it (the bytes of the loop values they created, dense or structured: an upper
    bound of what they held at once, converters' own temporaries aside, hence twice that),
    when that is less than the estimate. Structured Jacobian seeds that stay structured
    (one-hot, banded: a few numbers per iteration) so run in two chunks instead of many."""

    __slots__ = ("first", "budget", "row_bytes")

    def __init__(self, first, budget, row_bytes):
        self.first = first
        self.budget = budget
        self.row_bytes = row_bytes

    def next_rows(self, used_bytes, rows):
        """Iterations for the next chunk after one of `rows` iterations that created loop
        values of `used_bytes` bytes."""
        per_row = min(self.row_bytes, 2 * used_bytes / max(rows, 1))
        return max(1, int(self.budget // max(per_row, 1)))


def chunk_plan(iters, row_bytes, result_bytes):
    """The chunks of `iters` iterations of about `row_bytes` working memory each: a
    ChunkPlan, or None when one chunk fits. A budget set with set_memory_budget is taken
    as it is."""
    explicit = _settings["budget"]
    budget = explicit if explicit is not None else \
        max(_MIN_CHUNK_BYTES, min(_DEFAULT, result_bytes // 3))
    rows = max(1, int(budget // max(row_bytes, 1)))
    return None if rows >= iters else ChunkPlan(rows, budget, row_bytes)
