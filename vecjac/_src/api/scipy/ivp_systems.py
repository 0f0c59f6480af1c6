"""The systems that vj.scipy.integrate.solve_ivp integrates for its derivatives
(vecjac/_src/api/scipy/solve_ivp.py): the adjoint [y, a, b] and tangent [y, ydot]
systems of its rules, the shared-trajectory tangents [y, ydot_1 .. ydot_k] and the
batched copies of its pfor rule, and the block-diagonal Newton matrices that the stiff
methods iterate the augmented systems with. Each is a function fun(t, z, *args) on
Tensors, written with vecjac ops (so the systems differentiate again)."""
import importlib

import numpy as np

from vecjac._src.api.scipy.jac import Jac
from vecjac._src.core.dispatch import apply, to_input
from vecjac._src.core.tensor import Tensor
from vecjac._src.ops.array.indexing import GatherV2
from vecjac._src.ops.array.shaping import concat, reshape
from vecjac._src.ops.elementwise.logic import cast
from vecjac._src.transforms.forward.accumulator import ForwardAccumulator
from vecjac._src.transforms.pfor.pfor import pfor
from vecjac._src.transforms.tape.tape import GradientTape

FN = "vj.scipy.integrate.solve_ivp"
SPARSE_MIN = 64  # states at least this long get a sparse Jacobian (Radau, BDF)


def evaluate(fun, s, y, args, d):
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


def tensor(v):
    """SciPy's numbers (vj.scipy.jac's fun gets them as given) as float64 Tensors."""
    return v if isinstance(v, Tensor) else Tensor(np.asarray(v, np.float64))


def float_positions(tensors):
    return [k for k, a in enumerate(tensors) if a.dtype.kind == "f"]


class Diverged(ValueError):
    """The backward integration of y left the forward trajectory's range."""


def adjoint_dynamics(fun, d, bound, n_cotangents):
    """The backward system [y, a, b] of the VJP, b the args' cotangents flattened. A y
    beyond `bound` (far outside the forward trajectory) stops the run at once: backwards,
    an unstable system would otherwise take SciPy's minimal steps to overflow."""
    def dynamics(s, z, *args):
        y, a = z[:d], z[d:2 * d]
        size = np.max(np.abs(np.asarray(y._value))) if y.size else 0.0
        if not size <= bound:
            raise Diverged(f"|y| reached {size:.3g}")
        floats = float_positions(args)
        with GradientTape() as tape:
            tape.watch(y)
            for k in floats:
                tape.watch(args[k])
            f = evaluate(fun, s, y, args, d)
        grads = tape.gradient(f, [y] + [args[k] for k in floats], output_gradients=-a,
                              unconnected_gradients="zero")
        return concat([f, grads[0]] + [reshape(g, (-1,)) for g in grads[1:]], axis=0)
    dynamics.blocks = (fun, d, None, (1, -1), n_cotangents)
    return dynamics


def tangent_dynamics(fun, d, n_args, control_tangents):
    """The forward system [y, ydot] of the JVP; the args' tangents follow the args.
    control_tangents: whether ydot takes part in the error control (ivp_newton)."""
    def dynamics(s, z, *args_and_tangents):
        args, tangents = args_and_tangents[:n_args], args_and_tangents[n_args:]
        floats = float_positions(args)
        y = z[:d]
        with ForwardAccumulator([y] + [args[k] for k in floats],
                                [z[d:]] + list(tangents)) as acc:
            f = evaluate(fun, s, y, args, d)
        return concat([f, acc.jvp(f, unconnected_gradients="zero")], axis=0)
    dynamics.tangent_of = (fun, d, n_args)  # the converter shares y between tangents
    dynamics.blocks = (fun, d, n_args, (1, 1), 0)
    dynamics.control_tangents = control_tangents
    _tangent_blocks(dynamics, d, 2, control_tangents)
    dynamics.__name__ = getattr(fun, "__name__", "fun")
    return dynamics


