"""The array object attributes of the array API standard, attached to vj.Tensor and
vj.Variable: `__array_namespace__`, `device`, `to_device`, `mT`, `__dlpack__`,
`__dlpack_device__`, the shift operators, and bitwise `&`, `|`, `^`, `~` on integers.

A scalar boolean index (`x[True]`) is added to `x[key]`.

Tensor's operators come from vecjac/_src/composites/operators.py, where `&`, `|`, `^` and
`~` are the logical ops (TF's meaning, for bool tensors); on integer operands those would
give a bool truth value where NumPy and the standard give the bitwise result, so here they
become the bitwise functions of the namespace for integers and stay logical for bools.
"""
import numpy as np

from vecjac._src.core.tensor import Tensor
from vecjac._src.core.variables import Variable
from vecjac._src.numpy import array_api as _namespace
from vecjac._src.numpy.array_api_dtypes import CPU, check_device
from vecjac._src.numpy.array_api_elementwise import as_tensor

_VERSIONS = ("2023.12", "2022.12")


def _read(x):
    return x.read_value() if isinstance(x, Variable) else x


def array_namespace(self, /, *, api_version=None):
    """The array API namespace of vecjac (vecjac._src.numpy.array_api)."""
    if api_version is not None and api_version not in _VERSIONS:
        raise ValueError(f"__array_namespace__: api_version must be None or one of "
                         f"{', '.join(_VERSIONS)}, got {api_version!r}")
    return _namespace


def to_device(self, device, /, *, stream=None):
    check_device(device, "to_device")
    return _read(self)


def dlpack(self, /, *, stream=None, max_version=None, dl_device=None, copy=None):
    """The value for DLPack consumers: read-only where the consumer's DLPack version can say
    so (1.0 and later), else a copy (a Tensor's memory must never be written), unless
    copy=False forbids it (BufferError)."""
    value = _read(self).__array__()  # tells active transforms that the value leaves
    kwargs = {"stream": stream, "max_version": max_version, "dl_device": dl_device}
    if copy is not True:
        try:
            return value.__dlpack__(**kwargs, copy=False)
        except BufferError:
            if copy is False:
                raise
    return np.array(value).__dlpack__(**kwargs, copy=False)


def dlpack_device(self, /):
    return _read(self)._value.__dlpack_device__()


def _bitwise(name, logical):
    """x <op> y: bitwise for integer operands, the logical op (as before) for bools."""
    function = getattr(_namespace, name)

    def operator(x, y):
        if getattr(x, "dtype", np.dtype(bool)).kind in "iu" or \
                getattr(y, "dtype", np.dtype(type(y))).kind in "iu":
            return function(x, y)
        return logical(x, y)
    return operator


_logical_not = Tensor.__invert__


def _invert(x):
    x = as_tensor(x, "~x")
    return _namespace.bitwise_invert(x) if x.dtype.kind in "iu" else _logical_not(x)


_getitem = Tensor.__getitem__


def _scalar_bool(key):
    if isinstance(key, (bool, np.bool_)):
        return True
    return isinstance(key, (Tensor, Variable, np.ndarray)) and key.shape == () and \
        key.dtype == np.bool_


def _empty_mask(x, key):
    """A boolean mask with an axis of length 0 over axes of x of any length (the suite of
    the standard accepts it): it selects nothing."""
    if not isinstance(key, (Tensor, Variable, np.ndarray)) or key.dtype != np.bool_ or \
            0 not in key.shape or key.ndim > len(x.shape):
        return False
    return all(k in (s, 0) for k, s in zip(key.shape, x.shape))


def getitem(x, key):
    """x[key], and x[True] / x[False] (a scalar boolean index: x with a new first axis of
    length 1 or 0, as NumPy and the standard have it), and masks of an empty axis."""
    if type(key) is int:  # the hot path (an ODE state's component)
        return _getitem(x, key)
    if _scalar_bool(key):
        expanded = _getitem(as_tensor(x, "x[key]"), None)
        return expanded if bool(key) else _getitem(expanded, slice(0, 0))
    if _empty_mask(x, key):
        x = as_tensor(x, "x[key]")
        rows = _namespace.reshape(x, (-1,) + tuple(x.shape[key.ndim:]))
        return _getitem(rows, slice(0, 0))
    return _getitem(x, key)


_ATTRIBUTES = {
    "__getitem__": getitem,
    "__array_namespace__": array_namespace,
    "device": property(lambda self: CPU),
    "to_device": to_device,
    "mT": property(lambda self: _namespace.matrix_transpose(self)),
    "__dlpack__": dlpack,
    "__dlpack_device__": dlpack_device,
    "__invert__": _invert,
    "__lshift__": lambda x, y: _namespace.bitwise_left_shift(x, y),
    "__rlshift__": lambda x, y: _namespace.bitwise_left_shift(y, x),
    "__rshift__": lambda x, y: _namespace.bitwise_right_shift(x, y),
    "__rrshift__": lambda x, y: _namespace.bitwise_right_shift(y, x),
}
for _name, _logical_name in (("and", "bitwise_and"), ("or", "bitwise_or"),
                             ("xor", "bitwise_xor")):
    _logical = getattr(Tensor, f"__{_name}__")
    _reflected = getattr(Tensor, f"__r{_name}__")
    _ATTRIBUTES[f"__{_name}__"] = _bitwise(_logical_name, _logical)
    _ATTRIBUTES[f"__r{_name}__"] = _bitwise(_logical_name, _reflected)

for _cls in (Tensor, Variable):
    for _name, _attribute in _ATTRIBUTES.items():
        setattr(_cls, _name, _attribute)
