"""scipy.integrate.solve_ivp as an op, differentiable in y0, t_eval and the float args.

What is differentiated is the solver's output at the caller's rtol / atol: the
derivatives are those of the exact solution, computed by integrating sensitivity or
adjoint systems with the same method and tolerances, so they are as accurate as the
values (tighten rtol / atol for more digits). The design is odeint's
(vecjac/_src/api/scipy/odeint.py): each rule calls the same op again on an augmented
system, so every order works and tapes, accumulators and pfor nest.
- JVP (forward sensitivities): [y, ydot] with dydot/dt = df/dy ydot + df/dargs argsdot,
  ydot(t0) = y0dot; the tangent of y(t_i) adds f(t_i, y_i) tdot_i. Under pfor (jacfwd:
  one tangent per parameter) the iterations are one augmented system, integrated in
  one solve whose right-hand side is one pfor over them (the converter).
- VJP (adjoint): backwards from t_i to t_{i-1}, the state [y, a, b] with dy/ds = f,
  da/ds = -a^T df/dy, db/ds = -a^T df/dargs; the cotangent of y(t_i) is added to a at
  t_i. The trajectory y is integrated backwards alongside the adjoint, not read from the
  forward run's dense output: nothing but the outputs is kept (memory O(d T), whatever
  the number of steps), and the rule stays a differentiable op (second order by
  reverse over reverse). The cost: backwards, a dissipative (stiff) system is unstable.
  The rule checks that the backward run comes back to each output and to y0 (within
  100 (atol + rtol |y|) + 1e-8 |y|; adjoint_check.py) and raises otherwise: use forward
  mode (vj.jacfwd, vj.jvp) there.
Stiff methods (Radau, BDF, LSODA) get the Jacobian of every system, augmented ones
included, from vecjac (vj.scipy.jac; sparse, pattern detected, when the state has at
least SPARSE_MIN components and the method is Radau or BDF).
"""
import importlib

import numpy as np

from vecjac._src.api.scipy.adjoint_check import (Diverged, check_backward, diverge_bound,
                                                 tolerances, unstable)
from vecjac._src.api.scipy.implicit import split_args
from vecjac._src.api.scipy.ivp_systems import (FN, SPARSE_MIN, adjoint_dynamics,
                                               batched_dynamics, block_jacobian, evaluate,
                                               float_positions, shared_tangent_dynamics,
                                               shared_tangents, tangent_dynamics, tensor)
from vecjac._src.api.scipy.jac import Jac
from vecjac._src.api.scipy.odeint import closes_over_watched, parameter_cotangents
from vecjac._src.core.dispatch import apply, to_input
from vecjac._src.core.registry import Op, register
from vecjac._src.core.samples import Arg, Sample
from vecjac._src.core.shapes import as_bool
from vecjac._src.core.tensor import Tensor
from vecjac._src.ops.array.creation import zeros, zeros_like
from vecjac._src.ops.array.shaping import concat, reshape, stack, transpose
from vecjac._src.ops.elementwise.logic import cast
from vecjac._src.ops.elementwise.unary import sin
from vecjac._src.ops.reduce.reductions import reduce_sum

__all__ = ["solve_ivp"]

METHODS = ("RK45", "RK23", "DOP853", "Radau", "BDF", "LSODA")
STIFF = ("Radau", "BDF", "LSODA")


def _integrate():
    # scipy.integrate: imported on first use, never with vecjac
    return importlib.import_module("scipy.integrate")


def _run(fun, y0, t0, t_end, t_eval, args, method, options):
    """SciPy's solve_ivp from t0 to t_end, output at t_eval (NumPy; None: its own steps):
    its result."""
    d = y0.shape[0]
    tensors = [Tensor(a) for a in args]

    def plain(s, y):
        return evaluate(fun, tensor(s), tensor(y), tensors, d)._value
    rate, extra = plain, {}
    blocks = getattr(fun, "blocks", None)
    if method in STIFF and blocks is not None:
        extra["jac"] = block_jacobian(blocks, tensors, method)
    elif method in STIFF:
        sparse = d >= SPARSE_MIN and method != "LSODA"
        J = Jac(lambda s, y: evaluate(fun, tensor(s), tensor(y), tensors, d), 1, sparse)
        extra["jac"] = J
        rate = J.fun  # shares f's evaluation with the Jacobian's at the same point
    with np.errstate(all="ignore"):
        result = _integrate().solve_ivp(rate, (float(t0), float(t_end)),
                                        np.asarray(y0, np.float64), method=method,
                                        t_eval=t_eval, **extra, **dict(options))
    if not result.success:
        raise ValueError(f"{FN}: SciPy's {method} failed on {getattr(fun, '__name__', 'fun')}"
                         f" ({result.message}): no solution to return or differentiate")
    return result


