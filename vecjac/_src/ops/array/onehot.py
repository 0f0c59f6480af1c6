"""one_hot, and the one-hot machinery of structured Jacobian seeds.

ScatterRows / GatherRows: place row a of a (n, w) block at position pos[a] of an axis
of size M, and read it back. They build structured loop values densely (see
vecjac/_src/transforms/pfor/structured.py) and are each other's gradient, so structured paths stay
differentiable to any order. Leading axes are batch axes, which is also their converter.
ScatterBand / GatherBand do the same for K entries per row at positions pos[a] + off[j]
(banded structured values, vecjac/_src/transforms/pfor/banded.py).
"""
import functools

import numpy as np

from vecjac._src.core.context import value_read
from vecjac._src.core.dispatch import apply, to_input
from vecjac._src.core.registry import Op, lib, register
from vecjac._src.core.samples import Arg, Sample
from vecjac._src.core.shapes import as_dtype, as_int, normalize_axis
from vecjac._src.core.tensor import Tensor
from vecjac._src.ops import kernels
from vecjac._src.ops.array.indexing import GatherGrad, gather
from vecjac._src.ops.array.shaping import expand_dims, reshape
from vecjac._src.ops.elementwise.arithmetic import unbroadcast
from vecjac._src.ops.linalg.products import matmul
from vecjac._src.ops.reduce.reductions import reduce_sum
from vecjac._src.transforms.forward.rules import linear, multilinear
from vecjac._src.transforms.pfor import structured
from vecjac._src.transforms.pfor.banded import band_entries
from vecjac._src.transforms.pfor.converters import elementwise
from vecjac._src.transforms.pfor.structured import OneHotStacked
from vecjac._src.transforms.sparsity import patterns

__all__ = ["one_hot"]


@register
class ScatterRows(Op):
    """values (..., n, w) -> (..., n, M, w) with values[..., a, :] at [..., a, pos[a], :]."""
    pattern = patterns.layout
    jvp = linear
    converter = elementwise
    samples = (Sample(lambda v: scatter_rows(v, np.array([2, 0, 2]), 4), Arg.float(3, 2)),)

    def forward(self, values, pos, size):
        n, w = values.shape[-2:]
        out = np.zeros(values.shape[:-2] + (n, size, w), dtype=values.dtype)
        out[..., np.arange(n), pos, :] = values
        return out

    def gradient(self, e, g):
        return apply(GatherRows, g, pos=e.attrs["pos"])


@register
class GatherRows(Op):
    """g (..., n, M, w) -> (..., n, w): the rows [..., a, pos[a], :]."""
    complex_rules = True
    pattern = patterns.layout
    jvp = linear
    converter = elementwise
    covered_by = "ScatterRows"  # its gradient

    def forward(self, g, pos):
        return g[..., np.arange(g.shape[-3]), pos, :]

    def gradient(self, e, g):
        return apply(ScatterRows, g, pos=e.attrs["pos"], size=e.inputs[0].shape[-2])


def scatter_rows(values, pos, size):
    """(n, w) rows placed at positions `pos` (n,) of a new axis of `size`: (n, size, w)."""
    complex_rules = True
    return apply(ScatterRows, values, pos=np.asarray(pos), size=int(size))


@register
class ScatterBand(Op):
    """d (..., n, K) -> (..., n, size): row a holds d[..., a, j] at position pos[a] + off[j]
    (positions outside [0, size) dropped), zeros elsewhere. The dense value of a banded
    structured loop value (vecjac/_src/transforms/pfor/banded.py); GatherBand is its
    adjoint."""
    complex_rules = True
    pattern = patterns.layout
    jvp = linear
    converter = elementwise
    samples = (Sample(lambda d: apply(ScatterBand, d, pos=np.array([0, 2, 3]), off=(-1, 0, 2),
                                      size=4), Arg.float(3, 3)),)

    def forward(self, d, pos, off, size):
        n = d.shape[-2]
        out = np.zeros(d.shape[:-2] + (n, size), dtype=d.dtype)
        rows, j, cols = band_entries(pos, off, size)
        out[..., rows, cols] = d[..., rows, j]
        return out

    def gradient(self, e, g):
        return apply(GatherBand, g, pos=e.attrs["pos"], off=e.attrs["off"])


@register
class GatherBand(Op):
    """g (..., n, size) -> (..., n, K): g[..., a, pos[a] + off[j]], zero where that
    position is outside [0, size). The adjoint of ScatterBand."""
    complex_rules = True
    pattern = patterns.layout
    jvp = linear
    converter = elementwise
    covered_by = "ScatterBand"  # its gradient

    def forward(self, g, pos, off):
        n, size = g.shape[-2:]
        out = np.zeros(g.shape[:-2] + (n, len(off)), dtype=g.dtype)
        rows, j, cols = band_entries(pos, off, size)
        out[..., rows, j] = g[..., rows, cols]
        return out

    def gradient(self, e, g):
        return apply(ScatterBand, g, pos=e.attrs["pos"], off=e.attrs["off"],
                     size=e.inputs[0].shape[-1])


