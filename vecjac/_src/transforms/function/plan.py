"""Plan: the flat program of one traced call (vecjac/_src/transforms/function/capture.py), and its replay.

A plan is the list of steps the trace recorded, minus those whose results nothing uses
(stateful steps, assignments and guards always stay), with every guard moved up to just
after the step that computes its slot: a replay that is going to fail stops early.

The first replays run the steps one NumPy call each, by a step interpreter that costs
next to nothing to build (the first call, the trace, pays for the plan only what it
must). The optimized replay is built after that (`_optimize`: in the background worker,
vecjac/_src/transforms/function/background.py, from the first replay on; or on the third
replay in the caller's thread when the worker is switched off): large element-wise
temporaries are written into a dead input's buffer (`_in_place`), runs of element-wise
steps over one large shape become one compiled loop nest
(vecjac/_src/transforms/function/chains.py), and runs of small element-wise and layout
steps one compiled interpreter program (vecjac/_src/transforms/function/fusion.py), their
numba kernels compiled or loaded before the switch; all of these give the bits of the
NumPy steps, so when the switch happens changes no result.

The optimized replay runs the steps as one generated Python function: a line per step,
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
import itertools
import keyword
import logging
import math
import threading
import time

import numpy as np

from vecjac._src.core.context import value_read
from vecjac._src.core.dispatch import apply
from vecjac._src.core.registry import REGISTRY, is_builtin
from vecjac._src.core.tensor import Tensor
from vecjac._src.transforms.function import background
from vecjac._src.transforms.function.chains import chain
from vecjac._src.transforms.function.fusion import Compiled, fuse, numba_module

# Plans of more steps replay in a loop over the steps instead of generated code: compiling
# costs about 50 us per step, once; the loop about 0.3 us per step and call.
COMPILE_STEPS = 4000
# Intermediates at least this large are deleted after their last use (smaller ones live
# until the replay returns: a `del` costs more than the memory it would save).
FREE_BYTES = 1 << 16
# Replays by the step interpreter before the optimized replay is built in the caller's
# thread (background compilation off): a function called once or twice never pays for it
WARMUP_REPLAYS = 2

logger = logging.getLogger("vecjac")
_lock = threading.Lock()

_names = itertools.count()


class Failed:
    """What a replay returns when a guard does not hold: the guard's step."""

    __slots__ = ("step",)

    def __init__(self, step):
        self.step = step


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
        self.steps = _schedule(capture.steps, self.out_slots)
        used = {s for step in self.steps for s in step.ins} | set(self.out_slots)
        self.consts = {s: v for s, v in capture.consts.items() if s in used}
        self.meta = meta
        self.assigned = tuple({id(s.var): s.var for s in self.steps
                               if s.kind == "assign"}.values())
        self.n_ops = sum(s.kind == "op" for s in self.steps)
        self.guards = [s for s in self.steps if s.kind == "guard"]
        # one-off ops (custom gradients) carry Python state from the trace: tapes outside
        # must not record them from a replay
        self.recordable = all(REGISTRY.get(s.op.name) is s.op
                              for s in self.steps if s.kind == "op")
        # what the optimization needs of the capture (not its Tensors: their memory)
        self._trace_facts = (contiguous, roots, owned)
        # The first replays run the steps one NumPy call each, by the interpreter (about
        # 1 us a step to build, where generated code costs 50); the optimized replay is
        # built once the function has been called again (_optimize).
        self.fused_steps = self.steps
        self._replay = _interpreter(self.steps, self.inputs, self.out_slots, self.consts,
                                    len(meta))
        self.replays = 0
        self._pending = True

    def run(self, arrays):
        if self._pending:
            self._warm_up()
        saved = [(v, v._value) for v in self.assigned] if self.assigned else None
        try:
            out = self._replay(*arrays)
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
                interpret = functools.partial(_interpreter, consts=self.consts)
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
                replay = _interpreter(steps, self.inputs, self.out_slots, self.consts,
                                      len(self.meta))
            else:
                replay = _generate(steps, self.inputs, self.out_slots, self.consts,
                                   self.meta, self.name)
        except Exception:  # noqa: BLE001  the interpreter's replay stays: slower, right
            logger.warning("vj.function(%s): optimizing the replay failed; it runs step "
                           "by step", self.name, exc_info=True)
            return
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


def _schedule(steps, out_slots):
    """The steps that matter, guards moved up to just after the step computing their
    slot (guards on inputs first)."""
    needed = set(out_slots)
    kept = []
    for step in reversed(steps):
        kind = step.kind
        if kind == "op" and needed.isdisjoint(step.outs) and not step.op.stateful:
            continue
        if kind == "read" and step.outs[0] not in needed:
            continue
        kept.append(step)
        needed.update(step.ins)
    kept.reverse()
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
    return order


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


def _plain_output(op, meta, outs):
    """True when the forward is known to return exactly an ndarray (no conversion)."""
    if len(outs) != 1 or not type(op).__module__.startswith("vecjac."):
        return False
    return len(meta[outs[0]][0]) > 0  # a 0-d result may come back as a NumPy scalar


def _as_array(x):
    return x if type(x) is np.ndarray else np.asarray(x)


