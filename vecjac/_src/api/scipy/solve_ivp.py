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
  The rule checks that the backward run comes back to y0 (within 100 (atol + rtol |y0|)
  + 1e-8 |y0|) and raises otherwise: use forward mode (vj.jacfwd, vj.jvp) there.
Stiff methods (Radau, BDF, LSODA) get the Jacobian of every system, augmented ones
included, from vecjac (vj.scipy.jac; sparse, pattern detected, when the state has at
least SPARSE_MIN components and the method is Radau or BDF).
"""
import importlib

import numpy as np

from vecjac._src.api.scipy.implicit import split_args
from vecjac._src.api.scipy.jac import Jac
from vecjac._src.api.scipy.odeint import closes_over_watched
from vecjac._src.core.dispatch import apply, to_input
from vecjac._src.core.registry import Op, register
from vecjac._src.core.samples import Arg, Sample
from vecjac._src.core.shapes import as_bool
from vecjac._src.core.tensor import Tensor
from vecjac._src.ops.array.creation import zeros, zeros_like
from vecjac._src.ops.array.indexing import GatherV2
from vecjac._src.ops.array.shaping import concat, reshape, stack, transpose
from vecjac._src.ops.elementwise.logic import cast
from vecjac._src.ops.elementwise.unary import sin
from vecjac._src.ops.reduce.reductions import reduce_sum
from vecjac._src.transforms.forward.accumulator import ForwardAccumulator
from vecjac._src.transforms.pfor.pfor import pfor
from vecjac._src.transforms.tape.tape import GradientTape

__all__ = ["solve_ivp"]

FN = "vj.scipy.integrate.solve_ivp"
METHODS = ("RK45", "RK23", "DOP853", "Radau", "BDF", "LSODA")
STIFF = ("Radau", "BDF", "LSODA")
SPARSE_MIN = 64  # states at least this long get a sparse Jacobian (Radau, BDF)


def _evaluate(fun, s, y, args, d):
    """fun(t, y, *args) as a float64 Tensor of shape (d,)."""
    out = fun(s, y, *args)
    if not isinstance(out, Tensor):
        try:
            out = to_input(out, fn=FN, arg="fun's value")
        except (TypeError, ValueError) as err:
            raise TypeError(f"{FN}: fun must return real numbers, got "
                            f"{type(out).__name__}") from err
    if out.dtype.kind not in "biuf":
        raise TypeError(f"{FN}: fun must return real numbers, got dtype {out.dtype}")
    if out.shape != (d,):
        raise ValueError(f"{FN}: fun must return an array of y0's shape ({d},), got shape "
                         f"{out.shape}")
    return out if out.dtype == np.float64 else cast(out, np.float64)


def _tensor(v):
    """SciPy's numbers (vj.scipy.jac's fun gets them as given) as float64 Tensors."""
    return v if isinstance(v, Tensor) else Tensor(np.asarray(v, np.float64))


def _float(tensors):
    return [k for k, a in enumerate(tensors) if a.dtype.kind == "f"]


class _Diverged(ValueError):
    """The backward integration of y left the forward trajectory's range."""


def _adjoint_dynamics(fun, d, bound, n_cotangents):
    """The backward system [y, a, b] of the VJP, b the args' cotangents flattened. A y
    beyond `bound` (far outside the forward trajectory) stops the run at once: backwards,
    an unstable system would otherwise take SciPy's minimal steps to overflow."""
    def dynamics(s, z, *args):
        y, a = z[:d], z[d:2 * d]
        size = np.max(np.abs(np.asarray(y._value))) if y.size else 0.0
        if not size <= bound:
            raise _Diverged(f"|y| reached {size:.3g}")
        floats = _float(args)
        with GradientTape() as tape:
            tape.watch(y)
            for k in floats:
                tape.watch(args[k])
            f = _evaluate(fun, s, y, args, d)
        grads = tape.gradient(f, [y] + [args[k] for k in floats], output_gradients=-a,
                              unconnected_gradients="zero")
        return concat([f, grads[0]] + [reshape(g, (-1,)) for g in grads[1:]], axis=0)
    dynamics.blocks = (fun, d, None, (1, -1), n_cotangents)
    return dynamics


def _tangent_dynamics(fun, d, n_args):
    """The forward system [y, ydot] of the JVP; the args' tangents follow the args."""
    def dynamics(s, z, *args_and_tangents):
        args, tangents = args_and_tangents[:n_args], args_and_tangents[n_args:]
        floats = _float(args)
        y = z[:d]
        with ForwardAccumulator([y] + [args[k] for k in floats],
                                [z[d:]] + list(tangents)) as acc:
            f = _evaluate(fun, s, y, args, d)
        return concat([f, acc.jvp(f, unconnected_gradients="zero")], axis=0)
    dynamics.tangent_of = (fun, d, n_args)  # the converter shares y between tangents
    dynamics.blocks = (fun, d, n_args, (1, 1), 0)
    dynamics.__name__ = getattr(fun, "__name__", "fun")
    return dynamics


