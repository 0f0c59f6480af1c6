"""vj.sparse_jacobian / vj.sparse_hessian / vj.scipy.jac / sparse Newton: values against
dense vecjac Jacobians and hand-written formulas (1e-12 relative), modes, colors, caching
per input signature, SciPy's solvers, errors."""
import numpy as np
import pytest
import scipy.sparse as sp
from scipy.integrate import solve_ivp
from scipy.optimize import least_squares, root

import vecjac as vj

RNG = np.random.default_rng(1)


def bratu(u):
    h2 = (1.0 / (u.shape[0] + 1)) ** 2
    up = vj.pad(u, [[1, 1]])
    return (up[2:] - 2.0 * up[1:-1] + up[:-2]) / h2 + vj.exp(u)


def bratu_hand(u):
    n = u.shape[0]
    h2 = (1.0 / (n + 1)) ** 2
    off = np.full(n - 1, 1.0 / h2)
    return sp.diags_array([off, -2.0 / h2 + np.exp(u), off], offsets=[-1, 0, 1]).toarray()


def brusselator(y, n=6, alpha=10.0):
    s = vj.reshape(y, (n, n, 2))
    u, v = s[..., 0], s[..., 1]

    def lap(w):
        return (vj.roll(w, 1, 0) + vj.roll(w, -1, 0) + vj.roll(w, 1, 1) + vj.roll(w, -1, 1)
                - 4.0 * w) * alpha
    uuv = u * u * v
    return vj.reshape(vj.stack([1.0 + uuv - 4.4 * u + lap(u), 3.4 * u - uuv + lap(v)], -1),
                      (-1,))


def rosenbrock(x):
    return vj.reduce_sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def rosenbrock_hand(x):
    d = np.zeros_like(x)
    d[:-1] += 1200.0 * x[:-1] ** 2 - 400.0 * x[1:] + 2.0
    d[1:] += 200.0
    return np.diag(d) + np.diag(-400.0 * x[:-1], 1) + np.diag(-400.0 * x[:-1], -1)


def close(a, b):
    a = a.toarray() if sp.issparse(a) else np.asarray(a)
    assert a.shape == b.shape
    assert np.max(np.abs(a - b)) <= 1e-12 * max(1.0, np.max(np.abs(b)))


@pytest.mark.parametrize("mode", ["auto", "fwd", "rev"])
def test_values_against_hand_written_and_dense(mode):
    u = RNG.random(40)
    J = vj.sparse_jacobian(bratu, mode=mode)
    result = J(u)
    assert isinstance(result, sp.csr_array) and result.dtype == np.float64
    close(result, bratu_hand(u))
    assert J.ncolors == 3 and J.mode == ("fwd" if mode == "auto" else mode)
    y = RNG.random(72) + 0.5
    close(vj.sparse_jacobian(brusselator, mode=mode)(y), vj.jacobian(brusselator)(y).numpy())


def test_reverse_wins_on_a_wide_jacobian():
    f = lambda x: vj.stack([vj.reduce_sum(x[:10] ** 2), vj.reduce_sum(vj.sin(x[10:]))])
    J = vj.sparse_jacobian(f)
    x = RNG.random(20)
    close(J(x), vj.jacobian(f)(x).numpy())
    assert J.mode == "rev" and J.ncolors == 1


def test_pattern_and_coloring_are_cached_per_input_signature(monkeypatch):
    import vecjac._src.api.sparse as module
    calls = []
    original = module.trace_jacobian
    monkeypatch.setattr(module, "trace_jacobian",
                        lambda *a: calls.append(1) or original(*a))
    J = vj.sparse_jacobian(bratu)
    for u in (RNG.random(10), RNG.random(10), RNG.random(12), RNG.random(10)):
        close(J(u), bratu_hand(u))
    assert len(calls) == 2  # shapes (10,) and (12,)
    assert J.pattern.shape == (10, 10) and J.pattern.dtype == bool
    text = repr(J)
    assert "10 x 10" in text and "3 colors" in text and "fwd" in text


