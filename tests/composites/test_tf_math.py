"""vj.math's TF names from vecjac/_src/composites/tf_math.py: values against NumPy / SciPy
references, gradients against central differences, Jacobians (pfor), TF's errors."""
import math

import numpy as np
import pytest
import scipy.special as sp

import vecjac as vj
from vecjac._src.composites import tf_math as tf_math_ops
from vecjac.testing import check_grads, numerical_jacobian

RNG = np.random.default_rng(11)


def _jacobian(f, x):
    return vj.jacobian(f, mode="rev")(x).numpy()  # pfor over the tape's cotangents


def _check_jacobian(f, x, rtol=1e-6, atol=1e-8):
    np.testing.assert_allclose(_jacobian(f, x), numerical_jacobian(lambda v: f(vj.constant(v)).numpy(), x),
                               rtol=rtol, atol=atol)


# -- aliases of SciPy's special functions under TF's names and argument orders ---------------
X = RNG.uniform(0.5, 3.0, (2, 3))
P = RNG.uniform(0.1, 0.9, (2, 3))
UNARY = {  # name: (scipy reference, domain)
    "lgamma": (sp.gammaln, X), "digamma": (sp.digamma, X), "erfinv": (sp.erfinv, P - 0.5),
    "erfcinv": (sp.erfcinv, P + 0.5), "ndtri": (sp.ndtri, P), "bessel_i0": (sp.i0, X),
    "bessel_i0e": (sp.i0e, X), "bessel_i1": (sp.i1, X), "bessel_i1e": (sp.i1e, X),
    "sigmoid": (sp.expit, X - 2), "softplus": (lambda v: np.logaddexp(v, 0), X - 2),
    "softsign": (lambda v: v / (1 + np.abs(v)), X - 2), "log_sigmoid": (sp.log_expit, X - 2),
    "reciprocal_no_nan": (lambda v: 1 / v, X),
}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_values_and_gradients(name):
    ref, x = UNARY[name]
    f = getattr(vj.math, name)
    np.testing.assert_allclose(f(x).numpy(), ref(x), rtol=1e-12, atol=1e-14)
    check_grads(f, [x], order=2)


def test_softmax_family():
    x = RNG.normal(size=(2, 4))
    np.testing.assert_allclose(vj.math.softmax(x).numpy(), sp.softmax(x, axis=-1), rtol=1e-13)
    np.testing.assert_allclose(vj.math.log_softmax(x, axis=0).numpy(), sp.log_softmax(x, axis=0),
                               rtol=1e-13)


def test_two_argument_special_functions_follow_tf_order():
    a, x = X, X[::-1]
    np.testing.assert_allclose(vj.math.igamma(a, x).numpy(), sp.gammainc(a, x), rtol=1e-12)
    np.testing.assert_allclose(vj.math.igammac(a, x).numpy(), sp.gammaincc(a, x), rtol=1e-12)
    np.testing.assert_allclose(vj.math.betainc(a, x, P).numpy(), sp.betainc(a, x, P), rtol=1e-12)
    np.testing.assert_allclose(vj.math.polygamma(1.0, x).numpy(), sp.polygamma(1, x), rtol=1e-12)
    np.testing.assert_allclose(vj.math.xlog1py(P, X).numpy(), sp.xlog1py(P, X), rtol=1e-12)
    check_grads(lambda v: vj.math.igamma(a, v), [x], order=2)
    check_grads(lambda v: vj.math.igammac(a, v), [x], order=1)
    check_grads(lambda v: vj.math.betainc(a, x, v), [P], order=1)
    check_grads(lambda v: vj.math.polygamma(2.0, v), [x], order=1)


@pytest.mark.parametrize("f", [lambda a, x: vj.math.igamma(a, x),
                               lambda a, x: vj.math.igammac(a, x),
                               lambda a, x: vj.math.polygamma(a, x),
                               lambda a, x: vj.math.betainc(a, 2.0, x)])
