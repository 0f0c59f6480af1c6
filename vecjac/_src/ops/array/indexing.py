"""Indexing: x[key] (strided slices, int and bool indices), gather, gather_nd,
one_hot (boolean_mask, where_indices and the scatters live in layout_ops.py).

Gather's gradient scatters back (GatherGrad), and both are written for `batch_dims`, so
that the converter can turn "both operands vary over the loop" into one more batch
dimension instead of a loop. Every multi-index lookup (gather_nd, x[i, j], scatters)
flattens the indexed axes into one and reuses that pair with a linear index.
"""
import functools
import math
import numbers

import numpy as np

from vecjac._src.core.context import value_read
from vecjac._src.core.dispatch import apply, to_input
from vecjac._src.core.registry import Op, lib, register
from vecjac._src.core.samples import Arg, Sample
from vecjac._src.core.shapes import check_basic_key, normalize_axis
from vecjac._src.core.tensor import Tensor
from vecjac._src.ops import kernels
from vecjac._src.ops.array.dynamic_slice import VaryingSlice, canonical_slice, varying_getitem
from vecjac._src.ops.array.shaping import reshape, transpose
from vecjac._src.ops.elementwise.arithmetic import add, multiply
from vecjac._src.ops.elementwise.logic import cast, less, where
from vecjac._src.ops.reduce.reductions import reduce_sum
from vecjac._src.transforms.forward.rules import linear
from vecjac._src.transforms.pfor import banded
from vecjac._src.transforms.sparsity import patterns

__all__ = ["gather", "gather_nd"]  # getitem is Tensor.__getitem__ (ops/operators.py)
# one_hot lives in onehot_ops.py (with the structured one-hot machinery)


# -- gather ------------------------------------------------------------------------------
def _moved_layout(shape, axis, batch_dims):
    """(nb, size of axis, pre..., post...) layout used by batched gather and scatter."""
    nb = int(math.prod(shape[:batch_dims]))
    rest = shape[batch_dims:]
    ax = axis - batch_dims
    return nb, ax, rest


def _batch_index(nb, index_ndim):
    return np.arange(nb).reshape((nb,) + (1,) * index_ndim)


def _gather_np(params, indices, axis, batch_dims):
    if batch_dims == 0:
        if params.flags.c_contiguous:
            return np.take(params, indices, axis=axis)
        # np.take copies a non-contiguous params whole first (a transposed weight in
        # every pfor chunk); fancy indexing reads only the rows it takes
        return params[(slice(None),) * axis + (indices,)]
    nb, ax, rest = _moved_layout(params.shape, axis, batch_dims)
    p = np.moveaxis(params.reshape((nb,) + rest), ax + 1, 1)
    ind = indices.reshape((nb,) + indices.shape[batch_dims:])
    n_idx, n_pre = ind.ndim - 1, ax
    out = p[_batch_index(nb, n_idx), ind]  # (nb, I..., pre..., post...)
    perm = ([0] + list(range(1 + n_idx, 1 + n_idx + n_pre)) + list(range(1, 1 + n_idx))
            + list(range(1 + n_idx + n_pre, out.ndim)))
    out = out.transpose(perm)
    return out.reshape(params.shape[:batch_dims] + out.shape[1:])


