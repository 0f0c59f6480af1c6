"""Every cache of the package, with its key (docs/ARCHITECTURE.md, "Caches"): for each,
every input its result depends on is changed, and the cached result is compared with a
computation that has no cache (a fresh object, the dense Jacobian, the eager call).
A cache added to the package belongs in CACHES and gets a test here."""
import functools

import numpy as np
import pytest
import scipy.integrate as si

import vecjac as vj
from vecjac._src.api import sparse as sparse_api
from vecjac._src.api.scipy import ivp_backward, sparse_solve
from vecjac._src.ops.array import onehot
from vecjac._src.ops.linalg import einsum
from vecjac._src.transforms.function import chains
from vecjac._src.transforms.pfor import structured
from vecjac._src.transforms.tape import jacobians as tape_jacobians

RNG = np.random.default_rng(8)

# name -> what its result depends on (the key); the tests below change each
CACHES = {
    "vj.function traces": "argument shapes and dtypes; Python values exactly; containers "
                          "by content; Variables and objects by identity; guards",
    "sparse_jacobian / sparse_hessian plans": "argument shape and dtype; other arguments "
                                              "by value (int/bool arrays by content); "
                                              "float arguments whose values were read",
    "sparse jit traces": "the plan (and vj.function's key)",
    "flat_hessian / newton_step sparse plans": "loss_fn, the variables' identity, shape, "
                                               "dtype; checked by a random product",
    'jacobian(mode="auto") mode and output sizes': "argument shapes and dtypes, other "
                                                   "arguments by value",
    "vj.scipy.jac last point": "every argument by value; unknown objects never reused",
    "implicit sparse plans": "one solver call's residual; checked against "
                             "vj.sparse_jacobian's matrix once",
    "sparse LU of the last matrix": "the pattern object and the values by content",
    "solve_ivp first run": "y0, times and float args by content; used once",
    "solve_ivp forward runs for reverse mode": "the op's fun (identity), y0, times and float "
                                               "args by content",
    "structured.finite": "the tensor and its value array (identity)",
    "pure functions (lru_cache, identity rows)": "all their arguments (hashable values)",
    "holomorphic=True checks": "argument shapes and dtypes, other arguments and keywords "
                               "by value (vj.function's key)",
    "vj.function chain kernels": "the chain's generated source (numba keys the types)",
}


def test_every_cache_is_listed_in_the_architecture_page():
    import pathlib
    page = (pathlib.Path(vj.__file__).parents[1] / "docs" / "ARCHITECTURE.md").read_text()
    for name in CACHES:
        assert name.split(" (")[0].split(" / ")[0] in page, name


# -- vj.function ---------------------------------------------------------------------------
def test_function_traces():
    def f(x, s, opts, v):
        y = x * s + v
        return -y if opts["neg"] else y
    g = vj.function(f)
    v1, v2 = vj.Variable(1.0), vj.Variable(0.0)
    calls = [(np.ones(2), 2.0, {"neg": False}, v1), (np.ones(3), 2.0, {"neg": False}, v1),
             (np.ones(2, np.float32), 2.0, {"neg": False}, v1),
             (np.ones(2), -0.0, {"neg": False}, v1), (np.ones(2), 2.0, {"neg": True}, v1),
             (np.ones(2), 2.0, {"neg": False}, v2), (2 * np.ones(2), 2.0, {"neg": False}, v1)]
    for args in calls + calls:
        np.testing.assert_array_equal(g(*args).numpy(), f(*args).numpy())
    v1.assign(5.0)  # read at call time
    np.testing.assert_array_equal(g(*calls[0]).numpy(), f(*calls[0]).numpy())
    h = vj.function(lambda x: x * 2.0 if float(vj.reduce_sum(x)) > 0 else x * 3.0)
    for x in (np.ones(2), -np.ones(2), np.ones(2)):  # a guard, re-checked at replay
        np.testing.assert_array_equal(h(x).numpy(), (x * 2.0 if x.sum() > 0 else x * 3.0))