def test_shape_parameter_derivatives_raise(f):
    a, x = vj.constant([1.5, 2.0]), vj.constant([0.3, 0.6])
    with vj.GradientTape() as tape:
        tape.watch(a)
        y = f(a, x)
    with pytest.raises(LookupError):
        tape.gradient(y, a)


def test_atan2_matches_numpy_in_every_quadrant():
    y = np.array([1.0, 1.0, -1.0, -1.0, 0.0, 0.0, 2.0, -0.5, 0.0])
    x = np.array([1.0, -1.0, -1.0, 1.0, 1.0, -1.0, 0.1, 3.0, 0.0])
    np.testing.assert_allclose(vj.math.atan2(y, x).numpy(), np.arctan2(y, x), rtol=1e-15)
    yy, xx = RNG.normal(size=5), RNG.normal(size=5)
    check_grads(vj.math.atan2, [yy, xx], order=2)
    _check_jacobian(lambda v: vj.math.atan2(v, vj.constant(xx)), yy)
    with pytest.raises(ValueError, match="atan2"):
        vj.math.atan2(np.ones(2), np.ones(3))
    with pytest.raises(TypeError, match="atan2: y"):
        vj.math.atan2(np.array([1, 2]), np.ones(2))


# -- compositions ------------------------------------------------------------------------------
def test_add_n_and_accumulate_n():
    xs = [RNG.normal(size=(2, 3)) for _ in range(3)]
    np.testing.assert_allclose(vj.math.add_n(xs).numpy(), xs[0] + xs[1] + xs[2], rtol=1e-15)
    np.testing.assert_allclose(vj.math.accumulate_n(xs, shape=(2, 3)).numpy(), sum(xs))
    check_grads(lambda a, b: vj.math.add_n([a, b, a]), xs[:2], order=1)
    with pytest.raises(ValueError, match="add_n"):
        vj.math.add_n([])
    with pytest.raises(ValueError, match="add_n: inputs must have the same shape"):
        vj.math.add_n([np.ones(2), np.ones(3)])
    with pytest.raises(ValueError, match="accumulate_n: shape"):
        vj.math.accumulate_n(xs, shape=(3, 2))


def test_no_nan_family_values_and_finite_gradients():
    x = np.array([1.0, np.inf, np.nan, 2.0, -3.0])
    y = np.array([0.0, 0.0, 0.0, 4.0, 0.5])
    np.testing.assert_array_equal(vj.math.divide_no_nan(x, y).numpy(), [0, 0, 0, 0.5, -6.0])
    np.testing.assert_array_equal(vj.math.multiply_no_nan(x, y).numpy(), [0, 0, 0, 8.0, -1.5])
    np.testing.assert_array_equal(vj.math.reciprocal_no_nan(y).numpy(), [0, 0, 0, 0.25, 2.0])
    xt, yt = vj.constant(x), vj.constant(y)
    for f in (vj.math.divide_no_nan, vj.math.multiply_no_nan):
        with vj.GradientTape() as tape:
            tape.watch([xt, yt])
            out = vj.reduce_sum(f(xt, yt))
        gx, gy = tape.gradient(out, [xt, yt])
        assert np.isfinite(gx.numpy()).all() and np.isfinite(gy.numpy()).all()
    a, b = RNG.normal(size=4), RNG.uniform(0.5, 2, 4)
    check_grads(vj.math.divide_no_nan, [a, b], order=2)
    check_grads(vj.math.multiply_no_nan, [a, b], order=2)
    _check_jacobian(lambda v: vj.math.divide_no_nan(v, vj.constant(b)), a)


def test_lbeta_reduces_over_the_last_axis():
    x = RNG.uniform(0.5, 3.0, (2, 4))
    ref = sp.gammaln(x).sum(-1) - sp.gammaln(x.sum(-1))
    np.testing.assert_allclose(vj.math.lbeta(x).numpy(), ref, rtol=1e-12)
    np.testing.assert_allclose(vj.math.lbeta(x[:, :2]).numpy(), sp.betaln(x[:, 0], x[:, 1]),
                               rtol=1e-12)
    check_grads(vj.math.lbeta, [x], order=2)
    assert vj.math.lbeta(np.zeros((2, 0))).numpy().tolist() == [-np.inf, -np.inf]
    with pytest.raises(ValueError, match="lbeta"):
        vj.math.lbeta(1.0)


