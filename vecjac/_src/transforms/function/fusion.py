"""Fused segments of a plan: runs of small float64 elementwise and layout steps executed
by one compiled interpreter instead of one NumPy call each.

A NumPy call costs about a microsecond whatever the size of its operands, so a plan of
thousands of ops on a handful of numbers (an ODE integrated step by step, with forward
sensitivities: benchmarks/workloads_forward.py, workload 10) is all call overhead. Here
such a run of steps becomes one program over one float64 *arena*:
- every value of the run is a set of positions in the arena, an int64 index map of its
  shape; a layout step (reshape, transpose, slice, stack, concat, broadcast, gather with
  constant indices ...) computes no values at all: its forward, applied to its input's
  index map, gives the output's index map;
  a slice's gradient (zeros with the slice placed in them, `fusible_zero_fill`) is
  the same, its zeros read from one 0.0 of the arena;
- an elementwise step (+, -, *, /, negation, square, sqrt, abs, and MulAdd a*b + c*d,
  forward mode's product rule, rounded as NumPy rounds it: no fused multiply-add) is one
  instruction (op, n, out, and up to four operands):
  write n values at a fresh contiguous place, reading its inputs through their index
  maps broadcast to the output's shape;
- constants are written into the arena once (the template); inputs are copied in on
  each call; outputs are views of the arena (or gathers, for layouts).
The interpreter (`_interpret`) is a numba kernel compiled on first need with cache=True.
Only IEEE-exact operations are fused, in the order of the plan, so a fused replay gives
the bits the NumPy replay gives. Segments are built when a plan is optimized, after its
first replays (vecjac/_src/transforms/function/plan.py: a function called once or twice
never pays numba's import and cache load), and `prepare` loads the kernel then, in the
background worker unless it is switched off; a segment runs its NumPy steps whenever
numba is missing, fails, or VECJAC_DISABLE_NUMBA=1.
"""
import importlib
import math
import os

import numpy as np

from vecjac._src.core.registry import is_builtin

MIN_STEPS = 24       # shorter runs: the segment's own overhead (~5 us) outweighs the gain
MAX_SIZE = 4096      # elements: above, NumPy's vectorized loops beat an interpreted one

# The interpreter's instructions (the branches of _interpret_source, by number). An op
# block names the one that computes its forward (`fusion_code = fusion.ADD`); pure layout
# ops say `fusible_layout = True` (docs/op_block.md).
ADD, SUB, MUL, DIV, NEG, SQUARE, SQUARED_DIFFERENCE, SQRT, ABS, MUL_ADD = range(10)
_F64 = np.dtype(np.float64)
_state = {"kernel": None, "broken": False, "numba": None}


def _interpret_source(arena, code, idx):
    k = 0
    while k < code.shape[0]:
        op, n, o, a, b = code[k], code[k + 1], code[k + 2], code[k + 3], code[k + 4]
        if op == 9:
            c, d = code[k + 5], code[k + 6]
            for i in range(n):
                arena[o + i] = (arena[idx[a + i]] * arena[idx[b + i]]
                                + arena[idx[c + i]] * arena[idx[d + i]])
        elif op == 0:
            for i in range(n):
                arena[o + i] = arena[idx[a + i]] + arena[idx[b + i]]
        elif op == 1:
            for i in range(n):
                arena[o + i] = arena[idx[a + i]] - arena[idx[b + i]]
        elif op == 2:
            for i in range(n):
                arena[o + i] = arena[idx[a + i]] * arena[idx[b + i]]
        elif op == 3:
            for i in range(n):
                arena[o + i] = arena[idx[a + i]] / arena[idx[b + i]]
        elif op == 4:
            for i in range(n):
                arena[o + i] = -arena[idx[a + i]]
        elif op == 5:
            for i in range(n):
                v = arena[idx[a + i]]
                arena[o + i] = v * v
        elif op == 6:
            for i in range(n):
                v = arena[idx[a + i]] - arena[idx[b + i]]
                arena[o + i] = v * v
        elif op == 7:
            for i in range(n):
                arena[o + i] = np.sqrt(arena[idx[a + i]])
        else:
            for i in range(n):
                arena[o + i] = abs(arena[idx[a + i]])
        k += 7


def numba_module():
    """numba, imported on first need (0.4 s: only once a fused run pays); None when it
    is missing, failed before, or VECJAC_DISABLE_NUMBA=1."""
    if _state["broken"] or os.environ.get("VECJAC_DISABLE_NUMBA", "") in ("1", "true", "yes"):
        return None
    if _state["numba"] is None:
        try:
            _state["numba"] = importlib.import_module("numba")
        except Exception:  # noqa: BLE001  numba missing: NumPy steps it is
            _state["broken"] = True
            return None
    return _state["numba"]


