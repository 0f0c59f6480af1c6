"""Diagonals beyond the batched-matrix ones (TF's tf.linalg): tensor_diag and
tensor_diag_part (a rank-k tensor as the diagonal of a rank-2k one, and back) and set_diag
(a matrix with some of its diagonals replaced, k and align as TF).

All are composites of reshape, MatrixDiag / MatrixDiagPart, gather with constant indices
and where, so that tapes, forward mode, pfor and the sparsity tracer need no rule of their
own; set_diag shares the band layout (k, align) of diag and diag_part (diag_band_ops).
set_diag selects with where rather than computing x * (1 - mask) + new: an inf or NaN of
the replaced entries must not leak into the result or its gradient.
"""
import numbers

import numpy as np

from vecjac._src.core.dispatch import apply, convert_to_tensor, to_input
from vecjac._src.core.registry import lib
from vecjac._src.core.tensor import Tensor
from vecjac._src.ops.array.indexing import gather
from vecjac._src.ops.array.shaping import reshape
from vecjac._src.ops.elementwise.logic import where
from vecjac._src.ops.linalg.diag_band import band_layout, check_align, check_range, diag_range
from vecjac._src.ops.linalg.matrix import MatrixDiag, diag, diag_part

__all__ = ["tensor_diag", "tensor_diag_part", "set_diag"]


def _numeric(x, fn, arg):
    if x.dtype.kind not in "biufc":
        raise TypeError(f"{fn}: {arg} must be numeric, got dtype {x.dtype}")
    return x


def tensor_diag(diagonal, name=None):
    """The rank-2k tensor with `diagonal` (rank k >= 1, shape D) on its diagonal:
    output[i..., i...] = diagonal[i...], 0 elsewhere; output shape D + D (TF's
    tf.linalg.tensor_diag; for a vector, the diagonal matrix).

    >>> vj.linalg.tensor_diag(vj.constant([1.0, 2.0])).numpy()
    array([[1., 0.],
           [0., 2.]])
    >>> vj.linalg.tensor_diag(vj.ones([2, 3])).shape
    (2, 3, 2, 3)
    """
    fn = "tensor_diag"
    v = _numeric(to_input(diagonal, fn=fn, arg="diagonal"), fn, "diagonal")
    if v.ndim < 1:
        raise ValueError(f"{fn}: diagonal must have rank >= 1, got a scalar")
    # the flat diagonal's matrix has the entries in the order of D + D's row-major layout
    return reshape(diag(reshape(v, (v.size,))), v.shape + v.shape)


def tensor_diag_part(input, name=None):
    """The diagonal of a rank-2k tensor of shape D + D: output[i...] = input[i..., i...],
    of shape D (TF's tf.linalg.tensor_diag_part; the inverse of tensor_diag).

    >>> vj.linalg.tensor_diag_part(vj.constant([[1.0, 2.0], [3.0, 4.0]])).numpy()
    array([1., 4.])
    """
    fn = "tensor_diag_part"
    x = _numeric(to_input(input, fn=fn, arg="input"), fn, "input")
    if x.ndim == 0 or x.ndim % 2:
        raise ValueError(f"{fn}: input must have an even, non-zero rank (shape D + D), got "
                         f"shape {x.shape}")
    half = x.ndim // 2
    if x.shape[:half] != x.shape[half:]:
        raise ValueError(f"{fn}: input's first {half} dimensions {x.shape[:half]} must equal "
                         f"its last {half} {x.shape[half:]} (shape {x.shape})")
    n = int(np.prod(x.shape[:half], dtype=np.int64))
    return reshape(diag_part(reshape(x, (n, n))), x.shape[:half])


# -- set_diag ------------------------------------------------------------------------------
def set_diag(input, diagonal, name="set_diag", k=0, align="RIGHT_LEFT"):
    """`input` (..., M, N) with diagonals k0..k1 of each matrix replaced (TF's
    tf.linalg.set_diag). k: an int or a pair (k0, k1), d > 0 above the main diagonal.
    One diagonal: `diagonal` is (..., L); a band: (..., k1 - k0 + 1, L), row i holding
    diagonal k1 - i; L the longest diagonal of the band, shorter ones padded on the side
    that `align` names (superdiagonals first, subdiagonals second: "RIGHT_LEFT" ...).
    Output shape: input's.

    >>> vj.linalg.set_diag(vj.zeros([2, 3]), vj.constant([1.0, 2.0])).numpy()
    array([[1., 0., 0.],
           [0., 2., 0.]])
    """
    fn = "set_diag"
    x = _numeric(to_input(input, fn=fn, arg="input"), fn, "input")
    if x.ndim < 2:
        raise ValueError(f"{fn}: input must have rank >= 2, got shape {x.shape}")
    # Python literals take input's dtype (as TF's would); tensors and arrays must match
    if isinstance(diagonal, (list, tuple, numbers.Number)):
        v = convert_to_tensor(diagonal, dtype=x.dtype, name=f"{fn}: diagonal")
    else:
        v = to_input(diagonal, (x,), fn, "diagonal")
    if v.dtype != x.dtype:
        raise TypeError(f"{fn}: diagonal dtype {v.dtype} differs from input dtype {x.dtype}")
    check_align(align, fn)
    rows, cols = x.shape[-2:]
    k0, k1 = diag_range(k, fn)
    check_range(k0, k1, rows, cols, fn)
    on_band, index, max_len = band_layout(rows, cols, k0, k1, align)
    num_diags = k1 - k0 + 1
    expected = x.shape[:-2] + ((max_len,) if k0 == k1 else (num_diags, max_len))
    if v.shape != expected:
        shown = "" if k0 == k1 else f"{num_diags} diagonals of "
        raise ValueError(f"{fn}: diagonal must have shape {expected} ({shown}length "
                         f"{max_len} for k = ({k0}, {k1}) and input shape {x.shape}), got "
                         f"{v.shape}")
    if not on_band.any():  # empty matrices: nothing to replace
        return x
    if k0 == k1 == 0:  # the main diagonal: one MatrixDiag, no gather
        new = apply(MatrixDiag, v, rows=rows, cols=cols)
    else:
        flat = reshape(v, x.shape[:-2] + (num_diags * max_len,))
        new = gather(flat, index, axis=flat.ndim - 1)
    return where(Tensor(on_band), new, x)


lib.publish(globals(), __all__)
