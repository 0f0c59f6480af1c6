"""The solution of a SciPy solver as an op, differentiated by the implicit function theorem.

A solver (root, fixed_point, minimize, least_squares, newton_krylov) finds x* with
residual(x*, theta) = 0, theta the float leaves of its `args`. Differentiating that
identity gives, with J = d residual / dx at (x*, theta),
    dx*/dtheta = -J^-1 d residual / dtheta,
one linear solve per direction, whatever the solver did to get there:
- VJP: u = J^-T g (one adjoint solve per cotangent g), theta_bar = -(d residual/dtheta)^T u
  (a backward pass of the residual with cotangent -u);
- JVP: x_dot = -J^-1 (d residual/dtheta) theta_dot (a forward pass, then one solve).
Both are written with vecjac ops (the residual itself, its Jacobian by tape.jacobian or,
sparse, by colored JVPs, and a differentiable solve: MatrixSolve or SparseSolve), so the
rules differentiate again (second order) and vectorize (pfor: the cotangents of a whole
Jacobian become the right-hand sides of one solve).

The starting point x0 is a constant: the solution does not depend on it (where the solver
converges), so its derivative is zero. The rules refuse to return a number that would be
wrong: a solver that reported failure, or a Jacobian at the solution that is singular
or ill-conditioned (reciprocal condition estimate below RCOND_MIN) raises ValueError
naming the function, the residual norm and the condition estimate.
"""
import importlib
import warnings

import numpy as np

from vecjac._src.api.coloring import forward_take
from vecjac._src.api.scipy.sparse_solve import SparsePattern, sparse_solve
from vecjac._src.api.sparse import sparse_jacobian
from vecjac._src.core import nest
from vecjac._src.core.context import state, suspended
from vecjac._src.core.dispatch import apply, to_input
from vecjac._src.core.registry import Op, register
from vecjac._src.core.tensor import Tensor
from vecjac._src.ops.array.indexing import gather
from vecjac._src.ops.array.shaping import reshape, stack
from vecjac._src.ops.elementwise.logic import cast
from vecjac._src.ops.linalg.matrix import solve
from vecjac._src.transforms.forward.accumulator import ForwardAccumulator
from vecjac._src.transforms.pfor.pfor import pfor
from vecjac._src.transforms.tape.tape import GradientTape

__all__ = ["Problem", "implicit_solution", "split_args"]

# Below this reciprocal condition number (1-norm estimate) the Jacobian at the solution is
# treated as singular: a derivative through it would have lost 12 of its 16 digits.
RCOND_MIN = 1e-12


def split_args(args, what):
    """(float leaves of the `args` nest as float64 Tensors, rebuild(float Tensors) -> the
    nest with them in place). Non-float leaves (ints, strings, objects) stay as given."""
    if not isinstance(args, tuple):
        args = (args,)
    leaves = nest.flatten(args)
    positions, floats = [], []
    for k, leaf in enumerate(leaves):
        if isinstance(leaf, (bool, np.bool_)) or leaf is None:
            continue
        if isinstance(leaf, (Tensor, np.ndarray, float, np.floating)):
            value = to_input(leaf, fn=what, arg=f"args leaf {k}")
            if value.dtype.kind == "f":
                positions.append(k)
                floats.append(value if value.dtype == np.float64 else cast(value, np.float64))

    def rebuild(values):
        out = list(leaves)
        for k, v in zip(positions, values):
            out[k] = v
        return nest.pack_sequence_as(args, out)
    return floats, rebuild


class Problem:
    """What ImplicitRoot runs and differentiates (its one attr; compared by identity).

    residual(x, *params) -> (n,) Tensor, x (n,), params the float leaves of args;
    solve(*param_arrays) -> (x*, success, message) with NumPy values (SciPy's run);
    probe(x, *params): the user's function as the solver calls it, run once before the
    solve to check that it reads no followed value (default: the residual; minimize and
    least_squares pass their objective, whose residual, a gradient, would cost a
    backward pass through it); `last` holds the last run's SciPy result for the public
    function to return."""

    def __init__(self, what, fun_name, residual, solve, sparse=False, probe=None):
        self.what, self.fun_name = what, fun_name
        self.residual, self.solve = residual, solve
        self.probe = probe
        self.sparse = sparse
        self.sparse_plan = None   # (SparsePattern, column colors, take), on first use
        self.last = None
        self.messages = {}        # id of a solution array -> SciPy's message on failure

    def __repr__(self):
        return f"<{self.what} problem of {self.fun_name}>"


