"""Hessians across several variables and damped Newton steps.

TF's guide builds the Hessian of a loss over several variables by "careful concatenation
and slicing"; `flat_hessian` does it once: the variables are flattened in order (nest
order for nests) into one vector of length n = sum of their sizes, and the result is the
(n, n) Hessian over that vector. `unflatten_like(variables)` splits a flat vector back
into the variables' shapes. `newton_step` solves (H + damping I) d = g and applies
`variable.assign_sub(d_k)`, after checking that the loss, gradient, Hessian and step are
finite (a NaN step would overwrite every variable); its solves and its damping policy
(damping="auto": none while H is positive definite) are in newton_solve.py.
"""
import math
import numbers
import warnings
from typing import NamedTuple

import numpy as np

from vecjac._src.api.fn_args import strict
from vecjac._src.api.newton_solve import (MAX_TRIALS, CGSystem, DenseSystem, SparseSystem,
                                          no_larger)
from vecjac._src.api.sparse import variables_hessian
from vecjac._src.composites.norm import norm
from vecjac._src.core import nest
from vecjac._src.core.context import state, value_read
from vecjac._src.core.dispatch import convert_to_tensor
from vecjac._src.core.tensor import Tensor
from vecjac._src.core.unconnected import UnconnectedGradients
from vecjac._src.core.variables import Variable
from vecjac._src.ops.array.shaping import concat, reshape
from vecjac._src.transforms.tape.tape import GradientTape

__all__ = ["flat_hessian", "unflatten_like", "newton_step", "Unflatten", "NewtonStep",
           "CG_THRESHOLD"]

#: newton_step forms the (n, n) Hessian and solves up to this many parameters; above it,
#: it runs Hessian-free conjugate gradient with Hessian-vector products (memory O(n)).
CG_THRESHOLD = 2000

_ZERO = UnconnectedGradients.ZERO


class Unflatten:
    """Splits a flat vector of length `size` into Tensors shaped like the variables.

    `unflatten(flat)` returns the variables' nest (a list for a list of variables);
    `unflatten.flatten(tensors)` is the inverse (one (size,) Tensor). Attributes:
    `shapes`, `sizes`, `size`, `dtype`.
    """

    def __init__(self, variables):
        self._structure = variables
        leaves = nest.flatten(variables)
        self.shapes = tuple(tuple(v.shape) for v in leaves)
        self.sizes = tuple(int(math.prod(s)) for s in self.shapes)
        self.size = sum(self.sizes)
        self.dtype = leaves[0].dtype

    def __call__(self, flat):
        flat = convert_to_tensor(flat, name="unflatten: flat")
        if flat.shape != (self.size,):
            raise ValueError(f"unflatten: flat must have shape ({self.size},) (the total "
                             f"size of the variables), got shape {flat.shape}")
        out, start = [], 0
        for shape, size in zip(self.shapes, self.sizes):
            out.append(reshape(flat[start:start + size], shape))
            start += size
        return nest.pack_sequence_as(self._structure, out)

    def flatten(self, tensors):
        leaves = nest.flatten(tensors)
        if len(leaves) != len(self.shapes):
            raise ValueError(f"Unflatten.flatten: expected {len(self.shapes)} tensors, got "
                             f"{len(leaves)}")
        parts = []
        for k, (t, shape) in enumerate(zip(leaves, self.shapes)):
            t = convert_to_tensor(t, name="Unflatten.flatten")
            if tuple(t.shape) != shape:
                raise ValueError(f"Unflatten.flatten: tensor {k} has shape {t.shape}, "
                                 f"expected {shape}")
            parts.append(reshape(t, [-1]))
        return concat(parts, axis=0)

    def __repr__(self):
        return f"Unflatten(shapes={self.shapes})"


class NewtonStep(NamedTuple):
    """What `newton_step` returns (Python numbers, for logging; 0-d Tensors while a
    vj.function traces, so that the replay reports each call's values)."""
    loss: float          # loss before the step
    grad_norm: float     # ||g|| before the step
    step_norm: float     # ||d||, the step subtracted from the variables
    method: str          # "solve" (dense Hessian) or "cg" (Hessian-free)
    cg_iterations: int   # 0 for "solve"
    damping: float       # the damping of the step taken (damping="auto": 0 if undamped)


