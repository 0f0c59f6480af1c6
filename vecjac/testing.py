"""Derivative checkers: check_grads (finite differences, any order), check_pfor (pfor
against the plain loop), numerical_jacobian.

The implementation and its notes: vecjac/_src/api/testing.py."""
from vecjac._src.api.testing import check_grads, check_pfor, numerical_jacobian  # noqa: F401
