"""Derivative checkers: check_grads (finite differences, any order), check_pfor (pfor
against the plain loop), numerical_jacobian.

check_grads projects onto random directions: for input direction v and output weights u
it compares u . J v, from reverse mode (the VJP dotted with v) and from forward mode (the
JVP along v dotted with u), with the central difference of u . f along v. For order 2 it
checks the VJP (reverse) or the JVP (forward), as functions of the inputs, the same way;
and so on. Tolerances default by dtype (float64 tight, float32 loose).

Complex arguments and outputs (complex_parts.py has the convention): directions v and
weights u are complex, and the pairing is the real inner product Re<u, J v>
(Re(sum(conj(u) * J v))), which the tape's VJP (TF's convention) satisfies as
Re<VJP(u), v>; the functional vj.vjp (JAX's convention, the conjugate) is checked as
Re(sum(u * J v)) = Re(sum(vjp(u) * v)).
"""
import numpy as np

from vecjac._src.api.fn_args import strict
from vecjac._src.core import nest
from vecjac._src.core.tensor import Tensor, constant
from vecjac._src.core.unconnected import UnconnectedGradients
from vecjac._src.api.functional import vjp
from vecjac._src.ops.array.creation import zeros_like
from vecjac._src.ops.elementwise.complex_parts import real
from vecjac._src.ops.elementwise.arithmetic import multiply
from vecjac._src.ops.reduce.reductions import reduce_sum
from vecjac._src.transforms.forward.accumulator import ForwardAccumulator
from vecjac._src.transforms.pfor.pfor import for_loop, pfor
from vecjac._src.transforms.tape.tape import GradientTape

_DEFAULTS = {  # dtype: (eps, rtol, atol)
    np.dtype(np.float64): (1e-6, 1e-5, 1e-7),
    np.dtype(np.float32): (1e-2, 5e-2, 5e-3),
    np.dtype(np.complex128): (1e-6, 1e-5, 1e-7),
    np.dtype(np.complex64): (1e-2, 5e-2, 5e-3),
}


def _defaults(dtype, eps, rtol, atol):
    d_eps, d_rtol, d_atol = _DEFAULTS.get(np.dtype(dtype), _DEFAULTS[np.dtype(np.float64)])
    return (d_eps if eps is None else eps, d_rtol if rtol is None else rtol,
            d_atol if atol is None else atol)


def _as_arrays(args):
    arrays = []
    for k, a in enumerate(args):
        arr = np.array(a._value if isinstance(a, Tensor) else a)
        if arr.dtype.kind not in "fc":
            raise TypeError(f"check_grads: args[{k}] must be floating point or complex, got "
                            f"{arr.dtype}")
        arrays.append(arr)
    return arrays


def _flat_output(out):
    leaves = [o for o in nest.flatten(out) if o is not None]
    if not leaves:
        raise ValueError("check_grads: f returned no tensor")
    return leaves


def _random_like(rng, shape, dtype):
    """Standard normal values of `dtype` (complex: independent real and imaginary parts)."""
    x = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


def _pairing(a, b):
    """Re<a, b> = Re(sum(conj(a) * b)) of two arrays: the real inner product."""
    return float(np.real(np.vdot(np.asarray(a), np.asarray(b))))


def _weighted_sum(f, tensors, weights):
    """Re<u, f(xs)> summed over the outputs: a real scalar, differentiable in xs."""
    outs = _flat_output(f(*tensors))
    total = None
    for o, u in zip(outs, weights):
        if o.dtype.kind == "c":
            term = real(reduce_sum(multiply(o, constant(np.conj(u).astype(o.dtype)))))
        else:
            term = reduce_sum(multiply(o, constant(u.astype(o.dtype))))
        total = term if total is None else total + term
    return total


def _output_weights(f, arrays, rng):
    outs = _flat_output(f(*[constant(a) for a in arrays]))
    return [_random_like(rng, np.shape(o), o.dtype) for o in outs]


def _vjp_function(f, weights):
    """xs -> gradients of sum(u * f(xs)) w.r.t. every x, as one flat list (differentiable)."""
    def vjp(*xs):
        with strict(GradientTape(), "check_grads") as tape:
            for x in xs:
                tape.watch(x)
            total = _weighted_sum(f, xs, weights)
        grads = tape.gradient(total, list(xs))
        return [zeros_like(x) if g is None else g for x, g in zip(xs, grads)]
    return vjp


