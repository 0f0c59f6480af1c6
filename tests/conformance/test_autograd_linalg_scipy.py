"""Cases from autograd's test suite, checked against vecjac: numpy.linalg, scipy.linalg,
scipy.special, scipy.stats, scipy.signal and scipy.integrate.

Sources: HIPS/autograd tests/test_linalg.py (with the solve_triangular, sqrtm and
symmetrized-eigh cases of its older versions) and tests/test_scipy.py, plus the
elementwise check of tests/numpy_utils.py for the unary special functions (see
tests/conformance/test_autograd_cases.py for the whole list and what is not carried
over). The machinery -- `point`, `grid`, `special_function`, ... -- is described in
tests/conformance/test_autograd_adapter.py. autograd checks most of these in reverse mode
only (its forward mode had no rules for them); both modes are checked here.
"""
import functools

import numpy as np
import pytest
import scipy.stats

import vecjac as vj
from tests.conformance.test_autograd_adapter import (Draws, check_all, grid, pack,
                                                     point, scalar_grad, special_function,
                                                     standard_shapes, table)

stats = vj.scipy.stats
spla = vj.scipy.linalg


def _swap_last_axes(a):
    return np.swapaxes(a, -1, -2)


def from_lower_triangle(fn):
    """fn of the symmetric matrix whose lower triangle is the argument's: the
    derivative sees a function of the lower triangle only, as a symmetric-input op
    (eigh, cholesky, sqrtm) does."""
    def f(a, *rest):
        lower = np.tril(a)
        return fn((lower + _swap_last_axes(lower)) / 2.0, *rest)
    return f


def symmetrizing(fn, k):
    """fn with its k-th argument replaced by the average of it and its transpose."""
    def f(*args, **kwargs):
        args = list(args)
        a = args[k]
        args[k] = 0.5 * (a + (_swap_last_axes(a) if np.ndim(a) > 1 else a))
        return fn(*args, **kwargs)
    return f


def _gram(a):
    return a @ a.T


def _gram_plus_identity(a):
    return a.T @ a + np.eye(a.shape[0])


# ======================================================================================
# numpy.linalg and scipy.linalg
# ======================================================================================
d = Draws(301)
R = d.normal
_PSD6 = _gram(R(6, 6))
_PSD5 = _gram(R(5, 5))
_SQUARE = R(6, 6)
_SHIFTED_BATCH = R(2, 3, 6, 6) + 10 * np.eye(6)
_GRAM_BATCH = np.einsum("...ij,...kj->...ik", _SHIFTED_BATCH, _SHIFTED_BATCH)


def _solve_for(b):
    return lambda a: np.linalg.solve(a, b)


def _pinv_of_gram(x):
    return np.linalg.pinv(np.matmul(_swap_last_axes(x), x))


def _reparameterized_sample_norm(cov):
    noise = np.random.default_rng(0).standard_normal(cov.shape[0])
    return np.linalg.norm(np.linalg.cholesky(cov) @ noise)


def _eigh(uplo):
    return lambda x: tuple(np.linalg.eigh(x, *uplo))


def _eig_magnitudes(x):
    w, v = np.linalg.eig(x)
    return np.abs(w), np.abs(v)


# 5 x m matrices, m = 2..7 (wide, square and tall), single and in a batch of two.
# Second derivatives of pinv(x^T x) grow like the cube of the Gram matrix's condition
# number, beyond what central differences resolve when it is large: this draw (its own
# seed) keeps the condition numbers of the full-rank Gram matrices below 4000
_pinv_draws = Draws(310)
_PINV_INPUTS = [_pinv_draws.normal(5, m) for m in range(2, 8)] + \
    [_pinv_draws.normal(2, 5, m) for m in range(2, 8)]
assert max(np.linalg.cond(_swap_last_axes(x) @ x).max()
           for x in _PINV_INPUTS if x.shape[-1] <= 5) < 4000
