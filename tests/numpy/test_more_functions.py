"""More NumPy functions on Tensors: remainders and steps (fmod, copysign, heaviside,
ldexp), angle, i0, statistics (nansum ... corrcoef), polyval, trapezoid, convolve,
meshgrid, insert, delete, resize.

Every case runs a NumPy call on plain arrays (the oracle) and on Tensors: values and
dtypes must agree, gradients must match central differences, pfor must agree with the
plain loop, and no call may fall back to NumPy (NotDifferentiableWarning).
"""
import warnings

import numpy as np
import pytest

import vecjac as vj
from vecjac._src.numpy import dispatch as vecjac_numpy
from tests.numpy.test_dispatch import check_inside_pfor, check_values_match
from vecjac.testing import check_grads, numerical_jacobian

rng = np.random.default_rng(7)
A = rng.standard_normal((3, 4))
A2 = rng.standard_normal((3, 4))
C3 = rng.standard_normal((2, 3, 4))
V = rng.standard_normal(5)
V3 = rng.standard_normal(3)
W4 = rng.uniform(0.5, 2.0, 4)
P = rng.uniform(0.5, 2.0, (3, 4))
AN = A.copy()
AN[0, 1] = AN[2, 3] = np.nan
XS = np.sort(rng.standard_normal(4))
Q = np.array([1.2, -0.5, 2.0, 0.7])
I4 = np.array([1, -2, 3, 0])
NAN_ROWS = np.isnan(AN)

# (id, f, args, gradient order: 2 smooth, 1 piecewise smooth, 0 not differentiable)
CASES = [
    ("fmod", np.fmod, [A * 3, P], 1),
    ("fmod_negative_divisor", np.fmod, [A * 3, -P], 1),
    ("copysign", np.copysign, [A, A2], 1),
    ("heaviside", np.heaviside, [A, A2], 1),
    ("ldexp", lambda x: np.ldexp(x, I4), [A], 2),
    ("angle", np.angle, [A], 1),
    ("angle_deg", lambda x: np.angle(x, deg=True), [A], 1),
    ("i0", np.i0, [A], 2),
    ("nansum", np.nansum, [AN], 2),
    ("nansum_axis", lambda x: np.nansum(x, axis=1, keepdims=True), [AN], 2),
    ("nanmean", lambda x: np.nanmean(x, axis=0), [AN], 2),
    ("nanmean_all", np.nanmean, [AN], 2),
    ("nanprod", lambda x: np.nanprod(x, axis=1), [AN], 2),
    ("average", np.average, [A], 2),
    ("average_weights", lambda x, w: np.average(x, axis=1, weights=w), [A, W4], 2),
    ("average_returned", lambda x, w: np.average(x, weights=w, returned=True), [A, P], 2),
    ("average_axes", lambda x, w: np.average(x, axis=(0, 2), weights=w, keepdims=True),
     [C3, P[:2]], 2),
    ("ptp", np.ptp, [A], 1),
    ("ptp_axis", lambda x: np.ptp(x, axis=0, keepdims=True), [A], 1),
    ("median", np.median, [A], 1),
    ("median_even_axis", lambda x: np.median(x, axis=1), [A], 1),
    ("median_odd_axes", lambda x: np.median(x, axis=(0, 2), keepdims=True), [C3[:, :, :3]], 1),
    ("median_nan", lambda x: np.median(x, axis=1), [AN], 0),
    ("percentile", lambda x: np.percentile(x, 30), [A], 1),
    ("percentile_list_axis", lambda x: np.percentile(x, [10, 50, 100], axis=1), [A], 1),
    ("percentile_keepdims", lambda x: np.percentile(x, 65.0, axis=(0, 2), keepdims=True),
     [C3], 1),
    ("quantile", lambda x: np.quantile(x, 0.4, axis=0), [A], 1),
    ("quantile_2d_q", lambda x: np.quantile(x, np.array([[0.1, 0.5], [0.75, 0.9]])), [C3], 1),
    ("cov", np.cov, [A], 2),
    ("cov_columns", lambda x: np.cov(x, rowvar=False, bias=True), [A], 2),
    ("cov_y", np.cov, [V, V * V], 2),
    ("cov_ddof", lambda x: np.cov(x, ddof=0), [A], 2),
    ("corrcoef", np.corrcoef, [A], 2),
    ("corrcoef_y", lambda x, y: np.corrcoef(x, y, rowvar=False), [A, A2[:, :1]], 2),
    ("polyval", np.polyval, [Q, A], 2),
    ("trapezoid", np.trapezoid, [A], 2),
    ("trapezoid_dx", lambda y: np.trapezoid(y, dx=0.3, axis=0), [A], 2),
    ("trapezoid_x", lambda y, x: np.trapezoid(y, x), [A, XS], 2),
    ("trapezoid_x2d", lambda y, x: np.trapezoid(y, x, axis=1), [A, np.sort(A2, axis=1)], 2),
    ("convolve", np.convolve, [V, V3], 2),
    ("convolve_same", lambda a, v: np.convolve(a, v, "same"), [V3, V], 2),
    ("convolve_valid", lambda a, v: np.convolve(a, v, mode="valid"), [V, V3], 2),
    ("meshgrid", np.meshgrid, [V, V3], 2),
    ("meshgrid_ij_sparse", lambda *x: np.meshgrid(*x, indexing="ij", sparse=True),
     [V, V3, W4], 2),
    ("insert_scalar", lambda a: np.insert(a, 2, 5.0), [A], 2),
    ("insert_column", lambda a, v: np.insert(a, 1, v, axis=1), [A, V3], 2),
    ("insert_list", lambda a, v: np.insert(a, [0, 2, 2, -1], v, axis=1), [A, V3[:, None]], 2),
    ("insert_slice", lambda a, v: np.insert(a, slice(0, 3, 2), v, axis=0), [A, W4], 2),
    ("delete", lambda a: np.delete(a, 1, axis=1), [A], 2),
    ("delete_list", lambda a: np.delete(a, [0, -1]), [A], 2),
    ("delete_slice_mask", lambda a: np.delete(np.delete(a, slice(None, None, 2), axis=1),
                                              [True, False, True], axis=0), [A], 2),
    ("resize", lambda a: np.resize(a, (5, 3)), [A], 2),
    ("resize_int", lambda a: np.resize(a, 7), [A], 2),
]
IDS = [c[0] for c in CASES]


