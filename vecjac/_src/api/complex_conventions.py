"""JAX's complex conventions for the functional API, on top of the engine's own.

The engine (tapes, accumulators, pfor) differentiates complex values with the adjoint
under the real inner product Re<a, b>: TensorFlow's convention, which GradientTape and
ForwardAccumulator expose as they are (vecjac/_src/ops/elementwise/complex_parts.py).
JAX's cotangents are the conjugates of those at both ends:

    jax_vjp(ct) = conj(tf_vjp(conj(ct)))

so `vj.grad(lambda z: abs(z)**2)(3+4j)` is 6-8j where the tape gives 6+8j, and a
holomorphic f has `vj.grad(f, holomorphic=True)(z) = f'(z)` where the tape gives
conj(f'(z)). JVPs are the same in both. This module holds what the functional API adds:
the conjugations, JAX's dtype rules (grad and jacrev want real outputs, jacfwd real
inputs, unless holomorphic=True), the check that makes holomorphic=True trustworthy, and
vj.jacobian's real form of a complex map.
"""
import numpy as np

from vecjac._src.api.fn_args import split_aux, strict
from vecjac._src.api.function import _key
from vecjac._src.core import nest
from vecjac._src.core.tensor import Tensor
from vecjac._src.core.unconnected import UnconnectedGradients
from vecjac._src.ops.array.shaping import stack
from vecjac._src.ops.elementwise.complex_parts import complex as make_complex
from vecjac._src.ops.elementwise.complex_parts import conj, imag, real
from vecjac._src.transforms.forward.accumulator import ForwardAccumulator

_HOLOMORPHIC_HINT = ("conj, abs, real, imag and angle are not holomorphic; a function that "
                     "uses them is not either")


def conj_complex(tensors):
    """Each complex Tensor conjugated (recorded: differentiable), the others unchanged."""
    return [conj(t) if t is not None and t.dtype.kind == "c" else t for t in tensors]


def require_real(tensors, what, role):
    """JAX's rule for grad/jacrev outputs and jacfwd inputs without holomorphic=True."""
    for t in tensors:
        if t.dtype.kind == "c":
            raise TypeError(
                f"{what} requires real-valued {role}s (a floating dtype), but got "
                f"{t.dtype}. For holomorphic differentiation, pass holomorphic=True. For "
                f"non-holomorphic functions with complex {role}s, use vj.vjp / vj.jvp "
                "directly, or vj.jacobian (the real Jacobian of real and imaginary parts)")


def require_complex(tensors, what, role):
    """holomorphic=True: every differentiated input and output must be complex (JAX)."""
    for t in tensors:
        if t.dtype.kind != "c":
            raise TypeError(f"{what} with holomorphic=True requires {role}s with a complex "
                            f"dtype, but got {t.dtype}")


class HolomorphicCheck:
    """holomorphic=True is a claim about f; JAX takes it on trust (jacfwd(conj,
    holomorphic=True) returns 1). This checks it on the first call for each input
    signature: a holomorphic f has a C-linear derivative, so its JVP along i*v is i times
    its JVP along v (the Cauchy-Riemann equations along a random complex direction v).
    Cost: two JVPs on that first call; a ValueError when it fails. Cache: the signatures
    checked, keyed as vj.function keys a call (tests/test_caches.py)."""

    def __init__(self, what):
        self.what = what
        self.checked = set()

    def __call__(self, f, args, kwargs, flat_positions):
        # the call's signature as vj.function keys it: arrays by shape and dtype, every
        # other argument (and keyword) by value, so another flag or constant checks again
        try:
            key = _key(list(args), kwargs, [], self.what)
        except (TypeError, ValueError):
            key = None  # an argument without a key: check on every call
        if key is not None and key in self.checked:
            return
        rng = np.random.default_rng(len(self.checked))
        primals = [nest.flatten(args[k]) for k in flat_positions]
        leaves = [Tensor(np.asarray(x._value if isinstance(x, Tensor) else x))
                  for group in primals for x in group]
        vs = [rng.standard_normal(x.shape) + 1j * rng.standard_normal(x.shape) for x in leaves]
        along_v = _jvp_leaves(f, args, kwargs, flat_positions, leaves, vs, self.what)
        if any(a.dtype.kind != "c" for a in along_v):
            return  # a real output: the transform's dtype rule reports it
        along_iv = _jvp_leaves(f, args, kwargs, flat_positions, leaves, [1j * v for v in vs],
                               self.what)
        for a, b in zip(along_v, along_iv):
            eps = np.finfo(np.result_type(a.dtype, np.float32)).eps
            scale = max(float(np.max(np.abs(a), initial=0)),
                        float(np.max(np.abs(b), initial=0)), 1e-300)
            err = float(np.max(np.abs(b - 1j * a), initial=0))
            if err > 1e4 * eps * scale:
                raise ValueError(
                    f"{self.what}: holomorphic=True, but f is not holomorphic at this "
                    f"point: its derivative along i*v is not i times its derivative along v "
                    f"for a random complex direction v (the Cauchy-Riemann equations fail, "
                    f"relative difference {err / scale:.3g}). {_HOLOMORPHIC_HINT}; without "
                    "holomorphic=True, vj.jacobian gives the real Jacobian of such a map, "
                    "vj.vjp and vj.jvp its derivatives in JAX's convention")
        if key is not None:
            self.checked.add(key)