def test_rint_scalar_mul_and_real_parts():
    x = np.array([0.5, 1.5, 2.5, -0.5, -1.7])
    np.testing.assert_array_equal(vj.math.rint(x).numpy(), np.rint(x))
    # rint's gradient is zero:
    check_grads(lambda v: vj.math.rint(v) + v, [np.array([0.2, 1.3])], order=1)
    np.testing.assert_array_equal(vj.math.scalar_mul(2.0, x).numpy(), 2 * x)
    with pytest.raises(ValueError, match="scalar_mul: scalar must be 0-d"):
        vj.math.scalar_mul(np.ones(2), x)
    np.testing.assert_array_equal(vj.math.real(x).numpy(), x)
    np.testing.assert_array_equal(vj.math.conj(x).numpy(), x)
    np.testing.assert_array_equal(vj.math.imag(x).numpy(), np.zeros(5))
    np.testing.assert_array_equal(vj.math.angle(x).numpy(), np.angle(x))
    z = np.array([1 + 2j, -3 - 0.5j])  # complex: NumPy's values
    for f, ref in ((vj.math.real, np.real), (vj.math.imag, np.imag),
                   (vj.math.conj, np.conj), (vj.math.angle, np.angle), (vj.abs, np.abs)):
        np.testing.assert_array_equal(f(z).numpy(), ref(z))


@pytest.mark.parametrize("exclusive", [False, True])
@pytest.mark.parametrize("reverse", [False, True])
def test_cumulative_logsumexp(exclusive, reverse):
    x = RNG.normal(size=(3, 4)) * 3
    flipped = np.flip(x, 1) if reverse else x
    ref = np.log(np.cumsum(np.exp(flipped), axis=1))
    if exclusive:
        ref = np.concatenate([np.full((3, 1), -np.inf), ref[:, :-1]], 1)
    ref = np.flip(ref, 1) if reverse else ref
    f = lambda v: vj.math.cumulative_logsumexp(v, axis=1, exclusive=exclusive, reverse=reverse)  # noqa: E731
    np.testing.assert_allclose(f(x).numpy(), ref, rtol=1e-12)
    keep = (slice(None), slice(1, None) if not reverse else slice(None, -1))
    g = (lambda v: f(v)[keep]) if exclusive else f  # the -inf column has no derivative
    check_grads(g, [x], order=2)
    _check_jacobian(g, x)


def test_cumulative_logsumexp_is_stable():
    out = vj.math.cumulative_logsumexp(vj.constant([-1000.0, 0.0, 1000.0])).numpy()
    np.testing.assert_allclose(out, [-1000.0, 0.0, 1000.0])
    with pytest.raises(ValueError, match="cumulative_logsumexp"):
        vj.math.cumulative_logsumexp(1.0)


def test_polyval_horner_in_tf_order():
    x = RNG.normal(size=3)
    coeffs = [2.0, -1.0, 0.5, 3.0]
    np.testing.assert_allclose(vj.math.polyval(coeffs, x).numpy(), np.polyval(coeffs, x),
                               rtol=1e-14)
    check_grads(lambda v: vj.math.polyval(coeffs, v), [x], order=2)
    assert vj.math.polyval([], x).numpy().tolist() == [0.0] * 3
    with pytest.raises(ValueError, match="polyval: coeffs must be a list"):
        vj.math.polyval((1.0, 2.0), x)


