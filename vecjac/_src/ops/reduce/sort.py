"""Sorting and searching: sort, argsort, searchsorted (TF's names), and the argpartition
and take-along-axis gather behind NumPy's np.sort / np.partition / np.take_along_axis.

ArgSort, ArgPartition and SearchSorted return positions, so they are not differentiable
(piecewise constant). sort is its input gathered at the argsort positions: the values
are differentiable, each cotangent going back to where its value came from (at ties, to
the position argsort chose). The gather is GatherV2 with batch axes, so pfor and the
gradient's scatter come from it.
"""
import numpy as np

from vecjac._src.core.dispatch import apply, to_input
from vecjac._src.core.registry import Op, lib, register
from vecjac._src.core.samples import Arg, Sample
from vecjac._src.core.shapes import broadcast_shape, normalize_axis
from vecjac._src.ops.array.indexing import gather
from vecjac._src.ops.array.shaping import broadcast_to, reshape, transpose
from vecjac._src.ops.elementwise.logic import cast
from vecjac._src.transforms.pfor.converters import axis_shift

__all__ = ["sort", "argsort", "searchsorted"]


def _descending_key(x):
    """A key whose ascending order is x's descending order (NaN still last)."""
    return -x if x.dtype.kind in "fc" else ~x


@register
class ArgSort(Op):
    differentiable = False
    converter = axis_shift("axis")
    samples = (Sample("sort", Arg.float(3, "n")),
               Sample("sort", Arg.float("n", 2), axis=0, direction="DESCENDING"),
               Sample("argsort", Arg.float(2, "n"), stable=True),
               Sample("argsort", Arg.int(2, "n", hi=3), direction="DESCENDING", stable=True),
               Sample("sort", Arg.float("m", 2), axis=0, dim_range=(0, 3)))

    def forward(self, x, axis, descending, stable):
        key = _descending_key(x) if descending else x
        return np.argsort(key, axis=axis, kind="stable" if stable else None).astype(
            np.int64, copy=False)


@register
class ArgPartition(Op):
    differentiable = False
    converter = axis_shift("axis")
    samples = (Sample(lambda x: argpartition(x, (1,), -1), Arg.float(2, 4)),
               Sample(lambda x: argpartition(x, (0, 2), 0), Arg.float(3, "n")))

    def forward(self, x, kth, axis):
        return np.argpartition(x, kth, axis=axis).astype(np.int64, copy=False)


@register
class SearchSorted(Op):
    """Insertion positions of `values` in the rows of `sorted_sequence` (..., m): values
    (..., k) with the same leading axes, or any shape when sorted_sequence is 1-D."""
    differentiable = False
    samples = (Sample(lambda s, v: searchsorted(sort(s), v), Arg.float(2, "n"), Arg.float(2, 4)),
               Sample(lambda s, v: searchsorted(sort(s), v, side="right"), Arg.float("n"),
                      Arg.float(3)),
               Sample(lambda s, v: apply(SearchSorted, sort(s), v, side="left"),
                      Arg.float("n"), Arg.float(2, 3)))

    def forward(self, sorted_sequence, values, side):
        if sorted_sequence.ndim == 1:
            return np.searchsorted(sorted_sequence, values, side=side).astype(np.int64)
        n_rows = int(np.prod(sorted_sequence.shape[:-1]))  # explicit: -1 fails on empty
        rows = sorted_sequence.reshape(n_rows, sorted_sequence.shape[-1])
        wanted = values.reshape(n_rows, values.shape[-1])
        out = np.empty(wanted.shape, np.int64)
        for r, (row, v) in enumerate(zip(rows, wanted)):
            out[r] = np.searchsorted(row, v, side=side)
        return out.reshape(values.shape)

    def converter(self, cx, sorted_sequence, values, side):
        s_stacked, v_stacked = cx.stacked
        if not s_stacked and sorted_sequence.ndim == 1:
            return apply(self, sorted_sequence, values, side=side)
        if not s_stacked:
            sorted_sequence = cx.stack(sorted_sequence)
        if not v_stacked:
            values = cx.stack(values)
        if sorted_sequence.ndim == 2:  # one 1-D sequence per iteration: any values shape
            flat = reshape(values, (values.shape[0], -1))
            return reshape(apply(self, sorted_sequence, flat, side=side), values.shape)
        return apply(self, sorted_sequence, values, side=side)


