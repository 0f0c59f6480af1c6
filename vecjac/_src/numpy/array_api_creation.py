"""The array API's creation and manipulation functions on vecjac Tensors.

Creation from Python numbers (arange, zeros, eye, full ...) has nothing to differentiate:
NumPy builds the value and it becomes a Tensor. Functions of arrays (asarray of Tensors,
linspace of Tensor bounds, tril, meshgrid, and every manipulation function) go through
NumPy's dispatch to the vecjac ops (vecjac/_src/numpy/dispatch.py), so they are
differentiable and vectorize in pfor as `np.concatenate(...)` does.

Tensors are immutable, so `copy=` never changes a result: a Tensor "copy" and the Tensor
itself are the same value. `copy=False` is refused (ValueError) only where the standard
asks, when a new array must be made from data that is not a Tensor.
"""
import operator

import numpy as np

from vecjac._src.core.dispatch import convert_to_tensor
from vecjac._src.core.tensor import Tensor, as_array
from vecjac._src.core.variables import Variable
from vecjac._src.numpy.array_api_dtypes import check_device, dtype_of, promote, standard
from vecjac._src.numpy.array_api_elementwise import as_tensor, wrap
from vecjac._src.ops.elementwise import logic as _lo


def _dtype_arg(dtype, name):
    return None if dtype is None else dtype_of(dtype, f"{name}: dtype")


def _shape_arg(shape, name):
    try:
        return (operator.index(shape),) if not isinstance(shape, (tuple, list)) else \
            tuple(operator.index(s) for s in shape)
    except TypeError:
        raise TypeError(f"{name}: shape must be an int or a tuple of ints, got "
                        f"{shape!r}") from None


# -- creation ------------------------------------------------------------------------------------
@standard("asarray")
def _asarray(obj, /, *, dtype=None, device=None, copy=None):
    """A Tensor of `obj`: a Tensor is returned as it is (cast if `dtype` differs, which is
    differentiable), a Variable is read, a nested list holding Tensors is stacked
    (differentiable); other data is copied into a new Tensor."""
    check_device(device, "asarray")
    dt = _dtype_arg(dtype, "asarray")
    if isinstance(obj, (Tensor, Variable)):
        x = as_tensor(obj, "asarray: obj")
        if dt is not None and x.dtype != dt:
            if copy is False:
                raise ValueError(f"asarray: copy=False, but casting {x.dtype} to {dt} makes "
                                 "a new array")
            return _lo.cast(x, dt)
        return x
    if copy is False:
        raise ValueError("asarray: copy=False needs an array to share, but a vecjac Tensor "
                         f"cannot share the memory of a {type(obj).__name__}")
    if isinstance(obj, (list, tuple)):
        return convert_to_tensor(obj, dtype=dt, name="asarray: obj")
    if dt is None and isinstance(obj, float):
        dt = np.dtype("float64")
    return Tensor(as_array(obj, dt, "asarray: obj"))


@standard("arange")
def _arange(start, /, stop=None, step=1, *, dtype=None, device=None):
    check_device(device, "arange")
    if stop is None:
        start, stop = 0, start
    return Tensor(np.arange(start, stop, step, dtype=_dtype_arg(dtype, "arange")))


def _filled(name, fill):
    def fn(shape, *, dtype=None, device=None):
        check_device(device, name)
        dt = _dtype_arg(dtype, name) or np.dtype("float64")
        return Tensor(np.full(_shape_arg(shape, name), fill, dtype=dt))
    standard(name)(fn)


_filled("empty", 0)
_filled("zeros", 0)
_filled("ones", 1)


@standard("full")
def _full(shape, fill_value, *, dtype=None, device=None):
    check_device(device, "full")
    if isinstance(fill_value, (Tensor, Variable)):  # a Tensor fill: differentiable
        fill = as_tensor(fill_value, "full: fill_value")
        fill = fill if dtype is None else _asarray(fill, dtype=dtype)
        return wrap(np.broadcast_to(fill, _shape_arg(shape, "full")))
    dt = _dtype_arg(dtype, "full")
    if dt is None and type(fill_value) not in (bool, int, float, complex):
        raise TypeError(f"full: fill_value must be a bool, int, float or complex, got "
                        f"{type(fill_value).__name__}")
    return Tensor(np.full(_shape_arg(shape, "full"), fill_value, dtype=dt))


def _filled_like(name, fill):
    def fn(x, /, *, dtype=None, device=None):
        check_device(device, name)
        x = as_tensor(x, f"{name}: x")
        return Tensor(np.full(x.shape, fill, dtype=_dtype_arg(dtype, name) or x.dtype))
    standard(name)(fn)


_filled_like("empty_like", 0)
_filled_like("zeros_like", 0)
_filled_like("ones_like", 1)


@standard("full_like")
def _full_like(x, /, fill_value, *, dtype=None, device=None):
    check_device(device, "full_like")
    x = as_tensor(x, "full_like: x")
    return _full(x.shape, fill_value, dtype=dtype or x.dtype)


@standard("eye")
def _eye(n_rows, n_cols=None, /, *, k=0, dtype=None, device=None):
    check_device(device, "eye")
    return Tensor(np.eye(n_rows, n_cols, k=k, dtype=_dtype_arg(dtype, "eye") or np.float64))


