"""Python operators of Tensor and Variable, bound to the op library.

vecjac/_src/core/tensor.py imports no op; this module, loaded with the op library, gives Tensor
its operators (+, *, @, <, [] ...); tensor_methods.py gives it NumPy's ndarray methods. A
Variable shares them: each reads the variable's value first (a read that tapes watching
accessed variables see).
"""
import numpy as np

from vecjac._src.core.dispatch import apply
from vecjac._src.core.tensor import BorrowedTensor, Tensor
from vecjac._src.core.variables import Variable
from vecjac._src.ops.array import indexing as _i
from vecjac._src.ops.elementwise import arithmetic as _m
from vecjac._src.ops.elementwise import logic as _lo
from vecjac._src.ops.elementwise import unary as _u
from vecjac._src.ops.linalg import products as _lin


def _direct(op, public):
    """x <op> y: two plain Tensors of one shape (or a scalar) go straight to the op, the
    commonest case of simulation code (a forward-mode ODE runs thousands), and so does a
    floating Tensor with a Python float or int (2.0 * x), converted as the public
    function would (a weak scalar: the Tensor's dtype); anything else takes the public
    function, with its conversions and checks."""
    def binary(x, y):
        if type(x) is Tensor:
            if type(y) is Tensor:
                if x.shape == y.shape or not x.shape or not y.shape:
                    return apply(op, x, y)
            elif (type(y) is float or type(y) is int) and x.dtype.kind in "fc":
                return apply(op, x, Tensor(np.asarray(y, dtype=x.dtype)))
        return public(x, y)
    binary.__name__ = binary.__qualname__ = public.__name__
    return binary


def _reflected(op, public):
    """y <op> x for a Python float or int y and a floating Tensor x (1.0 - x), as
    `_direct`; anything else takes the public function with the operands swapped."""
    def binary(x, y):
        if type(x) is Tensor and (type(y) is float or type(y) is int) and \
                x.dtype.kind in "fc":
            return apply(op, Tensor(np.asarray(y, dtype=x.dtype)), x)
        return public(y, x)
    binary.__name__ = binary.__qualname__ = f"reflected_{public.__name__}"
    return binary


def _power(x, y):
    """x ** y; a floating Tensor to a Python float or int power other than 2 (which
    _m.pow makes a square) goes straight to the op, as `_direct`."""
    if type(x) is Tensor and (type(y) is float or (type(y) is int and y != 2)) and \
            x.dtype.kind in "fc":
        return apply(_m.Pow, x, Tensor(np.asarray(y, dtype=x.dtype)))
    return _m.pow(x, y)


def _matmul(x, y):
    """x @ y; a plain matrix times a plain vector or matrix (a linear model, a layer)
    goes straight to the op."""
    if type(x) is Tensor and type(y) is Tensor and len(x.shape) == 2 and \
            0 < len(y.shape) <= 2 and x.shape[1] == y.shape[0] and \
            x.dtype.kind in "biuf" and y.dtype.kind in "biuf":
        return apply(_lin.MatVec if len(y.shape) == 1 else _lin.MatMul, x, y)
    return _lin.matmul(x, y)


def _rmatmul(x, y):
    """y @ x for a plain ndarray y (`X @ w` arrives here through __array_ufunc__): a
    matrix times a plain vector or matrix goes straight to the op, as in _matmul, with y
    read in place (the BorrowedTensor the public function's conversion would make)."""
    if type(y) is np.ndarray and type(x) is Tensor and y.ndim == 2 and \
            0 < len(x.shape) <= 2 and y.shape[1] == x.shape[0] and \
            y.dtype.kind in "biuf" and x.dtype.kind in "biuf":
        return apply(_lin.MatVec if len(x.shape) == 1 else _lin.MatMul, BorrowedTensor(y), x)
    return _lin.matmul(y, x)


def _item(x, key):
    """x[key]; x[i] of a plain Tensor (an ODE state's component) goes straight to the op."""
    if type(key) is int and type(x) is Tensor and x.shape and -x.shape[0] <= key < x.shape[0]:
        return apply(_i.StridedSlice, x, key=(key,))
    return _i.getitem(x, key)


_OPERATORS = {  # x <op> y calls the op function directly; reflected ones swap
    "__add__": _direct(_m.Add, _m.add), "__radd__": _reflected(_m.Add, _m.add),
    "__sub__": _direct(_m.Sub, _m.subtract), "__rsub__": _reflected(_m.Sub, _m.subtract),
    "__mul__": _direct(_m.Mul, _m.multiply), "__rmul__": _reflected(_m.Mul, _m.multiply),
    "__truediv__": _direct(_m.RealDiv, _m.divide),
    "__rtruediv__": _reflected(_m.RealDiv, _m.divide),
    "__floordiv__": lambda x, y: _m.floordiv(x, y),
    "__rfloordiv__": lambda x, y: _m.floordiv(y, x),
    "__mod__": lambda x, y: _m.floormod(x, y), "__rmod__": lambda x, y: _m.floormod(y, x),
    "__pow__": _power, "__rpow__": lambda x, y: _m.pow(y, x),
    "__matmul__": _matmul,
    "__rmatmul__": _rmatmul,
    "__neg__": lambda x: _m.negative(x), "__pos__": lambda x: x,
    "__abs__": lambda x: _u.abs(x), "__invert__": lambda x: _lo.logical_not(x),
    "__and__": lambda x, y: _lo.logical_and(x, y),
    "__rand__": lambda x, y: _lo.logical_and(y, x),
    "__or__": lambda x, y: _lo.logical_or(x, y), "__ror__": lambda x, y: _lo.logical_or(y, x),
    "__xor__": lambda x, y: _lo.logical_xor(x, y),
    "__rxor__": lambda x, y: _lo.logical_xor(y, x),
    "__lt__": lambda x, y: _lo.less(x, y), "__le__": lambda x, y: _lo.less_equal(x, y),
    "__gt__": lambda x, y: _lo.greater(x, y), "__ge__": lambda x, y: _lo.greater_equal(x, y),
    # == and != stay element-wise as in NumPy and TF2; hashing is by identity
    "__eq__": lambda x, y: _lo.equal(x, y), "__ne__": lambda x, y: _lo.not_equal(x, y),
    "__getitem__": _item,
}

for _name, _fn in _OPERATORS.items():
    setattr(Tensor, _name, _fn)
    setattr(Variable, _name, _fn)  # the op reads the Variable (apply converts inputs)
