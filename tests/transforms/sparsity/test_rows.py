"""The fast row operations of vecjac/_src/transforms/sparsity/rows.py against scipy.sparse
on random patterns: uniform rows, uneven rows (padded blocks), a dense row (no block:
scipy's way), missing rows, duplicates between the parts of a union."""
import numpy as np
import pytest
import scipy.sparse as sp

from vecjac._src.transforms.sparsity import patterns, rows


def random_pattern(rng, m, n, kind):
    if kind == "uniform":
        width = int(rng.integers(1, 4))
        cols = np.sort(rng.choice(n, size=(m, width)), axis=1)
        dense = np.zeros((m, n), dtype=bool)
        dense[np.repeat(np.arange(m), width), cols.ravel()] = True
    elif kind == "uneven":
        dense = rng.random((m, n)) < 0.15
    else:  # one dense row among sparse ones
        dense = rng.random((m, n)) < 0.05
        dense[0] = True
    return sp.csr_array(dense)


def assert_same_pattern(a, b):
    assert a.shape == b.shape
    assert np.array_equal(a.toarray(), b.toarray())
    assert a.nnz == np.count_nonzero(b.toarray())  # no duplicates
    rows_sorted = all(np.all(np.diff(a.indices[a.indptr[i]:a.indptr[i + 1]]) > 0)
                      for i in range(a.shape[0]))
    if a.has_sorted_indices:  # the flag may say "unsorted" of sorted rows, never the reverse
        assert rows_sorted
    a.check_format(full_check=True)
    c = rows.canonical(a)
    assert c.has_sorted_indices and np.array_equal(c.toarray(), b.toarray())
    assert all(np.all(np.diff(c.indices[c.indptr[i]:c.indptr[i + 1]]) > 0)
               for i in range(c.shape[0]))


@pytest.mark.parametrize("kind", ["uniform", "uneven", "dense-row"])
@pytest.mark.parametrize("seed", range(4))
def test_take_rows_and_union_against_scipy(kind, seed):
    rng = np.random.default_rng(seed)
    m, n = 40, 30
    p = random_pattern(rng, m, n, kind)
    q = random_pattern(rng, m, n, "uniform" if seed % 2 else kind)
    src = rng.integers(-1, m, size=55)  # -1: an empty row
    expect = sp.csr_array(np.where((src >= 0)[:, None], p.toarray()[np.maximum(src, 0)],
                                   False))
    assert_same_pattern(patterns.take_rows(p, src), expect)
    assert_same_pattern(patterns.union([p, q, p], m, n), sp.csr_array(p.toarray() | q.toarray()))
    assert_same_pattern(rows.vstack([p, q], n), sp.csr_array(np.vstack([p.toarray(), q.toarray()])))


def test_a_dense_row_is_not_blocked():
    p = random_pattern(np.random.default_rng(0), 50, 1000, "dense-row")
    assert rows.block(p) is None and rows.union([p, p.copy()], 50, 1000) is None
