"""vj.function: trace a Python function once per input signature, replay the trace.

The first call with a new input signature runs the function eagerly under plan capture
(vecjac/_src/transforms/function/capture.py) and returns that eager result; later calls with the same signature
replay the captured plan (vecjac/_src/transforms/function/plan.py): the primitive forwards the call executed,
with no Tensor wrapping, validation, dispatch or recording per op.

The input signature (TF's rules): the shape and dtype of each Tensor or NumPy array
argument, the value of every other argument (Python numbers, strings, None), the
identity of Variables and other objects, and the structure of lists, tuples and dicts.
`input_signature=[vj.TensorSpec(...), ...]` fixes the arguments instead: they are
checked and converted against it. Plans are specialized to shapes, so a spec with None
dims still traces once per concrete shape.

Semantics, as tf.function:
- Python side effects (print, appending to a list) happen while tracing only.
- Variables are read when the plan runs; assignments (assign, assign_add, assign_sub)
  are steps of the plan. Random ops draw new values on every call.
- Every decision Python took on a value while tracing (`if x > 0`, float(x), int(x),
  np.asarray(x), x.numpy(), and vecjac's own value-dependent choices) is a guard: a
  call whose values would have decided otherwise is traced again, so each call gives
  the eager answer. When guards keep failing for one signature, the function runs
  eagerly for it, with a warning naming the read.
- Inside an active transform (a GradientTape or ForwardAccumulator recording around the
  call) the plan is replayed through apply(), so that the transform sees every op as in
  an eager call; inside pfor / vectorized_map, or for plans with custom gradients, the
  function runs eagerly.
- NumPy arrays and Tensors the function captures from outside (closures, globals) are
  captured when tracing, as constants.
- The result's leaves that are numbers or NumPy arrays become Tensors (TF converts a
  function's outputs); None, strings and other objects are returned as they are.
"""
import collections
import functools
import inspect
import numbers
import threading
import warnings

import numpy as np

from vecjac._src.api.fn_args import arg_label
from vecjac._src.core import loans, nest
from vecjac._src.core.context import state
from vecjac._src.core.dispatch import convert_to_tensor
from vecjac._src.core.tensor import BorrowedTensor, Tensor
from vecjac._src.core.tensor_spec import TensorSpec
from vecjac._src.core.variables import Variable
from vecjac._src.transforms.function.capture import Capture, collection_paused
from vecjac._src.transforms.function.plan import Failed, Plan

# Traces of one input signature (each for other guard outcomes) before it runs eagerly
MAX_TRACES_PER_SIGNATURE = 5
# "N out of the last N calls traced" (new signatures) before the retracing warning
RETRACING_WARNING_THRESHOLD = 5
_RECORDING_ROLES = {("tapes",), ("followers",), ("observers",)}


def function(f=None, input_signature=None, reduce_retracing=False):
    """Compile `f` into a traced, replayed function (TF's `tf.function`).

    Use as `vj.function(f)`, `@vj.function` or `@vj.function(input_signature=...)`.
    The result is called like `f` and returns what `f` returns, numbers and NumPy
    arrays as Tensors (as TF).
    `input_signature`: a list of TensorSpec (or nests of them), one per positional
    argument, checked on every call. `reduce_retracing=True` traces a new input
    signature only when it comes a second time (the first call runs eagerly), for
    callers whose shapes rarely repeat. See vecjac/_src/api/function.py for the semantics.

    >>> @vj.function
    ... def f(x):
    ...     return vj.reduce_sum(x ** 2)
    >>> f(vj.constant([1.0, 2.0])).numpy()
    array(5.)
    """
    if input_signature is not None:
        if not isinstance(input_signature, (list, tuple)):
            raise TypeError(f"function: input_signature must be a list or tuple of "
                            f"vj.TensorSpec, got {type(input_signature).__name__}")
        for spec in nest.flatten(list(input_signature)):
            if not isinstance(spec, TensorSpec):
                raise TypeError(f"function: input_signature must contain vj.TensorSpec "
                                f"objects (or nests of them), got {type(spec).__name__}")
    if not isinstance(reduce_retracing, (bool, np.bool_)):
        raise TypeError(f"function: reduce_retracing must be a bool, got "
                        f"{reduce_retracing!r}")
    if f is None:
        return functools.partial(function, input_signature=input_signature,
                                 reduce_retracing=reduce_retracing)
    if not callable(f):
        raise TypeError(f"function: f must be callable, got {type(f).__name__}")
    if inspect.isgeneratorfunction(f) or inspect.isgeneratorfunction(
            getattr(f, "__call__", None)):
        raise TypeError(f"function: {getattr(f, '__name__', 'f')} is a generator function; a "
                        "trace would keep its one generator, exhausted after the first call. "
                        "Return a list (or a Tensor) instead of yielding")
    return Function(f, input_signature, bool(reduce_retracing))