def _leaves(x):
    return list(x) if isinstance(x, (tuple, list)) else [x]


def _no_fallback(f, tensors):
    """f on Tensors, under a tape, with NotDifferentiableWarning as an error."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", vj.NotDifferentiableWarning)
        with vj.GradientTape() as tape:
            for t in tensors:
                tape.watch(t)
            return f(*tensors)


@pytest.mark.parametrize("name,f,args,order", CASES, ids=IDS)
def test_values_match_numpy_without_fallback(name, f, args, order):
    check_values_match(name, f, args, lambda *ts: _no_fallback(f, list(ts)))


F32 = ["fmod", "copysign", "heaviside", "ldexp", "angle_deg", "i0", "nanmean", "average",
       "average_weights", "median", "percentile", "percentile_list_axis", "quantile", "cov",
       "corrcoef", "polyval", "trapezoid_x", "convolve", "insert_column", "resize"]


@pytest.mark.parametrize("name,f,args,order", [c for c in CASES if c[0] in F32], ids=F32)
def test_float32_values_and_dtypes_match_numpy(name, f, args, order):
    args = [a.astype(np.float32) for a in args]
    expected = _leaves(f(*args))
    got = _leaves(_no_fallback(f, [vj.constant(a) for a in args]))
    for g, e in zip(got, expected):
        e = np.asarray(e)
        assert g.shape == e.shape and g.dtype == e.dtype, (g.shape, g.dtype, e.shape, e.dtype)
        np.testing.assert_allclose(g.numpy(), e, rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("name,f,args,order", [c for c in CASES if c[3]],
                         ids=[c[0] for c in CASES if c[3]])
def test_gradients_match_finite_differences(name, f, args, order):
    check_grads(f, args, order=order)


PFOR = ["fmod", "copysign", "heaviside", "ldexp", "angle", "i0", "nansum_axis", "nanmean",
        "nanprod", "average_weights", "average_returned", "ptp_axis", "median_even_axis",
        "median_nan", "percentile_list_axis", "quantile_2d_q", "cov", "cov_y", "corrcoef",
        "polyval", "trapezoid_x", "convolve", "convolve_same", "meshgrid", "insert_column",
        "insert_list", "delete_list", "resize"]


@pytest.mark.parametrize("name,f,args,order", [c for c in CASES if c[0] in PFOR], ids=PFOR)
def test_inside_pfor(name, f, args, order):
    check_inside_pfor(f, args)


@pytest.mark.parametrize("f", [
    lambda x: np.percentile(x, [20, 70], axis=0),
    lambda x: np.corrcoef(x),
    lambda x: np.insert(np.delete(x, 0, axis=1), 1, np.median(x, axis=1), axis=1),
    lambda x: np.convolve(np.ravel(x), np.fmod(x[0], 0.7), "same"),
], ids=["percentile", "corrcoef", "insert_delete_median", "convolve_fmod"])
def test_vectorized_jacobian_matches_finite_differences(f):
    jac = vj.jacobian(f)(vj.constant(A))  # a pfor over the output's entries
    expected = numerical_jacobian(lambda x: f(vj.constant(x)).numpy(), A)
    np.testing.assert_allclose(jac.numpy(), expected, rtol=1e-6, atol=1e-7)


# -- derivatives against their formulas ------------------------------------------------------
def _grads(f, *arrays):
    xs = [vj.constant(a) for a in arrays]
    with vj.GradientTape(persistent=True) as tape:
        for x in xs:
            tape.watch(x)
        y = f(*xs)
    return [tape.gradient(y, x, unconnected_gradients="zero").numpy() for x in xs]


def test_fmod_derivatives_are_one_and_minus_the_truncated_quotient():
    x, y = A * 3, np.where(A2 > 0, P, -P)
    dx, dy = _grads(np.fmod, x, y)
    np.testing.assert_array_equal(dx, np.ones_like(x))
    np.testing.assert_array_equal(dy, -np.trunc(x / y))


def test_copysign_follows_the_sign_bit_and_has_no_y_derivative():
    x, y = np.array([1.5, -2.0, 3.0, -0.5]), np.array([-0.0, 0.0, -np.inf, 2.0])
    got = np.copysign(vj.constant(x), vj.constant(y)).numpy()
    np.testing.assert_array_equal(np.signbit(got), np.signbit(np.copysign(x, y)))
    dx, dy = _grads(np.copysign, x, y)
    np.testing.assert_array_equal(dx, np.sign(x) * np.where(np.signbit(y), -1.0, 1.0))
    np.testing.assert_array_equal(dy, 0.0)


def test_heaviside_is_differentiable_in_h_where_x_is_zero():
    x, h = np.array([-1.0, 0.0, 2.0, np.nan]), np.array([0.3, 0.5, 0.7, 0.1])
    got = np.heaviside(vj.constant(x), vj.constant(h)).numpy()
    np.testing.assert_array_equal(got, np.heaviside(x, h))
    dx, dh = _grads(lambda a, b: np.nansum(np.heaviside(a, b)), x, h)
    np.testing.assert_array_equal(dh, [0.0, 1.0, 0.0, 0.0])
    np.testing.assert_array_equal(dx, 0.0)


def test_angle_of_negative_zero_is_pi_and_its_derivative_is_zero():
    x = np.array([-0.0, 0.0, -3.0, np.inf, np.nan])
    np.testing.assert_array_equal(np.angle(vj.constant(x)).numpy(), np.angle(x))
    (dx,) = _grads(lambda a: np.angle(a[:4]), x)
    np.testing.assert_array_equal(dx, 0.0)


def test_nan_entries_get_zero_gradient():
    for fn in (np.nansum, np.nanmean, np.nanprod):
        (g,) = _grads(fn, AN)
        assert np.all(g[NAN_ROWS] == 0) and np.all(g[~NAN_ROWS] != 0), fn.__name__


def test_median_gradient_splits_between_the_two_middle_values():
    (g,) = _grads(np.median, np.array([4.0, 1.0, 3.0, 2.0]))
    np.testing.assert_array_equal(g, [0.0, 0.0, 0.5, 0.5])


def test_integer_inputs_keep_numpy_dtypes():
    ints = np.arange(12).reshape(3, 4) * 3
    for f in (np.median, lambda x: np.percentile(x, 40, axis=1), lambda x: np.quantile(x, [0, 1]),
              np.cov, np.ptp, lambda x: np.ldexp(x, 3), np.i0, np.angle,
              lambda x: np.convolve(x[0], x[1]), lambda x: np.insert(x, 1, 2.7)):
        e, g = np.asarray(f(ints)), f(vj.constant(ints))
        assert g.dtype == e.dtype
        np.testing.assert_allclose(g.numpy(), e)


# -- errors and declined arguments -----------------------------------------------------------
def test_complex_angle_is_numpys_with_a_warning():
    # declined as every adapter declines complex input: NumPy's value, no derivative
    z = np.array([1 + 1j, -2.0])
    np.testing.assert_allclose(np.asarray(np.angle(vj.constant(z))), np.angle(z))


@pytest.mark.parametrize("call,error,match", [
    (lambda t: np.insert(t, 9, 1.0, axis=1), IndexError, "np.insert: obj: index 9"),
    (lambda t: np.delete(t, [0, -7], axis=0), IndexError, "np.delete: obj: index -7"),
    (lambda t: np.delete(t, [True, False], axis=0), ValueError, "np.delete: a boolean obj"),
    (lambda t: np.insert(t, [0, 1], np.ones((2, 2)), axis=1), ValueError, "np.insert: values"),
    (lambda t: np.resize(t, (-1, 2)), ValueError, "np.resize: .*non-negative"),
    (lambda t: np.percentile(t, 101), ValueError, r"np.percentile: q must be in the range"),
    (lambda t: np.quantile(t, [0.5, -0.1]), ValueError, r"np.quantile: q must be in the range"),
    (lambda t: np.average(t, weights=W4), TypeError, "np.average: axis must be given"),
    (lambda t: np.average(t, axis=0, weights=W4), ValueError, "np.average: the shape of weights"),
    (lambda t: np.average(t, axis=1, weights=np.zeros(4)), ZeroDivisionError, "np.average"),
    (lambda t: np.cov(np.reshape(t, (1, 3, 4))), ValueError, "np.cov: m has more than 2"),
    (lambda t: np.cov(t, ddof=1.5), ValueError, "np.cov: ddof must be an integer"),
    (lambda t: np.convolve(t[0], t[1], mode="middle"), ValueError, "np.convolve: mode"),
    (lambda t: np.convolve(t, t[0]), ValueError, "np.convolve: a must be 1-D"),
    (lambda t: np.trapezoid(t, XS[:3]), ValueError, "np.trapezoid: 1-D x"),
    (lambda t: np.ldexp(t, 1.5), TypeError, "np.ldexp: the exponent i"),
    (lambda t: np.meshgrid(t[0], indexing="xx"), ValueError, "np.meshgrid: indexing"),
    (lambda t: np.polyval(t[0, 0], t), TypeError, "np.polyval: p must be a sequence"),
])
def test_bad_arguments_raise_errors_naming_them(call, error, match):
    with pytest.raises(error, match=match):
        call(vj.constant(A))


@pytest.mark.parametrize("call,q", [
    (lambda t, q: np.percentile(t, 40, method="nearest"), None),
    (lambda t, q: np.cov(t, fweights=np.array([1, 2, 1, 1])), None),
    (lambda t, q: np.quantile(t, q), 0.3),
], ids=["percentile_method", "cov_fweights", "quantile_tensor_q"])
def test_declined_arguments_fall_back_to_numpy_with_a_warning(call, q):
    expected = call(A, q)
    t = vj.constant(A)
    vecjac_numpy._warned.clear()
    with vj.GradientTape() as tape:
        tape.watch(t)
        with pytest.warns(vj.NotDifferentiableWarning):
            got = call(t, None if q is None else vj.constant(q))
    assert not isinstance(got, vj.Tensor)
    np.testing.assert_allclose(got, expected)


def test_new_functions_are_in_the_coverage_table():
    covered = set(vecjac_numpy.covered_functions())
    for name in ("fmod", "copysign", "heaviside", "ldexp", "angle", "i0", "nansum", "nanmean",
                 "nanprod", "average", "ptp", "median", "percentile", "quantile", "cov",
                 "corrcoef", "polyval", "trapezoid", "convolve", "meshgrid", "insert",
                 "delete", "resize"):
        assert f"np.{name}" in covered, name