@register
class ScatterRowsAdd(Op):
    """dense (..., n, M, w) + values (..., n, w) placed at [..., a, pos[a], :]: one pass
    over `dense` (a copy) instead of materializing the one-hot term and adding."""
    complex_rules = True
    jvp = linear
    samples = (Sample(lambda x, v: apply(ScatterRowsAdd, x, v, pos=np.array([1, 0, 1])),
                      Arg.float(3, 2, 2), Arg.float(3, 2)),)

    def forward(self, dense, values, pos):
        out = np.array(dense, dtype=np.result_type(dense, values), order="C")
        out[..., np.arange(out.shape[-3]), pos, :] += values
        return out

    def gradient(self, e, g):
        gv = apply(GatherRows, g, pos=e.attrs["pos"]) if e.needs[1] else None
        return g, gv

    def converter(self, cx, dense, values, pos):
        dense, values = cx.stack_all((dense, values))  # leading axes are batch axes
        return apply(self, dense, values, pos=pos)


@register
class ScaledRows(Op):
    """d[..., a, None] * m[..., idx[a], :]: a row gather and a scaling in one allocation
    (the structured rule of "one-hot rows @ matrix"). With idx = 0..n-1 (every row in
    order, as in a full Jacobian) the gather is skipped altogether."""
    jvp = multilinear
    samples = (Sample(lambda m, d: apply(ScaledRows, m, d, idx=np.array([2, 0, 2])),
                      Arg.float(3, 4), Arg.float(3)),
               Sample(lambda m, d: apply(ScaledRows, m, d, idx=np.arange(3)),
                      Arg.float(3, 2), Arg.float(3)))

    def forward(self, m, d, idx):
        scale = d[..., :, None]
        if len(idx) == m.shape[-2] and np.array_equal(idx, np.arange(len(idx))):
            if d.shape == m.shape[-2:-1] and np.result_type(m, d) == m.dtype and (d == 1).all():
                # unit seeds (a plain Jacobian): the rows are m itself. Tensors are never
                # written to, so sharing m's memory is safe, and it saves a full pass.
                return m
            fast = kernels.scale_rows(m, d)
            return fast if fast is not None else m * scale
        rows = np.take(m, idx, axis=-2)
        if rows.dtype == np.result_type(m, d) and \
                np.broadcast_shapes(rows.shape, scale.shape) == rows.shape:
            rows *= scale  # in place on our own temporary: no second array
            return rows
        return rows * scale

    def gradient(self, e, g):
        m, d = e.inputs
        idx = e.attrs["idx"]
        gm = gd = None
        if e.needs[0]:  # the rows go back where they came from (scatter-add)
            rows = unbroadcast(g * expand_dims(d, -1), m.shape[:-2] + g.shape[-2:])
            gm = apply(GatherGrad, rows, idx, shape=m.shape, axis=m.ndim - 2, batch_dims=0)
        if e.needs[1]:
            picked = gather(m, idx, axis=m.ndim - 2)
            gd = unbroadcast(reduce_sum(g * picked, axis=-1), d.shape)
        return gm, gd

    def converter(self, cx, m, d, idx):
        # leading axes are batch axes; a stacked vector d gets its loop axis broadcast
        # against m's (m stacked: (n, R, w); d stacked: (n, rows))
        if cx.stacked[0] and not cx.stacked[1] and d.ndim > 1:
            return NotImplemented
        return apply(self, m, d, idx=idx)


@register
class OuterRows(Op):
    """d (..., i) and r (..., k) -> (..., i, k): the outer product d[..., :, None] *
    r[..., None, :] over shared leading (batch) axes. The structured rule of "one-hot
    columns @ matrix" (batch_jacobian seeds): iteration a gives d[a] x b[pos[a]]."""
    jvp = multilinear
    converter = elementwise
    samples = (Sample(lambda d, r: apply(OuterRows, d, r), Arg.float(3, "n"), Arg.float(3, 4)),
               Sample(lambda d, r: apply(OuterRows, d, r), Arg.float(2), Arg.float(3)))

    def forward(self, d, r):
        fast = kernels.outer_rows(d, r)
        return fast if fast is not None else d[..., :, None] * r[..., None, :]

    def gradient(self, e, g):
        d, r = e.inputs
        return _outer_gradients(d, r, g, e.needs)


