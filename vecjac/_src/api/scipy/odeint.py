"""scipy.integrate.odeint as an op, differentiable in y0, t and the args of func.

The values are SciPy's (LSODA through scipy.integrate.odeint, with the caller's
tolerances); func is evaluated on Tensors, so it may use vj functions or NumPy's
(dispatched). The derivatives are those of the exact solution, each again an OdeInt of an
augmented system, so every order works and tapes and accumulators nest:
- VJP (the adjoint method, Pontryagin): integrating backwards from t[i] to t[i-1] the
  state [y, a, b] with dy/ds = f, da/ds = -a^T df/dy, db/ds = -a^T df/dargs, the
  cotangent of the output at each t[i] added to a. Then y0_bar = a(t0), args_bar = b(t0),
  t_bar[i] = g[i] . f(y_i, t_i) for i > 0 and t_bar[0] = -a(t0+) . f(y0, t0) (a before
  the cotangent of y(t0) = y0 itself is added).
- JVP (forward sensitivities): [y, ydot] with dydot/ds = df/dy ydot + df/dargs argsdot,
  from ydot(t0) = y0dot - f(y0, t0) t0dot; the tangent at t[i] adds f(y_i, t_i) tdot[i].
pfor runs the op once per iteration (adaptive step sizes are per problem: one batched
system would change the values).
"""
import numpy as np

from vecjac._src.api.function import function
from vecjac._src.api.scipy.ivp_adjoint import solution_gradient
from vecjac._src.api.scipy.ivp_backward import AdjointProblem, check_adjoint, odeint_options
from vecjac._src.core.context import state, suspended, value_read
from vecjac._src.core.dispatch import apply, to_input
from vecjac._src.core.registry import Op, register
from vecjac._src.core.samples import Arg, Sample
from vecjac._src.core.shapes import as_bool
from vecjac._src.core.tensor import Tensor
from vecjac._src.ops.array.creation import zeros, zeros_like
from vecjac._src.ops.array.shaping import concat, reshape, stack
from vecjac._src.ops.elementwise.logic import cast
from vecjac._src.ops.elementwise.scipy_special import scipy_module
from vecjac._src.ops.elementwise.unary import sin
from vecjac._src.ops.reduce.cumulative import cumsum
from vecjac._src.ops.reduce.reductions import reduce_sum
from vecjac._src.transforms.forward.accumulator import ForwardAccumulator
from vecjac._src.transforms.tape.tape import GradientTape

__all__ = []


def _as_state(out, d, dtype, fn):
    """func's value as a Tensor of shape (d,): what odeint integrates."""
    if not isinstance(out, Tensor):
        try:
            out = to_input(out, fn=fn, arg="func's value")
        except (TypeError, ValueError) as err:
            raise TypeError(f"{fn}: func must return real numbers, got "
                            f"{type(out).__name__}") from err
    if out.dtype.kind not in "biuf":
        raise TypeError(f"{fn}: func must return real numbers, got dtype {out.dtype}")
    if out.shape != (d,):
        raise ValueError(f"{fn}: func must return an array of y0's shape ({d},), got shape "
                         f"{out.shape}")
    return out if out.dtype == dtype else cast(out, dtype)


def _evaluate(func, y, s, args, d):
    return _as_state(func(y, s, *args), d, y.dtype, "vj.scipy.integrate.odeint")


def _float(tensors):
    return [k for k, a in enumerate(tensors) if a.dtype.kind == "f"]


def _adjoint_dynamics(func, d):
    """The backward system [y, a, b] of the VJP, b the args' cotangents flattened."""
    def dynamics(z, s, *args):
        y, a = z[:d], z[d:2 * d]
        floats = _float(args)
        with GradientTape() as tape:
            tape.watch(y)
            for k in floats:
                tape.watch(args[k])
            f = _evaluate(func, y, s, args, d)
        grads = tape.gradient(f, [y] + [args[k] for k in floats], output_gradients=-a,
                              unconnected_gradients="zero")
        return concat([f, grads[0]] + [reshape(g, (-1,)) for g in grads[1:]], axis=0)
    return dynamics


