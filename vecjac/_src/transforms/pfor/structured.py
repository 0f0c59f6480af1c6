"""Structured loop-variant values: one-hot rows that are never materialized unless needed.

The seeds of a Jacobian are the rows of an identity: iteration k carries e_k. Written out
densely, every backward op then works on an (m, m) array, and "seed times a matrix" is a
dense (m, m) @ (m, n) product. A OneHotStacked keeps the structure instead: iteration k's
value is d[k] * e_{pos[k]} in a per-iteration shape S, with `d` a Tensor (so tapes outside
the loop can still differentiate through it) and `pos` constant flat positions.

Ops may define `structured(cx, *inputs, **attrs)` beside their converter: it receives
structured inputs of the kinds it declares (`@kinds(...)`; OneHotStacked by default) as
they are, every other stacked input as a plain stacked Tensor (like a converter), and
returns a structured value, a plain stacked Tensor, or NotImplemented. Any op without
such a rule simply sees the dense value: `_plain` materializes it on first use.
So "one-hot rows times a vector" stays a diagonal (Mul), a diagonal times a matrix is a
row gather and scaling (MatMul), and a sum of one-hot rows is just d (Sum). This module
holds the structured kinds, their helpers, and the family rules that several ops share
(passthrough, map_d, add_like, scale, scale_by); a rule of one op alone is a method of its
block (MatMul.structured, MatVec.structured, Sum.structured).

The seeds of a batch Jacobian are one-hot *columns*: iteration k is column pos[k] of
every example. `lead` leading axes of S (the batch) are then held densely in d, of shape
(iters, *S[:lead]), and pos indexes the remaining, trailing axes. Multiplying by a
per-example factor scales d; a matrix product turns the column into an outer product
d[k] x b[pos[k]] (an OuterStacked, kept lazy until the next elementwise factor writes it
in one fused pass) instead of a GEMM over the seeds.
"""
import math
import os
import weakref

import numpy as np

from vecjac._src.core.context import value_read
from vecjac._src.core.dispatch import apply
from vecjac._src.core.registry import lib
from vecjac._src.core.tensor import Tensor, _next_tid
from vecjac._src.transforms.pfor.stacked import StackedTensor

# VECJAC_STRUCTURED_SEEDS=0 turns the structure off (dense seeds), for A/B measurements
ENABLED = os.environ.get("VECJAC_STRUCTURED_SEEDS", "1") != "0"
# Structure costs a few small ops per rule (Python dispatch, microseconds); dense seeds
# cost passes over iters x depth elements. Below this size dense is as fast (measured on
# benchmarks/workloads.py: 70 x 70 seeds are faster dense, 201 x 201 faster structured).
MIN_DENSE_SIZE = 16384


def worth_structuring(iters, depth):
    return ENABLED and iters * depth >= MIN_DENSE_SIZE


class LazyStacked(StackedTensor):
    """A loop value held in a structured form; the dense stacked value (`_plain`) is
    built on first use, by `_materialize()`."""

    __slots__ = ()

    @property
    def _plain(self):
        plain = StackedTensor._plain.__get__(self)
        if plain is None:
            plain = self._materialize()
            StackedTensor._plain.__set__(self, plain)
            self._pfor.dense_bytes += plain._value.nbytes
        return plain

    @property
    def _value(self):
        return self._plain._value

    @property
    def held_bytes(self):
        """The memory of the structured form itself (pfor's count of loop values)."""
        return self.d._value.nbytes

    def write_rows(self, out, zeroed):
        """Write all iterations into the ndarray `out` of shape (iters, *S), as a chunked
        loop fills its result; `zeroed`: out holds zeros already."""
        out[...] = self._plain._value


