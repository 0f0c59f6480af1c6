"""Special functions: erf, erfc (no SciPy dependency) and TF's xlogy / xdivy.

Split from unary_ops.py to keep files short; re-exported there, so they are vj.math.*.
"""
import math

import numpy as np

from vecjac._src.core.arguments import apply_binary
from vecjac._src.core.dispatch import to_input
from vecjac._src.core.registry import Op, lib, register
from vecjac._src.core.samples import Arg, Sample
from vecjac._src.ops.elementwise.arithmetic import unbroadcast
from vecjac._src.ops.elementwise.family import Unary
from vecjac._src.ops.elementwise.logic import cast, not_equal
from vecjac._src.ops.elementwise.unary import _real_unary, exp
from vecjac._src.transforms.pfor.converters import broadcasting
from vecjac._src.transforms.sparsity import patterns

__all__ = ["erf", "erfc", "xlogy", "xdivy"]


# erf without SciPy: piecewise Taylor series of degree _ERF_DEGREE around the centres
# c = k/16, 0 <= c <= 6 (|x - c| <= 1/32). The coefficients come from erf(c) (math.erf,
# correctly rounded) and the recurrence for the Taylor coefficients b_n of exp(-(c+h)^2):
# (n+1) b_{n+1} = -2c b_n - 2 b_{n-1}. Max error about 1 ulp (relative < 5e-16 over the
# whole line); past |x| = 6, erf(x) rounds to +-1 in float64.
_ERF_STEP = 1 / 16
_ERF_DEGREE = 9


def _erf_columns():
    rows = []
    for c in np.arange(0, 6 + _ERF_STEP, _ERF_STEP).tolist():
        b = [math.exp(-c * c)]
        b.append(-2 * c * b[0])
        for n in range(1, _ERF_DEGREE - 1):
            b.append((-2 * c * b[n] - 2 * b[n - 1]) / (n + 1))
        rows.append([math.erf(c)] + [2 / math.sqrt(math.pi) * b[n] / (n + 1)
                                     for n in range(_ERF_DEGREE)])
    table = np.array(rows)
    return [np.ascontiguousarray(table[:, j]) for j in range(_ERF_DEGREE, -1, -1)]


_ERF_COLUMNS = _erf_columns()


def _erf_float64(x):
    """erf of a float64 array, vectorized (Horner on per-element gathered coefficients)."""
    if x.size <= 32:  # a handful of math.erf calls beats ~20 array operations
        return np.array([math.erf(v) for v in x.reshape(-1).tolist()]).reshape(x.shape)
    a = np.fmin(np.abs(x), 6.0)  # fmin maps NaN to 6: restored below
    k = (a * (1 / _ERF_STEP) + 0.5).astype(np.intp)
    h = a - k * _ERF_STEP
    acc = _ERF_COLUMNS[0].take(k)
    for column in _ERF_COLUMNS[1:]:
        acc *= h
        acc += column.take(k)
    out = np.copysign(acc, x, out=acc)
    nan = np.isnan(x)
    if nan.any():
        out[nan] = np.nan
    return out


@register
class Erf(Unary):
    pattern = patterns.elementwise
    samples = (Sample("erf", Arg.float(2, "n", lo=-3.0, hi=3.0)), Sample("erf", Arg.float()),
               Sample("erf", Arg.float(5, 8, lo=-3.0, hi=3.0)))  # 40 elements: the table path

    def forward(self, x):
        out_dtype = x.dtype if x.dtype.kind == "f" else np.dtype(np.float64)
        return _erf_float64(np.asarray(x, dtype=np.float64)).astype(out_dtype, copy=False)

    def gradient(self, e, g):
        x = e.inputs[0]
        return g * ((2 / math.sqrt(math.pi)) * exp(-(x * x)))  # Python float: stays weak


