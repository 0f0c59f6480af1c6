"""NumPy's numerical helpers on Tensors (vecjac/_src/numpy/dispatch.py): diff, gradient,
linspace, interp, sinc, nan_to_num, real, imag, real_if_close, angle, i0, polyval,
trapezoid, convolve.

Each is written with vecjac ops following NumPy's own algorithm (the same formulas in the
same order, so values agree to rounding), which makes it differentiable where NumPy's
result is a smooth function of the inputs: np.gradient in f and in Tensor spacings,
np.linspace in its endpoints, np.interp in x, xp and fp (the interval lookup is a
non-differentiable search, constant almost everywhere).
"""
import math
import operator

import numpy as np

from vecjac._src.core.dispatch import apply, to_input
from vecjac._src.core.tensor import Tensor
from vecjac._src.numpy.functions import (_axis, _axis_tuple, _cast_to, _common, _float_common, _no,
                                         _plain_value, _shape, _to_float)
from vecjac._src.numpy.tables import _dtype, _functions, _is_vj, _Unsupported
from vecjac._src.numpy.ufuncs import _signbit
from vecjac._src.ops.array import creation as _c
from vecjac._src.ops.array import indexing as _i
from vecjac._src.ops.array import shaping as _a
from vecjac._src.ops.elementwise import arithmetic as _m
from vecjac._src.ops.elementwise import extrema as _extrema
from vecjac._src.ops.elementwise import bessel as _bessel
from vecjac._src.ops.elementwise import complex_parts as _cx
from vecjac._src.ops.elementwise import logic as _lo
from vecjac._src.ops.elementwise import unary as _u
from vecjac._src.ops.reduce import reductions as _r
from vecjac._src.ops.reduce import sort as _so
from vecjac._src.ops.scipy import signal as _sig


def _along(x, axis, key):
    """x[..., key, ...] with `key` (a slice) at `axis`."""
    return _i.getitem(x, (slice(None),) * axis + (key,))


# -- differences -----------------------------------------------------------------------------
def _edge(value, x, axis):
    """prepend / append of np.diff: a scalar becomes a slab of size 1 along axis."""
    shape = list(_shape(x))
    if np.ndim(value) == 0:
        shape[axis] = 1
        return _a.broadcast_to(value if _is_vj(value) else Tensor(np.asarray(value)),
                               tuple(shape))
    return value


@_functions("differences of vecjac slices", "diff")
def _diff(a, n=1, axis=-1, prepend=np._NoValue, append=np._NoValue):
    nd = len(_shape(a))
    if nd == 0:
        raise ValueError("np.diff: a must be at least 1-d, got a scalar")
    axis = _axis(axis, nd, "np.diff")
    n = operator.index(n)
    if n < 0:
        raise ValueError(f"np.diff: order n must be non-negative, got {n}")
    if prepend is not np._NoValue or append is not np._NoValue:
        parts = [] if prepend is np._NoValue else [_edge(prepend, a, axis)]
        parts += [a] + ([] if append is np._NoValue else [_edge(append, a, axis)])
        a = _a.concat(_common(parts, None), axis)
    for _ in range(n):
        hi, lo = _along(a, axis, slice(1, None)), _along(a, axis, slice(None, -1))
        a = _lo.not_equal(hi, lo) if _dtype(a) == np.bool_ else _m.subtract(hi, lo)
    return a


def _spacing(d, size, fn):
    """One axis' spacing as np.gradient sees it: a scalar, or the differences of the
    coordinates (a constant array reduced to its scalar when uniform, as NumPy does; a
    Tensor's differences as vecjac ops, so the result is differentiable in them)."""
    if np.ndim(d) == 0:
        return d
    if np.ndim(d) != 1:
        raise ValueError(f"{fn}: distances must be either scalars or 1-D, got shape "
                         f"{np.shape(d)}")
    if len(d) != size:
        raise ValueError(f"{fn}: 1-D distances must match the length {size} of their axis, "
                         f"got {len(d)}")
    if _is_vj(d):
        d = _to_float(to_input(d, fn=fn, arg="varargs"))
        return _m.subtract(d[1:], d[:-1])
    d = np.asarray(d)
    diffs = np.diff(d.astype(np.float64) if d.dtype.kind in "biu" else d)
    return diffs[0] if (diffs == diffs[0]).all() else diffs


