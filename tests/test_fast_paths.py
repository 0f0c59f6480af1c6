"""The transform stack's fast paths and their switch (vecjac/_src/core/context.py: alone).

Forward mode and pfor compute an op directly when no other transform could see the
difference (`alone`); VECJAC_NO_FAST_PATHS=1 makes every op take the generic route. The
derivatives must agree either way, and with an independent computation (analytic or
finite differences); the switch must really route around the fast paths.
"""
import ast
import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import vecjac as vj
from vecjac._src.core import context
from vecjac.autodiff import ForwardAccumulator

# Run in a fresh process (the switch is read once, at import): prints the derivatives
# and how often the fast paths ran.
SCRIPT = r"""
import json
import numpy as np
import vecjac as vj
from vecjac._src.core import context
from vecjac._src.transforms.forward.accumulator import ForwardAccumulator
from vecjac._src.transforms.pfor.pfor import PFor

counts = {"fused": 0, "loop": 0}
fused, elementwise = ForwardAccumulator._fused, PFor._elementwise_fast

def counted_fused(self, op, x):
    counts["fused"] += 1
    return fused(self, op, x)

def counted_elementwise(self, op, tensors, attrs):
    out = elementwise(self, op, tensors, attrs)
    counts["loop"] += out is not None
    return out

ForwardAccumulator._fused, PFor._elementwise_fast = counted_fused, counted_elementwise
P, Y0, DT, STEPS = np.array([1.1, 0.4, 0.1, 0.4]), np.array([10.0, 5.0]), 0.05, 20

def trajectory(p):
    a, b, c, d = p[0], p[1], p[2], p[3]
    def rhs(y):
        x, z = y[0], y[1]
        return vj.stack([a * x - b * x * z, c * x * z - d * z])
    y = vj.constant(Y0)
    for _ in range(STEPS):
        k1 = rhs(y)
        k2 = rhs(y + DT / 2 * k1)
        k3 = rhs(y + DT / 2 * k2)
        k4 = rhs(y + DT * k3)
        y = y + DT / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    return vj.exp(y) * vj.sin(y)

def hessian_f(x):
    return vj.reduce_sum(vj.exp(x) * vj.sin(x)) + (x[0] * x[1]) ** 2

W = np.linspace(-1.0, 1.0, 12).reshape(3, 4)
X = np.linspace(-0.5, 0.7, 15).reshape(5, 3)
L = np.array([1.0, -1.0, 1.0, 1.0, -1.0])

def logistic(w):
    return vj.reduce_mean(vj.math.softplus(-vj.constant(L) * (vj.constant(X) @ w)))

out = {
    "jacfwd": vj.jacfwd(trajectory)(P).numpy().tolist(),
    "jacobian": vj.jacobian(trajectory)(P).numpy().tolist(),
    "hessian": vj.hessian(hessian_f)(np.array([0.3, -0.7, 1.2])).numpy().tolist(),
    "batch_jacobian": vj.batch_jacobian(lambda x: vj.tanh(x @ vj.constant(W)))(X)
        .numpy().tolist(),
    "grad": vj.grad(logistic)(np.array([0.2, -0.1, 0.4])).numpy().tolist(),
}
with ForwardAccumulator(vj.constant(1.0), vj.constant(1.0)) as acc:
    out["alone"] = context.alone(acc)
out["counts"] = counts
print(json.dumps(out))
"""


def _run(no_fast_paths):
    env = dict(os.environ)
    env.pop("VECJAC_NO_FAST_PATHS", None)
    if no_fast_paths:
        env["VECJAC_NO_FAST_PATHS"] = "1"
    root = os.path.dirname(os.path.dirname(os.path.abspath(vj.__file__)))
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                          env=env, cwd=root, timeout=600)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def runs():
    return {"fast": _run(False), "generic": _run(True)}


def _trajectory_np(p):
    a, b, c, d = p
    y = np.array([10.0, 5.0])

    def rhs(y):
        x, z = y
        return np.array([a * x - b * x * z, c * x * z - d * z])
    for _ in range(20):
        k1 = rhs(y)
        k2 = rhs(y + 0.025 * k1)
        k3 = rhs(y + 0.025 * k2)
        k4 = rhs(y + 0.05 * k3)
        y = y + 0.05 / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    return np.exp(y) * np.sin(y)


def _expected():
    p = np.array([1.1, 0.4, 0.1, 0.4])
    h = 1e-6  # central differences: error ~h^2, far below the tolerance below
    jac = np.stack([(_trajectory_np(p + h * e) - _trajectory_np(p - h * e)) / (2 * h)
                    for e in np.eye(4)], axis=-1)
    x = np.array([0.3, -0.7, 1.2])
    hess = np.diag(2 * np.exp(x) * np.cos(x))
    hess[0, 0] += 2 * x[1] ** 2
    hess[1, 1] += 2 * x[0] ** 2
    hess[0, 1] = hess[1, 0] = 4 * x[0] * x[1]
    W = np.linspace(-1.0, 1.0, 12).reshape(3, 4)
    X = np.linspace(-0.5, 0.7, 15).reshape(5, 3)
    t = np.tanh(X @ W)
    batch = (1 - t ** 2)[:, :, None] * W.T[None]
    labels = np.array([1.0, -1.0, 1.0, 1.0, -1.0])
    w = np.array([0.2, -0.1, 0.4])
    margin = labels * (X @ w)
    grad = -X.T @ (labels / (1 + np.exp(margin))) / len(labels)
    return {"jacfwd": jac, "jacobian": jac, "hessian": hess, "batch_jacobian": batch,
            "grad": grad}


