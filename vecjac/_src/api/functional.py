"""Functional transforms beside the tape (JAX's conventions): grad, value_and_grad, vjp,
jvp, linearize, hvp. The Jacobian family (jacobian, jacrev, jacfwd, batch_jacobian,
hessian) is in vecjac/_src/api/jacobians.py.

Each transform takes a Python function written with vecjac ops and returns a function
(or, for jvp, vjp, linearize and hvp, values). Arguments may be NumPy arrays, Python
floats, Tensors, Variables (read once) or nests (dict / list / tuple) of them; results
are Tensors in the matching structure (vecjac/_src/api/fn_args.py).

- `argnums`: an int or a tuple of ints; a tuple gives a tuple of results, one per argument.
- `has_aux=True`: `f` returns a pair `(output, aux)`; the transform returns
  `(result, aux)` with `aux` untouched (value_and_grad: `((value, aux), grad)`).
"""
import numpy as np

from vecjac._src.api.fn_args import (arg_label, check_argnums, check_bool, check_callable,
                                     cotangent_like, describe, name_after, output_tensor, pack,
                                     positions, prepare, same_structure, shape_dtype, split_aux,
                                     strict, warn_if_independent)
from vecjac._src.api.complex_conventions import (HolomorphicCheck, conj_complex,
                                                 require_complex)
from vecjac._src.core import nest
from vecjac._src.core.loans import lending
from vecjac._src.core.tensor import Tensor
from vecjac._src.core.unconnected import UnconnectedGradients
from vecjac._src.core.variables import Variable
from vecjac._src.transforms.forward.accumulator import ForwardAccumulator
from vecjac._src.transforms.tape.tape import GradientTape

_ZERO = UnconnectedGradients.ZERO

__all__ = ["grad", "value_and_grad", "vjp", "jvp", "linearize", "hvp"]


# -- grad and value_and_grad -------------------------------------------------------------
def _value_and_grad_call(f, argnums, has_aux, what, args, kwargs, holomorphic=False,
                         check=None):
    # a caller's array the tape keeps is lent read-only for the call (core/loans.py); the
    # loan ends once _gradient's frame, and with it the tape, is gone
    with lending(what):
        return _gradient(f, argnums, has_aux, what, args, kwargs, holomorphic, check)


def _gradient(f, argnums, has_aux, what, args, kwargs, holomorphic, check):
    pos = positions(argnums, len(args), what)
    given = args
    args, flat, structures = prepare(f, args, pos, what)
    if holomorphic:
        require_complex(flat, what, "input")
        # the claim verified on the first call per signature, before the gradient pass
        check(main_output(f, has_aux, what), given, kwargs, pos)
    with strict(GradientTape(), what) as tape:
        tape.watch(flat)
        out = f(*args, **kwargs)
        y, aux = split_aux(out, has_aux, what)
        y = output_tensor(y, what, scalar=True, complex_ok=holomorphic)
        if holomorphic:
            require_complex([y], what, "output")
    warn_if_independent(what, [y], tape.is_connected, tape.cut_by)
    # JAX's cotangents: the conjugates of the tape's (complex_conventions.py)
    grads = conj_complex(tape.gradient(y, flat, unconnected_gradients=_ZERO))
    return y, aux, pack(grads, structures, isinstance(argnums, tuple))


def main_output(f, has_aux, what):
    """f without its aux output (what the holomorphic check differentiates)."""
    if not has_aux:
        return f
    return lambda *args, **kwargs: split_aux(f(*args, **kwargs), True, what)[0]


def value_and_grad(f, argnums=0, has_aux=False, holomorphic=False):
    """A function returning `(f(*args), gradient)`; f must return a scalar.

    The gradient has the structure and shapes of the argument (a tuple over `argnums` when
    it is a tuple). With has_aux: `((value, aux), gradient)`. Complex values: as `grad`.

    >>> v, g = vj.value_and_grad(lambda x: vj.reduce_sum(x ** 2))(np.array([1.0, 2.0]))
    >>> float(v), g.numpy()
    (5.0, array([2., 4.]))
    """
    what = "value_and_grad"
    check_callable(f, what)
    argnums = check_argnums(argnums, what)
    has_aux = check_bool(has_aux, "has_aux", what)
    holomorphic = check_bool(holomorphic, "holomorphic", what)
    check = HolomorphicCheck(what) if holomorphic else None

    def value_and_grad_fn(*args, **kwargs):
        y, aux, g = _value_and_grad_call(f, argnums, has_aux, what, args, kwargs,
                                         holomorphic, check)
        return ((y, aux), g) if has_aux else (y, g)
    return value_and_grad_fn


