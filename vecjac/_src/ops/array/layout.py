"""Layout ops that copy or rearrange elements: tile, pad, reverse, slice, strided_slice,
boolean_mask, where_indices and the scatters tensor_scatter_nd_add / _update.

Their gradients are the adjoint moves (sum the tiles, crop or fold back the padding,
scatter-add), written as ops so that they differentiate and vectorize again.
"""
import builtins
import math

import numpy as np

from vecjac._src.core.context import value_read
from vecjac._src.core.dispatch import apply, to_input
from vecjac._src.core.registry import Op, lib, register
from vecjac._src.core.samples import Arg, Sample
from vecjac._src.core.shapes import as_int, as_shape, normalize_axes, normalize_axis
from vecjac._src.core.tensor import Tensor
from vecjac._src.ops.array.creation import ones_like, zeros_like
from vecjac._src.ops.array.indexing import (GatherGrad, StridedSlice, _nd_indices,
                                            _nd_linear_index, gather, getitem)
from vecjac._src.ops.array.shaping import concat, expand_dims, reshape, stack
from vecjac._src.ops.elementwise.arithmetic import add, floormod, subtract
from vecjac._src.ops.elementwise.logic import (cast, equal, logical_and, logical_not, not_equal,
                                               where)
from vecjac._src.ops.reduce.reductions import reduce_any, reduce_sum
from vecjac._src.transforms.forward.rules import linear
from vecjac._src.transforms.pfor import banded
from vecjac._src.transforms.pfor.converters import axis_shift
from vecjac._src.transforms.sparsity import patterns

__all__ = ["tile", "pad", "reverse", "roll", "strided_slice", "boolean_mask",
           "tensor_scatter_nd_add", "tensor_scatter_nd_update"]  # where_indices: vj.where(c)
# `slice` is exported by vecjac/__init__.py explicitly: in __all__ it would shadow
# Python's builtin slice in modules that star-import this one.


def _int_list(value, fn, arg):
    """A tuple of Python ints from a list / array / loop-invariant Tensor."""
    if getattr(value, "_pfor", None) is not None:
        raise ValueError(f"{fn}: {arg} cannot vary over a pfor loop")
    if isinstance(value, Tensor):
        value_read(value, "internal")
    arr = np.asarray(value._value if isinstance(value, Tensor) else value)
    if arr.ndim > 1 or (arr.size and arr.dtype.kind not in "iu"):
        raise TypeError(f"{fn}: {arg} must be a list of ints, got {value!r}")
    return tuple(int(v) for v in arr.reshape(-1))


# -- tile --------------------------------------------------------------------------------
@register
class Tile(Op):
    complex_rules = True
    pattern = patterns.layout
    jvp = linear
    samples = (Sample("tile", Arg.float(2, "n"), [2, 3]), Sample("tile", Arg.float("n"), [3]))
    samples += (Sample("tile", Arg.float("m", 2), [2, 1], dim_range=(0, 3)),)  # empty arrays too

    def forward(self, x, multiples):
        return np.tile(x, multiples)

    def gradient(self, e, g):
        shape, m = e.inputs[0].shape, e.attrs["multiples"]
        interleaved = tuple(v for pair in zip(m, shape) for v in pair)
        return reduce_sum(reshape(g, interleaved), axis=tuple(range(0, 2 * len(m), 2)))

    def converter(self, cx, x, multiples):
        return apply(self, x, multiples=(1,) + multiples)


def tile(input, multiples, name=None):
    """`input` repeated multiples[k] times along each axis k.

    Output shape: (input.shape[k] * multiples[k] for every k); len(multiples) == rank.
    """
    x = to_input(input, fn="tile", arg="input")
    m = as_shape(multiples, "tile", "multiples")
    if len(m) != x.ndim:
        raise ValueError(f"tile: multiples must have one entry per axis of input (rank "
                         f"{x.ndim}), got {len(m)}: {m}")
    if all(v == 1 for v in m):
        return x
    return apply(Tile, x, multiples=m)


