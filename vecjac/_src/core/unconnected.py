"""What a gradient returns for an unconnected source, and the leaves gradients accept."""
import enum

from vecjac._src.core.tensor import Tensor
from vecjac._src.core.variables import Variable


class UnconnectedGradients(enum.Enum):
    """What `gradient` returns for a source that the target does not depend on."""
    NONE = "none"
    ZERO = "zero"


def unconnected_mode(value, what="gradient"):
    if isinstance(value, UnconnectedGradients):
        return value
    if isinstance(value, str):
        try:
            return UnconnectedGradients(value.lower())
        except ValueError:
            pass
    raise ValueError(f"{what}: Unknown value for unconnected_gradients: {value!r} (expected "
                     "vj.UnconnectedGradients.NONE or ZERO, or 'none' / 'zero')")


def leaf_tensor(x, what):
    if isinstance(x, Tensor):
        return x
    if isinstance(x, Variable):
        return x.unseen_read()
    raise TypeError(f"{what} must be Tensors or Variables (or nests of them), "
                    f"got {type(x).__name__}")


class ComplexNotSupported(TypeError):
    """Differentiation reached complex values in an op whose rules are not written for
    them (the op fact `complex_rules`, docs/op_block.md): an error, never a silently
    wrong complex number. Vectorized Jacobians pass it through unchanged."""

    def __init__(self, what, found):
        super().__init__(f"{what}: {found}; its derivative rules are written for real "
                         "values only (split complex values into real and imaginary parts "
                         "with vj.math.real / vj.math.imag around it)")


def refuse_complex_entry(op, inputs, outputs, what):
    """ComplexNotSupported when a value of a recorded op without complex rules is complex
    (called by the transforms only for such ops)."""
    for t in outputs:
        if t.dtype.kind == "c":
            raise ComplexNotSupported(what, f"{op.name} gives complex values (dtype "
                                      f"{t.dtype}) on the way to the derivative")
    for t in inputs:
        if t.dtype.kind == "c":
            raise ComplexNotSupported(what, f"{op.name} takes complex values (dtype "
                                      f"{t.dtype}) on the way to the derivative")


def cut_by(op, inputs, outputs, followed):
    """The name of `op`, an op without a derivative (Floor, Round, FloorDiv, ...), when it
    cuts a followed value (an input whose id is in `followed`) from a floating output: the
    cause to name when a derivative comes out unconnected (zero) although the output was
    computed from the arguments. None otherwise (comparisons give booleans: not a cut)."""
    for o in outputs:
        if o.dtype.kind in "fc":
            break
    else:
        return None
    for t in inputs:
        if t._tid in followed:
            return op.name
    return None
