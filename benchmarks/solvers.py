"""Differentiable solvers (issue 27): what a derivative costs next to the solve itself.

    python benchmarks/solvers.py [--quick]

One process, interleaved, minima of the repetitions, reported as ratios:
1. root, minimize, least_squares: the primal solve (root: F(x, theta) = A x + tanh(x) - theta
   by vj.scipy.optimize.root,
   hybr with vecjac's dense Jacobian; for n = 10^5 the tridiagonal A, method="krylov"
   with exact JVPs and sparse=True) against the backward pass of one gradient (a
   weighted sum of x*: the Jacobian at x*, its condition estimate and one adjoint solve)
   and, dense, the full Jacobian dx*/dtheta (pfor: every seed one right-hand side of
   one solve), each replayed from one persistent tape. minimize: the convex
   0.5 x.Ax + sum log cosh x - theta.x by Newton-CG (vecjac's gradient and Hessian-vector
   products); least_squares: 2n residuals (that system over a damped copy), trf. The
   gradients are checked against closed forms computed in NumPy.
2. newton_krylov: benchmarks/newton_krylov.py (exact JVPs against SciPy's finite
   differences, Bratu 10^4 and 10^5, the Hilbert system).
3. solve_ivp on the stiff 2-D Brusselator, 32 x 32 (2048 unknowns), BDF: one primal
   solve against the forward sensitivities for its 3 parameters (vj.jacfwd: one
   augmented [y, ydot] solve per parameter, each with its sparse Jacobian).

BLAS threads: one (OPENBLAS_NUM_THREADS / OMP_NUM_THREADS = 1 unless set). On the
2-core shared machine, OpenBLAS's threads turned a 100 x 100 solve from 0.1 ms into
~180 ms now and then, which measured the machine's load, not the derivative.
"""
import os
import sys
import time

for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"):  # before NumPy loads BLAS
    os.environ.setdefault(_name, "1")

import numpy as np  # noqa: E402
import scipy.optimize as so  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import vecjac as vj  # noqa: E402

opt = vj.scipy.optimize


def best(fn, repeat):
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


# -- 1. implicit derivative of root -------------------------------------------------------
def dense_problem(n, seed=0):
    rng = np.random.default_rng(seed)
    A = rng.uniform(-1, 1, (n, n)) / np.sqrt(n)
    A += np.diag(np.abs(A).sum(axis=1) + 1.0)
    return A


def F_dense(x, theta, A):
    return vj.linalg.matvec(A, x) + vj.tanh(x) - theta


def F_chain(x, theta):
    left = vj.concat([vj.zeros(1, dtype=x.dtype), x[:-1]], axis=0)
    right = vj.concat([x[1:], vj.zeros(1, dtype=x.dtype)], axis=0)
    return 3.0 * x + vj.tanh(x) - 0.5 * (left + right) - theta


def f_quadratic(x, theta, A):
    """A strictly convex objective: its minimizer solves A x + tanh(x) = theta."""
    return (0.5 * vj.reduce_sum(x * vj.linalg.matvec(A, x))
            + vj.reduce_sum(vj.math.log(vj.math.cosh(x))) - vj.reduce_sum(theta * x))


def r_tall(x, theta, A):
    """2n residuals in n unknowns: the square system F_dense stacked over a damped copy."""
    return vj.concat([vj.linalg.matvec(A, x) + vj.tanh(x) - theta, 0.1 * (x - theta)], axis=0)


def _implicit_setup(kind, n, sparse):
    """(solve, expected_gradient(x, w) or None) of one solver on one problem."""
    x0 = np.zeros(n)
    if sparse:
        return (lambda t: opt.root(F_chain, x0, args=(t,), method="krylov",
                                   options={"fatol": 1e-10}, sparse=True).x), None
    A = dense_problem(n)

    def sech2(x):
        return np.diag(1 - np.tanh(x) ** 2)
    if kind == "root":
        # independent check: dx/dtheta = J^-1, so the gradient of w.x is J^-T w
        return (lambda t: opt.root(F_dense, x0, args=(t, A), tol=1e-12).x,
                lambda x, w: np.linalg.solve((A + sech2(x)).T, w))
    if kind == "minimize":
        # grad_x f = A_sym x + tanh(x) - theta = 0: dx/dtheta = H^-1, H = A_sym + sech^2
        sym = 0.5 * (A + A.T)
        return (lambda t: opt.minimize(f_quadratic, x0, args=(t, A), method="Newton-CG",
                                       options={"xtol": 1e-12}).x,
                lambda x, w: np.linalg.solve(sym + sech2(x), w))
    # least squares: normal equations J^T r = 0; dx/dtheta = -(J^T J + sum r_i H_i)^-1 J^T dr/dtheta
    def expected(x, w):
        J = np.vstack([A + sech2(x), 0.1 * np.eye(n)])
        r = np.concatenate([A @ x + np.tanh(x) - theta_ls[0], 0.1 * (x - theta_ls[0])])
        second = np.diag(r[:n] * (-2 * np.tanh(x) * (1 - np.tanh(x) ** 2)))
        dr_dtheta = np.vstack([-np.eye(n), -0.1 * np.eye(n)])
        dx = -np.linalg.solve(J.T @ J + second, J.T @ dr_dtheta)
        return dx.T @ w
    theta_ls = []

    def solve(t):
        theta_ls[:] = [np.asarray(t.numpy() if hasattr(t, "numpy") else t)]
        return opt.least_squares(r_tall, x0, args=(t, A), xtol=1e-15, ftol=1e-15,
                                 gtol=1e-15).x
    return solve, expected