class _Entry:
    """The traces of one input signature."""

    __slots__ = ("plans", "eager", "calls")

    def __init__(self):
        self.plans = []    # most recently used first
        self.eager = False
        self.calls = 0


class Function:
    """A traced function (see `function`). Methods decorated with vj.function trace per
    instance."""

    def __init__(self, f, input_signature=None, reduce_retracing=False):
        self._python_function = f
        self._input_signature = None if input_signature is None else tuple(input_signature)
        self._reduce_retracing = reduce_retracing
        self._entries = {}
        self._lock = threading.RLock()
        self._traces = 0
        self._recent = collections.deque(maxlen=RETRACING_WARNING_THRESHOLD)
        self._name = getattr(f, "__name__", type(f).__name__)
        functools.update_wrapper(self, f, updated=())

    @property
    def python_function(self):
        return self._python_function

    @property
    def input_signature(self):
        return self._input_signature

    def _run_python(self, args, kwargs):
        """The Python function's result, its numbers and NumPy arrays as Tensors."""
        return nest.map_structure(_as_output, self._python_function(*args, **kwargs))

    def _label(self, k):
        return arg_label(self._python_function, k)

    def experimental_get_tracing_count(self):
        """How many times the Python function was traced."""
        return self._traces

    def __repr__(self):
        return f"<vj.function {self._name}>"

    def __get__(self, instance, owner=None):
        if instance is None:
            return self
        return _BoundFunction(self, instance)

    def __call__(self, *args, **kwargs):
        return self._call(None, *args, **kwargs)

    # -- calls ------------------------------------------------------------------------------
    def _call(self, instance, *args, **kwargs):
        if self._input_signature is not None:
            args, kwargs = self._check_signature(instance, args, kwargs)
        if instance is not None:
            args = (instance,) + args
        leaves = []
        key = _key(args, kwargs, leaves, f"function({self._name})", self._label)
        st = state
        if st.stack or st.variable_watchers:
            return self._under_transforms(key, args, kwargs, leaves)
        entry = self._entries.get(key)
        if entry is not None and entry.plans:
            arrays = [_contiguous(x._value if isinstance(x, Tensor) else x) for x in leaves]
            plans = entry.plans
            for k, plan in enumerate(plans):
                try:
                    out = plan.run(arrays)
                except Exception:  # noqa: BLE001  (assignments undone) the eager call
                    break          # raises it, as eager execution would
                if type(out) is not Failed:
                    if k:
                        with self._lock:
                            plans.insert(0, plans.pop(k))
                    self._recent.append(False)
                    return _pack(plan, _unaliased(out, leaves) if plan.aliased else out)
        if entry is not None and entry.eager:
            call_args, call_kwargs = _tensor_args(args, kwargs, leaves)
            return self._run_python(call_args, call_kwargs)
        return self._trace(key, entry, args, kwargs, leaves)

    def _trace(self, key, entry, args, kwargs, leaves):
        with self._lock:
            if entry is None:
                entry = self._entries.setdefault(key, _Entry())
            entry.calls += 1
            first_sight = self._reduce_retracing and entry.calls == 1 and not entry.plans
            retraces = len(entry.plans)
        if first_sight:  # reduce_retracing: trace the signature when it comes again
            call_args, call_kwargs = _tensor_args(args, kwargs, leaves)
            return self._run_python(call_args, call_kwargs)
        if retraces >= MAX_TRACES_PER_SIGNATURE:
            return self._give_up(entry, args, kwargs, leaves)
        with collection_paused():
            with Capture() as capture:
                fresh = [_capture_input(capture, x) for x in leaves]
                call_args, call_kwargs = _tensor_args(args, kwargs, fresh)
                result = self._run_python(call_args, call_kwargs)
                flat = nest.flatten(result)
                out_slots, layout = [], []
                for x in flat:
                    if isinstance(x, Tensor):
                        layout.append(len(out_slots))
                        out_slots.append(capture.slot(x))
                    else:
                        layout.append(None)
            plan = Plan(capture, out_slots, self._name)
            # the trace's Tensors go while the collector is still paused: it walks
            # every object alive when it resumes (only the plan's, then)
            del capture, fresh, call_args, call_kwargs
        # the structure and Python leaves of the result (its Tensors are not kept)
        plan.flat = [None if k is not None else x for x, k in zip(flat, layout)]
        plan.structure = nest.pack_sequence_as(result, plan.flat)
        plan.layout = layout
        plan.single = layout == [0] and not isinstance(result, (list, tuple, dict))
        with self._lock:
            entry.plans.insert(0, plan)
            self._traces += 1
        self._note_trace(retraces)
        return result

    def _give_up(self, entry, args, kwargs, leaves):
        entry.eager = True
        reads = collections.Counter(
            (g.how, g.site) for plan in entry.plans for g in plan.guards)
        what = ", ".join(f"{_READ_NAMES.get(how, how)} at {site}"
                         for (how, site), _ in reads.most_common(3)) or "values"
        warnings.warn(
            f"vj.function({self._name}): traced {len(entry.plans)} times for the same "
            f"input signature because Python reads tensor values that change between "
            f"calls ({what}); it now runs eagerly for these inputs. Keep the decision in "
            "vecjac ops (vj.where computes both sides without reading a value) to trace "
            "once.", UserWarning, stacklevel=4)
        entry.plans = []
        call_args, call_kwargs = _tensor_args(args, kwargs, leaves)
        return self._run_python(call_args, call_kwargs)

    def _note_trace(self, retraces):
        recent = self._recent
        recent.append(retraces == 0)
        if len(recent) == recent.maxlen and all(recent) and self._traces > recent.maxlen:
            recent.clear()
            warnings.warn(
                f"{RETRACING_WARNING_THRESHOLD} out of the last "
                f"{RETRACING_WARNING_THRESHOLD} calls to vj.function({self._name}) "
                "triggered retracing. Tracing is expensive and the excessive number of "
                "tracings could be due to (1) creating vj.function repeatedly in a loop, "
                "(2) passing tensors with different shapes, (3) passing Python objects "
                "(numbers, lists) instead of tensors. For (1), define the vj.function "
                "outside of the loop; for (2), reduce_retracing=True skips tracing shapes "
                "that do not repeat; for (3), pass the values as Tensors.", UserWarning,
                stacklevel=4)

    def _under_transforms(self, key, args, kwargs, leaves):
        """A call while transforms are active: they must see the ops (module docstring)."""
        entry = self._entries.get(key)
        if (entry is not None and entry.plans and not state.hidden
                and all(t.roles in _RECORDING_ROLES for t in state.stack)
                and not any(isinstance(x, Tensor) and x._pfor is not None for x in leaves)):
            tensors = [_leaf_tensor(x) for x in leaves]
            for plan in entry.plans:
                if plan.recordable:
                    out = plan.run_recorded(tensors)
                    if type(out) is not Failed:
                        return _pack(plan, out, wrap=False)
        call_args, call_kwargs = _tensor_args(args, kwargs, leaves)
        return self._run_python(call_args, call_kwargs)

    # -- input_signature --------------------------------------------------------------------
    def _check_signature(self, instance, args, kwargs):
        specs = self._input_signature
        what = f"function({self._name})"
        if kwargs:
            try:
                sig = inspect.signature(self._python_function)
                bound = sig.bind(*((instance,) if instance is not None else ()), *args,
                                 **kwargs)
            except (TypeError, ValueError) as e:
                raise TypeError(f"{what}: arguments do not match the function: {e}") from None
            if bound.kwargs:
                raise TypeError(f"{what}: with an input_signature, arguments must be "
                                f"positional or named positional parameters, got "
                                f"{sorted(bound.kwargs)}")
            args = bound.args[1:] if instance is not None else bound.args
        if len(args) != len(specs):
            raise TypeError(f"{what}: the input_signature has {len(specs)} argument"
                            f"{'s' * (len(specs) != 1)}, the call gives {len(args)}")
        shift = instance is not None  # the method's own arguments follow self
        return tuple([_conform(spec, arg, f"{what}: {self._label(k + shift)}")
                      for k, (spec, arg) in enumerate(zip(specs, args))]), {}


