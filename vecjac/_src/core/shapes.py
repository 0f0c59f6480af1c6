"""Argument checks shared by the op library: axes, shapes, broadcasting; and which
sums run as a product with ones (`sum_as_product`: the Sum op and vj.function's fused
chains must agree on it, as they must give the same bits).

Every public op validates before any work, with an error naming the function, the
argument, what was expected and what was given.
"""
import math
import numbers

import numpy as np


def normalize_axis(axis, rank, fn, arg="axis"):
    """A non-negative int for one axis of a rank-`rank` tensor."""
    if hasattr(axis, "__index__") and not isinstance(axis, (bool, np.bool_)):
        try:
            axis = axis.__index__()
        except TypeError:
            pass
    if not isinstance(axis, numbers.Integral) or isinstance(axis, bool):
        raise TypeError(f"{fn}: {arg} must be an int, got {type(axis).__name__}")
    if not -rank <= axis < rank:
        raise ValueError(f"{fn}: {arg}={axis} is out of range for a tensor of rank {rank} "
                         f"(expected {-rank} <= {arg} < {rank})" if rank else
                         f"{fn}: {arg}={axis} is out of range for a scalar (rank 0)")
    return int(axis) % rank


def normalize_axes(axis, rank, fn, arg="axis"):
    """None (all axes) or a sorted tuple of distinct non-negative axes."""
    if axis is None:
        return None
    if type(axis) is int and -rank <= axis < rank:  # the commonest, without NumPy
        return (axis % rank,)
    if type(axis) is tuple and all(type(a) is int and -rank <= a < rank for a in axis):
        axes = [a % rank for a in axis]
    elif isinstance(axis, (list, tuple, np.ndarray)) or (
            hasattr(axis, "shape") and getattr(axis, "ndim", 0) == 1):
        axes = [normalize_axis(a, rank, fn, arg) for a in np.asarray(axis).reshape(-1).tolist()]
    else:
        axes = [normalize_axis(axis, rank, fn, arg)]
    if len(set(axes)) != len(axes):
        raise ValueError(f"{fn}: {arg} has repeated axes {axis}")
    return tuple(sorted(axes))


def sum_as_product(shape, axis):
    """(lead, n, inner) when a sum over `axis` (a sorted tuple) of a C-contiguous float
    array of `shape` runs as ones(n) @ x.reshape(lead, n, inner), else None: the axes
    are adjacent, before the last one, with 1 < inner <= 512 (where BLAS measured 2-10x
    faster than NumPy's row-by-row reduction; the summation order differs)."""
    if not axis:
        return None
    first, last = axis[0], axis[-1]
    if last >= len(shape) - 1 or last - first != len(axis) - 1:
        return None
    n = math.prod(shape[first:last + 1])
    inner = math.prod(shape[last + 1:])
    if n < 2 or not 1 < inner <= 512:
        return None
    return math.prod(shape[:first]), n, inner


def broadcast_shapes(*shapes):
    """NumPy's broadcast of `shapes` (tuples of ints), or None when they do not broadcast.
    Plain Python: np.broadcast_shapes builds an array per shape and costs 2-3 us, which
    every broadcasting op and gradient paid (0.3 us here for two short shapes)."""
    if len(shapes) == 2:  # the common case: one zip, no index arithmetic
        a, b = shapes
        if len(a) < len(b):
            a, b = b, a
        lead = len(a) - len(b)
        out = [int(d) for d in a[:lead]]
        for x, y in zip(a[lead:], b):
            if x == y or y == 1:
                out.append(int(x))
            elif x == 1:
                out.append(int(y))
            else:
                return None
        return tuple(out)
    ndim = max(map(len, shapes), default=0)
    out = []
    for k in range(-ndim, 0):
        size = 1
        for s in shapes:
            if len(s) >= -k:
                d = s[k]
                if d != 1:
                    if size == 1:
                        size = d
                    elif d != size:
                        return None
        out.append(int(size))
    return tuple(out)


def broadcast_shape(fn, *shapes, names=None):
    out = broadcast_shapes(*shapes)
    if out is None:
        names = names or [f"input {k}" for k in range(len(shapes))]
        described = ", ".join(f"{n} shape {tuple(s)}" for n, s in zip(names, shapes))
        raise ValueError(f"{fn}: shapes are not broadcastable: {described}")
    return out


