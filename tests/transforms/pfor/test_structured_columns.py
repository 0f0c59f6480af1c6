"""Structured batch_jacobian seeds: one-hot columns spread over the batch (OneHotStacked
with lead=1). Every structured rule against the plain loop, the structure kept where it
should be, and batch_jacobian at structured sizes against the loop and closed forms."""
import warnings

import numpy as np
import pytest

import vecjac as vj
from vecjac._src.core.registry import REGISTRY
from vecjac._src.core.dispatch import apply
from vecjac._src.ops.array.onehot import BatchJacobianSeed
from vecjac.testing import check_pfor
from vecjac.vectorize import pfor
from vecjac._src.transforms.pfor import structured
from vecjac._src.transforms.pfor.structured import OneHotStacked, OuterStacked


@pytest.fixture(autouse=True)
def always_structured(monkeypatch):
    """Small sizes here: force the structure that large batch Jacobians get."""
    monkeypatch.setattr(structured, "MIN_DENSE_SIZE", 0)
    monkeypatch.setattr(structured, "ENABLED", True)


RNG = np.random.default_rng(11)
BATCH, N = 5, 6
ITERS = N + 2                        # the columns, then the two probes
PROBE = np.eye(N)[2]                 # a one-hot probe keeps the structure
G = RNG.standard_normal((BATCH, N))
W = RNG.standard_normal((N, 4))
TABLE = RNG.standard_normal((ITERS + 2, BATCH, N))
Y = RNG.standard_normal((BATCH, 4))
TABLE4 = RNG.standard_normal((ITERS, BATCH, 4))


def seed(j, probe=PROBE, n=N):
    return apply(BatchJacobianSeed, j, batch=BATCH, n=n, probe=probe,
                 dtype=np.dtype("float64"))


