"""Linear algebra (TF's tf.linalg): solve, inv, det, slogdet, cholesky, triangular_solve,
diag, diag_part, trace, matvec, logdet.

Every op works on the last two axes and batches over the leading ones (NumPy broadcasting
between operands). A stacked operand inside pfor is therefore just one more batch axis;
the one case worth its own rule is a loop-invariant matrix with a stacked right-hand side,
solved as one factorization with all iterations' columns side by side. Failures of the
factorization (singular matrix, not positive definite) raise numpy.linalg.LinAlgError (a
ValueError) naming the function.

Dtypes: float32, float64, complex64, complex128. For complex matrices `adjoint` is the
conjugate transpose (TF's) and the rules follow ops/elementwise/complex_parts.py: the real
formulas with ^T read as ^H (products.conj_transpose, which records nothing for real
matrices, so the real rules keep their bits); cholesky and logdet want Hermitian ones.
"""
import numpy as np

from vecjac._src.core.dispatch import apply, to_input
from vecjac._src.core.registry import Op, lib, register
from vecjac._src.core.samples import Arg, Sample
from vecjac._src.core.shapes import broadcast_shape
from vecjac._src.core.tensor import Tensor
from vecjac._src.ops.array.creation import zeros_like
from vecjac._src.ops.array.shaping import reshape, transpose
from vecjac._src.ops.elementwise.arithmetic import unbroadcast
from vecjac._src.ops.elementwise.complex_parts import (Complex, Conj, Imag, Real,
                                                       conj_if_complex)
from vecjac._src.ops.elementwise.logic import where
from vecjac._src.ops.elementwise.unary import log
from vecjac._src.ops.linalg import diag_band as bands
from vecjac._src.ops.linalg.products import MatVec, conj_transpose, matmul, matrix_transpose
from vecjac._src.ops.reduce.reductions import reduce_sum
from vecjac._src.transforms.forward.rules import linear
from vecjac._src.transforms.pfor.converters import elementwise
from vecjac._src.transforms.sparsity import patterns

__all__ = ["matvec", "solve", "inv", "det", "slogdet", "logdet", "cholesky",
           "triangular_solve", "diag", "diag_part", "trace", "band_part"]


# -- argument checks ---------------------------------------------------------------------
def _lapack(x, fn, arg):
    if x.dtype not in (np.float32, np.float64, np.complex64, np.complex128):  # LAPACK's
        raise TypeError(f"{fn}: {arg} must be a real floating-point or complex tensor "
                        f"(float32, float64, complex64 or complex128), got dtype {x.dtype}")
    return x


def _np_adjoint(a):
    """The conjugate transpose of NumPy matrices (the transpose of real ones)."""
    a = np.swapaxes(a, -1, -2)
    return a.conj() if a.dtype.kind == "c" else a


def _matrix(x, fn, arg="matrix", square=True):
    x = _lapack(to_input(x, (), fn, arg), fn, arg)
    if x.ndim < 2:
        raise ValueError(f"{fn}: {arg} must have rank >= 2, got shape {x.shape}")
    if square and x.shape[-1] != x.shape[-2]:
        raise ValueError(f"{fn}: {arg} must be square, got shape {x.shape}")
    return x


def _matrix_and_rhs(matrix, rhs, fn, square=True):
    """(matrix, rhs) of a solve: rhs (..., m, k) matching the matrix's m rows."""
    a = _matrix(matrix, fn, square=square)
    b = _lapack(to_input(rhs, (a,), fn, "rhs"), fn, "rhs")
    if b.ndim < 2:
        raise ValueError(f"{fn}: rhs must have rank >= 2 (shape (..., m, k)), got shape "
                         f"{b.shape}")
    if b.dtype != a.dtype:
        raise TypeError(f"{fn}: matrix dtype {a.dtype} and rhs dtype {b.dtype} differ")
    if b.shape[-2] != a.shape[-2]:
        size = "size" if square else "number of rows"
        raise ValueError(f"{fn}: rhs has shape {b.shape}, its dimension -2 must equal the "
                         f"matrix {size} {a.shape[-2]} (matrix shape {a.shape})")
    broadcast_shape(fn, a.shape[:-2], b.shape[:-2], names=("matrix batch", "rhs batch"))
    return a, b


