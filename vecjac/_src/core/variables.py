"""Variable (mutable, trainable state) and Module (collects Variables).

A Variable keeps one stable id; every read returns a Tensor carrying that id, so a
tape's gradient with respect to the Variable sums over all of its reads. Assignments
are not recorded: they stop the gradient, as in TensorFlow.
"""
import itertools
import re
import threading

import numpy as np

from vecjac._src.core.context import state
from vecjac._src.core.tensor import Tensor, _next_tid, as_array

_name_counts = {}
_name_lock = threading.Lock()


def _unique_name(base):
    with _name_lock:
        n = _name_counts.get(base, 0)
        _name_counts[base] = n + 1
    return base if n == 0 else f"{base}_{n}"


class _Scopes(threading.local):
    def __init__(self):
        self.stack = []  # active Module name scopes, for names like "dense/kernel:0"


_scopes = _Scopes()


class Variable:
    """A mutable tensor-like value whose reads are watched by tapes (TF's `tf.Variable`).

    >>> v = vj.Variable(3.0, name="x0")
    >>> v.name, v.numpy()
    ('x0:0', array(3.))
    """

    __array_priority__ = 100
    _ids = itertools.count()

    def __init__(self, initial_value, trainable=True, name=None, dtype=None, shape=None):
        if callable(initial_value):
            initial_value = initial_value()
        if not isinstance(trainable, (bool, np.bool_)):
            raise TypeError(f"Variable: trainable must be a bool, got {type(trainable).__name__}")
        if name is not None and not isinstance(name, str):
            raise TypeError(f"Variable: name must be a string, got {type(name).__name__}")
        value = as_array(initial_value, dtype, "initial_value")  # never the caller's memory
        if shape is not None and tuple(shape) != value.shape:
            raise ValueError(f"Variable: initial_value has shape {value.shape}, "
                             f"expected shape {tuple(shape)}")
        self._value = value
        self._tid = _next_tid()
        self._trainable = bool(trainable)
        base = "/".join(_scopes.stack + [name or "Variable"])
        self._name = base + ":0"
        self._read = None

    # -- reading ------------------------------------------------------------------------
    def read_value(self):
        """The current value as a Tensor; tapes that watch accessed variables see the read."""
        read = self._read
        if read is None:
            read = self._read = Tensor(self._value, self._tid)
        if state.tapes and self._trainable:
            for tape in state.tapes:
                tape.variable_read(self)
        for watcher in state.variable_watchers:
            watcher(self)
        return read

    def value(self):
        return self.read_value()

    def unseen_read(self):
        """The current value as a Tensor (the one read_value gives), without telling the
        tapes and watchers: for vecjac's own bookkeeping of a read they have seen, or
        must not see (a gradient's source)."""
        read = self._read
        return read if read is not None else Tensor(self._value, self._tid)

    def restore(self, value):
        """Put back `value` (an ndarray this Variable held) without telling anyone: a
        replay of vj.function undoing the assignments of a failed attempt."""
        self._value = value
        self._read = None

    def numpy(self):
        if state.stack:  # the transforms are told, as for Tensor.numpy (a guard in a trace)
            return self.read_value().numpy()
        v = self._value.view()
        v.flags.writeable = False
        return v

    def __array__(self, dtype=None, copy=None):
        # a read-only view of the current value: writing into np.asarray(v) cannot
        # change the Variable (use assign); transforms see the read (Tensor.__array__)
        return self.read_value().__array__(dtype, copy)

    @property
    def shape(self):
        return self._value.shape

    @property
    def dtype(self):
        return self._value.dtype

    @property
    def ndim(self):
        return self._value.ndim

    @property
    def name(self):
        return self._name

    @property
    def trainable(self):
        return self._trainable

    def __repr__(self):
        return (f"<vj.Variable '{self._name}' shape={self.shape} dtype={self.dtype.name}, "
                f"numpy={np.array_repr(self._value)}>")

    def __hash__(self):
        return id(self)

    def __bool__(self):
        return bool(self.read_value())

    def __len__(self):
        return len(self.read_value())

    def __iter__(self):
        return iter(self.read_value())

    def __float__(self):
        return self.read_value().__float__()

    def __int__(self):
        return self.read_value().__int__()

    def __complex__(self):
        return self.read_value().__complex__()

    def __index__(self):
        return self.read_value().__index__()

    def __format__(self, spec):
        return format(self.read_value(), spec)

    # -- copies: a value and an id of their own (tapes know a Variable by its id, so a copy
    # sharing it would get the original's gradients) ------------------------------------
    def __copy__(self):
        # values are never written in place (assign replaces them): the array is shared
        return _variable_with(self._value, self._trainable, self._name)

    def __deepcopy__(self, memo):
        return _variable_with(np.array(self._value), self._trainable, self._name)

    def __reduce__(self):
        return (_variable_with, (np.array(self._value), self._trainable, self._name))

    # -- writing (not recorded: an assignment stops the gradient) -----------------------
    def _new_value(self, value, what):
        if getattr(value, "_pfor", None) is not None:
            raise ValueError(f"Variable.{what}: cannot assign a loop-variant value inside "
                             "pfor/vectorized_map; return it from the loop instead")
        arr = as_array(value, None, "value")
        if arr.shape != self.shape:
            raise ValueError(f"Variable.{what}: value has shape {arr.shape}, the variable "
                             f"{self._name} has shape {self.shape}")
        if arr.dtype != self.dtype:
            if not np.can_cast(arr.dtype, self.dtype, casting="same_kind"):
                raise TypeError(f"Variable.{what}: cannot assign dtype {arr.dtype} to "
                                f"variable {self._name} of dtype {self.dtype}")
            arr = arr.astype(self.dtype)
        return arr  # as_array never returns the caller's memory (values are never mutated)

    def assign(self, value, read_value=True):
        """Replace the value (same shape and a castable dtype); returns self."""
        self._value = self._new_value(value, "assign")
        self._read = None
        if state.observers:
            _assigned(self, "assign", value)
        return self

    def _delta(self, delta, what):
        arr = as_array(delta, None, "delta")
        if arr.ndim == 0:  # a scalar delta applies to every element
            arr = np.broadcast_to(arr, self.shape)
        return self._new_value(arr, what)

    def assign_add(self, delta, read_value=True):
        """Add `delta` (the variable's shape, or a scalar); returns self."""
        self._value = np.asarray(self._value + self._delta(delta, "assign_add"))  # 0-d: array
        self._read = None
        if state.observers:
            _assigned(self, "assign_add", delta)
        return self

    def assign_sub(self, delta, read_value=True):
        """Subtract `delta` (the variable's shape, or a scalar); returns self."""
        self._value = np.asarray(self._value - self._delta(delta, "assign_sub"))  # 0-d: array
        self._read = None
        if state.observers:
            _assigned(self, "assign_sub", delta)
        return self


