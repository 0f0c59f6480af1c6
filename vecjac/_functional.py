"""Functional transforms beside the tape (JAX's conventions): grad, value_and_grad,
jacobian, batch_jacobian, hessian, hvp, vjp.

Each transform takes a Python function written with vecjac ops and returns a function
(or, for hvp and vjp, a value). Arguments may be NumPy arrays, Python floats, Tensors,
Variables (read once) or nests (dict / list / tuple) of them; results are Tensors in the
matching structure. Differentiated arguments are passed to `f` as fresh Tensors (an
`identity` of the caller's Tensor), so that the same Tensor given twice gets two
independent gradients and outer tapes / transforms still see the connection
(`vj.grad(vj.grad(f))`, `vj.jacobian(vj.grad(f))` work).

- `argnums`: an int or a tuple of ints; a tuple gives a tuple of results, one per argument.
- `has_aux=True`: `f` returns a pair `(output, aux)`; the transform returns
  `(result, aux)` with `aux` untouched (value_and_grad: `((value, aux), grad)`).
"""
import inspect
import numbers

import numpy as np

from . import nest
from ._dispatch import convert_to_tensor
from ._tape import GradientTape
from ._tensor import Tensor
from ._unconnected import UnconnectedGradients
from ._variables import Variable
from .ops.array_ops import identity
from .ops.math_ops import cast, multiply
from .ops.reduce_ops import reduce_sum
from .vectorize.pfor import _check_parallel_iterations

_ZERO = UnconnectedGradients.ZERO

__all__ = ["grad", "value_and_grad", "jacobian", "batch_jacobian", "hessian", "hvp", "vjp"]


# -- validation helpers ----------------------------------------------------------------
def _check_callable(f, what):
    if not callable(f):
        raise TypeError(f"{what}: f must be callable, got {type(f).__name__}")


def _check_argnums(argnums, what):
    """argnums as given (int or tuple), validated for type; range is checked per call."""
    def bad(x):
        return not isinstance(x, numbers.Integral) or isinstance(x, (bool, np.bool_))
    if isinstance(argnums, (tuple, list)):
        if not argnums:
            raise ValueError(f"{what}: argnums must be an int or a non-empty tuple of ints, "
                             "got ()")
        for a in argnums:
            if bad(a):
                raise TypeError(f"{what}: argnums must be an int or a tuple of ints, got "
                                f"{argnums!r} (element {a!r} is {type(a).__name__})")
        if len(set(int(a) for a in argnums)) != len(argnums):
            raise ValueError(f"{what}: argnums has repeated entries: {tuple(argnums)}")
        return tuple(int(a) for a in argnums)
    if bad(argnums):
        raise TypeError(f"{what}: argnums must be an int or a tuple of ints, got "
                        f"{argnums!r} ({type(argnums).__name__})")
    return int(argnums)


def _positions(argnums, nargs, what):
    """argnums as a tuple of non-negative positions, in range for `nargs` arguments."""
    many = isinstance(argnums, tuple)
    out = []
    for a in (argnums if many else (argnums,)):
        if not -nargs <= a < nargs:
            raise ValueError(f"{what}: argnums {a} is out of range: f was called with "
                             f"{nargs} positional argument{'s' * (nargs != 1)}")
        out.append(a % nargs)
    if len(set(out)) != len(out):
        raise ValueError(f"{what}: argnums {argnums} name the same argument twice")
    return tuple(out)


def _check_bool(value, name, what):
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{what}: {name} must be a bool, got {value!r}")
    return bool(value)


