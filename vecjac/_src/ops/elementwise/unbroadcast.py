"""Summing a cotangent down to an input's shape: the adjoint of broadcasting, which every
broadcasting op's gradient applies to its inputs (vecjac/_src/ops/elementwise/arithmetic.py
and the ops that broadcast elsewhere import it from there)."""
from vecjac._src.core.dispatch import to_input
from vecjac._src.core.shapes import as_shape
from vecjac._src.core.tensor import Tensor
from vecjac._src.ops.array.shaping import reshape
from vecjac._src.ops.reduce.reductions import reduce_sum


def unbroadcast(g, shape):
    """Sum `g` down to `shape`: the adjoint of broadcasting `shape` to g.shape."""
    if type(g) is not Tensor:
        g = to_input(g, fn="unbroadcast", arg="g")
    if g.shape == shape:  # (a Tensor's shape: valid) the commonest, every same-shape rule
        return g
    if type(shape) is not tuple or not all(type(d) is int and d >= 0 for d in shape):
        shape = as_shape(shape, "unbroadcast")
        if g.shape == shape:
            return g
    lead = len(g.shape) - len(shape)
    if lead < 0 or any(s != 1 and s != n for s, n in zip(shape, g.shape[lead:])):
        raise ValueError(f"unbroadcast: g of shape {g.shape} is not a broadcast of shape "
                         f"{shape}")
    axes = tuple(range(lead)) + tuple(
        lead + i for i, s in enumerate(shape) if s == 1 and g.shape[lead + i] != 1)
    if axes:
        g = reduce_sum(g, axis=axes)
    return reshape(g, shape) if g.shape != shape else g


def broadcast_needed(e, g):
    """Whether a wanted input's cotangent must be summed down from g's shape."""
    for t, need in zip(e.inputs, e.needs):
        if need and t.shape != g.shape:
            return True
    return False
