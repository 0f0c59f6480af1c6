"""Matrix products: matmul (and the @ operator), tensordot, einsum.

MatMul is the rank >= 2 primitive with NumPy batch broadcasting; matmul() maps rank-1
operands onto it as NumPy does (a vector is a row on the left, a column on the right).
Its converter turns "stacked @ loop-invariant matrix" into one large BLAS call.

Einsum is the general primitive: einsum() normalizes an equation to explicit form (no
'...', an explicit output, letters only, no size-1 broadcasting) before the op runs, so
the op's attrs are just `inputs` (one subscript string per operand) and `output`. Its
gradient is again an Einsum, and its converter gives a stacked operand a fresh letter for
the loop axis. tensordot() is an einsum.
"""
import math
import functools
import string

import numpy as np

from .. import _pattern_rules as patterns
from ..vectorize import structured as structured_rules
from .._jvp_rules import multilinear
from .._registry import Op, lib, register
from .._dispatch import apply, to_input
from .._samples import Arg, Sample
from .._shapes import as_bool, broadcast_shape
from .._shapes import normalize_axis
from .._tensor import Tensor

__all__ = ["matmul", "matrix_transpose", "tensordot", "einsum"]


def matrix_transpose(x, name=None):
    """Swap the last two axes."""
    x = to_input(x, fn="matrix_transpose", arg="x")
    if x.ndim < 2:
        raise ValueError(f"matrix_transpose: x must have rank >= 2, got shape {x.shape}")
    perm = tuple(range(x.ndim - 2)) + (x.ndim - 1, x.ndim - 2)
    return lib.transpose(x, perm)


def _pad_batch(x, rank, stacked):
    """Insert size-1 batch axes so a stacked operand has `rank` per-iteration axes."""
    own = x.ndim - 1 if stacked else x.ndim
    if own >= rank or not stacked:
        return x
    return lib.reshape(x, (x.shape[0],) + (1,) * (rank - own) + x.shape[1:])


_BATCH = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _batch(x, core, rank):
    """Subscripts of x's batch axes, right-aligned in a batch of `rank` axes."""
    return _BATCH[rank - (x.ndim - core):rank]


def _matmul_subscripts(inputs, attrs):
    a, b = inputs  # (..., m, k) @ (..., k, p): the einsum of MatMul's sparsity rule
    rank = max(a.ndim, b.ndim) - 2
    return (_batch(a, 2, rank) + "mk", _batch(b, 2, rank) + "kp"), _BATCH[:rank] + "mp"


def _matvec_subscripts(inputs, attrs):
    a, b = inputs  # (..., m, n) @ (..., n)
    rank = max(a.ndim - 2, b.ndim - 1)
    return (_batch(a, 2, rank) + "mn", _batch(b, 1, rank) + "n"), _BATCH[:rank] + "m"


def _einsum_subscripts(inputs, attrs):
    return attrs["inputs"], attrs["output"]


@register
class MatMul(Op):
    name = "MatMul"
    pattern = patterns.contraction(_matmul_subscripts)
    jvp = multilinear
    samples = (Sample("matmul", Arg.float("m", "k"), Arg.float("k", "n")),
               Sample("matmul", Arg.float(2, 1, "m", 3), Arg.float(2, 3, 2)),  # batch broadcast
               Sample("matmul", Arg.float(3, "m"), Arg.float(3, 2), transpose_a=True),
               Sample("matmul", Arg.float(2, 3), Arg.float("n", 3), transpose_b=True))
    samples += (Sample("matmul", Arg.float("m", "k"), Arg.float("k", "n"), dim_range=(0, 3)),
                Sample("matmul", Arg.float("n"), Arg.float("n")))  # vector @ vector
    structured = structured_rules.matmul

    def forward(self, a, b):
        return np.matmul(a, b)

    def gradient(self, e, g):
        a, b = e.inputs

        def t(x):  # the operands are valid by construction: primitives, no re-validation
            return apply(lib.Transpose, x, perm=tuple(range(x.ndim - 2)) + (x.ndim - 1, x.ndim - 2))
        ga = lib.unbroadcast(apply(MatMul, g, t(b)), a.shape) if e.needs[0] else None
        gb = lib.unbroadcast(apply(MatMul, t(a), g), b.shape) if e.needs[1] else None
        return ga, gb

    def converter(self, cx, a, b):
        sa, sb = cx.stacked
        n = cx.iters
        # small operands: NumPy's own broadcast over the loop axis (the generic case at
        # the end) costs about what one GEMM saves, and the reshapes cost dispatches
        big = a.size + b.size > 4096
        if big and sa and not sb and b.ndim == 2:
            # (n, ..., i, j) @ (j, k): one GEMM over all rows of all iterations
            # the row count spelled out: -1 is ambiguous when j == 0
            rows = lib.reshape(a, (int(math.prod(a.shape[:-1])), a.shape[-1]))
            return lib.reshape(apply(self, rows, b), a.shape[:-1] + (b.shape[-1],))
        if big and sb and not sa and a.ndim == 2 and b.ndim == 3:
            # (i, j) @ (n, j, k): (i, j) @ (j, n*k), one GEMM
            j, k = b.shape[1], b.shape[2]
            cols = lib.reshape(lib.transpose(b, (1, 0, 2)), (j, n * k))
            out = lib.reshape(apply(self, a, cols), (a.shape[0], n, k))
            return lib.transpose(out, (1, 0, 2))
        rank = max(a.ndim - sa, b.ndim - sb)
        return apply(self, _pad_batch(a, rank, sa), _pad_batch(b, rank, sb))