def _variable_with(value, trainable, name):
    """A Variable holding `value` (not copied) under a new id: copies and unpickling (the
    name is kept as it is, outside the current Module scopes)."""
    new = Variable.__new__(Variable)
    new._value, new._tid, new._trainable, new._name, new._read = (
        value, _next_tid(), trainable, name, None)
    return new


def _assigned(var, method, value):
    """Tell the observers (vj.function's capture: a step of the plan) about an assignment."""
    for observer in state.observers:
        observer.assigned(var, method, value)


# Variables share Tensor's operators and methods (each reads the value): attached with
# Tensor's by the op library (vecjac/_src/composites/operators.py).


class Module:
    """Collects the Variables reachable from its attributes (TF's `tf.Module`).

    Attributes are searched recursively through Modules, lists, tuples and dicts, in
    assignment order; each Variable is listed once.
    """

    def __init__(self, name=None):
        base = name or re.sub(r"(?<!^)(?=[A-Z])", "_", type(self).__name__).lower()
        self._module_name = _unique_name(base)

    @property
    def name(self):
        return getattr(self, "_module_name", type(self).__name__.lower())

    def name_scope(self):
        module = self

        class _Scope:
            def __enter__(self):
                _scopes.stack.append(module.name)

            def __exit__(self, *exc):
                _scopes.stack.pop()
                return False
        return _Scope()

    def _walk(self):
        seen, out = set(), []

        def visit(x):
            if isinstance(x, Variable):
                if id(x) not in seen:
                    seen.add(id(x))
                    out.append(x)
            elif isinstance(x, Module):
                if id(x) in seen:
                    return
                seen.add(id(x))
                for k, v in vars(x).items():
                    if not k.startswith("__"):
                        visit(v)
            elif isinstance(x, (list, tuple)):
                for v in x:
                    visit(v)
            elif isinstance(x, dict):
                for v in x.values():
                    visit(v)
        visit(self)
        return out

    @property
    def variables(self):
        return tuple(self._walk())

    @property
    def trainable_variables(self):
        return tuple(v for v in self._walk() if v.trainable)

    @property
    def non_trainable_variables(self):
        return tuple(v for v in self._walk() if not v.trainable)
