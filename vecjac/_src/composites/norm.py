"""Norms and clipping: norm, clip_by_value, clip_by_norm, l2_normalize.

All are compositions of primitives (reductions, sqrt, maximum, where ...), so their
gradients, higher derivatives and pfor rules come from those ops. Behaviour at 0 follows
TF exactly:
- norm: the gradient of a 2-norm / Frobenius / p-norm that is exactly 0 is NaN (as in TF,
  which also computes sqrt(sum(x^2)) plainly); ord=1 and ord=inf give 0 there. The
  spectral matrix norm (ord=2 on a pair of axes) is the largest singular value
  (vj.linalg.svd).
- clip_by_norm: safe at t = 0 (TF's double-`where` guard: gradient 1 / clip-through).
- l2_normalize: safe at 0 (the squared norm is floored at epsilon).
"""
import numbers

import numpy as np

from vecjac._src.core.dispatch import to_input
from vecjac._src.core.registry import lib
from vecjac._src.core.shapes import broadcast_shape, normalize_axes, normalize_axis
from vecjac._src.core.tensor import Tensor
from vecjac._src.core.variables import Variable
from vecjac._src.ops.array.creation import ones_like
from vecjac._src.ops.array.shaping import reshape, transpose
from vecjac._src.ops.elementwise.extrema import maximum, minimum
from vecjac._src.ops.elementwise.arithmetic import pow as tensor_pow
from vecjac._src.ops.elementwise.logic import greater, where
from vecjac._src.ops.elementwise.unary import abs as tensor_abs
from vecjac._src.ops.elementwise.unary import rsqrt, sqrt, square
from vecjac._src.ops.linalg.decomposition import svd
from vecjac._src.ops.reduce.reductions import reduce_max, reduce_sum

__all__ = ["norm", "clip_by_value", "clip_by_norm", "l2_normalize"]


def _float_input(x, fn, arg):
    x = to_input(x, (), fn, arg)
    if x.dtype.kind not in "fc":
        raise TypeError(f"{fn}: {arg} must be a floating-point tensor, got dtype {x.dtype}")
    return x


def _is_tensor_like(v):
    return isinstance(v, (Tensor, Variable))


def _like(value, t, fn, arg):
    """`value` as a Tensor of t's dtype: Python / NumPy values are converted (as TF does
    for non-Tensor arguments), Tensors of another dtype are an error."""
    if _is_tensor_like(value):
        v = to_input(value, (), fn, arg)
        if v.dtype != t.dtype:
            raise TypeError(f"{fn}: {arg} has dtype {v.dtype} but t has dtype {t.dtype}; "
                            "use vj.cast")
        return v
    arr = np.asarray(value)
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"{fn}: {arg} must be a real number or tensor, got {value!r}")
    return Tensor(arr.astype(t.dtype))


# -- norm --------------------------------------------------------------------------------


def _check_ord(ord, matrix):
    if isinstance(ord, str):
        if ord in ("euclidean", "fro"):
            return ord
    elif isinstance(ord, numbers.Real) and not isinstance(ord, bool):
        if matrix and ord in (1, 2, np.inf):
            return ord
        if not matrix and ord > 0:
            return ord
    kind = "matrix" if matrix else "vector"
    expected = ("'euclidean', 'fro', 1, 2 or np.inf" if matrix else
                "'euclidean', 'fro', 1, 2, np.inf or another positive real p")
    raise ValueError(f"norm: ord must be a supported {kind} norm ({expected}), got {ord!r}")


def _vector_norm(x, ord, axis, keepdims):
    if ord in ("euclidean", "fro", 2):
        sq = square(tensor_abs(x)) if x.dtype.kind == "c" else square(x)
        return sqrt(reduce_sum(sq, axis=axis, keepdims=keepdims))
    if ord == 1:
        return reduce_sum(tensor_abs(x), axis=axis, keepdims=keepdims)
    if ord == np.inf:
        return reduce_max(tensor_abs(x), axis=axis, keepdims=keepdims)
    p = float(ord)
    return tensor_pow(reduce_sum(tensor_pow(tensor_abs(x), p), axis=axis, keepdims=keepdims), 1.0 / p)


def _matrix_norm(x, ord, axes, keepdims):
    rows, cols = axes
    if ord in ("euclidean", "fro"):
        return _vector_norm(x, "euclidean", tuple(sorted(axes)), keepdims)
    if ord == 2:  # the largest singular value
        kept = tuple(k for k in range(x.ndim) if k not in axes)
        s = svd(transpose(x, kept + (rows, cols)), compute_uv=False)
        out = reduce_max(s, axis=-1)
        if not keepdims:
            return out
        return reshape(out, tuple(1 if k in axes else n for k, n in enumerate(x.shape)))
    # ord=1: largest column sum (sum over rows); ord=inf: largest row sum
    summed, over = (rows, cols) if ord == 1 else (cols, rows)
    out = reduce_max(reduce_sum(tensor_abs(x), axis=summed, keepdims=True), axis=over,
                     keepdims=True)
    if keepdims:
        return out
    return reshape(out, tuple(n for i, n in enumerate(x.shape) if i not in axes))


