"""Elementwise math, reductions, scans and segments, where, linear algebra: cases from TensorFlow's pfor test-suite (sources and differences:
tests/conformance/tf_pfor_support.py), vectorized by vecjac and checked against the loop."""
import numpy as np
import pytest

import vecjac as vj
from tests.conformance.tf_pfor_support import (BOOLS, RNG, Case, assert_pfor_matches_loop, at,
                                               complex_draw, draw, gaussian, missing, over_rows,
                                               params, persistent_tape, rows_of, stacked)

# == elementwise math ======================================================================
UNARY_REAL = {
    "acosh": lambda t: vj.math.acosh(1 + vj.square(t)),  # moved into acosh's domain
    "abs": vj.math.abs, "acos": vj.math.acos, "asin": vj.math.asin, "asinh": vj.math.asinh,
    "atan": vj.math.atan, "atanh": vj.math.atanh, "bessel_i0e": vj.math.bessel_i0e,
    "bessel_i1e": vj.math.bessel_i1e, "cos": vj.math.cos, "cosh": vj.math.cosh,
    "digamma": vj.math.digamma, "erf": vj.math.erf, "erfc": vj.math.erfc,
    "erfinv": vj.math.erfinv, "exp": vj.math.exp, "expm1": vj.math.expm1,
    "is_finite": vj.math.is_finite, "is_inf": vj.math.is_inf, "lgamma": vj.math.lgamma,
    "log": vj.math.log, "log1p": vj.math.log1p, "ndtri": vj.math.ndtri,
    "negative": vj.math.negative, "reciprocal": vj.math.reciprocal, "rint": vj.math.rint,
    "round": vj.math.round, "rsqrt": vj.math.rsqrt, "sigmoid": vj.math.sigmoid,
    "sign": vj.math.sign, "sin": vj.math.sin, "sinh": vj.math.sinh, "sqrt": vj.math.sqrt,
    "square": vj.math.square, "tan": vj.math.tan, "tanh": vj.math.tanh, "elu": vj.nn.elu,
    "relu": vj.nn.relu, "relu6": vj.nn.relu6,
    "leaky_relu": lambda t: vj.nn.leaky_relu(t, alpha=0.1), "selu": vj.nn.selu,
    "softplus": vj.nn.softplus, "softsign": vj.nn.softsign,
}


@pytest.mark.parametrize("op", [pytest.param(op, id=name) for name, op in UNARY_REAL.items()])
def test_unary_op_and_its_gradients_vectorize(op):
    x = draw([3, 5])
    tape = persistent_tape(x)

    def body(i):
        with tape:
            whole, row = op(x), vj.gather(x, i)
            per_row = op(row)
            results = [per_row]
            # d/d(row) of a loop-invariant output op(x) and of the loop-variant op(row),
            # each under the default seed and under a seed scaled by the index
            for target in (whole, per_row):
                if np.dtype(target.dtype).kind != "f":
                    continue
                for seed in (None, target * vj.cast(i, target.dtype)):
                    grad = tape.gradient(target, row, output_gradients=seed)
                    if grad is not None:
                        results.append(grad)
        return results
    assert_pfor_matches_loop(body, 3)


@pytest.mark.parametrize("op", [
    pytest.param(vj.math.angle, id="angle"),
    pytest.param(vj.math.imag, id="imag"),
    pytest.param(vj.math.abs, id="complex_abs"),
    pytest.param(vj.math.real, id="real"),
    pytest.param(vj.math.conj, id="conj"),
])
def test_op_of_complex_values_vectorizes(op):
    z = complex_draw((3, 5))
    assert_pfor_matches_loop(lambda i: (op(z), op(vj.gather(z, i))), 3)


@pytest.mark.parametrize("op, on_booleans", [(vj.math.ceil, False), (vj.math.floor, False),
                                             (vj.math.logical_not, True)],
                         ids=["ceil", "floor", "logical_not"])
def test_unary_op_without_gradient_vectorizes(op, on_booleans):
    x = draw([3, 5])
    x = x > 0.5 if on_booleans else x
    assert_pfor_matches_loop(lambda i: op(vj.gather(x, i)), 3)


def polygamma_in_domain(a, b):
    # an integer order in [1, 10] and an argument >= 1, as TF's wrapper makes them
    return vj.math.polygamma(vj.round(vj.clip_by_value(b, 1, 10)), a * a + 1)


def zeta_in_domain(a, b):
    return vj.math.zeta(a * a + 1, b * b)


LOGICAL = {"logical_and": vj.math.logical_and, "logical_or": vj.math.logical_or,
           "logical_xor": vj.math.logical_xor}
