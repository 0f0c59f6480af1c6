"""The NumPy-level half of reverse mode on the forward solution (vj.scipy.integrate's
solve_ivp and odeint with adjoint="interpolated" or "checkpoint"): SciPy's forward run
(`run`, with the Jacobian that vecjac supplies to the stiff methods), the trajectory y(s)
the backward pass reads, and the backward pass itself (`adjoint_pass`).

The backward pass integrates, from the last output time to t0, only the adjoint
    da/ds = -(df/dy)^T a                                   (m rows at once)
with y(s) read from the forward run instead of integrated backwards alongside: a stiff
(dissipative) y is unstable backwards in time, its adjoint is not. The cotangent of the
output at t_i is added to a at t_i (the solver restarts there). The right-hand side is
one vecjac VJP of f per evaluation (m rows: one pfor of VJPs); the stiff methods (Radau,
BDF, LSODA) integrate with the Newton matrix -(df/dy)^T at y(s), from vecjac like the
forward problem's Jacobian (dense, or sparse for SPARSE_MIN states and more with Radau
and BDF; block-diagonal over the m rows). The solver is stepped by hand (SciPy's OdeSolver
classes), and each step's parameter cotangent, the integral of (df/dargs)^T a, is a
Gauss-Legendre quadrature on the pieces of the step where both interpolants (a's step,
y's forward steps) are single polynomials, the nodes' VJPs batched in one pfor. (b in the
ODE state instead: starting at 0 under the caller's atol, it held BDF at steps of 1e-14
on Robertson's kinetics and failed; it would also widen the Newton matrix by the
parameter count.)

Where y(s) comes from (`Interpolated`, `Checkpointed`):
- "interpolated": SciPy's dense output of the forward run (OdeSolution), kept from the
  forward pass to the backward pass: memory ~ forward steps x d x (order + 1) floats.
- "checkpoint": y at K times spread evenly over the output range plus the output times
  (memory ~ (K + T) x d); each segment between two checkpoints is integrated forwards
  again, with dense output, when the backward pass reaches it (one segment's dense
  output alive at a time). Costs one more forward solve, split in segments.
The interpolant and the re-integrated segments are accurate to the forward tolerances,
and the backward pass integrates at the caller's rtol and at atol times the largest
output cotangent (their tightest values; `adjoint_pass` says why, and what happens when
SciPy cannot meet it), so the gradient is the derivative of the exact solution to
within those tolerances.
"""
import importlib
import warnings

import numpy as np

from vecjac._src.api.function import function
from vecjac._src.api.scipy.ivp_newton import BLOCK_METHODS, solver
from vecjac._src.api.scipy.ivp_systems import (SPARSE_MIN, base_jacobian, block_jacobian,
                                               evaluate, float_positions, tensor)
from vecjac._src.api.scipy.jac import Jac
from vecjac._src.core.context import suspended
from vecjac._src.core.dispatch import apply
from vecjac._src.core.tensor import Tensor
from vecjac._src.ops.array.indexing import GatherV2
from vecjac._src.ops.array.shaping import concat, reshape
from vecjac._src.transforms.pfor.pfor import pfor
from vecjac._src.transforms.tape.tape import GradientTape

__all__ = ["ADJOINTS", "AdjointProblem", "adjoint_pass", "check_adjoint", "run"]

STIFF = ("Radau", "BDF", "LSODA")
ADJOINTS = ("interpolated", "checkpoint", "backsolve")
CHECKPOINTS = 10  # adjoint="checkpoint" without checkpoints=: checkpoints besides the outputs


def _integrate():
    # scipy.integrate: imported on first use, never with vecjac
    return importlib.import_module("scipy.integrate")


def check_adjoint(adjoint, checkpoints, what):
    """The `adjoint=` and `checkpoints=` arguments, checked: (adjoint, K)."""
    if not isinstance(adjoint, str) or adjoint not in ADJOINTS:
        raise ValueError(f"{what}: adjoint must be one of {', '.join(map(repr, ADJOINTS))}, "
                         f"got {adjoint!r}")
    if checkpoints is None:
        return adjoint, CHECKPOINTS
    if adjoint != "checkpoint":
        raise ValueError(f"{what}: checkpoints applies to adjoint='checkpoint' only, got "
                         f"checkpoints={checkpoints!r} with adjoint={adjoint!r}")
    if (not isinstance(checkpoints, (int, np.integer)) or isinstance(checkpoints, bool)
            or checkpoints < 0):
        raise ValueError(f"{what}: checkpoints must be a non-negative int, got "
                         f"{checkpoints!r}")
    return adjoint, int(checkpoints)


