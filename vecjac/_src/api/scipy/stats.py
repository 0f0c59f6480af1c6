"""vj.scipy.stats: differentiable distributions with SciPy's signatures.

    vj.scipy.stats.norm.logpdf(x, loc=0, scale=1)
    vj.scipy.stats.t.cdf(x, df, loc=0, scale=1)
    vj.scipy.stats.gamma.logpdf(x, a, loc=0, scale=1)
    vj.scipy.stats.beta.cdf(x, a, b, loc=0, scale=1)
    vj.scipy.stats.chi2.logcdf(x, df, loc=0, scale=1)
    vj.scipy.stats.poisson.logpmf(k, mu, loc=0)
    vj.scipy.stats.multivariate_normal.logpdf(x, mean=None, cov=1)  (and .entropy(mean, cov))
    vj.scipy.stats.dirichlet.logpdf(x, alpha)

Univariate methods (logpdf, pdf, cdf, logcdf; norm also sf, logsf, ppf, isf; logpmf,
pmf, cdf, logcdf for poisson)
broadcast all arguments as SciPy does and follow its conventions: NaN where a parameter
is invalid (scale <= 0, a shape parameter <= 0, mu < 0) or x is NaN, log density -inf
outside the support, cdf 0 below and 1 above it. They are differentiable in x, loc,
scale and, for densities, in the shape parameters; a cdf is differentiable in x, loc and
scale (its derivative in a shape parameter, df or a or b, raises LookupError: see
vj.scipy.special.betainc), poisson in mu (k and loc are integers: not differentiated).
Float32 inputs give float32 results (SciPy computes in float64); the result of scalar
inputs is a 0-d Tensor. Multivariate densities: vecjac/_src/api/scipy/multivariate.py.
"""
import functools
import math

import numpy as np

from vecjac._src.api.scipy.multivariate import dirichlet, multivariate_normal
from vecjac._src.ops.array.creation import zeros_like
from vecjac._src.ops.array.shaping import stop_gradient
from vecjac._src.ops.elementwise.logic import (cast, equal, greater, greater_equal, less,
                                               less_equal, logical_and, logical_not, logical_or,
                                               where)
from vecjac._src.ops.elementwise.scipy_special import (betainc, betaln, gammainc, gammaincc,
                                                       gammaln, log_ndtr, ndtr, ndtri,
                                                       real_operands, stdtr, xlog1py)
from vecjac._src.ops.elementwise.special import xlogy
from vecjac._src.ops.elementwise.unary import exp, floor, is_inf, is_nan, log, log1p

__all__ = ["norm", "t", "gamma", "beta", "chi2", "poisson", "multivariate_normal",
           "dirichlet"]

_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)


def _quiet(method):
    """Compute without NumPy's RuntimeWarnings: infinities and invalid parameters are
    expected inputs here (inf - inf inside the support gives NaN, as in SciPy)."""
    @functools.wraps(method)
    def run(*args, **kwargs):
        with np.errstate(all="ignore"):
            return method(*args, **kwargs)
    return run


def _all(*conditions):
    out = conditions[0]
    for c in conditions[1:]:
        out = logical_and(out, c)
    return out


class _Continuous:
    """The parts of scipy.stats.rv_continuous that the distributions below share: each
    defines `shapes` (the names of its shape parameters), its support and a point inside
    it, and the standardized `_logpdf(y, *shapes)` and `_cdf(y, *shapes)`."""
    name = None
    shapes = ()
    support = (-np.inf, np.inf)
    inside = 0.0

    def _valid(self, *shapes):
        return [greater(s, 0) for s in shapes]

    def _prepare(self, method, x, shapes, loc, scale):
        """Standardized y, safe shape parameters and scale, and the validity mask."""
        fn = f"vj.scipy.stats.{self.name}.{method}"
        names = ("x",) + self.shapes + ("loc", "scale")
        x, *rest = real_operands(fn, names, (x, *shapes, loc, scale))
        shapes, loc, scale = rest[:-2], rest[-2], rest[-1]
        valid = _all(greater(scale, 0), *self._valid(*shapes))
        # where a parameter is invalid, compute with a harmless one (the result is NaN
        # there anyway), so that no infinite derivative meets a zero cotangent
        scale = where(valid, scale, 1.0)
        shapes = [where(valid, s, 1.0) for s in shapes]
        y = (x - loc) / scale
        return y, shapes, scale, valid

    @_quiet
    def _density(self, method, x, shapes, loc, scale):
        y, shapes, scale, valid = self._prepare(method, x, shapes, loc, scale)
        lo, hi = self.support
        inside = _all(valid, greater_equal(y, lo), less_equal(y, hi))
        value = self._logpdf(where(inside, y, self.inside), *shapes) - log(scale)
        out = where(inside, value, -np.inf)
        return where(logical_or(logical_not(valid), is_nan(y)), np.nan, out)

    @_quiet
    def _distribution(self, method, x, shapes, loc, scale, logs):
        y, shapes, scale, valid = self._prepare(method, x, shapes, loc, scale)
        lo, hi = self.support
        inside = _all(valid, greater(y, lo), less(y, hi))
        above = logical_and(valid, greater_equal(y, hi))
        y_in = where(inside, y, self.inside)
        value = self._logcdf(y_in, *shapes) if logs else self._cdf(y_in, *shapes)
        zero = zeros_like(y)
        edge = where(above, zero, -np.inf) if logs else cast(above, y.dtype)
        out = where(inside, value, edge)
        return where(logical_or(logical_not(valid), is_nan(y)), np.nan, out)

    def _logcdf(self, y, *shapes):
        return log(self._cdf(y, *shapes))


