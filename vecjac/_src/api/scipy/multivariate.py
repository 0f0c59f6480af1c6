"""Multivariate densities of vj.scipy.stats: multivariate_normal and dirichlet.

SciPy's argument handling is kept: x is one point or a stack of points (the last axis
for multivariate_normal, the first axis for dirichlet), and the result is squeezed as
SciPy squeezes it (`_squeeze_output`). Like SciPy, invalid parameters and points raise
ValueError before anything is computed (a covariance that is not positive definite,
alpha <= 0, x off the simplex). Differentiable in x and in every parameter; for
multivariate_normal the covariance's derivative is the symmetric one (the density
reads only cov's lower triangle, as scipy.linalg.cholesky does).
"""
import math

import numpy as np

from vecjac._src.core.dispatch import apply
from vecjac._src.core.tensor import Tensor
from vecjac._src.ops.array.creation import eye
from vecjac._src.ops.array.shaping import concat, reshape, squeeze, transpose
from vecjac._src.ops.elementwise.logic import logical_or, where
from vecjac._src.ops.elementwise.scipy_special import gammaln, real_operands
from vecjac._src.ops.elementwise.special import xlogy
from vecjac._src.ops.elementwise.unary import exp, is_inf, is_nan, log
from vecjac._src.ops.linalg.matrix import cholesky, diag, diag_part, triangular_solve
from vecjac._src.ops.linalg.products import matmul, matrix_transpose
from vecjac._src.ops.reduce.reductions import reduce_any, reduce_sum
from vecjac._src.ops.scipy.mvn import MvnCdf

__all__ = ["multivariate_normal", "dirichlet"]

_LOG_2PI = math.log(2 * math.pi)


def _squeeze_output(out):
    return squeeze(out) if 1 in out.shape else out


