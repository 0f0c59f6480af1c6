"""vj.scipy.stats against scipy.stats: values over grids that cross the support, the
boundaries and invalid parameters; derivatives against finite differences (to second
order, reverse and forward mode) and against SciPy's densities (d cdf / dx = pdf); the
LookupError of shape parameters of a cdf; float32; Jacobians of the multivariate
densities through pfor.
"""
import numpy as np
import pytest
import scipy.stats as st

import vecjac as vj
from vecjac.testing import check_grads, numerical_jacobian

S = vj.scipy.stats
X = np.array([-1.5, -0.2, 0.0, 0.3, 0.7, 1.0, 2.4, np.inf, -np.inf, np.nan])[:, None]
CONTINUOUS = {  # name: shape parameters (rows broadcast against X's column)
    "norm": (), "t": (np.array([0.7, 3.0, np.inf, -1.0]),),
    "gamma": (np.array([0.6, 1.0, 2.5, 0.0]),), "chi2": (np.array([0.8, 2.0, 5.0, -2.0]),),
    "beta": (np.array([0.6, 1.0, 2.5, 3.0]), np.array([1.0, 0.5, 4.0, -1.0])),
}
LOC_SCALE = [dict(), dict(loc=0.3, scale=1.7), dict(loc=np.array([0.1, -0.2, 0.0, 0.4]),
                                                    scale=np.array([0.5, 2.0, 0.0, -1.0]))]
METHODS = ("logpdf", "pdf", "cdf", "logcdf")


@pytest.mark.parametrize("name", sorted(CONTINUOUS))
@pytest.mark.parametrize("method", METHODS)
def test_continuous_values_match_scipy(name, method):
    for kw in LOC_SCALE:
        with np.errstate(all="ignore"):
            expected = getattr(getattr(st, name), method)(X, *CONTINUOUS[name], **kw)
        got = getattr(getattr(S, name), method)(X, *CONTINUOUS[name], **kw)
        assert got.shape == expected.shape and got.dtype == np.float64
        np.testing.assert_allclose(got.numpy(), expected, rtol=1e-12, atol=1e-300,
                                   err_msg=f"{name}.{method} {kw}")


POINTS = np.array([0.15, 0.45, 0.8])  # inside every support, away from the boundaries
GRAD_CASES = {  # name: (shape parameter values, whether the density's are differentiable)
    "norm": (), "t": (np.array([2.5, 4.0, 9.0]),), "gamma": (np.array([0.8, 1.5, 3.0]),),
    "chi2": (np.array([1.5, 3.0, 6.0]),),
    "beta": (np.array([0.8, 1.5, 3.0]), np.array([2.0, 0.9, 1.2])),
}


@pytest.mark.parametrize("name", sorted(GRAD_CASES))
@pytest.mark.parametrize("method", METHODS)
def test_continuous_derivatives_match_finite_differences(name, method):
    dist, shapes = getattr(getattr(S, name), method), GRAD_CASES[name]
    loc, scale = np.array([-0.1, 0.05, 0.1]), np.array([1.1, 0.9, 1.3])
    if method in ("logpdf", "pdf"):   # everything continuous is differentiable
        check_grads(lambda x, *p: dist(x, *p[:-2], loc=p[-2], scale=p[-1]),
                    [POINTS, *shapes, loc, scale])
    else:                             # a cdf: x, loc and scale
        check_grads(lambda x, lo, sc: dist(x, *shapes, loc=lo, scale=sc),
                    [POINTS, loc, scale])


@pytest.mark.parametrize("name", sorted(GRAD_CASES))
def test_cdf_derivative_is_scipys_pdf(name):
    shapes = GRAD_CASES[name]
    x = vj.constant(POINTS)
    with vj.GradientTape(persistent=True) as tape:
        tape.watch(x)
        cdf = getattr(S, name).cdf(x, *shapes, loc=0.05, scale=1.2)
        logcdf = getattr(S, name).logcdf(x, *shapes, loc=0.05, scale=1.2)
    pdf = getattr(st, name).pdf(POINTS, *shapes, loc=0.05, scale=1.2)
    np.testing.assert_allclose(tape.gradient(cdf, x).numpy(), pdf, rtol=1e-10)
    np.testing.assert_allclose(tape.gradient(logcdf, x).numpy(),
                               pdf / getattr(st, name).cdf(POINTS, *shapes, loc=0.05,
                                                           scale=1.2), rtol=1e-10)


