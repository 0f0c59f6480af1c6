"""Element-wise math: exp, log, trigonometric, hyperbolic, roots, rounding, erf, and the
two-argument special functions xlogy / xdivy.

Each op keeps the input's dtype for floats (integers follow NumPy: exp(int) is float64;
bool inputs are rejected, NumPy would silently give float16). Ops whose gradient is g
times a factor write that factor once, `dydx` (vecjac/_src/ops/elementwise/family.py),
from the forward's output where that is cheaper (exp, sqrt, tanh).
"""

import numpy as np

from vecjac._src.core.dispatch import apply, to_input
from vecjac._src.core.registry import lib, register
from vecjac._src.core.samples import Arg, Sample
from vecjac._src.ops import kernels
from vecjac._src.ops.array.creation import zeros_like
from vecjac._src.transforms.function import fusion
from vecjac._src.ops.elementwise.complex_parts import ComplexAbs, conj_if_complex
from vecjac._src.ops.elementwise.family import ARRAYS, Unary, UnaryWithDerivative

__all__ = ["exp", "log", "log1p", "expm1", "sqrt", "rsqrt", "square", "sign",
           "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh",
           "acosh", "atanh", "floor", "ceil", "reciprocal", "is_nan", "is_inf",
           "is_finite"]
# abs and round are exported explicitly (vecjac/__init__.py, vecjac/math.py): in __all__
# they would shadow Python's builtins in modules that star-import this one.


@register
class Exp(UnaryWithDerivative):
    complex_rules = True
    inplace_ufunc = np.exp
    samples = (Sample("exp", Arg.float(2, "n")), Sample("exp", Arg.float()))
    samples += (Sample("exp", Arg.float("m", "n"), dim_range=(0, 3)),)  # empty arrays too

    def forward(self, x):
        return np.exp(x)

    @staticmethod
    def dydx(x, y, xp=ARRAYS):
        return y


@register
class Log(Unary):
    complex_rules = True
    inplace_ufunc = np.log
    samples = (Sample("log", Arg.positive(2, "n")), Sample("log", Arg.positive()))

    def forward(self, x):
        return np.log(x)

    def gradient(self, e, g):
        return g / conj_if_complex(e.inputs[0])


@register
class Log1p(Unary):
    complex_rules = True
    samples = (Sample("log1p", Arg.float(2, "n", lo=-0.5)), Sample("log1p", Arg.float(lo=-0.5)))

    def forward(self, x):
        return np.log1p(x)

    def gradient(self, e, g):
        return g / conj_if_complex(e.inputs[0] + 1)


@register
class Expm1(UnaryWithDerivative):
    complex_rules = True
    samples = (Sample("expm1", Arg.float(2, "n")), Sample("expm1", Arg.float()))

    def forward(self, x):
        return np.expm1(x)

    @staticmethod
    def dydx(x, y, xp=ARRAYS):
        return y + 1


@register
class Sqrt(UnaryWithDerivative):
    complex_rules = True
    inplace_ufunc = np.sqrt
    fusion_code = fusion.SQRT
    samples = (Sample("sqrt", Arg.positive(2, "n")), Sample("sqrt", Arg.positive()))

    def forward(self, x):
        return np.sqrt(x)

    @staticmethod
    def dydx(x, y, xp=ARRAYS):
        return 0.5 / y


@register
class Rsqrt(UnaryWithDerivative):
    complex_rules = True
    samples = (Sample("rsqrt", Arg.positive(2, "n")), Sample("rsqrt", Arg.positive()))

    def forward(self, x):
        return 1 / np.sqrt(x)

    @staticmethod
    def dydx(x, y, xp=ARRAYS):
        return -0.5 * y * y * y


@register
class Square(UnaryWithDerivative):
    complex_rules = True
    inplace_ufunc = np.multiply  # x * x: the replay passes x twice
    fusion_code = fusion.SQUARE
    scalar_expression = "{0} * {0}"
    samples = (Sample("square", Arg.float(2, "n")), Sample("square", Arg.float()))

    def forward(self, x):
        return x * x

    @staticmethod
    def dydx(x, y, xp=ARRAYS):
        return 2 * x


@register
class Abs(UnaryWithDerivative):
    inplace_ufunc = np.abs
    fusion_code = fusion.ABS
    samples = (Sample("abs", Arg.float(2, "n")), Sample("abs", Arg.float()))

    def forward(self, x):
        return np.abs(x)

    @staticmethod
    def dydx(x, y, xp=ARRAYS):
        return xp.Sign(x)


@register
class Sign(Unary):
    samples = (Sample("sign", Arg.float(2, "n")), Sample("sign", Arg.float()))

    def forward(self, x):
        return np.sign(x)

    def gradient(self, e, g):
        return zeros_like(e.inputs[0])

    def array_gradient(self, e, g):  # the rule on arrays (op_block.md): ZerosLike's forward
        return (np.zeros(e.inputs[0].shape, e.inputs[0].dtype),)