class _BoundFunction:
    """A vj.function method bound to an instance (traced per instance)."""

    __slots__ = ("function", "instance")

    def __init__(self, function, instance):
        self.function, self.instance = function, instance

    def __call__(self, *args, **kwargs):
        return self.function._call(self.instance, *args, **kwargs)

    def experimental_get_tracing_count(self):
        return self.function.experimental_get_tracing_count()

    def __repr__(self):
        return f"<bound {self.function!r} of {self.instance!r}>"


def _as_output(x):
    if isinstance(x, (numbers.Number, np.ndarray, np.generic)) and not isinstance(x, Tensor):
        return convert_to_tensor(x)
    return x


_READ_NAMES = {"__bool__": "a truth test (if, while, and, or)", "__float__": "float()",
               "__int__": "int()", "__index__": "an index", "__complex__": "complex()",
               "__array__": "np.asarray()", "numpy": ".numpy()",
               "internal": "a value-dependent choice of vecjac"}


def _conform(spec, x, what):
    """`x` (a nest) with each leaf a Tensor matching its TensorSpec in `spec`; TypeError
    or ValueError naming the argument and its input_signature entry otherwise."""
    if isinstance(spec, (list, tuple, dict)):
        keys = sorted(spec, key=repr) if isinstance(spec, dict) else range(len(spec))
        if not (isinstance(x, dict) if isinstance(spec, dict) else
                isinstance(x, (list, tuple))) or len(x) != len(spec) or (
                isinstance(spec, dict) and sorted(x, key=repr) != list(keys)):
            raise TypeError(f"{what} does not have the structure of its input_signature "
                            f"entry {spec!r}")
        leaves = {k: _conform(spec[k], x[k], what) for k in keys}
        if isinstance(spec, dict):
            return {k: leaves[k] for k in x}
        return type(x)(leaves[k] for k in keys) if not hasattr(x, "_fields") else \
            type(x)(*[leaves[k] for k in keys])
    expected = f"its input_signature entry {spec!r}"
    if isinstance(x, Variable):
        x = x.read_value()
    if isinstance(x, Tensor):
        if x.dtype != spec.dtype:
            raise TypeError(f"{what} does not match {expected}: got a Tensor of dtype "
                            f"{x.dtype}")
    else:
        try:
            x = convert_to_tensor(x, dtype=spec.dtype, name=what)
        except (TypeError, ValueError) as e:
            raise TypeError(f"{what} does not match {expected}: {e}") from None
    if not spec._shape_fits(x.shape):
        raise ValueError(f"{what} does not match {expected}: got shape {x.shape}")
    return x


