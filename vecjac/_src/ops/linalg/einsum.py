"""einsum and tensordot: contractions written as (batched) matrix products.

Einsum is one op for any equation; its gradient with respect to each operand is another
einsum (the output and the other operands contracted), and its pfor rule adds the loop
axis as a batch letter. tensordot is an einsum with the axes spelled out.
"""
import functools
import math
import string

import numpy as np

from vecjac._src.core.dispatch import apply, to_input
from vecjac._src.core.registry import Op, lib, register
from vecjac._src.core.samples import Arg, Sample
from vecjac._src.core.shapes import normalize_axis
from vecjac._src.core.tensor import Tensor
from vecjac._src.ops.array.shaping import reshape
from vecjac._src.ops.elementwise.complex_parts import conj_if_complex
from vecjac._src.ops.linalg.products import _einsum_subscripts
from vecjac._src.transforms.forward.rules import multilinear
from vecjac._src.transforms.sparsity import patterns

__all__ = ["tensordot", "einsum"]


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
    complex_rules = True
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
    # complex: the other operands conjugated (the convention of complex_parts.py)
    operands = [g] + [conj_if_complex(xs[j]) for j in range(len(xs)) if j != k]
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
            xs[k] = reshape(xs[k], tuple(n for i, n in enumerate(xs[k].shape) if i not in axes))
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
