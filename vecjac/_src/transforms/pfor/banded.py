"""Banded structured loop values: one-hot rows moved by layout ops, and their sums.

A Jacobian's seed e_k sliced (u[1:]), joined with zeros (concat([z, u[:-1]])), padded
(the gradient of a slice) or split (the gradient of a concat) is still one nonzero per
iteration, at a shifted position; a sum of shifted one-hots (the stencil u[i-1] - 2 u[i]
+ u[i+1]) has a few nonzeros per iteration, at fixed offsets from one base position. A
BandStacked holds iteration k as

    value_k[pos[k] + off[j]] = d[k, j]     (flat positions in the per-iteration shape S)

with zeros elsewhere and positions outside [0, size(S)) dropped: d a Tensor (iters, K)
(so tapes outside the loop differentiate through it), pos constant base positions (a
one-hot's), off K distinct increasing ints. Entries outside [0, size) mean nothing: d
may hold anything there, and layout rules that move such an entry into range zero it.

The rules keep the dense arithmetic at every position, bit for bit: x +/- y applies the
op to both operands' entries at every offset of either (0 where one has none, as the
dense value holds); x * v and x / v scale d by v's values at the entries, when v is
finite (and nonzero, for /), so that the zeros in between stay zeros (0 * inf is NaN);
a * b + c * d (MulAdd, the product rule) likewise. Layout rules act on the leading
axis, a contiguous range of flat positions: slices, concat with loop-invariant zeros,
split (the gradient of concat), the gradient of a slice, and padding with zeros. The
elementwise rules wrap structured.py's one-hot family rules, so an op block names one
rule for both kinds. Every other op sees the dense value (ScatterBand: zeros and one
scatter); a chunked loop writes a banded output straight into its result (write_rows).
"""
import math

import numpy as np

from vecjac._src.core.dispatch import apply
from vecjac._src.core.registry import lib
from vecjac._src.core.tensor import Tensor, _next_tid
from vecjac._src.transforms.pfor import structured
from vecjac._src.transforms.pfor.stacked import StackedTensor
from vecjac._src.transforms.pfor.structured import (LazyStacked, OneHotStacked, OuterStacked,
                                                    all_zeros, finite, finite_nonzero,
                                                    is_structured, kinds, values_at)


def band_entries(pos, off, size):
    """The entries of a band inside [0, size): (rows a, columns j, positions) as index
    arrays, for row a's entries at positions pos[a] + off[j]."""
    cols = np.asarray(pos)[:, None] + np.asarray(off, dtype=np.intp)[None, :]
    rows, j = np.nonzero((cols >= 0) & (cols < size))
    return rows, j, cols[rows, j]


class BandStacked(LazyStacked):
    """Loop-variant value whose iteration k holds d[k, j] at flat position pos[k] + off[j]
    of the per-iteration shape S (positions outside it dropped), zeros elsewhere."""

    __slots__ = ("d", "pos", "off", "S")

    def __init__(self, d, pos, off, shape, loop):
        # no call to StackedTensor.__init__: the dense value is built lazily
        self.d = d                  # Tensor (iters, K)
        self.pos = pos              # (iters,) int base positions (constants)
        self.off = off              # tuple of K distinct increasing ints
        self.S = tuple(shape)
        self._pfor = loop
        self._tid = _next_tid()
        StackedTensor._plain.__set__(self, None)

    @property
    def shape(self):
        return self.S

    @property
    def dtype(self):
        return self.d.dtype

    @property
    def size_(self):
        return int(math.prod(self.S))

    @property
    def held_bytes(self):
        return self.d._value.nbytes + self.pos.nbytes

    def with_(self, d=None, off=None, shape=None):
        """A new banded value on the same loop (new id): d, off or shape replaced."""
        return BandStacked(self.d if d is None else d, self.pos,
                           self.off if off is None else off,
                           self.S if shape is None else shape, self._pfor)

    def _materialize(self):
        rows = apply(lib.ScatterBand, self.d, pos=self.pos, off=self.off, size=self.size_)
        return _reshape(rows, (len(self.pos),) + self.S)

    def write_rows(self, out, zeroed):
        if not out.flags.c_contiguous:
            return LazyStacked.write_rows(self, out, zeroed)
        flat = out.reshape(len(self.pos), -1)
        if not zeroed:
            flat[...] = 0
        rows, j, cols = band_entries(self.pos, self.off, flat.shape[1])
        flat[rows, cols] = self.d._value[rows, j]
        return None


