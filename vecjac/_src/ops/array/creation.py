"""Tensors made from shapes and values: zeros, ones, fill, *_like, eye, linspace, range,
and the shape queries shape, size, rank.

Default float dtype is float64 (NumPy's), not TF's float32; integer results of range and
the shape queries are int32 as in TF. The *_like ops keep their input's dtype and,
inside pfor, vary with it when it varies; fill and linspace are differentiable in their
value arguments.
"""
import builtins
import numbers

import numpy as np

from vecjac._src.core.dispatch import apply, to_input
from vecjac._src.core.registry import Op, lib, register
from vecjac._src.core.samples import Arg, Sample
from vecjac._src.core.shapes import as_dtype, as_shape
from vecjac._src.core.tensor import Tensor
from vecjac._src.ops.array.shaping import broadcast_to, reshape
from vecjac._src.transforms.forward.rules import linear
from vecjac._src.transforms.pfor.converters import elementwise
from vecjac._src.transforms.sparsity import patterns

__all__ = ["zeros", "ones", "zeros_like", "ones_like", "fill", "eye",
           "shape", "shape_n", "size", "rank"]
# `range` is exported by vecjac/__init__.py explicitly: in __all__ it would shadow
# Python's builtin range in modules that star-import this one.


def _dtype(dtype, default=np.float64, fn=None, arg="dtype"):
    return as_dtype(default if dtype is None else dtype, fn, arg)


def _shape(shape, fn, arg="shape"):
    """Dims from an int, a list/tuple (of ints or scalar int Tensors) or a 1-D Tensor."""
    if isinstance(shape, (list, tuple)):
        if any(getattr(d, "_pfor", None) is not None for d in shape):
            raise ValueError(f"{fn}: {arg} cannot vary over a pfor loop")
        try:
            shape = [d.__index__() if hasattr(d, "__index__") else d for d in shape]
        except TypeError:
            raise TypeError(f"{fn}: {arg} must be a list of ints, got {shape!r}") from None
    return as_shape(shape, fn, arg)


def zeros(shape, dtype=None, name=None):
    """A tensor of zeros of `shape` (float64 by default). Output shape: shape."""
    return Tensor(np.zeros(_shape(shape, "zeros"), dtype=_dtype(dtype, fn="zeros")))


def ones(shape, dtype=None, name=None):
    """A tensor of ones of `shape` (float64 by default). Output shape: shape."""
    return Tensor(np.ones(_shape(shape, "ones"), dtype=_dtype(dtype, fn="ones")))


@register
class Fill(Op):
    complex_rules = True
    preserves_zeros = True
    pattern = patterns.broadcasting
    jvp = linear
    samples = (Sample("fill", (2, 3), Arg.float()), Sample("fill", (), Arg.float()))

    def forward(self, value, dims):
        return np.full(dims, value)

    def gradient(self, e, g):
        return lib.reduce_sum(g)

    def converter(self, cx, value, dims):
        n = cx.iters
        return broadcast_to(reshape(value, (n,) + (1,) * len(dims)), (n,) + dims)


def fill(dims, value, name=None):
    """A tensor of shape `dims` filled with the scalar `value` (its dtype is value's).

    Differentiable in `value` (the gradient sums the cotangent). Output shape: dims.
    """
    v = to_input(value, fn="fill", arg="value")
    if v.ndim:
        raise ValueError(f"fill: value must be a scalar, got shape {v.shape}")
    return apply(Fill, v, dims=_shape(dims, "fill", "dims"))


@register
class ZerosLike(Op):
    shape_only = True
    samples = (Sample("zeros_like", Arg.float(2, "n")),
               Sample("zeros_like", Arg.int("n", hi=3), dtype="float32"))
    differentiable = False
    converter = elementwise

    def forward(self, x, dtype):
        return np.zeros(x.shape, dtype=dtype)


@register
class OnesLike(Op):
    shape_only = True
    samples = (Sample("ones_like", Arg.float(2, "n")),
               Sample("ones_like", Arg.int("n", hi=3), dtype="float32"))
    differentiable = False
    converter = elementwise

    def forward(self, x, dtype):
        return np.ones(x.shape, dtype=dtype)


def zeros_like(input, dtype=None, name=None):
    """Zeros of input's shape and dtype (or `dtype`). Output shape: input.shape."""
    x = to_input(input, fn="zeros_like", arg="input")
    return apply(ZerosLike, x, dtype=_dtype(dtype, x.dtype, "zeros_like"))


def ones_like(input, dtype=None, name=None):
    """Ones of input's shape and dtype (or `dtype`). Output shape: input.shape."""
    x = to_input(input, fn="ones_like", arg="input")
    return apply(OnesLike, x, dtype=_dtype(dtype, x.dtype, "ones_like"))


def _count(value, fn, arg):
    if getattr(value, "_pfor", None) is not None:
        raise ValueError(f"{fn}: {arg} cannot vary over a pfor loop")
    if isinstance(value, (bool, np.bool_)) or not hasattr(value, "__index__"):
        raise TypeError(f"{fn}: {arg} must be an int, got {value!r}")
    try:
        n = value.__index__()
    except TypeError:
        raise TypeError(f"{fn}: {arg} must be an int, got {value!r}") from None
    if n < 0:
        raise ValueError(f"{fn}: {arg} must be >= 0, got {n}")
    return n