def test_user_sparsity():
    u = RNG.random(8)
    pattern = sp.diags_array([np.ones(7), np.ones(8), np.ones(7)], offsets=[-1, 0, 1]) != 0
    J = vj.sparse_jacobian(bratu, sparsity=pattern)
    close(J(u), bratu_hand(u))
    with pytest.raises(ValueError, match="sparsity has shape"):
        vj.sparse_jacobian(bratu, sparsity=np.ones((8, 5), bool))(u)
    with pytest.raises(ValueError, match="f returns shape"):
        vj.sparse_jacobian(lambda x: x[1:], sparsity=np.ones((8, 8), bool))(u)


def test_sparse_hessian():
    x = RNG.random(30) * 2 - 1
    H = vj.sparse_hessian(rosenbrock)
    close(H(x), rosenbrock_hand(x))
    close(H(x), vj.hessian(rosenbrock)(x).numpy())
    # tridiagonal: an acyclic coloring needs 2 colors, a star coloring 3 ("auto": fewer)
    assert H.ncolors == 2 and H.mode == "rev-over-rev"
    H = vj.sparse_hessian(rosenbrock, coloring="star")
    close(H(x), rosenbrock_hand(x))
    assert H.ncolors == 3
    # an arrowhead: dense first row and column, diagonal otherwise
    f = lambda x: x[0] * vj.reduce_sum(x[1:] ** 3)
    H = vj.sparse_hessian(f)
    close(H(x), vj.hessian(f)(x).numpy())
    assert H.ncolors <= 3  # a star coloring: distance-2 would need 30


def test_jit_replays_the_products_with_fresh_values():
    J = vj.sparse_jacobian(bratu, jit=True)
    H = vj.sparse_hessian(rosenbrock, jit=True)
    for _ in range(5):  # the trace, the fused segments' warm-up, then compiled replays
        u, x = RNG.random(40), RNG.random(30) * 2 - 1
        close(J(u), bratu_hand(u))
        close(H(x), rosenbrock_hand(x))
    assert "jit" in repr(J) and J.ncolors == 3
    # a second input signature is a second trace, not a wrong replay
    u = RNG.random(25)
    close(J(u), bratu_hand(u))
    # keyword arguments reach f: a different value is a different trace
    g = lambda u, scale=1.0: bratu(u) * scale
    G = vj.sparse_jacobian(g, jit=True)
    u = RNG.random(12)
    close(G(u, scale=2.0), 2.0 * bratu_hand(u))
    close(G(u, scale=3.0), 3.0 * bratu_hand(u))
    y = RNG.random(72) + 0.5
    K = vj.sparse_jacobian(brusselator, mode="rev", jit=True)
    for _ in range(3):
        close(K(y), vj.jacobian(brusselator)(y).numpy())
        y = y + 0.1
    value, _ = vj.sparse_jacobian(bratu, jit=True).value_and_matrix(u)
    np.testing.assert_allclose(value, bratu(vj.constant(u)).numpy(), rtol=1e-14)


@pytest.mark.parametrize("bad,match", [
    (lambda: vj.sparse_jacobian(bratu)(np.ones((3, 4))), "reshape"),
    (lambda: vj.sparse_jacobian(lambda x: vj.cast(x > 0, vj.int32))(np.ones(3)), "floating"),
    (lambda: vj.sparse_jacobian(lambda x: vj.reshape(x, (2, 2)))(np.ones(4)), "1-D"),
    (lambda: vj.sparse_hessian(lambda x: x * 2.0)(np.ones(3)), "scalar"),
    (lambda: vj.sparse_jacobian(bratu, mode="both"), "mode"),
    (lambda: vj.sparse_jacobian(bratu, argnums=(0, 1)), "argnums"),
    (lambda: vj.sparse_jacobian(bratu, sparsity="dense"), "sparsity"),
    (lambda: vj.sparse_jacobian(bratu).pattern, "after the first call"),
    (lambda: vj.sparse_jacobian(bratu, jit="yes"), "jit must be a bool"),
    (lambda: vj.sparse_hessian(rosenbrock, jit=1), "jit must be a bool"),
])
def test_errors(bad, match):
    with pytest.raises((TypeError, ValueError, AttributeError), match=match):
        bad()


