"""Cases from autograd's test suite, checked against vecjac: reshaping, indexing, joining
and splitting arrays, arrays built from traced values, sorting and selecting, linspace,
np.gradient and np.interp.

Sources: HIPS/autograd tests/test_numpy.py, test_systematic.py and test_numpy_interp.py
(see tests/conformance/test_autograd_cases.py for the whole list and what is not carried
over). The machinery -- `point`, `grid`, `pack`, ... -- is described in
tests/conformance/test_autograd_adapter.py.
"""
import numpy as np
import pytest

import vecjac as vj
from tests.conformance.test_autograd_adapter import (Draws, check_all, grid, no_vecjac_op, pack,
                                                     point, table, to_numpy)

# ======================================================================================
# reshaping and rearranging
# ======================================================================================
d = Draws(201)
_M, _T, _WITH_UNIT_AXIS = d.normal(10, 11), d.normal(5, 6, 4), d.normal(5, 1, 4)
REARRANGED = table([
    ("flipud", point(np.flipud, _M)),
    ("fliplr", point(np.fliplr, _M)),
    ("rot90", point(np.rot90, _M)),
    ("roll/keyword-shift", point(lambda x: np.roll(x, shift=2, axis=1), d.normal(4, 5))),
    ("roll/positional-shift", point(lambda x: np.roll(x, 2, axis=1), d.normal(4, 5))),
    ("transpose-attribute", point(lambda x: x.T, d.normal(8, 8))),
    ("ravel", point(np.ravel, _T)),
    ("ravel-method", point(lambda x: x.ravel(), _T)),
    ("flatten-method", point(lambda x: x.flatten(), _T)),
    ("reshape", point(lambda x: np.reshape(x, (5 * 4, 6)), _T)),
    ("reshape-method/tuple", point(lambda x: x.reshape((5 * 4, 6)), _T)),
    ("reshape-method/sizes", point(lambda x: x.reshape(5 * 4, 6), _T)),
    ("squeeze", point(np.squeeze, _WITH_UNIT_AXIS)),
    ("squeeze-method", point(lambda x: x.squeeze(), _WITH_UNIT_AXIS)),
    ("expand_dims", point(lambda x: np.expand_dims(x, axis=2), _WITH_UNIT_AXIS)),
    ("repeat/twice-axis1", point(lambda x: np.repeat(x, repeats=2, axis=1),
                                 d.normal(5, 3, 4))),
    ("repeat/once-axis1", point(lambda x: np.repeat(x, repeats=1, axis=1),
                                d.normal(5, 3, 4))),
    ("repeat/matrix-axis0", point(lambda x: np.repeat(x, repeats=2, axis=0), d.normal(5, 3))),
    ("repeat/vector", point(lambda x: np.repeat(x, repeats=2, axis=0), d.normal(5))),
    ("repeat/column-once", point(lambda x: np.repeat(x, repeats=1, axis=0), d.normal(5, 1))),
    ("diag/of-matrix", point(np.diag, d.normal(10, 10))),
    ("diagonal/last-two-axes", grid(lambda x: np.diagonal(x, axis1=-1, axis2=-2),
                                    [d.normal(4, 4), d.normal(3, 4, 4)])),
    ("triu/k=2", point(lambda x: np.triu(x, k=2), d.normal(5, 5))),
    ("tril/k=2", point(lambda x: np.tril(x, k=2), d.normal(5, 5))),
    ("clip", point(lambda x: np.clip(x, a_min=0.1, a_max=1.1), d.normal(5, 5))),
    ("trace/wide", point(lambda x, k: np.trace(x, offset=k), _M, d.integer(-9, 11))),
    ("trace/tall", point(lambda x, k: np.trace(x, offset=k), d.normal(11, 10),
                         d.integer(-9, 11))),
    ("trace/extra-axes", point(lambda x, k: np.trace(x, offset=k), d.normal(5, 6, 4, 3),
                               d.integer(-5, 6))),
])


@pytest.mark.parametrize("cases", REARRANGED)
def test_rearranging_derivatives_match_differences(cases):
    check_all(cases)