@register
class MatVec(Op):
    """Matrix times vector, batched: (..., m, n) and (..., n) -> (..., m) (batch axes
    broadcast). Its own primitive because a vector operand is the common case of
    forward mode and of pfor (a loop of vectors is a matrix): with a plain matrix, any
    stack of vectors is one GEMM (vectors @ a.T), with no reshape or transpose ops."""
    name = "MatVec"
    pattern = patterns.contraction(_matvec_subscripts)
    jvp = multilinear
    structured = structured_rules.matvec
    samples = (Sample("linalg.matvec", Arg.float("m", "n"), Arg.float("n")),
               Sample("linalg.matvec", Arg.float(2, "m", 3), Arg.float(3)),
               Sample("linalg.matvec", Arg.float(3, "n"), Arg.float(2, "n")),
               Sample("matmul", Arg.float(2, "m", 3), Arg.float(3)),
               Sample("matmul", Arg.float("n"), Arg.float("n", 3)))  # vector @ matrix

    def forward(self, a, b):
        if a.ndim == 2:
            return b @ a.T  # any stack of vectors against one matrix: one GEMM
        if b.ndim == 1:
            return a @ b
        return np.matmul(a, b[..., None])[..., 0]

    def gradient(self, e, g):
        a, b = e.inputs
        ga = gb = None
        if e.needs[0]:  # outer products g b^T
            ga = lib.unbroadcast(lib.multiply(lib.expand_dims(g, -1), lib.expand_dims(b, -2)),
                                 a.shape)
        if e.needs[1]:  # a^T g
            at = apply(lib.Transpose, a, perm=tuple(range(a.ndim - 2)) + (a.ndim - 1, a.ndim - 2))
            gb = lib.unbroadcast(apply(MatVec, at, g), b.shape)
        return ga, gb

    def converter(self, cx, a, b):
        sa, sb = cx.stacked
        batch = max(a.ndim - sa - 2, b.ndim - sb - 1)  # per-iteration batch rank
        return apply(self, _pad_batch(a, batch + 2, sa), _pad_batch(b, batch + 1, sb))


