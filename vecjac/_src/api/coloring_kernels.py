"""Compiled loops of the colorings (vecjac/_src/api/coloring.py, bicoloring.py, acyclic.py).

Greedy colorings visit vertices one after the other, each looking at its neighbors'
colors: a loop that NumPy cannot vectorize without approximations, and that costs
about 100 ns per visited neighbor in Python. Each loop here is plain Python that numba
compiles (nopython, cache=True) when the problem is large enough to pay numba's import
and cache load (0.4-0.5 s in a fresh process; a first compilation, once per machine,
1-2 s); smaller problems run the same function uncompiled, which gives the same colors.
numba is imported lazily (importlib), never at import of vecjac, and
VECJAC_DISABLE_NUMBA=1 keeps it off (the callers then bound the work they accept in
Python, or use their NumPy versions).

Arrays are int64 (indptr, indices, orders) and colors start at -1 (uncolored).
"""
import importlib
import importlib.util

import numpy as np

from vecjac._src.ops import kernels

__all__ = ["run", "compiled", "available", "COMPILE_WORK", "distance2", "smallest_last", "star",
           "star_work", "acyclic", "forest_preorder"]

#: Work (neighbor visits, about sum of degree^2) above which a loop is compiled: at
#: ~100 ns a visit in Python, 5e5 visits take 50 ms, numba's load about 0.4 s.
COMPILE_WORK = 2_000_000
HUB_DEGREE = 64     # star: neighbors' colors counted for vertices of higher degree
TABLE_COLORS = 64   # ... for this many colors (the others are scanned)
_compiled = {}
_broken = set()


def run(source, work, *arrays):
    """`source(*arrays)`, compiled by numba when `work` exceeds COMPILE_WORK and numba is
    enabled and works, else in Python. Returns whatever the loop returns."""
    kernel = compiled(source) if work > COMPILE_WORK else None
    if kernel is not None:
        try:
            return kernel(*arrays)
        except Exception:  # noqa: BLE001  (an input numba cannot type: Python from now on)
            _broken.add(source.__name__)
    return source(*arrays)


def available():
    """Whether large loops would run compiled (numba enabled and installed), without
    importing numba."""
    return kernels.numba_enabled() and importlib.util.find_spec("numba") is not None


def compiled(source):
    """The numba-compiled `source`, or None (numba disabled, missing or failing)."""
    name = source.__name__
    if name in _broken or not kernels.numba_enabled():
        return None
    kernel = _compiled.get(name)
    if kernel is None:
        try:
            numba = importlib.import_module("numba")
            kernel = _compiled[name] = numba.njit(cache=True, nogil=True)(source)
        except Exception:  # noqa: BLE001  (numba missing or unusable here)
            _broken.add(name)
            return None
    return kernel


# -- distance-2 coloring of columns (rows: the same on the transpose) -------------------------
def distance2(row_ptr, row_cols, col_ptr, col_rows, order, colors):
    """Greedy: each column in `order` takes the smallest color that no column sharing a
    row with it has. `colors` (-1 = uncolored) is filled in place; returns the count."""
    n = colors.size
    mark = np.full(n + 1, -1, dtype=np.int64)  # mark[c] == v: color c is taken near v
    count = 0
    for v in order:
        for p in range(col_ptr[v], col_ptr[v + 1]):
            r = col_rows[p]
            for q in range(row_ptr[r], row_ptr[r + 1]):
                c = colors[row_cols[q]]
                if c >= 0:
                    mark[c] = v
        c = 0
        while mark[c] == v:
            c += 1
        colors[v] = c
        if c + 1 > count:
            count = c + 1
    return count