class multivariate_normal_gen:
    """The multivariate normal distribution (scipy.stats.multivariate_normal).

    mean: (d,) (None: zeros); cov: a scalar (times the identity), a (d,) diagonal or a
    (d, d) positive definite matrix; x: (..., d), or (n,) points when d == 1.
    logpdf / pdf / cdf / logcdf: shape x.shape[:-1], squeezed; entropy: a scalar.
    allow_singular=True admits a singular (positive semidefinite) cov in logpdf, pdf and
    entropy, as SciPy: the density on the range of cov with its pseudo-determinant, zero
    (log: -inf) off it. Its cov derivative is the one along that range (autograd's
    pseudo-inverse gradient); the rank is that of cov's value.
    """
    name = "multivariate_normal"

    def _prepare(self, method, x, mean, cov, allow_singular):
        fn = f"vj.scipy.stats.multivariate_normal.{method}"
        if not isinstance(allow_singular, (bool, np.bool_)):
            raise TypeError(f"{fn}: allow_singular must be a bool, got {allow_singular!r}")
        names = ("x", "cov") if mean is None else ("x", "mean", "cov")
        args = (x, cov) if mean is None else (x, mean, cov)
        tensors = real_operands(fn, names, args, cast=False, broadcast=False)
        x, cov = tensors[0], tensors[-1]
        if mean is None:
            dim = cov.shape[0] if cov.ndim >= 2 else 1
        else:
            dim = tensors[1].size
            if tensors[1].ndim != 1 and dim != 1:
                raise ValueError(f"{fn}: mean must be a vector of length {dim}, got shape "
                                 f"{tensors[1].shape}")
        if cov.ndim > 2 or (dim == 1 and cov.size != 1) or (
                dim > 1 and cov.shape not in ((), (dim,), (dim, dim))):
            raise ValueError(f"{fn}: cov has shape {cov.shape}; for a distribution of "
                             f"dimension {dim} it must be a scalar, ({dim},) or ({dim}, {dim})")
        points = x.shape + (1,) if dim == 1 and x.ndim >= 1 else (1,) if x.ndim == 0 else x.shape
        if points[-1] != dim:
            raise ValueError(f"{fn}: x has shape {x.shape}, its last axis must have the "
                             f"dimension {dim} of the distribution")
        c = np.asarray(cov._value, np.float64)
        singular = _psd_basis(fn, c, dim, cov.ndim, allow_singular)
        x, *params = real_operands(fn, names, args, broadcast=False)
        cov = params[-1]
        x = reshape(x, points)
        if mean is not None:
            x = x - reshape(params[0], (dim,))
        if cov.ndim == 0 or dim == 1:
            cov = reshape(cov, ()) * eye(dim, dtype=x.dtype)
        elif cov.ndim == 1:
            cov = diag(cov)
        if singular is None:
            return x, cov, dim, None
        # SciPy's density on the range of cov: read its lower triangle, as cholesky does,
        # and restrict it to the range basis q: pinv(cov) = q inv(q^T cov q) q^T
        lower = Tensor(np.tril(np.ones((dim, dim)), -1).astype(cov.dtype))
        cov = cov * lower + matrix_transpose(cov * lower) + diag(diag_part(cov))
        q, null, tolerance = singular
        q = Tensor(q.astype(cov.dtype))
        return x, matmul(matrix_transpose(q), matmul(cov, q)), dim, (q, null, tolerance)

    def logpdf(self, x, mean=None, cov=1, allow_singular=False):
        return self._logpdf("logpdf", x, mean, cov, allow_singular)

    def pdf(self, x, mean=None, cov=1, allow_singular=False):
        return exp(self._logpdf("pdf", x, mean, cov, allow_singular))

    def entropy(self, mean=None, cov=1, allow_singular=False):
        """Differential entropy, (d (1 + log 2 pi) + log det cov) / 2; differentiable in
        cov (the mean does not enter)."""
        try:  # the dimension, for a point of it (bad arguments: _prepare names them)
            if mean is not None:
                dim = int(np.size(mean._value if hasattr(mean, "_value") else mean))
            else:
                dim = int(np.shape(cov)[0]) if np.ndim(cov) >= 2 else 1
        except (TypeError, ValueError):
            dim = 1
        _, cov, dim, singular = self._prepare("entropy", np.zeros(dim), mean, cov,
                                              allow_singular)
        logdet = 2.0 * reduce_sum(log(diag_part(cholesky(cov))))
        rank = cov.shape[-1]  # the rank: dim, or that of a singular cov
        return (logdet + rank * (1.0 + _LOG_2PI)) * 0.5

    def cdf(self, x, mean=None, cov=1, allow_singular=False, maxpts=None, abseps=1e-5,
            releps=1e-5, *, lower_limit=None, rng=None):
        """P(X <= x), SciPy's value (Genz's algorithm; quasi-Monte Carlo above two
        dimensions, accurate to about `abseps`), each point integrated with its own
        generator seeded by `rng` (an int; default 0), so that values are reproducible
        and do not depend on the other points. Differentiable in x, mean and cov, exactly
        in form (a partial in x is a density times a conditional CDF in one dimension
        less; the cov derivative is half the Hessian in x, symmetric, by Plackett's
        identity). lower_limit is not supported."""
        return self._cdf("cdf", x, mean, cov, allow_singular, maxpts, abseps, releps,
                         lower_limit, rng)

    def logcdf(self, x, mean=None, cov=1, allow_singular=False, maxpts=None, abseps=1e-5,
               releps=1e-5, *, lower_limit=None, rng=None):
        """log of `cdf` (same arguments)."""
        return log(self._cdf("logcdf", x, mean, cov, allow_singular, maxpts, abseps, releps,
                             lower_limit, rng))

    def _cdf(self, method, x, mean, cov, allow_singular, maxpts, abseps, releps,
             lower_limit, rng):
        fn = f"vj.scipy.stats.multivariate_normal.{method}"
        if lower_limit is not None:
            raise NotImplementedError(f"{fn}: lower_limit is not supported (the CDF from "
                                      "minus infinity only)")
        if rng is None:
            rng = 0
        if isinstance(rng, bool) or not isinstance(rng, (int, np.integer)):
            raise TypeError(f"{fn}: rng must be an int seed (values are reproducible), got "
                            f"{type(rng).__name__}")
        if maxpts is not None and (isinstance(maxpts, bool) or not isinstance(
                maxpts, (int, np.integer)) or maxpts < 1):
            raise ValueError(f"{fn}: maxpts must be a positive int, got {maxpts!r}")
        for name, value in (("abseps", abseps), ("releps", releps)):
            if isinstance(value, bool) or not isinstance(value, (int, float, np.floating,
                                                                   np.integer)) or value < 0:
                raise ValueError(f"{fn}: {name} must be a non-negative number, got {value!r}")
        dev, cov, dim, singular = self._prepare(method, x, mean, cov, allow_singular)
        if singular is not None:
            raise NotImplementedError(f"{fn}: a singular cov is not supported by the CDF "
                                      "(its density is)")
        if dev.size == 0:  # as SciPy: no point to integrate at
            raise ValueError(f"{fn}: x has no points (shape {dev.shape})")
        out = apply(MvnCdf, reshape(dev, (-1, dim)), cov,
                    maxpts=None if maxpts is None else int(maxpts), abseps=float(abseps),
                    releps=float(releps), seed=int(rng))
        return _squeeze_output(reshape(out, dev.shape[:-1]))

    def _logpdf(self, method, x, mean, cov, allow_singular):
        dev, cov, dim, singular = self._prepare(method, x, mean, cov, allow_singular)
        lower = cholesky(cov)
        points = reshape(dev, (-1, dim))
        # an infinite coordinate is density 0 (log: -inf), a NaN one NaN; the solve sees
        # finite points only (inf - inf inside it would give NaN)
        infinite = reduce_any(is_inf(points), axis=1)
        undefined = reduce_any(is_nan(points), axis=1)
        points = where(reshape(logical_or(infinite, undefined), (-1, 1)), 0.0, points)
        if singular is not None:  # outside the range of cov the density is 0, as SciPy
            q, null, tolerance = singular
            off = matmul(points, Tensor(null.astype(points.dtype)))  # (n, dim - rank)
            infinite = logical_or(infinite, reduce_sum(off * off, axis=1) >= tolerance ** 2)
            points = matmul(points, q)
        z = triangular_solve(lower, transpose(points))                 # (rank, n)
        maha = reduce_sum(z * z, axis=0)
        logdet = 2.0 * reduce_sum(log(diag_part(lower)))
        out = (maha + logdet + cov.shape[-1] * _LOG_2PI) * -0.5
        out = where(undefined, np.nan, where(infinite, -np.inf, out))
        return _squeeze_output(reshape(out, dev.shape[:-1]))