def _scatter_add_np(g, indices, shape, axis, batch_dims):
    """Adjoint of _gather_np: zeros of `shape` with g added at the gathered places."""
    nb, ax, rest = _moved_layout(shape, axis, batch_dims)
    moved = (nb, rest[ax]) + rest[:ax] + rest[ax + 1:]
    ind = indices.reshape((nb,) + indices.shape[batch_dims:])
    n_idx, n_pre = ind.ndim - 1, ax
    gg = g.reshape((nb,) + g.shape[batch_dims:])  # (nb, pre..., I..., post...)
    perm = ([0] + list(range(1 + n_pre, 1 + n_pre + n_idx)) + list(range(1, 1 + n_pre))
            + list(range(1 + n_pre + n_idx, gg.ndim)))
    gg = gg.transpose(perm)  # (nb, I..., pre..., post...)
    if g.dtype.kind == "f":
        size, r = moved[1], int(math.prod(moved[2:]))
        out = np.zeros((nb, size, r), dtype=g.dtype)
        m = int(math.prod(ind.shape[1:]))  # explicit: -1 fails on empty
        if kernels.scatter_add_rows(out, ind.reshape(nb, m), gg.reshape(nb, m, r)):
            return np.moveaxis(out.reshape(moved), 1, ax + 1).reshape(shape)
    if g.dtype.kind == "f" and g.size > 1024:
        # bincount over flat positions: 2-5x faster than np.add.at from ~1000 elements
        size, r = moved[1], int(math.prod(moved[2:]))
        lin = (np.arange(nb).reshape((nb,) + (1,) * n_idx) * size
               + np.where(ind < 0, ind + size, ind))
        flat = (lin.reshape(-1, 1) * r + np.arange(r)).reshape(-1)
        out = np.bincount(flat, weights=gg.reshape(-1), minlength=nb * size * r)
        out = out.astype(g.dtype, copy=False).reshape(moved)
    else:
        out = np.zeros(moved, dtype=g.dtype)
        np.add.at(out, (_batch_index(nb, n_idx), ind), gg)
    return np.moveaxis(out, 1, ax + 1).reshape(shape)


def _in_range(size, indices):
    return not indices.size or bool(indices.min() >= -size and indices.max() < size)


def _check_indices(indices, size, fn):
    if indices.size and (indices.min() < -size or indices.max() >= size):
        bad = indices[(indices < -size) | (indices >= size)].reshape(-1)[0]
        raise IndexError(f"{fn}: index {bad} is out of bounds for an axis of size {size} "
                         "(in indices)")


@register
class GatherV2(Op):
    complex_rules = True
    pattern = patterns.gather
    jvp = linear
    samples = (Sample("gather", Arg.float("n", 3), Arg.int(4, hi="n")),
               Sample("gather", Arg.float(2, "n", 3), Arg.int(2, 2, hi="n"), axis=1),
               Sample("gather", Arg.float(2, "n", 3), Arg.int(2, 4, hi="n"), axis=1, batch_dims=1),
               Sample("gather", Arg.float("n"), Arg.int(hi="n")),
               Sample("gather_nd", Arg.float("n", 3, 2), Arg.int(4, 2, hi="n")),
               Sample("getitem", Arg.float(3, "n"), (Arg.int(2, hi=3), slice(None, None, -1))))
    samples += (Sample("gather", Arg.float(3, "n"), Arg.int("m", hi=3), dim_range=(0, 3)),
                Sample("gather", Arg.float(3, "n"), Arg.int(2, 2, lo=-3, hi=3)),  # negative
                Sample("gather", Arg.float(2, 2, 3, "n"), Arg.int(2, 2, 3, hi="n"), axis=3,
                       batch_dims=2),
                Sample("gather_nd", Arg.float(2, "n", 3), Arg.int(2, 2, 1, hi="n"), batch_dims=1),
                Sample("gather_nd", Arg.float(3, "n"), Arg.int(2, 0, hi=3)))  # empty index tuples

    def forward(self, params, indices, axis, batch_dims):
        return _gather_np(params, indices, axis, batch_dims)

    def gradient(self, e, g):
        params, indices = e.inputs
        return (apply(GatherGrad, g, indices, shape=params.shape, axis=e.attrs["axis"],
                      batch_dims=e.attrs["batch_dims"]), None)

    def converter(self, cx, params, indices, axis, batch_dims):
        sp, si = cx.stacked
        if not sp:
            if cx.is_loop_index(indices) and axis == 0 and params.shape[0] == cx.iters:
                return params  # gather(x, i) over all i is x itself
            if batch_dims == 0:
                out = apply(self, params, indices, axis=axis, batch_dims=0)
                if axis == 0:
                    return out
                perm = (axis,) + tuple(range(axis)) + tuple(range(axis + 1, out.ndim))
                return transpose(out, perm)
            params = cx.stack(params)
        elif not si:
            if batch_dims == 0:
                return apply(self, params, indices, axis=axis + 1, batch_dims=0)
            indices = cx.stack(indices)
        return apply(self, params, indices, axis=axis + 1, batch_dims=batch_dims + 1)