def augmented_options(options, backward):
    """The forward problem's SciPy options for an augmented or adjoint system (a longer
    state: array tolerances become their tightest value); backwards, the forward run's
    first step means nothing. dense_output is the caller's business."""
    out = []
    for name, value in options:
        if (backward and name == "first_step") or name == "dense_output":
            continue
        if name in ("rtol", "atol") and np.ndim(value) > 0:
            value = float(np.min(value))
        out.append((name, value))
    return tuple(out)


def system(fun, tensors, d, method, jit=False):
    """SciPy's (fun, jac) for dz/dt = fun(t, z, *tensors) (NumPy in and out): jac None for
    the explicit methods; for the stiff ones vecjac's Jacobian (vj.scipy.jac, sparse for
    SPARSE_MIN states and more with Radau and BDF), or the block-diagonal Newton matrix of
    an augmented system (ivp_systems.block_jacobian). Both are callables (s, y). jit:
    both replayed as vj.function traces (traced on their first call of this solve)."""
    if jit:
        traced = function(lambda s, y: evaluate(fun, s, y, tensors, d))

        def plain(s, y):
            return traced(np.asarray(s, np.float64), np.asarray(y, np.float64))._value
    else:
        def plain(s, y):
            return evaluate(fun, tensor(s), tensor(y), tensors, d)._value
    if method not in STIFF:
        return plain, None
    blocks = getattr(fun, "blocks", None)
    if blocks is not None and getattr(fun, "newton_blocks", 1) > 1 and \
            method in BLOCK_METHODS:
        return plain, base_jacobian(blocks, tensors, method, jit)  # one block (ivp_newton)
    if blocks is not None:
        return plain, block_jacobian(blocks, tensors, method, jit)
    sparse = d >= SPARSE_MIN and method != "LSODA"
    J = Jac(lambda s, y: evaluate(fun, tensor(s), tensor(y), tensors, d), 1, sparse, jit)
    # J.fun shares f's evaluation with the Jacobian's at the same point (eagerly)
    return (plain if jit else J.fun), J


def run(fun, y0, t0, t_end, t_eval, args, method, options, what, rates=None, jit=False):
    """SciPy's solve_ivp from t0 to t_end, output at t_eval (NumPy; None: its own steps):
    its result. `rates`: a `system` to reuse (its Jacobian's sparsity plan); jit: see
    `system`."""
    d = y0.shape[0]
    rate, jac = rates if rates is not None else system(fun, [Tensor(a) for a in args], d,
                                                       method, jit)
    extra = {} if jac is None else {"jac": jac}
    copies = getattr(fun, "newton_blocks", 1)
    solver_method, options = solver(method, d // copies, copies,
                                    getattr(fun, "controlled", d), options)
    # fun gets fresh values (SciPy's, the args'), followed by no transform (solve_ivp and
    # odeint refuse a fun closing over a followed value): out of their sight, its ops skip
    # their checks, and vj.function (jit) replays directly, not through apply()
    with np.errstate(all="ignore"), suspended():
        result = _integrate().solve_ivp(rate, (float(t0), float(t_end)),
                                        np.asarray(y0, np.float64), method=solver_method,
                                        t_eval=t_eval, **extra, **options)
    if not result.success:
        raise ValueError(f"{what}: SciPy's {method} failed on {getattr(fun, '__name__', 'fun')}"
                         f" ({result.message}): no solution to return or differentiate")
    return result


def odeint_options(options):
    """odeint's options (pairs) as solve_ivp's LSODA takes them: odeint's default
    tolerances, h0 / hmax / hmin as first_step / max_step / min_step when set; tcrit,
    mxstep and the orders have no counterpart there."""
    given = dict(options)
    out = [("rtol", given.get("rtol", 1.49012e-8)), ("atol", given.get("atol", 1.49012e-8))]
    for name, alias in (("h0", "first_step"), ("hmax", "max_step"), ("hmin", "min_step")):
        if given.get(name, 0.0):
            out.append((alias, given[name]))
    return tuple(out)


class AdjointProblem:
    """What the backward pass needs besides the values: fun(t, y, *args) on Tensors, SciPy's
    method and options (solve_ivp's names), t_end (None: the last output time), the
    adjoint kind and K, the public function's name for errors, and `source`: what the
    forward op's kept runs are keyed by (its own fun attr; default fun)."""

    def __init__(self, fun, method, options, t_end, kind, checkpoints, what, source=None,
                 jit=False):
        self.fun, self.method, self.options, self.t_end = fun, method, options, t_end
        self.kind, self.checkpoints, self.what = kind, checkpoints, what
        self.source = fun if source is None else source
        self.jit = jit  # the forward and backward runs' evaluations as vj.function traces

    def __repr__(self):
        return (f"<{self.kind} adjoint of {getattr(self.fun, '__name__', 'fun')} "
                f"({self.method})>")


