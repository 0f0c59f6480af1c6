"""Coloring of sparsity patterns: which Jacobian columns (or rows) one JVP (or VJP) computes.

Two columns may share a color when no row has a nonzero in both (a distance-2 coloring of
the bipartite row/column graph): the JVP with the sum of their unit vectors then holds
each column's entries in rows where the other has none. Rows likewise for VJPs. For
symmetric Hessians, a distance-2 coloring of the columns is also a star coloring (every
path on four vertices gets three colors), and `symmetric_take` reads each entry from
either of its two mirror images, whichever its color group computes alone. Bicolorings
(both at once) are vecjac/_src/api/bicoloring.py, acyclic Hessian colorings
vecjac/_src/api/acyclic.py.

Large patterns (conflict work, about sum(row nnz ** 2), above COMPILED_D2_WORK) are colored by
a compiled greedy loop (coloring_kernels.distance2, numba) in two vertex orders, natural
and largest-first (by conflict degree), keeping the fewer colors: on the periodic
Brusselator both give 8 colors (bound 6) from 64^2 to 708^2, where smallest-last gives
11-12 (measured; ties in the uniform stencil degree are what smallest-last breaks
badly), and the natural order gives 3 on a tridiagonal pattern. The 708^2 Brusselator
(6e6 nonzeros) takes 0.06-0.08 s per order.

Smaller patterns (and numba off, VECJAC_DISABLE_NUMBA=1) use the NumPy greedy: numba
would need 0.5 s to load in a fresh process, more than a whole first call of a small
sparse Jacobian. It runs vectorized over batches of vertices, in order of index residue
modulo K, with K above the typical index distance between conflicting vertices:
vertices of one residue class then rarely conflict (the few that do are resolved, the
later vertex retrying), so a whole class is colored at once (K NumPy passes in all), and
on banded and stencil patterns the color count is the natural-order greedy's: 3 for a
tridiagonal Jacobian, 8 for the 2-D Brusselator up to 708^2 and beyond. K is capped at
4096 residues, or at n / 64 when that is more (a pass must hold enough vertices to pay
its NumPy calls): the 708^2 Brusselator needs K = 5,668 (with 4096 it took 12 colors).
"""
import numpy as np

from vecjac._src.api import coloring_kernels
from vecjac._src.transforms.sparsity.patterns import sparse

__all__ = ["column_coloring", "row_coloring", "symmetric_coloring", "forward_take",
           "reverse_take", "symmetric_take", "MAX_CONFLICT_WORK", "MAX_STAR_WORK"]

#: Forming the column conflict graph P^T P costs about sum(row nnz ** 2); above this the
#: mode is not colored (a dense row needs as many colors as its length anyway).
MAX_CONFLICT_WORK = 50_000_000
#: The greedy star coloring runs in Python over paths of length 3: it is tried only when
#: sum(degree ** 2) stays below this (about 0.5 s), and where it can beat distance-2.
MAX_STAR_WORK = 2_000_000
#: Above this conflict work the compiled greedy pays its load (0.4 s): the NumPy greedy
#: takes 0.08 s at 2.4e6 (Brusselator 128^2), 1.6 s at 1.9e7 (512^2).
COMPILED_D2_WORK = 5_000_000
MAX_COMPILED_STAR_WORK = 1_000_000_000
_MAX_BATCHES = 4096  # residue classes colored one after the other, at most ...
_MIN_BATCH = 64      # ... unless n / _MIN_BATCH is more


def _conflict_work(p):
    counts = np.diff(p.indptr).astype(np.int64)
    return int(counts @ counts)


def column_coloring(p):
    """(colors (n,), ncolors) of the columns of pattern p (m, n), or None when the
    conflict graph would be too large to form (some rows hold thousands of entries)."""
    m, n = p.shape
    if n == 0:
        return np.zeros(0, dtype=np.int64), 0
    if p.nnz == 0:
        return np.zeros(n, dtype=np.int64), 1
    work = _conflict_work(p)
    if work > MAX_CONFLICT_WORK:
        return None
    lower = int(np.diff(p.indptr).max())  # one row's columns all conflict
    if work > COMPILED_D2_WORK:
        result = _compiled_greedy(p, lower)
        if result is not None:
            return result
    p = sparse().csr_array((np.ones(p.nnz, dtype=np.int8), p.indices, p.indptr),
                           shape=p.shape)
    graph = (p.T.tocsr() @ p).tocsr()
    return _greedy(graph.indptr.astype(np.int64), graph.indices.astype(np.int64), n, lower)