# -- input signatures -------------------------------------------------------------------
class _Identity:
    """An unhashable argument, keyed by identity (and kept alive by the key)."""

    __slots__ = ("obj",)

    def __init__(self, obj):
        self.obj = obj

    def __eq__(self, other):
        return type(other) is _Identity and other.obj is self.obj

    def __hash__(self):
        return id(self.obj)


def _leaf_key(x, leaves):
    if isinstance(x, Tensor):
        leaves.append(x)
        return x.shape, x.dtype
    t = type(x)
    if t is Variable:
        return t, _Identity(x)
    if isinstance(x, np.ndarray):  # subclasses (memmap, masked, user) are read as arrays
        if x.dtype.kind not in "biufc":
            raise _NotNumeric(x.dtype)
        leaves.append(x if t is np.ndarray else np.asarray(x))
        return x.shape, x.dtype
    if isinstance(x, (float, np.floating)):  # exactly: -0.0 is not 0.0 (x / s)
        return t, float(x).hex()
    if isinstance(x, (complex, np.complexfloating)):
        return t, complex(x).real.hex(), complex(x).imag.hex()
    if isinstance(x, (list, tuple)):
        return t, tuple([_leaf_key(v, leaves) for v in x])
    if isinstance(x, dict):
        return t, tuple([(k, _leaf_key(x[k], leaves)) for k in sorted(x, key=repr)])
    try:
        hash(x)
    except TypeError:
        return t, _Identity(x)
    return t, x


