"""Sparsity detection (vj.jacobian_sparsity / vj.hessian_sparsity): every detected pattern
contains the true nonzeros (from dense vecjac Jacobians at random points), and is exact
where the structure says so (stencils, gathers, layouts, block reductions)."""
import warnings

import numpy as np
import pytest

import vecjac as vj
from vecjac._src.transforms.sparsity.tracer import SparsityWarning
from tests.test_registry import CASES as REGISTRY_CASES, _case, _caller, _outputs, _values, seed_of

RNG = np.random.default_rng(0)


def true_pattern(f, x, points=3):
    """Union of the nonzeros of dense Jacobians at random points (flattened)."""
    out = None
    for _ in range(points):
        J = vj.jacobian(f)(RNG.standard_normal(x.shape) + 0.5 * x).numpy()
        J = J.reshape(-1, x.size) != 0
        out = J if out is None else out | J
    return out


CASES = {  # name: (f, x); the detected pattern must equal the true one
    "elementwise": (lambda x: vj.sin(x) * vj.exp(x), np.ones(5)),
    "broadcasting": (lambda x: vj.reshape(x, (3, 1)) * vj.reshape(x, (1, 3)), np.ones(3)),
    "stencil 1-D": (lambda x: x[2:] - 2.0 * x[1:-1] + x[:-2], np.ones(7)),
    "pad": (lambda x: vj.pad(x, [[2, 1]]) * 3.0, np.ones(4)),
    "reflect pad": (lambda x: vj.pad(vj.reshape(x, (2, 3)), [[0, 0], [2, 1]],
                                     mode="REFLECT"), np.ones(6)),
    "roll 2-D": (lambda x: vj.roll(vj.reshape(x, (3, 4)), [1, -1], [0, 1]) - vj.reshape(x, (3, 4)),
                 np.ones(12)),
    "transpose reshape": (lambda x: vj.transpose(vj.reshape(x, (2, 3))) ** 3, np.ones(6)),
    "concat stack": (lambda x: vj.concat([vj.stack([x[:2], x[2:]]), x[None, :2]], 0),
                     np.ones(4)),
    "tile reverse": (lambda x: vj.tile(vj.reverse(x, [0]), [2]) * x[0], np.ones(3)),
    "gather": (lambda x: vj.gather(x, np.array([3, 0, 3, 1])) ** 2, np.ones(4)),
    "gather gradient": (lambda x: vj.grad(lambda v: vj.reduce_sum(vj.gather(v, np.array([0, 2, 2])) ** 3))(x),
                        np.ones(4)),
    "block reduction": (lambda x: vj.reduce_sum(vj.reshape(x, (3, 2)) ** 2, axis=1), np.ones(6)),
    "full reduction": (lambda x: vj.reduce_sum(x ** 3) * x, np.ones(4)),
    "softmax rows": (lambda x: vj.nn.softmax(vj.reshape(x, (2, 3)), axis=1), np.ones(6)),
    "cumsum": (lambda x: vj.cumsum(x * x), np.ones(4)),
    "matmul": (lambda x: vj.matmul(vj.reshape(x, (2, 2)), np.ones((2, 3))), np.ones(4)),
    "matvec": (lambda x: vj.linalg.matvec(np.ones((3, 2)), x[:2]) * x[2], np.ones(3)),
    "einsum block": (lambda x: vj.einsum("bij,bj->bi", vj.reshape(x, (2, 2, 2)), x[:4].reshape((2, 2)) if False else vj.reshape(x[:4], (2, 2))), np.ones(8)),
    "numpy dispatch": (lambda x: np.concatenate([np.sin(x[1:]), np.roll(x, 1) ** 2]), np.ones(4)),
    "inverse (batched)": (lambda x: vj.reshape(vj.linalg.inv(vj.reshape(x, (2, 2, 2)) + 3.0 * np.eye(2)), (-1,)), np.ones(8)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_pattern_is_exact(name):
    f, x = CASES[name]
    P = vj.jacobian_sparsity(f, x)
    true = true_pattern(f, x)
    assert P.shape == true.shape
    detected = P.toarray()
    assert not np.any(true & ~detected), "a true nonzero is missing"
    assert np.array_equal(detected, true), "pattern looser than the Jacobian"


@pytest.mark.parametrize("name,k", REGISTRY_CASES)
def test_every_op_sample_pattern_contains_the_true_nonzeros(name, k):
    """The registry's samples: the traced pattern of each op (as its public function
    calls it) contains the nonzeros of dense Jacobians at three random points."""
    op, sample, leaves, diff, differentiable = _case(name, k)
    if not differentiable:
        pytest.skip("not differentiable")
    dims = {d: 3 for a in leaves for d in a.shape + (a.hi,) if isinstance(d, str)}
    call = _caller(op, sample)
    rng = np.random.default_rng(seed_of(k))
    points = [_values(leaves, dims, rng) for _ in range(3)]
    for values in points[1:]:  # integer leaves (indices) are fixed: patterns depend on them
        values[:] = [v if j in diff else w for j, (v, w) in enumerate(zip(values, points[0]))]
    shapes = [np.shape(points[0][j]) for j in diff]
    sizes = [int(np.prod(s)) for s in shapes]
    pairs = [np.iscomplexobj(points[0][j]) for j in diff]

    def f(z, values):
        # complex arguments and outputs as their real and imaginary parts: the real map
        args = [vj.constant(v) for v in values]
        offset = 0
        for j, shape, size, pair in zip(diff, shapes, sizes, pairs):
            part = z[offset:offset + size]
            if pair:
                part = vj.complex(part, z[offset + size:offset + 2 * size])
                offset += size
            args[j] = vj.reshape(part, shape)
            offset += size
        outs = []
        for o in _outputs(call(*args)):
            if o.dtype.kind == "f":
                outs.append(vj.reshape(o, [-1]))
            elif o.dtype.kind == "c":
                outs += [vj.reshape(vj.math.real(o), [-1]), vj.reshape(vj.math.imag(o), [-1])]
        return vj.concat(outs, 0)

    def flat(v, j):
        return np.concatenate([v[j].real.ravel(), v[j].imag.ravel()]) if np.iscomplexobj(
            v[j]) else np.ravel(v[j])
    z0 = [np.concatenate([flat(v, j) for j in diff]) for v in points]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        detected = vj.jacobian_sparsity(lambda z: f(z, points[0]), z0[0]).toarray()
        for values, z in zip(points, z0):
            J = vj.jacobian(lambda t: f(t, values))(z).numpy()
            assert not np.any((J != 0) & ~detected), f"{name}: a nonzero is missing"


def test_where_and_cond_take_the_union_of_both_branches():
    P = vj.jacobian_sparsity(lambda x: vj.where(x > 0, x[::-1], 2.0 * x), np.ones(4))
    assert np.array_equal(P.toarray(), np.eye(4, dtype=bool) | np.eye(4, dtype=bool)[::-1])
    P = vj.jacobian_sparsity(
        lambda x: vj.cond(x[0] > 0, lambda: x * 2.0, lambda: vj.reverse(x, [0])), np.ones(3))
    assert np.array_equal(P.toarray(), np.eye(3, dtype=bool) | np.eye(3, dtype=bool)[::-1])


def test_hessian_pattern():
    f = lambda x: vj.reduce_sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)
    x = np.ones(6)
    H = vj.hessian_sparsity(f, x).toarray()
    expected = np.abs(np.subtract.outer(np.arange(6), np.arange(6))) <= 1
    assert np.array_equal(H, expected)
    assert np.array_equal(H, H.T)


def test_defop_is_conservative_with_a_warning():
    op = vj.defop("SparsityTestCumMax", lambda x: np.maximum.accumulate(x))
    with pytest.warns(SparsityWarning, match="SparsityTestCumMax"):
        P = vj.jacobian_sparsity(lambda x: op(x[:3]) * x[3], np.ones(5))
    expected = np.zeros((3, 5), bool)
    expected[:, :4] = True
    assert np.array_equal(P.toarray(), expected)


@pytest.mark.parametrize("f", [lambda x: x if x[0] > 0 else -x,
                               lambda x: x * float(x[0]),
                               lambda x: vj.constant(np.asarray(x)) * x,
                               lambda x: np.unwrap(x)])  # a NumPy function without a vecjac op
def test_value_dependent_python_raises(f):
    with pytest.raises(TypeError, match="jacobian_sparsity: .*traced value"):
        vj.jacobian_sparsity(f, np.ones(3))


def test_while_loop_on_traced_condition_raises():
    def f(x):
        return vj.while_loop(lambda v: vj.reduce_sum(v) < 10.0, lambda v: v * 2.0, [x])[0]
    with pytest.raises(TypeError, match="while_loop"):
        vj.jacobian_sparsity(f, np.ones(3))


def test_several_arguments_and_constants():
    f = lambda x, a, y: x[:2] * a + y
    P = vj.jacobian_sparsity(f, np.ones(3), np.ones(2), np.ones(2), argnums=(0, 2))
    assert P.shape == (2, 5)
    assert np.array_equal(P.toarray(), [[1, 0, 0, 1, 0], [0, 1, 0, 0, 1]])
    # an argument not traced is a constant: no column, no dependency
    assert vj.jacobian_sparsity(f, np.ones(3), np.ones(2), np.ones(2), argnums=1).shape == (2, 2)


def test_output_independent_of_input_is_empty():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        P = vj.jacobian_sparsity(lambda x: vj.ones(3) * 2.0, np.ones(4))
    assert P.nnz == 0 and P.shape == (3, 4)
