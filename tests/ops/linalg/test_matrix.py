"""tf.linalg ops: solve, triangular_solve, matvec, inv, det, slogdet, cholesky, logdet,
diag, diag_part, trace: forward against NumPy (plain, batched and batch broadcasting
either way), TF's semantics (the unread triangle, the symmetric Cholesky gradient,
negative determinants), bad inputs. Gradients, float32, pfor and Jacobians:
tests/test_registry.py, through the samples of the op blocks."""
import numpy as np
import pytest

import vecjac as vj
from vecjac.testing import check_grads

RNG = np.random.default_rng(1)
T = vj.linalg.matrix_transpose


def _well_conditioned(*shape):
    n = shape[-1]
    return RNG.standard_normal(shape) * 0.3 + np.eye(n) * 2


def _spd(*shape):
    a = RNG.standard_normal(shape)
    return a @ np.swapaxes(a, -1, -2) + np.eye(shape[-1]) * shape[-1]


def _sym_pd(a):
    """A symmetric positive definite function of any square a (so FD can move all of a)."""
    return (a + T(a)) * 0.5 + np.eye(a.shape[-1], dtype=a.dtype) * 4.0


def _np_tri(a, b, lower, adjoint):
    t = np.tril(a) if lower else np.triu(a)
    return np.linalg.solve(np.swapaxes(t, -1, -2) if adjoint else t, b)


# -- two-operand ops: solve, triangular_solve, matvec ----------------------------------------
TWO = {
    "solve": (vj.linalg.solve, np.linalg.solve),
    "solve_adjoint": (lambda a, b: vj.linalg.solve(a, b, adjoint=True),
                      lambda a, b: np.linalg.solve(np.swapaxes(a, -1, -2), b)),
    "tri_lower": (vj.linalg.triangular_solve, lambda a, b: _np_tri(a, b, True, False)),
    "tri_upper_adjoint": (lambda a, b: vj.linalg.triangular_solve(a, b, lower=False,
                                                                  adjoint=True),
                          lambda a, b: _np_tri(a, b, False, True)),
    "tri_lower_adjoint": (lambda a, b: vj.linalg.triangular_solve(a, b, adjoint=True),
                          lambda a, b: _np_tri(a, b, True, True)),
    "matvec": (vj.linalg.matvec, lambda a, b: (a @ b[..., None])[..., 0]),
    "matvec_t": (lambda a, b: vj.linalg.matvec(a, b, transpose_a=True),
                 lambda a, b: (np.swapaxes(a, -1, -2) @ b[..., None])[..., 0]),
}
# (matrix shape, rhs shape): plain, batched, and batch broadcasting either way
SHAPES = [((3, 3), (3, 2)), ((2, 3, 3), (2, 3, 1)), ((3, 3), (2, 3, 2)),
          ((2, 3, 3), (3, 2))]


def _rhs_shape(name, shape):
    return shape[:-1] if name.startswith("matvec") else shape


@pytest.mark.parametrize("name", list(TWO))
def test_two_operand_forward(name):
    f, oracle = TWO[name]
    for sa, sb in SHAPES:
        a, b = _well_conditioned(*sa), RNG.standard_normal(_rhs_shape(name, sb))
        np.testing.assert_allclose(f(vj.constant(a), vj.constant(b)).numpy(), oracle(a, b),
                                   rtol=1e-10, atol=1e-12)


def test_triangular_solve_ignores_other_triangle():
    a, b = _well_conditioned(3, 3), RNG.standard_normal((3, 2))
    junk = a + np.triu(np.full((3, 3), 100.0), 1)
    np.testing.assert_allclose(vj.linalg.triangular_solve(junk, b).numpy(),
                               np.linalg.solve(np.tril(a), b), rtol=1e-12)
    at = vj.constant(junk)
    with vj.GradientTape() as tape:
        tape.watch(at)
        y = vj.linalg.triangular_solve(at, b)
    g = tape.gradient(y, at).numpy()
    assert np.all(np.triu(g, 1) == 0) and np.all(g[np.tril_indices(3)] != 0)


# -- one-operand ops ---------------------------------------------------------------------------
def _np_logdet(a):
    return np.linalg.slogdet(a)[1]


