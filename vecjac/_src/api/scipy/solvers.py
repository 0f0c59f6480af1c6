"""Differentiable scipy.optimize solvers: root, fixed_point, minimize, least_squares,
newton_krylov (vj.scipy.optimize).

SciPy solves, on float64 NumPy, with vecjac's exact Jacobian as `jac=` where the method
takes one (root's hybr and lm, least_squares, minimize's gradient and Hessian). The
result is SciPy's (an OptimizeResult, or x for fixed_point and newton_krylov) whose x is
a Tensor differentiable in every float leaf of `args` (Tensors, arrays, Python floats,
in any nest) by the implicit function theorem (vecjac/_src/api/scipy/implicit.py), on the
condition each solver reaches:
    root, newton_krylov   fun(x, *args) = 0
    fixed_point           func(x, *args) - x = 0
    minimize              grad_x fun(x, *args) = 0 (the Hessian from vecjac)
    least_squares         J^T r = 0, the gradient of 0.5 |fun(x, *args)|^2
What is differentiated: the exact solution x*(theta) of that condition, evaluated at the
x SciPy returns (the solver's iterations are not unrolled). Its accuracy follows the
solver's tolerance: the formula -(dF/dx)^-1 dF/dtheta is taken at the returned x, which
is off the exact root by about |(dF/dx)^-1 r| for the residual r left there, and the
derivative is off by an error of first order in that distance (the tests tighten tol,
xtol, ftol and f_tol to 1e-12 - 1e-15 to match central differences to 1e-6). x0 gets a
zero derivative (the solution does not depend on the starting point). A solver that
reports failure, or a singular or ill-conditioned Jacobian at the solution, makes
the derivative raise (the value itself is returned as SciPy's). With `sparse=True` the
Jacobian at the solution is detected sparse (vj.sparse_jacobian's pattern, colored JVPs)
and the derivative's solves are sparse LU solves (SparseSolve).

newton_krylov (and root(method="krylov")) run SciPy's own Newton-Krylov loop
(scipy.optimize._nonlin.nonlin_solve, its line search and tolerances) with a subclass of
its KrylovJacobian whose products J v are exact forward-mode JVPs instead of finite
differences: same outer algorithm, exact inner linear operator. That class is private
SciPy API (checked against SciPy 1.17 by tests/api/scipy/test_optimize_implicit.py).
"""
import importlib

import numpy as np

from vecjac._src.api.function import function
from vecjac._src.api.scipy.implicit import ImplicitRoot, Problem, implicit_solution, split_args
from vecjac._src.api.scipy.jac import Jac
from vecjac._src.api.scipy.optimize import as_x, check_f, fun_and_jac, hess, hessp, scipy_minimize
from vecjac._src.core.dispatch import convert_to_tensor
from vecjac._src.core.samples import Arg, Sample
from vecjac._src.core.tensor import Tensor
from vecjac._src.ops.array.shaping import reshape
from vecjac._src.ops.reduce.reductions import reduce_sum
from vecjac._src.transforms.forward.accumulator import ForwardAccumulator
from vecjac._src.transforms.tape.tape import GradientTape

__all__ = ["root", "fixed_point", "minimize", "least_squares", "newton_krylov",
           "fun_and_jac", "hess", "hessp"]

_ZERO = "zero"
_TAKES_JAC = {"hybr", "lm"}   # root's methods that use a Jacobian


def _optimize():
    # scipy.optimize costs about 0.3 s to import: loaded on first use, not with vecjac
    return importlib.import_module("scipy.optimize")


def _name(f):
    return getattr(f, "__name__", type(f).__name__)


def _vector(y, what, fname):
    y = convert_to_tensor(y, name=f"{what}: output of {fname}")
    if y.dtype.kind != "f":
        raise TypeError(f"{what}: {fname} must return floating point values, got dtype "
                        f"{y.dtype}")
    return reshape(y, (-1,))


def _start(x0):
    """x0's value: the solution does not depend on it (its derivative is zero), so a
    Tensor x0 that a tape follows is read as a constant."""
    return x0._value if isinstance(x0, Tensor) else x0


def _constants(arrays):
    return [Tensor(np.asarray(a)) for a in arrays]


def _check_sparse(sparse, what):
    if not isinstance(sparse, (bool, np.bool_)):
        raise TypeError(f"{what}: sparse must be a bool, got {sparse!r}")
    return bool(sparse)