# -- pad ---------------------------------------------------------------------------------
@register
class PadV2(Op):
    complex_rules = True
    pattern = patterns.layout
    jvp = linear
    samples = (Sample("pad", Arg.float(2, "n"), [[1, 0], [2, 1]]),
               Sample("pad", Arg.float("n", 2), [[0, 1], [1, 1]], constant_values=Arg.float()))
    samples += (Sample("pad", Arg.float("m", 2), [[1, 1], [0, 1]], dim_range=(0, 3)),)
    structured = banded.leading_pad

    def forward(self, x, constant_values, paddings):
        # a filled array and one slice assignment: np.pad's Python takes 25 us per call
        shape = tuple(d + b + a for d, (b, a) in zip(x.shape, paddings))
        out = np.empty(shape, dtype=x.dtype)  # np.pad's dtype: x's
        out[...] = constant_values
        out[tuple(builtins.slice(b, b + d) for d, (b, _) in zip(x.shape, paddings))] = x
        return out

    def gradient(self, e, g):
        x = e.inputs[0]
        paddings = e.attrs["paddings"]
        key = tuple(builtins.slice(b, b + d) for (b, _), d in zip(paddings, x.shape))
        gx = apply(StridedSlice, g, key=key)
        gc = None
        if e.needs[1]:
            border = np.pad(np.zeros(x.shape, g.dtype), paddings, constant_values=1)
            gc = reduce_sum(g * Tensor(border))
        return gx, gc

    def converter(self, cx, x, constant_values, paddings):
        stacked_paddings = ((0, 0),) + paddings
        if not cx.stacked[1]:
            return apply(self, x, constant_values, paddings=stacked_paddings)
        # a loop-variant fill value: pad with zeros, then select it on the border
        if not cx.stacked[0]:
            x = cx.stack(x)
        padded = apply(self, x, Tensor(np.zeros((), x.dtype)), paddings=stacked_paddings)
        border = np.pad(np.zeros(x.shape[1:], bool), paddings, constant_values=True)
        fill = reshape(constant_values, (cx.iters,) + (1,) * len(paddings))
        return where(Tensor(border), fill, padded)


@register
class MirrorPad(Op):
    complex_rules = True
    pattern = patterns.layout
    jvp = linear
    samples = (Sample("pad", Arg.float(3, "n"), [[1, 2], [0, 0]], mode="REFLECT"),
               Sample("pad", Arg.float(2, 3), [[2, 1], [1, 3]], mode="SYMMETRIC"))

    def forward(self, x, paddings, mode):
        return np.pad(x, paddings, mode=mode.lower())

    def gradient(self, e, g):
        return apply(MirrorPadGrad, g, **e.attrs)

    def converter(self, cx, x, paddings, mode):
        return apply(self, x, paddings=((0, 0),) + paddings, mode=mode)


def _mirror_pad_numbers(numbers, paddings, mode):
    """Where each element of MirrorPadGrad's input goes: MirrorPad of the output's
    element numbers (MirrorPadGrad is its adjoint)."""
    return MirrorPad.forward(numbers, paddings, mode)


@register
class MirrorPadGrad(Op):
    """Adjoint of MirrorPad: each mirrored element is added back to its source."""
    pattern = patterns.scatter(_mirror_pad_numbers)
    jvp = linear
    covered_by = "MirrorPad"

    def forward(self, g, paddings, mode):
        skip = 1 if mode == "REFLECT" else 0  # REFLECT does not repeat the edge element
        for axis, (b, a) in enumerate(paddings):
            if not (b or a):
                continue
            moved = np.moveaxis(g, axis, 0)
            d = moved.shape[0] - b - a
            out = moved[b:b + d].copy()
            if b:
                out[skip:skip + b] += moved[:b][::-1]
            if a:
                out[d - skip - a:d - skip] += moved[b + d:][::-1]
            g = np.moveaxis(out, 0, axis)
        return g

    def gradient(self, e, gg):
        return apply(MirrorPad, gg, **e.attrs)

    def converter(self, cx, g, paddings, mode):
        return apply(self, g, paddings=((0, 0),) + paddings, mode=mode)


