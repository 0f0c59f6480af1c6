"""Generic converters shared by op families (see pfor.py for the contract).

- elementwise: the op maps element to element (unary, or n-ary on equal shapes), so it
  runs unchanged on the stacked value.
- broadcasting: n-ary NumPy broadcasting; stacked inputs of lower per-iteration rank get
  size-1 axes after the loop axis so that the loop axis lines up, invariant inputs
  broadcast as they are.
- reduction: the `axis` attr shifts by one past the loop axis (None = every
  per-iteration axis).
- axis_shift(*names): the same shift for any attrs naming axes (cumsum, softmax ...).
"""
from vecjac._src.core.dispatch import apply
from vecjac._src.core.registry import lib


def broadcasting(op, cx, *inputs, **attrs):
    rank = 0
    for x, s in zip(inputs, cx.stacked):
        r = x.ndim - 1 if s else x.ndim
        if r > rank:
            rank = r
    args = inputs
    for k, (x, s) in enumerate(zip(inputs, cx.stacked)):
        if s and x.ndim - 1 < rank:
            if args is inputs:
                args = list(inputs)
            args[k] = lib.reshape(x, (x.shape[0],) + (1,) * (rank - x.ndim + 1) + x.shape[1:])
    return apply(op, *args, **attrs)


def elementwise(op, cx, *inputs, **attrs):
    if len(inputs) == 1:
        return apply(op, inputs[0], **attrs)
    return broadcasting(op, cx, *inputs, **attrs)


def _shift(axis, rank):
    if axis is None:
        return tuple(range(1, rank + 1))
    if isinstance(axis, tuple):
        return tuple(a + 1 for a in axis)
    return axis + 1


def reduction(op, cx, x, **attrs):
    """Reductions take one stacked input and an `axis` attr (None, int or tuple)."""
    attrs = dict(attrs)
    attrs["axis"] = _shift(attrs.get("axis"), x.ndim - 1)
    return apply(op, x, **attrs)


def axis_shift(*names):
    """Converter for single-input ops whose attrs `names` are non-negative axes."""
    def converter(op, cx, x, **attrs):
        attrs = dict(attrs)
        for name in names:
            if name in attrs:
                attrs[name] = _shift(attrs[name], x.ndim - 1)
        return apply(op, x, **attrs)
    return converter