def _check_once(f, arrays, order, eps, rtol, atol, rng, depth=1):
    weights = _output_weights(f, arrays, rng)
    vjp = _vjp_function(f, weights)
    tensors = [constant(a) for a in arrays]
    grads = [np.asarray(g._value) for g in vjp(*tensors)]
    for k, a in enumerate(arrays):
        v = _random_like(rng, a.shape, a.dtype)
        analytic = _pairing(grads[k], v)

        def along(t):
            moved = [constant(a + t * v) if j == k else constant(b)
                     for j, b in enumerate(arrays)]
            return float(_weighted_sum(f, moved, weights)._value)
        numeric = (along(eps) - along(-eps)) / (2 * eps)
        scale = max(abs(analytic), abs(numeric), 1.0)
        if not abs(analytic - numeric) <= atol + rtol * scale:
            detail = _worst_element(f, arrays, k, weights, grads[k], eps)
            raise AssertionError(
                f"check_grads: derivative of order {depth} w.r.t. argument {k} disagrees "
                f"with finite differences: reverse mode gives {analytic:.10g}, central "
                f"differences {numeric:.10g} along a random direction{detail}")
    if order > 1:
        _check_once(vjp, arrays, order - 1, eps, rtol, atol, rng, depth + 1)


def _jvp_function(f, directions):
    """xs -> the JVP of f at xs along fixed `directions`, a flat list (differentiable)."""
    def jvp(*xs):
        tangents = [constant(d) for d in directions]
        with strict(ForwardAccumulator(list(xs), tangents), "check_grads") as acc:
            outs = _flat_output(f(*xs))
        # an output that is not a Tensor (a constant f returns) has a zero JVP
        return [acc.jvp(o if isinstance(o, Tensor) else constant(o),
                        unconnected_gradients=UnconnectedGradients.ZERO) for o in outs]
    return jvp


def _check_once_fwd(f, arrays, order, eps, rtol, atol, rng, depth=1):
    """Forward mode: u . (J v) from the JVP against central differences along v (all
    arguments moved together); order 2 checks the JVP function the same way."""
    weights = _output_weights(f, arrays, rng)
    directions = [_random_like(rng, a.shape, a.dtype) for a in arrays]
    jvp = _jvp_function(f, directions)
    tangents = jvp(*[constant(a) for a in arrays])
    analytic = sum(_pairing(u, t._value) for t, u in zip(tangents, weights))

    def along(t):
        moved = [constant(a + t * v) for a, v in zip(arrays, directions)]
        return float(_weighted_sum(f, moved, weights)._value)
    numeric = (along(eps) - along(-eps)) / (2 * eps)
    scale = max(abs(analytic), abs(numeric), 1.0)
    if not abs(analytic - numeric) <= atol + rtol * scale:
        raise AssertionError(
            f"check_grads: forward-mode derivative of order {depth} disagrees with finite "
            f"differences: the JVP gives {analytic:.10g}, central differences "
            f"{numeric:.10g} along a random direction of all {len(arrays)} argument(s)")
    if order > 1:
        _check_once_fwd(jvp, arrays, order - 1, eps, rtol, atol, rng, depth + 1)


def _worst_element(f, arrays, k, weights, grad, eps):
    a = arrays[k]
    if a.size > 200 or a.dtype.kind == "c":
        return ""

    def g(x):
        moved = [constant(x) if j == k else constant(b) for j, b in enumerate(arrays)]
        return np.asarray(_weighted_sum(f, moved, weights)._value)
    num = numerical_jacobian(g, a, eps)
    err = np.abs(num - grad)
    idx = tuple(int(i) for i in np.unravel_index(np.argmax(err), a.shape)) if a.ndim else ()
    return (f"; worst element {idx}: reverse mode {grad[idx]:.10g}, numerical "
            f"{num[idx]:.10g}")


