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

import numpy as np

from vecjac._src.core.dispatch import apply, to_input
from vecjac._src.core.registry import Op, lib, register
from vecjac._src.core.samples import Arg, Sample
from vecjac._src.core.shapes import as_bool, broadcast_shape
from vecjac._src.core.tensor import Tensor
from vecjac._src.ops import kernels
from vecjac._src.ops.array.indexing import GatherV2
from vecjac._src.ops.elementwise.complex_parts import conj_if_complex
from vecjac._src.ops.array.shaping import Transpose, expand_dims, reshape, squeeze, transpose
from vecjac._src.ops.elementwise.arithmetic import multiply, unbroadcast
from vecjac._src.transforms.forward.rules import multilinear
from vecjac._src.transforms.pfor.structured import (OuterStacked, finite, is_identity, is_onehot,
                                                    note_finite_matvec, note_finite_product,
                                                    unravel)
from vecjac._src.transforms.sparsity import patterns

__all__ = ["matmul", "matrix_transpose"]  # einsum, tensordot: einsum_ops.py


def matrix_transpose(x, name=None):
    """Swap the last two axes."""
    x = to_input(x, fn="matrix_transpose", arg="x")
    if x.ndim < 2:
        raise ValueError(f"matrix_transpose: x must have rank >= 2, got shape {x.shape}")
    perm = tuple(range(x.ndim - 2)) + (x.ndim - 1, x.ndim - 2)
    return transpose(x, perm)


def conj_transpose(x):
    """The conjugate transpose of the last two axes: matrix_transpose for a real x (no
    conj recorded, so real rules stay bit-identical), conj then transpose for a complex
    one. The rules of vj.linalg's ops write their adjoints with it."""
    return matrix_transpose(conj_if_complex(x))


def _pad_batch(x, rank, stacked):
    """Insert size-1 batch axes so a stacked operand has `rank` per-iteration axes."""
    own = x.ndim - 1 if stacked else x.ndim
    if own >= rank or not stacked:
        return x
    return reshape(x, (x.shape[0],) + (1,) * (rank - own) + x.shape[1:])


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
    complex_rules = True
    fresh_output = True
    pattern = patterns.contraction(_matmul_subscripts)
    jvp = multilinear
    samples = (Sample("matmul", Arg.float("m", "k"), Arg.float("k", "n")),
               Sample("matmul", Arg.float(2, 1, "m", 3), Arg.float(2, 3, 2)),  # batch broadcast
               Sample("matmul", Arg.float(3, "m"), Arg.float(3, 2), transpose_a=True),
               Sample("matmul", Arg.float(2, 3), Arg.float("n", 3), transpose_b=True))
    samples += (Sample("matmul", Arg.float("m", "k"), Arg.float("k", "n"), dim_range=(0, 3)),
                Sample("matmul", Arg.float("n"), Arg.float("n")))  # vector @ vector

    def forward(self, a, b):
        if a.shape[-1] == 1 and a.ndim >= 2 and b.ndim >= 2 and b.shape[-2] == 1:
            # a sum of one product: outer products, the same values as the broadcast
            # product, which BLAS computes slowly for k = 1 (the stacked gradients of a
            # Hessian: (240, 8, 1) @ (1, 64) 0.18 -> 0.04 ms, (8, 1) @ (1, 4000) 6x)
            fast = kernels.column_times_row(a, b)
            return a * b if fast is None else fast
        return np.matmul(a, b)

    def structured(self, cx, a, b):
        """One-hot matrix times a loop-invariant matrix: a scaled row (or column) gather
        instead of a dense (iters x i x j) @ (j x k) product."""
        loop, n = cx.loop, cx.iters
        if not all(finite(t) for t in (a, b) if not is_onehot(t, loop)):
            return NotImplemented
        lead = [t.lead for t in (a, b) if is_onehot(t, loop)]
        if any(lead):
            if not (is_onehot(a, loop) and a.lead == 1 and len(a.S) == 2
                    and not cx.stacked[1] and b.ndim == 2):
                return NotImplemented
            # a_k = d_k x e_pos[k] (one-hot columns of the batch rows): a_k @ b is the outer
            # product d_k x b[pos[k]], one pass instead of a GEMM over the seeds
            rows = apply(GatherV2, b, Tensor(a.pos), axis=0, batch_dims=0)  # valid positions
            return OuterStacked(a.d, rows, loop)  # (n, i, k), written by the next op
        if is_onehot(a, loop) and not cx.stacked[1] and len(a.S) == 2 and b.ndim == 2:
            r, c = unravel(a)                            # a_k = d_k e_r e_c^T
            rows = apply(lib.ScaledRows, b, a.d, idx=c)  # row r of a_k @ b: (n, k)
            return lib.scatter_rows(rows, r, a.S[0])     # (n, i, k)
        if is_onehot(b, loop) and not cx.stacked[0] and len(b.S) == 2 and a.ndim == 2:
            r, c = unravel(b)                            # b_k = d_k e_r e_c^T
            cols = apply(lib.ScaledRows, transpose(a), b.d, idx=r)  # column c of a @ b_k
            if b.S[1] == 1:
                return reshape(cols, (n, a.shape[0], 1))  # matrix @ one-hot vector
            return transpose(lib.scatter_rows(cols, c, b.S[1]), (0, 2, 1))
        return NotImplemented

    def gradient(self, e, g):
        a, b = e.inputs

        def t(x):  # the operands are valid by construction: primitives, no re-validation
            return apply(Transpose, x, perm=tuple(range(x.ndim - 2)) + (x.ndim - 1, x.ndim - 2))
        # complex: g b^H and a^H g (the convention of ops/elementwise/complex_parts.py)
        ga = unbroadcast(apply(MatMul, g, t(conj_if_complex(b))), a.shape) if e.needs[0] \
            else None
        gb = unbroadcast(apply(MatMul, t(conj_if_complex(a)), g), b.shape) if e.needs[1] \
            else None
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
            rows = reshape(a, (int(math.prod(a.shape[:-1])), a.shape[-1]))
            return reshape(apply(self, rows, b), a.shape[:-1] + (b.shape[-1],))
        if big and sb and not sa and a.ndim == 2 and b.ndim == 3 and not (
                b.shape[2] >= 8 and (a.shape[0] <= 16 or a.size <= 1024)):
            # (i, j) @ (n, j, k): (i, j) @ (j, n*k), one GEMM. Not for a few rows i and
            # k >= 8: there NumPy's loop of n small GEMMs (the generic case below) was
            # measured 1.2-4.5x faster than transposing b into one GEMM's operand, and
            # its result is contiguous (benchmarks/workloads_forward.py, workload 12)
            j, k = b.shape[1], b.shape[2]
            cols = reshape(transpose(b, (1, 0, 2)), (j, n * k))
            out = reshape(apply(self, a, cols), (a.shape[0], n, k))
            return transpose(out, (1, 0, 2))
        rank = max(a.ndim - sa, b.ndim - sb)
        return apply(self, _pad_batch(a, rank, sa), _pad_batch(b, rank, sb))