def bench_implicit(kind, n, repeat, sparse=False):
    """Primal solve against the backward pass of one gradient (and, dense n <= 1000, the
    full Jacobian dx*/dtheta), each replayed from one persistent tape."""
    rng = np.random.default_rng(1)
    theta = rng.uniform(-1, 1, n)
    weights = rng.standard_normal(n)
    t = vj.constant(theta)
    solve_at, expected = _implicit_setup(kind, n, sparse)

    def solve():
        return solve_at(t)

    def record():
        with vj.GradientTape(persistent=True) as tape:
            tape.watch(t)
            x = solve()
            loss = vj.reduce_sum(weights * x)
        return tape, x, loss
    tape, x, loss = record()
    tape.gradient(loss, t)  # first call: imports, sparsity detection (once per problem)
    row = {"primal s": best(solve, repeat),
           "gradient s": best(lambda: tape.gradient(loss, t), repeat)}
    row["gradient / primal"] = row["gradient s"] / row["primal s"]
    g = tape.gradient(loss, t).numpy()
    if expected is not None:
        want = expected(x.numpy(), weights)
        row["gradient error"] = float(np.abs(g - want).max() / np.abs(want).max())
    if n <= 1000 and not sparse:
        row["jacobian s"] = best(lambda: tape.jacobian(x, t), repeat)
        row["jacobian / primal"] = row["jacobian s"] / row["primal s"]
    return row


# -- 3. solve_ivp sensitivities on the 2-D Brusselator -------------------------------------
def brusselator(t, y, p, m):
    a, b, alpha = p[0], p[1], p[2]
    u = vj.reshape(y[:m * m], (m, m))
    v = vj.reshape(y[m * m:], (m, m))

    def lap(z):  # periodic 5-point Laplacian, unit square
        return (vj.roll(z, 1, 0) + vj.roll(z, -1, 0) + vj.roll(z, 1, 1) + vj.roll(z, -1, 1) -
                4 * z) * m ** 2
    du = a + u * u * v - (b + 1) * u + alpha * lap(u)
    dv = b * u - u * u * v + alpha * lap(v)
    return vj.concat([vj.reshape(du, (-1,)), vj.reshape(dv, (-1,))], axis=0)


def bench_brusselator(m, repeat, t_end=1.0):
    xs = np.linspace(0, 1, m, endpoint=False)
    X, Y = np.meshgrid(xs, xs, indexing="ij")
    y0 = np.concatenate([(22 * Y * (1 - Y) ** 1.5).reshape(-1),
                         (27 * X * (1 - X) ** 1.5).reshape(-1)])
    p = np.array([3.4, 1.0, 0.1])
    options = dict(method="BDF", rtol=1e-6, atol=1e-8, t_eval=[t_end])

    def primal():
        return vj.scipy.integrate.solve_ivp(brusselator, (0.0, t_end), y0, args=(p, m),
                                            **options)

    def sensitivities():
        return vj.jacfwd(lambda q: vj.scipy.integrate.solve_ivp(
            brusselator, (0.0, t_end), y0, args=(q, m), **options).y[:, -1])(p)
    res = primal()
    S = sensitivities()
    eps = 1e-4
    fd = (primal_with(p + [0, 0, eps], y0, m, options, t_end) -
          primal_with(p - [0, 0, eps], y0, m, options, t_end)) / (2 * eps)
    row = {"unknowns": y0.size, "steps (nfev)": int(res.nfev), "jacobians": int(res.njev),
           "primal s": best(primal, repeat), "sensitivities s": best(sensitivities, repeat),
           "d/dalpha vs FD (rel)": float(np.abs(S.numpy()[:, 2] - fd).max() /
                                         np.abs(fd).max())}
    row["sensitivities / primal"] = row["sensitivities s"] / row["primal s"]
    return row


def primal_with(p, y0, m, options, t_end):
    return vj.scipy.integrate.solve_ivp(brusselator, (0.0, t_end), y0, args=(p, m),
                                        **options).y.numpy()[:, -1]


def shown(row):
    return {k: float(f"{v:.4g}") if isinstance(v, float) else v for k, v in row.items()}


def main():
    quick = "--quick" in sys.argv
    repeat = 2 if quick else 3
    print("1. implicit derivative vs primal solve")
    for kind, n, sparse in (("root", 100, False), ("root", 1000, False),
                            ("root", 10 ** 4 if quick else 10 ** 5, True),
                            ("minimize", 100, False), ("minimize", 1000, False),
                            ("least_squares", 100, False), ("least_squares", 1000, False)):
        label = " sparse (krylov + SparseSolve)" if sparse else " dense"
        print(f"  {kind}, n = {n}{label}:", shown(bench_implicit(kind, n, repeat, sparse)))
    print("2. newton_krylov: see benchmarks/newton_krylov.py")
    print("3. solve_ivp BDF, 2-D Brusselator", "16^2" if quick else "32^2",
          "forward sensitivities (3 parameters) vs primal")
    print("  ", shown(bench_brusselator(16 if quick else 32, repeat)))


if __name__ == "__main__":
    main()
