"""`python -m vecjac`: the demo runs, fast, and shows what it says; --help lists commands."""
import subprocess
import sys
import time


def test_demo_runs_and_converges():
    start = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "vecjac", "demo"], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    text = out.stdout
    for section in ("gradient", "Jacobian", "batch Jacobian", "Hessian", "newton_step"):
        assert section in text
    assert "[[802. 400.]" in text  # the Rosenbrock Hessian at (-1, 1), closed form
    assert "x = [1. 1.]" in text   # Newton converges to the minimum
    losses = [float(line.split("f = ")[1].split()[0]) for line in text.splitlines()
              if line.startswith("step ")]
    assert losses and all(b <= a for a, b in zip(losses, losses[1:]))  # never jumps up
    assert "RuntimeWarning" not in out.stderr
    assert time.perf_counter() - start < 30  # generous: the issue asks < 5 s


def test_help_lists_the_commands():
    out = subprocess.run([sys.executable, "-m", "vecjac", "--help"], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0 and "demo" in out.stdout