BINARY = {
    "add": vj.math.add, "atan2": vj.math.atan2, "div": vj.math.realdiv,
    "divide": vj.math.divide, "div_no_nan": vj.math.divide_no_nan, "equal": vj.math.equal,
    "eq_operator": lambda a, b: vj.convert_to_tensor(a == b),
    "ne_operator": lambda a, b: vj.convert_to_tensor(a != b),
    "floor_mod": vj.math.floormod, "greater": vj.math.greater,
    "greater_equal": vj.math.greater_equal, "igamma": vj.math.igamma,
    "igammac": vj.math.igammac, "less": vj.math.less, "less_equal": vj.math.less_equal,
    "maximum": vj.math.maximum, "minimum": vj.math.minimum, "mod": vj.math.mod,
    "multiply": vj.math.multiply, "not_equal": vj.math.not_equal, "pow": vj.math.pow,
    "squared_difference": vj.math.squared_difference, "subtract": vj.math.subtract,
    "safe_polygamma": polygamma_in_domain, "floor_div": vj.math.floordiv,
}
BINARY["complex"] = vj.math.complex
MISSING_BINARY = [("truncate_mod", lambda a, b: vj.math.truncatemod(a, b),
                   "vj.math.truncatemod"),
                  ("safe_zeta", zeta_in_domain, "vj.math.zeta")]
BINARY_PARAMS = (
    [pytest.param(op, True, id=name) for name, op in LOGICAL.items()]
    + [pytest.param(op, False, id=name) for name, op in BINARY.items()]
    + [pytest.param(op, False, id=name, marks=missing(what))
       for name, op, what in MISSING_BINARY])


@pytest.mark.parametrize("op, on_booleans", BINARY_PARAMS)
def test_binary_op_with_either_side_varying_vectorizes(op, on_booleans):
    x, y = draw([7, 3, 5]), draw([3, 5])
    if on_booleans:
        x, y = x > 0.5, y > 0.5

    def body(i):
        x_row, y_row = vj.gather(x, i), vj.gather(y, i)
        # each side invariant or varying, and one varying row on both sides
        operands = [(x, y), (x_row, y), (x, y_row), (x_row, y_row), (x_row, x_row)]
        return [op(a, b) for a, b in operands]
    assert_pfor_matches_loop(body, 3)


def cast_both_ways():
    ints, floats = vj.constant([[1], [2]]), vj.constant([[1.0], [2.0]])
    return lambda i: (vj.cast(vj.gather(ints, i), vj.float32),
                      vj.cast(vj.gather(floats, i), vj.int32))


ELEMENTWISE_CASES = [
    Case("approximate_equal", over_rows(vj.math.approximate_equal, [3, 5], [3, 5])),
    Case("add_n_with_two_invariant_terms",
         over_rows(lambda r, b, c: vj.math.add_n([r, b, c]), [2, 3, 5], fixed=[[3, 5], [3, 5]]),
         iters=2),
    Case("bucketize", over_rows(lambda r: vj.math.bucketize(r, [-1, 0.5, 1]), [2, 3, 4]),
         iters=2),
    Case("cast_int_to_float_and_back", cast_both_ways, iters=2),
]


@pytest.mark.parametrize("case", params(ELEMENTWISE_CASES))
def test_elementwise_case_vectorizes(case):
    case.assert_vectorizes()


def test_clip_by_value_vectorizes_to_numpy_clip():
    x = draw([2, 3, 4])
    clipped = assert_pfor_matches_loop(lambda i: vj.clip_by_value(vj.gather(x, i), 0.5, 1.0), 2)
    np.testing.assert_array_equal(clipped.numpy(), np.clip(x.numpy(), 0.5, 1.0))


def test_tanh_of_a_scaled_sum_vectorizes_to_the_closed_form():
    scale = vj.constant(3.0)
    x, y = draw([4, 5]), draw([6, 5])  # the loop visits only the first 4 rows of y
    result = assert_pfor_matches_loop(
        lambda i: vj.tanh(scale * vj.gather(x, i) + vj.gather(y, i)), x.shape[0])
    np.testing.assert_allclose(result.numpy(), np.tanh(3 * x.numpy() + y.numpy()[:4]),
                               rtol=1e-12)


# == reductions, scans and segments =========================================================
REDUCTIONS = {"sum": (vj.math.reduce_sum, False), "prod": (vj.math.reduce_prod, False),
              "max": (vj.math.reduce_max, False), "min": (vj.math.reduce_min, False),
              "mean": (vj.math.reduce_mean, False), "any": (vj.math.reduce_any, True),
              "all": (vj.math.reduce_all, True)}