def smallest_last(row_ptr, row_cols, col_ptr, col_rows, degree):
    """The smallest-last order of the columns' conflict graph (Matula and Beck): take
    away a column of smallest remaining degree, repeatedly; color in the reverse order.
    Degrees count a neighbor once per shared row (`degree`, modified in place)."""
    n = degree.size
    top = 0
    for v in range(n):
        if degree[v] > top:
            top = degree[v]
    head = np.full(top + 1, -1, dtype=np.int64)   # buckets of columns by degree
    nxt = np.full(n, -1, dtype=np.int64)
    prv = np.full(n, -1, dtype=np.int64)
    for v in range(n - 1, -1, -1):
        d = degree[v]
        nxt[v] = head[d]
        if head[d] >= 0:
            prv[head[d]] = v
        head[d] = v
    gone = np.zeros(n, dtype=np.bool_)
    order = np.empty(n, dtype=np.int64)
    low = 0
    for k in range(n - 1, -1, -1):
        while head[low] < 0:
            low += 1
        v = head[low]
        head[low] = nxt[v]
        if nxt[v] >= 0:
            prv[nxt[v]] = -1
        gone[v] = True
        order[k] = v
        for p in range(col_ptr[v], col_ptr[v + 1]):
            r = col_rows[p]
            for q in range(row_ptr[r], row_ptr[r + 1]):
                w = row_cols[q]
                if gone[w]:
                    continue
                d = degree[w]  # move w from bucket d to d - 1
                if prv[w] >= 0:
                    nxt[prv[w]] = nxt[w]
                else:
                    head[d] = nxt[w]
                if nxt[w] >= 0:
                    prv[nxt[w]] = prv[w]
                d -= 1
                degree[w] = d
                prv[w] = -1
                nxt[w] = head[d]
                if head[d] >= 0:
                    prv[head[d]] = w
                head[d] = w
                if d < low:
                    low = d
    return order


# -- star coloring of a symmetric graph (Hessians, and the bipartite graph of bicoloring) -----
def star_work(degree):
    """About the steps of `star` on a graph of these degrees: a vertex's neighbors scan
    its neighbors, but a hub's scan is a look-up of at most TABLE_COLORS counts."""
    degree = np.asarray(degree, dtype=np.int64)
    return int(degree @ np.minimum(degree, HUB_DEGREE))