def _broadcast_on(c, axis, ndim):
    """A 1-D coefficient laid along `axis` of an ndim-array."""
    shape = [1] * ndim
    shape[axis] = -1
    return c.reshape(tuple(shape))


def _gradient_axis(f, axis, dx, edge_order):
    """NumPy's np.gradient along one axis: second order inside, edge_order at the ends."""
    nd = f.ndim

    def part(key):
        return _along(f, axis, key)
    uniform = np.ndim(dx) == 0
    if uniform:
        inner = (part(slice(2, None)) - part(slice(None, -2))) / (2.0 * dx)
    else:
        dx1, dx2 = dx[0:-1], dx[1:]
        a = _broadcast_on(-(dx2) / (dx1 * (dx1 + dx2)), axis, nd)
        b = _broadcast_on((dx2 - dx1) / (dx1 * dx2), axis, nd)
        c = _broadcast_on(dx1 / (dx2 * (dx1 + dx2)), axis, nd)
        inner = a * part(slice(None, -2)) + b * part(slice(1, -1)) + c * part(slice(2, None))
    first, second, third = part(slice(0, 1)), part(slice(1, 2)), part(slice(2, 3))
    last, before, third_last = part(slice(-1, None)), part(slice(-2, -1)), part(slice(-3, -2))
    if edge_order == 1:
        start = (second - first) / (dx if uniform else dx[0])
        end = (last - before) / (dx if uniform else dx[-1])
    else:
        if uniform:
            a, b, c = -1.5 / dx, 2.0 / dx, -0.5 / dx
        else:
            dx1, dx2 = dx[0], dx[1]
            a = -(2.0 * dx1 + dx2) / (dx1 * (dx1 + dx2))
            b = (dx1 + dx2) / (dx1 * dx2)
            c = -dx1 / (dx2 * (dx1 + dx2))
        start = a * first + b * second + c * third
        if uniform:
            a, b, c = 0.5 / dx, -2.0 / dx, 1.5 / dx
        else:
            dx1, dx2 = dx[-2], dx[-1]
            a = dx2 / (dx1 * (dx1 + dx2))
            b = -(dx2 + dx1) / (dx1 * dx2)
            c = (2.0 * dx2 + dx1) / (dx2 * (dx1 + dx2))
        end = a * third_last + b * before + c * last
    return _a.concat(_float_common([start, inner, end]), axis)


@_functions("differences of vecjac slices (NumPy's edge_order rules and spacings)", "gradient")
def _gradient(f, *varargs, axis=None, edge_order=1):
    fn = "np.gradient"
    f = to_input(f, fn=fn, arg="f")
    if f.dtype.kind not in "fc":
        f = _lo.cast(f, np.float64)
    axes = tuple(range(f.ndim)) if axis is None else _axis_tuple(axis, f.ndim, fn)
    if not varargs:
        spacings = [1.0] * len(axes)
    elif len(varargs) == 1 and np.ndim(varargs[0]) == 0:
        spacings = [varargs[0]] * len(axes)
    elif len(varargs) == len(axes):
        spacings = [_spacing(d, f.shape[ax], fn) for d, ax in zip(varargs, axes)]
    else:
        raise TypeError(f"{fn}: give no spacing, one scalar, or one per axis ({len(axes)}); "
                        f"got {len(varargs)}")
    if edge_order not in (1, 2):
        raise ValueError(f"{fn}: edge_order must be 1 or 2, got {edge_order!r}")
    out = []
    for ax, dx in zip(axes, spacings):
        if f.shape[ax] < edge_order + 1:
            raise ValueError(f"{fn}: an axis needs at least edge_order + 1 = "
                             f"{edge_order + 1} elements, axis {ax} has {f.shape[ax]}")
        if _is_vj(dx):
            dx = _cast_to(dx, f.dtype)
        out.append(_cast_to(_gradient_axis(f, ax, dx, edge_order), f.dtype))
    return out[0] if len(out) == 1 else tuple(out)