_ROOT8 = R(8, 8)
LINALG = table([
    ("inv", point(np.linalg.inv, _ROOT8 @ _ROOT8 + np.eye(8))),
    ("inv/batched", grid(np.linalg.inv, [R(4, 4, 4) + 5 * np.eye(4),
                                         R(4, 4, 4, 4) + 5 * np.eye(4)])),
    ("pinv/wide-and-tall", grid(np.linalg.pinv, _PINV_INPUTS)),
    ("pinv/low-rank-gram", grid(_pinv_of_gram, _PINV_INPUTS)),
    ("solve/in-the-matrix", point(_solve_for(R(8, 7)), R(8, 8) + 10.0 * np.eye(8))),
    ("solve/in-the-matrix-vector-rhs", point(_solve_for(R(8)), R(8, 8) + 10.0 * np.eye(8))),
    ("solve/in-the-rhs", point(np.linalg.solve, R(6, 6) + np.eye(6), R(6, 5), wrt=1)),
    ("solve/batched-vector-rhs", point(
        lambda a, b: np.linalg.solve(a, b[..., None])[..., 0], R(5, 4, 4) + 5 * np.eye(4),
        R(5, 4))),
    ("solve/batched-matrix-rhs", point(np.linalg.solve, R(5, 4, 4) + 5 * np.eye(4),
                                       R(5, 4, 6))),
    ("det", point(np.linalg.det, R(6, 6))),
    ("det/batched", point(np.linalg.det, R(3, 3, 3))),
    ("slogdet", grid(lambda x: np.linalg.slogdet(x)[1], [_SQUARE, -_SQUARE])),
    ("slogdet/batched", point(lambda x: np.sum(np.linalg.slogdet(x)[1]),
                              np.stack([_PSD5 + 5 * np.eye(5)] * 3))),
    ("norm/vector", point(np.linalg.norm, R(6))),
    ("norm/frobenius", point(np.linalg.norm, R(6, 5))),
    ("norm/frobenius-over-axes", point(lambda x: np.linalg.norm(x, axis=(0, 1)),
                                       R(6, 5, 4))),
    ("norm/vector-ords", grid(lambda x, p: np.linalg.norm(x, ord=p), [R(6)], [2, 3, 4])),
    ("norm/axis", grid(lambda x, k: np.linalg.norm(x, axis=k), [R(6, 5, 4)], [0, 1, 2])),
    ("norm/nuclear", point(lambda x: np.linalg.norm(x, ord="nuc"), R(6, 5), order=1)),
    ("norm/nuclear-over-axes", point(lambda x: np.linalg.norm(x, ord="nuc", axis=(0, 1)),
                                     R(6, 5, 4), order=1)),
    # eigh reads one triangle: a non-symmetric input is a function of that triangle
    ("eigh/lower-triangle", point(_eigh(()), R(6, 6))),
    ("eigh/upper-triangle", point(_eigh(("U",)), R(6, 6))),
    ("eigh/batched/lower", point(_eigh(()), _GRAM_BATCH)),
    ("eigh/batched/upper", point(_eigh(("U",)), _GRAM_BATCH)),
    ("eigh/symmetrized/lower", point(from_lower_triangle(_eigh(())), _SQUARE.T @ _SQUARE)),
    ("eigh/symmetrized/upper", point(from_lower_triangle(_eigh(("U",))),
                                     _SQUARE.T @ _SQUARE)),
    ("eig/magnitudes", point(_eig_magnitudes, R(8, 8))),
    ("cholesky", point(from_lower_triangle(np.linalg.cholesky), _PSD6)),
    ("cholesky/batched", point(from_lower_triangle(np.linalg.cholesky),
                               np.stack([_PSD6] * 3))),
    ("cholesky/reparameterization", point(from_lower_triangle(_reparameterized_sample_norm),
                                          _PSD6)),
    ("sqrtm/positive-definite", point(from_lower_triangle(spla.sqrtm), _PSD6)),
] + [
    (f"svd/{kind}", point(lambda x: tuple(np.linalg.svd(x, full_matrices=False)), R(*shape)))
    for kind, shape in [("wide", (3, 5)), ("wide-batched", (4, 3, 5)), ("square", (4, 4)),
                        ("square-batched", (3, 4, 4)), ("tall", (5, 3)),
                        ("tall-batched", (4, 5, 3))]
] + [
    (f"svd/values-only/{kind}", point(
        lambda x: np.linalg.svd(x, full_matrices=False, compute_uv=False), R(*shape)))
    for kind, shape in [("tall", (5, 3)), ("tall-batched", (4, 5, 3))]
])


@pytest.mark.parametrize("cases", LINALG)
def test_linalg_derivatives_match_differences(cases):
    check_all(cases)


d = Draws(302)
_TRIANGULAR = d.normal(6, 6) + 10 * np.eye(6)


@pytest.mark.parametrize("lower", [True, False], ids=["lower", "upper"])
@pytest.mark.parametrize("trans", ["T", "N", "C", 0, 1, 2])
def test_solve_triangular_derivatives_match_differences(trans, lower):
    solve = functools.partial(spla.solve_triangular, trans=trans, lower=lower)
    vector, matrix = d.normal(6), d.normal(6, 5)
    check_all([point(solve, d.normal(6, 6) + 10 * np.eye(6), vector),  # in the matrix
               point(solve, _TRIANGULAR, vector, wrt=1),
               point(solve, _TRIANGULAR, matrix, wrt=1)])


