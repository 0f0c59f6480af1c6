"""The multivariate normal CDF as an op: P(X <= z) for X ~ N(0, cov), at points z (n, d).

Values: d = 1 is ndtr; d >= 2 is SciPy's multivariate_normal.cdf (Genz's algorithm:
exact for d = 2, randomized quasi-Monte Carlo with an absolute error of about `abseps`
above). Each point is integrated with a generator seeded by `seed`, on its own, so that a
point's value does not depend on the other points of the batch (pfor and the plain loop
agree) or on the call.

Derivatives with respect to z are exact in form (Genz's value aside): the partial
derivative in z_i is the normal density of z_i times the CDF, in the d - 1 other
coordinates, of the conditional distribution given z_i, which is this op again in one
dimension less; so second and higher derivatives, JVPs and pfor work as for any op,
down to d = 1. The derivative with respect to cov (Plackett's identity, second
derivatives in z) is not implemented: it raises LookupError, never a silent zero.
"""
import math

import numpy as np

from .._dispatch import apply
from .._registry import Op, lib, register
from .._samples import Arg, Sample
from .scipy_special_ops import scipy_module


@register
class MvnCdf(Op):
    name = "MvnCdf"
    samples = (Sample(lambda z, c: apply(MvnCdf, z, c, maxpts=None, abseps=1e-5,
                                         releps=1e-5, seed=0),
                      Arg.float("n", 2), Arg.spd(2, 2, diff=False)),
               Sample(lambda z, c: apply(MvnCdf, z, c, maxpts=None, abseps=1e-5,
                                         releps=1e-5, seed=0),
                      Arg.float("n", 1), Arg.spd(1, 1, diff=False)))

    def forward(self, z, cov, maxpts, abseps, releps, seed):
        dtype = np.result_type(z.dtype, cov.dtype, np.float32)
        z64, c64 = z.astype(np.float64), cov.astype(np.float64)
        n, d = z.shape
        if d == 1:
            out = scipy_module("special").ndtr(z64[:, 0] / math.sqrt(c64[0, 0]))
        else:
            mvn = scipy_module("stats").multivariate_normal
            mean = np.zeros(d)
            out = np.array([mvn.cdf(p, mean=mean, cov=c64, maxpts=maxpts, abseps=abseps,
                                    releps=releps, rng=np.random.default_rng(seed))
                            for p in z64], dtype=np.float64).reshape(n)
        return out.astype(dtype, copy=False)

    def gradient(self, e, g):
        z, cov = e.inputs
        if e.needs[1]:
            raise LookupError(
                "vj.scipy.stats.multivariate_normal.cdf: the derivative with respect to cov "
                "is not implemented (only x and mean are differentiable). Pass cov as a "
                "constant or through vj.stop_gradient")
        d = z.shape[-1]
        attrs = e.attrs
        columns = []
        for i in range(d):  # written in ops: cov may be a loop value (pfor), z is
            s2 = lib.gather(lib.gather(cov, i, axis=0), i, axis=0)
            zi = lib.gather(z, i, axis=1)
            density = lib.exp(zi * zi / s2 * -0.5) / lib.sqrt(s2 * (2 * math.pi))
            if d > 1:  # times the CDF of the others given z_i: mean b z_i, cov c - b c^T
                rest = np.asarray([j for j in range(d) if j != i])
                rows = lib.gather(cov, rest, axis=0)
                column = lib.gather(rows, i, axis=1)
                b = column / s2
                cond_cov = lib.gather(rows, rest, axis=1) - \
                    lib.expand_dims(b, 1) * lib.expand_dims(column, 0)
                points = lib.gather(z, rest, axis=1) - \
                    lib.expand_dims(zi, 1) * lib.expand_dims(b, 0)
                density = density * apply(MvnCdf, points, cond_cov, **attrs)
            columns.append(density)
        return lib.stack(columns, axis=1) * lib.expand_dims(g, 1), None

    def converter(self, cx, z, cov, **attrs):
        z_stacked, cov_stacked = cx.stacked
        iters = cx.iters
        if cov_stacked:  # a covariance per iteration: SciPy integrates one at a time anyway
            return lib.stack([apply(self, lib.gather(z, k, axis=0) if z_stacked else z,
                                    lib.gather(cov, k, axis=0), **attrs)
                              for k in range(iters)], axis=0)
        n, d = z.shape[1:]  # the points of all iterations as one batch
        flat = apply(self, lib.reshape(z, (iters * n, d)), cov, **attrs)
        return lib.reshape(flat, (iters, n))
