"""GradientTape: records ops on a thread-local stack and runs the backward pass.

A tape keeps the ids of the tensors connected to what it watches (`_connected`) and the
entries recorded: apply() tells it about every op that ran (`after_forward`), and it keeps
those with an input it follows. Its backward pass calls each op's gradient,
written in vecjac ops, so that outer tapes record it (higher order) and pfor vectorizes
it (Jacobians): a cotangent may be a StackedTensor.
"""
import contextlib
import itertools
import warnings

import numpy as np

from vecjac._src.core import nest
from vecjac._src.core.context import NumpyFallback, Transform, implicit, next_level, state
from vecjac._src.core.dispatch import to_input
from vecjac._src.core.errors import reraise_value_left, value_left
from vecjac._src.core.flags import NO_FAST_PATHS
from vecjac._src.core.registry import Entry, lib
from vecjac._src.core.shapes import broadcast_shape
from vecjac._src.core.tensor import Tensor
from vecjac._src.core.unconnected import (UnconnectedGradients, cut_by, leaf_tensor,
                                          refuse_complex_entry, unconnected_mode)
from vecjac._src.core.variables import Variable
from vecjac._src.transforms.tape import zeros
from vecjac._src.transforms.tape.jacobians import JacobianMixin


class GradientTape(Transform, JacobianMixin):
    """Records operations for reverse-mode differentiation (TF's `tf.GradientTape`).

    On the transform stack a tape is a recorder: apply() calls `after_forward` for every
    op that ran, and the tape records those on a value connected to what it watches.

    >>> x = vj.constant(3.0)
    >>> with vj.GradientTape() as tape:
    ...     tape.watch(x)
    ...     y = x * x
    >>> tape.gradient(y, x).numpy()
    array(6.)
    """

    roles = ("tapes",)
    _strict = None  # a functional transform's name: values leaving vecjac raise (_errors)

    def __init__(self, persistent=False, watch_accessed_variables=True):
        if not isinstance(persistent, (bool, np.bool_)):
            raise TypeError(f"GradientTape: persistent must be a bool, got {persistent!r}")
        if not isinstance(watch_accessed_variables, (bool, np.bool_)):
            raise TypeError("GradientTape: watch_accessed_variables must be a bool, "
                            f"got {watch_accessed_variables!r}")
        self._persistent = bool(persistent)
        self._watch_accessed_variables = bool(watch_accessed_variables)
        self._entries = []
        self._connected = set()
        self._watched_variables = {}
        # the first op without a derivative (Floor, ...) that a followed value reached with a
        # floating output: names the cause when an output turns out not connected
        self.cut_by = None
        self._recording = False
        self._active = False
        self.level = next_level()
        self._used = False

    # -- context --------------------------------------------------------------------------
    def __enter__(self):
        if self._active:
            raise ValueError("Tape is still recording, This can happen if you try to "
                             "re-enter an already-active tape (GradientTape: nested `with` "
                             "on the same tape)")
        self._active = True
        self._recording = True
        self._push()
        return self

    def __exit__(self, *exc):
        self._recording = False
        self._active = False
        self._pop()
        reraise_value_left(exc[1])  # the TypeError, not NumPy's wrapping of it
        return False

    @contextlib.contextmanager
    def stop_recording(self):
        """Temporarily stop recording (ops inside are not differentiated by this tape)."""
        if not self._recording:
            raise RuntimeError("GradientTape.stop_recording: the tape is not recording "
                               "(use it inside the tape's `with` block)")
        self._recording = False
        try:
            yield
        finally:
            self._recording = True

    def reset(self):
        """Forget everything recorded and watched, as if the tape were entered anew."""
        self._entries = []
        self._connected = set()
        self._watched_variables = {}
        self.cut_by = None
        self._used = False

    # -- the recorder role ------------------------------------------------------------------
    def after_forward(self, op, inputs, outputs, attrs):
        """`op` ran on `inputs` (owning their memory: vecjac/_src/core/dispatch.py: record):
        record it when the tape is recording and visible, follows an input, and the op
        has a floating output; its outputs are then followed too."""
        if not self._recording:
            return
        if not op.differentiable:
            if self.cut_by is None:
                self.cut_by = cut_by(op, inputs, outputs, self._connected)
            return
        hidden = state.hidden
        if hidden and self.level in hidden:
            return
        connected = self._connected
        for t in inputs:
            if t._tid in connected:
                break
        else:
            return
        for o in outputs:
            if o.dtype.kind in "fc":
                break
        else:
            return
        # a plain tuple: the backward pass builds each rule its own Entry anyway, and a
        # tuple costs a fifth of an Entry here, on every op of every tape
        self._entries.append((op, inputs, outputs, attrs))
        for o in outputs:
            connected.add(o._tid)

    def records(self, tensors):
        """Whether an op on `tensors` would be recorded here (recording, visible, and
        connected to one of them), before it runs."""
        if not self._recording:
            return False
        hidden = state.hidden
        if hidden and self.level in hidden:
            return False
        connected = self._connected
        for t in tensors:
            if t._tid in connected:
                return True
        return False

    def is_connected(self, tensor):
        """Whether `tensor` was computed from what this tape watches (or is watched)."""
        return tensor._tid in self._connected

    @property
    def recording(self):
        """Whether the tape records now (inside its `with`, outside stop_recording)."""
        return self._recording

    @property
    def entry_count(self):
        """How many ops the tape has recorded."""
        return len(self._entries)

    def recorded(self):
        """What the tape has recorded so far, in order, as Entries (.op, .inputs,
        .outputs, .attrs): for tests and debugging."""
        return [Entry(*entry) for entry in self._entries]

    def set_strict(self, what):
        """Make values leaving vecjac errors naming `what` (a functional transform: its
        derivative is never silently cut); returns the tape."""
        self._strict = what
        return self

    # -- watching -------------------------------------------------------------------------
    def watch(self, tensor):
        """Watch a Tensor, a Variable, or a nest of them."""
        for x in nest.flatten(tensor):
            if isinstance(x, Variable):
                self._watch_variable(x)
            elif isinstance(x, Tensor):
                if x.dtype.kind not in "fc":
                    warnings.warn(f"GradientTape.watch: the dtype of the watched tensor must "
                                  f"be floating (e.g. float32), got {x.dtype}", stacklevel=2)
                self._connected.add(x._tid)
            else:
                # ValueError, as TF's "Passed in object ... not tf.Tensor or tf.Variable"
                raise ValueError(f"GradientTape.watch: passed in object of type "
                                 f"{type(x).__name__!r} as tensor, not a Tensor, a Variable "
                                 "or a nest of them")

    def value_read(self, tensor, how, test=None):
        # (a NumPy fallback warns by itself, once per function, unless this tape is strict)
        if implicit(how) and (self._strict or type(how) is not NumpyFallback) and \
                self._recording and tensor._tid in self._connected and \
                tensor.dtype.kind in "fc" and self.visible:
            value_left(how, "a GradientTape", self._strict)

    def variable_read(self, var):
        """A trainable Variable was read: watch it, when the tape watches accessed
        variables and is recording and visible."""
        if self._recording and self._watch_accessed_variables and self.visible:
            self._watch_variable(var)

    def _watch_variable(self, var):
        if var._tid not in self._watched_variables:
            self._watched_variables[var._tid] = var
            self._connected.add(var._tid)

    def watched_variables(self):
        """The Variables watched so far, in order of construction (as TF)."""
        return tuple(sorted(self._watched_variables.values(), key=lambda v: v._tid))

    # -- gradients ------------------------------------------------------------------------
    def _check_usable(self, method):
        if self._used:
            raise RuntimeError(
                f"GradientTape.{method} can only be called once on non-persistent tapes: a "
                "non-persistent GradientTape can only be used to compute one set of "
                "gradients (or jacobians); create it with persistent=True to call it "
                "several times")

    def _consume(self):
        if not self._persistent:
            self._used = True
            self._entries = []
            self._connected = set()

    def gradient(self, target, sources, output_gradients=None,
                 unconnected_gradients=UnconnectedGradients.NONE):
        """Gradient of the sum of `target` (any nest) with respect to `sources` (any nest).

        Returns the structure of `sources`; each gradient has its source's shape, or is
        None (zeros with unconnected_gradients=ZERO) where the target does not depend on
        it. `output_gradients` (the structure of `target`) weights each target element.
        """
        self._check_usable("gradient")
        mode = unconnected_mode(unconnected_gradients)
        result = self._gradient(target, sources, output_gradients, mode,
                                "GradientTape.gradient")
        self._consume()
        return result

    def _gradient(self, target, sources, output_gradients, mode, refuse=None):
        """The gradient pass; `refuse`: the public method's name."""
        targets = [leaf_tensor(t, "gradient: target") for t in nest.flatten(target)]
        flat_sources = nest.flatten(sources)
        source_tensors = [leaf_tensor(s, "gradient: sources") for s in flat_sources]
        if output_gradients is None:
            seeds = [None] * len(targets)
        else:
            seeds = nest.flatten(output_gradients)
            if len(seeds) != len(targets):
                raise ValueError(f"gradient: output_gradients has {len(seeds)} tensors, "
                                 f"target has {len(targets)}")
        for t in targets:
            if t.dtype.kind not in "fc":
                warnings.warn("The dtype of the target tensor must be floating (e.g. "
                              f"float32) when calling GradientTape.gradient, got {t.dtype}",
                              stacklevel=3)
        float_sources = []
        for s in source_tensors:
            if s.dtype.kind not in "fc":
                warnings.warn("The dtype of the source tensor must be floating (e.g. "
                              f"float32) when calling GradientTape.gradient, got {s.dtype}",
                              stacklevel=3)
            else:
                float_sources.append(s)
        seed_pairs = []
        for t, g in zip(targets, seeds):
            if t.dtype.kind not in "fc":
                continue
            seed_pairs.append(self._seed(t, g))
        cot = self._backward(seed_pairs, {s._tid for s in float_sources})
        out = []
        for s, s_in in zip(source_tensors, flat_sources):
            g = cot.get(s._tid) if s.dtype.kind in "fc" else None
            if g is not None:
                g = self._source_view(g, s)
            elif mode is UnconnectedGradients.ZERO:
                g = _zeros_like(s)
            out.append(g)
        return nest.pack_sequence_as(sources, out)

    def _seed(self, target, seed):
        if seed is None:
            # ones_like is not differentiable and reads only the shape: made directly
            # unless a loop or a plan capture must see it (2 us of every small gradient)
            seed = Tensor(np.array(1, target.dtype) if not target.shape else
                          np.ones(target.shape, target.dtype)) if (
                not NO_FAST_PATHS and target._pfor is None and not state.observers) \
                else lib.ones_like(target)
        else:
            seed = to_input(seed, (target,), "gradient", "output_gradients")
            if seed.dtype.kind not in "biufc" or (seed.dtype.kind == "c"
                                                  and target.dtype.kind != "c"):
                raise TypeError(f"gradient: output_gradients of dtype {seed.dtype} cannot "
                                f"weight a target of dtype {target.dtype}")
            if seed.shape != target.shape and broadcast_shape(
                    "gradient", seed.shape, target.shape,
                    names=("output_gradients", "target")) != target.shape:
                raise ValueError(f"gradient: output_gradients shape {seed.shape} does not "
                                 f"match target shape {target.shape}")
            seed = lib.cast(seed, target.dtype) if seed.dtype != target.dtype else seed
            seed = lib.broadcast_to(seed, target.shape) if (
                seed.shape != target.shape) else seed
        # A target that varies over a loop this tape is outside of: the tape recorded the
        # whole stacked value, and iteration k differentiates its k-th slice only.
        while target._pfor is not None and target._pfor.level > self.level:
            loop = target._pfor
            seed = loop.one_hot_seed(seed)
            target = target._plain
        return target._tid, seed

    def _source_view(self, g, source):
        # A source that varies over a loop this tape is outside of: iteration k wants the
        # cotangent of its own slice of the stacked value.
        views = []
        s = source
        while s._pfor is not None and s._pfor.level > self.level:
            views.append(s._pfor)
            s = s._plain
        for loop in reversed(views):
            g = loop.own_slice(g)
        return g

    def _backward(self, seed_pairs, source_tids):
        """Cotangents by tensor id, for every tensor between sources and targets."""
        entries = list(self._entries)  # the backward pass may be recorded on this tape
        depends = set(source_tids)
        useful = []
        for e in entries:  # (op, inputs, outputs, attrs)
            for t in e[1]:
                if t._tid in depends:
                    break
            else:
                continue
            useful.append(e)
            for o in e[2]:
                depends.add(o._tid)
        cot = {}
        # tensor id -> ZeroMask: where that cotangent is zero because a selection (where,
        # maximum, minimum) put a zero there; element-wise rules keep those zeros exact
        # (zeros.py). This pass's own: it goes with the cotangents, never past the pass.
        masks = {}
        for tid, g in seed_pairs:
            cot[tid] = lib.add(cot[tid], g) if tid in cot else g
        # no transform active: nobody sees the rules' ops, so element-wise rules and the
        # sums of cotangents run on arrays (_direct_gradient, _direct_add). A rule's own
        # transforms (recompute_grad's tape) are gone again when it returns.
        direct = not state.stack and not NO_FAST_PATHS
        add = _direct_add if direct else lib.add
        for op, inputs, outputs, attrs in reversed(useful):
            if len(outputs) == 1:  # the common case, without list building
                g = cot.get(outputs[0]._tid)
                if g is None:
                    continue
                gs = [g]
            else:
                gs = [cot.get(o._tid) for o in outputs]
                if all(g is None for g in gs):
                    continue
                gs = [_zeros_like(o) if g is None else g for o, g in zip(outputs, gs)]
            if not op.has_gradient:
                raise LookupError(f"gradient registry has no entry for: {op.name}")
            if not op.complex_rules:
                refuse_complex_entry(op, inputs, outputs, "gradient")
            # the rule gets its own copy of the entry: which inputs this pass wants is
            # per-pass state, and a persistent tape's entries may be in two passes at once
            # (two threads, or a tape recorded inside another's backward pass)
            needs = _ONE_NEEDED if len(inputs) == 1 else \
                tuple([t._tid in depends for t in inputs])  # (one input: useful's)
            e = Entry(op, inputs, outputs, attrs)
            e.needs = needs
            in_masks = None
            if masks or op.selects is not None:
                mask = None
                for o in outputs:
                    mask = masks.pop(o._tid, None)
                if (mask is not None or op.selects is not None) and len(outputs) == 1 \
                        and type(op).pattern in zeros.ELEMENTWISE:
                    in_grads, in_masks = zeros.gradient(op, e, gs, mask)
                else:  # (any other op drops the mask)
                    in_grads = op.gradient(e, *gs)
            elif direct and (op.derivative is not None or op.array_gradient is not None):
                in_grads = _direct_gradient(op, e, gs[0])
            else:
                in_grads = op.gradient(e, *gs)
            del gs
            for o in outputs:  # consumed: free it now (lower peak memory), unless asked for
                if o._tid not in source_tids:
                    cot.pop(o._tid, None)
            if not isinstance(in_grads, (tuple, list)):
                in_grads = (in_grads,)
            if len(in_grads) != len(inputs):
                raise RuntimeError(f"gradient of {op.name} returned {len(in_grads)} "
                                   f"cotangents for {len(e.inputs)} inputs")
            for t, g, need, m in zip(inputs, in_grads, needs, in_masks or _NO_MASKS):
                if g is None or not need:
                    continue
                if not isinstance(g, Tensor):
                    g = lib.cast(g, t.dtype)
                if g.shape != t.shape:
                    raise RuntimeError(f"gradient of {op.name} gave shape {g.shape} for an "
                                       f"input of shape {t.shape} (a bug in that op)")
                if g.dtype != t.dtype:
                    g = lib.cast(g, t.dtype)
                tid = t._tid
                if tid in cot:
                    cot[tid] = add(cot[tid], g)
                    if masks:  # zero where every term is
                        old = masks.pop(tid, None)
                        if old is not None and m is not None:
                            masks[tid] = zeros.both(old, m)
                else:
                    cot[tid] = g
                    if m is not None:
                        masks[tid] = m
        return cot


