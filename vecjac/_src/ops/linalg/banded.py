"""Banded linear systems as an op: scipy.linalg.solve_banded (vj.scipy.linalg).

A matrix A (M x M) with `lower` diagonals below and `upper` above the main one is stored
as SciPy stores it, in "diagonal ordered form": ab[upper + i - j, j] = A[i, j], an array of
(lower + upper + 1, M); entries of ab outside the band (the top-left and bottom-right
corners) are never read, and their derivative is 0.

The op solves A x = b for b of (..., M, K) and batches over leading axes (broadcasting),
so a stacked operand inside pfor is one more batch axis. With x = A^-1 b:
- VJP: b_bar = A^-T x_bar, a banded solve with the transposed band (upper and lower
  swapped, ab re-indexed); A_bar = -b_bar x^T, kept on the band only:
  ab_bar[r, j] = -sum_k b_bar[j + r - upper, k] x[j, k].
- JVP: dx = A^-1 (db - dA x), with (dA x)[i] = sum_r dab[r, j] x[j], j = i + upper - r.
Both are again SolveBanded and gathers, so every order differentiates.
"""
import numpy as np

from vecjac._src.core.dispatch import apply
from vecjac._src.core.registry import Op, lib, register
from vecjac._src.core.samples import Arg, Sample
from vecjac._src.ops.array.indexing import gather
from vecjac._src.ops.array.shaping import expand_dims, reshape
from vecjac._src.ops.elementwise.arithmetic import unbroadcast
from vecjac._src.ops.elementwise.scipy_special import scipy_module
from vecjac._src.ops.reduce.reductions import reduce_sum
from vecjac._src.transforms.pfor.converters import broadcasting
from vecjac._src.transforms.sparsity import patterns

__all__ = []


def _band_indices(rows, m, shift, step=1):
    """For each band row r and column c: the index c + step * r - shift, clipped into
    [0, m), and a 0/1 mask of where it lies inside [0, m)."""
    idx = np.arange(m)[None, :] + step * np.arange(rows)[:, None] - shift
    inside = (idx >= 0) & (idx < m)
    return np.clip(idx, 0, max(m - 1, 0)), inside


def band_transpose(ab, lower, upper):
    """The diagonal ordered form of A^T (its `upper` diagonals are A's `lower` ones):
    at[r, j] = ab[lower + upper - r, j + r - lower], 0 outside the band."""
    rows, m = ab.shape[-2], ab.shape[-1]
    cols, inside = _band_indices(rows, m, lower)
    flat = reshape(ab, ab.shape[:-2] + (rows * m,))
    source = (lower + upper - np.arange(rows))[:, None] * m + cols
    return gather(flat, source, axis=-1) * inside.astype(ab.dtype)


def _rows_on_band(x, rows, shift):
    """y[..., r, c, k] = x[..., c + r - shift, k] (0 where that row is outside x)."""
    m = x.shape[-2]
    idx, inside = _band_indices(rows, m, shift)
    picked = gather(x, idx, axis=x.ndim - 2)  # (..., rows, m, k)
    return picked * inside[:, :, None].astype(x.dtype)


def _dominant(ab, lower, upper):
    """A sample's band, with a dominant main diagonal (row `upper`): well conditioned."""
    boost = np.zeros((lower + upper + 1, 1), ab.dtype)
    boost[upper] = 2.5
    return ab + boost


def _solve_sample(lower, upper):
    return lambda ab, b: apply(SolveBanded, _dominant(ab, lower, upper), b, lower=lower,
                               upper=upper)


@register
class SolveBanded(Op):
    """x with A x = b, A banded in diagonal ordered form: ab (..., lower + upper + 1, M),
    b (..., M, K) -> (..., M, K); batch axes broadcast."""
    samples = (Sample(_solve_sample(1, 1), Arg.float(3, "m", lo=-0.5, hi=0.5),
                      Arg.float("m", "k")),
               Sample(_solve_sample(1, 0), Arg.float(2, 2, 4, lo=-0.5, hi=0.5), Arg.float(4, 2)),
               Sample(_solve_sample(0, 2), Arg.float(3, 5, lo=-0.5, hi=0.5),
                      Arg.float(2, 5, 1)),
               Sample(_solve_sample(2, 1), Arg.float(4, 5, lo=-0.5, hi=0.5), Arg.float(5, 2)))
    converter = broadcasting  # batch axes broadcast; the band and b's (M, K) are the core
    pattern = patterns.batched(2, 2, 2)

    def forward(self, ab, b, lower, upper):
        dtype = np.result_type(ab, b)
        batch = np.broadcast_shapes(ab.shape[:-2], b.shape[:-2])
        shape = batch + b.shape[-2:]
        if 0 in shape:
            return np.zeros(shape, dtype)
        solve = scipy_module("linalg").solve_banded
        if ab.ndim == 2:  # one matrix: every right-hand side in one call
            m, k = b.shape[-2:]
            cols = np.moveaxis(np.broadcast_to(b, shape), -2, 0).reshape(m, -1)
            x = solve((lower, upper), ab, cols, check_finite=False)
            return np.moveaxis(x.reshape((m,) + batch + (k,)), 0, -2).astype(dtype)
        ab = np.broadcast_to(ab, batch + ab.shape[-2:])
        b = np.broadcast_to(b, shape)
        out = np.empty(shape, dtype)
        for index in np.ndindex(*batch):
            out[index] = solve((lower, upper), ab[index], b[index], check_finite=False)
        return out

    def gradient(self, e, g):
        ab, b = e.inputs
        x = e.outputs[0]
        lower, upper = e.attrs["lower"], e.attrs["upper"]
        gb = apply(SolveBanded, band_transpose(ab, lower, upper), g, lower=upper, upper=lower)
        gab = None
        if e.needs[0]:
            rows = ab.shape[-2]
            # ab_bar[r, j] = -sum_k gb[j + r - upper, k] x[j, k]
            gab = -reduce_sum(_rows_on_band(gb, rows, upper) * expand_dims(x, -3),
                              axis=-1)
            gab = unbroadcast(gab, ab.shape)
        return gab, unbroadcast(gb, b.shape) if e.needs[1] else None

    def jvp(self, e, tab, tb):
        if tab is None and tb is None:
            return None
        ab = e.inputs[0]
        x = e.outputs[0]
        lower, upper = e.attrs["lower"], e.attrs["upper"]
        rhs = tb
        if tab is not None:
            rows, m = ab.shape[-2], ab.shape[-1]
            # (dA x)[i] = sum_r dab[r, j] x[j] with j = i + upper - r
            j, inside = _band_indices(rows, m, -upper, step=-1)
            flat = reshape(tab, tab.shape[:-2] + (rows * m,))
            dab_j = gather(flat, np.arange(rows)[:, None] * m + j, axis=-1) * inside.astype(
                x.dtype)
            x_j = gather(x, j, axis=x.ndim - 2)  # (..., rows, m, k)
            dax = reduce_sum(expand_dims(dab_j, -1) * x_j, axis=-3)
            rhs = -dax if rhs is None else rhs - dax
        return apply(SolveBanded, ab, rhs, lower=lower, upper=upper)

lib.publish(globals(), __all__)
