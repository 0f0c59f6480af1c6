"""Plan capture for vj.function: record the primitive forwards that one call executes.

`Capture` is an observer on the transform stack (vecjac/_src/core/context.py). While the
Python function runs eagerly, apply() tells it about every forward that runs
(`after_forward`), including the forwards of backward passes, pfor converters, JVPs and
structured-seed rules; Variables tell it about reads and assignments; every value read
by Python (Tensor conversions, vecjac's own value-dependent choices) reaches
`value_read`. Each Tensor it meets gets a *slot*:
- input slots: the Tensors of the arguments;
- variable reads: `var._value`, read again at replay at the same point of the plan;
- constants: Tensors it did not see being computed (vj.constant, NumPy arrays converted
  by ops, seeds built in Python), and the outputs of ops whose inputs are all constants
  (folded at trace time, unless the op is stateful, like a random draw);
- computed slots: the outputs of recorded steps.
A value read by Python becomes a guard (slot, test, expected): replay re-evaluates the
test as soon as the slot is computed and gives up on a mismatch (the caller retraces).
`Plan(capture, output_slots)` (vecjac/_src/transforms/function/plan.py) turns the record into a replayable
program; `where(c, x, y)` on a constant uniform c and shape-only ops (zeros_like) leave
no step at all.
"""
import contextlib
import gc

import numpy as np

from vecjac._src.core.context import Transform, state
from vecjac._src.core.dispatch import unborrow
from vecjac._src.core.errors import _call_site
from vecjac._src.core.registry import is_builtin
from vecjac._src.core.tensor import Tensor
from vecjac._src.core.variables import Variable

# Ops whose outputs (all inputs constant) are not folded above this size: holding a
# large constant in the plan costs memory for as long as the function lives.
FOLD_LIMIT = 1 << 24