@register
class ImplicitRoot(Op):
    """(x*, converged) of a Problem at its params: x* (n,) with residual(x*, params) = 0
    as SciPy found it; converged a bool scalar (the rules raise when it is False)."""
    name = "ImplicitRoot"
    n_outputs = 2
    samples = ()  # set below, after the public functions exist

    def forward(self, *params, problem):
        with suspended():  # the solve's own values: nothing outside follows them
            x, success, message = problem.solve(*params)
        x = np.asarray(x, dtype=np.float64)
        if not success:
            problem.messages[x.tobytes()] = message
        return x, np.array(bool(success))

    def gradient(self, e, g, _):
        params = e.inputs
        if g is None:
            return (None,) * len(params)
        problem = e.attrs["problem"]
        x = e.outputs[0]
        jac = _jacobian(problem, e)
        u = _solve(problem, jac, g, transpose=True)
        wanted = [k for k, p in enumerate(params) if e.needs[k] and p.dtype.kind == "f"]
        grads = [None] * len(params)
        if wanted:
            with GradientTape() as tape:
                for k in wanted:
                    tape.watch(params[k])
                r = problem.residual(x, *params)
            found = tape.gradient(r, [params[k] for k in wanted], output_gradients=-u,
                                  unconnected_gradients="zero")
            for k, gk in zip(wanted, found):
                grads[k] = gk
        return tuple(grads)

    def jvp(self, e, *tangents):
        params = e.inputs
        moving = [k for k, t in enumerate(tangents) if t is not None]
        if not moving:
            return None, None
        problem = e.attrs["problem"]
        x = e.outputs[0]
        with ForwardAccumulator([params[k] for k in moving],
                                [tangents[k] for k in moving]) as acc:
            r = problem.residual(x, *params)
        b = acc.jvp(r, unconnected_gradients="zero")
        jac = _jacobian(problem, e)
        return -_solve(problem, jac, b, transpose=False), None

    def converter(self, cx, *inputs, problem):
        # one SciPy run per iteration (each its own iterates, as the loop would)
        outs = [apply(self, *[x[k] if s else x for x, s in zip(inputs, cx.stacked)],
                      problem=problem) for k in range(cx.iters)]
        return stack([o[0] for o in outs]), stack([o[1] for o in outs])


def _jacobian(problem, e):
    """d residual / dx at (x*, params) as a Tensor (dense (n, n), or the sparse pattern's
    values (nnz,)), after checking that SciPy converged and the matrix is regular."""
    params, x = e.inputs, e.outputs[0]
    converged = np.asarray(e.outputs[1]._value)
    with GradientTape() as tape:
        tape.watch(x)
        r = problem.residual(x, *params)
    if problem.sparse:
        values = _sparse_values(problem, x, params)
    else:
        values = tape.jacobian(r, x, unconnected_gradients="zero")
    norm = float(np.max(np.linalg.norm(np.asarray(r._value).reshape(-1, x.shape[-1]), axis=1)))
    if not np.all(converged):
        message = " ".join(str(problem.messages.get(np.asarray(x._value).tobytes(),
                                                   "did not converge")).split())
        raise ValueError(f"{problem.what}: the solver did not converge on "
                         f"{problem.fun_name} ({message}; residual norm {norm:.3g}): its "
                         "output has no derivative")
    rcond = _rcond(problem, np.asarray(values._value))
    if not rcond >= RCOND_MIN:
        raise ValueError(f"{problem.what}: the Jacobian of {problem.fun_name} at the "
                         f"solution is singular or ill-conditioned (condition estimate "
                         f"{1 / rcond if rcond > 0 else np.inf:.3g}, residual norm "
                         f"{norm:.3g}): the solution has no reliable derivative")
    return values


def _rcond(problem, values):
    """The smallest reciprocal 1-norm condition estimate over the (stacked) matrices."""
    linalg = importlib.import_module("scipy.linalg")
    if problem.sparse:
        pattern = problem.sparse_plan[0]
        return min(pattern.rcond(v) for v in values.reshape(-1, pattern.nnz))
    n = values.shape[-1]
    worst = np.inf
    for a in values.reshape(-1, n, n):
        if not np.all(np.isfinite(a)):
            return 0.0
        with warnings.catch_warnings():  # an exactly singular factor: reported as rcond 0
            warnings.simplefilter("ignore")
            lu, _ = linalg.lu_factor(a, check_finite=False)
        rcond, _ = linalg.lapack.dgecon(lu, np.abs(a).sum(axis=0).max(), norm="1")
        worst = min(worst, rcond)
    return worst