# -- integer and bool helpers ----------------------------------------------------------------
def test_count_nonzero_and_bincount():
    x = np.array([[0.0, 1.0, 2.0], [0.0, 0.0, 3.0]])
    assert vj.math.count_nonzero(x).numpy() == 3
    np.testing.assert_array_equal(vj.math.count_nonzero(x, axis=1, keepdims=True).numpy(),
                                  [[2], [1]])
    assert vj.math.count_nonzero(x, dtype=vj.int32).dtype == np.int32
    arr = np.array([1, 1, 4, 2, 1])
    np.testing.assert_array_equal(vj.math.bincount(arr).numpy(), np.bincount(arr))
    np.testing.assert_array_equal(vj.math.bincount(arr, minlength=7).numpy(),
                                  np.bincount(arr, minlength=7))
    np.testing.assert_array_equal(vj.math.bincount(arr, maxlength=2).numpy(), [0, 3])
    w = RNG.normal(size=5)
    np.testing.assert_allclose(vj.math.bincount(arr, weights=w).numpy(),
                               np.bincount(arr, weights=w), rtol=1e-15)
    np.testing.assert_array_equal(
        vj.math.bincount(np.array([[1, 1], [0, 2]]), axis=-1).numpy(), [[0, 2, 0], [1, 0, 1]])
    check_grads(lambda v: vj.math.bincount(arr, weights=v), [w], order=1)
    with pytest.raises(ValueError, match="bincount: arr must be non-negative"):
        vj.math.bincount([1, -1])


def test_permutations_and_monotonicity():
    np.testing.assert_array_equal(vj.math.invert_permutation([3, 4, 0, 2, 1]).numpy(),
                                  np.argsort([3, 4, 0, 2, 1]))
    with pytest.raises(ValueError, match="invert_permutation"):
        vj.math.invert_permutation([0, 0, 1])
    assert bool(vj.math.is_non_decreasing([1, 2, 2, 3]))
    assert not bool(vj.math.is_strictly_increasing([1, 2, 2, 3]))
    assert bool(vj.math.is_strictly_increasing([[1, 2], [3, 4]]))
    assert not bool(vj.math.is_non_decreasing([[1, 2], [0, 4]]))
    assert bool(vj.math.is_strictly_increasing([5.0]))


def test_in_top_k_and_top_k():
    p = np.array([[0.1, 0.5, 0.5, 0.2], [0.9, 0.3, 0.0, np.inf], [0.4, 0.1, 0.3, 0.2]])
    t = np.array([2, 0, 7])
    np.testing.assert_array_equal(vj.math.in_top_k(t, p, 1).numpy(), [True, False, False])
    np.testing.assert_array_equal(vj.math.in_top_k([3, 1, 2], p, 2).numpy(),
                                  [False, False, True])
    x = np.array([[1.0, 3.0, 2.0, 3.0], [0.5, -1.0, 4.0, 0.0]])
    values, indices = vj.math.top_k(x, k=2)
    np.testing.assert_array_equal(indices.numpy(), [[1, 3], [2, 0]])
    np.testing.assert_array_equal(values.numpy(), [[3.0, 3.0], [4.0, 0.5]])
    assert indices.dtype == np.int32
    y = RNG.normal(size=(2, 5))
    check_grads(lambda v: vj.math.top_k(v, 3).values, [y], order=2)
    _check_jacobian(lambda v: vj.math.top_k(v, 2).values, y)
    with pytest.raises(ValueError, match="top_k: k=6"):
        vj.math.top_k(y, 6)


# -- segments ----------------------------------------------------------------------------------
DATA = RNG.normal(size=(6, 2))
IDS = np.array([2, 0, -1, 2, 0, 2])


def _segment_ref(reduce, data, ids, n, empty):
    return np.stack([reduce(data[ids == i], axis=0) if (ids == i).any()
                     else np.full(data.shape[1:], empty) for i in range(n)])


@pytest.mark.parametrize("name,reduce,empty", [
    ("sum", np.sum, 0.0), ("mean", np.mean, 0.0), ("max", np.max, np.finfo(float).min),
    ("min", np.min, np.finfo(float).max), ("prod", np.prod, 1.0),
    ("sqrt_n", lambda d, axis: d.sum(axis) / math.sqrt(len(d)), 0.0)])