@contextlib.contextmanager
def collection_paused():
    """Python's cyclic garbage collector off while a trace runs and its plan is built.
    A capture makes a Step (and tuples) per op and keeps them, so the heap grows by
    several objects per op; each full collection walks all of them, and a 2000-step RK4
    trace (10^5 ops) spent a quarter of its time (1.8 of 7.3 s) in the collector,
    finding nothing: the capture's objects are all alive, and vecjac's ops leave no cycles (a traced call's cyclic garbage:
    0-4 objects). Garbage the user's function makes in cycles is collected afterwards.
    Another thread's trace may enable it earlier, which only costs time.

    What is alive when it resumes (the plan: a Step and two tuples per op, 0.8 million
    objects for that trace) would all be young, and the first collection would walk
    each (0.2 s). They live as long as the function: the collector would move them to
    the oldest generation after two walks. gc.freeze() then gc.unfreeze() moves every
    tracked object there at once (documented: unfreeze puts the frozen objects back
    into the oldest generation), with no walk; the young objects of the rest of the
    program go along, and are collected by the next full collection instead. Not when
    the program has frozen objects of its own (gc.get_freeze_count()): unfreeze would
    thaw them."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            if not gc.get_freeze_count():
                gc.freeze()
                gc.unfreeze()
            gc.enable()


def _exact(v):
    """The whole value (the default test): shape, dtype and bytes."""
    v = np.asarray(v)
    return v.shape, v.dtype.str, v.tobytes()


def _float_key(v):
    return float(v).hex()  # NaN equals NaN, -0.0 differs from 0.0


def _complex_key(v):
    c = complex(v)
    return c.real.hex(), c.imag.hex()


# What Python computed from the value, by conversion (vecjac/_src/core/context.py: READS)
TESTS = {"__bool__": bool, "__float__": _float_key, "__int__": int, "__index__": int,
         "__complex__": _complex_key, "__array__": _exact, "numpy": _exact,
         "internal": _exact}


class Step:
    """One step of a captured call. kind: "op" (op.forward on slots), "read" (a
    Variable's current value), "assign" (var.<method>(slot)), "guard" (test(slot) must
    equal expected)."""

    __slots__ = ("kind", "op", "ins", "attrs", "outs", "var", "method", "test",
                 "expected", "how", "site", "into")

    def __init__(self, kind, op=None, ins=(), attrs=None, outs=(), var=None, method=None,
                 test=None, expected=None, how=None, site=None):
        self.kind, self.op, self.ins, self.attrs, self.outs = kind, op, ins, attrs, outs
        self.var, self.method = var, method
        self.test, self.expected, self.how, self.site = test, expected, how, site
        self.into = None  # an op writing into a dead input's buffer (vecjac/_src/transforms/function/plan.py)

    @classmethod
    def of_op(cls, op, ins, attrs, outs):
        """An "op" step, made without the other kinds' fields (never read for ops):
        a trace makes one per primitive forward."""
        step = cls.__new__(cls)
        step.kind, step.op, step.ins, step.attrs, step.outs, step.into = \
            "op", op, ins, attrs, outs, None
        return step

    def __repr__(self):
        if self.kind == "op":
            return f"<Step {self.op.name} {list(self.ins)} -> {list(self.outs)}>"
        return f"<Step {self.kind} {list(self.ins)} -> {list(self.outs)}>"


class Capture(Transform):
    """The recording side of vj.function (see the module docstring): enter it, add the
    inputs, run the function, and map its outputs with `slot`."""

    roles = ("observers",)

    def __init__(self):
        # Tensor._tid -> slot. Tids are never reused, so the Tensors need not stay alive
        # (eager frees them as it goes; keeping 10^5 alive cost a quarter of a trace's
        # recording), and they are consecutive ints: a cache-friendly dict. A loop value
        # shares its plain stacked value's tid, so it finds that slot. Not the reads of a
        # Variable: they all carry the Variable's tid (read_slot_of)
        self.slot_of = {}
        self.read_slot_of = {}  # id(read Tensor) -> slot, for the reads of Variables
        self.reads = []         # those read Tensors: alive, so their ids stay unique
        self.consts = {}        # slot -> ndarray
        self.values = []       # slot -> its value at trace time (facts() reads them)
        self.steps = []
        self.inputs = []       # input slots, in argument order
        self.read_of = {}      # id(Variable) -> (read Tensor, slot) of its latest read
        self.variables = {}    # Variable tid -> Variable (reads seen)

    # -- slots ------------------------------------------------------------------------------
    def _new(self, t):
        slot = len(self.values)
        self.values.append(t._value)
        self.slot_of[t._tid] = slot
        return slot

    def facts(self):
        """Per slot, once the trace is over (every value still alive, so the ids of their
        bases are unique): (shape, dtype), the id of the array owning its memory, whether
        it owned it (not a view), whether it was C-contiguous. Computed here in one pass
        rather than per op while tracing, where each op's cost counts."""
        values = self.values
        # one (shape, dtype) object per distinct pair: they outlive the trace in the plan,
        # and every object alive when the collector resumes is walked
        pairs = {}
        meta = [pairs.setdefault(key, key) for key in [(v.shape, v.dtype) for v in values]]
        bases = [v.base for v in values]
        roots = [id(v) if b is None else id(b) for v, b in zip(values, bases)]
        owned = [b is None for b in bases]
        contiguous = [v.flags.c_contiguous for v in values]
        return meta, roots, owned, contiguous

    def add_input(self, t):
        slot = self._new(t)
        self.inputs.append(slot)
        return slot

    def _const(self, t):
        slot = self._new(t)
        self.consts[slot] = t._value
        return slot

    def _lookup(self, t):
        """The slot of a Tensor met before (a loop value: its plain stacked value);
        None for a Tensor never seen (a constant, for ops) or a structured loop value."""
        while True:
            slot = self.slot_of.get(t._tid)
            if slot is not None:
                return slot
            if self.reads:
                slot = self.read_slot_of.get(id(t))
                if slot is not None:
                    return slot
            if type(t) is Tensor:
                return None
            plain = getattr(t, "_plain", None)  # StackedTensor (LazyStacked: materialized)
            if plain is None:
                return None
            t = plain

    def slot(self, t):
        slot = self._lookup(t)
        if slot is not None:
            return slot
        var = self.variables.get(t._tid)
        if var is not None and t._value is var._value:  # a read of a known Variable
            return self._read(var, t)
        return self._const(t)

    # -- the observer role (vecjac/_src/core/dispatch.py: apply) ----------------------------
    def after_forward(self, op, tensors, outputs, attrs):
        get, consts = self.slot_of.get, self.consts
        if len(tensors) == 2:  # most ops (unrolled: a trace records 10^5 of them)
            a, b = tensors
            ins = (get(a._tid), get(b._tid))
        else:
            ins = tuple([get(t._tid) for t in tensors])
        if None in ins:  # (a copy keeps a borrowed Tensor's tid: the same slots)
            tensors = unborrow(tensors)  # a plan's constants own their memory
            ins = tuple([self.slot(t) if s is None else s for s, t in zip(ins, tensors)])
        if not op.stateful:
            folds = op.shape_only
            if not folds:
                for s in ins:
                    if s not in consts:
                        break
                else:
                    folds = True
            if folds and all(o._value.nbytes <= FOLD_LIMIT for o in outputs):
                for o in outputs:
                    self._const(o)
                return
            if op.selects_by_condition and ins[0] in consts and is_builtin(op) and \
                    self._select(ins, outputs[0]):
                return
        if len(outputs) == 1:  # most ops: _new inlined (a trace records 10^5 of them)
            o = outputs[0]
            values = self.values
            slot = len(values)
            values.append(o._value)
            self.slot_of[o._tid] = slot
            outs = (slot,)
        else:
            outs = tuple([self._new(o) for o in outputs])
        self.steps.append(Step.of_op(op, ins, attrs, outs))

    def _select(self, ins, out):
        """where(c, x, y) with a constant c true (false) everywhere is x (y), when that
        has the output's shape and dtype: the output is that slot, with no step (Pow's
        gradient selects on `exponent == 0` with a constant exponent)."""
        c = self.consts[ins[0]]
        if c.size and c.all():
            pick = ins[1]
        elif not c.any():
            pick = ins[2]
        else:
            return False
        v = out._value
        picked = self.values[pick]
        if (picked.shape, picked.dtype) != (v.shape, v.dtype):
            return False
        self.slot_of[out._tid] = pick
        return True

    def variable_read(self, var):
        """A Variable was read (vecjac/_src/core/variables.py: read_value tells its watchers)."""
        self._read(var, var.unseen_read())

    def _read(self, var, t):
        known = self.read_of.get(id(var))
        if known is not None and known[0] is t:
            return known[1]
        self.variables[var._tid] = var
        slot = len(self.values)  # (not by tid: every read of var carries var's tid)
        self.values.append(t._value)
        self.read_slot_of[id(t)] = slot
        self.reads.append(t)
        self.read_of[id(var)] = (t, slot)
        self.steps.append(Step("read", outs=(slot,), var=var))
        return slot

    def assigned(self, var, method, value):
        """var.<method>(value) ran (assign, assign_add, assign_sub): a step of the plan."""
        if isinstance(value, Variable):
            value = value.read_value()
        if isinstance(value, Tensor):
            slot = self.slot(value)
        else:
            slot = self._const(Tensor(np.array(value)))
        self.read_of.pop(id(var), None)
        self.steps.append(Step("assign", ins=(slot,), var=var, method=method))

    def value_read(self, tensor, how, test=None):
        slot = self._lookup(tensor)
        if slot is None:
            var = self.variables.get(tensor._tid)
            if var is None or tensor._value is not var._value:
                return  # a constant: its value cannot change
            slot = self._read(var, tensor)
        if slot in self.consts:
            return
        test = test or TESTS.get(how, _exact)  # other reads (a NumPy fallback): the value
        file, line, _ = _call_site()
        self.steps.append(Step("guard", ins=(slot,), test=test,
                               expected=test(tensor._value), how=how,
                               site=f"{file}:{line}"))

    def __enter__(self):
        self._push()
        state.variable_watchers.append(self.variable_read)
        return self

    def __exit__(self, *exc):
        state.variable_watchers.remove(self.variable_read)
        self._pop()
        return False