d = Draws(202)
R = d.normal
REARRANGED_OVER_OPTIONS = table([
    ("transpose/axes", grid(np.transpose, [R(2, 3, 4)], axes=[
        None, [0, 1, 2], [0, 2, 1], [2, 0, 1], [2, 1, 0], [1, 0, 2], [1, 2, 0]])),
    ("swapaxes", grid(np.swapaxes, [R(3, 4, 5)], axis1=[0, 1, 2], axis2=[0, 1, 2])),
    ("rollaxis", grid(np.rollaxis, [R(2, 3, 4)], axis=[0, 1, 2], start=[0, 1, 2, 3])),
    ("repeat", grid(np.repeat, [R(2, 3, 4), R(3, 1)], repeats=[0, 1, 2], axis=[None, 0, 1])),
    ("tile/4d", grid(np.tile, [R(2, 1, 3, 1)], reps=[(1, 4, 1, 2)])),
    ("tile/row", grid(np.tile, [R(1, 2)], reps=[(1, 2), (2, 3), (3, 2, 1)])),
    ("tile/single", grid(np.tile, [R(1)], reps=[(2,), 2])),
    ("diff/orders-and-axes", grid(np.diff, [R(5, 5), R(5, 5, 5)], n=[1, 2], axis=[0, 1])),
    ("diff/single-element-axis0", grid(np.diff, [R(1), R(1, 1)], axis=[0])),
    ("diff/single-element-axis1", grid(np.diff, [R(1, 1), R(3, 1)], axis=[1])),
    ("atleast_1d", grid(np.atleast_1d, [1.2, R(1), R(7), R(1, 4), R(2, 4), R(2, 4, 5),
                                        R(2, 4, 3, 5)])),
    ("atleast_2d", grid(np.atleast_2d, [1.2, R(1), R(7), R(1, 4), R(2, 4), R(2, 4, 5),
                                        R(2, 4, 3, 5)])),
    ("atleast_3d", grid(np.atleast_3d, [1.2, R(1), R(7), R(1, 4), R(2, 4), R(2, 4, 5),
                                        R(2, 4, 3, 5)])),
    ("trace/offsets", grid(np.trace, [R(5, 5), R(4, 5), R(5, 4), R(3, 4, 5)],
                           offset=[-1, 0, 1])),
    ("diag/of-matrix-k", grid(np.diag, [R(5, 5)], k=[-1, 0, 1])),
    ("diag/from-vector-k", grid(np.diag, [R(5)], k=[-1, 0, 1])),
    ("tril/2d", grid(np.tril, [R(5, 5)], k=[-1, 0, 1])),
    ("tril/3d", grid(np.tril, [R(5, 5, 4)], k=[-1, 0, 1])),
    # autograd's triu cases call tril (a slip there); triu is what they name
    ("triu/2d", grid(np.triu, [R(5, 5)], k=[-1, 0, 1])),
    ("triu/3d", grid(np.triu, [R(5, 5, 4)], k=[-1, 0, 1])),
    ("sort", grid(np.sort, [R(1), R(7)])),
    ("partition", grid(np.partition, [R(7), R(14)], kth=[0, 3, 6])),
])


@pytest.mark.parametrize("cases", REARRANGED_OVER_OPTIONS)
def test_rearranging_derivatives_match_differences_over_options(cases):
    check_all(cases)


# ======================================================================================
# indexing
# ======================================================================================
def _counts_rows(x):
    assert len(x) == 3  # len() of a Tensor is its first dimension
    return x


def _cast_column_to_indices(w):
    # an integer cast of a traced column, used as an index: no gradient flows through the
    # indices, only through the gathered rows (the concatenation is computed and dropped,
    # as in the source case)
    np.concatenate((w, np.ones(5)[:, None]), axis=1)
    rows = np.int64(w[:, -1])
    assert rows.dtype == np.int64
    return w[:, :-1][rows].sum()


d = Draws(203)
_T = d.normal(5, 6, 4)
INDEXED = table([
    ("integers", point(lambda x: x[3, 0, 1], _T)),
    ("slices", point(lambda x: x[::-1, 2:4, :], _T)),
    ("list-then-slices", point(lambda x: x[[0, 1, 2], :, :], _T)),
    ("integer-slice-list", point(lambda x: x[3, 2:, [1, 3]], _T)),
    ("overlapping-slices-added", point(lambda x: x[::-1, 2:4, :] + x[::-1, 3:5, :], _T)),
    ("vector-slice", point(lambda x: x[2:4], d.normal(5))),
    ("slice-of-a-slice", point(lambda x: x[2:6][1:3], d.normal(7))),
    ("repeated-index", point(lambda x: np.sum(x[[0, 0]]), d.normal(3))),
    ("repeated-index-among-others", point(lambda x: np.sum(x[[0, 1, 0]]), d.normal(3))),
    ("len", point(_counts_rows, d.normal(3, 2))),
    ("integer-cast-as-index", point(_cast_column_to_indices, d.normal(5, 10))),
    ("where", point(lambda x, y, c: np.where(c, x, y), d.normal(4, 5), d.normal(4, 5),
                    d.normal(4, 5) > 0)),
    ("select", grid(np.select, [[d.normal(3, 4, 5) > 0 for _ in range(3)]],
                    [[d.normal(3, 4, 5) for _ in range(3)]], wrt=1, default=[0.0, 1.1])),
    ("nan_to_num", point(lambda x: np.sum(np.sin(np.nan_to_num(
        x + np.array([0.0, np.nan, np.inf, -np.inf])))), d.normal(4))),
])