def _check_variables(variables, what, need_variables):
    leaves = nest.flatten(variables)
    if not leaves:
        raise ValueError(f"{what}: variables must be a non-empty list of Variables")
    allowed = (Variable,) if need_variables else (Variable, Tensor)
    for k, v in enumerate(leaves):
        if not isinstance(v, allowed):
            kind = "vj.Variable (they are updated in place)" if need_variables else \
                "vj.Variable or vj.Tensor"
            raise TypeError(f"{what}: variables[{k}] must be a {kind}, got "
                            f"{type(v).__name__}")
        if v.dtype.kind != "f":
            raise TypeError(f"{what}: variables[{k}] must be floating point, got dtype "
                            f"{v.dtype}")
    dtypes = sorted({str(v.dtype) for v in leaves})
    if len(dtypes) > 1:
        raise TypeError(f"{what}: all variables must share one dtype to form one Hessian, "
                        f"got {', '.join(dtypes)}")
    return leaves


def _record_gradient(loss_fn, leaves, what):
    """(loss, flat gradient g, persistent tape that recorded g's computation)."""
    if not callable(loss_fn):
        raise TypeError(f"{what}: loss_fn must be a callable taking no arguments, got "
                        f"{type(loss_fn).__name__}")
    outer = strict(GradientTape(persistent=True), what)
    with outer:
        outer.watch(leaves)
        with strict(GradientTape(), what) as inner:
            inner.watch(leaves)
            loss = loss_fn()
            loss = convert_to_tensor(loss, name=f"{what}: loss_fn output")
            if loss.shape != ():
                raise ValueError(f"{what}: loss_fn must return a scalar, got shape "
                                 f"{loss.shape}; reduce it (e.g. vj.reduce_mean)")
            if loss.dtype.kind != "f":
                raise TypeError(f"{what}: loss_fn must return a floating scalar, got dtype "
                                f"{loss.dtype}")
        grads = inner.gradient(loss, leaves, unconnected_gradients=_ZERO)
        g = concat([reshape(gk, [-1]) for gk in grads], axis=0)
    return loss, g, outer


def _dense_hessian(outer, g, leaves):
    n = g.shape[0]
    blocks = outer.jacobian(g, leaves, unconnected_gradients=_ZERO)
    return concat([reshape(b, [n, -1]) for b in blocks], axis=1)


def flat_hessian(loss_fn, variables, sparse=False):
    """The (n, n) Hessian of `loss_fn()` over all `variables`, flattened and concatenated.

    `loss_fn` takes no arguments and returns a scalar (it reads the variables, TF style).
    `variables`: Variables or Tensors (a list or nest), all of one float dtype;
    n = sum of their sizes, in nest order, each flattened in C order. Returns the (n, n)
    Tensor; `vj.unflatten_like(variables)` splits an (n,) vector (a Newton step, an
    eigenvector of H) back into the variables' shapes.

    >>> w, b = vj.Variable(np.ones((2, 2))), vj.Variable(np.zeros(2))
    >>> H = vj.flat_hessian(lambda: vj.reduce_sum(w ** 2) * vj.reduce_sum(b ** 2), [w, b])
    >>> H.shape, [t.shape for t in vj.unflatten_like([w, b])(np.arange(6.0))]
    ((6, 6), [(2, 2), (2,)])

    `sparse=True` returns the Hessian as a scipy.sparse.csr_array instead, computed from
    its detected sparsity pattern (one Hessian-vector product per color; see
    vj.sparse_hessian; pattern and coloring are cached per loss_fn and variables).
    """
    what = "flat_hessian"
    leaves = _check_variables(variables, what, need_variables=False)
    sparse = _check_sparse(sparse, what)
    _, g, outer = _record_gradient(loss_fn, leaves, what)
    return variables_hessian(loss_fn, leaves, outer, g, what) if sparse else \
        _dense_hessian(outer, g, leaves)


def _check_sparse(sparse, what):
    if not isinstance(sparse, (bool, np.bool_)):
        raise TypeError(f"{what}: sparse must be a bool, got {sparse!r}")
    return bool(sparse)


