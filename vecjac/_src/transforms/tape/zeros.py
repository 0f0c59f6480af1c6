"""Structural zeros: where a selection put an exact zero into a cotangent or a tangent.

`where(c, sqrt(x), 0)` hands sqrt's branch a cotangent that is zero where c is false, and
sqrt's rule multiplies it by 1 / (2 sqrt(x)): 0 * inf = NaN at x = 0, though that branch
was never taken there. So every cotangent (in a backward pass) and every tangent (in an
accumulator) that a selection zeroed carries a ZeroMask of those positions:

- selecting ops (`Op.selects`: where, maximum, minimum) make masks: input k's cotangent
  is zero where the output is not input k (`Op.selected(e, k)`), and the output's
  tangent is zero where the input it takes has no tangent (or a masked one);
- element-wise ops (sparsity pattern `elementwise` or `broadcasting`) pass a mask on;
  unless the op keeps zeros by itself (`Op.preserves_zeros`: add, sub, neg, cast; and
  the selections, which are `where`s), its rule's result is set to exact zero at the
  masked positions with vj.where, so that 0 * inf and 0 / 0 give 0 there, and only there
  (the semantics, guaranteed and not: README, "Selections");
- a sum of (co)tangents is masked where all of them are; an input broadcast by the op
  gets the positions where all its copies are masked;
- any other op (reductions, products, layout) drops the mask: conservative, the
  (co)tangent is right, only its zeros are no longer known to be structural.

The fix is built from vecjac ops, so it is differentiable (the outer pass of a Hessian
sees the fix's where as a selection, and gets masks of its own), vectorized by pfor (a
loop-variant condition gives a stacked mask) and traced by vj.function. A mask is lazy:
its bool Tensor is computed when a rule first needs the fix, so a mask that only
passes through additions to a matmul, where it is dropped, costs no op. Masks live in
a table of one backward pass (`GradientTape._backward`) or of one accumulator, keyed by
tensor id, and go with their (co)tangent: they never reach a value the user sees.
"""
import numpy as np

from vecjac._src.core.dispatch import apply
from vecjac._src.core.registry import Entry, lib
from vecjac._src.core.tensor import Tensor
from vecjac._src.transforms.sparsity import patterns

ELEMENTWISE = (patterns.elementwise, patterns.broadcasting)

# A mask not yet computed holds the masks it is made of, and they the Tensors of their
# rules: past this many levels it is computed at once (which lets go of them), so that
# a long loop of selections neither keeps every step's inputs alive (an accumulator's
# masks live as long as their tangents) nor recurses deeper than Python allows.
MAX_DEPTH = 16


class ZeroMask:
    """Where a (co)tangent of some shape is exactly zero by a selection, computed on
    first use: a bool Tensor broadcastable to that shape, true where the (co)tangent is
    zero, or (`kept`) true where it is not. Selections give one sense or the other for
    free (where's cond is true where its x is kept and its y zero): no logical_not."""

    __slots__ = ("_make", "_value", "depth")

    def __init__(self, make, depth=1):
        self._make = make  # () -> (bool Tensor, kept)
        self._value = None
        self.depth = depth

    def value(self):
        v = self._value
        if v is None:
            v = self._value = self._make()
            self._make = None
            self.depth = 1
        return v


# The ops below run on bool Tensors of broadcastable shapes by construction: apply()
# them directly, without the public functions' checks (a third of a small op's cost).
def _zero(v):
    t, kept = v
    return apply(lib.LogicalNot, t) if kept else t


def _kept(v):
    t, kept = v
    return t if kept else apply(lib.LogicalNot, t)


def _made_of(make, *parts):
    depth = 1 + max(p.depth for p in parts)
    mask = ZeroMask(make, depth)
    if depth > MAX_DEPTH:
        mask.value()
    return mask


def either(a, b):
    """Zero where a or b is (None: nowhere)."""
    if a is None:
        return b
    if b is None:
        return a
    return _made_of(lambda: _either(a.value(), b.value()), a, b)


def _either(a, b):
    if a[1] or b[1]:  # kept where both keep
        return apply(lib.LogicalAnd, _kept(a), _kept(b)), True
    return apply(lib.LogicalOr, a[0], b[0]), False


def both(a, b):
    """Zero where a and b both are (None: nowhere)."""
    if a is None or b is None:
        return None
    return _made_of(lambda: _both(a.value(), b.value()), a, b)


def _both(a, b):
    if a[1] and b[1]:  # kept where either keeps
        return apply(lib.LogicalOr, a[0], b[0]), True
    return apply(lib.LogicalAnd, _zero(a), _zero(b)), False


def elementwise(op):
    """Output element i depends on input element i only (broadcast): its (co)tangent
    at i is made of the others' at i."""
    return type(op).pattern in ELEMENTWISE


def unselected(op, e, k):
    """Where input k of a selecting op does not reach its output (Op.selected, which
    reads e.inputs and e.attrs only: an accumulator's mask must not keep the output, whose
    tangent it goes with, alive)."""
    return ZeroMask(lambda: op.selected(e, k))