@register
class Erfc(Unary):
    pattern = patterns.elementwise
    samples = (Sample("erfc", Arg.float(2, "n", lo=-3.0, hi=3.0)),
               Sample("erfc", Arg.float(5, 8, lo=-4.0, hi=4.0)))  # tail: continued fraction

    def forward(self, x):
        # 1 - erf loses every digit for large x: use the continued fraction there.
        out_dtype = x.dtype if x.dtype.kind == "f" else np.dtype(np.float64)
        x64 = np.asarray(x, dtype=np.float64)
        out = np.asarray(1.0 - _erf_float64(x64))  # an array even for 0-d x (assigned below)
        tail = np.abs(x64) >= 2.0
        if tail.any():
            a = np.minimum(np.abs(x64[tail]), 30.0)  # erfc(30) underflows to 0 anyway
            # erfc(a) = exp(-a^2)/sqrt(pi) / (a + (1/2)/(a + 1/(a + (3/2)/(a + ...))))
            f = a.copy()
            for k in range(60, 0, -1):
                f = a + (k / 2.0) / f
            c = np.exp(-a * a) / math.sqrt(math.pi) / f
            out[tail] = np.where(x64[tail] > 0, c, 2.0 - c)
        return out.astype(out_dtype, copy=False)

    def gradient(self, e, g):
        x = e.inputs[0]
        return g * ((-2 / math.sqrt(math.pi)) * exp(-(x * x)))


def erf(x, name=None): return _real_unary(Erf, x, "erf")
def erfc(x, name=None): return _real_unary(Erfc, x, "erfc")


# -- xlogy / xdivy: two-argument, broadcasting, 0 wherever x == 0 -------------------------
def _zero_where_x_is_zero(x, value):
    return np.where(x == 0, np.zeros((), value.dtype), value)


@register
class Xlogy(Op):
    pattern = patterns.broadcasting
    samples = (Sample("xlogy", Arg.float(2, "n"), Arg.positive("n")),
               Sample("xlogy", Arg.float(), Arg.positive(3)),
               Sample("xlogy", Arg.float("m", 1), Arg.positive("n")))  # both broadcast
    converter = broadcasting

    def forward(self, x, y):
        with np.errstate(divide="ignore", invalid="ignore"):
            return _zero_where_x_is_zero(x, x * np.log(y))

    def gradient(self, e, g):
        x, y = e.inputs
        gx = gy = None
        if e.needs[0]:
            gx = unbroadcast(g * xlogy(cast(not_equal(x, 0), x.dtype), y), x.shape)
        if e.needs[1]:
            gy = unbroadcast(g * xdivy(x, y), y.shape)
        return gx, gy


@register
class Xdivy(Op):
    pattern = patterns.broadcasting
    samples = (Sample("xdivy", Arg.float(2, "n"), Arg.positive("n")),
               Sample("xdivy", Arg.float(3), Arg.positive()),
               Sample("xdivy", Arg.float("m", 1), Arg.positive("n")))  # both broadcast
    converter = broadcasting

    def forward(self, x, y):
        with np.errstate(divide="ignore", invalid="ignore"):
            return _zero_where_x_is_zero(x, x / y)

    def gradient(self, e, g):
        x, y = e.inputs
        gx = gy = None
        if e.needs[0]:
            gx = unbroadcast(g * xdivy(cast(not_equal(x, 0), x.dtype), y), x.shape)
        if e.needs[1]:
            gy = unbroadcast(g * xdivy(-x, y * y), y.shape)
        return gx, gy


def _specialapply_binary(op, x, y, fn):
    xt, yt = to_input(x, (x, y), fn, "x"), to_input(y, (x, y), fn, "y")
    for arg, t in (("x", xt), ("y", yt)):
        if t.dtype.kind not in "fc":
            raise TypeError(f"{fn}: {arg} must be a floating-point tensor, got dtype {t.dtype}")
    if xt.dtype != yt.dtype:
        raise TypeError(f"{fn}: x and y must have the same dtype, got {xt.dtype} and "
                        f"{yt.dtype}")
    return apply_binary(op, xt, yt, fn)


def xlogy(x, y, name=None):
    """x * log(y), and 0 wherever x == 0 (even if y is 0 or NaN); broadcasting."""
    return _specialapply_binary(Xlogy, x, y, "xlogy")


def xdivy(x, y, name=None):
    """x / y, and 0 wherever x == 0 (even if y is 0); broadcasting."""
    return _specialapply_binary(Xdivy, x, y, "xdivy")

lib.publish(globals(), __all__)