def unflatten_like(variables):
    """An `Unflatten` for `variables` (the order and sizes `flat_hessian` uses):
    `unflatten(flat)` splits an (n,) vector into Tensors shaped like the variables, in
    their nest; `unflatten.flatten(tensors)` is the inverse.

    >>> w, b = vj.Variable(np.ones((2, 2))), vj.Variable(np.zeros(2))
    >>> [t.shape for t in vj.unflatten_like([w, b])(np.arange(6.0))]
    [(2, 2), (2,)]
    """
    _check_variables(variables, "unflatten_like", need_variables=False)
    return Unflatten(variables)


def _all_finite(array):
    return bool(np.all(np.isfinite(array)))


def _check_finite(value, name, what):
    """ValueError naming `name` when `value` (a Tensor or an ndarray) holds NaN or inf: a
    Newton step computed from it would overwrite the variables with NaN. For a Tensor the
    check is a value-dependent choice: vj.function re-checks it at replay (a guard)."""
    if isinstance(value, Tensor):
        value_read(value, "internal", _all_finite)
        value = value._value
    if not _all_finite(value):
        bad = int(np.size(value) - np.count_nonzero(np.isfinite(value)))
        raise ValueError(f"{what}: the {name} is not finite ({bad} of {np.size(value)} "
                         "entries are NaN or inf); the variables were left unchanged")


def newton_step(loss_fn, variables, damping="auto", method="auto", cg_tol=1e-6,
                cg_max_iters=None, sparse=False):
    """Apply one Newton update to `variables`: solve (H + damping I) d = g, then
    `v.assign_sub(d_v)` for each variable. Returns a `NewtonStep` (loss before the step,
    gradient norm, step norm, method, CG iterations, the damping used).

    H and g are the Hessian and gradient of `loss_fn()` (no arguments, scalar) over all
    variables at once (see `flat_hessian`). `method="auto"` forms H and solves it (LU
    solve, never an inverse) when n <= 2000 parameters (CG_THRESHOLD in
    vecjac/_src/api/newton.py) and otherwise runs Hessian-free conjugate gradient with
    Hessian-vector products (memory O(n); `cg_tol` relative residual, at most
    `cg_max_iters` iterations, default min(n, 200)); "solve" or "cg" force one.
    `sparse=True` forms the Hessian as a sparse matrix from its detected pattern (see
    vj.sparse_hessian) and solves with a sparse LU (scipy.sparse.linalg), for any n:
    large problems with sparse Hessians.

    `damping="auto"` (the default) takes Newton's own step, undamped, whenever the
    Hessian is positive definite (dense: Cholesky succeeds; sparse: the step is a
    descent direction; CG: no negative curvature met), so that the iteration converges
    quadratically near a minimum; otherwise it adds Levenberg damping (1e-3 max|H_ii|,
    times 10 until the system is positive definite). A step that does not decrease the
    loss (up to rounding) is undone and retried with ten times the damping, so the loss
    never rises (one more evaluation of loss_fn per step, and per retry); when no damping
    helps, the last step stays and a RuntimeWarning gives the numbers. A number
    `damping` >= 0 is used as it is (Levenberg style: it keeps the system well-posed and
    shortens the step), and a step that raises the loss warns (RuntimeWarning, with the
    losses before and after; not inside a vj.function trace).

    >>> x = vj.Variable([3.0, -2.0])
    >>> vj.newton_step(lambda: vj.reduce_sum((x - 1.0) ** 2), [x]).loss
    13.0
    """
    what = "newton_step"
    leaves = _check_variables(variables, what, need_variables=True)
    sparse = _check_sparse(sparse, what)
    auto = isinstance(damping, str) and damping == "auto"
    if not auto and (not isinstance(damping, numbers.Real) or isinstance(damping, bool)
                     or not np.isfinite(damping) or damping < 0):
        raise ValueError(f"{what}: damping must be 'auto' or a finite number >= 0, got "
                         f"{damping!r}")
    if method not in ("auto", "solve", "cg"):
        raise ValueError(f"{what}: method must be 'auto', 'solve' or 'cg', got {method!r}")
    if not isinstance(cg_tol, numbers.Real) or isinstance(cg_tol, bool) or not cg_tol > 0:
        raise ValueError(f"{what}: cg_tol must be a positive number, got {cg_tol!r}")
    if cg_max_iters is not None and (not isinstance(cg_max_iters, numbers.Integral)
                                     or isinstance(cg_max_iters, bool) or cg_max_iters < 1):
        raise ValueError(f"{what}: cg_max_iters must be a positive int or None, got "
                         f"{cg_max_iters!r}")
    unflatten = Unflatten(variables)
    n = unflatten.size
    if method == "auto":
        method = "solve" if n <= CG_THRESHOLD or sparse else "cg"
    loss, g, outer = _record_gradient(loss_fn, leaves, what)
    _check_finite(loss, "loss", what)
    _check_finite(g, "gradient", what)
    if method == "solve" and sparse:
        system = SparseSystem(variables_hessian(loss_fn, leaves, outer, g, what), g,
                              unflatten.dtype, what)
    elif method == "solve":
        # vecjac ops throughout (a LU solve, never an inverse), so that vj.function
        # replays the whole step
        H = _dense_hessian(outer, g, leaves)
        _check_finite(H, "Hessian", what)
        system = DenseSystem(H, g, what)
    else:
        max_iters = min(n, 200) if cg_max_iters is None else int(cg_max_iters)
        system = CGSystem(outer, g, leaves, unflatten, float(cg_tol), max_iters,
                          _check_finite, what)
    if auto:
        lam, d = _damped_step(system, loss_fn, loss, leaves, unflatten, what)
    else:
        lam, d = damping, system.step(damping)
        _apply(d, leaves, unflatten, what)
        if not state.observers:  # a diagnosis, not a decision: eager only
            _warn_if_raised(loss, _loss_now(loss_fn, what), lam, d, what,
                            "; damping='auto' (the default) undoes such a step and damps it")
    iterations = getattr(system, "iterations", 0)
    report = [loss, norm(g), norm(d)]
    lam = lam if isinstance(lam, Tensor) else Tensor(np.asarray(lam, loss.dtype))
    if not state.observers:  # Python numbers, except in a trace (see NewtonStep)
        report = [float(t.numpy()) for t in report]
        lam = float(lam.numpy())
    return NewtonStep(*report, method, iterations, lam)


