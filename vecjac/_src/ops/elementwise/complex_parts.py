"""Complex numbers: conj, real, imag, complex(re, im), abs and angle of complex values.

The convention every rule of the op library follows for complex values (the op fact
`complex_rules`, docs/op_block.md; the public conventions built on it: README "Complex
numbers"): a value z = x + iy is the pair (x, y) of reals, and
- the tangent (jvp) is the ordinary derivative of that real map: for a holomorphic op
  dz_out = f'(z) dz, for any op dz_out = (df/dz) dz + (df/dz*) dz*;
- the cotangent (gradient) is the adjoint of the tangent map under the real inner product
  <a, b> = Re(sum(conj(a) * b)): a holomorphic op pulls g back to conj(f'(z)) * g, a real
  loss L gets dL/dx + i dL/dy (TensorFlow's and PyTorch's convention). Adjoints compose,
  so the chain rule needs nothing more; JAX's convention is the conjugate of this one at
  both ends, which the functional API applies (vecjac/_src/api/).
Here are the ops that are not holomorphic (conj, real, imag, abs, angle) or that leave
the complex plane, each with both rules written out.
"""
import numpy as np

from vecjac._src.core.dispatch import apply, to_input
from vecjac._src.core.registry import Op, lib, register
from vecjac._src.core.samples import Arg, Sample
from vecjac._src.core.shapes import broadcast_shape
from vecjac._src.ops.array.creation import ones_like, zeros_like
from vecjac._src.ops.array.shaping import identity
from vecjac._src.ops.elementwise.logic import Cast, equal, less, where
from vecjac._src.transforms.forward.rules import linear
from vecjac._src.transforms.pfor.converters import broadcasting, elementwise
from vecjac._src.transforms.sparsity import patterns

__all__ = ["conj", "real", "imag", "angle", "complex"]


def _complex_dtype(dtype):
    """The complex dtype holding pairs of `dtype` (float32 -> complex64; float64 and
    integers -> complex128, as NumPy promotes them)."""
    return np.result_type(dtype, np.complex64)


def _real_dtype(dtype):
    return np.empty(0, dtype).real.dtype


@register
class Conj(Op):
    complex_rules = True
    jvp = linear  # conj is R-linear: the tangent is conjugated too
    pattern = patterns.elementwise
    converter = elementwise
    samples = (Sample("conj", Arg.complex(2, "n")), Sample("conj", Arg.complex()))

    def forward(self, x):
        return np.conjugate(x)

    def gradient(self, e, g):  # conj is its own adjoint under Re<a, b>
        return apply(Conj, g)


@register
class Real(Op):
    complex_rules = True
    jvp = linear
    pattern = patterns.elementwise
    converter = elementwise
    samples = (Sample("real", Arg.complex(2, "n")), Sample("real", Arg.complex()))

    def forward(self, x):
        return np.real(x).copy()  # a new array: NumPy's .real is a view of x

    def gradient(self, e, g):  # the adjoint of Re is the embedding g -> g + 0i
        return apply(Cast, g, dtype=e.inputs[0].dtype)


@register
class Imag(Op):
    complex_rules = True
    jvp = linear
    pattern = patterns.elementwise
    converter = elementwise
    samples = (Sample("imag", Arg.complex(2, "n")), Sample("imag", Arg.complex()))

    def forward(self, x):
        return np.imag(x).copy()

    def gradient(self, e, g):  # the adjoint of Im is g -> 0 + ig
        return apply(Complex, zeros_like(g), g)


@register
class Complex(Op):
    """re + i im from two real tensors of one dtype (broadcasting)."""
    complex_rules = True
    jvp = linear
    pattern = patterns.broadcasting
    converter = broadcasting
    samples = (Sample("complex", Arg.float(2, "n"), Arg.float(2, "n"),
                      no_complex="real and imaginary parts are real"),
               Sample("complex", Arg.float(2, "n"), Arg.float("n"),
                      no_complex="real and imaginary parts are real"))

    def forward(self, re, im):
        out = np.empty(np.broadcast_shapes(re.shape, im.shape), _complex_dtype(re.dtype))
        out.real = re
        out.imag = im
        return out

    def gradient(self, e, g):
        re, im = e.inputs
        return (lib.unbroadcast(apply(Real, g), re.shape) if e.needs[0] else None,
                lib.unbroadcast(apply(Imag, g), im.shape) if e.needs[1] else None)


