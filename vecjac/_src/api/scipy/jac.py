"""vj.scipy.jac: Jacobians for SciPy's `jac=` arguments (solve_ivp, least_squares, root).

    J = vj.scipy.jac(F, sparse=True)                 # F(x) -> residuals, x 1-D
    least_squares(J.fun, x0, jac=J, tr_solver="lsmr")
    root(J.fun, x0, jac=J)
    J = vj.scipy.jac(rhs, argnums=1, sparse=True)    # rhs(t, y): solve_ivp calls jac(t, y)
    solve_ivp(J.fun, t_span, y0, method="BDF", jac=J)

`J(*args)` returns the Jacobian of f with respect to argument `argnums` at args: a float64
NumPy array, or with sparse=True a scipy.sparse.csr_array (pattern detected and colored on
the first call, see vj.sparse_jacobian). `J.fun(*args)` is f itself as SciPy wants it
(float64 NumPy). Both remember the last point: the Jacobian evaluation computes f's value
on the way, and SciPy asks for fun and jac at the same point, so the second of the two is
free (f is never run twice for one point).

`jit=True` replays the Jacobian evaluation as a vj.function (traced on the first call):
much faster for the many calls of a solver, with vj.function's semantics (arrays f
closes over are constants of the trace). SciPy passes `t` as a Python float, which
vj.function would key by value (a trace per t): with jit, the other arguments' Python
numbers reach f as float64 0-d Tensors instead.

The last point is keyed by the values of all arguments (arrays and Tensors by content,
numbers exactly, containers by content); a call with an argument whose value cannot be
compared (an arbitrary object, which may have changed in place) never reuses it.
"""
import numbers

import numpy as np

from vecjac._src.api.fn_args import arg_label, check_callable
from vecjac._src.api.function import function
from vecjac._src.api.jacobians import jacobian
from vecjac._src.api.sparse import sparse_jacobian
from vecjac._src.core.tensor import Tensor

__all__ = ["jac", "Jac"]


class _Unknown(Exception):
    """An argument whose value cannot be compared (an arbitrary object): no reuse."""


def _value_key(a):
    """A key equal for equal values only: arrays and Tensors by content, numbers
    exactly (-0.0 apart from 0.0), strings, None, and tuples, lists and dicts by content.
    Anything else (an object that may change in place) raises _Unknown."""
    if isinstance(a, Tensor):
        a = a._value
    if isinstance(a, np.ndarray) or isinstance(a, np.generic):
        a = np.asarray(a)
        return ("array", a.shape, a.dtype.str, a.tobytes())
    if isinstance(a, (bool, int, str, type(None))):
        return (type(a), a)
    if isinstance(a, float):
        return (float, a.hex())
    if isinstance(a, complex):
        return (complex, a.real.hex(), a.imag.hex())
    if isinstance(a, (tuple, list)):
        return (type(a), tuple(_value_key(v) for v in a))
    if isinstance(a, dict):
        return (dict, tuple((_value_key(k), _value_key(a[k])) for k in sorted(a, key=repr)))
    raise _Unknown


def _key(args):
    """The value key of a call's arguments, or None when one cannot be compared (the
    last point is then never reused)."""
    try:
        return tuple(_value_key(a) for a in args)
    except _Unknown:
        return None