def pad(tensor, paddings, mode="CONSTANT", constant_values=0, name=None):
    """`tensor` padded by paddings[k] = [before, after] elements along each axis k.

    mode: "CONSTANT" (with constant_values), "REFLECT" (mirror without the edge, needs
    before, after < size) or "SYMMETRIC" (mirror with the edge, needs <= size); any case.
    Output shape: (before + size + after for every axis).
    """
    complex_rules = True
    x = to_input(tensor, fn="pad", arg="tensor")
    if getattr(paddings, "_pfor", None) is not None:
        raise ValueError("pad: paddings cannot vary over a pfor loop")
    if isinstance(paddings, Tensor):
        value_read(paddings, "internal")
    p = np.asarray(paddings._value if isinstance(paddings, Tensor) else paddings)
    if p.shape != (x.ndim, 2) or (p.size and p.dtype.kind not in "iu"):
        raise ValueError(f"pad: paddings must be ints of shape (rank, 2) = ({x.ndim}, 2), "
                         f"got {p.tolist()} of shape {p.shape}")
    if (p < 0).any():
        raise ValueError(f"pad: paddings must be non-negative, got {p.tolist()}")
    pads = tuple((int(b), int(a)) for b, a in p)
    mode_name = mode.upper() if isinstance(mode, str) else mode
    if mode_name not in ("CONSTANT", "REFLECT", "SYMMETRIC"):
        raise ValueError(f"pad: mode must be 'CONSTANT', 'REFLECT' or 'SYMMETRIC', got "
                         f"{mode!r}")
    if mode_name != "CONSTANT":
        limit = 1 if mode_name == "REFLECT" else 0
        for axis, ((b, a), d) in enumerate(zip(pads, x.shape)):
            if max(b, a) > d - limit:
                raise ValueError(f"pad: {mode_name} paddings {[b, a]} of axis {axis} must "
                                 f"be <= {d - limit} for its size {d}")
    if not p.any():
        return x
    if mode_name != "CONSTANT":
        return apply(MirrorPad, x, paddings=pads, mode=mode_name)
    c = to_input(constant_values, (x,), "pad", "constant_values")
    if c.ndim:
        raise ValueError(f"pad: constant_values must be a scalar, got shape {c.shape}")
    if c.dtype != x.dtype:
        raise TypeError(f"pad: constant_values dtype {c.dtype} differs from tensor dtype "
                        f"{x.dtype}")
    return apply(PadV2, x, c, paddings=pads)


# -- reverse, slice, strided_slice ------------------------------------------------------
@register
class ReverseV2(Op):
    complex_rules = True
    pattern = patterns.layout
    jvp = linear
    samples = (Sample("reverse", Arg.float(2, "n", 3), [0, 2]),
               Sample("reverse", Arg.float("n"), [0]))
    converter = axis_shift("axis")

    def forward(self, x, axis):
        return np.flip(x, axis)

    def gradient(self, e, g):
        return apply(ReverseV2, g, axis=e.attrs["axis"])


def reverse(tensor, axis, name=None):
    """`tensor` with the order of elements reversed along each axis in `axis` (a list).

    Output shape: tensor.shape.
    """
    x = to_input(tensor, fn="reverse", arg="tensor")
    axes = normalize_axes(axis, x.ndim, "reverse")
    if axes is None:
        raise TypeError("reverse: axis must be an int or a list of ints, got None")
    if not axes:
        return x
    return apply(ReverseV2, x, axis=axes)