def trajectory_key(fun, y0, t, args):
    """What a stored forward run is looked up by: the system and every input's value."""
    return (id(fun), np.asarray(y0).tobytes(), np.asarray(t).tobytes(),
            tuple(np.asarray(a).tobytes() for a in args))


def checkpoint_times(t, k):
    """(t_eval, rows): the forward run's output times, the outputs t[1:] merged with k
    times spread evenly over (t[0], t[-1]) (those equal to an output dropped), sorted in
    the direction of integration, and the rows of the outputs t[1:] among them."""
    t = np.asarray(t, np.float64)
    outputs = t[1:]
    grid = np.linspace(t[0], t[-1], k + 2)[1:-1] if k and t[-1] != t[0] else t[:0]
    grid = grid[~np.isin(grid, t)]
    times = np.concatenate([outputs, grid])
    direction = 1.0 if t[-1] >= t[0] else -1.0
    order = np.argsort(direction * times, kind="stable")
    rows = np.empty_like(order)
    rows[order] = np.arange(order.size)
    return times[order], rows[:outputs.size]


def _points(t):
    """The distinct output times, in order."""
    return t[np.r_[True, np.diff(t) != 0]]


class Interpolated:
    """y(s) from one forward run's dense output (SciPy's OdeSolution). The backward pass
    restarts at the output times only (`breaks`)."""

    def __init__(self, sol, t):
        self.sol = sol
        self.breaks = _points(t)

    def enter(self, j):
        """The backward pass is about to integrate from breaks[j + 1] to breaks[j]."""

    def __call__(self, s):
        return self.sol(s)

    def cuts(self, x0, x1):
        """The forward run's step times strictly between x0 < x1 (where the interpolant
        changes polynomial)."""
        ts = np.asarray(self.sol.ts)
        return ts[(ts > x0) & (ts < x1)]


class Checkpointed(Interpolated):
    """y at the checkpoints (times, values, the outputs among them); the backward pass
    restarts at every checkpoint (`breaks`), and before it integrates the segment from
    checkpoint j + 1 back to j, that segment is integrated forwards again from checkpoint
    j with dense output (the previous segment dropped first). Solving the segment inside
    the backward solver's callbacks instead would spare the restarts, but LSODA (ODEPACK)
    cannot run inside itself."""

    def __init__(self, times, values, integrate):
        keep = np.r_[True, np.diff(times) != 0]
        super().__init__(None, times[keep])
        self.values = values[keep]
        self._integrate = integrate

    def enter(self, j):
        self.sol = None
        self.sol = self._integrate(self.values[j], self.breaks[j], self.breaks[j + 1], j == 0)


def trajectory(problem, y0, t, args, store, rates):
    """y(s) for the backward pass: the forward op's stored run when it matches (store:
    its memo), else one run now (from y0, with the same options)."""
    fun, method, options, what = problem.fun, problem.method, problem.options, problem.what
    found = (store or {}).get("trajectories", {}).get(
        trajectory_key(problem.source, y0, t, args))
    t_last = t[-1] if problem.t_end is None else problem.t_end
    if problem.kind == "interpolated":
        if found is None:
            found = run(fun, y0, t[0], t_last, np.asarray(t[-1:]), args, method,
                        options + (("dense_output", True),), what, rates, problem.jit).sol
        return Interpolated(found, t)
    if found is None:
        times, _ = checkpoint_times(t, problem.checkpoints)
        result = run(fun, y0, t[0], t_last, times, args, method, options, what, rates,
                     problem.jit)
        found = (np.concatenate([t[:1], times]), np.concatenate([y0[None], result.y.T]))
    later = augmented_options(options, backward=True)  # no first step but t0's

    def integrate(start, s0, s1, first):
        segment = run(fun, start, s0, s1, np.array([s1]), args, method,
                      (options if first else later) + (("dense_output", True),), what, rates,
                      problem.jit)
        return segment.sol
    return Checkpointed(found[0], found[1], integrate)