def parameter_cotangents(b, args, floats, sizes):
    """The adjoint's parameter part `b` (the float args, flat, in order) cut back into one
    cotangent per argument: None for arguments that are not floats."""
    grads = [None] * len(args)
    start = 0
    for k, size in zip(floats, sizes):
        grads[k] = reshape(b[start:start + size], args[k].shape)
        start += size
    return grads


def _tangent_dynamics(func, d, n_args):
    """The forward system [y, ydot] of the JVP; the args' tangents follow the args."""
    def dynamics(z, s, *args_and_tangents):
        args, tangents = args_and_tangents[:n_args], args_and_tangents[n_args:]
        floats = _float(args)
        y = z[:d]
        with ForwardAccumulator([y] + [args[k] for k in floats],
                                [z[d:]] + list(tangents)) as acc:
            f = _evaluate(func, y, s, args, d)
        return concat([f, acc.jvp(f, unconnected_gradients="zero")], axis=0)
    return dynamics


def _rates(func, ys, t, args, d):
    """f(y_i, t_i) at every output time, (T, d)."""
    return stack([_evaluate(func, ys[i], t[i], args, d) for i in range(ys.shape[0])])


def _check_back_on_track(z, y, d, options, i):
    """adjoint="backsolve": the state integrated back to t[i - 1] must be finite and within
    100 (atol + rtol |y|) + 1e-8 |y| of the forward solution there, else a ValueError."""
    rtol = options.get("rtol") or 1.49012e-8  # odeint's defaults
    atol = options.get("atol") or 1.49012e-8
    back = np.asarray(z[..., :d], np.float64)  # (a loop's values: stacked on axis 0)
    y = np.asarray(y, np.float64)
    bound = 100 * (np.asarray(atol) + np.asarray(rtol) * np.abs(y)) + 1e-8 * np.abs(y)
    if not (np.all(np.isfinite(z)) and np.all(np.abs(back - y) <= bound)):
        raise ValueError(
            f"odeint: adjoint='backsolve' integrated y backwards to t[{i - 1}] and it left "
            "the forward solution (the system is unstable backwards in time: stiff or "
            "dissipative), so its gradient would be wrong or NaN; use adjoint='interpolated' "
            "(the default) or 'checkpoint', or forward mode (vj.jacfwd, vj.jvp)")


