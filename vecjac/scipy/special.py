"""vj.scipy.special: SciPy's special functions, differentiable, with SciPy's signatures.

The implementation and its notes: vecjac/_src/api/scipy/special.py."""
from vecjac._src.api.scipy.special import (beta, betainc, betaln, digamma, entr, erf,  # noqa: F401
                                           erfc, erfcinv, erfinv, expit, gamma, gammainc,
                                           gammaincc, gammaln, gammasgn, i0, i0e, i1, i1e, iv, ive,
                                           j0, j1, jv, kv, log_expit, log_ndtr, logit, logsumexp,
                                           multigammaln, ndtr, ndtri, polygamma, psi, rgamma,
                                           stdtr, xlog1py, xlogy, y0, y1, yv)

__all__ = ['gammaln', 'digamma', 'psi', 'polygamma', 'rgamma', 'gamma', 'gammasgn', 'beta', 'betaln', 'betainc', 'gammainc', 'gammaincc', 'erf', 'erfc', 'erfinv', 'erfcinv', 'logit', 'expit', 'log_expit', 'ndtr', 'log_ndtr', 'ndtri', 'stdtr', 'xlogy', 'xlog1py', 'entr', 'i0', 'i1', 'i0e', 'i1e', 'iv', 'ive', 'jv', 'yv', 'kv', 'j0', 'j1', 'y0', 'y1', 'logsumexp', 'multigammaln']