ONE = {  # name: (vecjac f, NumPy oracle, input maker)
    "inv": (vj.linalg.inv, np.linalg.inv, _well_conditioned),
    "inv_adjoint": (lambda a: vj.linalg.inv(a, adjoint=True),
                    lambda a: np.linalg.inv(np.swapaxes(a, -1, -2)), _well_conditioned),
    "det": (vj.linalg.det, np.linalg.det, _well_conditioned),
    "slogdet": (vj.linalg.slogdet, lambda a: tuple(np.linalg.slogdet(a)), _well_conditioned),
    "cholesky": (lambda a: vj.linalg.cholesky(_sym_pd(a)),
                 lambda a: np.linalg.cholesky((a + np.swapaxes(a, -1, -2)) / 2
                                              + 4 * np.eye(a.shape[-1])), _well_conditioned),
    "logdet": (lambda a: vj.linalg.logdet(_sym_pd(a)),
               lambda a: _np_logdet((a + np.swapaxes(a, -1, -2)) / 2 + 4 * np.eye(a.shape[-1])),
               _well_conditioned),
    "diag": (vj.linalg.diag, lambda v: v[..., None] * np.eye(v.shape[-1]),
             lambda *s: RNG.standard_normal(s[:-1])),
    "diag_part": (vj.linalg.diag_part, lambda x: np.diagonal(x, axis1=-2, axis2=-1),
                  lambda *s: RNG.standard_normal(s[:-1] + (s[-1] + 1,))),
    "trace": (vj.linalg.trace, lambda x: np.trace(x, axis1=-2, axis2=-1),
              lambda *s: RNG.standard_normal(s)),
}


@pytest.mark.parametrize("name", list(ONE))
def test_one_operand_forward(name):
    f, oracle, make = ONE[name]
    for shape in [(1, 1), (3, 3), (2, 4, 4)]:
        a = make(*shape)
        out, expected = f(vj.constant(a)), oracle(a)
        for o, e in zip(out if isinstance(out, tuple) else [out],
                        expected if isinstance(expected, tuple) else [expected]):
            np.testing.assert_allclose(o.numpy(), e, rtol=1e-10, atol=1e-12)


def test_slogdet_sign_and_det_of_negative():
    a = np.array([[0.0, 2.0], [3.0, 1.0]])  # det -6
    sign, logabs = vj.linalg.slogdet(a)
    assert sign.numpy() == -1 and np.isclose(logabs.numpy(), np.log(6))
    np.testing.assert_allclose(vj.linalg.det(a).numpy(), -6.0)
    check_grads(vj.linalg.det, [a], order=2)


def test_cholesky_gradient_is_symmetric():
    a = vj.constant(_spd(3, 3))
    with vj.GradientTape() as tape:
        tape.watch(a)
        y = vj.reduce_sum(vj.linalg.cholesky(a) * RNG.standard_normal((3, 3)))
    g = tape.gradient(y, a).numpy()
    np.testing.assert_allclose(g, g.T, rtol=1e-12)


def test_names_in_namespace():
    for name in ["matvec", "solve", "inv", "det", "slogdet", "logdet", "cholesky",
                 "triangular_solve", "diag", "diag_part", "trace"]:
        assert callable(getattr(vj.linalg, name))


# -- bad inputs ------------------------------------------------------------------------------
SQ = np.eye(3)


