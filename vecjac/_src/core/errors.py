"""Warnings and errors of vecjac's public API (re-exported as vj.<name>), and what happens
when a value that a transform follows leaves vecjac.

A Tensor's value leaves vecjac through Python's implicit conversions (np.asarray and any
NumPy or SciPy function that calls it, assignment into an ndarray, float(), int(),
operator.index, complex(), math.*). What is computed from the plain number is invisible
to every transform, so a derivative through it would silently be zero. Hence:
- a loop-variant value inside pfor: TypeError (its value differs per iteration);
- a value a functional transform (vj.grad, vj.jacobian, vj.jvp ...) differentiates:
  TypeError, as in JAX: nobody wants the zero;
- a value a recording GradientTape or a ForwardAccumulator follows: NotDifferentiableWarning
  (TensorFlow lets code leave the tape), once per call site, naming the conversion and the
  line. `vj.set_conversion_policy("raise" | "ignore" | "warn")` (for the whole program) or
  `with vj.conversion_policy(...)` (for a block) makes it an error or silences it.
`t.numpy()`, and any conversion outside transforms, stay quiet: the explicit way out.
"""
import ast
import contextlib
import dis
import linecache
import sys
import threading
import warnings


class NotDifferentiableWarning(UserWarning):
    """A value a transform follows left vecjac (a NumPy function without a vecjac op, or an
    implicit conversion): no derivative flows through what was computed from it."""


_POLICIES = ("warn", "raise", "ignore")
_global = {"policy": "warn"}
_local = threading.local()

_HOW = {"__array__": "np.asarray() (or a NumPy/SciPy call or an ndarray assignment that "
                     "converts its input)",
        "__float__": "float()", "__int__": "int()", "__complex__": "complex()",
        "__index__": "operator.index() (use as an index or a size)",
        "__reduce__": "pickling (pickle.dumps, multiprocessing, copy by __reduce__)"}


# the conversions NumPy makes of a value written into an array (not of an index)
_WRITTEN = frozenset(("__array__", "__float__", "__int__", "__complex__"))


def _check_policy(policy, fn):
    if not isinstance(policy, str) or policy not in _POLICIES:
        raise ValueError(f"{fn}: policy must be one of {_POLICIES}, got {policy!r}")
    return policy


def set_conversion_policy(policy):
    """What a GradientTape or ForwardAccumulator does when a value it follows leaves vecjac
    by an implicit conversion: "warn" (default, NotDifferentiableWarning once per call
    site), "raise" (TypeError) or "ignore". Functional transforms and pfor always raise."""
    _global["policy"] = _check_policy(policy, "set_conversion_policy")


@contextlib.contextmanager
def conversion_policy(policy):
    """`set_conversion_policy` for the block only (this thread).

    >>> with vj.conversion_policy("raise"):
    ...     pass
    """
    _check_policy(policy, "conversion_policy")
    stack = _local.__dict__.setdefault("stack", [])
    stack.append(policy)
    try:
        yield
    finally:
        stack.pop()


def _policy():
    stack = getattr(_local, "stack", None)
    return stack[-1] if stack else _global["policy"]


_LIBRARIES = frozenset(("vecjac", "numpy", "scipy"))


def _user_frame():
    """(frame, stacklevel) of the innermost frame outside vecjac and NumPy."""
    frame, level = sys._getframe(2), 2
    while frame is not None:
        module = frame.f_globals.get("__name__", "")
        # the packages themselves: a user's scipy_helpers.py is not SciPy
        if module.partition(".")[0] not in _LIBRARIES:
            return frame, level - 1
        frame, level = frame.f_back, level + 1
    return None, 1


def _call_site():
    """(file, line, stacklevel) of the innermost frame outside vecjac and NumPy."""
    frame, level = _user_frame()
    if frame is None:
        return "?", 0, 1
    return frame.f_code.co_filename, frame.f_lineno, level


# -- item assignment: what to write instead ---------------------------------------------
# `x[idx] = v` on a Tensor, or `f[idx] = tensor` on a NumPy array, is a statement the
# caller wrote: the messages name its functional form, `x = x.at[idx].set(v)`, read from
# the source line when it holds one such assignment.
_STORES = frozenset(("STORE_SUBSCR", "STORE_SLICE"))
_AT_METHODS = {ast.Add: "add", ast.Sub: "add", ast.Mult: "multiply", ast.Div: "divide",
               ast.Pow: "power"}