def _shared_tangent_dynamics(fun, d, n_args, iters, stacked):
    """[y, ydot_1 .. ydot_iters]: the tangent systems of one trajectory y, all in one
    state (y integrated once), the tangents' right-hand sides one pfor of JVPs.
    stacked[k]: the k-th arg tangent carries one value per iteration on axis 0."""
    def dynamics(s, z, *args_and_tangents):
        args, tangents = args_and_tangents[:n_args], args_and_tangents[n_args:]
        floats = _float(args)
        y = z[:d]
        directions = reshape(z[d:], (iters, d))
        f = _evaluate(fun, s, y, args, d)

        def one(i):
            own = [apply(GatherV2, v, i, axis=0, batch_dims=0) if st else v
                   for v, st in zip(tangents, stacked)]
            with ForwardAccumulator([y] + [args[k] for k in floats],
                                    [apply(GatherV2, directions, i, axis=0, batch_dims=0)] +
                                    own) as acc:
                fi = _evaluate(fun, s, y, args, d)
            return acc.jvp(fi, unconnected_gradients="zero")
        return concat([f, reshape(pfor(one, iters), (-1,))], axis=0)
    dynamics.__name__ = getattr(fun, "__name__", "fun")
    dynamics.blocks = (fun, d, n_args, (1,) * (iters + 1), 0)
    return dynamics


def _integrate():
    # scipy.integrate: imported on first use, never with vecjac
    return importlib.import_module("scipy.integrate")


def _run(fun, y0, t0, t_end, t_eval, args, method, options):
    """SciPy's solve_ivp from t0 to t_end, output at t_eval (NumPy; None: its own steps):
    its result."""
    d = y0.shape[0]
    tensors = [Tensor(a) for a in args]

    def rate(s, y):
        return _evaluate(fun, Tensor(np.asarray(s, np.float64)),
                         Tensor(np.asarray(y, np.float64)), tensors, d)._value
    extra = {}
    blocks = getattr(fun, "blocks", None)
    if method in STIFF and blocks is not None:
        extra["jac"] = _block_jacobian(blocks, tensors, method)
    elif method in STIFF:
        sparse = d >= SPARSE_MIN and method != "LSODA"
        J = Jac(lambda s, y: _evaluate(fun, _tensor(s), _tensor(y), tensors, d), 1, sparse)
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


