"""Command line: `python -m vecjac demo` tours the main jobs; `--help` lists commands."""
import argparse
import sys
import time

import numpy as np

import vecjac as vj


def _show(title, value, note=""):
    print(f"\n== {title}" + (f"  ({note})" if note else ""))
    arr = np.asarray(value)
    with np.printoptions(precision=4, suppress=True, linewidth=100):
        print(f"shape {arr.shape}:\n{arr}")


def demo():
    """Gradient, Jacobian, batch Jacobian, Hessian and a Newton step on small examples."""
    start = time.perf_counter()
    print(f"vecjac {vj.__version__}: TensorFlow's GradientTape over NumPy, "
          "Jacobians vectorized by pfor")

    # 1. gradient: d/dx x**2 at x = 3
    x = vj.Variable(3.0)
    with vj.GradientTape() as tape:
        y = x ** 2
    _show("gradient of x**2 at x=3", tape.gradient(y, x), "expect 6")

    # 2. Jacobian of a small layer output w.r.t. its weights
    rng = np.random.default_rng(0)
    w = vj.Variable(rng.standard_normal((3, 2)), name="w")
    inputs = vj.constant(rng.standard_normal((2, 3)))
    with vj.GradientTape() as tape:
        out = vj.tanh(inputs @ w)
    j = tape.jacobian(out, w)
    _show("Jacobian of tanh(x @ w) w.r.t. w", j[0, 0], f"full shape {j.shape}; row (0, 0)")

    # 3. batch Jacobian: one (out, in) Jacobian per example
    xb = vj.constant(rng.standard_normal((4, 3)))
    with vj.GradientTape() as tape:
        tape.watch(xb)
        yb = vj.sin(xb @ w.numpy())
    jb = tape.batch_jacobian(yb, xb)
    _show("batch Jacobian of sin(x @ W), example 0", jb[0], f"full shape {jb.shape}")

    # 4. Hessian of the Rosenbrock function at (-1, 1)
    def rosenbrock(p):
        return (1 - p[0]) ** 2 + 100 * (p[1] - p[0] ** 2) ** 2
    p = vj.Variable([-1.0, 1.0])
    with vj.GradientTape() as t2:
        with vj.GradientTape() as t1:
            f = rosenbrock(p)
        g = t1.gradient(f, p)
    h = t2.jacobian(g, p)
    _show("Hessian of Rosenbrock at (-1, 1)", h, "closed form [[802, 400], [400, 200]]")

    # 5. Newton steps: solve (H + damping I) d = g and update, to the minimum at (1, 1).
    # damping="auto" (the default): none where H is positive definite and the step lowers
    # f (the last steps, quadratic convergence); Levenberg damping where it would not
    # (pure Newton jumps out of the valley to f = 1.4e3 at step 2 from here)
    p = vj.Variable([-1.2, 1.0])
    print("\n== vj.newton_step on Rosenbrock from (-1.2, 1)")
    for step in range(40):
        info = vj.newton_step(lambda: rosenbrock(p), [p])
        f = float(rosenbrock(p))
        print(f"step {step + 1:2d}: x = {np.array2string(p.numpy(), precision=6)}, "
              f"f = {f:.3e} (|g| before = {info.grad_norm:.2e}, damping {info.damping:.2g})")
        if f < 1e-20:
            break
    print(f"\ndone in {time.perf_counter() - start:.2f} s")


COMMANDS = {"demo": demo}


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m vecjac",
        description="vecjac: gradients, Jacobians, batch Jacobians and Hessians over NumPy.")
    parser.add_argument("command", choices=sorted(COMMANDS),
                        help="demo: a short tour (gradient, Jacobian, batch Jacobian, "
                             "Hessian, Newton steps)")
    args = parser.parse_args(argv)
    COMMANDS[args.command]()
    return 0


if __name__ == "__main__":
    sys.exit(main())