@register
class OdeInt(Op):
    """y (T, d) at the times t (T,) of dy/dt = func(y, t, *args), y(t[0]) = y0 (d,).
    Attrs: func (on Tensors), options (SciPy's keyword arguments, as pairs), adjoint
    and checkpoints (the reverse mode, vecjac/_src/api/scipy/ivp_backward.py), jit (func
    replayed as a vj.function trace)."""
    samples = (Sample(lambda y0, k, c: odeint(_decay, y0, _TIMES, args=(k, c), rtol=1e-11,
                                              atol=1e-11),
                      Arg.float(2), Arg.positive(2), Arg.float(), grad_order=1,
                      no_f32="SciPy's odeint integrates in float64"),
               Sample(lambda y0, steps: odeint(_decay, y0, cumsum(steps), args=(1.5, 0.3),
                                               rtol=1e-11, atol=1e-11),  # increasing t
                      Arg.float(2), Arg.positive(3, lo=0.05, hi=0.2), grad_order=1,
                      no_f32="SciPy's odeint integrates in float64",
                      # central differences over a solve at 1e-11: a step of 1e-6 turns the
                      # solver's noise into 1e-5 errors; 1e-4 keeps both errors near 1e-8
                      tol={"eps": 1e-4}))
    # grad_order=1: the registry's second-order checks (a Hessian through pfor, nested
    # jacobians) integrate adjoints of adjoints, minutes here; second derivatives are
    # checked by tests/api/scipy/test_odeint.py

    def forward(self, y0, t, *args, func, options, adjoint, checkpoints, jit):
        dtype = y0.dtype
        d = y0.shape[0]
        tensors = [Tensor(a) for a in args]

        def evaluation(y, s):
            return _evaluate(func, y, s, tensors, d)
        traced = function(evaluation) if jit else evaluation

        def rate(y, s):
            return traced(Tensor(y.astype(dtype, copy=False)),
                          Tensor(np.asarray(s, t.dtype)))._value

        with np.errstate(all="ignore"), suspended():  # fresh values (ivp_backward.run)
            ys = scipy_module("integrate").odeint(rate, y0.astype(np.float64),
                                                   t.astype(np.float64), **dict(options))
        return ys.astype(dtype, copy=False)

    def gradient(self, e, g):
        if e.attrs["adjoint"] != "backsolve":
            return _on_forward_run(e, g)
        y0, t, *args = e.inputs
        ys = e.outputs[0]
        func, options = e.attrs["func"], e.attrs["options"]
        d, steps = y0.shape[0], t.shape[0]
        floats = _float(args)
        sizes = [args[k].size for k in floats]
        backward = _adjoint_dynamics(func, d)
        a = g[steps - 1]
        b = zeros((sum(sizes),), dtype=y0.dtype)
        t_bars = []
        for i in range(steps - 1, 0, -1):
            t_bars.append(reduce_sum(g[i] * _evaluate(func, ys[i], t[i], args, d)))
            z = apply(OdeInt, concat([ys[i], a, b], axis=0), stack([t[i], t[i - 1]]), *args,
                      func=backward, options=_augmented(options, backward=True),
                      adjoint="backsolve", checkpoints=None,
                      jit=False)[1]  # (its check on y reads values: not traceable)
            # never a NaN or a wrong gradient in silence: y integrated backwards must be
            # back on the forward solution (a stiff system is unstable backwards)
            value_read(z, "internal", np.shape)
            _check_back_on_track(np.asarray(z._value), np.asarray(ys._value)[..., i - 1, :],
                                 d, dict(options), i)
            a, b = z[d:2 * d] + g[i - 1], z[2 * d:]
        a_plus = a - g[0]
        t_bars.append(-reduce_sum(a_plus * _evaluate(func, y0, t[0], args, d)))
        return (a if e.needs[0] else None, stack(t_bars[::-1]) if e.needs[1] else None,
                *parameter_cotangents(b, args, floats, sizes))

    def jvp(self, e, ty0, tt, *targs):
        if ty0 is None and tt is None and all(x is None for x in targs):
            return None
        y0, t, *args = e.inputs
        ys = e.outputs[0]
        func, options = e.attrs["func"], e.attrs["options"]
        d = y0.shape[0]
        start = zeros_like(y0) if ty0 is None else ty0
        if tt is not None:
            start = start - _evaluate(func, y0, t[0], args, d) * tt[0]
        floats = _float(args)
        tangents = [zeros_like(args[k]) if targs[k] is None else targs[k] for k in floats]
        out = apply(OdeInt, concat([y0, start], axis=0), t, *args, *tangents,
                    func=_tangent_dynamics(func, d, len(args)),
                    options=_augmented(options, backward=False), adjoint=e.attrs["adjoint"],
                    checkpoints=e.attrs["checkpoints"], jit=e.attrs["jit"])[:, d:]
        if tt is not None:
            out = out + _rates(func, ys, t, args, d) * reshape(tt, (-1, 1))
        return out

    def converter(self, cx, *inputs, **attrs):
        # one solve per iteration: each keeps its own adaptive steps, as the loop would
        outs = [apply(self, *[x[k] if s else x for x, s in zip(inputs, cx.stacked)],
                      **attrs) for k in range(cx.iters)]
        return stack(outs)


