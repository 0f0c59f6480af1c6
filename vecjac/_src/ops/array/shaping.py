"""Shape manipulation: reshape, transpose, expand_dims, squeeze, broadcast_to, concat,
stack, unstack, split, identity, stop_gradient (and, re-exported, the indexing, creation
and layout ops: gather, x[key], zeros, eye, range, tile, pad, slice ...).

These ops move elements without arithmetic, so their gradients are the inverse moves and
their converters only account for the loop axis 0.
"""
import math

import numpy as np

from vecjac._src.core.dispatch import apply, to_input
from vecjac._src.core.registry import Op, lib, register
from vecjac._src.core.samples import Arg, Sample
from vecjac._src.core.shapes import (as_bool, as_int, as_shape, broadcast_shapes, normalize_axes,
                                     normalize_axis)
from vecjac._src.core.tensor import Tensor
from vecjac._src.transforms.forward.rules import linear
from vecjac._src.transforms.pfor import banded
from vecjac._src.transforms.pfor.converters import elementwise
from vecjac._src.transforms.sparsity import patterns

__all__ = ["identity", "identity_n", "ensure_shape", "stop_gradient", "reshape", "transpose", "expand_dims", "squeeze",
           "broadcast_to", "concat", "stack", "unstack", "split"]


@register
class Identity(Op):
    complex_rules = True
    preserves_zeros = True
    fusible_layout = True
    pattern = patterns.elementwise
    jvp = linear
    structured = banded.passthrough
    samples = (Sample("identity", Arg.float(2, "n")), Sample("identity", Arg.float()))
    converter = elementwise

    def forward(self, x):
        return x

    def gradient(self, e, g):
        return g


def identity(input, name=None):
    """The same value as a new Tensor (a new node for tapes)."""
    return Identity(input if type(input) is Tensor else to_input(input, (), "identity", "input"))


def identity_n(input, name=None):
    """identity() of each Tensor of the list `input` (TF's tf.identity_n): a list."""
    if not isinstance(input, (list, tuple)):
        raise TypeError(f"identity_n: input must be a list of tensors, got "
                        f"{type(input).__name__}")
    if not input:
        raise ValueError("identity_n: input must hold at least one tensor (as TF's)")
    tensors = [to_input(x, (), "identity_n", f"input[{k}]") for k, x in enumerate(input)]
    return [identity(x) for x in tensors]


def ensure_shape(x, shape, name=None):
    """identity(x), after checking that x has `shape` (None: any size on that axis; a
    None shape: any rank). ValueError otherwise (TF's tf.ensure_shape)."""
    x = to_input(x, (), "ensure_shape", "x")
    if shape is not None:
        if not isinstance(shape, (list, tuple)) or not all(
                d is None or isinstance(d, (int, np.integer)) and not isinstance(d, bool)
                and d >= 0 for d in shape):
            raise TypeError(f"ensure_shape: shape must be a list of non-negative ints or "
                            f"None, got {shape!r}")
        if len(shape) != x.ndim or any(d is not None and d != n
                                       for d, n in zip(shape, x.shape)):
            raise ValueError(f"ensure_shape: shape of tensor {x.shape} is not compatible "
                             f"with expected shape {list(shape)}")
    return identity(x)


@register
class StopGradient(Op):
    """Identity whose output no tape connects to its input."""
    fusible_layout = True
    samples = (Sample("stop_gradient", Arg.float(2, "n")),)
    differentiable = False
    converter = elementwise

    def forward(self, x):
        return x


def stop_gradient(input, name=None):
    """The value of `input`, with no gradient flowing back through it."""
    complex_rules = True
    return StopGradient(input if type(input) is Tensor else
                        to_input(input, (), "stop_gradient", "input"))


# -- reshape -----------------------------------------------------------------------------
@register
class Reshape(Op):
    complex_rules = True
    fusible_layout = True
    pattern = patterns.layout
    jvp = linear
    structured = banded.passthrough
    samples = (Sample("reshape", Arg.float(2, 3, "n"), (3, -1)),
               Sample("reshape", Arg.float(), (1, 1)),
               Sample("reshape", Arg.float("n", 2), (-1,)))
    samples += (Sample("reshape", Arg.float("m", 2, 3), (-1, 3), dim_range=(0, 3)),)

    def forward(self, x, shape):
        return np.reshape(x, shape)

    def gradient(self, e, g):
        return reshape(g, e.inputs[0].shape)

    def converter(self, cx, x, shape):
        return apply(self, x, shape=(x.shape[0],) + shape)