def _arg_label(f, k):
    """'argument 1 (w)' when f's signature names it, else 'argument 1'."""
    try:
        params = [p for p in inspect.signature(f).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        params = []
    return f"argument {k} ({params[k].name})" if k < len(params) else f"argument {k}"


def _float_leaf(x, what, label):
    """A fresh floating Tensor for one leaf of a differentiated argument."""
    if isinstance(x, (Tensor, Variable)):
        dtype = x.dtype
    else:
        try:
            arr = np.asarray(x)
        except Exception:  # noqa: BLE001  (ragged lists and the like)
            arr = np.asarray(None, dtype=object)
        dtype = arr.dtype
    if dtype.kind not in "fc":
        shown = f"dtype {dtype}" if dtype.kind in "biu" else type(x).__name__
        raise TypeError(f"{what}: {label} must be floating point (float32 or float64) to be "
                        f"differentiated, got {shown}; convert it with vj.cast or "
                        "np.asarray(..., dtype=float)")
    if isinstance(x, (Tensor, Variable)):
        return identity(x)  # recorded by outer tapes, distinct from the caller's Tensor
    return Tensor(np.array(arr))


def _prepare(f, args, positions, what):
    """args with the differentiated ones replaced by fresh Tensors, and those Tensors
    as one flat list plus each argument's nest (to pack results back)."""
    args = list(args)
    flat, structures = [], []
    for k in positions:
        label = _arg_label(f, k)
        leaves = [_float_leaf(x, what, label) for x in nest.flatten(args[k])]
        args[k] = nest.pack_sequence_as(args[k], leaves)
        structures.append(args[k])
        flat.extend(leaves)
    return args, flat, structures


def _pack(results, structures, many):
    """Flat per-leaf results back into the arguments' nests (a tuple when argnums is)."""
    out, pos = [], 0
    for s in structures:
        n = len(nest.flatten(s))
        out.append(nest.pack_sequence_as(s, results[pos:pos + n]))
        pos += n
    return tuple(out) if many else out[0]


def _split_aux(out, has_aux, what):
    if not has_aux:
        return out, None
    if not isinstance(out, (tuple, list)) or len(out) != 2:
        got = (f"a {type(out).__name__} of length {len(out)}"
               if isinstance(out, (tuple, list)) else type(out).__name__)
        raise ValueError(f"{what}: with has_aux=True, f must return a pair (output, aux), "
                         f"got {got}")
    return out[0], out[1]


def _output_tensor(y, what, scalar):
    if isinstance(y, (dict, list, tuple)) and scalar:
        raise ValueError(f"{what}: f must return a scalar Tensor, got a {type(y).__name__}; "
                         "use vj.jacobian for nested or non-scalar outputs")
    try:
        y = convert_to_tensor(y, name=f"{what}: output of f")
    except TypeError as e:
        raise TypeError(f"{what}: f must return Tensors, got {type(y).__name__} ({e})") from None
    if scalar and y.shape != ():
        raise ValueError(f"{what}: f must return a scalar (shape ()), got shape {y.shape}; "
                         "reduce it (e.g. vj.reduce_sum) or use vj.jacobian")
    if y.dtype.kind not in "fc":
        raise TypeError(f"{what}: f must return floating point values, got dtype {y.dtype}")
    return y


# -- grad and value_and_grad -------------------------------------------------------------
def _value_and_grad_call(f, argnums, has_aux, what, args, kwargs):
    positions = _positions(argnums, len(args), what)
    args, flat, structures = _prepare(f, args, positions, what)
    with GradientTape() as tape:
        tape.watch(flat)
        out = f(*args, **kwargs)
        y, aux = _split_aux(out, has_aux, what)
        y = _output_tensor(y, what, scalar=True)
    grads = tape.gradient(y, flat, unconnected_gradients=_ZERO)
    return y, aux, _pack(grads, structures, isinstance(argnums, tuple))


def value_and_grad(f, argnums=0, has_aux=False):
    """A function returning `(f(*args), gradient)`; f must return a scalar.

    The gradient has the structure and shapes of the argument (a tuple over `argnums` when
    it is a tuple). With has_aux: `((value, aux), gradient)`.

    >>> v, g = vj.value_and_grad(lambda x: vj.reduce_sum(x ** 2))(np.array([1.0, 2.0]))
    >>> float(v), g.numpy()
    (5.0, array([2., 4.]))
    """
    what = "value_and_grad"
    _check_callable(f, what)
    argnums = _check_argnums(argnums, what)
    has_aux = _check_bool(has_aux, "has_aux", what)

    def value_and_grad_fn(*args, **kwargs):
        y, aux, g = _value_and_grad_call(f, argnums, has_aux, what, args, kwargs)
        return ((y, aux), g) if has_aux else (y, g)
    return value_and_grad_fn


def grad(f, argnums=0, has_aux=False):
    """A function returning the gradient of scalar `f` w.r.t. argument `argnums`.

    Output: the argument's structure and shapes (Tensors); a tuple over `argnums` when it is
    a tuple; `(gradient, aux)` with has_aux. Compose freely: `vj.grad(vj.grad(f))`.

    >>> gx, gy = vj.grad(lambda x, y: x * y ** 2, argnums=(0, 1))(3.0, 2.0)
    >>> float(gx), float(gy)
    (4.0, 12.0)
    """
    what = "grad"
    _check_callable(f, what)
    argnums = _check_argnums(argnums, what)
    has_aux = _check_bool(has_aux, "has_aux", what)
    return _gradient_function(f, argnums, has_aux, what)


def _gradient_function(f, argnums, has_aux, what):
    """args -> gradient of scalar f (and aux), error messages in the name of `what`."""
    def grad_fn(*args, **kwargs):
        _, aux, g = _value_and_grad_call(f, argnums, has_aux, what, args, kwargs)
        return (g, aux) if has_aux else g
    return grad_fn


# -- Jacobians ---------------------------------------------------------------------------
def jacobian(f, argnums=0, has_aux=False, parallel_iterations=None, progress=False):
    """A function returning the Jacobian of `f` (reverse mode, vectorized by pfor).

    For an output of shape `out` and an argument of shape `a`, the Jacobian has shape
    `out + a`. A nested output gives the same nest with one Jacobian per leaf; each leaf
    is a tuple over `argnums` when it is a tuple, and a nest matching the argument when the
    argument is a nest. `parallel_iterations` bounds memory (rows computed per chunk);
    `progress=True` shows a tqdm bar over the chunks (nothing without tqdm).

    >>> vj.jacobian(lambda x: vj.sin(x) * 2.0)(np.zeros(3)).numpy()
    array([[2., 0., 0.],
           [0., 2., 0.],
           [0., 0., 2.]])
    """
    return _jacobian(f, argnums, has_aux, parallel_iterations, progress, "jacobian", f)


def _jacobian(f, argnums, has_aux, parallel_iterations, progress, what, named):
    """jacobian's body; `named` is the user's function (for argument names in errors)."""
    _check_callable(f, what)
    argnums = _check_argnums(argnums, what)
    has_aux = _check_bool(has_aux, "has_aux", what)
    progress = _check_bool(progress, "progress", what)
    _check_parallel_iterations(parallel_iterations, what)  # now, not after f has run

    def jacobian_fn(*args, **kwargs):
        positions = _positions(argnums, len(args), what)
        args, flat, structures = _prepare(named, args, positions, what)
        with GradientTape(persistent=True) as tape:
            tape.watch(flat)
            out = f(*args, **kwargs)
            y, aux = _split_aux(out, has_aux, what)
            ys = [_output_tensor(t, what, scalar=False) for t in nest.flatten(y)]
        many = isinstance(argnums, tuple)
        jacs = []
        for t in ys:
            rows = tape.jacobian(t, flat, unconnected_gradients=_ZERO,
                                 parallel_iterations=parallel_iterations, progress=progress)
            jacs.append(_pack(rows, structures, many))
        result = nest.pack_sequence_as(y, jacs) if isinstance(y, (dict, list, tuple)) \
            else jacs[0]
        return (result, aux) if has_aux else result
    return jacobian_fn


def batch_jacobian(f, argnums=0, has_aux=False, parallel_iterations=None, progress=False):
    """A function returning per-example Jacobians of `f` (TF's `tape.batch_jacobian`).

    `f` maps arguments of shape `(batch,) + a` to one Tensor of shape `(batch,) + out`,
    example k depending on example k only; the result has shape `(batch,) + out + a`.
    Arguments and results follow the same nest / argnums rules as `jacobian`.

    >>> vj.batch_jacobian(lambda x: x ** 2)(np.ones((4, 3))).shape
    (4, 3, 3)
    """
    what = "batch_jacobian"
    _check_callable(f, what)
    argnums = _check_argnums(argnums, what)
    has_aux = _check_bool(has_aux, "has_aux", what)
    progress = _check_bool(progress, "progress", what)
    _check_parallel_iterations(parallel_iterations, what)  # now, not after f has run

    def batch_jacobian_fn(*args, **kwargs):
        positions = _positions(argnums, len(args), what)
        for k in positions:  # before _prepare records anything on outer tapes
            for leaf in nest.flatten(args[k]):
                if (hasattr(leaf, "shape") or isinstance(leaf, numbers.Number)) and \
                        np.ndim(leaf) < 2 and np.result_type(leaf).kind in "fc":
                    raise ValueError(f"{what}: {_arg_label(f, k)} must have rank >= 2 "
                                     f"(batch, ...), got shape {np.shape(leaf)}")
        args, flat, structures = _prepare(f, args, positions, what)
        with GradientTape(persistent=True) as tape:
            tape.watch(flat)
            out = f(*args, **kwargs)
            y, aux = _split_aux(out, has_aux, what)
            if isinstance(y, (dict, list, tuple)):
                raise ValueError(f"{what}: f must return one Tensor of shape (batch, ...), "
                                 f"got a {type(y).__name__}")
            y = _output_tensor(y, what, scalar=False)
        rows = [tape.batch_jacobian(y, s, unconnected_gradients=_ZERO,
                                    parallel_iterations=parallel_iterations,
                                    progress=progress) for s in flat]
        result = _pack(rows, structures, isinstance(argnums, tuple))
        return (result, aux) if has_aux else result
    return batch_jacobian_fn


def hessian(f, argnums=0, has_aux=False, parallel_iterations=None, progress=False):
    """A function returning the Hessian of scalar `f`: the Jacobian of its gradient.

    For an argument of shape `a` the Hessian has shape `a + a`. With argnums a tuple
    `(i, j, ...)`, `H[p][q]` has shape `shape(arg_p) + shape(arg_q)`; nests nest likewise.

    >>> vj.hessian(lambda x: vj.reduce_sum(x ** 3))(np.array([1.0, 2.0])).numpy()
    array([[ 6.,  0.],
           [ 0., 12.]])
    """
    what = "hessian"
    _check_callable(f, what)
    argnums = _check_argnums(argnums, what)
    has_aux = _check_bool(has_aux, "has_aux", what)
    return _jacobian(_gradient_function(f, argnums, has_aux, what), argnums, has_aux,
                     parallel_iterations, progress, what, f)


# -- products ----------------------------------------------------------------------------
def _same_structure(a, b):
    if isinstance(a, dict) or isinstance(b, dict):
        return (isinstance(a, dict) and isinstance(b, dict) and set(a) == set(b)
                and all(_same_structure(a[k], b[k]) for k in a))
    if isinstance(a, (list, tuple)) or isinstance(b, (list, tuple)):
        return (isinstance(a, (list, tuple)) and isinstance(b, (list, tuple))
                and len(a) == len(b) and all(_same_structure(x, y) for x, y in zip(a, b)))
    return True


def _cotangent_like(v, like, what, name):
    """`v` as a Tensor of `like`'s shape and dtype (ValueError naming both shapes)."""
    try:
        t = convert_to_tensor(v, name=f"{what}: {name}")
    except (TypeError, ValueError) as e:
        raise TypeError(f"{what}: {name} must be numeric arrays or Tensors ({e})") from None
    if t.shape != like.shape:
        raise ValueError(f"{what}: {name} has shape {t.shape}, expected {like.shape} "
                         "(the shape of the matching leaf)")
    return t if t.dtype == like.dtype else cast(t, like.dtype)


def hvp(f, x, v):
    """Hessian-vector product `H(x) v` of scalar `f(x)`, without forming the Hessian.

    It is the gradient of `<grad f(x), v>`: two backward passes, memory O(size of x).
    `x` may be an array or a nest; `v` must have the same structure and shapes. Output:
    Tensors in the structure and shapes of `x` (dtype of x).

    >>> f = lambda x: vj.reduce_sum(x ** 3)          # H = diag(6 x)
    >>> vj.hvp(f, np.array([1.0, 2.0]), np.array([1.0, 1.0])).numpy()
    array([ 6., 12.])
    """
    what = "hvp"
    _check_callable(f, what)
    if not _same_structure(x, v):
        raise ValueError(f"{what}: v must have the structure of x; x is "
                         f"{_describe(x)}, v is {_describe(v)}")
    vs = nest.flatten(v)
    # v is checked against x's leaves before _prepare records anything on outer tapes
    likes = [_shape_dtype(xi) for xi in nest.flatten(x)]
    vs = [vi if xi is None else _cotangent_like(vi, xi, what, "v" if len(vs) == 1 else
                                                 f"v (leaf {k})")
          for k, (vi, xi) in enumerate(zip(vs, likes))]
    _, flat, (xs,) = _prepare(f, [x], (0,), what)
    with GradientTape() as outer:
        outer.watch(flat)
        with GradientTape() as inner:
            inner.watch(flat)
            y = _output_tensor(f(xs), what, scalar=True)
        grads = inner.gradient(y, flat, unconnected_gradients=_ZERO)
        total = None
        for g, vi in zip(grads, vs):
            term = reduce_sum(multiply(g, vi))
            total = term if total is None else total + term
    return nest.pack_sequence_as(x, outer.gradient(total, flat, unconnected_gradients=_ZERO))


def _shape_dtype(x):
    """Something with x's .shape and floating .dtype, else None (_prepare reports it)."""
    if not isinstance(x, (Tensor, Variable, np.ndarray)):
        try:
            x = np.asarray(x)
        except Exception:  # noqa: BLE001  (ragged lists and the like)
            return None
    return x if x.dtype.kind in "fc" else None


def _describe(s):
    if isinstance(s, dict):
        return f"a dict with keys {sorted(map(str, s))}"
    if isinstance(s, (list, tuple)):
        return f"a {type(s).__name__} of length {len(s)}"
    return "a single array"


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
    _check_callable(f, what)
    has_aux = _check_bool(has_aux, "has_aux", what)
    if not args:
        raise ValueError(f"{what}: give at least one argument to differentiate")
    positions = tuple(range(len(args)))
    args, flat, structures = _prepare(f, args, positions, what)
    tape = GradientTape(persistent=True)
    with tape:
        tape.watch(flat)
        out = f(*args)
        y, aux = _split_aux(out, has_aux, what)
        ys = [_output_tensor(t, what, scalar=False) for t in nest.flatten(y)]
    y = nest.pack_sequence_as(y, ys) if isinstance(y, (dict, list, tuple)) else ys[0]

    def vjp_fn(cotangent):
        if not _same_structure(y, cotangent):
            raise ValueError(f"{what}: the cotangent must have the structure of f's output; "
                             f"output is {_describe(y)}, cotangent is {_describe(cotangent)}")
        cts = nest.flatten(cotangent)
        cts = [_cotangent_like(c, t, what, "cotangent" if len(cts) == 1 else
                               f"cotangent (leaf {k})")
               for k, (c, t) in enumerate(zip(cts, ys))]
        grads = tape.gradient(ys, flat, output_gradients=cts, unconnected_gradients=_ZERO)
        return _pack(grads, structures, True)
    return (y, vjp_fn, aux) if has_aux else (y, vjp_fn)