_SYMBOLS = {ast.FloorDiv: "//", ast.Mod: "%", ast.MatMult: "@", ast.BitAnd: "&",
            ast.BitOr: "|", ast.BitXor: "^", ast.LShift: "<<", ast.RShift: ">>"}
_ATOMS = (ast.Name, ast.Attribute, ast.Subscript, ast.Call, ast.Constant)

AT_HELP = ("`x = x.at[idx].set(v)` for `x[idx] = v`, `x = x.at[idx].add(v)` for "
           "`x[idx] += v` (`.add(-v)` for `-=`; also .multiply, .divide, .power, .min, "
           ".max)")


def _storing_item(frame):
    """Whether `frame` is running `obj[idx] = value` now (the store of `obj[idx] op= v`)."""
    try:
        return dis.opname[frame.f_code.co_code[frame.f_lasti]] in _STORES
    except (IndexError, AttributeError):
        return False


def _subscript_assignment(frame):
    """The one assignment to a subscript (`f[i] = v`, `f[i] += v`) on the frame's
    current source line, or None (no source, several, or a statement over lines)."""
    if frame is None:
        return None
    line = linecache.getline(frame.f_code.co_filename, frame.f_lineno).strip()
    try:
        tree = ast.parse(line)
    except (SyntaxError, ValueError):
        return None
    found = [n for n in ast.walk(tree)
             if (isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Subscript))
             or (isinstance(n, ast.Assign) and len(n.targets) == 1
                 and isinstance(n.targets[0], ast.Subscript))]
    return found[0] if len(found) == 1 else None


def at_rewrite(stmt):
    """`f = f.at[idx].<method>(v)`: the functional form of the assignment `stmt`, as
    source text (None when it has none)."""
    if stmt is None:
        return None
    target = stmt.target if isinstance(stmt, ast.AugAssign) else stmt.targets[0]
    obj, whole = ast.unparse(target.value), ast.unparse(target)
    if not whole.startswith(obj) or not isinstance(target.value, (ast.Name, ast.Attribute)):
        return None
    index, value = whole[len(obj):], ast.unparse(stmt.value)
    if isinstance(stmt, ast.Assign):
        method, arg = "set", value
    elif type(stmt.op) in _AT_METHODS:
        method = _AT_METHODS[type(stmt.op)]
        arg = value if not isinstance(stmt.op, ast.Sub) else (
            f"-{value}" if isinstance(stmt.value, _ATOMS) else f"-({value})")
    elif type(stmt.op) in _SYMBOLS:
        operand = value if isinstance(stmt.value, _ATOMS) else f"({value})"
        method, arg = "set", f"{whole} {_SYMBOLS[type(stmt.op)]} {operand}"
    else:
        return None
    return f"{obj} = {obj}.at{index}.{method}({arg})"


def tensor_item_assignment():
    """The message of `x[idx] = v` (and `x[idx] += v`, ...) on a Tensor. The line is
    rewritten only when the caller's own code assigns (not a library it called)."""
    frame, _ = _user_frame()
    caller = sys._getframe(2)  # the frame that ran the assignment (Tensor.__setitem__'s)
    rewrite = at_rewrite(_subscript_assignment(frame)) if frame is caller else None
    here = f" Here: `{rewrite}`." if rewrite else ""
    return ("vj.Tensor does not support item assignment: a Tensor is immutable (tapes hold "
            "references to it), and `x[idx] = v` could not give the name x a new value "
            f"anyway. Write the functional update instead: {AT_HELP}, which returns a "
            f"new Tensor.{here} (For state that changes in place: vj.Variable and "
            ".assign.)")