_NO_MASKS = itertools.repeat(None)  # the inputs' masks when a rule gave none
_ONE_NEEDED = (True,)  # a useful entry's only input is one the pass wants


def _direct_add(a, b):
    """a + b for two cotangents of one input (same shape and dtype), as AddV2 computes
    it, when no transform is active: the sum of a variable used several times (x[0] and
    x[1] of one x) without a dispatch per term."""
    if type(a) is not Tensor or type(b) is not Tensor:
        return lib.add(a, b)
    out = lib.Add.forward(a._value, b._value)
    return Tensor(out if type(out) is np.ndarray else np.asarray(out))


def _direct_gradient(op, e, g):
    """The gradient rule of an element-wise op on ndarrays, when no transform is active:
    nobody can see the rule's ops then. An op with a `derivative` (g times dy/dx, written
    once as `dydx`: ops/elementwise/family.py) runs the rule's own operations on arrays;
    an op with `array_gradient` (Mul, Sub, RealDiv, Pow, rounding) gives them itself, or
    NotImplemented.
    The same bits as the rule (tests/test_op_blocks.py, tests/test_fast_paths.py) at
    a third of the cost of dispatching its ops on small arrays. Complex values, loop
    values and lent caller arrays take the rule."""
    if type(g) is not Tensor or g.dtype.kind != "f":
        return op.gradient(e, g)
    for t in e.inputs:
        if type(t) is not Tensor or t.dtype.kind != "f":
            return op.gradient(e, g)
    if op.derivative is not None:
        x, y = e.inputs[0], e.outputs[0]
        if type(y) is not Tensor:
            return op.gradient(e, g)
        d = op.derivative(x._value, y._value)
        grads = (lib.Mul.forward(g._value, d if type(d) is np.ndarray else np.asarray(d)),)
    else:
        grads = op.array_gradient(e, g._value)
        if grads is NotImplemented:
            return op.gradient(e, g)
    return tuple([None if a is None else Tensor(a if type(a) is np.ndarray else np.asarray(a))
                  for a in grads])


def _zeros_like(t):
    return lib.zeros_like(t)