@pytest.mark.parametrize("keepdims", BOOLS)
@pytest.mark.parametrize("axis", [[1], None, [0, 2]], ids=str)
@pytest.mark.parametrize("name", list(REDUCTIONS))
def test_reduction_over_axes_vectorizes(name, axis, keepdims):
    reduce, on_booleans = REDUCTIONS[name]
    x = draw([2, 3, 4, 5])
    x = x > 0.5 if on_booleans else x
    assert_pfor_matches_loop(lambda i: reduce(vj.gather(x, i), axis=axis, keepdims=keepdims), 2)


@pytest.mark.parametrize("output_type", [vj.int32, vj.int64, None],
                         ids=["int32", "int64", "default"])
@pytest.mark.parametrize("axis", [1, None, -1], ids=str)
@pytest.mark.parametrize("name", ["argmin", "argmax"])
def test_arg_extremum_vectorizes_to_numpy(name, axis, output_type):
    x = draw([2, 3, 4, 5])
    op = getattr(vj.math, name)
    found = assert_pfor_matches_loop(lambda i: op(vj.gather(x, i), axis=axis,
                                                  output_type=output_type), 2)
    # axis None is an example's first axis (TF); a per-example axis a >= 0 is a + 1 stacked
    stacked_axis = 1 if axis is None else (axis + 1 if axis >= 0 else axis)
    np.testing.assert_array_equal(found.numpy(), getattr(np, name)(x.numpy(), axis=stacked_axis))


@pytest.mark.parametrize("reverse", BOOLS)
@pytest.mark.parametrize("exclusive", BOOLS)
@pytest.mark.parametrize("axis", [1, -2])
@pytest.mark.parametrize("op", [vj.math.cumsum, vj.math.cumprod], ids=["cumsum", "cumprod"])
def test_cumulative_op_vectorizes(op, axis, exclusive, reverse):
    x = draw([2, 3, 4, 5])
    assert_pfor_matches_loop(
        lambda i: op(vj.gather(x, i), axis=axis, exclusive=exclusive, reverse=reverse), 2)


@pytest.mark.parametrize("count_dtype", [vj.int32, vj.int64], ids=["n32", "n64"])
@pytest.mark.parametrize("ids_dtype", [vj.int32, vj.int64], ids=["ids32", "ids64"])
@pytest.mark.parametrize("reduce", [vj.math.unsorted_segment_sum, vj.math.unsorted_segment_min,
                                    vj.math.unsorted_segment_max,
                                    vj.math.unsorted_segment_prod],
                         ids=["sum", "min", "max", "prod"])
def test_unsorted_segment_reduction_vectorizes(reduce, ids_dtype, count_dtype):
    data = draw([3, 3, 2])
    segments = vj.constant([[0, 0, 2], [0, 1, 2], [2, 2, 2]], dtype=ids_dtype)
    count = vj.constant(3, dtype=count_dtype)

    def body(i):
        data_row, segment_row = vj.gather(data, i), vj.gather(segments, i)
        first_data, first_segments = vj.gather(data, 0), vj.gather(segments, 0)
        # both varying, only the segment ids varying, only the data varying
        pairs = [(data_row, segment_row), (first_data, segment_row), (data_row, first_segments)]
        return tuple(reduce(d, s, count) for d, s in pairs)
    assert_pfor_matches_loop(body, 3)


@pytest.mark.parametrize("num_segments", [3, None], ids=["num_segments", "no_num_segments"])
@pytest.mark.parametrize("name", ["sparse_segment_sum", "sparse_segment_mean",
                                  "sparse_segment_sqrt_n"])
def test_sparse_segment_reduction_vectorizes(name, num_segments):
    op = getattr(vj.math, name)
    data = draw([3, 4, 2])
    picks = vj.constant([[1, 2, 3], [0, 1, 2], [0, 2, 3]])
    segments = vj.constant([[0, 0, 2], [1, 1, 1], [0, 1, 1]])

    def body(i):
        def first(t):
            return vj.gather(t, 0)
        mixes = [(first(data), vj.gather(picks, i)), (vj.gather(data, i), vj.gather(picks, i)),
                 (first(data), first(picks)), (vj.gather(data, i), first(picks))]
        # segment ids vary over the loop too when num_segments is given (TF's cases)
        segment_choices = [first(segments)]
        if num_segments is not None:
            segment_choices.append(vj.gather(segments, i))
        return [op(d, p, s, num_segments=num_segments)
                for s in segment_choices for d, p in mixes]
    assert_pfor_matches_loop(body, 3)