def test_outside_the_support_the_density_is_flat():
    x = vj.constant([-0.5, 1.5])
    with vj.GradientTape(persistent=True) as tape:
        tape.watch(x)
        out = [S.gamma.logpdf(x[:1], 2.0), S.beta.logpdf(x, 2.0, 3.0), S.beta.cdf(x, 2.0, 3.0),
               S.chi2.pdf(x[:1], 3.0)]
    for y in out:
        g = tape.gradient(y, x)
        np.testing.assert_array_equal(np.nan_to_num(g.numpy(), nan=1.0), 0.0)


@pytest.mark.parametrize("name,param", [("t", "df"), ("gamma", "a"), ("chi2", "df"),
                                        ("beta", "a")])
def test_cdf_shape_parameter_derivative_raises(name, param):
    shapes = [vj.constant(v[0]) for v in GRAD_CASES[name]]
    with vj.GradientTape() as tape:
        tape.watch(shapes[0])
        y = getattr(S, name).cdf(0.4, *shapes)
    with pytest.raises(LookupError, match="not implemented"):
        tape.gradient(y, shapes[0])


def test_float32_stays_float32():
    x = vj.constant(POINTS.astype(np.float32))
    for y in (S.norm.logpdf(x, 0.1, 2.0), S.t.cdf(x, 3.0), S.gamma.pdf(x, 2.0),
              S.beta.logcdf(x, 2.0, 3.0), S.chi2.logpdf(x, 3.0), S.poisson.pmf(x * 4, 2.0)):
        assert y.dtype == np.float32


K = np.array([-1.0, 0.0, 1.0, 2.0, 2.5, 7.0, np.inf, np.nan])[:, None]
MU = np.array([0.0, 0.4, 3.0, -1.0])


@pytest.mark.parametrize("method", ("logpmf", "pmf", "cdf", "logcdf"))
def test_poisson_matches_scipy_and_differentiates_in_mu(method):
    for kw in ({}, {"loc": 1.0}):
        with np.errstate(all="ignore"):
            expected = getattr(st.poisson, method)(K, MU, **kw)
        if method == "logcdf":  # SciPy writes 0 over the NaN of mu < 0 at k = inf (its
            expected[np.isinf(K) & (MU < 0)] = np.nan  # cdf keeps NaN): vecjac keeps NaN
        np.testing.assert_allclose(getattr(S.poisson, method)(K, MU, **kw).numpy(), expected,
                                   rtol=1e-12, err_msg=f"{method} {kw}")
    k = np.array([0.0, 1.0, 3.0, 6.0])
    check_grads(lambda mu: getattr(S.poisson, method)(k, mu), [np.array([0.5, 1.2, 2.0, 4.0])])


def test_poisson_does_not_differentiate_k():
    k, mu = vj.constant([1.0, 3.0]), vj.constant([2.0, 0.5])
    with vj.GradientTape(persistent=True) as tape:
        tape.watch([k, mu])
        y = S.poisson.logpmf(k, mu)
    assert tape.gradient(y, k) is None
    np.testing.assert_allclose(tape.gradient(y, mu).numpy(), [1 / 2 - 1, 3 / 0.5 - 1])


COV = np.array([[2.0, 0.3, 0.1], [0.3, 1.0, 0.2], [0.1, 0.2, 1.5]])
MEAN = np.array([0.1, -0.2, 0.3])


@pytest.mark.parametrize("method", ("logpdf", "pdf"))
def test_multivariate_normal_matches_scipy(method):
    rng = np.random.default_rng(1)
    cases = [(rng.standard_normal((4, 3)), MEAN, COV), (rng.standard_normal(3), MEAN, COV),
             (rng.standard_normal((2, 5, 3)), MEAN, np.diag(COV)),
             (rng.standard_normal((1, 3)), MEAN, 1.7), (rng.standard_normal(4), 0.5, 2.0),
             (0.3, None, 1.0), (np.array([[np.inf, 0, 0], [np.nan, 0, 0]]), MEAN, COV)]
    for x, mean, cov in cases:
        expected = getattr(st.multivariate_normal, method)(x, mean, cov)
        got = getattr(S.multivariate_normal, method)(x, mean, cov)
        assert got.shape == np.shape(expected)
        np.testing.assert_allclose(got.numpy(), expected, rtol=1e-12)
    with pytest.raises(ValueError, match="positive semidefinite"):  # as SciPy
        S.multivariate_normal.logpdf(MEAN, MEAN, -COV)


