"""Reverse mode of vj.scipy.integrate's solve_ivp and odeint on the forward solution: the
op IvpAdjoint, whose forward is the backward pass of ivp_backward.py (the adjoint a and
the parameter quadrature b integrated backwards, y read from the forward run's dense
output or re-integrated from checkpoints).

IvpAdjoint(y0, t, *args, g) = (a0, b): the cotangents of y0 and of the float args
(flattened, in order) of Y = primal(y0, t, *args) (T, d) for the output cotangent g, i.e.
the VJP of the solution in (y0, args); t's cotangent is the caller's (it needs f at the
outputs only). Its own derivatives are written with the forward op again (the attr
`primal`), so every order works and tapes, accumulators and pfor nest:
- in g: dY/d(y0, args) c, a JVP of the solution (forward sensitivities);
- in (y0, t, args): the VJP, with cotangent g, of that JVP (the tangent system's
  adjoint, again an IvpAdjoint one level up);
- its JVP: IvpAdjoint at the tangent of g, plus the VJP in (y0, args), with cotangent g,
  of the solution's JVP in the tangent direction.
pfor: when only g varies (the rows of a Jacobian by jacrev), all rows are one backward
pass of m adjoints on the one forward trajectory; otherwise one pass per iteration.
"""
import numpy as np

from vecjac._src.api.scipy.ivp_backward import adjoint_pass
from vecjac._src.api.scipy.ivp_systems import float_positions
from vecjac._src.core.dispatch import apply
from vecjac._src.core.registry import Op, register
from vecjac._src.ops.array.creation import zeros, zeros_like
from vecjac._src.ops.array.shaping import concat, reshape, stack
from vecjac._src.ops.reduce.reductions import reduce_sum
from vecjac._src.transforms.forward.accumulator import ForwardAccumulator
from vecjac._src.transforms.tape.tape import GradientTape

__all__ = ["IvpAdjoint", "solution_gradient"]


def _split(flat, args, floats):
    """A flat parameter vector cut into one piece per float arg, in their shapes."""
    out, start = [], 0
    for k in floats:
        size = args[k].size
        out.append(reshape(flat[start:start + size], args[k].shape))
        start += size
    return out


def _flat(grads):
    return concat([reshape(g, (-1,)) for g in grads], axis=0) if grads else None


def _rows(x, batched):
    """The m rows of a batched input (or the one row), as a list."""
    return [x[j] for j in range(x.shape[0])] if batched else [x]


