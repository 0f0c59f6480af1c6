"""SciPy's special functions as ops: gamma and beta families, incomplete gamma and beta,
inverse error functions, logit, the normal distribution's ndtr / log_ndtr / ndtri,
Student's t cdf (stdtr), xlog1py and entr. Bessel functions: bessel_ops.py.

scipy.special computes the values (imported at the first call, not with vecjac: it
costs about 0.1 s); every derivative is written with vecjac ops, so second and higher
derivatives, JVPs and pfor work as for any op. The public functions here take SciPy's
argument names and are vj.scipy.special.<name>; NumPy dispatch sends
`scipy.special.<name>(tensor)` to them (vecjac/_src/numpy/scipy_special.py).

Shape parameters (the order n of polygamma, a and b of betainc, a of gammainc, the
degrees of freedom of stdtr, the order v of Bessel functions) are not differentiated: a
gradient or tangent that would need their derivative raises LookupError naming the
function and the parameter, never a silent zero. Real inputs only (complex: TypeError);
float inputs keep their dtype, integers give float64.
"""
import importlib
import math

import numpy as np

from vecjac._src.core.dispatch import apply, to_input
from vecjac._src.core.registry import Op, lib, register
from vecjac._src.core.samples import Arg, Sample
from vecjac._src.core.shapes import broadcast_shape
from vecjac._src.ops.array.creation import zeros_like
from vecjac._src.ops.array.shaping import broadcast_to
from vecjac._src.ops.elementwise.arithmetic import unbroadcast
from vecjac._src.ops.elementwise.logic import cast, not_equal
from vecjac._src.ops.elementwise.special import xdivy, xlogy
from vecjac._src.ops.elementwise.unary import exp, log, log1p, reciprocal
from vecjac._src.transforms.pfor.converters import broadcasting, elementwise
from vecjac._src.transforms.sparsity import patterns

__all__ = ["gammaln", "digamma", "psi", "polygamma", "rgamma", "gamma", "beta", "betaln",
           "gammasgn", "betainc", "gammainc", "gammaincc", "erfinv", "erfcinv", "logit", "ndtr",
           "log_ndtr", "ndtri", "stdtr", "xlog1py", "entr"]

_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)


def scipy_module(name):
    """scipy.<name>, imported at first use (SciPy is not imported with vecjac)."""
    return importlib.import_module(f"scipy.{name}")


def result_dtype(arrays):
    """Float inputs decide the dtype (an int order does not widen float32); ints: float64."""
    floats = [a.dtype for a in arrays if a.dtype.kind == "f"]
    return np.result_type(*floats) if floats else np.dtype(np.float64)


class Special(Op):
    """An element-wise scipy.special function of its (broadcasting) inputs.

    `params` names the inputs as SciPy does; the first `fixed` of them are shape
    parameters without derivative. `partial(k, inputs, y)` is the derivative of the
    output y with respect to input k >= fixed, in vecjac ops.
    """
    scipy = None
    params = ("x",)
    fixed = 0
    converter = elementwise  # n-ary ones: broadcasting
    pattern = patterns.broadcasting  # element-wise in every input (sparsity tracer)

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if len(cls.params) > 1:
            cls.converter = broadcasting

    def forward(self, *arrays):
        dtype = result_dtype(arrays)
        fn = getattr(scipy_module("special"), self.scipy)
        with np.errstate(all="ignore"):
            out = fn(*[a.astype(dtype, copy=False) for a in arrays])
        return np.asarray(out).astype(dtype, copy=False)

    def partial(self, k, inputs, y):
        raise NotImplementedError

    def _no_derivative(self, k):
        free = " and ".join(self.params[self.fixed:])
        return LookupError(
            f"vj.scipy.special.{self.scipy}: the derivative with respect to "
            f"{self.params[k]} (a shape parameter) is not implemented; only {free} is "
            f"differentiable. Pass {self.params[k]} as a constant or through "
            "vj.stop_gradient")

    def gradient(self, e, g):
        grads = []
        for k, x in enumerate(e.inputs):
            if not e.needs[k]:
                grads.append(None)
            elif k < self.fixed:
                raise self._no_derivative(k)
            else:
                grads.append(unbroadcast(g * self.partial(k, e.inputs, e.outputs[0]),
                                             x.shape))
        return tuple(grads)

    def jvp(self, e, *tangents):
        y = e.outputs[0]
        total = None
        for k, t in enumerate(tangents):
            if t is None:
                continue
            if k < self.fixed:
                raise self._no_derivative(k)
            term = t * self.partial(k, e.inputs, y)
            total = term if total is None else total + term
        if total is not None and total.shape != y.shape:
            total = broadcast_to(total, y.shape)
        return total