def _block_jacobian(blocks, tensors, method):
    """The Newton iteration matrix of an augmented system (tangent or adjoint): its
    diagonal blocks, each J = d fun/dy of the original system at the state's y (or
    -J^T for an adjoint), and zeros for the parameters' cotangents; the couplings
    between blocks (second derivatives times tangents) are left out. BDF, Radau and
    LSODA use the matrix only to iterate their implicit steps to the tolerance, so the
    values do not change; the factorization costs (blocks) x one of the original
    system's instead of the fill-in of the coupled matrix (8192 unknowns of a 32^2
    Brusselator's three sensitivities: 0.25 s per LU coupled)."""
    fun, d, n_args, signs, tail = blocks
    sparse = d >= SPARSE_MIN and method != "LSODA"
    J = Jac(lambda s, y: _evaluate(fun, _tensor(s), _tensor(y), tensors[:n_args], d), 1,
            sparse)
    scipy_sparse = importlib.import_module("scipy.sparse")

    def jac(s, z):
        Jy = J(s, np.asarray(z[:d]))
        Jy = Jy if sparse else scipy_sparse.csr_array(Jy)
        parts = [Jy if sign > 0 else -Jy.T for sign in signs]
        if tail:
            parts.append(scipy_sparse.csr_array((tail, tail)))
        matrix = scipy_sparse.block_diag(parts, format="csc")
        return matrix if sparse else matrix.toarray()
    return jac


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
        floats = _float(args)
        sizes = [args[k].size for k in floats]
        scale = np.max(np.abs(np.asarray(ys._value))) if ys.size else 0.0
        backward = _adjoint_dynamics(fun, d, 1e3 * (1.0 + scale), sum(sizes))
        back_options = _augmented(options, backward=True)
        a = g[steps - 1]
        b = zeros((sum(sizes),), dtype=y0.dtype)
        t_bars = []
        y_back = ys[steps - 1]
        for i in range(steps - 1, 0, -1):
            t_bars.append(reduce_sum(g[i] * _evaluate(fun, t[i], ys[i], args, d)))
            try:
                z = apply(SolveIvp, concat([ys[i], a, b], axis=0), stack([t[i], t[i - 1]]),
                          *args, fun=backward, method=method, options=back_options,
                          t_end=float(np.asarray(t._value).reshape(-1, steps)[0, i - 1]),
                          memo={})[1]
            except _Diverged as err:
                _unstable(f"{err} on the way back", options, method)
            y_back = z[:d]
            a, b = z[d:2 * d] + g[i - 1], z[2 * d:]
        _check_reconstruction(y0, y_back, options, method)
        a_plus = a - g[0]
        t_bars.append(-reduce_sum(a_plus * _evaluate(fun, t[0], y0, args, d)))
        grads = [None] * len(args)
        start = 0
        for k, size in zip(floats, sizes):
            grads[k] = reshape(b[start:start + size], args[k].shape)
            start += size
        return (a if e.needs[0] else None, stack(t_bars[::-1]) if e.needs[1] else None,
                *grads)

    def jvp(self, e, ty0, tt, *targs):
        if ty0 is None and tt is None and all(x is None for x in targs):
            return None
        y0, t, *args = e.inputs
        ys = e.outputs[0]
        fun = e.attrs["fun"]
        d = y0.shape[0]
        start = zeros_like(y0) if ty0 is None else ty0
        if tt is not None:
            start = start - _evaluate(fun, t[0], y0, args, d) * tt[0]
        floats = _float(args)
        tangents = [zeros_like(args[k]) if targs[k] is None else targs[k] for k in floats]
        out = apply(SolveIvp, concat([y0, start], axis=0), t, *args, *tangents,
                    fun=_tangent_dynamics(fun, d, len(args)), method=e.attrs["method"],
                    options=_augmented(e.attrs["options"], backward=False),
                    t_end=e.attrs["t_end"], memo={})[:, d:]
        if tt is not None:
            rates = stack([_evaluate(fun, t[i], ys[i], args, d) for i in range(ys.shape[0])])
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
        shared = _shared_tangents(cx, fun, y0, stacked_y0, stacked_args)
        if shared is not None:  # jacfwd: one trajectory, iters tangent directions
            base, n, n_args = fun.tangent_of
            first = y0[0] if stacked_y0 else y0
            rest = y0[:, n:] if stacked_y0 else cx.stack(y0[n:])
            start = concat([first[:n], reshape(rest, (-1,))], axis=0)
            system = _shared_tangent_dynamics(base, n, n_args, iters,
                                              tuple(stacked_args[n_args:]))
            ys = apply(self, start, t, *args, **dict(attrs, fun=system))
            steps = t.shape[0]
            trajectory = cx.stack(ys[:, :n])
            directions = transpose(reshape(ys[:, n:], (steps, iters, n)), (1, 0, 2))
            return concat([trajectory, directions], axis=2)
        start = reshape(y0 if stacked_y0 else cx.stack(y0), (-1,))
        batched = _batched_dynamics(fun, d, iters, tuple(stacked_args))
        ys = apply(self, start, t, *args, **dict(attrs, fun=batched))
        return transpose(reshape(ys, (t.shape[0], iters, d)), (1, 0, 2))


def _shared_tangents(cx, fun, y0, stacked_y0, stacked_args):
    """Whether the iterations are tangent systems (the JVP rule's) of one trajectory:
    same y0 and same args in every iteration, only the tangents differ."""
    tangent_of = getattr(fun, "tangent_of", None)
    if tangent_of is None:
        return None
    _, n, n_args = tangent_of
    if any(stacked_args[:n_args]):
        return None
    if stacked_y0:
        starts = np.asarray(y0._value)[:, :n]
        if not np.all(starts == starts[:1]):
            return None
    return tangent_of


def _batched_dynamics(fun, d, iters, stacked):
    """dz/dt of `iters` copies of the system stacked in z (iters * d,), args with
    stacked[k] True carrying one value per copy on axis 0."""
    def dynamics(s, z, *args):
        states = reshape(z, (iters, d))

        def one(i):
            own = [apply(GatherV2, a, i, axis=0, batch_dims=0) if st else a
                   for a, st in zip(args, stacked)]
            return _evaluate(fun, s, apply(GatherV2, states, i, axis=0, batch_dims=0), own, d)
        return reshape(pfor(one, iters), (-1,))
    dynamics.__name__ = getattr(fun, "__name__", "fun")
    return dynamics


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
                     "(stiff or dissipative); differentiate in forward mode (vj.jacfwd, "
                     "vj.jvp) or tighten rtol / atol")


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
    if closes_over_watched(lambda y, s, *a: _evaluate(fun, s, y, a, d), y0,
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