def shared_tangent_dynamics(fun, d, n_args, iters, stacked, control_tangents):
    """[y, ydot_1 .. ydot_iters]: the tangent systems of one trajectory y, all in one
    state (y integrated once), the tangents' right-hand sides one pfor of JVPs.
    stacked[k]: the k-th arg tangent carries one value per iteration on axis 0."""
    def dynamics(s, z, *args_and_tangents):
        args, tangents = args_and_tangents[:n_args], args_and_tangents[n_args:]
        floats = float_positions(args)
        y = z[:d]
        directions = reshape(z[d:], (iters, d))

        def one(i):
            own = [apply(GatherV2, v, i, axis=0, batch_dims=0) if st else v
                   for v, st in zip(tangents, stacked)]
            with ForwardAccumulator([y] + [args[k] for k in floats],
                                    [apply(GatherV2, directions, i, axis=0, batch_dims=0)] +
                                    own) as acc:
                fi = evaluate(fun, s, y, args, d)
            # f itself too: loop-invariant, evaluated once inside the loop (the JVPs' own
            # primal) instead of once more outside it
            return fi, acc.jvp(fi, unconnected_gradients="zero")
        f, rates = pfor(one, iters)
        return concat([f[0], reshape(rates, (-1,))], axis=0)
    dynamics.__name__ = getattr(fun, "__name__", "fun")
    dynamics.blocks = (fun, d, n_args, (1,) * (iters + 1), 0)
    _tangent_blocks(dynamics, d, iters + 1, control_tangents)
    return dynamics


def _tangent_blocks(dynamics, d, copies, control_tangents):
    """What ivp_newton.solver needs of a tangent system: its `copies` blocks of d states
    share one Newton block (d(ydot)/dt = J ydot + ..., J y's Jacobian), and the states
    in the error control (y alone, or all)."""
    dynamics.newton_blocks = copies
    dynamics.controlled = d * copies if control_tangents else d


def block_jacobian(blocks, tensors, method, jit=False):
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
    J = base_jacobian(blocks, tensors, method, jit)
    scipy_sparse = importlib.import_module("scipy.sparse")

    def jac(s, z):
        Jy = J(s, z)
        Jy = Jy if sparse else scipy_sparse.csr_array(Jy)
        parts = [Jy if sign > 0 else -Jy.T for sign in signs]
        if tail:
            parts.append(scipy_sparse.csr_array((tail, tail)))
        matrix = scipy_sparse.block_diag(parts, format="csc")
        return matrix if sparse else matrix.toarray()
    return jac


def base_jacobian(blocks, tensors, method, jit=False):
    """jac(s, z): the original system's Jacobian J = d fun/dy at z's y (its first d
    states), the one Newton block of a tangent system (ivp_newton.solver); sparse for
    SPARSE_MIN states and more with Radau and BDF."""
    fun, d, n_args = blocks[:3]
    sparse = d >= SPARSE_MIN and method != "LSODA"
    J = Jac(lambda s, y: evaluate(fun, tensor(s), tensor(y), tensors[:n_args], d), 1,
            sparse, jit)

    def jac(s, z):
        return J(s, np.asarray(z[:d]))
    return jac


def shared_tangents(cx, fun, y0, stacked_y0, stacked_args):
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


def batched_dynamics(fun, d, iters, stacked):
    """dz/dt of `iters` copies of the system stacked in z (iters * d,), args with
    stacked[k] True carrying one value per copy on axis 0."""
    def dynamics(s, z, *args):
        states = reshape(z, (iters, d))

        def one(i):
            own = [apply(GatherV2, a, i, axis=0, batch_dims=0) if st else a
                   for a, st in zip(args, stacked)]
            return evaluate(fun, s, apply(GatherV2, states, i, axis=0, batch_dims=0), own, d)
        return reshape(pfor(one, iters), (-1,))
    dynamics.__name__ = getattr(fun, "__name__", "fun")
    return dynamics
