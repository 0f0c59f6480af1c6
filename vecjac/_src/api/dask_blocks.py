"""Worker side of vecjac._src.api.dask: how output rows are cut into blocks, and the task
functions that compute one block with vecjac's own pfor.

Nothing here imports dask: these functions travel in task graphs by reference
(`vecjac._src.api.dask_blocks.jacobian_block`) and run wherever the scheduler puts them (a
worker process, a thread of the client, another machine). They use vecjac's public API
only, so that they survive changes to its internal modules.
"""
import itertools
import math

import cloudpickle
import numpy as np

from vecjac._src.api.functional import vjp
from vecjac._src.api.jacobians import batch_jacobian
from vecjac._src.ops.array.onehot import one_hot
from vecjac._src.ops.array.shaping import reshape
from vecjac._src.transforms.pfor.pfor import pfor


# -- layout (client side, pure arithmetic) -------------------------------------------------
def _split(n, size):
    """(size, size, ..., rest): the chunks of an axis of length n."""
    if n == 0:
        return (0,)
    return (size,) * (n // size) + ((n % size,) if n % size else ())


def output_chunks(out_shape, row_block):
    """Dask chunks of the output axes such that every block holds at most `row_block`
    output elements (rows of the Jacobian) and is one contiguous range of flat rows.

    The leading axis is chunked when a slice along it, prod(out_shape[1:]) rows, fits in
    row_block: chunks of row_block // prod(out_shape[1:]) slices. Otherwise the first axis
    k whose trailing slice fits is chunked, with single-index chunks on the axes before
    it. Such a block fixes the leading indices and spans whole trailing axes, so its rows
    are consecutive in C order: one pfor over [start, start + rows) computes it.
    """
    out_shape = tuple(out_shape)
    if not out_shape or math.prod(out_shape) == 0:
        return tuple((d,) for d in out_shape)
    for k in range(len(out_shape)):
        tail = math.prod(out_shape[k + 1:])
        if tail <= row_block:
            break
    per_block = min(out_shape[k], row_block // tail)
    return (tuple((1,) * d for d in out_shape[:k]) + (_split(out_shape[k], per_block),)
            + tuple((d,) for d in out_shape[k + 1:]))


def iter_blocks(out_shape, chunks):
    """(block index, first flat row, block shape) of every output block, in C order."""
    offsets = [np.concatenate([[0], np.cumsum(c)[:-1]]).astype(int) for c in chunks]
    for idx in itertools.product(*(range(len(c)) for c in chunks)):
        shape = tuple(c[i] for c, i in zip(chunks, idx))
        corner = tuple(int(o[i]) for o, i in zip(offsets, idx))
        if math.prod(shape) == 0 or not out_shape:
            start = 0
        else:
            start = int(np.ravel_multi_index(corner, out_shape))
        yield idx, start, shape


# -- tasks (worker side) ------------------------------------------------------------------
def load_payload(parts):
    """Unpickle what every block of one Jacobian needs (f, its arguments, ...): a tuple
    with one object per part.

    This runs as a single task per Jacobian; block tasks depend on its key, so each
    worker receives the objects once (from this task or from a peer holding them).
    The parts are pickled bytes so that the scheduler never unpickles user code.
    """
    return tuple(cloudpickle.loads(p) for p in parts)


def _bind(f, args, kwargs, positions):
    """f as a function of the differentiated arguments only (the others held fixed)."""
    def g(*diff):
        full = list(args)
        for p, d in zip(positions, diff):
            full[p] = d
        return f(*full, **kwargs)
    return g


def jacobian_block(loaded, start, block_shape):
    """Rows [start, start + prod(block_shape)) of the Jacobian, one array per
    differentiated argument, each of shape block_shape + argument shape.

    One forward pass of f (vj.vjp), then vecjac's pfor over the block's rows: iteration
    i pulls back the one-hot cotangent of flat output element start + i.
    """
    f, kwargs, (positions, out_shape, dtypes), *args = loaded
    diff = [args[p] for p in positions]
    rows = math.prod(block_shape)
    if rows == 0:
        return tuple(np.zeros(block_shape + a.shape, dt) for a, dt in zip(diff, dtypes))
    y, pull = vjp(_bind(f, args, kwargs, positions), *diff)
    if tuple(y.shape) != tuple(out_shape):
        raise ValueError(f"vecjac._src.api.dask.jacobian: f returned shape {tuple(y.shape)} on the "
                         f"worker but {tuple(out_shape)} on the client; f must be "
                         "deterministic in its output shape")
    m = math.prod(out_shape)

    def loop_fn(i):
        seed = one_hot(i + start, m, dtype=y.dtype)
        return pull(reshape(seed, out_shape))

    cotangents = pfor(loop_fn, rows)
    # a copy in C order: pfor may hand back broadcast views of loop-invariant values
    return tuple(np.ascontiguousarray(np.asarray(c), dtype=dt).reshape(block_shape + a.shape)
                 for c, a, dt in zip(cotangents, diff, dtypes))


def batch_jacobian_block(block, loaded, out_tail, dtype):
    """Per-example Jacobians of one batch chunk: batch_jacobian(f)(block), shape
    (len(block),) + out_tail + block.shape[1:]."""
    f = loaded[0]
    shape = block.shape[:1] + tuple(out_tail) + block.shape[1:]
    if block.shape[0] == 0:
        return np.zeros(shape, dtype)
    jac = np.ascontiguousarray(np.asarray(batch_jacobian(f)(block)), dtype=dtype)
    if jac.shape != shape:
        raise ValueError(f"vecjac._src.api.dask.batch_jacobian: a chunk of {block.shape[0]} examples "
                         f"gave per-example Jacobians of shape {jac.shape[1:]}, expected "
                         f"{shape[1:]} (from the client's probe); f must map (batch, ...) "
                         "to (batch, ...) for any batch size")
    return jac
