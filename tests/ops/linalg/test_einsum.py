"""einsum and tensordot (vecjac/_src/ops/linalg/einsum.py): forward against NumPy for
every equation form and axes form, and argument errors. Gradients (order 2: the gradient
of an einsum is an einsum), float32, pfor and Jacobians of Einsum (which tensordot runs):
tests/test_registry.py, through the samples of the op blocks."""
import numpy as np
import pytest

import vecjac as vj

RNG = np.random.default_rng(11)


# -- einsum --------------------------------------------------------------------------------
EINSUM = [
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("i,i->", [(3,), (3,)]),
    ("bxby->bxy", [(2, 3, 2, 4)]),
    ("ii->i", [(3, 3)]),
    ("ii->", [(3, 3)]),
    ("ii", [(3, 3)]),
    ("ij->", [(2, 3)]),
    ("ij->ji", [(2, 3)]),
    ("ij,k->i", [(2, 3), (4,)]),
    ("ij,jk", [(2, 3), (3, 4)]),
    ("...ij,...jk->...ik", [(2, 3, 4), (2, 4, 5)]),
    ("...ij,...jk->...ik", [(2, 1, 3, 4), (5, 4, 2)]),
    ("...i,...i", [(2, 3), (1, 3)]),
    ("b...,b->...b", [(2, 3, 4), (2,)]),
    ("iij,jk->ki", [(2, 2, 3), (3, 2)]),
    ("ijk,jl,lm->im", [(2, 3, 4), (3, 5), (5, 2)]),
    ("bij,bjk->bik", [(8, 12, 10), (8, 10, 9)]),  # large enough for the BLAS path
    ("ij,ij->ij", [(40, 50), (40, 50)]),
    ("aBc,cBd->ad", [(2, 3, 4), (4, 3, 2)]),
]


@pytest.mark.parametrize("spec,shapes", EINSUM, ids=[s for s, _ in EINSUM])
def test_einsum_forward(spec, shapes):
    xs = [RNG.standard_normal(s) for s in shapes]
    out = vj.einsum(spec, *xs)
    expected = np.einsum(spec, *xs)
    assert out.shape == expected.shape
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-12, atol=1e-13)


def test_einsum_list_operands():
    a, b = RNG.standard_normal((2, 3)), RNG.standard_normal((3, 3))
    out = vj.einsum("ij,jj->ij", [a, b])
    np.testing.assert_allclose(out.numpy(), np.einsum("ij,jj->ij", a, b), rtol=1e-13)


@pytest.mark.parametrize("args,err,match", [
    (("ij,jk->ik", np.ones((2, 3)), np.ones((4, 5))), ValueError,
     r"subscript 'j' has size 3 in one operand and 4 in operand 1"),
    (("ij->ij", np.ones(3)), ValueError, r"operand 0 has shape \(3,\) \(rank 1\)"),
    (("ij,jk->ik", np.ones((2, 3))), ValueError, "2 input subscripts but 1 operands"),
    (("ij->k", np.ones((2, 3))), ValueError, "output subscript 'k' does not appear"),
    (("ij->ii", np.ones((2, 2))), ValueError, "output subscripts 'ii' repeat"),
    (("i1->i", np.ones((2, 2))), ValueError, "invalid character '1'"),
    (("i..j->i", np.ones((2, 2))), ValueError, "malformed ellipsis"),
    (("ij->i->j", np.ones((2, 2))), ValueError, "more than one '->'"),
    (("i->...", np.ones(2)), ValueError, "use '...' but no input does"),
    (("...i,...i", np.ones((2, 3)), np.ones((4, 3))), ValueError,
     "'...' dimension has size 2 in one operand and 4"),
    (("ij,ij", np.ones((1, 3)), np.ones((2, 3))), ValueError, "subscript 'i' has size 1"),
    (("i,i", np.ones(2, np.float32), np.ones(2)), TypeError, "same dtype"),
    ((3, np.ones(2)), TypeError, "equation must be a str"),
])
def test_einsum_errors(args, err, match):
    with pytest.raises(err, match=match):
        vj.einsum(*args)


# -- tensordot -----------------------------------------------------------------------------
TENSORDOT = [((3, 4), (4, 5), 1), ((2, 3, 4), (3, 4, 5), 2), ((2, 3), (4,), 0),
             ((2, 3, 4), (4, 3, 5), [[1, 2], [1, 0]]), ((2, 3), (3, 2), [1, 0]),
             ((2, 3), (2, 3), [[0, 1], [0, 1]]), ((3, 2), (2, 3), [[-1], [-2]])]


@pytest.mark.parametrize("sa,sb,axes", TENSORDOT, ids=str)
def test_tensordot(sa, sb, axes):
    a, b = RNG.standard_normal(sa), RNG.standard_normal(sb)
    out = vj.tensordot(a, b, axes)
    expected = np.tensordot(a, b, axes if not isinstance(axes, list) or
                            isinstance(axes[0], list) else ([axes[0]], [axes[1]]))
    assert out.shape == expected.shape
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-13)


@pytest.mark.parametrize("axes,err,match", [
    (3, ValueError, r"axes=3 must be in \[0, 2\]"),
    ([[0], [0, 1]], ValueError, "different lengths"),
    ([[0]], ValueError, "pair of axis lists"),
    ([[1], [1]], ValueError, "a axis 1 has size 3 but b axis 1 has size 4"),
    ([[0, 0], [0, 1]], ValueError, "axes for a repeat an axis"),
    ([[5], [0]], ValueError, "axes for a=5 is out of range"),
    (1.5, TypeError, "axes must be an int or a pair"),
])
def test_tensordot_errors(axes, err, match):
    with pytest.raises(err, match=match):
        vj.tensordot(np.ones((2, 3)), np.ones((2, 4)), axes)