@pytest.mark.parametrize("cases", INDEXED)
def test_indexing_derivatives_match_differences(cases):
    check_all(cases)


# ======================================================================================
# joining and splitting
# ======================================================================================
d = Draws(204)
R = d.normal
_FIXED = R(5, 6, 4)
_both = (0, 1)
JOINED = table([
    ("append/list", point(lambda values, extra: np.append(pack(values), extra),
                          [1.0, 2.0, 3.0], 4.0, wrt=_both)),
    ("append/array", point(np.append, np.array([1.0, 2.0, 3.0]), 4.0, wrt=_both)),
    ("append/nested-lists-axis0", point(
        lambda rows, more: np.append(pack(rows), pack(more), axis=0),
        [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], [[7.0, 8.0, 9.0]], wrt=_both)),
    ("concatenate/after-constant", point(lambda x: np.concatenate((_FIXED, x)), R(4, 6, 4))),
    ("concatenate/between-constants", point(lambda x: np.concatenate((_FIXED, x, _FIXED)),
                                            R(5, 6, 4))),
    ("concatenate/between-constants-axis1", point(
        lambda x: np.concatenate((_FIXED, x, _FIXED), axis=1), R(5, 6, 4))),
    ("concatenate/between-constants-positional-axis", point(
        lambda x: np.concatenate((_FIXED, x, _FIXED), 1), R(5, 6, 4))),
    ("concatenate/tuple", grid(np.concatenate, [(R(1), R(3))], axis=[0])),
    ("concatenate/list", grid(np.concatenate, [[R(1), R(3)]], axis=[0])),
    ("concatenate/2d", grid(np.concatenate, [(R(2, 2), R(2, 2))], axis=[0, 1])),
    ("concatenate/3d", grid(np.concatenate, [(R(2, 2, 2), R(2, 2, 2))], axis=[0, 1, 2])),
    ("stack/1d", grid(np.stack, [(R(2),), (R(2), R(2))], axis=[0, 1])),
    # stacking functions: a lone array or a tuple of arrays
    ("vstack/1d", grid(np.vstack, [R(2), (R(2), R(2))])),
    ("vstack/2d", grid(np.vstack, [R(2, 3), (R(2, 4), R(1, 4))])),
    ("vstack/3d", grid(np.vstack, [R(2, 3, 4), (R(2, 3, 4), R(5, 3, 4))])),
    ("hstack/1d", grid(np.hstack, [R(2), (R(2), R(2))])),
    ("hstack/2d", grid(np.hstack, [R(3, 2), (R(3, 4), R(3, 5))])),
    ("hstack/3d", grid(np.hstack, [R(2, 3, 4), (R(2, 1, 4), R(2, 5, 4))])),
    ("row_stack/1d", grid(np.row_stack, [R(2), (R(2), R(2))]), pytest.mark.filterwarnings(
        "ignore:`row_stack` alias is deprecated:DeprecationWarning")),
    ("row_stack/2d", grid(np.row_stack, [R(2, 3), (R(2, 4), R(1, 4))]),
     pytest.mark.filterwarnings("ignore:`row_stack` alias is deprecated:DeprecationWarning")),
    ("column_stack/1d", grid(np.column_stack, [R(2), (R(2), R(2))])),
    ("column_stack/2d", grid(np.column_stack, [R(2, 2), (R(2, 2), R(2, 2))])),
    # splitting functions: a number of equal parts or a list of split points
    ("vsplit/2d", grid(np.vsplit, [R(4, 8)], [4, [1, 2]])),
    ("vsplit/3d", grid(np.vsplit, [R(4, 4, 4)], [2, [1, 2]])),
    ("hsplit/2d", grid(np.hsplit, [R(4, 8)], [4, [1, 2]])),
    ("hsplit/3d", grid(np.hsplit, [R(4, 4, 4)], [2, [1, 2]])),
    ("dsplit/3d", grid(np.dsplit, [R(4, 4, 4)], [2, [1, 2]])),
    ("split/1d", grid(np.split, [R(1), R(7)], [1], axis=[0])),
    ("split/2d", grid(np.split, [R(4, 8)], [4, [1, 2]], axis=[0, 1])),
    ("split/3d", grid(np.split, [R(4, 4, 4)], [2, [1, 2]], axis=[0, 1, 2])),
    ("array_split/1d", grid(np.array_split, [R(1), R(7)], [1, 3], axis=[0])),
    ("array_split/2d", grid(np.array_split, [R(7, 7)], [4, [3, 5]], axis=[0, 1])),
    ("array_split/3d", grid(np.array_split, [R(7, 7, 7)], [4, [3, 5]], axis=[0, 1, 2])),
])


@pytest.mark.parametrize("cases", JOINED)
def test_joining_and_splitting_derivatives_match_differences(cases):
    check_all(cases)


