"""Warnings and errors of vecjac's public API (re-exported as vj.<name>)."""


class NotDifferentiableWarning(UserWarning):
    """A value a tape follows left vecjac (a NumPy function without a vecjac op, or an
    implicit conversion): no gradient flows through what was computed from it."""