def grad(f, argnums=0, has_aux=False, holomorphic=False):
    """A function returning the gradient of scalar `f` w.r.t. argument `argnums`.

    Output: the argument's structure and shapes (Tensors); a tuple over `argnums` when it is
    a tuple; `(gradient, aux)` with has_aux. Compose freely: `vj.grad(vj.grad(f))`.

    Complex values follow JAX: f must return a real scalar, and the gradient at a complex
    z = x + iy is df/dx - i df/dy (the conjugate of the tape's: `vj.grad(lambda z:
    vj.abs(z) ** 2)(3 + 4j)` is 6-8j, GradientTape gives 6+8j). `holomorphic=True`: f
    maps complex inputs to a complex scalar and the result is f'(z); f is checked to be
    holomorphic on the first call per input signature (ValueError otherwise).

    >>> gx, gy = vj.grad(lambda x, y: x * y ** 2, argnums=(0, 1))(3.0, 2.0)
    >>> float(gx), float(gy)
    (4.0, 12.0)
    """
    what = "grad"
    check_callable(f, what)
    argnums = check_argnums(argnums, what)
    has_aux = check_bool(has_aux, "has_aux", what)
    holomorphic = check_bool(holomorphic, "holomorphic", what)
    return gradient_function(f, argnums, has_aux, what, holomorphic)


def gradient_function(f, argnums, has_aux, what, holomorphic=False):
    """args -> gradient of scalar f (and aux), error messages in the name of `what`."""
    check = HolomorphicCheck(what) if holomorphic else None

    def grad_fn(*args, **kwargs):
        _, aux, g = _value_and_grad_call(f, argnums, has_aux, what, args, kwargs,
                                         holomorphic, check)
        return (g, aux) if has_aux else g
    return name_after(grad_fn, what, f)


# -- vjp ---------------------------------------------------------------------------------
def vjp(f, *args, has_aux=False):
    """`(f(*args), vjp_fn)`: vjp_fn(cotangent) pulls a cotangent of the output back.

    `cotangent` has the structure and shapes of the output; vjp_fn returns a tuple with
    one cotangent per argument (each in that argument's structure and shapes). vjp_fn may
    be called several times. With has_aux: `(output, vjp_fn, aux)`.

    >>> y, pull = vj.vjp(lambda x: x ** 2, np.array([1.0, 3.0]))
    >>> pull(np.ones(2))[0].numpy()
    array([2., 6.])
    """
    what = "vjp"
    check_callable(f, what)
    has_aux = check_bool(has_aux, "has_aux", what)
    if not args:
        raise ValueError(f"{what}: give at least one argument to differentiate")
    args, flat, structures = prepare(f, args, tuple(range(len(args))), what)
    tape = strict(GradientTape(persistent=True), what)
    with tape:
        tape.watch(flat)
        out = f(*args)
        y, aux = split_aux(out, has_aux, what)
        ys = [output_tensor(t, what, scalar=False) for t in nest.flatten(y)]
    y = nest.pack_sequence_as(y, ys) if nest.is_nested(y) else ys[0]

    def vjp_fn(cotangent):
        if not same_structure(y, cotangent):
            raise ValueError(f"{what}: the cotangent must have the structure of f's output; "
                             f"output is {describe(y)}, cotangent is {describe(cotangent)}")
        cts = nest.flatten(cotangent)
        cts = [cotangent_like(c, t, what, "cotangent" if len(cts) == 1 else
                              f"cotangent (leaf {k})")
               for k, (c, t) in enumerate(zip(cts, ys))]
        # JAX's convention: conjugate in, conjugate out (complex_conventions.py)
        grads = tape.gradient(ys, flat, output_gradients=conj_complex(cts),
                              unconnected_gradients=_ZERO)
        return pack(conj_complex(grads), structures, True)
    return (y, vjp_fn, aux) if has_aux else (y, vjp_fn)


