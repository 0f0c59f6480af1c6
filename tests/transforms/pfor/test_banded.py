"""Banded structured loop values (shifted one-hot seeds and their sums): every rule against
the plain loop, the structure kept through a stencil in both modes, the same values as
the dense path, differentiable by tapes outside the loop, and chunked Jacobians written
straight into their result in two chunks."""
import numpy as np
import pytest

import vecjac as vj
from vecjac._src.core.registry import REGISTRY
from vecjac._src.transforms.pfor import pfor as pfor_module
from vecjac._src.transforms.pfor import structured
from vecjac.testing import check_pfor
from vecjac.vectorize import pfor


@pytest.fixture(autouse=True)
def always_structured(monkeypatch):
    """Small sizes: force the structure that large Jacobians get."""
    monkeypatch.setattr(structured, "MIN_DENSE_SIZE", 0)
    monkeypatch.setattr(structured, "ENABLED", True)


RNG = np.random.default_rng(3)
N = 7
V = RNG.standard_normal(N)
V6 = RNG.standard_normal(N - 1)
M = RNG.standard_normal((N, 3))


def hot(i, n=N):
    return vj.one_hot(i, n)


def z(k=1):
    return vj.zeros([k], dtype=vj.float64)


def stencil(u):
    up = vj.concat([u[1:], z()], 0)
    um = vj.concat([z(), u[:-1]], 0)
    return (um - 2.0 * u + up) / 0.25 + 0.5 * u * vj.constant(V)


CASES = {
    "slice": lambda i: hot(i)[1:],
    "slice of the tail": lambda i: hot(i)[:-2] * 3.0,
    "empty slice": lambda i: hot(i)[4:4],
    "concat with zeros after": lambda i: vj.concat([hot(i)[1:], z()], 0),
    "concat with zeros before": lambda i: vj.concat([z(2), hot(i)[:-2]], 0),
    "concat of two bands (stray entries zeroed)": lambda i: vj.concat(
        [hot(i)[:-1], hot(i)[:-1] * 2.0], 0),
    "concat of three pieces": lambda i: vj.concat([hot(i)[2:], z(3), hot(i)[:2] - hot(i)[1:3]], 0),
    "stencil": lambda i: stencil(hot(i)),
    "stencil through numpy": lambda i: np.diff(hot(i), 2, prepend=0.0, append=0.0) / 4.0,
    "sum of shifts, then scale by a vector": lambda i: (hot(i)[1:] + hot(i)[:-1]) *
        vj.constant(V6),
    "scale by a stacked dense value": lambda i: (hot(i)[1:] - hot(i)[:-1]) *
        vj.gather(vj.constant(M[:-1].T), i % 3),
    "scale by a stacked scalar": lambda i: (hot(i)[1:] - hot(i)[:-1]) * vj.cast(i, vj.float64),
    "divide by a vector": lambda i: (hot(i)[1:] - hot(i)[:-1]) / vj.constant(np.abs(V6) + 1.0),
    "one-hot divided by a vector": lambda i: hot(i) / vj.constant(np.abs(V) + 1.0),
    "band times band, same entries": lambda i: (hot(i)[1:] - hot(i)[:-1]) * (
        hot(i)[1:] + 2.0 * hot(i)[:-1]),
    "negate, cast, reshape": lambda i: vj.reshape(vj.cast(-(hot(i, 12)[1:] + hot(i, 12)[:-1]),
                                                          vj.float32), (1, 11)),
    "split (a concat's gradient)": lambda i: vj.split(hot(i) - 2.0 * hot(i)[::1], [3, 4])[1],
    "leading axis of a matrix": lambda i: vj.reshape(hot(i, 12), (4, 3))[1:3] +
        vj.reshape(hot(i, 12), (4, 3))[:2],
    "concat of matrices": lambda i: vj.concat([vj.reshape(hot(i, 12), (4, 3))[1:],
                                              vj.zeros((1, 3))], 0),
    "pad with zeros": lambda i: vj.pad(hot(i)[1:], [[2, 1]]) - vj.pad(hot(i), [[0, 2]]),
    "pad the leading axis of a matrix": lambda i: vj.pad(vj.reshape(hot(i, 12), (4, 3)),
                                                         [[1, 0], [0, 0]]),
    "product rule of one-hots": lambda i: REGISTRY["MulAdd"](
        hot(i), vj.constant(V), vj.constant(M[:, 0]), hot(i) * 2.0),
    "product rule of bands": lambda i: REGISTRY["MulAdd"](
        vj.constant(V6), hot(i)[1:], hot(i)[:-1] - hot(i)[1:], vj.gather(vj.constant(M[:-1].T),
                                                                         i % 3)),
    # the dense path, where the structure would not hold
    "product rule with a dense product": lambda i: REGISTRY["MulAdd"](
        hot(i), vj.constant(V), vj.gather(vj.constant(M.T), i % 3), vj.constant(V)),
    "product rule with inf": lambda i: REGISTRY["MulAdd"](
        hot(i)[1:], vj.constant(np.r_[np.inf, V6[1:]]), hot(i)[:-1], vj.constant(V6)),
    "pad another axis": lambda i: vj.pad(vj.reshape(hot(i, 12), (4, 3)), [[0, 0], [1, 0]]),
    "pad with ones": lambda i: vj.pad(hot(i), [[1, 0]], constant_values=1.0),
    "slice of another axis": lambda i: vj.reshape(hot(i, 12), (4, 3))[:, 1:],
    "strided slice": lambda i: hot(i)[::2],
    "concat along another axis": lambda i: vj.concat([vj.reshape(hot(i, 12), (4, 3)),
                                                     vj.zeros((4, 1))], 1),
    "concat with a nonzero piece": lambda i: vj.concat([hot(i)[1:], vj.ones([1])], 0),
    "divide by a vector holding zero": lambda i: (hot(i)[1:] - hot(i)[:-1]) / vj.constant(
        np.r_[0.0, np.abs(V6[1:]) + 1.0]),
    "scale by inf": lambda i: (hot(i)[1:] - hot(i)[:-1]) * vj.constant(np.r_[np.inf, V6[1:]]),
    "band plus dense": lambda i: (hot(i)[1:] - hot(i)[:-1]) + vj.gather(vj.constant(M[:-1].T),
                                                                       i % 3),
    "out-of-range index": lambda i: vj.one_hot(i + 3, N)[1:] - vj.one_hot(i + 3, N)[:-1],
}


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # 0 / 0 and 0 * inf, as in the loop
@pytest.mark.parametrize("name", sorted(CASES))
def test_banded_rules_match_the_loop(name):
    check_pfor(CASES[name], N, rtol=0, atol=0)