def _gather_adjoint(numbers, indices, shape, axis, batch_dims):
    """Where each element of GatherGrad's input goes: the gather of the output's element
    numbers (GatherGrad is the adjoint of GatherV2)."""
    return _gather_np(numbers, indices, axis, batch_dims)


@register
class GatherGrad(Op):
    """Scatter-add of a gather's cotangent into zeros of the params' shape."""
    complex_rules = True  # linear (was a stray assignment in gather() since the complex work)
    pattern = patterns.scatter(_gather_adjoint)
    jvp = linear
    samples = (Sample("tensor_scatter_nd_add", Arg.float("n", 3), Arg.int(4, 1, hi="n"),
                      Arg.float(4, 3)),)  # repeated indices add up

    def forward(self, g, indices, shape, axis, batch_dims):
        return _scatter_add_np(g, indices, shape, axis, batch_dims)

    def gradient(self, e, gg):
        return apply(GatherV2, gg, e.inputs[1], axis=e.attrs["axis"],
                     batch_dims=e.attrs["batch_dims"]), None

    def converter(self, cx, g, indices, shape, axis, batch_dims):
        sg, si = cx.stacked
        n = cx.iters
        if not sg:
            g = cx.stack(g)
        if not si and batch_dims == 0:
            return apply(self, g, indices, shape=(n,) + shape, axis=axis + 1, batch_dims=0)
        if not si:
            indices = cx.stack(indices)
        return apply(self, g, indices, shape=(n,) + shape, axis=axis + 1,
                     batch_dims=batch_dims + 1)


def gather(params, indices, validate_indices=None, axis=None, batch_dims=0, name=None):
    """Slices of `params` along `axis` at `indices` (TF's gather).

    Output shape: params.shape[:axis] + indices.shape[batch_dims:] + params.shape[axis+1:].
    """
    params = to_input(params, fn="gather", arg="params")
    indices = to_input(indices, fn="gather", arg="indices")
    if indices.dtype.kind not in "iu":
        raise TypeError(f"gather: indices must be integers, got dtype {indices.dtype}")
    if params.ndim == 0:
        raise ValueError("gather: params must have rank >= 1, got a scalar")
    if not isinstance(batch_dims, numbers.Integral) or isinstance(batch_dims, bool):
        raise TypeError(f"gather: batch_dims must be an int, got {batch_dims!r}")
    if batch_dims < 0:
        batch_dims += indices.ndim
    if not 0 <= batch_dims <= indices.ndim or batch_dims >= params.ndim:
        raise ValueError(f"gather: batch_dims={batch_dims} must be in [0, rank(indices)="
                         f"{indices.ndim}] and less than rank(params)={params.ndim}")
    ax = normalize_axis(batch_dims if axis is None else axis, params.ndim, "gather")
    if ax < batch_dims:
        raise ValueError(f"gather: axis={ax} must be >= batch_dims={batch_dims}")
    if params.shape[:batch_dims] != indices.shape[:batch_dims]:
        raise ValueError(f"gather: the first batch_dims={batch_dims} dimensions of params "
                         f"{params.shape} and indices {indices.shape} must be equal")
    value_read(indices, "internal", functools.partial(_in_range, params.shape[ax]))
    _check_indices(indices._value, params.shape[ax], "gather")
    return apply(GatherV2, params, indices, axis=ax, batch_dims=batch_dims)


