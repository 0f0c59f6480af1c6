"""Sparse Jacobians and Hessians: vj.sparse_jacobian and vj.sparse_hessian.

A prepared function. Its first call for an input shape and dtype detects the sparsity
pattern (the sparsity tracer, vecjac/_src/transforms/sparsity/tracer.py) or takes the
user's, and colors it (the plan: vecjac/_src/api/sparse_plan.py): columns for forward
mode, rows for reverse mode, both for bidirectional mode; mode="auto" takes the fewest
products (forward on a tie: a JVP needs no tape). Every call then evaluates one
compressed product per color, all colors in one pfor:
- forward: J S, S the (n, colors) indicator matrix of the column colors: the JVPs of f
  along each color's columns summed (ForwardAccumulator inside pfor, as jacfwd);
- reverse: S^T J with the rows' colors (tape.gradient inside pfor, as tape.jacobian);
- bidirectional: the JVPs of the column colors and the VJPs of the row colors, one pfor
  each (vecjac/_src/api/bicoloring.py);
- Hessian: H S, reverse over reverse (the gradient recorded once, one backward pass
  through it per color);
and reads each nonzero out of the compressed products straight into the data array of
a scipy.sparse.csr_array with the pattern's indices (no sort, no COO).

With jit=True the compressed products are a vj.function per pattern: traced on the
first call, then replayed without per-op Python (and with element-wise runs fused),
2-7x faster on the benchmark's stencils. Its semantics are vj.function's: arrays that f
closes over are constants of the trace, Python side effects happen while tracing, and
Python numbers among the arguments are part of the trace key. Hence opt-in.
"""
import weakref

import numpy as np

from vecjac._src.api.fn_args import (arg_label, check_callable, output_tensor, positions, prepare,
                                     strict)
from vecjac._src.api.function import function
from vecjac._src.api.sparse_cache import (CHECKED_CALLS, CHECKS, PlanStore, call_key, verify,
                                          verify_hvp, warn_value_dependent)
from vecjac._src.api.sparse_plan import HESSIAN_COLORINGS, MODES, make_plan
from vecjac._src.api.sparsity import trace_hessian, trace_jacobian, trace_variables_hessian
from vecjac._src.core.dispatch import apply
from vecjac._src.core.tensor import Tensor
from vecjac._src.core.unconnected import UnconnectedGradients
from vecjac._src.ops.array.indexing import GatherV2
from vecjac._src.ops.array.shaping import concat, reshape
from vecjac._src.transforms.forward.accumulator import ForwardAccumulator
from vecjac._src.transforms.pfor.pfor import pfor
from vecjac._src.transforms.sparsity.patterns import sparse
from vecjac._src.transforms.tape.tape import GradientTape

__all__ = ["sparse_jacobian", "sparse_hessian", "SparseJacobian", "variables_hessian"]

_ZERO = UnconnectedGradients.ZERO


def _check_int_argnums(argnums, what):
    if not isinstance(argnums, (int, np.integer)) or isinstance(argnums, (bool, np.bool_)):
        raise TypeError(f"{what}: argnums must be an int (one 1-D argument; concatenate "
                        f"several into one vector), got {argnums!r}")
    return int(argnums)


def _as_pattern(sparsity, what):
    """A canonical boolean CSR matrix from a scipy.sparse matrix or a 2-D array."""
    if sparsity is None:
        return None
    sp = sparse()
    if sp.issparse(sparsity):
        p = sp.csr_array(sparsity, dtype=bool)
    else:
        try:
            arr = np.asarray(sparsity)
        except Exception:  # noqa: BLE001  (ragged lists and the like)
            arr = np.asarray(None, dtype=object)
        if arr.ndim != 2 or arr.dtype.kind not in "biuf":
            raise TypeError(f"{what}: sparsity must be a scipy.sparse matrix or a 2-D "
                            f"array of booleans, got {type(sparsity).__name__}"
                            + (f" of shape {arr.shape}" if arr.dtype.kind in "biuf" else ""))
        p = sp.csr_array(arr != 0)
    p.eliminate_zeros()
    p.sum_duplicates()
    p.sort_indices()
    return p