class Jac:
    """What vj.scipy.jac returns (see the module docstring): `J(*args)` the Jacobian,
    `J.fun(*args)` f's value, sharing evaluations at the last point."""

    def __init__(self, f, argnums, sparse, jit=False):
        self._f = f
        self._argnums = argnums
        self.sparse = sparse
        self._jit = jit
        self._sparse = sparse_jacobian(f, argnums, jit=jit) if sparse else None
        dense = None if sparse else jacobian(self._with_value, argnums, has_aux=True)
        self._dense = function(dense) if jit and dense is not None else dense
        self._last = None  # (key, value, jacobian or None)

    def _with_value(self, *args):
        y = self._f(*args)
        return y, y

    def _args(self, args):
        k = self._argnums
        if not -len(args) <= k < len(args):
            raise ValueError(f"vj.scipy.jac: argnums {k} is out of range: called with "
                             f"{len(args)} positional argument{'s' * (len(args) != 1)}")
        args = list(args)
        try:
            x = np.array(args[k], dtype=np.float64)
        except (TypeError, ValueError) as e:
            raise TypeError(f"vj.scipy.jac: {arg_label(self._f, k % len(args))} must be a "
                            f"1-D float array ({e})") from None
        if x.ndim != 1:
            raise ValueError(f"vj.scipy.jac: {arg_label(self._f, k % len(args))} must be "
                             f"1-D (SciPy's convention), got shape {x.shape}")
        args[k] = x
        return args

    @staticmethod
    def _traceable(args):
        """Python numbers as 0-d float64 arrays: under jit a trace per shape, not one per
        value of SciPy's t."""
        return [np.asarray(a, dtype=np.float64) if isinstance(a, numbers.Real) and
                not isinstance(a, (bool, np.bool_)) else a for a in args]

    @staticmethod
    def _vector(y):
        y = np.asarray(y._value if isinstance(y, Tensor) else y, dtype=np.float64)
        if y.ndim != 1:
            raise ValueError(f"vj.scipy.jac: f must return a 1-D vector, got shape {y.shape}")
        return y

    def __call__(self, *args):
        args = self._args(args)
        key = _key(args)
        last = self._last
        if key is not None and last is not None and last[0] == key and last[2] is not None:
            return last[2]
        # Python numbers (SciPy's t) as 0-d arrays: a sparse pattern is then keyed by their
        # shape, and detected again only if f reads their value (vj.sparse_jacobian)
        call_args = self._traceable(args) if self._jit or self._sparse is not None else args
        if self._sparse is not None:
            value, J = self._sparse.value_and_matrix(*call_args)
            J = J if J.dtype == np.float64 else J.astype(np.float64)
        else:
            J, value = self._dense(*call_args)
            J = np.asarray(J.numpy(), dtype=np.float64)
        value = self._vector(value)
        if J.ndim != 2:
            raise ValueError(f"vj.scipy.jac: f must return a 1-D vector, got a Jacobian of "
                             f"shape {J.shape}")
        self._last = (key, value, J)
        return J

    def fun(self, *args):
        """f(*args) as a float64 NumPy vector (remembered with the Jacobian's point)."""
        args = self._args(args)
        key = _key(args)
        last = self._last
        if key is not None and last is not None and last[0] == key:
            return last[1].copy()
        value = self._vector(self._f(*args))
        self._last = (key, value, None)
        return value.copy()

    def __repr__(self):
        name = getattr(self._f, "__name__", type(self._f).__name__)
        inner = repr(self._sparse) if self._sparse is not None else "dense"
        return f"<vj.scipy.jac of {name} (argument {self._argnums}): {inner}>"


def jac(f, argnums=0, sparse=False, jit=False):
    """A callable with f's signature returning the Jacobian of f with respect to argument
    `argnums` (1-D): a float64 NumPy array, or with `sparse=True` a
    scipy.sparse.csr_array (pattern detected on the first call). Its `.fun` is f for
    SciPy's `fun=`, sharing the evaluation at the last point. `jit=True` replays the
    evaluation as a vj.function (see vecjac/_src/api/scipy/jac.py).

    >>> J = vj.scipy.jac(lambda x: x[1:] * x[:-1], sparse=True)
    >>> J(np.array([1.0, 2.0, 3.0])).toarray()
    array([[2., 1., 0.],
           [0., 3., 2.]])
    """
    what = "vj.scipy.jac"
    check_callable(f, what)
    if not isinstance(argnums, (int, np.integer)) or isinstance(argnums, (bool, np.bool_)):
        raise TypeError(f"{what}: argnums must be an int, got {argnums!r}")
    for name, value in (("sparse", sparse), ("jit", jit)):
        if not isinstance(value, (bool, np.bool_)):
            raise TypeError(f"{what}: {name} must be a bool, got {value!r}")
    return Jac(f, int(argnums), bool(sparse), bool(jit))
