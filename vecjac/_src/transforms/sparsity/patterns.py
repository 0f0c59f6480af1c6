"""Sparsity rules shared by op families: the `pattern` counterpart of vectorize/converters.py.

The sparsity tracer (vecjac/_src/transforms/sparsity/tracer.py) follows, for every value computed from the
traced inputs, which input elements each of its elements depends on: a boolean
scipy.sparse CSR matrix of shape (value.size, number of inputs), row k for element k of
the value in C order. An op's `pattern(cx, *inputs, **attrs)` computes its outputs'
patterns from `cx.patterns` (one per input: the input's pattern, or None for a value that
does not depend on the traced inputs: a constant, whose values never matter) and returns
one pattern, or a tuple of them for several outputs. Rules are structural: they never
look at the values of traced inputs (a zero today may be nonzero at another point), and
treat every entry of a constant as nonzero (its values may change between calls).

Families (one line on an op block: `pattern = patterns.layout`):
- elementwise: one input, element k depends on element k (unary math).
- broadcasting: NumPy broadcasting of n inputs; the union of the broadcast patterns.
- layout: the output's elements are copies of input elements, or fill (reshape,
  transpose, slices, concat, stack, pad, tile, roll, gather with constant indices ...):
  computed by running the op's own `forward` on arrays of 1-based element numbers
  (0 marks fill), so no layout op needs a rule of its own.
- scatter(forward_of_adjoint): the adjoint of a layout op (scatter-add, the gradients of
  gather and mirror padding): each output is the sum of the inputs that the layout op
  would copy from it.
- reduction: `axis` / `keepdims` attrs; an output depends on its group of inputs.
- along_axis(name): every element depends on the whole line along the axis (or axes) in
  attr `name` (softmax, FFTs); scan: on the line up to itself (cumsum, cumprod).
- contraction(equation): einsum-like products (matmul, matvec, einsum): output (i, j)
  depends on the operands' elements that share its indices, for every summed index.
- batched(*core_ranks): batched linear algebra; an output's matrix depends on the whole
  core of each input in the same batch.
An op without a rule is conservative: every output element depends on every input
element it could, and the tracer warns once, naming the op. Non-differentiable ops and
non-float outputs have empty patterns (no derivative flows through them).
"""
import importlib
import math

import numpy as np

from vecjac._src.transforms.sparsity import rows

__all__ = ["PatternContext", "elementwise", "broadcasting", "layout", "scatter",
           "reduction", "along_axis", "scan", "contraction", "batched", "gather",
           "empty", "conservative", "union", "take_rows", "group_union", "identity_block"]

_INDEX = np.int64


def sparse():
    """scipy.sparse, imported on first use (0.3 s: only sparsity work pays it)."""
    return importlib.import_module("scipy.sparse")


class PatternContext:
    """What a pattern rule knows: the inputs' patterns (None: constant), the outputs and
    the number of columns (traced input elements)."""

    __slots__ = ("patterns", "traced", "outputs", "n")

    def __init__(self, patterns, traced, outputs, n):
        self.patterns = patterns  # per input: pattern of a traced float input, else None
        self.traced = traced      # per input: computed from the traced inputs (any dtype)
        self.outputs = outputs
        self.n = n


# -- patterns as CSR matrices -------------------------------------------------------------
def csr(indptr, indices, shape):
    """A boolean CSR matrix from canonical (sorted, unique per row) arrays."""
    return rows.csr(indptr, indices, shape)


def empty(m, n):
    return csr(np.zeros(m + 1, dtype=_INDEX), np.zeros(0, dtype=_INDEX), (m, n))


def identity_block(size, offset, n):
    """Rows of `size` elements depending on columns offset .. offset + size - 1."""
    return csr(np.arange(size + 1, dtype=_INDEX), np.arange(offset, offset + size,
                                                               dtype=_INDEX), (size, n))