class norm_gen(_Continuous):
    """The normal distribution (scipy.stats.norm)."""
    name = "norm"

    def _logpdf(self, y):
        return y * y * -0.5 - _LOG_SQRT_2PI

    def _cdf(self, y):
        return ndtr(y)

    def _logcdf(self, y):
        return log_ndtr(y)

    def logpdf(self, x, loc=0, scale=1):
        return self._density("logpdf", x, (), loc, scale)

    def pdf(self, x, loc=0, scale=1):
        return exp(self._density("pdf", x, (), loc, scale))

    def cdf(self, x, loc=0, scale=1):
        return self._distribution("cdf", x, (), loc, scale, False)

    def logcdf(self, x, loc=0, scale=1):
        return self._distribution("logcdf", x, (), loc, scale, True)

    @_quiet
    def _tail(self, method, x, loc, scale, logs):
        """sf / logsf: the cdf of -y (no 1 - cdf cancellation far in the upper tail)."""
        y, _, _, valid = self._prepare(method, x, (), loc, scale)
        value = log_ndtr(-y) if logs else ndtr(-y)
        return where(logical_or(logical_not(valid), is_nan(y)), np.nan, value)

    def sf(self, x, loc=0, scale=1):
        return self._tail("sf", x, loc, scale, False)

    def logsf(self, x, loc=0, scale=1):
        return self._tail("logsf", x, loc, scale, True)

    @_quiet
    def _quantile(self, method, q, loc, scale, sign):
        """ppf / isf: loc +- scale ndtri(q); NaN for q outside [0, 1] or scale <= 0."""
        fn = f"vj.scipy.stats.norm.{method}"
        q, loc, scale = real_operands(fn, ("q", "loc", "scale"), (q, loc, scale))
        valid = greater(scale, 0)
        z = ndtri(q)
        value = loc + scale * (z if sign > 0 else -z)
        return where(logical_not(valid), np.nan, value)

    def ppf(self, q, loc=0, scale=1):
        return self._quantile("ppf", q, loc, scale, 1)

    def isf(self, q, loc=0, scale=1):
        return self._quantile("isf", q, loc, scale, -1)


class _DegreesOfFreedom(_Continuous):
    """SciPy's methods of the distributions with one shape parameter, df."""
    shapes = ("df",)

    def logpdf(self, x, df, loc=0, scale=1):
        return self._density("logpdf", x, (df,), loc, scale)

    def pdf(self, x, df, loc=0, scale=1):
        return exp(self._density("pdf", x, (df,), loc, scale))

    def cdf(self, x, df, loc=0, scale=1):
        return self._distribution("cdf", x, (df,), loc, scale, False)

    def logcdf(self, x, df, loc=0, scale=1):
        return self._distribution("logcdf", x, (df,), loc, scale, True)


class t_gen(_DegreesOfFreedom):
    """Student's t distribution (scipy.stats.t); df = inf is the normal distribution."""
    name = "t"

    def _logpdf(self, y, df):
        finite = logical_not(is_inf(df))
        df = where(finite, df, 1.0)
        half = (df + 1) * 0.5
        student = (gammaln(half) - gammaln(df * 0.5) - 0.5 * log(df)
                   - 0.5 * math.log(math.pi) - half * log1p(y * y / df))
        return where(finite, student, y * y * -0.5 - _LOG_SQRT_2PI)

    def _cdf(self, y, df):
        return stdtr(df, y)


