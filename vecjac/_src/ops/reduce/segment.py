"""TF's segment reductions (tf.math.segment_* and unsorted_segment_*), in vj.math.

unsorted_segment_sum is the scatter-add of gather's gradient (GatherGrad), so its
gradient is a gather; mean and sqrt_n divide it by the segment sizes. Two op blocks,
UnsortedSegmentMax / Min: the gradient is shared equally among a segment's tied extreme
elements (as reduce_max). unsorted_segment_prod gathers each segment into a row padded
with ones and takes reduce_prod (exact gradients where data has zeros). The sorted
segment_* functions check that the ids are sorted and take num_segments = ids[-1] + 1.
Negative ids are dropped; ids >= num_segments raise ValueError (as TF). bincount is a
segment sum of its weights (differentiable in them).
"""
import numpy as np

from vecjac._src.core.arguments import read_ints as _read_ints
from vecjac._src.core.arguments import real_input as _real
from vecjac._src.core.context import value_read
from vecjac._src.core.dispatch import apply, to_input
from vecjac._src.core.registry import Op, lib, register
from vecjac._src.core.samples import Arg, Sample
from vecjac._src.core.shapes import as_bool, as_dtype, as_int
from vecjac._src.core.tensor import Tensor
from vecjac._src.ops.array.creation import fill, ones, ones_like, zeros_like
from vecjac._src.ops.array.indexing import GatherGrad, GatherV2, gather
from vecjac._src.ops.array.shaping import concat, expand_dims, reshape, transpose
from vecjac._src.ops.elementwise.extrema import maximum
from vecjac._src.ops.elementwise.logic import cast, equal, greater, greater_equal, less, where
from vecjac._src.ops.elementwise.unary import sqrt
from vecjac._src.ops.reduce.reductions import reduce_prod
from vecjac._src.transforms.sparsity import patterns

__all__ = ["unsorted_segment_sum", "unsorted_segment_mean", "unsorted_segment_sqrt_n",
           "unsorted_segment_max", "unsorted_segment_min", "unsorted_segment_prod",
           "segment_sum", "segment_mean", "segment_max", "segment_min", "segment_prod",
           "bincount"]


def _segment_args(data, segment_ids, num_segments, fn):
    d = _real(data, fn, "data")
    ids = to_input(segment_ids, (), fn, "segment_ids")
    if ids.dtype.kind not in "iu":
        raise TypeError(f"{fn}: segment_ids must be an integer tensor, got dtype {ids.dtype}")
    if d.shape[:ids.ndim] != ids.shape:
        raise ValueError(f"{fn}: segment_ids' shape {ids.shape} must be a prefix of data's "
                         f"shape {d.shape}")
    n = as_int(num_segments, fn, "num_segments", 0)
    value_read(ids, "internal", lambda v: not v.size or bool(v.max() < n))
    if ids.size and int(ids._value.max()) >= n:
        raise ValueError(f"{fn}: segment_ids has {int(ids._value.max())}, out of range "
                         f"[0, num_segments={n}) (negative ids are dropped)")
    return d, ids, n


def _dropped_last(ids, n):
    """Negative (dropped) ids -> n, one past the last segment."""
    return where(less(ids, 0), cast(fill((), n), ids.dtype), ids)


def _segment_sum(data, ids, n):
    shape = (n + 1,) + data.shape[ids.ndim:]
    out = apply(GatherGrad, data, _dropped_last(ids, n), shape=shape, axis=0, batch_dims=0)
    return out[:n]


def _gather_segments(t, ids):
    """t[ids] (rows of a (n, ...) segment result), 0 where ids < 0."""
    valid = cast(greater_equal(ids, 0), t.dtype)
    rows = apply(GatherV2, t, maximum(ids, 0), axis=0, batch_dims=0)
    return rows * reshape(valid, ids.shape + (1,) * (t.ndim - 1))


def unsorted_segment_sum(data, segment_ids, num_segments, name=None):
    """out[i] = sum of data[j] over the j with segment_ids[j] == i (negative ids are
    dropped). segment_ids' shape is a prefix of data's; out: (num_segments,) + the rest."""
    d, ids, n = _segment_args(data, segment_ids, num_segments, "unsorted_segment_sum")
    return _segment_sum(d, ids, n)


def _segment_count(d, ids, n):
    ones = ones_like(ids, dtype=d.dtype)
    count = _segment_sum(ones, ids, n)
    return reshape(maximum(count, 1), (n,) + (1,) * (d.ndim - ids.ndim))


def unsorted_segment_mean(data, segment_ids, num_segments, name=None):
    """The mean of each segment (0 for an empty one)."""
    d, ids, n = _segment_args(data, segment_ids, num_segments, "unsorted_segment_mean")
    return _segment_sum(d, ids, n) / _segment_count(d, ids, n)


def unsorted_segment_sqrt_n(data, segment_ids, num_segments, name=None):
    """The sum of each segment divided by sqrt(its size) (0 for an empty one)."""
    d, ids, n = _segment_args(data, segment_ids, num_segments, "unsorted_segment_sqrt_n")
    return _segment_sum(d, ids, n) / sqrt(_segment_count(d, ids, n))