def matmul(a, b, transpose_a=False, transpose_b=False, adjoint_a=False, adjoint_b=False,
           a_is_sparse=False, b_is_sparse=False, output_type=None, name=None):
    """Matrix product with batch broadcasting: (..., i, j) @ (..., j, k) -> (..., i, k).

    Rank-1 operands follow NumPy (vector @ matrix, matrix @ vector, vector @ vector).
    adjoint_* is transpose_* for real inputs; the sparsity hints are ignored.
    """
    a = to_input(a, (a, b), "matmul", "a")
    b = to_input(b, (a, b), "matmul", "b")
    if (transpose_a is False and transpose_b is False and adjoint_a is False
            and adjoint_b is False and a.ndim == 2 and b.ndim == 2
            and a.shape[1] == b.shape[0] and a.dtype.kind in "biufc"
            and b.dtype.kind in "biufc"):
        return apply(MatMul, a, b)  # plain matrix @ matrix: nothing else to check
    flags = {}
    for arg, v in (("transpose_a", transpose_a), ("transpose_b", transpose_b),
                   ("adjoint_a", adjoint_a), ("adjoint_b", adjoint_b)):
        flags[arg] = as_bool(v, "matmul", arg)
    for nm, x in (("a", a), ("b", b)):
        if x.ndim == 0:
            raise ValueError(f"matmul: {nm} must have rank >= 1, got a scalar")
        if x.dtype.kind not in "biufc":
            raise TypeError(f"matmul: {nm} must be numeric, got dtype {x.dtype}")
        if flags[f"transpose_{nm}"] and flags[f"adjoint_{nm}"]:
            raise ValueError(f"matmul: only one of transpose_{nm} and adjoint_{nm} can be "
                             "True")
        if (flags[f"transpose_{nm}"] or flags[f"adjoint_{nm}"]) and x.ndim < 2:
            raise ValueError(f"matmul: cannot transpose {nm} of shape {x.shape} (rank "
                             f"{x.ndim} < 2)")
    # shapes as multiplied, checked before any op runs (a failure records nothing)
    ta = flags["transpose_a"] or flags["adjoint_a"]
    tb = flags["transpose_b"] or flags["adjoint_b"]
    sa = a.shape[:-2] + a.shape[:-3:-1] if ta else a.shape
    sb = b.shape[:-2] + b.shape[:-3:-1] if tb else b.shape
    va, vb = len(sa) == 1, len(sb) == 1
    inner_a, inner_b = sa[-1], (sb[0] if vb else sb[-2])
    if inner_a != inner_b:
        raise ValueError(f"matmul: inner dimensions differ: a has shape {sa} and b has shape "
                         f"{sb}{' (as transposed)' if ta or tb else ''} "
                         f"({inner_a} != {inner_b})")
    broadcast_shape("matmul", sa[:-2], sb[:-2], names=("a batch", "b batch"))
    if vb and not va and not (ta or tb):  # matrix @ vector
        return apply(MatVec, a, b)
    if va and not vb and not (ta or tb):  # vector @ matrix = matrix^T @ vector
        perm = tuple(range(b.ndim - 2)) + (b.ndim - 1, b.ndim - 2)
        return apply(MatVec, apply(lib.Transpose, b, perm=perm), a)
    if flags["adjoint_a"] and a.dtype.kind == "c":
        a = _conj(a, "adjoint_a")
    if flags["adjoint_b"] and b.dtype.kind == "c":
        b = _conj(b, "adjoint_b")
    if ta:
        a = matrix_transpose(a)
    if tb:
        b = matrix_transpose(b)
    if va:
        a = lib.expand_dims(a, 0)
    if vb:
        b = lib.expand_dims(b, -1)
    out = apply(MatMul, a, b)
    if va:
        out = lib.squeeze(out, -2)
    if vb:
        out = lib.squeeze(out, -1)
    return out


def _conj(x, arg):
    raise TypeError(f"matmul: {arg}=True on a complex tensor is not supported yet (no "
                    "conj op); conjugate the input yourself")


# -- einsum ------------------------------------------------------------------------------
_LETTERS = string.ascii_letters


def _fresh_letters(used):
    return (c for c in _LETTERS if c not in used)


def _sum_lonely(x, s, other, out):
    """Sum out the letters of operand x found neither in the other operand nor in out."""
    lonely = tuple(i for i, c in enumerate(s) if c not in other and c not in out)
    if not lonely:
        return x, s
    return x.sum(axis=lonely), "".join(c for i, c in enumerate(s) if i not in lonely)


def _contract_pair(a, sa, b, sb, out):
    """einsum of two operands without repeated letters as one (batched) matmul."""
    a, sa = _sum_lonely(a, sa, sb, out)
    b, sb = _sum_lonely(b, sb, sa, out)
    batch = [c for c in sa if c in sb and c in out]
    contracted = [c for c in sa if c in sb and c not in out]
    free_a = [c for c in sa if c not in sb]
    free_b = [c for c in sb if c not in sa]
    size = dict(zip(sa, a.shape))
    size.update(zip(sb, b.shape))

    def prod(cs):
        return int(math.prod([size[c] for c in cs]))
    a2 = a.transpose([sa.index(c) for c in batch + free_a + contracted]).reshape(
        prod(batch), prod(free_a), prod(contracted))
    b2 = b.transpose([sb.index(c) for c in batch + contracted + free_b]).reshape(
        prod(batch), prod(contracted), prod(free_b))
    res = np.matmul(a2, b2).reshape([size[c] for c in batch + free_a + free_b])
    order = batch + free_a + free_b
    return res.transpose([order.index(c) for c in out])