def take_rows(p, src):
    """Rows `src` of pattern p (an integer array; -1 for an empty row)."""
    src = np.asarray(src, dtype=_INDEX).ravel()
    m = p.shape[0]
    if src.size == m and m and src[0] == 0 and src[-1] == m - 1 and \
            np.array_equal(src, counting(0, m)):
        return p
    if p.nnz and src.size:
        fast = rows.take_rows(p, src)  # rows of (nearly) equal length: one NumPy gather
        if fast is not None:
            return fast
    if src.size and src.min() < 0:
        if p.nnz == 0:
            return empty(src.size, p.shape[1])
        indptr = np.append(p.indptr, p.indptr[-1])  # row m: empty
        p = sparse().csr_array((p.data, p.indices, indptr), shape=(m + 1, p.shape[1]))
        src = np.where(src < 0, m, src)
    if p.nnz == 0:
        return empty(src.size, p.shape[1])
    return p[src]


def union(patterns, m, n):
    """Element-wise OR of same-shaped patterns (None entries skipped)."""
    ps = [p for p in patterns if p is not None]
    if not ps:
        return empty(m, n)
    distinct = []
    for p in ps:
        if p.nnz and all(p is not q for q in distinct):
            distinct.append(p)
    if len(distinct) <= 1:
        return distinct[0] if distinct else ps[0]
    out = rows.union(distinct, m, n)  # rows of (nearly) equal length: blocks
    if out is None:
        out = distinct[0]
        for p in distinct[1:]:
            out = out + p
    return out


def group_union(p, group, m):
    """Row g of the result: the union of the rows r of p with group[r] == g (g < m);
    rows with group -1 are dropped."""
    group = np.asarray(group, dtype=_INDEX).ravel()
    keep = group >= 0
    rows = np.flatnonzero(keep) if not keep.all() else None
    if rows is not None:
        group = group[rows]
    size = group.size
    # M (m x rows): one entry per input row, built as its transpose (a CSR with one
    # entry per row needs no sort)
    mt = sparse().csr_array((np.ones(size, dtype=bool), group, np.arange(size + 1)),
                            shape=(size, m))
    src = p if rows is None else p[rows]
    out = (mt.T @ src).tocsr()
    out.sum_duplicates()
    return out.astype(bool) if out.dtype != bool else out


def _stacked(cx, inputs, with_constants=False):
    """One pattern stacking the traced inputs' rows, and each input's row offset."""
    parts, offsets, total = [], [], 0
    for x, p in zip(inputs, cx.patterns):
        offsets.append(total if p is not None else None)
        if p is not None:
            parts.append(p)
            total += p.shape[0]
    if len(parts) == 1:
        return parts[0], offsets
    return rows.vstack(parts, cx.n), offsets


def _broadcast_rows(shape, out_shape):
    """For each element of a `shape` array broadcast to out_shape: its source element."""
    if shape == out_shape:
        return None
    idx = np.arange(math.prod(shape), dtype=_INDEX).reshape(shape)
    return np.broadcast_to(idx, out_shape).ravel()


# -- families -------------------------------------------------------------------------------
def elementwise(op, cx, *inputs, **attrs):
    """One traced input; element k of each output depends on element k of it."""
    if len(inputs) > 1:
        return broadcasting(op, cx, *inputs, **attrs)
    p = cx.patterns[0]
    return p if len(cx.outputs) == 1 else (p,) * len(cx.outputs)


def broadcasting(op, cx, *inputs, **attrs):
    """NumPy broadcasting: the union of each input's pattern broadcast to the output."""
    out_shape = cx.outputs[0].shape
    size = math.prod(out_shape)
    parts = []
    for x, p in zip(inputs, cx.patterns):
        if p is None:
            continue
        src = _broadcast_rows(x.shape, out_shape)
        parts.append(p if src is None else take_rows(p, src))
    result = union(parts, size, cx.n)
    return result if len(cx.outputs) == 1 else (result,) * len(cx.outputs)


_COUNTING = np.arange(0, dtype=_INDEX)


def counting(start, stop):
    """np.arange(start, stop) as a read-only view of one shared array: every layout op
    numbers its inputs' elements, and a fresh arange of 10^6 costs its page faults."""
    global _COUNTING
    if stop > _COUNTING.size:
        _COUNTING = np.arange(max(stop, 2 * _COUNTING.size), dtype=_INDEX)
        _COUNTING.flags.writeable = False
    return _COUNTING[start:stop]


