"""The replay functions of a plan's steps (vecjac/_src/transforms/function/plan.py).

`step_interpreter(steps, ...)` runs the steps in a loop, one NumPy call each: about 1 us
a step to build, so the first replays (and very long plans) use it.
`generated_replay(steps, ...)` writes them as one Python function, a line per step
(`s7 = f3(s2, c5, axis=a3_0)`), with the forwards, constants and attributes bound as
globals: a step costs a call of the op's forward and nothing else. Both take the input
values and return the output values (a tuple), or a `Failed` marker naming the guard
that did not hold.
"""
import functools
import itertools
import keyword
import math

import numpy as np

# Intermediates at least this large are deleted after their last use (smaller ones live
# until the replay returns: a `del` costs more than the memory it would save).
FREE_BYTES = 1 << 16

_names = itertools.count()


class Failed:
    """What a replay returns when a guard does not hold: the guard's step."""

    __slots__ = ("step",)

    def __init__(self, step):
        self.step = step


def _plain_output(op, meta, outs):
    """True when the forward is known to return exactly an ndarray (no conversion)."""
    if len(outs) != 1 or not type(op).__module__.startswith("vecjac."):
        return False
    return len(meta[outs[0]][0]) > 0  # a 0-d result may come back as a NumPy scalar


def _as_array(x):
    return x if type(x) is np.ndarray else np.asarray(x)


def step_interpreter(steps, inputs, outputs, consts, size=None):
    """The replay of `steps` as a loop (generated_replay's contract). Its
    values live in a list indexed by the slots these steps use, numbered anew: a fused
    segment runs a few steps of a plan of 10^5 slots, and copying a list of the plan's
    size on every call of every segment made replays quadratic in the plan's length.
    A whole plan's steps (`size`: its number of slots) keep their numbers."""
    local = {}

    def number(slots):
        return tuple([local.setdefault(s, len(local)) for s in slots])
    renumber = size is None
    if renumber:
        inputs = number(inputs)
    # the program as four parallel lists (kind, function, inputs, outputs): no object per
    # step beyond the step's own, and one bound forward per op, not per step (a plan of
    # 10^5 steps: 0.1 s less to build, and 5 * 10^5 objects fewer for the collector)
    kinds, fns, ins_of, outs_of = [], [], [], []
    forwards = {}
    for step in steps:
        kind = step.kind
        ins, outs = (number(step.ins), number(step.outs)) if renumber else \
            (step.ins, step.outs)
        if kind == "op":
            op = step.op
            fn = forwards.get(id(op))
            if fn is None:
                fn = forwards[id(op)] = op.forward
            if step.attrs:
                fn = functools.partial(fn, **step.attrs)
            kinds.append(0)
            fns.append(fn)
            ins_of.append(ins)
            outs_of.append(outs if len(outs) > 1 or op.name == "Fused" else outs[0])
        elif kind == "guard":
            kinds.append(1)
            fns.append(step.test)
            ins_of.append(ins[0])
            outs_of.append(step)
        elif kind == "read":
            kinds.append(2)
            fns.append(step.var)
            ins_of.append(None)
            outs_of.append(outs[0])
        else:
            kinds.append(3)
            fns.append(getattr(step.var, step.method))
            ins_of.append(ins[0])
            outs_of.append(None)
    if renumber:
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
        for kind, fn, ins, outs in zip(kinds, fns, ins_of, outs_of):
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


def generated_replay(steps, inputs, outputs, consts, meta, name):
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
