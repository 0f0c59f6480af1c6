"""The colorings of vecjac/_src/api/coloring.py, bicoloring.py and acyclic.py on their own:
validity checked by brute force (no two columns of one color share a row; every entry
recoverable), color counts on patterns whose optimum is known, and the compiled loops
against their uncompiled selves."""
import numpy as np
import pytest
import scipy.sparse as sp

from vecjac._src.api import coloring, coloring_kernels


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
