"""The multivariate normal CDF as an op: P(X <= z) for X ~ N(0, cov), at points z (n, d).

Values: d = 1 is ndtr; d >= 2 is SciPy's multivariate_normal.cdf (Genz's algorithm:
exact for d = 2, randomized quasi-Monte Carlo with an absolute error of about `abseps`
above). Each point is integrated with a generator seeded by `seed`, on its own, so that a
point's value does not depend on the other points of the batch (pfor and the plain loop
agree) or on the call.

Derivatives are exact in form (Genz's value aside). In z: the partial derivative in
z_i is the normal density of z_i times the CDF, in the d - 1 other coordinates, of the
conditional distribution given z_i, which is this op again in one dimension less; so
second and higher derivatives, JVPs and pfor work as for any op, down to d = 1. In cov:
Plackett's identity, dPhi/dcov = H / 2 with H the Hessian in z (symmetric: a change of
cov[i, j] is taken together with cov[j, i]); its off-diagonal entries are a density
times a partial of the conditional CDF, its diagonal follows from them.
"""
import math

import numpy as np

from vecjac._src.core.dispatch import apply
from vecjac._src.core.registry import Op, register
from vecjac._src.core.samples import Arg, Sample
from vecjac._src.ops.array.indexing import gather
from vecjac._src.ops.array.shaping import expand_dims, reshape, stack
from vecjac._src.ops.elementwise.scipy_special import scipy_module
from vecjac._src.ops.elementwise.unary import exp, sqrt
from vecjac._src.ops.reduce.reductions import reduce_sum


def _partials(z, cov, attrs):
    """The gradient of Phi(z; cov) in z, (n, d), and per coordinate i the pieces of its
    column (density of z_i, the others' indices, b, the conditional points and cov).
    Written in ops: cov may be a loop value (pfor), and higher derivatives follow."""
    d = z.shape[-1]
    columns, parts = [], []
    for i in range(d):
        s2 = gather(gather(cov, i, axis=0), i, axis=0)
        zi = gather(z, i, axis=1)
        density = exp(zi * zi / s2 * -0.5) / sqrt(s2 * (2 * math.pi))
        column, part = density, (density, zi, s2, None)
        if d > 1:  # times the CDF of the others given z_i: mean b z_i, cov c - b c^T
            rest = np.asarray([j for j in range(d) if j != i])
            rows = gather(cov, rest, axis=0)
            cross = gather(rows, i, axis=1)
            b = cross / s2
            cond_cov = gather(rows, rest, axis=1) - \
                expand_dims(b, 1) * expand_dims(cross, 0)
            points = gather(z, rest, axis=1) - expand_dims(zi, 1) * expand_dims(b, 0)
            column = density * apply(MvnCdf, points, cond_cov, **attrs)
            part = (density, zi, s2, (rest, b, points, cond_cov))
        columns.append(column)
        parts.append(part)
    return stack(columns, axis=1), parts


def _hessians(z, grad, parts, attrs):
    """The Hessian of Phi in z per point, (n, d, d): off the diagonal, H_ik is the density
    of z_i times the conditional CDF's partial in its coordinate k; on it,
    H_ii = -(z_i / s_ii) G_i - sum_k b_k H_ik (the derivative of G_i in z_i)."""
    d = z.shape[-1]
    rows = []
    for i, (density, zi, s2, conditional) in enumerate(parts):
        gi = gather(grad, i, axis=1)
        diagonal = -(zi / s2) * gi
        entries = [None] * d
        if conditional is not None:
            rest, b, points, cond_cov = conditional
            inner, _ = _partials(points, cond_cov, attrs)
            off = inner * expand_dims(density, 1)             # (n, d - 1)
            diagonal = diagonal - reduce_sum(off * expand_dims(b, 0), axis=1)
            for k, j in enumerate(rest):
                entries[int(j)] = gather(off, k, axis=1)
        entries[i] = diagonal
        rows.append(stack(entries, axis=1))
    return stack(rows, axis=1)


@register
class MvnCdf(Op):
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
        attrs = e.attrs
        grad, parts = _partials(z, cov, attrs)
        gz = grad * expand_dims(g, 1) if e.needs[0] else None
        gcov = None
        if e.needs[1]:  # Plackett: dPhi/dcov = H / 2, H the Hessian in z (symmetric)
            hessian = _hessians(z, grad, parts, attrs)           # (n, d, d)
            gcov = reduce_sum(hessian * reshape(g, (-1, 1, 1)), axis=0) * 0.5
        return gz, gcov

    def converter(self, cx, z, cov, **attrs):
        z_stacked, cov_stacked = cx.stacked
        iters = cx.iters
        if cov_stacked:  # a covariance per iteration: SciPy integrates one at a time anyway
            return stack([apply(self, gather(z, k, axis=0) if z_stacked else z,
                                    gather(cov, k, axis=0), **attrs)
                              for k in range(iters)], axis=0)
        n, d = z.shape[1:]  # the points of all iterations as one batch
        flat = apply(self, reshape(z, (iters * n, d)), cov, **attrs)
        return reshape(flat, (iters, n))