def _over_modulus(z, r, power):
    """z / r**power, and 0 where r == 0 (abs and angle have no derivative at 0; the zero
    is TensorFlow's choice too: a subgradient, never a NaN)."""
    zero = equal(r, 0)
    safe = where(zero, 1, r)
    denom = safe if power == 1 else safe * safe
    return where(zero, 0, z / apply(Cast, denom, dtype=z.dtype))


@register
class ComplexAbs(Op):
    """|z| of a complex z (a real output): vj.abs of a complex tensor."""
    complex_rules = True
    pattern = patterns.elementwise
    converter = elementwise
    samples = (Sample("abs", Arg.complex(2, "n")), Sample("abs", Arg.complex()))

    def forward(self, z):
        return np.abs(z)

    def gradient(self, e, g):  # d|z| = Re(conj(z/|z|) dz): the adjoint is g z / |z|
        z, r = e.inputs[0], e.outputs[0]
        # z times the real factor g / |z|: real division and selects, one complex product
        # (spectral losses sum |fft(x)|^2: this is on their backward pass)
        zero = equal(r, 0)
        return z * where(zero, 0, g / where(zero, 1, r))

    def jvp(self, e, t):
        if t is None:
            return None
        z, r = e.inputs[0], e.outputs[0]
        return apply(Real, apply(Conj, _over_modulus(z, r, 1)) * t)


@register
class Angle(Op):
    """arg(z) in (-pi, pi] of a complex z (a real output)."""
    complex_rules = True
    pattern = patterns.elementwise
    converter = elementwise
    samples = (Sample("angle", Arg.complex(2, "n")), Sample("angle", Arg.complex()))

    def forward(self, z):
        return np.angle(z)

    def gradient(self, e, g):  # d arg z = Im(conj(z) dz) / |z|^2: the adjoint is i g z/|z|^2
        z = e.inputs[0]
        r = apply(ComplexAbs, z)
        return apply(Complex, zeros_like(g), g) * _over_modulus(z, r, 2)

    def jvp(self, e, t):
        if t is None:
            return None
        z = e.inputs[0]
        r = apply(ComplexAbs, z)
        return apply(Imag, apply(Conj, _over_modulus(z, r, 2)) * t)


def conj_if_complex(t):
    """conj(t) for a complex Tensor, t itself (no op recorded) for a real one: the factor
    of a holomorphic rule's cotangent, conj(f'(z)) * g."""
    return apply(Conj, t) if t.dtype.kind == "c" else t


# -- public functions ---------------------------------------------------------------------
def _numeric(x, fn, arg):
    t = to_input(x, (), fn, arg)
    if t.dtype.kind not in "biufc":
        raise TypeError(f"{fn}: {arg} must be a numeric tensor, got dtype {t.dtype}")
    return t


def conj(x, name=None):
    """The complex conjugate; a real tensor is returned as it is (TF's tf.math.conj)."""
    t = _numeric(x, "conj", "x")
    return apply(Conj, t) if t.dtype.kind == "c" else identity(t)


def real(input, name=None):
    """The real part (float32 for complex64, float64 for complex128); a real tensor is
    returned as it is."""
    t = _numeric(input, "real", "input")
    return apply(Real, t) if t.dtype.kind == "c" else identity(t)


def imag(input, name=None):
    """The imaginary part; zeros of the input's dtype for a real tensor."""
    t = _numeric(input, "imag", "input")
    return apply(Imag, t) if t.dtype.kind == "c" else zeros_like(t)


def angle(input, name=None):
    """The argument in (-pi, pi]; for a real tensor pi where it is negative, else 0."""
    t = _numeric(input, "angle", "input")
    if t.dtype.kind == "c":
        return apply(Angle, t)
    return where(less(t, 0), ones_like(t) * np.pi, zeros_like(t))


def complex(real, imag, name=None):  # noqa: A001 (TF's name, tf.complex)
    """real + i imag: two real tensors of one floating dtype (float32 -> complex64,
    float64 -> complex128), broadcasting against each other."""
    fn = "complex"
    re = to_input(real, (real, imag), fn, "real")
    im = to_input(imag, (real, imag), fn, "imag")
    for arg, t in (("real", re), ("imag", im)):
        if t.dtype.kind not in "f":
            raise TypeError(f"{fn}: {arg} must be a float32 or float64 tensor, got dtype "
                            f"{t.dtype}")
    if re.dtype != im.dtype:
        raise TypeError(f"{fn}: real and imag must have one dtype, got {re.dtype} and "
                        f"{im.dtype}")
    broadcast_shape(fn, re.shape, im.shape, names=("real", "imag"))
    return apply(Complex, re, im)


lib.publish(globals(), __all__ + ["conj_if_complex"])
