"""matmul (vecjac/_src/ops/linalg/products.py): forward against NumPy for every shape form
and flag, and argument errors. Gradients, float32, pfor and Jacobians of MatMul and
MatVec: tests/test_registry.py, through the samples of the op blocks."""
import numpy as np
import pytest

import vecjac as vj

RNG = np.random.default_rng(11)


# -- matmul --------------------------------------------------------------------------------
MATMUL_SHAPES = [((2, 3), (3, 4)), ((3,), (3, 4)), ((2, 3), (3,)), ((3,), (3,)),
                 ((5, 2, 3), (3, 4)), ((2, 3), (5, 3, 4)), ((5, 1, 2, 3), (4, 3, 2))]


@pytest.mark.parametrize("sa,sb", MATMUL_SHAPES, ids=str)
def test_matmul(sa, sb):
    a, b = RNG.standard_normal(sa), RNG.standard_normal(sb)
    out = vj.matmul(a, b)
    np.testing.assert_allclose(out.numpy(), np.matmul(a, b), rtol=1e-13)
    np.testing.assert_allclose((vj.constant(a) @ b).numpy(), np.matmul(a, b), rtol=1e-13)


def test_matmul_transpose_flags():
    a, b = RNG.standard_normal((3, 2)), RNG.standard_normal((4, 3))
    np.testing.assert_allclose(vj.matmul(a, b, transpose_a=True, transpose_b=True).numpy(),
                               a.T @ b.T)
    np.testing.assert_allclose(vj.matmul(a, b, adjoint_a=True, adjoint_b=True).numpy(), a.T @ b.T)


def test_matmul_errors():
    with pytest.raises(ValueError, match="matmul: inner dimensions differ"):
        vj.matmul(np.ones((2, 3)), np.ones((4, 2)))
    with pytest.raises(ValueError, match="matmul: a must have rank >= 1"):
        vj.matmul(1.0, np.ones(2))
    with pytest.raises(ValueError, match="matmul: shapes are not broadcastable"):
        vj.matmul(np.ones((2, 2, 3)), np.ones((5, 3, 2)))