def _kernel():
    kernel = _state["kernel"]
    if kernel is None:
        numba = numba_module()
        if numba is None:
            return None
        try:
            kernel = numba.njit(cache=True, nogil=True, error_model="numpy")(
                _interpret_source)
            kernel(np.zeros(2), np.array([0, 1, 1, 0, 0, 0, 0], np.int64),
                   np.zeros(1, np.int64))
        except Exception:  # noqa: BLE001  numba missing or unusable: NumPy steps it is
            _state["broken"] = True
            return None
        _state["kernel"] = kernel
    return kernel


class Compiled:
    """A run of a plan's steps run by compiled code: called with the run's external
    inputs' values, returns the values of its outputs (a tuple); `numpy` runs the same
    steps one NumPy call each (generated on first need)."""

    def __init__(self, steps, ins, outs, generate):
        self.steps, self.ins, self.outs, self._generate = steps, ins, outs, generate
        self._numpy = None
        self.calls = 0

    def numpy(self, *arrays):
        if self._numpy is None:
            self._numpy = self._generate(self.steps, self.ins, self.outs)
        return self._numpy(*arrays)

    def prepare(self):
        """Compile or load the kernel now (before the plan switches to it); False when
        there is none: the NumPy steps run."""
        raise NotImplementedError


class Segment(Compiled):
    """A fused run of small steps (see the module docstring)."""

    def __init__(self, steps, ins, outs, generate, template, code, idx, places, takes):
        super().__init__(steps, ins, outs, generate)
        self.template, self.code, self.idx = template, code, idx
        self.places, self.takes = places, takes

    def prepare(self):
        return _kernel() is not None

    def __call__(self, *arrays):
        self.calls += 1
        kernel = _state["kernel"]
        if kernel is None:
            return self.numpy(*arrays)
        arena = self.template.copy()
        for (start, stop), a in zip(self.places, arrays):
            arena[start:stop] = a.reshape(-1)
        try:
            kernel(arena, self.code, self.idx)
        except Exception:  # noqa: BLE001  a numba failure: NumPy steps from now on
            _state["broken"], _state["kernel"] = True, None
            return self.numpy(*arrays)
        return tuple([arena[take[0]:take[1]].reshape(take[2]) if type(take) is tuple
                      else arena[take] for take in self.takes])


_LAYOUT, _ZERO_FILL = -1, -2


def _kind(op):
    """What fusion can do with `op`: its interpreter instruction, _LAYOUT (run on index
    maps), _ZERO_FILL (the same, zeros from the arena), or None. A user op (vj.defop
    "Mul") claims no built-in fact."""
    if not is_builtin(op):
        return None
    if op.fusion_code is not None:
        return op.fusion_code
    return _LAYOUT if op.fusible_layout else _ZERO_FILL if op.fusible_zero_fill else None