def test_unsorted_segments(name, reduce, empty):
    f = getattr(vj.math, f"unsorted_segment_{name}")
    out = f(DATA, IDS, 4).numpy()
    np.testing.assert_allclose(out, _segment_ref(reduce, DATA, IDS, 4, empty), rtol=1e-14)
    g = lambda v: f(v, np.array([2, 0, -1, 1, 0, 2]), 3)  # noqa: E731 (no empty segment)
    check_grads(g, [DATA], order=2)
    _check_jacobian(g, DATA)


def test_segment_gradients_with_ties_and_zeros():
    data = np.array([1.0, 3.0, 3.0, 0.0, 2.0, 0.0, 0.0, 5.0])
    ids = np.array([0, 0, 0, 1, 1, 2, 2, 2])
    jac = _jacobian(lambda v: vj.math.unsorted_segment_max(v, ids, 3), data)
    np.testing.assert_allclose(jac[0], [0, 0.5, 0.5, 0, 0, 0, 0, 0])  # ties share
    jac = _jacobian(lambda v: vj.math.unsorted_segment_prod(v, ids, 3), data)
    np.testing.assert_allclose(jac[1], [0, 0, 0, 2.0, 0, 0, 0, 0])  # one zero: the others
    np.testing.assert_allclose(jac[2], np.zeros(8))  # two zeros
    check_grads(lambda v: vj.math.unsorted_segment_prod(v, ids, 3), [data], order=2)


def test_unsorted_segment_prod_with_loop_variant_ids_matches_the_loop():
    # inside pfor the ids of each iteration differ: a masked product over all rows,
    # with the values, zeros and gradients of the loop
    data = np.array([[1.5, 0.0, -2.0, 3.0], [0.5, 2.0, 0.0, 0.0], [4.0, -1.0, 2.5, 1.0]])
    ids = np.array([[0, 0, 2, -1], [1, 1, 1, 0], [2, 0, 2, 2]])
    x = vj.constant(data)

    def loop_fn(i):
        return vj.math.unsorted_segment_prod(vj.gather(x, i), vj.gather(vj.constant(ids), i), 4)
    with vj.GradientTape(persistent=True) as tape:
        tape.watch(x)
        got = vj.vectorize.pfor(loop_fn, 3)
        rows = [loop_fn(k) for k in range(3)]
    want = np.stack([_segment_ref(np.prod, data[k], ids[k], 4, 1.0) for k in range(3)])
    np.testing.assert_array_equal(got.numpy(), want)
    w = RNG.standard_normal((3, 4))
    g = tape.gradient(got, x, output_gradients=vj.constant(w)).numpy()
    g_loop = sum(tape.gradient(r, x, output_gradients=vj.constant(w[k])).numpy()
                 for k, r in enumerate(rows))
    np.testing.assert_allclose(g, g_loop, rtol=1e-14)


@pytest.mark.parametrize("name,reduce,empty", [
    ("sum", np.sum, 0.0), ("mean", np.mean, 0.0), ("max", np.max, 0.0), ("min", np.min, 0.0),
    ("prod", np.prod, 1.0)])
def test_sorted_segments(name, reduce, empty):
    ids = np.array([0, 0, 2, 3, 3, 3])
    f = getattr(vj.math, f"segment_{name}")
    np.testing.assert_allclose(f(DATA, ids).numpy(), _segment_ref(reduce, DATA, ids, 4, empty),
                               rtol=1e-14)
    check_grads(lambda v: f(v, ids), [DATA], order=1)
    with pytest.raises(ValueError, match=f"segment_{name}: segment_ids must be sorted"):
        f(DATA, ids[::-1])


def test_segment_sum_vectorizes_and_errors():
    out = vj.vectorized_map(lambda d: vj.math.unsorted_segment_max(d, IDS, 3),
                            vj.constant(RNG.normal(size=(4, 6, 2))))
    assert out.shape == (4, 3, 2)
    with pytest.raises(ValueError, match="unsorted_segment_sum: segment_ids has 5"):
        vj.math.unsorted_segment_sum(DATA, np.array([0, 1, 5, 0, 0, 0]), 3)
    with pytest.raises(ValueError, match="prefix"):
        vj.math.unsorted_segment_sum(DATA, np.zeros(5, int), 3)
    with pytest.raises(TypeError, match="segment_ids must be an integer"):
        vj.math.unsorted_segment_sum(DATA, np.zeros(6), 3)


