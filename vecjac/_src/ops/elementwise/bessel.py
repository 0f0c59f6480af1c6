"""Bessel functions of SciPy as ops: i0 i1 i0e i1e iv ive jv yv kv j0 j1 y0 y1.

Values come from scipy.special (see scipy_special_ops.py for the conventions); the
derivatives in z are the classical recurrences, written with these ops so that they
differentiate again:
    I_v' = (I_{v-1} + I_{v+1}) / 2        J_v' = (J_{v-1} - J_{v+1}) / 2
    K_v' = -(K_{v-1} + K_{v+1}) / 2       Y_v' = (Y_{v-1} - Y_{v+1}) / 2
and for the exponentially scaled ive(v, z) = iv(v, z) exp(-|z|):
    ive' = (ive(v-1, z) + ive(v+1, z)) / 2 - sign(z) ive(v, z).
The order v is not differentiated (LookupError if a derivative needs it).
"""
from vecjac._src.core.dispatch import apply
from vecjac._src.core.registry import lib, register
from vecjac._src.core.samples import Arg, Sample
from vecjac._src.ops.elementwise.scipy_special import Special, special_call
from vecjac._src.ops.elementwise.unary import sign

__all__ = ["i0", "i1", "i0e", "i1e", "iv", "ive", "jv", "yv", "kv", "j0", "j1", "y0", "y1"]


def _mean(a, b):
    return (a + b) * 0.5


class _Order(Special):
    """A Bessel function of order v (not differentiated) and argument z."""
    params = ("v", "z")
    fixed = 1


@register
class BesselIv(_Order):
    scipy = "iv"
    samples = (Sample("iv", Arg.float(2, "n", lo=-1.5, hi=2.5, diff=False),
                      Arg.positive("n", lo=0.3, hi=3.0)),
               Sample("iv", Arg.int(3, hi=3), Arg.float(3, lo=-2.0, hi=2.0)))

    def partial(self, k, inputs, y):
        v, z = inputs
        return _mean(apply(BesselIv, v - 1, z), apply(BesselIv, v + 1, z))


@register
class BesselIve(_Order):
    scipy = "ive"
    samples = (Sample("ive", Arg.float(2, "n", lo=-1.5, hi=2.5, diff=False),
                      Arg.positive("n", lo=0.3, hi=3.0)),
               Sample("ive", Arg.int(3, hi=3), Arg.float(3, lo=-2.0, hi=2.0)))

    def partial(self, k, inputs, y):
        v, z = inputs
        return (_mean(apply(BesselIve, v - 1, z), apply(BesselIve, v + 1, z))
                - sign(z) * y)


@register
class BesselJv(_Order):
    scipy = "jv"
    samples = (Sample("jv", Arg.float(2, "n", lo=-1.5, hi=2.5, diff=False),
                      Arg.positive("n", lo=0.3, hi=4.0)),
               Sample("jv", Arg.int(3, hi=3), Arg.float(3, lo=-3.0, hi=3.0)))

    def partial(self, k, inputs, y):
        v, z = inputs
        return (apply(BesselJv, v - 1, z) - apply(BesselJv, v + 1, z)) * 0.5


@register
class BesselYv(_Order):
    scipy = "yv"
    samples = (Sample("yv", Arg.float(2, "n", lo=-1.5, hi=2.5, diff=False),
                      Arg.positive("n", lo=0.5, hi=4.0)),)

    def partial(self, k, inputs, y):
        v, z = inputs
        return (apply(BesselYv, v - 1, z) - apply(BesselYv, v + 1, z)) * 0.5


@register
class BesselKv(_Order):
    scipy = "kv"
    samples = (Sample("kv", Arg.float(2, "n", lo=-1.5, hi=2.5, diff=False),
                      Arg.positive("n", lo=0.3, hi=3.0)),)

    def partial(self, k, inputs, y):
        v, z = inputs
        return -_mean(apply(BesselKv, v - 1, z), apply(BesselKv, v + 1, z))


@register
class BesselI0(Special):
    scipy = "i0"
    samples = (Sample("i0", Arg.float(2, "n", lo=-3.0, hi=3.0)),)

    def partial(self, k, inputs, y):
        return apply(BesselI1, inputs[0])