def _solve(problem, jac, rhs, transpose):
    """J^-1 rhs (J^-T rhs if transpose) for rhs (n,), differentiable in both."""
    if problem.sparse:
        return sparse_solve(problem.sparse_plan[0], jac, rhs, transpose=transpose)
    return reshape(solve(jac, reshape(rhs, (-1, 1)), adjoint=transpose), (-1,))


def _sparse_values(problem, x, params):
    """The nonzeros of d residual/dx in CSR order, from one JVP per column color (all in
    one pfor), with vecjac ops: differentiable again, unlike the NumPy matrix that
    vj.sparse_jacobian returns. The pattern is detected once per problem."""
    if problem.sparse_plan is None:
        finder = sparse_jacobian(lambda y, *p: problem.residual(y, *p), mode="fwd")
        matrix = finder(_constant(x), *[_constant(p) for p in params])
        pattern = SparsePattern(finder.pattern)
        colors = np.asarray(finder.colors)
        ncolors = int(colors.max()) + 1 if colors.size else 0
        seeds = np.zeros((ncolors, colors.size))
        seeds[colors, np.arange(colors.size)] = 1.0
        problem.sparse_plan = (pattern, Tensor(seeds), forward_take(pattern, colors))
        _check_plan(problem, matrix, x, params)
    pattern, seeds, take = problem.sparse_plan

    def column_products(i):
        with ForwardAccumulator([x], [gather(seeds, i)]) as acc:
            r = problem.residual(x, *params)
        return acc.jvp(r, unconnected_gradients="zero")
    products = pfor(column_products, seeds.shape[0])
    return gather(reshape(products, (-1,)), Tensor(take))


def _constant(t):
    """A constant Tensor of t's value (inside pfor: its first iteration's)."""
    value = np.asarray(t._value)
    return Tensor(value.reshape((-1,) + t.shape)[0] if value.size else value.reshape(t.shape))


def _reads_watched(problem, x0, params, what):
    """Run the probe (or the residual) once on constants: it must return floats (the
    residual: (n,) from (n,)), and reach no tape or accumulator (it would only through a
    value it closes over, whose derivative would then be lost, silently)."""
    before = [tape.entry_count for tape in state.tapes]
    constants = [_constant(p) for p in params]
    if problem.probe is not None:
        r = problem.probe(Tensor(x0), *constants)
        if not isinstance(r, Tensor) or r.dtype.kind != "f":
            raise ValueError(f"{what}: {problem.fun_name} must return floats, got "
                             f"{getattr(r, 'dtype', type(r).__name__)}")
    else:
        r = problem.residual(Tensor(x0), *constants)
        if not isinstance(r, Tensor) or r.shape != x0.shape or r.dtype.kind != "f":
            raise ValueError(f"{what}: {problem.fun_name} must return a float vector of "
                             f"x0's shape {x0.shape}, got "
                             f"{getattr(r, 'shape', type(r).__name__)}")
    if any(tape.entry_count > n for tape, n in zip(state.tapes, before)):
        return True
    return any(tr.follows((r,)) for tr in state.followers)


def _check_plan(problem, matrix, x, params):
    """The colored products of the plan, decompressed, against vj.sparse_jacobian's
    matrix at the same point: a wrong take or seed would otherwise be silent."""
    pattern = problem.sparse_plan[0]
    values = np.asarray(_sparse_values(problem, _constant(x), [_constant(p) for p in
                                                                 params])._value)
    difference = abs(pattern.matrix(values) - matrix).max() if values.size else 0.0
    scale = abs(matrix).max() if matrix.nnz else 0.0
    if not difference <= 1e-10 * scale + 1e-300:
        problem.sparse_plan = None
        raise RuntimeError(f"{problem.what}: the sparse Jacobian of {problem.fun_name} "
                           "decompressed wrongly (an internal error: please report it)")


def implicit_solution(problem, params, x0, what):
    """Run the op: x* (n,) as a Tensor differentiable in params (x0 (n,) NumPy)."""
    if _reads_watched(problem, x0, params, what):
        raise ValueError(f"{what}: {problem.fun_name} reads a value that a GradientTape or "
                         "ForwardAccumulator follows other than through args (a closure); "
                         "its derivative would be lost: pass it through args")
    x, _ = apply(ImplicitRoot, *params, problem=problem)
    return x