# -- sparse plans, jit traces, variables' plans -------------------------------------------
@pytest.mark.parametrize("jit", [False, True])
def test_sparse_plans(jit):
    f = lambda x, k, idx, p, flag=True: (vj.roll(x, k, 0) * vj.gather(x, idx) * p[0]
                                         if flag else x * p[1])
    J = vj.sparse_jacobian(f, jit=jit)
    x = RNG.random(5) + 0.5
    base = (1, np.arange(5), np.array([2.0, 3.0]))
    variants = [((x,) + base, {}), ((RNG.random(6),) + (1, np.arange(6), base[2]), {}),
                ((x.astype(np.float32),) + base, {}), ((x, 2) + base[1:], {}),
                ((x, 1, np.arange(5)[::-1].copy(), base[2]), {}),
                ((x, 1, np.arange(5), np.array([-1.0, 4.0])), {}), ((x,) + base, {"flag": False})]
    for args, kw in variants + variants:
        want = vj.jacobian(lambda v: f(v, *args[1:], **kw))(args[0]).numpy()
        got = J(*args, **kw).toarray()
        np.testing.assert_allclose(got, want, rtol=1e-5 if got.dtype == np.float32 else 1e-12)


def test_variables_sparse_hessian_plans():
    for shape in ((3,), (3,), (4,)):
        idx = np.arange(shape[0])
        w = vj.Variable(RNG.random(shape) + 0.5)
        loss = lambda: vj.reduce_sum(vj.gather(w, idx) * w ** 2)
        H = vj.flat_hessian(loss, [w], sparse=True).toarray()
        np.testing.assert_allclose(H, vj.flat_hessian(loss, [w]).numpy(), rtol=1e-12)
    idx[:] = idx[::-1].copy()  # what loss_fn closes over changed: the check catches it
    with pytest.raises(ValueError, match="stale"):
        vj.flat_hessian(loss, [w], sparse=True)


# -- jacobian's learned mode -------------------------------------------------------------
def test_jacobian_auto_mode():
    f = lambda x, n: vj.tile(vj.reduce_sum(x * x, keepdims=True), [n])
    J = vj.jacobian(f)
    for x, n in ((np.ones(3), 1), (np.ones(3), 50), (np.ones(4), 50), (np.ones(3), 1)):
        np.testing.assert_allclose(J(x, n).numpy(), np.tile(2 * x, (n, 1)))


# -- vj.scipy.jac's last point -----------------------------------------------------------
def test_scipy_jac_last_point():
    f = lambda x, p: x * p["s"] + np.sum(x)
    J = vj.scipy.jac(f)
    p = {"s": 2.0}
    for x, s in ((np.ones(2), 2.0), (np.ones(2), 3.0), (2 * np.ones(2), 3.0)):
        p["s"] = s
        np.testing.assert_allclose(J.fun(x, p), x * s + x.sum())
        np.testing.assert_allclose(J(x, p), s * np.eye(2) + 1.0)


# -- structured seeds' finiteness memo ----------------------------------------------------
def test_structured_finiteness_follows_the_value():
    w = vj.Variable(np.eye(300) * 2.0)

    def jac(use_pfor):
        with vj.GradientTape(persistent=True) as tape:
            x = vj.constant(np.ones(300))
            tape.watch(x)
            y = vj.linalg.matvec(w, x)
        return tape.jacobian(y, x, experimental_use_pfor=use_pfor).numpy()
    np.testing.assert_array_equal(jac(True), w.numpy())
    value = w.numpy().copy()
    value[0, 1] = np.nan  # a new value: NaN must reach the Jacobian as in the plain loop
    w.assign(value)
    np.testing.assert_array_equal(jac(True), jac(False))


def test_structured_divisor_and_zeros_checks_follow_the_value():
    """finite_nonzero (a banded numerator's divisor) and all_zeros (a piece joined to a
    band) are remembered per value array: a Variable's new value is checked again."""
    n = 300
    w = vj.Variable(np.full(n - 1, 2.0))
    piece = vj.Variable(np.zeros(1))

    def loop_fn(i):
        hot = vj.one_hot(i, n)
        return vj.concat([(hot[1:] - hot[:-1]) / w, piece.read_value()], 0)
    for w_value, piece_value in ((2.0, 0.0), (0.0, 0.0), (2.0, 1.0), (2.0, 0.0)):
        w.assign(np.full(n - 1, w_value))
        piece.assign(np.full(1, piece_value))
        with np.errstate(divide="ignore", invalid="ignore"):
            got = vj.vectorize.pfor(loop_fn, n).numpy()
            want = vj.vectorize.for_loop(loop_fn, n).numpy()
        np.testing.assert_array_equal(got, want)