def _einsum_np(arrays, inputs, output):
    if len(arrays) == 2 and all(len(set(s)) == len(s) for s in inputs):
        sizes = {}
        for s, x in zip(inputs, arrays):
            sizes.update(zip(s, x.shape))
        if int(math.prod(list(sizes.values()))) >= 4096:  # BLAS pays off
            return _contract_pair(arrays[0], inputs[0], arrays[1], inputs[1], output)
    spec = ",".join(inputs) + "->" + output
    return np.einsum(spec, *arrays, optimize="greedy" if len(arrays) > 2 else False)


@register
class Einsum(Op):
    name = "Einsum"
    pattern = patterns.contraction(_einsum_subscripts)
    jvp = multilinear
    samples = (Sample("einsum", "ij,jk->ik", Arg.float("m", 3), Arg.float(3, "n")),
               Sample("einsum", "bii->bi", Arg.float(2, "n", "n")),  # a diagonal
               Sample("einsum", "...ij,j->...i", Arg.float(2, "m", 3), Arg.float(3)),
               Sample("einsum", "ij,jk,k->", Arg.float(2, "n"), Arg.float("n", 3), Arg.float(3)),
               # 16^3 multiply-adds: the GEMM path of the forward
               Sample("einsum", "bij,bjk->bik", Arg.float(1, 16, 16), Arg.float(1, 16, 16)),
               Sample("tensordot", Arg.float(2, 3, "n"), Arg.float(3, "n", 2), axes=2),
               # '...' broadcasting a size-1 axis; a diagonal summed out
               Sample("einsum", "...ij,...jk->...ik", Arg.float(2, 1, "m", 3),
                      Arg.float("n", 3, 2)),
               Sample("einsum", "iij,k->j", Arg.float("n", "n", 2), Arg.float(3)))
    samples += (Sample("einsum", "ij,jk->ki", Arg.float("m", "k"), Arg.float("k", 2),
                       dim_range=(0, 3)),)

    def forward(self, *arrays, inputs, output):
        return _einsum_np(arrays, inputs, output)

    def gradient(self, e, g):
        inputs, output = e.attrs["inputs"], e.attrs["output"]
        return tuple(_einsum_grad(k, e.inputs, inputs, output, g) if e.needs[k] else None
                     for k in range(len(e.inputs)))

    def converter(self, cx, *xs, inputs, output):
        fresh = next(_fresh_letters(set("".join(inputs) + output)), None)
        if fresh is None:
            return NotImplemented  # all 52 letters taken
        inputs = tuple(fresh + s if st else s for s, st in zip(inputs, cx.stacked))
        return apply(self, *xs, inputs=inputs, output=fresh + output)


def _einsum_grad(k, xs, inputs, output, g):
    """Cotangent of operand k: einsum of g with the other operands, to inputs[k].

    A letter repeated in inputs[k] (a diagonal) is renamed and tied back by an identity
    matrix; a letter found nowhere else (summed out of operand k alone) gets a ones
    vector, so that the gradient is itself an Einsum (differentiable, vectorizable).
    """
    target = inputs[k]
    x = xs[k]
    fresh = _fresh_letters(set("".join(inputs) + output))
    operands = [g] + [xs[j] for j in range(len(xs)) if j != k]
    subs = [output] + [inputs[j] for j in range(len(xs)) if j != k]
    present = set("".join(subs))
    result, seen = [], set()
    for c, n in zip(target, x.shape):
        if c in seen:
            f = next(fresh)
            operands.append(Tensor(np.eye(n, dtype=g.dtype)))
            subs.append(c + f)
            result.append(f)
            continue
        seen.add(c)
        result.append(c)
        if c not in present:
            operands.append(Tensor(np.ones(n, dtype=g.dtype)))
            subs.append(c)
    return apply(Einsum, *operands, inputs=tuple(subs), output="".join(result))


def _parse_term(term, what):
    if term.count("...") > 1 or "." in term.replace("...", ""):
        raise ValueError(f"einsum: {what} '{term}' has a malformed ellipsis (use '...' "
                         "at most once)")
    for c in term.replace("...", ""):
        if c not in _LETTERS:
            raise ValueError(f"einsum: invalid character {c!r} in {what} '{term}' "
                             "(expected letters a-z, A-Z and '...')")
    return term.replace("...", ""), "..." in term