class _NotNumeric(Exception):
    pass


def _key(args, kwargs, leaves, what, label=str):
    """The input signature of a call (see the module docstring); the tensor leaves of
    the arguments are appended to `leaves`, in order."""
    try:
        key = tuple([_leaf_key(a, leaves) for a in args])
        if kwargs:
            names = tuple(sorted(kwargs))
            key += tuple([_leaf_key(kwargs[k], leaves) for k in names]) + (names,)
        return key
    except _NotNumeric:
        pass
    for label, value in [(label(k), a) for k, a in enumerate(args)] + [
            (f"argument {k!r}", kwargs[k]) for k in sorted(kwargs)]:
        try:
            _leaf_key(value, [])
        except _NotNumeric as e:
            raise TypeError(f"{what}: {label} holds a NumPy array of dtype {e.args[0]}; "
                            "arrays become Tensors, which hold numeric data (bool, int, "
                            "float or complex)") from None


def _rebuild(x, it):
    if isinstance(x, Tensor) or (isinstance(x, np.ndarray) and x.dtype.kind in "biufc"):
        return next(it)
    if isinstance(x, (list, tuple)):
        items = [_rebuild(v, it) for v in x]
        if type(x) is list:
            return items
        return type(x)(*items) if hasattr(x, "_fields") else type(x)(items)
    if isinstance(x, dict):
        values = {k: _rebuild(x[k], it) for k in sorted(x, key=repr)}
        return {k: values[k] for k in x}
    return x


def _tensor_args(args, kwargs, tensors):
    """args and kwargs with their tensor leaves replaced, in order, by `tensors` (NumPy
    arrays become Tensors that a caller's later write cannot reach: `_leaf_tensor`)."""
    it = iter([_leaf_tensor(t) for t in tensors])
    call_args = tuple([_rebuild(a, it) for a in args])
    call_kwargs = {k: _rebuild(kwargs[k], it) for k in sorted(kwargs)}
    return call_args, call_kwargs


def _leaf_tensor(x):
    """The Tensor of one tensor leaf of the arguments. A NumPy array is copied, except
    inside a transformed call (vj.grad of a function that calls this one): then it is lent,
    read-only until that call returns (vecjac/_src/core/loans.py), as eager ops read it."""
    if isinstance(x, Tensor):
        return x
    loan = loans.current()
    if loan is not None and type(x) is np.ndarray and x.dtype.kind in "biufc":
        t = BorrowedTensor(x)
        if loan.lend(t):
            return t
    return Tensor(np.array(x))


def _contiguous(a):
    """Plans run on C-contiguous inputs: the memory layout of every intermediate, on
    which NumPy's summation order may depend, is then the same at trace and replay."""
    return a if a.flags.c_contiguous else np.ascontiguousarray(a)


def _capture_input(capture, x):
    """A fresh Tensor for one input leaf (each leaf its own slot, even when the caller
    passes one Tensor twice), registered with the capture; a NumPy array is copied (the
    traced call's result must not alias the caller's array)."""
    owned = isinstance(x, Tensor) and type(x) is not BorrowedTensor
    t = Tensor(_contiguous(x._value) if owned else
               np.array(x._value if isinstance(x, Tensor) else x, order="C"))
    capture.add_input(t)
    return t


def _unaliased(out, leaves):
    """The replay's outputs, with a copy of each that shares memory with a caller's NumPy
    array (an input returned, reshaped or sliced): Tensors never alias caller memory."""
    arrays = [x._value if type(x) is BorrowedTensor else x for x in leaves
              if type(x) is BorrowedTensor or not isinstance(x, Tensor)]
    if not arrays:
        return out
    return tuple([np.array(o) if isinstance(o, np.ndarray) and any(
        np.may_share_memory(o, a) for a in arrays) else o for o in out])


def _pack(plan, out, wrap=True):
    """The function's result from a replay: the traced structure with its Tensors
    replaced by the replayed values (Python leaves as traced)."""
    if plan.single:
        return Tensor(out[0]) if wrap else out[0]
    flat = [x if k is None else (Tensor(out[k]) if wrap else out[k])
            for x, k in zip(plan.flat, plan.layout)]
    return nest.pack_sequence_as(plan.structure, flat)