def star(indptr, indices, order, colors):
    """Greedy star coloring (Gebremedhin, Manne and Pothen 2005, Algorithm 4.1): a
    distance-1 coloring in which every path on four vertices has three colors. Vertex v
    may not take the color of a neighbor w, nor of a vertex x two steps away through an
    uncolored w (the path would be two-colored once w is), nor of x when w is colored
    and x has a neighbor y != w of w's color (a two-colored path v-w-x-y). Self-loops
    are skipped. Returns the color count.

    Scanning the neighbors x of every neighbor w costs the sum of squared degrees: n^2
    for one dense row or column (an arrowhead). So for each hub (degree above
    HUB_DEGREE) the answer of that scan is kept up to date instead, for the first
    TABLE_COLORS colors: `table[h, c]`, how many neighbors of hub h have color c (an
    uncolored hub forbids those colors), and `pairs[h, c]`, how many neighbors x of
    color c have a second neighbor of h's color (a colored hub forbids those). They
    change only where a vertex is colored: its neighbors' counts, the hubs two steps
    away when a neighbor x gains a second neighbor of some hub's color, and a hub's
    pairs, computed once when it is colored. Colors past TABLE_COLORS near a hub, counted
    in `wide`, send that hub back to the scan. The colors are those of the plain scan."""
    n = colors.size
    mark = np.full(n + 1, -1, dtype=np.int64)
    slot = np.full(n, -1, dtype=np.int64)  # row of a high-degree vertex in the tables
    hubs = 0
    for v in range(n):
        if indptr[v + 1] - indptr[v] > HUB_DEGREE:
            slot[v] = hubs
            hubs += 1
    table = np.zeros((hubs, TABLE_COLORS), dtype=np.int64)
    pairs = np.zeros((hubs, TABLE_COLORS), dtype=np.int64)
    wide = np.zeros(hubs, dtype=np.int64)   # neighbors (or pairs) past TABLE_COLORS
    hub_ptr = np.zeros(n + 1, dtype=np.int64)  # the hubs among each vertex's neighbors
    for v in range(n if hubs else 0):
        hub_ptr[v + 1] = hub_ptr[v]
        for p in range(indptr[v], indptr[v + 1]):
            if indices[p] != v and slot[indices[p]] >= 0:
                hub_ptr[v + 1] += 1
    hub_nbr = np.empty(hub_ptr[n], dtype=np.int64)
    for v in range(n if hubs else 0):
        k = hub_ptr[v]
        for p in range(indptr[v], indptr[v + 1]):
            if indices[p] != v and slot[indices[p]] >= 0:
                hub_nbr[k] = indices[p]
                k += 1
    count = 0
    for v in order:
        for p in range(indptr[v], indptr[v + 1]):
            w = indices[p]
            if w == v:
                continue
            cw = colors[w]
            if cw >= 0:
                mark[cw] = v
            h = slot[w]
            if h >= 0 and wide[h] == 0:  # the hub's kept answer
                source = table if cw < 0 else pairs
                for c in range(min(count, TABLE_COLORS)):
                    if source[h, c] > 0:
                        mark[c] = v
                continue
            for q in range(indptr[w], indptr[w + 1]):
                x = indices[q]
                cx = colors[x]
                if x == v or x == w or cx < 0 or mark[cx] == v:
                    continue
                if cw < 0:
                    mark[cx] = v
                elif slot[x] >= 0 and cw < TABLE_COLORS:
                    if table[slot[x], cw] >= 2:
                        mark[cx] = v
                else:
                    for s in range(indptr[x], indptr[x + 1]):
                        y = indices[s]
                        if y != w and y != x and colors[y] == cw:
                            mark[cx] = v
                            break
        c = 0
        while mark[c] == v:
            c += 1
        colors[v] = c
        if c + 1 > count:
            count = c + 1
        if hubs == 0:
            continue
        # the hubs' answers after v took color c
        for p in range(indptr[v], indptr[v + 1]):  # v is a neighbor of color c
            u = indices[p]
            if u != v and slot[u] >= 0:
                if c < TABLE_COLORS:
                    table[slot[u], c] += 1
                else:
                    wide[slot[u]] += 1
        for p in range(indptr[v], indptr[v + 1]):  # x gains a neighbor of color c
            x = indices[p]
            if x == v or colors[x] < 0 or hub_ptr[x] == hub_ptr[x + 1]:
                continue
            k = 0  # x's neighbors of color c
            if slot[x] >= 0 and c < TABLE_COLORS:
                k = table[slot[x], c]
            else:
                for s in range(indptr[x], indptr[x + 1]):
                    if indices[s] != x and colors[indices[s]] == c:
                        k += 1
            if k != 2:
                continue
            for t in range(hub_ptr[x], hub_ptr[x + 1]):  # x now pairs with c-hubs but v
                w = hub_nbr[t]
                if w != v and colors[w] == c:
                    if colors[x] < TABLE_COLORS:
                        pairs[slot[w], colors[x]] += 1
                    else:
                        wide[slot[w]] += 1
        # v itself needs no pairs yet: its colored neighbors have distinct colors (a
        # second neighbor of one color would have been two steps from the first
        # through v, uncolored then); it pairs when one gains a twin (above)
        h = slot[v]
        if h >= 0:  # a hub just colored: its pairs from scratch
            for p in range(indptr[v], indptr[v + 1]):
                x = indices[p]
                cx = colors[x]
                if x == v or cx < 0:
                    continue
                k = 0
                if slot[x] >= 0 and c < TABLE_COLORS:
                    k = table[slot[x], c]
                else:
                    for s in range(indptr[x], indptr[x + 1]):
                        if indices[s] != x and colors[indices[s]] == c:
                            k += 1
                if k >= 2:
                    if cx < TABLE_COLORS:
                        pairs[h, cx] += 1
                    else:
                        wide[h] += 1
    return count