@pytest.mark.parametrize("call,err,match", [
    (lambda: vj.linalg.solve(np.ones((2, 3)), np.ones((2, 1))), ValueError,
     r"solve: matrix must be square, got shape \(2, 3\)"),
    (lambda: vj.linalg.solve(np.ones(3), np.ones((3, 1))), ValueError,
     "solve: matrix must have rank >= 2"),
    (lambda: vj.linalg.solve(SQ, np.ones(3)), ValueError, "solve: rhs must have rank >= 2"),
    (lambda: vj.linalg.solve(SQ, np.ones((2, 1))), ValueError, "solve: rhs has shape"),
    (lambda: vj.linalg.solve(np.ones((2, 3, 3)), np.ones((4, 3, 1))), ValueError,
     "solve: shapes are not broadcastable"),
    (lambda: vj.linalg.solve(SQ, np.ones((3, 1), np.float32)), TypeError, "solve: .*dtype"),
    (lambda: vj.linalg.solve(np.eye(3, dtype=int), np.ones((3, 1))), TypeError,
     "solve: matrix must be a real floating"),
    (lambda: vj.linalg.solve(np.zeros((2, 2)), np.ones((2, 1))), np.linalg.LinAlgError,
     "solve: matrix is singular"),
    (lambda: vj.linalg.solve(SQ, np.ones((3, 1)), adjoint=1), TypeError, "solve: adjoint"),
    (lambda: vj.linalg.triangular_solve(np.ones((2, 3)), np.ones((2, 1))), ValueError,
     "triangular_solve: matrix must be square"),
    (lambda: vj.linalg.triangular_solve(np.tril(np.ones((2, 2)), -1), np.ones((2, 1))),
     ValueError, "triangular_solve: matrix is singular"),
    (lambda: vj.linalg.triangular_solve(SQ, np.ones((3, 1)), lower="yes"), TypeError,
     "triangular_solve: lower"),
    (lambda: vj.linalg.inv(np.ones((2, 3))), ValueError, "inv: input must be square"),
    (lambda: vj.linalg.inv(np.ones((2, 2))), ValueError, "inv: matrix is not invertible"),
    (lambda: vj.linalg.det(np.ones(3)), ValueError, "det: input must have rank >= 2"),
    (lambda: vj.linalg.slogdet(np.ones((3, 2))), ValueError, "slogdet: input must be square"),
    (lambda: vj.linalg.cholesky(-SQ), ValueError, "cholesky: input is not positive definite"),
    (lambda: vj.linalg.cholesky(np.ones((2, 3))), ValueError, "cholesky: input must be square"),
    (lambda: vj.linalg.logdet(np.ones((2, 3))), ValueError, "logdet: matrix must be square"),
    (lambda: vj.linalg.diag(np.array(1.0)), ValueError, "diag: diagonal must have rank"),
    (lambda: vj.linalg.diag_part(np.ones(3)), ValueError, "diag_part: input must have rank"),
    (lambda: vj.linalg.trace(np.ones(3)), ValueError, "trace: x must have rank"),
    (lambda: vj.linalg.matvec(np.ones(3), np.ones(3)), ValueError, "matvec: a must have rank"),
    (lambda: vj.linalg.matvec(SQ, np.array(1.0)), ValueError, "matvec: b must have rank"),
    (lambda: vj.linalg.matvec(np.ones((2, 3)), np.ones(2)), ValueError,
     "matvec: a has 3 columns"),
    (lambda: vj.linalg.matvec(np.ones((2, 3, 3)), np.ones((4, 3))), ValueError,
     "matvec: shapes are not broadcastable"),
])
def test_bad_inputs(call, err, match):
    with pytest.raises(err, match=match):
        call()


def test_errors_are_per_iteration_inside_pfor():
    A = np.ones((2, 2, 3))
    with pytest.raises(ValueError, match=r"inv: input must be square, got shape \(2, 3\)"):
        vj.vectorize.pfor(lambda i: vj.linalg.inv(vj.gather(A, i)), 2)


def _cofactors(a):
    """The cofactor matrix by minors: an oracle independent of any factorization."""
    n = a.shape[0]
    return np.array([[(-1) ** (i + j) * np.linalg.det(np.delete(np.delete(a, i, 0), j, 1))
                      for j in range(n)] for i in range(n)])


@pytest.mark.parametrize("a", [
    np.array([[1.0, 2, 3], [1, 2, 3], [4, 5, 7]]),            # rank 2: inv does not exist
    np.diag([2.0, 1.0, 0.0]) + 1e-9 * np.arange(9.0).reshape(3, 3),  # det ~ 1e-9
    np.zeros((3, 3)),                                         # rank 0: the gradient is 0
    np.eye(4),                                                # repeated singular values
])
def test_det_derivatives_at_and_near_singular_matrices(a):
    # d det(a) = tr(adj(a) da): the cofactors, exact at any rank (det * inv(a) is not)
    g = vj.grad(vj.linalg.det)(a).numpy()
    np.testing.assert_allclose(g, _cofactors(a), rtol=1e-9, atol=1e-12)
    _, t = vj.jvp(vj.linalg.det, (a,), (np.ones_like(a),))
    np.testing.assert_allclose(float(t), _cofactors(a).sum(), rtol=1e-9, atol=1e-12)
    check_grads(vj.linalg.det, [a], order=2, modes=("fwd", "rev"))


@pytest.mark.parametrize("lower, upper", [(0, -1), (-1, 0), (1, 1), (0, 0), (-1, -1), (2, 0)])
def test_band_part_matches_numpy(lower, upper):
    x = np.random.default_rng(5).standard_normal((2, 4, 5))
    i, j = np.arange(4)[:, None], np.arange(5)[None, :]
    keep = ((lower < 0) | (i - j <= lower)) & ((upper < 0) | (j - i <= upper))
    np.testing.assert_array_equal(vj.linalg.band_part(x, lower, upper).numpy(),
                                  np.where(keep, x, 0.0))
    if (lower, upper) == (0, -1):
        np.testing.assert_array_equal(vj.linalg.band_part(x, 0, -1).numpy(), np.triu(x))
    g = vj.grad(lambda a: vj.reduce_sum(vj.linalg.band_part(a, lower, upper) * 2.0))(x)
    np.testing.assert_array_equal(g.numpy(), np.broadcast_to(2.0 * keep, x.shape))