@register
class BesselI1(Special):
    scipy = "i1"
    samples = (Sample("i1", Arg.float(2, "n", lo=-3.0, hi=3.0)),)

    def partial(self, k, inputs, y):
        x = inputs[0]
        return _mean(apply(BesselI0, x), apply(BesselIv, 2, x))


@register
class BesselI0e(Special):
    scipy = "i0e"
    samples = (Sample("i0e", Arg.float(2, "n", lo=-3.0, hi=3.0)),)

    def partial(self, k, inputs, y):
        x = inputs[0]
        return apply(BesselI1e, x) - sign(x) * y


@register
class BesselI1e(Special):
    scipy = "i1e"
    samples = (Sample("i1e", Arg.float(2, "n", lo=-3.0, hi=3.0)),)

    def partial(self, k, inputs, y):
        x = inputs[0]
        return _mean(apply(BesselI0e, x), apply(BesselIve, 2, x)) - sign(x) * y


@register
class BesselJ0(Special):
    scipy = "j0"
    samples = (Sample("j0", Arg.float(2, "n", lo=-4.0, hi=4.0)),)

    def partial(self, k, inputs, y):
        return -apply(BesselJ1, inputs[0])


@register
class BesselJ1(Special):
    scipy = "j1"
    samples = (Sample("j1", Arg.float(2, "n", lo=-4.0, hi=4.0)),)

    def partial(self, k, inputs, y):
        x = inputs[0]
        return (apply(BesselJ0, x) - apply(BesselJv, 2, x)) * 0.5


@register
class BesselY0(Special):
    scipy = "y0"
    samples = (Sample("y0", Arg.positive(2, "n", lo=0.5, hi=4.0)),)

    def partial(self, k, inputs, y):
        return -apply(BesselY1, inputs[0])


@register
class BesselY1(Special):
    scipy = "y1"
    samples = (Sample("y1", Arg.positive(2, "n", lo=0.5, hi=4.0)),)

    def partial(self, k, inputs, y):
        x = inputs[0]
        return (apply(BesselY0, x) - apply(BesselYv, 2, x)) * 0.5


def i0(x):
    """Modified Bessel function of the first kind, order 0 (scipy.special.i0)."""
    return special_call(BesselI0, x)


def i1(x):
    """Modified Bessel function of the first kind, order 1 (scipy.special.i1)."""
    return special_call(BesselI1, x)


def i0e(x):
    """i0(x) * exp(-|x|) (scipy.special.i0e)."""
    return special_call(BesselI0e, x)


def i1e(x):
    """i1(x) * exp(-|x|) (scipy.special.i1e)."""
    return special_call(BesselI1e, x)


def iv(v, z):
    """Modified Bessel function of the first kind of real order v (scipy.special.iv);
    differentiable in z."""
    return special_call(BesselIv, v, z)


def ive(v, z):
    """iv(v, z) * exp(-|z|) (scipy.special.ive); differentiable in z."""
    return special_call(BesselIve, v, z)


def jv(v, z):
    """Bessel function of the first kind of real order v (scipy.special.jv);
    differentiable in z."""
    return special_call(BesselJv, v, z)


def yv(v, z):
    """Bessel function of the second kind of real order v (scipy.special.yv);
    differentiable in z."""
    return special_call(BesselYv, v, z)


def kv(v, z):
    """Modified Bessel function of the second kind of real order v (scipy.special.kv);
    differentiable in z."""
    return special_call(BesselKv, v, z)


def j0(x):
    """Bessel function of the first kind, order 0 (scipy.special.j0)."""
    return special_call(BesselJ0, x)


def j1(x):
    """Bessel function of the first kind, order 1 (scipy.special.j1)."""
    return special_call(BesselJ1, x)


def y0(x):
    """Bessel function of the second kind, order 0 (scipy.special.y0)."""
    return special_call(BesselY0, x)


def y1(x):
    """Bessel function of the second kind, order 1 (scipy.special.y1)."""
    return special_call(BesselY1, x)

lib.publish(globals(), __all__)