def as_shape(shape, fn, arg="shape", allow_unknown=False):
    """A tuple of ints from a list/tuple/array/Tensor; -1 allowed once if allow_unknown."""
    if type(shape) is tuple and all(type(d) is int and d >= 0 for d in shape):
        return shape  # the common case (shapes computed from other shapes): no NumPy
    if hasattr(shape, "_value") and getattr(shape, "_pfor", None) is not None or \
            isinstance(shape, (list, tuple)) and any(
                getattr(d, "_pfor", None) is not None for d in shape):
        # an output shape that differs per iteration cannot be stacked (TF: "expected
        # to be loop invariant"), whether the whole shape or one entry varies
        raise ValueError(f"{fn}: {arg} cannot vary over a pfor loop (it must be loop "
                         "invariant: the output shape would differ per iteration)")
    try:
        arr = np.asarray(shape)
    except Exception:
        raise TypeError(f"{fn}: {arg} must be a list of ints, got {shape!r}") from None
    if arr.ndim > 1 or arr.dtype.kind not in "iu" and not (arr.size == 0):
        raise TypeError(f"{fn}: {arg} must be a list of ints, got {shape!r}")
    dims = tuple(int(d) for d in arr.reshape(-1))
    for d in dims:
        if d < 0 and not (allow_unknown and d == -1):
            raise ValueError(f"{fn}: {arg} has a negative dimension: {dims}")
    if allow_unknown and dims.count(-1) > 1:
        raise ValueError(f"{fn}: {arg} can have at most one -1, got {dims}")
    return dims


def check_float(x, fn, arg="x"):
    if x.dtype.kind not in "fc":
        raise TypeError(f"{fn}: {arg} must be a floating-point tensor, got dtype {x.dtype}")
    return x


def as_bool(value, fn, arg):
    """A Python bool from a bool, NumPy bool or the ints 0 / 1; TypeError otherwise."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, numbers.Integral) and value in (0, 1):
        return bool(value)
    raise TypeError(f"{fn}: {arg} must be a bool, got {value!r}")


def as_int(value, fn, arg, minimum=None):
    """A Python int from an int-like scalar (not bool, not float); `minimum` inclusive."""
    if isinstance(value, (bool, np.bool_)) or not hasattr(value, "__index__"):
        raise TypeError(f"{fn}: {arg} must be an int, got {value!r}")
    try:
        value = value.__index__()
    except TypeError:
        raise TypeError(f"{fn}: {arg} must be an int, got {value!r}") from None
    if minimum is not None and value < minimum:
        raise ValueError(f"{fn}: {arg} must be >= {minimum}, got {value}")
    return int(value)


def as_dtype(dtype, fn, arg="dtype", kinds="biufc"):
    """A NumPy dtype of one of `kinds` from a dtype, type or name; TypeError otherwise."""
    try:
        dt = np.dtype(dtype)
    except (TypeError, ValueError):
        raise TypeError(f"{fn}: {arg} must be a dtype (e.g. vj.float32), got "
                        f"{dtype!r}") from None
    if dtype is None or dt.kind not in kinds:
        raise TypeError(f"{fn}: {arg} must be a {_KIND_NAMES.get(kinds, 'numeric')} dtype, "
                        f"got {dtype!r}")
    return dt


_KIND_NAMES = {"biufc": "numeric (bool, int, float or complex)", "iu": "integer",
               "f": "floating-point", "fc": "floating-point or complex"}


def check_basic_key(shape, key):
    """The ints of a basic index `key` (a tuple of ints, slices, None, Ellipsis) against
    `shape`: NumPy's IndexError, with getitem's wording."""
    n_real = sum(1 for k in key if k is not None and k is not Ellipsis)
    if n_real > len(shape):
        raise IndexError(f"getitem: too many indices ({n_real}) for a tensor of rank {len(shape)}")
    if sum(1 for k in key if k is Ellipsis) > 1:
        raise IndexError("getitem: an index can only have a single ellipsis ('...')")
    dim = 0
    for pos, k in enumerate(key):
        if k is Ellipsis:
            dim = len(shape) - sum(1 for kk in key[pos + 1:] if kk is not None)
            continue
        if k is None:
            continue
        if isinstance(k, numbers.Integral) and not -shape[dim] <= k < shape[dim]:
            raise IndexError(f"getitem: index {k} is out of bounds for axis {dim} with "
                             f"size {shape[dim]}")
        dim += 1
