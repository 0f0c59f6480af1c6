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
import contextlib
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


def _call_site():
    """(file, line, stacklevel) of the innermost frame outside vecjac and NumPy."""
    frame, level = sys._getframe(1), 1
    while frame is not None:
        module = frame.f_globals.get("__name__", "")
        # the packages themselves: a user's scipy_helpers.py is not SciPy
        if module.partition(".")[0] not in _LIBRARIES:
            return frame.f_code.co_filename, frame.f_lineno, level
        frame, level = frame.f_back, level + 1
    return "?", 0, 1


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
    if strict:
        raise ValueLeftError(
            f"{strict}: {desc} of a value being differentiated, at {file}:{line}: the "
            "result is a plain number that no derivative flows through, so the derivative "
            "would silently be zero. Keep the computation in vecjac ops (vj.math..., "
            "vj.where, vj.stack; NumPy functions on Tensors dispatch to them), or detach "
            "explicitly with vj.stop_gradient(x).numpy().")
    policy = _policy()
    message = (f"{desc} of a Tensor that {follower} follows, at {file}:{line}: the result "
               "is a plain number, so derivatives stop there. Keep the computation in "
               "vecjac ops, or leave explicitly with t.numpy() "
               "(vj.set_conversion_policy('raise') makes this an error, 'ignore' silences "
               "it).")
    if policy == "raise":
        raise ValueLeftError(message)
    if policy == "warn":
        warnings.warn(message, NotDifferentiableWarning, stacklevel=level + 1)