@pytest.mark.parametrize("what", ["jacfwd", "jacobian", "hessian", "batch_jacobian", "grad"])
def test_the_generic_route_gives_the_same_derivatives(runs, what):
    fast, generic = np.array(runs["fast"][what]), np.array(runs["generic"][what])
    expected = _expected()[what]
    tol = 1e-6 if what in ("jacfwd", "jacobian") else 1e-12
    np.testing.assert_allclose(fast, expected, rtol=tol, atol=tol)
    np.testing.assert_allclose(generic, expected, rtol=tol, atol=tol)
    np.testing.assert_allclose(fast, generic, rtol=1e-12, atol=1e-12)


def test_the_switch_routes_around_every_fast_path(runs):
    assert runs["fast"]["alone"] is True
    assert runs["fast"]["counts"]["fused"] > 0 and runs["fast"]["counts"]["loop"] > 0
    assert runs["generic"]["alone"] is False
    assert runs["generic"]["counts"] == {"fused": 0, "loop": 0}


def test_alone_means_no_other_transform_could_see():
    x = vj.constant([1.0, 2.0])
    with ForwardAccumulator(x, vj.constant([1.0, 0.0])) as acc:
        assert context.alone(acc) == (not context.NO_FAST_PATHS)
        with vj.GradientTape():  # a tape anywhere records the rules' ops
            assert not context.alone(acc)
        with ForwardAccumulator(x, vj.constant([0.0, 1.0])) as inner:
            assert not context.alone(inner)  # the outer one follows its rules' ops
            assert context.alone(acc) == (not context.NO_FAST_PATHS)  # inner: hidden
    with vj.GradientTape() as tape:
        with ForwardAccumulator(x, vj.constant([1.0, 0.0])) as acc:
            assert not context.alone(acc)
    del tape


def test_alone_is_false_under_the_switch(monkeypatch):
    monkeypatch.setattr(context, "NO_FAST_PATHS", True)
    x = vj.constant(1.0)
    with ForwardAccumulator(x, vj.constant(1.0)) as acc:
        assert context.alone(acc) is False
        y = vj.sin(x)
    # the generic route (the rule through apply) gives the tangent all the same
    np.testing.assert_allclose(acc.jvp(y).numpy(), np.cos(1.0), rtol=1e-15)


class _Watcher(context.Transform):
    """An observer: told about every forward that runs."""

    roles = ("observers",)

    def __init__(self):
        self.seen = []

    def after_forward(self, op, inputs, outputs, attrs):
        self.seen.append((op.name, len(inputs), len(outputs)))


def test_observers_and_tapes_get_after_forward():
    x = vj.constant([0.5, 1.5])
    watcher = _Watcher()
    watcher._push()
    try:
        with vj.GradientTape() as tape:
            tape.watch(x)
            y = vj.sin(x) * x
            z = vj.constant(2.0) + 1.0  # not connected to x: not recorded
    finally:
        watcher._pop()
    assert watcher.seen == [("Sin", 1, 1), ("Mul", 2, 1), ("AddV2", 2, 1)]
    assert [e.op.name for e in tape.recorded()] == ["Sin", "Mul"]
    assert tape.is_connected(y) and not tape.is_connected(z)
    np.testing.assert_allclose(tape.gradient(y, x).numpy(),
                               np.cos([0.5, 1.5]) * [0.5, 1.5] + np.sin([0.5, 1.5]))


# The transforms' own state: read and written by the module of the class that owns it
# (where `self.<name>` is used) only; everything else goes through a public method.
TRANSFORM_STATE = {"_recording", "_connected", "_entries", "_tangents", "_ref_tids",
                   "_patterns", "_strict", "_persistent", "_watch_accessed_variables",
                   "_watch_variable", "_check_usable"}


def test_no_module_reaches_into_another_class_transform_state():
    root = pathlib.Path(vj.__file__).parent
    trees = {p: ast.parse(p.read_text()) for p in sorted(root.rglob("*.py"))}

    def private_uses(tree):
        for n in ast.walk(tree):
            if isinstance(n, ast.Attribute) and n.attr in TRANSFORM_STATE:
                yield n, isinstance(n.value, ast.Name) and n.value.id == "self"
    owners = {}
    for path, tree in trees.items():
        for n, on_self in private_uses(tree):
            if on_self:
                owners.setdefault(n.attr, set()).add(path)
    found = [f"{path.relative_to(root.parent)}:{n.lineno}: {ast.unparse(n)}"
             for path, tree in trees.items() for n, on_self in private_uses(tree)
             if not on_self and path not in owners.get(n.attr, ())]
    assert not found, "private state of another class:\n" + "\n".join(found)