def _element_numbers(cx, inputs):
    """The inputs as arrays of 1-based element numbers into the stacked traced rows;
    constants of float dtype become 0 (fill), other inputs (indices) stay as they are."""
    arrays, total = [], 0
    for x, p in zip(inputs, cx.patterns):
        if p is not None:
            arrays.append(counting(total + 1, total + 1 + x.size).reshape(x.shape))
            total += x.size
        elif x.dtype.kind in "fc":
            arrays.append(np.zeros(x.shape, dtype=_INDEX))
        else:
            arrays.append(x._value)
    return arrays


def layout(op, cx, *inputs, **attrs):
    """Copies and fill: the op's forward on element numbers says where each output
    element comes from."""
    arrays = _element_numbers(cx, inputs)
    stacked, _ = _stacked(cx, inputs)
    out = op.forward(*arrays, **attrs)
    if len(cx.outputs) == 1:
        return take_rows(stacked, np.asarray(out).ravel() - 1)
    return tuple(take_rows(stacked, np.asarray(o).ravel() - 1) for o in out)


def gather(op, cx, params, indices, **attrs):
    """A gather: layout with constant indices; with indices computed from the traced
    inputs, any gathered element may be any element of params' batch (conservative)."""
    if not cx.traced[1]:
        return layout(op, cx, params, indices, **attrs)
    p = cx.patterns[0]
    if p is None:
        return empty(cx.outputs[0].size, cx.n)
    return _all_of(p, cx.outputs[0].size, cx.n)


def scatter(forward_of_adjoint):
    """The adjoint of a layout op: output element o is the sum of the input elements
    that the layout op (`forward_of_adjoint(numbers, *rest, **attrs)`, computing where
    each input element of the adjoint comes from) would copy out of o."""
    def rule(op, cx, x, *rest, **attrs):
        p = cx.patterns[0]
        out = cx.outputs[0]
        if p is None:
            return empty(out.size, cx.n)
        numbers = np.arange(out.size, dtype=_INDEX).reshape(out.shape)
        dest = np.asarray(forward_of_adjoint(numbers, *[r._value for r in rest], **attrs))
        return group_union(p, dest.ravel(), out.size)
    return rule


def _groups(shape, axes):
    """Group number of each element of `shape` when `axes` are reduced; group count."""
    kept = tuple(1 if a in axes else d for a, d in enumerate(shape))
    count = math.prod(kept)
    idx = np.arange(count, dtype=_INDEX).reshape(kept)
    return np.broadcast_to(idx, shape).ravel(), count


def _axes(axis, ndim):
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, (tuple, list)):
        return tuple(a % ndim for a in axis) if ndim else ()
    return (axis % ndim,) if ndim else ()


def reduction(op, cx, x, axis=None, keepdims=False, **attrs):
    p = cx.patterns[0]
    group, count = _groups(x.shape, _axes(axis, x.ndim))
    return group_union(p, group, count)


def along_axis(name=None, axes=None):
    """Each element of the first input depends on the whole line along the axis in attr
    `name` (or the fixed `axes`, one or several) of it; further inputs broadcast (a scale
    factor). The output may differ from the input in length along those axes (FFTs: dense
    along the transformed axes, element by element across the others)."""
    def rule(op, cx, x, *rest, **attrs):
        p = cx.patterns[0]
        out = cx.outputs[0]
        parts = []
        if p is not None:
            along = _axes(attrs[name] if name else axes, x.ndim)
            group, count = _groups(x.shape, along)
            out_group = group if out.shape == x.shape else _groups(out.shape, along)[0]
            parts.append(take_rows(group_union(p, group, count), out_group))
        for y, q in zip(rest, cx.patterns[1:]):
            if q is not None:
                src = _broadcast_rows(y.shape, out.shape)
                parts.append(q if src is None else take_rows(q, src))
        return union(parts, out.size, cx.n)
    return rule


def scan(op, cx, x, axis, exclusive=False, reverse=False, **attrs):
    """Cumulative ops: element i of a line depends on elements <= i (>= i in reverse;
    strictly, when exclusive) of the same line."""
    p = cx.patterns[0]
    shape = x.shape
    if not shape:
        return p
    axis %= len(shape)
    length = shape[axis]
    moved = np.moveaxis(np.arange(x.size, dtype=_INDEX).reshape(shape), axis, -1)
    lines = moved.reshape(-1, length)                  # element numbers, line by line
    i, j = np.meshgrid(np.arange(length), np.arange(length), indexing="ij")
    keep = (j >= i if reverse else j <= i) if not exclusive else (j > i if reverse else j < i)
    out_pos, in_pos = i[keep], j[keep]                 # within a line: who depends on whom
    rows = lines[:, out_pos].ravel()
    cols = lines[:, in_pos].ravel()
    m = sparse().csr_array((np.ones(rows.size, dtype=bool), (rows, cols)),
                           shape=(x.size, x.size))
    return _product(m, p)


