"""Cases from autograd's test suite, checked against vecjac: elementwise functions,
reductions and products.

Source of the cases: HIPS/autograd, tests/test_numpy.py, test_linalg.py (with the
solve_triangular, sqrtm and symmetrized-eigh cases of its older versions),
test_systematic.py with numpy_utils.py, test_scalar_ops.py, test_scipy.py,
test_wrappers.py, test_jacobian.py, test_logic.py, test_graphs.py and
test_numpy_interp.py. What carries over are the cases -- the functions differentiated,
input shapes, domains and values, the differentiated arguments, orders and modes, the
closed forms -- not autograd's code, names or file structure. Expected values come from
central differences or closed forms, never from vecjac itself.

The cases are spread by topic over tests/conformance/test_autograd_*.py:
- this module: elementwise functions of one and two arguments, reductions and
  statistics, ties in max/min, products (dot, matmul, tensordot, einsum, ...);
- test_autograd_arrays.py: shaping, indexing, joining and splitting, building arrays
  from traced values, sorting, selecting, interpolation;
- test_autograd_linalg_scipy.py: numpy.linalg, scipy.linalg, scipy.special,
  scipy.stats, scipy.signal and scipy.integrate;
- test_autograd_transforms.py: the functional API (grad, value_and_grad, jacobian,
  hessian, hvp, vjp, jvp, recompute_grad), nested differentiation and Python control
  flow on traced values;
- test_autograd_adapter.py: how the cases run (NumPy dispatch, `pack`, vj.scipy, the
  derivative grids) and checks that this machinery fails when it should.

Where autograd checked reverse mode only because its forward mode lacked a rule (linalg,
scipy), both modes are checked; autograd's orders are kept. A case vecjac cannot run is
a strict xfail: "missing: ..." (raises TypeError) when vecjac has no op for the function,
otherwise the reason names the problem.

Not carried over:
- complex inputs (vecjac refuses complex numbers by design): the complex halves of the
  statistics and ufunc checks, the *_complex linalg cases, complex eig, test_complex.py;
- autograd-only API: np.make_diagonal, the axes= / dot_axes= extension of convolve,
  `primitive` / `defvjp` / `defgrad`, multigrad, checkpoint memory profiling, the VJP
  registry errors (no_vjp_def, no_jvp_def, unimplemented falseyness);
- np.msort (gone from NumPy 2), the numpy-version check, the commented-out frexp case;
- autograd's internals: boxes, vector spaces, tracing, containers, backends
  (test_core, test_vspaces, test_tuple, test_list, test_dict, test_builtins,
  test_direct, test_tests, test_flatten, test_primitives, test_jvps, test_fft,
  test_truediv, test_thread_safety, test_misc, test_cupy*).
"""
import operator

import numpy as np
import pytest

import vecjac as vj
from tests.conformance.test_autograd_adapter import (Draws, broadcasting_pairs, check_all, grid,
                                                     pack, point, standard_shapes, table)


def thrice(fn):
    # the source cases scale each scalar function by 3: the derivative checked is that
    # of the function followed by a multiplication
    return lambda x: 3.0 * fn(x)


# ======================================================================================
# elementwise functions of one argument
# ======================================================================================
d = Draws(101)