class OneHotStacked(LazyStacked):
    """Loop-variant value whose iteration k is d[k] * e_{pos[k]} (per-iteration shape S):
    one-hot over S[lead:], with d[k] of shape S[:lead] spread over the leading axes."""

    __slots__ = ("d", "pos", "S", "lead")

    def __init__(self, d, pos, shape, loop, lead=0):
        # no call to StackedTensor.__init__: the dense value is built lazily
        self.d = d                       # Tensor (iters, *S[:lead]): the nonzeros
        self.pos = np.asarray(pos)       # (iters,) flat positions in S[lead:] (constants)
        self.S = tuple(shape)
        self.lead = lead
        self._pfor = loop
        self._tid = _next_tid()
        StackedTensor._plain.__set__(self, None)

    @property
    def shape(self):
        return self.S

    @property
    def dtype(self):
        return self.d.dtype

    def _materialize(self):
        return materialize(self)

    @property
    def size_(self):
        """Size of the one-hot (trailing) part of S."""
        return int(math.prod(self.S[self.lead:]))

    @property
    def held_bytes(self):
        return self.d._value.nbytes + self.pos.nbytes

    def write_rows(self, out, zeroed):
        if self.lead or not out.flags.c_contiguous:
            return LazyStacked.write_rows(self, out, zeroed)
        flat = out.reshape(len(self.pos), -1)
        if not zeroed:
            flat[...] = 0
        flat[np.arange(len(self.pos)), self.pos] = self.d._value
        return None

    def with_(self, d=None, shape=None, pos=None):
        """A new structured value on the same loop (new id): d, shape or pos replaced."""
        return OneHotStacked(self.d if d is None else d, self.pos if pos is None else pos,
                             self.S if shape is None else shape, self._pfor, self.lead)


class OuterStacked(LazyStacked):
    """Loop value whose iteration k is the outer product d[k] x r[k], shape (i, k): what
    one-hot columns @ matrix give. Kept lazy one op longer, so that an elementwise
    factor (the activation gradient that usually follows) is applied in the one pass
    that writes the (iters, i, k) array (OuterRowsScaled) instead of a second pass."""

    __slots__ = ("d", "r")

    def __init__(self, d, r, loop):
        self.d, self.r = d, r            # plain Tensors (iters, i) and (iters, k)
        self._pfor = loop
        self._tid = _next_tid()
        StackedTensor._plain.__set__(self, None)

    @property
    def shape(self):
        return (self.d.shape[-1], self.r.shape[-1])

    @property
    def dtype(self):
        return np.result_type(self.d.dtype, self.r.dtype)

    def _materialize(self):
        return apply(lib.OuterRows, self.d, self.r)

    @property
    def held_bytes(self):
        return self.d._value.nbytes + self.r._value.nbytes


def kinds(*classes):
    """Mark a rule as taking structured inputs of these classes as they are (the default
    is OneHotStacked only); inputs of other structured kinds reach it densely."""
    def mark(rule):
        rule.kinds = classes
        return rule
    return mark


def materialize(x):
    """The dense (iters, *S) Tensor of a OneHotStacked, built with (differentiable) ops."""
    n = x._pfor.iters
    if x.lead:  # d[k] over the leading axes times a constant one-hot over the rest
        hot = np.zeros((n, 1, x.size_), dtype=x.dtype)
        hot[np.arange(n), 0, x.pos] = 1
        spread = lib.reshape(x.d, (n, -1, 1)) * Tensor(hot)  # (n, L, M)
        return lib.reshape(spread, (n,) + x.S)
    rows = lib.scatter_rows(lib.reshape(x.d, (n, 1)), x.pos, x.size_)  # (n, M, 1)
    return lib.reshape(rows, (n,) + x.S)


_SEEDS = {}  # (iters, depth, offset, dtype) -> read-only identity rows


def seed_rows(iters, depth, offset, dtype):
    """np.eye(iters, depth, k=offset): a jacfwd's dense seeds (the rows of the one-hot
    of its loop index), shared read-only between calls: every jacfwd of one signature
    seeds the same rows (a write into them would raise, not corrupt). The rows of a
    chunk (offset > 0) are not kept: a chunked Jacobian's chunks would fill the cache
    with rows used once per call (up to 64 chunks of them held at once)."""
    if iters * depth > 16384 or offset:  # larger seeds are structured or chunked: not kept
        rows = np.eye(iters, depth, k=offset, dtype=dtype)
        rows.flags.writeable = False
        return rows
    key = (iters, depth, offset, dtype)
    rows = _SEEDS.get(key)
    if rows is None:
        if len(_SEEDS) >= 64:
            _SEEDS.clear()
        rows = _SEEDS[key] = np.eye(iters, depth, k=offset, dtype=dtype)
        rows.flags.writeable = False
    return rows


