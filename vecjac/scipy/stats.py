"""vj.scipy.stats: differentiable distributions with SciPy's signatures.

The implementation and its notes: vecjac/_src/api/scipy/stats.py."""
from vecjac._src.api.scipy.stats import (beta, chi2, dirichlet, gamma,  # noqa: F401
                                         multivariate_normal, norm, poisson, t)

__all__ = ['norm', 't', 'gamma', 'beta', 'chi2', 'poisson', 'multivariate_normal', 'dirichlet']
