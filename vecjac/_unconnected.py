"""What a gradient returns for an unconnected source, and the leaves gradients accept."""
import enum

from ._tensor import Tensor
from ._variables import Variable


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
    raise ValueError(f"{what}: unconnected_gradients must be vj.UnconnectedGradients.NONE "
                     f"or ZERO (or 'none'/'zero'), got {value!r}")


def leaf_tensor(x, what):
    if isinstance(x, Tensor):
        return x
    if isinstance(x, Variable):
        return x._read if x._read is not None else Tensor(x._value, x._tid)
    raise TypeError(f"{what} must be Tensors or Variables (or nests of them), "
                    f"got {type(x).__name__}")