def is_identity(m):
    """Whether the square matrix m is bit for bit np.eye(n): jacfwd's dense seeds (only
    small seed sets are dense). The shared seed rows are known by identity; any other
    array is compared byte for byte with them."""
    n = m.shape[0]
    if n > 128 or not m.flags.c_contiguous:
        return False
    eye = seed_rows(n, n, 0, m.dtype)
    return m is eye or m.tobytes() == eye.tobytes()


def is_structured(x, loop):
    """Any structured (lazy) value of this loop."""
    return isinstance(x, LazyStacked) and x._pfor is loop


def is_onehot(x, loop):
    return type(x) is OneHotStacked and x._pfor is loop


# tensor id -> (weak reference to the array checked, bool). The id alone is not a key:
# every read of a Variable carries the Variable's id, and an assign changes the array
# behind it. A weak reference (not id(array): a freed array's address is reused) tells
# whether the array is still the one checked.
_finite_cache = {}


def finite(t):
    """False if t holds NaN or inf: then a structured rule must not skip the zeros, since
    the dense computation gives 0 * inf = NaN there (IEEE), and pfor must equal the loop."""
    v = t._value
    if v.dtype.kind not in "fc":
        return True
    return _checked(_finite_cache, t, _all_finite)


_divisor_cache = {}  # as _finite_cache, for finite_nonzero
_zeros_cache = {}    # as _finite_cache, for all_zeros


def finite_nonzero(t):
    """False if t holds NaN, inf or 0: a structured numerator's zeros divided by t stay
    zeros (0 / 0 and 0 / nan are NaN in the dense computation)."""
    return _checked(_divisor_cache, t, _all_finite_nonzero)


def all_zeros(t):
    """True if every element of t is zero (a loop-invariant piece joined to a structured
    value adds no nonzero)."""
    return _checked(_zeros_cache, t, _no_nonzero)


def _checked(cache, t, test):
    """test(t's value), remembered per tensor id and value array (_finite_cache)."""
    v = t._value
    value_read(t, "internal", test)  # vj.function re-checks it at every replay
    known = cache.get(t._tid)
    if known is None or known[0]() is not v:
        known = _remember(cache, t, test(v))
    return known[1]


def _remember(cache, t, ok):
    if len(cache) > 256:
        cache.clear()
    known = cache[t._tid] = (weakref.ref(t._value), ok)
    return known


def _all_finite_nonzero(v):
    return (v.dtype.kind not in "fc" or _all_finite(v)) and np.count_nonzero(v) == v.size


def _no_nonzero(v):
    return not np.any(v)


def note_finite_product(matrix, vector, product):
    """Record that `matrix` holds no NaN/inf when vector and matrix @ vector are finite: a
    NaN or inf entry makes its row's sum NaN or inf whatever the vector holds (inf * 0 is
    NaN), so a finite product of a finite vector proves it. For a large matrix this saves
    the check's pass over it (MatVec's gradient knows its forward's output)."""
    if matrix.size >= 65536 and vector.size and _all_finite(vector._value) and \
            _all_finite(product._value):
        _remember(_finite_cache, matrix, True)


def note_finite_matvec(matrix, vector, product):
    """As note_finite_product, for forward mode's primal matrix @ vector (MatVec's
    note_primal), when the product and the vector are much smaller than the matrix and
    the vector has no zero (a BLAS may skip the column of a zero, and 0 * inf would not
    show): jacfwd's stacked_forward then reads A's columns without its own pass over A
    (a caller's array has no cached check: each call sees a new Tensor)."""
    v = vector._value
    if matrix.size >= 4 * (v.size + product.size) and v.size and v.all() and \
            _all_finite(v) and _all_finite(product._value):
        _remember(_finite_cache, matrix, True)