class SparseJacobian:
    """The prepared function returned by vj.sparse_jacobian / vj.sparse_hessian.

    Call it like f: it returns a scipy.sparse.csr_array. After a call, `.pattern` (the
    boolean pattern, csr_array), `.ncolors` (products per call) and `.mode` ("fwd",
    "rev", "bidirectional", or "rev-over-rev" for Hessians) describe the last input
    signature used.
    """

    def __init__(self, f, argnums, sparsity, mode, hessian, jit=False, check="auto",
                 coloring="auto"):
        self._f = f
        self._coloring = coloring
        self._jit = jit
        self._check = check
        self._argnums = argnums
        self._sparsity = sparsity
        self._mode = mode
        self._hessian = hessian
        self._what = "sparse_hessian" if hessian else "sparse_jacobian"
        self._plans = PlanStore()  # call key -> plan (vecjac/_src/api/sparse_cache.py)
        self._value_dependent = set()  # keys whose pattern depends on float argument values
        self._last = None
        self._value = self._matrix = None  # of the last call

    # -- what the last call used ----------------------------------------------------------
    def _plan_or_raise(self, attr):
        if self._last is None:
            raise AttributeError(f"{self._what}: .{attr} is known after the first call "
                                 "(the pattern is detected then, per input shape)")
        return self._last

    @property
    def pattern(self):
        return self._plan_or_raise("pattern").pattern

    @property
    def ncolors(self):
        return self._plan_or_raise("ncolors").ncolors

    @property
    def mode(self):
        return self._plan_or_raise("mode").mode

    @property
    def colors(self):
        return self._plan_or_raise("colors").colors

    def __repr__(self):
        name = getattr(self._f, "__name__", type(self._f).__name__)
        plan = self._last
        if plan is None:
            return (f"<{self._what} of {name}: not called yet (the pattern is detected and "
                    "colored on the first call)>")
        m, n = plan.pattern.shape
        density = plan.pattern.nnz / max(1, m * n)
        return (f"<{self._what} of {name}: {m} x {n}, nnz {plan.pattern.nnz} "
                f"({density:.2%}), {plan.ncolors} colors, mode {plan.mode}"
                f"{f', {plan.coloring} coloring' if plan.coloring else ''}"
                f"{', jit' if self._jit else ''}>")

    # -- calls --------------------------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        what = self._what
        (k,) = positions(self._argnums, len(args), what)
        prepared, flat, _ = prepare(self._f, args, (k,), what)  # checks x: float, named
        if len(flat) != 1:
            raise TypeError(f"{what}: {arg_label(self._f, k)} must be one 1-D float array, "
                            f"got a {type(args[k]).__name__} of {len(flat)} arrays")
        x = flat[0]
        _refuse_complex(x, f"{arg_label(self._f, k)}", what)
        if x.ndim != 1:
            raise ValueError(f"{what}: {arg_label(self._f, k)} has shape {x.shape}, but a "
                             f"sparse {'Hessian' if self._hessian else 'Jacobian'} is a "
                             "matrix over a 1-D argument: pass x.reshape(-1) and reshape "
                             "it back inside f")
        key = call_key(args, kwargs, k)
        plan = None if key in self._value_dependent else self._plans.get(key)
        if plan is None:
            track = {}
            plan = self._prepare(args, kwargs, k, x.shape[0], track)
            self._plans.put(key, plan)
            if track.get("read") and self._sparsity is None:
                if not self._value_dependent:
                    warn_value_dependent(what, getattr(self._f, "__name__", "f"))
                self._value_dependent.add(key)
        self._last = plan
        return self._evaluate(plan, prepared, kwargs, k, x)

    def _prepare(self, args, kwargs, k, n, track):
        what = self._what
        user = self._sparsity
        f = self._f
        if user is not None:
            if user.shape[1] != n or (self._hessian and user.shape[0] != n):
                raise ValueError(f"{what}: sparsity has shape {user.shape}, expected "
                                 f"({'n' if self._hessian else 'output size'}, {n}) for "
                                 f"{arg_label(self._f, k)} of size {n}")
            pattern = user if not self._hessian else _symmetric(user)
            dtype = _float_dtype(args[k])
        elif self._hessian:
            pattern, y, flat = trace_hessian(f, args, k, what, kwargs, track)
            dtype = flat[0].dtype
        else:
            pattern, y, flat = trace_jacobian(f, args, k, what, kwargs, track)
            _refuse_complex(y, "f's output", what)
            if y.ndim != 1:
                raise ValueError(f"{what}: f returns shape {y.shape}, but a sparse Jacobian "
                                 "is a matrix: return a 1-D vector (vj.reshape(y, [-1]))")
            dtype = flat[0].dtype
        return self._plans.shared(pattern, (self._mode, self._hessian, self._coloring,
                                            np.dtype(dtype).str),
                                  lambda: make_plan(pattern, self._mode, self._hessian, dtype,
                                                    self._coloring))

    def value_and_matrix(self, *args, **kwargs):
        """(f's value as a NumPy array, the sparse Jacobian): one evaluation of f (the
        primal of the compressed products). Jacobians only."""
        self(*args, **kwargs)
        return self._value, self._matrix

    def _evaluate(self, plan, args, kwargs, k, x):
        what = self._what
        m, n = plan.pattern.shape
        if plan.ncolors == 0:  # nothing depends on the argument
            data = np.zeros(0, dtype=x.dtype)
            y = None if self._hessian else _output(_call(self._f, args, kwargs), what, m)
            self._value = None if y is None else y._value
        else:
            run = (_hessian_products if self._hessian else _PRODUCTS[plan.mode])
            if self._jit:
                if plan.traced is None:
                    plan.traced = _traced(run, self._f, plan, m, what, k)
                run = plan.traced
            products, y = run(self._f, args, kwargs, k, x, plan, m, what)
            data = plan.recover(products._value.reshape(-1))
            self._value = None if y is None else y._value
        self._matrix = sparse().csr_array((data, plan.indices, plan.indptr), shape=(m, n))
        if self._check == "always" or (self._check == "auto" and plan.checked < CHECKED_CALLS):
            plan.checked += 1
            verify(self._f, args, kwargs, k, self._matrix, self._hessian, plan.checked, what)
        return self._matrix


