"""Reverse mode of vj.scipy.integrate.solve_ivp / odeint, the three adjoints side by side.

    python benchmarks/ode_adjoint.py [--quick] [--repeat 2] [--only robertson,odeint,...]

For each problem, the gradient of one scalar loss of the solution with respect to every
parameter and y0, by:
- forward:       one solve, no tape (what the others are a multiple of);
- interpolated:  reverse mode, y read from the forward run's dense output (the default);
- checkpoint:    reverse mode, y at 10 checkpoints + the outputs, segments re-integrated;
- backsolve:     reverse mode, y integrated backwards with the adjoint (fails on stiff
                 problems: reported with the time it took to fail, or a gradient that is
                 not finite: odeint's, which does not check yet);
- jacfwd:        forward sensitivities (vj.jacfwd), one tangent per parameter.
Each cell is CPU seconds (time.process_time: the machine is shared, wall time moves with
the other users' load) of the first call and the best of `--repeat` further calls, and
(Nx) the best repeated time over the forward solve's. "err a / b": the gradient's
difference from jacfwd's, a = the largest relative difference of an entry (Robertson's
entries span 16 decades), b = the largest difference over the largest entry. Both modes
are accurate to the tolerances, so a few 1e-4 componentwise at rtol 1e-6 is the two
approximations' difference on small entries, not an error of one of them.

Problems:
- robertson:  Robertson's kinetics (k = 0.04, 3e7, 1e4; y0 = (1, 0, 0)), solve_ivp with
              BDF, Radau, LSODA, t in [0, 1] and [0, 100], rtol 1e-8, atol 1e-12 (Radau
              1e-7, 1e-11); loss: y1 + 1e4 y2 + 2 y3 at T. 6 parameters (k, y0).
- odeint:     the same through vj.scipy.integrate.odeint (SciPy's LSODA).
- dense2048:  dy/dt = -A y + tanh(W y) + b, 2048 states, W dense (a Tensor: a NumPy
              array closed over is copied into every tape entry), RK45, rtol 1e-6,
              t in [0, 1]; loss 0.5 |y(1) - target|^2; the 2048 parameters b. jacfwd:
              `--fwd-params` of the 2048 directions (default all; --quick 128), and the
              time scaled to 2048 when fewer.
- brusselator: 1-D Brusselator, 2 x 64 states (no-flux), BDF with vecjac's sparse
              Jacobian (the adjoint's Newton matrix -(df/dy)^T sparse too), t in [0, 10],
              rtol 1e-6, atol 1e-8; 3 parameters + 128 initial values.
"""
import argparse
import os
import sys
import time

for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"):  # before NumPy loads BLAS
    os.environ.setdefault(_name, "1")

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import vecjac as vj  # noqa: E402

solve_ivp = vj.scipy.integrate.solve_ivp
odeint = vj.scipy.integrate.odeint
KINDS = ("interpolated", "checkpoint", "backsolve")


def cpu(fn):
    start = time.process_time()
    out = fn()
    return time.process_time() - start, out


def flat(grads):
    return np.concatenate([np.asarray(g.numpy() if hasattr(g, "numpy") else g).reshape(-1)
                           for g in (grads if isinstance(grads, (tuple, list)) else [grads])])


def row(name, forward, cells, fwd):
    """One markdown row: the forward solve, each reverse kind (with its error against
    jacfwd's gradient), jacfwd. A cell: (first s, best repeated s, gradient, error)."""
    reference = flat(fwd[2])
    out = [name, f"{forward:.3g}"]
    for first, later, value, error in cells:
        if error is not None:
            out.append(f"NaN gradient ({first:.3g} s)" if error == "not finite" else
                       f"raises after {first:.3g} s")
            continue
        got = flat(value)[:reference.size]
        error = np.abs(got - reference)
        out.append(f"{first:.3g} / {later:.3g} ({later / forward:.1f}x), err "
                   f"{np.max(error / np.abs(reference)):.0e} / "
                   f"{np.max(error) / np.max(np.abs(reference)):.0e}")
    out.append(f"{fwd[0]:.3g} / {fwd[1]:.3g} ({fwd[1] / forward:.1f}x)")
    return "| " + " | ".join(out) + " |"