# -- pure functions: keyed by all their arguments, results read-only ---------------------
@pytest.mark.parametrize("fn", [einsum._parse_equation, onehot._column_seeds,
                                tape_jacobians._probe_weights])
def test_pure_caches_are_lru_caches_of_their_arguments(fn):
    assert isinstance(fn, functools._lru_cache_wrapper)


def test_identity_rows_are_read_only_and_keyed_by_all_arguments():
    a = structured.seed_rows(3, 4, 1, np.float64)
    b = structured.seed_rows(3, 4, 0, np.float64)
    c = structured.seed_rows(3, 4, 1, np.float32)
    np.testing.assert_array_equal(a, np.eye(3, 4, k=1))
    np.testing.assert_array_equal(b, np.eye(3, 4))
    assert c.dtype == np.float32 and not a.flags.writeable
    assert sparse_api.CHECKED_CALLS >= 1


# -- vj.scipy.optimize's sparse plans and solve_ivp's first run ----------------------------
def test_implicit_sparse_plan():
    # the plan lives in one call's Problem; under vectorized_map the iterations share it:
    # each iteration's sparse derivative equals the dense one
    def chain(x, th):
        left = vj.concat([vj.zeros(1, dtype=x.dtype), x[:-1]], axis=0)
        return 3.0 * x + vj.tanh(x) - 0.5 * left - th
    thetas = RNG.uniform(-1, 1, (2, 6))

    def derivative(sparse):
        return vj.vectorized_map(lambda th: vj.grad(lambda t: vj.reduce_sum(
            vj.scipy.optimize.root(chain, np.zeros(6), args=(t,), sparse=sparse,
                                   tol=1e-13).x ** 2))(th), thetas).numpy()
    np.testing.assert_allclose(derivative(True), derivative(False), rtol=1e-10)


def test_sparse_lu_of_the_last_matrix():
    pattern = sparse_solve.SparsePattern(np.eye(3) + np.eye(3, k=1))
    b = np.array([1.0, 2.0, 3.0])
    for values in ([2.0, 1.0, 3.0, 1.0, 4.0], [2.0, 1.0, 3.0, 1.0, 5.0],
                   [2.0, 1.0, 3.0, 1.0, 4.0]):
        dense = pattern.matrix(values).toarray()
        np.testing.assert_allclose(sparse_solve.sparse_solve(pattern, np.array(values), b)
                                   .numpy(), np.linalg.solve(dense, b), rtol=1e-14)
        np.testing.assert_allclose(sparse_solve.sparse_solve(pattern, np.array(values), b,
                                                             transpose=True).numpy(),
                                   np.linalg.solve(dense.T, b), rtol=1e-14)
    with pytest.raises(ValueError, match="singular"):
        sparse_solve.sparse_solve(pattern, np.array([2.0, 1.0, 0.0, 1.0, 4.0]), b)


def test_solve_ivp_first_run():
    def f(t, y, k):
        return -k * y + vj.sin(t)
    for y0, span, k in (([1.0], (0.0, 1.0), 0.5), ([2.0], (0.0, 1.0), 0.5),
                        ([1.0], (0.0, 2.0), 0.5), ([1.0], (0.0, 1.0), 0.7)):
        got = vj.scipy.integrate.solve_ivp(f, span, y0, args=(np.array(k),))
        ref = si.solve_ivp(lambda t, y: -k * y + np.sin(t), span, y0)
        np.testing.assert_array_equal(got.t, ref.t)
        np.testing.assert_allclose(got.y.numpy(), ref.y, rtol=1e-12)