class _Builder:
    """One segment under construction (see the module docstring). Values computed by
    an instruction, and inputs, occupy a contiguous run of the arena: their map is kept as
    (start, shape) and made an index array only for a layout step, and their reads are
    index ranges, written out for the whole segment at once (`index`): a segment of 10^5
    steps is built in one pass of a few microseconds a step."""

    def __init__(self, meta, consts, small):
        self.meta, self.consts, self.small = meta, consts, small
        self.maps = {}          # slot -> (start, shape), or an int64 index map into the arena
        self.chunks = []        # template pieces: (start, values)
        self.size = 0
        self.code, self.pieces, self.n_idx = [], [], 0
        self.places = []        # (slot, start, stop) of external inputs
        self.steps = []
        self.zero = None        # arena position of a 0.0, for zero-fill layouts

    def _place(self, s):
        m = self.maps.get(s)
        if m is None:
            shape = self.meta[s][0]
            n = math.prod(shape)
            start = self.size
            self.size += n
            m = self.maps[s] = (start, shape)
            if s in self.consts:
                self.chunks.append((start, np.asarray(self.consts[s], np.float64).reshape(-1)))
            else:
                self.places.append((s, start, start + n))
        return m

    def _zero(self):
        """The arena position of a 0.0 (allocated on first need)."""
        if self.zero is None:
            self.zero = self.size
            self.size += 1
            self.chunks.append((self.zero, np.zeros(1)))
        return self.zero

    def _array(self, s):
        m = self._place(s)
        if type(m) is tuple:
            start, shape = m
            return np.arange(start, start + math.prod(shape), dtype=np.int64).reshape(shape)
        return m

    def add(self, step):
        """Add `step` if it can be fused; False (nothing added) otherwise."""
        if step.kind != "op":
            return False
        kind = _kind(step.op)
        if kind is None:
            return False
        small = self.small
        for s in step.ins:
            if not small[s]:
                return False
        for s in step.outs:
            if not small[s]:
                return False
        if kind >= 0:
            (out,) = step.outs
            shape = self.meta[out][0]
            n = math.prod(shape)
            operands, pieces = [], self.pieces
            for s in step.ins:
                m = self._place(s)
                operands.append(self.n_idx)
                if type(m) is tuple and m[1] == shape:
                    pieces.append((m[0], n, 1))
                elif type(m) is tuple and math.prod(m[1]) == 1:
                    pieces.append((m[0], n, 0))
                elif type(m) is not tuple and m.size == 1:  # a layout's single value
                    pieces.append((int(m.reshape(-1)[0]), n, 0))
                else:
                    m = self._array(s)
                    pieces.append(m.reshape(-1) if m.shape == shape else
                                  np.broadcast_to(m, shape).reshape(-1))
                self.n_idx += n
            start = self.size
            self.size += n
            self.maps[out] = (start, shape)
            operands += [operands[-1]] * (4 - len(operands))
            self.code += [kind, n, start] + operands
        else:
            shift = int(kind == _ZERO_FILL)  # then 0 marks a zero the forward wrote
            try:
                maps = step.op.forward(*[self._array(s) + shift for s in step.ins],
                                       **(step.attrs or {}))
            except Exception:  # noqa: BLE001  not a pure layout for these arguments
                return False
            maps = (maps,) if len(step.outs) == 1 else tuple(maps)
            maps = [np.asarray(m) for m in maps]
            if shift:
                maps = [np.where(m == 0, self._zero(), m - 1) for m in maps]
            if any(m.dtype != np.int64 or m.shape != self.meta[s][0]
                   for s, m in zip(step.outs, maps)):
                return False
            self.maps.update(zip(step.outs, maps))
        self.steps.append(step)
        return True

    def index(self):
        """The instructions' reads as one int64 array: ranges start, start + step * k
        (step 1: a value in order, 0: one value broadcast) and explicit index arrays."""
        pieces = self.pieces
        if not pieces:
            return np.zeros(1, np.int64)
        ranges = [p if type(p) is tuple else (0, p.size, 0) for p in pieces]
        starts, sizes, steps = (np.array(column, np.int64) for column in zip(*ranges))
        offsets = np.cumsum(sizes) - sizes
        idx = (np.repeat(starts - steps * offsets, sizes)
               + np.repeat(steps, sizes) * np.arange(self.n_idx, dtype=np.int64))
        for p, offset in zip(pieces, offsets.tolist()):
            if type(p) is not tuple:
                idx[offset:offset + p.size] = p
        return idx


def fuse(steps, meta, consts, returned, generate):
    """`steps` with runs of fusable steps replaced by one "op" step running a Segment.

    returned: the slots the plan returns; generate(steps, ins, outs): the NumPy replay
    function of `steps`."""
    last = {}
    for k, step in enumerate(steps):
        for s in step.ins:
            last[s] = k

    def needed_after(k, s):
        return s in returned or last.get(s, -1) > k
    small = [dtype == _F64 and math.prod(shape) <= MAX_SIZE for shape, dtype in meta]
    out, k = [], 0
    while k < len(steps):
        builder = _Builder(meta, consts, small)
        j = k
        while j < len(steps) and builder.add(steps[j]):
            j += 1
        if j - k < MIN_STEPS:
            out.extend(steps[k:max(j, k + 1)])
            k = max(j, k + 1)
            continue
        out.append(_segment_step(builder, steps[k:j], j - 1, needed_after, generate))
        k = j
    return out


class _FusedOp:
    """The op of a fused step, for the plan's step list (a Segment is its forward)."""

    name = "Fused"
    stateful = False

    def __init__(self, segment):
        self.forward = segment


def _segment_step(builder, steps, last, needed_after, generate):
    ins = tuple(s for s, _, _ in builder.places)
    produced = [s for step in steps for s in step.outs]
    outs = tuple(s for s in dict.fromkeys(produced) if needed_after(last, s))
    template = np.zeros(max(builder.size, 1))
    for start, values in builder.chunks:
        template[start:start + values.size] = values
    takes = []
    for s in outs:
        m = builder.maps[s]
        if type(m) is tuple:
            start, shape = m
            n = math.prod(shape)
            takes.append((start, start + n, shape) if n else (0, 0, shape))
            continue
        flat = m.reshape(-1)
        if flat.size and np.array_equal(flat, np.arange(flat[0], flat[0] + flat.size)):
            takes.append((int(flat[0]), int(flat[0]) + flat.size, m.shape))
        elif not flat.size:
            takes.append((0, 0, m.shape))
        else:
            takes.append(np.ascontiguousarray(m))
    code = np.asarray(builder.code, np.int64)
    idx = builder.index()
    segment = Segment(steps, ins, outs, generate, template, code, idx,
                      [(a, b) for _, a, b in builder.places], takes)
    step = type(steps[0])("op", _FusedOp(segment), ins, None, outs)
    return step