def _float_dtype(x):
    dt = np.result_type(x._value if isinstance(x, Tensor) else x)
    return dt if dt.kind == "f" else np.dtype(np.float64)


def _symmetric(p):
    s = (p + p.T).tocsr()
    s.sum_duplicates()
    s.sort_indices()
    return s.astype(bool)


# -- the compressed products --------------------------------------------------------------------
# Each takes (f, args, kwargs, k, x, plan, m, what), x = args[k], and returns the
# products (colors, size) and f's value (None for Hessians), as Tensors.
def _call(f, args, kwargs):
    return f(*args, **kwargs)


def _traced(run, f, plan, m, what, k):
    """`run` as a vj.function of f's arguments (f, the plan and the labels are fixed):
    one trace per input signature, replayed on later calls."""
    def products(*args, **kwargs):
        return run(f, args, kwargs, k, args[k], plan, m, what)
    traced = function(products)

    def call(f, args, kwargs, k, x, plan, m, what):
        return traced(*args, **kwargs)
    return call


def _forward_products(f, args, kwargs, k, x, plan, m, what):
    return _jvps(f, args, kwargs, x, plan.seeds, m, what)


def _jvps(f, args, kwargs, x, family, m, what):
    """The JVPs of f along the seeds of `family` (sparse_plan.Seeds), and f's value."""
    seeds = family.seeds
    primal = []

    def loop_fn(i):
        seed = apply(GatherV2, seeds, i, axis=0, batch_dims=0)
        with strict(ForwardAccumulator([x], [seed]), what) as acc:
            y = _output(_call(f, args, kwargs), what, m)
        primal.append(y)  # the primal: computed once (loop-invariant), not per color
        return acc.jvp(y, unconnected_gradients=_ZERO)
    return pfor(loop_fn, family.ncolors), primal[-1]