# -- cross, approximate_equal, bucketize -----------------------------------------------------
@pytest.mark.parametrize("shape", [(3,), (4, 3), (2, 2, 3)])
def test_cross_values_gradients_and_jacobian(shape):
    a, b = RNG.normal(size=shape), RNG.normal(size=shape)
    np.testing.assert_allclose(vj.math.cross(a, b).numpy(), np.cross(a, b), rtol=1e-13,
                               atol=1e-15)
    check_grads(vj.math.cross, [a, b], order=2, modes=("fwd", "rev"))
    _check_jacobian(lambda v: vj.math.cross(v, b), a)
    _check_jacobian(lambda v: vj.math.cross(a, v), b)


def test_cross_dtypes_alias_and_sparsity():
    assert vj.linalg.cross is vj.math.cross  # TF 2's name is tf.linalg.cross
    a, b = np.array([[1, 2, 3], [-4, 0, 7]]), np.array([[4, 5, 6], [1, 1, -2]])
    out = vj.math.cross(a, b)
    assert out.dtype == np.int64
    np.testing.assert_array_equal(out.numpy(), np.cross(a, b))
    f32 = vj.math.cross(a.astype(np.float32), b.astype(np.float32))
    assert f32.dtype == np.float32
    np.testing.assert_allclose(f32.numpy(), np.cross(a, b), rtol=1e-6)
    # (a x b)_k reads the two other components of the same row of a: an exact pattern
    bf = b.astype(float)
    pattern = vj.jacobian_sparsity(lambda v: vj.math.cross(v, bf), a.astype(float))
    want = np.kron(np.eye(2), 1 - np.eye(3)).astype(bool)
    np.testing.assert_array_equal(pattern.toarray() != 0, want)


def test_cross_errors():
    with pytest.raises(ValueError, match=r"cross: a and b must have a last axis of size 3"):
        vj.math.cross(np.ones((2, 2)), np.ones((2, 2)))
    with pytest.raises(ValueError, match=r"cross: a and b must have the same shape, got "
                                         r"\(2, 3\) and \(3,\)"):
        vj.math.cross(np.ones((2, 3)), np.ones(3))  # TF does not broadcast
    with pytest.raises(ValueError, match="last axis of size 3"):
        vj.math.cross(1.0, 2.0)
    with pytest.raises(TypeError, match="cross: a and b must have the same dtype"):
        vj.math.cross(np.ones(3), np.ones(3, np.float32))
    with pytest.raises(TypeError, match="cross: b must be a real numeric tensor"):
        vj.math.cross(np.ones(3), np.ones(3, bool))
    with pytest.raises(TypeError, match="cross: a has complex dtype"):
        vj.math.cross(np.ones(3) + 1j, np.ones(3) + 1j)


def test_approximate_equal():
    x = RNG.normal(size=(3, 4))
    y = x + RNG.choice([0.0, 5e-6, 2e-5, -3e-6, -1.0], size=x.shape)
    out = vj.math.approximate_equal(x, y)  # default tolerance 1e-5
    assert out.dtype == np.bool_ and out.shape == (3, 4)
    np.testing.assert_array_equal(out.numpy(), np.abs(x - y) < 1e-5)
    # strict: a difference equal to the tolerance is not within it
    np.testing.assert_array_equal(
        vj.math.approximate_equal([0.0, 0.0], [0.25, 0.125], tolerance=0.25).numpy(),
        [False, True])
    # unsigned differences do not wrap around; integer inputs take a fractional tolerance
    u = vj.math.approximate_equal(np.array([1, 7], np.uint8), np.array([2, 7], np.uint8), 1.5)
    np.testing.assert_array_equal(u.numpy(), [True, True])
    np.testing.assert_array_equal(
        vj.math.approximate_equal(np.array([1, 3]), np.array([1, 2]), 0.5).numpy(),
        [True, False])
    c = vj.math.approximate_equal(np.array([1 + 1j, 1j]), np.array([1 + 1.000001j, 0.0]))
    np.testing.assert_array_equal(c.numpy(), [True, False])  # |x - y|: the modulus
    f32 = vj.math.approximate_equal(np.float32([1.0]), np.float32([1.5]), tolerance=0.6)
    np.testing.assert_array_equal(f32.numpy(), [True])