# -- sampling and interpolation ------------------------------------------------------------
@_functions("start + arange * step (differentiable in start and stop)", "linspace")
def _linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0, *,
              device=None):
    fn = "np.linspace"
    num = operator.index(num)
    if num < 0:
        raise ValueError(f"{fn}: num must be non-negative, got {num}")
    _no(device=device if device != "cpu" else None)
    start, stop = _float_common([start, stop])
    # a Python number stays weak in _float_common: it takes the other end's dtype
    dt = np.result_type(*[_dtype(x) for x in (start, stop) if isinstance(x, Tensor)] or
                        [np.float64])
    start, stop = [x if isinstance(x, Tensor) else Tensor(np.asarray(x, dt))
                   for x in (start, stop)]
    shape = np.broadcast_shapes(start.shape, stop.shape)
    div = num - 1 if endpoint else num
    delta = _m.subtract(stop, start)
    t = Tensor(np.arange(num, dtype=dt).reshape((-1,) + (1,) * len(shape)))
    step = _m.divide(delta, div) if div > 0 else float("nan")
    y = _m.add(_m.multiply(t, step if div > 0 else delta), start)
    if endpoint and num > 1:  # the last sample is stop itself
        y = _a.concat([y[:-1], _a.expand_dims(_a.broadcast_to(stop, shape), 0)], 0)
    if axis != 0:
        y = _a.transpose(y, _moved_first(len(shape) + 1, _axis(axis, len(shape) + 1, fn)))
    if dtype is not None:
        if np.dtype(dtype).kind in "iu":
            y = _u.floor(y)
        y = _lo.cast(y, dtype)
    return (y, step) if retstep else y


def _moved_first(nd, to):
    order = list(range(1, nd))
    order.insert(to, 0)
    return order


@_functions("SearchSorted + gathers + linear interpolation", "interp")
def _interp(x, xp, fp, left=None, right=None, period=None):
    fn = "np.interp"
    if "c" in (_dtype(x).kind, _dtype(xp).kind):
        raise TypeError(f"{fn}: x and xp must be real, got dtypes {_dtype(x)} and "
                        f"{_dtype(xp)}")
    out = np.complex128 if _dtype(fp).kind == "c" else np.float64
    x, xp = _lo.cast(to_input(x, fn=fn, arg="x"), np.float64), _lo.cast(
        to_input(xp, fn=fn, arg="xp"), np.float64)
    fp = _lo.cast(to_input(fp, fn=fn, arg="fp"), out)
    if xp.ndim != 1 or fp.ndim != 1:
        raise ValueError(f"{fn}: xp and fp must be 1-D, got shapes {xp.shape} and {fp.shape}")
    if xp.shape != fp.shape:
        raise ValueError(f"{fn}: fp and xp are not of the same length ({fp.shape[0]} and "
                         f"{xp.shape[0]})")
    if not xp.shape[0]:
        raise ValueError(f"{fn}: xp (the sample points) is empty")
    if period is not None:
        period = float(_plain_value(period, fn, "period"))
        if period == 0:
            raise ValueError(f"{fn}: period must be a non-zero value")
        period, left, right = abs(period), None, None
        x, xp = _m.floormod(x, period), _m.floormod(xp, period)
        order = apply(_so.ArgSort, xp, axis=0, descending=False, stable=False)
        xp, fp = _i.gather(xp, order), _i.gather(fp, order)
        xp = _a.concat([_m.subtract(xp[-1:], period), xp, _m.add(xp[:1], period)], 0)
        fp = _a.concat([fp[-1:], fp, fp[:1]], 0)
    n = xp.shape[0]
    first, last = fp[0], fp[-1]
    left = first if left is None else _cast_to(left, out)
    right = last if right is None else _cast_to(right, out)
    if n == 1:
        y = _lo.where(_lo.greater(x, xp[0]), right, _a.broadcast_to(first, x.shape))
    else:
        j = _m.subtract(apply(_so.SearchSorted, xp, x, side="right"), 1)
        j = _extrema.minimum(_extrema.maximum(j, 0), n - 2)
        x0, x1 = _i.gather(xp, j), _i.gather(xp, _m.add(j, 1))
        y0, y1 = _i.gather(fp, j), _i.gather(fp, _m.add(j, 1))
        width = _m.subtract(x1, x0)
        width = _lo.where(_lo.equal(width, 0), 1.0, width)  # repeated xp: never used, kept finite
        slope = _m.divide(_m.subtract(y1, y0), _cast_to(width, out))
        y = _m.add(_m.multiply(slope, _cast_to(_m.subtract(x, x0), out)), y0)
        y = _lo.where(_lo.greater_equal(x, xp[-1]), last, y)  # x == xp[-1] gives fp[-1]
        y = _lo.where(_lo.greater(x, xp[-1]), right, y)
    y = _lo.where(_lo.less(x, xp[0]), left, y)
    return _lo.where(_u.is_nan(x), _cast_to(x, out), y)


