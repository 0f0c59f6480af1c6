"""vj.scipy.fft: SciPy's FFT functions with SciPy's signatures, differentiable in every
mode; `backend` is the uarray backend through which `scipy.fft.<name>(tensor)` runs them
(registered by `import vecjac`).

The implementation and its notes: vecjac/_src/api/scipy/fft.py."""
from vecjac._src.api.scipy.fft import (backend, fft, fft2, fftfreq, fftn, fftshift,  # noqa: F401
                                       hfft, hfft2, hfftn, ifft, ifft2, ifftn, ifftshift,
                                       ihfft, ihfft2, ihfftn, irfft, irfft2, irfftn, rfft,
                                       rfft2, rfftfreq, rfftn)

__all__ = ['fft', 'ifft', 'fft2', 'ifft2', 'fftn', 'ifftn', 'rfft', 'irfft', 'rfft2',
           'irfft2', 'rfftn', 'irfftn', 'hfft', 'ihfft', 'hfft2', 'ihfft2', 'hfftn',
           'ihfftn', 'fftshift', 'ifftshift', 'fftfreq', 'rfftfreq', 'backend']