def _cast(x, dtype):
    return x if x.dtype == dtype else cast(x, dtype)


# -- gamma family ------------------------------------------------------------------------
@register
class Lgamma(Special):
    scipy = "gammaln"
    samples = (Sample("gammaln", Arg.positive(2, "n", lo=0.3, hi=4.0)),
               Sample("gammaln", Arg.float(lo=-1.8, hi=-1.2)))  # log|gamma| left of 0

    def partial(self, k, inputs, y):
        return apply(Digamma, inputs[0])


@register
class Digamma(Special):
    scipy = "digamma"
    params = ("z",)
    samples = (Sample("digamma", Arg.positive(2, "n", lo=0.3, hi=4.0)),
               Sample("psi", Arg.float("n", lo=-0.8, hi=-0.2)))

    def partial(self, k, inputs, y):
        return apply(Polygamma, 1, inputs[0])


@register
class Polygamma(Special):
    scipy = "polygamma"
    params = ("n", "x")
    fixed = 1
    samples = (Sample("polygamma", 1, Arg.positive(2, "n", lo=0.5, hi=3.0)),
               Sample("polygamma", Arg.int(2, "n", hi=4), Arg.positive("n", lo=0.5, hi=3.0)),
               Sample("polygamma", 0, Arg.positive(lo=0.5, hi=3.0)))

    def partial(self, k, inputs, y):
        n, x = inputs
        return apply(Polygamma, n + 1, x)


@register
class Rgamma(Special):
    scipy = "rgamma"
    params = ("z",)
    samples = (Sample("rgamma", Arg.float(2, "n", lo=-2.5, hi=3.0)),)

    def partial(self, k, inputs, y):
        return -y * apply(Digamma, inputs[0])  # NaN at the poles of gamma (0, -1, ...)


@register
class Gamma(Special):
    scipy = "gamma"
    params = ("z",)
    samples = (Sample("gamma", Arg.positive(2, "n", lo=0.5, hi=3.0)),
               Sample("gamma", Arg.float(lo=-1.8, hi=-1.2)))

    def partial(self, k, inputs, y):
        return y * apply(Digamma, inputs[0])


@register
class Gammasgn(Special):  # piecewise constant: derivative 0, as sign's
    scipy = "gammasgn"
    samples = (Sample("gammasgn", Arg.positive(2, "n", lo=0.5, hi=3.0)),
               Sample("gammasgn", Arg.float("n", lo=-1.8, hi=-1.2)))

    def partial(self, k, inputs, y):
        return zeros_like(y)


# -- beta family -------------------------------------------------------------------------
def _digamma_difference(k, inputs):
    """d betaln(a, b) / d(a or b) = digamma(a or b) - digamma(a + b)."""
    a, b = inputs
    return apply(Digamma, inputs[k]) - apply(Digamma, a + b)


@register
class Beta(Special):
    scipy = "beta"
    params = ("a", "b")
    samples = (Sample("beta", Arg.positive(2, "n"), Arg.positive("n")),
               Sample("beta", Arg.positive(), Arg.positive(3)))

    def partial(self, k, inputs, y):
        return y * _digamma_difference(k, inputs)


@register
class Betaln(Special):
    scipy = "betaln"
    params = ("a", "b")
    samples = (Sample("betaln", Arg.positive(2, "n"), Arg.positive("n")),
               Sample("betaln", Arg.positive(3), Arg.positive()))

    def partial(self, k, inputs, y):
        return _digamma_difference(k, inputs)


@register
class Betainc(Special):
    scipy = "betainc"
    params = ("a", "b", "x")
    fixed = 2
    samples = (Sample("betainc", Arg.positive(2, "n", diff=False),
                      Arg.positive("n", diff=False), Arg.float(2, "n", lo=0.1, hi=0.9)),
               Sample("betainc", 2.5, 0.7, Arg.float(3, lo=0.1, hi=0.9)))

    def partial(self, k, inputs, y):
        a, b, x = inputs
        a, b = _cast(a, x.dtype), _cast(b, x.dtype)
        # the beta density x^(a-1) (1-x)^(b-1) / B(a, b), in logs
        return exp(xlogy(a - 1, x) + apply(Xlog1py, b - 1, -x)
                       - apply(Betaln, a, b))


