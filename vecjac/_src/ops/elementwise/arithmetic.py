"""Element-wise binary arithmetic.

Binary ops broadcast as NumPy does; their gradients un-broadcast (sum over the axes an
input was broadcast along). Comparisons, logic, cast and where are in logic.py, maximum and minimum in
extrema.py; the rest of vj.math (unary functions, reductions, matmul family) in sibling modules.
"""
import numpy as np

from vecjac._src.core.arguments import apply_binary
from vecjac._src.core.context import value_read
from vecjac._src.core.dispatch import apply, to_input
from vecjac._src.core.flags import NO_FAST_PATHS
from vecjac._src.core.registry import Op, lib, register
from vecjac._src.core.samples import Arg, Sample
from vecjac._src.core.tensor import Tensor
from vecjac._src.ops import kernels
from vecjac._src.ops.array.creation import zeros_like
from vecjac._src.ops.elementwise.complex_parts import conj_if_complex
from vecjac._src.ops.elementwise.logic import equal, greater, not_equal, where
from vecjac._src.ops.elementwise.unary import floor, log, square
from vecjac._src.ops.elementwise.unbroadcast import unbroadcast, unbroadcast_array
from vecjac._src.transforms.forward.rules import linear
from vecjac._src.transforms.pfor import banded
from vecjac._src.transforms.pfor.converters import broadcasting, elementwise
from vecjac._src.transforms.function import fusion
from vecjac._src.transforms.sparsity import patterns


def _plus(a, b):
    """Sum of two tangents, either of which may be None (zero). Tangents are valid
    operands by construction: the primitive, not the validating public function."""
    if a is None:
        return b
    return a if b is None else apply(Add, a, b)


def _minus(a, b):
    """a - b for tangents, either of which may be None (zero)."""
    if b is None:
        return a
    return apply(Neg, b) if a is None else apply(Sub, a, b)


def _pick(pick_x, tx, ty, e):
    """Tangent of a selection: tx where pick_x, else ty (None: zero)."""
    if tx is None and ty is None:
        return None
    zero = zeros_like(e.outputs[0])
    return where(pick_x, zero if tx is None else tx, zero if ty is None else ty)


# -- arithmetic ------------------------------------------------------------------------
@register
class Add(Op):
    complex_rules = True
    name = "AddV2"
    preserves_zeros = True  # a zero cotangent or tangent stays one
    inplace_ufunc = np.add
    fusion_code = fusion.ADD
    scalar_expression = "{0} + {1}"
    pattern = patterns.broadcasting
    samples = (Sample("add", Arg.float(2, "n"), Arg.float("n")),
               Sample("add", Arg.float(2, 1, 3), Arg.float("m", 1)),
               Sample("add", Arg.float(), Arg.float(3)))
    samples += (Sample("add", Arg.float("m", 1), Arg.float("n"), dim_range=(0, 3)),)
    converter = broadcasting
    structured = banded.add_like

    def forward(self, x, y):
        if x.ndim == 3 and x.size >= kernels.NUMBA_MIN_SIZE and not (
                x.flags.c_contiguous and y.flags.c_contiguous):
            # cotangents accumulated in a batch or stacked Jacobian: one of them a
            # broadcast bias gradient or a transposed product (kernels.plus_layouts)
            fast = kernels.plus_layouts(x, y)
            if fast is not None:
                return fast
        return x + y

    def gradient(self, e, g):
        x, y = e.inputs  # skip unwanted sides: a bias's unbroadcast is a full reduction
        return (unbroadcast(g, x.shape) if e.needs[0] else None,
                unbroadcast(g, y.shape) if e.needs[1] else None)

    def array_gradient(self, e, g):  # the rule on arrays (op_block.md)
        x, y = e.inputs
        return (unbroadcast_array(g, x.shape) if e.needs[0] else None,
                unbroadcast_array(g, y.shape) if e.needs[1] else None)

    def jvp(self, e, tx, ty):
        return _plus(tx, ty)


@register
class Sub(Op):
    complex_rules = True
    preserves_zeros = True  # a zero cotangent or tangent stays one
    inplace_ufunc = np.subtract
    fusion_code = fusion.SUB
    scalar_expression = "{0} - {1}"
    pattern = patterns.broadcasting
    samples = (Sample("subtract", Arg.float(2, "n"), Arg.float("n")),
               Sample("subtract", Arg.float(2, 1, 3), Arg.float("m", 1)),
               Sample("subtract", Arg.float(), Arg.float(3)))
    converter = broadcasting
    structured = banded.add_like

    def forward(self, x, y):
        return x - y

    def gradient(self, e, g):
        x, y = e.inputs
        return (unbroadcast(g, x.shape) if e.needs[0] else None,
                unbroadcast(negative(g), y.shape) if e.needs[1] else None)

    def array_gradient(self, e, g):  # the rule on arrays (op_block.md)
        x, y = e.inputs
        return (unbroadcast_array(g, x.shape) if e.needs[0] else None,
                unbroadcast_array(np.asarray(Neg.forward(g)), y.shape) if e.needs[1]
                else None)

    def jvp(self, e, tx, ty):
        return _minus(tx, ty)


