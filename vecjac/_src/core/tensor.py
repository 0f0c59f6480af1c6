"""Tensor: an immutable array value that tapes can follow.

A Tensor wraps one NumPy ndarray and a unique id (`_tid`). Tapes key their graph by
that id, so a Tensor is never mutated: every op makes a new one. Python floats become
float64 and Python ints int64 (NumPy's rule); a Python scalar mixed with a Tensor takes
the Tensor's dtype ("weak" scalars), so float32 code stays float32.
"""
import itertools
import math

import numpy as np

from vecjac._src.core.context import INTEGRAL_ARRAY, state, value_read
from vecjac._src.core.errors import tensor_item_assignment
from vecjac._src.core.shapes import as_shape

_next_tid = itertools.count(1).__next__

# TF-style dtype names, as NumPy dtypes.
float16 = np.dtype("float16")
float32 = np.dtype("float32")
float64 = np.dtype("float64")
int8 = np.dtype("int8")
int16 = np.dtype("int16")
int32 = np.dtype("int32")
int64 = np.dtype("int64")
uint8 = np.dtype("uint8")
bool_ = np.dtype("bool")
complex64 = np.dtype("complex64")
complex128 = np.dtype("complex128")

_NUMERIC_KINDS = "biufc"


class Tensor:
    """An immutable n-dimensional array (TF's `tf.Tensor`, eager). NumPy's in-place
    `x[idx] = v` is `x = x.at[idx].set(v)` (JAX's functional update: .add, .multiply, ...).

    >>> import vecjac as vj
    >>> vj.constant([1.0, 2.0])
    <vj.Tensor: shape=(2,), dtype=float64, numpy=array([1., 2.])>
    """

    # shape and dtype are plain attributes (set once: Tensors are immutable), not
    # properties: they are read several times per op on every dispatch path
    __slots__ = ("_value", "_tid", "shape", "dtype", "__weakref__")
    _pfor = None  # the pfor loop this value varies over; None for ordinary tensors
    # ndarray <op> Tensor arrives as a ufunc call in __array_ufunc__, which answers with the
    # Tensor's reflected operator; the priority still matters to NumPy-like objects.
    __array_priority__ = 100

    def __init__(self, value, tid=None):
        self._value = value
        self._tid = _next_tid() if tid is None else tid
        self.shape = value.shape
        self.dtype = value.dtype

    # -- array protocol and properties ------------------------------------------------
    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        return math.prod(self.shape)  # Python ints: exact, and no NumPy call per access

    def numpy(self):
        """The value as a NumPy array (a read-only view: Tensors are immutable). The
        explicit way out of vecjac: no derivative flows through what is computed from
        it, and no transform warns."""
        if state.stack:
            value_read(self, "numpy")
        v = self._value.view()
        v.flags.writeable = False
        return v

    # Implicit conversions: the active transforms are told (vecjac/_src/core/errors.py), and a
    # value one of them differentiates raises or warns instead of leaving silently.
    def __array__(self, dtype=None, copy=None):
        if state.stack:
            value_read(self, "__array__" if dtype is None or np.dtype(dtype).kind not in "biu"
                       else INTEGRAL_ARRAY)
        v = self._value
        if dtype is not None and v.dtype != dtype:
            return v.astype(dtype)
        if copy:
            return v.copy()
        v = v.view()
        v.flags.writeable = False  # np.asarray(t) must not be a way to write into t
        return v

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of a scalar (rank-0) Tensor is undefined")
        return self.shape[0]

    def __iter__(self):
        # not a generator function: iter() of a scalar must fail at once, so that NumPy,
        # np.iterable and matplotlib treat a 0-d Tensor as a number, not a sequence
        if not self.shape:
            raise TypeError("iteration over a scalar (rank-0) Tensor is not possible")
        return (self[i] for i in range(self.shape[0]))

    def __bool__(self):
        if self.size != 1:
            raise ValueError(
                f"The truth value of a Tensor with shape {self.shape} is ambiguous; "
                "use vj.reduce_any or vj.reduce_all")
        if state.stack:
            value_read(self, "__bool__")
        return bool(self._value)

    def __index__(self):
        if self.dtype.kind not in "iub" or self.shape:
            raise TypeError(f"only scalar integer Tensors can be used as an index, "
                            f"got shape {self.shape} dtype {self.dtype}")
        if state.stack:
            value_read(self, "__index__")
        return int(self._value)

    def __int__(self):
        if state.stack:
            value_read(self, "__int__")
        return int(self._value)

    def __float__(self):
        if state.stack:
            value_read(self, "__float__")
        return float(self._value)

    def __complex__(self):
        if state.stack:
            value_read(self, "__complex__")
        return complex(self._value)

    __hash__ = object.__hash__  # identity (== is elementwise, as in NumPy and TF2)

    def __repr__(self):
        return (f"<vj.Tensor: shape={self.shape}, dtype={self.dtype.name}, "
                f"numpy={np.array_repr(self._value)}>")

    def __str__(self):
        # scalars print as NumPy scalars ("1.0", like TF), arrays as NumPy arrays
        v = self._value
        text = str(v[()]) if v.ndim == 0 else np.array2string(v)
        return (f"vj.Tensor({text}, shape={self.shape}, "
                f"dtype={self.dtype.name})")

    def __format__(self, spec):
        if not spec:
            return str(self)
        if state.stack:  # f"{t:.3f}" reads the value (a guard in vj.function; tapes stay quiet)
            value_read(self, "numpy")
        return format(self._value.item() if self.size == 1 else self._value, spec)

    # A Tensor is immutable: copy.copy and copy.deepcopy return the Tensor itself (as TF
    # does), so a copy made under a transform stays connected to the derivative. Pickling
    # gives a value of its own (a new id, unknown to every tape), so it is a way out: a
    # followed Tensor refuses or warns as np.asarray would.
    def __reduce__(self):
        if state.stack:
            value_read(self, "__reduce__")
        return (Tensor, (np.array(self._value),))

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self

    # Operators (+, *, @, <, [] ...), the ndarray methods and NumPy's protocols
    # (__array_ufunc__, __array_function__) are attached by the op library when it loads
    # (vecjac/_src/composites/operators.py, ops/tensor_methods.py, vecjac/_src/numpy/dispatch.py): this
    # module imports no op.

    def __setitem__(self, key, value):
        # `x[idx] = v` (and `x[idx] += v`, whose store lands here): Tensors are immutable,
        # so the message names the functional update, `x = x.at[idx].set(v)`
        # (vecjac/_src/composites/at_update.py), read off the caller's line when it can
        raise TypeError(tensor_item_assignment())