def _compiled_greedy(p, lower):
    """The compiled greedy in natural then largest-first order (the fewer colors), or
    None when numba is not available."""
    kernel = coloring_kernels.compiled(coloring_kernels.distance2)
    if kernel is None:
        return None
    n = p.shape[1]
    pc = p.tocsc()
    arrays = [np.asarray(a, dtype=np.int64) for a in (p.indptr, p.indices, pc.indptr,
                                                      pc.indices)]
    best = None
    for order in ("natural", "largest-first"):
        if order == "natural":
            vertices = np.arange(n, dtype=np.int64)
        else:  # conflict degree, a neighbor counted once per shared row
            row_len = np.diff(p.indptr).astype(np.int64)
            degree = np.bincount(_col_of(pc), weights=row_len[pc.indices], minlength=n)
            vertices = np.argsort(-degree, kind="stable").astype(np.int64)
        colors = np.full(n, -1, dtype=np.int64)
        try:
            count = int(kernel(*arrays, vertices, colors))
        except Exception:  # noqa: BLE001  (numba cannot compile or cache here: NumPy)
            return None
        if best is None or count < best[1]:
            best = colors, count
        if best[1] <= lower:
            break
    return best


def _col_of(pc):
    """The column of each stored entry of a CSC matrix."""
    return np.repeat(np.arange(pc.shape[1], dtype=np.int64), np.diff(pc.indptr))


def symmetric_coloring(p):
    """(colors (n,), ncolors) of the columns of symmetric p for Hessians: the better of a
    distance-2 coloring and a greedy star coloring (Gebremedhin, Manne and Pothen 2005,
    Algorithm 4.1, coloring_kernels.star; largest degree first) where that can use fewer
    colors: a hub row (an arrowhead) forces n distance-2 colors, but only 2 star colors.
    The star coloring is compiled for large patterns; without numba it runs in Python
    only up to MAX_STAR_WORK."""
    d2 = column_coloring(p)
    n = p.shape[0]
    degrees = np.diff(p.indptr).astype(np.int64)
    work = coloring_kernels.star_work(degrees)
    limit = MAX_COMPILED_STAR_WORK if coloring_kernels.available() else MAX_STAR_WORK
    if n == 0 or p.nnz == 0 or work > limit:
        return d2
    if d2 is not None and d2[1] <= int(degrees.max()) // 2 + 2:
        return d2  # near the bound a star coloring can reach: not worth the loop
    colors = np.full(n, -1, dtype=np.int64)
    count = coloring_kernels.run(coloring_kernels.star, work,
                                 p.indptr.astype(np.int64), p.indices.astype(np.int64),
                                 np.argsort(-degrees, kind="stable").astype(np.int64),
                                 colors)
    return (colors, int(count)) if d2 is None or count < d2[1] else d2


def row_coloring(p):
    """(colors (m,), ncolors) of the rows of p, or None (see column_coloring)."""
    return column_coloring(p.T.tocsr())