# -- x[key] ------------------------------------------------------------------------------
@register
class StridedSlice(Op):
    complex_rules = True
    fusible_layout = True
    pattern = patterns.layout
    jvp = linear
    samples = (Sample("getitem", Arg.float(4, "n"), (slice(1, None, 2), 0)),
               Sample("getitem", Arg.float(4, "n", 2), (slice(None, None, -1), Ellipsis, None, 1)),
               Sample("strided_slice", Arg.float(4, 3), [0, 1], [4, 3], [2, 1]),
               Sample("slice", Arg.float(4, "n"), [1, 0], [2, -1]),
               Sample("getitem", Arg.float(3, "n"), (slice(10, 20),)))  # an empty result
    structured = banded.leading_slice

    def forward(self, x, key):
        return x[key]

    def gradient(self, e, g):
        return apply(StridedSliceGrad, g, shape=e.inputs[0].shape, key=e.attrs["key"])

    def array_gradient(self, e, g):  # the rule on arrays (op_block.md): x[i] of small code
        key = e.attrs["key"]
        for k in key:  # a Tensor in the key (an index array) takes the rule
            if isinstance(k, Tensor):
                return NotImplemented
        return (StridedSliceGrad.forward(g, e.inputs[0].shape, key),)

    def stacked_attrs(self, key):
        return {"key": (slice(None),) + key}

    def converter(self, cx, x, key):
        return apply(self, x, **self.stacked_attrs(key))


@register
class StridedSliceGrad(Op):
    complex_rules = True
    fusible_zero_fill = True
    pattern = patterns.layout
    jvp = linear
    covered_by = "StridedSlice"
    structured = banded.leading_slice_grad

    def forward(self, g, shape, key):
        out = np.zeros(shape, dtype=g.dtype)
        out[key] = g
        return out

    def gradient(self, e, gg):
        return apply(StridedSlice, gg, key=e.attrs["key"])

    def converter(self, cx, g, shape, key):
        return apply(self, g, shape=(cx.iters,) + shape, key=(slice(None),) + key)


def _canonical(k):
    """A key part as None, Ellipsis, int, slice of ints, or an int/bool Tensor."""
    if k is None or k is Ellipsis:
        return k
    if isinstance(k, slice):
        return canonical_slice(k)  # a VaryingSlice when a bound varies over a pfor loop
    if isinstance(k, (bool, np.bool_)):
        raise IndexError("getitem: a scalar boolean index is not supported; use a "
                         "boolean array or vj.expand_dims")
    if isinstance(k, numbers.Integral):
        return int(k)
    t = to_input(k, fn="getitem", arg="key")
    if t.dtype == np.bool_:
        if t.ndim == 0:
            raise IndexError("getitem: a scalar boolean index is not supported; use a "
                             "boolean array or vj.expand_dims")
        return t
    if t.dtype.kind not in "iu":
        if t.size == 0 and t._pfor is None:  # x[[]] selects nothing, as in NumPy
            return Tensor(np.zeros(t.shape, np.int64))
        raise IndexError(f"getitem: array indices must be integers or booleans, got "
                         f"dtype {t.dtype}")
    if t.ndim == 0 and t._pfor is None:
        value_read(t, "internal")
        return int(t._value)
    return t


def getitem(x, key):
    """x[key], NumPy-style: ints, slices (any step), ..., None, int arrays/Tensors and bool
    masks (loop-invariant). Output shape: as NumPy's for the same key.

    Slicing keys are strided slices; keys with array indices are gathers, so they are
    differentiable and vectorize (x[i] with the pfor loop index i is x itself).
    """
    x = to_input(x, fn="getitem", arg="x")
    if type(key) is int and x.shape and -x.shape[0] <= key < x.shape[0]:
        return apply(StridedSlice, x, key=(key,))  # x[i]: the common case, nothing to check
    key = tuple(_canonical(k) for k in (key if isinstance(key, tuple) else (key,)))
    arrays = any(isinstance(k, Tensor) for k in key)
    if any(type(k) is VaryingSlice for k in key):  # bounds from the pfor loop index
        if arrays:
            raise ValueError("getitem: slice bounds varying over a pfor loop cannot be "
                             "combined with array indices; use vj.gather")
        check_basic_key(x.shape, key)
        return varying_getitem(x, key)
    if not arrays:
        check_basic_key(x.shape, key)
        if all(k is Ellipsis or k == slice(None) for k in key):
            return x
        return apply(StridedSlice, x, key=key)
    return _advanced_getitem(x, key)