def _jacobian_callable(J, sparse):
    """What a SciPy method that wants a dense Jacobian gets from a vj.scipy.jac."""
    return (lambda x: J(x).toarray()) if sparse else J


def _finish(problem, x):
    result = problem.last
    result.x = x
    return result


# -- root ----------------------------------------------------------------------------------
def root(fun, x0, args=(), method="hybr", jac=None, tol=None, callback=None, options=None,
         sparse=False):
    """scipy.optimize.root of fun(x, *args) = 0 (x 1-D), SciPy's OptimizeResult with x a
    Tensor differentiable in the float leaves of args (module docstring). jac is
    vecjac's (pass None). method="krylov" uses exact JVPs (see newton_krylov)."""
    what = "vj.scipy.optimize.root"
    check_f(fun, "optimize.root")
    if jac not in (None, True):
        raise ValueError(f"{what}: jac is supplied by vecjac; do not pass it (got {jac!r})")
    sparse = _check_sparse(sparse, what)
    if not isinstance(method, str):
        raise TypeError(f"{what}: method must be a string, got {method!r}")
    x0 = as_x(_start(x0), "optimize.root", "x0")
    params, rebuild = split_args(args, what)
    fname = _name(fun)

    def residual(x, *p):
        return _vector(fun(x, *rebuild(p)), what, fname)

    def run(*arrays):
        consts = _constants(arrays)

        def f(x):
            return residual(x, *consts)
        if method.lower() == "krylov":
            result = _krylov_root(f, x0, tol, callback, dict(options or {}))
        else:
            J = Jac(f, 0, sparse)
            result = _optimize().root(J.fun, x0, method=method,
                                      jac=_jacobian_callable(J, sparse)
                                      if method.lower() in _TAKES_JAC else None,
                                      tol=tol, callback=callback, options=options)
        problem.last = result
        return result.x, result.success, result.message
    problem = Problem(what, fname, residual, run, sparse)
    return _finish(problem, implicit_solution(problem, params, x0, what))


# -- fixed_point ---------------------------------------------------------------------------
def fixed_point(func, x0, args=(), xtol=1e-8, maxiter=500, method="del2", sparse=False):
    """scipy.optimize.fixed_point: x with func(x, *args) = x, as a Tensor of x0's shape
    differentiable in the float leaves of args (SciPy raises RuntimeError when it does
    not converge)."""
    what = "vj.scipy.optimize.fixed_point"
    check_f(func, "optimize.fixed_point")
    sparse = _check_sparse(sparse, what)
    try:
        start = np.array(_start(x0), dtype=np.float64)
    except (TypeError, ValueError) as e:
        raise TypeError(f"{what}: x0 must be a float array ({e})") from None
    shape = start.shape
    params, rebuild = split_args(args, what)
    fname = _name(func)

    def residual(x, *p):
        return _vector(func(reshape(x, shape), *rebuild(p)), what, fname) - x

    def run(*arrays):
        consts = _constants(arrays)

        def g(x):
            return np.asarray(_vector(func(Tensor(np.asarray(x, np.float64)), *rebuild(consts)),
                                      what, fname)._value).reshape(shape)
        x = _optimize().fixed_point(g, start, xtol=xtol, maxiter=maxiter, method=method)
        problem.last = x
        return np.reshape(x, -1), True, ""
    problem = Problem(what, fname, residual, run, sparse)
    return reshape(implicit_solution(problem, params, start.reshape(-1), what), shape)