SCALAR_POINTS = table([
    ("abs@1.1", point(thrice(np.abs), 1.1)),
    ("abs@-1.1", point(thrice(np.abs), -1.1)),
    ("abs@0-first-order", point(thrice(np.abs), 0.0, order=1)),
    ("absolute@1.1", point(thrice(np.absolute), 1.1)),
    ("absolute@-1.1", point(thrice(np.absolute), -1.1)),
    ("absolute@0-first-order", point(thrice(np.absolute), 0.0, order=1)),
    ("sign@1.1", point(thrice(np.sign), 1.1)),
    ("sign@-1.1", point(thrice(np.sign), -1.1)),
    ("sin", point(thrice(np.sin), d.normal())),
    ("cos", point(thrice(np.cos), d.normal())),
    ("tan", point(thrice(np.tan), d.normal())),
    ("sinh", point(thrice(np.sinh), d.normal())),
    ("cosh", point(thrice(np.cosh), d.normal())),
    ("tanh", point(thrice(np.tanh), d.normal())),
    ("arcsinh", point(thrice(np.arcsinh), d.normal())),
    ("exp", point(thrice(np.exp), d.normal())),
    ("exp2", point(thrice(np.exp2), abs(d.normal()))),
    ("expm1", point(thrice(np.expm1), abs(d.normal()))),
    ("log", point(thrice(np.log), abs(d.normal()))),
    ("log2", point(thrice(np.log2), abs(d.normal()))),
    ("log10", point(thrice(np.log10), abs(d.normal()))),
    ("log1p", point(thrice(np.log1p), abs(d.normal()))),
    ("arccos@0.1", point(thrice(np.arccos), 0.1)),
    ("arcsin@0.1", point(thrice(np.arcsin), 0.1)),
    ("arctan@0.2", point(thrice(np.arctan), 0.2)),
    ("arctanh@0.2", point(thrice(np.arctanh), 0.2)),
    ("arccosh", point(thrice(np.arccosh), d.positive(above=1.2))),
    ("sqrt", point(thrice(np.sqrt), d.uniform(0.0, 10.0))),
    ("rad2deg", point(thrice(np.rad2deg), d.uniform(0.0, 10.0))),
    ("deg2rad", point(thrice(np.deg2rad), d.uniform(0.0, 10.0))),
    ("radians", point(thrice(np.radians), d.uniform(0.0, 10.0))),
    ("degrees", point(thrice(np.degrees), d.uniform(0.0, 10.0))),
    ("sinc", point(thrice(np.sinc), d.uniform(0.0, 10.0))),
    ("unary-minus", point(thrice(operator.neg), d.normal())),
    ("negative", point(np.negative, d.uniform())),
    ("reciprocal", point(np.reciprocal, d.uniform())),
])


@pytest.mark.parametrize("cases", SCALAR_POINTS)
def test_scalar_function_derivatives_match_differences(cases):
    check_all(cases)


def _scaled_down(fn):
    # degrees are large numbers: scaled so that the absolute tolerance is meaningful
    return lambda x: fn(x) / 50.0


# (id, function, domain or None for [-2, 2]); each is checked on a scalar, (2,), (3, 2)
# and (1, 2) input inside its domain
UFUNC_DOMAINS = [
    ("sin", np.sin, None), ("cos", np.cos, None), ("tan", np.tan, (-1.1, 1.1)),
    ("sinh", np.sinh, None), ("cosh", np.cosh, None), ("tanh", np.tanh, None),
    ("arcsinh", np.arcsinh, (-0.9, 0.9)), ("arccosh", np.arccosh, (1.1, 4.0)),
    ("arctanh", np.arctanh, (-0.9, 0.9)),
    ("abs", np.abs, (0.1, 4.0)), ("absolute", np.absolute, (0.1, 4.0)),
    ("fabs", np.fabs, None), ("sign", np.sign, None),
    ("ceil", np.ceil, (-1.5, 1.5)), ("floor", np.floor, (-1.5, 1.5)),
    ("exp", np.exp, None), ("exp2", np.exp2, None), ("expm1", np.expm1, None),
    ("log", np.log, (0.2, 2.0)), ("log2", np.log2, (0.2, 2.0)),
    ("log10", np.log10, (0.2, 2.0)), ("log1p", np.log1p, (0.2, 2.0)),
    ("sqrt", np.sqrt, (1.0, 3.0)), ("square", np.square, None),
    ("deg2rad", np.deg2rad, None), ("radians", np.radians, None),
    ("degrees/50", _scaled_down(np.degrees), None),
    ("rad2deg/50", _scaled_down(np.rad2deg), None),
    ("real", np.real, None), ("real_if_close", np.real_if_close, None),
    ("imag", np.imag, None), ("conj", np.conj, None), ("angle", np.angle, None),
]
d = Draws(102)
UFUNCS_ON_STANDARD_SHAPES = table([
    (name, grid(fn, standard_shapes(d, domain or (-2.0, 2.0))))
    for name, fn, domain in UFUNC_DOMAINS])


@pytest.mark.parametrize("cases", UFUNCS_ON_STANDARD_SHAPES)
def test_elementwise_derivatives_match_differences_on_every_shape(cases):
    check_all(cases)