@register
class Sin(UnaryWithDerivative):
    complex_rules = True
    inplace_ufunc = np.sin
    samples = (Sample("sin", Arg.float(2, "n")), Sample("sin", Arg.float()))

    def forward(self, x):
        return np.sin(x)

    @staticmethod
    def dydx(x, y, xp=ARRAYS):
        return xp.Cos(x)

    def value_and_derivative(self, x):
        both = kernels.sincos(x)
        return (np.sin(x), np.cos(x)) if both is None else both


@register
class Cos(UnaryWithDerivative):
    complex_rules = True
    inplace_ufunc = np.cos
    samples = (Sample("cos", Arg.float(2, "n")), Sample("cos", Arg.float()))

    def forward(self, x):
        return np.cos(x)

    @staticmethod
    def dydx(x, y, xp=ARRAYS):
        return -xp.Sin(x)

    def value_and_derivative(self, x):
        both = kernels.sincos(x)
        return (np.cos(x), -np.sin(x)) if both is None else (both[1], -both[0])


@register
class Tan(UnaryWithDerivative):
    complex_rules = True
    samples = (Sample("tan", Arg.float(2, "n", lo=-1.2, hi=1.2)),
               Sample("tan", Arg.float(lo=-1.2, hi=1.2)))

    def forward(self, x):
        return np.tan(x)

    @staticmethod
    def dydx(x, y, xp=ARRAYS):
        return 1 + y * y


@register
class Asin(UnaryWithDerivative):
    complex_rules = True
    samples = (Sample("asin", Arg.float(2, "n", lo=-0.8, hi=0.8)),
               Sample("asin", Arg.float(lo=-0.8, hi=0.8)))

    def forward(self, x):
        return np.arcsin(x)

    @staticmethod
    def dydx(x, y, xp=ARRAYS):
        return xp.Rsqrt(1 - x * x)


@register
class Acos(UnaryWithDerivative):
    complex_rules = True
    samples = (Sample("acos", Arg.float(2, "n", lo=-0.8, hi=0.8)),
               Sample("acos", Arg.float(lo=-0.8, hi=0.8)))

    def forward(self, x):
        return np.arccos(x)

    @staticmethod
    def dydx(x, y, xp=ARRAYS):
        return -xp.Rsqrt(1 - x * x)


@register
class Atan(Unary):
    complex_rules = True
    samples = (Sample("atan", Arg.float(2, "n")), Sample("atan", Arg.float()))

    def forward(self, x):
        return np.arctan(x)

    def gradient(self, e, g):
        x = e.inputs[0]
        return g / conj_if_complex(1 + x * x)


@register
class Sinh(UnaryWithDerivative):
    complex_rules = True
    samples = (Sample("sinh", Arg.float(2, "n")), Sample("sinh", Arg.float()))

    def forward(self, x):
        return np.sinh(x)

    @staticmethod
    def dydx(x, y, xp=ARRAYS):
        return xp.Cosh(x)


@register
class Cosh(UnaryWithDerivative):
    complex_rules = True
    samples = (Sample("cosh", Arg.float(2, "n")), Sample("cosh", Arg.float()))

    def forward(self, x):
        return np.cosh(x)

    @staticmethod
    def dydx(x, y, xp=ARRAYS):
        return xp.Sinh(x)


@register
class Tanh(UnaryWithDerivative):
    complex_rules = True
    inplace_ufunc = np.tanh
    samples = (Sample("tanh", Arg.float(2, "n")), Sample("tanh", Arg.float()))

    def forward(self, x):
        return np.tanh(x)

    @staticmethod
    def dydx(x, y, xp=ARRAYS):
        return 1 - y * y


@register
class Asinh(UnaryWithDerivative):
    complex_rules = True
    samples = (Sample("asinh", Arg.float(2, "n")), Sample("asinh", Arg.float()))

    def forward(self, x):
        return np.arcsinh(x)

    @staticmethod
    def dydx(x, y, xp=ARRAYS):
        return xp.Rsqrt(x * x + 1)


@register
class Acosh(UnaryWithDerivative):
    samples = (Sample("acosh", Arg.float(2, "n", lo=1.2, hi=3.0)),
               Sample("acosh", Arg.float(lo=1.2, hi=3.0)))

    def forward(self, x):
        return np.arccosh(x)

    @staticmethod
    def dydx(x, y, xp=ARRAYS):
        return xp.Rsqrt(x * x - 1)


@register
class Atanh(Unary):
    complex_rules = True
    samples = (Sample("atanh", Arg.float(2, "n", lo=-0.8, hi=0.8)),
               Sample("atanh", Arg.float(lo=-0.8, hi=0.8)))

    def forward(self, x):
        return np.arctanh(x)

    def gradient(self, e, g):
        x = e.inputs[0]
        return g / conj_if_complex(1 - x * x)


