"""Plan: the flat program of one traced call (vecjac/_src/transforms/function/capture.py), and its replay.

A plan is the list of steps the trace recorded, minus those whose results nothing uses
(stateful steps, assignments and guards always stay), with every guard moved up to just
after the step that computes its slot: a replay that is going to fail stops early.

The first replays run the steps one NumPy call each, by a step interpreter that costs
next to nothing to build, built on the first replay (the first call, the trace, pays
for the plan only what it must). The optimized replay is built after that
(`_optimize`: in the background worker,
vecjac/_src/transforms/function/background.py, from the first replay on; or on the third
replay in the caller's thread when the worker is switched off): large element-wise
temporaries are written into a dead input's buffer (`_in_place`), runs of element-wise
steps over one large shape become one compiled loop nest
(vecjac/_src/transforms/function/chains.py), and runs of small element-wise and layout
steps one compiled interpreter program (vecjac/_src/transforms/function/fusion.py), their
numba kernels compiled or loaded before the switch; all of these give the bits of the
NumPy steps, so when the switch happens changes no result.

The optimized replay (vecjac/_src/transforms/function/replay.py builds both kinds)
runs the steps as one generated Python function: a line per step,
`s7 = f3(s2, c5, axis=a3_0)`, with the forwards, constants and attributes bound as
globals, so that a step costs a call of the op's forward and nothing else (no Tensor, no
validation, no dispatch, no recording); very long plans run by the interpreter instead
(compiling would cost more). Large intermediates are deleted after their last
use, as eager execution frees them. A guard that does not hold returns a `Failed`
marker; the Variables the plan assigns are restored first, so that the caller can run
the function again from the start.

`run_recorded` replays the same steps through apply() instead, as Tensors, for the
transforms active at call time (a tape or accumulator outside the function): they see
the ops exactly as an eager call would show them.
"""
import functools
import logging
import math
import threading
import time

from vecjac._src.core.context import value_read
from vecjac._src.core.dispatch import apply
from vecjac._src.core.registry import REGISTRY, is_builtin
from vecjac._src.core.tensor import Tensor
from vecjac._src.transforms.function import background
from vecjac._src.transforms.function.chains import chain
from vecjac._src.transforms.function.fusion import Compiled, fuse, numba_module
from vecjac._src.transforms.function.replay import (FREE_BYTES, Failed, generated_replay,
                                                    step_interpreter)

# Plans of more steps replay in a loop over the steps instead of generated code: compiling
# costs about 50 us per step, once; the loop about 0.3 us per step and call.
COMPILE_STEPS = 4000
# Replays by the step interpreter before the optimized replay is built in the caller's
# thread (background compilation off): a function called once or twice never pays for it
WARMUP_REPLAYS = 2

logger = logging.getLogger("vecjac")
_lock = threading.Lock()