@register
class IvpAdjoint(Op):
    """(a0, b) for g (T, d): a0 (d,), b (P,); for g (m, T, d) (m cotangents at once):
    a0 (m, d), b (m, P). Attrs: primal ((y0, t, *args) -> the solution, the forward op),
    problem (an ivp_backward.AdjointProblem), store (the forward op's memo, or None)."""
    name = "IvpAdjoint"
    n_outputs = 2
    covered_by = "SolveIvp"  # its derivatives are SolveIvp's second order

    def forward(self, y0, t, *rest, primal, problem, store):
        *args, g = rest
        batched = g.ndim == 3
        a, b = adjoint_pass(problem, np.asarray(y0, np.float64), np.asarray(t, np.float64),
                            [np.asarray(x) for x in args],
                            np.asarray(g if batched else g[None], np.float64), store)
        return (a, b) if batched else (a[0], b[0])

    def gradient(self, e, ca, cb):
        if ca is None and cb is None:
            return (None,) * len(e.inputs)
        y0, t, *args, g = e.inputs
        primal = e.attrs["primal"]
        floats = float_positions(args)
        params = [args[k] for k in floats]
        batched = g.ndim == 3
        ca = _rows(zeros_like(e.outputs[0]) if ca is None else ca, batched)
        cb = _rows(zeros_like(e.outputs[1]) if cb is None else cb, batched)
        totals, g_bar = None, []
        for gj, caj, cbj in zip(_rows(g, batched), ca, cb):
            with GradientTape() as tape:
                tape.watch([y0, t] + params)
                with ForwardAccumulator([y0] + params, [caj] + _split(cbj, args, floats)) as acc:
                    ys = primal(y0, t, *args)
                tangent = acc.jvp(ys, unconnected_gradients="zero")
            found = tape.gradient(tangent, [y0, t] + params, output_gradients=gj,
                                  unconnected_gradients="zero")
            totals = found if totals is None else [x + y for x, y in zip(totals, found)]
            g_bar.append(tangent)
        grads = [None] * len(args)
        for k, gk in zip(floats, totals[2:]):
            grads[k] = gk
        return (totals[0], totals[1], *grads, stack(g_bar) if batched else g_bar[0])

    def jvp(self, e, ty0, tt, *rest):
        *targs, tg = rest
        y0, t, *args, g = e.inputs
        floats = float_positions(args)
        params = [args[k] for k in floats]
        batched = g.ndim == 3
        a_dot = b_dot = None
        if tg is not None:
            a_dot, b_dot = apply(IvpAdjoint, *e.inputs[:-1], tg, **e.attrs)
        moving = [(x, tx) for x, tx in zip([y0, t] + params,
                                           [ty0, tt] + [targs[k] for k in floats])
                  if tx is not None]
        if moving:
            a_rows, b_rows = [], []
            for gj in _rows(g, batched):
                with GradientTape() as tape:
                    tape.watch([y0] + params)
                    with ForwardAccumulator([x for x, _ in moving],
                                            [tx for _, tx in moving]) as acc:
                        ys = e.attrs["primal"](y0, t, *args)
                    tangent = acc.jvp(ys, unconnected_gradients="zero")
                found = tape.gradient(tangent, [y0] + params, output_gradients=gj,
                                      unconnected_gradients="zero")
                a_rows.append(found[0])
                b_rows.append(_flat(found[1:]) if params else zeros((0,), dtype=y0.dtype))
            a2 = stack(a_rows) if batched else a_rows[0]
            b2 = stack(b_rows) if batched else b_rows[0]
            a_dot = a2 if a_dot is None else a_dot + a2
            b_dot = b2 if b_dot is None else b_dot + b2
        return a_dot, b_dot

    def converter(self, cx, y0, t, *rest, primal, problem, store):
        *args, g = rest
        attrs = dict(primal=primal, problem=problem, store=store)
        if not any(cx.stacked[:-1]):
            # jacrev's rows: m adjoints on one trajectory, one backward pass
            iters = cx.iters
            batched = g.ndim == 4
            flat = reshape(g, (-1,) + tuple(g.shape[-2:])) if batched else g
            a, b = apply(self, y0, t, *args, flat, **attrs)
            if batched:
                a = reshape(a, (iters, -1, a.shape[-1]))
                b = reshape(b, (iters, -1, b.shape[-1]))
            return a, b
        inputs = (y0, t, *args, g)
        outs = [apply(self, *[x[k] if s else x for x, s in zip(inputs, cx.stacked)], **attrs)
                for k in range(cx.iters)]
        return stack([o[0] for o in outs]), stack([o[1] for o in outs])


def solution_gradient(e, g, problem, primal, store):
    """The VJP rule of a solution op (SolveIvp, OdeInt: inputs y0, t, *args; output y at
    t (T, d)) for adjoint="interpolated" or "checkpoint": (y0's cotangent, t's, b) with b
    the float args' cotangents flattened (the caller cuts it), each None when not needed.
    problem.fun is the system as fun(t, y, *args); primal reruns the op (its
    derivatives); store is the op's memo (its kept forward run) or None (run again).
    t's cotangent: g_i . f(t_i, y_i) for i > 0 and -(a0 - g_0) . f(t_0, y0) (a0 before
    the cotangent of y(t0) = y0 itself is added)."""
    y0, t, *args = e.inputs
    ys = e.outputs[0]
    a, b = apply(IvpAdjoint, y0, t, *args, g, primal=primal, problem=problem, store=store)
    t_bar = None
    if e.needs[1]:
        fun = problem.fun
        t_bars = [-reduce_sum((a - g[0]) * fun(t[0], y0, *args))]
        t_bars += [reduce_sum(g[i] * fun(t[i], ys[i], *args)) for i in range(1, t.shape[0])]
        t_bar = stack(t_bars)
    return (a if e.needs[0] else None), t_bar, b