def _bool(flag, fn, arg):
    if not isinstance(flag, (bool, np.bool_)):
        raise TypeError(f"{fn}: {arg} must be a bool, got {flag!r}")
    return bool(flag)


def _linalg_error(fn, what):
    return np.linalg.LinAlgError(f"{fn}: {what}")


def _triangle_mask(n, lower, dtype, diagonal=1.0):
    """Constant mask of the lower (upper) triangle, `diagonal` on the diagonal."""
    tri = np.tril(np.ones((n, n)), -1) if lower else np.triu(np.ones((n, n)), 1)
    return Tensor((tri + diagonal * np.eye(n)).astype(dtype))


def _pad_stacked(x, rank, stacked):
    """Size-1 axes after the loop axis so a stacked operand has `rank` per-iteration axes
    (an invariant operand broadcasts from the right as it is)."""
    own = x.ndim - 1 if stacked else x.ndim
    if not stacked or own >= rank:
        return x
    return reshape(x, (x.shape[0],) + (1,) * (rank - own) + x.shape[1:])


def _solve_converter(op, cx, a, b, **attrs):
    """pfor rule shared by Solve and TriangularSolve (matrix a, right-hand side b)."""
    sa, sb = cx.stacked
    n = cx.iters
    if sb and not sa and b.ndim - 1 == a.ndim and b.shape[1:-2] == a.shape[:-2]:
        # one factorization of a for all iterations: (n, ..., m, k) -> (..., m, k * n)
        r = b.ndim
        perm = tuple(range(1, r)) + (0,)
        cols = reshape(transpose(b, perm), a.shape[:-1] + (b.shape[-1] * n,))
        x = apply(op, a, cols, **attrs)
        x = reshape(x, a.shape[:-1] + (b.shape[-1], n))
        return transpose(x, (r - 1,) + tuple(range(r - 1)))
    rank = max(a.ndim - sa, b.ndim - sb)  # per-iteration rank, batch axes included
    return apply(op, _pad_stacked(a, rank, sa), _pad_stacked(b, rank, sb), **attrs)


# -- solve -------------------------------------------------------------------------------
@register
class MatrixSolve(Op):
    complex_rules = True
    pattern = patterns.batched(2, 2, 2)
    samples = (Sample("solve", Arg.square("n", "n"), Arg.float("n", 2)),
               Sample("solve", Arg.square(2, 3, 3), Arg.float(3, "k"), adjoint=True),
               Sample("solve", Arg.square(3, 3), Arg.float(2, 3, 1)))
    samples += (Sample("solve", Arg.square(3, 3), Arg.float(3, "k"), dim_range=(0, 3)),)
    converter = _solve_converter

    def forward(self, a, b, adjoint):
        if adjoint:
            a = _np_adjoint(a)
        try:
            return np.linalg.solve(a, b)
        except np.linalg.LinAlgError:
            raise _linalg_error("solve", "matrix is singular") from None

    def gradient(self, e, g):
        a, b = e.inputs
        x = e.outputs[0]
        adjoint = e.attrs["adjoint"]
        gb = apply(MatrixSolve, a, g, adjoint=not adjoint)
        ga = None
        if e.needs[0]:
            # d(op(a)) x = -op(a) dx: the cotangent of op(a) is -gb x^H
            ga = -(matmul(x, conj_transpose(gb)) if adjoint else
                   matmul(gb, conj_transpose(x)))
            ga = unbroadcast(ga, a.shape)
        return ga, unbroadcast(gb, b.shape) if e.needs[1] else None


def solve(matrix, rhs, adjoint=False, name=None):
    """x with matrix @ x = rhs (matrix^H @ x = rhs if adjoint), batched.

    matrix: (..., n, n), rhs: (..., n, k), batch axes broadcast; output (..., n, k).
    """
    a, b = _matrix_and_rhs(matrix, rhs, "solve")
    return apply(MatrixSolve, a, b, adjoint=_bool(adjoint, "solve", "adjoint"))