@pytest.mark.parametrize("container", [list, tuple])
def test_norm_of_a_sequence_of_traced_values(container):
    # |(x, x + 2)| = sqrt(x**2 + (x + 2)**2): slope (2x + 2) / |.| = 1 at x = 0
    g = vj.grad(lambda x: np.linalg.norm(pack(container([x, x + 2.0]))))(0.0)
    assert float(g) == 1.0


d = Draws(303)
SCIPY_LINALG = table([
    ("solve_sylvester", point(spla.solve_sylvester, d.normal(3, 3), d.normal(3, 3),
                              d.normal(3, 3), wrt=(0, 1, 2))),
    ("solve_banded", point(spla.solve_banded, (1, 1), d.normal(3, 5), d.normal(5),
                           wrt=(1, 2), order=1)),
])


@pytest.mark.parametrize("cases", SCIPY_LINALG)
def test_scipy_linalg_derivatives_match_differences(cases):
    check_all(cases)


def test_sqrtm_of_a_symmetrized_random_matrix():
    # the source draws a plain random matrix, whose symmetrized part is usually indefinite:
    # its sqrtm is complex, which vecjac refuses by design. Shifting the draw by 3 I (its
    # eigenvalues are then positive) keeps the case: sqrtm of the symmetrized input.
    a = Draws(304).normal(3, 3) + 3.0 * np.eye(3)
    assert np.linalg.eigvalsh(0.5 * (a + a.T)).min() > 0
    point(symmetrizing(spla.sqrtm, 0), a).assert_derivatives()


# ======================================================================================
# scipy.stats
# ======================================================================================
d = Draws(305)
R = d.normal


def _shape_param(*shape):  # a positive parameter (degrees of freedom, shape, scale)
    return d.positive(*shape)


def _t_dof(*shape):
    return d.positive(*shape, above=2.1)


def _counts(*shape):
    return np.round(R(*shape) ** 2)


_ALL3, _ALL4 = (0, 1, 2), (0, 1, 2, 3)
STATS = table(
    [(f"chi2.{m}", grid(getattr(stats.chi2, m), [_shape_param(4)], [1, 2, 3]))
     for m in ("pdf", "cdf", "logpdf")]
    + [("beta.cdf", point(stats.beta.cdf, d.uniform(0, 1, 4), _shape_param(4),
                          _shape_param(4)))]
    + [(f"beta.{m}", point(getattr(stats.beta, m), d.uniform(0, 1, 4), _shape_param(4),
                           _shape_param(4), wrt=_ALL3)) for m in ("pdf", "logpdf")]
    + [("gamma.cdf", point(stats.gamma.cdf, _shape_param(4), _shape_param(4)))]
    + [(f"gamma.{m}", point(getattr(stats.gamma, m), _shape_param(4), _shape_param(4),
                            wrt=(0, 1))) for m in ("pdf", "logpdf")]
    + [(f"norm.{m}", point(getattr(stats.norm, m), R(4), R(4), _shape_param(4), wrt=_ALL3))
       for m in ("pdf", "cdf", "sf", "logpdf", "logcdf", "logsf")]
    + [(f"norm.{m}", point(getattr(stats.norm, m), d.uniform(0.05, 0.95, 4), R(4),
                           _shape_param(4), wrt=_ALL3)) for m in ("ppf", "isf")]
    # broadcasting: x (4, 3), loc (1, 3), scale (4, 1). (autograd's broadcast sf and
    # logsf cases call cdf and logcdf, repeating those two)
    + [(f"norm.{m}/broadcast", point(getattr(stats.norm, m), R(4, 3), R(1, 3),
                                     _shape_param(4, 1), wrt=_ALL3))
       for m in ("pdf", "cdf", "logpdf", "logcdf")]
    + [(f"norm.{m}/broadcast", point(getattr(stats.norm, m), d.uniform(0.05, 0.95, 4, 3),
                                     R(1, 3), _shape_param(4, 1), wrt=_ALL3))
       for m in ("ppf", "isf")]
    + [(f"poisson.{m}", point(getattr(stats.poisson, m), _counts(4), _shape_param(4), wrt=1))
       for m in ("cdf", "logpmf", "pmf")]
    + [(f"poisson.{m}/broadcast", point(getattr(stats.poisson, m), _counts(4, 3),
                                        _shape_param(4, 1), wrt=1))
       for m in ("cdf", "logpmf", "pmf")]
    # Student's t: (x, df, loc, scale); the cdfs are checked in x and loc only
    + [(f"t.{m}", point(getattr(stats.t, m), R(4), _t_dof(4), R(4), _t_dof(4), wrt=wrt))
       for m, wrt in [("pdf", _ALL4), ("cdf", (0, 2)), ("logpdf", _ALL4), ("logcdf", (0, 2))]]
    + [(f"t.{m}/broadcast", point(getattr(stats.t, m), R(4, 3), _t_dof(1, 3), R(4, 3),
                                  _t_dof(4, 1), wrt=wrt))
       for m, wrt in [("pdf", _ALL4), ("cdf", (0, 2)), ("logpdf", _ALL4), ("logcdf", (0, 2))]]
)