def _jvp_leaves(f, args, kwargs, flat_positions, leaves, tangents, what):
    """The JVPs (arrays) of f's output leaves along `tangents` of the differentiated leaves."""
    args = list(args)
    it = iter(leaves)
    for k in flat_positions:
        a = args[k]
        args[k] = nest.pack_sequence_as(a, [next(it) for _ in nest.flatten(a)]) \
            if nest.is_nested(a) else next(it)
    tangents = [Tensor(np.asarray(t, dtype=x.dtype)) for t, x in zip(tangents, leaves)]
    with strict(ForwardAccumulator(leaves, tangents), what) as acc:
        out = f(*args, **kwargs)
    ys = [y for y in nest.flatten(out) if isinstance(y, Tensor)]
    return [np.asarray(acc.jvp(y, unconnected_gradients=UnconnectedGradients.ZERO)._value)
            for y in ys]


# -- vj.jacobian of a complex map: the real Jacobian --------------------------------------
def as_real_pairs(x):
    """A complex array or Tensor as a real one with a trailing axis of 2 (real, imaginary);
    anything else unchanged."""
    if isinstance(x, Tensor):
        return stack([real(x), imag(x)], axis=-1) if x.dtype.kind == "c" else x
    arr = np.asarray(x) if not isinstance(x, (int, float)) else None
    if arr is not None and arr.dtype.kind == "c":
        return np.stack([arr.real, arr.imag], axis=-1)
    return x


def realified(f, positions, complex_leaves, has_aux):
    """f with the complex leaves of its differentiated arguments taken as real pairs
    (..., 2) and its complex outputs given as real pairs: the real map R^2n -> R^2m whose
    Jacobian vj.jacobian returns for a complex f without holomorphic=True."""
    def real_f(*args, **kwargs):
        args = list(args)
        for k in positions:
            a = args[k]
            leaves = [make_complex(x[..., 0], x[..., 1]) if (k, j) in complex_leaves else x
                      for j, x in enumerate(nest.flatten(a))]
            args[k] = nest.pack_sequence_as(a, leaves) if nest.is_nested(a) else leaves[0]
        out = f(*args, **kwargs)
        y, aux = split_aux(out, has_aux, "jacobian")
        y = nest.map_structure(as_real_pairs, y) if nest.is_nested(y) else as_real_pairs(y)
        return (y, aux) if has_aux else y
    return real_f


def complex_leaves_of(args, positions):
    """{(argument position, leaf index)} of the complex leaves among the differentiated
    arguments."""
    found = set()
    for k in positions:
        for j, x in enumerate(nest.flatten(args[k])):
            if isinstance(x, complex) or getattr(getattr(x, "dtype", None), "kind", "") == "c":
                found.add((k, j))  # anything else: prepare() reports what is wrong
    return found
