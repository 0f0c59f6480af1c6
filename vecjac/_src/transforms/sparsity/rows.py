"""Fast row operations on boolean CSR patterns, for the hot rules of patterns.py.

Most patterns a stencil or an element-wise program traces have (nearly) the same number
of entries in every row: the identity (one), shifted copies of it, their unions. Such a
pattern is a dense (rows, width) block of column indices, and the hot operations become
whole-array NumPy operations without any per-row work:
- take_rows (every layout op: reshape, slices, roll, stack, gathers): one fancy index of
  the block's rows (scipy's row indexing walks the rows one by one: 2x slower);
- union (every broadcasting op with two traced inputs): the blocks side by side, sorted
  along the rows, duplicates dropped (scipy's csr_plus_csr also builds a data array of
  sums and merges row by row: 2x slower, measured at 10^6 rows);
- vstack: the index arrays concatenated.
Rows of uneven length are padded with the sentinel column n (which sorts last) when the
padding stays below the entries themselves (PADDING); a pattern with a few long rows
(a dense row of an arrowhead) takes scipy's general operations instead.
Indices are int32 when the columns fit (half the memory of int64, which scipy would
also choose).
"""
import importlib

import numpy as np

__all__ = ["csr", "index_dtype", "block", "take_rows", "union", "vstack", "ordered",
           "canonical"]

PADDING = 2  # a padded block may hold up to PADDING times the entries
MAX_COMPARISONS = 64  # union: column comparisons per pair of blocks before sorting instead


def sparse():
    return importlib.import_module("scipy.sparse")


def index_dtype(n, nnz=0):
    return np.int32 if max(n, nnz) < 2 ** 31 - 1 else np.int64


def csr(indptr, indices, shape, ordered=True):
    """A boolean CSR array from arrays unique per row (sorted when `ordered`), without the
    format checks of scipy's constructor (the arrays are ours)."""
    sp = sparse()
    dtype = index_dtype(shape[1], len(indices))
    p = sp.csr_array(shape, dtype=bool)
    p.indptr = np.asarray(indptr, dtype=dtype)
    p.indices = np.asarray(indices, dtype=dtype)
    p.data = np.ones(len(indices), dtype=bool)
    if ordered:
        p.has_canonical_format = True
    else:  # scipy sorts (sort_indices) where an operation needs it
        p.has_sorted_indices = False
    return p


def ordered(p):
    """Whether p's indices are sorted within rows (scipy's flag: checked once, then kept)."""
    return bool(p.has_sorted_indices)


def canonical(p):
    """p with sorted indices (a copy when they were not)."""
    if ordered(p):
        return p
    p = p.copy()
    p.sort_indices()
    return p


def block(p):
    """(rows, width) column indices of p, rows padded with p.shape[1], or None when the
    padding would exceed PADDING times the entries."""
    m, n = p.shape
    counts = np.diff(p.indptr)
    width = int(counts.max()) if m else 0
    if m and width and int(counts.min()) == width:
        return p.indices.reshape(m, width)
    if width == 0 or m * width > PADDING * p.nnz:
        return None
    out = np.full((m, width), n, dtype=p.indices.dtype)
    rows = np.repeat(np.arange(m), counts)
    out[rows, np.arange(p.nnz) - np.repeat(p.indptr[:-1], counts)] = p.indices
    return out


def _from_block(b, n, in_order=True):
    """The CSR pattern of a block (padding: the sentinel n); `in_order`: its other entries
    are sorted along each row."""
    m, width = b.shape
    keep = b != n
    if keep.all():
        return csr(np.arange(m + 1, dtype=np.int64) * width, b.reshape(-1), (m, n),
                   in_order)
    indptr = np.zeros(m + 1, dtype=np.int64)
    np.cumsum(keep.sum(axis=1), out=indptr[1:])
    return csr(indptr, b[keep], (m, n), in_order)


def take_rows(p, src):
    """Rows `src` (an int array, -1 for an empty row) of pattern p, or None when p has no
    dense block (the caller uses scipy)."""
    b = block(p)
    if b is None:
        return None
    n = p.shape[1]
    present = src >= 0
    if present.all():
        return _from_block(b[src], n, ordered(p))
    taken = b[src[present]]  # only the rows that exist (a missing row copies nothing)
    keep = taken != n
    counts = np.zeros(src.size, dtype=np.int64)
    counts[present] = keep.sum(axis=1)
    indptr = np.zeros(src.size + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    return csr(indptr, taken[keep], (src.size, n), ordered(p))


def union(patterns, m, n):
    """The element-wise OR of same-shaped patterns, or None when one of them has no dense
    block. Narrow blocks are merged without sorting: each entry of the next block is
    compared with the entries of the union so far in its row (a few whole-column
    comparisons), duplicates become padding, and the row order is left as it falls
    (tracer.pattern sorts the final pattern once)."""
    blocks = [block(p) for p in patterns]
    if any(b is None for b in blocks):
        return None
    acc = blocks[0]
    for b in blocks[1:]:
        if acc.shape[1] * b.shape[1] > MAX_COMPARISONS:
            both = np.concatenate(blocks, axis=1)
            both.sort(axis=1)
            dup = both[:, 1:] == both[:, :-1]
            if dup.any():  # a duplicate becomes padding (_from_block drops it)
                both[:, 1:][dup] = n
            return _from_block(both, n)
        fresh = b.copy()
        for j in range(b.shape[1]):
            column = fresh[:, j]
            for i in range(acc.shape[1]):
                column[acc[:, i] == column] = n
        acc = np.concatenate([acc, fresh], axis=1)
    return _from_block(acc, n, in_order=False)


def vstack(parts, n):
    """The rows of `parts` (CSR patterns with n columns) one after the other."""
    offsets = np.cumsum([0] + [p.nnz for p in parts])
    indptr = np.concatenate([p.indptr[:-1].astype(np.int64) + o for p, o in
                             zip(parts, offsets[:-1])] + [offsets[-1:]])
    indices = np.concatenate([p.indices for p in parts])
    return csr(indptr, indices, (sum(p.shape[0] for p in parts), n),
               all(ordered(p) for p in parts))
