"""How SciPy integrates a tangent system z = [y, ydot_1 .. ydot_k] (the forward
sensitivities of vj.scipy.integrate.solve_ivp): with one factorization per Newton matrix
instead of k + 1, and with the sensitivities in or out of the error control (all but LSODA).

One factorization (BDF and Radau). The Newton matrix of the tangent system is taken
block-diagonal, kron(I_{k+1}, M) with M = I - c J (BDF; Radau's two matrices alike) of
the original system: the couplings d(J ydot)/dy (second derivatives times tangents) are
left out. SciPy's implicit methods use the matrix only to iterate their stage equations,
stopping on the size of the corrections, so the values do not depend on it, only the
iteration count. `solver` subclasses SciPy's BDF / Radau so that they factor M alone
(the d x d Jacobian J, from vecjac) and apply it to the k + 1 blocks as one
multi-right-hand-side solve. On the 2-D Brusselator 32^2 (2,048 states, 3 parameters,
rtol 1e-6): 30 ms per factorization of the 8,192 block-diagonal matrix against 7.7 ms
for M, and 1.0 ms per solve against 0.44 ms (2.1 s -> 1.5 s of a 4.1 s sensitivity run).

Error control (`controlled`: how many leading states take part). With the
sensitivities out of it (solve_ivp's default), the steps and orders are chosen on y
alone, as the primal solve chooses them: the tolerances become atol / r for y, infinite
for the sensitivities, and rtol / r, with r = sqrt(n / controlled) so that SciPy's RMS
error norm over all n states equals the primal's over y (the same step sizes, Newton
tolerance and iterations). The sensitivities are then the derivative of the
discretization the solve takes on y's steps (each step's formula is linear in them); their
own truncation error is not estimated. With them in the control, the steps also resolve
the sensitivities (more steps: 688 evaluations against 503 on that Brusselator; their
error at rtol 1e-6 was 1e-6 against 9e-6 out of it, against a solve at rtol 1e-10).
"""
import importlib

import numpy as np

__all__ = ["BLOCK_METHODS", "solver"]

BLOCK_METHODS = ("BDF", "Radau")


def _scipy(name):
    # scipy.integrate / scipy.sparse: imported on first use, never with vecjac
    return importlib.import_module(name)


def _newton_tolerance(rtol):
    """SciPy's BDF and Radau stop their Newton iterations at this tolerance for rtol (the
    value they set in __init__; kept at the caller's rtol when rtol is scaled)."""
    return max(10 * np.finfo(float).eps / rtol, min(0.03, rtol ** 0.5))


def tolerances(options, n, controlled):
    """SciPy's options with rtol / atol such that only the first `controlled` of the n
    states take part in the error control (module docstring), the others free."""
    opts = dict(options)
    if controlled >= n:
        return opts
    scale = np.sqrt(n / controlled)
    atol = np.full(n, np.inf)
    atol[:controlled] = float(np.min(opts.get("atol", 1e-6))) / scale
    opts["rtol"] = float(np.min(opts.get("rtol", 1e-3))) / scale
    opts["atol"] = atol
    return opts


def solver(method, size, copies, controlled, options):
    """(method, options) for SciPy's solve_ivp integrating `copies` states of `size` that
    share one Newton block, the first `controlled` states in the error control: for BDF
    and Radau a subclass whose `jac` returns the size x size block; for the explicit
    methods the method itself with the tolerances only; LSODA as given (every state in
    its error control)."""
    n = size * copies
    if method == "LSODA":  # ODEPACK's own norms: unlike the others, it then takes more
        return method, dict(options)  # steps than the primal (186 against 108), not its own
    opts = tolerances(options, n, controlled)
    if method not in BLOCK_METHODS:
        return method, opts
    base = getattr(_scipy("scipy.integrate"), method)
    rtol = float(np.min(dict(options).get("rtol", 1e-3)))

    class BlockNewton(base):
        """SciPy's method, its Newton matrix kron(I_copies, M) held as M."""

        def __init__(self, fun, t0, y0, t_bound, **kwargs):
            super().__init__(fun, t0, y0, t_bound, **kwargs)
            self.newton_tol = _newton_tolerance(rtol)
            sparse = _scipy("scipy.sparse")
            self.I = sparse.eye(size, format="csc", dtype=self.y.dtype) \
                if sparse.issparse(self.J) else np.identity(size, dtype=self.y.dtype)
            solve = self.solve_lu
            by_columns = sparse.issparse(self.J)

            def solve_blocks(LU, b):
                blocks = b.reshape(copies, size)
                if by_columns:  # SuperLU: the blocks as the columns of one right-hand side
                    return solve(LU, blocks.T).T.reshape(-1)
                # LAPACK: one vector at a time (several columns make OpenBLAS start its
                # threads: 23 ms instead of 10 us for a 3 x 3 system on a busy machine)
                return np.concatenate([solve(LU, block.copy()) for block in blocks])
            self.solve_lu = solve_blocks

        def _validate_jac(self, jac, sparsity):
            """jac(t, z): the block M's Jacobian J (size x size), evaluated here once."""
            def block(t, z, _=None):  # Radau passes f(t, z) too
                self.njev += 1
                J = jac(t, z)
                if J.shape != (size, size):
                    raise ValueError(f"the Newton block must be {size} x {size}, got "
                                     f"{J.shape}")
                return J.tocsc() if hasattr(J, "tocsc") else np.asarray(J, dtype=float)
            return block, block(self.t, self.y)
    BlockNewton.__name__ = BlockNewton.__qualname__ = f"BlockNewton{method}"
    return BlockNewton, opts