class Plan:
    """The replayable program of one trace. `run(arrays)` takes the input values (in
    the order of capture.inputs) and returns the output values (in the order of
    `out_slots`) or a Failed marker."""

    def __init__(self, capture, out_slots, name="f"):
        self.name = name
        self.inputs = tuple(capture.inputs)
        self.out_slots = tuple(out_slots)
        # outputs that shared an input's memory at trace time (an input returned, reshaped
        # or sliced): the caller copies them when that input is its own array
        meta, roots, owned, contiguous = capture.facts()
        input_roots = {roots[s] for s in self.inputs}
        self.aliased = tuple(k for k, s in enumerate(self.out_slots)
                             if roots[s] in input_roots)
        self.steps, used = _schedule(capture.steps, self.out_slots)
        self.consts = {s: v for s, v in capture.consts.items() if s in used}
        self.meta = meta
        ops, self.n_ops, self.guards, self.assigned = _contents(self.steps)
        # one-off ops (custom gradients) carry Python state from the trace: tapes outside
        # must not record them from a replay
        self.recordable = all(REGISTRY.get(op.name) is op for op in ops)
        # what the optimization needs of the capture (not its Tensors: their memory)
        self._trace_facts = (contiguous, roots, owned)
        # The first replays run the steps one NumPy call each, by the interpreter (about
        # 1 us a step to build, where generated code costs 50), built on the first
        # replay (a function called once never pays it: 0.1 s for 10^5 steps); the
        # optimized replay is built once the function has been called again (_optimize).
        self.fused_steps = self.steps
        self._replay = None
        self.replays = 0
        self._pending = True

    def _step_by_step(self):
        """The replay by the step interpreter, built on first use. Under the lock that
        _optimize switches replays under: an optimized replay is never replaced."""
        with _lock:
            if self._replay is None:
                self._replay = step_interpreter(self.steps, self.inputs, self.out_slots,
                                            self.consts, len(self.meta))
            return self._replay

    def run(self, arrays):
        if self._pending:
            self._warm_up()
        replay = self._replay
        if replay is None:
            replay = self._step_by_step()
        saved = [(v, v._value) for v in self.assigned] if self.assigned else None
        try:
            out = replay(*arrays)
        except BaseException:
            if saved:
                _restore(saved)
            raise
        if saved and type(out) is Failed:
            _restore(saved)
        return out

    def _warm_up(self):
        """Count a replay; start the optimization on the first one (in the background
        worker), or run it on the WARMUP_REPLAYS + 1st when the worker is off."""
        with _lock:
            if not self._pending:
                return
            self.replays += 1
            if background.enabled():
                self._pending = False
                background.submit(self._optimize)
                return
            if self.replays <= WARMUP_REPLAYS:
                return
            self._pending = False
        self._optimize()

    def _optimize(self):
        """Build the optimized replay and switch to it: runs of large element-wise steps
        become compiled loop nests (chains.py), runs of small ones fused segments
        (fusion.py), their kernels compiled or loaded from numba's cache now, large
        temporaries written into dead buffers, the steps one generated function (plans
        of up to COMPILE_STEPS steps). Every version gives the same bits."""
        start = time.perf_counter()
        contiguous, roots, owned = self._trace_facts
        returned = set(self.out_slots)
        steps, compiled = self.steps, []
        try:
            if numba_module() is not None:  # without numba, segments would run NumPy
                interpret = functools.partial(step_interpreter, consts=self.consts)
                steps = fuse(chain(steps, self.meta, contiguous, returned, interpret),
                             self.meta, self.consts, returned, interpret)
                compiled = [s.op.forward for s in steps
                            if s.kind == "op" and isinstance(s.op.forward, Compiled)]
                ready = 0
                for c in compiled:
                    if background.stopping():  # the interpreter exits
                        return
                    ready += c.prepare()
            # In-place writes are decided on the order the replay runs: chain() hoists
            # steps ahead of a chain, so a step that is the last reader of a buffer in the
            # traced order may run before the chain that still reads it (issue 29: a
            # hoisted `6 * exp(u)` wrote into exp(u) before the chain's `seed * exp(u)`).
            _in_place(steps, self.meta, roots, owned, returned)
            if len(steps) > COMPILE_STEPS:  # compiling costs more than it would save
                replay = step_interpreter(steps, self.inputs, self.out_slots, self.consts,
                                      len(self.meta))
            else:
                replay = generated_replay(steps, self.inputs, self.out_slots, self.consts,
                                   self.meta, self.name)
        except Exception:  # noqa: BLE001  the interpreter's replay stays: slower, right
            logger.warning("vj.function(%s): optimizing the replay failed; it runs step "
                           "by step", self.name, exc_info=True)
            return
        with _lock:  # (after a step-by-step replay being built: _step_by_step)
            self.fused_steps = steps
            self._replay = replay
            self._trace_facts = None
        if compiled:
            logger.info("vj.function(%s): %d steps replay as %d, with %d of %d numba "
                        "kernels ready, built in %.2f s%s", self.name, len(self.steps),
                        len(steps), ready, len(compiled), time.perf_counter() - start,
                        " (in the background)" if threading.current_thread()
                        is not threading.main_thread() else "")

    def describe(self):
        """The optimized replay function's source (for debugging; optimizes now if the
        function has not been called often enough yet)."""
        if self._pending:
            self._pending = False
            self._optimize()
        background.wait()
        return getattr(self._replay, "__source__", "(a replay by the step interpreter)")

    def run_recorded(self, tensors):
        """The replay as apply() calls on Tensors (see the module docstring): Tensors
        out, or Failed."""
        saved = [(v, v._value) for v in self.assigned] if self.assigned else None
        values = dict(zip(self.inputs, tensors))
        consts = self.consts

        def get(s):
            t = values.get(s)
            if t is None:
                t = values[s] = Tensor(consts[s])
            return t
        try:
            for step in self.steps:
                kind = step.kind
                if kind == "op":
                    out = apply(step.op, *[get(s) for s in step.ins], **(step.attrs or {}))
                    values.update(zip(step.outs, out if type(out) is tuple else (out,)))
                elif kind == "guard":
                    t = get(step.ins[0])
                    value_read(t, step.how, step.test)
                    if step.test(t._value) != step.expected:
                        if saved:
                            _restore(saved)
                        return Failed(step)
                elif kind == "read":
                    values[step.outs[0]] = step.var.read_value()
                else:
                    getattr(step.var, step.method)(get(step.ins[0]))
        except BaseException:
            if saved:
                _restore(saved)
            raise
        return [get(s) for s in self.out_slots]