class BorrowedTensor(Tensor):
    """A Tensor over a caller's ndarray passed as an operand of a multi-input op (`A` in
    `vj.linalg.matvec(A, x)`), without the copy that `vj.constant` makes: copying a large
    constant matrix on every call costs more than the op. It never outlives a call with
    the caller's memory writeable: inside a transformed call (vj.grad, vj.hvp,
    vj.jacobian ...) what keeps it (a tape's entry, a loop value that is a view of it) is
    lent, the array read-only until the call ends, and given a copy of its own if it
    outlives the call (vecjac/_src/core/loans.py); elsewhere it is copied first
    (vecjac/_src/core/dispatch.py: `keep`, `own_output`). Its value leaves vecjac as a
    copy (`numpy()`, `np.asarray`): a view would show the caller's later writes."""

    __slots__ = ()

    def numpy(self):
        if state.stack:
            value_read(self, "numpy")
        v = self._value.copy()
        v.flags.writeable = False
        return v

    def __array__(self, dtype=None, copy=None):
        if copy is False:
            raise ValueError("a Tensor over a caller's array cannot become an array without "
                             "a copy (copy=False)")
        if state.stack:
            value_read(self, "__array__" if dtype is None or np.dtype(dtype).kind not in "biu"
                       else INTEGRAL_ARRAY)
        v = self._value
        if dtype is not None and v.dtype != dtype:
            return v.astype(dtype)
        v = v.copy()
        if not copy:
            v.flags.writeable = False
        return v


def _check_numeric(array, name, value=None):
    if array.dtype.kind not in _NUMERIC_KINDS:
        # name the Python type for non-arrays: "got dtype object" says nothing about None
        got = (f"an array of dtype {array.dtype}" if value is None or
               isinstance(value, np.ndarray) else
               f"{type(value).__name__}" + (f" (dtype {array.dtype} once converted)"
                                            if isinstance(value, (list, tuple)) else ""))
        raise TypeError(f"{name} must be numeric data (bool, int, float or complex: a "
                        f"Tensor, array, number or nested list of numbers), got {got}")
    return array


def as_dtype(dtype, name="dtype"):
    """A numeric NumPy dtype from a dtype, type or name; TypeError naming `name` else."""
    try:
        dt = np.dtype(dtype)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a numeric dtype (e.g. vj.float32), got "
                        f"{dtype!r}") from None
    if dt.kind not in _NUMERIC_KINDS or dtype is None:
        raise TypeError(f"{name} must be a numeric dtype (bool, int, float or complex), "
                        f"got {dtype!r}")
    return dt


def as_array(value, dtype=None, name="value"):
    """NumPy array of a Python / NumPy value, rejecting non-numeric data with TypeError.

    Never the caller's memory: an ndarray (or anything whose conversion may share memory
    with it) is copied, so that a later write into the caller's array cannot change a
    Tensor or a recorded gradient. A Tensor's own value is immutable and not copied."""
    if isinstance(value, Tensor):  # immutable, unless over a caller's memory
        arr, fresh = value._value, type(value) is not BorrowedTensor
    else:
        try:
            arr = np.asarray(value)
        except (ValueError, TypeError) as e:
            raise TypeError(f"{name}: cannot convert {type(value).__name__} to a Tensor "
                            f"({e})") from None
        # built from Python data (or a NumPy scalar): NumPy made a new array. (No ABC such
        # as numbers.Number here: this runs for every ndarray input of every op.)
        fresh = type(value) is not np.ndarray and isinstance(
            value, (list, tuple, int, float, complex, np.generic))
    if dtype is not None:
        dtype = as_dtype(dtype, f"{name}: dtype")
        if arr.dtype != dtype:
            _check_numeric(arr, name, value)
            if arr.dtype.kind == "c" and dtype.kind != "c":  # NumPy would drop .imag
                raise TypeError(f"{name}: complex values cannot be converted to dtype "
                                f"{dtype}")
            arr, fresh = arr.astype(dtype), True
    _check_numeric(arr, name, value)
    return arr if fresh else arr.copy()


def constant(value, dtype=None, shape=None, name=None):
    """A Tensor holding a copy of `value` (TF's `tf.constant`).

    `shape`, when given, reshapes (or broadcasts a scalar) to that shape.
    """
    if dtype is not None:
        dtype = as_dtype(dtype, "constant: dtype")
    arr = as_array(value, dtype, "constant: value")  # never the caller's memory
    if shape is not None:
        shape = as_shape(shape, "constant")
        if arr.size == 1:
            arr = np.full(shape, arr.reshape(()), dtype=arr.dtype)
        elif arr.size == int(math.prod(shape)):
            arr = arr.reshape(shape)
        else:
            raise ValueError(f"constant: value of shape {arr.shape} cannot take shape {shape}")
    return Tensor(arr)


def is_tensor(x):
    return isinstance(x, Tensor)