@register
class SolveIvp(Op):
    """y (T, d) at the times t (T,) of dy/dt = fun(t, y, *args), y(t[0]) = y0 (d,),
    integrated to t_end. Attrs: fun (on Tensors), method, options (pairs), t_end, and
    memo (a dict: the public function's own run, reused by the first forward)."""
    name = "SolveIvp"
    samples = ()  # below

    def forward(self, y0, t, *args, fun, method, options, t_end, memo):
        key = (y0.tobytes(), t.tobytes(), tuple(np.asarray(a).tobytes() for a in args))
        result = memo.pop(key, None)
        if result is None:
            result = _run(fun, y0, t[0], t_end, np.asarray(t[1:], np.float64), args, method,
                          options)
        memo["result"] = result
        return np.concatenate([y0[None, :], result.y.T], axis=0)

    def gradient(self, e, g):
        y0, t, *args = e.inputs
        ys = e.outputs[0]
        fun, method, options = e.attrs["fun"], e.attrs["method"], e.attrs["options"]
        d, steps = y0.shape[0], t.shape[0]
        floats = float_positions(args)
        sizes = [args[k].size for k in floats]
        backward = adjoint_dynamics(fun, d, diverge_bound(np.asarray(ys._value)), sum(sizes))
        back_options = _augmented(options, backward=True)
        rtol, atol = tolerances(options, 1e-3, 1e-6)

        def fail(what):
            raise unstable(FN, what, method, rtol, atol) from None
        a = g[steps - 1]
        b = zeros((sum(sizes),), dtype=y0.dtype)
        t_bars = []
        for i in range(steps - 1, 0, -1):
            t_bars.append(reduce_sum(g[i] * evaluate(fun, t[i], ys[i], args, d)))
            try:
                z = apply(SolveIvp, concat([ys[i], a, b], axis=0), stack([t[i], t[i - 1]]),
                          *args, fun=backward, method=method, options=back_options,
                          t_end=float(np.asarray(t._value).reshape(-1, steps)[0, i - 1]),
                          memo={})[1]
            except Diverged as err:
                fail(f"{err} on the way back to t[{i - 1}]")
            # y integrated backwards must be back on the output (at t[0]: on y0)
            check_backward(z, z[:d], ys[i - 1], rtol, atol,
                           lambda what: fail(f"{what} at t[{i - 1}]"))
            a, b = z[d:2 * d] + g[i - 1], z[2 * d:]
        a_plus = a - g[0]
        t_bars.append(-reduce_sum(a_plus * evaluate(fun, t[0], y0, args, d)))
        return (a if e.needs[0] else None, stack(t_bars[::-1]) if e.needs[1] else None,
                *parameter_cotangents(b, args, floats, sizes))

    def jvp(self, e, ty0, tt, *targs):
        if ty0 is None and tt is None and all(x is None for x in targs):
            return None
        y0, t, *args = e.inputs
        ys = e.outputs[0]
        fun = e.attrs["fun"]
        d = y0.shape[0]
        start = zeros_like(y0) if ty0 is None else ty0
        if tt is not None:
            start = start - evaluate(fun, t[0], y0, args, d) * tt[0]
        floats = float_positions(args)
        tangents = [zeros_like(args[k]) if targs[k] is None else targs[k] for k in floats]
        out = apply(SolveIvp, concat([y0, start], axis=0), t, *args, *tangents,
                    fun=tangent_dynamics(fun, d, len(args)), method=e.attrs["method"],
                    options=_augmented(e.attrs["options"], backward=False),
                    t_end=e.attrs["t_end"], memo={})[:, d:]
        if tt is not None:
            rates = stack([evaluate(fun, t[i], ys[i], args, d) for i in range(ys.shape[0])])
            out = out + rates * reshape(tt, (-1, 1))
        return out

    def converter(self, cx, y0, t, *args, fun, method, options, t_end, memo):
        """All iterations as one system of iters x d unknowns, its right-hand side one
        pfor over the iterations (the forward sensitivities of jacfwd, one tangent per
        parameter, become one augmented solve). The steps are chosen for the whole
        system, so the values differ from the loop's within the tolerances. Times
        that vary per iteration: one solve each."""
        stacked_y0, stacked_t, *stacked_args = cx.stacked
        attrs = dict(fun=fun, method=method, options=options, t_end=t_end, memo=memo)
        if stacked_t:
            return stack([apply(self, y0[k] if stacked_y0 else y0, t[k],
                                *[a[k] if s else a for a, s in zip(args, stacked_args)],
                                **attrs) for k in range(cx.iters)])
        iters, d = cx.iters, y0.shape[-1]
        shared = shared_tangents(cx, fun, y0, stacked_y0, stacked_args)
        if shared is not None:  # jacfwd: one trajectory, iters tangent directions
            base, n, n_args = fun.tangent_of
            first = y0[0] if stacked_y0 else y0
            rest = y0[:, n:] if stacked_y0 else cx.stack(y0[n:])
            start = concat([first[:n], reshape(rest, (-1,))], axis=0)
            system = shared_tangent_dynamics(base, n, n_args, iters,
                                              tuple(stacked_args[n_args:]))
            ys = apply(self, start, t, *args, **dict(attrs, fun=system))
            steps = t.shape[0]
            trajectory = cx.stack(ys[:, :n])
            directions = transpose(reshape(ys[:, n:], (steps, iters, n)), (1, 0, 2))
            return concat([trajectory, directions], axis=2)
        start = reshape(y0 if stacked_y0 else cx.stack(y0), (-1,))
        batched = batched_dynamics(fun, d, iters, tuple(stacked_args))
        ys = apply(self, start, t, *args, **dict(attrs, fun=batched))
        return transpose(reshape(ys, (t.shape[0], iters, d)), (1, 0, 2))