# -- jvp and linearize -------------------------------------------------------------------
def _check_tangents(f, primals, tangents, what):
    """Tangent leaves as Tensors of the primal leaves' shapes and dtypes, checked before
    anything runs: same number of arguments, same structure, shapes and real dtypes."""
    for name, value in (("primals", primals), ("tangents", tangents)):
        if not isinstance(value, (tuple, list)):
            raise TypeError(f"{what}: {name} must be a tuple (or list) with one entry per "
                            f"argument of f, got {type(value).__name__}")
    if len(primals) != len(tangents):
        raise ValueError(f"{what}: {len(primals)} primals but {len(tangents)} tangents (one "
                         "tangent per argument)")
    if not primals:
        raise ValueError(f"{what}: give at least one primal argument")
    out = []
    for k, (p, t) in enumerate(zip(primals, tangents)):
        label = arg_label(f, k)
        if not same_structure(p, t):
            raise ValueError(f"{what}: tangents[{k}] must have the structure of primals[{k}] "
                             f"({label}); primal is {describe(p)}, tangent is {describe(t)}")
        for j, (pl, tl) in enumerate(zip(nest.flatten(p), nest.flatten(t))):
            like = shape_dtype(pl)
            name = f"tangents[{k}] ({label})" + (f" leaf {j}" if len(nest.flatten(p)) > 1
                                                  else "")
            if like is None:  # prepare() reports the primal's problem by name
                out.append(tl)
                continue
            dtype = _dtype_of(tl)
            if dtype is None or dtype.kind not in ("fc" if like.dtype.kind == "c" else "f"):
                got = (f"dtype {dtype}" if dtype is not None and dtype.kind in "biuc"
                       else type(tl).__name__)
                raise TypeError(f"{what}: {name} must be floating point like primals[{k}] "
                                f"(dtype {like.dtype}), got {got}")
            out.append(cotangent_like(tl, like, what, f"{name}, the tangent of primals[{k}],"))
    return out


def _dtype_of(x):
    if isinstance(x, (Tensor, Variable)):
        return x.dtype
    try:
        return np.asarray(x).dtype
    except Exception:  # noqa: BLE001  (ragged lists and the like)
        return None


def jvp(f, primals, tangents, has_aux=False):
    """`(f(*primals), J t)`: the Jacobian-vector product of f at `primals`, forward mode.

    `primals` and `tangents` are tuples with one entry per argument of f, each tangent
    with the structure, shapes and dtypes of its primal. Returns `(primals_out,
    tangents_out)` with the structure of f's output; with has_aux `(primals_out,
    tangents_out, aux)`. One pass, memory O(one forward): JAX's `jax.jvp`.

    >>> y, t = vj.jvp(lambda x: x ** 3, (np.array([1.0, 2.0]),), (np.array([1.0, 1.0]),))
    >>> t.numpy()
    array([ 3., 12.])
    """
    what = "jvp"
    check_callable(f, what)
    has_aux = check_bool(has_aux, "has_aux", what)
    flat_t = _check_tangents(f, primals, tangents, what)
    args, flat, _ = prepare(f, primals, tuple(range(len(primals))), what, "primals")
    with lending(what):
        y, ty, aux = _push_forward(f, args, flat, flat_t, has_aux, what)
    return (y, ty, aux) if has_aux else (y, ty)


def _push_forward(f, args, flat, flat_tangents, has_aux, what, kwargs=None):
    with strict(ForwardAccumulator(flat, flat_tangents), what) as acc:
        out = f(*args, **(kwargs or {}))
        y, aux = split_aux(out, has_aux, what)
        ys = [output_tensor(t, what, scalar=False) for t in nest.flatten(y)]
    warn_if_independent(what, ys, lambda t: acc.jvp(t) is not None, acc.cut_by)
    tys = [acc.jvp(t, unconnected_gradients=_ZERO) for t in ys]
    if nest.is_nested(y):
        return nest.pack_sequence_as(y, ys), nest.pack_sequence_as(y, tys), aux
    return ys[0], tys[0], aux