HEADER = ("| problem | forward s | interpolated | checkpoint | backsolve | jacfwd |\n"
          "|---|---|---|---|---|---|")


def failing(fn):
    """Time a call that may raise: (seconds, value, error)."""
    start = time.process_time()
    try:
        value = fn()
    except ValueError as err:
        return time.process_time() - start, None, str(err)
    return time.process_time() - start, value, None


def compare(name, forward_fn, loss, params, repeat, fwd=None):
    """forward_fn() the plain solve; loss(adjoint)(*params) the scalar loss."""
    cpu(forward_fn)  # warm-up (imports, sparsity plans)
    forward = min(cpu(forward_fn)[0] for _ in range(repeat))
    argnums = tuple(range(len(params)))
    cells = []
    for kind in KINDS:
        spent, value, error = failing(lambda: vj.grad(loss(kind), argnums=argnums)(*params))
        if error is None and not np.all(np.isfinite(flat(value))):
            error = "not finite"
        if error is not None:
            cells.append((spent, None, None, error))
            continue
        later = min(cpu(lambda: vj.grad(loss(kind), argnums=argnums)(*params))[0]
                    for _ in range(repeat))
        cells.append((spent, later, value, None))
    if fwd is None:
        first, value = cpu(lambda: vj.jacfwd(loss("interpolated"), argnums=argnums)(*params))
        later = min(cpu(lambda: vj.jacfwd(loss("interpolated"), argnums=argnums)(*params))[0]
                    for _ in range(repeat))
        fwd = (first, later, value, None)
    print(row(name, forward, cells, fwd), flush=True)


# -- problems ------------------------------------------------------------------------------
def robertson(t, y, k):
    return vj.stack([-k[0] * y[0] + k[2] * y[1] * y[2],
                     k[0] * y[0] - k[2] * y[1] * y[2] - k[1] * y[1] ** 2, k[1] * y[1] ** 2])


K = np.array([0.04, 3e7, 1e4])
Y0 = np.array([1.0, 0.0, 0.0])
WEIGHTS = np.array([1.0, 1e4, 2.0])


def robertson_rows(repeat, quick):
    for end in ((1.0,) if quick else (1.0, 100.0)):
        for method in ("BDF", "Radau", "LSODA"):
            tol = dict(rtol=1e-7, atol=1e-11) if method == "Radau" else dict(rtol=1e-8,
                                                                               atol=1e-12)

            def loss(kind, method=method, tol=tol, end=end):
                def f(k, y0):
                    y = solve_ivp(robertson, (0.0, end), y0, method=method, t_eval=[end],
                                  args=(k,), adjoint=kind, **tol).y[:, -1]
                    return vj.reduce_sum(y * WEIGHTS)
                return f
            compare(f"Robertson [0, {end:g}] {method}",
                    lambda method=method, tol=tol, end=end: solve_ivp(
                        robertson, (0.0, end), Y0, method=method, t_eval=[end], args=(K,),
                        **tol), loss, (K, Y0), repeat)


def odeint_rows(repeat, quick):
    for end in ((1.0,) if quick else (1.0, 100.0)):
        def loss(kind, end=end):
            def f(k, y0):
                y = odeint(lambda y, s, k: robertson(s, y, k), y0, [0.0, end], args=(k,),
                           rtol=1e-8, atol=1e-12, adjoint=kind, mxstep=100000)
                return vj.reduce_sum(y[-1] * WEIGHTS)
            return f
        compare(f"odeint Robertson [0, {end:g}]",
                lambda end=end: odeint(lambda y, s, k: robertson(s, y, k), Y0, [0.0, end],
                                       args=(K,), rtol=1e-8, atol=1e-12, mxstep=100000),
                loss, (K, Y0), repeat)