def _augmented(options, backward):
    """The forward problem's options for an augmented system (longer state: array
    tolerances become their tightest value); backwards, the first step of the forward
    run means nothing."""
    out = []
    for name, value in options:
        if (backward and name == "first_step") or name == "dense_output":
            continue
        if name in ("rtol", "atol") and np.ndim(value) > 0:
            value = float(np.min(value))
        out.append((name, value))
    return tuple(out)


def _float64(x):
    return x if x.dtype == np.float64 else cast(x, np.float64)


def solve_ivp(fun, t_span, y0, method="RK45", t_eval=None, dense_output=False, events=None,
              vectorized=False, args=None, **options):
    """scipy.integrate.solve_ivp, differentiable (module docstring): SciPy's OdeResult
    whose y (d, T) is a Tensor differentiable in y0, t_eval and the float args, and t
    the output times (a Tensor when t_eval is given, else SciPy's steps as NumPy, whose
    derivative is not defined: y is differentiated at those times held fixed).

    fun(t, y, *args) gets Tensors and returns (d,) values (vj or NumPy functions); the
    float leaves of args (Tensors, arrays, Python floats, in any nest) arrive as float64
    Tensors and are differentiable, other leaves (ints, strings) are passed as given.
    Parameters must come in through args (a closure over a value a tape or accumulator
    follows raises). `sol` (dense_output=True) is SciPy's interpolant, not
    differentiable. events and vectorized are not supported. Options (rtol, atol,
    first_step, max_step, ...) are SciPy's; rtol and atol set the derivatives' accuracy
    too.
    """
    if not callable(fun):
        raise TypeError(f"{FN}: fun must be callable, got {type(fun).__name__}")
    if method not in METHODS:
        raise ValueError(f"{FN}: method must be one of {METHODS} (classes are not "
                         f"supported), got {method!r}")
    if events is not None:
        raise NotImplementedError(f"{FN}: events are not supported")
    if as_bool(vectorized, FN, "vectorized"):
        raise NotImplementedError(f"{FN}: vectorized=True is not supported (fun gets one "
                                  "state vector)")
    for name in ("jac", "jac_sparsity"):
        if name in options:
            raise ValueError(f"{FN}: {name} is supplied by vecjac; do not pass it")
    # every check on values before any op runs (a failed call records nothing)
    try:
        t0, t_end = (float(np.asarray(getattr(v, "_value", v))) for v in t_span)
    except (TypeError, ValueError):
        raise ValueError(f"{FN}: t_span must be two numbers (t0, tf), got {t_span!r}") from None
    if not (np.isfinite(t0) and np.isfinite(t_end)):
        raise ValueError(f"{FN}: t_span must be finite, got {t_span!r}")
    dense_output = as_bool(dense_output, FN, "dense_output")
    y0 = to_input(y0, fn=FN, arg="y0")
    if y0.dtype.kind not in "biuf" or y0.ndim > 1 or y0.size == 0:
        raise ValueError(f"{FN}: y0 must be a non-empty real vector (or a number), got "
                         f"shape {y0.shape} and dtype {y0.dtype}")
    if not np.all(np.isfinite(np.asarray(y0._value))):
        raise ValueError(f"{FN}: y0 must be finite")
    if t_eval is not None:
        t_eval = to_input(t_eval, fn=FN, arg="t_eval")
        values = np.asarray(t_eval._value)
        if t_eval.dtype.kind not in "iuf" or t_eval.ndim > 1 or t_eval.size == 0:
            raise ValueError(f"{FN}: t_eval must be a non-empty vector of real times, got shape "
                             f"{t_eval.shape} and dtype {t_eval.dtype}")
        direction = np.sign(t_end - t0) or 1.0
        if not np.all(np.isfinite(values)) or values.size and (
                np.any(np.diff(values.reshape(-1)) * direction < 0) or
                np.any((values - t0) * direction < 0) or
                np.any((values - t_end) * direction > 0)):
            raise ValueError(f"{FN}: t_eval must be finite, sorted in the direction of "
                             f"integration and lie within t_span {t_span!r}")
    y0 = reshape(_float64(y0), (-1,))
    # the float leaves of args (any nest) are the op's inputs; the rest stay as given
    floats, rebuild = split_args(() if args is None else args, FN)
    user = fun

    def fun(t, y, *p):
        return user(t, y, *rebuild(p))
    fun.__name__ = getattr(user, "__name__", "fun")
    args = tuple(floats)
    d = y0.shape[0]
    options = tuple(sorted(options.items()))
    memo = {}
    if t_eval is None:  # SciPy's own steps: run here, the op reuses this run
        first = _run(fun, np.asarray(y0._value), t0, t_end, None,
                     [np.asarray(a._value) for a in args], method,
                     options + (("dense_output", dense_output),))
        times = Tensor(np.asarray(first.t, np.float64))
    else:
        times = _float64(reshape(t_eval, (-1,)))
    if closes_over_watched(lambda y, s, *a: evaluate(fun, s, y, a, d), y0,
                           Tensor(np.array([t0])), args, d):
        raise ValueError(f"{FN}: fun reads a value that a GradientTape or "
                         "ForwardAccumulator follows other than through args (a closure); "
                         "its derivative would be lost: pass it through args")
    t = concat([Tensor(np.array([t0])), times], axis=0)
    if t_eval is None:
        memo[(np.asarray(y0._value).tobytes(), np.asarray(t._value).tobytes(),
              tuple(np.asarray(a._value).tobytes() for a in args))] = first
    elif dense_output:
        options = options + (("dense_output", True),)
    ys = apply(SolveIvp, y0, t, *args, fun=fun, method=method, options=options,
               t_end=t_end, memo=memo)
    result = memo["result"]
    result.y = transpose(ys[1:], (1, 0))
    result.t = np.asarray(times._value) if t_eval is None else times
    return result


# -- the registry's samples (tests/test_registry.py) -----------------------------------------
_TIMES = np.array([0.1, 0.25])


def _decay(t, y, k, c):
    """A forced, coupled, nonlinear decay."""
    return -k * y + c * sin(t) + 0.1 * y[::-1] * y


def _sample(y0, k, c, method="RK45"):
    return solve_ivp(_decay, (0.0, 0.25), y0, method=method, t_eval=_TIMES, args=(k, c),
                     rtol=1e-9, atol=1e-9).y


SolveIvp.samples = (
    Sample(_sample, Arg.float(2), Arg.positive(2), Arg.float(), grad_order=1,
           no_f32="SciPy integrates in float64"),)
# grad_order=1, RK45 only: second derivatives integrate adjoints of adjoints, and the
# stiff methods' Jacobians cost more (tens of seconds here); both are checked by
# tests/api/scipy/test_solve_ivp.py