def _reverse_products(f, args, kwargs, k, x, plan, m, what):
    return _vjps(f, args, kwargs, x, plan.seeds, m, what)


def _vjps(f, args, kwargs, x, family, m, what):
    """The VJPs of f along the seeds of `family` (sparse_plan.Seeds), and f's value."""
    seeds = family.seeds
    with strict(GradientTape(persistent=True), what) as tape:
        tape.watch(x)
        y = _output(_call(f, args, kwargs), what, m)

    def loop_fn(i):
        seed = apply(GatherV2, seeds, i, axis=0, batch_dims=0)
        return tape.gradient(y, x, output_gradients=seed, unconnected_gradients=_ZERO)
    return pfor(loop_fn, family.ncolors), y


def _bidirectional_products(f, args, kwargs, k, x, plan, m, what):
    """The JVPs of the column colors and the VJPs of the row colors, flattened and
    concatenated (bicoloring.py's `take` reads them in that order)."""
    parts, y = [], None
    if plan.seeds.ncolors:
        jvps, y = _jvps(f, args, kwargs, x, plan.seeds, m, what)
        parts.append(reshape(jvps, [-1]))
    if plan.row_seeds.ncolors:
        vjps, y = _vjps(f, args, kwargs, x, plan.row_seeds, m, what)
        parts.append(reshape(vjps, [-1]))
    return (parts[0] if len(parts) == 1 else concat(parts, 0)), y


_PRODUCTS = {"fwd": _forward_products, "rev": _reverse_products,
             "bidirectional": _bidirectional_products}


def _hessian_products(f, args, kwargs, k, x, plan, m, what):
    """H S by reverse over reverse: the gradient recorded once on a persistent tape, then
    one backward pass through it per color (vectorized). Forward over reverse (vj.hessian's
    way) pushes the colors through the forward pass and the backward pass: measured 1.5x
    slower on the chained Rosenbrock (n = 10^5, 3 colors: 36 against 24 ms)."""
    with strict(GradientTape(persistent=True), what) as outer:
        outer.watch(x)
        with strict(GradientTape(), what) as tape:
            tape.watch(x)
            y = output_tensor(_call(f, args, kwargs), what, scalar=True)
        g = tape.gradient(y, x, unconnected_gradients=_ZERO)
    return _hvps(outer, g, [x], plan.seeds), None


def _hvps(outer, g, leaves, family):
    """The Hessian-vector products along the seeds of `family` (sparse_plan.Seeds, or a
    _direction): (ncolors, n)."""
    seeds = family.seeds

    def loop_fn(i):
        seed = apply(GatherV2, seeds, i, axis=0, batch_dims=0)
        hv = outer.gradient(g, leaves, output_gradients=seed, unconnected_gradients=_ZERO)
        return hv[0] if len(hv) == 1 else concat([reshape(h, [-1]) for h in hv], 0)
    return pfor(loop_fn, family.ncolors)


def _refuse_complex(t, role, what):
    """Sparse Jacobians are real: their compressed products, CSR assembly and checks."""
    if t.dtype.kind == "c":
        raise TypeError(f"{what}: {role} has complex dtype {t.dtype}; sparse Jacobians and "
                        "Hessians are real (CSR data, coloring recovery): use vj.jacobian "
                        "(the real Jacobian of real and imaginary parts, or holomorphic=True) "
                        "or pass real and imaginary parts as separate real arrays")