def _outer_gradients(d, r, g, needs):
    """Cotangents of d and r for the outer product's cotangent g (..., i, k)."""
    gd = gr = None
    if needs[0]:  # sum over k of g * r
        gd = unbroadcast(matmul(g, expand_dims(r, -1))[..., 0], d.shape)
    if needs[1]:  # sum over i of g * d
        gr = unbroadcast(matmul(expand_dims(d, -2), g)[..., 0, :], r.shape)
    return gd, gr


@register
class OuterRowsScaled(Op):
    """OuterRows(d, r) * m in one pass: m broadcasts against the (..., i, k) result. The
    structured rule of "outer product times a factor" (an activation gradient)."""
    jvp = multilinear
    samples = (Sample(lambda d, r, m: apply(OuterRowsScaled, d, r, m), Arg.float(3, "n"),
                      Arg.float(3, 4), Arg.float("n", 4)),
               Sample(lambda d, r, m: apply(OuterRowsScaled, d, r, m), Arg.float(2, 3),
                      Arg.float(2, 2), Arg.float(2)))

    def forward(self, d, r, m):
        fast = kernels.outer_rows_scaled(d, r, m)
        if fast is not None:
            return fast
        out = d[..., :, None] * r[..., None, :]
        if np.broadcast_shapes(out.shape, m.shape) == out.shape and \
                np.result_type(out, m) == out.dtype:
            out *= m  # in place on our own temporary
            return out
        return out * m

    def gradient(self, e, g):
        d, r, m = e.inputs
        gd = gr = gm = None
        if e.needs[0] or e.needs[1]:  # through OuterRows with the cotangent g * m
            gd, gr = _outer_gradients(d, r, g * m, e.needs)
        if e.needs[2]:
            gm = unbroadcast(g * apply(OuterRows, d, r), m.shape)
        return gd, gr, gm

    def converter(self, cx, d, r, m):
        # per iteration d (..., i), r (..., k), m broadcasting against (..., i, k): give
        # stacked inputs size-1 axes after the loop axis until the batch axes line up
        sd, sr, sm = cx.stacked
        lead = max(d.ndim - sd - 1, r.ndim - sr - 1, m.ndim - sm - 2, 0)
        args = []
        for x, s, own in ((d, sd, 1), (r, sr, 1), (m, sm, 2)):
            pad = lead + own - (x.ndim - 1) if s else 0
            if pad > 0:
                x = reshape(x, (x.shape[0],) + (1,) * pad + x.shape[1:])
            args.append(x)
        return apply(self, *args)


# -- one_hot -----------------------------------------------------------------------------
@register
class OneHot(Op):
    samples = (Sample("one_hot", Arg.int(2, "n", hi=4), 4),
               Sample("one_hot", Arg.int("n", hi=3), 3, axis=0, on_value=2.0, off_value=-1.0),
               # indices outside [0, depth) give all off_value
               Sample("one_hot", Arg.int(lo=-1, hi=5), 4, dtype=np.int32),
               Sample("one_hot", Arg.int(2, "n", lo=-1, hi=5), 3, axis=0))
    differentiable = False

    def forward(self, indices, depth, axis, on_value, off_value, dtype):
        hit = indices[..., None] == np.arange(depth)
        out = np.where(hit, np.asarray(on_value, dtype), np.asarray(off_value, dtype))
        return np.moveaxis(out, -1, axis) if axis != indices.ndim else out

    def stacked_forward(self, cx, indices, depth, axis, on_value, off_value, dtype):
        loop = cx.loop
        if indices is not loop.index._plain or (
                structured.ENABLED and cx.iters * depth >= structured.MIN_DENSE_SIZE):
            return None  # not the loop index, or seeds that stay structured (converter)
        # the loop's own index offset..offset+iters-1 (a jacfwd's seeds): the rows of a
        # shifted identity, without comparing every index against every position
        if on_value == 1 and off_value == 0:
            return structured.seed_rows(cx.iters, depth, loop.offset, np.dtype(dtype))
        hot = np.eye(cx.iters, depth, k=loop.offset, dtype=bool)
        return np.where(hot, np.asarray(on_value, dtype), np.asarray(off_value, dtype))

    def converter(self, cx, indices, depth, axis, on_value, off_value, dtype):
        if (structured.ENABLED and indices.ndim == 1 and type(indices) is Tensor
                and off_value == 0 and depth > 0
                and cx.iters * depth >= structured.MIN_DENSE_SIZE):
            # one scalar index per iteration: keep the one-hot rows structured (Jacobian
            # seeds), so that backward ops can avoid dense (iters, depth) work
            value_read(indices, "internal")
            idx = indices._value
            valid = (idx >= 0) & (idx < depth)
            d = Tensor(np.where(valid, np.asarray(on_value, dtype), np.zeros((), dtype)))
            return OneHotStacked(d, np.where(valid, idx, 0), (depth,), cx.loop)
        rows = self.stacked_forward(cx, indices, depth, axis, on_value, off_value, dtype)
        if rows is not None:
            return Tensor(rows)
        return apply(self, indices, depth=depth, axis=axis + 1, on_value=on_value,
                     off_value=off_value, dtype=dtype)


