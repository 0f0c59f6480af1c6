"""The plan of a sparse Jacobian or Hessian (vecjac/_src/api/sparse.py): its pattern, the
coloring chosen, the seeds of the compressed products and how to read the nonzeros out
of them.

Jacobians (`mode`): "fwd" colors the columns (one JVP per color), "rev" the rows (one
VJP per color), "bidirectional" both at once (vecjac/_src/api/bicoloring.py: JVPs for
the column colors, VJPs for the row colors); "auto" takes the fewest products: forward
on a tie (a JVP needs no tape), reverse when its bound (the longest column) is below
the forward count, and a bicoloring when the better unidirectional coloring needs more
than BIDIRECTIONAL_ABOVE products, some row or column is SKEW times longer than the
average (_skewed), and the bicoloring needs fewer products.

Hessians (`coloring`): "star" (coloring.symmetric_coloring: each entry read directly
from one of its two mirror positions), "acyclic" (vecjac/_src/api/acyclic.py: fewer
colors, entries recovered by substitution along two-colored trees), "auto": the fewer
colors, star on a tie (direct reads round no sums).
"""
import numpy as np

from vecjac._src.api import acyclic, bicoloring, coloring
from vecjac._src.core.tensor import Tensor

__all__ = ["Plan", "make_plan", "MODES", "HESSIAN_COLORINGS", "BIDIRECTIONAL_ABOVE"]

MODES = ("auto", "fwd", "rev", "bidirectional")
HESSIAN_COLORINGS = ("auto", "star", "acyclic")
BIDIRECTIONAL_ABOVE = 8
SKEW = 4


class Seeds:
    """One family of compressed products: (count, size) seed rows."""

    __slots__ = ("seeds", "ncolors")

    def __init__(self, colors, count, dtype):
        seeds = np.zeros((count, colors.size), dtype=dtype)
        used = colors >= 0  # -1: in no product (bicolorings)
        if count:
            seeds[colors[used], np.flatnonzero(used)] = 1
        self.seeds = Tensor(seeds)
        self.ncolors = count


class Plan:
    """Pattern, coloring and decompression of one input signature. `seeds` (and
    `row_seeds` for bidirectional plans) are the products' seeds; `recover(flat)` the
    nonzeros (CSR order) from the flattened products."""

    __slots__ = ("pattern", "mode", "colors", "row_colors", "ncolors", "seeds",
                 "row_seeds", "take", "substitution", "indices", "indptr", "checked",
                 "traced", "coloring")

    def __init__(self, pattern, mode, colors, count, take, dtype, row_colors=None,
                 row_count=0, substitution=None, coloring_name=None):
        self.pattern = pattern
        self.mode = mode
        self.colors = colors
        self.row_colors = row_colors
        self.ncolors = count + row_count
        self.seeds = Seeds(colors, count, dtype)
        self.row_seeds = None if row_colors is None else Seeds(row_colors, row_count, dtype)
        self.take = take
        self.substitution = substitution  # acyclic Hessians: acyclic.Substitution
        self.coloring = coloring_name
        self.indices = pattern.indices
        self.indptr = pattern.indptr
        self.checked = 0     # evaluations verified by a random product (sparse_cache.verify)
        self.traced = None   # jit=True: the vj.function of this plan's products

    def recover(self, flat):
        """The nonzeros, in CSR order, from the flattened compressed products."""
        if self.substitution is not None:
            return self.substitution.recover(flat)
        return flat[self.take]


def make_plan(pattern, mode, hessian, dtype, hessian_coloring="auto"):
    m, n = pattern.shape
    if pattern.nnz == 0:
        name = "rev-over-rev" if hessian else "fwd" if mode in ("auto", "bidirectional") \
            else mode
        return Plan(pattern, name, np.zeros(n if name != "rev" else m, dtype=np.int64), 0,
                    np.zeros(0, dtype=np.int64), dtype)
    if hessian:
        return _hessian_plan(pattern, hessian_coloring, dtype)
    fwd = rev = None
    if mode in ("auto", "fwd"):
        fwd = coloring.column_coloring(pattern)
    if mode == "rev" or (mode == "auto" and (fwd is None or fwd[1] > _row_bound(pattern))
                         and not _symmetric_pattern(pattern)):
        rev = coloring.row_coloring(pattern)
    best = min([c[1] for c in (fwd, rev) if c is not None], default=max(m, n) + 1)
    if mode == "bidirectional" or (mode == "auto" and best > BIDIRECTIONAL_ABOVE
                                   and _skewed(pattern)):
        bi = bicoloring.bicoloring(pattern, min(best, max(m, n)))  # uncolored: a color each
        if bi is not None and (mode == "bidirectional" or bi[2] + bi[3] < best):
            col_colors, row_colors, kf, kr, take = bi
            return Plan(pattern, "bidirectional", col_colors, kf, take, dtype,
                        row_colors=row_colors, row_count=kr)
        if mode == "bidirectional":  # too large to bicolor: the cheaper unidirectional
            fwd = coloring.column_coloring(pattern)
            rev = coloring.row_coloring(pattern)
    if mode == "fwd" or (fwd is not None and (rev is None or fwd[1] <= rev[1])) or \
            (fwd is None and rev is None):
        colors, count = _colored(fwd, n)
        return Plan(pattern, "fwd", colors, count, coloring.forward_take(pattern, colors),
                    dtype)
    colors, count = _colored(rev, m)
    return Plan(pattern, "rev", colors, count, coloring.reverse_take(pattern, colors), dtype)


def _skewed(pattern):
    """Some row or column SKEW times longer than the average: where a bicoloring can beat
    both one-sided colorings (a dense row costs forward mode its length in colors, a
    dense column reverse mode). Patterns without (stencils, bands) have unidirectional
    counts near their bounds, and the star coloring of their bipartite graph would cost
    more than the product or two it might save."""
    m, n = pattern.shape
    longest_row = int(np.diff(pattern.indptr).max())
    longest_col = _row_bound(pattern)
    return longest_row * m > SKEW * pattern.nnz or longest_col * n > SKEW * pattern.nnz


def _hessian_plan(pattern, choice, dtype):
    n = pattern.shape[0]
    star = acyc = None
    if choice in ("auto", "star"):
        star = coloring.symmetric_coloring(pattern)
    if choice == "acyclic" or (choice == "auto" and (star is None or star[1] > 2)):
        acyc = acyclic.acyclic_coloring(pattern)
    if acyc is not None and (choice == "acyclic" or star is None or acyc[1] < star[1]):
        colors, count = acyc
        return Plan(pattern, "rev-over-rev", colors, count, None, dtype,
                    substitution=acyclic.Substitution(pattern, colors, count),
                    coloring_name="acyclic")
    colors, count = _colored(star if star is not None else coloring.symmetric_coloring(
        pattern), n)
    take = coloring.symmetric_take(pattern, colors, count)
    return Plan(pattern, "rev-over-rev", colors, count, take, dtype, coloring_name="star")


def _symmetric_pattern(pattern):
    """A square pattern equal to its transpose: rows color as columns do (no second
    coloring needed to compare the modes)."""
    m, n = pattern.shape
    return m == n and (pattern != pattern.T).nnz == 0


def _row_bound(pattern):
    """A lower bound on the row colors: the longest column."""
    return int(np.bincount(pattern.indices, minlength=pattern.shape[1]).max())


def _colored(result, size):
    """A coloring, or one color per vertex when the conflict graph was too large."""
    if result is None:
        return np.arange(size, dtype=np.int64), size
    return result