def as_band(x, loop):
    """x as a BandStacked of this loop (a one-hot without leading axes: one offset, 0), or
    None."""
    if type(x) is BandStacked and x._pfor is loop:
        return x
    if type(x) is OneHotStacked and x._pfor is loop and not x.lead:
        n = len(x.pos)
        return BandStacked(_reshape(x.d, (n, 1)), x.pos, (0,), x.S, loop)
    return None


def _reshape(t, shape):
    return t if t.shape == shape else apply(lib.Reshape, t, shape=shape)


def _same_base(a, b):
    return a.pos is b.pos or np.array_equal(a.pos, b.pos)


def _spread(d, offs, to):
    """d's columns (at offsets `offs`) placed at the offsets `to` (a superset), zero
    columns where d has none."""
    if offs == to:
        return d
    k = len(offs)
    where = {o: j for j, o in enumerate(offs)}
    idx = np.array([where.get(o, k) for o in to], dtype=np.intp)
    zero = Tensor(np.zeros((d.shape[0], 1), d.dtype))
    padded = apply(lib.ConcatV2, d, zero, axis=1)
    return apply(lib.GatherV2, padded, Tensor(idx), axis=1, batch_dims=0)


def _leading_range(key, shape):
    """(start, stop) when `key` (a getitem key) takes a contiguous range of the leading
    axis and all of the others; else None."""
    if type(key) is not tuple or not key or not shape or type(key[0]) is not slice:
        return None
    first = key[0]
    if not all(v is None or type(v) is int for v in (first.start, first.stop, first.step)):
        return None
    if first.step not in (None, 1):
        return None
    rest = key[1:]
    for k in rest:
        if k is not Ellipsis and not (type(k) is slice and k == slice(None)):
            return None
    dots = sum(1 for k in rest if k is Ellipsis)
    if dots > 1 or len(rest) - dots >= len(shape):
        return None
    start, stop, _ = first.indices(shape[0])
    return start, max(start, stop)


def _moved(b, shift, size):
    """b's entries moved `shift` flat positions into a range of `size`; the entries outside
    b's own range that land inside the new one are zeroed (their d means nothing)."""
    cols = b.pos[:, None] + np.asarray(b.off, dtype=np.intp)[None, :]
    inside = (cols >= 0) & (cols < b.size_)
    moved = cols + shift
    stray = ~inside & (moved >= 0) & (moved < size)
    d = b.d
    if stray.any():
        d = apply(lib.Select, Tensor(inside), d, Tensor(np.zeros((), d.dtype)))
    return d, tuple(o + shift for o in b.off), inside


# -- family rules, wrapping structured.py's (an op block names one rule for both kinds) ---
@kinds(OneHotStacked, BandStacked)
def add_like(op, cx, x, y):
    """x +/- y: one-hots at the same places stay one-hot (structured.add_like); one-hot or
    banded values on the same base positions give a band over the offsets of both."""
    loop = cx.loop
    if type(x) is not BandStacked and type(y) is not BandStacked:
        out = structured.add_like(op, cx, x, y)
        if out is not NotImplemented:
            return out
    bx, by = as_band(x, loop), as_band(y, loop)
    if bx is None or by is None or bx.S != by.S or not _same_base(bx, by):
        return NotImplemented
    if bx.off == by.off:
        return bx.with_(d=apply(op, bx.d, by.d))
    offs = tuple(sorted(set(bx.off) | set(by.off)))
    d = apply(op, _spread(bx.d, bx.off, offs), _spread(by.d, by.off, offs))
    return BandStacked(d, bx.pos, offs, bx.S, loop)


def _band_values(v, stacked, b, n):
    """The entries of v (broadcast to b's shape; stacked or not) at b's entries: (n, K),
    or () / (n, 1) for a scalar. Entries outside the range read position 0 or size - 1."""
    shape = v.shape[1:] if stacked else v.shape
    if shape == ():
        return _reshape(v, (n, 1)) if stacked else v
    idx = Tensor(np.clip(b.pos[:, None] + np.asarray(b.off, dtype=np.intp)[None, :], 0,
                         b.size_ - 1))
    if not stacked:
        table = v if v.shape == b.S else apply(lib.BroadcastTo, v, shape=b.S)
        return apply(lib.GatherV2, _reshape(table, (b.size_,)), idx, axis=0, batch_dims=0)
    dense = v if shape == b.S else apply(lib.BroadcastTo, v, shape=(n,) + b.S)
    return apply(lib.GatherV2, _reshape(dense, (n, b.size_)), idx, axis=1, batch_dims=1)


def _fits(v_shape, S):
    """v broadcasts into S without growing it (the product has one entry per entry)."""
    if v_shape == S or v_shape == ():
        return True
    try:
        return np.broadcast_shapes(v_shape, S) == S
    except ValueError:
        return False