class gamma_gen(_Continuous):
    """The gamma distribution with shape a (scipy.stats.gamma)."""
    name = "gamma"
    shapes = ("a",)
    support = (0.0, np.inf)
    inside = 1.0

    def _logpdf(self, y, a):
        return xlogy(a - 1, y) - y - gammaln(a)

    def _cdf(self, y, a):
        return gammainc(a, y)

    def logpdf(self, x, a, loc=0, scale=1):
        return self._density("logpdf", x, (a,), loc, scale)

    def pdf(self, x, a, loc=0, scale=1):
        return exp(self._density("pdf", x, (a,), loc, scale))

    def cdf(self, x, a, loc=0, scale=1):
        return self._distribution("cdf", x, (a,), loc, scale, False)

    def logcdf(self, x, a, loc=0, scale=1):
        return self._distribution("logcdf", x, (a,), loc, scale, True)


class chi2_gen(_DegreesOfFreedom):
    """The chi-squared distribution with df degrees of freedom (scipy.stats.chi2)."""
    name = "chi2"
    support = (0.0, np.inf)
    inside = 1.0

    def _logpdf(self, y, df):
        return (xlogy(df * 0.5 - 1, y) - y * 0.5 - gammaln(df * 0.5)
                - df * (0.5 * math.log(2.0)))

    def _cdf(self, y, df):
        return gammainc(df * 0.5, y * 0.5)


class beta_gen(_Continuous):
    """The beta distribution with shapes a, b on [0, 1] (scipy.stats.beta)."""
    name = "beta"
    shapes = ("a", "b")
    support = (0.0, 1.0)
    inside = 0.5

    def _logpdf(self, y, a, b):
        return xlog1py(b - 1, -y) + xlogy(a - 1, y) - betaln(a, b)

    def _cdf(self, y, a, b):
        return betainc(a, b, y)

    def logpdf(self, x, a, b, loc=0, scale=1):
        return self._density("logpdf", x, (a, b), loc, scale)

    def pdf(self, x, a, b, loc=0, scale=1):
        return exp(self._density("pdf", x, (a, b), loc, scale))

    def cdf(self, x, a, b, loc=0, scale=1):
        return self._distribution("cdf", x, (a, b), loc, scale, False)

    def logcdf(self, x, a, b, loc=0, scale=1):
        return self._distribution("logcdf", x, (a, b), loc, scale, True)


class poisson_gen:
    """The Poisson distribution with mean mu (scipy.stats.poisson), on k = 0, 1, ...
    (shifted by loc). Differentiable in mu."""
    name = "poisson"

    def _prepare(self, method, k, mu, loc):
        fn = f"vj.scipy.stats.poisson.{method}"
        k, mu, loc = real_operands(fn, ("k", "mu", "loc"), (k, mu, loc))
        valid = greater_equal(mu, 0)
        return stop_gradient(k - loc), where(valid, mu, 1.0), valid

    def logpmf(self, k, mu, loc=0):
        return self._logpmf("logpmf", k, mu, loc)

    def pmf(self, k, mu, loc=0):
        return exp(self._logpmf("pmf", k, mu, loc))

    @_quiet
    def _logpmf(self, method, k, mu, loc):
        k, mu, valid = self._prepare(method, k, mu, loc)
        inside = _all(valid, greater_equal(k, 0), equal(floor(k), k))
        k_in = where(inside, k, 0.0)
        out = where(inside, xlogy(k_in, mu) - gammaln(k_in + 1) - mu, -np.inf)
        return where(logical_or(logical_not(valid), is_nan(k)), np.nan, out)

    @_quiet
    def _distribution(self, method, k, mu, loc, logs):
        k, mu, valid = self._prepare(method, k, mu, loc)
        k = floor(k)
        inside = _all(valid, greater_equal(k, 0), less(k, np.inf))
        above = greater_equal(k, np.inf)
        value = gammaincc(where(inside, k, 0.0) + 1, mu)
        edge = where(above, zeros_like(k), -np.inf) if logs else cast(above, k.dtype)
        out = where(inside, log(value) if logs else value, edge)
        return where(logical_or(logical_not(valid), is_nan(k)), np.nan, out)

    def cdf(self, k, mu, loc=0):
        return self._distribution("cdf", k, mu, loc, False)

    def logcdf(self, k, mu, loc=0):
        return self._distribution("logcdf", k, mu, loc, True)


norm = norm_gen()
t = t_gen()
gamma = gamma_gen()
chi2 = chi2_gen()
beta = beta_gen()
poisson = poisson_gen()