def dense_rows(repeat, quick, fwd_params):
    d = 2048
    rng = np.random.default_rng(0)
    A = rng.uniform(0.5, 1.5, d)
    W = vj.constant(rng.standard_normal((d, d)) / np.sqrt(d))
    y0 = rng.standard_normal(d) * 0.5
    b = rng.standard_normal(d) * 0.1
    target = rng.standard_normal(d)

    def rhs(t, y, b):
        return -A * y + vj.tanh(vj.linalg.matvec(W, y)) + b

    def solve(b, kind="interpolated"):
        return solve_ivp(rhs, (0.0, 1.0), y0, t_eval=[1.0], args=(b,), rtol=1e-6, atol=1e-8,
                         adjoint=kind).y[:, -1]

    def loss(kind):
        return lambda b: 0.5 * vj.reduce_sum((solve(b, kind) - target) ** 2)
    n = min(fwd_params, d)

    def some(head):  # jacfwd over the first n entries of b only
        return loss("interpolated")(vj.concat([head, b[n:]], axis=0))
    first, value = cpu(lambda: vj.jacfwd(some)(b[:n]))
    later = first if n < d else min(cpu(lambda: vj.jacfwd(some)(b[:n]))[0]
                                    for _ in range(repeat))
    scaled = d / n
    fwd = (first * scaled, later * scaled, value, None)
    label = "dense 2048 states, 2048 params, RK45" + (
        f" (jacfwd: {n} directions, time x {scaled:g})" if n < d else "")
    compare(label, lambda: solve(b), loss, (b,), repeat, fwd=fwd)


def brusselator_rows(repeat, quick):
    n = 64

    def rhs(t, y, p):
        u, v = y[:n], y[n:]

        def laplacian(w):
            left = vj.concat([w[:1], w[:-1]], axis=0)
            right = vj.concat([w[1:], w[-1:]], axis=0)
            return (left - 2 * w + right) * (p[2] * (n + 1) ** 2)
        uuv = u * u * v
        return vj.concat([p[0] + uuv - (p[1] + 1) * u + laplacian(u),
                          p[1] * u - uuv + laplacian(v)], axis=0)
    x = np.arange(1, n + 1) / (n + 1)
    y0 = np.r_[1 + np.sin(2 * np.pi * x), np.full(n, 3.0)]
    p = np.array([1.0, 3.0, 0.02])
    end = 2.0 if quick else 10.0

    def loss(kind):
        def f(p, y0):
            y = solve_ivp(rhs, (0.0, end), y0, method="BDF", t_eval=[end / 2, end], args=(p,),
                          rtol=1e-6, atol=1e-8, adjoint=kind).y
            return vj.reduce_sum(y[:n, -1] ** 2) + vj.reduce_sum(y[n:, 0])
        return f
    compare(f"Brusselator 2 x 64, BDF sparse, [0, {end:g}]",
            lambda: solve_ivp(rhs, (0.0, end), y0, method="BDF", t_eval=[end / 2, end],
                              args=(p,), rtol=1e-6, atol=1e-8), loss, (p, y0), repeat)


PROBLEMS = {"robertson": robertson_rows, "odeint": odeint_rows, "dense2048": dense_rows,
            "brusselator": brusselator_rows}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--only", default=",".join(PROBLEMS))
    parser.add_argument("--fwd-params", type=int, default=None)
    args = parser.parse_args()
    fwd_params = args.fwd_params or (128 if args.quick else 2048)
    print("CPU seconds: first call / best of the repeats (multiple of the forward solve), "
          "err: componentwise / normwise relative to jacfwd\n")
    print(HEADER)
    for name in args.only.split(","):
        fn = PROBLEMS[name]
        if name == "dense2048":
            fn(args.repeat, args.quick, fwd_params)
        else:
            fn(args.repeat, args.quick)


if __name__ == "__main__":
    main()
