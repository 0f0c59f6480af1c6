"""vj.scipy.linalg: differentiable scipy.linalg functions, with SciPy's signatures.

The implementation and its notes: vecjac/_src/api/scipy/linalg.py."""
from vecjac._src.api.scipy.linalg import (cho_solve, expm, solve_banded,  # noqa: F401
                                          solve_sylvester, solve_triangular, sqrtm)

__all__ = ['solve_triangular', 'cho_solve', 'solve_banded', 'expm', 'sqrtm', 'solve_sylvester']
