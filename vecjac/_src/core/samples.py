"""The sample-spec language: how the registry property tests call each op.

Every op block declares `samples = (Sample(...), ...)`; tests/test_registry.py draws
values for each Arg and runs the sample through every check (gradients, JVPs, float32,
pfor against the loop, Jacobians). Kept out of the dispatch path: nothing here runs when
an op is applied.
"""
import numpy as np


class Arg:
    """A tensor argument of a Sample: its shape and the kind of values it takes.

    Shape entries are ints or dim names (str); tests/test_registry.py draws each name
    (in the Sample's dim_range) once per example, shared by all arguments of the sample, so
    Sample("matmul", Arg.float("m", "k"), Arg.float("k", "n")) covers a family of shapes.
    Kinds (the constructors below):
      float     uniform in [lo, hi], default [-2, 2] (a fraction `zeros` of them set to
                exactly 0); differentiable
      positive  uniform in [lo, hi], default [0.5, 2]; differentiable
      int       integers in [lo, hi) (hi an int or a dim name); int64 unless dtype
      bool      True / False at random
      square    (..., n, n), well conditioned: 1.5 I + noise of norm < 1; differentiable
      spd       (..., n, n), symmetric positive definite; differentiable
      complex   x + iy, x and y uniform in [lo, hi] (default [-2, 2]), complex128 (or
                complex64 where the test asks for float32); differentiable
      csquare, hpd  complex forms of square and spd (Hermitian positive definite)
    diff=False keeps a float argument out of the gradient checks.
    """

    __slots__ = ("kind", "shape", "lo", "hi", "diff", "dtype", "zeros")

    def __init__(self, kind, shape, lo=None, hi=None, diff=False, dtype=None, zeros=0.0):
        self.kind, self.shape, self.lo, self.hi = kind, tuple(shape), lo, hi
        self.diff, self.dtype, self.zeros = diff, dtype, zeros

    @classmethod
    def float(cls, *shape, lo=-2.0, hi=2.0, diff=True, zeros=0.0):
        return cls("float", shape, lo, hi, diff, zeros=zeros)

    @classmethod
    def positive(cls, *shape, lo=0.5, hi=2.0, diff=True):
        return cls("float", shape, lo, hi, diff)

    @classmethod
    def int(cls, *shape, hi, lo=0, dtype=np.int64):
        return cls("int", shape, lo, hi, dtype=dtype)

    @classmethod
    def bool(cls, *shape):
        return cls("bool", shape)

    @classmethod
    def complex(cls, *shape, lo=-2.0, hi=2.0, diff=True):
        return cls("complex", shape, lo, hi, diff)

    @classmethod
    def square(cls, *shape, diff=True):
        return cls("square", shape, diff=diff)

    @classmethod
    def spd(cls, *shape, diff=True):
        return cls("spd", shape, diff=diff)

    @property
    def floating(self):
        return self.kind in ("float", "square", "spd", "complex", "csquare", "hpd")

    def as_complex(self):
        """The complex form of a differentiable float argument (None: it has none)."""
        if not self.diff:
            return None
        kind = {"float": "complex", "square": "csquare", "spd": "hpd"}.get(self.kind)
        if kind is None:
            return None
        return Arg(kind, self.shape, self.lo, self.hi, self.diff)

    def value(self, rng, dims, dtype=np.float64):
        """A NumPy value for this argument; `dims` maps dim names to sizes."""
        shape = tuple(dims[d] if isinstance(d, str) else d for d in self.shape)
        if self.kind == "int":
            hi = dims[self.hi] if isinstance(self.hi, str) else self.hi
            return rng.integers(self.lo, hi, size=shape).astype(self.dtype)
        if self.kind == "bool":
            return rng.random(shape) < 0.5
        if self.kind == "complex":
            z = rng.uniform(self.lo, self.hi, size=shape + (2,))
            return np.asarray(z[..., 0] + 1j * z[..., 1], np.result_type(dtype, np.complex64))
        if self.kind == "float":
            x = rng.uniform(self.lo, self.hi, size=shape)
            if self.zeros:
                x[rng.random(shape) < self.zeros] = 0.0
            return np.asarray(x, dtype)
        n = shape[-1]
        noise = rng.uniform(-1.0, 1.0, size=shape) / n
        if self.kind in ("csquare", "hpd"):
            noise = noise + 1j * rng.uniform(-1.0, 1.0, size=shape) / n
            dtype = np.result_type(dtype, np.complex64)
        if self.kind in ("square", "csquare"):
            return (1.5 * np.eye(n) + noise).astype(dtype)
        return (noise @ np.conj(np.swapaxes(noise, -1, -2)) + 0.5 * np.eye(n)).astype(dtype)

    def __repr__(self):
        return f"Arg.{self.kind}{self.shape}"


class Sample:
    """One way to call an op, for the registry property tests (tests/test_registry.py).

    Sample(fn, *args, **kwargs) calls fn(*args, **kwargs), every Arg (also inside a list
    or tuple, e.g. concat's values) replaced by a drawn tensor, other values passed as
    they are. `fn` is a public function: its name in the op's module or in vj (dotted
    for sub-namespaces: "linalg.solve"), or a callable.
    Keyword-only flags, never passed to fn:
      no_grad="why"  no gradient / Jacobian checks (non-differentiable ops skip them anyway)
      no_pfor="why"  no pfor-against-loop check
      no_f32="why"   no float32 check
      no_complex="why"  no complex variant (tests/test_registry.py draws the float
                     arguments of an op with complex_rules complex too, unless this)
      grad_order=2   highest derivative order check_grads verifies
      dim_range=(1, 3)  sizes drawn for the named dims; (0, 3) also tests empty arrays
      tol={...}      eps / rtol / atol for check_grads and the Jacobian check
    """

    __slots__ = ("fn", "args", "kwargs", "no_grad", "no_pfor", "no_f32", "no_complex",
                 "grad_order", "tol", "dim_range")

    def __init__(self, fn, *args, no_grad=None, no_pfor=None, no_f32=None, no_complex=None,
                 grad_order=2, tol=None, dim_range=(1, 3), **kwargs):
        self.fn, self.args, self.kwargs = fn, args, kwargs
        self.no_grad, self.no_pfor, self.no_f32 = no_grad, no_pfor, no_f32
        self.no_complex = no_complex
        self.grad_order, self.tol, self.dim_range = grad_order, dict(tol or {}), dim_range

    def __repr__(self):
        name = self.fn if isinstance(self.fn, str) else getattr(self.fn, "__name__", "fn")
        parts = [repr(a) for a in self.args] + [f"{k}={v!r}" for k, v in self.kwargs.items()]
        return f"{name}({', '.join(parts)})"
