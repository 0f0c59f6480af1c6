"""Fused chains of a plan: consecutive element-wise steps over one large shape, run as one
compiled loop instead of one NumPy pass each.

A derivative of a network moves stacked tangents, (iterations, batch, width) arrays of
megabytes, through runs like `t * a + b * u`, `-(...)`, `... * c`: every NumPy op reads
and writes the whole array again, so such a run costs a memory pass per op. Here a run
of element-wise steps whose outputs share one shape S (each input broadcasting to S)
becomes one loop nest over S that keeps the intermediates in registers and writes only
what later steps (or the caller) read. A sum over one axis other than the last that
follows in the run is accumulated in the same nest (in the order NumPy sums such an
axis of a C-contiguous array: first element, then each next one added), unless the Sum
op computes it as a product with ones (inner sizes up to 512, vecjac/_src/core/shapes.py:
sum_as_product), whose bits a loop nest cannot reproduce: that sum stays its own step. The kernel is
generated per chain, in the order of the plan's operations, with IEEE-exact operations
only (+, -, *, /, negation, square, MulAdd a*b + c*d without a fused multiply-add), so
it gives the bits NumPy gives. It is compiled (numba) on the chain's
WARMUP_CALLS + 1st call: until then, and whenever numba is missing or fails, the
chain's NumPy steps run.
"""
import collections
import itertools
import math
import threading

import numpy as np

from vecjac._src.core.registry import is_builtin
from vecjac._src.core.shapes import sum_as_product
from vecjac._src.transforms.function.fusion import Compiled, numba_module

MIN_SIZE = 16384     # elements: smaller runs are _fusion's (or not worth a kernel)
WARMUP_CALLS = 2
_F64 = np.dtype(np.float64)
_names = itertools.count()
# Compiled chain kernels of this process, by generated source (a kernel's behaviour is
# its source; numba's dispatcher keys the argument types itself): a function traced
# again, or the same computation in another vj.function (a solver's per-solve traces),
# reuses the kernel instead of compiling it again (~0.2-0.5 s each). Least recently
# used first out beyond KERNEL_CACHE_SIZE.
KERNEL_CACHE_SIZE = 256
_kernels = collections.OrderedDict()
_kernels_lock = threading.Lock()


def _kernel_for(numba, source):
    """The njit dispatcher of a chain's source, compiled once per process (see above)."""
    with _kernels_lock:
        kernel = _kernels.get(source)
        if kernel is not None:
            _kernels.move_to_end(source)
            return kernel
    namespace = {}
    exec(compile(source, f"<vj.function chain #{next(_names)}>", "exec"), namespace)
    kernel = numba.njit(nogil=True, error_model="numpy")(namespace["chain"])
    with _kernels_lock:
        kernel = _kernels.setdefault(source, kernel)
        while len(_kernels) > KERNEL_CACHE_SIZE:
            _kernels.popitem(last=False)
    return kernel


class _ChainOp:
    """The op of a chain step: its forward is the Chain (a tuple of outputs)."""

    name = "Fused"
    stateful = False

    def __init__(self, chain):
        self.forward = chain


class Chain(Compiled):
    """A chain (see the module docstring): its kernel's source, and its outputs' shapes."""

    def __init__(self, steps, ins, outs, shapes, source, generate, in_layouts):
        super().__init__(steps, ins, outs, generate)
        self.shapes, self.source = shapes, source
        self.in_layouts = in_layouts  # (ndim, C-contiguous at trace time) per input
        self._kernel = None

    def prepare(self):
        """Compile the kernel for the inputs' trace-time layouts (a C-contiguous array,
        or any layout), so that no call waits for numba; a replay with other layouts
        compiles again, on its call."""
        if self._kernel is None:
            self._kernel = False
            numba = numba_module()
            if numba is not None:
                try:
                    kernel = _kernel_for(numba, self.source)
                    f64 = numba.types.float64
                    kernel.compile(tuple(
                        [numba.types.Array(f64, ndim, "C" if c else "A")
                         for ndim, c in self.in_layouts]
                        + [numba.types.Array(f64, len(shape), "C") for shape in self.shapes]))
                    self._kernel = kernel
                except Exception:  # noqa: BLE001  numba cannot compile it: NumPy steps
                    pass
        return self._kernel is not False

    def __call__(self, *arrays):
        self.calls += 1
        if not self._kernel:
            return self.numpy(*arrays)
        outs = tuple([np.empty(shape) for shape in self.shapes])
        try:
            self._kernel(*[a.reshape(1) if a.ndim == 0 else a for a in arrays], *outs)
        except Exception:  # noqa: BLE001  an input numba cannot type: NumPy from now on
            self._kernel = False
            return self.numpy(*arrays)
        return outs


