"""x[key] with slice bounds that vary over a pfor loop (`x_i[i:i + 1]` in loop_fn(i)).

A StridedSlice carries its key as an attribute: ints, known when the op is built. A
bound computed from the loop index has a value per iteration, so getitem builds a
DynamicStridedSlice instead: the bounds are an int64 input, `template` is the key with
each varying slice written as positions into that input. Outside a loop (and on each
iteration of the fallback) its forward is the strided slice of those ints.

Under pfor: with invariant bounds the stacked input is sliced once (the key behind one
more full slice, as StridedSlice's converter); with loop-variant bounds the op runs once
per iteration (the while-loop fallback, as TF's pfor does for a strided slice with a
loop-variant begin), which needs every iteration's slice to have the same shape: checked
first, with an error saying so. With fallback_to_while_loop=False it raises.
The gradient scatters into zeros at the same key (DynamicStridedSliceGrad); forward mode
slices the tangent (linear); the bounds are integers and carry no derivative.
"""
import operator

import numpy as np

from vecjac._src.core.context import value_read
from vecjac._src.core.dispatch import apply
from vecjac._src.core.registry import Op, register
from vecjac._src.core.samples import Arg, Sample
from vecjac._src.core.tensor import Tensor
from vecjac._src.ops.array.shaping import stack
from vecjac._src.ops.elementwise.logic import cast
from vecjac._src.transforms.forward.rules import linear

__all__ = []


class VaryingSlice:
    """A slice key part whose start, stop or step is a loop-variant Tensor (getitem's
    canonical form); the others are ints or None."""

    __slots__ = ("start", "stop", "step")

    def __init__(self, start, stop, step):
        self.start, self.stop, self.step = start, stop, step


def canonical_slice(k):
    """getitem's form of a slice key part: a slice of ints and None, or a VaryingSlice
    when a bound varies over a pfor loop (its other bounds ints or None)."""
    parts = (k.start, k.stop, k.step)
    varying = any(getattr(v, "_pfor", None) is not None for v in parts)
    bounds = [v if v is None or getattr(v, "_pfor", None) is not None else _int_bound(v)
              for v in parts]
    if type(bounds[2]) is int and bounds[2] == 0:
        raise ValueError("getitem: slice step cannot be zero")
    return VaryingSlice(*bounds) if varying else slice(*bounds)


def _int_bound(v):
    try:
        return operator.index(v)
    except TypeError:
        raise TypeError(f"getitem: slice bounds must be ints or None, got "
                        f"{type(v).__name__}") from None


def _key(template, bounds):
    """The NumPy key of `template` with its varying slices read from `bounds` (ints)."""
    out = []
    for k in template:
        if type(k) is tuple:  # ("bounds", start, stop, step): positions into bounds or None
            out.append(slice(*[None if p is None else int(bounds[p]) for p in k[1:]]))
        else:
            out.append(k)
    return tuple(out)


def _sliced_shape(shape, template, bounds):
    return np.broadcast_to(np.zeros((), np.int8), shape)[_key(template, bounds)].shape


@register
class DynamicStridedSlice(Op):
    complex_rules = True
    jvp = linear
    samples = (Sample(lambda x: apply(DynamicStridedSlice, x, Tensor(np.array([1, 3])),
                                      template=(("bounds", 0, 1, None), 0)),
                      Arg.float(4, "n")),)

    def forward(self, x, bounds, template):
        return x[_key(template, bounds)]

    def gradient(self, e, g):
        x, bounds = e.inputs
        return (apply(DynamicStridedSliceGrad, g, bounds, shape=x.shape,
                      template=e.attrs["template"]), None)

    def converter(self, cx, x, bounds, template):
        sx, sb = cx.stacked
        if not sb:  # one key for every iteration: slice behind the loop axis
            return apply(self, x, bounds, template=(slice(None),) + template)
        value_read(bounds, "internal")
        per_iteration = x.shape[1:] if sx else x.shape
        shapes = {_sliced_shape(per_iteration, template, b) for b in bounds._value}
        if len(shapes) > 1:
            raise ValueError(f"getitem: slice bounds that vary over a pfor loop give the "
                             f"iterations different shapes {sorted(shapes)}; pfor stacks "
                             f"equal shapes (slice a fixed length: x[i:i + 1]) or use "
                             f"vj.gather with loop-variant indices")
        return NotImplemented  # the per-iteration loop (fallback_to_while_loop)


@register
class DynamicStridedSliceGrad(Op):
    complex_rules = True
    jvp = linear
    covered_by = "DynamicStridedSlice"

    def forward(self, g, bounds, shape, template):
        out = np.zeros(shape, dtype=g.dtype)
        out[_key(template, bounds)] = g
        return out

    def gradient(self, e, gg):
        return apply(DynamicStridedSlice, gg, e.inputs[1], template=e.attrs["template"]), None

    def converter(self, cx, g, bounds, shape, template):
        if cx.stacked[1]:
            return NotImplemented
        return apply(self, g, bounds, shape=(cx.iters,) + shape,
                     template=(slice(None),) + template)


def varying_getitem(x, key):
    """x[key] for a key holding VaryingSlice parts (and ints, slices, None, ...)."""
    values, template = [], []
    for k in key:
        if type(k) is not VaryingSlice:
            template.append(k)
            continue
        slots = ["bounds"]
        for v in (k.start, k.stop, k.step):
            if v is None:
                slots.append(None)
            elif isinstance(v, Tensor):
                if v.shape != () or v.dtype.kind not in "iu":
                    raise TypeError(f"getitem: slice bounds must be int scalars or None, "
                                    f"got a Tensor of shape {v.shape} and dtype {v.dtype}")
                slots.append(len(values))
                values.append(cast(v, np.int64))
            else:
                slots.append(len(values))
                values.append(Tensor(np.asarray(v, np.int64)))
        template.append(tuple(slots))
    bounds = stack(values)
    return apply(DynamicStridedSlice, x, bounds, template=tuple(template))
