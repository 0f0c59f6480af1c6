"""ScatterUpdate: `x` with the slices that gather(x, indices, axis, batch_dims) reads
replaced by `updates` -- the primitive under `x.at[idx].set(v)`
(vecjac/_src/composites/at_update.py).

Shapes are gather's: x is batch + pre + (N,) + post (axis = len(batch + pre)), indices
batch + I, updates batch + pre + I + post (the shape gather would return). Repeated
indices: the last occurrence (in C order of the index array, per batch row) wins, always
(the forward keeps only the last one; NumPy's own assignment leaves the order unspecified).
`unique=True` is the caller's promise that no index repeats (the check is skipped).

The op is linear in (x, updates): the gradient for x is ScatterUpdate itself (zeros
written where x was overwritten), for updates a gather (zero for an occurrence that a
later one overwrote); the JVP applies the op to the tangents. Converter: gather's, one
more batch dimension when the indices vary over the loop, one more leading axis
otherwise. Pattern: a layout op (its forward run on element numbers) when the indices
are constants; every element of the updates may land anywhere when they are computed.
"""
import functools
import math

import numpy as np

from vecjac._src.core.context import value_read
from vecjac._src.core.dispatch import apply, to_input
from vecjac._src.core.registry import Op, lib, register
from vecjac._src.core.samples import Arg, Sample
from vecjac._src.core.shapes import normalize_axis
from vecjac._src.ops.array.creation import fill, zeros_like
from vecjac._src.ops.array.indexing import GatherV2, _check_indices, _in_range
from vecjac._src.ops.array.shaping import broadcast_to, reshape
from vecjac._src.ops.elementwise.logic import equal, where
from vecjac._src.transforms.forward.rules import linear
from vecjac._src.transforms.sparsity import patterns

__all__ = ["scatter_update"]


def _scatter_update_np(x, updates, indices, axis, batch_dims, unique):
    shape = x.shape
    if len(shape) == 1 and (unique or indices.size < 2):  # x.at[...] of a 1-d x: the usual
        out = np.array(x)
        out[indices.reshape(-1)] = updates.reshape(-1)
        return out
    nb = math.prod(shape[:batch_dims])
    pre, n, post = math.prod(shape[batch_dims:axis]), shape[axis], math.prod(shape[axis + 1:])
    m = math.prod(indices.shape[batch_dims:])
    ind = indices.reshape(nb, m)
    if m and ind.min() < 0:
        ind = np.where(ind < 0, ind + n, ind)
    u = updates.reshape(nb, pre, m, post)
    out = np.array(x, order="C")  # a fresh copy, whatever x's layout (a broadcast view)
    o = out.reshape(nb, pre, n, post)
    rows = np.arange(nb).reshape(nb, 1)
    if not unique and m > 1:
        flat = (rows * n + ind).reshape(-1)
        _, first_reversed = np.unique(flat[::-1], return_index=True)
        if first_reversed.size < flat.size:  # keep the last occurrence of each place
            b, i = np.divmod(flat.size - 1 - first_reversed, m)
            o[b, :, ind[b, i], :] = u[b, :, i, :]
            return out
    # rows (nb, 1) and ind (nb, m), split by a slice: the indexed axes come first
    o[rows, :, ind, :] = np.moveaxis(u, 2, 1)
    return out