def _greedy(indptr, indices, n, lower):
    """Greedy coloring of the graph (CSR adjacency, self-loops allowed); `lower` is a
    lower bound on the color count (a clique's size), where the search stops."""
    rows = np.repeat(np.arange(n, dtype=np.int64), np.diff(indptr))
    off = indices != rows
    indices, rows = indices[off], rows[off]
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=n), out=indptr[1:])
    if indices.size == 0:
        return np.zeros(n, dtype=np.int64), 1
    # the band of most conflicts (periodic wrap-arounds aside); residues modulo K just
    # above it, then modulo twice it (2-D stencils: both orders sweep the grid like
    # the natural order, which one is better depends on the layout: measured)
    band = int(np.percentile(np.abs(indices - rows), 99))
    cap = min(n, max(_MAX_BATCHES, n // _MIN_BATCH))
    best = None
    for k in (band + 1, 2 * band):
        colors, count = _greedy_residues(indptr, indices, n, min(k, cap))
        if best is None or count < best[1]:
            best = colors, count
        if best[1] <= lower or k >= cap:
            break
    return best


def _greedy_residues(indptr, indices, n, k):
    colors = np.full(n, -1, dtype=np.int64)
    order = np.argsort(np.arange(n) % k, kind="stable")   # residue classes, one by one
    bounds = np.searchsorted(np.arange(n)[order] % k, np.arange(k + 1))
    owner, nbrs = _neighbors(indptr, indices, order)      # all neighbor lists, once
    edge_bounds = np.searchsorted(owner, bounds)
    for r in range(k):
        b0, b1 = bounds[r], bounds[r + 1]
        if b0 == b1:
            continue
        vertices = order[b0:b1]
        seg = owner[edge_bounds[r]:edge_bounds[r + 1]] - b0
        nbr = nbrs[edge_bounds[r]:edge_bounds[r + 1]]
        colors[vertices] = _smallest_free(colors, seg, nbr, vertices.size)
        same = (colors[nbr] == colors[vertices][seg]) & (nbr < vertices[seg])
        pending = np.unique(vertices[seg[same]]) if same.any() else ()
        while len(pending):  # the later of two conflicting vertices retries (rare)
            colors[pending] = -1
            seg, nbr = _neighbors(indptr, indices, pending)
            colors[pending] = _smallest_free(colors, seg, nbr, pending.size)
            same = (colors[nbr] == colors[pending][seg]) & (nbr < pending[seg])
            pending = np.unique(pending[seg[same]])
    return colors, int(colors.max()) + 1


def _neighbors(indptr, indices, vertices):
    """(segment, neighbor) pairs: the neighbors of each vertex, segment = its position."""
    starts = indptr[vertices]
    counts = indptr[vertices + 1] - starts
    ends = np.cumsum(counts)
    pos = np.repeat(starts - (ends - counts), counts) + np.arange(ends[-1] if ends.size
                                                                    else 0)
    return np.repeat(np.arange(vertices.size), counts), indices[pos]


def _smallest_free(colors, seg, nbr, count):
    """For each segment: the smallest color no colored neighbor has."""
    c = colors[nbr]
    keep = c >= 0
    seg, c = seg[keep], c[keep]
    width = int(c.max()) + 2 if c.size else 1
    used = np.zeros((count, width), dtype=bool)
    used[seg, c] = True
    return np.argmin(used, axis=1)


# -- decompression: where each nonzero of the pattern is in the compressed products ---------
def _rows_of(p):
    return np.repeat(np.arange(p.shape[0], dtype=np.int64), np.diff(p.indptr))


def forward_take(p, colors):
    """Positions in the flattened (ncolors, m) JVPs of p's nonzeros, in CSR order."""
    return colors[p.indices] * p.shape[0] + _rows_of(p)


def reverse_take(p, colors):
    """Positions in the flattened (ncolors, n) VJPs of p's nonzeros, in CSR order."""
    return colors[_rows_of(p)] * p.shape[1] + p.indices


def symmetric_take(p, colors, ncolors):
    """Positions in the flattened (ncolors, n) Hessian-vector products of the nonzeros
    of symmetric p: H[i, j] from the product of color(j) at row i when no other column
    of that color has a nonzero in row i, else from the product of color(i) at row j."""
    n = p.shape[0]
    rows = _rows_of(p)
    cols = p.indices.astype(np.int64)
    key = rows * ncolors + colors[cols]
    alone = np.bincount(key, minlength=n * ncolors)[key] == 1
    direct = colors[cols] * n + rows
    mirror = colors[rows] * n + cols
    mirror_key = cols * ncolors + colors[rows]
    if not np.all(alone | (np.bincount(key, minlength=n * ncolors)[mirror_key] == 1)):
        raise RuntimeError("symmetric_take: the coloring is not a star coloring (a bug)")
    return np.where(alone, direct, mirror)