# -- gathers along an axis -----------------------------------------------------------------
def take_along_axis(arr, indices, axis):
    """arr's values at `indices` along `axis` (NumPy's np.take_along_axis semantics:
    indices has arr's rank; the other axes broadcast). Differentiable in arr."""
    nd = arr.ndim
    shape = broadcast_shape("take_along_axis", arr.shape[:axis] + arr.shape[axis + 1:],
                            indices.shape[:axis] + indices.shape[axis + 1:],
                            names=("arr", "indices"))
    arr = broadcast_to(arr, shape[:axis] + (arr.shape[axis],) + shape[axis:])
    indices = broadcast_to(indices, shape[:axis] + (indices.shape[axis],) + shape[axis:])
    if axis == nd - 1:
        return gather(arr, indices, axis=axis, batch_dims=nd - 1)
    perm = tuple(k for k in range(nd) if k != axis) + (axis,)
    back = tuple(range(axis)) + (nd - 1,) + tuple(range(axis, nd - 1))
    out = gather(transpose(arr, perm), transpose(indices, perm), axis=nd - 1,
                     batch_dims=nd - 1)
    return transpose(out, back)


# -- public functions ------------------------------------------------------------------------
def _sortable(values, fn, arg="values"):
    x = to_input(values, fn=fn, arg=arg)
    if x.dtype.kind not in "biuf":
        raise TypeError(f"{fn}: {arg} must be a real numeric tensor, got dtype {x.dtype}")
    return x


def _direction(direction, fn):
    if direction not in ("ASCENDING", "DESCENDING"):
        raise ValueError(f"{fn}: direction must be 'ASCENDING' or 'DESCENDING', got "
                         f"{direction!r}")
    return direction == "DESCENDING"


def _sort_axis(axis, x, fn):
    if x.ndim == 0:
        raise ValueError(f"{fn}: values must have rank >= 1, got a scalar")
    return normalize_axis(axis, x.ndim, fn)


def argsort(values, axis=-1, direction="ASCENDING", stable=False, name=None):
    """int32 positions that sort `values` along `axis` (TF's argsort); shape of values.

    stable=True keeps equal values in their order (descending too). NaN sorts last.
    """
    x = _sortable(values, "argsort")
    ax = _sort_axis(axis, x, "argsort")
    descending = _direction(direction, "argsort")
    if not isinstance(stable, (bool, np.bool_)):
        raise TypeError(f"argsort: stable must be a bool, got {stable!r}")
    idx = apply(ArgSort, x, axis=ax, descending=descending, stable=bool(stable))
    return cast(idx, np.int32)


def sort(values, axis=-1, direction="ASCENDING", name=None):
    """`values` sorted along `axis` (TF's sort); differentiable, shape of values.

    Example: vj.sort([3.0, 1.0, 2.0]) is [1.0, 2.0, 3.0].
    """
    x = _sortable(values, "sort")
    ax = _sort_axis(axis, x, "sort")
    idx = apply(ArgSort, x, axis=ax, descending=_direction(direction, "sort"), stable=False)
    return take_along_axis(x, idx, ax)


def argpartition(x, kth, axis):
    """NumPy's np.argpartition (validated by the caller): int64 positions."""
    return apply(ArgPartition, x, kth=tuple(kth), axis=axis % x.ndim)


def searchsorted(sorted_sequence, values, side="left", out_type=np.int32, name=None):
    """Positions at which `values` would be inserted into the rows of `sorted_sequence`
    to keep them sorted (TF's searchsorted; 'left': before equal entries, 'right': after).

    sorted_sequence (..., m) with rows sorted ascending; values (..., k) with the same
    leading axes (or of any shape when sorted_sequence is 1-D). Output: values' shape,
    dtype out_type (int32 or int64).
    """
    s = _sortable(sorted_sequence, "searchsorted", "sorted_sequence")
    v = _sortable(values, "searchsorted")
    if s.ndim == 0:
        raise ValueError("searchsorted: sorted_sequence must have rank >= 1, got a scalar")
    if s.ndim > 1 and (v.ndim != s.ndim or v.shape[:-1] != s.shape[:-1]):
        raise ValueError(f"searchsorted: values must have the leading axes of "
                         f"sorted_sequence {s.shape[:-1]} (shape (..., k)), got shape "
                         f"{v.shape}")
    if side not in ("left", "right"):
        raise ValueError(f"searchsorted: side must be 'left' or 'right', got {side!r}")
    try:
        out = np.dtype(out_type)
    except TypeError:
        out = None
    if out not in (np.dtype(np.int32), np.dtype(np.int64)):
        raise TypeError(f"searchsorted: out_type must be int32 or int64, got {out_type!r}")
    idx = apply(SearchSorted, s, v, side=side)
    return idx if out == np.int64 else cast(idx, out)


lib.publish(globals(), __all__ + ["take_along_axis", "argpartition"])