@standard("from_dlpack")
def _from_dlpack(x, /, *, device=None, copy=None):
    check_device(device, "from_dlpack")
    if isinstance(x, (Tensor, Variable)):  # vecjac's own: the same immutable value
        return as_tensor(x, "from_dlpack: x")
    if copy is False:
        raise ValueError("from_dlpack: copy=False, but a vecjac Tensor owns its memory "
                         "(it is immutable): the data is always copied")
    return Tensor(np.array(np.from_dlpack(x)))


@standard("linspace")
def _linspace(start, stop, /, num, *, dtype=None, device=None, endpoint=True):
    """`num` evenly spaced values; differentiable in Tensor bounds (np.linspace's adapter)."""
    check_device(device, "linspace")
    dt = _dtype_arg(dtype, "linspace") or np.dtype("float64")
    return wrap(np.linspace(start, stop, num, endpoint=endpoint, dtype=dt))


@standard("meshgrid")
def _meshgrid(*arrays, indexing="xy"):
    tensors = [as_tensor(a, f"meshgrid: arrays[{k}]") for k, a in enumerate(arrays)]
    return list(wrap(np.meshgrid(*tensors, indexing=indexing)))


@standard("tril")
def _tril(x, /, *, k=0):
    return wrap(np.tril(as_tensor(x, "tril: x"), k=k))


@standard("triu")
def _triu(x, /, *, k=0):
    return wrap(np.triu(as_tensor(x, "triu: x"), k=k))


# -- manipulation ------------------------------------------------------------------------------
@standard("broadcast_arrays")
def _broadcast_arrays(*arrays):
    tensors = [as_tensor(a, f"broadcast_arrays: arrays[{k}]") for k, a in enumerate(arrays)]
    return list(wrap(np.broadcast_arrays(*tensors)))


@standard("broadcast_to")
def _broadcast_to(x, /, shape):
    return wrap(np.broadcast_to(as_tensor(x, "broadcast_to: x"), _shape_arg(shape,
                                                                             "broadcast_to")))


def _joined(arrays, name):
    """The arrays, promoted to their common dtype by the standard's table."""
    if not isinstance(arrays, (list, tuple)) or not arrays:
        raise TypeError(f"{name}: arrays must be a non-empty tuple or list of arrays, got "
                        f"{arrays!r}")
    tensors = [as_tensor(a, f"{name}: arrays[{k}]") for k, a in enumerate(arrays)]
    dt = promote([t.dtype for t in tensors], name)
    return [t if t.dtype == dt else _lo.cast(t, dt) for t in tensors]


@standard("concat")
def _concat(arrays, /, *, axis=0):
    return wrap(np.concatenate(_joined(arrays, "concat"), axis=axis))


@standard("stack")
def _stack(arrays, /, *, axis=0):
    return wrap(np.stack(_joined(arrays, "stack"), axis=axis))


@standard("unstack")
def _unstack(x, /, *, axis=0):
    x = as_tensor(x, "unstack: x")
    moved = wrap(np.moveaxis(x, axis, 0))
    return tuple(moved[k] for k in range(moved.shape[0]))


@standard("expand_dims")
def _expand_dims(x, /, axis):
    return wrap(np.expand_dims(as_tensor(x, "expand_dims: x"), axis))


@standard("flip")
def _flip(x, /, *, axis=None):
    return wrap(np.flip(as_tensor(x, "flip: x"), axis=axis))


@standard("moveaxis")
def _moveaxis(x, source, destination, /):
    return wrap(np.moveaxis(as_tensor(x, "moveaxis: x"), source, destination))


@standard("permute_dims")
def _permute_dims(x, /, axes):
    return wrap(np.transpose(as_tensor(x, "permute_dims: x"), tuple(axes)))


@standard("repeat")
def _repeat(x, repeats, /, *, axis=None):
    x = as_tensor(x, "repeat: x")
    if isinstance(repeats, (Tensor, Variable)):
        repeats = as_tensor(repeats, "repeat: repeats").numpy()  # counts, not differentiated
    return wrap(np.repeat(x, repeats, axis=axis))


@standard("reshape")
def _reshape(x, /, shape, *, copy=None):
    return wrap(np.reshape(as_tensor(x, "reshape: x"), _shape_arg(shape, "reshape")))


@standard("roll")
def _roll(x, /, shift, *, axis=None):
    return wrap(np.roll(as_tensor(x, "roll: x"), shift, axis=axis))


@standard("squeeze")
def _squeeze(x, /, axis):
    x = as_tensor(x, "squeeze: x")
    axes = (axis,) if not isinstance(axis, tuple) else axis
    for ax in axes:  # the standard asks ValueError for an axis of length other than 1
        if -x.ndim <= ax < x.ndim and x.shape[ax] != 1:
            raise ValueError(f"squeeze: axis {ax} has length {x.shape[ax]}, not 1 "
                             f"(x has shape {x.shape})")
    return wrap(np.squeeze(x, axis=axis))


@standard("tile")
def _tile(x, repetitions, /):
    return wrap(np.tile(as_tensor(x, "tile: x"), tuple(repetitions)))