def _output(y, what, m):
    if isinstance(y, (dict, list, tuple)):
        raise ValueError(f"{what}: f must return one Tensor, got a {type(y).__name__}")
    y = output_tensor(y, what, scalar=False)
    _refuse_complex(y, "f's output", what)
    if y.shape != (m,):
        raise ValueError(f"{what}: f returns shape {y.shape}, but the sparsity pattern "
                         f"has {m} rows: pass a pattern of shape (output size, input size), "
                         "and return a 1-D vector")
    return y


# -- Hessians over variables (flat_hessian / newton_step with sparse=True) ----------------------
_variable_plans = weakref.WeakKeyDictionary()  # loss_fn -> {variables' signature: plan}


def variables_hessian(loss_fn, leaves, outer, g, what):
    """The sparse (n, n) Hessian of `loss_fn()` over the leaves' flat concatenation, from
    `g` (the flat gradient) recorded on the persistent tape `outer`: one reverse-over-
    reverse Hessian-vector product per color, in one pfor. Pattern and coloring are
    cached per loss_fn and variables (identity, shape, dtype: a Newton loop detects
    once); the first CHECKED_CALLS Hessians of a plan are compared with one
    Hessian-vector product along a random direction (a pattern made stale by something
    loss_fn closes over raises)."""
    key = tuple((v._tid, v.shape, v.dtype.str) for v in leaves)
    try:
        plans = _variable_plans.setdefault(loss_fn, {})
    except TypeError:  # not weakly referenceable: no cache
        plans = {}
    plan = plans.get(key)
    if plan is None:
        pattern = trace_variables_hessian(loss_fn, leaves, what)
        plan = plans[key] = make_plan(pattern, "auto", True, g.dtype)
    n = g.shape[0]
    if plan.ncolors == 0:
        data = np.zeros(0, dtype=g.dtype)
    else:
        data = plan.recover(_hvps(outer, g, list(leaves), plan.seeds)._value.reshape(-1))
    matrix = sparse().csr_array((data, plan.indices, plan.indptr), shape=(n, n))
    if plan.checked < CHECKED_CALLS:
        plan.checked += 1
        verify_hvp(lambda v: _hvps(outer, g, list(leaves), _direction(v)), matrix, g,
                   plan.checked, what)
    return matrix


class _direction:
    """A one-color plan whose seed is the vector v (for _hvps: H v)."""

    def __init__(self, v):
        self.seeds, self.ncolors = reshape(v, (1, -1)), 1