# -- minimize ------------------------------------------------------------------------------
def minimize(fun, x0, args=(), method=None, jac=None, hess=None, hessp=None, bounds=None,
             constraints=(), tol=None, callback=None, options=None, sparse=False):
    """scipy.optimize.minimize of scalar fun(x, *args), vecjac's gradient (and Hessian or
    Hessian-vector products where the method uses them) wired in; SciPy's
    OptimizeResult with x a Tensor differentiable in the float leaves of args, through
    the stationarity of the gradient (derivatives raise for general constraints, and
    for bounds active at the solution, where the gradient need not vanish).

    >>> res = vj.scipy.optimize.minimize(lambda x: vj.reduce_sum((x - 1.0) ** 2), np.zeros(3),
    ...                                  method="trust-exact")
    >>> res.x.numpy()
    array([1., 1., 1.])
    """
    what = "vj.scipy.optimize.minimize"
    check_f(fun, "optimize.minimize")
    if jac not in (None, True):
        raise ValueError(f"{what}: jac is supplied by vecjac; do not pass it (got {jac!r})")
    sparse = _check_sparse(sparse, what)
    x0 = as_x(_start(x0), "optimize.minimize", "x0")
    params, rebuild = split_args(args, what)
    fname = _name(fun)
    extra = {k: v for k, v in (("hess", hess), ("hessp", hessp), ("bounds", bounds),
                               ("tol", tol), ("callback", callback), ("options", options))
             if v is not None}
    if constraints:
        extra["constraints"] = constraints

    def residual(x, *p):
        with GradientTape() as tape:
            tape.watch(x)
            value = fun(x, *rebuild(p))
        return tape.gradient(value, x, unconnected_gradients=_ZERO)

    def run(*arrays):
        consts = _constants(arrays)
        result = scipy_minimize(lambda x: fun(x, *rebuild(consts)), x0, method=method,
                                **extra)
        problem.last = result
        message = result.message
        if constraints:
            return result.x, False, ("the derivative of a minimum under general "
                                     "constraints is not implemented")
        active = _active_bounds(bounds, result.x, x0.size)
        if active:
            return result.x, False, (f"bounds are active at the solution (coordinates "
                                     f"{active[:5]}): the gradient need not vanish there")
        return result.x, result.success, message

    def objective(x, *p):
        return convert_to_tensor(fun(x, *rebuild(p)), name=f"{what}: output of {fname}")
    problem = Problem(what, fname, residual, run, sparse, probe=objective)
    return _finish(problem, implicit_solution(problem, params, x0, what))


def _active_bounds(bounds, x, n):
    if bounds is None:
        return []
    lb, ub = (bounds.lb, bounds.ub) if hasattr(bounds, "lb") else (
        np.array([np.nan if b is None or b[0] is None else b[0] for b in bounds], float),
        np.array([np.nan if b is None or b[1] is None else b[1] for b in bounds], float))
    lb, ub = np.broadcast_to(lb, (n,)), np.broadcast_to(ub, (n,))
    near = (np.abs(x - lb) <= 1e-8 * (1 + np.abs(lb))) | (np.abs(x - ub) <= 1e-8 * (1 + np.abs(ub)))
    return [int(k) for k in np.flatnonzero(near)]


# -- least_squares -------------------------------------------------------------------------
def least_squares(fun, x0, jac=None, bounds=None, method="trf", ftol=1e-8, xtol=1e-8,
                  gtol=1e-8, x_scale=1.0, loss="linear", f_scale=1.0, max_nfev=None,
                  verbose=0, args=(), kwargs=None, sparse=False):
    """scipy.optimize.least_squares of the residuals fun(x, *args, **kwargs) (vecjac's
    Jacobian, sparse with sparse=True); SciPy's OptimizeResult with x a Tensor
    differentiable in the float leaves of args and kwargs, through J^T r = 0 (loss
    "linear" and inactive bounds only: otherwise the derivative raises)."""
    what = "vj.scipy.optimize.least_squares"
    check_f(fun, "optimize.least_squares")
    if jac is not None:
        raise ValueError(f"{what}: jac is supplied by vecjac; do not pass it (got {jac!r})")
    sparse = _check_sparse(sparse, what)
    x0 = as_x(_start(x0), "optimize.least_squares", "x0")
    kwargs = {} if kwargs is None else kwargs
    if not isinstance(kwargs, dict):
        raise TypeError(f"{what}: kwargs must be a dict, got {type(kwargs).__name__}")
    params, rebuild = split_args((tuple(args) if isinstance(args, (tuple, list)) else (args,),
                                  kwargs), what)
    fname = _name(fun)

    def residuals(x, p):
        a, kw = rebuild(p)
        return _vector(fun(x, *a, **kw), what, fname)

    def probe(x, *p):
        return residuals(x, p)

    def residual(x, *p):
        with GradientTape() as tape:
            tape.watch(x)
            r = residuals(x, p)
            half = 0.5 * reduce_sum(r * r)
        return tape.gradient(half, x, unconnected_gradients=_ZERO)

    def run(*arrays):
        consts = _constants(arrays)
        J = Jac(lambda x: residuals(x, consts), 0, sparse)
        extra = {} if bounds is None else {"bounds": bounds}
        result = _optimize().least_squares(
            J.fun, x0, jac=J, method=method, ftol=ftol, xtol=xtol, gtol=gtol,
            x_scale=x_scale, loss=loss, f_scale=f_scale, max_nfev=max_nfev, verbose=verbose,
            **extra)
        problem.last = result
        if loss != "linear":
            return result.x, False, (f"the derivative for loss {loss!r} is not "
                                     "implemented (only 'linear')")
        if np.any(result.active_mask != 0):
            return result.x, False, "bounds are active at the solution"
        return result.x, result.success, result.message
    problem = Problem(what, fname, residual, run, sparse, probe=probe)
    return _finish(problem, implicit_solution(problem, params, x0, what))