@register
class Reciprocal(UnaryWithDerivative):
    complex_rules = True
    samples = (Sample("reciprocal", Arg.positive(2, "n")), Sample("reciprocal", Arg.positive()))

    def forward(self, x):
        return 1 / x

    @staticmethod
    def dydx(x, y, xp=ARRAYS):
        return -(y * y)


class _Rounding(Unary):
    """Piecewise constant, and not differentiable, as in TF: the output carries no
    derivative, so tape.gradient gives None (zeros with unconnected_gradients="zero"; vj.grad
    and the Jacobians give zeros) and nothing downstream is recorded. Recording it with a
    zero gradient gave the same numbers at the price of running every rule upstream on
    zeros (the piecewise-constant test functions ran at 2-3x autograd, issue 30)."""
    differentiable = False


@register
class Floor(_Rounding):
    samples = (Sample("floor", Arg.float(2, "n")), Sample("floor", Arg.float()))

    def forward(self, x):
        return np.floor(x)


@register
class Ceil(_Rounding):
    samples = (Sample("ceil", Arg.float(2, "n")), Sample("ceil", Arg.float()))

    def forward(self, x):
        return np.ceil(x)


@register
class Round(_Rounding):
    samples = (Sample("round", Arg.float(2, "n")), Sample("round", Arg.float()))

    def forward(self, x):
        return np.round(x)  # half to even, as TF


class _Predicate(Unary):
    differentiable = False


@register
class IsNan(_Predicate):
    samples = (Sample("is_nan", Arg.float(2, "n")), Sample("is_nan", Arg.float()))

    def forward(self, x):
        return np.isnan(x)


@register
class IsInf(_Predicate):
    samples = (Sample("is_inf", Arg.float(2, "n")), Sample("is_inf", Arg.float()))

    def forward(self, x):
        return np.isinf(x)


@register
class IsFinite(_Predicate):
    samples = (Sample("is_finite", Arg.float(2, "n")), Sample("is_finite", Arg.float()))

    def forward(self, x):
        return np.isfinite(x)


# -- public functions: element-wise, output shape = x.shape ------------------------------
def _unary(op, x, fn):
    x = to_input(x, (), fn, "x")
    if x.dtype.kind not in "iufc":
        raise TypeError(f"{fn}: x must be a numeric (int, float or complex) tensor, got "
                        f"dtype {x.dtype}")
    return apply(op, x)


def _real_unary(op, x, fn):
    x = to_input(x, (), fn, "x")
    if x.dtype.kind not in "iuf":
        raise TypeError(f"{fn}: x must be a real (int or float) tensor, got dtype {x.dtype}")
    return apply(op, x)


def exp(x, name=None): return _unary(Exp, x, "exp")
def log(x, name=None): return _unary(Log, x, "log")
def log1p(x, name=None): return _unary(Log1p, x, "log1p")
def expm1(x, name=None): return _unary(Expm1, x, "expm1")
def sqrt(x, name=None): return _unary(Sqrt, x, "sqrt")
def rsqrt(x, name=None): return _unary(Rsqrt, x, "rsqrt")
def square(x, name=None): return _unary(Square, x, "square")
def abs(x, name=None):  # noqa: A001 (TF's name)
    """|x|; of a complex tensor the modulus, a real tensor (TF's ComplexAbs)."""
    x = to_input(x, (), "abs", "x")
    return apply(ComplexAbs, x) if x.dtype.kind == "c" else _unary(Abs, x, "abs")
def sign(x, name=None): return _unary(Sign, x, "sign")
def sin(x, name=None): return _unary(Sin, x, "sin")
def cos(x, name=None): return _unary(Cos, x, "cos")
def tan(x, name=None): return _unary(Tan, x, "tan")
def asin(x, name=None): return _unary(Asin, x, "asin")
def acos(x, name=None): return _unary(Acos, x, "acos")
def atan(x, name=None): return _unary(Atan, x, "atan")
def sinh(x, name=None): return _unary(Sinh, x, "sinh")
def cosh(x, name=None): return _unary(Cosh, x, "cosh")
def tanh(x, name=None): return _unary(Tanh, x, "tanh")
def asinh(x, name=None): return _unary(Asinh, x, "asinh")
def acosh(x, name=None): return _unary(Acosh, x, "acosh")
def atanh(x, name=None): return _unary(Atanh, x, "atanh")
def floor(x, name=None): return _real_unary(Floor, x, "floor")
def ceil(x, name=None): return _real_unary(Ceil, x, "ceil")
def round(x, name=None): return _real_unary(Round, x, "round")  # noqa: A001 (TF's name)
def reciprocal(x, name=None): return _unary(Reciprocal, x, "reciprocal")
def is_nan(x, name=None): return _real_unary(IsNan, x, "is_nan")
def is_inf(x, name=None): return _real_unary(IsInf, x, "is_inf")
def is_finite(x, name=None): return _real_unary(IsFinite, x, "is_finite")

lib.publish(globals(), __all__ + ['abs'])
