"""vj.scipy.special: SciPy's special functions, differentiable, with SciPy's signatures.

    >>> import vecjac as vj
    >>> x = vj.constant([0.5, 1.5])
    >>> with vj.GradientTape() as tape:
    ...     tape.watch(x)
    ...     y = vj.scipy.special.gammaln(x)
    >>> tape.gradient(y, x).numpy().round(6)   # digamma(x)
    array([-1.96351,  0.03649])

Values come from scipy.special, derivatives are vecjac ops (second and higher order,
JVPs, pfor); see vecjac/_src/ops/elementwise/scipy_special.py and bessel_ops.py. Shape parameters
(polygamma's n, betainc's a and b, gammainc's a, stdtr's df, the Bessel order v) are
not differentiated: a derivative that needs them raises LookupError. The ufuncs among
these also work as `scipy.special.<name>(tensor)` (NumPy dispatch).
"""
import numpy as np

from vecjac._src.core.shapes import as_bool, broadcast_shape, normalize_axes
from vecjac._src.ops.array.creation import zeros_like
from vecjac._src.ops.array.shaping import broadcast_to, reshape, stop_gradient
from vecjac._src.ops.elementwise import arithmetic as _m
from vecjac._src.ops.elementwise import logic as _lo
from vecjac._src.ops.elementwise import special as _s
from vecjac._src.ops.elementwise import unary as _u
from vecjac._src.ops.elementwise.bessel import (i0, i0e, i1, i1e, iv, ive, j0, j1, jv, kv, y0, y1,
                                                yv)
from vecjac._src.ops.elementwise.scipy_special import (beta, betainc, betaln, digamma, entr,
                                                       erfcinv, erfinv, gamma, gammainc, gammaincc,
                                                       gammaln, gammasgn, log_ndtr, logit, ndtr,
                                                       ndtri, polygamma, psi, real_operands,
                                                       rgamma, stdtr, xlog1py)
from vecjac._src.ops.nn import activations as _nn
from vecjac._src.ops.reduce import reductions as _r

__all__ = ["gammaln", "digamma", "psi", "polygamma", "rgamma", "gamma", "gammasgn", "beta", "betaln",
           "betainc", "gammainc", "gammaincc", "erf", "erfc", "erfinv", "erfcinv", "logit",
           "expit", "log_expit", "ndtr", "log_ndtr", "ndtri", "stdtr", "xlogy", "xlog1py",
           "entr", "i0", "i1", "i0e", "i1e", "iv", "ive", "jv", "yv", "kv", "j0", "j1", "y0",
           "y1", "logsumexp", "multigammaln"]


def _real(fn, names, *args):
    """Real tensors of one float dtype that broadcast (as SciPy's ufuncs take them)."""
    return real_operands(f"vj.scipy.special.{fn}", names, args)


def erf(z):
    """The error function (scipy.special.erf; vj.erf)."""
    return _s.erf(*_real("erf", ("z",), z))


def erfc(x):
    """1 - erf(x), accurate for large x (scipy.special.erfc; vj.erfc)."""
    return _s.erfc(*_real("erfc", ("x",), x))


def expit(x):
    """The logistic sigmoid 1 / (1 + exp(-x)) (scipy.special.expit; vj.sigmoid)."""
    return _nn.sigmoid(*_real("expit", ("x",), x))


def log_expit(x):
    """log(expit(x)) = -softplus(-x), stable for large |x| (scipy.special.log_expit)."""
    (x,) = _real("log_expit", ("x",), x)
    return _m.negative(_nn.softplus(_m.negative(x)))


def xlogy(x, y):
    """x * log(y), and 0 wherever x == 0 (scipy.special.xlogy; vj.xlogy)."""
    return _s.xlogy(*_real("xlogy", ("x", "y"), x, y))


def logsumexp(a, axis=None, b=None, keepdims=False, return_sign=False):
    """log(sum(b * exp(a))) over `axis` (None: all axes), computed stably.

    `b` (broadcasting with `a`) weights the terms; terms with b == 0 are left out, even
    where a is +inf. Without return_sign, a negative sum gives NaN; with it, returns
    (log|sum|, sign of the sum). Differentiable in a and b (the sign is not). An empty
    sum is -inf. Shape: the broadcast shape of a and b without the reduced axes.
    """
    fn = "vj.scipy.special.logsumexp"
    keepdims = as_bool(keepdims, fn, "keepdims")
    return_sign = as_bool(return_sign, fn, "return_sign")
    names = ("a",) if b is None else ("a", "b")
    tensors = _real("logsumexp", names, a, *(() if b is None else (b,)))
    x = tensors[0]
    if b is not None:
        shape = broadcast_shape(fn, x.shape, tensors[1].shape, names=names)
        x, w = (t if t.shape == shape else broadcast_to(t, shape) for t in tensors)
    axes = normalize_axes(axis, x.ndim, fn)
    if b is not None:  # terms with weight 0 do not count (not even an infinite a)
        x = _lo.where(_lo.equal(w, 0), -np.inf, x)
    if x.size == 0:  # an empty sum is 0 (log: -inf), or the output itself is empty
        m = _r.reduce_sum(zeros_like(x), axis=axes, keepdims=True)
    else:
        m = stop_gradient(_r.reduce_max(x, axis=axes, keepdims=True))
    m = _lo.where(_u.is_finite(m), m, 0.0)  # all -inf, or +inf: no shift
    terms = _u.exp(x - m)
    total = _r.reduce_sum(terms if b is None else terms * w, axis=axes, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = _u.log(_u.abs(total) if return_sign else total) + m
    sign = stop_gradient(_u.sign(total)) if return_sign else None
    if not keepdims:
        kept = tuple(n for k, n in enumerate(x.shape) if axes is not None and k not in axes)
        out = reshape(out, kept)
        sign = None if sign is None else reshape(sign, kept)
    return (out, sign) if return_sign else out


def multigammaln(a, d):
    """log of the multivariate gamma function of dimension d (scipy.special.multigammaln):
    d (d - 1) / 4 log(pi) + sum_{j=1..d} gammaln(a - (j - 1) / 2).

    As SciPy, raises ValueError unless a > (d - 1) / 2 everywhere and d is a positive
    integer. Differentiable in a.
    """
    fn = "vj.scipy.special.multigammaln"
    if isinstance(d, (bool, np.bool_)) or not isinstance(d, (int, float, np.integer,
                                                              np.floating)) \
            or not float(d).is_integer() or d < 1:
        raise ValueError(f"{fn}: d should be a positive integer (dimension), got {d!r}")
    d = int(d)
    (x,) = _real("multigammaln", ("a",), a)
    if np.any(x._value <= 0.5 * (d - 1)):
        raise ValueError(f"{fn}: condition a > 0.5 * (d-1) = {0.5 * (d - 1)} not met "
                         f"(a = {x._value})")
    total = gammaln(x)
    for j in range(2, d + 1):
        total = total + gammaln(x - 0.5 * (j - 1))
    return total + 0.25 * d * (d - 1) * np.log(np.pi)
