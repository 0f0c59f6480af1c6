"""The FFT functions of NumPy and SciPy (np.fft, scipy.fft) as compositions of the three
FFT primitives (vecjac/_src/ops/fft/transforms.py), with their arguments and semantics:

- `n` / `s` zero-pad or truncate the input along the transformed axes first (the end of
  each axis; for the complex-to-real transforms, the half spectrum to s[-1] // 2 + 1
  bins): layout ops (pad, slice) around an unpadded transform, so the gradient of a
  padded transform is the transform's gradient, truncated;
- n-d real transforms are NumPy's: rfftn is a real transform along the last axis, then
  complex ones along the others (the last first); irfftn the inverse complex transforms
  along the leading axes (in order), then the real one along the last axis;
- hfft(a, n) = irfft(conj(a), n) and ihfft(a, n) = conj(rfft(a, n)), each with the dual
  norm (SciPy's hfftn / ihfftn likewise with irfftn / rfftn);
- fftshift / ifftshift roll by n // 2 (-(n // 2)) along the axes; fftfreq and rfftfreq
  are NumPy's own (constants: no Tensor in; a Tensor spacing d divides through vecjac).
Values match NumPy's: the same one-dimensional transforms in the same order, on the same
dtypes (integer and bool inputs as float64, as NumPy computes them).

Each function takes `fn`, the name its errors give ("np.fft.fft", "scipy.fft.rfft2",
"fft2d"): the NumPy dispatch (vecjac/_src/numpy/fft.py), vj.scipy.fft and SciPy's backend
(vecjac/_src/api/scipy/fft.py), and vj.signal (tf_signal.py) share them.
"""
import builtins
import numbers
import operator

import numpy as np

from vecjac._src.core.dispatch import apply, to_input
from vecjac._src.core.tensor import Tensor
from vecjac._src.ops.array.indexing import StridedSlice
from vecjac._src.ops.array.layout import PadV2, roll
from vecjac._src.ops.elementwise.complex_parts import conj
from vecjac._src.ops.elementwise.logic import cast
from vecjac._src.ops.fft.transforms import DUAL, FFT, IRFFT, NORMS, RFFT

__all__ = []

KINDS = ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft")


# -- arguments ----------------------------------------------------------------------------
def check_norm(norm, fn):
    if norm is None:
        return "backward"
    if isinstance(norm, str) and norm in NORMS:
        return norm
    raise ValueError(f'{fn}: norm must be "backward", "ortho" or "forward" (or None for '
                     f'"backward"), got {norm!r}')


def as_signal(a, fn, arg="a", real=False, widen_half=False):
    """`a` as a Tensor to transform: integers and bools as float64 (the dtype NumPy
    computes them in); float16 as it is (NumPy computes in float32 with a float16 scale
    factor, and irfft returns float16), or as float32 with `widen_half` (SciPy's values);
    `real` refuses complex values (rfft's input)."""
    x = to_input(a, fn=fn, arg=arg)
    kind = x.dtype.kind
    if kind == "c":
        if real:
            raise TypeError(f"{fn}: {arg} must be real (this transform takes a real "
                            f"signal; the complex ones take complex input), got dtype "
                            f"{x.dtype}")
        return x
    if kind == "f":
        return cast(x, np.float32) if widen_half and x.dtype == np.float16 else x
    if kind in "biu":
        return cast(x, np.float64)
    raise TypeError(f"{fn}: {arg} must be a numeric tensor, got dtype {x.dtype}")


def points(n, fn, arg):
    """A number of FFT points: a positive int (bools and floats refused, as NumPy does)."""
    bad = isinstance(n, (bool, np.bool_)) or not hasattr(n, "__index__")
    if not bad:
        try:
            n = operator.index(n)
        except TypeError:  # an array of several values, or of floats
            bad = True
    if bad:
        raise TypeError(f"{fn}: {arg} must be an int (the number of FFT points) or None, "
                        f"got {type(n).__name__} {n!r}")
    if n < 1:
        raise ValueError(f"{fn}: {arg} must be a positive number of FFT points (>= 1), "
                         f"got {n}")
    return n