# -- triangular_solve --------------------------------------------------------------------
@register
class MatrixTriangularSolve(Op):
    complex_rules = True
    pattern = patterns.batched(2, 2, 2)
    samples = (Sample("triangular_solve", Arg.square("n", "n"), Arg.float("n", 2)),
               Sample("triangular_solve", Arg.square(2, 3, 3), Arg.float(3, "k"), lower=False,
                      adjoint=True),
               Sample("triangular_solve", Arg.square(3, 3), Arg.float(2, 3, "k"), adjoint=True))
    converter = _solve_converter

    def forward(self, a, b, lower, adjoint):
        # only the named triangle of a is read, as in TF
        a = np.tril(a) if lower else np.triu(a)
        if adjoint:
            a = _np_adjoint(a)
        try:
            return np.linalg.solve(a, b)
        except np.linalg.LinAlgError:
            raise _linalg_error("triangular_solve", "matrix is singular (a zero on "
                                "its diagonal)") from None

    def gradient(self, e, g):
        a, b = e.inputs
        x = e.outputs[0]
        lower, adjoint = e.attrs["lower"], e.attrs["adjoint"]
        gb = apply(MatrixTriangularSolve, a, g, lower=lower, adjoint=not adjoint)
        ga = None
        if e.needs[0]:
            ga = -(matmul(x, conj_transpose(gb)) if adjoint else
                   matmul(gb, conj_transpose(x)))
            ga = unbroadcast(ga * _triangle_mask(a.shape[-1], lower, ga.dtype), a.shape)
        return ga, unbroadcast(gb, b.shape) if e.needs[1] else None


def triangular_solve(matrix, rhs, lower=True, adjoint=False, name=None):
    """x with T @ x = rhs (T^H @ x = rhs if adjoint), T the lower (upper) triangle of matrix.

    The other triangle of `matrix` is ignored. matrix: (..., n, n), rhs: (..., n, k),
    batch axes broadcast; output (..., n, k).
    """
    a, b = _matrix_and_rhs(matrix, rhs, "triangular_solve")
    return apply(MatrixTriangularSolve, a, b, lower=_bool(lower, "triangular_solve", "lower"),
                 adjoint=_bool(adjoint, "triangular_solve", "adjoint"))


# -- inv, det, slogdet -------------------------------------------------------------------
@register
class MatrixInverse(Op):
    complex_rules = True
    pattern = patterns.batched(2, 2)
    samples = (Sample("inv", Arg.square("n", "n")),
               Sample("inv", Arg.square(2, 3, 3), adjoint=True))
    converter = elementwise  # batched over leading axes: the loop axis is one of them

    def forward(self, a):
        try:
            return np.linalg.inv(a)
        except np.linalg.LinAlgError:
            raise _linalg_error("inv", "matrix is not invertible (input is singular)") from None

    def gradient(self, e, g):  # dY = -Y dA Y: the cotangent of A is -Y^H g Y^H
        yt = conj_transpose(e.outputs[0])
        return -matmul(yt, matmul(g, yt))


def inv(input, adjoint=False, name=None):
    """The inverse of each matrix (of its conjugate transpose if adjoint): (..., n, n) ->
    (..., n, n)."""
    a = _matrix(input, "inv", "input")
    if _bool(adjoint, "inv", "adjoint"):
        a = conj_transpose(a)
    return apply(MatrixInverse, a)


@register
class MatrixDeterminant(Op):
    complex_rules = True
    pattern = patterns.batched(2, 0)
    samples = (Sample("det", Arg.square("n", "n")), Sample("det", Arg.square(2, 3, 3)))
    converter = elementwise

    def forward(self, a):
        return np.linalg.det(a)

    def gradient(self, e, g):
        # d det = tr(adj(a) da): the cotangent is g adj(a)^H = g conj(det) a^-H (TF's,
        # g det(a) a^-H, lacks that conjugate for complex a; finite differences agree)
        a = e.inputs[0]
        scale = reshape(g, g.shape + (1, 1))
        if a.shape[-1] <= lib.Adjugate.max_size:  # exact at (nearly) singular matrices
            return scale * conj_transpose(apply(lib.Adjugate, a))
        d = reshape(conj_if_complex(e.outputs[0]), g.shape + (1, 1))
        return scale * d * conj_transpose(apply(MatrixInverse, a))