def _all_finite(v):
    # NaN/inf anywhere reaches a sum or a product with ones (a huge finite value
    # overflowing only makes us take the dense path: slower, still exact). One reduction
    # instead of a boolean array: 2x faster for small v, a GEMV 2.5x faster for large v
    if v.ndim == 0 or v.dtype.kind == "c":
        return bool(np.isfinite(v).all())
    if v.ndim < 2 or v.size < 65536:
        return bool(np.isfinite(np.add.reduce(v, axis=None)))
    flat = v.reshape(-1, v.shape[-1])
    return bool(np.isfinite(flat @ np.ones(flat.shape[1], flat.dtype)).all())


def same_positions(a, b):
    return a.S == b.S and a.lead == b.lead and np.array_equal(a.pos, b.pos)


def unravel(x):
    """Per-iteration multi-index of the nonzero in S[lead:]: a tuple of (iters,) arrays."""
    trailing = x.S[x.lead:]
    return np.unravel_index(x.pos, trailing) if trailing else ()


# -- family rules, referenced from the op blocks (`structured = structured_rules.X`) ------
def passthrough(op, cx, x, **attrs):
    """Identity-like ops (Identity, Reshape to a same-size shape): the structure carries."""
    if not is_onehot(x, cx.loop):
        return NotImplemented
    if "shape" not in attrs:
        return x.with_()
    if attrs["shape"][:x.lead] != x.S[:x.lead]:
        return NotImplemented  # the leading (dense) axes must stay as they are
    return x.with_(shape=attrs["shape"])


def map_d(fn):
    """Ops that act on the nonzero alone (Neg, Cast): apply `fn` to d."""
    def rule(op, cx, x, **attrs):
        if not is_onehot(x, cx.loop):
            return NotImplemented
        return x.with_(d=fn(x.d, **attrs))
    return rule


def add_like(op, cx, x, y):
    """x +/- y with both one-hot at the same places: combine the nonzeros. A one-hot
    added to a dense stacked value of the same shape: one scatter-add pass (AddV2 only)."""
    loop = cx.loop
    sx, sy = is_onehot(x, loop), is_onehot(y, loop)
    if sx and sy:
        return x.with_(d=apply(op, x.d, y.d)) if same_positions(x, y) else NotImplemented
    a, dense, dense_stacked = (x, y, cx.stacked[1]) if sx else (y, x, cx.stacked[0])
    if op.name != "AddV2" or not dense_stacked or dense.shape[1:] != a.S or a.lead:
        return NotImplemented
    n = cx.iters
    out = apply(lib.ScatterRowsAdd, lib.reshape(dense, (n, a.size_, 1)), lib.reshape(a.d, (n, 1)),
                pos=a.pos)
    return lib.reshape(out, (n,) + a.S)


def values_at(v, stacked, x, n):
    """The entries of v (broadcast to x's shape) at x's nonzeros: shaped like x.d.
    Primitives applied directly, as in _columns_at."""
    if x.lead:
        return _columns_at(v, stacked, x, n)
    if not stacked:
        if v.shape == ():
            return v
        table = v if v.shape == x.S else apply(lib.BroadcastTo, v, shape=x.S)
        return apply(lib.GatherV2, _reshape(table, (x.size_,)), Tensor(x.pos), axis=0,
                     batch_dims=0)
    dense = apply(lib.BroadcastTo, v, shape=(n,) + x.S) if v.shape[1:] != x.S else v
    rows = apply(lib.GatherRows, _reshape(dense, (n, x.size_, 1)), pos=x.pos)  # (n, 1)
    return _reshape(rows, (n,))


