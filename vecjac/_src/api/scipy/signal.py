"""vj.scipy.signal: a differentiable scipy.signal.convolve.

The op (vecjac/_src/ops/scipy/signal.py) computes "full" and "valid" convolutions with
scipy.signal.convolve; "same" is the centered slice of "full", as in SciPy.
"""
from vecjac._src.core.dispatch import apply, to_input
from vecjac._src.ops.elementwise.arithmetic import multiply
from vecjac._src.ops.scipy.signal import Convolve

__all__ = ["convolve"]

_MODES = ("full", "valid", "same")
_METHODS = ("auto", "direct", "fft")


def convolve(in1, in2, mode="full", method="auto"):
    """The N-dimensional convolution of in1 and in2 (same rank), differentiable in both.

    mode "full": every overlap, shape in1.shape + in2.shape - 1; "valid": only full
    overlaps, shape |in1.shape - in2.shape| + 1 (one input must be at least as large as
    the other on every axis); "same": the center of "full" with in1's shape. `method`
    ("auto", "direct", "fft") is passed to SciPy. Real inputs; ints stay ints (not
    differentiable), as in SciPy.

    >>> vj.scipy.signal.convolve(vj.constant([1.0, 2.0, 3.0]), [0.0, 1.0, 0.5]).numpy()
    array([0. , 1. , 2.5, 4. , 1.5])
    """
    fn = "vj.scipy.signal.convolve"
    a = to_input(in1, (in1, in2), fn, "in1")
    b = to_input(in2, (in1, in2), fn, "in2")
    for name, t in (("in1", a), ("in2", b)):
        if t.dtype.kind not in "iuf":
            raise TypeError(f"{fn}: {name} must be a real (int or float) array, got dtype "
                            f"{t.dtype}")
    if not isinstance(mode, str) or mode not in _MODES:
        raise ValueError(f"{fn}: mode must be 'full', 'valid' or 'same', got {mode!r}")
    if not isinstance(method, str) or method not in _METHODS:
        raise ValueError(f"{fn}: method must be 'auto', 'direct' or 'fft', got {method!r}")
    if a.ndim != b.ndim:
        raise ValueError(f"{fn}: in1 and in2 should have the same dimensionality, got "
                         f"shapes {a.shape} and {b.shape}")
    if a.ndim == 0:
        return multiply(a, b)
    if a.size == 0 or b.size == 0:
        raise ValueError(f"{fn}: in1 and in2 must not be empty, got shapes {a.shape} and "
                         f"{b.shape}")
    if mode == "valid":
        if not all(n1 >= n2 for n1, n2 in zip(a.shape, b.shape)):
            if not all(n2 >= n1 for n1, n2 in zip(a.shape, b.shape)):
                raise ValueError(f"{fn}: for 'valid' mode, one of in1 and in2 must be at "
                                 f"least as large as the other in every dimension, got "
                                 f"shapes {a.shape} and {b.shape}")
            a, b = b, a  # convolution commutes
        return apply(Convolve, a, b, mode="valid", method=method, batch=0)
    full = apply(Convolve, a, b, mode="full", method=method, batch=0)
    if mode == "full":
        return full
    start = [(n2 - 1) // 2 for n2 in b.shape]
    return full[tuple(slice(s, s + n1) for s, n1 in zip(start, a.shape))]