def _axis(axis, ndim, fn, arg):
    """One axis, non-negative. Out of range: NumPy's AxisError (a ValueError and an
    IndexError) for the np.fft functions, a ValueError for the others (SciPy's and TF's
    names), both naming the function and the argument."""
    bad = isinstance(axis, (bool, np.bool_)) or not hasattr(axis, "__index__")
    if not bad:
        try:
            a = operator.index(axis)
        except TypeError:
            bad = True
    if bad:
        raise TypeError(f"{fn}: {arg} must be an int, got {type(axis).__name__} {axis!r}")
    if not -ndim <= a < ndim:
        error = np.exceptions.AxisError if fn.startswith("np.") else ValueError
        raise error(
            f"{fn}: {arg}={a} is out of range for an input of rank {ndim} (expected "
            f"{-ndim} <= {arg} < {ndim})" if ndim else
            f"{fn}: {arg}={a} is out of range for a scalar input (rank 0): transforms need "
            "at least one axis")
    return a % ndim


def _sequence(value, fn, arg):
    if isinstance(value, Tensor):
        value = value.numpy()
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if hasattr(value, "__index__") and not isinstance(value, (bool, np.bool_)):
        return [value]
    if not isinstance(value, (list, tuple)):
        raise TypeError(f"{fn}: {arg} must be a sequence of ints, got "
                        f"{type(value).__name__} {value!r}")
    return list(value)


def _default_length(x, axis, halved, fn, arg):
    """The length of a transform along `axis` without n: the input's, or for the last axis
    of a complex-to-real transform (`halved`) 2 * (bins - 1). `arg` names the argument
    that would give it (n, s, fft_length)."""
    m = x.shape[axis]
    n = 2 * (m - 1) if halved else m
    if n < 1:
        raise ValueError(
            f"{fn}: the output length 2 * (bins - 1) is {n} for the input's {m} bin(s) along "
            f"axis {axis}; give the output length explicitly ({arg})" if halved else
            f"{fn}: the input has length 0 along axis {axis}: nothing to transform (give "
            f"{arg} to zero-pad it)")
    return n


def plan(x, s, axes, fn, halved=False, arg="s"):
    """The transformed axes (non-negative; repeats kept: NumPy transforms again) and the
    lengths along them, from NumPy's `s` and `axes`: axes=None means every axis (the last
    len(s) ones with s given), s=None the default lengths; an entry -1 of s is the input's
    length, None the default; `halved` (irfftn) makes the default last length
    2 * (bins - 1). `arg` is the name of s in errors."""
    ndim = x.ndim
    lengths = None if s is None else _sequence(s, fn, arg)
    if axes is None:
        count = ndim if lengths is None else len(lengths)
        if count > ndim:
            raise ValueError(f"{fn}: {arg} has {count} entries, more than the input's "
                             f"rank {ndim}")
        axes = list(builtins.range(ndim - count, ndim))
    else:
        axes = [_axis(a, ndim, fn, "axes") for a in _sequence(axes, fn, "axes")]
    if lengths is None:
        lengths = [None] * len(axes)
    elif len(lengths) != len(axes):
        raise ValueError(f"{fn}: {arg} and axes must have the same length, got "
                         f"{arg}={lengths} ({len(lengths)} entries) and axes={axes} "
                         f"({len(axes)})")
    out = []
    for k, (a, n) in enumerate(zip(axes, lengths)):
        if n is None:
            n = _default_length(x, a, halved and k == len(axes) - 1, fn, arg)
        elif isinstance(n, numbers.Integral) and not isinstance(n, (bool, np.bool_)) and \
                n == -1:
            n = _default_length(x, a, False, fn, arg)
        else:
            n = points(n, fn, arg)
        out.append(n)
    return axes, out


def one_axis(x, n, axis, fn, halved=False):
    """The (axes, lengths) of a one-dimensional transform's n and axis."""
    a = _axis(axis, x.ndim, fn, "axis")
    return [a], [_default_length(x, a, halved, fn, "n") if n is None else points(n, fn, "n")]