# -- element-wise helpers ------------------------------------------------------------------
@_functions("sin(pi x) / (pi x), its Taylor series near 0", "sinc")
def _sinc(x):
    if _dtype(x).kind == "c":
        raise _Unsupported("complex sinc")
    y = _m.multiply(_to_float(x), math.pi)
    # near 0 the series 1 - y^2/6 + y^4/120 (error < y^6/5040 < 3e-16): the quotient's
    # 0/0 would make the derivatives there NaN
    small = _lo.less(_u.abs(y), 1e-2)
    safe = _lo.where(small, 1.0, y)
    y2 = _m.multiply(y, y)
    series = _m.add(_m.subtract(1.0, _m.divide(y2, 6.0)), _m.divide(_m.multiply(y2, y2), 120.0))
    return _lo.where(small, series, _m.divide(_u.sin(safe), safe))


@_functions("vj.where (NaN, +inf, -inf replaced)", "nan_to_num")
def _nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    dt = _dtype(x)
    if dt.kind in "biu":
        return _a.identity(x)
    if dt.kind == "c":
        raise _Unsupported("complex nan_to_num")
    info = np.finfo(dt)
    with np.errstate(over="ignore"):
        fills = [Tensor(np.asarray(v, dt)) for v in (
            nan, info.max if posinf is None else posinf, info.min if neginf is None else neginf)]
    out = _lo.where(_lo.equal(x, -np.inf), fills[2], x)
    out = _lo.where(_lo.equal(x, np.inf), fills[1], out)
    return _lo.where(_u.is_nan(x), fills[0], out)


@_functions("vj.math.real", "real")
def _real(val):
    return _cx.real(val)


@_functions("vj.math.imag", "imag")
def _imag(val):
    return _cx.imag(val)


@_functions("vj.identity / vj.math.real when every imaginary part is small", "real_if_close")
def _real_if_close(a, tol=100):
    dt = _dtype(a)
    if dt.kind != "c":
        return _a.identity(a)
    if tol > 1:
        tol = np.finfo(dt).eps * tol
    value = a._value if isinstance(a, Tensor) else a.read_value()._value
    return _cx.real(a) if np.all(np.abs(value.imag) < tol) else _a.identity(a)


@_functions("vj.math.angle (complex); pi where x's sign bit is set, else 0 (real x)",
            "angle")
def _angle(z, deg=False):
    if _dtype(z).kind == "c":
        out = _cx.angle(z)
        return _m.multiply(out, 180.0 / math.pi) if deg else out
    x = _to_float(to_input(z, fn="np.angle", arg="z"))
    half_turn = 180.0 if deg else math.pi  # NumPy: arctan2(0, x) (* 180 / pi)
    turn = _lo.where(_signbit(x), _c.ones_like(x) * half_turn, _c.zeros_like(x))
    return _lo.where(_u.is_nan(x), x, turn)  # a NaN stays; x connects with derivative 0


