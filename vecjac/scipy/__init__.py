"""vj.scipy: vecjac and SciPy.

- `vj.scipy.optimize`: SciPy's solvers (root, fixed_point, minimize, least_squares,
  newton_krylov) whose solutions are differentiable in their args, and the adapters
  `fun_and_jac`, `hess`, `hessp`; `vj.scipy.minimize`, `root`, `fun_and_jac`, `hess`,
  `hessp` are the same objects under their older names;
- differentiable versions of SciPy functions, with SciPy's signatures:
  `vj.scipy.special` (special functions; the ufuncs among them also dispatch from
  `scipy.special.<name>(tensor)`), `vj.scipy.stats` (distributions' logpdf, pdf, cdf,
  logcdf), `vj.scipy.linalg` (solve_triangular, cho_solve, expm, sqrtm,
  solve_sylvester, solve_banded), `vj.scipy.signal` (convolve), `vj.scipy.integrate`
  (odeint, solve_ivp), `vj.scipy.fft` (the FFTs; `scipy.fft.<name>(tensor)` runs them
  too, through the uarray backend `vj.scipy.fft.backend` that `import vecjac` registers).
SciPy itself is imported at the first call that needs it, never with vecjac; these six
namespaces load at their first use (together about 10 ms that `import vecjac` saves).
"""
import importlib as _importlib

from vecjac._src.api.scipy.jac import jac  # noqa: F401
from vecjac.scipy import optimize  # noqa: F401
from vecjac.scipy.optimize import fun_and_jac, hess, hessp, minimize, root  # noqa: F401

_LAZY = ("fft", "integrate", "linalg", "signal", "special", "stats")


def __getattr__(name):
    if name in _LAZY:
        return _importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'vecjac.scipy' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