# ======================================================================================
# elementwise functions of two arguments
# ======================================================================================
d = Draws(103)
BINARY_SCALAR_POINTS = table([
    (f"{name}/{which}", point(fn, d.uniform(), d.uniform(), wrt=k))
    for name, fn in [("mod", np.mod), ("divide", np.divide), ("multiply", np.multiply),
                     ("true_divide", np.true_divide)]
    for k, which in [(0, "first"), (1, "second")]
] + [
    ("power/base", point(np.power, d.uniform() ** 2 + 1.0, d.positive(above=1.0))),
    ("power/exponent", point(np.power, d.normal() ** 2, d.uniform() ** 2, wrt=1)),
    ("power/exponent-of-zero", point(np.power, 0.0, d.uniform() ** 2, wrt=1)),
])


@pytest.mark.parametrize("cases", BINARY_SCALAR_POINTS)
def test_binary_scalar_function_derivatives_match_differences(cases):
    check_all(cases)


def test_power_with_exponent_zero_has_zero_derivatives_at_zero():
    # x ** 0 == 1 everywhere, including x = 0 where the generic rule y x ** (y - 1)
    # would give 0 * inf
    first = vj.grad(lambda x: np.power(x, 0.0))
    assert float(first(0.0)) == 0.0
    assert float(vj.grad(first)(0.0)) == 0.0


def _both_operands(fn, shared=True, domain_a=(-2.0, 2.0), domain_b=(-2.0, 2.0)):
    return grid(fn, *broadcasting_pairs(d, domain_a, domain_b, shared), wrt=(0, 1))


d = Draws(104)
# every pairing of a scalar, (2,), (3, 2) and (1, 2) operand
BROADCASTING_BINARY = table([
    ("add", _both_operands(np.add)),
    ("logaddexp", _both_operands(np.logaddexp)),
    ("logaddexp2", _both_operands(np.logaddexp2)),
    ("true_divide/positive-divisor", _both_operands(np.true_divide, domain_b=(0.8, 1.2))),
    ("true_divide/negative-divisor", _both_operands(np.true_divide, domain_b=(-0.3, -2.0))),
    ("operator-mul", _both_operands(operator.mul)),
    ("operator-add", _both_operands(operator.add)),
    ("operator-sub", _both_operands(operator.sub)),
    ("operator-truediv", _both_operands(operator.truediv, domain_b=(0.5, 2.0))),
    ("operator-pow", _both_operands(operator.pow, domain_a=(0.7, 2.0))),
    # remainders jump where the operands coincide: independent draws
    ("remainder", _both_operands(np.remainder, False, (-0.9, 0.9), (0.7, 1.9))),
    ("mod", _both_operands(np.mod, False, domain_b=(0.8, 2.1))),
    ("mod/negative-divisor", _both_operands(np.mod, False, domain_b=(-0.3, -2.0))),
    ("operator-mod", _both_operands(operator.mod, False, domain_b=(0.3, 2.0))),
    ("operator-mod/negative-divisor",
     _both_operands(operator.mod, False, domain_b=(-0.3, -2.0))),
])


@pytest.mark.parametrize("cases", BROADCASTING_BINARY)
def test_binary_derivatives_match_differences_for_broadcast_operands(cases):
    check_all(cases)


d = Draws(105)
ELEMENTWISE_EXTREMA = table([
    # independent operands of shapes (1,), (1, 4), (3, 4): no ties
    (fn.__name__, grid(fn, [d.normal(1), d.normal(1, 4), d.normal(3, 4)],
                       [d.normal(1), d.normal(1, 4), d.normal(3, 4)], wrt=(0, 1)))
    for fn in (np.maximum, np.fmax, np.minimum, np.fmin)])


@pytest.mark.parametrize("cases", ELEMENTWISE_EXTREMA)
def test_elementwise_extrema_derivatives_match_differences(cases):
    check_all(cases)


# ======================================================================================
# reductions and statistics
# ======================================================================================
def _summaries(fn, d):
    """fn on scalars, then on (3,), (2, 3) and (1, 3) inputs over axes and keepdims."""
    b, c, e = d.normal(3), d.normal(2, 3), d.normal(1, 3)
    return [grid(fn, [3.5, d.normal()]),
            grid(fn, [b, c, e], axis=[None, 0], keepdims=[True, False]),
            grid(fn, [c, e], axis=[None, 0, 1], keepdims=[True, False])]