def _psd_basis(fn, c, dim, ndim, allow_singular):
    """None for a positive definite cov (its value c); for a singular one, with
    allow_singular, an orthonormal basis q of its range, one of its null space and the
    tolerance of the support test. SciPy's criterion (scipy.stats._multivariate._PSD):
    eigenvalues below 1e6 * machine epsilon * the largest are zero, and one below minus
    that is an error (ValueError: not positive semidefinite)."""
    if c.ndim != ndim:  # cov varies over a vectorized loop: one check per iteration
        if np.all(c > 0) if ndim < 2 or dim == 1 else _is_positive_definite(c):
            return None
        raise np.linalg.LinAlgError(f"{fn}: cov must be positive definite (a singular cov "
                                    "that varies over a vectorized loop is not supported)")
    full = np.diag(c) if ndim == 1 and dim > 1 else c.reshape(()) * np.eye(dim) if (
        ndim == 0 or dim == 1) else c
    if not np.all(np.isfinite(full)):
        raise ValueError(f"{fn}: cov must not contain infs or NaNs")
    s, u = np.linalg.eigh(full, UPLO="L")
    eps = 1e6 * np.finfo(np.float64).eps * np.max(np.abs(s), initial=0.0)
    if s.size and np.min(s) < -eps:
        raise ValueError(f"{fn}: cov must be symmetric positive semidefinite")
    if np.all(s > eps):
        return None
    if not allow_singular:
        raise np.linalg.LinAlgError(f"{fn}: cov must be positive definite (it is singular; "
                                    "allow_singular=True takes a singular cov)")
    return u[:, s > eps], u[:, s <= eps], 1e3 * eps


