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
    """Differentiation reached a complex value. Complex differentiation (a convention
    such as JAX's or TF's) is not designed and tested yet, and a silently wrong complex
    number is worse than none: every transform raises this (vectorized Jacobians pass
    it through unchanged)."""

    def __init__(self, what, found):
        super().__init__(f"{what}: {found}; vecjac differentiates real floating point only "
                         "(split complex values into real and imaginary parts)")


def refuse_complex(tensors, what, role):
    """ComplexNotSupported naming the dtype for a complex target or source of a tape."""
    for t in tensors:
        if t.dtype.kind == "c":
            raise ComplexNotSupported(what, f"{role} has complex dtype {t.dtype}")