def test_slice_gradient_matches_the_loop():
    """The reverse mode's layout ops: a slice's gradient pads, a concat's splits."""
    x = vj.constant(RNG.standard_normal(N))

    def loop_fn(i):
        with vj.GradientTape() as tape:
            tape.watch(x)
            y = stencil(x)
        return tape.gradient(y, x, output_gradients=hot(i))
    check_pfor(loop_fn, N, rtol=0, atol=0)


def _bratu(n, lam=1.0):
    h2 = (1.0 / (n + 1)) ** 2

    def F(u):
        z = vj.zeros([1], dtype=u.dtype)
        up = vj.concat([u[1:], z], 0)
        um = vj.concat([z, u[:-1]], 0)
        return (um - 2.0 * u + up) / h2 + lam * vj.exp(u)

    def jacobian(u):
        return (np.diag(-2.0 / h2 + lam * np.exp(u)) + np.diag(np.full(n - 1, 1.0 / h2), 1)
                + np.diag(np.full(n - 1, 1.0 / h2), -1))
    return F, jacobian


@pytest.mark.parametrize("mode", ["fwd", "rev"])
@pytest.mark.parametrize("residual", ["bratu", "burgers"])
def test_a_stencil_stays_banded_in_both_modes(monkeypatch, mode, residual):
    F, _ = (_bratu if residual == "bratu" else _burgers)(9)
    kinds = []
    process = pfor_module.PFor.process

    def spy(self, op, tensors, attrs):
        out = process(self, op, tensors, attrs)
        for o in out if isinstance(out, tuple) else (out,):
            kinds.append((op.name, type(o).__name__))
        return out
    monkeypatch.setattr(pfor_module.PFor, "process", spy)
    vj.jacobian(F, mode=mode)(np.linspace(0.0, 0.1, 9))
    after_seed = kinds[[k for k, (name, _) in enumerate(kinds) if name == "OneHot"][0] + 1:]
    assert all(kind in ("OneHotStacked", "BandStacked") for _, kind in after_seed), kinds
    assert ("AddV2", "BandStacked") in after_seed


def _burgers(n, nu=0.1):
    h = 1.0 / (n + 1)

    def F(u):
        z = vj.zeros([1], dtype=u.dtype)
        up = vj.concat([u[1:], z], 0)
        um = vj.concat([z, u[:-1]], 0)
        return u * (up - um) / (2 * h) - nu * (um - 2.0 * u + up) / (h * h) + vj.sin(u) * up

    def jacobian(u):
        up, um = np.r_[u[1:], 0.0], np.r_[0.0, u[:-1]]
        main = (up - um) / (2 * h) + 2 * nu / h ** 2 + np.cos(u) * up
        upper = u[:-1] / (2 * h) - nu / h ** 2 + np.sin(u[:-1])
        lower = -u[1:] / (2 * h) - nu / h ** 2
        return np.diag(main) + np.diag(upper, 1) + np.diag(lower, -1)
    return F, jacobian