def _key_width(k):
    if k is None or k is Ellipsis:
        return 0
    return k.ndim if isinstance(k, Tensor) and k.dtype == np.bool_ else 1


def _advanced_getitem(x, key):
    ellipses = [p for p, k in enumerate(key) if k is Ellipsis]
    if len(ellipses) > 1:
        raise IndexError("getitem: an index can only have a single ellipsis ('...')")
    used = sum(_key_width(k) for k in key)
    if used > x.ndim:
        raise IndexError(f"getitem: too many indices ({used}) for a tensor of rank {x.ndim}")
    if ellipses:
        p = ellipses[0]
        key = key[:p] + (slice(None),) * (x.ndim - used) + key[p + 1:]
    # pass 1 applies ints, slices and None; array indices stay as full slices of y
    basic, adv, adv_pos = [], [], []  # adv: (axis in y, axis in x, index)
    dim = y_axis = 0
    for p, k in enumerate(key):
        if k is None or isinstance(k, slice):
            basic.append(k)
            y_axis += 1
            dim += k is not None
            continue
        adv_pos.append(p)
        if isinstance(k, int):
            if not -x.shape[dim] <= k < x.shape[dim]:
                raise IndexError(f"getitem: index {k} is out of bounds for axis {dim} with "
                                 f"size {x.shape[dim]}")
            basic.append(k)
            dim += 1
        elif k.dtype == np.bool_:
            if k._pfor is not None:
                raise ValueError("getitem: a loop-variant boolean mask selects a different "
                                 "number of elements per iteration; use vj.where instead")
            value_read(k, "internal")
            m = k._value
            if x.shape[dim:dim + m.ndim] != m.shape:
                raise IndexError(f"getitem: boolean mask of shape {m.shape} does not match "
                                 f"axes {dim}..{dim + m.ndim - 1} of a tensor of shape "
                                 f"{x.shape}")
            for coords in np.nonzero(m):  # a k-d mask is k int arrays
                basic.append(slice(None))
                adv.append((y_axis, dim, coords))
                y_axis, dim = y_axis + 1, dim + 1
        else:
            basic.append(slice(None))
            adv.append((y_axis, dim, k))
            y_axis, dim = y_axis + 1, dim + 1
    # NumPy puts the indexed dims first unless the array/int indices are adjacent
    adjacent = adv_pos == list(range(adv_pos[0], adv_pos[0] + len(adv_pos)))
    y = getitem(x, tuple(basic))
    indices = [_normalized_index(k, x.shape[d], d) for _, d, k in adv]
    try:
        s = np.broadcast_shapes(*[i.shape for i in indices])
    except ValueError:
        raise IndexError(f"getitem: index arrays could not be broadcast together with "
                         f"shapes {[i.shape for i in indices]}") from None
    axes = [a for a, _, _ in adv]
    if len(indices) == 1:
        out = gather(y, indices[0], axis=axes[0])
    else:
        if axes != list(range(axes[0], axes[0] + len(axes))):
            y = transpose(y, axes + [a for a in range(y.ndim) if a not in axes])
            axes = list(range(len(axes)))
        first, dims = axes[0], y.shape[axes[0]:axes[0] + len(axes)]
        flat = reshape(y, y.shape[:first] + (int(math.prod(dims)),)
                       + y.shape[first + len(axes):])
        out = gather(flat, _linear_index(indices, dims), axis=first)
    first = axes[0]
    if not adjacent and first:
        n = len(s)
        out = transpose(out, tuple(range(first, first + n)) + tuple(range(first))
                        + tuple(range(first + n, out.ndim)))
    return out


