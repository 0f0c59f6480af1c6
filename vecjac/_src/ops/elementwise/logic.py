"""Comparisons and logical ops (not differentiable), cast, and where (select).

Comparisons and logic broadcast like the arithmetic of math_ops.py and give bool tensors;
cast converts dtypes (its gradient casts back); where selects element-wise between two
broadcasting inputs.
"""
import numpy as np

from vecjac._src.core.arguments import apply_binary
from vecjac._src.core.context import value_read
from vecjac._src.core.dispatch import apply, to_input
from vecjac._src.core.registry import Op, lib, register
from vecjac._src.core.samples import Arg, Sample
from vecjac._src.core.shapes import broadcast_shape
from vecjac._src.core.tensor import Tensor
from vecjac._src.transforms.forward.rules import linear
from vecjac._src.transforms.pfor import banded
from vecjac._src.transforms.pfor.converters import broadcasting, elementwise
from vecjac._src.transforms.sparsity import patterns


# -- comparisons and logic (not differentiable) -----------------------------------------
def _compare(name, fn, public, kind, **bounds):
    arg = getattr(Arg, kind)  # samples: broadcasting pairs of that kind of values
    samples = (Sample(public, arg(2, "n", **bounds), arg("n", **bounds)),
               Sample(public, arg(**bounds), arg(2, 1, **bounds)))
    cls = type(name, (Op,), {"name": name, "differentiable": False,
                             "converter": broadcasting, "samples": samples,
                             "forward": lambda self, x, y: fn(x, y)})
    return register(cls)


# small ints for the (in)equalities, so that equal pairs are common
Equal = _compare("Equal", np.equal, "equal", "int", hi=3)
NotEqual = _compare("NotEqual", np.not_equal, "not_equal", "int", hi=3)
Less = _compare("Less", np.less, "less", "float")
LessEqual = _compare("LessEqual", np.less_equal, "less_equal", "int", hi=3)
Greater = _compare("Greater", np.greater, "greater", "float")
GreaterEqual = _compare("GreaterEqual", np.greater_equal, "greater_equal", "int", hi=3)
LogicalAnd = _compare("LogicalAnd", np.logical_and, "logical_and", "bool")
LogicalOr = _compare("LogicalOr", np.logical_or, "logical_or", "bool")
LogicalXor = _compare("LogicalXor", np.logical_xor, "logical_xor", "bool")


def equal(x, y, name=None):
    return apply_binary(Equal, x, y, "equal")


def not_equal(x, y, name=None):
    return apply_binary(NotEqual, x, y, "not_equal")


def less(x, y, name=None):
    return apply_binary(Less, x, y, "less")


def less_equal(x, y, name=None):
    return apply_binary(LessEqual, x, y, "less_equal")


def greater(x, y, name=None):
    return apply_binary(Greater, x, y, "greater")


def greater_equal(x, y, name=None):
    return apply_binary(GreaterEqual, x, y, "greater_equal")


def logical_and(x, y, name=None):
    return apply_binary(LogicalAnd, x, y, "logical_and")


def logical_or(x, y, name=None):
    return apply_binary(LogicalOr, x, y, "logical_or")


def logical_xor(x, y, name=None):
    return apply_binary(LogicalXor, x, y, "logical_xor")


@register
class LogicalNot(Op):
    samples = (Sample("logical_not", Arg.bool(2, "n")), Sample("logical_not", Arg.bool()))
    differentiable = False
    converter = elementwise

    def forward(self, x):
        return np.logical_not(x)


def logical_not(x, name=None):
    return LogicalNot(x if type(x) is Tensor else to_input(x, (), "logical_not", "x"))


# -- cast --------------------------------------------------------------------------------
@register
class Cast(Op):
    complex_rules = True
    pattern = patterns.elementwise
    preserves_zeros = True
    jvp = linear
    samples = (Sample("cast", Arg.float(2, "n"), "float32",  # float32 output: loose tol
                      tol={"eps": 1e-3, "rtol": 1e-3, "atol": 1e-3}),
               Sample("cast", Arg.float(2, "n"), "int32", no_grad="integer output"),
               Sample("cast", Arg.int("n", hi=5), "float64"))
    converter = elementwise
    structured = banded.map_d(lambda d, dtype: cast(d, dtype))

    def forward(self, x, dtype):
        if x.dtype.kind == "c" and dtype.kind != "c":  # TF: the real part, explicitly
            x = x.real
        return x.astype(dtype, copy=False)

    def gradient(self, e, g):
        x = e.inputs[0]
        if x.dtype.kind not in "fc":
            return None
        return cast(g, x.dtype)