def _scaled(op, cx, a, v, v_stacked, check):
    """op(a, v) for a banded a and a plain (stacked or invariant) v: d scaled entry-wise."""
    if is_structured(v, cx.loop) or not a.size_ or not check(v) or \
            not _fits(v.shape[1:] if v_stacked else v.shape, a.S):
        return NotImplemented
    return a.with_(d=apply(op, a.d, _band_values(v, v_stacked, a, cx.iters)))


@kinds(OneHotStacked, OuterStacked, BandStacked)
def scale(op, cx, x, y):
    """x * y with one operand one-hot or banded (structured.scale for one-hots): d times
    the other operand's values at the entries. Two banded values with the same entries
    multiply their d."""
    loop = cx.loop
    if type(x) is not BandStacked and type(y) is not BandStacked:
        return structured.scale(op, cx, x, y)
    if is_structured(x, loop) and is_structured(y, loop):
        bx, by = as_band(x, loop), as_band(y, loop)
        if bx is None or by is None or bx.S != by.S or bx.off != by.off or \
                not _same_base(bx, by):
            return NotImplemented
        return bx.with_(d=apply(op, bx.d, by.d))
    if type(x) is BandStacked:
        return _scaled(op, cx, x, y, cx.stacked[1], finite)
    return _scaled(op, cx, y, x, cx.stacked[0], finite)


@kinds(OneHotStacked, BandStacked)
def mul_add(op, cx, a, b, c, d):
    """a * b + c * d (the product rule's tangent) with one structured factor in each
    product and a finite plain one: one-hots at the same places stay one-hot, bands on
    the same base positions give a band over the offsets of both; the op itself runs on
    the entries (zeros where one product has none), so the dense rounding is kept."""
    loop = cx.loop
    terms = []
    for x, y, sx, sy in ((a, b, cx.stacked[0], cx.stacked[1]),
                         (c, d, cx.stacked[2], cx.stacked[3])):
        x_structured, y_structured = is_structured(x, loop), is_structured(y, loop)
        if x_structured == y_structured:
            return NotImplemented
        s, v, v_stacked = (x, y, sy) if x_structured else (y, x, sx)
        if not finite(v) or not _fits(v.shape[1:] if v_stacked else v.shape, s.S):
            return NotImplemented
        terms.append((s, v, v_stacked))
    (s1, v1, st1), (s2, v2, st2) = terms
    n = cx.iters
    if type(s1) is OneHotStacked and type(s2) is OneHotStacked and \
            structured.same_positions(s1, s2):
        return s1.with_(d=apply(op, s1.d, values_at(v1, st1, s1, n), s2.d,
                                values_at(v2, st2, s2, n)))
    b1, b2 = as_band(s1, loop), as_band(s2, loop)
    if b1 is None or b2 is None or b1.S != b2.S or not _same_base(b1, b2) or not b1.size_:
        return NotImplemented
    offs = tuple(sorted(set(b1.off) | set(b2.off)))
    at = b1.with_(off=offs)  # where the union's entries read the factors
    out = apply(op, _spread(b1.d, b1.off, offs), _band_values(v1, st1, at, n),
                _spread(b2.d, b2.off, offs), _band_values(v2, st2, at, n))
    return BandStacked(out, b1.pos, offs, b1.S, loop)


@kinds(OneHotStacked, BandStacked)
def divide(op, cx, x, y):
    """x / y for a one-hot or banded x and a plain y that is finite and nonzero everywhere
    (so the zeros of x stay zeros): d divided by y's values at the entries."""
    loop = cx.loop
    if not is_structured(x, loop) or is_structured(y, loop):
        return NotImplemented
    if type(x) is BandStacked:
        return _scaled(op, cx, x, y, cx.stacked[1], finite_nonzero)
    y_shape = y.shape[1:] if cx.stacked[1] else y.shape
    if not finite_nonzero(y) or not _fits(y_shape, x.S):
        return NotImplemented
    return x.with_(d=apply(op, x.d, values_at(y, cx.stacked[1], x, cx.iters)))


def map_d(fn):
    """Ops acting on the nonzeros alone (Neg, Cast): fn applied to d, for both kinds."""
    one_hot = structured.map_d(fn)

    @kinds(OneHotStacked, BandStacked)
    def rule(op, cx, x, **attrs):
        if type(x) is BandStacked and x._pfor is cx.loop:
            return x.with_(d=fn(x.d, **attrs))
        return one_hot(op, cx, x, **attrs)
    return rule


