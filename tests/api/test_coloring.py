"""The colorings of vecjac/_src/api/coloring.py, bicoloring.py and acyclic.py on their own:
validity checked by brute force (no two columns of one color share a row; every entry
recoverable), color counts on patterns whose optimum is known, and the compiled loops
against their uncompiled selves."""
import numpy as np
import pytest
import scipy.sparse as sp

from vecjac._src.api import acyclic, coloring, coloring_kernels


def banded(n, lower, upper):
    return sp.csr_array(sp.diags_array([np.ones(n - abs(k)) for k in range(-lower, upper + 1)],
                                       offsets=list(range(-lower, upper + 1))), dtype=bool)


def brusselator_pattern(n):
    """The periodic 2-D Brusselator's Jacobian pattern (species interleaved)."""
    idx = np.arange(n * n * 2).reshape(n, n, 2)
    rows, cols = [], []
    for s in (0, 1):
        for di, dj in ((1, 0), (-1, 0), (0, 1), (0, -1), (0, 0)):
            rows.append(idx[..., s].ravel())
            cols.append(np.roll(idx[..., s], (-di, -dj), (0, 1)).ravel())
        rows.append(idx[..., s].ravel())
        cols.append(idx[..., 1 - s].ravel())
    r, c = np.concatenate(rows), np.concatenate(cols)
    return sp.csr_array((np.ones(r.size, dtype=bool), (r, c)), shape=(2 * n * n,) * 2)


def assert_column_coloring(p, colors):
    rows = np.repeat(np.arange(p.shape[0]), np.diff(p.indptr))
    key = rows * (colors.max() + 1) + colors[p.indices]
    assert np.unique(key).size == key.size, "two columns of one color share a row"


@pytest.mark.parametrize("compiled", [False, True])
def test_distance2_counts(monkeypatch, compiled):
    if compiled:  # the compiled greedy on small patterns
        monkeypatch.setattr(coloring, "COMPILED_D2_WORK", 0)
    for p, most in ((banded(50, 1, 1), 3), (banded(60, 2, 3), 6),
                    (brusselator_pattern(12), 8)):
        colors, count = coloring.column_coloring(p)
        assert count <= most and count == colors.max() + 1
        assert_column_coloring(p, colors)


def test_numpy_greedy_takes_more_residue_classes_on_large_patterns(monkeypatch):
    # the 708^2 Brusselator needed 5,668 classes where 4096 were allowed (12 colors
    # instead of 8); here in miniature: 128^2 needs 1024 classes for 8 colors
    p = brusselator_pattern(128)
    monkeypatch.setattr(coloring, "_MAX_BATCHES", 600)
    monkeypatch.setattr(coloring, "_MIN_BATCH", 16)   # n / 16 = 2048 classes allowed
    colors, count = coloring.column_coloring(p)
    assert count == 8
    assert_column_coloring(p, colors)


def test_compiled_loop_equals_python():
    p = brusselator_pattern(10)
    pc = p.tocsc()
    arrays = [np.asarray(a, dtype=np.int64) for a in (p.indptr, p.indices, pc.indptr,
                                                      pc.indices)]
    order = np.random.default_rng(0).permutation(p.shape[1]).astype(np.int64)
    a, b = np.full(p.shape[1], -1), np.full(p.shape[1], -1)
    kernel = coloring_kernels.compiled(coloring_kernels.distance2)
    if kernel is None:
        pytest.skip("numba not available")
    assert kernel(*arrays, order, a) == coloring_kernels.distance2(*arrays, order, b)
    assert np.array_equal(a, b)


def random_symmetric(n, density, seed):
    rng = np.random.default_rng(seed)
    a = sp.random(n, n, density=density, random_state=rng, format="csr") != 0
    p = sp.csr_array(a + a.T + sp.eye_array(n, dtype=bool))
    p.sum_duplicates()
    p.sort_indices()
    return p


@pytest.mark.parametrize("seed", range(2))
def test_compiled_star_and_acyclic_equal_python(seed):
    if coloring_kernels.compiled(coloring_kernels.star) is None:
        pytest.skip("numba not available")
    p = random_symmetric(120, 0.04, seed)
    indptr, indices = p.indptr.astype(np.int64), p.indices.astype(np.int64)
    order = np.random.default_rng(seed).permutation(120).astype(np.int64)
    colors = [np.full(120, -1), np.full(120, -1)]
    counts = [coloring_kernels.compiled(coloring_kernels.star)(indptr, indices, order,
                                                                  colors[0]),
              coloring_kernels.star(indptr, indices, order, colors[1])]
    assert counts[0] == counts[1] and np.array_equal(*colors)
    mirror = acyclic._graph(p)[3]
    colors = [np.full(120, -1), np.full(120, -1)]
    trees = [np.arange(indices.size), np.arange(indices.size)]
    kernel = coloring_kernels.compiled(coloring_kernels.acyclic)
    counts = [kernel(indptr, indices, mirror, order, colors[0], trees[0]),
              coloring_kernels.acyclic(indptr, indices, mirror, order, colors[1], trees[1])]
    assert counts[0] == counts[1] and np.array_equal(*colors)


