"""TensorFlow's FFT functions (tf.signal): the transforms over the innermost 1, 2 or 3 axes,
TF's n-d ones over any axes, and the shifts, built on vecjac's FFT ops like NumPy's
(vecjac/_src/ops/fft/functions.py).

- fft, ifft, fft2d, ifft2d, fft3d, ifft3d(input): the complex (inverse) DFT over the
  innermost 1, 2, 3 axes, unnormalized forward and 1/n inverse. A real input is taken as
  complex (TF asks for a complex one; NumPy's fft accepts both).
- rfft, rfft2d, rfft3d(input_tensor, fft_length=None): the half spectrum of a real input;
  `fft_length` (one int per transformed axis; a list, an array or an integer Tensor) pads
  or crops the input along those axes.
- irfft, irfft2d, irfft3d(input_tensor, fft_length=None): the real signal of a half
  spectrum; `fft_length` is the output's length along each transformed axis (default: the
  input's, and 2 * (bins - 1) along the innermost axis), the innermost axis of the input
  padded or cropped to fft_length[-1] // 2 + 1 bins.
- fftnd, ifftnd, rfftnd, irfftnd(input_tensor, fft_length=None, axes=None, norm=None):
  TF's n-d forms (axes default: the innermost len(fft_length) axes, else all; norm
  "backward", "ortho" or "forward").
- fftshift, ifftshift(x, axes=None).
Derivatives follow the op library's complex convention (TF's: the gradient of a real loss
with respect to z = x + iy is dL/dx + i dL/dy).
"""
import builtins

import numpy as np

from vecjac._src.core.arguments import read_ints
from vecjac._src.core.tensor import Tensor
from vecjac._src.ops.fft import functions as _f

__all__ = ["fft", "ifft", "fft2d", "ifft2d", "fft3d", "ifft3d", "rfft", "irfft", "rfft2d",
           "irfft2d", "rfft3d", "irfft3d", "fftnd", "ifftnd", "rfftnd", "irfftnd",
           "fftshift", "ifftshift"]


def _innermost(x, rank, fn, arg):
    """The innermost `rank` axes of x, which must have at least that rank."""
    if x.ndim < rank:
        raise ValueError(f"{fn}: {arg} must have rank >= {rank} (the transform runs over "
                         f"its innermost {rank} ax{'is' if rank == 1 else 'es'}), got shape "
                         f"{x.shape}")
    return list(builtins.range(x.ndim - rank, x.ndim))


def _lengths(fft_length, rank, fn):
    """fft_length as a list of positive ints (rank entries when rank is given), or None."""
    if fft_length is None:
        return None
    if isinstance(fft_length, Tensor):
        values = read_ints(fft_length, fn, "fft_length").reshape(-1).tolist()
    elif isinstance(fft_length, (list, tuple, np.ndarray)) or hasattr(fft_length, "__index__"):
        values = np.asarray(fft_length, dtype=object).reshape(-1).tolist()
    else:
        raise TypeError(f"{fn}: fft_length must be a list of ints (one per transformed "
                        f"axis) or None, got {type(fft_length).__name__} {fft_length!r}")
    values = [_f.points(v, fn, "fft_length") for v in values]
    if rank is not None and len(values) != rank:
        raise ValueError(f"{fn}: fft_length must have {rank} entr{'y' if rank == 1 else 'ies'}"
                         f" (one per transformed axis), got {values}")
    return values


def _complex(rank, inverse, fn):
    def transform(input, name=None):
        x = _f.as_signal(input, fn, "input")
        axes = _innermost(x, rank, fn, "input")
        return _f.transform("ifft" if inverse else "fft", x, None, axes, None, fn,
                            args=("input", "fft_length"))
    transform.__name__ = transform.__qualname__ = fn
    transform.__doc__ = (f"The {'inverse ' if inverse else ''}DFT over the innermost {rank} "
                         f"ax{'is' if rank == 1 else 'es'} of `input` (TF's tf.signal."
                         f"{fn}); complex output, {'1/n' if inverse else 'not'} "
                         "normalized.")
    return transform


def _real(rank, inverse, fn):
    kind = "irfft" if inverse else "rfft"

    def transform(input_tensor, fft_length=None, name=None):
        x = _f.as_signal(input_tensor, fn, "input_tensor", real=not inverse)
        axes = _innermost(x, rank, fn, "input_tensor")
        return _f.transform(kind, x, _lengths(fft_length, rank, fn), axes, None, fn,
                            args=("input_tensor", "fft_length"))
    transform.__name__ = transform.__qualname__ = fn
    transform.__doc__ = (
        f"The real signal of the half spectrum `input_tensor` over its innermost {rank} "
        f"ax{'is' if rank == 1 else 'es'} (TF's tf.signal.{fn}); `fft_length`: the "
        "output lengths (default: the input's, 2 * (bins - 1) innermost)." if inverse else
        f"The half spectrum (bins 0 .. n//2 innermost) of the real `input_tensor` over its "
        f"innermost {rank} ax{'is' if rank == 1 else 'es'} (TF's tf.signal.{fn}); "
        "`fft_length` pads or crops the input along them first.")
    return transform


fft = _complex(1, False, "fft")
ifft = _complex(1, True, "ifft")
fft2d = _complex(2, False, "fft2d")
ifft2d = _complex(2, True, "ifft2d")
fft3d = _complex(3, False, "fft3d")
ifft3d = _complex(3, True, "ifft3d")
rfft = _real(1, False, "rfft")
irfft = _real(1, True, "irfft")
rfft2d = _real(2, False, "rfft2d")
irfft2d = _real(2, True, "irfft2d")
rfft3d = _real(3, False, "rfft3d")
irfft3d = _real(3, True, "irfft3d")


def _n_dim(kind, fn):
    def transform(input_tensor, fft_length=None, axes=None, norm=None, name=None):
        x = _f.as_signal(input_tensor, fn, "input_tensor", real=kind == "rfft")
        return _f.transform(kind, x, _lengths(fft_length, None, fn), axes, norm, fn,
                            unique=True, args=("input_tensor", "fft_length"))
    transform.__name__ = transform.__qualname__ = fn
    transform.__doc__ = (f"TF's tf.signal.{fn}: NumPy's {kind}n over `axes` (default: the "
                         "innermost len(fft_length) axes, else all) with output lengths "
                         "`fft_length` and `norm` ('backward', 'ortho', 'forward').")
    return transform


fftnd = _n_dim("fft", "fftnd")
ifftnd = _n_dim("ifft", "ifftnd")
rfftnd = _n_dim("rfft", "rfftnd")
irfftnd = _n_dim("irfft", "irfftnd")


def fftshift(x, axes=None, name=None):
    """The zero-frequency bin moved to the middle: a roll by n // 2 along `axes` (default
    every axis; TF's tf.signal.fftshift, NumPy's np.fft.fftshift)."""
    return _f.shift(x, axes, "fftshift")


def ifftshift(x, axes=None, name=None):
    """The inverse of fftshift: a roll by -(n // 2) along `axes` (default every axis)."""
    return _f.shift(x, axes, "ifftshift", inverse=True)
