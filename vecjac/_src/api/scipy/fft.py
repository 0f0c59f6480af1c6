"""vj.scipy.fft, and scipy.fft on Tensors: SciPy's FFT functions with SciPy's signatures,
built on vecjac's FFT ops (vecjac/_src/ops/fft/functions.py), and the uarray backend that
routes `scipy.fft.<name>(tensor)` to them.

SciPy's FFT functions are uarray multimethods (domain "numpy.scipy.fft"): without a
backend that knows Tensors, SciPy's own converts its input with np.asarray, and the
derivative is lost (a tape warns, a functional transform refuses). vecjac registers
`backend` (scipy.fft.register_backend): registered backends are tried before SciPy's
default one (which SciPy installs as its global backend with try_last=True), and this one
answers only calls whose data argument is a Tensor or Variable, leaving every other call
to SciPy. Importing SciPy takes about 0.4 s, so vecjac does not: `install_backend()`
(called by `import vecjac`) registers the backend at once when scipy.fft is already
loaded, and otherwise puts a finder on sys.meta_path that registers it right after
scipy.fft is first imported, then leaves. A global backend of your own
(scipy.fft.set_global_backend(b) without try_last) is tried before registered ones; use
`with scipy.fft.set_backend(vj.scipy.fft.backend):` to put vecjac first there.

Covered: fft, ifft, fft2, ifft2, fftn, ifftn, rfft, irfft, rfft2, irfft2, rfftn, irfftn,
hfft, ihfft, hfft2, ihfft2, hfftn, ihfftn (fftshift, ifftshift, fftfreq and rfftfreq are
not multimethods: SciPy hands them to np.fft, whose dispatch reaches vecjac). The real
and discrete cosine / sine / Hankel transforms (dct, dst, fht ...) are not: SciPy computes
them on the converted array, as before. `overwrite_x` and `workers` are accepted and
ignored (Tensors are immutable; NumPy's transforms are single-threaded); a `plan` raises
NotImplementedError, as SciPy's own functions do. Values agree with SciPy's to rounding
(vecjac computes NumPy's one-dimensional transforms axis by axis); a repeated axis is a
ValueError, as in SciPy.
"""
import sys

import numpy as np

from vecjac._src.core.dispatch import to_input
from vecjac._src.core.tensor import Tensor
from vecjac._src.core.variables import Variable
from vecjac._src.ops.fft import functions as _f

__all__ = ["fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfft2",
           "irfft2", "rfftn", "irfftn", "hfft", "ihfft", "hfft2", "ihfft2", "hfftn",
           "ihfftn", "fftshift", "ifftshift", "fftfreq", "rfftfreq", "backend"]

_DESCRIPTION = {
    "fft": "the complex DFT", "ifft": "the inverse complex DFT",
    "rfft": "the half spectrum (bins 0 .. n//2 along the last axis) of a real input",
    "irfft": "the real signal of a half spectrum",
    "hfft": "the (real) DFT of a signal with Hermitian symmetry, given its first half",
    "ihfft": "the half of the inverse DFT of a real input (the inverse of hfft)"}


def _check(fn, workers, plan):
    if plan is not None:
        raise NotImplementedError(f"{fn}: passing a precomputed plan is not supported (nor "
                                  "is it by SciPy's own functions)")
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int)):
        raise TypeError(f"{fn}: workers must be an int or None, got {workers!r}")


def _one_dim(kind):
    fn = f"scipy.fft.{kind}"

    def transform(x, n=None, axis=-1, norm=None, overwrite_x=False, workers=None, *,
                  plan=None):
        _check(fn, workers, plan)
        return _f.transform(kind, x, n, axis, norm, fn, one_dim=True, widen_half=True,
                            args=("x", "n"))
    transform.__name__ = transform.__qualname__ = kind
    transform.__doc__ = (f"SciPy's scipy.fft.{kind}: {_DESCRIPTION[kind]} along `axis`, the "
                         "input zero-padded or truncated to `n` points first; norm "
                         "'backward' (None), 'ortho' or 'forward'. Differentiable.")
    return transform


def _n_dim(kind, two):
    name = f"{kind}2" if two else f"{kind}n"
    fn = f"scipy.fft.{name}"

    def transform(x, s=None, axes=(-2, -1) if two else None, norm=None, overwrite_x=False,
                  workers=None, *, plan=None):
        _check(fn, workers, plan)
        return _f.transform(kind, x, s, axes, norm, fn, unique=True, widen_half=True,
                            args=("x", "s"))
    transform.__name__ = transform.__qualname__ = name
    transform.__doc__ = (f"SciPy's scipy.fft.{name}: {_DESCRIPTION[kind]} over `axes` "
                         f"({'the last two' if two else 'default: all, or the last len(s)'}"
                         "), the input fitted to the lengths `s` first; norm 'backward' "
                         "(None), 'ortho' or 'forward'. Differentiable.")
    return transform


fft, ifft, rfft, irfft, hfft, ihfft = [_one_dim(k) for k in _f.KINDS]
fft2, ifft2, rfft2, irfft2, hfft2, ihfft2 = [_n_dim(k, True) for k in _f.KINDS]
fftn, ifftn, rfftn, irfftn, hfftn, ihfftn = [_n_dim(k, False) for k in _f.KINDS]


