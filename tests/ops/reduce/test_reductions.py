"""Reductions and scans: forward against NumPy for every axis form and keepdims, TF's
semantics (ties, infinities, scan flags), gradients exactly at zeros (reduce_prod /
cumprod), integer dtypes, argument errors. Gradients, float32 and pfor of the ops
themselves: tests/test_registry.py (samples); here only for reduce_logsumexp and
reduce_euclidean_norm, which are compositions of other ops (no op block of their own)."""
import itertools

import numpy as np
import pytest

import vecjac as vj
from vecjac.testing import check_grads, check_pfor, numerical_jacobian

RNG = np.random.default_rng(3)


def _logsumexp(x, axis=None, keepdims=False):
    m = np.max(x, axis=axis, keepdims=True)
    out = np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True)) + m
    return out if keepdims else np.squeeze(out, axis=axis)


COMPOSITE = {  # built from other ops: the registry does not see them as one
    "reduce_logsumexp": (vj.reduce_logsumexp, _logsumexp),
    "reduce_euclidean_norm": (vj.math.reduce_euclidean_norm,
                              lambda x, axis=None, keepdims=False:
                              np.sqrt(np.sum(x * x, axis=axis, keepdims=keepdims))),
}
REDUCE = {
    "reduce_sum": (vj.reduce_sum, np.sum),
    "reduce_mean": (vj.reduce_mean, np.mean),
    "reduce_max": (vj.reduce_max, np.max),
    "reduce_min": (vj.reduce_min, np.min),
    "reduce_prod": (vj.reduce_prod, np.prod),
    **COMPOSITE,
}
AXES = [None, 0, 1, -1, (0, 2), [-1, 0], (0, 1, 2)]


@pytest.mark.parametrize("name", sorted(REDUCE))
@pytest.mark.parametrize("axis", AXES, ids=str)
@pytest.mark.parametrize("keepdims", [False, True])
def test_reduce_forward_and_grads(name, axis, keepdims):
    f, ref = REDUCE[name]
    x = RNG.uniform(0.5, 1.5, (2, 3, 4)) * RNG.choice([-1.0, 1.0], (2, 3, 4))
    np_axis = tuple(axis) if isinstance(axis, list) else axis
    out = f(x, axis=axis, keepdims=keepdims)
    expected = ref(x, axis=np_axis, keepdims=keepdims)
    assert out.shape == expected.shape
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-13)
    if name in COMPOSITE and axis in (None, 1, (0, 2)):  # a representative subset
        check_grads(lambda a: f(a, axis=axis, keepdims=keepdims), [x], order=2)


@pytest.mark.parametrize("name", sorted(REDUCE))
def test_reduce_scalar_and_vector(name):
    f, ref = REDUCE[name]
    s = np.array(1.7)
    np.testing.assert_allclose(f(s).numpy(), ref(s))
    v = RNG.uniform(0.5, 2.0, (5,))
    np.testing.assert_allclose(f(v, axis=0).numpy(), ref(v, axis=0))
    if name in COMPOSITE:
        check_grads(f, [s], order=2)
        check_grads(lambda a: f(a, axis=0), [v], order=2)


@pytest.mark.parametrize("name", sorted(COMPOSITE))
def test_composite_reduce_float32(name):
    f, _ = COMPOSITE[name]
    x = vj.constant(RNG.uniform(0.5, 1.5, (2, 3)).astype(np.float32))
    with vj.GradientTape() as tape:
        tape.watch(x)
        y = f(x, axis=1)
    assert y.dtype == np.float32
    g = tape.gradient(y, x)
    assert g.dtype == np.float32 and g.shape == (2, 3)


@pytest.mark.parametrize("name", sorted(COMPOSITE))
@pytest.mark.parametrize("axis,keepdims", [(None, False), (1, True), ((0, 1), False)])
def test_composite_reduce_pfor(name, axis, keepdims):
    f, _ = COMPOSITE[name]
    xs = RNG.uniform(0.5, 1.5, (3, 2, 3))
    check_pfor(lambda i: f(vj.gather(xs, i), axis=axis, keepdims=keepdims), 3,
               fallback_to_while_loop=False)

    def grad_fn(i):
        x = vj.gather(xs, i)
        with vj.GradientTape() as tape:
            tape.watch(x)
            y = vj.reduce_sum(f(x, axis=axis, keepdims=keepdims) ** 2)
        return tape.gradient(y, x)
    check_pfor(grad_fn, 3, fallback_to_while_loop=False)


