"""vj.scipy.signal: a differentiable scipy.signal.convolve.

The implementation and its notes: vecjac/_src/api/scipy/signal.py."""
from vecjac._src.api.scipy.signal import convolve  # noqa: F401

__all__ = ['convolve']