def roll(input, shift, axis, name=None):
    """Elements shifted along axes, those pushed past the end coming back at the start
    (TF's tf.roll; np.roll with an axis). `shift` and `axis` are ints or equal-length
    lists of ints (shifts of a repeated axis add up); inside pfor / vectorized_map the
    shift may vary with the loop (an int Tensor, or a list holding some). Output shape:
    input's.

    >>> vj.roll(vj.constant([1.0, 2.0, 3.0]), 1, 0).numpy()
    array([3., 1., 2.])
    """
    x = to_input(input, fn="roll", arg="input")
    if _loop_variant(shift):
        return _roll_varying(x, shift, axis)
    shifts = _int_list(shift, "roll", "shift")
    axes = _int_list(axis, "roll", "axis")
    if len(shifts) != len(axes):
        raise ValueError(f"roll: shift and axis must have the same length, got "
                         f"{len(shifts)} shifts and {len(axes)} axes")
    total = {}
    for s, a in zip(shifts, axes):
        a = normalize_axis(a, x.ndim, "roll", "axis")
        total[a] = total.get(a, 0) + s
    for a, s in total.items():
        n = x.shape[a]
        s = s % n if n else 0
        if s:  # two slices, concatenated: a layout the sparsity tracer reads exactly
            head = (builtins.slice(None),) * a
            x = concat([getitem(x, head + (builtins.slice(n - s, None),)),
                            getitem(x, head + (builtins.slice(0, n - s),))], axis=a)
    return x


def _loop_variant(shift):
    """Whether `shift` (an int, a Tensor or a list of them) holds a value varying over a
    pfor loop (`[i - 2, -1, i]` in loop_fn(i)): it has no single int value."""
    items = shift if isinstance(shift, (list, tuple)) else (shift,)
    return any(isinstance(s, Tensor) and s._pfor is not None for s in items)


def _roll_varying(x, shift, axis):
    """roll by a loop-variant shift (TF packs the shifts and vectorizes the roll): per
    axis a gather at (arange(n) - s) mod n, which pfor vectorizes (a batched gather),
    where the constant-shift roll's two slices would need the shift as an int."""
    axes = _int_list(axis, "roll", "axis")
    if isinstance(shift, Tensor):
        s = shift
    else:
        s = stack([to_input(v, fn="roll", arg="shift") for v in shift])
    if s.dtype.kind not in "iu":
        raise TypeError(f"roll: shift must hold integers, got dtype {s.dtype}")
    s = reshape(cast(s, np.int64), (-1,))
    if s.shape[0] != len(axes):
        raise ValueError(f"roll: shift and axis must have the same length, got "
                         f"{s.shape[0]} shifts and {len(axes)} axes")
    total = {}  # shifts of a repeated axis add up
    for k, a in enumerate(axes):
        a = normalize_axis(a, x.ndim, "roll", "axis")
        sk = gather(s, k)
        total[a] = add(total[a], sk) if a in total else sk
    for a, sk in total.items():
        n = x.shape[a]
        if n:
            positions = subtract(Tensor(np.arange(n, dtype=np.int64)), sk)
            x = gather(x, floormod(positions, np.int64(n)), axis=a)
    return x


def slice(input_, begin, size, name=None):  # noqa: A001 (TF's name)
    """The block of `input_` starting at `begin` with extent `size` (-1: to the end).

    Output shape: size, with each -1 replaced by input_.shape[k] - begin[k].
    """
    x = to_input(input_, fn="slice", arg="input_")
    b = _int_list(begin, "slice", "begin")
    s = _int_list(size, "slice", "size")
    if len(b) != x.ndim or len(s) != x.ndim:
        raise ValueError(f"slice: begin and size need one entry per axis (rank {x.ndim}), "
                         f"got begin={list(b)} size={list(s)}")
    for axis, (bk, sk, d) in enumerate(zip(b, s, x.shape)):
        if not 0 <= bk <= d:
            raise ValueError(f"slice: begin[{axis}]={bk} is out of range [0, {d}] for "
                             f"input shape {x.shape}")
        if sk < -1 or (sk != -1 and bk + sk > d):
            raise ValueError(f"slice: size[{axis}]={sk} is invalid at begin {bk} for an "
                             f"axis of size {d} (expected -1 or 0 <= size <= {d - bk})")
    key = tuple(builtins.slice(bk, None if sk == -1 else bk + sk) for bk, sk in zip(b, s))
    if all(bk == 0 and sk in (-1, d) for bk, sk, d in zip(b, s, x.shape)):
        return x
    return apply(StridedSlice, x, key=key)


