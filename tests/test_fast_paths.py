"""The transform stack's fast paths and their switch (vecjac/_src/core/context.py: alone).

Forward mode and pfor compute an op directly when no other transform could see the
difference (`alone`); VECJAC_NO_FAST_PATHS=1 makes every op take the generic route. The
derivatives must agree either way, and with an independent computation (analytic or
finite differences); the switch must really route around the fast paths.

The eager shortcuts (issue 30, benchmarks/eager_corpus.py, the last section here) give the
bits of the route they shorten: x ** c for a scalar c != 0 without the selections that
guard c == 0; the gradient's ones seed made without an op; the backward pass's rules on
arrays when no transform is active (`derivative`, `array_gradient`); and, outside the
switch, broadcast shapes in Python, small broadcasts written, small caller arrays copied
rather than lent, Tensor operators with Python scalars straight to the op.
"""
import ast
import itertools
import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import vecjac as vj
from vecjac._src.core import context, dispatch
from vecjac._src.core.registry import REGISTRY
from vecjac._src.core.shapes import broadcast_shapes
from vecjac._src.ops.array import shaping
from vecjac._src.ops.elementwise import arithmetic
from vecjac._src.ops.elementwise.family import UnaryWithDerivative
from vecjac._src.transforms.tape import tape as tape_module
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


# -- eager shortcuts (issue 30) ---------------------------------------------------------
X = np.array([0.7, -1.3, 2.1])  # a negative base: integral powers only there
POS = np.abs(X)


def _generic(monkeypatch):
    monkeypatch.setattr(arithmetic, "NO_FAST_PATHS", True)
    monkeypatch.setattr(tape_module, "NO_FAST_PATHS", True)


def assert_same_bits(a, b):
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype and a.shape == b.shape
    assert a.tobytes() == b.tobytes(), (a, b)


CASES = [  # (f, x, closed-form gradient, closed-form Hessian diagonal)
    (lambda x: np.sum(x ** 3.0), X, 3 * X ** 2, 6 * X),
    (lambda x: np.sum(x ** -1.5), POS, -1.5 * POS ** -2.5, 3.75 * POS ** -3.5),
    (lambda x: np.sum((x ** 2.0 - np.arange(1, 4)) ** 2.0), X,
     4 * X * (X ** 2 - np.arange(1, 4)), 12 * X ** 2 - 4 * np.arange(1, 4)),
    (lambda x: vj.reduce_sum(vj.pow(x, 0.5)), POS, 0.5 * POS ** -0.5, -0.25 * POS ** -1.5),
]


@pytest.mark.parametrize("k", range(len(CASES)))
def test_scalar_power_derivatives_match_the_generic_route_and_the_closed_form(k, monkeypatch):
    f, x, grad, hess_diag = CASES[k]
    fast = [vj.grad(f)(x), vj.hessian(f)(x), vj.jvp(f, (x,), (np.ones_like(x),))[1]]
    _generic(monkeypatch)
    generic = [vj.grad(f)(x), vj.hessian(f)(x), vj.jvp(f, (x,), (np.ones_like(x),))[1]]
    for a, b in zip(fast, generic):
        assert_same_bits(a, b)
    np.testing.assert_allclose(fast[0], grad, rtol=1e-12)
    np.testing.assert_allclose(np.diag(np.asarray(fast[1])), hess_diag, rtol=1e-12)
    np.testing.assert_allclose(fast[2], grad.sum(), rtol=1e-12)


def test_a_zero_or_an_array_power_keeps_the_guarded_rule():
    # x ** 0 is constant, also at x = 0 (the unguarded y x**(y-1) would be 0 * inf = nan)
    g0 = vj.grad(lambda x: np.sum(x ** 0.0))(np.array([0.0, 2.0]))
    assert_same_bits(g0, np.zeros(2))
    y = np.array([0.0, 2.0])
    g = vj.grad(lambda x: np.sum(x ** y))(np.array([0.0, 3.0]))
    np.testing.assert_array_equal(g, [0.0, 6.0])


def test_the_ones_seed_gives_the_generic_gradient_also_through_pfor_and_vj_function(
        monkeypatch):
    def f(x):
        return vj.reduce_sum(vj.sin(x) * x)
    x = X
    fast = [vj.grad(f)(x), vj.jacrev(vj.grad(f))(x), vj.function(vj.grad(f))(x)]
    _generic(monkeypatch)
    generic = [vj.grad(f)(x), vj.jacrev(vj.grad(f))(x), vj.function(vj.grad(f))(x)]
    for a, b in zip(fast, generic):
        assert_same_bits(a, b)
    np.testing.assert_allclose(fast[0], np.cos(x) * x + np.sin(x), rtol=1e-14)


def test_broadcast_shapes_follows_numpys_rule():
    dims = [(), (0,), (1,), (3,), (1, 3), (2, 1), (2, 3), (4, 1, 1), (0, 3), (2, 0)]
    for shapes in itertools.chain(itertools.product(dims, repeat=2),
                                  itertools.product(dims[:6], repeat=3)):
        try:
            expected = np.broadcast_shapes(*shapes)
        except ValueError:
            expected = None
        assert broadcast_shapes(*shapes) == expected, shapes


@pytest.mark.parametrize("n", [3, shaping.SMALL_BROADCAST + 1])
def test_broadcast_to_small_written_large_viewed(n):
    x = np.arange(n, dtype=float)
    t = vj.broadcast_to(vj.constant(x), (2, n))
    np.testing.assert_array_equal(t.numpy(), np.broadcast_to(x, (2, n)))
    viewed = t._value.strides[0] == 0
    assert viewed == (2 * n > shaping.SMALL_BROADCAST)
    with pytest.raises(ValueError, match="cannot broadcast shape"):
        vj.broadcast_to(vj.constant(x), (2, n + 1))