def plain_star(indptr, indices, order):
    """The greedy star coloring by its definition, every neighbor's neighbors scanned
    (what coloring_kernels.star answers from its hub tables): v may not take the color
    of a neighbor w, of an x two steps away through an uncolored w, or of x when w is
    colored and x has another neighbor of w's color."""
    colors = np.full(indptr.size - 1, -1)
    nbrs = [set(indices[indptr[v]:indptr[v + 1]]) - {v} for v in range(colors.size)]
    for v in order:
        forbidden = set()
        for w in nbrs[v]:
            if colors[w] >= 0:
                forbidden.add(colors[w])
            for x in nbrs[w] - {v}:
                if colors[x] < 0:
                    continue
                if colors[w] < 0 or any(colors[y] == colors[w] for y in nbrs[x] - {w}):
                    forbidden.add(colors[x])
        colors[v] = min(set(range(len(forbidden) + 1)) - forbidden)
    return colors


def with_hubs(n, hubs, seed):
    """A random symmetric pattern plus `hubs` dense rows and columns."""
    rng = np.random.default_rng(seed)
    a = (sp.random(n, n, density=0.05, random_state=rng, format="lil") != 0).tolil()
    for h in rng.choice(n, hubs, replace=False):
        a[h, rng.choice(n, int(n * rng.uniform(0.3, 0.9)), replace=False)] = True
    p = sp.csr_array(a)
    p = sp.csr_array(p + p.T + (sp.eye_array(n, dtype=bool) if seed % 2 else 0))
    p.sum_duplicates()
    p.sort_indices()
    return p.indptr.astype(np.int64), p.indices.astype(np.int64)


@pytest.mark.parametrize("hub_degree, table_colors", [(64, 64), (8, 64), (6, 3), (2, 1)])
@pytest.mark.parametrize("seed", range(3))
def test_star_answers_hubs_from_tables_with_the_plain_colors(monkeypatch, hub_degree,
                                                             table_colors, seed):
    # small thresholds put most vertices on the hub tables and most colors past them
    monkeypatch.setattr(coloring_kernels, "HUB_DEGREE", hub_degree)
    monkeypatch.setattr(coloring_kernels, "TABLE_COLORS", table_colors)
    indptr, indices = with_hubs(120, 1 + seed, seed)
    rng = np.random.default_rng(seed)
    for order in (np.argsort(-np.diff(indptr), kind="stable"), rng.permutation(120)):
        colors = np.full(120, -1)
        count = coloring_kernels.star(indptr, indices, order.astype(np.int64), colors)
        assert np.array_equal(colors, plain_star(indptr, indices, order))
        assert count == colors.max() + 1


@pytest.mark.parametrize("seed", range(3))
def test_star_and_acyclic_colorings_are_valid(seed):
    """Both: a distance-1 coloring in which each pair of color classes spans a forest
    (edges = vertices - components; a star coloring is acyclic too). Star: moreover no
    path on four vertices has only two colors."""
    p = random_symmetric(60, 0.06, seed)
    n = p.shape[0]
    dense = p.toarray() & ~np.eye(n, dtype=bool)
    star = coloring.symmetric_coloring(p)
    for colors, count in (star, acyclic.acyclic_coloring(p)):
        assert not np.any(dense & (colors[:, None] == colors[None, :]))
        for a in range(count):
            for b in range(a + 1, count):
                keep = (colors == a) | (colors == b)
                sub = sp.csr_array(dense[np.ix_(keep, keep)])
                ncomp = sp.csgraph.connected_components(sub, directed=False)[0]
                assert sub.nnz // 2 == keep.sum() - ncomp, "a two-colored cycle"
    colors = star[0]
    for u, v in np.argwhere(dense):  # no path u-v-w-x colored a, b, a, b
        for w in np.flatnonzero(dense[v] & (colors == colors[u])):
            if w != u:
                assert not np.any(dense[w] & (colors == colors[v]) & (np.arange(n) != v)), \
                    "a two-colored path on four vertices"