def strided_slice(input_, begin, end, strides=None, begin_mask=0, end_mask=0,
                  ellipsis_mask=0, new_axis_mask=0, shrink_axis_mask=0, name=None):
    """TF's strided_slice: x[begin:end:strides] per entry, with TF's bit masks.

    Bit j of begin_mask / end_mask ignores begin[j] / end[j]; ellipsis_mask puts `...`,
    new_axis_mask a new axis and shrink_axis_mask the single index begin[j] at entry j.
    Output shape: as input_[key] for that key.
    """
    b = _int_list(begin, "strided_slice", "begin")
    e = _int_list(end, "strided_slice", "end")
    s = (1,) * len(b) if strides is None else _int_list(strides, "strided_slice", "strides")
    if not len(b) == len(e) == len(s):
        raise ValueError(f"strided_slice: begin, end and strides must have equal lengths, "
                         f"got {len(b)}, {len(e)}, {len(s)}")
    masks = {}
    for arg, m in (("begin_mask", begin_mask), ("end_mask", end_mask),
                   ("ellipsis_mask", ellipsis_mask), ("new_axis_mask", new_axis_mask),
                   ("shrink_axis_mask", shrink_axis_mask)):
        masks[arg] = as_int(m, "strided_slice", arg, minimum=0)
    begin_mask, end_mask, ellipsis_mask, new_axis_mask, shrink_axis_mask = masks.values()
    if bin(ellipsis_mask).count("1") > 1:
        raise ValueError(f"strided_slice: ellipsis_mask={ellipsis_mask} sets more than one "
                         "bit (at most one ellipsis)")
    x = to_input(input_, fn="strided_slice", arg="input_")
    key = []
    for j in range(len(b)):
        if ellipsis_mask >> j & 1:
            key.append(Ellipsis)
        elif new_axis_mask >> j & 1:
            key.append(None)
        elif shrink_axis_mask >> j & 1:
            key.append(b[j])
        else:
            if s[j] == 0:
                raise ValueError(f"strided_slice: strides[{j}] must be non-zero")
            key.append(builtins.slice(None if begin_mask >> j & 1 else b[j],
                                      None if end_mask >> j & 1 else e[j], s[j]))
    try:
        return getitem(x, tuple(key))
    except (IndexError, ValueError, TypeError) as err:  # getitem validates before any op
        raise type(err)(str(err).replace("getitem: ", "strided_slice: ", 1) +
                        f" (input_ shape {x.shape}, begin {b}, end {e}, strides {s})") from None


# -- boolean_mask, where_indices -------------------------------------------------------
def boolean_mask(tensor, mask, axis=None, name=None):
    """The slices of `tensor` where `mask` is true (TF's boolean_mask).

    mask (rank k, loop-invariant) matches tensor.shape[axis:axis + k]; output shape:
    tensor.shape[:axis] + (number of true elements,) + tensor.shape[axis + k:].
    """
    x = to_input(tensor, fn="boolean_mask", arg="tensor")
    m = to_input(mask, fn="boolean_mask", arg="mask")
    if m.dtype != np.bool_:
        raise TypeError(f"boolean_mask: mask must be a bool tensor, got dtype {m.dtype}")
    if m._pfor is not None:
        raise ValueError("boolean_mask: a loop-variant mask selects a different number of "
                         "elements per iteration; use vj.where(mask, x, 0) instead")
    if m.ndim == 0:
        raise ValueError("boolean_mask: mask must have rank >= 1, got a scalar")
    ax = 0 if axis is None else normalize_axis(axis, x.ndim, "boolean_mask")
    if x.shape[ax:ax + m.ndim] != m.shape:
        raise ValueError(f"boolean_mask: mask shape {m.shape} does not match "
                         f"tensor.shape[{ax}:{ax + m.ndim}] = {x.shape[ax:ax + m.ndim]}")
    flat = reshape(x, x.shape[:ax] + (m.size,) + x.shape[ax + m.ndim:])
    value_read(m, "internal")  # the positions become constants of the gather
    return gather(flat, np.flatnonzero(m._value), axis=ax)