def ndarray_item_assignment(augmented=False):
    """Advice when the caller's line writes a Tensor into a NumPy array (`f[idx] = t`; with
    `augmented`, `f[idx] += t`), or "" when it is no such assignment."""
    frame, _ = _user_frame()
    if frame is None or not (augmented or _storing_item(frame)):
        return ""
    stmt = _subscript_assignment(frame)
    if augmented and not isinstance(stmt, ast.AugAssign):
        return ""
    rewrite = at_rewrite(stmt)
    if rewrite is None:
        return (" This line writes a Tensor into a NumPy array, which holds plain numbers "
                "only. Build the array in vecjac instead: from its pieces with vj.stack / "
                "vj.concat, or as a Tensor updated functionally, `f = "
                "vj.zeros(n).at[idx].set(v)` (then `f = f.at[idx].set(v)` and "
                "`f = f.at[idx].add(v)` for further writes; each returns a new Tensor).")
    target = stmt.targets[0] if isinstance(stmt, ast.Assign) else stmt.target
    name = ast.unparse(target.value)
    array = frame.f_locals.get(name, frame.f_globals.get(name))
    shape = getattr(array, "shape", None)
    zeros = (f"vj.zeros({shape[0]})" if shape is not None and len(shape) == 1 else
             f"vj.zeros({shape})" if shape is not None else "vj.zeros(n)")
    return (f" This line writes a Tensor into the NumPy array {name}, which holds plain "
            f"numbers only. Build {name} in vecjac instead: from its pieces with vj.stack / "
            f"vj.concat, or as a Tensor updated functionally: `{name} = {zeros}` in place "
            f"of np.zeros, then `{rewrite}` (Tensor.at also has .add, .multiply, ...; each "
            "returns a new Tensor).")


UFUNC_AT = {"add": "add", "multiply": "multiply", "divide": "divide", "power": "power",
            "minimum": "min", "maximum": "max"}


def ufunc_at(name, on_tensor):
    """The message of np.<ufunc>.at(a, idx, v) with a Tensor among its arguments."""
    method = UFUNC_AT.get(name)
    call = (f"a = a.at[idx].{method}(v)" if method else
            "a = a.at[idx].add(-v)" if name == "subtract" else
            f"a = a.at[idx].set(np.{name}(a[idx], v))")
    if on_tensor:
        return (f"np.{name}.at writes into its first argument in place, and vecjac Tensors "
                f"are immutable: write `{call}` instead (Tensor.at; a new Tensor)")
    return (f"np.{name}.at writes into its first argument, a NumPy array, which holds plain "
            f"numbers only, not Tensors: make it a Tensor (vj.zeros(n) in place of "
            f"np.zeros(n)) and write `{call}` (Tensor.at; a new Tensor)")


class ValueLeftError(TypeError):
    """A value a transform differentiates left vecjac (see value_left)."""


def reraise_value_left(exc):
    """NumPy reports an error raised while it converts an element (`buf[i] = t`) as
    "ValueError: setting an array element with a sequence", ours as its cause: a
    transform's __exit__ raises the cause itself, the TypeError the README promises."""
    if isinstance(exc, ValueError) and isinstance(exc.__cause__, ValueLeftError):
        raise exc.__cause__.with_traceback(exc.__traceback__)


def value_left(how, follower, strict=None):
    """A value that `follower` ("a GradientTape", ...) differentiates left vecjac by the
    implicit conversion `how`. `strict` (the name of a functional transform) raises."""
    file, line, level = _call_site()
    desc = _HOW.get(how, how)
    assignment = ndarray_item_assignment() if how in _WRITTEN else ""
    if strict:
        raise ValueLeftError(
            f"{strict}: {desc} of a value being differentiated, at {file}:{line}: the "
            "result is a plain number that no derivative flows through, so the derivative "
            "would silently be zero. Keep the computation in vecjac ops (vj.math..., "
            "vj.where, vj.stack; NumPy functions on Tensors dispatch to them), or detach "
            f"explicitly with vj.stop_gradient(x).numpy().{assignment}")
    policy = _policy()
    message = (f"{desc} of a Tensor that {follower} follows, at {file}:{line}: the result "
               "is a plain number, so derivatives stop there. Keep the computation in "
               "vecjac ops, or leave explicitly with t.numpy() "
               "(vj.set_conversion_policy('raise') makes this an error, 'ignore' silences "
               f"it).{assignment}")
    if policy == "raise":
        raise ValueLeftError(message)
    if policy == "warn":
        warnings.warn(message, NotDifferentiableWarning, stacklevel=level + 1)