# ======================================================================================
# arrays built from traced values; np.r_ and np.c_
# ======================================================================================
d = Draws(205)
_CONST, _VARIABLE = d.normal(3, 2), d.normal(3, 2)
_CONST10 = d.normal(10)
_R_MISSING = no_vecjac_op("np.r_ converts its items with np.array (no vecjac op for "
                          "np.r_ / np.c_)")
_C_MISSING = no_vecjac_op("np.c_")


def _added_to_itself(build):
    def f(x):
        a = build(x)
        return a + a  # the built array feeds two uses: its gradients add up
    return f


_ROW = lambda x: pack([x, x * 1.0, x + 2.5])
_TWO_ROWS = lambda x: pack([[x, x * 1.0, x + 2.5], [x ** 2, x, x / 2.0]])
BUILT = table([
    ("from-scalars", point(_ROW, 3.0)),
    ("from-nested-scalars", point(_TWO_ROWS, 3.0)),
    ("from-scalars-used-twice", point(_added_to_itself(_ROW), 3.0)),
    ("from-nested-scalars-used-twice", point(_added_to_itself(_TWO_ROWS), 3.0)),
    ("from-one-scalar", point(pack, 3.0)),
    ("from-arrays", point(lambda x: pack([x, x]), d.normal(3, 2))),
    ("from-nested-arrays", point(lambda x: pack([[2 * x, x + 1], [x, x]]), d.normal(3, 2))),
    ("constant-output", point(lambda x: _CONST, _VARIABLE)),
    ("r_/constant-only", point(lambda x: np.r_[_CONST], _VARIABLE)),
    ("r_/variable", point(lambda x: np.r_[x], _VARIABLE), _R_MISSING),
    ("r_/variable-twice", point(lambda x: np.r_[x, x], _VARIABLE), _R_MISSING),
    ("r_/variable-constant", point(lambda x: np.r_[x, _CONST], _VARIABLE), _R_MISSING),
    ("r_/variable-constant-variable", point(lambda x: np.r_[x, _CONST, x], _VARIABLE),
     _R_MISSING),
    ("r_/with-a-range", point(lambda x: np.r_[x, _CONST10, 1:10], d.normal(10)), _R_MISSING),
    # autograd has this case twice, under two names
    ("c_/variable-constant-variable", point(lambda x: np.c_[x, _CONST, x], _VARIABLE),
     _C_MISSING),
])


@pytest.mark.parametrize("cases", BUILT)
def test_built_array_derivatives_match_differences(cases):
    check_all(cases)


def test_a_traced_scalar_has_array_attributes():
    def square(x):
        assert (x.shape, x.ndim, x.size, x.dtype) == ((), 0, 1, np.float64)
        return x ** 2
    assert float(vj.grad(square)(3.0)) == 6.0


def test_a_gradient_keeps_the_input_dtype_across_astype():
    x = np.arange(3, dtype=np.float32)
    g = vj.grad(lambda x: np.sum(np.sin(x.astype("float64"))))(x)
    assert g.dtype == np.float32
    np.testing.assert_allclose(to_numpy(g), np.cos(x), rtol=1e-6)


# ======================================================================================
# linspace, np.gradient, np.interp
# ======================================================================================
d = Draws(206)
_GRID_X, _GRID_XP = np.arange(-20, 20, 0.1), np.arange(10) * 1.0
_GRID_YP = _GRID_XP ** 0.5 + d.normal(10)
SAMPLED = table([
    (f"linspace/num={num}", grid(np.linspace, [1.2], [3.4, -3.4, 1.2], [num]))
    for num in (0, 1, 5)
] + [
    ("gradient/1d-2d-3d", grid(np.gradient, [d.normal(10), d.normal(10, 10),
                                             d.normal(10, 10, 10)])),
    ("gradient/axes", grid(np.gradient, [d.normal(10, 10, 10)],
                           axis=[None, 0, 1, -1, (0, 1), (0, -1)])),
    ("interp/in-the-values", point(lambda yp: np.interp(_GRID_X, _GRID_XP, yp), _GRID_YP)),
    ("interp/with-edge-values", point(
        lambda yp: np.interp(_GRID_X, _GRID_XP, yp, left=-1, right=-1), _GRID_YP)),
])


@pytest.mark.parametrize("cases", SAMPLED)
def test_sampling_derivatives_match_differences(cases):
    check_all(cases)


@pytest.mark.parametrize("edges", [{}, {"left": -1, "right": -1}], ids=["clamped", "edge"])
def test_interp_of_tensors_agrees_with_numpy(edges):
    x, xp = np.arange(-100, 100, 0.1), np.arange(10) * 1.0
    y = np.interp(x, xp, vj.constant(xp ** 2), **edges)
    np.testing.assert_allclose(to_numpy(y), np.interp(x, xp, xp ** 2, **edges))