# -- scatters: the gather gradient, applied to updates ----------------------------------
def _scatter_args(tensor, indices, updates, fn):
    t = to_input(tensor, (), fn, "tensor")
    indices = _nd_indices(indices, fn)
    u = to_input(updates, (t,), fn, "updates")
    k = indices.shape[-1]
    if k > t.ndim:
        raise ValueError(f"{fn}: index tuples of length {k} exceed the rank {t.ndim} of "
                         f"tensor {t.shape}")
    expected = indices.shape[:-1] + t.shape[k:]
    if u.shape != expected:
        raise ValueError(f"{fn}: updates must have shape indices.shape[:-1] + "
                         f"tensor.shape[{k}:] = {expected}, got {u.shape}")
    if u.dtype != t.dtype:
        raise TypeError(f"{fn}: updates dtype {u.dtype} differs from tensor dtype {t.dtype}")
    lin = _nd_linear_index(indices, t.shape[:k], fn)
    flat_shape = (int(math.prod(t.shape[:k])),) + t.shape[k:]
    return t, u, lin, flat_shape


def tensor_scatter_nd_add(tensor, indices, updates, name=None):
    """`tensor` with `updates` added at the index tuples of `indices` (duplicates add up).

    indices (..., k) index the first k axes; updates: indices.shape[:-1] + tensor.shape[k:].
    Output shape: tensor.shape.
    """
    t, u, lin, flat_shape = _scatter_args(tensor, indices, updates, "tensor_scatter_nd_add")
    scattered = apply(GatherGrad, u, lin, shape=flat_shape, axis=0, batch_dims=0)
    return add(t, reshape(scattered, t.shape))


def tensor_scatter_nd_update(tensor, indices, updates, name=None):
    """`tensor` with the elements at the index tuples of `indices` replaced by `updates`.

    Shapes as tensor_scatter_nd_add. With repeated index tuples the last update wins
    (in each iteration of a pfor loop too). Output shape: tensor.shape.
    """
    fn = "tensor_scatter_nd_update"
    t, u, lin, flat_shape = _scatter_args(tensor, indices, updates, fn)
    value_read(lin, "internal")
    v = lin._value.reshape(lin._value.shape[:1] + (-1,) if lin._pfor is not None else (1, -1))
    if lin._pfor is None and len(np.unique(v)) < v.size:
        flat = v.reshape(-1)
        _, last = np.unique(flat[::-1], return_index=True)
        keep = np.sort(flat.size - 1 - last)
        u = gather(reshape(u, (flat.size,) + flat_shape[1:]), keep)
        lin = Tensor(flat[keep])
    elif lin._pfor is not None and v.size and (np.diff(np.sort(v, axis=1), axis=1) == 0).any():
        # a tuple repeats within some iteration: there too the last update wins, by ops
        # (the positions kept differ per iteration): updates overwritten later become 0
        m = v.shape[1]
        lin = reshape(lin, (m,))
        u = reshape(u, (m,) + flat_shape[1:])
        same = equal(expand_dims(lin, 1), expand_dims(lin, 0))
        later = Tensor(np.triu(np.ones((m, m), bool), 1))
        kept = logical_not(reduce_any(logical_and(same, later), axis=1))
        u = where(reshape(kept, (m,) + (1,) * (len(flat_shape) - 1)), u, zeros_like(u))
    scattered = apply(GatherGrad, u, lin, shape=flat_shape, axis=0, batch_dims=0)
    hit = apply(GatherGrad, ones_like(lin, dtype=t.dtype), lin, shape=flat_shape[:1], axis=0,
                batch_dims=0)
    hit = reshape(not_equal(hit, 0), flat_shape[:1] + (1,) * (len(flat_shape) - 1))
    return reshape(where(hit, scattered, reshape(t, flat_shape)), t.shape)

lib.publish(globals(), __all__)
