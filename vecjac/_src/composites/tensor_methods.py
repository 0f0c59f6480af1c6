"""NumPy's ndarray methods on Tensor and Variable: t.sum(axis=0), t.std(ddof=1), t.T ...

A method is the NumPy function of the same name applied to the tensor: `t.sum(axis=0)` is
`np.sum(t, axis=0)`, which NumPy hands to vecjac's adapter for np.sum (the dispatch table,
vecjac/_src/numpy/functions.py). So NumPy's conventions (axis=None means all axes, ddof,
keepdims, dtype ...) have one implementation, and a method is differentiable and
vectorizes wherever the NumPy function does. What vecjac cannot express (say
`t.sum(where=mask)`) runs in NumPy on the plain value, as np.sum would (with the dispatch's
NotDifferentiableWarning on a tape); the result is wrapped as a Tensor. `out=` raises
TypeError: Tensors are immutable. Signatures are the ndarray methods' own (see
`help(vj.Tensor.sum)`).

Immutability changes one method: `t.sort()` returns the sorted Tensor (as jax.Array.sort
does) instead of sorting in place and returning None.

`t.item()` and `t.tolist()` are explicit ways out, like `t.numpy()`: Python values, which
tapes do not warn about, though the transforms are told (value_read "numpy").

`nonzero` and the complex `conj` go through NumPy (no vecjac op: not differentiable).
"""
import inspect
import numbers

import numpy as np

from vecjac._src.core.tensor import Tensor, as_dtype
from vecjac._src.core.variables import Variable
from vecjac._src.ops.array import shaping as _a
from vecjac._src.ops.elementwise import logic as _lo


def _read(x):
    """The Tensor of a Tensor or Variable (a Variable is read, for tapes to see)."""
    return x.read_value() if isinstance(x, Variable) else x


def _tensor(result):
    """A NumPy function's result as Tensors: a NumPy fallback's array becomes a Tensor of
    its own (copied: it may view the operand's value)."""
    if isinstance(result, Tensor):
        return result
    if isinstance(result, tuple):
        return tuple(_tensor(r) for r in result)
    return Tensor(np.array(result))


def _numpy_method(name, function):
    """The ndarray method `name` as `function(t, *args, **kwargs)`, with its signature."""
    signature = inspect.signature(getattr(np.ndarray, name))
    params = list(signature.parameters)[1:]
    out_at = params.index("out") if "out" in params else None

    def method(self, *args, **kwargs):
        if out_at is not None and (kwargs.get("out") is not None or (
                len(args) > out_at and args[out_at] is not None)):
            _no_out(name)
        return _tensor(function(self, *args, **kwargs))
    method.__name__ = method.__qualname__ = name
    method.__doc__ = (f"`np.{function.__name__}(t, ...)`, as ndarray.{name}: NumPy's "
                      f"arguments, differentiable where np.{function.__name__} is.")
    method.__signature__ = signature
    return method


def _no_out(name):
    raise TypeError(f"Tensor.{name}: out= is not supported (Tensors are immutable); use the "
                    "returned value")


_BY_NUMPY = {
    "sum": np.sum, "mean": np.mean, "max": np.max, "min": np.min, "prod": np.prod,
    "std": np.std, "var": np.var, "any": np.any, "all": np.all, "argmax": np.argmax,
    "argmin": np.argmin, "cumsum": np.cumsum, "cumprod": np.cumprod, "clip": np.clip,
    "round": np.round, "squeeze": np.squeeze, "swapaxes": np.swapaxes, "ravel": np.ravel,
    "flatten": np.ravel, "copy": np.copy, "dot": np.dot, "argsort": np.argsort,
    "nonzero": np.nonzero, "conj": np.conjugate, "conjugate": np.conjugate,
}


def reshape(self, *shape, order="C", copy=None):
    """ndarray.reshape: `t.reshape(2, 3)` or `t.reshape((2, 3))`; -1 infers one size."""
    if len(shape) == 1 and not isinstance(shape[0], numbers.Integral):
        shape = shape[0]
    if order == "C" and copy is None:  # the common case, without NumPy's protocol
        return _a.reshape(self, shape)
    return _tensor(np.reshape(self, shape, order=order, copy=copy))