# np.all / np.any have bool outputs, on which check_grads's own tape warns
_BOOL_OUTPUT = pytest.mark.filterwarnings("ignore:The dtype of the target tensor:UserWarning")
d = Draws(106)
SUMMARIES = table([
    (fn.__name__, _summaries(fn, d), *([_BOOL_OUTPUT] if fn in (np.all, np.any) else []))
    for fn in (np.max, np.min, np.sum, np.mean, np.prod, np.var, np.std, np.all, np.any)])


@pytest.mark.parametrize("cases", SUMMARIES)
def test_summary_derivatives_match_differences_over_axes(cases):
    check_all(cases)


d = Draws(107)
_M, _T3 = d.normal(10, 11), d.normal(3, 4, 5)
REDUCTIONS = table([
    ("max", point(np.max, _M)),
    ("max/axis", point(lambda x: np.max(x, axis=1), _T3)),
    ("max/axis-keepdims", point(lambda x: np.max(x, axis=1, keepdims=True), _T3)),
    ("min", point(np.min, _M)),
    ("min/axis", point(lambda x: np.min(x, axis=1), _T3)),
    ("min/axis-keepdims", point(lambda x: np.min(x, axis=1, keepdims=True), _T3)),
    ("sum", point(np.sum, _M)),
    ("sum/axis", point(lambda x: np.sum(x, axis=0), _M)),
    ("sum/axis-keepdims", point(lambda x: np.sum(x, axis=0, keepdims=True), _M)),
    ("sum/two-axes", point(lambda x: np.sum(x, axis=(1, 2)), d.normal(10, 11, 7))),
    ("builtin-sum-of-list", point(lambda x, y: sum([x, y]), _M, d.normal(10, 11))),
    ("mean", point(np.mean, _M)),
    ("mean/axis", point(lambda x: np.mean(x, axis=0), _M)),
    ("mean/axis-keepdims", point(lambda x: np.mean(x, axis=0, keepdims=True), _M)),
    ("prod/matrix", point(np.prod, d.normal(2, 3) ** 2 / 10.0 + 0.1)),
    ("prod/vector", point(np.prod, d.normal(7) ** 2 + 0.1)),
    ("prod/axis", point(lambda x: np.prod(x, axis=0), d.normal(2, 3) ** 2 + 0.1)),
    ("prod/axis-keepdims",
     point(lambda x: np.prod(x, axis=0, keepdims=True), d.normal(2, 3) ** 2 + 0.1)),
    ("cumsum/vector", point(np.cumsum, d.normal(10))),
    ("cumsum/flattened", point(np.cumsum, _M)),
    ("cumsum/axis0", point(lambda x: np.cumsum(x, axis=0), _M)),
    ("cumsum/axis1", point(lambda x: np.cumsum(x, axis=1), _M)),
])


@pytest.mark.parametrize("cases", REDUCTIONS)
def test_reduction_derivatives_match_differences(cases):
    check_all(cases)


d = Draws(108)
_VECTOR, _WIDE, _ROW = d.normal(3), d.normal(3, 4), d.normal(1, 3)
SPREAD_WITH_DDOF = table([
    (f"{fn.__name__}/{label}", case)
    for fn in (np.var, np.std)
    for label, case in [
        ("ddof-0-1", grid(fn, [_VECTOR, _WIDE, _ROW], axis=[None], keepdims=[True, False],
                          ddof=[0, 1])),
        ("ddof-2", grid(fn, [_WIDE, _ROW], axis=[None, 1], keepdims=[True, False],
                        ddof=[2]))]])


@pytest.mark.parametrize("cases", SPREAD_WITH_DDOF)
def test_variance_and_std_derivatives_match_differences_with_ddof(cases):
    check_all(cases)


# statistics of a two-element list [x, x + 2] (or tuple): the mean moves with x, the
# spread does not
@pytest.mark.parametrize("container", [list, tuple])
@pytest.mark.parametrize("statistic, slope", [(np.mean, 1.0), (np.std, 0.0), (np.var, 0.0)],
                         ids=["mean", "std", "var"])
def test_statistics_of_a_sequence_of_traced_values(statistic, slope, container):
    g = vj.grad(lambda x: statistic(pack(container([x, x + 2.0]))))(0.0)
    assert float(g) == slope


