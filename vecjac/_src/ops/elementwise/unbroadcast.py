"""Summing a cotangent down to an input's shape: the adjoint of broadcasting, which every
broadcasting op's gradient applies to its inputs (vecjac/_src/ops/elementwise/arithmetic.py
and the ops that broadcast elsewhere import it from there)."""
import numpy as np

from vecjac._src.core.dispatch import to_input
from vecjac._src.core.shapes import as_shape
from vecjac._src.core.tensor import Tensor
from vecjac._src.ops.array.shaping import reshape
from vecjac._src.ops.reduce.reductions import Sum, reduce_sum


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


def unbroadcast_array(g, shape):
    """`unbroadcast` on an ndarray g (shape: a valid shape that broadcasts to g's), as the
    gradient rules on arrays need it (op_block.md: array_gradient): the same Sum over the
    same axes, so the same bits, without dispatching two ops."""
    if g.shape == shape:
        return g
    lead = g.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(
        lead + i for i, s in enumerate(shape) if s == 1 and g.shape[lead + i] != 1)
    if axes:
        g = Sum.forward(g, axes, False)
        if type(g) is not np.ndarray:
            g = np.asarray(g)
    return g.reshape(shape) if g.shape != shape else g