@pytest.mark.parametrize("kind", ["interpolated", "checkpoint"])
def test_solve_ivp_forward_runs_kept_for_reverse_mode(kind, monkeypatch):
    # the op keeps its forward run in its memo under a tape; the backward pass reads it
    # for the same system, y0, times and args only: any change runs the forward again,
    # and gives what a backward pass without the memo gives
    def f(t, y, k):
        return -k * y * y + vj.sin(t)
    k = vj.constant(np.array(0.5))
    with vj.GradientTape() as tape:
        tape.watch(k)
        vj.scipy.integrate.solve_ivp(f, (0.0, 1.0), [1.0], t_eval=[0.5, 1.0], args=(k,),
                                     adjoint=kind, rtol=1e-8, atol=1e-10)
    entry = next(e for e in tape._entries if e[0].name == "SolveIvp")
    memo, fun = entry[3]["memo"], entry[3]["fun"]
    assert len(memo["trajectories"]) == 1
    y0, t, k0 = (np.asarray(x._value) for x in entry[1])
    runs = []
    original = ivp_backward.run
    monkeypatch.setattr(ivp_backward, "run", lambda *a, **kw: runs.append(
        (float(a[2]), float(a[3]))) or original(*a, **kw))

    def other(s, y, k):  # another system
        return -k * y * y + vj.cos(s)
    for system, y0_, t_, k_, kept in ((fun, y0, t, k0, True), (fun, y0 + 0.5, t, k0, False),
                                      (fun, y0, t * 0.9, k0, False),
                                      (fun, y0, t, k0 + 0.25, False),
                                      (other, y0, t, k0, False)):
        problem = ivp_backward.AdjointProblem(
            lambda s, y, k, system=system: system(s, y, k), "RK45",
            (("atol", 1e-10), ("rtol", 1e-8)), 1.0, kind, 10, "test", source=system)
        runs.clear()
        got = ivp_backward.adjoint_pass(problem, y0_, t_, [k_], np.ones((1, 3, 1)), memo)
        # a run over the whole range (t0 to t_end = 1) is the forward run again
        # ("checkpoint" re-integrates its segments either way)
        assert ((0.0, 1.0) in runs) is not kept
        fresh = ivp_backward.adjoint_pass(problem, y0_, t_, [k_], np.ones((1, 3, 1)), None)
        for a, b in zip(got, fresh):
            np.testing.assert_allclose(a, b, rtol=1e-6)


# -- holomorphic=True: checked once per signature ---------------------------------------------
def test_holomorphic_check_is_keyed_by_every_argument():
    def f(z, conjugate, scale=1.0):  # holomorphic unless `conjugate`
        return (vj.math.conj(z) if conjugate else z) * scale
    jac = vj.jacfwd(f, holomorphic=True)
    z = np.array([1.0 + 2.0j, -0.5j])
    np.testing.assert_allclose(jac(z, False).numpy(), np.eye(2))
    with pytest.raises(ValueError, match="not holomorphic"):  # another flag: checked again
        jac(z, True)
    np.testing.assert_allclose(jac(z, False, scale=2.0).numpy(), 2 * np.eye(2))  # keyword
    with pytest.raises(ValueError, match="not holomorphic"):
        jac(z.astype(np.complex64), True, scale=2.0)  # another dtype
    with pytest.raises(ValueError, match="not holomorphic"):
        jac(np.ones(3, complex), True)  # another shape


# -- vj.function's compiled chains ---------------------------------------------------------
def test_chain_kernels_are_shared_by_source_and_only_by_source():
    pytest.importorskip("numba")
    x = RNG.standard_normal(chains.MIN_SIZE * 2)

    def run(f):
        g = vj.function(f)
        for _ in range(chains.WARMUP_CALLS + 3):  # past the step interpreter's calls
            out = g(x).numpy()
        return out
    chains._kernels.clear()

    def one(v):
        return (v * 3.0 + 1.0) * v - 2.0
    np.testing.assert_array_equal(run(one), (x * 3.0 + 1.0) * x - 2.0)
    first = dict(chains._kernels)
    assert len(first) == 1
    # the same computation, another function object (a retrace): the same kernel
    np.testing.assert_array_equal(run(lambda v: (v * 3.0 + 1.0) * v - 2.0), one(x))
    assert dict(chains._kernels) == first
    # a constant changed: constants are the kernel's inputs, not its source (same kernel)
    np.testing.assert_array_equal(run(lambda v: (v * 3.0 + 1.5) * v - 2.0),
                                  (x * 3.0 + 1.5) * x - 2.0)
    assert dict(chains._kernels) == first
    # another computation (an op changed): its own kernel, its own answer
    np.testing.assert_array_equal(run(lambda v: (v * 3.0 - 1.0) * v - 2.0),
                                  (x * 3.0 - 1.0) * x - 2.0)
    assert len(chains._kernels) == 2
