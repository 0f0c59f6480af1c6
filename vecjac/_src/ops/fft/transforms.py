"""Discrete Fourier transforms as ops: three primitives, every public FFT built on them.

- FFT(x, axes, norm, inverse): the complex DFT over `axes` (np.fft.fftn / ifftn without
  `s`; a real x is read as complex);
- RFFT(x, axis, norm): bins 0 .. n//2 of the DFT of a real x along one axis (np.fft.rfft
  without `n`);
- IRFFT(x, axis, n, norm): the real signal of length n whose half spectrum x is (x has
  n//2 + 1 bins along `axis`; np.fft.irfft).
`norm` scales as NumPy's: a forward transform by 1 ("backward"), 1/sqrt(n) ("ortho") or
1/n ("forward"), an inverse one by 1/n, 1/sqrt(n), 1. Zero padding and truncation (`n`,
`s`), the multi-axis real transforms, hfft / ihfft and the shifts are compositions
(vecjac/_src/ops/fft/functions.py), so these rules stay the whole story.

The rules, under the complex convention of the op library (the gradient is the adjoint of
the JVP under Re<a, b> = Re(sum(conj(a) b)); ops/elementwise/complex_parts.py). Write
c for the forward scale, F for the unnormalized DFT (F_jk = exp(-2 pi i jk / n)), so that
F^H = conj(F) = n ifft_backward, and call the norms "backward" and "forward" dual to each
other ("ortho" is its own dual): a transform with the dual norm and the other direction
has the same scale.
- FFT is C-linear: its gradient is L^H g, the transform in the other direction with the
  dual norm (an unnormalized DFT pulls back by n * ifft). A real x takes the real part
  (the tape does). JVP: the op on the tangent.
- RFFT is R-linear from R^n: R x = c P F x, P keeping bins 0 .. n//2. Its adjoint is
  R^T g = c Re(F^H P^T g) (a real result: x is real). Re(F^H v) = F^H (v + Hv) / 2 with
  (Hv)_k = conj(v_-k), the Hermitian half of v; for v = P^T g that spectrum holds g_k / 2
  at the bins 0 < k < n/2 (and their conjugates at -k), Re g_0 at DC and Re g_n/2 at the
  Nyquist bin of an even n: exactly what IRFFT reads from the half spectrum w * g, with
  weights w = 1/2 but 1 at DC and Nyquist. So the gradient is IRFFT(w g) with the dual
  norm: the bins standing for two conjugate bins count twice in the forward map, DC and
  Nyquist once.
- IRFFT is R-linear to R^n: C h = c' Re(F^H P^T (u h)) with u = 1/w (2, but 1 at DC and
  Nyquist): the imaginary parts of the DC and Nyquist bins drop out through Re (in one
  dimension; along the other axes of an n-d transform they mix with the mirrored bins and
  matter). Its adjoint is C^T g = c' u P F g = u * RFFT(g) with the dual norm; the DC and
  Nyquist bins of the rfft of a real g are real, so their imaginary cotangents are zero.
RFFT and IRFFT are each other's gradients, so derivatives of every order are these same
three ops. pfor: one batched transform, the axes shifted past the loop axis. Sparsity:
every output depends on every input along the transformed axes, element by element across
the others.
"""
import functools

import numpy as np

from vecjac._src.core.dispatch import apply
from vecjac._src.core.registry import Op, lib, register
from vecjac._src.core.samples import Arg, Sample
from vecjac._src.core.tensor import Tensor
from vecjac._src.ops.array.shaping import stack
from vecjac._src.ops.elementwise.complex_parts import complex as make_complex
from vecjac._src.ops.elementwise.complex_parts import imag, real
from vecjac._src.transforms.forward.rules import linear
from vecjac._src.transforms.pfor.converters import axis_shift
from vecjac._src.transforms.sparsity import patterns

__all__ = []

NORMS = ("backward", "ortho", "forward")
DUAL = {"backward": "forward", "ortho": "ortho", "forward": "backward"}


@functools.lru_cache(maxsize=256)
def _half_weights(n, axis, ndim, dtype, bins_twice):
    """The weights of an n-point half spectrum along `axis` of a rank-`ndim` value, shaped
    to broadcast: 1 at DC and at Nyquist (even n), elsewhere 2 (`bins_twice`: the bin
    stands for itself and its conjugate) or 1/2. None when every weight is 1 (n <= 2).
    Read-only: shared by every call."""
    if n <= 2:
        return None
    m = n // 2 + 1
    w = np.full(m, 2.0 if bins_twice else 0.5, dtype=dtype)
    w[0] = 1
    if n % 2 == 0:
        w[-1] = 1
    w = w.reshape((m,) + (1,) * (ndim - 1 - axis))
    w.flags.writeable = False
    return w


def _weighted(g, n, axis, ndim, bins_twice):
    w = _half_weights(n, axis, ndim, np.finfo(g.dtype).dtype, bins_twice)
    return g if w is None else g * Tensor(w)


# -- sample helpers: the registry's checks compare real values, so complex results are
# given as their real and imaginary parts (the registry draws real inputs)
def _parts(z):
    return stack([real(z), imag(z)], axis=-1)