def reshape(tensor, shape, name=None):
    """The elements of `tensor` in a new shape (one dimension may be -1)."""
    x = to_input(tensor, fn="reshape", arg="tensor")
    dims = as_shape(shape, "reshape", allow_unknown=True)
    size = x.size
    if -1 in dims:
        known = int(math.prod([d for d in dims if d != -1]))
        if known == 0 or size % known:
            raise ValueError(f"reshape: cannot reshape a tensor of shape {x.shape} "
                             f"({size} elements) into shape {dims}")
        dims = tuple(size // known if d == -1 else d for d in dims)
    elif int(math.prod(dims)) != size:
        raise ValueError(f"reshape: cannot reshape a tensor of shape {x.shape} "
                         f"({size} elements) into shape {dims}")
    if dims == x.shape:
        return x
    return apply(Reshape, x, shape=dims)


# -- transpose ---------------------------------------------------------------------------
@register
class Transpose(Op):
    complex_rules = True
    fusible_layout = True
    pattern = patterns.layout
    jvp = linear
    samples = (Sample("transpose", Arg.float(2, "n", 3), perm=(2, 0, 1)),
               Sample("transpose", Arg.float(2, "n")))
    samples += (Sample("transpose", Arg.float("m", "n", 2), perm=(1, 2, 0), dim_range=(0, 3)),)

    def forward(self, x, perm):
        return x.transpose(perm)  # the method: np.transpose's wrapper costs a microsecond

    def gradient(self, e, g):
        return transpose(g, tuple(np.argsort(e.attrs["perm"]).tolist()))

    def stacked_attrs(self, perm):
        return {"perm": (0,) + tuple(p + 1 for p in perm)}

    def converter(self, cx, x, perm):
        return apply(self, x, **self.stacked_attrs(perm))


def transpose(a, perm=None, conjugate=False, name=None):
    """Permute axes; perm=None reverses them (TF's default)."""
    x = to_input(a, fn="transpose", arg="a")
    if as_bool(conjugate, "transpose", "conjugate") and x.dtype.kind == "c":
        x = lib.conj(x)  # complex_parts.py loads after this module (it builds on it)
    if perm is None:
        perm = tuple(range(x.ndim))[::-1]
    elif type(perm) is tuple and all(type(p) is int for p in perm) and \
            sorted(perm) == list(range(x.ndim)):
        pass  # already a permutation of Python ints (the common, internal case)
    else:
        perm = tuple(normalize_axis(p, x.ndim, "transpose", "perm") for p in
                     np.asarray(perm).reshape(-1).tolist())
        if sorted(perm) != list(range(x.ndim)):
            raise ValueError(f"transpose: perm {perm} is not a permutation of the "
                             f"{x.ndim} axes of a tensor of shape {x.shape}")
    if perm == tuple(range(x.ndim)):
        return x
    return apply(Transpose, x, perm=perm)


# -- expand_dims / squeeze (reshapes with validation) -------------------------------------
def expand_dims(input, axis, name=None):
    """Insert a size-1 axis at `axis` (-rank-1 <= axis <= rank)."""
    x = to_input(input, fn="expand_dims", arg="input")
    ax = normalize_axis(axis, x.ndim + 1, "expand_dims")
    return reshape(x, x.shape[:ax] + (1,) + x.shape[ax:])


def squeeze(input, axis=None, name=None):
    """Remove size-1 axes (all of them, or those in `axis`)."""
    x = to_input(input, fn="squeeze", arg="input")
    axes = normalize_axes(axis, x.ndim, "squeeze")
    if axes is None:
        axes = tuple(i for i, d in enumerate(x.shape) if d == 1)
    for a in axes:
        if x.shape[a] != 1:
            raise ValueError(f"squeeze: cannot squeeze axis {a} of size {x.shape[a]} "
                             f"(shape {x.shape})")
    return reshape(x, tuple(d for i, d in enumerate(x.shape) if i not in axes))


# -- broadcast_to ------------------------------------------------------------------------
SMALL_BROADCAST = 256  # outputs up to this many elements are written, larger ones are views
@register
class BroadcastTo(Op):
    complex_rules = True
    fusible_layout = True
    pattern = patterns.layout
    jvp = linear
    samples = (Sample("broadcast_to", Arg.float(3, 1), (2, 3, 4)),
               Sample("broadcast_to", Arg.float(), (2, 3)),
               Sample("broadcast_to", Arg.float(1, 3), (2, 3)))

    def forward(self, x, shape):
        if math.prod(shape) <= SMALL_BROADCAST:
            # a copy: np.broadcast_to's view costs 2-3 us (an nditer and a Python
            # wrapper), writing a few dozen elements 0.3 us; every reduction's gradient
            # broadcasts its cotangent back, so small functions paid it per sum
            out = np.empty(shape, x.dtype)
            out[...] = x
            return out
        return np.broadcast_to(x, shape)

    def gradient(self, e, g):
        return lib.unbroadcast(g, e.inputs[0].shape)

    def converter(self, cx, x, shape):
        extra = len(shape) - (x.ndim - 1)
        if extra:
            x = reshape(x, (x.shape[0],) + (1,) * extra + x.shape[1:])
        return apply(self, x, shape=(x.shape[0],) + shape)


def broadcast_to(input, shape, name=None):
    """`input` broadcast to `shape` (NumPy rules; a read-only view, no copy)."""
    x = to_input(input, fn="broadcast_to", arg="input")
    dims = as_shape(shape, "broadcast_to")
    if x.shape == dims:
        return x
    if broadcast_shapes(x.shape, dims) != dims:
        raise ValueError(f"broadcast_to: cannot broadcast shape {x.shape} to {dims}")
    return apply(BroadcastTo, x, shape=dims)


# -- concat / stack / unstack ------------------------------------------------------------
@register
class ConcatV2(Op):
    complex_rules = True
    fusible_layout = True
    pattern = patterns.layout
    jvp = linear
    samples = (Sample("concat", [Arg.float(2, "n"), Arg.float(1, "n"), Arg.float(3, "n")], axis=0),
               Sample("concat", [Arg.float("n", 2), Arg.float("n", 1)], axis=-1))
    samples += (Sample("concat", [Arg.float("m", 2), Arg.float("n", 2)], axis=0,
                       dim_range=(0, 3)),)
    structured = banded.leading_concat

    def forward(self, *xs, axis):
        return np.concatenate(xs, axis=axis)

    def gradient(self, e, g):
        axis = e.attrs["axis"]
        bounds = np.cumsum([x.shape[axis] for x in e.inputs])[:-1].tolist()
        return tuple(split(g, bounds, axis=axis, _sections=False)) if len(e.inputs) > 1 else (g,)

    def stacked_attrs(self, axis):
        return {"axis": axis + 1}

    def converter(self, cx, *xs, axis):
        return apply(self, *cx.stack_all(xs), **self.stacked_attrs(axis))


def concat(values, axis, name=None):
    """Join tensors along an existing axis; other dimensions must agree."""
    if not isinstance(values, (list, tuple)) or not values:
        raise ValueError("concat: values must be a non-empty list of tensors")
    xs = [to_input(v, values, "concat", "values") for v in values]
    rank = xs[0].ndim
    if rank == 0:
        raise ValueError("concat: cannot concatenate scalars (rank 0); use vj.stack")
    ax = normalize_axis(axis, rank, "concat")
    for k, x in enumerate(xs):
        others, first = x.shape[:ax] + x.shape[ax + 1:], xs[0].shape[:ax] + xs[0].shape[ax + 1:]
        if x.ndim != rank or others != first:
            raise ValueError(f"concat: values[{k}] has shape {x.shape}, incompatible with "
                             f"values[0] shape {xs[0].shape} along axis {ax}")
    if len(xs) == 1:
        return xs[0]
    return apply(ConcatV2, *xs, axis=ax)


@register
class Pack(Op):
    complex_rules = True
    fusible_layout = True
    pattern = patterns.layout
    jvp = linear
    samples = (Sample("stack", [Arg.float(2, "n"), Arg.float(2, "n")], axis=1),
               Sample("stack", [Arg.float(), Arg.float(), Arg.float()]))

    def forward(self, *xs, axis):
        # filled in place: np.stack's checks and expand_dims cost 2-3x the copy for the
        # few small values of a typical call (forward mode stacks every ODE state)
        first = xs[0]
        dt, shape = first.dtype, first.shape
        for x in xs:
            if x.dtype != dt or x.shape != shape:
                return np.stack(xs, axis=axis)  # promotion, or NumPy's shape error
        out = np.empty(shape[:axis] + (len(xs),) + shape[axis:], dt)
        lead = (slice(None),) * axis
        for k, x in enumerate(xs):
            out[lead + (k,)] = x
        return out

    def gradient(self, e, g):
        return tuple(unstack(g, num=len(e.inputs), axis=e.attrs["axis"]))

    def stacked_attrs(self, axis):
        return {"axis": axis + 1}

    def converter(self, cx, *xs, axis):
        return apply(self, *cx.stack_all(xs), **self.stacked_attrs(axis))


def stack(values, axis=0, name=None):
    """Join tensors of equal shape along a new axis."""
    if not isinstance(values, (list, tuple)) or not values:
        raise ValueError("stack: values must be a non-empty list of tensors")
    xs = [to_input(v, values, "stack", "values") for v in values]
    for k, x in enumerate(xs):
        if x.shape != xs[0].shape:
            raise ValueError(f"stack: values[{k}] has shape {x.shape}, values[0] has "
                             f"shape {xs[0].shape}; all must be equal")
    ax = normalize_axis(axis, xs[0].ndim + 1, "stack")
    return apply(Pack, *xs, axis=ax)


@register
class Unpack(Op):
    complex_rules = True
    fusible_layout = True
    pattern = patterns.layout
    jvp = linear
    samples = (Sample("unstack", Arg.float(3, "n")), Sample("unstack", Arg.float(2, "n"), axis=1))
    n_outputs = None  # one per slice

    def forward(self, x, axis, num):
        return tuple(np.moveaxis(x, axis, 0))

    def gradient(self, e, *gs):
        return stack(list(gs), axis=e.attrs["axis"])

    def converter(self, cx, x, axis, num):
        return apply(self, x, axis=axis + 1, num=num)


def unstack(value, num=None, axis=0, name=None):
    """The slices of `value` along `axis`, as a list."""
    x = to_input(value, fn="unstack", arg="value")
    if x.ndim == 0:
        raise ValueError("unstack: cannot unstack a scalar value (rank 0)")
    ax = normalize_axis(axis, x.ndim, "unstack")
    if num is not None and as_int(num, "unstack", "num") != x.shape[ax]:
        raise ValueError(f"unstack: num={num} but axis {ax} has size {x.shape[ax]}")
    if x.shape[ax] == 0:
        return []
    return list(apply(Unpack, x, axis=ax, num=x.shape[ax]))


@register
class SplitV(Op):
    complex_rules = True
    fusible_layout = True
    pattern = patterns.layout
    jvp = linear
    samples = (Sample("split", Arg.float(4, "n"), 2),
               Sample("split", Arg.float("n", 5), [1, 3, 1], axis=1),
               Sample("split", Arg.float(4, "n"), [1, 3, 0]))  # an empty piece
    n_outputs = None
    structured = banded.leading_split

    def forward(self, x, bounds, axis):
        return tuple(np.split(x, bounds, axis=axis))

    def gradient(self, e, *gs):
        return concat(list(gs), axis=e.attrs["axis"])

    def converter(self, cx, x, bounds, axis):
        return apply(self, x, bounds=bounds, axis=axis + 1)


def split(value, num_or_size_splits, axis=0, num=None, name=None, _sections=True):
    """Split along `axis` into equal parts (an int) or parts of the given sizes (a list)."""
    x = to_input(value, fn="split", arg="value")
    ax = normalize_axis(axis, x.ndim, "split")
    size = x.shape[ax]
    if _sections:
        splits = num_or_size_splits
        if isinstance(splits, (bool, np.bool_)):
            raise TypeError(f"split: num_or_size_splits must be an int or a list of ints, "
                            f"got {splits!r}")
        if isinstance(splits, (int, np.integer)):
            k = int(splits)
            if k <= 0 or size % k:
                raise ValueError(f"split: cannot split axis {ax} of size {size} into {k} "
                                 "equal parts (num_or_size_splits)")
            sizes = [size // k] * k
        else:
            sizes = list(as_shape(splits, "split", "num_or_size_splits"))
            if sum(sizes) != size:
                raise ValueError(f"split: sizes {sizes} (num_or_size_splits) do not add up "
                                 f"to the size {size} of axis {ax}")
        bounds = np.cumsum(sizes)[:-1].tolist()
    else:
        bounds = list(num_or_size_splits)
    return list(apply(SplitV, x, bounds=tuple(bounds), axis=ax))

lib.publish(globals(), __all__)
