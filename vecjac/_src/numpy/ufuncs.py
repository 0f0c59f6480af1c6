"""The element-wise half of the dispatch table (vecjac/numpy_dispatch.py): NumPy ufuncs
and the vecjac ops they become, direct (np.sin -> vj.sin) or composed (np.log2, np.hypot,
np.arctan2 ...). Importing this module fills numpy_dispatch.UFUNCS.
"""
import math

import numpy as np

from vecjac._src.composites.tf_math import quadrant_atan
from vecjac._src.numpy.functions import _cast_to, _common, _float_common
from vecjac._src.numpy.tables import _dtype, _ufuncs, _Unsupported
from vecjac._src.ops.array import creation as _c
from vecjac._src.ops.array import shaping as _a
from vecjac._src.ops.elementwise import arithmetic as _m
from vecjac._src.ops.elementwise import extrema as _extrema
from vecjac._src.ops.elementwise import complex_parts as _cx
from vecjac._src.ops.elementwise import logic as _lo
from vecjac._src.ops.elementwise import unary as _u
from vecjac._src.ops.linalg import products as _lin
from vecjac._src.ops.reduce import reductions as _r


# -- direct: one ufunc, one vecjac op ------------------------------------------------------------------
def _simple(np_name, vj_fn, target=None):
    _ufuncs(target or f"vj.{vj_fn.__name__}", np_name)(vj_fn)


for _np_name_, _fn in [
        ("add", _m.add), ("subtract", _m.subtract), ("multiply", _m.multiply),
        ("divide", _m.divide), ("floor_divide", _m.floordiv), ("remainder", _m.floormod),
        ("power", _m.pow), ("maximum", _extrema.maximum), ("minimum", _extrema.minimum),
        ("equal", _lo.equal), ("not_equal", _lo.not_equal), ("less", _lo.less),
        ("less_equal", _lo.less_equal), ("greater", _lo.greater),
        ("greater_equal", _lo.greater_equal), ("logical_and", _lo.logical_and),
        ("logical_or", _lo.logical_or), ("logical_xor", _lo.logical_xor),
        ("logical_not", _lo.logical_not), ("negative", _m.negative), ("matmul", _lin.matmul),
        ("absolute", _u.abs), ("fabs", _u.abs), ("sign", _u.sign), ("sqrt", _u.sqrt),
        ("square", _u.square), ("exp", _u.exp), ("expm1", _u.expm1), ("log", _u.log),
        ("log1p", _u.log1p), ("sin", _u.sin), ("cos", _u.cos), ("tan", _u.tan),
        ("arcsin", _u.asin), ("arccos", _u.acos), ("arctan", _u.atan), ("sinh", _u.sinh),
        ("cosh", _u.cosh), ("tanh", _u.tanh), ("arcsinh", _u.asinh), ("arccosh", _u.acosh),
        ("arctanh", _u.atanh), ("floor", _u.floor), ("ceil", _u.ceil), ("rint", _u.round),
        ("reciprocal", _u.reciprocal), ("isnan", _u.is_nan), ("isinf", _u.is_inf),
        ("isfinite", _u.is_finite)]:
    _simple(_np_name_, _fn)

_LN2, _LN10 = math.log(2.0), math.log(10.0)


@_ufuncs("vj.identity", "positive")
def _positive(x):
    return _a.identity(x)


@_ufuncs("vj.pow(2, x)", "exp2")
def _exp2(x):
    return _m.pow(2.0, x)


@_ufuncs("vj.log(x) / log(2)", "log2")
def _log2(x):
    return _m.multiply(_u.log(x), 1.0 / _LN2)


@_ufuncs("vj.log(x) / log(10)", "log10")
def _log10(x):
    return _m.multiply(_u.log(x), 1.0 / _LN10)


@_ufuncs("vj.sign(x) * vj.abs(x) ** (1/3)", "cbrt")
def _cbrt(x):
    return _m.multiply(_u.sign(x), _m.pow(_u.abs(x), 1.0 / 3.0))


@_ufuncs("vj.sign(x) * vj.floor(vj.abs(x))", "trunc")
def _trunc(x):
    return _m.multiply(_u.sign(x), _u.floor(_u.abs(x)))


@_ufuncs("x * (pi / 180)", "deg2rad", "radians")
def _deg2rad(x):
    return _m.multiply(x, math.pi / 180.0)


@_ufuncs("x * (180 / pi)", "rad2deg", "degrees")
def _rad2deg(x):
    return _m.multiply(x, 180.0 / math.pi)


@_ufuncs("vj.math.conj", "conjugate")
def _conjugate(x):
    return _cx.conj(x)


@_ufuncs("vj.pow in float64 (complex128)", "float_power")
def _float_power(x, y):
    dt = np.complex128 if "c" in (_dtype(x).kind, _dtype(y).kind) else np.float64
    return _m.pow(_lo.cast(x, dt), _lo.cast(y, dt))


@_ufuncs("vj.sqrt(x**2 + y**2)", "hypot")
def _hypot(x, y):
    return _u.sqrt(_m.add(_u.square(x), _u.square(y)))


def _log_add(log1p_of_exp):
    """hi + log1p_of_exp(lo - hi) with hi, lo the larger and smaller input, chosen by a
    select: exact in value (NumPy's formula) and in gradient at ties too (lo - hi carries
    both inputs, so each gets half there)."""
    def fn(x, y):
        x, y = _float_common([x, y])
        first = _lo.greater_equal(x, y)
        hi, lo = _lo.where(first, x, y), _lo.where(first, y, x)
        gap = _m.subtract(lo, hi)
        # equal infinities: inf - inf is NaN, NumPy gives x + log(2) (= x)
        gap = _lo.where(_lo.logical_and(_u.is_inf(x), _lo.equal(x, y)), 0.0, gap)
        return _m.add(hi, log1p_of_exp(gap))
    return fn