def test_a_small_caller_array_is_copied_not_lent_and_a_large_one_lent():
    small = np.arange(1.0, 4.0)  # 24 bytes
    large = np.arange(1.0, dispatch.SMALL_COPY_BYTES // 8 + 2)
    flags = []

    def f(x):
        y = vj.reduce_sum(x * small)
        flags.append(small.flags.writeable)
        small[:] = 0.0  # allowed: the tape kept a copy, which this write cannot change
        return y
    np.testing.assert_array_equal(vj.grad(f)(np.ones(3)), [1.0, 2.0, 3.0])

    def h(x):
        y = vj.reduce_sum(x * large)
        flags.append(large.flags.writeable)
        return y
    np.testing.assert_array_equal(vj.grad(h)(np.ones(large.size)), large)
    assert flags == [True, False] and large.flags.writeable  # lent during the call only


def _ops_with_derivative():
    return sorted(name for name, op in REGISTRY.items()
                  if getattr(op, "derivative", None) is not None)


@pytest.mark.parametrize("name", _ops_with_derivative())
def test_the_direct_backward_of_an_op_with_a_derivative_gives_the_rules_bits(name,
                                                                              monkeypatch):
    # tape.py: _direct_gradient, taken when no transform is active during the pass
    op = REGISTRY[name]
    assert type(op).gradient is UnaryWithDerivative.gradient  # g * dydx: what it computes
    x = np.array([0.3, 0.55, 0.8]) if name not in ("Acosh",) else np.array([1.3, 2.0, 4.5])
    w = np.array([0.7, -1.1, 2.3])

    def f(x):
        return vj.reduce_sum(op(x * 1.0) * w)
    for dtype in (np.float64, np.float32):
        xs = x.astype(dtype)
        direct = vj.grad(f)(xs)
        with monkeypatch.context() as m:
            m.setattr(tape_module, "NO_FAST_PATHS", True)
            generic = vj.grad(f)(xs)
        assert_same_bits(direct, generic)
        eps = 1e-6  # an independent check: central differences in float64
        xd = x.astype(np.float64)
        fd = [(float(f(xd + eps * e)) - float(f(xd - eps * e))) / (2 * eps)
              for e in np.eye(3)]
        np.testing.assert_allclose(direct, fd, rtol=1e-4 if dtype == np.float32 else 1e-7)


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.complex128, np.int64])
def test_operators_with_python_scalars_match_the_public_functions(dtype):
    # composites/operators.py: _direct, _reflected, _power take a float or int straight
    # to the op; the public functions are the reference (dtype kept: a weak scalar)
    x = vj.constant(np.array([0.5, 1.5, 2.5]).astype(dtype))
    cases = [(lambda t, c: t + c, vj.add), (lambda t, c: t - c, vj.subtract),
             (lambda t, c: t * c, vj.multiply), (lambda t, c: t / c, vj.divide)]
    for c in (3, 2.5, -1.25):
        for op, public in cases:
            assert_same_bits(op(x, c), public(x, c))
            assert_same_bits(op(c, x), public(c, x))  # reflected: c <op> x
        if dtype != np.int64:
            assert_same_bits(x ** c, vj.pow(x, c))
    assert_same_bits(x ** 2, vj.square(x))  # x ** 2 stays a square
    np.testing.assert_allclose(np.asarray(1.5 - x), 1.5 - np.asarray(x))


BINARY_CASES = [  # backward passes through the array_gradient of Add, Sub, Mul, Pow,
    # RealDiv, StridedSlice (x[0]), Sum, Prod, with broadcasting; the direct sums of
    # cotangents
    lambda x: vj.reduce_sum(x * x[::-1] - 2.5 * x),
    lambda x: vj.reduce_sum((x - x[::-1]) * (1.0 - x)),
    lambda x: vj.reduce_sum(x ** 3.0 * x ** -0.5 - x ** 1.5),
    lambda x: vj.reduce_sum(x[None, :] * np.ones((2, 1)) - x),  # broadcasts, summed back
    lambda x: vj.reduce_sum((x[:, None] + np.arange(2.0)) * x[None, :2] - x[0] / x[:, None]),
    lambda x: vj.reduce_sum(x[0] * x - (x[1] - x[None, :]) / x[2] + x[:, None] / x),
    lambda x: vj.reduce_prod(x) + np.prod(x[:, None] * x + 1.0, axis=0).sum()  # Prod, Sum
    + vj.reduce_sum(vj.reduce_prod(x * x[:, None] - x[0], axis=1, keepdims=True)),
    lambda x: vj.reduce_sum(x / x[::-1] + 1.5 / x - x / 3.0),
    lambda x: vj.reduce_sum(np.floor(x) * x + np.sign(x) * np.round(x) + np.ceil(x)),
]


@pytest.mark.parametrize("k", range(len(BINARY_CASES)))
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_array_gradients_give_the_rules_bits_and_the_finite_differences(k, dtype,
                                                                        monkeypatch):
    f, x = BINARY_CASES[k], np.array([0.4, 1.3, 2.2]).astype(dtype)
    direct = vj.grad(f)(x)
    monkeypatch.setattr(tape_module, "NO_FAST_PATHS", True)
    monkeypatch.setattr(arithmetic, "NO_FAST_PATHS", True)
    assert_same_bits(direct, vj.grad(f)(x))
    xd, eps = x.astype(np.float64), 1e-6
    fd = [(float(f(xd + eps * e)) - float(f(xd - eps * e))) / (2 * eps) for e in np.eye(3)]
    np.testing.assert_allclose(direct, fd, rtol=1e-4 if dtype == np.float32 else 1e-7)
