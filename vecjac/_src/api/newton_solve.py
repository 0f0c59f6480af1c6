"""newton_step's linear solves, (H + damping I) d = g, and its damping policy.

Three systems: the dense Hessian (an LU solve with vecjac ops, so that vj.function replays
the whole step), the sparse Hessian (scipy.sparse LU) and Hessian-free conjugate
gradient (Hessian-vector products). Each gives a step for a damping and says whether
the undamped system is safe to solve.

damping="auto" (newton_step's default) is Levenberg-Marquardt's rule with Newton's own
step first: no damping while the Hessian is positive definite (the dense one: its
Cholesky factorization succeeds; the sparse one: the pivots of its symmetric LU
factorization are positive; CG: no direction of negative or zero curvature met), so
that the iteration converges quadratically near a minimum; otherwise TAU * max|H_ii|
(TAU when the diagonal is zero; CG: twice the most negative curvature met), times 10
until it is.
A step that does not decrease the loss is then undone and retried with ten times the
damping (from that base when it was 0), up to MAX_TRIALS times.

Value-dependent choices go through value_read with the test they depend on, so that a
vj.function replay re-checks them (a guard) and replays the same decisions.
"""
import importlib

import numpy as np

from vecjac._src.core.context import value_read
from vecjac._src.core.tensor import Tensor
from vecjac._src.core.unconnected import UnconnectedGradients
from vecjac._src.ops.array.creation import eye
from vecjac._src.ops.array.shaping import reshape
from vecjac._src.ops.elementwise.arithmetic import add, multiply
from vecjac._src.ops.elementwise.logic import greater, less_equal, where
from vecjac._src.ops.elementwise.unary import abs as _abs
from vecjac._src.ops.linalg.matrix import diag_part, solve
from vecjac._src.ops.reduce.reductions import reduce_max

#: the first Levenberg damping relative to the largest diagonal entry of the Hessian
TAU = 1e-3
#: damped retries of a step that does not decrease the loss (damping times 10 each)
MAX_TRIALS = 25

_ZERO = UnconnectedGradients.ZERO


def _positive_definite(a):
    """Whether the symmetric matrix `a` is positive definite: Cholesky succeeds."""
    try:
        np.linalg.cholesky(a)
    except np.linalg.LinAlgError:
        return False
    return bool(np.all(np.isfinite(a)))


def singular(what, damping):
    return ValueError(f"{what}: the damped Hessian (H + {damping} I) is singular; increase "
                      "damping (or use damping='auto')")


class DenseSystem:
    """(H + lam I) d = g with the dense (n, n) Hessian; lam a float or a 0-d Tensor."""

    def __init__(self, H, g, what):
        self.H, self.g, self.what = H, g, what
        self.n = g.shape[0]

    def _matrix(self, lam):
        if isinstance(lam, Tensor) or lam:
            return add(self.H, multiply(eye(self.n, dtype=self.H.dtype), lam))
        return self.H

    def step(self, lam):
        try:
            return reshape(solve(self._matrix(lam), reshape(self.g, [self.n, 1])), [self.n])
        except np.linalg.LinAlgError:
            raise singular(self.what, _number(lam)) from None

    def _definite(self, lam):
        a = self._matrix(lam)
        value_read(a, "internal", _positive_definite)  # a vj.function replay re-checks it
        return _positive_definite(a._value)

    def base(self):
        top = reduce_max(_abs(diag_part(self.H)))
        return where(greater(top, 0), multiply(top, TAU), Tensor(np.asarray(TAU, top.dtype)))

    def initial(self):
        """0 for a positive definite H, else base() * 10^k, the first that makes it so."""
        if self._definite(0.0):
            return 0.0
        lam = self.base()
        for _ in range(MAX_TRIALS):
            if self._definite(lam):
                return lam
            lam = multiply(lam, 10.0)
        return lam

    def larger(self, lam):
        return self.base() if _is_zero(lam) else multiply(lam, 10.0)