_ufuncs("hi + vj.log1p(vj.exp(lo - hi)), hi / lo the larger / smaller (vj.where)",
        "logaddexp")(_log_add(lambda d: _u.log1p(_u.exp(d))))
_ufuncs("hi + vj.log1p(2 ** (lo - hi)) / log(2), hi / lo the larger / smaller (vj.where)",
        "logaddexp2")(_log_add(lambda d: _m.multiply(_u.log1p(_u.exp(_m.multiply(d, _LN2))),
                                                     1.0 / _LN2)))


def _nan_ignoring(pick):
    """np.fmax / np.fmin: the other input where one is NaN, else maximum / minimum."""
    def fn(x, y):
        x, y = _common([x, y], None)
        if _dtype(x).kind not in "fc":
            return pick(x, y)
        out = _lo.where(_u.is_nan(x), y, pick(x, y))
        return _lo.where(_u.is_nan(y), x, out)
    return fn


_ufuncs("vj.maximum, NaN ignored (vj.where)", "fmax")(_nan_ignoring(_extrema.maximum))
_ufuncs("vj.minimum, NaN ignored (vj.where)", "fmin")(_nan_ignoring(_extrema.minimum))


@_ufuncs("vj.atan of y/x or x/y + quadrant (vj.where)", "arctan2")
def _arctan2(y, x):
    return quadrant_atan(y, x)


@_ufuncs("(vj.floordiv, vj.floormod)", "divmod")
def _divmod(x, y):
    return _m.floordiv(x, y), _m.floormod(x, y)


def _bitwise(logical):
    def fn(x, y):
        if _dtype(x) != np.bool_ or _dtype(y) != np.bool_:
            raise _Unsupported("integer bitwise ops")
        return logical(x, y)
    return fn


_ufuncs("vj.logical_and (bool)", "bitwise_and")(_bitwise(_lo.logical_and))
_ufuncs("vj.logical_or (bool)", "bitwise_or")(_bitwise(_lo.logical_or))
_ufuncs("vj.logical_xor (bool)", "bitwise_xor")(_bitwise(_lo.logical_xor))


@_ufuncs("vj.reduce_sum(x * y, axis=-1)", "vecdot")
def _vecdot_ufunc(x, y):
    return _r.reduce_sum(_m.multiply(x, y), axis=-1)


# -- sign bits, remainders, steps ------------------------------------------------------------
def _signbit(x):
    """np.signbit as a condition (no gradient flows through it): x < 0, or -0.0 (whose
    reciprocal is -inf; the other entries divide 1 by 1). The sign bit of a NaN is not
    seen."""
    zero = _lo.equal(x, 0)
    with np.errstate(divide="ignore"):
        inverse = _u.reciprocal(_lo.where(zero, x, _c.ones_like(x)))
    return _lo.logical_or(_lo.less(x, 0), _lo.less(inverse, 0))


@_ufuncs("s * vj.floormod(s * x, vj.abs(y)), s = the sign of x (vj.where)", "fmod")
def _fmod(x, y):
    # NumPy's C fmod: the remainder of |x| / |y| with the sign of x; on positive operands
    # it equals np.mod, exactly. s * x = |x| with derivative 1 also at x = 0
    x, y = _common([x, y], None)
    if _dtype(x).kind not in "iuf":
        raise _Unsupported(f"dtype {_dtype(x)}")
    s = _lo.where(_lo.less(x, 0), -_c.ones_like(x), _c.ones_like(x))
    return _m.multiply(s, _m.floormod(_m.multiply(s, x), _u.abs(y)))


@_ufuncs("vj.abs(x) * (-1 where y's sign bit is set, else 1) (vj.where)", "copysign")
def _copysign(x, y):
    x, y = _float_common([x, y])
    if _dtype(x).kind != "f":
        raise _Unsupported(f"dtype {_dtype(x)}")
    one = _c.ones_like(_m.add(x, y))
    return _m.multiply(_u.abs(x), _lo.where(_signbit(y), -one, one))


@_ufuncs("vj.where (0 for x < 0, 1 for x > 0, h at 0, NaN for NaN)", "heaviside")
def _heaviside(x, h):
    x, h = _float_common([x, h])
    if _dtype(x).kind != "f":
        raise _Unsupported(f"dtype {_dtype(x)}")
    shape = np.broadcast_shapes(tuple(x.shape), tuple(h.shape))
    zero = _c.zeros_like(_a.broadcast_to(x, shape))
    out = _lo.where(_lo.less(x, 0), zero, _lo.where(_lo.greater(x, 0), zero + 1, h))
    return _lo.where(_u.is_nan(x), x, out)


@_ufuncs("x * vj.pow(2, i) (integer i)", "ldexp")
def _ldexp(x, i):
    if _dtype(i).kind not in "iub":
        raise TypeError(f"np.ldexp: the exponent i must be integers, got dtype {_dtype(i)}")
    if _dtype(x).kind not in "biuf":
        raise _Unsupported(f"dtype {_dtype(x)}")
    dt = np.ldexp(np.zeros(0, _dtype(x)), np.zeros(0, _dtype(i))).dtype  # NumPy's loop
    return _m.multiply(_cast_to(x, dt), _m.pow(2.0, _lo.cast(i, dt)))