def test_integer_sums_keep_dtype():
    x = np.arange(6, dtype=np.int32).reshape(2, 3)
    assert vj.reduce_sum(x, axis=1).dtype == np.int32
    assert vj.reduce_prod(x + 1).dtype == np.int32
    np.testing.assert_array_equal(vj.reduce_prod(x + 1, axis=0).numpy(), [4, 10, 18])


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("shape", [(6, 5, 4), (2, 3, 4, 5), (4, 600), (3, 1, 2)])
def test_sums_and_means_over_leading_and_middle_axes(shape, dtype):
    # runs of axes before the last one are a product with ones (BLAS), others np.sum:
    # every axis set, contiguous or not, against NumPy in float64
    x = RNG.standard_normal(shape).astype(dtype)
    tol = 1e-12 if dtype == np.float64 else 1e-5
    for k in range(1, len(shape) + 1):
        for axes in itertools.combinations(range(len(shape)), k):
            for keepdims in (False, True):
                for fn, ref in ((vj.reduce_sum, np.sum), (vj.reduce_mean, np.mean)):
                    out = fn(x, axis=list(axes), keepdims=keepdims).numpy()
                    want = ref(x.astype(np.float64), axis=axes, keepdims=keepdims)
                    assert out.dtype == dtype and out.shape == want.shape
                    np.testing.assert_allclose(out, want, rtol=tol, atol=tol * 10)
    strided = x[..., ::2] if x.shape[-1] > 1 else x  # not C-contiguous: np.sum
    np.testing.assert_allclose(vj.reduce_sum(strided, axis=0).numpy(),
                               np.sum(strided.astype(np.float64), axis=0), rtol=tol)


def test_reduce_max_ties_share_the_gradient():
    x = vj.constant([1.0, 3.0, 3.0, 2.0])
    with vj.GradientTape() as tape:
        tape.watch(x)
        y = vj.reduce_max(x)
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), [0.0, 0.5, 0.5, 0.0])


def test_reduce_logsumexp_infinities():
    assert vj.reduce_logsumexp([-np.inf, -np.inf]).numpy() == -np.inf
    assert vj.reduce_logsumexp([1.0, np.inf]).numpy() == np.inf
    np.testing.assert_allclose(vj.reduce_logsumexp([1000.0, 1000.0]).numpy(),
                               1000.0 + np.log(2.0))


@pytest.mark.parametrize("fn", [lambda x: vj.reduce_std(x, axis=1),
                                lambda x: vj.reduce_std(x[:1]),
                                lambda x: np.std(x, axis=1)])
def test_std_over_one_value_has_zero_derivatives(fn):
    # the std of one value is identically 0: its gradient and Hessian are 0, not NaN
    # (sqrt's derivative at 0 times the variance's zero derivative)
    x = vj.constant([[1.5], [-2.0]])
    with vj.GradientTape() as outer:
        outer.watch(x)
        with vj.GradientTape() as inner:
            inner.watch(x)
            y = vj.reduce_sum(fn(x))
        g = inner.gradient(y, x)
    assert float(y) == 0.0
    np.testing.assert_array_equal(g.numpy(), np.zeros((2, 1)))
    np.testing.assert_array_equal(outer.jacobian(g, x).numpy(), np.zeros((2, 1, 2, 1)))


# -- reduce_prod at zeros ------------------------------------------------------------------
def _prod_hessian(x):
    n = len(x)
    h = np.zeros((n, n))
    for i, j in itertools.product(range(n), repeat=2):
        if i != j:
            h[i, j] = np.prod([x[k] for k in range(n) if k not in (i, j)])
    return h


@pytest.mark.parametrize("x", [[1.5, 0.0, 2.0, -1.0], [0.0, 2.0, 0.0, 3.0], [0.0, 0.0, 0.0]])
def test_reduce_prod_gradient_and_hessian_with_zeros(x):
    x = np.array(x)
    xv = vj.constant(x)
    with vj.GradientTape() as outer:
        outer.watch(xv)
        with vj.GradientTape() as inner:
            inner.watch(xv)
            y = vj.reduce_prod(xv)
        g = inner.gradient(y, xv)
    expected = [np.prod(np.delete(x, i)) for i in range(len(x))]
    np.testing.assert_array_equal(g.numpy(), expected)
    np.testing.assert_allclose(outer.jacobian(g, xv).numpy(), _prod_hessian(x), atol=1e-12)
    check_grads(lambda a: vj.reduce_prod(a, axis=0), [x], order=2)


# -- cumsum / cumprod ----------------------------------------------------------------------
def _scan_ref(acc, x, axis, exclusive, reverse, identity):
    x = np.moveaxis(x, axis, -1)
    if reverse:
        x = x[..., ::-1]
    out = acc(x, axis=-1)
    if exclusive:
        out = np.concatenate([np.full(out.shape[:-1] + (1,), identity), out[..., :-1]], -1)
    if reverse:
        out = out[..., ::-1]
    return np.moveaxis(out, -1, axis)