class _IncompleteGamma(Special):
    params = ("a", "x")
    fixed = 1

    def partial(self, k, inputs, y):
        a, x = inputs
        a = _cast(a, x.dtype)
        density = exp(xlogy(a - 1, x) - x - apply(Lgamma, a))
        return density if self.scipy == "gammainc" else -density


@register
class Igamma(_IncompleteGamma):
    scipy = "gammainc"
    samples = (Sample("gammainc", Arg.positive(2, "n", diff=False), Arg.positive("n")),
               Sample("gammainc", 1.5, Arg.positive(2, 2, lo=0.1, hi=4.0)))


@register
class Igammac(_IncompleteGamma):
    scipy = "gammaincc"
    samples = (Sample("gammaincc", Arg.positive(2, "n", diff=False), Arg.positive("n")),
               Sample("gammaincc", Arg.positive(diff=False), Arg.positive(3, lo=0.1, hi=4.0)))


# -- error function inverses, logit, the normal distribution -----------------------------
@register
class Erfinv(Special):
    scipy = "erfinv"
    params = ("y",)
    samples = (Sample("erfinv", Arg.float(2, "n", lo=-0.9, hi=0.9)),)

    def partial(self, k, inputs, y):
        return (math.sqrt(math.pi) / 2) * exp(y * y)


@register
class Erfcinv(Special):
    scipy = "erfcinv"
    params = ("y",)
    samples = (Sample("erfcinv", Arg.float(2, "n", lo=0.1, hi=1.9)),)

    def partial(self, k, inputs, y):
        return (-math.sqrt(math.pi) / 2) * exp(y * y)


@register
class Logit(Special):
    scipy = "logit"
    samples = (Sample("logit", Arg.float(2, "n", lo=0.05, hi=0.95)),)

    def partial(self, k, inputs, y):
        x = inputs[0]
        return reciprocal(x * (1 - x))


@register
class Ndtr(Special):
    scipy = "ndtr"
    samples = (Sample("ndtr", Arg.float(2, "n", lo=-3.0, hi=3.0)),)

    def partial(self, k, inputs, y):
        x = inputs[0]
        return exp(x * x * -0.5 - _LOG_SQRT_2PI)


@register
class LogNdtr(Special):
    scipy = "log_ndtr"
    samples = (Sample("log_ndtr", Arg.float(2, "n", lo=-6.0, hi=3.0)),)

    def partial(self, k, inputs, y):
        x = inputs[0]
        return exp(x * x * -0.5 - _LOG_SQRT_2PI - y)  # pdf / cdf, stable in the tail


@register
class Ndtri(Special):
    scipy = "ndtri"
    params = ("y",)
    samples = (Sample("ndtri", Arg.float(2, "n", lo=0.05, hi=0.95)),)

    def partial(self, k, inputs, y):
        return exp(y * y * 0.5 + _LOG_SQRT_2PI)


@register
class Stdtr(Special):
    scipy = "stdtr"
    params = ("df", "t")
    fixed = 1
    samples = (Sample("stdtr", Arg.positive(2, "n", lo=0.5, hi=8.0, diff=False),
                      Arg.float("n", lo=-3.0, hi=3.0)),)

    def partial(self, k, inputs, y):
        df, t = inputs
        df = _cast(df, t.dtype)
        half = (df + 1) * 0.5  # Student's t density
        return exp(apply(Lgamma, half) - apply(Lgamma, df * 0.5) - 0.5 * log(df)
                       - (0.5 * math.log(math.pi)) - half * log1p(t * t / df))


# -- xlog1py, entr ---------------------------------------------------------------------------
@register
class Xlog1py(Special):
    scipy = "xlog1py"
    params = ("x", "y")
    samples = (Sample("xlog1py", Arg.float(2, "n"), Arg.float("n", lo=-0.5, hi=2.0)),
               Sample("xlog1py", Arg.float(), Arg.float(3, lo=-0.5, hi=2.0)))

    def partial(self, k, inputs, y):
        x, y1 = inputs
        if k == 0:  # as TF: 0 where x == 0, like the value
            return apply(Xlog1py, cast(not_equal(x, 0), x.dtype), y1)
        return xdivy(_cast(x, y.dtype), _cast(y1, y.dtype) + 1)


@register
class Entr(Special):
    scipy = "entr"
    samples = (Sample("entr", Arg.positive(2, "n", lo=0.1, hi=2.0)),)

    def partial(self, k, inputs, y):
        return -(log(inputs[0]) + 1)