def fftshift(x, axes=None):
    """The zero-frequency bin moved to the middle: a roll by n // 2 along `axes` (default
    every axis)."""
    return _f.shift(x, axes, "scipy.fft.fftshift")


def ifftshift(x, axes=None):
    """The inverse of fftshift: a roll by -(n // 2) along `axes` (default every axis)."""
    return _f.shift(x, axes, "scipy.fft.ifftshift", inverse=True)


def _frequencies(n, d, fn, real):
    """k / (d n) for the bins k of an n-point DFT (rfft's: 0 .. n // 2), as NumPy computes
    it (k * (1 / (n d))): a constant Tensor, or a function of a Tensor spacing d."""
    n = _f.points(n, fn, "n")
    spacing = to_input(d, fn=fn, arg="d")
    if spacing.ndim:
        raise ValueError(f"{fn}: d must be a scalar (the sample spacing), got shape "
                         f"{spacing.shape}")
    if spacing.dtype.kind not in "biufc":
        raise TypeError(f"{fn}: d must be a number, got dtype {spacing.dtype}")
    k = np.arange(n // 2 + 1) if real else np.fft.ifftshift(np.arange(-(n // 2), (n + 1) // 2))
    if not isinstance(d, (Tensor, Variable)):
        return Tensor(np.fft.rfftfreq(n, d) if real else np.fft.fftfreq(n, d))
    return Tensor(k.astype(np.float64)) * (1.0 / (n * spacing))


def fftfreq(n, d=1.0, *, xp=None, device=None):
    """The sample frequencies of an n-point DFT, [0, 1, ..., -1] / (d n), as a Tensor
    (NumPy's values; differentiable in a Tensor spacing d)."""
    return _frequencies(n, d, "scipy.fft.fftfreq", False)


def rfftfreq(n, d=1.0, *, xp=None, device=None):
    """The sample frequencies of rfft's bins, [0, 1, ..., n // 2] / (d n), as a Tensor."""
    return _frequencies(n, d, "scipy.fft.rfftfreq", True)


# -- the uarray backend -------------------------------------------------------------------
_BY_NAME = {f.__name__: f for f in (fft, ifft, fft2, ifft2, fftn, ifftn, rfft, irfft, rfft2,
                                    irfft2, rfftn, irfftn, hfft, ihfft, hfft2, ihfft2, hfftn,
                                    ihfftn)}


class backend:  # noqa: N801 (an object of the uarray protocol, named as SciPy's backends are)
    """scipy.fft's backend for Tensors (uarray protocol): `scipy.fft.<name>(tensor)` runs
    vecjac's FFT ops; any other call (an ndarray, a list) and the transforms vecjac lacks
    are left to the next backend (NotImplemented)."""
    __ua_domain__ = "numpy.scipy.fft"

    @staticmethod
    def __ua_function__(method, args, kwargs):
        impl = _BY_NAME.get(getattr(method, "__name__", None))
        data = args[0] if args else kwargs.get("x")
        if impl is None or not isinstance(data, (Tensor, Variable)):
            return NotImplemented
        return impl(*args, **kwargs)


_registered = []


def _register(module):
    if not _registered:
        module.register_backend(backend)
        _registered.append(module)


class _AfterScipyFFT:
    """A finder on sys.meta_path that finds nothing of its own: for "scipy.fft" it asks the
    finders after it and wraps the module's execution, so that the backend is registered
    right after scipy.fft has run; then it leaves sys.meta_path. Any failure leaves the
    import to the other finders, as if this one were not there."""

    def __init__(self):
        self.busy = False

    def find_spec(self, name, path=None, target=None):
        if name != "scipy.fft" or self.busy or _registered:
            return None
        self.busy = True
        try:
            spec = None
            for finder in list(sys.meta_path):
                if finder is not self and hasattr(finder, "find_spec"):
                    spec = finder.find_spec(name, path, target)
                    if spec is not None:
                        break
        except Exception:  # noqa: BLE001 (the import must go on as if this hook were absent)
            return None
        finally:
            self.busy = False
        loader = getattr(spec, "loader", None)
        if loader is None or not hasattr(loader, "exec_module"):
            return None
        run = loader.exec_module

        def exec_module(module):
            run(module)
            try:
                del loader.exec_module  # the loader's own method again
            except AttributeError:
                pass
            if self in sys.meta_path:
                sys.meta_path.remove(self)
            _register(module)
        try:
            loader.exec_module = exec_module
        except (AttributeError, TypeError):  # a loader that takes no attributes
            return None
        return spec


def install_backend():
    """Register `backend` with scipy.fft: now if SciPy's fft module is loaded, else when it
    is first imported. Idempotent."""
    module = sys.modules.get("scipy.fft")
    if module is not None:
        _register(module)
    elif not _registered and not any(isinstance(f, _AfterScipyFFT) for f in sys.meta_path):
        sys.meta_path.insert(0, _AfterScipyFFT())