def _on_forward_run(e, g):
    """The VJP of adjoint="interpolated" / "checkpoint": y read from a run of solve_ivp's
    LSODA (dense output, or segments between checkpoints) in the backward pass, odeint's
    own run having kept nothing (vecjac/_src/api/scipy/ivp_adjoint.py)."""
    y0, t, *args = e.inputs
    func, d = e.attrs["func"], y0.shape[0]
    floats = _float(args)

    def fun(s, y, *args):
        return _evaluate(func, y, s, args, d)
    fun.__name__ = getattr(func, "__name__", "func")
    problem = AdjointProblem(fun, "LSODA", odeint_options(e.attrs["options"]), None,
                             e.attrs["adjoint"], e.attrs["checkpoints"],
                             "vj.scipy.integrate.odeint", jit=e.attrs["jit"])
    a, t_bar, b = solution_gradient(e, g, problem, lambda *x: apply(OdeInt, *x, **e.attrs),
                                    None)
    return (a, t_bar, *parameter_cotangents(b, args, floats, [args[k].size for k in floats]))


_TIMES = np.array([0.0, 0.2, 0.5])


def _decay(y, t, k, c):
    """The samples' system: a forced, coupled, nonlinear decay."""
    return -k * y + c * sin(t) + 0.1 * y[::-1] * y


def _first_iteration(x, shape=None):
    """A constant Tensor of x's value (inside pfor: its first iteration's)."""
    shape = x.shape if shape is None else shape
    value = np.asarray(x._value)
    return Tensor(value.reshape((-1,) + shape)[0] if value.size else value.reshape(shape))


def closes_over_watched(func, y0, t, args, d):
    """Whether func reads a value that an active tape or accumulator follows other than
    through its arguments (a closure): its derivative would be lost, silently. func runs
    once on constants (no op reaches a tape unless through such a closure); a wrong
    output raises here, before anything is recorded."""
    before = [tape.entry_count for tape in state.tapes]
    y = Tensor(np.asarray(_first_iteration(y0)._value, np.float64).reshape(d))
    t0 = Tensor(np.asarray(_first_iteration(t)._value[0], np.float64))
    out = _evaluate(func, y, t0, [_first_iteration(a) for a in args], d)
    if any(tape.entry_count > n for tape, n in zip(state.tapes, before)):
        return True
    return any(tr.follows((out,)) for tr in state.followers)


_OPTIONS = ("rtol", "atol", "tcrit", "h0", "hmax", "hmin", "mxstep", "mxordn", "mxords")


def _augmented(options, backward):
    """The forward problem's options as they apply to an augmented system (the adjoint's
    or the forward sensitivities'): its state is longer, so per-component tolerances
    become their tightest value; the adjoint runs each interval backwards in time, where
    the first step size h0 and the critical points tcrit of the forward run mean nothing
    (LSODA rejects them: the gradient would silently be zero)."""
    out = []
    for name, value in options:
        if backward and name in ("h0", "tcrit"):
            continue
        if name in ("rtol", "atol") and np.ndim(value) > 0:
            value = float(np.min(value))
        out.append((name, value))
    return tuple(out)


