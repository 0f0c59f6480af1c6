"""Argument checks shared by ops of several families: the operands of a broadcasting
binary op, a real (or float) input, and the values of an integer argument that Python reads (segment ids, permutations, bin counts).

Reading an integer tensor's values is a decision taken on a value, so it goes through
`value_read` (vj.function guards it, pfor refuses a loop-variant one)."""
import numpy as np

from vecjac._src.core.context import value_read
from vecjac._src.core.dispatch import apply, to_input
from vecjac._src.core.shapes import broadcast_shape
from vecjac._src.core.tensor import Tensor
from vecjac._src.core.unconnected import ComplexNotSupported


def real_input(x, fn, arg="x", kinds="iuf", inputs=()):
    """`x` as a Tensor of a real dtype of `kinds` ("f": float only); complex raises
    ComplexNotSupported, any other dtype a TypeError naming `fn` and `arg`."""
    t = to_input(x, inputs, fn, arg)
    if t.dtype.kind == "c":
        raise ComplexNotSupported(fn, f"{arg} has complex dtype {t.dtype}")
    if t.dtype.kind not in kinds:
        raise TypeError(f"{fn}: {arg} must be a {'float' if kinds == 'f' else 'real'} "
                        f"tensor, got dtype {t.dtype}")
    return t


def read_ints(t, fn, arg):
    """The values of the integer Tensor `t`, read by Python (a guarded value read)."""
    if t.dtype.kind not in "iu":
        raise TypeError(f"{fn}: {arg} must be an integer tensor, got dtype {t.dtype}")
    value_read(t, "internal")
    return np.asarray(t._value)


def apply_binary(op, x, y, fn, real=False):
    """apply(op, x, y) for a broadcasting binary op, after converting x and y (Python
    scalars take the other operand's dtype) and checking that their shapes broadcast;
    `real=True` refuses complex operands. Errors name `fn`."""
    if not isinstance(x, Tensor):  # the common case (two Tensors) without a call
        x = to_input(x, (x, y), fn, "x")
    if not isinstance(y, Tensor):
        y = to_input(y, (x, y), fn, "y")
    if real and "c" in (x.dtype.kind, y.dtype.kind):
        nm = "x" if x.dtype.kind == "c" else "y"
        raise TypeError(f"{fn}: {nm} must be real, got dtype complex ({x.dtype}, {y.dtype})")
    if x.shape != y.shape and x.shape and y.shape:  # scalars always broadcast
        broadcast_shape(fn, x.shape, y.shape, names=("x", "y"))
    return apply(op, x, y)
