"""Every sparse Jacobian mode (fwd, rev, bidirectional, auto) and every Hessian coloring
(star, acyclic, auto) on random sparse structures (banded, block, arrowhead, random),
against the dense vj.jacobian / vj.hessian; the arrowhead's pass counts; bad options.

The functions are sums of gathers, y_i = sum_k W[i, k] tanh(x[cols[i, k]]) (padding
gathers a constant zero), so their Jacobian pattern is exactly the drawn structure S;
the Hessians are those of h(x) = sum(y^2) / 2 + sum(sin(x)): pattern S^T S plus the
diagonal."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import vecjac as vj
from vecjac._src.api import bicoloring, coloring_kernels

MODES = ["fwd", "rev", "bidirectional", "auto"]
COLORINGS = ["star", "acyclic", "auto"]


def structure(kind, m, n, rng):
    s = np.zeros((m, n), dtype=bool)
    if kind == "banded":
        lo, hi = rng.integers(0, 3, size=2)
        for i in range(m):
            s[i, max(0, i - lo):min(n, i + hi + 1)] = True
    elif kind == "block":
        size = int(rng.integers(1, 5))
        for i in range(m):
            b = (i * n // max(m, 1)) // size * size
            s[i, b:b + size] = True
    elif kind == "arrowhead":
        s[0, :] = True
        s[:, 0] = True
        s[np.arange(min(m, n)), np.arange(min(m, n))] = True
    else:
        s = rng.random((m, n)) < rng.uniform(0.05, 0.3)
    s[np.arange(m), rng.integers(0, n, m)] |= ~s.any(axis=1)  # no empty rows
    return s


def gathers(s, rng):
    """f(x) = sum_k W[i, k] tanh(x[cols[i, k]]): Jacobian pattern exactly s."""
    m, n = s.shape
    width = max(1, int(s.sum(axis=1).max()))
    cols = np.full((m, width), n)  # n: the padding zero
    weights = np.zeros((m, width))
    for i in range(m):
        js = np.flatnonzero(s[i])
        cols[i, :js.size] = js
        weights[i, :js.size] = rng.uniform(0.5, 2.0, js.size)

    def f(x):
        padded = vj.concat([vj.tanh(x), vj.zeros([1], dtype=x.dtype)], 0)
        return vj.reduce_sum(weights * vj.gather(padded, cols), axis=1)
    return f


def dense_close(a, b):
    scale = max(1.0, float(np.max(np.abs(b))))
    assert np.max(np.abs(a.toarray() - b)) <= 1e-12 * scale


@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
@given(kind=st.sampled_from(["banded", "block", "arrowhead", "random"]),
       m=st.integers(1, 16), n=st.integers(2, 16), seed=st.integers(0, 2 ** 31))
def test_every_mode_and_coloring_against_the_dense_answer(kind, m, n, seed):
    rng = np.random.default_rng(seed)
    s = structure(kind, m, n, rng)
    f = gathers(s, rng)
    x = rng.uniform(-1.0, 1.0, n)
    dense = vj.jacobian(f)(x).numpy()
    products = {}
    for mode in MODES:
        J = vj.sparse_jacobian(f, mode=mode, check=False)
        dense_close(J(x), dense)
        assert J.pattern.nnz == s.sum()
        products[mode] = J.ncolors
    assert products["auto"] <= min(products["fwd"], products["rev"])
    h = lambda x: 0.5 * vj.reduce_sum(f(x) ** 2) + vj.reduce_sum(vj.sin(x))  # noqa: E731
    hess = vj.hessian(h)(x).numpy()
    counts = {}
    for coloring in COLORINGS:
        H = vj.sparse_hessian(h, coloring=coloring, check=False)
        dense_close(H(x), hess)
        counts[coloring] = H.ncolors
    assert counts["auto"] == min(counts["star"], counts["acyclic"])


def arrowhead(x):
    """One dense row, one dense column, the diagonal."""
    head = vj.reshape(vj.reduce_sum(x * x), (1,))
    return vj.concat([head, x[0] * x[1:] + x[1:] ** 3], 0)


def test_arrowhead_jacobian_in_three_passes():
    x = np.random.default_rng(0).uniform(0.5, 1.5, 300)
    dense = vj.jacobian(arrowhead)(x).numpy()
    for mode, jit in (("bidirectional", False), ("auto", False), ("auto", True)):
        J = vj.sparse_jacobian(arrowhead, mode=mode, jit=jit)
        for scale in (1.0, 2.0):  # jit: the replay sees the new values
            dense_close(J(x * scale), vj.jacobian(arrowhead)(x * scale).numpy())
        assert J.mode == "bidirectional" and J.ncolors <= 3
    J = vj.sparse_jacobian(arrowhead, mode="fwd")
    dense_close(J(x), dense)
    assert J.ncolors == 300  # the dense row: one color per column


def test_without_numba_a_large_bicoloring_runs_when_it_saves_products(monkeypatch):
    # the Python loop's own bound (here 1000 steps, far below this arrowhead's) gives way
    # to what the 300 forward products it replaces would cost
    monkeypatch.setattr(coloring_kernels, "available", lambda: False)
    monkeypatch.setattr(bicoloring, "MAX_PYTHON_WORK", 1000)
    x = np.random.default_rng(2).uniform(0.5, 1.5, 300)
    J = vj.sparse_jacobian(arrowhead)
    dense_close(J(x), vj.jacobian(arrowhead)(x).numpy())
    assert J.mode == "bidirectional" and J.ncolors <= 3
    assert bicoloring.bicoloring(J.pattern) is None  # alone, the bound holds


def test_arrowhead_hessian_in_three_products():
    x = np.random.default_rng(0).uniform(0.5, 1.5, 300)
    h = lambda x: vj.reduce_sum(x * x * x[0]) + vj.reduce_sum(x ** 4)  # noqa: E731
    hess = vj.hessian(h)(x).numpy()
    for coloring in COLORINGS:
        H = vj.sparse_hessian(h, coloring=coloring)
        dense_close(H(x), hess)
        assert H.ncolors <= 3


def test_acyclic_coloring_of_a_tridiagonal_hessian_needs_two_colors():
    h = lambda x: vj.reduce_sum((x[1:] - x[:-1] ** 2) ** 2)  # noqa: E731
    x = np.random.default_rng(1).uniform(-1.0, 1.0, 200)
    hess = vj.hessian(h)(x).numpy()
    H = vj.sparse_hessian(h, coloring="acyclic", jit=True)
    for _ in range(2):
        dense_close(H(x), hess)
    assert H.ncolors == 2
    S = vj.sparse_hessian(h, coloring="star")
    dense_close(S(x), hess)
    assert S.ncolors == 3


@pytest.mark.parametrize("bad", ["forward", "bi", None, 2])
def test_bad_mode(bad):
    with pytest.raises(ValueError, match="mode must be one of"):
        vj.sparse_jacobian(arrowhead, mode=bad)


@pytest.mark.parametrize("bad", ["distance2", "ACYCLIC", None])
def test_bad_coloring(bad):
    with pytest.raises(ValueError, match="coloring must be one of"):
        vj.sparse_hessian(lambda x: vj.reduce_sum(x), coloring=bad)


def test_auto_skips_the_bicoloring_of_even_patterns(monkeypatch):
    """A band of 13 (13 colors either way, no long row or column): "auto" stays
    unidirectional without paying for the bipartite star coloring."""
    def refuse(p, alternative=None):
        raise AssertionError("bicoloring attempted")
    monkeypatch.setattr(bicoloring, "bicoloring", refuse)
    band = lambda x: sum(vj.roll(x, k, 0) * (k + 1.0) for k in range(-6, 7))  # noqa: E731
    x = np.random.default_rng(0).uniform(-1.0, 1.0, 60)
    J = vj.sparse_jacobian(band)
    dense_close(J(x), vj.jacobian(band)(x).numpy())
    assert J.mode == "fwd" and J.ncolors >= 13
