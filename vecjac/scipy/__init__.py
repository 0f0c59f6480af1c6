"""vj.scipy: vecjac and SciPy.

- adapters for scipy.optimize (`fun_and_jac`, `hess`, `hessp`, `minimize`, `root`):
  vecjac/scipy/_optimize.py.
"""
from ._optimize import fun_and_jac, hess, hessp, minimize, root  # noqa: F401
from ._jac import jac  # noqa: F401