def det(input, name=None):
    """Determinant of each matrix: (..., n, n) -> (...)."""
    return apply(MatrixDeterminant, _matrix(input, "det", "input"))


@register
class LogMatrixDeterminant(Op):
    """(sign, log|det|); for complex a the sign is the phase det / |det| (complex) and
    log|det| real, as NumPy's slogdet."""
    complex_rules = True
    pattern = patterns.batched(2, 0, 0)
    samples = (Sample("slogdet", Arg.square("n", "n")), Sample("slogdet", Arg.square(2, 3, 3)))
    n_outputs = 2
    converter = elementwise

    def forward(self, a):
        sign, logabs = np.linalg.slogdet(a)
        return sign.astype(a.dtype, copy=False), logabs

    def gradient(self, e, g_sign, g_logabs):
        a = e.inputs[0]
        if a.dtype.kind != "c":  # the sign is locally constant: log|det| alone
            scale = reshape(g_logabs, g_logabs.shape + (1, 1))
            return scale * matrix_transpose(apply(MatrixInverse, a))
        # tau = tr(a^-1 da): d log|det| = Re tau, d sign = i sign Im tau; both pull back
        # through tau with w = g_logabs - i Im(conj(g_sign) sign), as w a^-H
        sign = e.outputs[0]
        re = g_logabs if g_logabs is not None else zeros_like(e.outputs[1])
        im = zeros_like(re) if g_sign is None else \
            -apply(Imag, apply(Conj, g_sign) * sign)
        w = apply(Complex, re, im)
        return reshape(w, w.shape + (1, 1)) * conj_transpose(apply(MatrixInverse, a))


def slogdet(input, name=None):
    """(sign, log|det|) of each matrix: (..., n, n) -> two tensors of shape (...). For a
    complex matrix the sign is the complex phase det / |det| and log|det| is real."""
    return apply(LogMatrixDeterminant, _matrix(input, "slogdet", "input"))


# -- cholesky ----------------------------------------------------------------------------
@register
class Cholesky(Op):
    complex_rules = True
    pattern = patterns.batched(2, 2)
    # cholesky reads one triangle; its gradient is the symmetric one (as TF's), so the
    # samples feed it symmetric matrices a + a^T, for which both agree
    # a + a^H: Hermitian for the complex variants too (the same bits for real a)
    samples = (Sample(lambda a: cholesky(a + conj_transpose(a)), Arg.spd("n", "n")),
               Sample(lambda a: logdet(a + conj_transpose(a)), Arg.spd(2, "n", "n")))
    converter = elementwise

    def forward(self, a):
        try:
            return np.linalg.cholesky(a)
        except np.linalg.LinAlgError:
            raise _linalg_error("cholesky", "input is not positive definite") from None

    def gradient(self, e, g):
        # A = L L^H: dL = L phi(L^-1 dA L^-H), phi = lower triangle with half diagonal,
        # so the cotangent of A is L^-H phi(L^H g) L^-1, made Hermitian (as TF); for real
        # A every ^H is a transpose
        lo = e.outputs[0]
        n = lo.shape[-1]
        middle = matmul(conj_transpose(lo), g) * _triangle_mask(n, True, g.dtype, 0.5)
        left = triangular_solve(lo, middle, lower=True, adjoint=True)           # L^-H P
        ga = conj_transpose(triangular_solve(lo, conj_transpose(left), lower=True,
                                             adjoint=True))                    # .. L^-1
        return (ga + conj_transpose(ga)) * 0.5


def cholesky(input, name=None):
    """Lower-triangular L with L L^H = input, for symmetric (Hermitian) positive definite
    matrices.

    Only the lower triangle of `input` is read; the gradient is the symmetric (Hermitian)
    one, right for symmetric (Hermitian) inputs. (..., n, n) -> (..., n, n).
    """
    return apply(Cholesky, _matrix(input, "cholesky", "input"))