def check_grads(f, args, order=2, modes=("fwd", "rev"), eps=None, rtol=None, atol=None,
                seed=0):
    """Assert that derivatives of `f` up to `order` match finite differences.

    `f(*tensors)` returns a Tensor or a nest of Tensors; `args` are floating arrays.
    `modes`: "rev" checks VJPs (reverse over reverse at higher orders), "fwd" JVPs
    (forward over forward). Raises AssertionError naming the mode, the order and, in
    reverse mode, the argument and its worst element.

    >>> vj.testing.check_grads(lambda x: vj.sin(x) * x, [np.array([0.5, 1.0])])
    """
    if isinstance(modes, str) or not isinstance(modes, (tuple, list)) or not modes or \
            any(m not in ("fwd", "rev") for m in modes):
        raise ValueError(f"check_grads: modes must be a non-empty tuple of 'fwd' and 'rev', "
                         f"got {modes!r}")
    if not isinstance(order, int) or order < 1:
        raise ValueError(f"check_grads: order must be a positive int, got {order!r}")
    arrays = _as_arrays(args)
    eps, rtol, atol = _defaults(arrays[0].dtype if arrays else np.float64, eps, rtol, atol)
    # central differences in float64 even for float32 functions would hide dtype bugs;
    # the loose float32 tolerances absorb its rounding instead
    if "rev" in modes:
        _check_once(f, arrays, order, eps, rtol, atol, np.random.default_rng(seed))
    if "fwd" in modes:
        _check_once_fwd(f, arrays, order, eps, rtol, atol, np.random.default_rng(seed + 1))
    if "rev" in modes and any(a.dtype.kind == "c" for a in arrays):
        _check_jax_convention(f, arrays, eps, rtol, atol, np.random.default_rng(seed + 2))


def _check_jax_convention(f, arrays, eps, rtol, atol, rng):
    """vj.vjp's cotangents (JAX's convention): Re(sum(u * J v)) = Re(sum(vjp(u) * v)),
    the bilinear pairing, against central differences along a complex direction v."""
    weights = _output_weights(f, arrays, rng)
    directions = [_random_like(rng, a.shape, a.dtype) for a in arrays]
    out, pull = vjp(lambda *xs: _flat_output(f(*xs)), *arrays)
    cts = pull([constant(u.astype(o.dtype)) for o, u in zip(out, weights)])
    analytic = sum(float(np.real(np.sum(np.asarray(c._value) * v)))
                   for c, v in zip(cts, directions))
    # the bilinear pairing with u is the real inner product with conj(u)
    conjugated = [np.conj(u) for u in weights]

    def along(t):
        moved = [constant(a + t * v) for a, v in zip(arrays, directions)]
        return float(_weighted_sum(f, moved, conjugated)._value)
    numeric = (along(eps) - along(-eps)) / (2 * eps)
    if not abs(analytic - numeric) <= atol + rtol * max(abs(analytic), abs(numeric), 1.0):
        raise AssertionError(
            f"check_grads: vj.vjp (JAX's convention) disagrees with finite differences: "
            f"Re(sum(vjp(u) * v)) = {analytic:.10g}, central differences {numeric:.10g} "
            "along a random complex direction")


def numerical_jacobian(f, x, eps=None):
    """Central-difference Jacobian of f at x: shape f(x).shape + x.shape (float64)."""
    x = np.array(x._value if isinstance(x, Tensor) else x, dtype=np.float64)
    eps = 1e-6 if eps is None else eps
    y0 = np.asarray(f(x))
    jac = np.zeros(y0.shape + x.shape)
    flat = x.reshape(-1)
    for i in range(flat.size):
        d = np.zeros_like(flat)
        d[i] = eps
        yp = np.asarray(f((flat + d).reshape(x.shape)), dtype=np.float64)
        ym = np.asarray(f((flat - d).reshape(x.shape)), dtype=np.float64)
        jac.reshape(y0.shape + (x.size,))[..., i] = (yp - ym) / (2 * eps)  # (-1,): empty y
    return jac


def check_pfor(loop_fn, iters, rtol=1e-7, atol=1e-9, fallback_to_while_loop=True):
    """Assert that pfor(loop_fn, iters) equals the plain for_loop, output by output."""
    vectorized = nest.flatten(pfor(loop_fn, iters, fallback_to_while_loop=fallback_to_while_loop))
    looped = nest.flatten(for_loop(loop_fn, iters))
    if len(vectorized) != len(looped):
        raise AssertionError(f"check_pfor: pfor gave {len(vectorized)} outputs, the loop "
                             f"{len(looped)}")
    for k, (v, l) in enumerate(zip(vectorized, looped)):
        if (v is None) != (l is None):
            raise AssertionError(f"check_pfor: output {k} is None in only one of pfor/loop")
        if v is None:
            continue
        if v.shape != l.shape or v.dtype != l.dtype:
            raise AssertionError(f"check_pfor: output {k}: pfor gives shape {v.shape} "
                                 f"dtype {v.dtype}, the loop shape {l.shape} dtype {l.dtype}")
        np.testing.assert_allclose(np.asarray(v._value), np.asarray(l._value), rtol=rtol,
                                   atol=atol, err_msg=f"check_pfor: output {k}: pfor != loop")
