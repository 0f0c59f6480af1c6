"""vecjac derivatives for scipy.optimize (re-exported as vj.scipy.*).

Each adapter takes `f(x, *args)` written with vecjac ops on a 1-D float64 Tensor `x` and
returns a plain function of float64 NumPy arrays returning float64 NumPy arrays, with
SciPy's signatures (extra `args` are passed through to `f`, not differentiated):

    from scipy.optimize import minimize, root
    minimize(vj.scipy.fun_and_jac(f), x0, jac=True, hess=vj.scipy.hess(f),
             method="trust-exact")
    minimize(vj.scipy.fun_and_jac(f), x0, jac=True, hessp=vj.scipy.hessp(f),
             method="Newton-CG")
    root(vj.scipy.fun_and_jac(F), x0, jac=True)        # F: (n,) -> (n,)

`vj.scipy.optimize.minimize` and `root` do that wiring for you and return solutions that
are differentiable in their args (vecjac/_src/api/scipy/solvers.py). The adapters
themselves do not need SciPy.
"""
import importlib

import numpy as np

from vecjac._src.api.fn_args import strict
from vecjac._src.api.functional import hvp
from vecjac._src.api.jacobians import hessian
from vecjac._src.core.dispatch import convert_to_tensor
from vecjac._src.core.tensor import Tensor
from vecjac._src.core.unconnected import UnconnectedGradients
from vecjac._src.transforms.tape.tape import GradientTape

__all__ = ["fun_and_jac", "hess", "hessp", "scipy_minimize", "as_x", "check_f"]

_ZERO = UnconnectedGradients.ZERO


def check_f(f, what):
    if not callable(f):
        raise TypeError(f"vj.scipy.{what}: f must be callable, got {type(f).__name__}")


def as_x(x, what, name="x"):
    try:
        arr = np.array(x, dtype=np.float64)
    except (TypeError, ValueError) as e:
        raise TypeError(f"vj.scipy.{what}: {name} must be a 1-D float array ({e})") from None
    if arr.ndim != 1:
        raise ValueError(f"vj.scipy.{what}: {name} must be 1-D (SciPy's convention), got "
                         f"shape {arr.shape}")
    return arr


def _output(y, what):
    y = convert_to_tensor(y, name=f"vj.scipy.{what}: output of f")
    if y.dtype.kind != "f":
        raise TypeError(f"vj.scipy.{what}: f must return floating point values, got dtype "
                        f"{y.dtype}")
    return y


def fun_and_jac(f):
    """`fun(x, *args)` returning value and derivative together, for `jac=True`.

    Scalar f: `(float value, gradient (n,))` for `optimize.minimize(..., jac=True)`.
    Vector f (output of shape (m,) or any shape, flattened): `(F (m,), Jacobian (m, n))` for
    `optimize.root(..., jac=True)` and `least_squares`-style use. All float64.

    >>> fun = vj.scipy.fun_and_jac(lambda x: vj.reduce_sum(x ** 2))
    >>> fun(np.array([1.0, 2.0]))
    (5.0, array([2., 4.]))
    """
    check_f(f, "fun_and_jac")

    def fun(x, *args):
        x = Tensor(as_x(x, "fun_and_jac"))
        with strict(GradientTape(), "fun_and_jac") as tape:
            tape.watch(x)
            y = _output(f(x, *args), "fun_and_jac")
        if y.shape == ():
            g = tape.gradient(y, x, unconnected_gradients=_ZERO)
            return float(y.numpy()), np.array(g.numpy(), dtype=np.float64)
        J = tape.jacobian(y, x, unconnected_gradients=_ZERO)
        return (np.array(y.numpy(), dtype=np.float64).reshape(-1),
                np.array(J.numpy(), dtype=np.float64).reshape(y.size, x.shape[0]))
    return fun


def hess(f):
    """`hess(x, *args)` -> the (n, n) float64 Hessian of scalar f, for `hess=`.

    >>> vj.scipy.hess(lambda x: vj.reduce_sum(x ** 3))(np.array([1.0, 2.0]))
    array([[ 6.,  0.],
           [ 0., 12.]])
    """
    check_f(f, "hess")

    def hess_fn(x, *args):
        x = as_x(x, "hess")
        H = hessian(lambda t: _output(f(t, *args), "hess"))(x)
        return np.array(H.numpy(), dtype=np.float64)
    return hess_fn


def hessp(f):
    """`hessp(x, p, *args)` -> the float64 Hessian-vector product H(x) p (n,), for `hessp=`.

    The Hessian is never formed (see `vj.hvp`): right for large n with Newton-CG or
    trust-ncg / trust-krylov.
    """
    check_f(f, "hessp")

    def hessp_fn(x, p, *args):
        x = as_x(x, "hessp")
        p = as_x(p, "hessp", "p")
        if p.shape != x.shape:
            raise ValueError(f"vj.scipy.hessp: p has shape {p.shape}, x has shape {x.shape}")
        hp = hvp(lambda t: _output(f(t, *args), "hessp"), x, p)
        return np.array(hp.numpy(), dtype=np.float64)
    return hessp_fn


# Methods that use second derivatives: those that need the full matrix get `hess`, the
# others the cheaper `hessp`.
_NEEDS_HESS = {"dogleg", "trust-exact"}
_TAKES_HESSP = {"newton-cg", "trust-ncg", "trust-krylov", "trust-constr"}


def scipy_minimize(f, x0, args=(), method=None, **kwargs):
    """`scipy.optimize.minimize` with vecjac derivatives wired in (jac=True, and hess or
    hessp as the method needs), on NumPy: SciPy's OptimizeResult as it is. The public,
    differentiable vj.scipy.optimize.minimize runs it (vecjac/_src/api/scipy/solvers.py)."""
    optimize = _optimize()
    check_f(f, "minimize")
    fun = fun_and_jac(f)
    m = (method or "").lower()
    if m in _NEEDS_HESS and "hess" not in kwargs:
        kwargs["hess"] = hess(f)
    elif m in _TAKES_HESSP and "hess" not in kwargs and "hessp" not in kwargs:
        kwargs["hessp"] = hessp(f)
    return optimize.minimize(fun, as_x(x0, "minimize", "x0"), args=args, method=method,
                             jac=True, **kwargs)


def _optimize():
    # scipy.optimize costs about 0.3 s to import: loaded on first use, not with vecjac
    return importlib.import_module("scipy.optimize")
