"""The general eigendecomposition (np.linalg.eig, TF's tf.linalg.eig): eig, eigvals.

a v = v diag(w) for a square real or complex a (..., n, n): eigenvalues w (..., n) and
eigenvectors v (..., n, n) (columns, each of unit 2-norm, as LAPACK's geev gives them, in
its order). Both are always complex (complex64 for float32 and complex64 input,
complex128 otherwise), also where every eigenvalue of a real matrix is real: a dtype that
depends on no value (NumPy returns real arrays then; JAX is complex too). Batched over the
leading axes; pfor's loop axis is one more batch axis.

Derivatives (the convention of ops/elementwise/complex_parts.py), written with vecjac ops
so they differentiate and vectorize again. With P = v^-1 da v and F_ij = 1 / (w_j - w_i)
off the diagonal (0 on it):
- forward: dw = diag(P); dv = X - v diag(v^H X) with X = v (F o P), the component of
  each dv_i along v_i removed so that v_i^H dv_i = 0 (the norm stays 1, and of the
  phase freedom the derivative takes none);
- reverse, its adjoint: gX = gv - v diag(v^H gv), ga = v^-H (diag(gw) + conj(F) o
  (v^H gX)) v^H. A real a takes the real part of that complex cotangent (the tape's rule).
Phases (gauge): an eigenvector is determined only up to a phase e^{it} (a sign for real
ones), which LAPACK picks; v has no derivative, only functions invariant under those
phases have one (w, |v|^2 elementwise, the projectors v_i v_i^H / |v_i|^2, ...), and for
them both rules are exact. Repeated eigenvalues: as for eigh (decomposition.py), the
vectors have no derivative, and a gradient or tangent that reaches them through a tie is
NaN; the eigenvalues' own derivatives need no gap. Near a defective matrix (a Jordan
block) v is ill-conditioned and so are these derivatives.
"""
import numpy as np

from vecjac._src.core.dispatch import apply
from vecjac._src.core.registry import Op, lib, register
from vecjac._src.core.samples import Arg, Sample
from vecjac._src.core.tensor import Tensor
from vecjac._src.ops.array.creation import zeros_like
from vecjac._src.ops.array.shaping import expand_dims
from vecjac._src.ops.elementwise.complex_parts import Conj, Imag, Real
from vecjac._src.ops.elementwise.logic import Cast
from vecjac._src.ops.linalg.decomposition import _noise, _pairwise, _spread, _used
from vecjac._src.ops.linalg.matrix import _linalg_error, _matrix, diag, diag_part, solve
from vecjac._src.ops.linalg.products import conj_transpose, matmul
from vecjac._src.transforms.pfor.converters import elementwise
from vecjac._src.transforms.sparsity import patterns

__all__ = ["eig", "eigvals"]


def _complex_dtype(dtype):
    return np.result_type(dtype, np.complex64)  # float32 -> complex64, float64 -> complex128


def _as_complex(t):
    return t if t.dtype.kind == "c" else apply(Cast, t, dtype=_complex_dtype(t.dtype))


def _invariant(w, v):
    """Re w, Im w and |v|^2: real and invariant under the eigenvectors' phases."""
    return apply(Real, w), apply(Imag, w), apply(Real, v * apply(Conj, v))


def _eig_sample(x):
    return _invariant(*eig(x + _spread(x.shape, x.dtype)))


_ROTATION = np.array([[1.0, -2.0, 0.0], [2.0, 1.0, 0.0], [0.0, 0.0, 3.0]])


def _rotation_sample(x):
    """A real matrix with the eigenvalues 1 +- 2i and 3 (a complex pair), moved."""
    return _invariant(*eig(x + Tensor(np.broadcast_to(_ROTATION, x.shape).astype(x.dtype))))


@register
class Eig(Op):
    """(w, v) with a v = v diag(w), complex; v's columns of unit norm (LAPACK's phases)."""
    complex_rules = True
    n_outputs = 2
    pattern = patterns.batched(2, 1, 2)
    converter = elementwise  # batched over leading axes: the loop axis is one of them
    samples = (Sample(_eig_sample, _noise("n", "n")),
               Sample(_eig_sample, _noise(2, 3, 3)),
               Sample(_rotation_sample, _noise(3, 3)),
               Sample(_rotation_sample, _noise(2, 3, 3)),
               Sample(lambda x: apply(Imag, eigvals(x + Tensor(np.broadcast_to(
                   _ROTATION, x.shape).astype(x.dtype)))), _noise(2, 3, 3)))

    def forward(self, a):
        try:
            w, v = np.linalg.eig(a)
        except np.linalg.LinAlgError:
            raise _linalg_error("eig", "the eigenvalues did not converge (NaN or Inf in "
                                "the tensor?)") from None
        dtype = _complex_dtype(a.dtype)
        return w.astype(dtype, copy=False), v.astype(dtype, copy=False)

    def jvp(self, e, t):
        if t is None:
            return None
        w, v = e.outputs
        p = solve(v, matmul(_as_complex(t), v))  # v^-1 da v
        x = matmul(v, _pairwise(p, w, -1, _used(t)))
        dv = x - v * expand_dims(diag_part(matmul(conj_transpose(v), x)), -2)
        return diag_part(p), dv

    def gradient(self, e, gw, gv):
        w, v = e.outputs
        vh = conj_transpose(v)
        middle = diag(zeros_like(w) if gw is None else _as_complex(gw))
        if gv is not None:
            gx = gv - v * expand_dims(diag_part(matmul(vh, gv)), -2)
            # conj(F) o (v^H gx): 1 / conj(w_j - w_i) = 1 / (conj(w)_j - conj(w)_i)
            middle = middle + _pairwise(matmul(vh, gx), apply(Conj, w), -1, _used(gv))
        return solve(v, matmul(middle, vh), adjoint=True)  # v^-H middle v^H


def eig(tensor, name=None):
    """Eigenvalues and eigenvectors of square matrices: `w, v = eig(a)` with
    a @ v = v @ diag(w) (TF's tf.linalg.eig; NumPy's np.linalg.eig).

    tensor: (..., n, n), real or complex. w: (..., n), v: (..., n, n), columns the
    eigenvectors of unit norm; both complex always (see the module docstring).
    Differentiable: the eigenvalues always (away from repeated ones for the vectors), the
    eigenvectors only through functions invariant under their phases (|v|^2, projectors).
    """
    return apply(Eig, _matrix(tensor, "eig", "tensor"))


def eigvals(tensor, name=None):
    """Eigenvalues of square matrices, complex (TF's tf.linalg.eigvals): (..., n)."""
    return apply(Eig, _matrix(tensor, "eigvals", "tensor"))[0]


lib.publish(globals(), __all__)
