"""vj.scipy: vecjac and SciPy.

- adapters for scipy.optimize (`fun_and_jac`, `hess`, `hessp`, `minimize`, `root`):
  vecjac/scipy/_optimize.py;
- differentiable versions of SciPy functions, with SciPy's signatures:
  `vj.scipy.special` (special functions; the ufuncs among them also dispatch from
  `scipy.special.<name>(tensor)`), `vj.scipy.stats` (distributions' logpdf, pdf, cdf,
  logcdf), `vj.scipy.linalg` (solve_triangular, cho_solve, expm, sqrtm,
  solve_sylvester), `vj.scipy.signal` (convolve).
SciPy itself is imported at the first call that needs it, never with vecjac.
"""
from ._optimize import fun_and_jac, hess, hessp, minimize, root  # noqa: F401
from . import linalg, signal, special, stats  # noqa: F401