def _segment_destinations(numbers, ids, num_segments):
    """Where each element of data goes (the adjoint of gathering the output's element
    `numbers` at the ids): its segment's element, -1 for a dropped id."""
    dropped = (ids < 0).reshape(ids.shape + (1,) * (numbers.ndim - 1))
    return np.where(dropped, -1, numbers[np.where(ids < 0, 0, ids)])


class _SegmentExtremum(Op):
    """out[i] = max (min) of data[j] over segment_ids[j] == i; ids < 0 dropped."""
    ufunc = None
    pattern = patterns.scatter(_segment_destinations)  # a segment: its rows' union

    def empty(self, dtype):
        raise NotImplementedError

    def forward(self, data, ids, num_segments):
        rest = data.shape[ids.ndim:]
        out = np.full((num_segments + 1,) + rest, self.empty(data.dtype), data.dtype)
        flat = ids.reshape(-1)
        self.ufunc.at(out, np.where(flat < 0, num_segments, flat),
                      data.reshape((flat.size,) + rest))
        return out[:num_segments]

    def converter(self, cx, data, ids, num_segments):
        sd, si = cx.stacked
        if not si:  # loop axis after the segmented ones: (ids..., N, rest...)
            k = ids.ndim
            perm = tuple(range(1, k + 1)) + (0,) + tuple(range(k + 1, data.ndim))
            out = apply(self, transpose(data, perm), ids, num_segments=num_segments)
            return transpose(out, (1, 0) + tuple(range(2, out.ndim)))
        if not sd:
            data = cx.stack(data)
        iters = ids.shape[0]
        offsets = np.arange(iters, dtype=ids.dtype).reshape((iters,) + (1,) * (ids.ndim - 1))
        ids = where(less(ids, 0), ids, ids + offsets * num_segments)
        out = apply(self, data, ids, num_segments=iters * num_segments)
        return reshape(out, (iters, num_segments) + out.shape[1:])

    def gradient(self, e, g):
        # shared equally among the tied extreme elements of a segment (as TF, reduce_max)
        data, ids = e.inputs
        hit = cast(equal(data, _gather_segments(e.outputs[0], ids)), g.dtype)
        hit = hit * _gather_segments(ones_like(g), ids)  # dropped ids: no gradient
        count = _segment_sum(hit, ids, e.attrs["num_segments"])
        return _gather_segments(g / maximum(count, 1), ids) * hit, None


@register
class UnsortedSegmentMax(_SegmentExtremum):
    ufunc = np.maximum
    # ids: drawn ones (some dropped), then 0..k-1: no empty segment (whose lowest value
    # differs between float32 and float64)
    samples = (Sample(lambda d, i: unsorted_segment_max(d, concat([i, np.arange(3)], 0), 3),
                      Arg.float(7, "n"), Arg.int(4, lo=-1, hi=3)),)

    def empty(self, dtype):
        return np.finfo(dtype).min if dtype.kind == "f" else np.iinfo(dtype).min


@register
class UnsortedSegmentMin(_SegmentExtremum):
    ufunc = np.minimum
    samples = (Sample(lambda d, i: unsorted_segment_min(d, concat([i, np.arange(2)], 0), 2),
                      Arg.float(5), Arg.int(3, lo=-1, hi=2)),)

    def empty(self, dtype):
        return np.finfo(dtype).max if dtype.kind == "f" else np.iinfo(dtype).max


def unsorted_segment_max(data, segment_ids, num_segments, name=None):
    """The maximum of each segment (the dtype's lowest value for an empty one)."""
    d, ids, n = _segment_args(data, segment_ids, num_segments, "unsorted_segment_max")
    return apply(UnsortedSegmentMax, d, ids, num_segments=n)


def unsorted_segment_min(data, segment_ids, num_segments, name=None):
    """The minimum of each segment (the dtype's largest value for an empty one)."""
    d, ids, n = _segment_args(data, segment_ids, num_segments, "unsorted_segment_min")
    return apply(UnsortedSegmentMin, d, ids, num_segments=n)


def unsorted_segment_prod(data, segment_ids, num_segments, name=None):
    """The product of each segment (1 for an empty one). The segments are gathered into
    rows padded with ones, then reduce_prod: its gradient is exact where data has zeros,
    to any order. Loop-variant segment_ids (inside pfor) have no one index table: each
    segment's product is then taken over all rows, the others replaced by ones."""
    d, ids, n = _segment_args(data, segment_ids, num_segments, "unsorted_segment_prod")
    if ids._pfor is not None:
        return _masked_segment_prod(d, ids, n)
    value_read(ids, "internal")
    v = np.asarray(ids._value).reshape(-1)
    m, rest = v.size, d.shape[ids.ndim:]
    kept = np.flatnonzero(v >= 0)
    order = kept[np.argsort(v[kept], kind="stable")]
    counts = np.bincount(v[kept], minlength=n)
    starts = np.cumsum(counts) - counts
    index = np.full((n, int(counts.max(initial=0))), m)  # m: a row of ones
    index[v[order], np.arange(order.size) - starts[v[order]]] = order
    rows = concat([reshape(d, (m,) + rest), ones((1,) + rest, dtype=d.dtype)], 0)
    return reduce_prod(gather(rows, index), axis=1)