# -- zero padding and truncation ----------------------------------------------------------
def fit(x, axis, n):
    """x truncated or zero-padded (at the end) to length n along `axis`."""
    m = x.shape[axis]
    if n == m:
        return x
    if n < m:
        return apply(StridedSlice, x, key=(builtins.slice(None),) * axis +
                     (builtins.slice(0, n),))
    paddings = [(0, 0)] * x.ndim
    paddings[axis] = (0, n - m)
    return apply(PadV2, x, Tensor(np.zeros((), x.dtype)), paddings=tuple(paddings))


# -- the transforms -----------------------------------------------------------------------
def complex_transform(x, axes, lengths, norm, inverse):
    """The complex (inverse) DFT along `axes`, the last first (np.fft.fftn's order), x
    fitted to `lengths`: one FFT op, or one per axis when an axis repeats."""
    if not axes:
        return x
    if len(set(axes)) == len(axes):
        for a, n in zip(axes, lengths):
            x = fit(x, a, n)
        return apply(FFT, x, axes=tuple(axes), norm=norm, inverse=inverse)
    for a, n in reversed(list(zip(axes, lengths))):
        x = apply(FFT, fit(x, a, n), axes=(a,), norm=norm, inverse=inverse)
    return x


def real_transform(x, axes, lengths, norm):
    """rfftn: the real transform along the last axis, then complex ones along the rest."""
    last = axes[-1]
    y = apply(RFFT, fit(x, last, lengths[-1]), axis=last, norm=norm)
    return complex_transform(y, axes[:-1], lengths[:-1], norm, False)


def real_inverse(x, axes, lengths, norm):
    """irfftn: inverse complex transforms along the leading axes in order, then the real
    one (output length lengths[-1]) along the last axis."""
    y = complex_transform(x, axes[:-1][::-1], lengths[:-1][::-1], norm, True)
    last, n = axes[-1], lengths[-1]
    return apply(IRFFT, fit(y, last, n // 2 + 1), axis=last, n=n, norm=norm)


def transform(kind, a, s, axes, norm, fn, one_dim=False, unique=False, widen_half=False,
              args=("a", "s")):
    """One of KINDS, n-dimensional over (s, axes) as NumPy's <kind>n; with `one_dim`, s
    and axes are the one-dimensional function's n and axis; `unique` refuses a repeated
    axis (SciPy and TF do; NumPy transforms again), `widen_half` computes float16 as
    float32 (SciPy); `args`: the names of a and s in errors."""
    norm = check_norm(norm, fn)
    x = as_signal(a, fn, args[0], real=kind in ("rfft", "ihfft"), widen_half=widen_half)
    halved = kind in ("irfft", "hfft")
    if one_dim:
        axes, lengths = one_axis(x, s, axes, fn, halved)
    else:
        axes, lengths = plan(x, s, axes, fn, halved, args[1])
        if unique and len(set(axes)) != len(axes):
            raise ValueError(f"{fn}: axes must be unique, got {axes}")
    if kind in ("fft", "ifft"):
        return complex_transform(x, axes, lengths, norm, kind == "ifft")
    if not axes:
        raise ValueError(f"{fn}: axes must name at least one axis for a real transform, "
                         "got none")
    if kind == "rfft":
        return real_transform(x, axes, lengths, norm)
    if kind == "irfft":
        return real_inverse(x, axes, lengths, norm)
    if kind == "hfft":
        return real_inverse(conj(x), axes, lengths, DUAL[norm])
    return conj(real_transform(x, axes, lengths, DUAL[norm]))  # ihfft


def shift(x, axes, fn, inverse=False):
    """fftshift (the zero frequency moved to the middle) or ifftshift (its inverse): a
    roll by n // 2 (-(n // 2)) along each axis (None: every axis)."""
    t = to_input(x, fn=fn, arg="x")
    if t.ndim == 0:
        raise ValueError(f"{fn}: x must have at least one axis to shift, got a scalar")
    if axes is None:
        axes = list(builtins.range(t.ndim))
    else:
        axes = [_axis(a, t.ndim, fn, "axes") for a in _sequence(axes, fn, "axes")]
    if not axes:
        return t
    shifts = [-(t.shape[a] // 2) if inverse else t.shape[a] // 2 for a in axes]
    return roll(t, shifts, axes)