# -- the public functions -----------------------------------------------------------------------
def sparse_jacobian(f, argnums=0, sparsity=None, mode="auto", jit=False, check="auto"):
    """A function returning the Jacobian of `f` as a scipy.sparse.csr_array.

    `f` maps a 1-D float argument (argument `argnums`) to a 1-D float vector. The first
    call per input shape and dtype detects the sparsity pattern (vj.jacobian_sparsity) or
    uses `sparsity` (a boolean matrix of shape (output size, input size) that must
    contain every nonzero), colors it and evaluates one compressed JVP (mode "fwd", per
    group of columns no row shares) or VJP ("rev", per group of rows) per color, all
    colors in one vectorized pass; "bidirectional" computes each entry either by a JVP
    of a group of columns or by a VJP of a group of rows (a star bicoloring: an
    arrowhead, dense row and column, in 3 products instead of n); "auto" takes the
    mode with the fewest products. Later calls
    reuse the pattern and coloring. The prepared function has `.pattern`, `.ncolors`,
    `.mode` and `.colors` (after a call; bidirectional: the column colors, -1 for a
    column in no JVP).

    `jit=True` replays the compressed products as a vj.function (traced on the first
    call per input signature): several times faster on repeated calls, with
    vj.function's semantics (arrays f closes over are constants of the trace, Python
    side effects run while tracing, Python numbers among the arguments are part of
    the trace key: pass values that change every call as arrays).

    Plans are cached per call: the argument's shape and dtype, and every other argument
    by value (integer and boolean arrays by content; float arrays by shape and dtype,
    unless detection read their values: then the pattern is detected on every call).
    `check` verifies the compressed result against one product along a random direction
    (a JVP; for Hessians a Hessian-vector product), which catches a pattern made stale by
    something no argument carries (an array f closes over, changed in place): "auto"
    (default) on the first 3 evaluations of each pattern, "always" on every call, False
    never. A mismatch raises ValueError. Its cost is one JVP, about one more evaluation
    of f and its tangent, on the calls it checks.

    >>> jac = vj.sparse_jacobian(lambda x: x[1:] * x[:-1])
    >>> jac(np.array([1.0, 2.0, 3.0])).toarray()
    array([[2., 1., 0.],
           [0., 3., 2.]])
    >>> jac.ncolors, jac.mode
    (2, 'fwd')
    """
    what = "sparse_jacobian"
    check_callable(f, what)
    argnums = _check_int_argnums(argnums, what)
    if not isinstance(mode, str) or mode not in MODES:
        raise ValueError(f"{what}: mode must be one of {MODES}, got {mode!r}")
    return SparseJacobian(f, argnums, _as_pattern(sparsity, what), mode, hessian=False,
                          jit=_check_bool(jit, "jit", what), check=_check_check(check, what))


def sparse_hessian(f, argnums=0, sparsity=None, jit=False, check="auto", coloring="auto"):
    """A function returning the Hessian of scalar `f` as a symmetric scipy.sparse.csr_array.

    `f` takes a 1-D float argument (argument `argnums`). The first call per input shape
    and dtype detects the pattern (vj.hessian_sparsity) or uses `sparsity` ((n, n),
    symmetrized), colors its columns and evaluates one Hessian-vector product (reverse
    over reverse) per color, all colors in one vectorized pass. `coloring="star"`
    computes each entry alone in one of its two mirror positions; "acyclic" needs fewer
    colors (a tridiagonal Hessian: 2 instead of 3) and recovers the entries by
    substitution along two-colored trees (sums, with their rounding); "auto" (default)
    takes the fewer colors, star on a tie.

    `jit=True` replays the compressed products as a vj.function (traced on the first
    call per input signature): several times faster on repeated calls, with
    vj.function's semantics (arrays f closes over are constants of the trace, Python
    side effects run while tracing, Python numbers among the arguments are part of
    the trace key: pass values that change every call as arrays). Caching and `check`
    as for vj.sparse_jacobian.

    >>> hess = vj.sparse_hessian(lambda x: vj.reduce_sum(x[1:] * x[:-1] ** 2))
    >>> hess(np.array([1.0, 2.0, 3.0])).toarray()
    array([[4., 2., 0.],
           [2., 6., 4.],
           [0., 4., 0.]])
    """
    what = "sparse_hessian"
    check_callable(f, what)
    argnums = _check_int_argnums(argnums, what)
    if not isinstance(coloring, str) or coloring not in HESSIAN_COLORINGS:
        raise ValueError(f"{what}: coloring must be one of {HESSIAN_COLORINGS}, got "
                         f"{coloring!r}")
    return SparseJacobian(f, argnums, _as_pattern(sparsity, what), "auto", hessian=True,
                          jit=_check_bool(jit, "jit", what), check=_check_check(check, what),
                          coloring=coloring)


def _check_check(check, what):
    if check is not False and not (isinstance(check, str) and check in CHECKS):
        raise ValueError(f"{what}: check must be one of {CHECKS}, got {check!r}")
    return check


def _check_bool(value, name, what):
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{what}: {name} must be a bool, got {value!r}")
    return bool(value)
