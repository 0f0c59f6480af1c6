"""The array API's element-wise functions on vecjac Tensors (abs, add, sin, bitwise_and ...).

Each runs the NumPy ufunc of the same meaning on Tensors, so NumPy's dispatch
(vecjac/_src/numpy/dispatch.py) picks the vecjac op, and the result is differentiable and
vectorizes inside pfor exactly as `np.sin(t)` does. Functions with no vecjac op (the integer
bitwise ones, signbit, nextafter-like predicates) are computed by NumPy's fallback; their
results are integers or booleans, which carry no derivative. What the standard defines
differently from NumPy is said where it is handled: rounding an integer array returns it
unchanged (np.rint would give float64), `clip` keeps x's dtype.

Python scalars stay Python scalars (vecjac's "weak" scalars: a float32 array plus 1.0 stays
float32, as the standard asks of operators); arrays of other libraries become Tensors.
"""
import numpy as np

from vecjac._src.core.tensor import Tensor, as_array
from vecjac._src.core.variables import Variable
from vecjac._src.numpy.array_api_dtypes import standard
from vecjac._src.numpy.fallback import numpy_fallback

_SCALARS = (bool, int, float)


def as_tensor(x, name):
    """x as a Tensor: a Variable is read (tapes watching it see the read), an ndarray or a
    nested list converted; TypeError naming `name` for what is no numeric array."""
    if isinstance(x, Tensor):
        return x
    if isinstance(x, Variable):
        return x.read_value()
    return Tensor(as_array(x, None, name))


def operand(x, name):
    """An operand of an element-wise function: arrays as Tensors, Python scalars kept."""
    return x if type(x) in _SCALARS else as_tensor(x, name)


def wrap(result):
    """A NumPy function's result as Tensors: its NumPy fallback's arrays (integer or bool
    results, or a computation that warned or refused already) become Tensors of their own
    (copied: the array may view an operand's value)."""
    if isinstance(result, Tensor):
        return result
    if isinstance(result, Variable):
        return result.read_value()
    if isinstance(result, (list, tuple)):
        return type(result)(wrap(r) for r in result)
    return Tensor(np.array(result))


def _unary(name, ufunc):
    def fn(x, /):
        return wrap(ufunc(operand(x, f"{name}: x")))
    standard(name)(fn)


def _binary(name, ufunc):
    def fn(x1, x2, /):
        return wrap(ufunc(operand(x1, f"{name}: x1"), operand(x2, f"{name}: x2")))
    standard(name)(fn)


for _name, _ufunc in [
        ("abs", np.absolute), ("acos", np.arccos), ("acosh", np.arccosh), ("asin", np.arcsin),
        ("asinh", np.arcsinh), ("atan", np.arctan), ("atanh", np.arctanh),
        ("bitwise_invert", np.invert), ("cos", np.cos), ("cosh", np.cosh), ("exp", np.exp),
        ("expm1", np.expm1), ("log", np.log), ("log1p", np.log1p), ("log2", np.log2),
        ("log10", np.log10), ("logical_not", np.logical_not), ("negative", np.negative),
        ("positive", np.positive), ("sign", np.sign), ("signbit", np.signbit),
        ("sin", np.sin), ("sinh", np.sinh), ("square", np.square), ("sqrt", np.sqrt),
        ("tan", np.tan), ("tanh", np.tanh)]:
    _unary(_name, _ufunc)

for _name, _ufunc in [
        ("add", np.add), ("atan2", np.arctan2), ("bitwise_and", np.bitwise_and),
        ("bitwise_left_shift", np.left_shift), ("bitwise_or", np.bitwise_or),
        ("bitwise_right_shift", np.right_shift), ("bitwise_xor", np.bitwise_xor),
        ("copysign", np.copysign), ("divide", np.divide), ("equal", np.equal),
        ("floor_divide", np.floor_divide), ("greater", np.greater),
        ("greater_equal", np.greater_equal), ("hypot", np.hypot), ("less", np.less),
        ("less_equal", np.less_equal), ("logaddexp", np.logaddexp),
        ("logical_and", np.logical_and), ("logical_or", np.logical_or),
        ("logical_xor", np.logical_xor), ("maximum", np.maximum), ("minimum", np.minimum),
        ("multiply", np.multiply), ("not_equal", np.not_equal), ("pow", np.power),
        ("remainder", np.remainder), ("subtract", np.subtract)]:
    _binary(_name, _ufunc)


def complex_by_numpy(ufunc, x, name):
    """ufunc of a complex Tensor computed by NumPy (vecjac's op takes real x), through the
    dispatch's fallback: vecjac differentiates no complex value, and a transform or tape
    that follows x refuses or warns as for any NumPy function without a vecjac op."""
    return wrap(numpy_fallback(ufunc, f"xp.{name}", (x,), {}, "a complex array"))


def _rounding(name, ufunc):
    def fn(x, /):
        x = as_tensor(x, f"{name}: x")
        if x.dtype.kind in "biu":  # integers are already whole: the standard returns x
            return x
        if x.dtype.kind == "c":  # (round only: the others take real x)
            return complex_by_numpy(ufunc, x, name)
        return wrap(ufunc(x))
    standard(name)(fn)


for _name, _ufunc in [("ceil", np.ceil), ("floor", np.floor), ("round", np.rint),
                      ("trunc", np.trunc)]:
    _rounding(_name, _ufunc)


def _predicate(name, ufunc):
    """isnan / isinf / isfinite. vecjac's predicates take real tensors; of a complex x NumPy
    judges the value (a bool result: no derivative to lose)."""
    def fn(x, /):
        x = as_tensor(x, f"{name}: x")
        if x.dtype.kind == "c":
            return Tensor(ufunc(x.numpy()))
        return wrap(ufunc(x))
    standard(name)(fn)


for _name, _ufunc in [("isnan", np.isnan), ("isinf", np.isinf), ("isfinite", np.isfinite)]:
    _predicate(_name, _ufunc)


# conj, real and imag: vecjac's complex Tensors compute but are not differentiated
@standard("conj")
def _conj(x, /):
    return wrap(np.conjugate(as_tensor(x, "conj: x")))


@standard("real")
def _real(x, /):
    return wrap(np.real(as_tensor(x, "real: x")))


@standard("imag")
def _imag(x, /):
    return wrap(np.imag(as_tensor(x, "imag: x")))


@standard("clip")
def _clip(x, /, min=None, max=None):  # noqa: A002 (the standard's parameter names)
    """x limited to [min, max] (either may be None), in x's dtype; differentiable in x and
    in array bounds (vj.maximum / vj.minimum)."""
    x = as_tensor(x, "clip: x")
    result = x
    for bound, ufunc, label in ((min, np.maximum, "min"), (max, np.minimum, "max")):
        if bound is None:
            continue
        if type(bound) in _SCALARS and x.dtype.kind in "iu":
            info = np.iinfo(x.dtype)  # a bound beyond the dtype's range binds nothing
            if not info.min <= bound <= info.max:
                continue
        result = wrap(ufunc(result, operand(bound, f"clip: {label}")))
    if result.dtype != x.dtype:  # an array bound of a wider dtype: the standard keeps x's
        result = wrap(result.astype(x.dtype))
    return result
