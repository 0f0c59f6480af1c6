"""Acyclic coloring of symmetric patterns, and Hessians recovered by substitution.

A star coloring lets every Hessian entry be read directly off one Hessian-vector product
(coloring.symmetric_take). An acyclic coloring asks less (Coleman and Cai 1986;
Gebremedhin, Tarafdar, Manne and Pothen 2007): a distance-1 coloring in which every
cycle has three colors, so that the edges between any two color classes form a forest,
and often needs fewer colors (a tridiagonal Hessian: 2 instead of 3).

Recovery (substitution): with HS the products (H S)[u, c] = sum of H[u, w] over the w of
color c, the diagonal is HS[u, color(u)] (no neighbor shares u's color). In a tree of
the colors {a, b}, every neighbor of u of the other color is in u's tree, so
b(u) = HS[u, other color] is the sum of H over u's tree edges. Rooting each tree,
H[v, parent(v)] = b(v) - sum over v's children c of H[c, v], which unrolls to the
alternating sum of b over v's subtree: sum of (-1)^(depth(d) - depth(v)) b(d). In
depth-first preorder a subtree is a contiguous run, so every edge of every tree comes
out of one cumulative sum (a NumPy pass per call, no per-tree work). Its rounding is
that of the cumulative sum, relative to the largest partial sums (about 1e-13 of the
entries' scale at a million nonzeros; `check=` compares with a direct product).
"""
import numpy as np

from vecjac._src.api import coloring_kernels

__all__ = ["acyclic_coloring", "Substitution", "MAX_ACYCLIC_WORK"]

#: Work bounds (about sum of degree ** 2 union-find steps): compiled, and in Python.
MAX_ACYCLIC_WORK = 1_000_000_000
MAX_PYTHON_WORK = 2_000_000
#: Above this work the loop is compiled (a union-find step in Python: ~0.5 us)
COMPILE_WORK = 200_000


def _graph(p):
    """int64 CSR arrays of symmetric p and, for each position (a, b), that of (b, a)."""
    n = p.shape[0]
    indptr = p.indptr.astype(np.int64)
    indices = p.indices.astype(np.int64)
    rows = np.repeat(np.arange(n, dtype=np.int64), np.diff(indptr))
    key = rows * n + indices   # increasing in CSR order (sorted indices)
    mirror = np.searchsorted(key, indices * n + rows)
    return indptr, indices, rows, mirror


def acyclic_coloring(p):
    """(colors (n,), count) of symmetric pattern p (sorted indices), or None when the
    graph is too large to color here."""
    n = p.shape[0]
    degree = np.diff(p.indptr).astype(np.int64)
    work = int(degree @ degree)
    if work > (MAX_ACYCLIC_WORK if coloring_kernels.available() else MAX_PYTHON_WORK):
        return None
    indptr, indices, _, mirror = _graph(p)
    order = np.argsort(-degree, kind="stable").astype(np.int64)
    colors = np.full(n, -1, dtype=np.int64)
    tree = np.arange(indices.size, dtype=np.int64)
    source = coloring_kernels.acyclic
    if work > COMPILE_WORK and coloring_kernels.compiled(source) is not None:
        count = coloring_kernels.run(source, coloring_kernels.COMPILE_WORK + 1, indptr,
                                     indices, mirror, order, colors, tree)
    else:
        count = source(indptr, indices, mirror, order, colors, tree)
    return colors, int(count)


class Substitution:
    """Reads a Hessian (its nonzeros in CSR order) out of the products of an acyclic
    coloring: see the module docstring."""

    def __init__(self, p, colors, count):
        n = p.shape[0]
        indptr, indices, rows, mirror = _graph(p)
        self.nnz = indices.size
        diag = rows == indices
        self.diag_at = np.flatnonzero(diag)
        self.diag_take = colors[rows[diag]] * n + rows[diag]
        off = np.flatnonzero(~diag)
        self.off_at = off
        if off.size == 0:
            self.b_take = self.sign = self.start = self.end = self.edge_node = None
            return
        # the tree of each off-diagonal position: the other endpoint's color and a
        # canonical pair id (the trees of one color pair are told apart by the forest)
        a, b = rows[off], indices[off]
        pair = np.minimum(colors[a], colors[b]) * count + np.maximum(colors[a], colors[b])
        # nodes: (pair, vertex); the forest of all pairs at once
        node_key = pair * n + a
        keys, node = np.unique(node_key, return_inverse=True)
        node = node.astype(np.int64)
        place = np.full(indices.size, -1, dtype=np.int64)
        place[off] = np.arange(off.size)
        neighbor = node[place[mirror[off]]]       # node (pair, b) of each half-edge
        by_node = np.argsort(node, kind="stable")
        node_ptr = np.zeros(keys.size + 1, dtype=np.int64)
        np.cumsum(np.bincount(node, minlength=keys.size), out=node_ptr[1:])
        node_nbr = neighbor[by_node]
        order = np.empty(keys.size, dtype=np.int64)
        depth = np.empty(keys.size, dtype=np.int64)
        end = np.empty(keys.size, dtype=np.int64)
        parent = coloring_kernels.run(coloring_kernels.forest_preorder, 4 * off.size,
                                      node_ptr, node_nbr, order, depth, end)
        position = np.empty(keys.size, dtype=np.int64)
        position[order] = np.arange(keys.size)
        vertex = keys % n
        other = colors[b]                          # per half-edge: the tree's other color
        node_other = np.empty(keys.size, dtype=np.int64)
        node_other[node] = other
        # in preorder: where b(u) is in the flattened products, and the signs
        if off.size // 2 != keys.size - int((parent < 0).sum()):
            raise RuntimeError("acyclic coloring: a two-colored cycle (a bug)")
        self.b_take = (node_other * n + vertex)[order]
        self.sign = np.where(depth[order] % 2 == 0, 1.0, -1.0)   # in preorder
        self.node_sign = self.sign[position]
        self.start = position                      # a node's own preorder position ...
        self.end = end                             # ... and the end of its subtree
        # each half-edge's value is that of its child end: the endpoint whose parent is
        # the other one
        child = np.where(parent[node] == neighbor, node, neighbor)
        self.edge_node = child

    def recover(self, flat):
        data = np.empty(self.nnz, dtype=flat.dtype)
        data[self.diag_at] = flat[self.diag_take]
        if self.edge_node is None:
            return data
        s = flat[self.b_take].astype(np.float64) * self.sign
        total = np.zeros(s.size + 1)
        np.cumsum(s, out=total[1:])
        value = self.node_sign * (total[self.end] - total[self.start])
        data[self.off_at] = value[self.edge_node]
        return data
