"""What a sparse Jacobian's cached plans depend on, and the check that they still hold.

vj.sparse_jacobian / vj.sparse_hessian cache a plan (pattern, coloring, decompression) per
call key. The key holds everything the structure can depend on that an argument carries:
- the differentiated argument: its shape and dtype (the pattern is structural: it holds
  for every value of that argument);
- every other argument and keyword argument by value, as vj.function keys them: Python
  scalars exactly (-0.0 apart from 0.0), tuples, lists and dicts by content, Variables
  and other objects by identity; integer and boolean arrays (indices, masks, segment ids:
  structure) by content; float and complex arrays (parameters) by shape and dtype.
Detection follows the float array arguments (vecjac/_src/api/sparsity.py): when Python
reads a value computed from one (a branch, indices computed from it), the plan is
value-dependent: detected again on every call (warned once), unless the user pins the
pattern with sparsity=.

What no argument carries (an array f closes over and changes in place, a global flag)
cannot be keyed. `verify` catches a stale or incomplete pattern cheaply: one product
along a random direction (a JVP, or a Hessian-vector product), computed directly, against
the compressed result; check="auto" runs it on the first CHECKED_CALLS evaluations of
each plan, check="always" on every call.
"""
import collections
import hashlib
import warnings

import numpy as np

from vecjac._src.api.function import _key
from vecjac._src.core.tensor import Tensor
from vecjac._src.core.unconnected import UnconnectedGradients
from vecjac._src.transforms.forward.accumulator import ForwardAccumulator
from vecjac._src.transforms.tape.tape import GradientTape

__all__ = ["call_key", "PlanStore", "verify", "verify_hvp", "CHECKED_CALLS", "CHECKS"]

CHECKED_CALLS = 3  # check="auto": evaluations of each plan verified by a random product
CHECKS = ("auto", "always", False)
PLANS_KEPT = 64  # keys remembered (a solver passes a new t on every call)
_ZERO = UnconnectedGradients.ZERO


def call_key(args, kwargs, k):
    """The cache key of a call whose argument k is differentiated (see the module
    docstring)."""
    x = args[k]
    others = tuple(a for j, a in enumerate(args) if j != k)
    leaves = []
    key = _key(others, kwargs, leaves, "sparse_jacobian")
    content = []
    for leaf in leaves:
        value = leaf._value if isinstance(leaf, Tensor) else np.asarray(leaf)
        if value.dtype.kind in "biu":
            content.append(hashlib.blake2b(np.ascontiguousarray(value).view(np.uint8),
                                           digest_size=16).digest())
    value = x._value if isinstance(x, Tensor) else np.asarray(x)
    return (k, value.shape, value.dtype.str, key, tuple(content))


class PlanStore:
    """Plans by call key, the most recent PLANS_KEPT keys; plans with the same pattern
    are one object (a solver's new t re-detects, and finds its coloring here)."""

    def __init__(self):
        self._by_key = collections.OrderedDict()
        self._by_pattern = {}

    def get(self, key):
        plan = self._by_key.get(key)
        if plan is not None:
            self._by_key.move_to_end(key)
        return plan

    def put(self, key, plan):
        self._by_key[key] = plan
        if len(self._by_key) > PLANS_KEPT:
            self._by_key.popitem(last=False)

    def shared(self, pattern, extra, make):
        """The plan of this pattern (and `extra`: mode, dtype ...), made once."""
        h = hashlib.blake2b(digest_size=16)
        for a in (pattern.indptr, pattern.indices):  # no copies (10^6 rows: 30 MB)
            h.update(memoryview(np.ascontiguousarray(a)).cast("B"))
        digest = (pattern.shape, str(pattern.indptr.dtype), h.digest(), extra)
        plan = self._by_pattern.get(digest)
        if plan is None:
            plan = self._by_pattern[digest] = make()
            if len(self._by_pattern) > PLANS_KEPT:
                self._by_pattern.pop(next(iter(self._by_pattern)))
        return plan


def verify(f, args, kwargs, k, matrix, hessian, seed, what):
    """Raise ValueError when the compressed Jacobian (or Hessian) `matrix` differs from a
    product along a random direction computed without the pattern."""
    x = args[k]
    v = Tensor(np.random.default_rng(seed).standard_normal(x.shape).astype(x.dtype))
    with ForwardAccumulator([x], [v]) as acc:
        if hessian:
            with GradientTape() as tape:
                tape.watch(x)
                y = f(*args, **kwargs)
            direct = acc.jvp(tape.gradient(y, x, unconnected_gradients=_ZERO),
                             unconnected_gradients=_ZERO)
        else:
            direct = acc.jvp(f(*args, **kwargs), unconnected_gradients=_ZERO)
    _compare(np.asarray(direct._value, dtype=np.float64).reshape(-1), matrix,
             v._value.astype(np.float64, copy=False), x.dtype, hessian, what)


def verify_hvp(hvp, matrix, g, seed, what):
    """verify for a Hessian given as `hvp(v)` (a Tensor function of a direction v)."""
    v = Tensor(np.random.default_rng(seed).standard_normal(g.shape).astype(g.dtype))
    direct = np.asarray(hvp(v)._value, dtype=np.float64).reshape(-1)
    _compare(direct, matrix, v._value.astype(np.float64, copy=False), g.dtype, True, what)


def _compare(direct, matrix, vv, dtype, hessian, what):
    """Raise ValueError where `direct` (a product along vv) and matrix @ vv differ by more
    than rounding (see verify)."""
    terms = matrix.data * vv[matrix.indices]
    compressed = _row_sums(terms, matrix.indptr)
    # each row against its own magnitude, sum_j |J_ij v_j| + |(J v)_i|: rounding only
    scale = _row_sums(np.abs(terms), matrix.indptr) + np.abs(direct)
    rtol = 1e-8 if dtype == np.float64 else 1e-3
    with np.errstate(invalid="ignore"):
        ok = (direct == compressed) | (np.isnan(direct) & np.isnan(compressed)) | \
            (np.abs(direct - compressed) <= rtol * scale)
    if not ok.all():
        row = int(np.flatnonzero(~ok)[0])
        raise ValueError(
            f"{what}: the sparsity pattern is stale or incomplete: along a random direction "
            f"the product computed directly differs from the compressed "
            f"{'Hessian' if hessian else 'Jacobian'} in row {row} ({direct[row]:.6g} "
            f"against {compressed[row]:.6g}). The "
            "structure of f depends on something its arguments do not carry (an array f "
            "closes over and that changed, a global flag), or an op's sparsity rule "
            "misses a dependence. Make that value an argument of f, pass the pattern with "
            "sparsity=..., or create a new prepared function; check=False skips this check.")


def _row_sums(values, indptr):
    """The sum of each CSR row's values (empty rows: 0)."""
    sums = np.zeros(indptr.size - 1)
    starts = indptr[:-1]
    full = np.flatnonzero(indptr[1:] > starts)
    if full.size:
        sums[full] = np.add.reduceat(values, starts[full])
    return sums


def warn_value_dependent(what, name):
    warnings.warn(f"{what}: the sparsity pattern of {name} depends on the values of a float "
                  "argument (they were read while detecting it), so it is detected again on "
                  "every call. Pass sparsity=... to pin it, or pass indices as integer "
                  "arrays (keyed by content).", RuntimeWarning, stacklevel=3)
