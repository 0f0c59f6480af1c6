"""Moving blocks of spatial data between axes (TF's tf.nn.space_to_depth / depth_to_space
and tf.space_to_batch_nd / batch_to_space, NHWC).

Each is a pad or crop around one reshape, transpose, reshape, as TF's documentation
describes them: composites of existing ops, so that tapes, forward mode, pfor (a stacked
input is one more leading axis of the reshapes) and the sparsity tracer need no rule of
their own, and every order of derivative comes free.
"""
import builtins
import math

import numpy as np

from vecjac._src.core.context import value_read
from vecjac._src.core.dispatch import to_input
from vecjac._src.core.registry import lib
from vecjac._src.core.shapes import as_int
from vecjac._src.core.tensor import Tensor
from vecjac._src.ops.array.indexing import getitem
from vecjac._src.ops.array.layout import pad
from vecjac._src.ops.array.shaping import reshape, transpose

__all__ = ["space_to_depth", "depth_to_space", "space_to_batch_nd", "space_to_batch",
           "batch_to_space"]


def _image(input, block_size, data_format, fn):
    """(input as a rank-4 NHWC Tensor, block_size as an int >= 2)."""
    if data_format != "NHWC":
        raise ValueError(f"{fn}: data_format must be 'NHWC' (NCHW is not supported: "
                         f"transpose to NHWC first), got {data_format!r}")
    b = as_int(block_size, fn, "block_size")
    if b < 2:
        raise ValueError(f"{fn}: block_size must be >= 2, got {b}")
    x = to_input(input, fn=fn, arg="input")
    if x.ndim != 4:
        raise ValueError(f"{fn}: input must have rank 4 (batch, height, width, channels), "
                         f"got shape {x.shape}")
    return x, b


