"""Bicoloring: some Jacobian entries from JVPs of column groups, the others from VJPs of
row groups (mode="bidirectional").

A unidirectional coloring needs at least as many colors as the densest row (forward) or
column (reverse): an arrowhead (one dense row, one dense column, the diagonal) needs n
either way, though three products suffice: one VJP for the dense row, one JVP for the
dense column, one JVP of all other columns for the diagonal.

Following Coleman and Verma (1998) and Gebremedhin, Manne and Pothen ("What color is
your Jacobian?", 2005, section 6), columns and rows are the two sides of the bipartite
graph of the pattern (an edge per nonzero) and are colored together by a star coloring
(coloring_kernels.star: every path on four vertices has three colors). Entry (i, j) is
then computed alone by the JVP of column j's color (no other column of that color has a
nonzero in row i) or by the VJP of row i's color (no other row of that color in column
j): were neither so, a row i' and a column j' would close the two-colored path
i'-j-i-j'. Not every color must be evaluated: entries that only one side computes
alone fix their color; the others are covered greedily by the color that computes the
most of them (a small set cover over the colors), and the colors no entry uses are
dropped (Coleman and Verma's color 0: "not in any product").

The products: (kf, m) JVPs and (kr, n) VJPs, flattened and concatenated; `take` gives
the position of each nonzero, in CSR order.
"""
import numpy as np

from vecjac._src.api import coloring_kernels

__all__ = ["bicoloring", "MAX_BICOLORING_WORK"]

#: Work bounds of the star coloring of the bipartite graph (coloring_kernels.star_work):
#: compiled (about 1 ns a step) and in Python (numba off or missing; 100 ns a step).
MAX_BICOLORING_WORK = 1_000_000_000
MAX_PYTHON_WORK = 2_000_000


def bicoloring(p, alternative=None):
    """(column colors (n,), row colors (m,), kf, kr, take) for pattern p (m, n), colors
    renumbered 0 .. kf - 1 and 0 .. kr - 1 among the evaluated ones (-1: in no product);
    None when the bipartite graph is too large to color here. `alternative`: the
    products of the better unidirectional coloring, if known. Without numba the loop
    runs in Python up to MAX_PYTHON_WORK steps, or up to what one evaluation of that
    alternative costs (at least a step per nonzero per product): an arrowhead at n = 10^5
    would otherwise be evaluated with 10^5 products."""
    m, n = p.shape
    rows = np.repeat(np.arange(m, dtype=np.int64), np.diff(p.indptr))
    cols = p.indices.astype(np.int64)
    degree = np.concatenate([np.bincount(cols, minlength=n),
                             np.diff(p.indptr)]).astype(np.int64)
    work = coloring_kernels.star_work(degree)
    compiled = coloring_kernels.available()
    python_bound = max(MAX_PYTHON_WORK, (alternative or 0) * p.nnz)
    if work > (MAX_BICOLORING_WORK if compiled else python_bound):
        return None
    indptr, indices = _bipartite(rows, cols, m, n)
    order = np.argsort(-degree, kind="stable").astype(np.int64)  # hubs first
    colors = np.full(n + m, -1, dtype=np.int64)
    coloring_kernels.run(coloring_kernels.star, work, indptr, indices, order, colors)
    col_colors, row_colors = colors[:n], colors[n:]
    count = int(colors.max()) + 1
    # which side computes each entry alone
    key_f = rows * count + col_colors[cols]
    by_jvp = np.bincount(key_f, minlength=m * count)[key_f] == 1
    key_r = cols * count + row_colors[rows]
    by_vjp = np.bincount(key_r, minlength=n * count)[key_r] == 1
    if not np.all(by_jvp | by_vjp):
        raise RuntimeError("bicoloring: the coloring is not a star coloring (a bug)")
    use_f, use_r = _cover(col_colors[cols], row_colors[rows], by_jvp, by_vjp, count)
    f_new = _renumber(use_f)
    r_new = _renumber(use_r)
    kf, kr = int(use_f.sum()), int(use_r.sum())
    jvp = by_jvp & use_f[col_colors[cols]]
    take = np.where(jvp, f_new[col_colors[cols]] * m + rows,
                    kf * m + r_new[row_colors[rows]] * n + cols)
    return (np.where(use_f[col_colors], f_new[col_colors], -1),
            np.where(use_r[row_colors], r_new[row_colors], -1), kf, kr, take)


def _bipartite(rows, cols, m, n):
    """CSR adjacency of the bipartite graph: vertices 0 .. n - 1 the columns, n .. n + m - 1
    the rows."""
    src = np.concatenate([cols, rows + n])
    dst = np.concatenate([rows + n, cols])
    order = np.argsort(src, kind="stable")
    indptr = np.zeros(n + m + 1, dtype=np.int64)
    np.cumsum(np.bincount(src, minlength=n + m), out=indptr[1:])
    return indptr, dst[order].astype(np.int64)


def _cover(fcolor, rcolor, by_jvp, by_vjp, count):
    """Which column colors (JVPs) and row colors (VJPs) to evaluate so that every entry is
    computed alone by one of them: the forced ones, then greedily the color computing
    the most entries still uncovered."""
    use_f = np.zeros(count, dtype=bool)
    use_r = np.zeros(count, dtype=bool)
    use_f[np.unique(fcolor[by_jvp & ~by_vjp])] = True
    use_r[np.unique(rcolor[by_vjp & ~by_jvp])] = True
    while True:
        open_ = ~((by_jvp & use_f[fcolor]) | (by_vjp & use_r[rcolor]))
        if not open_.any():
            return use_f, use_r
        gain_f = np.bincount(fcolor[open_ & by_jvp], minlength=count)
        gain_r = np.bincount(rcolor[open_ & by_vjp], minlength=count)
        if gain_f.max() >= gain_r.max():
            use_f[int(np.argmax(gain_f))] = True
        else:
            use_r[int(np.argmax(gain_r))] = True


def _renumber(used):
    new = np.full(used.size, -1, dtype=np.int64)
    new[used] = np.arange(int(used.sum()), dtype=np.int64)
    return new
