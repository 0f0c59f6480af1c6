"""Bands of diagonals as TF lays them out (k, align, padding_value), for diag and diag_part
(TF's matrix_diag_v3 / matrix_diag_part_v3) and set_diag.

A band k0 <= d <= k1 of a rows x cols matrix is stored as a (k1 - k0 + 1, max_len)
array: row k1 - d holds diagonal d (d > 0 above the main one), its entries from the top
left, the shorter diagonals padded on the side `align` names (superdiagonals first,
subdiagonals second). The layout is a constant index map computed here in NumPy, so the
band form of diag is a gather of the flattened diagonals and diag_part a gather of the
flattened matrices, each followed by a where with the padding: tapes, forward mode, pfor
and the sparsity tracer need no rule of their own, and an inf among the unused entries
cannot leak into a result or a gradient.

padding_value is not differentiated (TF's gradients of MatrixDiagV3 / MatrixDiagPartV3
return None for it): it goes through stop_gradient. This module sits below linalg_ops,
which owns the public diag and diag_part, and diag_ops (set_diag), so that neither has to
import the other.
"""
import numbers

import numpy as np

from vecjac._src.core.context import value_read
from vecjac._src.core.dispatch import apply, convert_to_tensor, to_input
from vecjac._src.core.registry import lib
from vecjac._src.core.tensor import Tensor
from vecjac._src.ops.array.indexing import gather
from vecjac._src.ops.array.shaping import broadcast_to, reshape, stop_gradient
from vecjac._src.ops.elementwise.logic import where

ALIGNS = ("RIGHT_LEFT", "LEFT_RIGHT", "LEFT_LEFT", "RIGHT_RIGHT")


def check_align(align, fn):
    if not isinstance(align, str) or align not in ALIGNS:
        raise ValueError(f"{fn}: align must be one of {', '.join(ALIGNS)}, got {align!r}")


def _constant(value, fn, arg):
    """The value of an argument that fixes the output's shape: Python, NumPy, or a tensor
    that does not vary over a pfor loop (its value is read, as TF reads k)."""
    if getattr(value, "_pfor", None) is not None:
        raise ValueError(f"{fn}: {arg} cannot vary over a pfor loop")
    if isinstance(value, Tensor):
        value_read(value, "internal")
        return value._value
    return value


def diag_range(k, fn):
    """(k0, k1) from an int or a pair of ints, k0 <= k1."""
    value = _constant(k, fn, "k")
    try:
        arr = np.asarray(value)
    except (TypeError, ValueError):
        raise TypeError(f"{fn}: k must be an int or a pair of ints, got {k!r}") from None
    if arr.dtype.kind not in "iu" or arr.ndim > 1 or arr.size not in (1, 2):
        raise TypeError(f"{fn}: k must be an int or a pair of ints (k0, k1), got {k!r}")
    k0, k1 = int(arr.reshape(-1)[0]), int(arr.reshape(-1)[-1])
    if k0 > k1:
        raise ValueError(f"{fn}: k = ({k0}, {k1}) must have k[0] <= k[1]")
    return k0, k1


def check_range(k0, k1, rows, cols, fn):
    """Every diagonal of the band inside a rows x cols matrix (TF's range for diag_part and
    set_diag; for diag, where TF would silently drop the rows of diagonals outside the
    matrix, an error too). 0 stays valid for empty matrices."""
    for d in (k0, k1):
        if d != 0 and not -rows < d < cols:
            raise ValueError(f"{fn}: k = ({k0}, {k1}) must lie in ({-rows}, {cols}) for "
                             f"matrices of {rows} x {cols}")


def band_layout(rows, cols, k0, k1, align):
    """(on_band, index, max_len): whether entry (m, n) is on a diagonal k0 <= n - m <= k1,
    where it sits in the diagonal tensor flattened over its (num_diags, max_len) axes, and
    the longest diagonal's length."""
    m, n = np.arange(rows)[:, None], np.arange(cols)[None, :]
    d = n - m
    max_len = min(rows + min(k1, 0), cols + min(-k0, 0))
    length = np.minimum(cols - np.maximum(d, 0), rows + np.minimum(d, 0))
    right = ((align in ("RIGHT_LEFT", "RIGHT_RIGHT")) & (d >= 0)) | \
            ((align in ("LEFT_RIGHT", "RIGHT_RIGHT")) & (d <= 0))
    along = np.minimum(m, n) + np.where(right, max_len - length, 0)
    on_band = (k0 <= d) & (d <= k1)
    return on_band, np.where(on_band, (k1 - d) * max_len + along, 0), max_len


def _dim(value, fn, arg):
    """num_rows / num_cols: -1 (inferred) or a count."""
    v = _constant(value, fn, arg)
    if isinstance(v, np.ndarray) and v.ndim == 0:
        v = v[()]
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Integral):
        raise TypeError(f"{fn}: {arg} must be an int (-1: inferred), got {value!r}")
    if v < -1:
        raise ValueError(f"{fn}: {arg} must be -1 (inferred) or >= 0, got {int(v)}")
    return int(v)