@pytest.mark.parametrize("method", ["cdf", "logcdf"])
@pytest.mark.parametrize("dim", [1, 2, 3])
def test_multivariate_normal_cdf_matches_scipy_and_finite_differences(method, dim):
    rng = np.random.default_rng(7)
    a = rng.standard_normal((dim, dim))
    cov = a @ a.T + dim * np.eye(dim)
    mean = rng.standard_normal(dim)
    x = mean + rng.standard_normal((4, dim))
    # in 3-D SciPy integrates by quasi-Monte Carlo: accuracy costs time, so the checks
    # there are to about 1e-7 (values) and 1e-3 relative (differences)
    acc, h, rtol, atol = (1e-10, 1e-4, 1e-4, 1e-6) if dim < 3 else (1e-7, 1e-3, 3e-3, 1e-5)
    got = getattr(S.multivariate_normal, method)(x, mean, cov, abseps=acc, releps=acc)
    want = getattr(st.multivariate_normal, method)(x, mean, cov, abseps=acc, releps=acc)
    # SciPy's reference draws its own quasi-Monte Carlo points: the two agree to the
    # requested absolute accuracy on the CDF, hence on exp(logcdf), not on its log
    cdf_got, cdf_want = (got.numpy(), want) if method == "cdf" else (np.exp(got.numpy()),
                                                                     np.exp(want))
    np.testing.assert_allclose(cdf_got, cdf_want, rtol=1e-6, atol=10 * acc)
    # the gradient in x (exact in form) against central differences of SciPy's values
    grad = vj.grad(lambda x: vj.reduce_sum(getattr(S.multivariate_normal, method)(
        x, mean, cov, abseps=acc, releps=acc)))(x).numpy()
    numeric = np.zeros_like(x)
    for i in range(x.shape[0]):
        for j in range(dim):
            up, down = x[i].copy(), x[i].copy()
            up[j] += h
            down[j] -= h
            f = getattr(st.multivariate_normal, method)
            numeric[i, j] = (f(up, mean, cov, abseps=acc, releps=acc, rng=0) -
                             f(down, mean, cov, abseps=acc, releps=acc, rng=0)) / (2 * h)
    np.testing.assert_allclose(grad, numeric, rtol=rtol, atol=atol)
    # the mean enters as x - mean
    gmean = vj.grad(lambda m: vj.reduce_sum(getattr(S.multivariate_normal, method)(
        x, m, cov, abseps=acc, releps=acc)))(mean).numpy()
    np.testing.assert_allclose(gmean, -grad.sum(0), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("dim", [1, 2, 3])
def test_multivariate_normal_cdf_covariance_derivative(dim):
    """Plackett's identity, against central differences of SciPy's values along
    symmetric perturbations of cov (cov[i, j] and cov[j, i] together)."""
    rng = np.random.default_rng(dim)
    a = rng.standard_normal((dim, dim))
    cov = a @ a.T + dim * np.eye(dim)
    x = rng.standard_normal((3, dim))
    acc, h, rtol, atol = (1e-11, 1e-5, 1e-5, 1e-8) if dim < 3 else (1e-7, 1e-3, 3e-3, 1e-5)
    grad = vj.grad(lambda c: vj.reduce_sum(S.multivariate_normal.cdf(
        x, None, c, abseps=acc, releps=acc)))(cov).numpy()
    np.testing.assert_allclose(grad, grad.T, rtol=1e-12)

    def total(c):
        return sum(st.multivariate_normal.cdf(p, None, c, abseps=acc, releps=acc, rng=0)
                   for p in x)
    for i in range(dim):
        for j in range(i, dim):
            e = np.zeros((dim, dim))
            e[i, j] = e[j, i] = h
            numeric = (total(cov + e) - total(cov - e)) / (2 * h)
            want = grad[i, j] * (1 if i == j else 2)  # both entries move together
            np.testing.assert_allclose(want, numeric, rtol=rtol, atol=atol)


def test_multivariate_normal_cdf_second_derivative_and_limits():
    cov = np.array([[2.0, 0.6], [0.6, 1.0]])
    x = np.array([0.3, -0.4])
    hess = vj.hessian(lambda x: S.multivariate_normal.cdf(x, None, cov))(x).numpy()
    # d2 Phi / dx0 dx1 is the bivariate density (Plackett)
    np.testing.assert_allclose(hess[0, 1], st.multivariate_normal.pdf(x, None, cov), rtol=1e-9)
    np.testing.assert_allclose(hess, hess.T, rtol=1e-12)
    # reproducible: a point's value does not depend on the others of the batch
    cov3 = np.eye(3) + 0.3
    pts = np.array([[0.1, 0.2, 0.3], [0.5, -0.5, 0.0]])
    both = S.multivariate_normal.cdf(pts, None, cov3).numpy()
    assert both[1] == S.multivariate_normal.cdf(pts[1], None, cov3).numpy()
    with pytest.raises(NotImplementedError, match="lower_limit"):
        S.multivariate_normal.cdf(x, None, cov, lower_limit=-x)
    with pytest.raises(TypeError, match="rng"):
        S.multivariate_normal.cdf(x, None, cov, rng=np.random.default_rng(0))


def test_multivariate_normal_derivatives():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, 3))
    check_grads(lambda t, m: S.multivariate_normal.logpdf(t, m, COV), [x, MEAN])
    # cov: its symmetric part (the density reads the lower triangle, as SciPy)
    check_grads(lambda c: S.multivariate_normal.logpdf(x, MEAN, (c + vj.transpose(c)) / 2),
                [COV])
    check_grads(lambda d: S.multivariate_normal.pdf(x, MEAN, d), [np.diag(COV)])
    check_grads(lambda s: S.multivariate_normal.logpdf(x, None, s), [np.array(1.3)])
    t = vj.constant(x)
    with vj.GradientTape() as tape:
        tape.watch(t)
        y = S.multivariate_normal.logpdf(t, MEAN, COV)
    expected = numerical_jacobian(lambda v: st.multivariate_normal.logpdf(v, MEAN, COV), x)
    np.testing.assert_allclose(tape.jacobian(y, t).numpy(), expected, rtol=1e-6, atol=1e-8)