def _interpreter(steps, inputs, outputs, consts, size=None):
    """The replay of `steps` as a loop (same contract as _generate's function). Its
    values live in a list indexed by the slots these steps use, numbered anew: a fused
    segment runs a few steps of a plan of 10^5 slots, and copying a list of the plan's
    size on every call of every segment made replays quadratic in the plan's length.
    A whole plan's steps (`size`: its number of slots) keep their numbers."""
    local = {}

    def number(slots):
        if size is not None:
            return slots
        return tuple([local.setdefault(s, len(local)) for s in slots])
    inputs = number(inputs)
    program = []
    for step in steps:
        kind = step.kind
        ins, outs = number(step.ins), number(step.outs)
        if kind == "op":
            fn = step.op.forward
            if step.attrs:
                fn = functools.partial(fn, **step.attrs)
            many = len(step.outs) > 1 or step.op.name == "Fused"
            program.append((0, fn, ins, outs if many else outs[0]))
        elif kind == "guard":
            program.append((1, step.test, ins[0], step))
        elif kind == "read":
            program.append((2, step.var, None, outs[0]))
        else:
            program.append((3, getattr(step.var, step.method), ins[0], None))
    outputs = number(outputs)
    template = [None] * (len(local) if size is None else size)
    for s, v in consts.items():
        k = local.get(s) if size is None else s
        if k is not None:
            template[k] = v
    ndarray, asarray = np.ndarray, np.asarray

    def replay(*arrays):
        v = template.copy()
        for s, a in zip(inputs, arrays):
            v[s] = a
        for kind, fn, ins, outs in program:
            if kind == 0:
                out = fn(*[v[s] for s in ins])
                if type(outs) is int:
                    v[outs] = out if type(out) is ndarray else asarray(out)
                else:
                    for s, o in zip(outs, out):
                        v[s] = o if type(o) is ndarray else asarray(o)
            elif kind == 1:
                if fn(v[ins]) != outs.expected:
                    return Failed(outs)
            elif kind == 2:
                v[outs] = fn._value
            else:
                fn(v[ins])
        return tuple([v[s] for s in outputs])
    return replay


def _generate(steps, inputs, outputs, consts, meta, name):
    """The replay function of `steps`: arguments the values of `inputs`, returns the
    values of `outputs` (a tuple), or a Failed marker (see the module docstring)."""
    ns = {"Failed": Failed, "_a": _as_array}
    used = {s for step in steps for s in step.ins} | set(outputs)
    for s, v in consts.items():
        if s in used:
            ns[f"c{s}"] = v

    def slot(s):
        return f"c{s}" if s in consts else f"s{s}"
    last = {}
    for k, step in enumerate(steps):
        for s in step.ins:
            last[s] = k
    keep = set(outputs) | set(inputs) | set(consts)

    def big(s):
        shape, dtype = meta[s]
        return math.prod(shape) * dtype.itemsize >= FREE_BYTES
    lines = [f"def replay({', '.join(slot(s) for s in inputs)}):"]
    for k, step in enumerate(steps):
        kind = step.kind
        dead = []
        if kind == "op":
            ns[f"f{k}"] = step.op.forward
            args = [slot(s) for s in step.ins]
            for j, (key, v) in enumerate((step.attrs or {}).items()):
                ns[f"a{k}_{j}"] = v
                if key.isidentifier() and not keyword.iskeyword(key):
                    args.append(f"{key}=a{k}_{j}")
                else:
                    ns.setdefault(f"A{k}", {})[key] = v
            if f"A{k}" in ns:
                args.append(f"**A{k}")
            call = f"f{k}({', '.join(args)})"
            outs = [slot(s) for s in step.outs]
            if step.into is not None:
                ufunc = ns[f"u{k}"] = step.op.inplace_ufunc
                operands = args * (ufunc.nin // len(args))  # Square: multiply(x, x)
                lines.append(f"    {outs[0]} = u{k}({', '.join(operands)}, "
                             f"out={slot(step.into)})")
            elif step.op.name == "Fused":  # a tuple of ndarrays
                lines.append(f"    {', '.join(outs)}, = {call}")
            elif _plain_output(step.op, meta, step.outs):
                lines.append(f"    {outs[0]} = {call}")
            elif len(outs) == 1:
                lines.append(f"    {outs[0]} = _a({call})")
            else:
                lines.append(f"    {', '.join(outs)}, = {call}")
                lines.extend(f"    {o} = _a({o})" for o in outs)
            dead = [s for s in step.outs if s not in last and s not in keep and big(s)]
        elif kind == "guard":
            ns[f"t{k}"], ns[f"e{k}"], ns[f"g{k}"] = step.test, step.expected, step
            lines.append(f"    if t{k}({slot(step.ins[0])}) != e{k}:")
            lines.append(f"        return Failed(g{k})")
        elif kind == "read":
            ns[f"v{k}"] = step.var
            lines.append(f"    {slot(step.outs[0])} = v{k}._value")
        else:
            ns[f"v{k}"] = step.var
            lines.append(f"    v{k}.{step.method}({slot(step.ins[0])})")
        dead += [s for s in step.ins if last.get(s) == k and s not in keep and big(s)]
        if dead:
            lines.append(f"    del {', '.join(slot(s) for s in dict.fromkeys(dead))}")
    lines.append(f"    return ({''.join(slot(s) + ', ' for s in outputs)})")
    source = "\n".join(lines) + "\n"
    filename = f"<vj.function {name} #{next(_names)}>"
    exec(compile(source, filename, "exec"), ns)
    replay = ns["replay"]
    replay.__source__ = source
    return replay
