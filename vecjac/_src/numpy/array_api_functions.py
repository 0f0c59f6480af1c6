"""The array API's searching, sorting, statistical, set, utility, indexing and linear
algebra functions on vecjac Tensors.

Each goes through NumPy's dispatch (vecjac/_src/numpy/dispatch.py) to the vecjac ops, so
reductions, sorts (values gathered at ArgSort's positions), `take`, `where`, `matmul`,
`tensordot` and `vecdot` are differentiable and vectorize in pfor. Positions (argmax,
argsort, searchsorted, nonzero) and the set functions have no derivative: the set functions
are computed by NumPy (np.unique_all ...), which refuses or warns like any NumPy function
without a vecjac op when a transform follows a floating input.
"""
import numpy as np

from vecjac._src.core.tensor import Tensor
from vecjac._src.numpy.array_api_dtypes import dtype_of, promote, standard
from vecjac._src.numpy.array_api_elementwise import as_tensor, operand, wrap
from vecjac._src.ops.elementwise import logic as _lo


def _axis_arg(axis):
    return tuple(axis) if isinstance(axis, list) else axis


# -- searching -----------------------------------------------------------------------------------
def _arg_reduction(name, fn):
    def reduction(x, /, *, axis=None, keepdims=False):
        x = as_tensor(x, f"{name}: x")
        result = wrap(fn(x, axis=axis, keepdims=keepdims))
        return result if result.dtype == np.int64 else wrap(result.astype(np.int64))
    standard(name)(reduction)


_arg_reduction("argmax", np.argmax)
_arg_reduction("argmin", np.argmin)


@standard("nonzero")
def _nonzero(x, /):
    x = as_tensor(x, "nonzero: x")
    if x.ndim == 0:
        raise ValueError("nonzero: x must have at least one dimension (the standard leaves "
                         "a 0-d x undefined), got shape ()")
    return tuple(Tensor(np.array(i)) for i in np.nonzero(x.numpy()))


@standard("searchsorted")
def _searchsorted(x1, x2, /, *, side="left", sorter=None):
    x1, x2 = as_tensor(x1, "searchsorted: x1"), as_tensor(x2, "searchsorted: x2")
    if sorter is not None:
        x1 = wrap(np.take(x1, as_tensor(sorter, "searchsorted: sorter")))
    return wrap(np.searchsorted(x1, x2, side=side))


@standard("where")
def _where(condition, x1, x2, /):
    cond = as_tensor(condition, "where: condition")
    return wrap(np.where(cond, operand(x1, "where: x1"), operand(x2, "where: x2")))


# -- sorting -------------------------------------------------------------------------------------
@standard("argsort")
def _argsort(x, /, *, axis=-1, descending=False, stable=True):
    """Positions sorting x along `axis`; `descending` keeps equal elements in their order
    when `stable` (the ascending stable sort of the reversed array, reversed back)."""
    x = as_tensor(x, "argsort: x")
    if not descending:
        return wrap(np.argsort(x, axis=axis, stable=True))
    if x.ndim == 0:
        return wrap(np.argsort(x, axis=axis, stable=True))
    n = x.shape[axis]
    reversed_order = np.argsort(np.flip(x, axis=axis), axis=axis, stable=True)
    return wrap(np.subtract(n - 1, np.flip(reversed_order, axis=axis)))


@standard("sort")
def _sort(x, /, *, axis=-1, descending=False, stable=True):
    """x sorted along `axis`: its values gathered at argsort's positions (differentiable)."""
    x = as_tensor(x, "sort: x")
    if x.ndim == 0:
        return x
    order = _argsort(x, axis=axis, descending=descending, stable=stable)
    return wrap(np.take_along_axis(x, order, axis=axis))


# -- statistics --------------------------------------------------------------------------------
def _accumulator_dtype(x, dtype, name):
    """sum / prod / cumulative_sum's dtype: the given one, else x's, widened to the default
    integer (int64) for bool and signed, uint64 for unsigned integers, as the standard says."""
    if dtype is not None:
        return dtype_of(dtype, f"{name}: dtype")
    if x.dtype.kind in "bi":
        return np.dtype("int64")
    if x.dtype.kind == "u":
        return np.dtype("uint64")
    return x.dtype


def _cast(x, dtype):
    return x if x.dtype == dtype else _lo.cast(x, dtype)


@standard("sum")
def _sum(x, /, *, axis=None, dtype=None, keepdims=False):
    x = as_tensor(x, "sum: x")
    dt = _accumulator_dtype(x, dtype, "sum")
    return wrap(np.sum(_cast(x, dt), axis=_axis_arg(axis), dtype=dt, keepdims=keepdims))


@standard("prod")
def _prod(x, /, *, axis=None, dtype=None, keepdims=False):
    x = as_tensor(x, "prod: x")
    dt = _accumulator_dtype(x, dtype, "prod")
    return wrap(np.prod(_cast(x, dt), axis=_axis_arg(axis), dtype=dt, keepdims=keepdims))


