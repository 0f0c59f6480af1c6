"""StackedTensor: a loop-variant value inside pfor, loop axis 0.

To the code inside `loop_fn` it is a Tensor of the per-iteration shape; underneath it
holds `_plain`, the Tensor of all iterations stacked on a new axis 0, and shares that
Tensor's id, so that tapes outside the loop (which record the plain, vectorized ops) and
tapes inside it (which record per-iteration ops) name the same value the same way.
In a nested pfor, `_plain` is itself a StackedTensor of the outer loop.
"""
from vecjac._src.core.errors import ValueLeftError, ndarray_item_assignment
from vecjac._src.core.tensor import Tensor

_BRANCH_HELP = ("a loop-variant value has no single truth value inside pfor / "
                "vectorized_map: use vj.where(cond, x, y) for values, vj.cond(pred, "
                "true_fn, false_fn) for branches and vj.while_loop(cond, body, loop_vars) "
                "for loops")


class StackedTensor(Tensor):
    __slots__ = ("_plain", "_pfor")

    def __init__(self, plain, loop):
        self._plain = plain
        self._pfor = loop
        self._tid = plain._tid
        self._value = plain._value
        self.shape = plain.shape[1:]  # the per-iteration shape
        self.dtype = plain.dtype

    def numpy(self):
        raise TypeError("numpy() of a loop-variant value inside pfor / vectorized_map: "
                        "its value differs per iteration; return it from loop_fn instead")

    def __array__(self, dtype=None, copy=None):
        # ValueLeftError (a TypeError): pfor raises it in place of NumPy's ValueError
        # ("setting an array element with a sequence") when `f[i] = value` wraps it
        raise ValueLeftError("a loop-variant value inside pfor / vectorized_map cannot be "
                             "converted to a NumPy array; use vecjac ops on it instead."
                             + ndarray_item_assignment())

    def __bool__(self):
        raise TypeError(_BRANCH_HELP)

    def __index__(self):
        raise TypeError("a loop-variant value cannot be a Python index; use vj.gather")

    def __int__(self):
        raise TypeError("a loop-variant value cannot be converted to a Python int")

    def __float__(self):
        raise ValueLeftError("a loop-variant value cannot be converted to a Python float."
                             + ndarray_item_assignment())

    def __reduce__(self):  # (copy.copy and copy.deepcopy return the value itself: Tensor)
        raise TypeError("a loop-variant value inside pfor / vectorized_map cannot be "
                        "pickled (its value differs per iteration); return it from loop_fn "
                        "instead")

    def __repr__(self):
        return (f"<vj.StackedTensor: loop-variant over {self._pfor.iters} iterations, "
                f"shape={self.shape}, dtype={self.dtype.name}>")

    __str__ = __repr__

    def __format__(self, spec):
        return repr(self)


class Unstacked:
    """Marker a converter returns for an output that does not vary over the loop."""
    __slots__ = ("tensor",)

    def __init__(self, tensor):
        self.tensor = tensor
