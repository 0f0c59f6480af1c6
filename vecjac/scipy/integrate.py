"""vj.scipy.integrate: scipy.integrate.odeint and solve_ivp, differentiable
(vecjac/_src/api/scipy/odeint.py, vecjac/_src/api/scipy/solve_ivp.py).

    >>> import numpy as np, vecjac as vj
    >>> decay = lambda y, t, k: -k * y
    >>> float(vj.grad(lambda k: vj.scipy.integrate.odeint(decay, 1.0, [0.0, 1.0], args=(k,))[1, 0])(
    ...     np.array(0.5)).numpy().round(6))                       # d exp(-k) / dk
    -0.606531
"""
from vecjac._src.api.scipy.odeint import odeint
from vecjac._src.api.scipy.solve_ivp import solve_ivp

__all__ = ["odeint", "solve_ivp"]