def _columns_at(v, stacked, x, n):
    """values_at with leading axes: per iteration, v's column pos[k] (n, *S[:lead]).
    Primitives applied directly (the shapes are valid by construction): this runs once
    per backward op of a batch Jacobian, where the op's validation would dominate."""
    if v.shape == ():
        return v
    lead_shape = x.S[:x.lead]
    if not stacked:
        table = v if v.shape == x.S else apply(lib.BroadcastTo, v, shape=x.S)
        table = _reshape(table, (-1, x.size_))                                 # (L, M)
        cols = apply(lib.GatherV2, apply(lib.Transpose, table, perm=(1, 0)), Tensor(x.pos),
                     axis=0, batch_dims=0)                                     # (n, L)
        return _reshape(cols, (n,) + lead_shape)
    dense = apply(lib.BroadcastTo, v, shape=(n,) + x.S) if v.shape[1:] != x.S else v
    table = apply(lib.Transpose, _reshape(dense, (n, -1, x.size_)), perm=(0, 2, 1))  # (n, M, L)
    return _reshape(apply(lib.GatherRows, table, pos=x.pos), (n,) + lead_shape)


def _reshape(t, shape):
    """Reshape primitive for shapes known to fit (-1 resolved here), skipped if equal."""
    if -1 in shape:
        known = math.prod(d for d in shape if d != -1)
        shape = tuple(t.size // known if d == -1 else d for d in shape)
    return t if t.shape == shape else apply(lib.Reshape, t, shape=shape)


@kinds(OneHotStacked, OuterStacked)
def scale(op, cx, x, y):
    """x * y with one operand one-hot: still one-hot, its nonzero scaled (a diagonal).
    An outer product times a loop-invariant factor: one fused pass (OuterRowsScaled)."""
    loop = cx.loop
    if type(x) is OuterStacked or type(y) is OuterStacked:
        return _scale_outer(cx, x, y)
    sx, sy = is_onehot(x, loop), is_onehot(y, loop)
    if sx and sy:
        return x.with_(d=x.d * y.d) if same_positions(x, y) else NotImplemented
    a, v, v_stacked = (x, y, cx.stacked[1]) if sx else (y, x, cx.stacked[0])
    if not finite(v):
        return NotImplemented
    v_shape = v.shape[1:] if v_stacked else v.shape
    if v_shape != a.S and v_shape != ():
        try:
            if np.broadcast_shapes(v_shape, a.S) != a.S:
                return NotImplemented  # v would grow the shape: not one nonzero any more
        except ValueError:
            return NotImplemented
    return a.with_(d=a.d * values_at(v, v_stacked, a, cx.iters))


def _scale_outer(cx, x, y):
    o, v, v_stacked = (x, y, cx.stacked[1]) if type(x) is OuterStacked else (y, x,
                                                                             cx.stacked[0])
    if is_structured(v, cx.loop):
        return NotImplemented
    if v_stacked:
        if v.shape[1:] != o.shape:
            return NotImplemented
    elif v.shape != o.shape:
        try:
            if np.broadcast_shapes(v.shape, o.shape) != o.shape:
                return NotImplemented
        except ValueError:
            return NotImplemented
    return apply(lib.OuterRowsScaled, o.d, o.r, v)


def scale_by(factor_fn):
    """Ops computing g * factor(other inputs) (ReluGrad): scale a one-hot g's nonzero, or
    write an outer-product g times the factor in one pass."""
    @kinds(OneHotStacked, OuterStacked)
    def rule(op, cx, g, *rest, **attrs):
        loop = cx.loop
        if any(is_structured(r, loop) for r in rest):
            return NotImplemented
        if type(g) is OuterStacked:
            return _scale_outer_by(cx, g, factor_fn(*rest, **attrs))
        if not is_onehot(g, loop):
            return NotImplemented
        factor = factor_fn(*rest, **attrs)
        if not finite(factor):
            return NotImplemented
        stacked = any(cx.stacked[1:])
        shape = factor.shape[1:] if stacked else factor.shape
        if shape != g.S:
            return NotImplemented
        return g.with_(d=g.d * values_at(factor, stacked, g, cx.iters))
    return rule


def _scale_outer_by(cx, g, factor):
    """g * factor for a loop-invariant factor of g's shape, in one pass. Such ops may
    compute where(mask, g, 0) rather than g * mask; the two agree when g is finite."""
    if any(cx.stacked[1:]) or factor.shape != g.shape or not (
            finite(factor) and finite(g.d) and finite(g.r)):
        return NotImplemented
    return apply(lib.OuterRowsScaled, g.d, g.r, factor)