def _product(m, p):
    out = (m @ p).tocsr()
    out.sum_duplicates()
    return out.astype(bool) if out.dtype != bool else out


def _letter_index(subscripts, shape, letters, sizes):
    """Flat element number of an operand (or the output) at every point of the index
    space `letters`, broadcast over it (size-1 axes broadcast)."""
    strides, stride = [], 1
    for d in reversed(shape):
        strides.append(stride)
        stride *= d
    strides.reverse()
    total = np.zeros((1,) * len(letters), dtype=_INDEX)
    for s, d, st in zip(subscripts, shape, strides):
        if d == 1:
            continue
        k = letters.index(s)
        view = [1] * len(letters)
        view[k] = sizes[s]
        total = total + (np.arange(sizes[s], dtype=_INDEX) * st).reshape(view)
    return total


def contraction(equation):
    """Products summed over indices: `equation(inputs, attrs)` gives the operands'
    subscripts and the output's (explicit letters, batch axes right-aligned)."""
    def rule(op, cx, *inputs, **attrs):
        subs, out_subs = equation(inputs, attrs)
        out = cx.outputs[0]
        sizes = {}
        for s, x in zip(subs, inputs):
            for letter, d in zip(s, x.shape):
                sizes[letter] = max(sizes.get(letter, 1), d)
        parts = []
        for s, x, p in zip(subs, inputs, cx.patterns):
            if p is None:
                continue
            letters = list(dict.fromkeys(out_subs + s))
            o = _letter_index(out_subs, out.shape, letters, sizes)
            i = _letter_index(s, x.shape, letters, sizes)
            o, i = np.broadcast_arrays(o, i)
            m = sparse().csr_array((np.ones(o.size, dtype=bool), (o.ravel(), i.ravel())),
                                   shape=(out.size, x.size))
            parts.append(_product(m, p))
        return union(parts, out.size, cx.n)
    return rule


def batched(*core_ranks):
    """Batched linear algebra with `core_ranks` trailing core axes per input, then per
    output: every element of an output's core depends on the whole core of each input
    in the same batch (batch axes broadcast)."""
    def rule(op, cx, *inputs, **attrs):
        k_in = len(inputs)
        outs = cx.outputs
        results = []
        for k_out, out in enumerate(outs):
            r_out = core_ranks[k_in + k_out]
            batch = out.shape[:out.ndim - r_out]
            nb = math.prod(batch)
            parts = []
            for x, p, r in zip(inputs, cx.patterns, core_ranks):
                if p is None:
                    continue
                xb = x.shape[:x.ndim - r]
                core = math.prod(x.shape[x.ndim - r:])
                per_batch = np.arange(math.prod(xb), dtype=_INDEX).reshape(xb)
                group = np.repeat(per_batch.ravel(), core)
                merged = group_union(p, group, per_batch.size)  # (batch of x, n)
                src = _broadcast_rows(xb, batch)
                parts.append(merged if src is None else take_rows(merged, src))
            batch_pattern = union(parts, nb, cx.n)
            core_out = math.prod(out.shape[out.ndim - r_out:])
            results.append(take_rows(batch_pattern,
                                     np.repeat(np.arange(nb, dtype=_INDEX), core_out)))
        return results[0] if len(results) == 1 else tuple(results)
    return rule


def _all_of(p, m, n):
    """m rows, each the union of all rows of p."""
    cols = np.unique(p.indices)
    indptr = np.arange(m + 1, dtype=_INDEX) * cols.size
    return csr(indptr, np.tile(cols.astype(_INDEX), m), (m, n))


def conservative(cx):
    """No rule: every output element depends on every element of every traced input."""
    traced = [p for p in cx.patterns if p is not None]
    whole = union([_all_of(p, 1, cx.n) for p in traced], 1, cx.n)
    return tuple(empty(o.size, cx.n) if o.dtype.kind not in "fc" else
                 _all_of(whole, o.size, cx.n) for o in cx.outputs)