def _reduction(name, fn):
    def reduction(x, /, *, axis=None, keepdims=False):
        return wrap(fn(as_tensor(x, f"{name}: x"), axis=_axis_arg(axis), keepdims=keepdims))
    standard(name)(reduction)


_reduction("max", np.max)
_reduction("min", np.min)
_reduction("mean", np.mean)
_reduction("all", np.all)
_reduction("any", np.any)


def _spread(name, fn):
    def spread(x, /, *, axis=None, correction=0.0, keepdims=False):
        return wrap(fn(as_tensor(x, f"{name}: x"), axis=_axis_arg(axis), ddof=correction,
                       keepdims=keepdims))
    standard(name)(spread)


_spread("std", np.std)
_spread("var", np.var)


@standard("cumulative_sum")
def _cumulative_sum(x, /, *, axis=None, dtype=None, include_initial=False):
    """Running sums along `axis` (needed for more than one dimension); with
    `include_initial` the first entry is the empty sum 0 (one more entry along axis)."""
    x = as_tensor(x, "cumulative_sum: x")
    if axis is None:
        if x.ndim > 1:
            raise ValueError(f"cumulative_sum: axis is needed for an array of more than one "
                             f"dimension, got shape {x.shape}")
        axis = 0
    dt = _accumulator_dtype(x, dtype, "cumulative_sum")
    x = _cast(x, dt)
    sums = wrap(np.cumsum(x, axis=axis, dtype=dt))
    if include_initial:
        shape = list(x.shape)
        shape[axis] = 1
        sums = wrap(np.concatenate([Tensor(np.zeros(shape, x.dtype)), sums], axis=axis))
    return sums


# -- sets (NumPy computes them: no derivative) --------------------------------------------------
def _set_function(name, fn):
    def set_function(x, /):
        result = fn(as_tensor(x, f"{name}: x"))
        if isinstance(result, tuple):  # a named tuple: its fields as Tensors
            return type(result)(*(wrap(r) for r in result))
        return wrap(result)
    standard(name)(set_function)


_set_function("unique_all", np.unique_all)
_set_function("unique_counts", np.unique_counts)
_set_function("unique_inverse", np.unique_inverse)
_set_function("unique_values", np.unique_values)


# -- indexing ------------------------------------------------------------------------------------
@standard("take")
def _take(x, indices, /, *, axis=None):
    x = as_tensor(x, "take: x")
    if axis is None and x.ndim != 1:
        raise ValueError(f"take: axis is needed for an array of {x.ndim} dimensions (shape "
                         f"{x.shape})")
    return wrap(np.take(x, as_tensor(indices, "take: indices"), axis=axis))


# -- linear algebra ------------------------------------------------------------------------------
def _promoted(x1, x2, name):
    """Both operands as Tensors of their common dtype (vecjac's products need one dtype)."""
    x1, x2 = as_tensor(x1, f"{name}: x1"), as_tensor(x2, f"{name}: x2")
    dt = promote([x1.dtype, x2.dtype], name)
    return _cast(x1, dt), _cast(x2, dt)


@standard("matmul")
def _matmul(x1, x2, /):
    return wrap(np.matmul(*_promoted(x1, x2, "matmul")))


@standard("matrix_transpose")
def _matrix_transpose(x, /):
    x = as_tensor(x, "matrix_transpose: x")
    if x.ndim < 2:
        raise ValueError(f"matrix_transpose: x must have at least 2 dimensions, got shape "
                         f"{x.shape}")
    return wrap(np.matrix_transpose(x))


@standard("tensordot")
def _tensordot(x1, x2, /, *, axes=2):
    return wrap(np.tensordot(*_promoted(x1, x2, "tensordot"), axes=axes))


@standard("vecdot")
def _vecdot(x1, x2, /, *, axis=-1):
    """The dot products of x1 and x2 along `axis` (the other axes broadcast; the contracted
    one must have one length in both, as the standard says: no broadcasting there)."""
    x1, x2 = _promoted(x1, x2, "vecdot")
    if x1.dtype.kind == "c":  # the standard conjugates x1 (complex: NumPy, no derivative)
        x1 = wrap(np.conjugate(x1))
    nd = max(x1.ndim, x2.ndim)
    last = axis - nd if axis >= 0 else axis  # counted from the end in both operands
    if not -min(x1.ndim, x2.ndim) <= last < 0:
        raise ValueError(f"vecdot: axis {axis} is out of range for shapes {x1.shape} and "
                         f"{x2.shape}")
    if x1.shape[last] != x2.shape[last]:
        raise ValueError(f"vecdot: the contracted axis {axis} has length {x1.shape[last]} in "
                         f"x1 and {x2.shape[last]} in x2")
    # (vecjac's sum widens small integers; the standard keeps the operands' dtype)
    return _cast(wrap(np.linalg.vecdot(x1, x2, axis=last)), x1.dtype)