# -- acyclic coloring (Hessians recovered by substitution) ----------------------------------
def acyclic(indptr, indices, mirror, order, colors, tree):
    """Greedy acyclic coloring: a distance-1 coloring in which every cycle has three
    colors, so that the edges between any two color classes form a forest. The edges
    (CSR positions; `mirror[p]` is the position of the same edge seen from its other
    end) between colored vertices are kept in union-find sets, one set per two-colored
    tree (`tree`, filled in place: a position's root). Vertex v may not take color c
    when two of its neighbors lie in one tree with colors {c, d}: v would close a
    cycle. Self-loops are skipped (they are the diagonal). Returns the color count."""
    n = colors.size
    mark = np.full(n + 1, -1, dtype=np.int64)
    seen_by = np.full(indices.size, -1, dtype=np.int64)  # tree root -> neighbor that saw it
    seen_at = np.full(indices.size, -1, dtype=np.int64)  # ... for vertex v
    first = np.full(n + 1, -1, dtype=np.int64)           # color d -> v's first edge to d
    count = 0
    for v in order:
        for p in range(indptr[v], indptr[v + 1]):
            w = indices[p]
            if w == v or colors[w] < 0:
                continue
            mark[colors[w]] = v
        for p in range(indptr[v], indptr[v + 1]):
            w = indices[p]
            if w == v or colors[w] < 0:
                continue
            for q in range(indptr[w], indptr[w + 1]):
                x = indices[q]
                if x == w or x == v or colors[x] < 0:
                    continue
                root = q
                while tree[root] != root:  # union-find, path halving
                    tree[root] = tree[tree[root]]
                    root = tree[root]
                if seen_at[root] != v:
                    seen_at[root] = v
                    seen_by[root] = w
                elif seen_by[root] != w:
                    mark[colors[x]] = v  # w and the first neighbor share tree `root`
        c = 0
        while mark[c] == v:
            c += 1
        colors[v] = c
        if c + 1 > count:
            count = c + 1
        # v joins the trees of its colored neighbors: edge v-w with w's edges to color c,
        # and with v's other edges to w's color
        for p in range(indptr[v], indptr[v + 1]):
            w = indices[p]
            if w == v or colors[w] < 0:
                continue
            d = colors[w]
            same = first[d]  # v's earlier edge to color d: the same tree, through v
            first[d] = p
            across = -1      # w's edge to color c: the same tree, through w
            for q in range(indptr[w], indptr[w + 1]):
                x = indices[q]
                if x != v and x != w and colors[x] == c:
                    across = q
                    break
            for other in (mirror[p], same, across):
                if other < 0:
                    continue
                a = p  # union of the sets of p and other (numba: no helper calls)
                while tree[a] != a:
                    tree[a] = tree[tree[a]]
                    a = tree[a]
                b = other
                while tree[b] != b:
                    tree[b] = tree[tree[b]]
                    b = tree[b]
                if a != b:
                    tree[a] = b
        for p in range(indptr[v], indptr[v + 1]):  # reset first[] for the next vertex
            w = indices[p]
            if w != v and colors[w] >= 0:
                first[colors[w]] = -1
    return count


def forest_preorder(node_ptr, node_nbr, order, depth, end):
    """Depth-first preorder of a forest (CSR adjacency over its nodes): `order` receives
    the nodes in preorder, `depth[v]` each node's depth (0 at its tree's root, the
    first node of the tree met in index order), `end[v]` the preorder position just past
    v's subtree. Returns the parent of each node (-1 at roots)."""
    n = node_ptr.size - 1
    parent = np.full(n, -1, dtype=np.int64)
    seen = np.zeros(n, dtype=np.bool_)
    stack = np.empty(2 * n + 1, dtype=np.int64)  # each node: opened, later closed
    k = 0
    for root in range(n):
        if seen[root]:
            continue
        top = 0
        stack[0] = root
        seen[root] = True
        depth[root] = 0
        while top >= 0:
            v = stack[top]
            top -= 1
            if v < 0:  # v's subtree is done
                end[-v - 1] = k
                continue
            order[k] = v
            k += 1
            top += 1
            stack[top] = -v - 1  # closes v after its children
            for p in range(node_ptr[v], node_ptr[v + 1]):
                w = node_nbr[p]
                if not seen[w]:
                    seen[w] = True
                    parent[w] = v
                    depth[w] = depth[v] + 1
                    top += 1
                    stack[top] = w
    return parent
