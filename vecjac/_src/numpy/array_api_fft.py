"""The array API's `fft` extension (`xp.fft`) on vecjac Tensors: fft, ifft, fftn, ifftn,
rfft, irfft, rfftn, irfftn, hfft, ihfft, fftfreq, rfftfreq, fftshift, ifftshift with the
standard's signatures, run by vecjac's FFT ops (vecjac/_src/ops/fft/functions.py: NumPy's
semantics and values), so array-API code differentiates through its FFTs. The complex
transforms accept real input too (the standard asks for complex input and leaves real
input to the library; NumPy and vecjac read it as complex).
"""
import numpy as np

from vecjac._src.core.tensor import Tensor
from vecjac._src.numpy.array_api_elementwise import as_tensor
from vecjac._src.ops.elementwise.logic import cast
from vecjac._src.ops.fft import functions as _f

__all__ = ["fft", "ifft", "fftn", "ifftn", "rfft", "irfft", "rfftn", "irfftn", "hfft",
           "ihfft", "fftfreq", "rfftfreq", "fftshift", "ifftshift"]


def _one_dim(kind):
    fn = f"fft.{kind}"

    def transform(x, /, *, n=None, axis=-1, norm="backward"):
        return _f.transform(kind, as_tensor(x, f"{fn}: x"), n, axis, norm, fn, one_dim=True,
                            args=("x", "n"))
    transform.__name__ = transform.__qualname__ = kind
    transform.__doc__ = f"The array API's fft.{kind} (NumPy's np.fft.{kind}), differentiable."
    return transform


def _n_dim(kind):
    fn = f"fft.{kind}n"

    def transform(x, /, *, s=None, axes=None, norm="backward"):
        return _f.transform(kind, as_tensor(x, f"{fn}: x"), s, axes, norm, fn, unique=True,
                            args=("x", "s"))
    transform.__name__ = transform.__qualname__ = f"{kind}n"
    transform.__doc__ = (f"The array API's fft.{kind}n (NumPy's np.fft.{kind}n; a repeated "
                         "axis is an error), differentiable.")
    return transform


fft, ifft, rfft, irfft, hfft, ihfft = [_one_dim(k) for k in _f.KINDS]
fftn, ifftn, rfftn, irfftn = [_n_dim(k) for k in ("fft", "ifft", "rfft", "irfft")]


def _frequencies(n, d, dtype, real, fn):
    n = _f.points(n, fn, "n")
    values = np.fft.rfftfreq(n, d) if real else np.fft.fftfreq(n, d)
    out = Tensor(np.asarray(values, np.float64))
    if dtype is not None and np.dtype(dtype) != np.float64:
        if np.dtype(dtype).kind != "f":
            raise TypeError(f"{fn}: dtype must be a real floating dtype, got {dtype}")
        out = cast(out, dtype)
    return out


def fftfreq(n, /, *, d=1.0, dtype=None, device=None):
    """The sample frequencies of an n-point DFT, [0, 1, ..., -1] / (d n)."""
    return _frequencies(n, d, dtype, False, "fft.fftfreq")


def rfftfreq(n, /, *, d=1.0, dtype=None, device=None):
    """The sample frequencies of rfft's bins, [0, 1, ..., n // 2] / (d n)."""
    return _frequencies(n, d, dtype, True, "fft.rfftfreq")


def fftshift(x, /, *, axes=None):
    """The zero-frequency bin moved to the middle along `axes` (default every axis)."""
    return _f.shift(as_tensor(x, "fft.fftshift: x"), axes, "fft.fftshift")


def ifftshift(x, /, *, axes=None):
    """The inverse of fftshift."""
    return _f.shift(as_tensor(x, "fft.ifftshift: x"), axes, "fft.ifftshift", inverse=True)