@pytest.mark.parametrize("cases", STATS)
def test_distribution_derivatives_match_differences(cases):
    check_all(cases)


d = Draws(306)
R = d.normal
_mvn = stats.multivariate_normal
_SINGULAR_COV = np.diag([1.0, 1.0, 0.0, 0.0])
_ALPHA = d.uniform(0, 1, 4) ** 2 + 1.2
_ON_SIMPLEX = scipy.stats.dirichlet.rvs(_ALPHA, size=1, random_state=d.rng)[0, :]


def _in_support(density):
    # with a singular covariance only x whose last two coordinates equal the mean's has
    # a density: the first two coordinates vary, the last two follow the mean
    def f(x, mean, cov):
        x = np.concatenate([x[:2], mean[2:]])
        return symmetrizing(functools.partial(density, allow_singular=True), 2)(x, mean, cov)
    return f


def _normalized(x):
    return x / sum(x)


MULTIVARIATE = table([
    ("multivariate_normal.pdf", point(symmetrizing(_mvn.pdf, 2), R(4), R(4),
                                      _gram_plus_identity(R(4, 4)), wrt=_ALL3,
                                      allow_singular=False)),
    ("multivariate_normal.logpdf", point(symmetrizing(_mvn.logpdf, 2), R(4), R(4),
                                         _gram_plus_identity(R(4, 4)), wrt=_ALL3,
                                         allow_singular=False)),
    ("multivariate_normal.entropy", point(symmetrizing(_mvn.entropy, 1), 10 * R(4),
                                          _gram_plus_identity(R(4, 4)), wrt=(0, 1))),
    ("multivariate_normal.pdf/singular", point(
        _in_support(_mvn.pdf), np.concatenate((R(2), np.zeros(2))),
        np.concatenate((R(2), np.zeros(2))), _SINGULAR_COV, wrt=(0, 1))),
    ("multivariate_normal.logpdf/singular", point(
        _in_support(_mvn.logpdf), np.concatenate((R(2), np.zeros(2))),
        np.concatenate((R(2), np.zeros(2))), _SINGULAR_COV, wrt=(0, 1))),
    ("multivariate_normal.pdf/batch-of-x", point(symmetrizing(_mvn.pdf, 2), R(5, 4), R(4),
                                                 _gram_plus_identity(R(4, 4)), wrt=_ALL3)),
    ("multivariate_normal.logpdf/batch-of-x", point(
        symmetrizing(_mvn.logpdf, 2), R(5, 4), R(4), _gram_plus_identity(R(4, 4)),
        wrt=_ALL3)),
] + [
    (f"dirichlet.{m}/in-x", point(lambda x, alpha, f=getattr(stats.dirichlet, m):
                                  f(_normalized(x), alpha), _ON_SIMPLEX, _ALPHA))
    for m in ("pdf", "logpdf")
] + [
    (f"dirichlet.{m}/in-alpha", point(getattr(stats.dirichlet, m), _ON_SIMPLEX, _ALPHA, wrt=1))
    for m in ("pdf", "logpdf")
])


@pytest.mark.parametrize("cases", MULTIVARIATE)
def test_multivariate_distribution_derivatives_match_differences(cases):
    check_all(cases)


# ======================================================================================
# scipy.special, scipy.signal, scipy.integrate
# ======================================================================================
# (name, domain) of the special functions of one argument, each checked on a scalar,
# (2,), (3, 2) and (1, 2) input inside its domain
SPECIAL_DOMAINS = [
    ("psi", (0.3, 2.0)), ("digamma", (0.3, 2.0)), ("gamma", (0.3, 2.0)),
    ("gammaln", (0.3, 2.0)), ("gammasgn", (0.3, 2.0)), ("rgamma", (0.3, 2.0)),
    ("j0", (0.2, 20.0)), ("j1", (0.2, 20.0)), ("y0", (0.2, 20.0)), ("y1", (0.2, 20.0)),
    ("i0", (0.2, 20.0)), ("i1", (0.2, 20.0)),
    ("erf", (-3.0, 3.0)), ("erfc", (-3.0, 3.0)), ("erfinv", (-0.95, 0.95)),
    ("erfcinv", (0.05, 1.95)), ("logit", (0.10, 0.90)), ("expit", (-4.05, 4.95)),
]
d = Draws(307)
R = d.normal
SPECIAL_UNARY = table([(name, grid(special_function(name), standard_shapes(d, domain)))
                       for name, domain in SPECIAL_DOMAINS])