def _literal(value):
    return isinstance(value, numbers.Number) and not isinstance(value, np.generic)


def _padding(value, like, fn, arg):
    """padding_value as a scalar tensor of `like`'s dtype (Python literals take it)."""
    if _literal(value):
        p = convert_to_tensor(value, dtype=like.dtype, name=f"{fn}: padding_value")
        if like.dtype.kind in "biu" and p._value != value:
            raise TypeError(f"{fn}: padding_value {value!r} is not a value of {arg}'s dtype "
                            f"{like.dtype}")
    else:
        p = to_input(value, (like,), fn, "padding_value")
    if p.dtype != like.dtype:
        raise TypeError(f"{fn}: padding_value dtype {p.dtype} differs from {arg} dtype "
                        f"{like.dtype}")
    if p.ndim != 0:
        raise ValueError(f"{fn}: padding_value must be a scalar, got shape {p.shape}")
    return p


def band_diag(v, k, num_rows, num_cols, padding_value, align, fn):
    """diag's general form (see linalg_ops.diag); v is a checked numeric tensor."""
    check_align(align, fn)
    k0, k1 = diag_range(k, fn)
    rows, cols = _dim(num_rows, fn, "num_rows"), _dim(num_cols, fn, "num_cols")
    num_diags = k1 - k0 + 1
    if num_diags > 1 and (v.ndim < 2 or v.shape[-2] != num_diags):
        raise ValueError(f"{fn}: diagonal must have shape (..., {num_diags}, L) for k = "
                         f"({k0}, {k1}) (one row per diagonal), got {v.shape}")
    length = v.shape[-1]
    # TF: the smallest matrix holding the band; square when neither size is given
    min_rows, min_cols = length - min(k1, 0), length + max(k0, 0)
    if rows == -1 and cols == -1:
        rows = cols = max(min_rows, min_cols)
    rows, cols = (min_rows if rows == -1 else rows), (min_cols if cols == -1 else cols)
    for arg, got, least in (("num_rows", rows, min_rows), ("num_cols", cols, min_cols)):
        if got < least:
            raise ValueError(f"{fn}: {arg} must be >= {least} for diagonals of length "
                             f"{length} and k = ({k0}, {k1}), got {got}")
    if rows != min_rows and cols != min_cols:
        raise ValueError(f"{fn}: num_rows = {rows} or num_cols = {cols} must be the smallest "
                         f"that holds diagonals of length {length} for k = ({k0}, {k1}) "
                         f"({min_rows} rows, {min_cols} columns)")
    check_range(k0, k1, rows, cols, fn)
    pad = _padding(padding_value, v, fn, "diagonal")
    batch = v.shape[:-1] if num_diags == 1 else v.shape[:-2]
    zero = type(padding_value) in (int, float) and padding_value == 0
    if k0 == k1 == 0 and zero:  # the main diagonal: one MatrixDiag, no gather
        return apply(lib.MatrixDiag, v, rows=rows, cols=cols)
    on_band, index, _ = band_layout(rows, cols, k0, k1, align)
    pad = pad if _literal(padding_value) else stop_gradient(pad)
    if not on_band.any():  # no entry of the matrix is on the band (empty diagonals)
        return broadcast_to(pad, batch + (rows, cols))
    flat = reshape(v, batch + (num_diags * length,))
    return where(Tensor(on_band), gather(flat, index, axis=flat.ndim - 1), pad)


def band_diag_part(x, k, padding_value, align, fn):
    """diag_part's general form (see linalg_ops.diag_part); x is a checked tensor of rank
    >= 2."""
    check_align(align, fn)
    rows, cols = x.shape[-2:]
    k0, k1 = diag_range(k, fn)
    check_range(k0, k1, rows, cols, fn)
    pad = _padding(padding_value, x, fn, "input")
    if k0 == k1 == 0:  # the main diagonal has no padding
        return apply(lib.MatrixDiagPart, x)
    on_band, index, max_len = band_layout(rows, cols, k0, k1, align)
    num_diags = k1 - k0 + 1
    # the inverse map: which matrix entry each slot of the band reads, if any
    source = np.zeros(num_diags * max_len, np.int64)
    filled = np.zeros(num_diags * max_len, bool)
    source[index[on_band]] = np.flatnonzero(on_band)
    filled[index[on_band]] = True
    flat = reshape(x, x.shape[:-2] + (rows * cols,))
    out = gather(flat, source, axis=flat.ndim - 1)
    if not filled.all():
        pad = pad if _literal(padding_value) else stop_gradient(pad)
        out = where(Tensor(filled), out, pad)
    return reshape(out, x.shape[:-2] + ((max_len,) if num_diags == 1 else
                                        (num_diags, max_len)))