def _fits(step, meta, shape):
    """The output shape of `step` when it can join a chain (of `shape`, if given)."""
    if step.kind != "op" or not is_builtin(step.op) or step.op.scalar_expression is None \
            or len(step.outs) != 1:
        return None
    out_shape, dtype = meta[step.outs[0]]
    if dtype != _F64 or math.prod(out_shape) < MIN_SIZE or (shape and out_shape != shape):
        return None
    for s in step.ins:
        in_shape, in_dtype = meta[s]
        if in_dtype != _F64 or len(in_shape) > len(out_shape) or any(
                d not in (1, n) for d, n in zip(in_shape[::-1], out_shape[::-1])):
            return None
    return out_shape


def _sum_axis(step, meta, contiguous, shape, produced):
    """The axis of a Sum that can end in a chain's loop nest, else None."""
    if step.kind != "op" or step.op.name != "Sum" or not is_builtin(step.op):
        return None
    (x,) = step.ins
    axis = step.attrs.get("axis")
    if x not in produced or meta[x] != (shape, _F64) or not contiguous[x] or \
            axis is None or len(axis) != 1 or axis[0] == len(shape) - 1 or \
            sum_as_product(shape, axis) is not None:  # eager sums those with BLAS
        return None
    return axis[0]


def chain(steps, meta, contiguous, returned, generate):
    """`steps` with runs of two or more chainable steps replaced by one Chain step."""
    last = {}
    for k, step in enumerate(steps):
        for s in step.ins:
            last[s] = k
    out, k = [], 0
    while k < len(steps):
        shape = _fits(steps[k], meta, None)
        if shape is None:
            out.append(steps[k])
            k += 1
            continue
        # the run, and the steps between its members that do not read what it computes:
        # those run first (small ops of the same derivative interleave with the chain)
        run, hoisted, produced, end = [steps[k]], [], {steps[k].outs[0]}, k + 1
        j = k + 1
        while j < len(steps):
            step = steps[j]
            if _fits(step, meta, shape) is not None or _sum_axis(
                    step, meta, contiguous, shape, produced) is not None:
                run.append(step)
                produced.add(step.outs[0])
                end = j + 1
            elif step.kind == "op" and not step.op.stateful and produced.isdisjoint(
                    step.ins):
                hoisted.append((j, step))
            else:
                break
            j += 1
        if sum(step.op.name != "Sum" for step in run) < 2:
            out.append(steps[k])
            k += 1
            continue
        out.extend(step for j, step in hoisted if j < end)
        inner = set(produced)
        ins = tuple(dict.fromkeys(s for step in run for s in step.ins if s not in inner))
        outs = tuple(step.outs[0] for step in run
                     if step.outs[0] in returned or last.get(step.outs[0], -1) >= end)
        source = _source(run, ins, outs, meta, shape)
        layouts = [(max(len(meta[s][0]), 1), contiguous[s] or not meta[s][0]) for s in ins]
        out.append(type(run[0])("op", _ChainOp(Chain(run, ins, outs, [meta[s][0] for s in outs],
                                                      source, generate, layouts)),
                                ins, None, outs))
        k = end
    return out


def _source(run, ins, outs, meta, shape):
    """The kernel: a loop nest over `shape`, one statement per step."""
    rank = len(shape)
    index = [f"i{d}" for d in range(rank)]
    names = {s: f"x{n}" for n, s in enumerate(ins)}

    def read(s):
        if s in names:
            in_shape = meta[s][0]
            if not in_shape:
                return f"{names[s]}[0]"
            lead = rank - len(in_shape)
            subscript = ", ".join("0" if d == 1 and shape[lead + k] != 1 else index[lead + k]
                                  for k, d in enumerate(in_shape))
            return f"{names[s]}[{subscript}]"
        return f"v{s}"
    args = [names[s] for s in ins] + [f"o{n}" for n in range(len(outs))]
    lines = [f"def chain({', '.join(args)}):"]
    indent = "    "
    for d in range(rank):
        lines.append(f"{indent}for i{d} in range({shape[d]}):")
        indent += "    "
    sums = {}
    for step in run:
        if step.op.name == "Sum":
            sums[step.outs[0]] = step
            continue
        expression = step.op.scalar_expression.format(*[read(s) for s in step.ins])
        lines.append(f"{indent}v{step.outs[0]} = {expression}")
    for n, s in enumerate(outs):
        if s not in sums:
            lines.append(f"{indent}o{n}[{', '.join(index)}] = v{s}")
            continue
        step = sums[s]
        axis = step.attrs["axis"][0]
        kept = [("0" if step.attrs["keepdims"] else None) if d == axis else index[d]
                for d in range(rank)]
        target = f"o{n}[{', '.join(k for k in kept if k is not None)}]"
        lines.append(f"{indent}if i{axis} == 0:")
        lines.append(f"{indent}    {target} = v{step.ins[0]}")
        lines.append(f"{indent}else:")
        lines.append(f"{indent}    {target} = {target} + v{step.ins[0]}")
    return "\n".join(lines) + "\n"