def cast(x, dtype, name=None):
    """x converted to `dtype` (a NumPy dtype or name: vj.float32, "float64", ...)."""
    if dtype is None:  # np.dtype(None) would silently mean float64
        raise TypeError("cast: dtype must be a NumPy dtype or dtype name, got None")
    try:
        dtype = np.dtype(dtype)
    except TypeError:
        raise TypeError(f"cast: dtype must be a NumPy dtype or dtype name, got {dtype!r}") from None
    if dtype.kind not in "biufc":
        raise TypeError(f"cast: dtype must be numeric, got {dtype}")
    x = to_input(x, fn="cast", arg="x")
    if x.dtype == dtype:
        return x
    return apply(Cast, x, dtype=dtype)


# -- where (select): element-wise with three broadcasting inputs -------------------------
@register
class Select(Op):
    complex_rules = True
    name = "SelectV2"
    selects_by_condition = True  # vj.function drops it for a constant condition
    pattern = patterns.broadcasting  # the union of both branches, whatever cond says
    jvp = linear
    samples = (Sample("where", Arg.bool(2, "n"), Arg.float(2, "n"), Arg.float("n")),
               Sample("where", Arg.bool("n"), Arg.float(), Arg.float(2, "n")),
               Sample("where", Arg.bool(), Arg.float(2, "n"), Arg.float()))  # scalar cond, y
    samples += (Sample("where", Arg.bool("m", 1), Arg.float("n"), Arg.float("m", "n"),
                       dim_range=(0, 3)),)
    converter = broadcasting
    selects = (1, 2)  # structural zeros (transforms/tape/zeros.py)

    def forward(self, cond, x, y):
        return np.where(cond, x, y)

    def gradient(self, e, g):
        cond, x, y = e.inputs
        zero = 0
        gx = lib.unbroadcast(where(cond, g, zero), x.shape) if e.needs[1] else None
        gy = lib.unbroadcast(where(cond, zero, g), y.shape) if e.needs[2] else None
        return None, gx, gy

    def selected(self, e, k):
        return e.inputs[0], k == 1  # x where cond, y where not


@register
class Where(Op):
    samples = (Sample("where_indices", Arg.bool(2, "n"),
                      no_pfor="output shape depends on the values: pfor raises, by design"),)
    differentiable = False

    def forward(self, condition):
        return np.argwhere(condition).astype(np.int64, copy=False)


def where_indices(condition, name=None):
    """int64 coordinates of the true (non-zero) elements: shape (count, rank).

    vj.where(condition) with one argument. Its shape depends on the values, so it does
    not vectorize over a loop-variant condition.
    """
    c = to_input(condition, fn="where_indices", arg="condition")
    if c._pfor is not None:
        raise ValueError("where: with a single argument, the coordinates of the true "
                         "elements of a loop-variant condition differ in number per "
                         "iteration and cannot be vectorized; use vj.where(condition, x, y)")
    out = apply(Where, c)
    value_read(out, "internal", np.shape)  # later ops are built for this many elements
    return out


def where(condition, x=None, y=None, name=None):
    """Elements of x where condition is true, else of y (broadcasting), as TF's where.

    With x and y both None, returns the int64 coordinates of the true elements
    (shape (n, rank)); that form does not vectorize over loop-variant conditions.
    """
    if x is None and y is None:
        return where_indices(condition)
    if x is None or y is None:
        raise ValueError("where: give both x and y, or neither")
    cond = to_input(condition, fn="where", arg="condition")
    if cond.dtype != np.bool_:
        raise TypeError(f"where: condition must be a bool tensor, got dtype {cond.dtype}")
    x = to_input(x, (x, y), "where", "x")
    y = to_input(y, (x, y), "where", "y")
    broadcast_shape("where", cond.shape, x.shape, y.shape, names=("condition", "x", "y"))
    return apply(Select, cond, x, y)


__all__ = ["equal", "not_equal", "less", "less_equal", "greater", "greater_equal", "logical_and", "logical_or", "logical_xor", "logical_not", "cast", "where"]

lib.publish(globals(), __all__ + ["where_indices"])