@register
class Mul(Op):
    complex_rules = True
    inplace_ufunc = np.multiply
    fusion_code = fusion.MUL
    scalar_expression = "{0} * {1}"
    pattern = patterns.broadcasting
    samples = (Sample("multiply", Arg.float(2, "n"), Arg.float("n")),
               Sample("multiply", Arg.float(2, 1, 3), Arg.float("m", 1)),
               Sample("multiply", Arg.float(), Arg.float(3)))
    samples += (Sample("multiply", Arg.float("m", "n"), Arg.float("n"), dim_range=(0, 3)),)
    converter = broadcasting
    structured = banded.scale

    def forward(self, x, y):
        if x.ndim != y.ndim and (x.size >= kernels.NUMBA_MIN_SIZE or
                                 y.size >= kernels.NUMBA_MIN_SIZE):
            # tangents stacked over the loop axis (jacfwd) and the like
            fast = kernels.times_rows(x, y) if x.ndim > y.ndim else kernels.times_rows(y, x)
            if fast is not None:
                return fast
        return x * y

    def gradient(self, e, g):
        x, y = e.inputs
        gx = unbroadcast(g * conj_if_complex(y), x.shape) if e.needs[0] else None
        gy = unbroadcast(g * conj_if_complex(x), y.shape) if e.needs[1] else None
        return gx, gy

    def array_gradient(self, e, g):  # the rule on arrays (op_block.md)
        x, y = e.inputs
        return (unbroadcast_array(np.asarray(self.forward(g, y._value)), x.shape)
                if e.needs[0] else None,
                unbroadcast_array(np.asarray(self.forward(g, x._value)), y.shape)
                if e.needs[1] else None)

    def jvp(self, e, tx, ty):
        x, y = e.inputs  # the product rule: one fused op when both factors vary
        if tx is None:
            return None if ty is None else apply(Mul, x, ty)
        return apply(Mul, tx, y) if ty is None else apply(MulAdd, tx, y, x, ty)


@register
class MulAdd(Op):
    """a * b + c * d, broadcasting: the product rule's tangent tx * y + x * ty as one op
    instead of three (forward mode runs it for every product of two varying values)."""
    complex_rules = True
    fusion_code = fusion.MUL_ADD
    scalar_expression = "{0} * {1} + {2} * {3}"
    pattern = patterns.broadcasting
    samples = (Sample(lambda a, b, c, d: apply(MulAdd, a, b, c, d), Arg.float(2, "n"),
                      Arg.float("n"), Arg.float(2, 1), Arg.float()),)
    converter = broadcasting
    structured = banded.mul_add

    def forward(self, a, b, c, d):
        if a.ndim != b.ndim and a.size >= kernels.NUMBA_MIN_SIZE:  # stacked tangents
            fast = kernels.times_rows_add(a, b, c, d)
            if fast is not None:
                return fast
        out = a * b
        cd = c * d
        # in place on our own temporary when nothing broadcasts (the common case, and a
        # shape comparison is 10x cheaper than np.broadcast_shapes on tiny operands)
        if type(out) is np.ndarray and out.shape == cd.shape and out.dtype == cd.dtype:
            out += cd
            return out
        return out + cd

    def gradient(self, e, g):
        a, b, c, d = e.inputs
        return tuple(unbroadcast(g * conj_if_complex(other), x.shape) if need else None
                     for x, other, need in
                     zip((a, b, c, d), (b, a, d, c), e.needs))

    def jvp(self, e, ta, tb, tc, td):
        a, b, c, d = e.inputs  # linear in each factor: one product-rule term per tangent
        terms = [(t, f) for t, f in ((ta, b), (tb, a), (tc, d), (td, c)) if t is not None]
        total = None
        for k in range(0, len(terms), 2):
            pair = terms[k:k + 2]
            term = apply(Mul, *pair[0]) if len(pair) == 1 else \
                apply(MulAdd, pair[0][0], pair[0][1], pair[1][0], pair[1][1])
            total = term if total is None else apply(Add, total, term)
        return total