def eye(num_rows, num_columns=None, batch_shape=None, dtype=None, name=None):
    """Identity matrix (ones on the main diagonal), float64 by default.

    Output shape: batch_shape + (num_rows, num_columns or num_rows).
    """
    r = _count(num_rows, "eye", "num_rows")
    c = r if num_columns is None else _count(num_columns, "eye", "num_columns")
    batch = () if batch_shape is None else _shape(batch_shape, "eye", "batch_shape")
    m = np.eye(r, c, dtype=_dtype(dtype, fn="eye"))
    return Tensor(np.tile(m, batch + (1, 1)) if batch else m)


_RANGE_ORDER = [np.dtype(d) for d in ("int32", "int64", "float32", "float64")]


def _range_dtype(v):
    if isinstance(v, (Tensor, np.ndarray, np.generic)):
        return np.dtype(v.dtype)
    if isinstance(v, numbers.Integral):  # as TF: int32 unless it does not fit
        return np.dtype(np.int32 if -2**31 <= v < 2**31 else np.int64)
    return np.dtype(np.float64)


def range(start, limit=None, delta=1, dtype=None, name=None):  # noqa: A001 (TF's name)
    """start, start + delta, ... up to (not including) limit; range(n) is 0 .. n-1.

    dtype, unless given: the widest of the arguments' (Python ints count as int32, or int64
    when too large, Python floats as float64). Output shape: (max(0, ceil((limit - start) / delta)),).
    """
    if limit is None:
        start, limit = 0, start
    args = {"start": start, "limit": limit, "delta": delta}
    for arg, v in args.items():
        if getattr(v, "_pfor", None) is not None:
            raise ValueError(f"range: {arg} cannot vary over a pfor loop (the length of "
                             "the result would vary)")
        if isinstance(v, (bool, np.bool_)) or np.ndim(v) or (
                not isinstance(v, numbers.Real)
                and np.asarray(v).dtype.kind not in "iuf"):
            raise TypeError(f"range: {arg} must be a real scalar, got {v!r}")
    if dtype is None:
        kinds = [_range_dtype(v) for v in args.values()]
        dtype = builtins.max(kinds, key=lambda d: _RANGE_ORDER.index(d)
                             if d in _RANGE_ORDER else len(_RANGE_ORDER))
    dtype = _dtype(dtype, fn="range")
    s, l, d = (np.asarray(v).item() for v in args.values())
    for arg, v in zip(args, (s, l, d)):
        if not np.isfinite(v):
            raise ValueError(f"range: {arg} must be finite, got {v}")
    if d == 0:
        raise ValueError("range: delta must be non-zero")
    try:
        out = np.arange(s, l, d, dtype=np.float64 if dtype.kind == "f" else np.int64)
    except (ValueError, MemoryError):  # NumPy: "Maximum allowed size exceeded"
        raise ValueError(f"range: start={s}, limit={l}, delta={d} would give too many "
                         "elements") from None
    if dtype.kind in "iu" and out.size and (out.min() < np.iinfo(dtype).min
                                            or out.max() > np.iinfo(dtype).max):
        raise ValueError(f"range: values from {s} to {l} do not fit dtype {dtype}")
    return Tensor(out.astype(dtype))


def _out_type(out_type, fn):
    dt = _dtype(out_type, np.int32, fn, "out_type")
    if dt not in (np.dtype(np.int32), np.dtype(np.int64)):
        raise TypeError(f"{fn}: out_type must be int32 or int64, got {dt}")
    return dt


def shape(input, out_type=None, name=None):
    """The shape of `input` as a 1-D int32 Tensor (per-iteration inside pfor).

    Output shape: (rank,).
    """
    x = to_input(input, (), "shape", "input")
    return Tensor(np.asarray(x.shape, dtype=_out_type(out_type, "shape")))


def shape_n(input, out_type=None, name=None):
    """shape() of each Tensor of the list `input` (TF's tf.shape_n): a list."""
    if not isinstance(input, (list, tuple)):
        raise TypeError(f"shape_n: input must be a list of tensors, got "
                        f"{type(input).__name__}")
    if not input:
        raise ValueError("shape_n: input must hold at least one tensor (as TF's)")
    dtype = _out_type(out_type, "shape_n")
    return [Tensor(np.asarray(to_input(x, (), "shape_n", f"input[{k}]").shape, dtype=dtype))
            for k, x in enumerate(input)]


def size(input, out_type=None, name=None):
    """The number of elements of `input`, as an int32 scalar Tensor. Output shape: ()."""
    x = to_input(input, (), "size", "input")
    return Tensor(np.asarray(x.size, dtype=_out_type(out_type, "size")))


def rank(input, name=None):
    """The number of axes of `input`, as an int32 scalar Tensor. Output shape: ()."""
    return Tensor(np.asarray(to_input(input, (), "rank", "input").ndim, dtype=np.int32))

lib.publish(globals(), __all__)