@register
class MatVec(Op):
    """Matrix times vector, batched: (..., m, n) and (..., n) -> (..., m) (batch axes
    broadcast). Its own primitive because a vector operand is the common case of
    forward mode and of pfor (a loop of vectors is a matrix): with a plain matrix, any
    stack of vectors is one GEMM (vectors @ a.T), with no reshape or transpose ops."""
    complex_rules = True
    pattern = patterns.contraction(_matvec_subscripts)
    jvp = multilinear
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

    def structured(self, cx, a, b):
        """Loop-invariant matrix times one-hot vectors (a jacfwd tangent): a scaled column
        gather, d_k a[:, pos_k], instead of a product with the dense seeds."""
        loop = cx.loop
        if not (is_onehot(b, loop) and not cx.stacked[0] and a.ndim == 2 and len(b.S) == 1
                and not b.lead and finite(a)):
            return NotImplemented
        return apply(lib.ScaledRows, apply(Transpose, a, perm=(1, 0)), b.d, idx=b.pos)

    def note_primal(self, inputs, output):
        a, b = inputs
        if a.ndim == 2 and b.ndim == 1 and b._pfor is None:
            note_finite_matvec(a, b, output)

    def stacked_forward(self, cx, a, b):
        # a plain matrix against stacked vectors: forward's one GEMM already covers
        # every iteration (the tangents of jacfwd through a linear model)
        stacked = cx.stacked
        if stacked[0] or not stacked[1] or a.ndim != 2 or b.ndim != 2:
            return None
        av, bv = a._value, b._value
        if bv.shape[0] == av.shape[1] and bv.dtype == av.dtype and \
                is_identity(bv) and finite(a):
            # jacfwd's seeds e_k (one chunk): iteration k is column k of a, so the stacked
            # result is a transposed view, where the GEMM took 0.03 ms for 4000 x 8. A
            # NaN or inf in a would make the GEMM's other entries NaN (0 * inf), as in
            # the loop: then the GEMM runs
            return av.T
        return bv @ av.T

    def gradient(self, e, g):
        a, b = e.inputs
        ga = gb = None
        if e.needs[0]:  # outer products g b^T (complex: g b^H)
            ga = unbroadcast(multiply(expand_dims(g, -1), expand_dims(conj_if_complex(b), -2)),
                             a.shape)
        if e.needs[1]:  # a^T g (complex: a^H g)
            at = apply(Transpose, conj_if_complex(a),
                       perm=tuple(range(a.ndim - 2)) + (a.ndim - 1, a.ndim - 2))
            # the forward proved a finite if it gave a finite product: the structured
            # rule of a Jacobian's one-hot g then skips its own pass over a
            note_finite_product(at, b, e.outputs[0])
            gb = unbroadcast(apply(MatVec, at, g), b.shape)
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
    if (transpose_a is False and transpose_b is False and adjoint_a is False
            and adjoint_b is False and a.ndim == 2 and b.ndim == 1
            and a.shape[1] == b.shape[0] and a.dtype.kind in "biufc"
            and b.dtype.kind in "biufc"):
        return apply(MatVec, a, b)  # plain matrix @ vector: nothing else to check
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
        return apply(MatVec, apply(Transpose, b, perm=perm), a)
    if flags["adjoint_a"] and a.dtype.kind == "c":
        a = _conj(a, "adjoint_a")
    if flags["adjoint_b"] and b.dtype.kind == "c":
        b = _conj(b, "adjoint_b")
    if ta:
        a = matrix_transpose(a)
    if tb:
        b = matrix_transpose(b)
    if va:
        a = expand_dims(a, 0)
    if vb:
        b = expand_dims(b, -1)
    out = apply(MatMul, a, b)
    if va:
        out = squeeze(out, -2)
    if vb:
        out = squeeze(out, -1)
    return out


def _conj(x, arg):
    return conj_if_complex(x)


lib.publish(globals(), __all__)
