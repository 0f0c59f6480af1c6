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
  one solve whose right-hand side is one pfor over them (the converter). BDF and Radau
  factor one Newton block for all of [y, ydot_1 ..] (vecjac/_src/api/scipy/ivp_newton.py),
  and by default the steps are chosen on y alone (sensitivity_error_control=False):
  the sensitivities are then the derivative of the discretization on the primal's
  steps, their own truncation error unestimated.
- VJP (adjoint), three ways (the `adjoint` argument):
  "interpolated" (default) and "checkpoint": only the adjoint a (and the parameter
  quadrature b) is integrated backwards, da/ds = -(df/dy)^T a, b the integral of
  (df/dargs)^T a, with y(s) read from the forward run (SciPy's dense output, kept by the
  op while a tape holds it, or re-integrated between checkpoints): stable on stiff
  problems, where the stiff methods integrate a with the Newton matrix -(df/dy)^T.
  The op IvpAdjoint (vecjac/_src/api/scipy/ivp_adjoint.py, ivp_backward.py) computes
  it; its own derivatives go through this op again (second order, pfor).
  "backsolve": the state [y, a, b] with dy/ds = f, da/ds = -a^T df/dy,
  db/ds = -a^T df/dargs integrated backwards from t_i to t_{i-1}, y not read from the
  forward run (nothing but the outputs kept). Backwards, a dissipative (stiff) system
  is unstable: the rule checks that the run comes back to y0 (within
  100 (atol + rtol |y0|) + 1e-8 |y0|) and raises otherwise.
  In all three the cotangent of y(t_i) is added to a at t_i, and t_i's cotangent is
  g_i . f(t_i, y_i) (t0's: -(a(t0) - g_0) . f(t0, y0)).
Stiff methods (Radau, BDF, LSODA) get the Jacobian of every system, augmented ones
included, from vecjac (vj.scipy.jac; sparse, pattern detected, when the state has at
least SPARSE_MIN components and the method is Radau or BDF).
"""
import numpy as np

from vecjac._src.api.scipy.implicit import split_args
from vecjac._src.api.scipy.ivp_adjoint import solution_gradient
from vecjac._src.api.scipy.ivp_backward import (AdjointProblem, augmented_options,
                                                check_adjoint, checkpoint_times,
                                                trajectory_key)
from vecjac._src.api.scipy.ivp_backward import run as _run_scipy
from vecjac._src.api.scipy.ivp_systems import (FN, Diverged, adjoint_dynamics,
                                               batched_dynamics, evaluate, float_positions,
                                               shared_tangent_dynamics, shared_tangents,
                                               tangent_dynamics)
from vecjac._src.api.scipy.odeint import closes_over_watched, parameter_cotangents
from vecjac._src.core.context import state
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


def _run(fun, y0, t0, t_end, t_eval, args, method, options, jit):
    """SciPy's solve_ivp from t0 to t_end, output at t_eval (NumPy; None: its own steps):
    its result."""
    return _run_scipy(fun, y0, t0, t_end, t_eval, args, method, options, FN, jit=jit)


@register
class SolveIvp(Op):
    """y (T, d) at the times t (T,) of dy/dt = fun(t, y, *args), y(t[0]) = y0 (d,),
    integrated to t_end. Attrs: fun (on Tensors), method, options (pairs), t_end, memo (a
    dict: the public function's own run, reused by the first forward, and the forward
    runs kept for the reverse mode), adjoint (the reverse mode: "interpolated",
    "checkpoint" or "backsolve") and checkpoints (K, for "checkpoint")."""
    name = "SolveIvp"
    samples = ()  # below

    def forward(self, y0, t, *args, fun, method, options, t_end, memo, adjoint, checkpoints,
                control_tangents, jit):
        key = (y0.tobytes(), t.tobytes(), tuple(np.asarray(a).tobytes() for a in args))
        result = memo.pop(key, None)
        # the reverse mode reads this run: kept when a tape could record the op
        keep = adjoint != "backsolve" and bool(state.tapes)
        wanted = dict(options).get("dense_output", False)
        times, rows = np.asarray(t[1:], np.float64), None
        if result is None:
            opts = options
            if keep and adjoint == "interpolated" and not wanted:
                opts = options + (("dense_output", True),)
            elif keep and adjoint == "checkpoint":
                times, rows = checkpoint_times(t, checkpoints)
            result = _run(fun, y0, t[0], t_end, times, args, method, opts, jit)
        ys = result.y.T if rows is None else result.y.T[rows]
        if keep:
            kept = memo.setdefault("trajectories", {})
            where = trajectory_key(fun, y0, t, args)
            if adjoint == "interpolated" and result.sol is not None:
                kept[where] = result.sol
            elif adjoint == "checkpoint":
                kept[where] = (np.concatenate([t[:1], times]),
                               np.concatenate([y0[None, :], result.y.T]))
            if not wanted:
                result.sol = None
        memo["result"] = result
        return np.concatenate([y0[None, :], ys], axis=0)

    def gradient(self, e, g):
        if e.attrs["adjoint"] == "backsolve":
            return _backsolve(e, g)
        y0, t, *args = e.inputs
        attrs = e.attrs
        fun, d = attrs["fun"], y0.shape[0]
        floats = float_positions(args)

        def system(s, y, *args):
            return evaluate(fun, s, y, args, d)
        system.__name__ = getattr(fun, "__name__", "fun")
        problem = AdjointProblem(system, attrs["method"], tuple(
            (k, v) for k, v in attrs["options"] if k != "dense_output"), attrs["t_end"],
            attrs["adjoint"], attrs["checkpoints"], FN, source=fun, jit=attrs["jit"])

        def primal(y0, t, *args):
            return apply(SolveIvp, y0, t, *args, **dict(attrs, memo={}))
        a, t_bar, b = solution_gradient(e, g, problem, primal, attrs["memo"])
        return (a, t_bar, *parameter_cotangents(b, args, floats, [args[k].size for k in floats]))

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
                    fun=tangent_dynamics(fun, d, len(args), e.attrs["control_tangents"]),
                    method=e.attrs["method"],
                    options=augmented_options(e.attrs["options"], backward=False),
                    t_end=e.attrs["t_end"], memo={}, adjoint=e.attrs["adjoint"],
                    checkpoints=e.attrs["checkpoints"],
                    control_tangents=e.attrs["control_tangents"], jit=e.attrs["jit"])[:, d:]
        if tt is not None:
            rates = stack([evaluate(fun, t[i], ys[i], args, d) for i in range(ys.shape[0])])
            out = out + rates * reshape(tt, (-1, 1))
        return out

    def converter(self, cx, y0, t, *args, fun, method, options, t_end, memo, adjoint,
                  checkpoints, control_tangents, jit):
        """All iterations as one system of iters x d unknowns, its right-hand side one
        pfor over the iterations (the forward sensitivities of jacfwd, one tangent per
        parameter, become one augmented solve). The steps are chosen for the whole
        system, so the values differ from the loop's within the tolerances. Times
        that vary per iteration: one solve each."""
        stacked_y0, stacked_t, *stacked_args = cx.stacked
        attrs = dict(fun=fun, method=method, options=options, t_end=t_end, memo=memo,
                     adjoint=adjoint, checkpoints=checkpoints,
                     control_tangents=control_tangents, jit=jit)
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
                                              tuple(stacked_args[n_args:]),
                                              fun.control_tangents)
            ys = apply(self, start, t, *args, **dict(attrs, fun=system))
            steps = t.shape[0]
            trajectory = cx.stack(ys[:, :n])
            directions = transpose(reshape(ys[:, n:], (steps, iters, n)), (1, 0, 2))
            return concat([trajectory, directions], axis=2)
        start = reshape(y0 if stacked_y0 else cx.stack(y0), (-1,))
        batched = batched_dynamics(fun, d, iters, tuple(stacked_args))
        ys = apply(self, start, t, *args, **dict(attrs, fun=batched))
        return transpose(reshape(ys, (t.shape[0], iters, d)), (1, 0, 2))


def _backsolve(e, g):
    """The VJP of adjoint="backsolve": y integrated backwards alongside the adjoint, as
    an augmented SolveIvp per output interval (module docstring)."""
    y0, t, *args = e.inputs
    ys = e.outputs[0]
    fun, method, options = e.attrs["fun"], e.attrs["method"], e.attrs["options"]
    d, steps = y0.shape[0], t.shape[0]
    floats = float_positions(args)
    sizes = [args[k].size for k in floats]
    scale = np.max(np.abs(np.asarray(ys._value))) if ys.size else 0.0
    backward = adjoint_dynamics(fun, d, 1e3 * (1.0 + scale), sum(sizes))
    back_options = augmented_options(options, backward=True)
    a = g[steps - 1]
    b = zeros((sum(sizes),), dtype=y0.dtype)
    t_bars = []
    y_back = ys[steps - 1]
    times = np.asarray(t._value).reshape(-1, steps)  # (iterations under pfor, steps)
    for i in range(steps - 1, 0, -1):
        t_bars.append(reduce_sum(g[i] * evaluate(fun, t[i], ys[i], args, d)))
        if np.all(times[:, i] == times[:, i - 1]):  # t_eval[0] == t0: nothing to integrate
            a = a + g[i - 1]
            continue
        try:
            z = apply(SolveIvp, concat([ys[i], a, b], axis=0), stack([t[i], t[i - 1]]),
                      *args, fun=backward, method=method, options=back_options,
                      t_end=float(times[0, i - 1]),
                      memo={}, adjoint="backsolve", checkpoints=None,
                      control_tangents=e.attrs["control_tangents"],
                      jit=False)[1]  # (its check on |y| reads values: not traceable)
        except Diverged as err:
            _unstable(f"{err} on the way back", options, method)
        y_back = z[:d]
        a, b = z[d:2 * d] + g[i - 1], z[2 * d:]
    _check_reconstruction(y0, y_back, options, method)
    a_plus = a - g[0]
    t_bars.append(-reduce_sum(a_plus * evaluate(fun, t[0], y0, args, d)))
    return (a if e.needs[0] else None, stack(t_bars[::-1]) if e.needs[1] else None,
            *parameter_cotangents(b, args, floats, sizes))


def _check_reconstruction(y0, y_back, options, method):
    """The adjoint integrates y backwards; if it did not come back to y0, the adjoint
    along it is wrong too: raise rather than return it."""
    opts = dict(options)
    rtol, atol = float(np.max(opts.get("rtol", 1e-3))), float(np.max(opts.get("atol", 1e-6)))
    start = np.asarray(y0._value)
    error = np.abs(np.asarray(y_back._value) - start)
    bound = 100 * (atol + rtol * np.abs(start)) + 1e-8 * np.abs(start)
    if not np.all(error <= bound):
        _unstable(f"error {float(np.max(error)):.3g} at y0", options, method)


def _unstable(what, options, method):
    opts = dict(options)
    raise ValueError(f"{FN}: the adjoint's backward integration of y did not return to y0 "
                     f"({what}; {method}, rtol {opts.get('rtol', 1e-3)}, atol "
                     f"{opts.get('atol', 1e-6)}): the system is unstable backwards in time "
                     "(stiff or dissipative); use adjoint='interpolated' or 'checkpoint' (y read "
                     "from the forward run), forward mode (vj.jacfwd, vj.jvp), or tighten "
                     "rtol / atol")


def _float64(x):
    return x if x.dtype == np.float64 else cast(x, np.float64)


def solve_ivp(fun, t_span, y0, method="RK45", t_eval=None, dense_output=False, events=None,
              vectorized=False, args=None, adjoint="interpolated", checkpoints=None,
              sensitivity_error_control=False, jit=False, **options):
    """scipy.integrate.solve_ivp, differentiable (module docstring): SciPy's OdeResult
    whose y (d, T) is a Tensor differentiable in y0, t_eval and the float args, and t
    the output times (a Tensor when t_eval is given, else SciPy's steps as NumPy, whose
    derivative is not defined: y is differentiated at those times held fixed).

    fun(t, y, *args) gets Tensors and returns (d,) values (vj or NumPy functions); the
    float leaves of args (Tensors, arrays, Python floats, in any nest) arrive as float64
    Tensors and are differentiable, other leaves (ints, strings) are passed as given.
    Parameters must come in through args (a closure over a value a tape or accumulator
    follows raises). `sol` (dense_output=True) is SciPy's interpolant, not
    differentiable: when a transform differentiates the solve, calling it raises
    (pass the times as t_eval; `sol.scipy(t)` gives the values alone). events and vectorized are not supported. Options (rtol, atol,
    first_step, max_step, ...) are SciPy's; rtol and atol set the derivatives' accuracy
    too.

    adjoint: how reverse mode (vj.grad, GradientTape, jacrev) gets y(t) along the way
    back, with its memory (d states, T outputs):
    - "interpolated" (default): from the forward run's dense output (SciPy's
      OdeSolution), kept from the forward to the backward pass when a tape is active:
      memory ~ number of forward steps x d x (order + 1) floats. Only the adjoint is
      integrated backwards, with the same method: works on stiff problems.
    - "checkpoint": y stored at `checkpoints` times (default 10, spread evenly over the
      outputs' range) besides the outputs; the backward pass integrates each segment
      between checkpoints forwards again, with dense output for that segment only:
      memory ~ (checkpoints + T) x d + one segment's dense output, for one more forward
      solve (in segments). Also for stiff problems.
    - "backsolve": y integrated backwards together with the adjoint, memory O(d) beyond
      the outputs; for non-stiff problems only (a stiff one diverges backwards: it
      raises).
    The interpolant and the re-integrated segments are accurate to the forward rtol /
    atol, and the backward integration follows rtol and atol times the largest output
    cotangent (their tightest values: the adjoint scales with the loss, so does its
    tolerance; if SciPy cannot meet it, atol is loosened 1000-fold, at most to rtol times
    that cotangent, with a RuntimeWarning), so the gradient is the derivative of the
    exact solution to within those tolerances (tighten them for more digits).

    sensitivity_error_control: forward mode (vj.jvp, jacfwd, ForwardAccumulator)
    integrates [y, ydot] together. False (default): SciPy's error control looks at y
    alone, so the solve takes the primal solve's steps and orders, and ydot is the
    derivative of that discretization (exact for the explicit methods; for the implicit
    ones up to the Newton iteration's tolerance); ydot's truncation error is not
    estimated: measured up to 3e-5 (normwise) at rtol 1e-6 on a 2-D Brusselator and
    5e-5 (the worst entry) at rtol 1e-7 on Robertson's kinetics (BDF), where y's own
    error is about rtol. True: ydot takes part (SciPy's tolerances on every state):
    more steps (1.4x the evaluations on that Brusselator, 1.5x the steps on Robertson's,
    5.7x the time there with six parameters) for an error of about rtol (2e-6, 6e-6)
    (benchmarks/results/stiff_ode_sensitivities.md). Reverse
    mode integrates its adjoint with its own error control either way. LSODA always
    controls ydot (ODEPACK's own norms: with ydot left out it took more steps than the
    primal, not the same ones).

    jit=True: every SciPy run of this call (the solve, the sensitivity systems of
    forward mode, the adjoint's backward pass and its re-integrated segments) evaluates
    fun, and the Jacobian the stiff methods get, as vj.function traces: traced on the
    run's first evaluation, replayed for the rest (on a 2-D Brusselator of 2048 states:
    the primal solve 0.72 s -> 0.53 s, forward sensitivities 2.2 s -> 1.4 s, the adjoint
    gradient 1.8 s -> 1.2 s; the same values). vj.function's semantics apply to fun
    within a run: arrays and Tensors it closes over are read once, when traced (a later
    run traces again, so a change between calls is seen); Python side effects (print,
    counters) happen while tracing only; a Python decision on a comparison (`if t > 1`)
    is a guard that traces again when it would go the other way, while a value read
    into Python (float(t)) is a guard on that value: after 5 traces the run goes on
    eagerly, with vj.function's warning. The args are the traces' inputs, read at every
    evaluation. (Every run, jit or not, keeps
    outer transforms out of sight, core.context.suspended: none could follow fun's ops,
    which get fresh values, a closure over a followed value raising; with jit the
    traces then replay directly.) adjoint="backsolve" integrates backwards eagerly
    (its divergence check reads values at every evaluation).
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
    sensitivity_error_control = as_bool(sensitivity_error_control, FN,
                                        "sensitivity_error_control")
    jit = as_bool(jit, FN, "jit")
    adjoint, checkpoints = check_adjoint(adjoint, checkpoints, FN)
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
        keep = adjoint == "interpolated" and bool(state.tapes)  # the op keeps it (forward)
        first = _run(fun, np.asarray(y0._value), t0, t_end, None,
                     [np.asarray(a._value) for a in args], method,
                     options + (("dense_output", dense_output or keep),), jit)
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
    if dense_output:
        options = options + (("dense_output", True),)
    entries = [tape.entry_count for tape in state.tapes]
    ys = apply(SolveIvp, y0, t, *args, fun=fun, method=method, options=options,
               t_end=t_end, memo=memo, adjoint=adjoint, checkpoints=checkpoints,
               control_tangents=sensitivity_error_control, jit=jit)
    result = memo["result"]
    if result.sol is not None and _followed(ys, entries):
        result.sol = UndifferentiableSolution(result.sol)
    result.y = transpose(ys[1:], (1, 0))
    result.t = np.asarray(times._value) if t_eval is None else times
    return result


def _followed(ys, entries):
    """Whether a transform follows the op's output (a tape recorded it, an accumulator
    or a loop carries it)."""
    if ys._pfor is not None or any(tape.entry_count > n for tape, n in
                                   zip(state.tapes, entries)):
        return True
    return any(tr.follows((ys,)) for tr in state.followers)


class UndifferentiableSolution:
    """result.sol of a solve that a transform differentiates: SciPy's interpolant gives
    NumPy values with no derivative, which would silently count as constants (a
    gradient of 0 through sol(t)). Calling it raises; `.scipy` is SciPy's OdeSolution,
    for values only."""

    def __init__(self, scipy_solution):
        self.scipy = scipy_solution

    def __call__(self, t):
        raise ValueError(f"{FN}: sol (dense_output=True) is SciPy's interpolant and has "
                         "no derivative, and this solution is being differentiated; pass "
                         "the times as t_eval= for differentiable values (or call "
                         "sol.scipy(t) for values only)")

    def __getattr__(self, name):
        return getattr(self.scipy, name)


# -- the registry's samples (tests/test_registry.py) -----------------------------------------
_TIMES = np.array([0.1, 0.25])


def _decay(t, y, k, c):
    """A forced, coupled, nonlinear decay."""
    return -k * y + c * sin(t) + 0.1 * y[::-1] * y


def _sample(y0, k, c, method="RK45"):
    # rtol 1e-11: forward mode's sensitivities ride on y's steps, their error unestimated;
    # at 1e-9 the JVP and the VJP differed by 3e-9, over the registry's 1e-9
    return solve_ivp(_decay, (0.0, 0.25), y0, method=method, t_eval=_TIMES, args=(k, c),
                     rtol=1e-11, atol=1e-11).y


SolveIvp.samples = (
    Sample(_sample, Arg.float(2), Arg.positive(2), Arg.float(), grad_order=1,
           no_f32="SciPy integrates in float64"),)
# grad_order=1, RK45 only: second derivatives integrate adjoints of adjoints, and the
# stiff methods' Jacobians cost more (tens of seconds here); both are checked by
# tests/api/scipy/test_solve_ivp.py
