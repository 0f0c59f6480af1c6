"""TF's sparse segment reductions (tf.math.sparse_segment_sum / _mean / _sqrt_n), in
vj.math: output[s] = the sum (mean, sum / sqrt(count)) of data[indices[i]] over the i
with segment_ids[i] == s.

Composites of two op blocks: GatherV2 picks the rows data[indices], GatherGrad (the
scatter-add that unsorted_segment_sum is made of) adds them into their segments; mean
and sqrt_n divide by the segment sizes, counted the same way and raised to at least 1,
so that an empty segment gives 0 as in TF. Their rules give the gradient with respect
to data (the cotangent gathered back to each picked row, scatter-added into data's
shape), forward mode, every higher order, and pfor with loop-variant data, indices and
segment ids (one more batch dimension of the gather and the scatter).

The checks are those of TF's CPU kernels (ValueError where TF raises
InvalidArgumentError), run on the values before any op: indices in [0, data.shape[0]),
segment_ids sorted and >= 0, and < num_segments when it is given. Without num_segments
the output has segment_ids[-1] + 1 rows: a shape read from the ids, which therefore
cannot vary over a pfor loop (pass num_segments for loop-variant ids).
"""
import functools

import numpy as np

from vecjac._src.core.arguments import real_input as _real
from vecjac._src.core.context import value_read
from vecjac._src.core.dispatch import apply, to_input
from vecjac._src.core.registry import lib
from vecjac._src.core.shapes import as_int
from vecjac._src.ops.array.creation import ones_like
from vecjac._src.ops.array.indexing import GatherGrad, GatherV2
from vecjac._src.ops.array.shaping import reshape
from vecjac._src.ops.elementwise.extrema import maximum
from vecjac._src.ops.elementwise.unary import sqrt

__all__ = ["sparse_segment_sum", "sparse_segment_mean", "sparse_segment_sqrt_n"]

_ID_DTYPES = (np.dtype(np.int32), np.dtype(np.int64))  # TF's Tidx / Tsegmentids


def _index_vector(value, fn, arg):
    t = to_input(value, (), fn, arg)
    if t.dtype not in _ID_DTYPES:
        raise TypeError(f"{fn}: {arg} must be an int32 or int64 tensor, got dtype {t.dtype}")
    if t.ndim != 1:
        raise ValueError(f"{fn}: {arg} must be a 1-D vector, got shape {t.shape}")
    return t


def _in_range(size, v):
    return not v.size or bool(v.min() >= 0 and v.max() < size)


def _valid_ids(num_segments, v):
    """Sorted along the last axis (each iteration's ids inside pfor), >= 0 and, for a
    given num_segments, below it."""
    if not v.size:
        return True
    below = num_segments is None or bool(v.max() < num_segments)
    return bool(v.min() >= 0) and below and not bool((np.diff(v, axis=-1) < 0).any())


def _segment_count(v):
    """(rows of the output, whether the ids are valid): the plan-capture guard when
    num_segments is None, where the output shape depends on the last id."""
    return (int(v[-1]) + 1 if v.size else 0), _valid_ids(None, v)


def _check(data, indices, segment_ids, num_segments, fn, kinds):
    """(data, indices, segment_ids, number of output rows), every argument checked."""
    d = _real(data, fn, "data", kinds=kinds)
    if d.ndim == 0:
        raise ValueError(f"{fn}: data must have rank >= 1 (rows, ...), got a scalar")
    idx = _index_vector(indices, fn, "indices")
    ids = _index_vector(segment_ids, fn, "segment_ids")
    if idx.shape != ids.shape:
        raise ValueError(f"{fn}: indices and segment_ids must have the same length, got "
                         f"shapes {idx.shape} and {ids.shape}")
    rows = d.shape[0]
    value_read(idx, "internal", functools.partial(_in_range, rows))
    iv = np.asarray(idx._value)
    if not _in_range(rows, iv):
        bad = iv[(iv < 0) | (iv >= rows)].reshape(-1)[0]
        raise ValueError(f"{fn}: indices has {bad}, out of range [0, {rows}) of data's "
                         f"first dimension (data shape {d.shape})")
    if num_segments is None:
        if getattr(ids, "_pfor", None) is not None:
            raise ValueError(f"{fn}: segment_ids cannot vary over a pfor loop when "
                             f"num_segments is None (the number of output rows, "
                             f"segment_ids[-1] + 1, would vary): pass num_segments")
        value_read(ids, "internal", _segment_count)
        n = None
    else:
        n = as_int(num_segments, fn, "num_segments", 0)
        value_read(ids, "internal", functools.partial(_valid_ids, n))
    sv = np.asarray(ids._value)
    if sv.size and sv.min() < 0:
        raise ValueError(f"{fn}: segment_ids must be >= 0, got {sv.min()}")
    if (np.diff(sv, axis=-1) < 0).any():
        raise ValueError(f"{fn}: segment_ids must be sorted (non-decreasing), got "
                         f"{np.array2string(sv, threshold=20)}")
    if n is None:
        n = int(sv[-1]) + 1 if sv.size else 0
    elif sv.size and sv.max() >= n:
        raise ValueError(f"{fn}: segment_ids has {sv.max()}, out of range [0, "
                         f"num_segments={n})")
    return d, idx, ids, n