def _vjp_rates(fun, tensors, d, m, path, jit):
    """da/ds = -(df/dy)^T a at y(s) = path(s) for the m adjoint rows in z (m d,): one VJP
    (m > 1: one pfor of them); jit: replayed as a vj.function trace. (Reading the rates
    off the stiff methods' Jacobian, kept for the Newton iterations at the same s,
    measured no faster: a dense Jacobian of 3 states costs 2.3 VJPs, about what BDF's
    iterations evaluate per s.)"""
    def vjp(s, y, neg):
        with GradientTape(persistent=m > 1) as tape:
            tape.watch(y)
            f = evaluate(fun, s, y, tensors, d)
        if m == 1:
            return tape.gradient(f, y, output_gradients=reshape(neg, (d,)),
                                 unconnected_gradients="zero")

        def one(i):
            return tape.gradient(f, y, output_gradients=apply(GatherV2, neg, i, axis=0,
                                                               batch_dims=0),
                                 unconnected_gradients="zero")
        return pfor(one, m)
    traced = function(vjp) if jit else vjp

    def rates(s, z):
        out = traced(Tensor(np.asarray(s, np.float64)), Tensor(np.asarray(path(s), np.float64)),
                     Tensor(-np.asarray(z).reshape(m, d)))
        return np.asarray(out._value).reshape(-1)
    return rates


def _adjoint_jacobian(jac, d, m, method, path):
    """The backward system's Newton matrix at s: -(df/dy)^T at y(s) for each of the m rows
    (dense for LSODA, which takes no sparse matrix, and for one dense block; sparse
    block-diagonal otherwise)."""
    sparse = importlib.import_module("scipy.sparse")

    def adjoint_jac(s, z):
        block = -(jac(s, np.asarray(path(s), np.float64)).T)
        if m == 1:
            return block.toarray() if method == "LSODA" and sparse.issparse(block) else block
        if method == "LSODA":
            block = block.toarray() if sparse.issparse(block) else np.asarray(block)
            out = np.zeros((m * d, m * d))
            for r in range(m):
                out[r * d:(r + 1) * d, r * d:(r + 1) * d] = block
            return out
        return sparse.block_diag([block] * m, format="csc")
    return adjoint_jac


# Gauss-Legendre nodes per piece of the parameter quadrature: exact for polynomials of
# degree 11 (the interpolants are polynomials of degree <= 5 on each piece but LSODA's)
_GAUSS = np.polynomial.legendre.leggauss(6)
_CHUNK = 1 << 22  # floats of the quadrature's VJPs in one pfor


class _Quadrature:
    """b, the parameter cotangents of the m rows (m, P): the integral of (df/dargs)^T a
    along the backward pass, by Gauss-Legendre on the pieces of each backward step where
    y's and a's interpolants are single polynomials (cut at the forward run's steps).
    The nodes' VJPs run in one pfor per chunk of nodes."""

    def __init__(self, fun, tensors, floats, d, m, path):
        self.fun, self.tensors, self.d, self.m, self.path = fun, tensors, d, m, path
        self.params = [tensors[k] for k in floats]
        self.width = 2 * d + sum(p.size for p in self.params)
        self.total = np.zeros((m, sum(p.size for p in self.params)))
        self._nodes = []
        self._count = 0

    def add(self, s_old, s_new, dense):
        """The backward step from s_old to s_new, `dense` a's interpolant on it:
        b(s_new) = b(s_old) + the integral from s_new to s_old."""
        x0, x1 = min(s_old, s_new), max(s_old, s_new)
        cuts = np.unique(np.concatenate([[x0, x1], self.path.cuts(x0, x1)]))
        left, width = cuts[:-1], np.diff(cuts)
        nodes = (left[:, None] + width[:, None] * (_GAUSS[0] + 1) / 2).reshape(-1)
        weights = (width[:, None] * _GAUSS[1] / 2).reshape(-1) * np.sign(s_old - s_new)
        a = np.asarray(dense(nodes), np.float64).T.reshape(-1, self.m, self.d)
        self._nodes.append((nodes, np.asarray(self.path(nodes), np.float64).T,
                            a * weights[:, None, None]))
        self._count += nodes.size * self.m
        if self._count * self.width >= _CHUNK:
            self.flush()

    def flush(self):
        """Integrate the nodes gathered so far; the total."""
        if not self._nodes:
            return self.total
        nodes, states, cots = (np.concatenate(x) for x in zip(*self._nodes))
        self._nodes, self._count = [], 0
        m, d = self.m, self.d
        S = Tensor(np.repeat(nodes, m))
        Y = Tensor(np.repeat(states, m, axis=0))
        C = Tensor(cots.reshape(-1, d))

        def one(i):
            def pick(x):
                return apply(GatherV2, x, i, axis=0, batch_dims=0)
            with GradientTape() as tape:
                tape.watch(self.params)
                f = evaluate(self.fun, pick(S), pick(Y), self.tensors, d)
            grads = tape.gradient(f, self.params, output_gradients=pick(C),
                                  unconnected_gradients="zero")
            return concat([reshape(g, (-1,)) for g in grads], axis=0)
        rows = np.asarray(pfor(one, nodes.size * m)._value)
        self.total = self.total + rows.reshape(-1, m, rows.shape[-1]).sum(axis=0)
        return self.total


