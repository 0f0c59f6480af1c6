"""Matrix functions of SciPy as ops: expm, sqrtm, solve_sylvester (vj.scipy.linalg).

Every op works on the last two axes and batches over the leading ones (broadcasting
between operands), so a stacked operand inside pfor is one more batch axis. The values
come from scipy.linalg (imported at the first call); the derivatives are vecjac ops:
- expm: Pade approximation with scaling and squaring (scipy.linalg.expm, Al-Mohy and
  Higham 2009). Its Frechet derivative L(A, E) is the upper right block of
  expm([[A, E], [0, A]]) (Mathias 1996), so the JVP is L(A, dA) and the VJP is its
  adjoint L(A^T, G); both are again expm of a larger matrix, hence differentiable.
- sqrtm: X = sqrtm(A) satisfies X dX + dX X = dA, so the JVP is solve_sylvester(X, X, dA)
  and the VJP solve_sylvester(X^T, X^T, G).
- solve_sylvester: A X + X B = Q gives A dX + dX B = dQ - dA X - X dB (JVP); the VJP
  solves the transposed equation A^T Y + Y B^T = G, then dQ = Y, dA = -Y X^T,
  dB = -X^T Y.
Complex matrices: the same with every ^T a conjugate transpose ^H (the gradient is the
adjoint of the JVP under Re<a, b>, ops/elementwise/complex_parts.py; a real matrix records
no conj, so its rules keep their bits).
"""
import numpy as np

from vecjac._src.core.dispatch import apply
from vecjac._src.core.registry import Op, lib, register
from vecjac._src.core.samples import Arg, Sample
from vecjac._src.ops.array.creation import zeros_like
from vecjac._src.ops.array.shaping import concat
from vecjac._src.ops.elementwise.arithmetic import unbroadcast
from vecjac._src.ops.elementwise.scipy_special import scipy_module
from vecjac._src.ops.linalg.products import conj_transpose, matmul
from vecjac._src.transforms.pfor.converters import broadcasting, elementwise
from vecjac._src.transforms.sparsity import patterns

__all__ = []


def _frechet(a, e):
    """L(a, e), the Frechet derivative of expm at a in direction e (same shapes)."""
    n = a.shape[-1]
    top = concat([a, e], axis=-1)
    bottom = concat([zeros_like(a), a], axis=-1)
    return apply(MatrixExponential, concat([top, bottom], axis=-2))[..., :n, n:]


@register
class MatrixExponential(Op):
    complex_rules = True
    samples = (Sample("scipy.linalg.expm", Arg.float("n", "n", lo=-1.0, hi=1.0)),
               # a batch, with 1-norms up to 6 (past the thresholds of the low Pade degrees)
               Sample("scipy.linalg.expm", Arg.float(2, 2, 2, lo=-3.0, hi=3.0),
                      tol={"rtol": 1e-4, "atol": 1e-5}))
    converter = elementwise
    pattern = patterns.batched(2, 2)

    def forward(self, a):
        if a.size == 0:
            return a.copy()
        return np.asarray(scipy_module("linalg").expm(a)).astype(a.dtype, copy=False)

    def gradient(self, e, g):
        return _frechet(conj_transpose(e.inputs[0]), g)

    def jvp(self, e, t):
        return None if t is None else _frechet(e.inputs[0], t)


@register
class MatrixSquareRoot(Op):
    complex_rules = True
    samples = (Sample("scipy.linalg.sqrtm", Arg.spd("n", "n")),
               Sample("scipy.linalg.sqrtm", Arg.square(2, 3, 3)))
    converter = elementwise
    pattern = patterns.batched(2, 2)

    def forward(self, a):
        if a.size == 0:
            return a.copy()
        x = np.asarray(scipy_module("linalg").sqrtm(a))
        if x.dtype.kind == "c" and a.dtype.kind != "c":
            scale = max(float(np.max(np.abs(x))), 1.0)
            if np.any(np.abs(x.imag) > 1e3 * np.finfo(a.dtype).eps * scale):
                raise ValueError("vj.scipy.linalg.sqrtm: A has eigenvalues on the negative "
                                 "real axis, its square root is complex (pass a complex "
                                 "matrix for the complex square root)")
            x = x.real
        return x.astype(a.dtype, copy=False)

    def gradient(self, e, g):
        xt = conj_transpose(e.outputs[0])
        return apply(SolveSylvester, xt, xt, g)

    def jvp(self, e, t):
        x = e.outputs[0]
        return None if t is None else apply(SolveSylvester, x, x, t)


@register
class SolveSylvester(Op):
    complex_rules = True
    samples = (Sample("scipy.linalg.solve_sylvester", Arg.square("m", "m"),
                      Arg.square("n", "n"), Arg.float("m", "n")),
               Sample("scipy.linalg.solve_sylvester", Arg.square(2, 2, 2), Arg.square(3, 3),
                      Arg.float(2, 3)))
    converter = broadcasting  # batch axes broadcast; the matrix axes are the last two
    pattern = patterns.batched(2, 2, 2, 2)

    def forward(self, a, b, q):
        dtype = np.result_type(a, b, q)
        shape = np.broadcast_shapes(a.shape[:-2], b.shape[:-2], q.shape[:-2]) + q.shape[-2:]
        if 0 in shape:
            return np.zeros(shape, dtype)
        x = scipy_module("linalg").solve_sylvester(a, b, q)
        return np.broadcast_to(x, shape).astype(dtype)

    def gradient(self, e, g):
        a, b, q = e.inputs
        x = e.outputs[0]
        y = apply(SolveSylvester, conj_transpose(a), conj_transpose(b), g)
        ga = unbroadcast(-matmul(y, conj_transpose(x)), a.shape) if e.needs[0] else None
        gb = unbroadcast(-matmul(conj_transpose(x), y), b.shape) if e.needs[1] else None
        return ga, gb, unbroadcast(y, q.shape) if e.needs[2] else None

    def jvp(self, e, ta, tb, tq):
        if ta is None and tb is None and tq is None:
            return None
        a, b, _ = e.inputs
        x = e.outputs[0]
        rhs = tq
        for term in (None if ta is None else matmul(ta, x),
                     None if tb is None else matmul(x, tb)):
            if term is not None:
                rhs = -term if rhs is None else rhs - term
        return apply(SolveSylvester, a, b, rhs)

lib.publish(globals(), __all__)