# ties: max/min/maximum of equal entries; the derivative is split among the tied
# entries, as in central differences
TIES = table([
    ("max-of-two-equal", point(lambda x: np.max(pack([x, x])), 1.0)),
    ("max-rows/x-wins", point(lambda x: np.max(pack([[x, x], [x, 0.5]]), axis=1), 1.0)),
    ("max-rows/x-loses", point(lambda x: np.max(pack([[x, x], [x, 0.5]]), axis=1), -1.0)),
    ("min-columns/x-loses", point(
        lambda x: np.min(pack([[x, x, x], [x, 0.5, 0.5], [0.5, 0.5, 0.5], [x, x, 0.5]]),
                         axis=0), 1.0)),
    ("min-columns/x-wins", point(
        lambda x: np.min(pack([[x, x, x], [x, 0.5, 0.5], [0.5, 0.5, 0.5], [x, x, 0.5]]),
                         axis=0), -1.0)),
    ("maximum-of-itself", point(lambda x: np.maximum(x, x), 1.0)),
] + [
    (f"maximum-broadcast@{x}", point(
        lambda x: np.maximum(pack([x, x, 0.5]), pack([[x, 0.5, x], [x, x, 0.5]])), x))
    for x in (1.0, -1.0, 2.0)
])


@pytest.mark.parametrize("cases", TIES)
def test_derivatives_at_ties_match_differences(cases):
    check_all(cases)


# ======================================================================================
# products
# ======================================================================================
d = Draws(109)
_A, _B = d.normal(10, 11), d.normal(10, 11)
_V10, _V11, _W11, _F = d.normal(10), d.normal(11), d.normal(11), d.normal()
DOT_POINTS = table([
    ("matrix-vector", point(np.dot, _A, _V11)),
    ("matrix-matrix", point(np.dot, _A, _B.T)),
    ("vector-matrix", point(np.dot, _V10, _A)),
    ("vector-vector", point(np.dot, _V11, _W11)),
    ("matrix-float", point(np.dot, _A, _F)),
    ("float-matrix", point(np.dot, _F, _A)),
    ("vector-float", point(np.dot, _V10, _F)),
    ("float-vector", point(np.dot, _F, _V10)),
    # autograd also transposes the 1-D operands, which leaves them as they are
    ("outer", point(np.outer, _V11, _W11)),
    ("halves-of-one-vector", point(lambda x: np.dot(x[:2], x[2:]), d.normal(4))),
])


@pytest.mark.parametrize("cases", DOT_POINTS)
def test_dot_derivatives_match_differences_in_the_first_operand(cases):
    check_all(cases)


d = Draws(110)
R = d.normal
BOTH = (0, 1)
PRODUCT_GRIDS = table([
    ("dot", grid(np.dot, [1.5, R(3), R(2, 3), R(2, 2, 3)], [0.3, R(3), R(3, 4), R(2, 3, 4)],
                 wrt=BOTH)),
    ("inner", grid(np.inner, [1.5, R(3), R(2, 3)], [0.3, R(3), R(4, 3)], wrt=BOTH)),
    ("matmul", grid(np.matmul, [R(3), R(2, 3), R(2, 2, 3)], [R(3), R(3, 4), R(2, 3, 4)],
                    wrt=BOTH)),
    ("kron", grid(np.kron, [R(5, 5), R(4, 4)], [R(3, 3), R(2, 2)], wrt=BOTH)),
    ("tensordot/second-axis-with-first", grid(
        np.tensordot, [R(1, 3), R(2, 3, 2)], [R(3), R(3, 1), R(3, 4, 2)], wrt=BOTH,
        axes=[[(1,), (0,)]])),
    ("tensordot/first-axis-with-second", grid(
        np.tensordot, [R(3), R(3, 1), R(3, 4, 2)], [R(1, 3), R(2, 3, 2)], wrt=BOTH,
        axes=[[(0,), (1,)]])),
    ("tensordot/two-axis-pairs", grid(
        np.tensordot, [R(2, 3), R(2, 3, 4)], [R(1, 2, 3), R(2, 2, 3, 4)], wrt=BOTH,
        axes=[[(0, 1), (1, 2)], [(1, 0), (2, 1)]])),
    ("tensordot/axis-counts", grid(
        np.tensordot, [R(2, 2), R(4, 2, 2)], [R(2, 2), R(2, 2, 4)], wrt=BOTH, axes=[1, 2])),
    ("tensordot/no-axes-with-scalar", grid(np.tensordot, [R(4)], [R()], wrt=BOTH,
                                           axes=[0])),
    ("tensordot/negative-axis", grid(np.tensordot, [R(2, 6)], [R(6, 3)], wrt=BOTH,
                                     axes=[[[-1], [0]]])),
    ("cross", grid(np.cross, [R(3, 3)], [R(3, 3)], wrt=BOTH, axisa=[-1, 0, 1],
                   axisb=[-1, 0, 1], axisc=[-1, 0, 1], axis=[None, -1, 0, 1])),
])