def one_hot(indices, depth, on_value=None, off_value=None, axis=None, dtype=None, name=None):
    """One-hot vectors of length `depth` (indices outside [0, depth) give all off_value).

    Output shape: indices.shape with `depth` inserted at `axis` (default: last).
    dtype defaults to float64.
    """
    indices = to_input(indices, fn="one_hot", arg="indices")
    if indices.dtype.kind not in "iu":
        raise TypeError(f"one_hot: indices must be integers, got dtype {indices.dtype}")
    depth = as_int(depth, "one_hot", "depth", minimum=0)
    dtype = as_dtype(np.float64 if dtype is None else dtype, "one_hot")
    ax = normalize_axis(-1 if axis is None else axis, indices.ndim + 1, "one_hot")
    values = {}
    for arg, v, default in (("on_value", on_value, 1), ("off_value", off_value, 0)):
        v = default if v is None else v
        if isinstance(v, Tensor):
            value_read(v, "internal")
        arr = np.asarray(v._value if isinstance(v, Tensor) else v)
        if arr.ndim or arr.dtype.kind not in "biufc" or (
                arr.dtype.kind == "c" and dtype.kind != "c"):
            raise TypeError(f"one_hot: {arg} must be a numeric scalar that fits dtype "
                            f"{dtype}, got {v!r}")
        values[arg] = arr.item()
    return apply(OneHot, indices, depth=depth, axis=ax, dtype=dtype, **values)


# -- batch_jacobian seeds ----------------------------------------------------------------
@register
class BatchJacobianSeed(Op):
    """Seed of batch_jacobian iteration j, shape (batch, n): column j of every example
    for j < n; for j == n and j == n + 1 (the interaction probes) example 0 and the last
    example only, weighted by `probe` (n,); zero otherwise. Under pfor the columns stay
    structured (one-hot over the n columns, dense over the batch) where that saves work;
    see vectorize/structured.py."""
    differentiable = False
    samples = (Sample(lambda j: apply(BatchJacobianSeed, j, batch=3, n=2,
                                      probe=np.array([0.5, 1.5]), dtype=np.dtype("float64")),
                      Arg.int(hi=4)),
               Sample(lambda j: apply(BatchJacobianSeed, j, batch=2, n=3,
                                      probe=np.array([0.0, 1.0, 0.0]),
                                      dtype=np.dtype("float32")),
                      Arg.int("n", hi=5)))

    def forward(self, j, batch, n, probe, dtype):
        j = np.asarray(j)
        hit = (j[..., None] == np.arange(n)).astype(dtype)[..., None, :]  # (..., 1, n)
        out = np.array(np.broadcast_to(hit, j.shape + (batch, n)))
        out[..., 0, :] += (j == n)[..., None] * probe.astype(dtype)
        out[..., -1, :] += (j == n + 1)[..., None] * probe.astype(dtype)
        return out

    def converter(self, cx, j, batch, n, probe, dtype):
        hot = np.flatnonzero(probe)
        if (j.ndim == 1 and type(j) is Tensor and len(hot) <= 1
                and structured.worth_structuring(cx.iters, batch * n)):
            col = int(hot[0]) if len(hot) else 0
            weight = float(probe[col]) if len(hot) else 0.0
            if cx.is_loop_index(j):  # 0..iters-1: the same constants on every call
                d, pos = _column_seeds(cx.iters, batch, n, col, weight, dtype)
            else:
                value_read(j, "internal")
                d, pos = _column_seeds.__wrapped__(j._value, batch, n, col, weight, dtype)
            return structured.OneHotStacked(Tensor(d), pos, (batch, n), cx.loop, lead=1)
        return apply(self, j, batch=batch, n=n, probe=probe, dtype=dtype)


@functools.lru_cache(maxsize=16)
def _column_seeds(idx, batch, n, col, weight, dtype):
    """d (iters, batch) and pos (iters,) of the structured seeds for loop indices `idx`
    (an int: range(idx)): iteration k is d[k] spread over the batch in column pos[k].
    Cached, read-only, for the loop index: the same constants on every call."""
    idx = np.arange(idx) if isinstance(idx, int) else np.asarray(idx)
    inside = (idx >= 0) & (idx < n)
    d = np.zeros((len(idx), batch), dtype)
    d[inside] = 1
    d[idx == n, 0] = weight
    d[idx == n + 1, batch - 1] += weight
    pos = np.where((idx == n) | (idx == n + 1), col, np.where(inside, idx, 0))
    d.flags.writeable = pos.flags.writeable = False
    return d, pos

lib.publish(globals(), __all__ + ['scatter_rows'])
