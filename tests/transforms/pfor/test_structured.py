"""One-hot structured loop values (Jacobian seeds): every structured rule against the
plain loop, structure kept where it should be, and the structured nonzero still
differentiable by tapes outside the loop."""
import numpy as np
import pytest

import vecjac as vj
from vecjac._src.core.registry import REGISTRY
from vecjac.testing import check_pfor, numerical_jacobian
from vecjac.vectorize import pfor
from vecjac._src.transforms.pfor import structured
from vecjac._src.transforms.pfor.structured import OneHotStacked


@pytest.fixture(autouse=True)
def always_structured(monkeypatch):
    """These tests use small sizes: force the structure that large Jacobians get."""
    monkeypatch.setattr(structured, "MIN_DENSE_SIZE", 0)
    monkeypatch.setattr(structured, "ENABLED", True)

RNG = np.random.default_rng(7)
N = 6
V = RNG.standard_normal(N)
M = RNG.standard_normal((N, 4))
B = RNG.standard_normal((3, N))


def onehot(i, n=N):
    return vj.one_hot(i, n)


CASES = {
    "scale by invariant vector": lambda i: onehot(i) * vj.constant(V),
    "scale by scalar": lambda i: onehot(i) * 2.5,
    "scale by stacked dense": lambda i: onehot(i) * vj.gather(vj.constant(M.T), i % 4),
    "negate and cast": lambda i: vj.cast(-onehot(i), vj.float32),
    "reshape": lambda i: vj.reshape(onehot(i, 12), (3, 4)),
    "sum all": lambda i: vj.reduce_sum(onehot(i) * V),
    "sum one axis": lambda i: vj.reduce_sum(vj.reshape(onehot(i, 12), (3, 4)), axis=0),
    "sum keepdims": lambda i: vj.reduce_sum(vj.reshape(onehot(i, 12), (3, 4)), axis=1,
                                            keepdims=True),
    "add same positions": lambda i: onehot(i) * 2.0 + onehot(i) * V,
    "add structured and dense": lambda i: onehot(i) + vj.gather(vj.constant(M.T), i % 4),
    "one-hot row @ matrix": lambda i: vj.reshape(onehot(i), (1, N)) @ vj.constant(M),
    "one-hot matrix @ matrix": lambda i: vj.reshape(onehot(i, 12), (3, 4)) @ vj.constant(M[:4]),
    "matrix @ one-hot column": lambda i: vj.constant(B) @ vj.reshape(onehot(i), (N, 1)),
    "matrix @ one-hot matrix": lambda i: vj.constant(B[:, :4]) @ vj.reshape(onehot(i, 12), (4, 3)),
    "matvec": lambda i: vj.linalg.matvec(vj.constant(B), onehot(i) * V),
    "unsupported op densifies": lambda i: vj.exp(onehot(i)),
    "relu gradient scales the nonzero": lambda i: REGISTRY["ReluGrad"](
        onehot(i), vj.constant(V)),
    "out-of-range index row": lambda i: vj.one_hot(i + 3, N) * V,
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_structured_rules_match_the_loop(name):
    check_pfor(CASES[name], N, rtol=1e-6, atol=1e-12)


def test_the_seed_stays_structured_through_the_rules():
    seen = {}

    def loop_fn(i):
        y = vj.reshape(onehot(i, 12), (3, 4)) * 3.0
        seen["scaled"] = y
        seen["summed"] = vj.reduce_sum(y, axis=1)
        return seen["summed"]
    pfor(loop_fn, 12)
    assert isinstance(seen["scaled"], OneHotStacked)
    assert isinstance(seen["summed"], OneHotStacked) and seen["summed"].shape == (3,)


def test_jacobian_with_structured_seeds_and_chunks():
    A = RNG.standard_normal((8, 8))
    x = vj.constant(RNG.standard_normal(8))
    with vj.GradientTape(persistent=True) as tape:
        tape.watch(x)
        r = vj.linalg.matvec(A, x) + x ** 3
    expected = A + np.diag(3 * x.numpy() ** 2)
    for p in (None, 3):
        np.testing.assert_allclose(tape.jacobian(r, x, parallel_iterations=p).numpy(),
                                   expected, rtol=1e-12)


def test_small_seeds_stay_dense_and_large_ones_structured(monkeypatch):
    monkeypatch.setattr(structured, "MIN_DENSE_SIZE", 16384)
    seen = []
    pfor(lambda i: seen.append(vj.one_hot(i, 100)) or seen[-1], 100)
    pfor(lambda i: seen.append(vj.one_hot(i, 200)) or seen[-1], 200)
    assert not isinstance(seen[0], OneHotStacked) and isinstance(seen[1], OneHotStacked)


def test_structured_nonzero_is_differentiable_by_an_outer_tape():
    """d/dx trace(J(x)) for f(x) = x**3 + sin(x): the Jacobian's diagonal comes from the
    structured Mul rule (d = 3x**2 + cos x), which the outer tape must see."""
    x = vj.constant(np.array([0.2, -0.5, 1.1]))
    with vj.GradientTape() as outer:
        outer.watch(x)
        with vj.GradientTape() as inner:
            inner.watch(x)
            y = x ** 3 + vj.sin(x)
        j = inner.jacobian(y, x)
        tr = vj.linalg.trace(j)
    np.testing.assert_allclose(outer.gradient(tr, x).numpy(), 6 * x.numpy() - np.sin(x.numpy()),
                               rtol=1e-12)


def test_per_example_jacobians_inside_vectorized_map():
    w = vj.constant(RNG.standard_normal((3, 3)))

    def per_example(x):
        with vj.GradientTape() as tape:
            tape.watch(x)
            y = vj.tanh(vj.linalg.matvec(w, x)) * x
        return tape.jacobian(y, x)
    xs = RNG.standard_normal((4, 3))
    out = vj.vectorized_map(per_example, vj.constant(xs))
    for k in range(4):
        def f(v):
            return np.tanh(w.numpy() @ v) * v
        np.testing.assert_allclose(out.numpy()[k], numerical_jacobian(f, xs[k]), rtol=1e-6,
                                   atol=1e-9)


@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")  # NumPy's IEEE notice
@pytest.mark.parametrize("make", [
    lambda x: vj.exp(x),                                   # scale by a NaN factor
    lambda x: vj.linalg.matvec(vj.constant(np.array([[1.0, np.inf], [2.0, 3.0]])), x),
    lambda x: vj.nn.relu(x) * x,
])
def test_nan_and_inf_propagate_like_the_loop(make):
    """Structure skips exact zeros; with NaN/inf about, 0 * NaN must stay NaN as in the
    dense computation (IEEE), so pfor equals the loop entry for entry."""
    x = vj.constant(np.array([0.3, np.nan]))
    with vj.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = make(x)
    np.testing.assert_array_equal(tape.jacobian(y, x).numpy(),
                                  tape.jacobian(y, x, experimental_use_pfor=False).numpy())


@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")  # NumPy's IEEE notice
def test_a_variable_assigned_inf_or_nan_takes_the_dense_path():
    """The finiteness of a factor is cached, and every read of a Variable carries the
    Variable's id: after assign, the new value must be checked again (the cache once
    answered for the old finite value, and pfor skipped the NaN the loop has)."""
    rng = np.random.default_rng(5)
    x, s = vj.Variable(rng.standard_normal(200)), vj.Variable(rng.standard_normal(200))

    def jacobians():
        with vj.GradientTape(persistent=True) as tape:
            y = x * s
        return (tape.jacobian(y, x).numpy(),
                tape.jacobian(y, x, experimental_use_pfor=False).numpy())
    got, want = jacobians()                      # a finite factor: structured and cached
    np.testing.assert_array_equal(got, want)
    value = s.numpy().copy()
    value[3], value[5] = np.inf, np.nan
    s.assign(value)
    got, want = jacobians()
    assert np.isnan(want).sum() == 2 * 200 - 1  # rows 3 and 5 (0 * inf, 0 * nan), one overlap
    np.testing.assert_array_equal(got, want)    # NaN where the loop has NaN
    s.assign(rng.standard_normal(200))           # finite again: the structured path
    got, want = jacobians()
    np.testing.assert_array_equal(got, want)


@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")  # NumPy's IEEE notice
@pytest.mark.parametrize("bad", [None, np.inf, np.nan])
@pytest.mark.parametrize("zero", [False, True])
def test_a_large_matrix_proved_finite_by_its_product_takes_the_structure(bad, zero):
    """MatVec's gradient marks a large matrix finite when its forward gave a finite
    product of a finite vector (a NaN or inf entry poisons its row's sum, even times a
    zero: inf * 0 is NaN). pfor must equal the loop whatever the matrix holds."""
    n = 300  # 90000 entries: above the size where the proof replaces the check
    A = RNG.standard_normal((n, n))
    if bad is not None:
        A[7, 11] = bad
    x0 = RNG.standard_normal(n)
    if zero:
        x0[11] = 0.0  # the bad entry meets a zero: its product is NaN, not finite
    x = vj.constant(x0)
    with vj.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = vj.linalg.matvec(A, x) + x ** 3
    got = tape.jacobian(y, x).numpy()
    want = tape.jacobian(y, x, experimental_use_pfor=False).numpy()
    np.testing.assert_array_equal(got, want)
    expected = A + np.diag(3 * x0 ** 2)
    if bad is None:
        np.testing.assert_allclose(got, expected, rtol=1e-12)
    else:
        assert not np.isfinite(got).all()


def test_unit_seed_rows_share_the_matrix_and_stay_correct():
    """J of A x is A: with unit seeds the structured rows are A itself (no copy); the
    result must still equal A, and later ops must not be able to change A."""
    A = RNG.standard_normal((5, 5))
    a = vj.constant(A)
    x = vj.constant(RNG.standard_normal(5))
    with vj.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = vj.linalg.matvec(a, x)
    j = tape.jacobian(y, x)
    np.testing.assert_array_equal(j.numpy(), A)
    assert not j.numpy().flags.writeable  # Tensors hand out read-only views
    with vj.GradientTape() as t2:
        t2.watch(x)
        z = vj.linalg.matvec(a, x) + x ** 3
    np.testing.assert_allclose(t2.jacobian(z, x).numpy(), A + np.diag(3 * x.numpy() ** 2))
    np.testing.assert_array_equal(a.numpy(), A)