@_functions("vj.scipy.special.i0 (float64 for integers)", "i0")
def _i0(x):
    if _dtype(x).kind == "c":
        raise TypeError("np.i0: x must be real, i0 is not supported for complex values")
    return _bessel.i0(_to_float(to_input(x, fn="np.i0", arg="x")))


# -- polynomials, integrals, convolutions ----------------------------------------------------
@_functions("Horner's rule y = y * x + p[k] with vecjac ops", "polyval")
def _polyval(p, x):
    fn = "np.polyval"
    if isinstance(p, np.poly1d) or isinstance(x, np.poly1d):
        raise _Unsupported("np.poly1d")
    p = to_input(p, fn=fn, arg="p")
    if p.ndim == 0:
        raise TypeError(f"{fn}: p must be a sequence of coefficients, got a scalar")
    x = to_input(x, fn=fn, arg="x")
    y = _c.zeros_like(x)  # as NumPy: zeros_like(x), then y * x + pv for every pv in p
    for k in range(p.shape[0]):
        y = _m.add(_m.multiply(y, x), p[k])
    return y


@_functions("sum of d * (y[1:] + y[:-1]) / 2 (differentiable in y, x and dx)", "trapezoid",
            "trapz")
def _trapezoid(y, x=None, dx=1.0, axis=-1):
    fn = "np.trapezoid"
    y = to_input(y, fn=fn, arg="y")
    if y.ndim == 0:
        raise ValueError(f"{fn}: y must be at least 1-d, got a scalar")
    axis = _axis(axis, y.ndim, fn)
    if x is None:
        d = dx
    else:
        x = to_input(x, fn=fn, arg="x")
        if x.ndim == 1:
            if x.shape[0] != y.shape[axis]:
                raise ValueError(f"{fn}: 1-D x must have the length {y.shape[axis]} of y's "
                                 f"axis {axis}, got {x.shape[0]}")
            d = _m.subtract(x[1:], x[:-1])
            shape = [1] * y.ndim
            shape[axis] = d.shape[0]
            d = _a.reshape(d, tuple(shape))
        else:
            d = _diff(x, axis=axis)
    total = _m.add(_along(y, axis, slice(1, None)), _along(y, axis, slice(None, -1)))
    return _r.reduce_sum(_m.divide(_m.multiply(d, total), 2.0), axis=axis)


@_functions("Convolve (scipy.signal.convolve's op, direct method); 'same': a slice of "
            "'full'", "convolve")
def _convolve(a, v, mode="full"):
    fn = "np.convolve"
    if not isinstance(mode, str):
        raise _Unsupported("a numeric mode")
    if mode not in ("full", "same", "valid"):
        raise ValueError(f"{fn}: mode must be 'full', 'same' or 'valid', got {mode!r}")
    for name, t in (("a", a), ("v", v)):
        if _dtype(t).kind not in "iuf":
            raise _Unsupported(f"{name} of dtype {_dtype(t)}")
    a, v = _common([to_input(a, fn=fn, arg="a"), to_input(v, fn=fn, arg="v")], None)
    a, v = [_a.reshape(t, (1,)) if t.ndim == 0 else t for t in (a, v)]
    for name, t in (("a", a), ("v", v)):
        if t.ndim != 1:
            raise ValueError(f"{fn}: {name} must be 1-D, got shape {t.shape}")
    if v.shape[0] > a.shape[0]:
        a, v = v, a  # NumPy convolves the longer with the shorter
    if v.shape[0] == 0:
        raise ValueError(f"{fn}: a and v cannot be empty")
    if mode == "valid":
        return apply(_sig.Convolve, a, v, mode="valid", method="direct", batch=0)
    full = apply(_sig.Convolve, a, v, mode="full", method="direct", batch=0)
    if mode == "full":
        return full
    start = (v.shape[0] - 1) // 2
    return full[start:start + a.shape[0]]
