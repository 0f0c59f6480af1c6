"""Arguments and results of the functional transforms (vecjac/_functional*.py).

Differentiated arguments are passed to `f` as fresh Tensors (an `identity` of the
caller's Tensor), so that the same Tensor given twice gets two independent derivatives
and outer tapes / transforms still see the connection (`vj.grad(vj.grad(f))` works).
Every check runs before `f` does, with errors naming the transform and the argument.
"""
import inspect
import numbers
import warnings

import numpy as np

from vecjac._src.core import nest
from vecjac._src.core.dispatch import convert_to_tensor
from vecjac._src.core.errors import NotDifferentiableWarning
from vecjac._src.core.tensor import Tensor
from vecjac._src.core.variables import Variable
from vecjac._src.ops.array.shaping import identity
from vecjac._src.ops.elementwise.logic import cast


def strict(transform, what):
    """`transform` (a tape or accumulator) with values leaving vecjac made errors that name
    `what`: a functional transform never returns a silently cut derivative."""
    return transform.set_strict(what)


def warn_if_independent(what, outputs, depends, cut_by=None):
    """Warn when no output of f depends on the differentiated arguments: a derivative of
    all zeros is then the answer, but usually a sign that f's computation left vecjac.
    `cut_by` (the transform's) names an op without a derivative (Floor, ...) that the
    arguments reached: then the zero is the piecewise-constant function's derivative."""
    if outputs and not any(depends(y) for y in outputs):
        if cut_by is not None:
            message = (f"{what}: the output of f depends on the differentiated arguments "
                       f"only through ops without a derivative (first: {cut_by}, piecewise "
                       "constant), so the derivative is zero")
        else:
            message = (f"{what}: the output of f does not depend on the differentiated "
                       "arguments, so the derivative is zero; if f should depend on them, "
                       "check that it computes with vecjac ops (NumPy functions on Tensors "
                       "dispatch to them) and not on plain values")
        warnings.warn(message, NotDifferentiableWarning, stacklevel=4)


def name_after(fn, what, f):
    """`fn` (a transformed function) named after what it computes: its repr reads
    `<function jacobian(rhs) at ...>` instead of a closure's anonymous name."""
    name = getattr(f, "__name__", None) or type(f).__name__
    fn.__name__ = fn.__qualname__ = f"{what}({name})"
    fn.__doc__ = f"vj.{what} of {name}" + (f":\n\n{f.__doc__}" if getattr(f, "__doc__", None)
                                          else ".")
    return fn


def check_callable(f, what):
    if not callable(f):
        raise TypeError(f"{what}: f must be callable, got {type(f).__name__}")


def check_argnums(argnums, what):
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


def positions(argnums, nargs, what):
    """argnums as a tuple of non-negative positions, in range for `nargs` arguments."""
    if type(argnums) is int and -nargs <= argnums < nargs:  # the common case, no loop
        return (argnums % nargs,)
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


def check_bool(value, name, what):
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{what}: {name} must be a bool, got {value!r}")
    return bool(value)