def _normalized_index(idx, size, dim, fn="getitem", negative=True):
    """Indices in [0, size): an int ndarray if loop-invariant, else an int Tensor."""
    if isinstance(idx, Tensor):
        value_read(idx, "internal")
    v = idx._value if isinstance(idx, Tensor) else np.asarray(idx)
    low = -size if negative else 0
    if v.size and (v.min() < low or v.max() >= size):
        bad = v[(v < low) | (v >= size)].reshape(-1)[0]
        raise IndexError(f"{fn}: index {bad} is out of bounds for axis {dim} with size "
                         f"{size} (in indices)")
    has_negative = negative and v.size and v.min() < 0
    if not isinstance(idx, Tensor) or idx._pfor is None:
        return np.where(v < 0, v + size, v) if has_negative else v
    if has_negative:
        idx = where(less(idx, 0), add(idx, size), idx)
    return idx


def _linear_index(indices, dims):
    """Row-major position in an array of shape `dims` of the broadcast index tuple."""
    strides = [int(math.prod(dims[j + 1:])) for j in range(len(dims))]
    if not any(isinstance(i, Tensor) and i._pfor is not None for i in indices):
        values = [np.asarray(i._value if isinstance(i, Tensor) else i, np.int64) for i in indices]
        return sum(v * s for v, s in zip(values, strides))
    total = None
    for i, s in zip(indices, strides):
        term = multiply(cast(i, np.int64), s) if s != 1 else cast(i, np.int64)
        total = term if total is None else add(total, term)
    return total


def _nd_linear_index(indices, dims, fn):
    """Linear index of the last-axis index tuples of `indices` (checked, no negatives)."""
    value_read(indices, "internal")
    v = indices._value
    for j, d in enumerate(dims):
        _normalized_index(v[..., j], d, j, fn, negative=False)
    strides = np.asarray([int(math.prod(dims[j + 1:]))
                          for j in range(len(dims))], np.int64)
    if indices._pfor is None:
        return Tensor(np.asarray(v, np.int64) @ strides if dims else
                      np.zeros(v.shape[:-1], np.int64))
    return reduce_sum(multiply(cast(indices, np.int64), Tensor(strides)), axis=-1)


def _nd_indices(indices, fn):
    indices = to_input(indices, (), fn, "indices")
    if indices.dtype.kind not in "iu":
        raise TypeError(f"{fn}: indices must be integers, got dtype {indices.dtype}")
    if indices.ndim == 0:
        raise ValueError(f"{fn}: indices must have rank >= 1 (index tuples along the last "
                         "axis), got a scalar")
    return indices


def gather_nd(params, indices, batch_dims=0, name=None):
    """Slices of `params` at the index tuples along the last axis of `indices` (TF's).

    With k = indices.shape[-1] and b = batch_dims, output shape:
    indices.shape[:-1] + params.shape[b + k:].
    """
    params = to_input(params, fn="gather_nd", arg="params")
    indices = _nd_indices(indices, "gather_nd")
    if not isinstance(batch_dims, numbers.Integral) or isinstance(batch_dims, bool):
        raise TypeError(f"gather_nd: batch_dims must be an int, got {batch_dims!r}")
    b, k = int(batch_dims), indices.shape[-1]
    if not 0 <= b < indices.ndim:
        raise ValueError(f"gather_nd: batch_dims={b} must be in [0, rank(indices)="
                         f"{indices.ndim})")
    if b + k > params.ndim:
        raise ValueError(f"gather_nd: index tuples of length {k} (indices.shape[-1]) "
                         f"after batch_dims={b} exceed the rank {params.ndim} of params "
                         f"{params.shape}")
    if params.shape[:b] != indices.shape[:b]:
        raise ValueError(f"gather_nd: the first batch_dims={b} dimensions of params "
                         f"{params.shape} and indices {indices.shape} must be equal")
    dims = params.shape[b:b + k]
    lin = _nd_linear_index(indices, dims, "gather_nd")
    flat = reshape(params, params.shape[:b] + (int(math.prod(dims)),)
                   + params.shape[b + k:])
    return gather(flat, lin, axis=b, batch_dims=b)

lib.publish(globals(), __all__ + ["getitem"])