def logdet(matrix, name=None):
    """log(det(matrix)) for symmetric (Hermitian) positive definite matrices, via
    Cholesky: (...), real (float32 / float64 for complex64 / complex128 input)."""
    x = _matrix(matrix, "logdet")
    try:
        lo = cholesky(x)
    except np.linalg.LinAlgError:
        raise _linalg_error("logdet", "matrix is not positive definite") from None
    d = diag_part(lo)
    if d.dtype.kind == "c":  # Cholesky's diagonal is real and positive
        d = apply(Real, d)
    return 2.0 * reduce_sum(log(d), axis=-1)


# -- diag, diag_part, trace, matvec ------------------------------------------------------
@register
class MatrixDiag(Op):
    """(..., k) -> (..., rows, cols) with the vector on the main diagonal."""
    name = "MatrixDiagV3"
    complex_rules = True  # a layout op: its own adjoint's transpose, complex or not
    pattern = patterns.layout
    jvp = linear
    samples = (Sample("diag", Arg.float("n")), Sample("diag", Arg.float(2, "n")))
    converter = elementwise

    def forward(self, v, rows, cols):
        out = np.zeros(v.shape[:-1] + (rows, cols), dtype=v.dtype)
        idx = np.arange(v.shape[-1])
        out[..., idx, idx] = v
        return out

    def gradient(self, e, g):
        return apply(MatrixDiagPart, g)


@register
class MatrixDiagPart(Op):
    name = "MatrixDiagPartV3"
    complex_rules = True
    pattern = patterns.layout
    jvp = linear
    samples = (Sample("diag_part", Arg.float("n", "n")), Sample("diag_part", Arg.float(2, 3, "n")),
               Sample("trace", Arg.float(2, "n", "n")))
    converter = elementwise

    def forward(self, x):
        return np.diagonal(x, axis1=-2, axis2=-1).copy()

    def gradient(self, e, g):
        rows, cols = e.inputs[0].shape[-2:]
        return apply(MatrixDiag, g, rows=rows, cols=cols)


def diag(diagonal, name="diag", k=0, num_rows=-1, num_cols=-1, padding_value=0,
         align="RIGHT_LEFT"):
    """Matrices with `diagonal` on diagonals k[0]..k[1] and padding_value elsewhere (TF's
    tf.linalg.diag). k: an int or a pair (k0, k1), d > 0 above the main diagonal. One
    diagonal: (..., L) -> (..., num_rows, num_cols); a band: (..., k1 - k0 + 1, L), row
    i holding diagonal k1 - i, the shorter ones padded on the side `align` names
    (superdiagonals first, subdiagonals second), -> (..., num_rows, num_cols). Sizes left
    at -1: the smallest matrix that holds the band, square if both are. padding_value is
    not differentiated (as in TF).

    >>> vj.linalg.diag(vj.constant([1.0, 2.0]), k=-1, num_rows=3, padding_value=9.0).numpy()
    array([[9., 9.],
           [1., 9.],
           [9., 2.]])
    """
    v = to_input(diagonal, fn="diag", arg="diagonal")
    if v.ndim < 1:
        raise ValueError("diag: diagonal must have rank >= 1, got a scalar")
    if v.dtype.kind not in "biufc":
        raise TypeError(f"diag: diagonal must be numeric, got dtype {v.dtype}")
    if (type(k) is int and k == 0 and type(num_rows) is int and num_rows == -1
            and type(num_cols) is int and num_cols == -1
            and type(padding_value) in (int, float) and padding_value == 0):
        bands.check_align(align, "diag")  # one diagonal: align changes nothing
        n = v.shape[-1]
        return apply(MatrixDiag, v, rows=n, cols=n)
    return bands.band_diag(v, k, num_rows, num_cols, padding_value, align, "diag")