class SparseSystem:
    """(H + lam I) d = g with H a scipy.sparse matrix: sparse LU (SuperLU).

    The factorization keeps to the diagonal pivots of a symmetric ordering, so it is an
    LDL^T one and the signs of U's diagonal are those of D: H + lam I is positive
    definite exactly when they are all positive (Sylvester's law of inertia), the
    sparse counterpart of a Cholesky factorization that succeeds. Should SuperLU still
    pivot off the diagonal, the test falls back to the step being a descent direction
    (g.d = d.(H + lam I).d > 0)."""

    def __init__(self, H, g, dtype, what):
        self.H, self.g, self.what = H, g.numpy().astype(dtype), what
        self._solved = {}

    def _solve(self, lam):
        """(step, positive definite) for this damping; the step is NaN if singular."""
        if lam not in self._solved:
            sp = importlib.import_module("scipy.sparse")
            linalg = importlib.import_module("scipy.sparse.linalg")
            A = self.H + lam * sp.eye_array(self.H.shape[0], dtype=self.H.dtype, format="csr")
            try:
                lu = linalg.splu(A.tocsc(), permc_spec="MMD_AT_PLUS_A", diag_pivot_thresh=0.0,
                                 options={"SymmetricMode": True})
            except RuntimeError:  # exactly singular
                d = np.full_like(self.g, np.nan)
                self._solved[lam] = d, False
                return self._solved[lam]
            d = np.asarray(lu.solve(self.g), dtype=self.g.dtype)
            finite = bool(np.all(np.isfinite(d)))
            if np.array_equal(lu.perm_r, lu.perm_c):
                definite = finite and bool(np.all(lu.U.diagonal() > 0))
            else:
                definite = finite and float(self.g @ d) > 0
            self._solved[lam] = d, definite
        return self._solved[lam]

    def step(self, lam):
        d, _ = self._solve(lam)
        if not np.all(np.isfinite(d)):
            raise singular(self.what, lam)
        return Tensor(d)

    def base(self):
        top = float(np.max(np.abs(self.H.diagonal()), initial=0.0))
        return TAU * top if top > 0 else TAU

    def initial(self):
        if self._solve(0.0)[1]:
            return 0.0
        lam = self.base()
        for _ in range(MAX_TRIALS):
            if self._solve(lam)[1]:
                return lam
            lam *= 10.0
        return lam

    def larger(self, lam):
        return self.base() if lam == 0 else 10.0 * lam


class CGSystem:
    """(H + lam I) d = g by conjugate gradient on Hessian-vector products."""

    def __init__(self, outer, g, leaves, unflatten, tol, max_iters, check_finite, what):
        self.outer, self.g_tensor, self.leaves = outer, g, leaves
        self.unflatten, self.tol, self.max_iters = unflatten, tol, max_iters
        self.g = g.numpy().astype(unflatten.dtype)
        self.check_finite, self.what = check_finite, what
        self.iterations = 0  # over every damping tried
        self._runs = {}

    def _hvp(self, p):
        hv = self.outer.gradient(self.g_tensor, self.leaves,
                                 output_gradients=Tensor(p.astype(self.g.dtype)),
                                 unconnected_gradients=_ZERO)
        hv = self.unflatten.flatten(hv).numpy()
        self.check_finite(hv, "Hessian-vector product", self.what)
        return hv

    def _run(self, lam):
        if lam not in self._runs:  # initial() and step() ask for the same damping
            d, k, negative = conjugate_gradient(lambda p: self._hvp(p) + lam * p, self.g,
                                                self.tol, self.max_iters)
            self.iterations += k
            self._runs[lam] = d, negative
        return self._runs[lam]

    def step(self, lam):
        d, _ = self._run(lam)
        return Tensor(d.astype(self.unflatten.dtype, copy=False))

    def initial(self):
        """0 when CG meets no negative or zero curvature; else a damping that outweighs
        the curvature met (at least twice it), raised until CG meets none."""
        lam = 0.0
        for _ in range(MAX_TRIALS):
            _, negative = self._run(lam)
            if negative is None:
                return lam
            # negative: p.(H + lam I)p / p.p <= 0 at this damping
            lam = max(10.0 * lam, lam + 2.0 * abs(negative), TAU)
        return lam

    def larger(self, lam):
        return TAU if lam == 0 else 10.0 * lam


def conjugate_gradient(matvec, b, tol, max_iters):
    """Solve A d = b for symmetric A by CG; stops at negative curvature.

    Returns (d, iterations, curvature): curvature is None, or the Rayleigh quotient
    p.Ap / p.p <= 0 of the direction where CG stopped. On negative or zero curvature at
    the first iteration d is b itself (a gradient step); later, the iterate so far (still
    a descent direction).
    """
    d = np.zeros_like(b)
    r = b.copy()
    p = r.copy()
    rr = float(r @ r)
    stop = (tol * np.sqrt(float(b @ b))) ** 2
    k = 0
    while k < max_iters and rr > stop:
        Ap = matvec(p)
        curvature = float(p @ Ap)
        if curvature <= 0:
            if k == 0:
                d = b.copy()
            return d, k, curvature / float(p @ p)
        alpha = rr / curvature
        d += alpha * p
        r -= alpha * Ap
        rr_new = float(r @ r)
        p = r + (rr_new / rr) * p
        rr = rr_new
        k += 1
    return d, k, None


def _is_zero(lam):
    return not isinstance(lam, Tensor) and lam == 0


def _number(lam):
    return float(lam._value) if isinstance(lam, Tensor) else float(lam)


def no_larger(new_loss, loss):
    """Whether new_loss <= loss up to rounding (1000 ulps of |loss|; False for NaN), as a
    guarded decision: a vj.function replay re-checks it."""
    tolerance = multiply(_abs(loss), 1e3 * float(np.finfo(loss.dtype).eps))
    accepted = less_equal(new_loss, add(loss, tolerance))
    value_read(accepted, "internal", bool)
    return bool(accepted._value)