def space_to_depth(input, block_size, data_format="NHWC", name=None):
    """Each block_size x block_size patch of the image moved into the channels: (n, h, w, c)
    -> (n, h / b, w / b, b * b * c), the channel index being (row in block, column in block,
    c) (TF's tf.nn.space_to_depth). h and w must be divisible by block_size >= 2.

    >>> vj.nn.space_to_depth(vj.constant([[[[1.0], [2.0]], [[3.0], [4.0]]]]), 2).numpy()
    array([[[[1., 2., 3., 4.]]]])
    """
    fn = "space_to_depth"
    x, b = _image(input, block_size, data_format, fn)
    n, h, w, c = x.shape
    if h % b or w % b:
        raise ValueError(f"{fn}: input height {h} and width {w} must be divisible by "
                         f"block_size {b} (input shape {x.shape})")
    y = transpose(reshape(x, (n, h // b, b, w // b, b, c)), (0, 1, 3, 2, 4, 5))
    return reshape(y, (n, h // b, w // b, b * b * c))


def depth_to_space(input, block_size, data_format="NHWC", name=None):
    """The inverse of space_to_depth: channels spread over block_size x block_size patches,
    (n, h, w, c) -> (n, h * b, w * b, c / (b * b)) (TF's tf.nn.depth_to_space). c must be
    divisible by block_size ** 2, block_size >= 2.

    >>> vj.nn.depth_to_space(vj.constant([[[[1.0, 2.0, 3.0, 4.0]]]]), 2).numpy()[0, ..., 0]
    array([[1., 2.],
           [3., 4.]])
    """
    fn = "depth_to_space"
    x, b = _image(input, block_size, data_format, fn)
    n, h, w, c = x.shape
    if c % (b * b):
        raise ValueError(f"{fn}: input depth {c} must be divisible by block_size ** 2 = "
                         f"{b * b} (input shape {x.shape})")
    y = transpose(reshape(x, (n, h, w, b, b, c // (b * b))), (0, 1, 3, 2, 4, 5))
    return reshape(y, (n, h * b, w * b, c // (b * b)))


# -- space_to_batch_nd, batch_to_space ------------------------------------------------------
def _constant_ints(value, fn, arg):
    """An int ndarray from a list / array / loop-invariant Tensor (TypeError otherwise)."""
    if getattr(value, "_pfor", None) is not None:
        raise ValueError(f"{fn}: {arg} cannot vary over a pfor loop")
    if isinstance(value, Tensor):
        value_read(value, "internal")
        value = value._value
    try:
        arr = np.asarray(value)
    except (TypeError, ValueError):
        raise TypeError(f"{fn}: {arg} must be ints, got {value!r}") from None
    if arr.size and arr.dtype.kind not in "iu":
        raise TypeError(f"{fn}: {arg} must be ints, got {value!r}")
    return arr.astype(np.int64)


def _block_shape(block_shape, fn):
    """A tuple of ints >= 1 (the M block sizes) from a 1-D list."""
    arr = _constant_ints(block_shape, fn, "block_shape")
    if arr.ndim != 1:
        raise ValueError(f"{fn}: block_shape must be a 1-D list of ints (one per spatial "
                         f"dimension), got {block_shape!r}")
    if (arr < 1).any():
        raise ValueError(f"{fn}: block_shape must be >= 1, got {arr.tolist()}")
    return tuple(int(v) for v in arr)


def _pairs(value, m, fn, arg):
    """((start, end), ...) of M pairs of ints >= 0 from an (M, 2) list."""
    arr = _constant_ints(value, fn, arg)
    if arr.shape != (m, 2) and not (m == 0 and arr.size == 0):
        raise ValueError(f"{fn}: {arg} must have shape (M, 2) = ({m}, 2), one [start, end] "
                         f"pair per entry of block_shape, got shape {arr.shape}")
    if (arr < 0).any():
        raise ValueError(f"{fn}: {arg} must be >= 0, got {arr.tolist()}")
    return tuple((int(s), int(e)) for s, e in arr.reshape(m, 2))


def _spatial_input(input, m, fn):
    x = to_input(input, fn=fn, arg="input")
    if x.ndim < 1 + m:
        raise ValueError(f"{fn}: input must have rank >= 1 + M = {1 + m} (batch, then the "
                         f"{m} spatial dimensions of block_shape), got shape {x.shape}")
    return x


def space_to_batch_nd(input, block_shape, paddings, name=None):
    """Spatial dimensions 1..M of `input` zero-padded by paddings[i] = [start, end], cut
    into blocks of block_shape, and the position within a block moved into the batch:
    (batch, s_1 ... s_M, rest...) -> (batch * prod(block_shape), (s_i + pads_i) / block_i
    ..., rest...), the block position being the major part of the new batch index
    (TF's tf.space_to_batch_nd). Each padded s_i must be divisible by block_shape[i].

    >>> vj.space_to_batch_nd(vj.constant([[[[1.0], [2.0]], [[3.0], [4.0]]]]), [2, 2],
    ...                      [[0, 0], [0, 0]]).numpy().reshape(-1)
    array([1., 2., 3., 4.])
    """
    return _space_to_batch(input, block_shape, paddings, "space_to_batch_nd")


def space_to_batch(input, block_shape, paddings, name=None):
    """TF2's tf.space_to_batch: the same as space_to_batch_nd.

    >>> vj.space_to_batch(vj.ones([1, 2, 2, 1]), [2, 2], [[0, 0], [0, 0]]).shape
    (4, 1, 1, 1)
    """
    return _space_to_batch(input, block_shape, paddings, "space_to_batch")


def _space_to_batch(input, block_shape, paddings, fn):
    block = _block_shape(block_shape, fn)
    m = len(block)
    x = _spatial_input(input, m, fn)
    pads = _pairs(paddings, m, fn, "paddings")
    padded = [x.shape[1 + i] + s + e for i, (s, e) in enumerate(pads)]
    for i, (size, b) in enumerate(zip(padded, block)):
        if size % b:
            raise ValueError(f"{fn}: spatial dimension {i} (input axis {i + 1}) padded to "
                             f"{size} is not divisible by block_shape[{i}] = {b} (input "
                             f"shape {x.shape}, paddings {list(map(list, pads))})")
    rest = x.shape[1 + m:]
    if any(s or e for s, e in pads):
        zero = Tensor(np.zeros((), x.dtype))  # pads with input's own dtype, bool included
        x = pad(x, ((0, 0),) + pads + ((0, 0),) * len(rest), constant_values=zero)
    grid = tuple(size // b for size, b in zip(padded, block))
    y = reshape(x, (x.shape[0],) + sum(zip(grid, block), ()) + rest)
    # (block_1 ... block_M, batch, grid_1 ... grid_M, rest...)
    perm = tuple(range(2, 2 * m + 1, 2)) + (0,) + tuple(range(1, 2 * m, 2)) + \
        tuple(range(2 * m + 1, y.ndim))
    y = transpose(y, perm)
    return reshape(y, (x.shape[0] * math.prod(block),) + grid + rest)


def batch_to_space(input, block_shape, crops, name=None):
    """The inverse of space_to_batch_nd: the batch split into block_shape + [batch], the
    blocks interleaved back into spatial dimensions 1..M, which are then cropped by
    crops[i] = [start, end] (TF2's tf.batch_to_space). An int block_shape b means [b, b].
    input's batch must be divisible by prod(block_shape); crop_start + crop_end <=
    block_shape[i] * input.shape[i + 1].

    >>> vj.batch_to_space(vj.constant([[[[1.0]]], [[[2.0]]], [[[3.0]]], [[[4.0]]]]), 2,
    ...                   [[0, 0], [0, 0]]).numpy()[0, ..., 0]
    array([[1., 2.],
           [3., 4.]])
    """
    fn = "batch_to_space"
    if isinstance(block_shape, (int, np.integer)) and not isinstance(block_shape, bool):
        block_shape = [block_shape, block_shape]  # TF 1.0's int, kept by TF2
    block = _block_shape(block_shape, fn)
    m = len(block)
    x = _spatial_input(input, m, fn)
    cuts = _pairs(crops, m, fn, "crops")
    count = math.prod(block)
    if x.shape[0] % count:
        raise ValueError(f"{fn}: input batch {x.shape[0]} is not divisible by "
                         f"prod(block_shape) = {count} (block_shape {list(block)}, input "
                         f"shape {x.shape})")
    full = [x.shape[1 + i] * b for i, b in enumerate(block)]
    for i, ((s, e), size) in enumerate(zip(cuts, full)):
        if s + e > size:
            raise ValueError(f"{fn}: crops[{i}] = {[s, e]} removes more than the {size} "
                             f"entries of spatial dimension {i} (input shape {x.shape}, "
                             f"block_shape {list(block)})")
    batch, rest = x.shape[0] // count, x.shape[1 + m:]
    y = reshape(x, block + (batch,) + x.shape[1:])
    # (batch, grid_1, block_1, ..., grid_M, block_M, rest...)
    perm = (m,) + sum(((m + 1 + i, i) for i in range(m)), ()) + \
        tuple(range(2 * m + 1, y.ndim))
    y = reshape(transpose(y, perm), (batch,) + tuple(full) + rest)
    if not any(s or e for s, e in cuts):
        return y
    key = (builtins.slice(None),) + tuple(builtins.slice(s, size - e)
                                          for (s, e), size in zip(cuts, full))
    return getitem(y, key)


lib.publish(globals(), __all__)