def _segment_sums(d, idx, ids, n):
    picked = apply(GatherV2, d, idx, axis=0, batch_dims=0)
    return apply(GatherGrad, picked, ids, shape=(n,) + d.shape[1:], axis=0, batch_dims=0)


def _sizes(d, ids, n):
    """Each segment's size, at least 1 (an empty segment's sum is 0, and 0 / 1 = 0),
    shaped to divide the (n, ...) sums."""
    ones = ones_like(ids, dtype=d.dtype)
    count = apply(GatherGrad, ones, ids, shape=(n,), axis=0, batch_dims=0)
    return reshape(maximum(count, 1), (n,) + (1,) * (d.ndim - 1))


def sparse_segment_sum(data, indices, segment_ids, num_segments=None, name=None):
    """output[s] = sum of data[indices[i]] over the i with segment_ids[i] == s
    (TF's tf.math.sparse_segment_sum). indices, segment_ids: int vectors of one length,
    segment_ids sorted; output: (num_segments or segment_ids[-1] + 1,) + data.shape[1:],
    0 for a segment without ids.

    >>> c = vj.constant([[1, 2, 3, 4], [-1, -2, -3, -4], [5, 6, 7, 8]])
    >>> vj.math.sparse_segment_sum(c, [0, 1], [0, 2], num_segments=4).numpy()
    array([[ 1,  2,  3,  4],
           [ 0,  0,  0,  0],
           [-1, -2, -3, -4],
           [ 0,  0,  0,  0]])
    """
    fn = "sparse_segment_sum"
    d, idx, ids, n = _check(data, indices, segment_ids, num_segments, fn, "iuf")
    return _segment_sums(d, idx, ids, n)


def sparse_segment_mean(data, indices, segment_ids, num_segments=None, name=None):
    """The mean of each segment of the rows data[indices] (0 for an empty segment; TF's
    tf.math.sparse_segment_mean); shapes as sparse_segment_sum, float data only.

    >>> vj.math.sparse_segment_mean(vj.constant([[1.0, 2.0], [3.0, 6.0]]), [0, 1, 1],
    ...                             [0, 0, 2]).numpy()
    array([[2., 4.],
           [0., 0.],
           [3., 6.]])
    """
    fn = "sparse_segment_mean"
    d, idx, ids, n = _check(data, indices, segment_ids, num_segments, fn, "f")
    return _segment_sums(d, idx, ids, n) / _sizes(d, ids, n)


def sparse_segment_sqrt_n(data, indices, segment_ids, num_segments=None, name=None):
    """The sum of each segment of the rows data[indices] divided by sqrt(its size) (0 for
    an empty segment; TF's tf.math.sparse_segment_sqrt_n); shapes as sparse_segment_sum,
    float data only.

    >>> vj.math.sparse_segment_sqrt_n(vj.constant([[1.0], [3.0]]), [0, 0, 1, 1],
    ...                               [0, 0, 0, 0]).numpy()
    array([[4.]])
    """
    fn = "sparse_segment_sqrt_n"
    d, idx, ids, n = _check(data, indices, segment_ids, num_segments, fn, "f")
    return _segment_sums(d, idx, ids, n) / sqrt(_sizes(d, ids, n))


lib.publish(globals(), __all__)