# -- public functions (vj.scipy.special.<name>, SciPy's argument names) ----------------------
def real_operands(fn, names, args, cast=True, broadcast=True):
    """Tensors of `args` (named `names` in errors of `fn`): real, broadcasting (unless
    broadcast=False), and (with cast) of one float dtype. Everything is checked before
    any op runs."""
    tensors = [to_input(a, args, fn, name) for a, name in zip(args, names)]
    for name, t in zip(names, tensors):
        if t.dtype.kind not in "iuf":
            raise TypeError(f"{fn}: {name} must be a real (int or float) tensor, got dtype "
                            f"{t.dtype}")
    if broadcast and len(tensors) > 1:
        broadcast_shape(fn, *[t.shape for t in tensors], names=names)
    if not cast:
        return tensors
    dtype = result_dtype([t._value for t in tensors])
    return [t if t.dtype == dtype else _cast(t, dtype) for t in tensors]


def special_call(op, *args):
    """Validate real inputs that broadcast, then run `op` (named as SciPy names it)."""
    fn = f"vj.scipy.special.{op.scipy}"
    return apply(op, *real_operands(fn, op.params, args, cast=False))


def gammaln(x):
    """log|gamma(x)|, element-wise (scipy.special.gammaln)."""
    return special_call(Lgamma, x)


def digamma(z):
    """The digamma function psi(z) = gamma'(z) / gamma(z) (scipy.special.digamma / psi)."""
    return special_call(Digamma, z)


psi = digamma


def polygamma(n, x):
    """The n-th derivative of digamma (scipy.special.polygamma); differentiable in x."""
    return special_call(Polygamma, n, x)


def rgamma(z):
    """1 / gamma(z), zero at the poles of gamma (scipy.special.rgamma)."""
    return special_call(Rgamma, z)


def gamma(z):
    """The gamma function (scipy.special.gamma)."""
    return special_call(Gamma, z)


def gammasgn(x):
    """The sign of gamma(x): -1 or 1, 0 at the poles (scipy.special.gammasgn)."""
    return special_call(Gammasgn, x)


def beta(a, b):
    """The beta function gamma(a) gamma(b) / gamma(a + b) (scipy.special.beta)."""
    return special_call(Beta, a, b)


def betaln(a, b):
    """log|beta(a, b)| (scipy.special.betaln)."""
    return special_call(Betaln, a, b)


def betainc(a, b, x):
    """The regularized incomplete beta function I_x(a, b) (scipy.special.betainc);
    differentiable in x."""
    return special_call(Betainc, a, b, x)


def gammainc(a, x):
    """The regularized lower incomplete gamma function P(a, x) (scipy.special.gammainc);
    differentiable in x."""
    return special_call(Igamma, a, x)


def gammaincc(a, x):
    """The regularized upper incomplete gamma function Q(a, x) = 1 - P(a, x)
    (scipy.special.gammaincc); differentiable in x."""
    return special_call(Igammac, a, x)


def erfinv(y):
    """The inverse of erf on (-1, 1) (scipy.special.erfinv)."""
    return special_call(Erfinv, y)


def erfcinv(y):
    """The inverse of erfc on (0, 2) (scipy.special.erfcinv)."""
    return special_call(Erfcinv, y)


def logit(x):
    """log(x / (1 - x)) (scipy.special.logit)."""
    return special_call(Logit, x)


def ndtr(x):
    """The standard normal cdf (scipy.special.ndtr)."""
    return special_call(Ndtr, x)


def log_ndtr(x):
    """log of the standard normal cdf, accurate far in the left tail
    (scipy.special.log_ndtr)."""
    return special_call(LogNdtr, x)


def ndtri(y):
    """The inverse of ndtr (scipy.special.ndtri)."""
    return special_call(Ndtri, y)


def stdtr(df, t):
    """Student's t cdf with df degrees of freedom (scipy.special.stdtr); differentiable
    in t."""
    return special_call(Stdtr, df, t)


def xlog1py(x, y):
    """x * log1p(y), and 0 wherever x == 0 (scipy.special.xlog1py)."""
    return special_call(Xlog1py, x, y)


def entr(x):
    """-x log(x) for x > 0, 0 at 0, -inf for x < 0 (scipy.special.entr)."""
    return special_call(Entr, x)

lib.publish(globals(), __all__ + ["real_operands", "special_call", "scipy_module"])