@kinds(OneHotStacked, BandStacked)
def passthrough(op, cx, x, **attrs):
    """Identity, Reshape: a band's flat positions stay where they are."""
    if type(x) is BandStacked and x._pfor is cx.loop:
        return x.with_(shape=attrs.get("shape", x.S))
    return structured.passthrough(op, cx, x, **attrs)


# -- layout rules of the leading axis (StridedSlice, ConcatV2, SplitV, StridedSliceGrad,
#    PadV2) ------------------------------------------------------------------------------
@kinds(OneHotStacked, BandStacked)
def leading_slice(op, cx, x, key):
    """x[a:b] (and all of the other axes): the entries shift by a rows; those outside
    the new range drop out."""
    b = as_band(x, cx.loop)
    r = None if b is None else _leading_range(key, b.S)
    if r is None:
        return NotImplemented
    start, stop = r
    shift = start * math.prod(b.S[1:])
    return b.with_(off=tuple(o - shift for o in b.off), shape=(stop - start,) + b.S[1:])


@kinds(OneHotStacked, BandStacked)
def leading_concat(op, cx, *xs, axis):
    """concat along the leading axis of banded pieces on the same base positions and
    loop-invariant zeros: each piece's entries shift to its place."""
    loop = cx.loop
    if axis != 0 or any(x.dtype != xs[0].dtype for x in xs):
        return NotImplemented
    pieces, start, base = [], 0, None
    for x, s in zip(xs, cx.stacked):
        if is_structured(x, loop):
            b = as_band(x, loop)
            if b is None or (base is not None and not _same_base(base, b)):
                return NotImplemented
            if base is None:
                base = b
            pieces.append((b, start))
        elif s or not all_zeros(x):
            return NotImplemented
        start += int(math.prod(x.shape))
    S = (sum(x.shape[0] for x in xs),) + tuple(xs[0].shape[1:])
    moved = [_moved(b, c, start) for b, c in pieces]
    if len(moved) == 1:
        d, offs, _ = moved[0]
        return BandStacked(d, base.pos, offs, S, loop)
    offs = tuple(sorted(set().union(*[m[1] for m in moved])))
    d = Tensor(np.zeros((cx.iters, len(offs)), base.d.dtype))
    for piece_d, piece_offs, inside in moved:  # the pieces' ranges are disjoint
        place = {o: j for j, o in enumerate(offs)}
        mask = np.zeros((cx.iters, len(offs)), bool)
        mask[:, [place[o] for o in piece_offs]] = inside
        d = apply(lib.Select, Tensor(mask), _spread(piece_d, piece_offs, offs), d)
    return BandStacked(d, base.pos, offs, S, loop)


@kinds(OneHotStacked, BandStacked)
def leading_split(op, cx, x, bounds, axis):
    """split along the leading axis (concat's gradient): slices of the band."""
    b = as_band(x, cx.loop)
    if b is None or axis != 0:
        return NotImplemented
    edges = (0,) + tuple(bounds) + (b.S[0],)
    if any(not 0 <= lo <= hi <= b.S[0] for lo, hi in zip(edges[:-1], edges[1:])):
        return NotImplemented
    inner = math.prod(b.S[1:])
    return tuple(b.with_(off=tuple(o - lo * inner for o in b.off),
                         shape=(hi - lo,) + b.S[1:])
                 for lo, hi in zip(edges[:-1], edges[1:]))


@kinds(OneHotStacked, BandStacked)
def leading_slice_grad(op, cx, g, shape, key):
    """zeros(shape) with g at [a:b] (a slice's gradient): the entries shift by a rows."""
    b = as_band(g, cx.loop)
    r = None if b is None else _leading_range(key, shape)
    if r is None or b.S != (r[1] - r[0],) + tuple(shape[1:]):
        return NotImplemented
    d, offs, _ = _moved(b, r[0] * math.prod(shape[1:]), int(math.prod(shape)))
    return BandStacked(d, b.pos, offs, tuple(shape), cx.loop)


@kinds(OneHotStacked, BandStacked)
def leading_pad(op, cx, x, constant_values, paddings):
    """pad with zeros along the leading axis only: the entries shift by the rows before."""
    loop = cx.loop
    b = as_band(x, loop)
    if b is None or cx.stacked[1] or not all_zeros(constant_values) or \
            any(tuple(p) != (0, 0) for p in paddings[1:]):
        return NotImplemented
    before, after = paddings[0]
    inner = math.prod(b.S[1:])
    S = (b.S[0] + before + after,) + b.S[1:]
    d, offs, _ = _moved(b, before * inner, int(math.prod(S)))
    return BandStacked(d, b.pos, offs, S, loop)