def _all_to(v, full, shape):
    """Mask value v (broadcastable to `full`) reduced to `shape` (which broadcasts to
    `full`): zero where every copy of an element is (kept where any copy is)."""
    m, kept = v
    if m.shape != full:
        m = lib.broadcast_to(m, full)
    lead = len(full) - len(shape)
    axes = tuple(range(lead)) + tuple(lead + i for i, s in enumerate(shape)
                                      if s == 1 and full[lead + i] != 1)
    if axes:
        m = (lib.reduce_any if kept else lib.reduce_all)(m, axis=axes)
    return (lib.reshape(m, shape) if m.shape != shape else m), kept


def reduced(m, full, shape):
    """The mask of an input of `shape` broadcast to `full` by an element-wise op."""
    return _made_of(lambda: _all_to(m.value(), full, shape), m)


def _fix(g, mask):
    """g with exact zeros where `mask` says: one where (select), g's dtype and shape."""
    t, kept = mask.value()
    if not isinstance(g, Tensor):
        return lib.where(t, g, 0) if kept else lib.where(t, 0, g)
    zero = Tensor(np.zeros((), g.dtype))
    return apply(lib.Select, t, g, zero) if kept else apply(lib.Select, t, zero, g)


# -- reverse mode -------------------------------------------------------------------------
def gradient(op, e, gs, mask):
    """The gradient rule of element-wise `op` with one output, for entry `e` (e.needs
    set) and output cotangent gs[0] of ZeroMask `mask` (None for a selecting op's
    unmasked one): the input cotangents, exact zero at the masked positions, and their
    masks (a ZeroMask or None per input)."""
    inputs, needs, selects = e.inputs, e.needs, op.selects
    shape = e.outputs[0].shape
    masks = [None] * len(inputs)
    for k, need in enumerate(needs):
        if need:
            masks[k] = either(unselected(op, e, k), mask) if (
                selects is not None and k in selects) else mask
    if mask is None or selects is not None or op.preserves_zeros:
        grads = op.gradient(e, *gs)
    else:
        grads = _fixed_gradient(op, e, gs, mask, shape, masks)
    for k, x in enumerate(inputs):
        if x.shape != shape and masks[k] is not None:
            masks[k] = reduced(masks[k], shape, x.shape)
    return grads, masks


def _fixed_gradient(op, e, gs, mask, shape, masks):
    """The rule's cotangents, with exact zeros at the masked positions. An input the op
    broadcasts sums its cotangent over its copies, masked ones included: the rule runs on
    the inputs broadcast to the output's shape, each cotangent is fixed, then summed."""
    inputs, needs = e.inputs, e.needs
    wide = [need and x.shape != shape for x, need in zip(inputs, needs)]
    if any(wide) and type(op).pattern is patterns.broadcasting:
        ew = Entry(op, tuple(lib.broadcast_to(x, shape) if w else x
                             for x, w in zip(inputs, wide)), e.outputs, e.attrs)
        ew.needs = needs
        grads = _as_list(op.gradient(ew, *gs), len(inputs))
        if all(g is None or not need or g.shape == shape
               for g, need in zip(grads, needs)):
            return [None if g is None or not need else
                    lib.unbroadcast(_fix(g, mask), x.shape) if w else _fix(g, mask)
                    for g, x, need, w in zip(grads, inputs, needs, wide)]
    grads = _as_list(op.gradient(e, *gs), len(inputs))
    out = []
    for k, (g, x, need) in enumerate(zip(grads, inputs, needs)):
        if g is None or not need:
            out.append(g)
        elif x.shape == shape and getattr(g, "shape", None) == shape:
            out.append(_fix(g, mask))
        else:  # cannot be fixed after the sum over the copies: drop the mask
            masks[k] = None
            out.append(g)
    return out


def _as_list(grads, n):
    if isinstance(grads, (tuple, list)):
        return list(grads)
    return [grads] if n == 1 else grads


# -- forward mode -------------------------------------------------------------------------
def tangent_mask(op, inputs, attrs, tangents, masks):
    """The ZeroMask of the tangent of op's one output, or None, from its `inputs`, the
    inputs' `tangents` (None: zero) and the accumulator's `masks` (tensor id ->
    ZeroMask)."""
    if not elementwise(op):
        return None
    selects = op.selects
    e = Entry(op, inputs, (), attrs) if selects is not None else None
    result = None
    plain = 0
    for k, (x, t) in enumerate(zip(inputs, tangents)):
        if t is None:
            continue  # zero everywhere: no condition on the output
        m = masks.get(x._tid)
        if selects is None:
            if m is None:
                return None
            term = m
        elif k not in selects:
            continue  # never passed on: its tangent does not reach the output
        else:
            # a selection passes one of two or more inputs at each position (or its only
            # input, or a constant): two unmasked tangents leave no position zero
            if m is None:
                plain += 1
                if plain > 1:
                    return None
            term = either(unselected(op, e, k), m)
        result = term if result is None else both(result, term)
    return result


def fix_tangent(op, dt, mask):
    """The tangent dt, exact zero where `mask` says (unless op keeps zeros itself)."""
    if op.preserves_zeros or op.selects is not None:
        return dt
    return _fix(dt, mask)