# -- Newton-Krylov with exact JVPs ---------------------------------------------------------
_EXACT = {}


def _exact_krylov_jacobian():
    """SciPy's KrylovJacobian with J v from forward mode instead of a finite difference
    (built on first use: SciPy is imported lazily)."""
    if "class" not in _EXACT:
        base = importlib.import_module("scipy.optimize._nonlin").KrylovJacobian

        class ExactKrylovJacobian(base):
            """J v = the JVP of the residual at the current iterate (exact)."""

            def __init__(self, product, **options):
                super().__init__(**options)
                self.product = product

            def matvec(self, v):
                return self.product(np.asarray(self.x0, np.float64),
                                    np.asarray(v, np.float64))
        _EXACT["class"] = ExactKrylovJacobian
    return _EXACT["class"]


# newton_krylov's derivative detects dF/dx sparse above this many unknowns (sparse=None)
SPARSE_ABOVE = 1000
_KRYLOV_OPTIONS = {"inner_maxiter", "inner_M", "outer_k", "method", "rdiff"}


def _residual_and_product(f_tensor, jit):
    """NumPy-level F(x) and (x, v) -> J(x) v for SciPy's loop.

    With jit, both are vj.function traces made for this one solve and dropped after it:
    every product is at the same point shapes and F is fixed while SciPy iterates, so the
    trace's rules (F's closures read once, its Python side effects at tracing only,
    guards on the values F branches on) cannot change an answer within the solve, and a
    replay costs a fraction of an eager pass (Bratu 100^2: an exact product below one
    NumPy evaluation of F; eager forward mode is about 11 of them)."""
    def residual(x):
        return f_tensor(x)

    def product(x, v):
        with ForwardAccumulator([x], [v]) as acc:
            r = f_tensor(x)
        return acc.jvp(r, unconnected_gradients=_ZERO)
    if jit:
        residual, product = function(residual), function(product)

    def f(x):
        return np.asarray(residual(Tensor(np.asarray(x, np.float64)))._value)

    def jv(x, v):
        return np.asarray(product(Tensor(x), Tensor(v))._value)
    return f, jv


def _nonlin_solve(f_tensor, x0, jac_options, jit, **solve_options):
    unknown = {k for k in jac_options if k not in _KRYLOV_OPTIONS and not k.startswith("inner_")}
    if unknown:
        raise TypeError(f"vj.scipy.optimize.newton_krylov: unknown Krylov options "
                        f"{sorted(unknown)}")
    f, product = _residual_and_product(f_tensor, jit)
    jacobian = _exact_krylov_jacobian()(product, **jac_options)
    nonlin = importlib.import_module("scipy.optimize._nonlin")
    return nonlin.nonlin_solve(f, x0, jacobian=jacobian, full_output=True,
                               raise_exception=False, **solve_options)


def _check_jit(jit, what):
    if not isinstance(jit, (bool, np.bool_)):
        raise TypeError(f"{what}: jit must be a bool, got {jit!r}")
    return bool(jit)


