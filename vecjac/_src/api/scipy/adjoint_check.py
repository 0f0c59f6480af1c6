"""Checks of the backward run of an ODE adjoint (the VJP rules of vj.scipy.integrate.odeint
and solve_ivp). Both integrate y backwards alongside the adjoint, from the outputs only;
backwards, a stiff or dissipative system is unstable (its fast decaying modes grow), y
leaves the forward trajectory and the adjoint computed along it is NaN, inf or silently
wrong. The rules raise instead, naming the problem and the way out (forward mode):
- the backward system stops as soon as |y| leaves the forward run's range by far
  (`check_bounded`, raising Diverged: SciPy would take its smallest steps to overflow);
- at the saved times, the backward state must be finite and its y back on the forward
  solution within 100 (atol + rtol |y|) + 1e-8 |y| (`check_backward`).
The second check reads values of the rule's own ops through value_read, so vj.function
re-checks it at every replay (a failing replay traces again, and raises).
"""
import numpy as np

from vecjac._src.core.context import value_read
from vecjac._src.ops.elementwise.unary import abs as tensor_abs


class Diverged(ValueError):
    """The backward integration of y left the forward trajectory's range."""


def diverge_bound(ys):
    """|y| beyond which the backward run has left a forward trajectory `ys` (an array)."""
    return 1e3 * (1.0 + (float(np.max(np.abs(ys))) if ys.size else 0.0))


def check_bounded(y, bound):
    """Raise Diverged when Tensor y (the backward run's state) is beyond `bound` or NaN."""
    size = np.max(np.abs(np.asarray(y._value))) if y.size else 0.0
    if not size <= bound:
        raise Diverged(f"|y| reached {size:.3g}")


def tolerances(options, rtol, atol):
    """The run's rtol and atol (their loosest entry), SciPy's defaults where not given."""
    opts = dict(options)
    return (float(np.max(opts["rtol"] if opts.get("rtol") is not None else rtol)),
            float(np.max(opts["atol"] if opts.get("atol") is not None else atol)))


def _finite(value):
    return bool(np.all(np.isfinite(value)))


def _within(excess):
    return bool(np.all(excess <= 0))  # NaN: not within


def check_backward(z, y_back, y_forward, rtol, atol, fail):
    """Call fail(what) (which raises) unless the backward state `z` (Tensor) is finite
    and its part `y_back` came back to the forward solution `y_forward`."""
    value_read(z, "internal", _finite)
    if not _finite(z._value):
        fail("its state is not finite")
    ref = tensor_abs(y_forward)
    error = tensor_abs(y_back - y_forward)
    excess = error - (100 * (atol + rtol * ref) + 1e-8 * ref)
    value_read(excess, "internal", _within)
    if not _within(excess._value):
        fail(f"error {float(np.max(error._value)):.3g} in y")


def unstable(fn, what, method, rtol, atol):
    """The error of an adjoint whose backward run failed (`what`)."""
    return ValueError(
        f"{fn}: reverse mode integrates the adjoint backwards in time together with y, "
        f"and y did not come back along the forward solution ({what}; {method}, rtol "
        f"{rtol:g}, atol {atol:g}): the system is unstable backwards in time (stiff or "
        "dissipative), and the gradient would be NaN, inf or wrong. Differentiate in "
        "forward mode (vj.jacfwd, vj.jvp), which integrates forward sensitivities, or "
        "tighten rtol / atol")