@register
class RealDiv(Op):
    complex_rules = True
    inplace_ufunc = np.divide
    fusion_code = fusion.DIV
    scalar_expression = "{0} / {1}"
    pattern = patterns.broadcasting
    samples = (Sample("divide", Arg.float(2, "n"), Arg.positive("n")),
               Sample("divide", Arg.float(2, 1, 3), Arg.positive("m", 1)),
               Sample("divide", Arg.float(), Arg.positive(3)))
    converter = broadcasting
    structured = banded.divide

    def forward(self, x, y):
        return x / y

    def gradient(self, e, g):
        x, y = e.inputs
        gx = unbroadcast(g / conj_if_complex(y), x.shape) if e.needs[0] else None
        gy = unbroadcast(g * -conj_if_complex(e.outputs[0] / y), y.shape) if e.needs[1] \
            else None
        return gx, gy

    def array_gradient(self, e, g):  # the rule on arrays (op_block.md)
        x, (y, out) = e.inputs[0], (e.inputs[1]._value, e.outputs[0])
        if type(out) is not Tensor:
            return NotImplemented
        gx = gy = None
        if e.needs[0]:
            gx = unbroadcast_array(np.asarray(self.forward(g, y)), x.shape)
        if e.needs[1]:
            minus_ratio = np.asarray(np.negative(np.asarray(self.forward(out._value, y))))
            gy = unbroadcast_array(np.asarray(Mul.forward(g, minus_ratio)), e.inputs[1].shape)
        return gx, gy

    def jvp(self, e, tx, ty):
        x, y = e.inputs  # d(x/y) = (dx - (x/y) dy) / y
        num = _minus(tx, None if ty is None else apply(Mul, ty, e.outputs[0]))
        return None if num is None else apply(RealDiv, num, y)


@register
class Pow(Op):
    complex_rules = True
    pattern = patterns.broadcasting
    samples = (Sample("pow", Arg.positive(2, "n"), Arg.float("n")),
               Sample("pow", Arg.positive(2, 1, 3), Arg.float("m", 1)),
               Sample("pow", Arg.positive(), Arg.float(3)),
               Sample("pow", Arg.float(2, "n"), 3))  # negative bases, an integer power
    converter = broadcasting

    def forward(self, x, y):
        return np.power(x, y)

    def gradient(self, e, g):
        x, y = e.inputs
        gx = gy = None
        if e.needs[0]:
            gx = unbroadcast(g * conj_if_complex(_dpow_dx(x, y)), x.shape)
        if e.needs[1]:
            gy = unbroadcast(g * conj_if_complex(_dpow_dy(x, e.outputs[0])), y.shape)
        return gx, gy

    def array_gradient(self, e, g):  # _dpow_dx's y != 0 path on arrays (op_block.md)
        x, y = e.inputs
        if e.needs[1] or y.shape or x.shape != g.shape or not _is_nonzero(y._value):
            return NotImplemented
        v = y._value
        less_one = np.asarray(Sub.forward(v, np.asarray(1, v.dtype)))
        power = np.asarray(self.forward(x._value, less_one))
        return Mul.forward(g, np.asarray(Mul.forward(v, power))), None

    def jvp(self, e, tx, ty):
        x, y = e.inputs
        dx = None if tx is None else tx * _dpow_dx(x, y)
        dy = None if ty is None else ty * _dpow_dy(x, e.outputs[0])
        return _plus(dx, dy)


def _dpow_dx(x, y):
    """d/dx x**y = y x**(y-1), and 0 where y == 0: x**0 is constant, even at x = 0 (where
    y x**(y-1) would be 0 * inf). The guarded base keeps the masked branch finite, so
    that its own derivative (second order of x**1 at 0) is not 0 * inf either. A scalar
    y != 0 (x ** 3.0) selects nothing: the same bits without the selections' 3 ops."""
    if not NO_FAST_PATHS and not y.shape and y._pfor is None and _nonzero(y):
        return y * pow(x, y - 1)
    zero_power = equal(y, 0)
    return where(zero_power, 0, y * pow(where(zero_power, 1, x), y - 1))


def _is_nonzero(v):  # (np.any's wrapper costs 2 us on one element)
    return bool(v != 0)


def _nonzero(y):
    value_read(y, "internal", _is_nonzero)  # a value-dependent choice: vj.function guards it
    return _is_nonzero(y._value)


def _dpow_dy(x, out):
    """d/dy x**y = log(x) x**y, taken as 0 where x <= 0 for real x (as TF does) and
    where x == 0 for complex x (log is defined off 0 there)."""
    defined = greater(x, 0) if x.dtype.kind != "c" else not_equal(x, 0)
    return where(defined, log(where(defined, x, 1)), 0) * out