SCANS = {"cumsum": (vj.cumsum, np.cumsum, 0.0), "cumprod": (vj.math.cumprod, np.cumprod, 1.0)}
FLAGS = list(itertools.product([False, True], repeat=2))


@pytest.mark.parametrize("name", sorted(SCANS))
@pytest.mark.parametrize("exclusive,reverse", FLAGS)
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_scan_forward(name, exclusive, reverse, axis):
    f, acc, identity = SCANS[name]
    x = RNG.uniform(0.5, 1.5, (3, 4))
    out = f(x, axis=axis, exclusive=exclusive, reverse=reverse)
    np.testing.assert_allclose(out.numpy(), _scan_ref(acc, x, axis, exclusive, reverse,
                                                      identity), rtol=1e-14)


def test_scan_tf_doc_examples():
    np.testing.assert_array_equal(vj.cumsum([1.0, 2.0, 3.0], exclusive=True).numpy(),
                                  [0.0, 1.0, 3.0])
    np.testing.assert_array_equal(vj.cumsum([1.0, 2.0, 3.0], reverse=True).numpy(),
                                  [6.0, 5.0, 3.0])
    np.testing.assert_array_equal(
        vj.math.cumprod([2.0, 3.0, 4.0], exclusive=True, reverse=True).numpy(),
        [12.0, 4.0, 1.0])


@pytest.mark.parametrize("exclusive,reverse", FLAGS)
def test_cumprod_gradients_with_zeros(exclusive, reverse):
    x = np.array([[1.5, 0.0, 2.0, -1.0, 0.5], [0.0, 2.0, 0.0, 3.0, 0.7]])
    check_grads(lambda a: vj.math.cumprod(a, 1, exclusive, reverse), [x], order=2)

    def ref(a):
        return _scan_ref(np.cumprod, a, 1, exclusive, reverse, 1.0)
    xv = vj.constant(x)
    with vj.GradientTape() as tape:
        tape.watch(xv)
        y = vj.math.cumprod(xv, 1, exclusive, reverse)
    np.testing.assert_allclose(tape.jacobian(y, xv).numpy(), numerical_jacobian(ref, x),
                               atol=1e-8)


@pytest.mark.parametrize("name", sorted(SCANS))
def test_scan_integers_keep_dtype(name):
    f, acc, _ = SCANS[name]
    xi = np.array([1, 2, 3], np.int32)
    assert f(xi).dtype == np.int32
    np.testing.assert_array_equal(f(xi).numpy(), acc(xi))


# -- errors --------------------------------------------------------------------------------
@pytest.mark.parametrize("fn", [vj.reduce_sum, vj.reduce_mean, vj.reduce_max, vj.reduce_prod,
                                vj.reduce_logsumexp])
def test_reduce_errors(fn):
    x = np.ones((2, 3))
    with pytest.raises(ValueError, match=r"axis=2 is out of range for a tensor of rank 2"):
        fn(x, axis=2)
    with pytest.raises(ValueError, match="repeated axes"):
        fn(x, axis=[0, -2])
    with pytest.raises(TypeError, match="axis must be an int"):
        fn(x, axis=1.5)


def test_reduce_other_errors():
    with pytest.raises(TypeError, match="reduce_sum: keepdims must be a bool"):
        vj.reduce_sum(np.ones(3), keepdims="yes")
    with pytest.raises(ValueError, match="reduce_max: input is empty"):
        vj.reduce_max(np.ones((0, 2)))
    with pytest.raises(TypeError, match="reduce_logsumexp: input_tensor must be a floating"):
        vj.reduce_logsumexp(np.array([1, 2]))
    with pytest.raises(TypeError, match="reduce_euclidean_norm: expected a numeric"):
        vj.math.reduce_euclidean_norm(np.array([True]))


@pytest.mark.parametrize("fn", [vj.cumsum, vj.math.cumprod])
def test_scan_errors(fn):
    with pytest.raises(ValueError, match="x must have rank >= 1"):
        fn(1.0)
    with pytest.raises(ValueError, match="axis=2 is out of range"):
        fn(np.ones((2, 2)), axis=2)
    with pytest.raises(TypeError, match="exclusive must be a bool"):
        fn(np.ones(2), exclusive=1)
    with pytest.raises(TypeError, match="reverse must be a bool"):
        fn(np.ones(2), reverse="no")
    with pytest.raises(TypeError, match="x must be a numeric"):
        fn(np.array([True]))