def adjoint_pass(problem, y0, t, args, g, store):
    """(a0 (m, d), b (m, P)): the cotangents of y0 and of the float args (flat, in order)
    of the outputs y(t) (T, d) for the m output cotangents g (m, T, d), NumPy in and out
    (module docstring). store: the forward op's memo (its run, when it kept one).

    Tolerances: the caller's rtol, and atol times the largest |g|. The adjoint is linear
    in g, so a loss scaled by w scales a and its tolerance together: the same steps, the
    gradient scaled exactly (with the forward atol as is, a loss of size 1 on Robertson's
    kinetics over [0, 1e3] failed where the same loss times 1e-3 worked). Should SciPy's
    solver still fail (steps below the spacing of floats: an atol the adjoint cannot
    meet), the pass runs again with atol loosened 1000-fold, at most to rtol times the
    largest |g|, with a warning that says so; then it raises."""
    fun, method, what = problem.fun, problem.method, problem.what
    m, steps, d = g.shape
    tensors = [Tensor(np.asarray(a)) for a in args]
    floats = float_positions(tensors)
    tail = sum(tensors[k].size for k in floats)
    if np.all(t == t[0]):  # every output is y0
        return g.sum(axis=1), np.zeros((m, tail))
    rates = system(fun, tensors, d, method, problem.jit)
    path = trajectory(problem, y0, t, args, store, rates)
    back = _vjp_rates(fun, tensors, d, m, path, problem.jit)
    extra = {}
    if method in STIFF:
        extra["jac"] = _adjoint_jacobian(rates[1], d, m, method, path)
    options = dict(augmented_options(problem.options, backward=True))
    rtol = float(options.get("rtol", 1e-3))
    scale = float(np.abs(g).max()) or 1.0
    atol = float(options.get("atol", 1e-6)) * scale
    while True:
        options["atol"] = atol
        quadrature = _Quadrature(fun, tensors, floats, d, m, path) if tail else None
        try:
            a = _integrate_back(back, extra, options, method, path, t, g, quadrature)
            break
        except _StepFailure as failure:
            looser = min(1000.0 * atol, rtol * scale)
            if not looser > atol:
                raise ValueError(f"{what}: the adjoint's backward integration failed on "
                                 f"{getattr(fun, '__name__', 'fun')} ({method}: "
                                 f"{failure})") from None
            warnings.warn(f"{what}: the adjoint's backward integration of "
                          f"{getattr(fun, '__name__', 'fun')} failed at atol {atol:.3g} "
                          f"({method}: {failure}); integrating again at atol {looser:.3g}, "
                          f"{looser / scale:.1g} of the largest output cotangent (the "
                          "gradient's accuracy follows it)", RuntimeWarning, stacklevel=2)
            atol = looser
    return a, quadrature.flush() if quadrature is not None else np.zeros((m, 0))


class _StepFailure(Exception):
    """SciPy's solver failed on a backward step (its message)."""


def _integrate_back(back, extra, options, method, path, t, g, quadrature):
    """a at t0 (m, d): the adjoint integrated from the last output time back to t0 over
    the trajectory's pieces, g's rows added at their output times."""
    m, steps, d = g.shape
    a = np.zeros((m, d))
    solver_class = getattr(_integrate(), method)
    points, i = path.breaks, steps - 1
    for j in range(len(points) - 1, -1, -1):
        while i >= 0 and t[i] == points[j]:
            a = a + g[:, i]
            i -= 1
        if j == 0:
            break
        path.enter(j - 1)
        with np.errstate(all="ignore"), suspended():  # (as in run)
            solver = solver_class(back, float(points[j]), a.reshape(-1), float(points[j - 1]),
                                  **extra, **options)
            while solver.status == "running":
                message = solver.step()
                if solver.status == "failed":
                    raise _StepFailure(message)
                if quadrature is not None:
                    quadrature.add(solver.t_old, solver.t, solver.dense_output())
        a = solver.y.reshape(m, d)
    return a