def _restore(saved):
    for var, value in saved:
        var.restore(value)


def _contents(steps):
    """(the distinct ops, how many op steps, the guard steps, the Variables assigned) of
    `steps`, in one pass (a trace's 10^5 steps)."""
    ops, guards, assigned = {}, [], {}
    n_ops = 0
    for step in steps:
        kind = step.kind
        if kind == "op":
            ops[id(step.op)] = step.op
            n_ops += 1
        elif kind == "guard":
            guards.append(step)
        elif kind == "assign":
            assigned[id(step.var)] = step.var
    return tuple(ops.values()), n_ops, guards, tuple(assigned.values())


def _schedule(steps, out_slots):
    """(the steps that matter, guards moved up to just after the step computing their
    slot (guards on inputs first); the slots they read or return)."""
    needed = set(out_slots)
    kept = []
    guarded = False
    for step in reversed(steps):  # (a trace's 10^5 steps: kept short)
        kind = step.kind
        if kind == "op":
            outs = step.outs
            if (outs[0] not in needed if len(outs) == 1 else needed.isdisjoint(outs)) \
                    and not step.op.stateful:
                continue
        elif kind == "read":
            if step.outs[0] not in needed:
                continue
        elif kind == "guard":
            guarded = True
        kept.append(step)
        needed.update(step.ins)
    kept.reverse()
    if not guarded:
        return kept, needed
    producer = {}
    for k, step in enumerate(kept):
        for o in step.outs:
            producer[o] = k
    front, after = [], {}
    for step in kept:
        if step.kind == "guard":
            k = producer.get(step.ins[0])
            if k is None:
                front.append(step)
            else:
                after.setdefault(k, []).append(step)
    order = front
    for k, step in enumerate(kept):
        if step.kind != "guard":
            order.append(step)
            order.extend(after.get(k, ()))
    return order, needed


# Element-wise ops whose forward is exactly a ufunc (`inplace_ufunc`) may write into a
# dead input's buffer instead of a fresh array: a large temporary reused while it is in
# cache (0.09 against 0.15 ms for a 2 MB add), and no allocation. Only into the output of
# an op that always returns a fresh array (never a view, a cached or shared one).
def _ufunc_of(op):
    return op.inplace_ufunc if is_builtin(op) else None


def _fresh(op):
    return is_builtin(op) and (op.fresh_output or op.inplace_ufunc is not None)


def _in_place(steps, meta, roots, owned, returned):
    """Mark the ufunc steps that can write into an input (step.into): a large input that
    a fresh-array op computed, that nothing reads afterwards, and whose memory no live
    view shares (trace-time roots: views share their base's). `steps` must be in the
    order the replay runs them (after chaining and fusion, which move and group steps)."""
    last = {}
    for k, step in enumerate(steps):
        for s in step.ins:
            last[s] = k
    sharing, producer = {}, {}
    for s, root in enumerate(roots):
        sharing.setdefault(root, []).append(s)
    for step in steps:
        for s in step.outs:
            producer[s] = step
    for k, step in enumerate(steps):
        if step.kind != "op" or _ufunc_of(step.op) is None or len(step.outs) != 1:
            continue
        out = step.outs[0]
        shape, dtype = meta[out]
        if math.prod(shape) * dtype.itemsize < FREE_BYTES:
            continue
        for s in dict.fromkeys(step.ins):
            p = producer.get(s)
            if (p is None or p.kind != "op" or not _fresh(p.op) or not owned[s]
                    or meta[s] != meta[out] or last.get(s) != k or s in returned):
                continue
            if all(t == s or (t not in returned and last.get(t, -1) <= k)
                   for t in sharing[roots[s]]):
                step.into = s
                break