def linearize(f, *primals, has_aux=False):
    """`(f(*primals), f_jvp)`: f_jvp(*tangents) is the JVP of f at `primals`.

    f runs once. f_jvp is linear in its tangents and fixed at that point: random draws,
    Variables and arrays f read keep the values of that one evaluation, however often
    f_jvp is called and whatever changes afterwards (JAX's `jax.linearize`). It is the
    transpose of f's VJP: the backward pass, linear in its cotangent u, is recorded once,
    and each call differentiates it with respect to u (about twice the work of a
    backward pass per call). With has_aux, f returns (output, aux) and linearize
    returns (output, f_jvp, aux).

    >>> y, f_jvp = vj.linearize(vj.sin, np.array([0.0, 1.0]))
    >>> f_jvp(np.array([1.0, 1.0])).numpy().round(4)
    array([1.    , 0.5403])
    """
    what = "linearize"
    check_callable(f, what)
    has_aux = check_bool(has_aux, "has_aux", what)
    if not primals:
        raise ValueError(f"{what}: give at least one primal argument")
    args, flat, _ = prepare(f, primals, tuple(range(len(primals))), what, "primals")
    with strict(GradientTape(), what) as tape:
        tape.watch(flat)
        y, aux = split_aux(f(*args), has_aux, what)
        ys = [output_tensor(t, what, scalar=False) for t in nest.flatten(y)]
    # the VJP u -> J^T u, recorded once with the cotangents u as watched placeholders
    us = [Tensor(np.zeros(t.shape, t.dtype)) for t in ys]
    with strict(GradientTape(persistent=True), what) as transpose:
        transpose.watch(us)
        vjps = tape.gradient(ys, flat, output_gradients=us)
    warn_if_independent(what, [v for v in vjps], lambda v: v is not None, tape.cut_by)
    vjps = [Tensor(np.zeros(x.shape, x.dtype)) if v is None else v
            for v, x in zip(vjps, flat)]
    y = nest.pack_sequence_as(y, ys) if nest.is_nested(y) else ys[0]

    def f_jvp(*tangents):
        flat_t = _check_tangents(f, list(primals), list(tangents), what)
        # J t = d<J^T u, t>/du: the gradient of the recorded VJP along t, for every u
        jt = transpose.gradient(vjps, us, output_gradients=flat_t,
                                unconnected_gradients=_ZERO)
        return nest.pack_sequence_as(y, jt) if nest.is_nested(y) else jt[0]
    return (y, f_jvp, aux) if has_aux else (y, f_jvp)


# -- hvp ---------------------------------------------------------------------------------
def hvp(f, x, v):
    """Hessian-vector product `H(x) v` of scalar `f(x)`, without forming the Hessian.

    Reverse over forward: the gradient of the directional derivative <grad f(x), v>,
    a tape recording a forward pass that carries the tangent v (memory O(size of the
    forward pass), like a gradient). `x` may be an array or a nest; `v` must have the
    same structure and shapes. Output: Tensors in the structure and shapes of `x`.

    >>> f = lambda x: vj.reduce_sum(x ** 3)          # H = diag(6 x)
    >>> vj.hvp(f, np.array([1.0, 2.0]), np.array([1.0, 1.0])).numpy()
    array([ 6., 12.])
    """
    # Why not forward over reverse (JAX's jvp(grad)): run eagerly, it also computes the
    # primal gradient, which nobody reads (jax.jit drops it as dead code); reverse over
    # forward has no dead work. Measured (benchmarks/compare.py workload 11, logistic
    # loss d = 2000): 11 -> 8 ms, one pass over the data matrix fewer; 20-25% faster on
    # small functions too (fewer ops).
    with lending("hvp"):
        return _hvp(f, x, v)


def _hvp(f, x, v):
    what = "hvp"
    check_callable(f, what)
    if not same_structure(x, v):
        raise ValueError(f"{what}: v must have the structure of x; x is "
                         f"{describe(x)}, v is {describe(v)}")
    vs = nest.flatten(v)
    # v is checked against x's leaves before prepare records anything on outer tapes
    likes = [shape_dtype(xi) for xi in nest.flatten(x)]
    vs = [vi if xi is None else cotangent_like(vi, xi, what, "v" if len(vs) == 1 else
                                                f"v (leaf {k})")
          for k, (vi, xi) in enumerate(zip(vs, likes))]
    _, flat, (xs,) = prepare(f, [x], (0,), what)
    with strict(GradientTape(), what) as tape:
        tape.watch(flat)
        with strict(ForwardAccumulator(flat, vs), what) as acc:
            y = output_tensor(f(xs), what, scalar=True)
        directional = acc.jvp(y, unconnected_gradients=_ZERO)
    grads = tape.gradient(directional, flat, unconnected_gradients=_ZERO)
    # complex x: JAX's convention, the conjugate of the tape's (complex_conventions.py)
    return nest.pack_sequence_as(x, conj_complex(grads))