def _explicit_equation(equation, shapes):
    """(subscripts per operand, output, per-operand axes to squeeze) without '...'."""
    if not isinstance(equation, str):
        raise TypeError(f"einsum: equation must be a str, got {type(equation).__name__}")
    try:
        subs, out, squeeze = _parse_equation(equation, tuple(shapes))
    except ValueError as e:  # every message names the equation, the argument at fault
        msg = str(e)
        if "equation" not in msg:
            msg = msg.replace("einsum: ", f"einsum: equation {equation!r}: ", 1)
        raise ValueError(msg) from None
    return list(subs), out, squeeze


@functools.lru_cache(maxsize=512)  # parsing costs more than a small einsum itself
def _parse_equation(equation, shapes):
    eq = "".join(equation.split())
    if eq.count("->") > 1:
        raise ValueError(f"einsum: equation {equation!r} has more than one '->'")
    lhs, rhs = eq.split("->") if "->" in eq else (eq, None)
    terms = lhs.split(",")
    if len(terms) != len(shapes):
        raise ValueError(f"einsum: equation {equation!r} has {len(terms)} input "
                         f"subscripts but {len(shapes)} operands were given")
    parsed = [_parse_term(t, f"input {k} subscripts") for k, t in enumerate(terms)]
    ell_ranks = []
    for k, ((letters, ell), shape) in enumerate(zip(parsed, shapes)):
        if len(letters) > len(shape) or (not ell and len(letters) != len(shape)):
            raise ValueError(f"einsum: operand {k} has shape {shape} (rank {len(shape)}) "
                             f"but its subscripts '{terms[k]}' name {len(letters)} axes")
        ell_ranks.append(len(shape) - len(letters) if ell else 0)
    n_ell = max(ell_ranks)
    any_ell = any(ell for _, ell in parsed)
    fresh = _fresh_letters(set(eq))
    ell_letters = "".join(next(fresh, "") for _ in range(n_ell))
    if len(ell_letters) < n_ell:
        raise ValueError(f"einsum: equation {equation!r} needs more than 52 axis letters")
    subs = []
    for (letters, ell), r, term in zip(parsed, ell_ranks, terms):
        head, _, tail = term.partition("...") if ell else ("", "", letters)
        subs.append(head + ell_letters[n_ell - r:] + tail if ell else letters)
    if rhs is None:  # implicit output: broadcast axes, then letters seen once, sorted
        counts = {}
        for letters, _ in parsed:
            for c in letters:
                counts[c] = counts.get(c, 0) + 1
        out = (ell_letters if any_ell else "") + "".join(
            sorted(c for c, m in counts.items() if m == 1))
    else:
        letters, ell = _parse_term(rhs, "output subscripts")
        if ell and not any_ell:
            raise ValueError(f"einsum: output subscripts '{rhs}' use '...' but no input "
                             "does")
        out = rhs.replace("...", ell_letters)
        for c in letters:
            if letters.count(c) > 1:
                raise ValueError(f"einsum: output subscripts '{rhs}' repeat {c!r}")
            if not any(c in s for s in subs):
                raise ValueError(f"einsum: output subscript {c!r} does not appear in any "
                                 "input")
    return tuple(subs), out, tuple(_check_sizes(equation, subs, shapes, set(ell_letters)))


def _check_sizes(equation, subs, shapes, broadcastable):
    """Per operand, axes of size 1 to squeeze (broadcast '...' axes); raise on mismatch."""
    sizes = {}
    for k, (s, shape) in enumerate(zip(subs, shapes)):
        for c, n in zip(s, shape):
            m = sizes.get(c)
            if m is None or m == 1 and c in broadcastable:
                sizes[c] = n
            elif n != m and not (n == 1 and c in broadcastable):
                where = "'...' dimension" if c in broadcastable else f"subscript {c!r}"
                raise ValueError(f"einsum: {where} has size {m} in one operand and {n} "
                                 f"in operand {k} (shape {shape}) for equation "
                                 f"{equation!r}")
    return [tuple(i for i, (c, n) in enumerate(zip(s, shape)) if n == 1 and sizes[c] != 1)
            for s, shape in zip(subs, shapes)]


def _check_operands(xs, fn, names=None):
    names = names or [f"operand {k}" for k in range(len(xs))]
    for k, x in enumerate(xs):
        if x.dtype.kind not in "iufc":
            raise TypeError(f"{fn}: {names[k]} must be numeric, got dtype {x.dtype}")
        if x.dtype != xs[0].dtype:
            raise TypeError(f"{fn}: operands must have the same dtype, got {xs[0].dtype} "
                            f"({names[0]}) and {x.dtype} ({names[k]}); use vj.cast")


