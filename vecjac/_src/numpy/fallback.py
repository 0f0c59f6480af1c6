"""NumPy's own implementation for a function or ufunc without a vecjac op, on plain arrays:
what the Tensors' values leaving vecjac means for each active transform (an error in a
functional transform, a warning under a tape, a guarded value under vj.function's capture),
and the warning once per function when a tape would have followed an input."""
import warnings

import numpy as np

from vecjac._src.core.context import NumpyFallback, state, value_read, varies
from vecjac._src.core.errors import NotDifferentiableWarning
from vecjac._src.core.tensor import Tensor
from vecjac._src.core.variables import Variable
from vecjac._src.numpy.tables import _warned


def _plain(x, info):
    if isinstance(x, Variable):
        x = x.read_value()  # so that tapes watching accessed variables see it
    if isinstance(x, Tensor):
        if x._pfor is not None:
            raise TypeError(f"{info['name']} has no vecjac op ({info['reason']}), so it "
                            "cannot take a loop-variant value inside pfor / vectorized_map; "
                            "write it with vecjac ops")
        if state.stack and varies(x):  # the sparsity tracer cannot follow it: it raises
            value_read(x, f"{info['name']} ({info['reason']})")
        if x.dtype.kind in "fc":
            info["floating"].append(x)  # judged with the result (_numpy_fallback)
        else:
            value_read(x, "internal")  # the NumPy function's result is a plain value
        return x._value
    if type(x) in (list, tuple):
        return type(x)(_plain(v, info) for v in x)
    if isinstance(x, dict):
        return {k: _plain(v, info) for k, v in x.items()}
    return x


def _on_a_tape(tensors):
    """Would a recording tape have followed one of these tensors into the result?"""
    for tape in state.tapes:
        if tape.records(tensors):
            return True
    return False


def _loses_derivative(result):
    """Whether a fallback's result carries the values of floating inputs out of vecjac:
    a floating array, an object array (np.frompyfunc), or None (np.copyto, np.put,
    np.place, np.putmask wrote them into a plain array). A bool or integer result
    (np.allclose, np.argmax) carries no derivative."""
    if result is None:
        return True
    if isinstance(result, (np.ndarray, np.generic)):
        return result.dtype.kind in "fcO"
    if isinstance(result, (list, tuple)):
        return any(_loses_derivative(r) for r in result)
    return False


def numpy_fallback(fn, name, args, kwargs, reason):
    """`fn` (NumPy's) on the plain values of `args`, for the function `name` vecjac does
    not cover (`reason`); its result as NumPy gives it."""
    info = {"floating": [], "name": name, "reason": reason}
    plain_args = [_plain(x, info) for x in args]
    plain_kwargs = {k: _plain(v, info) for k, v in kwargs.items()}
    result = fn(*plain_args, **plain_kwargs)
    lost = _loses_derivative(result)
    how = NumpyFallback(f"{name} ({reason}; NumPy computes it on the plain array)") \
        if lost else "internal"
    for x in info["floating"]:
        # leaving vecjac: a functional transform or an accumulator differentiating x
        # refuses or warns (tapes: the warning below), plan capture guards the value
        value_read(x, how)
    # warn only where a gradient is lost: a floating result from an input a tape follows
    if name not in _warned and info["floating"] and lost and _on_a_tape(info["floating"]):
        _warned.add(name)
        warnings.warn(f"{name}: {reason}; computed by NumPy on plain arrays, so gradients "
                      "do not flow through its result (the tape sees a constant)",
                      NotDifferentiableWarning, stacklevel=4)
    return result
