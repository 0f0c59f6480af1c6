"""np.fft on Tensors (vecjac/_src/numpy/dispatch.py): fft, ifft, rfft, irfft, hfft, ihfft,
fft2, ifft2, rfft2, irfft2, fftn, ifftn, rfftn, irfftn with NumPy's `n` / `s`, `axis` /
`axes` and `norm`, and fftshift / ifftshift, as compositions of vecjac's FFT ops
(vecjac/_src/ops/fft/functions.py): differentiable (complex values follow the op
library's convention), vectorizable, traceable, with values equal to NumPy's.
np.fft.fftfreq and rfftfreq take no array, so NumPy's protocols never see them: they
return NumPy's constants (a Tensor spacing `d` divides through vecjac operators).
"""
from vecjac._src.numpy.tables import _functions
from vecjac._src.ops.fft import functions as _f

_PADDED = " (n / s: a zero pad or a slice first)"


def _one_dim(kind, target):
    @_functions(target + _PADDED, f"fft.{kind}")
    def adapter(a, n=None, axis=-1, norm=None, out=None):
        return _f.transform(kind, a, n, axis, norm, f"np.fft.{kind}", one_dim=True)
    adapter.__name__ = f"_{kind}"
    return adapter


def _n_dim(kind, target, two):
    name = f"{kind}2" if two else f"{kind}n"
    default = (-2, -1) if two else None

    @_functions(target + _PADDED, f"fft.{name}")
    def adapter(a, s=None, axes=default, norm=None, out=None):
        return _f.transform(kind, a, s, axes, norm, f"np.fft.{name}")
    adapter.__name__ = f"_{name}"
    return adapter


_C2C, _IC2C = "FFT (complex DFT op)", "FFT (inverse=True)"
_R2C = "RFFT along the last axis, FFT along the others"
_C2R = "FFT (inverse) along the leading axes, IRFFT along the last"
_fft, _ifft = _one_dim("fft", _C2C), _one_dim("ifft", _IC2C)
_rfft, _irfft = _one_dim("rfft", "RFFT"), _one_dim("irfft", "IRFFT")
_hfft = _one_dim("hfft", "IRFFT of vj.math.conj(a), the dual norm")
_ihfft = _one_dim("ihfft", "vj.math.conj of RFFT, the dual norm")
_fft2, _fftn = _n_dim("fft", _C2C, True), _n_dim("fft", _C2C, False)
_ifft2, _ifftn = _n_dim("ifft", _IC2C, True), _n_dim("ifft", _IC2C, False)
_rfft2, _rfftn = _n_dim("rfft", _R2C, True), _n_dim("rfft", _R2C, False)
_irfft2, _irfftn = _n_dim("irfft", _C2R, True), _n_dim("irfft", _C2R, False)


@_functions("vj.roll by n // 2 along the axes", "fft.fftshift")
def _fftshift(x, axes=None):
    return _f.shift(x, axes, "np.fft.fftshift")


@_functions("vj.roll by -(n // 2) along the axes", "fft.ifftshift")
def _ifftshift(x, axes=None):
    return _f.shift(x, axes, "np.fft.ifftshift", inverse=True)