def _krylov_root(f, x0, tol, callback, options):
    """root(method="krylov")'s options (SciPy's names) on the exact-JVP Krylov loop."""
    names = {"nit": "iter", "disp": "verbose", "maxiter": "maxiter", "ftol": "f_rtol",
             "fatol": "f_tol", "xtol": "x_rtol", "xatol": "x_tol", "tol_norm": "tol_norm",
             "line_search": "line_search"}
    jac_options = options.pop("jac_options", None) or {}
    jit = _check_jit(options.pop("jit", True), "vj.scipy.optimize.root")
    unknown = set(options) - set(names)
    if unknown:
        raise TypeError(f"vj.scipy.optimize.root: unknown options for method 'krylov': "
                        f"{sorted(unknown)}")
    if tol is not None:
        options.setdefault("fatol", tol)
    x, info = _nonlin_solve(f, x0, jac_options, jit, callback=callback,
                            **{names[k]: v for k, v in options.items()})
    result = _optimize().OptimizeResult(x=x, method="krylov")
    result.update(info)
    return result


def newton_krylov(F, xin, iter=None, rdiff=None, method="lgmres", inner_maxiter=20,
                  inner_M=None, outer_k=10, verbose=False, maxiter=None, f_tol=None,
                  f_rtol=None, x_tol=None, x_rtol=None, tol_norm=None,
                  line_search="armijo", callback=None, args=(), jit=True, sparse=None,
                  **kw):
    """scipy.optimize.newton_krylov of F(x, *args) = 0 with exact Jacobian-vector products
    (forward mode) in SciPy's Krylov loop. Returns x (a Tensor of xin's shape,
    differentiable in the float leaves of `args`, vecjac's addition); raises SciPy's
    NoConvergence like SciPy. Extra keywords `inner_*` go to the Krylov solver.

    jit (vecjac's addition): F and its JVP run as vj.function traces made for this solve
    (F's Python side effects happen while tracing only; closed-over arrays are read once
    per solve). jit=False runs F eagerly for every evaluation and product.

    sparse (vecjac's addition): how the derivative gets dF/dx at the solution. None (the
    default) detects it sparse (colored JVPs, sparse LU) when x has more than
    SPARSE_ABOVE entries, the sizes Newton-Krylov is used for (a dense 10^4 Jacobian is
    800 MB and a 30 s LU), and forms it dense below; True or False choose."""
    what = "vj.scipy.optimize.newton_krylov"
    check_f(F, "optimize.newton_krylov")
    jit = _check_jit(jit, what)
    try:
        start = np.array(_start(xin), dtype=np.float64)
    except (TypeError, ValueError) as e:
        raise TypeError(f"{what}: xin must be a float array ({e})") from None
    shape = start.shape
    sparse = start.size > SPARSE_ABOVE if sparse is None else _check_sparse(sparse, what)
    params, rebuild = split_args(args, what)
    fname = _name(F)
    jac_options = {"method": method, "inner_maxiter": inner_maxiter, "inner_M": inner_M,
                   "outer_k": outer_k, "rdiff": rdiff}
    jac_options.update(kw)  # inner_* options: KrylovJacobian hands them to the solver

    def residual(x, *p):
        return _vector(F(reshape(x, shape), *rebuild(p)), what, fname)

    def run(*arrays):
        consts = _constants(arrays)
        x, info = _nonlin_solve(lambda x: residual(x, *consts), start.reshape(-1),
                                jac_options, jit, iter=iter, verbose=verbose, maxiter=maxiter,
                                f_tol=f_tol, f_rtol=f_rtol, x_tol=x_tol, x_rtol=x_rtol,
                                tol_norm=tol_norm, line_search=line_search,
                                callback=callback)
        if not info["success"]:
            raise _optimize().NoConvergence(x.reshape(shape))
        problem.last = info
        return x, True, ""
    problem = Problem(what, fname, residual, run, sparse)
    return reshape(implicit_solution(problem, params, start.reshape(-1), what), shape)


# -- the registry's samples of ImplicitRoot (tests/test_registry.py) ----------------------
def _sample_residual(x, theta, a):
    return a * x + np.tanh(x) - theta


def _sample_root(theta, a):
    return root(_sample_residual, np.zeros(3), args=(theta, a), tol=1e-13).x


def _sample_fixed_point(theta):
    return fixed_point(lambda x, t: 0.5 * np.cos(x) + t, np.zeros(2), args=(theta,),
                       xtol=1e-14)


ImplicitRoot.samples = (
    Sample(_sample_root, Arg.float(3), Arg.positive(3, lo=1.5, hi=3.0),
           no_f32="SciPy solves in float64"),
    Sample(_sample_fixed_point, Arg.float(2), no_f32="SciPy solves in float64"))
