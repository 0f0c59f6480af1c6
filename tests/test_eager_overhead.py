"""The eager per-op shortcuts of issue 30 (benchmarks/eager_corpus.py): each gives the bits
of the route it shortens, and the derivative a closed form gives.

- x ** c for a scalar c != 0 differentiates without the selections that guard c == 0
  (ops/elementwise/arithmetic.py: _dpow_dx), under the VECJAC_NO_FAST_PATHS switch;
- the gradient's ones seed is made without an op (transforms/tape/tape.py: _seed), same switch;
- broadcast shapes in Python (core/shapes.py: broadcast_shapes), against NumPy's rule;
- BroadcastTo writes small outputs and views large ones (ops/array/shaping.py);
- a small caller array a tape keeps is copied, not lent (core/dispatch.py: keep).
"""
import itertools

import numpy as np
import pytest

import vecjac as vj
from vecjac._src.core import dispatch
from vecjac._src.core.shapes import broadcast_shapes
from vecjac._src.ops.array import shaping
from vecjac._src.ops.elementwise import arithmetic
from vecjac._src.transforms.tape import tape as tape_module

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
    from vecjac._src.core.registry import REGISTRY
    return sorted(name for name, op in REGISTRY.items()
                  if getattr(op, "derivative", None) is not None)


@pytest.mark.parametrize("name", _ops_with_derivative())
def test_the_direct_backward_of_an_op_with_a_derivative_gives_the_rules_bits(name,
                                                                              monkeypatch):
    # tape.py: _direct_gradient, taken when no transform is active during the pass
    from vecjac._src.core.registry import REGISTRY
    from vecjac._src.ops.elementwise.family import UnaryWithDerivative
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


BINARY_CASES = [  # backward passes through Mul, Sub, Pow, RealDiv, rounding's array_gradient
    lambda x: vj.reduce_sum(x * x[::-1] - 2.5 * x),
    lambda x: vj.reduce_sum((x - x[::-1]) * (1.0 - x)),
    lambda x: vj.reduce_sum(x ** 3.0 * x ** -0.5 - x ** 1.5),
    lambda x: vj.reduce_sum(x[None, :] * np.ones((2, 1)) - x),  # broadcast: the rule
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