def test_approximate_equal_errors():
    with pytest.raises(ValueError, match=r"approximate_equal: x and y must have the same "
                                         r"shape, got \(2,\) and \(3,\)"):
        vj.math.approximate_equal(np.ones(2), np.ones(3))
    with pytest.raises(TypeError, match="approximate_equal: x and y must have the same dtype"):
        vj.math.approximate_equal(np.ones(2), np.ones(2, np.float32))
    with pytest.raises(TypeError, match="approximate_equal: tolerance must be a real number"):
        vj.math.approximate_equal(np.ones(2), np.ones(2), tolerance="0.1")
    with pytest.raises(TypeError, match="approximate_equal: x must be a numeric tensor"):
        vj.math.approximate_equal(np.ones(2, bool), np.ones(2, bool))


def test_bucketize_values():
    # TF's documented example: a value equal to a boundary goes to the bucket above it
    out = vj.math.bucketize(np.array([[-5, 10000], [150, 10], [5, 100]]), [0, 10, 100])
    assert out.dtype == np.int32 and out.shape == (3, 2)
    np.testing.assert_array_equal(out.numpy(), [[0, 3], [3, 2], [1, 3]])
    edges = [-1.0, -0.25, 0.0, 0.0, 0.5, 1.0]  # a repeated edge: an empty bucket
    x = np.concatenate([RNG.normal(size=20), edges, [np.nan, -np.inf, np.inf]])
    np.testing.assert_array_equal(vj.math.bucketize(x, edges).numpy(), np.digitize(x, edges))
    np.testing.assert_array_equal(vj.math.bucketize(x, tuple(edges)).numpy(),
                                  np.searchsorted(edges, x, side="right"))
    np.testing.assert_array_equal(vj.math.bucketize(x[:4], []).numpy(), np.zeros(4))
    np.testing.assert_array_equal(
        vj.math.bucketize(np.array([0, 1, 2], np.int32), [0.5, 1.0]).numpy(), [0, 2, 2])
    # one pfor pass over a stacked input
    batch = RNG.normal(size=(4, 5))
    got = vj.vectorized_map(lambda r: vj.math.bucketize(r, edges), vj.constant(batch))
    np.testing.assert_array_equal(got.numpy(), np.digitize(batch, edges))


def test_bucketize_is_not_differentiable_and_errors():
    x = vj.constant([0.2, 0.7])
    with vj.GradientTape() as tape:
        tape.watch(x)
        b = vj.cast(vj.math.bucketize(x, [0.5]), vj.float64)
    assert tape.gradient(b, x) is None
    with pytest.raises(ValueError, match=r"bucketize: boundaries must be sorted \(non-"
                                         r"decreasing\), got \[1.0, 0.0\]"):
        vj.math.bucketize(x, [1.0, 0.0])
    with pytest.raises(ValueError, match="bucketize: boundaries must be sorted"):
        vj.math.bucketize(x, [0.0, float("nan")])
    with pytest.raises(TypeError, match="bucketize: boundaries must be a list of floats, "
                                        "got ndarray"):
        vj.math.bucketize(x, np.array([0.0, 1.0]))
    with pytest.raises(TypeError, match=r"boundaries\[1\] is 'a'"):
        vj.math.bucketize(x, [0.0, "a"])
    with pytest.raises(TypeError, match="bucketize: input must be a real tensor"):
        vj.math.bucketize(np.array([True]), [0.5])