def odeint(func, y0, t, args=(), Dfun=None, col_deriv=0, full_output=0, ml=None, mu=None,
           rtol=None, atol=None, tcrit=None, h0=0.0, hmax=0.0, hmin=0.0, ixpr=0, mxstep=0,
           mxhnil=0, mxordn=12, mxords=5, printmessg=0, tfirst=False, adjoint="interpolated",
           checkpoints=None, jit=False):
    """y at the times t of dy/dt = func(y, t, *args), y(t[0]) = y0: scipy.integrate.odeint,
    differentiable in y0, t and the numeric entries of args (see the module docstring).

    y0: (d,) (a number: d = 1); t: (T,) monotonic; output (T, d), float64 as SciPy's.
    func gets Tensors and returns (d,) values; it may use vj functions or NumPy's.
    Parameters must come in through args: values func closes over are constants, and
    closing over one that a tape or accumulator follows raises ValueError (its derivative
    would be lost). Dfun, full_output and the banded Jacobian (ml, mu) are not supported.
    adjoint / checkpoints: the reverse mode, as solve_ivp's (vj.scipy.integrate.solve_ivp,
    where the memory of each is stated). "interpolated" (default) and "checkpoint" read y
    from a run of solve_ivp's LSODA with odeint's rtol / atol, made in the backward pass
    (odeint's own values are SciPy's odeint's, unchanged; its run keeps nothing):
    memory ~ that run's steps x d x (order + 1), or ~ (checkpoints + T) x d plus one
    segment's dense output; both work on stiff problems. "backsolve" integrates y
    backwards with the adjoint (memory O(d)), for non-stiff problems only.
    jit: as solve_ivp's (func traced on the first evaluation of each solve and replayed,
    with vj.function's semantics).
    """
    fn = "vj.scipy.integrate.odeint"
    if not callable(func):
        raise TypeError(f"{fn}: func must be callable, got {type(func).__name__}")
    for name, value in (("Dfun", Dfun), ("ml", ml), ("mu", mu)):
        if value is not None:
            raise NotImplementedError(f"{fn}: {name} is not supported (vecjac differentiates "
                                      "func itself)")
    if full_output:
        raise NotImplementedError(f"{fn}: full_output is not supported")
    tfirst = as_bool(tfirst, fn, "tfirst")
    jit = as_bool(jit, fn, "jit")
    adjoint, checkpoints = check_adjoint(adjoint, checkpoints, fn)
    y0 = to_input(y0, fn=fn, arg="y0")
    t = to_input(t, fn=fn, arg="t")
    if not isinstance(args, tuple):
        args = (args,)
    args = tuple(to_input(a, fn=fn, arg=f"args[{k}]") for k, a in enumerate(args))
    for name, x in (("y0", y0), ("t", t)) + tuple((f"args[{k}]", a) for k, a in
                                                   enumerate(args)):
        if x.dtype.kind not in "biuf":
            raise TypeError(f"{fn}: {name} must be real numbers, got dtype {x.dtype}")
    if y0.ndim > 1 or y0.size == 0:
        raise ValueError(f"{fn}: y0 must be a number or a non-empty vector, got shape "
                         f"{y0.shape}")
    if t.ndim != 1 or t.size == 0:
        raise ValueError(f"{fn}: t must be a non-empty vector of times, got shape {t.shape}")
    steps = np.diff(t._value)
    if not (np.all(steps >= 0) or np.all(steps <= 0)) or not np.all(np.isfinite(t._value)):
        raise ValueError(f"{fn}: t must be finite and monotonically increasing or "
                         "decreasing")
    if not np.all(np.isfinite(y0._value)):
        raise ValueError(f"{fn}: y0 must be finite")
    user = func
    if tfirst:
        def func(y, s, *rest):
            return user(s, y, *rest)
    d = y0.size
    if closes_over_watched(func, y0, t, args, d):
        raise ValueError(f"{fn}: func reads a value that a GradientTape or "
                         "ForwardAccumulator follows other than through its arguments (a "
                         "closure); its derivative would be lost: pass it through args")
    y0 = reshape(_float64(y0), (-1,))
    t = _float64(t)
    args = tuple(_float64(a) if a.dtype.kind == "f" else a for a in args)
    values = dict(rtol=rtol, atol=atol, tcrit=tcrit, h0=h0, hmax=hmax, hmin=hmin,
                  mxstep=mxstep, mxordn=mxordn, mxords=mxords)
    options = tuple((k, values[k]) for k in _OPTIONS if values[k] is not None)
    return apply(OdeInt, y0, t, *args, func=func, options=options, adjoint=adjoint,
                 checkpoints=checkpoints, jit=jit)


def _float64(x):
    return x if x.dtype == np.float64 else cast(x, np.float64)
