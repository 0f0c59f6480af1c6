"""What a sparse Jacobian's cache depends on (vecjac/_src/api/sparse_cache.py), issue 25:
every argument that can change the structure is part of the key, a float argument whose
values the detection read makes the pattern re-detected, the random-product check catches
what no argument carries, empty patterns are all-zero matrices, and detection gives a
conservative pattern where indices are computed from the inputs. Expected values are
dense Jacobians (vj.jacobian, no cache) or closed forms."""
import warnings

import numpy as np
import pytest

import vecjac as vj

RNG = np.random.default_rng(25)


def dense(f, x, *rest, **kw):
    return vj.jacobian(lambda v: f(v, *rest, **kw))(x).numpy()


@pytest.mark.parametrize("jit", [False, True])
@pytest.mark.parametrize("name,f,variants", [
    # an int argument sets the structure (a shift)
    ("int shift", lambda x, k: vj.roll(x, k, 0) * x, [(1,), (2,), (1,)]),
    # SciPy's t: a float scalar, by exact value (here it picks a branch in Python)
    ("float scalar", lambda x, t: (x[::-1] if t > 0.5 else x) * x, [(0.0,), (1.0,)]),
    # an index array argument: by content
    ("index array", lambda x, idx: vj.gather(x, idx) * x,
     [(np.array([0, 1, 2, 3, 4]),), (np.array([4, 3, 2, 1, 0]),)]),
    # a flag in a dict (by content)
    ("dict flag", lambda x, opts: vj.roll(x, 1, 0) * x if opts["shift"] else x * x,
     [({"shift": True},), ({"shift": False},)]),
])
def test_every_structural_argument_is_part_of_the_key(name, f, variants, jit):
    J = vj.sparse_jacobian(f, jit=jit)
    x = RNG.random(5) + 0.5
    for rest in variants:
        np.testing.assert_allclose(J(x, *rest).toarray(), dense(f, x, *rest), rtol=1e-13,
                                   err_msg=f"{name} {rest}")


def test_keyword_arguments_are_keyed_by_value():
    f = lambda x, shift=1: vj.roll(x, shift, 0) * x
    J = vj.sparse_jacobian(f)
    x = RNG.random(6)
    for shift in (1, 3, 1):
        np.testing.assert_allclose(J(x, shift=shift).toarray(), dense(f, x, shift=shift),
                                   rtol=1e-13)


def test_negative_zero_is_not_zero():
    f = lambda x, s: (vj.roll(x, 1, 0) if np.copysign(1.0, s) < 0 else x) * x
    J = vj.sparse_jacobian(f)
    x = RNG.random(4)
    np.testing.assert_allclose(J(x, 0.0).toarray(), dense(f, x, 0.0))
    np.testing.assert_allclose(J(x, -0.0).toarray(), dense(f, x, -0.0))


def test_float_argument_read_by_detection_is_detected_again_every_call():
    # the pattern follows the values of p (indices computed from a float array)
    f = lambda x, p: vj.gather(x, vj.cast(p, vj.int64)) * 2.0
    J = vj.sparse_jacobian(f)
    x = RNG.random(4)
    with pytest.warns(RuntimeWarning, match="detected again on every call"):
        J(x, np.array([0.0, 1.0, 2.0, 3.0]))
    for p in (np.array([3.0, 2.0, 1.0, 0.0]), np.array([1.0, 1.0, 0.0, 0.0])):
        np.testing.assert_allclose(J(x, p).toarray(), dense(f, x, p))


def test_float_parameters_do_not_trigger_detection():
    calls = []

    def f(x, p):
        calls.append(1)
        return vj.roll(x, 1, 0) * p[0] + x * p[1]
    J = vj.sparse_jacobian(f, check=False)
    x = RNG.random(5)
    J(x, np.array([1.0, 2.0]))
    first = len(calls)
    p = np.array([3.0, -1.0])
    got = J(x, p).toarray()
    assert len(calls) == first + 1  # one evaluation: no second detection
    np.testing.assert_allclose(got, dense(f, x, p))


def test_check_catches_a_closed_over_array_changed_in_place():
    idx = np.array([0, 1, 2, 3, 4])
    f = lambda x: vj.gather(x, idx) ** 2
    J = vj.sparse_jacobian(f)
    x = RNG.random(5) + 0.5
    np.testing.assert_allclose(J(x).toarray(), dense(f, x))
    idx[:] = [4, 3, 2, 1, 0]
    with pytest.raises(ValueError, match="stale or incomplete"):
        J(x)
    # check=False: the stale pattern is the user's choice (documented)
    K = vj.sparse_jacobian(f, check=False)
    K(x)


def test_check_modes():
    calls = []

    def f(x):
        calls.append(1)
        return x[1:] * x[:-1]
    x = RNG.random(5)
    for check, verified in (("auto", 3), ("always", 5), (False, 0)):
        J = vj.sparse_jacobian(f, check=check)
        J(x)  # detection and first evaluation
        calls.clear()
        for _ in range(4):
            J(x)
        # an evaluation is 1 call of f (the primal); a check adds one (the JVP)
        assert len(calls) == 4 + max(0, verified - 1), check
    with pytest.raises(ValueError, match="check must be one of"):
        vj.sparse_jacobian(f, check="sometimes")
    with pytest.raises(ValueError, match="check must be one of"):
        vj.sparse_hessian(lambda x: vj.reduce_sum(x), check=True)