# -- SciPy --------------------------------------------------------------------------------------
@pytest.mark.parametrize("sparse", [True, False])
def test_scipy_jac_with_jit_traces_once_for_every_t(sparse):
    calls = []

    def rhs(t, y):
        calls.append(1)
        return brusselator(y, n=4) * (1.0 + 0.1 * t)
    y0 = RNG.random(32) + 0.5
    J = vj.scipy.jac(rhs, argnums=1, sparse=sparse, jit=True)
    plain = vj.scipy.jac(rhs, argnums=1, sparse=sparse)
    for t in (0.0, 0.3, 0.7, 1.1, 2.5):
        want = plain(t, y0)
        close(J(t, y0), want.toarray() if sp.issparse(want) else want)
        y0 = y0 * 1.01
    calls.clear()
    J(3.0, y0)
    assert not calls  # replayed: rhs's Python did not run
    sol = solve_ivp(J.fun, (0.0, 0.05), y0, method="BDF", jac=J, rtol=1e-8, atol=1e-10)
    assert sol.success



@pytest.mark.parametrize("method", ["BDF", "Radau", "LSODA"])
def test_solve_ivp_with_sparse_jacobian(method):
    rhs = lambda t, y: brusselator(y, n=4)
    y0 = RNG.random(32) + 0.5
    J = vj.scipy.jac(rhs, argnums=1, sparse=method != "LSODA")  # LSODA takes dense ones
    sol = solve_ivp(J.fun, (0.0, 0.05), y0, method=method, jac=J, rtol=1e-8, atol=1e-10)
    ref = solve_ivp(lambda t, y: brusselator(vj.constant(y), n=4).numpy(), (0.0, 0.05), y0,
                    method="RK45", rtol=1e-10, atol=1e-12)
    assert sol.success and (sol.njev >= 1 or method == "LSODA")  # LSODA may stay non-stiff
    assert np.allclose(sol.y[:, -1], ref.y[:, -1], rtol=1e-5, atol=1e-7)


def _residuals(x):
    return vj.concat([x[:1] - 2.0, 5.0 * (x[1:] - vj.sqrt(vj.abs(x[:-1])) - 0.5)], 0)


@pytest.mark.parametrize("sparse", [False, True])
def test_least_squares_and_root(sparse):
    x0 = np.ones(12)
    J = vj.scipy.jac(_residuals, sparse=sparse)
    calls = []
    fun = lambda x: calls.append(1) or J.fun(x)
    result = least_squares(fun, x0, jac=J, tr_solver="lsmr" if sparse else "exact")
    assert result.success and np.max(np.abs(result.fun)) < 1e-8
    assert sp.issparse(J(result.x)) == sparse
    sol = root(J.fun, x0, jac=(lambda x: J(x).toarray()) if sparse else J, method="hybr")
    assert sol.success and np.allclose(sol.x, result.x, atol=1e-8)


def test_jac_shares_the_evaluation_with_fun():
    count = []

    def f(x):
        count.append(1)
        return x[1:] * x[:-1]
    J = vj.scipy.jac(f, sparse=True)
    x = np.array([1.0, 2.0, 3.0])
    J(x)
    n = len(count)
    assert np.array_equal(J.fun(x), [2.0, 6.0]) and len(count) == n  # no new evaluation
    J.fun(x + 1.0)
    assert len(count) == n + 1
    with pytest.raises(ValueError, match="1-D"):
        J(np.ones((2, 2)))


# -- Newton ---------------------------------------------------------------------------------------
def test_newton_step_and_flat_hessian_sparse():
    start = np.linspace(-1.0, 1.2, 40)
    x, w = vj.Variable(start.copy()), vj.Variable(np.full(3, 2.0))
    loss = lambda: rosenbrock(x) + vj.reduce_sum(w ** 4)
    H = vj.flat_hessian(loss, [x, w], sparse=True)
    assert sp.issparse(H) and H.shape == (43, 43)
    close(H, vj.flat_hessian(loss, [x, w]).numpy())
    x2, w2 = vj.Variable(start.copy()), vj.Variable(np.full(3, 2.0))
    loss2 = lambda: rosenbrock(x2) + vj.reduce_sum(w2 ** 4)
    for _ in range(3):
        a = vj.newton_step(loss, [x, w], damping=1e-2, sparse=True)
        b = vj.newton_step(loss2, [x2, w2], damping=1e-2, method="solve")
        assert a.method == "solve" and np.isclose(a.loss, b.loss, rtol=1e-12)
    assert np.allclose(x.numpy(), x2.numpy(), rtol=1e-10, atol=1e-12)