# == where ================================================================================
@pytest.mark.parametrize("shape", [[2], [2, 1], [2, 5], [2, 3, 1], [2, 3, 5]], ids=str)
@pytest.mark.parametrize("layout", ["condition_broadcasts", "x_broadcasts", "condition_fixed"])
def test_where_with_broadcasting_vectorizes(layout, shape):
    """`shape` is the varying condition's (first two layouts) or x's (condition_fixed)."""
    if layout == "condition_fixed":
        condition, x, y = draw([3, 5]) > 0.5, draw(shape), draw([2, 3, 5])

        def body(i):
            return vj.where(condition, vj.gather(x, i), vj.gather(y, i))
    else:
        x = draw([2, 5] if layout == "x_broadcasts" else [2, 3, 5])
        y = draw([2, 3, 5])
        condition = draw(shape) > 0.5

        def body(i):
            return vj.where(vj.gather(condition, i), vj.gather(x, i), vj.gather(y, i))
    assert_pfor_matches_loop(body, 2)


# == linear algebra ========================================================================
def matrix(rows, cols, transposed=False):
    return (cols, rows) if transposed else (rows, cols)


@pytest.mark.parametrize("b_varies", BOOLS)
@pytest.mark.parametrize("a_varies", BOOLS)
@pytest.mark.parametrize("transpose_b", BOOLS)
@pytest.mark.parametrize("transpose_a", BOOLS)
@pytest.mark.parametrize("batch", [(), (4,)], ids=["matrices", "batches"])
def test_matmul_with_transposes_vectorizes(batch, transpose_a, transpose_b, a_varies, b_varies):
    a = draw(stacked(batch + matrix(3, 5, transpose_a), a_varies))
    b = draw(stacked(batch + matrix(5, 7, transpose_b), b_varies))
    assert_pfor_matches_loop(
        lambda i: vj.matmul(at(a, i, a_varies), at(b, i, b_varies), transpose_a=transpose_a,
                            transpose_b=transpose_b), 2)


@pytest.mark.parametrize("b_varies", BOOLS)
@pytest.mark.parametrize("a_varies", BOOLS)
@pytest.mark.parametrize("b_broadcasts", BOOLS)
@pytest.mark.parametrize("a_broadcasts", BOOLS)
def test_matmul_with_broadcast_batch_dims_vectorizes(a_broadcasts, b_broadcasts, a_varies,
                                                     b_varies):
    a = draw(stacked(((2,) if a_broadcasts else (4, 2)) + (3, 5), a_varies))
    b = draw(stacked(((2,) if b_broadcasts else (4, 2)) + (5, 7), b_varies))
    assert_pfor_matches_loop(lambda i: vj.matmul(at(a, i, a_varies), at(b, i, b_varies)), 2)


@pytest.mark.parametrize("b_varies", BOOLS)
@pytest.mark.parametrize("a_varies", BOOLS)
@pytest.mark.parametrize("adjoint", BOOLS)
def test_solve_vectorizes(adjoint, a_varies, b_varies):
    a = draw(stacked((4, 3, 3), a_varies)) + 10 * vj.eye(3)  # well conditioned
    b = draw(stacked((4, 3, 5), b_varies))
    assert_pfor_matches_loop(
        lambda i: vj.linalg.solve(at(a, i, a_varies), at(b, i, b_varies), adjoint=adjoint), 2,
        rtol=1e-8)


@pytest.mark.parametrize("b_varies", BOOLS)
@pytest.mark.parametrize("a_varies", BOOLS)
@pytest.mark.parametrize("adjoint", BOOLS)
@pytest.mark.parametrize("lower", BOOLS)
def test_triangular_solve_vectorizes(lower, adjoint, a_varies, b_varies):
    triangle = np.tril if lower else np.triu
    a = vj.constant(triangle(RNG.uniform(size=stacked((4, 3, 3), a_varies)) + np.eye(3)))
    b = draw(stacked((4, 3, 5), b_varies))
    assert_pfor_matches_loop(
        lambda i: vj.linalg.triangular_solve(at(a, i, a_varies), at(b, i, b_varies),
                                             lower=lower, adjoint=adjoint), 2, rtol=1e-8)


@pytest.mark.parametrize("shape", [[3, 4, 2, 2], [3, 2, 2]], ids=str)
def test_slogdet_vectorizes_to_numpy(shape):
    x = gaussian(shape)
    sign_and_log = assert_pfor_matches_loop(lambda i: vj.linalg.slogdet(vj.gather(x, i)), 3,
                                            rtol=1e-8)
    sign, logabsdet = np.linalg.slogdet(x.numpy())
    np.testing.assert_array_equal(sign_and_log[0].numpy(), sign)
    np.testing.assert_allclose(sign_and_log[1].numpy(), logabsdet, rtol=1e-8)