def _apply(d, leaves, unflatten, what):
    _check_finite(d, "Newton step", what)  # e.g. overflow in the solve
    for var, piece in zip(leaves, nest.flatten(unflatten(d))):
        var.assign_sub(piece)


def _loss_now(loss_fn, what):
    """loss_fn() at the variables' current values (after a step)."""
    return convert_to_tensor(loss_fn(), name=f"{what}: loss_fn output")


def _damped_step(system, loss_fn, loss, leaves, unflatten, what):
    """damping="auto": (damping, step) of the first step that does not raise the loss,
    from the system's initial damping (0 where H is positive definite), ten times more
    for each retry; the variables hold the step applied."""
    saved = [v.read_value() for v in leaves]
    lam = system.initial()
    for trial in range(MAX_TRIALS):
        d = system.step(lam)
        _apply(d, leaves, unflatten, what)
        new_loss = _loss_now(loss_fn, what)
        if no_larger(new_loss, loss):
            return lam, d
        if trial == MAX_TRIALS - 1:
            break
        for var, value in zip(leaves, saved):  # undo, and damp more
            var.assign(value)
        lam = system.larger(lam)
    if not state.observers:
        _warn_if_raised(loss, new_loss, lam, d, what,
                        f" even after {MAX_TRIALS} tries, each damped ten times more; the "
                        "last one stays (a minimum reached up to rounding, or a loss that "
                        "is not smooth here?)")
    return lam, d


def _warn_if_raised(loss, new_loss, lam, d, what, hint=""):
    """RuntimeWarning with the numbers when the step raised the loss (beyond rounding)."""
    if no_larger(new_loss, loss):
        return
    before, after = float(loss.numpy()), float(new_loss.numpy())
    lam = float(lam.numpy()) if isinstance(lam, Tensor) else float(lam)
    warnings.warn(f"{what}: the step raised the loss from {before:.6g} to {after:.6g} "
                  f"(damping {lam:.3g}, |d| = {float(norm(d).numpy()):.3g}){hint}",
                  RuntimeWarning, stacklevel=3)