def arg_label(f, k):
    """'argument 1 (w)' when f's signature names it, else 'argument 1'."""
    try:
        params = [p for p in inspect.signature(f).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        params = []
    return f"argument {k} ({params[k].name})" if k < len(params) else f"argument {k}"


def float_leaf(x, what, label):
    """A fresh floating Tensor for one leaf of a differentiated argument. `label()` names
    the argument in errors (computed only then: inspecting f's signature costs 60 us)."""
    if isinstance(x, (Tensor, Variable)):
        dtype = x.dtype
        if dtype.kind in "fc":
            return identity(x)  # recorded by outer tapes, distinct from the caller's Tensor
    elif type(x) is np.ndarray and x.dtype.kind in "fc":
        return Tensor(x.copy())
    else:
        try:
            arr = np.asarray(x)
        except Exception:  # noqa: BLE001  (ragged lists and the like)
            arr = np.asarray(None, dtype=object)
        dtype = arr.dtype
    if dtype.kind not in "fc":
        shown = f"dtype {dtype}" if dtype.kind in "biu" else type(x).__name__
        raise TypeError(f"{what}: {label()} must be floating point (float32 or float64) or "
                        f"complex to be differentiated, got {shown}; convert it with vj.cast "
                        "or np.asarray(..., dtype=float)")
    return Tensor(np.array(arr))


def prepare(f, args, argpos, what, name=None):
    """args with the differentiated ones replaced by fresh Tensors, and those Tensors
    as one flat list plus each argument's nest (to pack results back). `name`: how the
    transform's signature calls the arguments ("primals"), for error messages."""
    args = list(args)
    flat, structures = [], []
    for k in argpos:
        def label(k=k):
            return arg_label(f, k) if name is None else f"{name}[{k}] ({arg_label(f, k)})"
        x = args[k]
        if not nest.is_nested(x):  # one array: the common case, no nest walked
            leaf = args[k] = float_leaf(x, what, label)
            structures.append(leaf)
            flat.append(leaf)
            continue
        leaves = [float_leaf(x, what, label) for x in nest.flatten(x)]
        args[k] = nest.pack_sequence_as(x, leaves)
        structures.append(args[k])
        flat.extend(leaves)
    return args, flat, structures


def pack(results, structures, many):
    """Flat per-leaf results back into the arguments' nests (a tuple when argnums is)."""
    if not many and len(structures) == 1 and not nest.is_nested(structures[0]):
        return results[0]  # one array argument: its one result
    out, pos = [], 0
    for s in structures:
        n = len(nest.flatten(s))
        out.append(nest.pack_sequence_as(s, results[pos:pos + n]))
        pos += n
    return tuple(out) if many else out[0]


def split_aux(out, has_aux, what):
    if not has_aux:
        return out, None
    if not isinstance(out, (tuple, list)) or len(out) != 2:
        got = (f"a {type(out).__name__} of length {len(out)}"
               if isinstance(out, (tuple, list)) else type(out).__name__)
        raise ValueError(f"{what}: with has_aux=True, f must return a pair (output, aux), "
                         f"got {got}")
    return out[0], out[1]


def output_tensor(y, what, scalar, complex_ok=True):
    """y as a Tensor f may return; `complex_ok=False`: a complex y raises JAX's error
    (grad and jacrev want real outputs unless holomorphic=True)."""
    if y is None:  # TypeError as JAX; TF's wording
        raise TypeError(f"{what}: Cannot differentiate a function that returns None; did "
                        "you forget to return a value from f?")
    if scalar and nest.is_nested(y):
        raise ValueError(f"{what}: f must return a scalar Tensor, got a {type(y).__name__}; "
                         "use vj.jacobian for nested or non-scalar outputs")
    if not isinstance(y, Tensor):
        try:
            y = convert_to_tensor(y, name=f"{what}: output of f")
        except TypeError as e:
            raise TypeError(f"{what}: f must return Tensors, got {type(y).__name__} ({e})") \
                from None
    if scalar and y.shape != ():
        raise ValueError(f"{what}: f must return a scalar (shape ()), got shape {y.shape}; "
                         "reduce it (e.g. vj.reduce_sum) or use vj.jacobian")
    if y.dtype.kind == "c" and not complex_ok:
        raise TypeError(f"{what} requires real-valued outputs (a floating dtype), but f "
                        f"returns {y.dtype}. For holomorphic differentiation, pass "
                        f"holomorphic=True. For non-holomorphic functions with complex "
                        "outputs, use vj.vjp directly (or vj.jacobian, which gives the real "
                        "Jacobian of the real and imaginary parts)")
    if y.dtype.kind not in "fc":
        raise TypeError(f"{what}: f must return floating point values, got dtype {y.dtype}")
    return y


same_structure = nest.same_structure


def cotangent_like(v, like, what, name):
    """`v` as a Tensor of `like`'s shape and dtype (ValueError naming both shapes). As
    JAX: a value that has a dtype (an array, a Tensor) must have like's, since a float32
    tangent for a float64 value, or the reverse, changes precision unasked; a Python
    number or list of real numbers takes like's dtype."""
    try:
        t = convert_to_tensor(v, name=f"{what}: {name}")
    except (TypeError, ValueError) as e:
        raise TypeError(f"{what}: {name} must be numeric arrays or Tensors ({e})") from None
    if t.shape != like.shape:
        raise ValueError(f"{what}: {name} has shape {t.shape}, expected {like.shape} "
                         "(the shape of the matching leaf)")
    if t.dtype == like.dtype:
        return t
    typed = isinstance(v, (Tensor, Variable, np.ndarray, np.generic))
    if typed or t.dtype.kind not in ("iufc" if like.dtype.kind == "c" else "iuf"):
        raise TypeError(f"{what}: {name} has dtype {t.dtype}, expected {like.dtype}: the "
                        "dtypes must be equal (those of the matching leaf; cast it explicitly)")
    return cast(t, like.dtype)


def shape_dtype(x):
    """Something with x's .shape and floating .dtype, else None (prepare reports it)."""
    if not isinstance(x, (Tensor, Variable, np.ndarray)):
        try:
            x = np.asarray(x)
        except Exception:  # noqa: BLE001  (ragged lists and the like)
            return None
    return x if x.dtype.kind in "fc" else None


def describe(s):
    """A nest's top level in words, for error messages."""
    if isinstance(s, dict):
        kind = "dict" if type(s) is dict else type(s).__name__
        return f"a {kind} with keys {sorted(map(str, s))}"
    if isinstance(s, (list, tuple)):
        return f"a {type(s).__name__} of length {len(s)}"
    if nest.is_dataclass_instance(s):
        return f"a {type(s).__name__} (dataclass) with fields {nest.fields(s)}"
    return "a single array"
