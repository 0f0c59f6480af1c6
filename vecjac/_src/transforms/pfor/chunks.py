"""pfor in chunks (parallel_iterations, or a memory budget's ChunkPlan): the chunks'
outputs written into one preallocated result, or joined by a concat the transforms see."""
import numpy as np

from vecjac._src.core import nest
from vecjac._src.core.context import state
from vecjac._src.core.registry import lib
from vecjac._src.core.tensor import Tensor
from vecjac._src.transforms.pfor.structured import LazyStacked


def run_chunked(run, iters, p, progress=None, plan=None):
    """Run the loop p iterations at a time (the next chunks sized by `plan` when given):
    `run(n, start, lazy)` runs iterations start..start+n-1 and returns (loop_fn's
    output, its flat loop outputs, the bytes of loop values the chunk created); `lazy`:
    structured outputs may stay structured.
    With no transform active around the loop, each chunk is written into one
    preallocated result as it comes (peak: the result plus one chunk), a structured
    output straight from its structured form (into zeros); otherwise the chunks are
    joined with a concat that the transforms see (a Jacobian of a chunked Jacobian stays
    differentiable)."""
    direct = not state.stack
    pieces, buffers, zeroed, structure = [], None, None, None
    start = 0
    while start < iters:
        n = min(p, iters - start)
        out, flat, used = run(n, start, direct)
        structure = nest.pack_sequence_as(out, [None] * len(flat)) if direct else out
        if direct:
            if buffers is None:  # zeros (calloc: pages of zeros) under structured outputs
                zeroed = [isinstance(x, LazyStacked) for x in flat]
                buffers = [None if x is None else  # (a structured value's shape is
                           np.zeros((iters,) + x.shape, x.dtype) if z else  # per iteration)
                           np.empty((iters,) + x.shape[1:], x.dtype)
                           for x, z in zip(flat, zeroed)]
            for buffer, x, z in zip(buffers, flat, zeroed):
                if buffer is None:
                    continue
                if isinstance(x, LazyStacked):
                    x.write_rows(buffer[start:start + n], z)
                else:
                    buffer[start:start + n] = x._value
            del out, flat  # the chunk's arrays go before the next chunk runs
        else:
            pieces.append(flat)
        start += n
        if plan is not None:
            p = plan.next_rows(used, n)
        if progress is not None:
            progress(n)
    if direct:
        return nest.pack_sequence_as(structure, [None if b is None else Tensor(b)
                                                 for b in buffers])
    flat = []
    for k in range(len(pieces[0])):
        parts = [piece[k] for piece in pieces]
        flat.append(None if parts[0] is None else lib.concat(parts, axis=0))
    return nest.pack_sequence_as(structure, flat)