CASES = {
    "seed itself": lambda j: seed(j),
    "scale by per-example matrix": lambda j: seed(j) * vj.constant(G),
    "scale by column vector": lambda j: seed(j) * vj.constant(G[:, :1]),
    "scale by row vector": lambda j: seed(j) * vj.constant(G[0]),
    "scale by scalar": lambda j: seed(j) * 2.5,
    "scale by stacked dense": lambda j: seed(j) * vj.gather(vj.constant(TABLE), j),
    "two structured factors": lambda j: seed(j) * seed(j) * 3.0,
    "negate and cast": lambda j: vj.cast(-seed(j), vj.float32),
    "reshape trailing axes": lambda j: vj.reshape(seed(j), (BATCH, 2, 3)) * 2.0,
    "reshape across the batch densifies": lambda j: vj.reshape(seed(j), (N, BATCH)),
    "sum trailing axes": lambda j: vj.reduce_sum(vj.reshape(seed(j) * G, (BATCH, 2, 3)),
                                                 axis=(1, 2)),
    "sum one trailing axis": lambda j: vj.reduce_sum(vj.reshape(seed(j), (BATCH, 2, 3)),
                                                     axis=2),
    "sum keepdims": lambda j: vj.reduce_sum(seed(j) * G, axis=1, keepdims=True),
    "sum over the batch densifies": lambda j: vj.reduce_sum(seed(j) * G, axis=0),
    "sum all densifies": lambda j: vj.reduce_sum(seed(j) * G),
    "add same positions": lambda j: seed(j) * 2.0 + seed(j) * G,
    "add dense": lambda j: seed(j) + vj.gather(vj.constant(TABLE), j),
    "columns @ matrix (outer product)": lambda j: (seed(j) * G) @ vj.constant(W),
    "matrix @ columns densifies": lambda j: vj.constant(G.T) @ seed(j),
    "outer product times a factor (fused)": lambda j: (seed(j) @ vj.constant(W)) * Y,
    "outer product times a row (fused)": lambda j: (seed(j) @ vj.constant(W)) * Y[0],
    "outer product times stacked dense": lambda j: (seed(j) @ vj.constant(W)) *
    vj.gather(vj.constant(TABLE4), j),
    "outer product, relu gradient (fused)": lambda j: REGISTRY["ReluGrad"](
        seed(j) @ vj.constant(W), vj.constant(Y)),
    "outer product plus dense densifies": lambda j: (seed(j) @ vj.constant(W)) + Y,
    "outer product summed densifies": lambda j: vj.reduce_sum(seed(j) @ vj.constant(W), 1),
    "transpose densifies": lambda j: vj.transpose(seed(j) * G),
    "unsupported op densifies": lambda j: vj.exp(seed(j)),
    "relu gradient scales the columns": lambda j: REGISTRY["ReluGrad"](
        seed(j), vj.constant(G)),
    "out-of-range index": lambda j: seed(j + 2),
    "dense probe weights stay dense": lambda j: seed(j, probe=np.linspace(0.5, 1.5, N)) * G,
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_column_rules_match_the_loop(name):
    check_pfor(CASES[name], ITERS, rtol=1e-12, atol=1e-12)


def test_the_columns_stay_structured_until_the_outer_product():
    seen = {}

    def loop_fn(j):
        s = seed(j)
        seen["seed"] = s
        seen["scaled"] = s * vj.constant(G)
        seen["reshaped"] = vj.reshape(seen["scaled"], (BATCH, 3, 2))
        return seen["scaled"] @ vj.constant(W)
    pfor(loop_fn, ITERS)
    for key in ("seed", "scaled", "reshaped"):
        assert isinstance(seen[key], OneHotStacked) and seen[key].lead == 1, key
    assert seen["reshaped"].shape == (BATCH, 3, 2)


def test_the_outer_product_stays_lazy_until_a_factor_writes_it():
    seen = {}

    def loop_fn(j):
        seen["outer"] = seed(j) @ vj.constant(W)
        return seen["outer"] * Y
    pfor(loop_fn, ITERS)
    assert isinstance(seen["outer"], OuterStacked)
    assert seen["outer"].shape == (BATCH, 4)


def test_the_probes_are_the_first_and_last_example_in_one_column():
    dense = seed(vj.constant(np.arange(ITERS))).numpy()
    np.testing.assert_array_equal(dense[:N], np.broadcast_to(np.eye(N)[:, None, :],
                                                             (N, BATCH, N)))
    expected = np.zeros((2, BATCH, N))
    expected[0, 0] = expected[1, -1] = PROBE
    np.testing.assert_array_equal(dense[N:], expected)


# -- batch_jacobian at structured sizes ---------------------------------------------------
def _elu(z):
    return np.where(z > 0, z, np.expm1(np.minimum(z, 0)))


def _mlp_case(batch=9, sizes=(4, 7, 3)):
    x = RNG.standard_normal((batch, sizes[0]))
    w1, w2 = RNG.standard_normal(sizes[:2]), RNG.standard_normal(sizes[1:])
    b1, b2 = RNG.standard_normal(sizes[1]), RNG.standard_normal(sizes[2])
    z1 = x @ w1 + b1
    z2 = _elu(z1) @ w2 + b2
    d1, d2 = np.where(z1 > 0, 1, np.exp(z1)), np.where(z2 > 0, 1, np.exp(z2))
    closed = np.einsum("bk,jk,bj,ij->bki", d2, w2, d1, w1)
    return (x, w1, b1, w2, b2), closed


def test_batch_jacobian_of_an_mlp_matches_the_closed_form_and_the_loop():
    (x, w1, b1, w2, b2), closed = _mlp_case()
    xt = vj.constant(x)
    with vj.GradientTape(persistent=True) as tape:
        tape.watch(xt)
        y = vj.nn.elu(vj.nn.elu(xt @ w1 + b1) @ w2 + b2)
    for p in (None, 2):
        np.testing.assert_allclose(tape.batch_jacobian(y, xt, parallel_iterations=p).numpy(),
                                   closed, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(tape.batch_jacobian(y, xt, experimental_use_pfor=False).numpy(),
                               closed, rtol=1e-12, atol=1e-14)


def test_batch_jacobian_with_a_multi_axis_target_and_source():
    x = RNG.standard_normal((4, 2, 3))
    w = RNG.standard_normal((6, 6))
    xt = vj.constant(x)
    with vj.GradientTape(persistent=True) as tape:
        tape.watch(xt)
        flat = vj.reshape(xt, (4, 6))
        y = vj.reshape(vj.tanh(flat @ w) * flat, (4, 3, 2))
    got = tape.batch_jacobian(y, xt).numpy()
    want = tape.batch_jacobian(y, xt, experimental_use_pfor=False).numpy()
    assert got.shape == (4, 3, 2, 2, 3)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)
    # closed form for example 0: d/dx [tanh(x W) * x] = diag(t) + diag(x) W^T (1 - t^2)
    f0 = x[0].reshape(6)
    t = np.tanh(f0 @ w)
    j0 = np.diag(t) + f0[:, None] * (w.T * (1 - t ** 2)[:, None])
    np.testing.assert_allclose(got[0].reshape(6, 6), j0, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("make", [
    lambda x: vj.tanh(x),                                     # an invariant factor
    lambda x: vj.sin(x) * vj.constant(RNG.standard_normal((4, 10))),  # broadcast factor
    lambda x: x * x * 3.0,                                    # a stacked factor
    lambda x: vj.tanh(x @ vj.constant(RNG.standard_normal((10, 10)))),
    lambda x: vj.exp(vj.reshape(x, (16, 2, 2, 10))) * 0.5,    # rank 3 per example
])
def test_batch_jacobian_of_rank_two_examples_through_a_factor(make):
    """Examples of rank >= 2 whose gradient goes through an elementwise factor: the
    column gather of the factor must flatten all trailing axes (was "axes don't match
    array" with batch 16 and examples of shape (4, 10))."""
    xt = vj.constant(RNG.standard_normal((16, 4, 10)))
    with vj.GradientTape(persistent=True) as tape:
        tape.watch(xt)
        y = make(xt)
    got = tape.batch_jacobian(y, xt).numpy()
    want = tape.batch_jacobian(y, xt, experimental_use_pfor=False).numpy()
    assert got.shape == (16,) + y.shape[1:] + (4, 10)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)


def test_batch_jacobian_is_differentiable_by_an_outer_tape():
    """d/dW sum(batch_jacobian(x W, x)) = the batch size in every entry (it is sum_b W^T)
    and d/dW of sum(J * J) = 2 * batch * W (J_b = W^T for a linear map)."""
    w = vj.Variable(RNG.standard_normal((3, 4)))
    x = vj.constant(RNG.standard_normal((6, 3)))
    with vj.GradientTape() as outer:
        with vj.GradientTape() as inner:
            inner.watch(x)
            y = x @ w
        j = inner.batch_jacobian(y, x)
        loss = vj.reduce_sum(j * j)
    np.testing.assert_allclose(outer.gradient(loss, w).numpy(), 2 * 6 * w.numpy(), rtol=1e-12)


def test_batch_norm_still_warns_at_structured_sizes():
    x = vj.constant(RNG.standard_normal((8, 5)))
    with vj.GradientTape() as tape:
        tape.watch(x)
        mean, var = vj.nn.moments(x, axes=[0])
        y = (x - mean) / vj.sqrt(var + 1e-3)
    with pytest.warns(vj.InteractingExamplesWarning):
        tape.batch_jacobian(y, x)


def test_independent_examples_do_not_warn():
    (x, w1, b1, w2, b2), _ = _mlp_case()
    xt = vj.constant(x)
    with vj.GradientTape(persistent=True) as tape:
        tape.watch(xt)
        y = vj.nn.elu(xt @ w1 + b1) @ w2
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = tape.batch_jacobian(y, xt).numpy()
    assert not [w for w in caught if issubclass(w.category, vj.InteractingExamplesWarning)]
    np.testing.assert_allclose(
        got, tape.batch_jacobian(y, xt, experimental_use_pfor=False).numpy(), rtol=1e-12)


@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")  # NumPy's IEEE notice
def test_nan_in_a_factor_propagates_like_the_loop():
    x = vj.constant(RNG.standard_normal((4, 3)))
    w = RNG.standard_normal((3, 3))
    w[1, 2] = np.nan
    with vj.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = vj.tanh(x) @ w
    np.testing.assert_array_equal(
        tape.batch_jacobian(y, x).numpy(),
        tape.batch_jacobian(y, x, experimental_use_pfor=False).numpy())


@pytest.mark.parametrize("act", [vj.nn.relu, vj.tanh, vj.sigmoid, vj.nn.softplus,
                                 vj.nn.leaky_relu])
def test_batch_jacobian_through_common_activations_matches_the_loop(act):
    (x, w1, b1, w2, b2), _ = _mlp_case(batch=7, sizes=(5, 6, 4))
    xt = vj.constant(x)
    with vj.GradientTape(persistent=True) as tape:
        tape.watch(xt)
        y = act(act(xt @ w1 + b1) @ w2 + b2)
    np.testing.assert_allclose(tape.batch_jacobian(y, xt).numpy(),
                               tape.batch_jacobian(y, xt, experimental_use_pfor=False).numpy(),
                               rtol=1e-12, atol=1e-14)


def test_second_order_through_the_fused_outer_product_matches_dense_seeds(monkeypatch):
    """d/dW of a loss on the batch Jacobian of elu(elu(x W1) W2): the fused rules
    (OuterRowsScaled) must carry gradients to both weights as the dense path does."""
    (x, w1, _, w2, _), _ = _mlp_case(batch=6, sizes=(3, 5, 4))
    x = vj.constant(x)

    def grads():
        v1, v2 = vj.Variable(w1), vj.Variable(w2)
        with vj.GradientTape() as outer:
            with vj.GradientTape() as inner:
                inner.watch(x)
                y = vj.nn.elu(vj.nn.elu(x @ v1) @ v2)
            j = inner.batch_jacobian(y, x)
            loss = vj.reduce_sum(vj.sin(j))
        return [g.numpy() for g in outer.gradient(loss, [v1, v2])]
    structured_grads = grads()
    monkeypatch.setattr(structured, "ENABLED", False)
    dense_grads = grads()
    for a, b in zip(structured_grads, dense_grads):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