# -- jit=True at every replay size threshold (issue 29) -------------------------------------------
# vj.function's plan changes its code at these sizes (float64 elements): fused interpreted
# segments up to 4096 (vecjac/_src/transforms/function/fusion.py MAX_SIZE), temporaries written in place from 8192
# (vecjac/_src/transforms/function/plan.py FREE_BYTES), compiled chains from 16384 (vecjac/_src/transforms/function/chains.py MIN_SIZE; the
# stacked (colors, n) tangents reach it at n / colors). Each side of each, five calls: the
# trace, the NumPy warm-up replays and the compiled ones.
JIT_SIZES = [2000, 4096, 4100, 8192, 8200, 16384, 16400, 20000, 40000]


def scaled_exp(u):
    return 6.0 * vj.exp(u)  # issue 29: calls 2 on gave diag(36 exp(u)) at n = 20000


def mixed(u):  # constants on both sides, a stencil, and the primal reused by the tangent
    e = vj.exp(0.5 * u)
    return 3.0 * e - (2.0 - u) * e / 4.0 + vj.square(vj.pad(u, [[1, 1]])[2:] - u)


@pytest.mark.parametrize("n", JIT_SIZES)
def test_every_jit_entry_point_replays_the_eager_jacobian(n):
    rng = np.random.default_rng(n)
    entries = [
        ("sparse_jacobian", vj.sparse_jacobian(scaled_exp, jit=True),
         vj.sparse_jacobian(scaled_exp), lambda J, u: J(u)),
        ("sparse_jacobian rev", vj.sparse_jacobian(mixed, mode="rev", jit=True),
         vj.sparse_jacobian(mixed, mode="rev"), lambda J, u: J(u)),
        ("sparse_jacobian bratu", vj.sparse_jacobian(bratu, jit=True),
         vj.sparse_jacobian(bratu), lambda J, u: J(u)),
        ("scipy.jac", vj.scipy.jac(lambda t, y: mixed(y) * t, 1, sparse=True, jit=True),
         vj.scipy.jac(lambda t, y: mixed(y) * t, 1, sparse=True), lambda J, u: J(1.5, u)),
        ("sparse_hessian", vj.sparse_hessian(rosenbrock, jit=True),
         vj.sparse_hessian(rosenbrock), lambda J, u: J(u)),
    ]
    for _ in range(5):
        u = rng.random(n) - 0.5
        # an independent check of the reproducer: the diagonal 6 exp(u), in closed form
        got = entries[0][3](entries[0][1], u)
        np.testing.assert_allclose(got.diagonal(), 6.0 * np.exp(u), rtol=1e-15)
        for name, jitted, eager, call in entries:
            want = call(eager, u)
            got = call(jitted, u)
            assert (got != want).nnz == 0, name


def bratu_2d(u, n=100, lam=6.0):
    """The 2-D Bratu residual on an n x n grid (zero boundary), 5-point Laplacian."""
    h2 = (1.0 / (n + 1)) ** 2
    g = vj.pad(vj.reshape(u, (n, n)), [[1, 1], [1, 1]])
    lap = (g[2:, 1:-1] + g[:-2, 1:-1] + g[1:-1, 2:] + g[1:-1, :-2] - 4.0 * g[1:-1, 1:-1]) / h2
    return vj.reshape(lap + lam * vj.exp(g[1:-1, 1:-1]), (-1,))


def test_bratu_newton_converges_the_same_with_and_without_jit():
    """Issue 29's report: with jit, Newton took 19 steps or ended in NaN instead of 5."""
    from scipy.sparse.linalg import spsolve
    steps = {}
    for jit in (False, True):
        J = vj.sparse_jacobian(bratu_2d, jit=jit)
        u = np.zeros(100 * 100)
        for k in range(30):
            r = bratu_2d(vj.constant(u)).numpy()
            if np.linalg.norm(r) < 1e-8:
                break
            u = u - spsolve(J(u).tocsc(), r)
        steps[jit] = k
    assert steps[False] == steps[True] <= 6