def norm(tensor, ord="euclidean", axis=None, keepdims=None, name=None):
    """Vector or matrix norm (TF's tf.norm).

    axis=None: the whole tensor as one vector; an int: vector norms along that axis; a
    pair of ints: matrix norms over those two axes. ord: 'euclidean' / 'fro' (also
    accepted for vectors, where both mean 2), 1, 2, np.inf, or any p > 0 for vectors;
    'euclidean' / 'fro', 1, 2 (the largest singular value), np.inf for matrices. Output shape: tensor.shape without the
    reduced axes (kept as size 1 with keepdims=True).
    """
    x = _float_input(tensor, "norm", "tensor")
    if keepdims is None:
        keepdims = False
    if not isinstance(keepdims, (bool, np.bool_)):
        raise TypeError(f"norm: keepdims must be a bool, got {keepdims!r}")
    keepdims = bool(keepdims)
    if isinstance(axis, (list, tuple)) and len(axis) == 2:
        axes = tuple(normalize_axis(a, x.ndim, "norm") for a in axis)
        if axes[0] == axes[1]:
            raise ValueError(f"norm: the two matrix axes must differ, got axis={axis}")
        return _matrix_norm(x, _check_ord(ord, True), axes, keepdims)
    if isinstance(axis, (list, tuple)) and len(axis) == 1:
        axis = axis[0]
    if axis is not None and (isinstance(axis, (list, tuple, bool)) or
                             not isinstance(axis, (numbers.Integral, np.integer))):
        raise ValueError(f"norm: axis must be None, an int or a pair of ints, got {axis!r}")
    if axis is None and x.ndim == 0:
        raise ValueError("norm: tensor must have rank >= 1, got a scalar")
    axes = normalize_axes(axis, x.ndim, "norm")
    return _vector_norm(x, _check_ord(ord, False), axes, keepdims)


# -- clipping ----------------------------------------------------------------------------
def clip_by_value(t, clip_value_min, clip_value_max, name=None):
    """t with values below clip_value_min / above clip_value_max replaced by them.

    The bounds broadcast against t but may not enlarge its shape. Gradient: t's cotangent
    passes where clip_value_min <= t <= clip_value_max (boundaries included, as TF's
    minimum/maximum composition), otherwise it goes to the active bound. Where the bounds
    cross (min > max) the result is clip_value_min, as in TF. Output shape: t.shape.
    """
    t = to_input(t, fn="clip_by_value", arg="t")
    if t.dtype.kind not in "iuf":
        raise TypeError(f"clip_by_value: t must be a real (int or float) tensor, got dtype "
                        f"{t.dtype}")
    lo = _like(clip_value_min, t, "clip_by_value", "clip_value_min")
    hi = _like(clip_value_max, t, "clip_by_value", "clip_value_max")
    shape = broadcast_shape("clip_by_value", t.shape, lo.shape, hi.shape,
                            names=("t", "clip_value_min", "clip_value_max"))
    if shape != t.shape:
        raise ValueError(f"clip_by_value: clip values of shapes {lo.shape} and {hi.shape} "
                         f"would broadcast t from {t.shape} to {shape}")
    return maximum(minimum(t, hi), lo)


def clip_by_norm(t, clip_norm, axes=None, name=None):
    """t * clip_norm / max(||t||_2, clip_norm), the norm taken over `axes` (None: all).

    Leaves t unchanged where its norm is at most clip_norm (a positive scalar or a tensor
    broadcastable without enlarging t). The gradient is finite at t = 0 (as TF). Output
    shape: t.shape.
    """
    t = _float_input(t, "clip_by_norm", "t")
    c = _like(clip_norm, t, "clip_by_norm", "clip_norm")
    if broadcast_shape("clip_by_norm", t.shape, c.shape, names=("t", "clip_norm")) != t.shape:
        raise ValueError(f"clip_by_norm: clip_norm of shape {c.shape} would broadcast t "
                         f"from {t.shape}")
    axes = normalize_axes(axes, t.ndim, "clip_by_norm", "axes")
    l2sum = reduce_sum(t * t, axis=axes, keepdims=True)
    positive = greater(l2sum, 0)
    # sqrt only ever sees positive values: its gradient at 0 would be inf * 0 = NaN
    l2norm = where(positive, sqrt(where(positive, l2sum, ones_like(l2sum))), l2sum)
    return t * c / maximum(l2norm, c)


def l2_normalize(x, axis=None, epsilon=1e-12, name=None, dim=None):
    """x / sqrt(max(sum(x^2, axis), epsilon)); output shape x.shape. Safe at x = 0."""
    x = _float_input(x, "l2_normalize", "x")
    if dim is not None:
        if axis is not None:
            raise ValueError("l2_normalize: give axis or its old name dim, not both")
        axis = dim
    if not isinstance(epsilon, numbers.Real) or isinstance(epsilon, bool) or epsilon < 0:
        raise ValueError(f"l2_normalize: epsilon must be a non-negative float, got "
                         f"{epsilon!r}")
    axes = normalize_axes(axis, x.ndim, "l2_normalize")
    square_sum = reduce_sum(x * x, axis=axes, keepdims=True)
    return x * rsqrt(maximum(square_sum, float(epsilon)))

lib.publish(globals(), __all__)