@register
class SquaredDifference(Op):
    fusion_code = fusion.SQUARED_DIFFERENCE
    scalar_expression = "({0} - {1}) * ({0} - {1})"
    pattern = patterns.broadcasting
    samples = (Sample("squared_difference", Arg.float(2, "n"), Arg.float("n")),
               Sample("squared_difference", Arg.float(2, 1, 3), Arg.float("m", 1)),
               Sample("squared_difference", Arg.float(), Arg.float(3)))
    converter = broadcasting

    def forward(self, x, y):
        d = x - y
        return d * d

    def gradient(self, e, g):
        x, y = e.inputs
        d = g * 2 * (x - y)
        return unbroadcast(d, x.shape), unbroadcast(negative(d), y.shape)

    def jvp(self, e, tx, ty):
        d = _minus(tx, ty)
        x, y = e.inputs
        return None if d is None else d * (2 * (x - y))


@register
class FloorDiv(Op):
    samples = (Sample("floordiv", Arg.float(2, "n"), Arg.positive("n")),
               Sample("floordiv", Arg.int(2, "n", lo=-5, hi=5), Arg.int(lo=1, hi=4)))
    converter = broadcasting
    differentiable = False

    def forward(self, x, y):
        return np.floor_divide(x, y)


@register
class FloorMod(Op):
    pattern = patterns.broadcasting
    samples = (Sample("floormod", Arg.float(2, "n", lo=-3.0, hi=3.0), Arg.positive("n")),
               Sample("floormod", Arg.float(), Arg.positive(2, 1)),
               Sample("floormod", Arg.float("n", lo=-3.0), Arg.float("n", lo=-2.0, hi=-0.5)),
               Sample("floormod", Arg.int(2, "n", lo=-5, hi=5), Arg.int(lo=1, hi=4)))
    converter = broadcasting

    def forward(self, x, y):
        return np.mod(x, y)

    def gradient(self, e, g):
        # x mod y = x - floor(x / y) * y
        x, y = e.inputs
        return unbroadcast(g, x.shape), unbroadcast(negative(g) * floor(x / y), y.shape)


@register
class Neg(Op):
    complex_rules = True
    preserves_zeros = True  # a zero cotangent or tangent stays one
    inplace_ufunc = np.negative
    fusion_code = fusion.NEG
    scalar_expression = "-{0}"
    pattern = patterns.elementwise
    jvp = linear
    samples = (Sample("negative", Arg.float(2, "n")), Sample("negative", Arg.float()))
    converter = elementwise
    structured = banded.map_d(lambda d: negative(d))

    def forward(self, x):
        return np.negative(x)

    def gradient(self, e, g):
        return negative(g)


def add(x, y, name=None):
    """x + y, broadcasting."""
    return apply_binary(Add, x, y, "add")


def subtract(x, y, name=None):
    """x - y, broadcasting."""
    return apply_binary(Sub, x, y, "subtract")


def multiply(x, y, name=None):
    """x * y, broadcasting."""
    return apply_binary(Mul, x, y, "multiply")


def divide(x, y, name=None):
    """x / y (true division), broadcasting; integer inputs give float64 (NumPy)."""
    return apply_binary(RealDiv, x, y, "divide")


truediv = divide
realdiv = divide


def _any_negative(v):
    return bool(np.any(v < 0))


def _negative(y):
    value_read(y, "internal", _any_negative)
    return _any_negative(y._value)


def pow(x, y, name=None):
    """x ** y, broadcasting."""
    if type(y) is int and y == 2 and isinstance(x, Tensor) and x.dtype.kind == "f":
        # x ** 2 is x * x (NumPy computes it so too): Square's derivatives are one
        # multiply where Pow's guard the zero power with selections (3x cheaper Hessians)
        return square(x)
    x = to_input(x, (x, y), "pow", "x")
    y = to_input(y, (x, y), "pow", "y")
    if x.dtype.kind in "iu" and y.dtype.kind in "iu" and _negative(y):
        raise ValueError("pow: an integer x cannot be raised to a negative integer power y "
                         "(cast x to float first)")
    return apply_binary(Pow, x, y, "pow")


def squared_difference(x, y, name=None):
    return apply_binary(SquaredDifference, x, y, "squared_difference")


def floordiv(x, y, name=None):
    return apply_binary(FloorDiv, x, y, "floordiv", real=True)


floor_div = floordiv


def floormod(x, y, name=None):
    return apply_binary(FloorMod, x, y, "floormod", real=True)


mod = floormod


def negative(x, name=None):
    x = x if type(x) is Tensor else to_input(x, (), "negative", "x")
    if x.dtype.kind == "b":
        raise TypeError("negative: x must be numeric, got dtype bool (use vj.logical_not)")
    return apply(Neg, x)


__all__ = ["add", "subtract", "multiply", "divide", "truediv", "realdiv", "squared_difference", "floordiv", "floor_div", "floormod", "mod", "negative"]
# pow is exported explicitly (vecjac/__init__.py, math.py): in __all__ it would shadow a builtin

lib.publish(globals(), __all__ + ['pow', 'unbroadcast'])