def test_dirichlet_matches_scipy_and_differentiates():
    alpha = np.array([0.7, 2.0, 3.5])
    x = np.array([[0.2, 0.5, 0.1], [0.3, 0.25, 0.6], [0.5, 0.25, 0.3]])
    for pts in (x, x[:, 0], x[:2], x[:2, 1]):
        for method in ("logpdf", "pdf"):
            np.testing.assert_allclose(getattr(S.dirichlet, method)(pts, alpha).numpy(),
                                       getattr(st.dirichlet, method)(pts, alpha), rtol=1e-12)
    check_grads(lambda a: S.dirichlet.logpdf(x, a), [alpha])
    check_grads(lambda p, a: S.dirichlet.pdf(p, a), [x[:2], alpha])
    for bad in (x * 1.1, -x, x[:1]):
        with pytest.raises(ValueError, match="dirichlet.logpdf"):
            S.dirichlet.logpdf(bad, alpha)


def test_multivariate_densities_vectorize():
    """Value checks of the parameters see every iteration of a loop (pfor)."""
    alpha = np.array([[0.7, 2.0, 3.5], [1.5, 1.2, 0.8]])
    x = np.array([[0.2, 0.3, 0.5], [0.6, 0.1, 0.3]])
    got = vj.vectorized_map(lambda xa: S.dirichlet.logpdf(xa[0], xa[1]),
                            np.stack([x, alpha], axis=1))
    np.testing.assert_allclose(got.numpy(), [st.dirichlet.logpdf(x[i], alpha[i])
                                             for i in range(2)], rtol=1e-12)
    with pytest.raises(ValueError, match="simplex"):
        vj.vectorized_map(lambda p: S.dirichlet.logpdf(p, alpha[0]), x * [[1.0], [1.2]])
    covs = np.stack([COV, 2 * COV])
    got = vj.vectorized_map(lambda c: S.multivariate_normal.logpdf(MEAN, None, c), covs)
    np.testing.assert_allclose(got.numpy(), [st.multivariate_normal.logpdf(MEAN, None, c)
                                             for c in covs], rtol=1e-12)


@pytest.mark.parametrize("method", ["sf", "logsf", "ppf", "isf"])
def test_normal_tails_and_quantiles_match_scipy_and_differentiate(method):
    at = (np.array([-3.0, 0.2, 5.0, 40.0, np.inf]) if method in ("sf", "logsf")
          else np.array([0.01, 0.5, 0.9, 0.0, 1.0, 1.5, np.nan]))
    for loc, scale in ((0.0, 1.0), (0.5, 2.0), (0.0, -1.0)):  # scale <= 0: NaN
        got = getattr(vj.scipy.stats.norm, method)(at, loc, scale).numpy()
        np.testing.assert_allclose(got, getattr(st.norm, method)(at, loc, scale),
                                   rtol=1e-12, equal_nan=True)
    inner = at[:3]
    check_grads(lambda a, l, s: getattr(vj.scipy.stats.norm, method)(a, l, s),
                [inner, np.array(0.5), np.array(2.0)], order=2, modes=("fwd", "rev"))
    if method == "sf":  # d sf / dx is minus the density
        g = vj.grad(lambda a: vj.reduce_sum(vj.scipy.stats.norm.sf(a)))(inner).numpy()
        np.testing.assert_allclose(g, -st.norm.pdf(inner), rtol=1e-12)