def diag_part(input, name="diag_part", k=0, padding_value=0, align="RIGHT_LEFT"):
    """Diagonals k[0]..k[1] of each matrix (TF's tf.linalg.diag_part): (..., M, N) ->
    (..., L) for one diagonal, (..., k1 - k0 + 1, L) for a band (row i: diagonal k1 - i),
    L the band's longest diagonal, the shorter ones padded with padding_value on the side
    `align` names. k=0: the main diagonal, (..., min(M, N)).

    >>> x = vj.constant([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]])
    >>> vj.linalg.diag_part(x, k=(-1, 1), padding_value=-1.0).numpy()
    array([[-1.,  2.,  6.],
           [ 1.,  5.,  9.],
           [ 4.,  8., -1.]])
    """
    x = to_input(input, fn="diag_part", arg="input")
    if x.ndim < 2:
        raise ValueError(f"diag_part: input must have rank >= 2, got shape {x.shape}")
    if x.dtype.kind not in "biufc":
        raise TypeError(f"diag_part: input must be numeric, got dtype {x.dtype}")
    if (type(k) is int and k == 0 and type(padding_value) in (int, float)
            and padding_value == 0):  # the main diagonal: no padding, align changes nothing
        bands.check_align(align, "diag_part")
        return apply(MatrixDiagPart, x)
    return bands.band_diag_part(x, k, padding_value, align, "diag_part")


def band_part(input, num_lower, num_upper, name=None):
    """Each matrix (last two axes) with everything outside a band set to 0: entries with
    i - j <= num_lower and j - i <= num_upper are kept, a negative count keeping the
    whole triangle (TF's tf.linalg.band_part: (0, -1) upper, (-1, 0) lower triangle)."""
    fn = "band_part"
    x = to_input(input, fn=fn, arg="input")
    if x.ndim < 2:
        raise ValueError(f"{fn}: input must have rank >= 2, got shape {x.shape}")
    for arg, count in (("num_lower", num_lower), ("num_upper", num_upper)):
        if isinstance(count, (bool, np.bool_)) or not isinstance(count, (int, np.integer)):
            raise TypeError(f"{fn}: {arg} must be an int, got {count!r}")
    m, n = x.shape[-2:]
    i, j = np.arange(m)[:, None], np.arange(n)[None, :]
    keep = ((num_lower < 0) | (i - j <= num_lower)) & ((num_upper < 0) | (j - i <= num_upper))
    return where(Tensor(keep), x, zeros_like(x))


def trace(x, name=None):
    """Sum of the main diagonal of each matrix: (..., m, n) -> (...)."""
    x = to_input(x, fn="trace", arg="x")
    if x.ndim < 2:
        raise ValueError(f"trace: x must have rank >= 2, got shape {x.shape}")
    return reduce_sum(diag_part(x), axis=-1)


def matvec(a, b, transpose_a=False, adjoint_a=False, a_is_sparse=False, b_is_sparse=False,
           name=None):
    """Matrix-vector product a @ b, batched: (..., m, n) and (..., n) -> (..., m).

    transpose_a uses a's transpose, adjoint_a its conjugate transpose (the same for real
    matrices).
    """
    a = to_input(a, (a, b), "matvec", "a")
    b = to_input(b, (a, b), "matvec", "b")
    for arg, x in (("a", a), ("b", b)):
        if x.dtype.kind not in "biufc":
            raise TypeError(f"matvec: {arg} must be numeric, got dtype {x.dtype}")
    if a.ndim < 2:
        raise ValueError(f"matvec: a must have rank >= 2, got shape {a.shape}")
    if b.ndim < 1:
        raise ValueError("matvec: b must have rank >= 1, got a scalar")
    conjugated = _bool(adjoint_a, "matvec", "adjoint_a")
    transposed = _bool(transpose_a, "matvec", "transpose_a") | conjugated
    cols = a.shape[-2] if transposed else a.shape[-1]  # checked before transposing
    if cols != b.shape[-1]:
        shown = f"{a.shape}{', transposed' if transposed else ''}"
        raise ValueError(f"matvec: a has {cols} columns (shape {shown}) but b has "
                         f"length {b.shape[-1]} (shape {b.shape})")
    broadcast_shape("matvec", a.shape[:-2], b.shape[:-1], names=("a batch", "b batch"))
    if transposed:
        a = conj_transpose(a) if conjugated else matrix_transpose(a)
    return apply(MatVec, a, b)

lib.publish(globals(), __all__)