@pytest.mark.parametrize("residual", [_bratu, _burgers])
@pytest.mark.parametrize("mode", ["fwd", "rev"])
def test_banded_jacobian_equals_the_dense_path(monkeypatch, mode, residual):
    """The same numbers as dense seeds give, exactly (the rules do the dense arithmetic);
    Burgers' products run the product rule (MulAdd) on bands in forward mode."""
    n = 40
    F, jacobian = residual(n)
    u = np.linspace(0.0, 0.3, n)
    banded = vj.jacobian(F, mode=mode)(u).numpy()
    monkeypatch.setattr(structured, "ENABLED", False)
    dense = vj.jacobian(F, mode=mode)(u).numpy()
    np.testing.assert_array_equal(banded, dense)
    np.testing.assert_allclose(banded, jacobian(u), rtol=1e-12, atol=1e-9)


def test_the_banded_nonzeros_are_differentiable_by_an_outer_tape(monkeypatch):
    """A Hessian (the tape's Jacobian of a recorded gradient) of a stencil energy, and the
    gradient of a Jacobian's weighted sum: the outer tapes see d through the rules."""
    n = 12
    W = RNG.standard_normal((n, n))
    x = vj.constant(np.linspace(-0.5, 0.5, n))

    def energy(u):
        return vj.reduce_sum(stencil_n(u) ** 2 * 0.5 + vj.exp(u))

    def stencil_n(u):
        return vj.concat([z(), u[:-1]], 0) - 2.0 * u + vj.concat([u[1:], z()], 0)

    def weighted(u):
        with vj.GradientTape() as inner:
            inner.watch(u)
            y = stencil_n(u) * u
        return vj.reduce_sum(inner.jacobian(y, u) * vj.constant(W))

    results = []
    for enabled in (True, False):
        monkeypatch.setattr(structured, "ENABLED", enabled)
        H = vj.hessian(energy)(x).numpy()
        with vj.GradientTape() as outer:
            outer.watch(x)
            s = weighted(x)
        results.append((H, outer.gradient(s, x).numpy()))
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(results[0][1], results[1][1], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("mode", ["fwd", "rev"])
def test_a_budgeted_banded_jacobian_runs_in_two_chunks_into_its_result(monkeypatch, mode):
    """The first chunk is sized from the estimate, the rest from what it used (a few
    numbers per iteration): one more chunk, written straight into the result."""
    n = 300
    F, jacobian = _bratu(n)
    u = np.linspace(0.0, 0.1, n)
    chunks = []
    run_chunk = pfor_module._run_chunk

    def spy(*args, **kwargs):
        out = run_chunk(*args, **kwargs)
        chunks.append((args[1], [type(x).__name__ for x in out[1]]))
        return out
    monkeypatch.setattr(pfor_module, "_run_chunk", spy)
    vj.set_memory_budget(256 * 1024)
    try:
        J = vj.jacobian(F, mode=mode)
        J(u)
        chunks.clear()
        out = J(u).numpy()
    finally:
        vj.set_memory_budget(None)
    np.testing.assert_allclose(out, jacobian(u), rtol=1e-12)
    assert len(chunks) == 2 and sum(c[0] for c in chunks) == n, chunks
    assert chunks[0][1] == ["BandStacked"]  # kept structured for write_rows


def test_chunks_of_one_hot_and_dense_outputs_fill_the_result(monkeypatch):
    """write_rows of a one-hot output (x * v), and dense chunks, in a budgeted loop."""
    n = 200
    v = RNG.standard_normal(n)
    u = RNG.standard_normal(n)
    vj.set_memory_budget(64 * 1024)
    try:
        diag = vj.jacobian(lambda x: x * vj.constant(v), mode="rev")(u).numpy()
        dense_f = vj.jacobian(lambda x: vj.exp(x) * vj.reduce_sum(x), mode="rev")
        dense = dense_f(u).numpy()
    finally:
        vj.set_memory_budget(None)
    np.testing.assert_array_equal(diag, np.diag(v))
    expected = np.diag(np.exp(u) * u.sum()) + np.exp(u)[:, None]
    np.testing.assert_allclose(dense, expected, rtol=1e-12)


def test_a_traced_function_rechecks_the_zeros_of_a_joined_piece():
    """vj.function replays a banded loop only while the invariant piece is zeros."""
    def f(piece):
        return pfor(lambda i: vj.concat([hot(i)[1:], piece], 0) * 2.0, N)

    traced = vj.function(f)
    zeros, ones = np.zeros(1), np.ones(1)
    for arg in (zeros, ones, zeros, ones):
        np.testing.assert_array_equal(traced(vj.constant(arg)).numpy(),
                                      f(vj.constant(arg)).numpy())