# the complex input drawn as its real and imaginary parts (the registry's complex variants
# of these samples would draw the parts complex: no_complex)
_PAIRS = "real and imaginary parts of the input, drawn as reals"


def _c2c(re, im, axes, norm, inverse):
    return _parts(apply(FFT, make_complex(re, im), axes=axes, norm=norm, inverse=inverse))


def _c2c_of_real(x, axes, norm, inverse):
    return _parts(apply(FFT, x, axes=axes, norm=norm, inverse=inverse))


def _r2c(x, axis, norm):
    return _parts(apply(RFFT, x, axis=axis, norm=norm))


def _c2r(re, im, axis, n, norm):
    return apply(IRFFT, make_complex(re, im), axis=axis, n=n, norm=norm)


def _c2r_of_real(x, axis, n, norm):
    return apply(IRFFT, x, axis=axis, n=n, norm=norm)


# -- the primitives -----------------------------------------------------------------------
@register
class FFT(Op):
    """The DFT (inverse=False) or inverse DFT over `axes` (a tuple of non-negative axes;
    repeated axes transform again), scaled by `norm`; complex output of x's precision."""
    complex_rules = True
    fresh_output = True
    jvp = linear
    converter = axis_shift("axes")
    pattern = patterns.along_axis("axes")
    samples = (Sample(_c2c, Arg.float("m", 3), Arg.float("m", 3), axes=(1,), norm="backward",
                      inverse=False, no_complex=_PAIRS),
               Sample(_c2c, Arg.float(2, "n", 4), Arg.float(2, "n", 4), axes=(0, 2),
                      norm="ortho", inverse=True, no_complex=_PAIRS),
               Sample(_c2c, Arg.float("n", 2), Arg.float("n", 2), axes=(1,), norm="forward",
                      inverse=True, dim_range=(0, 3), no_complex=_PAIRS),
               Sample(_c2c_of_real, Arg.float("n", 5), axes=(0, 1), norm="forward",
                      inverse=False))

    def forward(self, x, axes, norm, inverse):
        transform = np.fft.ifft if inverse else np.fft.fft
        for axis in reversed(axes):  # np.fft.fftn's order: the last axis first
            x = transform(x, axis=axis, norm=norm)
        return x

    def gradient(self, e, g):
        a = e.attrs
        return apply(FFT, g, axes=a["axes"], norm=DUAL[a["norm"]], inverse=not a["inverse"])


@register
class RFFT(Op):
    """Bins 0 .. n//2 of the DFT of a real x along `axis` (n = x.shape[axis] >= 1)."""
    complex_rules = True
    fresh_output = True
    jvp = linear
    converter = axis_shift("axis")
    pattern = patterns.along_axis("axis")
    samples = (Sample(_r2c, Arg.float("m", 4), axis=1, norm="backward", no_complex="rfft takes real input"),
               Sample(_r2c, Arg.float(5, "m"), axis=0, norm="ortho", no_complex="rfft takes real input"),
               Sample(_r2c, Arg.float("n"), axis=0, norm="forward", no_complex="rfft takes real input"),
               Sample(_r2c, Arg.float(2, 6, "m"), axis=1, norm="backward", dim_range=(0, 2), no_complex="rfft takes real input"))

    def forward(self, x, axis, norm):
        return np.fft.rfft(x, axis=axis, norm=norm)

    def gradient(self, e, g):
        x = e.inputs[0]
        axis = e.attrs["axis"]
        n = x.shape[axis]
        return apply(IRFFT, _weighted(g, n, axis, x.ndim, False), axis=axis, n=n,
                     norm=DUAL[e.attrs["norm"]])


@register
class IRFFT(Op):
    """The real n-point signal of the half spectrum x (x.shape[axis] == n//2 + 1) along
    `axis`: np.fft.irfft (the imaginary parts of the DC and Nyquist bins are not read)."""
    complex_rules = True
    fresh_output = True
    jvp = linear
    converter = axis_shift("axis")
    pattern = patterns.along_axis("axis")
    samples = (Sample(_c2r, Arg.float("m", 3), Arg.float("m", 3), axis=1, n=4,
                      norm="backward", no_complex=_PAIRS),
               Sample(_c2r, Arg.float(3, "m"), Arg.float(3, "m"), axis=0, n=5, norm="ortho", no_complex=_PAIRS),
               Sample(_c2r, Arg.float(1, "m"), Arg.float(1, "m"), axis=0, n=1,
                      norm="forward", no_complex=_PAIRS),
               Sample(_c2r, Arg.float("m", 2), Arg.float("m", 2), axis=1, n=2,
                      norm="backward", no_complex=_PAIRS),
               Sample(_c2r_of_real, Arg.float(4, "m"), axis=0, n=7, norm="forward"))

    def forward(self, x, axis, n, norm):
        return np.fft.irfft(x, n=n, axis=axis, norm=norm)

    def gradient(self, e, g):
        a = e.attrs
        x = e.inputs[0]
        spectrum = apply(RFFT, g, axis=a["axis"], norm=DUAL[a["norm"]])
        return _weighted(spectrum, a["n"], a["axis"], x.ndim, True)


lib.publish(globals(), __all__)