@pytest.mark.parametrize("mean, cov", [
    (np.array([0.1, -0.2]), np.array([[2.0, 0.3], [0.3, 1.0]])),
    (None, 2.5), (np.array([0.1, -0.2, 0.4]), np.array([2.0, 3.0, 0.5]))])
def test_multivariate_normal_entropy_matches_scipy_and_differentiates(mean, cov):
    mvn = vj.scipy.stats.multivariate_normal
    full = np.diag(cov) if np.ndim(cov) == 1 else cov
    np.testing.assert_allclose(float(mvn.entropy(mean, cov)),
                               st.multivariate_normal.entropy(mean, full), rtol=1e-12)
    if np.ndim(cov) == 2:  # d entropy / d cov = inv(cov) / 2
        g = vj.grad(lambda c: mvn.entropy(mean, c))(cov).numpy()
        np.testing.assert_allclose(g, np.linalg.inv(cov) / 2, rtol=1e-10)


SINGULAR_COVS = {  # rank 2 of 4 (a rotated block), rank 1 diagonal, a zero scalar variance
    "block": np.array([[1.0, 0.3, 0.0, 0.0], [0.3, 1.0, 0.0, 0.0], [0.0] * 4, [0.0] * 4]),
    "rotated": (lambda q: q @ np.diag([2.0, 0.5, 0.0]) @ q.T)(
        np.linalg.qr(np.random.default_rng(5).standard_normal((3, 3)))[0]),
    "diagonal": np.array([1.5, 0.0, 0.0]),
}


@pytest.mark.parametrize("name", sorted(SINGULAR_COVS))
def test_multivariate_normal_singular_cov_matches_scipy(name):
    mvn = S.multivariate_normal
    cov = SINGULAR_COVS[name]
    full = np.diag(cov) if cov.ndim == 1 else cov
    dim = full.shape[0]
    rng = np.random.default_rng(6)
    mean = rng.standard_normal(dim)
    on = mean + rng.standard_normal((3, dim)) @ full   # in the range of cov: finite
    points = np.concatenate([on, mean + rng.standard_normal((1, dim))])  # last one: off
    for method in ("logpdf", "pdf"):
        got = getattr(mvn, method)(points, mean, cov, allow_singular=True).numpy()
        expected = getattr(st.multivariate_normal, method)(points, mean, full,
                                                            allow_singular=True)
        np.testing.assert_allclose(got, expected, rtol=1e-10)
    assert np.isneginf(got[-1] if method == "logpdf" else np.log(got[-1]))
    np.testing.assert_allclose(
        float(mvn.entropy(mean, cov, allow_singular=True)),
        st.multivariate_normal(mean, full, allow_singular=True).entropy(), rtol=1e-12)
    # derivatives: x and mean by finite differences within the range (where the density
    # is smooth); cov against the pseudo-inverse form -(P - P d d^T P) / 2, lower triangle
    x = on[0]
    check_grads(lambda z, w: mvn.logpdf(mean + z @ full, mean + w @ full, cov,
                                        allow_singular=True),
                [rng.standard_normal(dim), rng.standard_normal(dim)], order=2,
                modes=("fwd", "rev"))
    if cov.ndim == 2:
        g = vj.grad(lambda c: mvn.logpdf(x, mean, c, allow_singular=True))(cov).numpy()
        p, d = np.linalg.pinv(cov), x - mean
        sym = -0.5 * (p - np.outer(p @ d, p @ d))
        np.testing.assert_allclose(g, np.tril(2 * sym) - np.diag(np.diag(sym)), atol=1e-10)
    with pytest.raises(np.linalg.LinAlgError, match="allow_singular"):
        mvn.logpdf(x, mean, cov)
    with pytest.raises(ValueError, match="positive semidefinite"):
        mvn.logpdf(x, mean, -cov, allow_singular=True)