@pytest.mark.parametrize("cases", PRODUCT_GRIDS)
def test_product_derivatives_match_differences_in_both_operands(cases):
    check_all(cases)


def test_tensordot_with_axes_given_by_position():
    # tensordot(x J, x J, 2) for the 2x2 all-ones J is 4 x**2: derivative 8 at x = 1
    g = vj.grad(lambda x: np.tensordot(x * np.ones((2, 2)), x * np.ones((2, 2)), 2))(1.0)
    assert float(g) == pytest.approx(8.0)


d = Draws(111)
R = d.normal
_OPERANDS = (1, 2)  # the subscripts come first
_SUBLIST_OPERANDS = (0, 2)  # operand, sublist, operand, sublist, ...
EINSUM = table([
    ("transpose", grid(np.einsum, ["ij->ji"], [R(1, 1), R(4, 4), R(3, 4)], wrt=1)),
    ("matrix-product", grid(np.einsum, ["ij,jk->ik"], [R(2, 3)], [R(3, 4)], wrt=_OPERANDS)),
    ("batched-matrix-product", grid(np.einsum, ["...ij,...jk->...ik"], [R(2, 3), R(2, 2, 3)],
                                    [R(3, 4), R(2, 3, 4)], wrt=_OPERANDS)),
    ("contract-and-permute", grid(np.einsum, ["ijk,lji->lki"], [R(3, 4, 4)], [R(4, 4, 3)],
                                  wrt=_OPERANDS)),
    ("leading-ellipsis", grid(np.einsum, ["...jk,...lj->...lk", "...,...->..."],
                              [R(4, 4), R(3, 4, 4)], [R(4, 4), R(3, 4, 4)], wrt=_OPERANDS)),
    ("trailing-ellipsis", grid(np.einsum, ["jk...,lj...->lk..."], [R(3, 2), R(3, 2, 4)],
                               [R(2, 3), R(2, 3, 4)], wrt=_OPERANDS)),
    ("middle-ellipsis", grid(np.einsum, ["j...k,lj...->lk..."], [R(2, 2), R(2, 2, 2)],
                             [R(2, 2), R(2, 2, 2)], wrt=_OPERANDS)),
    ("three-operands", grid(np.einsum, ["ijk,lji,lli->lki"], [R(3, 4, 4)], [R(4, 4, 3)],
                            [R(4, 4, 3)], wrt=_OPERANDS)),
    ("sublists/transpose", grid(np.einsum, [R(1, 1), R(4, 4), R(3, 4)], [(0, 1)], [(1, 0)])),
    ("sublists/matrix-product", grid(np.einsum, [R(2, 3)], [(0, 1)], [R(3, 4)], [(1, 2)],
                                     [(0, 2)], wrt=_SUBLIST_OPERANDS)),
    ("sublists/batched-matrix-product", grid(
        np.einsum, [R(2, 3), R(2, 2, 3)], [(Ellipsis, 0, 1)], [R(3, 4), R(2, 3, 4)],
        [(Ellipsis, 1, 2)], [(Ellipsis, 0, 2)], wrt=_SUBLIST_OPERANDS)),
    ("sublists/contract-and-permute", grid(
        np.einsum, [R(3, 4, 4)], [(0, 1, 2)], [R(4, 4, 3)], [(3, 1, 0)], [(3, 2, 0)],
        wrt=_SUBLIST_OPERANDS)),
    ("sublists/three-operands", grid(
        np.einsum, [R(3, 4, 4)], [(0, 1, 2)], [R(4, 4, 3)], [(3, 1, 0)], [R(4, 4, 3)],
        [(3, 3, 0)], [(3, 2, 0)], wrt=_SUBLIST_OPERANDS)),
])


@pytest.mark.parametrize("cases", EINSUM)
def test_einsum_derivatives_match_differences(cases):
    check_all(cases)