def transpose(self, *axes):
    """ndarray.transpose: `t.transpose()` reverses the axes; `t.transpose(1, 0, 2)` or
    `t.transpose((1, 0, 2))` permutes them."""
    if len(axes) == 1 and (axes[0] is None or not isinstance(axes[0], numbers.Integral)):
        axes = axes[0]
    return _tensor(np.transpose(self, axes or None))


def astype(self, dtype, order="K", casting="unsafe", subok=True, copy=True):
    """ndarray.astype: the values cast to `dtype` (vj.cast; differentiable between
    floating dtypes). `casting` other than "unsafe" checks np.can_cast first."""
    dtype = as_dtype(dtype, "astype: dtype")
    if casting != "unsafe" and not np.can_cast(self.dtype, dtype, casting=casting):
        raise TypeError(f"astype: cannot cast from dtype {self.dtype} to {dtype} according "
                        f"to the rule {casting!r}")
    return _lo.cast(self, dtype)


def sort(self, axis=-1, kind=None, order=None, *, stable=None):
    """The values sorted along `axis` (None: flattened), as a new Tensor: Tensors are
    immutable, so unlike ndarray.sort this returns the result (as jax.Array.sort does).
    Differentiable: the gradient goes back to each value's place (np.sort's op)."""
    return _tensor(np.sort(self, axis=axis, kind=kind, order=order, stable=stable))


def diagonal(self, offset=0, axis1=0, axis2=1):
    """ndarray.diagonal: the diagonal `offset` above the main one of the (axis1, axis2)
    planes, as the last axis."""
    return _tensor(np.diagonal(self, offset=offset, axis1=axis1, axis2=axis2))


def trace(self, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    """ndarray.trace: the sum of diagonal(offset, axis1, axis2)."""
    if out is not None:
        _no_out("trace")
    return _tensor(np.trace(self, offset=offset, axis1=axis1, axis2=axis2, dtype=dtype))


def _real(self):
    return _tensor(np.real(self))


def _imag(self):
    return _tensor(np.imag(self))


def item(self, *args):
    """ndarray.item: one element as a Python scalar (the only element without args). An
    explicit way out, like t.numpy(): transforms are told, tapes do not warn."""
    return _numpy_value(self).item(*args)


def tolist(self):
    """ndarray.tolist: the values as nested Python lists of Python scalars. An explicit
    way out, like t.numpy()."""
    return _numpy_value(self).tolist()


def _numpy_value(x):
    # Tensor.numpy tells the transforms (value_read "numpy"); a loop-variant value has no
    # single value and raises TypeError
    return _read(x).numpy()


def __round__(self, ndigits=None):
    """round(t) for a scalar: a Python int (round half to even, as round(np.float64));
    round(t, n) the Tensor rounded to n decimals. Arrays raise TypeError, as ndarray does."""
    x = _read(self)
    if x.shape != ():
        raise TypeError(f"round() of a Tensor needs a scalar (shape ()), got shape {x.shape}; "
                        "use t.round(decimals) or np.round(t, decimals)")
    if ndigits is None:
        return round(x.__float__()) if x.dtype.kind in "fc" else x.__int__()
    return _tensor(np.round(x, ndigits))


_METHODS = {name: _numpy_method(name, fn) for name, fn in _BY_NUMPY.items()}
_METHODS.update(reshape=reshape, transpose=transpose, astype=astype, sort=sort,
                diagonal=diagonal, trace=trace, item=item, tolist=tolist,
                __round__=__round__, real=property(_real), imag=property(_imag),
                T=property(lambda self: _a.transpose(self)))

for _name, _fn in _METHODS.items():
    setattr(Tensor, _name, _fn)
    setattr(Variable, _name, _fn)  # each reads the Variable (apply converts inputs)