@register
class ScatterUpdate(Op):
    """x with gather(x, indices, axis, batch_dims) replaced by updates (last one wins)."""
    jvp = linear
    fresh_output = True  # the forward copies x: a later ufunc may write into the result
    samples = (Sample("scatter_update", Arg.float("n", 3), Arg.float(4, 3), Arg.int(4, hi="n")),
               Sample("scatter_update", Arg.float(2, "n", 3), Arg.float(2, 2, 3),
                      Arg.int(2, 2, hi="n"), axis=1, batch_dims=1),
               Sample("scatter_update", Arg.float(3, "n"), Arg.float(2, 2, "n"),
                      Arg.int(2, 2, lo=-3, hi=3), axis=0),
               Sample(lambda x, v: scatter_update(x, v, np.array([2, 0, 2, 1]), axis=1),
                      Arg.float(2, 4), Arg.float(2, 4)))

    def forward(self, x, updates, indices, axis, batch_dims, unique):
        return _scatter_update_np(x, updates, indices, axis, batch_dims, unique)

    def gradient(self, e, g):
        x, updates, indices = e.inputs
        attrs = e.attrs
        gx = gu = None
        if e.needs[0]:
            gx = apply(ScatterUpdate, g, zeros_like(updates), indices, **attrs)
        if e.needs[1]:
            gu = apply(GatherV2, g, indices, axis=attrs["axis"], batch_dims=attrs["batch_dims"])
            if not attrs["unique"]:
                kept = _last_occurrences(indices, x.shape, attrs["axis"], attrs["batch_dims"])
                gu = where(kept, gu, zeros_like(gu))
        return gx, gu, None

    def converter(self, cx, x, updates, indices, axis, batch_dims, unique):
        sx, su, si = cx.stacked
        x = x if sx else cx.stack(x)
        updates = updates if su else cx.stack(updates)
        if not si and batch_dims == 0:  # the loop axis leads x and updates, not the indices
            return apply(self, x, updates, indices, axis=axis + 1, batch_dims=0, unique=unique)
        indices = indices if si else cx.stack(indices)
        return apply(self, x, updates, indices, axis=axis + 1, batch_dims=batch_dims + 1,
                     unique=unique)

    def pattern(self, cx, x, updates, indices, **attrs):
        if cx.traced[2]:  # indices computed from the traced inputs: any place may change
            return patterns.conservative(cx)[0]
        return patterns.layout(self, cx, x, updates, indices, **attrs)


def _last_occurrences(indices, shape, axis, batch_dims):
    """True where an occurrence of an index is the last of its batch row (the one whose
    update stays), broadcastable against the updates. Written with ops (the op itself on
    occurrence numbers), so that it vectorizes when the indices vary over a pfor loop."""
    batch, inner = indices.shape[:batch_dims], indices.shape[batch_dims:]
    occurrence = np.arange(math.prod(inner), dtype=np.int64).reshape(inner)
    occurrence = broadcast_to(occurrence, indices.shape)
    winner = apply(ScatterUpdate, fill(batch + (shape[axis],), np.int64(-1)), occurrence,
                   indices, axis=batch_dims, batch_dims=batch_dims, unique=False)
    read = apply(GatherV2, winner, indices, axis=batch_dims, batch_dims=batch_dims)
    kept = equal(read, occurrence)
    n_pre, n_post = axis - batch_dims, len(shape) - axis - 1
    return reshape(kept, batch + (1,) * n_pre + inner + (1,) * n_post)


def scatter_update(tensor, updates, indices, axis=0, batch_dims=0, unique=False):
    """`tensor` with the slices gather(tensor, indices, axis, batch_dims) reads replaced by
    `updates` (of the shape that gather returns); where an index repeats, the last
    occurrence wins. A new Tensor; differentiable in tensor and updates. `x.at[idx].set(v)`
    is the NumPy-style spelling."""
    fn = "scatter_update"
    x = to_input(tensor, (), fn, "tensor")
    u = to_input(updates, (x,), fn, "updates")
    idx = to_input(indices, (), fn, "indices")
    if idx.dtype.kind not in "iu":
        raise TypeError(f"{fn}: indices must be integers, got dtype {idx.dtype}")
    if x.ndim == 0:
        raise ValueError(f"{fn}: tensor must have rank >= 1, got a scalar")
    if not 0 <= batch_dims <= idx.ndim or batch_dims >= x.ndim:
        raise ValueError(f"{fn}: batch_dims={batch_dims} must be in [0, rank(indices)="
                         f"{idx.ndim}] and less than rank(tensor)={x.ndim}")
    ax = normalize_axis(axis, x.ndim, fn)
    if ax < batch_dims or x.shape[:batch_dims] != idx.shape[:batch_dims]:
        raise ValueError(f"{fn}: axis={ax} must be >= batch_dims={batch_dims}, and the first "
                         f"batch_dims dimensions of tensor {x.shape} and indices {idx.shape} "
                         "must be equal")
    expected = x.shape[:ax] + idx.shape[batch_dims:] + x.shape[ax + 1:]
    if u.shape != expected:
        raise ValueError(f"{fn}: updates must have the shape gather(tensor, indices) has, "
                         f"{expected}, got {u.shape}")
    if u.dtype != x.dtype:
        raise TypeError(f"{fn}: updates dtype {u.dtype} differs from tensor dtype {x.dtype}")
    value_read(idx, "internal", functools.partial(_in_range, x.shape[ax]))
    _check_indices(idx._value, x.shape[ax], fn)
    return apply(ScatterUpdate, x, u, idx, axis=ax, batch_dims=int(batch_dims),
                 unique=bool(unique))


lib.publish(globals(), __all__)
