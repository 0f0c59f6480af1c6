"""vj.linalg.tensor_diag / tensor_diag_part / set_diag (vecjac/_src/composites/diag.py).

Values are checked against NumPy references written here entry by entry (loops over
indices, independent of the reshape / transpose formulas of the implementation) and
against the small examples of TF's documentation; derivatives against finite differences
in forward and reverse mode; errors name the argument. pfor against the loop: TF's own
tests in tests/conformance/test_tf_pfor_*.py.
"""
import numpy as np
import pytest

import vecjac as vj
import vecjac._src.composites.diag
from vecjac.testing import check_grads, numerical_jacobian

RNG = np.random.default_rng(11)


# -- references ------------------------------------------------------------------------------
def ref_tensor_diag(v):
    out = np.zeros(v.shape + v.shape, v.dtype)
    for idx in np.ndindex(*v.shape):
        out[idx + idx] = v[idx]
    return out


def ref_tensor_diag_part(x):
    half = x.shape[:x.ndim // 2]
    out = np.zeros(half, x.dtype)
    for idx in np.ndindex(*half):
        out[idx] = x[idx + idx]
    return out


def ref_set_diag(x, diagonal, k, align):
    """Diagonal d of the band sits in row k1 - d of `diagonal` (no row axis for one
    diagonal), its entries in order from the top-left, pushed right by the shortfall when
    its side (super: d >= 0, sub: d <= 0) is aligned right."""
    k0, k1 = (k, k) if np.ndim(k) == 0 else k
    out = x.copy()
    rows, cols = x.shape[-2:]
    band = diagonal if k0 != k1 else diagonal[..., None, :]
    max_len = band.shape[-1]
    for d in range(k0, k1 + 1):
        length = min(rows, cols - d) if d >= 0 else min(rows + d, cols)
        aligned_right = ((d >= 0 and align in ("RIGHT_LEFT", "RIGHT_RIGHT")) or
                         (d <= 0 and align in ("LEFT_RIGHT", "RIGHT_RIGHT")))
        shift = max_len - length if aligned_right else 0
        for j in range(length):
            m, n = (j, j + d) if d >= 0 else (j - d, j)
            out[..., m, n] = band[..., k1 - d, j + shift]
    return out


# -- tensor_diag, tensor_diag_part -----------------------------------------------------------
def test_tensor_diag_of_tf_docs_vector():
    got = vj.linalg.tensor_diag(vj.constant([1, 2, 3, 4])).numpy()
    np.testing.assert_array_equal(got, np.diag([1, 2, 3, 4]))
    assert got.dtype == np.int64


@pytest.mark.parametrize("shape", [(4,), (2, 3), (2, 1, 3)], ids=str)
def test_tensor_diag_and_diag_part_match_loops(shape):
    v = RNG.standard_normal(shape)
    d = vj.linalg.tensor_diag(v).numpy()
    np.testing.assert_array_equal(d, ref_tensor_diag(v))
    x = RNG.standard_normal(shape + shape)
    np.testing.assert_array_equal(vj.linalg.tensor_diag_part(x).numpy(), ref_tensor_diag_part(x))
    np.testing.assert_array_equal(vj.linalg.tensor_diag_part(d).numpy(), v)


def test_tensor_diag_part_of_a_matrix_is_numpys_diagonal():
    x = RNG.standard_normal((4, 4))
    np.testing.assert_array_equal(vj.linalg.tensor_diag_part(x).numpy(), np.diag(x))


def test_tensor_diag_derivatives():
    check_grads(vj.linalg.tensor_diag, [RNG.standard_normal((2, 3))], modes=("fwd", "rev"))
    check_grads(vj.linalg.tensor_diag_part, [RNG.standard_normal((3, 2, 3, 2))],
                modes=("fwd", "rev"))
    # the gradient of a sum of the diagonal tensor is 1 on every diagonal entry
    g = vj.grad(lambda x: vj.reduce_sum(vj.linalg.tensor_diag_part(x)))(np.zeros((2, 3, 2, 3)))
    np.testing.assert_array_equal(g.numpy(), ref_tensor_diag(np.ones((2, 3))))


@pytest.mark.parametrize("fn, arg, match", [
    (vj.linalg.tensor_diag, 3.0, "diagonal must have rank >= 1"),
    (vj.linalg.tensor_diag, np.array(["a"]), "diagonal"),
    (vj.linalg.tensor_diag_part, np.zeros((2, 3, 2)), "even, non-zero rank"),
    (vj.linalg.tensor_diag_part, 1.0, "even, non-zero rank"),
    (vj.linalg.tensor_diag_part, np.zeros((2, 3, 3, 2)), r"first 2 dimensions \(2, 3\)"),
])
def test_tensor_diag_bad_inputs(fn, arg, match):
    with pytest.raises((ValueError, TypeError), match=match):
        fn(arg)


# -- set_diag ------------------------------------------------------------------------------
def test_set_diag_of_tf_docs_band():
    x = np.full((3, 4), 7.0)
    band = np.array([[0, 9, 1], [6, 5, 8], [1, 2, 3], [4, 5, 0]], float)
    got = vj.linalg.set_diag(x, band, k=(-1, 2)).numpy()
    np.testing.assert_array_equal(got, [[1, 6, 9, 7], [4, 2, 5, 1], [7, 5, 3, 8]])


@pytest.mark.parametrize("shape", [(3, 3), (2, 3, 5), (2, 5, 3)], ids=str)
def test_set_diag_main_diagonal_matches_fill_diagonal(shape):
    x = RNG.standard_normal(shape)
    v = RNG.standard_normal(shape[:-2] + (min(shape[-2:]),))
    expected = x.copy()
    for idx in np.ndindex(*shape[:-2]):
        np.fill_diagonal(expected[idx], v[idx])
    np.testing.assert_array_equal(vj.linalg.set_diag(x, v).numpy(), expected)
    np.testing.assert_array_equal(vj.linalg.set_diag(x, v, k=(0, 0)).numpy(), expected)


@pytest.mark.parametrize("align", ["RIGHT_LEFT", "LEFT_RIGHT", "LEFT_LEFT", "RIGHT_RIGHT"])
@pytest.mark.parametrize("shape, k", [((3, 4), (-1, 2)), ((2, 4, 3), (-2, 1)),
                                      ((4, 4), 1), ((3, 5), -2), ((5, 3), (1, 2)),
                                      ((4, 3), (-3, -1))], ids=str)
def test_set_diag_bands_match_loops(shape, k, align):
    rows, cols = shape[-2:]
    k0, k1 = (k, k) if np.ndim(k) == 0 else k
    max_len = min(rows + min(k1, 0), cols + min(-k0, 0))
    dshape = shape[:-2] + ((max_len,) if k0 == k1 else (k1 - k0 + 1, max_len))
    x, v = RNG.standard_normal(shape), RNG.standard_normal(dshape)
    got = vj.linalg.set_diag(x, v, k=k, align=align).numpy()
    np.testing.assert_array_equal(got, ref_set_diag(x, v, k, align))
    check_grads(lambda a, b: vj.linalg.set_diag(a, b, k=k, align=align), [x, v],
                modes=("fwd", "rev"))


def test_set_diag_selects_so_an_inf_on_the_old_diagonal_does_not_leak():
    x = np.array([[np.inf, 1.0], [2.0, -np.inf]])
    v = np.array([3.0, 4.0])
    y, pull = vj.vjp(lambda a: vj.linalg.set_diag(a, v), x)
    np.testing.assert_array_equal(y.numpy(), [[3.0, 1.0], [2.0, 4.0]])
    (gx,) = pull(vj.ones_like(y))
    np.testing.assert_array_equal(gx.numpy(), [[0.0, 1.0], [1.0, 0.0]])


def test_set_diag_derivatives_and_python_literals():
    x = RNG.standard_normal((2, 3, 3)).astype(np.float32)
    y = vj.linalg.set_diag(x, [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    assert y.dtype == np.float32
    check_grads(lambda a, b: vj.linalg.set_diag(a, b), [RNG.standard_normal((2, 3, 4)),
                                                       RNG.standard_normal((2, 3))],
                modes=("fwd", "rev"))


@pytest.mark.parametrize("kwargs, match", [
    (dict(input=np.zeros(3), diagonal=np.zeros(3)), "input must have rank >= 2"),
    (dict(diagonal=np.zeros(4)), r"diagonal must have shape \(3,\)"),
    (dict(diagonal=np.zeros((3, 3)), k=(-1, 0)), r"diagonal must have shape \(2, 3\)"),
    (dict(diagonal=np.zeros((2, 2)), k=(-1, 0)), r"diagonal must have shape \(2, 3\)"),
    (dict(k=(1, 0)), r"k\[0\] <= k\[1\]"),
    (dict(k=3), r"k = \(3, 3\) must lie in \(-3, 3\)"),
    (dict(k=1.5), "k must be an int"),
    (dict(k=(0, 1, 2)), "k must be an int or a pair"),
    (dict(align="RIGHT"), "align must be one of"),
    (dict(diagonal=np.zeros(3, np.float32)), "diagonal dtype float32 differs"),
])
def test_set_diag_bad_inputs(kwargs, match):
    args = dict(input=np.zeros((3, 3)), diagonal=np.zeros(3)) | kwargs
    with pytest.raises((ValueError, TypeError), match=f"set_diag: .*{match}"):
        vj.linalg.set_diag(**args)


# -- Jacobians and sparsity patterns of set_diag ------------------------------------------------
@pytest.mark.parametrize("mode", ["rev", "fwd"])
def test_set_diag_jacobians_match_finite_differences(mode):
    x, v = RNG.standard_normal((3, 4)), RNG.standard_normal((3, 3))
    band = lambda a, b: vj.linalg.set_diag(a, b, k=(-1, 1), align="LEFT_RIGHT")  # noqa: E731
    jx, jv = vj.jacobian(band, argnums=(0, 1), mode=mode)(x, v)
    np.testing.assert_allclose(np.asarray(jx), numerical_jacobian(lambda a: band(a, v), x),
                               atol=1e-8)
    np.testing.assert_allclose(np.asarray(jv), numerical_jacobian(lambda b: band(x, b), v),
                               atol=1e-8)


def test_set_diag_sparsity_pattern():
    # the diagonal from `diagonal`, the rest from `input`. where's pattern rule is the
    # union of its branches (it does not read a constant condition), so the replaced
    # entries of input stay in the pattern: a superset, exact for `diagonal`
    pattern = vj.jacobian_sparsity(lambda a, v: vj.linalg.set_diag(a, v), np.ones((2, 2)),
                                   np.ones(2), argnums=(0, 1)).toarray()
    expected = np.zeros((4, 6), bool)
    expected[[1, 2], [1, 2]] = True  # off-diagonal entries of input
    expected[[0, 3], [4, 5]] = True  # diagonal entries from diagonal
    assert (pattern >= expected).all()
    np.testing.assert_array_equal(pattern[:, 4:], expected[:, 4:])
    np.testing.assert_array_equal(pattern[:, :4], np.eye(4, dtype=bool))