def einsum(equation, *inputs, **kwargs):
    """Einstein summation (TF's einsum): e.g. 'ij,jk->ik', 'bxby->bxy', '...ij,...jk->...ik'.

    Supports repeated letters in an input (diagonals), letters summed out of a single
    operand, '...' with broadcasting of its size-1 axes, and the implicit output (no '->':
    the '...' axes, then the letters appearing once, alphabetically). Output shape: the
    sizes of the output letters, in order.
    """
    unknown = set(kwargs) - {"name", "optimize"}
    if unknown:
        raise TypeError(f"einsum: unexpected keyword argument {sorted(unknown)[0]!r}")
    if len(inputs) == 1 and isinstance(inputs[0], (list, tuple)):
        inputs = tuple(inputs[0])
    if not inputs:
        raise ValueError("einsum: no operands given")
    xs = [to_input(x, inputs, "einsum", "inputs") for x in inputs]
    _check_operands(xs, "einsum")
    subs, out, squeeze = _explicit_equation(equation, [x.shape for x in xs])
    for k, axes in enumerate(squeeze):
        if axes:
            xs[k] = lib.reshape(xs[k], tuple(n for i, n in enumerate(xs[k].shape) if i not in axes))
            subs[k] = "".join(c for i, c in enumerate(subs[k]) if i not in axes)
    return apply(Einsum, *xs, inputs=tuple(subs), output=out)


def _tensordot_axes(axes, a, b):
    if isinstance(axes, (int, np.integer)) and not isinstance(axes, bool):
        n = int(axes)
        if not 0 <= n <= min(a.ndim, b.ndim):
            raise ValueError(f"tensordot: axes={n} must be in [0, {min(a.ndim, b.ndim)}] "
                             f"for shapes {a.shape} and {b.shape}")
        return list(range(a.ndim - n, a.ndim)), list(range(n))
    try:
        pair = list(axes)
    except TypeError:
        raise TypeError(f"tensordot: axes must be an int or a pair of axis lists, got "
                        f"{axes!r}") from None
    if len(pair) != 2:
        raise ValueError(f"tensordot: axes must be an int or a pair of axis lists, got "
                         f"{axes!r}")
    lists = []
    for nm, ax, x in (("a", pair[0], a), ("b", pair[1], b)):
        ax = np.asarray(ax).reshape(-1).tolist()
        ax = [normalize_axis(i, x.ndim, "tensordot", f"axes for {nm}") for i in ax]
        if len(set(ax)) != len(ax):
            raise ValueError(f"tensordot: axes for {nm} repeat an axis: {ax}")
        lists.append(ax)
    if len(lists[0]) != len(lists[1]):
        raise ValueError(f"tensordot: axes for a {lists[0]} and for b {lists[1]} have "
                         "different lengths")
    return lists


def tensordot(a, b, axes, name=None):
    """Sum of products over a's axes[0] and b's axes[1] (an int n: a's last n axes with b's
    first n). Output shape: a's other axes, then b's other axes, in order."""
    a = to_input(a, (a, b), "tensordot", "a")
    b = to_input(b, (a, b), "tensordot", "b")
    _check_operands([a, b], "tensordot", ["a", "b"])
    axes_a, axes_b = _tensordot_axes(axes, a, b)
    for i, j in zip(axes_a, axes_b):
        if a.shape[i] != b.shape[j]:
            raise ValueError(f"tensordot: axes: a axis {i} has size {a.shape[i]} but b axis "
                             f"{j} has size {b.shape[j]} (shapes {a.shape} and {b.shape})")
    if a.ndim + b.ndim - len(axes_a) > len(_LETTERS):
        raise ValueError("tensordot: too many axes (more than 52)")
    sa = _LETTERS[:a.ndim]
    letters = iter(_LETTERS[a.ndim:])
    sb = "".join(sa[axes_a[axes_b.index(j)]] if j in axes_b else next(letters)
                 for j in range(b.ndim))
    out = ("".join(c for i, c in enumerate(sa) if i not in axes_a)
           + "".join(c for j, c in enumerate(sb) if j not in axes_b))
    return apply(Einsum, a, b, inputs=(sa, sb), output=out)

lib.publish(globals(), __all__)