def _is_positive_definite(a):
    try:
        np.linalg.cholesky(a)
    except np.linalg.LinAlgError:
        return False
    return True


class dirichlet_gen:
    """The Dirichlet distribution (scipy.stats.dirichlet).

    alpha: (k,) positive; x: (k, ...) or (k - 1, ...) points on the simplex along the
    FIRST axis (the missing last component is 1 - sum). logpdf / pdf: shape x.shape[1:],
    squeezed.
    """
    name = "dirichlet"

    def _prepare(self, method, x, alpha):
        fn = f"vj.scipy.stats.dirichlet.{method}"
        x, alpha = real_operands(fn, ("x", "alpha"), (x, alpha), cast=False, broadcast=False)
        if alpha.ndim != 1:
            raise ValueError(f"{fn}: alpha must be one dimensional, got shape {alpha.shape}")
        k = alpha.shape[0]
        if x.ndim == 0 or x.shape[0] not in (k, k - 1):
            raise ValueError(f"{fn}: x must have {k} or {k - 1} entries along its first axis "
                             f"(alpha has shape {alpha.shape}), got shape {x.shape}")
        if x.size == 0:
            raise ValueError(f"{fn}: x is empty (shape {x.shape})")
        if alpha.size and np.min(alpha._value) <= 0:
            raise ValueError(f"{fn}: all parameters alpha must be greater than 0")
        # the values, with the loop axes in front where x or alpha varies inside pfor
        full = np.asarray(x._value, np.float64)
        lead = full.ndim - x.ndim
        if x.shape[0] == k - 1:
            full = np.concatenate([full, 1 - np.sum(full, lead, keepdims=True)], axis=lead)
        if np.min(full) < 0:
            raise ValueError(f"{fn}: each entry of x must be greater than or equal to zero")
        if np.max(full) > 1:
            raise ValueError(f"{fn}: each entry of x must be smaller than or equal to one")
        small = alpha._value < 1
        small = small.reshape(small.shape + (1,) * (x.ndim - 1))  # against x's first axis
        if np.any((full == 0) & small):
            raise ValueError(f"{fn}: each entry of x must be greater than zero where its "
                             "alpha is less than one")
        sums = np.sum(full, lead)
        if np.any(np.abs(sums - 1.0) > 1e-9):
            raise ValueError(f"{fn}: x must lie within the normal simplex (its entries sum "
                             f"to 1 along the first axis), sums: {sums}")
        x, alpha = real_operands(fn, ("x", "alpha"), (x, alpha), broadcast=False)
        if x.shape[0] == k - 1:
            x = concat([x, 1 - reduce_sum(x, axis=0, keepdims=True)], axis=0)
        return x, alpha

    def logpdf(self, x, alpha):
        return self._logpdf("logpdf", x, alpha)

    def pdf(self, x, alpha):
        return exp(self._logpdf("pdf", x, alpha))

    def _logpdf(self, method, x, alpha):
        x, alpha = self._prepare(method, x, alpha)
        log_norm = gammaln(reduce_sum(alpha)) - reduce_sum(gammaln(alpha))
        a = reshape(alpha - 1, alpha.shape + (1,) * (x.ndim - 1))
        return _squeeze_output(reduce_sum(xlogy(a, x), axis=0) + log_norm)


multivariate_normal = multivariate_normal_gen()
dirichlet = dirichlet_gen()