def positive_definite():
    z = gaussian([2, 3, 3])
    return vj.matmul(z, vj.linalg.matrix_transpose(z)) + vj.eye(3)  # + I: well conditioned


def symmetric():
    z = gaussian([2, 3, 3])
    return z + vj.linalg.matrix_transpose(z)


def well_conditioned_2x2():
    return draw([3, 4, 2, 2]) + 10 * vj.eye(2)


def inverse(adjoint):
    return lambda m: vj.linalg.inv(m, adjoint=adjoint)


def cross_products():
    x, y = draw([4, 2, 3]), draw([4, 2, 3])
    return lambda i: (vj.math.cross(vj.gather(x, i), vj.gather(y, i)),
                      vj.math.cross(vj.gather(x, 0), vj.gather(y, i)))


def einsum_products():
    xs, ys = draw([10, 9, 9]), draw([10, 9, 1])

    def body(i):
        x_first, y_first = vj.gather(xs, 0), vj.gather(ys, 0)  # loop invariant
        x_row, y_row = vj.gather(xs, i), vj.gather(ys, i)
        pairs = [(x_row, y_first), (x_first, y_row), (x_first, y_first), (x_row, y_row)]
        products = [vj.einsum("ab,bc->ac", p, q) for p, q in pairs]
        return products + [vj.einsum("cd,ce->de", y_row, x_row)]  # contracts leading axes
    return body


def set_diagonals():
    matrices, diagonals, bands = draw([3, 4, 4]), draw([3, 4]), draw([3, 3, 4])

    def body(i):
        m, d, b = vj.gather(matrices, i), vj.gather(diagonals, i), vj.gather(bands, i)
        m0, d0, b0 = matrices[0, ...], diagonals[0, ...], bands[0, ...]
        results = [vj.linalg.set_diag(mm, dd) for mm, dd in [(m, d), (m0, d), (m, d0)]]
        for align in ["RIGHT_LEFT", "LEFT_RIGHT"]:  # three diagonals, k = -1..1
            results += [vj.linalg.set_diag(mm, bb, k=(-1, 1), align=align)
                        for mm, bb in [(m, b), (m0, b), (m, b0)]]
        return results
    return body


LINALG_CASES = [
    Case("cholesky", rows_of(positive_definite, vj.linalg.cholesky), iters=2, rtol=1e-8),
    Case("eigh_and_eigvalsh",
         rows_of(symmetric, lambda m: (vj.linalg.eigh(m), vj.linalg.eigvalsh(m))), iters=2,
         rtol=1e-8, atol=1e-10),
    Case("inv", rows_of(well_conditioned_2x2, inverse(adjoint=False)), iters=2, rtol=1e-8),
    Case("inv_adjoint", rows_of(well_conditioned_2x2, inverse(adjoint=True)), iters=2,
         rtol=1e-8),
    Case("cross", cross_products, iters=4),
    Case("einsum", einsum_products, iters=10),
    Case("band_part_upper", over_rows(lambda r: vj.linalg.band_part(r, 0, -1), [3, 4, 2, 2])),
    Case("band_part_lower", over_rows(lambda r: vj.linalg.band_part(r, -1, 0), [3, 4, 2, 2])),
    Case("band_part_tridiagonal",
         over_rows(lambda r: vj.linalg.band_part(r, 1, 1), [3, 4, 2, 2])),
    Case("diag_two_diagonals", over_rows(
        lambda r: vj.linalg.diag(r, k=(0, 1), num_rows=4, num_cols=5, align="RIGHT_LEFT"),
        [3, 2, 4])),
    Case("diag_part_three_diagonals", over_rows(
        lambda r: vj.linalg.diag_part(r, k=(-2, 0), padding_value=3, align="RIGHT_LEFT"),
        [3, 4, 6])),
    Case("tensor_diag_of_vectors", over_rows(vj.linalg.tensor_diag, [3, 4])),
    Case("tensor_diag_of_matrices", over_rows(vj.linalg.tensor_diag, [3, 4, 2])),
    Case("tensor_diag_part_2d", over_rows(vj.linalg.tensor_diag_part, [3, 2, 2])),
    Case("tensor_diag_part_4d", over_rows(vj.linalg.tensor_diag_part, [3, 4, 2, 4, 2])),
    Case("set_diag", set_diagonals),
]


@pytest.mark.parametrize("case", params(LINALG_CASES))
def test_linear_algebra_case_vectorizes(case):
    case.assert_vectorizes()