def _masked_segment_prod(d, ids, n):
    """prod over j of where(ids[j] == s, d[j], 1) for each segment s: (n, m, ...) values,
    every op vectorized, where the index table would differ per iteration."""
    m, rest = int(np.prod(ids.shape)), d.shape[ids.ndim:]
    flat = reshape(cast(ids, np.int64), (1, m) + (1,) * len(rest))
    segments = Tensor(np.arange(n, dtype=np.int64).reshape((n, 1) + (1,) * len(rest)))
    rows = expand_dims(reshape(d, (m,) + rest), 0)
    picked = where(equal(flat, segments), rows, ones_like(rows))
    return reduce_prod(picked, axis=1)


def _sorted_segment(fn, unsorted, empty_is_zero=False):
    """segment_<op>(data, segment_ids): 1-d sorted non-negative ids, num_segments =
    ids[-1] + 1; an empty segment gives 0 (prod: 1)."""
    def segment(data, segment_ids, name=None):
        ids = to_input(segment_ids, (), fn, "segment_ids")
        v = _read_ints(ids, fn, "segment_ids").astype(np.int64)  # uint8 diffs wrap
        d = _real(data, fn, "data")
        if ids.ndim != 1 or d.ndim == 0 or d.shape[0] != ids.shape[0]:
            raise ValueError(f"{fn}: segment_ids must be 1-d with data's first dimension, "
                             f"got shapes {ids.shape} and {d.shape}")
        if v.size and (v[0] < 0 or np.any(np.diff(v) < 0)):
            raise ValueError(f"{fn}: segment_ids must be sorted and non-negative")
        n = int(v[-1]) + 1 if v.size else 0
        out = unsorted(d, ids, n)
        empty = np.bincount(v, minlength=n) == 0
        if empty_is_zero and empty.any():  # TF's sorted max / min: 0, not the lowest value
            out = where(empty.reshape((n,) + (1,) * (out.ndim - 1)), zeros_like(out),
                            out)
        return out
    segment.__name__ = segment.__qualname__ = fn
    segment.__doc__ = (f"unsorted_{fn}(data, segment_ids, segment_ids[-1] + 1) for sorted "
                       f"non-negative segment_ids; an empty segment gives {int(fn[-4:] == 'prod')}.")
    return segment


segment_sum = _sorted_segment("segment_sum", unsorted_segment_sum)
segment_mean = _sorted_segment("segment_mean", unsorted_segment_mean)
segment_max = _sorted_segment("segment_max", unsorted_segment_max, True)
segment_min = _sorted_segment("segment_min", unsorted_segment_min, True)
segment_prod = _sorted_segment("segment_prod", unsorted_segment_prod)



# -- bincount: a segment sum of weights -------------------------------------------------
def bincount(arr, weights=None, minlength=None, maxlength=None, dtype=np.int32, name=None,
             axis=None, binary_output=False):
    """Counts (or summed weights) of each value of the non-negative ints `arr`; the
    length is max(arr) + 1, at least minlength, at most maxlength (larger values are
    dropped). axis=-1: per row of a 2-d arr. Differentiable in weights."""
    fn = "bincount"
    a = to_input(arr, (), fn, "arr")
    v = _read_ints(a, fn, "arr")
    if axis is not None and not (type(axis) is int and axis in (0, -1)):
        raise ValueError(f"{fn}: axis must be None, 0 or -1, got {axis!r}")
    if axis == -1 and a.ndim != 2:
        raise ValueError(f"{fn}: axis=-1 needs a 2-d arr, got shape {a.shape}")
    if v.size and v.min() < 0:
        raise ValueError(f"{fn}: arr must be non-negative, got {v.min()}")
    binary = as_bool(binary_output, fn, "binary_output")
    length = int(v.max()) + 1 if v.size else 0
    if minlength is not None:
        length = max(length, as_int(minlength, fn, "minlength", 0))
    if maxlength is not None:
        length = min(length, as_int(maxlength, fn, "maxlength", 0))
    if weights is None:
        w = ones_like(a, dtype=as_dtype(dtype, fn, kinds="iuf"))
    else:
        w = _real(weights, fn, "weights")
        if w.shape != a.shape:
            raise ValueError(f"{fn}: weights must have arr's shape {a.shape}, got {w.shape}")
    ids = where(less(a, length), a, -1)  # values past maxlength are dropped
    if axis == -1:  # row r, value k -> segment r * length + k
        rows = np.arange(a.shape[0]).reshape(-1, 1) * length
        ids = where(less(ids, 0), -1, ids + rows)
        out = reshape(unsorted_segment_sum(w, ids, a.shape[0] * length), (a.shape[0], length))
    else:
        out = unsorted_segment_sum(reshape(w, (-1,)), reshape(ids, (-1,)), length)
    if binary:
        return cast(greater(out, 0), out.dtype)
    return out


lib.publish(globals(), __all__)