def test_check_catches_a_stale_hessian_pattern():
    w = np.array([0, 1, 2])
    f = lambda x: vj.reduce_sum(vj.gather(x, w) * x ** 2)
    H = vj.sparse_hessian(f)
    x = RNG.random(3) + 0.5
    np.testing.assert_allclose(H(x).toarray(), vj.hessian(f)(x).numpy(), rtol=1e-12)
    w[:] = [2, 1, 0]
    with pytest.raises(ValueError, match="stale or incomplete"):
        H(x)


@pytest.mark.parametrize("make", [
    lambda: vj.sparse_jacobian(lambda x: vj.constant(np.ones(3))),
    lambda: vj.sparse_jacobian(lambda x: vj.stop_gradient(x) * 2.0),
    lambda: vj.sparse_jacobian(lambda x: vj.stop_gradient(x) * 2.0, mode="rev"),
    lambda: vj.sparse_hessian(lambda x: vj.reduce_sum(x * 2.0)),
    lambda: vj.sparse_jacobian(lambda x: vj.constant(np.ones(3)), jit=True),
])
def test_empty_patterns_give_all_zero_matrices(make):
    J = make()
    for _ in range(2):
        A = J(np.ones(3))
        assert A.shape == (3, 3) and A.nnz == 0
    assert J.ncolors == 0


def test_sparse_newton_step_on_a_linear_loss_matches_the_dense_path():
    results = []
    for sparse in (False, True):
        w = vj.Variable(np.ones(4))
        step = vj.newton_step(lambda: vj.reduce_sum(w * 3.0), [w], sparse=sparse)
        results.append((w.numpy().copy(), step.step_norm))
    np.testing.assert_allclose(results[0][0], results[1][0])
    assert results[0][1] == results[1][1]


# -- detection never refuses valid code (issue 25, item 9) --------------------------------
VALUE_DEPENDENT = [
    ("sort", lambda x: vj.sort(x)),
    ("top_k", lambda x: vj.math.top_k(x, 2)[0]),
    ("gather argsort", lambda x: vj.gather(x, vj.argsort(x))),
    ("median", lambda x: vj.reshape(np.median(x), [1])),
    ("percentile", lambda x: vj.reshape(np.percentile(x, 30.0), [1])),
    ("quantile", lambda x: vj.reshape(np.quantile(x, 0.3), [1])),
    ("interp", lambda x: np.interp(x * 0.5, np.arange(5.0), np.arange(5.0) ** 2)),
    ("take_along_axis", lambda x: np.take_along_axis(x, np.argsort(x), 0)),
    ("searchsorted", lambda x: x * vj.cast(vj.searchsorted(vj.constant(np.arange(5.0)), x),
                                           vj.float64)),
    ("gather_nd", lambda x: vj.gather_nd(x, vj.reshape(vj.cast(x, vj.int64) % 5, [-1, 1]))),
    ("computed segment ids",
     lambda x: vj.math.unsorted_segment_sum(x, vj.cast(x, vj.int32) % 3, 3)),
]


@pytest.mark.parametrize("name,f", VALUE_DEPENDENT, ids=[n for n, _ in VALUE_DEPENDENT])
def test_value_dependent_indices_get_a_conservative_pattern(name, f):
    x = np.array([3.0, 1.0, 2.0, 5.0, 4.0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", vj.SparsityWarning if hasattr(vj, "SparsityWarning")
                              else UserWarning)
        pattern = vj.jacobian_sparsity(f, x).toarray()
        J = vj.sparse_jacobian(f)(x).toarray()
    exact = vj.jacobian(f)(x).numpy().reshape(pattern.shape)
    assert not np.any((exact != 0) & ~pattern), "the pattern misses a nonzero"
    np.testing.assert_allclose(J, exact, rtol=1e-13, atol=1e-15)


def test_hessian_of_cumprod_is_detected():
    f = lambda x: vj.reduce_sum(vj.math.cumprod(x))
    x = np.array([0.5, 2.0, 0.0, 1.5])
    H = vj.sparse_hessian(f)(x).toarray()
    np.testing.assert_allclose(H, vj.hessian(f)(x).numpy(), rtol=1e-13, atol=1e-15)


def test_python_decisions_on_traced_values_still_raise():
    def f(x):
        return vj.while_loop(lambda v: vj.reduce_sum(v) < 10.0, lambda v: v * 2.0, [x])[0]
    with pytest.raises(TypeError, match="while_loop"):
        vj.jacobian_sparsity(f, np.ones(3))
    with pytest.raises(TypeError, match="truth test"):
        vj.jacobian_sparsity(lambda x: x * 2.0 if x[0] > 0 else x, np.ones(3))