@pytest.mark.parametrize("cases", SPECIAL_UNARY)
def test_special_function_derivatives_match_differences_on_every_shape(cases):
    check_all(cases)


def _logsumexp_with_keepdims(a):
    return special_function("logsumexp")(a, axis=1, keepdims=True)


_logsumexp = special_function("logsumexp")
_AXES_KEEPDIMS = {"axis": [None, 0], "keepdims": [True, False]}
_AXES3_KEEPDIMS = {"axis": [None, 0, 1], "keepdims": [True, False]}
_ROW5 = R(1, 5)
SPECIAL = table([
    ("logsumexp/vectors", grid(_logsumexp, [np.array([1.1]), R(4), R(3, 4)],
                               **_AXES_KEEPDIMS)),
    ("logsumexp/matrices", grid(_logsumexp, [R(3, 4), R(4, 5, 6), R(1, 5)],
                                **_AXES3_KEEPDIMS)),
    ("logsumexp/weighted-vector", grid(_logsumexp, [R(4)], b=[np.exp(R(4))],
                                       **_AXES_KEEPDIMS)),
    ("logsumexp/weighted-matrix", grid(_logsumexp, [R(3, 4)], b=[np.exp(R(3, 4))],
                                       **_AXES3_KEEPDIMS)),
    ("logsumexp/weighted-3d", grid(_logsumexp, [R(2, 3, 4)], b=[np.exp(R(2, 3, 4))],
                                   **_AXES3_KEEPDIMS)),
    ("logsumexp/keepdims-row", point(_logsumexp_with_keepdims, _ROW5)),
    ("logsumexp/keepdims-row-gradient", point(scalar_grad(_logsumexp_with_keepdims), _ROW5)),
    ("beta", point(special_function("beta"), d.positive(4), d.positive(4), wrt=(0, 1))),
    ("betaln", point(special_function("betaln"), d.positive(4), d.positive(4), wrt=(0, 1))),
    ("betainc/in-x", point(special_function("betainc"), d.positive(4), d.positive(4),
                           d.uniform(0, 1, 4), wrt=2)),
    ("multigammaln", grid(special_function("multigammaln"),
                          [d.uniform(4.0, 5.0), d.uniform(4.0, 5.0, 2, 3)], [1, 2, 3])),
] + [
    # the first argument (an order or a shape) fixed; each of four points in the second
    (f"{name}/in-x", grid(special_function(name), [first],
                          list(d.positive(4, above=1.3)), wrt=1))
    for name, first in [("gammainc", 1), ("gammaincc", 1), ("polygamma", 0), ("jn", 2),
                        ("yn", 2)]
] + [
    # every pairing of four orders with four points
    (f"{name}/in-x", grid(special_function(name), list(d.uniform(1.0, 50.0, 4)),
                          list(d.positive(4, above=1.3)), wrt=1))
    for name in ("iv", "ive")
])


@pytest.mark.parametrize("cases", SPECIAL)
def test_special_derivatives_match_differences(cases):
    check_all(cases)


def _decaying(y, t, shift, offset):
    # an ODE with an explicit time dependence and a mean over the state
    return -np.sqrt(t) - y + shift - np.mean((y + offset) ** 2)


d = Draws(308)
R = d.normal
SIGNALS_AND_ODES = table([
    ("convolve/1d", grid(vj.scipy.signal.convolve, [R(4), R(5), R(6)], [R(2), R(3), R(4)],
                         wrt=(0, 1), mode=["full", "valid", "same"])),
    ("convolve/2d", grid(vj.scipy.signal.convolve, [R(4, 3), R(5, 4), R(6, 7)],
                         [R(2, 2), R(3, 2), R(4, 2), R(4, 1)], wrt=(0, 1),
                         mode=["full", "valid", "same"])),
    # in the initial state, the times and both parameters (the args tuple)
    ("odeint", point(vj.scipy.integrate.odeint, _decaying, R(3), np.linspace(0.1, 0.2, 4),
                     (R(3), R(3)), wrt=(1, 2, 3))),
])


@pytest.mark.parametrize("cases", SIGNALS_AND_ODES)
def test_signal_and_ode_derivatives_match_differences(cases):
    check_all(cases)
