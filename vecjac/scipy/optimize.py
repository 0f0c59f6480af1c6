"""vj.scipy.optimize: SciPy's solvers with solutions differentiable in their args (the
implicit function theorem), and the adapters that hand vecjac derivatives to SciPy.

    >>> import numpy as np, vecjac as vj
    >>> F = lambda x, theta: x ** 3 + x - theta          # x*(theta): x*^3 + x* = theta
    >>> dx = vj.grad(lambda th: vj.scipy.optimize.root(F, [1.0], args=(th,)).x[0])(np.array(2.0))
    >>> float(dx.numpy().round(8))                       # 1 / (3 x*^2 + 1) at x* = 1
    0.25

The solvers: vecjac/_src/api/scipy/solvers.py; the op and its rules:
vecjac/_src/api/scipy/implicit.py; the adapters: vecjac/_src/api/scipy/optimize.py.
"""
from vecjac._src.api.scipy.solvers import (fixed_point, fun_and_jac, hess, hessp,  # noqa: F401
                                           least_squares, minimize, newton_krylov, root)

__all__ = ["root", "fixed_point", "minimize", "least_squares", "newton_krylov",
           "fun_and_jac", "hess", "hessp"]
