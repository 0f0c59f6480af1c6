"""Loop bodies from TensorFlow's pfor test-suite, vectorized by vecjac.

Where the cases come from: tensorflow/python/ops/parallel_for/control_flow_ops_test.py,
math_test.py and array_test.py in TensorFlow. A case is a function of the loop index that
TensorFlow's suite vectorizes, with its input shapes and dtypes, the choice of which inputs
vary over the loop, and the op's options. The check is ours: `assert_pfor_matches_loop` runs
`vj.vectorize.pfor` with the per-iteration fallback off (an op without a converter is an
error, the default of TF's test helper) and compares it with calling the body index by
index in Python: nest structure, shapes, dtypes and values of every output. Some cases
also compare with NumPy or a closed form. Inputs are float64 draws from one seeded NumPy
generator (TF draws float32), hence the tight tolerances.

Where vecjac and TF differ, the quantity checked stays the same:
- `vj.while_loop` returns a list even for one loop variable (TF 2's return_same_structure);
  TF's v1 cases unpack it.
- TF seeds the scalar l2 loss of max_pool / max_pool3d with a ones tensor shaped like the
  pool, which only works because TF's L2Loss gradient broadcasts it. vecjac checks seed
  shapes, so the pool output is seeded with `pooled * ones`: the same gradient.
- TF's conv2d_backprop_input / _filter and the depthwise ones are gradient kernels; here they
  are tape gradients of the forward convolution under the same seed. (TF skips its
  conv2d_backprop_input case, b/262851489.)
- Logical ops get `x > 0.5`: TF's `x > 0` on draws from [0, 1) is all True.
- The vectorized_map outer product runs a batch of 10, not 100 (time and memory); the
  per-example shapes are TF's.
- for_loop rejects parallel_iterations=0 with ValueError (TF: TypeError).
- TF's Select (v1 where) cases with conditions [2] and [2, 3, 5] are rows of the where table;
  its [2, 3] condition picks whole rows, a tf.compat.v1 behaviour that is not ported.
- inv and neg are reciprocal and negative, div is realdiv, add_v2 is add: one row each.
- Ops vecjac lacks are strict xfails called with TF's arguments, so they turn into checks
  when the op arrives.

Not ported, and why:
- dynamic shapes (placeholder_with_default): vectorized_map_with_dynamic_shape and the
  placeholder halves of the unit-dimension broadcast and gather cases;
- run_functions_eagerly (test_disable_tf_function) has no counterpart; its values are kept;
- IndexedSlices: IndexedSlicesTest and the IndexedSlices half of test_bias_add;
- graph mode, sessions, v1 control flow and resources: ReductionTest.test_var_loop_len,
  WhileV1Test, RNNTest, StackTest, TensorArrayTest, SparseTest, LoggingTest.test_assert and
  TensorListTest (vecjac has no TensorArray or TensorList);
- no bitwise, tf.signal, parsing or Print in vecjac: BitwiseTest, SpectralTest,
  ParsingTest, LoggingTest.test_print / test_print_v2;
- samplers vj.random lacks (truncated_normal, random_gamma, random_poisson, categorical,
  StatelessRandomTest) and OptionalTest;
- MaxPoolV2 (max_pool with a tensor ksize; max_pool itself is here) and the GPU-only NCHW
  cases (depthwise *_nchw, fused_batch_norm in NCHW);
- WhileV2Test.test_invariant_while_with_control_dependency: its loop is here, without the
  control dependency;
- igamma_grad_a and test_sparse_segment_grad are TF gradient kernels: vecjac does not
  differentiate igamma in `a` by design (LookupError, README) and differentiates its sparse
  segment ops through the ops they are made of;
- CompositeTensorTest's batched-TypeSpec broadcasting and RaggedTensor cases (a dataclass
  nest stands in for the Particle CompositeTensor in the other two);
- VariableTest.test_create_variable_repeated (a tf.function rule), test_variable_shape
  (resource handles), and the Benchmarks.
"""
import dataclasses
import functools
from typing import Callable

import numpy as np
import pytest

import vecjac as vj
from vecjac.vectorize import for_loop, pfor, vectorized_map

RNG = np.random.default_rng(2018)
BOOLS = [True, False]


# == inputs and the one check =============================================================
def draw(shape, low=0.0, high=1.0):
    """Uniform float64 values as a tensor (TF's cases use random_uniform)."""
    return vj.constant(RNG.uniform(low, high, size=shape))


def gaussian(shape):
    return vj.constant(RNG.standard_normal(shape))


def class_ids(shape, classes):
    return vj.constant(RNG.integers(0, classes, size=shape).astype(np.int32))


def complex_draw(shape):
    return vj.constant(RNG.uniform(size=shape) + 1j * RNG.uniform(size=shape))


def stacked(shape, varies=True, iters=2):
    """`shape` behind a loop axis of length `iters` when the input varies over the loop."""
    return ((iters,) if varies else ()) + tuple(shape)


def at(t, i, varies=True):
    """Example i of `t` when `t` varies over the loop, else `t` itself."""
    return vj.gather(t, i) if varies else t


def half_sum_of_squares(t):
    """The scalar loss of several cases (TF's nn.l2_loss)."""
    return vj.reduce_sum(t * t) / 2


def persistent_tape(*sources):
    """A persistent tape that already watches `sources`; loop bodies enter it again."""
    tape = vj.GradientTape(persistent=True)
    with tape:
        for source in sources:
            tape.watch(source)
    return tape


def _as_array(value):
    return np.asarray(value.numpy() if hasattr(value, "numpy") else value)


def assert_pfor_matches_loop(body, iters, *, fallback=False, parallel_iterations=None,
                             rtol=1e-9, atol=1e-12):
    """pfor(body) against body called for each index, leaf by leaf; returns pfor's result.

    Integer and boolean leaves must agree exactly, floats within rtol / atol; tensor leaves
    must also agree in dtype (a Python constant leaf has no dtype of its own)."""
    vectorized = pfor(body, iters, fallback_to_while_loop=fallback,
                      parallel_iterations=parallel_iterations)
    count = int(iters)
    # with no iterations the body still runs once, for its structure and example shapes
    per_index = [body(vj.constant(k)) for k in range(max(count, 1))]
    assert vj.nest.same_structure(vectorized, per_index[0]), (vectorized, per_index[0])
    leaves = [vj.nest.flatten(result) for result in per_index]
    for k, got in enumerate(vj.nest.flatten(vectorized)):
        first = leaves[0][k]
        if first is None:
            assert got is None
            continue
        if count:
            want = np.stack([_as_array(row[k]) for row in leaves])
        else:
            want = np.empty((0,) + _as_array(first).shape, _as_array(first).dtype)
        value = got.numpy()
        assert value.shape == want.shape, (k, value.shape, want.shape)
        if vj.is_tensor(first):
            assert value.dtype == want.dtype, (k, value.dtype, want.dtype)
        if want.dtype.kind in "biu":
            np.testing.assert_array_equal(value, want, err_msg=f"output {k}")
        else:
            np.testing.assert_allclose(value, want, rtol=rtol, atol=atol, equal_nan=True,
                                       err_msg=f"output {k}")
    return vectorized


@dataclasses.dataclass(frozen=True)
class Case:
    """A loop body: `make()` draws its inputs and returns body(i)."""
    name: str
    make: Callable
    iters: int = 3
    rtol: float = 1e-9
    atol: float = 1e-12

    def check(self):
        return assert_pfor_matches_loop(self.make(), self.iters, rtol=self.rtol,
                                        atol=self.atol)


def params(rows):
    return [pytest.param(case, id=case.name) for case in rows]


def over_rows(fn, *shapes, fixed=(), index=False):
    """make() of the usual body: fn(example i of each varying input..., *invariant inputs).

    Inputs are uniform draws: one per shape in `shapes` (varying over the loop), one per
    shape in `fixed` (loop invariant). With index=True fn gets the loop index first."""
    def make():
        varying = [draw(shape) for shape in shapes]
        invariant = [draw(shape) for shape in fixed]

        def body(i):
            rows = [vj.gather(t, i) for t in varying]
            return fn(i, *rows, *invariant) if index else fn(*rows, *invariant)
        return body
    return make


def rows_of(make_input, fn):
    """make() of body(i) = fn(example i of make_input())."""
    def make():
        t = make_input()
        return lambda i: fn(vj.gather(t, i))
    return make


def missing(what):
    """Strict xfail for a function vecjac lacks (its attribute lookup fails)."""
    return pytest.mark.xfail(strict=True, raises=AttributeError, reason=f"{what} missing")


# == the pfor API: options, loop counts, vectorized_map, reductions across iterations ======
def test_op_without_converter_matches_with_the_fallback_allowed():
    x = draw([3, 2, 4])  # top_k is TF's example of an op pfor may have to loop over
    assert_pfor_matches_loop(lambda i: vj.nn.top_k(vj.gather(x, i)), 3, fallback=True)


@pytest.mark.parametrize("parallel_iterations", [2, 3, 8, 10])
def test_chunked_iterations_match_the_loop(parallel_iterations):
    table = draw([8, 3])
    for count in (8, 4 * vj.constant(2)):  # a Python count and a tensor count
        assert_pfor_matches_loop(lambda i: vj.gather(table, i), count,
                                 parallel_iterations=parallel_iterations)


@pytest.mark.parametrize("parallel_iterations", [2, 3, 8, 10])
def test_chunked_iterations_keep_the_static_shape(parallel_iterations):
    sample = pfor(lambda _: vj.random.uniform([2, 3]), 8,
                  parallel_iterations=parallel_iterations)
    assert sample.shape == (8, 2, 3)


def test_parallel_iterations_below_two_are_rejected():
    for vectorizer in (pfor, for_loop):
        with pytest.raises(ValueError, match="positive integer"):
            vectorizer(lambda i: 1, 8, parallel_iterations=0)
    with pytest.raises(ValueError, match="for_loop"):  # one at a time: use for_loop
        pfor(lambda i: 1, 8, parallel_iterations=1)


def test_zero_iterations_keep_the_example_shape_and_dtype():
    assert_pfor_matches_loop(lambda i: 1, 0)
    empty = assert_pfor_matches_loop(lambda i: vj.zeros([10, 3], dtype=vj.int32), 0)
    assert empty.shape == (0, 10, 3) and empty.dtype == np.int32


def test_vectorized_map_of_a_keepdims_mean():
    means = vectorized_map(lambda t: vj.reduce_mean(t, axis=0, keepdims=True),
                           vj.ones((10, 5, 3)))
    np.testing.assert_array_equal(means.numpy(), np.ones((10, 1, 3)))


def test_vectorized_map_traced_in_a_function_has_a_static_shape():
    @vj.function
    def shape_of_map():
        column = vj.constant([[1.0], [1.0]])
        fill = vj.constant([1.0])
        return vectorized_map(lambda v: vj.where(v > 0, v, fill), column).shape
    assert [int(d) for d in shape_of_map()] == [2, 1]


def test_vectorized_map_broadcasts_leading_unit_dimensions():
    single, triple = vj.constant([3.1]), vj.constant([-2.0, 6.0, 9.0])
    np.testing.assert_allclose(vectorized_map(lambda t: t + 1, single).numpy(), [4.1])
    np.testing.assert_allclose(vectorized_map(sum, (single, single)).numpy(), [6.2])
    np.testing.assert_allclose(vectorized_map(sum, (single, triple)).numpy(), [1.1, 9.1, 12.1])


def test_vectorized_map_of_an_outer_product():
    batch = 10  # TF maps 100 examples, see the module docstring
    outer = vectorized_map(lambda m: vj.tensordot(m, m, 0),
                           vj.ones((batch, 32, 32), dtype=vj.float32))
    assert outer.shape == (batch, 32, 32, 32, 32)
    assert outer.dtype == np.float32 and bool(np.all(outer.numpy() == 1))


def test_vectorized_map_of_squares():
    squares = vectorized_map(lambda v: v * v, vj.range(4))
    np.testing.assert_array_equal(squares.numpy(), [0, 1, 4, 9])


def test_pfor_config_reduce_with_a_custom_function():
    x, y = draw([4, 3, 2]), draw([4, 3, 2])

    def body(i, pfor_config):
        x_row, y_row = vj.gather(x, i), vj.gather(y, i)
        mean_of_sums = pfor_config.reduce(lambda p, q: vj.reduce_mean(p + q, axis=0),
                                          x_row, y_row)
        return mean_of_sums + x_row
    want = (x.numpy() + y.numpy()).mean(axis=0) + x.numpy()
    np.testing.assert_allclose(pfor(body, 4).numpy(), want, rtol=1e-12)


@pytest.mark.parametrize("form", ["reduce_concat", "reduce_mean", "reduce_sum",
                                  "callable_object", "functools_partial"])
def test_pfor_config_reductions_see_every_iteration(form):
    x = draw([8, 3])

    def minus_across(i, pfor_config):
        row = vj.gather(x, i)
        if form == "reduce_concat":
            return row - vj.reduce_mean(pfor_config.reduce_concat(row), axis=0)
        if form == "reduce_sum":
            return row - pfor_config.reduce_sum(row)
        return row - pfor_config.reduce_mean(row)

    class MinusMean:
        def __call__(self, i, pfor_config):
            return minus_across(i, pfor_config)

    def with_extra_keyword(i, pfor_config, unused=None):
        return minus_across(i, pfor_config)
    body = {"callable_object": MinusMean(),
            "functools_partial": functools.partial(with_extra_keyword, unused=1)}
    across = x.numpy().sum(axis=0) if form == "reduce_sum" else x.numpy().mean(axis=0)
    result = pfor(body.get(form, minus_across), 8)
    np.testing.assert_allclose(result.numpy(), x.numpy() - across, rtol=1e-12)


def test_pfor_config_reductions_refuse_parallel_iterations():
    x = draw([8, 3])
    with pytest.raises(ValueError, match="parallel_iterations"):
        pfor(lambda i, pfor_config: pfor_config.reduce_sum(vj.gather(x, i)), 8,
             parallel_iterations=2)


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


REAL_ONLY = pytest.mark.xfail(
    strict=True, raises=TypeError,
    reason="vj.math.real / imag / angle / conj take real inputs only: a complex input raises "
           "ComplexNotSupported even eagerly without a tape (TF returns its parts)")


@pytest.mark.parametrize("op", [
    pytest.param(vj.math.angle, id="angle", marks=REAL_ONLY),
    pytest.param(vj.math.imag, id="imag", marks=REAL_ONLY),
    pytest.param(vj.math.abs, id="complex_abs"),
    pytest.param(vj.math.real, id="real", marks=REAL_ONLY),
    pytest.param(vj.math.conj, id="conj", marks=REAL_ONLY),
])
def test_op_of_complex_values_vectorizes(op):
    # values only: vecjac differentiates real floats only (README, Limitations)
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
MISSING_BINARY = [("complex", lambda a, b: vj.math.complex(a, b), "vj.math.complex"),
                  ("truncate_mod", lambda a, b: vj.math.truncatemod(a, b),
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
    case.check()


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
    case.check()


# == layout and indexing ===================================================================
def gather_variants():
    x = draw([3, 3, 3, 3])

    def body(i):
        results = []
        for source in (x, vj.gather(x, i)):  # loop invariant, then loop variant
            for axis in (0, 2, -1):
                picks = [2, vj.cast(2, vj.int64), vj.cast(i, vj.int64), [i], [i, 2],
                         [[2, i], [i, 1]]]
                results += [vj.gather(source, p, axis=axis) for p in picks]
                results.append(vj.gather(source, 2, axis=vj.cast(axis, vj.int64)))
            for axis, picks in ((1, [0, 1, 2]), (2, [i, 1, 2]), (-1, [[2, i], [i, 1], [2, 1]])):
                results.append(vj.gather(source, picks, axis=axis, batch_dims=1))
        return results
    return body


def shapes_of_a_mix():
    x, y = draw([3, 2, 3]), draw([3])

    def body(i):
        mix = [vj.gather(x, i), x, y, vj.gather(y, i)]
        return vj.shape_n(mix), vj.shape_n(mix, out_type=vj.int64)
    return body


def sorted_lookups():
    rows = vj.cumsum(draw([3, 2, 4]), axis=-1)  # sorted along the last axis
    needles = draw([2, 3], low=-1, high=4.5)

    def body(i):
        haystack = vj.gather(rows, i)
        return [vj.searchsorted(haystack, needles, out_type=vj.int32, side="left"),
                vj.searchsorted(haystack, needles, out_type=vj.int64, side="right")]
    return body


def zeros_like_in_a_tuple(r):
    # TF's body has a trailing comma: a 1-tuple, which `+ r` turns into shape (1, 2, 3)
    wrapped = (vj.zeros_like(r),)
    return wrapped, wrapped + r


def identity_n_mix():
    x = draw([3, 4])
    return lambda i: vj.identity_n([x, vj.gather(x, i)])


LAYOUT_CASES = [
    Case("gather_variants", gather_variants),
    Case("gather_nd", over_rows(
        lambda i, r: [vj.gather_nd(r, [0], batch_dims=0), vj.gather_nd(r, [i], batch_dims=0),
                      vj.gather_nd(r, [[i], [i], [i]], batch_dims=1)], [3, 3, 3], index=True)),
    Case("shape_n", shapes_of_a_mix),
    Case("reshape", over_rows(lambda r: (vj.reshape(r, [-1]), vj.reshape(r, [1, 3, 1, -1])),
                              [3, 2, 3])),
    Case("broadcast_to", over_rows(
        lambda r: (vj.broadcast_to(r, [2, 2, 3]), vj.broadcast_to(r, [1, 2, 1, 3])),
        [3, 2, 1, 3])),
    Case("expand_dims", over_rows(
        lambda r: (vj.expand_dims(r, axis=-1), vj.expand_dims(r, axis=1)), [3, 2, 3])),
    Case("searchsorted", sorted_lookups),
    Case("slice", over_rows(lambda r: vj.slice(r, begin=(0, 1), size=(2, 1)), [3, 2, 3])),
    Case("tile", over_rows(lambda r: vj.tile(r, [2, 1]), [3, 2, 3])),
    Case("stack_with_an_invariant", over_rows(lambda r, other: vj.stack([r, other], axis=-1),
                                              [3, 2, 3], fixed=[[2, 3]]), iters=1),
    Case("unstack", over_rows(
        lambda r: (vj.unstack(r, 4, axis=-1), vj.unstack(r, 3, axis=1)), [3, 2, 3, 4])),
    Case("pad", over_rows(lambda r: vj.pad(r, vj.constant([[1, 2], [3, 4]]), mode="CONSTANT"),
                          [3, 2, 3])),
    Case("split_in_equal_parts", over_rows(
        lambda r: (vj.split(r, 2, axis=0), vj.split(r, 3, axis=-1)), [3, 2, 3])),
    Case("split_by_sizes", over_rows(
        lambda r: (vj.split(r, [2, 1, 3], axis=0), vj.split(r, [3], axis=-1)), [3, 6, 3])),
    Case("squeeze", over_rows(
        lambda r: (vj.squeeze(r, axis=0), vj.squeeze(r, axis=-1), vj.squeeze(r)), [5, 1, 2, 1])),
    Case("reverse", over_rows(
        lambda r: tuple(vj.reverse(r, axis=axes) for axes in ([0], [-1], [1, -1])), [3, 4, 2, 3])),
    Case("transpose", over_rows(lambda r: vj.transpose(r, [2, 1, 0]), [3, 2, 3, 4])),
    Case("zeros_like_in_a_tuple", over_rows(zeros_like_in_a_tuple, [3, 2, 3])),
    Case("concat_with_an_invariant", over_rows(
        lambda r, other: tuple(vj.concat([r, r, other], axis=axis) for axis in (0, -1)),
        [3, 2, 3], fixed=[[2, 3]])),
    Case("identity_n", identity_n_mix),
    Case("roll_by_three", over_rows(lambda r: vj.roll(r, 3, axis=1), [3, 6, 7])),
    Case("roll_by_the_index", over_rows(
        lambda i, r: vj.roll(r, [i - 2, -1, i], axis=[1, 2, 2]), [3, 5, 6, 7], index=True)),
    Case("roll_first_axis_by_the_index",
         over_rows(lambda i, r: vj.roll(r, i, axis=0), [5, 5, 6], index=True), iters=5),
    Case("ensure_shape", over_rows(lambda r: vj.ensure_shape(r, [6, 7]), [3, 6, 7])),
    Case("depth_to_space", over_rows(
        lambda r: vj.nn.depth_to_space(r, 2, data_format="NHWC"), [2, 3, 2, 2, 12]), iters=2),
    Case("space_to_depth", over_rows(
        lambda r: vj.nn.space_to_depth(r, 2, data_format="NHWC"), [2, 3, 12, 12, 3]), iters=2),
    Case("batch_to_space", over_rows(
        lambda r: vj.batch_to_space(r, [2, 3], [[1, 2], [1, 0]]), [7, 5 * 2 * 3, 2, 2, 3, 2]),
        iters=7),
    Case("space_to_batch_nd", over_rows(
        lambda r: vj.space_to_batch_nd(r, [2, 3], [[1, 2], [1, 0]]),
        [7, 5, 2 * 2 - 3, 2 * 3 - 1, 3, 2]), iters=7),
    Case("check_numerics", over_rows(lambda r: vj.debugging.check_numerics(r, "test_message"),
                                     [2, 3, 4]), iters=2),
]


@pytest.mark.parametrize("case", params(LAYOUT_CASES))
def test_layout_and_indexing_case_vectorizes(case):
    case.check()


@pytest.mark.parametrize("query, want", [
    (lambda r: (vj.shape(r), vj.shape(r, out_type=vj.int64)), [[2, 3]] * 3),
    (lambda r: (vj.size(r), vj.size(r, out_type=vj.int64)), [6] * 3),
    (vj.rank, [2] * 3),
], ids=["shape", "size", "rank"])
def test_shape_query_vectorizes_to_a_constant(query, want):
    x = draw([3, 2, 3])
    answer = assert_pfor_matches_loop(lambda i: query(vj.gather(x, i)), 3)
    for leaf in vj.nest.flatten(answer):
        np.testing.assert_array_equal(leaf.numpy(), want)


def test_fill_with_the_index():
    filled = assert_pfor_matches_loop(lambda i: vj.fill((2, 3), i), 3)
    np.testing.assert_array_equal(filled.numpy(),
                                  np.broadcast_to(np.arange(3)[:, None, None], (3, 2, 3)))


def test_one_hot_vectorizes_to_numpy():
    labels = class_ids([3, 2, 3], 4)

    def body(i):
        row = vj.gather(labels, i)
        return (vj.one_hot(row, depth=4, on_value=2.0, off_value=-2.0),
                vj.one_hot(row, depth=4, axis=1))
    encoded = assert_pfor_matches_loop(body, 3)
    np.testing.assert_array_equal(encoded[0].numpy(),
                                  np.where(np.eye(4)[labels.numpy()] == 1, 2.0, -2.0))


def test_tile_by_the_index_is_an_error_without_fallback():
    x = draw([3, 2, 3])
    with pytest.raises(ValueError, match="loop"):
        pfor(lambda i: vj.tile(vj.gather(x, i), [i, 1]), 2, fallback_to_while_loop=False)


def test_strided_slice_and_its_gradient_vectorize():
    x = draw([3, 3, 4, 4, 2, 2, 2])
    tape = persistent_tape(x)

    def body(i):
        with tape:
            row = vj.gather(x, i)
            piece = row[:2, ::2, 1::3, ..., None, 1]
            loss = half_sum_of_squares(piece)
        return piece, tape.gradient(loss, row)
    sliced = assert_pfor_matches_loop(body, 3)
    np.testing.assert_array_equal(sliced[0].numpy(), x.numpy()[:, :2, ::2, 1::3, ..., None, 1])


def test_slice_bounds_from_the_index_need_the_fallback():
    x = draw([3, 3, 4, 4, 2, 2, 2])

    def body(i):
        return vj.gather(x, i)[i:i + 1, ...]
    assert_pfor_matches_loop(body, 3, fallback=True)
    with pytest.raises(ValueError, match="loop"):
        pfor(body, 3, fallback_to_while_loop=False)


@pytest.mark.parametrize("op, slope", [(vj.identity, 4.0), (vj.stop_gradient, 2.0)],
                         ids=["identity", "stop_gradient"])
def test_identity_like_op_and_its_gradient_vectorize(op, slope):
    x = draw([3, 5])
    tape = persistent_tape(x)

    def body(i):
        with tape:
            row = vj.gather(x, i)
            doubled = op(row) + row
            loss = half_sum_of_squares(doubled)
        return op(x), doubled, tape.gradient(loss, row)
    result = assert_pfor_matches_loop(body, 3)
    # d/dr (2r)^2 / 2 = 4r; with op(r) held constant, d/dr (c + r)^2 / 2 = c + r = 2r
    np.testing.assert_allclose(result[2].numpy(), slope * x.numpy(), rtol=1e-12)


@pytest.mark.xfail(strict=True, raises=TypeError,
                   reason="vj.transpose(conjugate=True) raises on complex input ('not "
                          "supported yet (no conj op)')")
def test_conjugate_transpose_of_complex_rows():
    z = complex_draw((3, 2, 3, 4))
    flipped = assert_pfor_matches_loop(
        lambda i: vj.transpose(vj.gather(z, i), [2, 1, 0], conjugate=True), 3)
    np.testing.assert_array_equal(flipped.numpy(), np.conj(z.numpy().transpose(0, 3, 2, 1)))


def scatter_without_static_shapes():
    @vj.function(input_signature=[vj.TensorSpec(shape=None, dtype=vj.int64)] * 3)
    def scatter(dense, where, values):
        return vj.tensor_scatter_nd_update(dense, where, values)
    return scatter


def scatter_elements(update, i):
    # four single elements of a length-8 vector, three at places that follow the index
    return update([0] * 8, [[i], [i + 1], [i + 3], [i + 2]], [i, i - 10, i + 11, 12])


def scatter_two_diagonals(i):
    places = [[[k, k] for k in range(5)], [[k, 4 - k] for k in range(5)]]
    values = vj.cast([[1, i, 1, 1, 1], [1, 1, i + 2, 1, i - 5]], vj.float64)
    return vj.tensor_scatter_nd_update(vj.zeros([5, 5]), places, values)


SCATTER_CASES = [
    Case("elements_unknown_shapes",
         lambda: functools.partial(scatter_elements, scatter_without_static_shapes()), iters=5),
    Case("elements", lambda: functools.partial(scatter_elements, vj.tensor_scatter_nd_update),
         iters=5),
    Case("rows", lambda: lambda i: vj.tensor_scatter_nd_update(
        vj.zeros([10, 3], dtype=vj.int64), [[i + 2], [4]], [[1, i * 2, 3], [i + 4, i - 5, 6]]),
        iters=5),
    Case("matrix_elements", lambda: lambda i: vj.tensor_scatter_nd_update(
        vj.zeros([10, 3], dtype=vj.int64), [[i + 2, 1], [4, 2]], [i, 5]), iters=5),
    Case("two_diagonals", lambda: scatter_two_diagonals, iters=5),
]


@pytest.mark.parametrize("case", params(SCATTER_CASES))
def test_scatter_update_at_index_dependent_places_vectorizes(case):
    updated = case.check()
    if case.name == "elements":  # i = 1: places 1, 2, 4, 3 get 1, -9, 12, 12
        np.testing.assert_array_equal(updated.numpy()[1], [0, 1, -9, 12, 12, 0, 0, 0])


# == neural network ops ====================================================================
STRIDE_2_VALID = dict(strides=[1, 2, 2, 1], padding="VALID", data_format="NHWC")


def seeded_gradient(forward, wrt, seed):
    """d forward(wrt) / d wrt under `seed`: what TF's backprop kernels compute."""
    with vj.GradientTape() as tape:
        tape.watch(wrt)
        out = forward(wrt)
    return tape.gradient(out, wrt, output_gradients=seed)


def conv_input_gradient():
    kernel, seeds = draw([3, 3, 3, 7]), draw([3, 2, 5, 5, 7])
    return lambda i: seeded_gradient(lambda x: vj.nn.conv2d(x, kernel, **STRIDE_2_VALID),
                                     vj.zeros([2, 12, 12, 3]), vj.gather(seeds, i))


def conv_filter_gradient():
    images, seeds = draw([3, 2, 12, 12, 3]), draw([3, 2, 5, 5, 7])

    def body(i):
        # the varying images and the first ones, under the varying seed
        return [seeded_gradient(lambda k: vj.nn.conv2d(x, k, **STRIDE_2_VALID),
                                vj.zeros([3, 3, 3, 7]), vj.gather(seeds, i))
                for x in (vj.gather(images, i), vj.gather(images, 0))]
    return body


def depthwise_input_gradient():
    kernels, seeds = draw([3, 3, 3, 3, 2]), draw([3, 2, 5, 5, 6])

    def body(i):
        kernel = vj.gather(kernels, i)
        return seeded_gradient(lambda x: vj.nn.depthwise_conv2d(x, kernel, **STRIDE_2_VALID),
                               vj.zeros([2, 12, 12, 3]), vj.gather(seeds, i))
    return body


def depthwise_filter_gradient():
    images, seeds = draw([3, 2, 12, 12, 3]), draw([3, 2, 5, 5, 6])

    def body(i):
        image = vj.gather(images, i)
        return seeded_gradient(lambda k: vj.nn.depthwise_conv2d(image, k, **STRIDE_2_VALID),
                               vj.zeros([3, 3, 3, 2]), vj.gather(seeds, i))
    return body


def sparse_cross_entropy():
    logits, labels = draw([3, 2, 4]), class_ids([3, 2], 4)
    return lambda i: vj.nn.sparse_softmax_cross_entropy_with_logits(
        labels=vj.gather(labels, i), logits=vj.gather(logits, i))


def on_default_first_and_last_axis(op):
    return lambda r: (op(r), op(r, axis=0), op(r, axis=-1))


NN_CASES = [
    Case("conv2d", over_rows(lambda r, kernel: vj.nn.conv2d(r, kernel, **STRIDE_2_VALID),
                             [3, 2, 12, 12, 3], fixed=[[3, 3, 3, 7]])),
    Case("conv2d_input_gradient", conv_input_gradient),
    Case("conv2d_filter_gradient", conv_filter_gradient),
    Case("depthwise_conv2d", over_rows(
        lambda r, kernel: vj.nn.depthwise_conv2d(r, kernel, **STRIDE_2_VALID),
        [3, 2, 12, 12, 3], [3, 3, 3, 3, 2])),
    Case("depthwise_conv2d_input_gradient", depthwise_input_gradient),
    Case("depthwise_conv2d_filter_gradient", depthwise_filter_gradient),
    Case("log_softmax", over_rows(on_default_first_and_last_axis(vj.nn.log_softmax), [3, 2, 4])),
    Case("softmax", over_rows(on_default_first_and_last_axis(vj.nn.softmax), [3, 2, 4])),
    Case("sparse_softmax_cross_entropy", sparse_cross_entropy),
    Case("adjust_contrast",
         over_rows(lambda im: vj.image.adjust_contrast(im, 2.0), [3, 2, 4, 4, 3])),
    Case("adjust_hue", over_rows(lambda im: vj.image.adjust_hue(im, 0.25), [3, 2, 4, 4, 3])),
    Case("adjust_saturation",
         over_rows(lambda im: vj.image.adjust_saturation(im, 0.1), [3, 2, 4, 4, 3])),
]


@pytest.mark.parametrize("case", params(NN_CASES))
def test_nn_case_vectorizes(case):
    case.check()


@dataclasses.dataclass(frozen=True)
class Pool:
    op: Callable
    input_shape: list
    window: list
    strides: list
    data_format: str
    second_order: bool  # also the gradient of the gradient with respect to its seed


POOLS = {
    "avg_pool": Pool(vj.nn.avg_pool, [3, 2, 12, 12, 3], [1, 3, 3, 1], [1, 2, 2, 1], "NHWC",
                     False),
    "avg_pool3d": Pool(vj.nn.avg_pool3d, [5, 3, 7, 6, 6, 5], [1, 2, 2, 2, 1], [1, 2, 2, 2, 1],
                       "NDHWC", False),
    "max_pool": Pool(vj.nn.max_pool, [3, 2, 12, 12, 3], [1, 3, 3, 1], [1, 2, 2, 1], "NHWC",
                     True),
    "max_pool3d": Pool(vj.nn.max_pool3d, [3, 3, 2, 12, 12, 3], [1, 1, 3, 3, 1],
                       [1, 1, 2, 2, 1], "NDHWC", True),
}


@pytest.mark.parametrize("name", list(POOLS))
def test_pooling_and_its_gradients_vectorize(name):
    pool = POOLS[name]
    x = draw(pool.input_shape)
    tape = persistent_tape(x)

    def body(i):
        with tape:
            row = vj.gather(x, i)
            pooled = pool.op(row, pool.window, strides=pool.strides, padding="VALID",
                             data_format=pool.data_format)
            if not pool.second_order:
                return pooled, tape.gradient(half_sum_of_squares(pooled), row)
            ones = vj.ones_like(pooled)
            tape.watch(ones)
            # the l2 loss gradient under a seed of ones (TF), written with a seed of the right
            # shape (see the module docstring)
            grad = tape.gradient(pooled, row, output_gradients=pooled * ones)
        return pooled, grad, tape.gradient(grad, ones)
    assert_pfor_matches_loop(body, 3)


@pytest.mark.parametrize("training", BOOLS, ids=["training", "inference"])
def test_fused_batch_norm_and_its_gradients_vectorize(training):
    x, scale, offset = draw([3, 1, 5, 5, 2]), draw([2]), draw([2])
    mean, variance = (None, None) if training else (draw([2]), draw([2]))
    tape = persistent_tape(x, scale, offset)

    def body(i):
        with tape:
            row = vj.gather(x, i)
            results = list(vj.nn.fused_batch_norm(
                row, scale, offset, mean=mean, variance=variance, epsilon=0.01,
                data_format="NHWC", is_training=training))
            if not training:  # TF compares only the normalized values in inference
                results[1:3] = [vj.constant(0.0), vj.constant(0.0)]
            loss = half_sum_of_squares(results[0])
        if not training:
            return results + [vj.constant(0.0)] * 3
        return results + tape.gradient(loss, [row, scale, offset])
    assert_pfor_matches_loop(body, 3)


def test_softmax_cross_entropy_and_its_gradient_vectorize():
    logits, weights = draw([3, 2, 4]), draw([3, 2, 4])
    labels = weights / vj.reduce_sum(weights, axis=[2], keepdims=True)  # distributions
    tape = persistent_tape(logits)

    def body(i):
        with tape:
            row = vj.gather(logits, i)
            per_example = vj.nn.softmax_cross_entropy_with_logits(labels=vj.gather(labels, i),
                                                                  logits=row)
            total = vj.reduce_sum(per_example)
        return per_example, tape.gradient(total, row)
    assert_pfor_matches_loop(body, 3)


@pytest.mark.parametrize("value_varies, bias_varies", [(True, True), (True, False),
                                                       (False, True)],
                         ids=["both_vary", "value_varies", "bias_varies"])
@pytest.mark.parametrize("data_format", ["NCHW", "NHWC"])
def test_bias_add_and_its_gradient_vectorize(data_format, value_varies, bias_varies):
    value = draw(stacked((3, 4, 5, 6), value_varies))
    bias = draw(stacked((4 if data_format == "NCHW" else 6,), bias_varies))  # the channels
    tape = persistent_tape(bias)

    def body(i):
        with tape:
            biased = vj.nn.bias_add(at(value, i, value_varies), at(bias, i, bias_varies),
                                    data_format=data_format)
            loss = vj.reduce_sum(biased * biased)
        return biased, tape.gradient(loss, bias)
    assert_pfor_matches_loop(body, 2)


# == random draws ==========================================================================
@pytest.mark.parametrize("sample", [
    pytest.param(lambda _: vj.random.uniform([3]), id="uniform"),
    pytest.param(lambda _: vj.random.uniform([3], maxval=1, dtype=vj.int32), id="uniform_int"),
    pytest.param(lambda _: vj.random.normal([3]), id="normal"),
])
def test_random_draws_have_the_loop_shape_and_follow_the_seed(sample):
    # pfor and the loop draw different numbers: compare shapes and dtypes (as TF does)
    vectorized = pfor(sample, 5, fallback_to_while_loop=False)
    looped = np.stack([sample(vj.constant(k)).numpy() for k in range(5)])
    assert vectorized.shape == looped.shape == (5, 3)
    assert vectorized.dtype == looped.dtype
    if looped.dtype.kind == "i":  # integers drawn from [0, 1)
        np.testing.assert_array_equal(vectorized.numpy(), np.zeros((5, 3)))
    repeats = []
    for _ in range(2):
        vj.random.set_seed(7)
        repeats.append(pfor(sample, 5, fallback_to_while_loop=False).numpy())
    np.testing.assert_array_equal(repeats[0], repeats[1])


# == control flow: while loops, scans, conds, functions, switch_case =======================
WHILE_BODIES = {
    "invariant_loop_plus_the_index":
        lambda i: vj.while_loop(lambda k: k < 4, lambda k: k + 1, [0])[0] + i,
    "invariant_loop": lambda _: vj.while_loop(lambda k: k < 4, lambda k: k + 1, [0]),
    "random_draws_in_the_loop": lambda _: vj.while_loop(
        lambda k, acc: k < 4, lambda k, acc: (k + 1, acc + vj.random.uniform([])), [0, 0.0])[0],
    "index_in_the_loop_body": lambda i: vj.while_loop(
        lambda k, acc: k < 4, lambda k, acc: (k + 1, acc + i), [0, 0]),
    # an invariant input made variant in the loop body, and inputs passed through
    "inputs_turning_variant": lambda i: vj.while_loop(
        lambda k, *_: k < i, lambda k, a, b, c, d: (k + 1, a + i, b + a, c, d),
        [0, vj.constant(0), vj.constant(1), i, vj.constant(2)]),
    "shape_invariants": lambda i: vj.while_loop(
        lambda k, *_: k < 4, lambda k, a, b: (k + 1, a + i, b + 1),
        [0, vj.constant([0, 1]), vj.constant([2, 3])], shape_invariants=[None, [2], [2]]),
}


@pytest.mark.parametrize("name", list(WHILE_BODIES))
def test_while_loop_in_the_body_vectorizes(name):
    assert_pfor_matches_loop(WHILE_BODIES[name], 3)


def test_while_loop_adding_a_variable_vectorizes():
    v = vj.Variable(5.0)
    totals = assert_pfor_matches_loop(
        lambda _: vj.while_loop(lambda k, acc: k < 4, lambda k, acc: (k + 1, acc + v),
                                [0, 0.0])[1], 3)
    np.testing.assert_array_equal(totals.numpy(), [20.0] * 3)


def test_while_loop_with_a_trip_count_per_example_vectorizes():
    x = draw([3, 5])
    trips = vj.constant([4, 0, 2])

    def body(i):
        row, limit = vj.gather(x, i), vj.gather(trips, i)
        return vj.while_loop(lambda k, _: k < limit,
                             lambda k, acc: (k + 1, acc + vj.gather(row, k)), [0, 0.0])
    counted = assert_pfor_matches_loop(body, 3)
    xs = x.numpy()
    np.testing.assert_allclose(counted[1].numpy(), [xs[0, :4].sum(), 0.0, xs[2, :2].sum()])


def test_jacobian_through_a_while_loop_is_a_matrix_power():
    x, y = draw((1, 3)), draw((3, 3))
    with vj.GradientTape(persistent=True) as tape:
        tape.watch(x)
        # four steps: x @ y @ y @ y @ y
        _, product = vj.while_loop(lambda k, _: k < 4,
                                   lambda k, acc: (k + 1, vj.matmul(acc, y)), [0, x])

        def gradient_of_column(i):
            return vj.reshape(tape.gradient(vj.gather(product, i, axis=1), x), [-1])
        vectorized = pfor(gradient_of_column, 3, fallback_to_while_loop=False)
        looped = for_loop(gradient_of_column, 3)
    np.testing.assert_allclose(vectorized.numpy(), looped.numpy(), rtol=1e-12)
    np.testing.assert_allclose(vectorized.numpy(), np.linalg.matrix_power(y.numpy(), 4).T,
                               rtol=1e-12)


SCAN_DATA = np.random.default_rng(42).standard_normal(3)


def test_scan_under_vectorized_map_has_the_numerical_jacobian():
    def squared_distances(x):
        return vj.reduce_sum(vj.scan(lambda _, d: (x - d) ** 2, elems=vj.constant(SCAN_DATA),
                                     initializer=vj.constant(0.0)))
    x = vj.Variable(vj.ones([2]))
    with vj.GradientTape() as tape:
        y = vectorized_map(squared_distances, x)
    analytic = tape.jacobian(y, x).numpy()
    numerical = vj.testing.numerical_jacobian(lambda v: vectorized_map(squared_distances, v),
                                              x.numpy())
    np.testing.assert_allclose(analytic, numerical, rtol=1e-2)


def test_scan_reading_a_variable_has_one_gradient_per_iteration():
    v = vj.Variable(vj.range(10, dtype=vj.float64))

    def body(_):
        return vj.scan(lambda _, k: vj.gather(v, k), elems=vj.range(v.shape[0]),
                       initializer=0.0)
    with vj.GradientTape() as tape:
        result = pfor(body, 2)
    # each of the two iterations reads every element once
    np.testing.assert_allclose(tape.gradient(result, v).numpy(), [2.0] * 10)


def cond_around(inner=None):
    """(x, y) -> inner(x, y) if y > 0 else (x + 1, y)."""
    inner = inner or (lambda x, y: (x, y))
    return lambda x, y: vj.cond(y > 0, lambda: inner(x, y), lambda: (x + 1.0, y))


def while_around(inner=None):
    """(x, y) -> (x + the sum of the first y entries of inner(x, y)[0], y)."""
    inner = inner or (lambda x, y: (x, y))

    def step(x, y):
        _, total = vj.while_loop(lambda k, _: k < y,
                                 lambda k, acc: (k + 1, acc + vj.gather(inner(x, y)[0], k)),
                                 [0, x])
        return total, y
    return step


NESTINGS = {"while_in_cond": lambda: cond_around(while_around()),
            "cond_in_while": lambda: while_around(cond_around()),
            "while_in_while": lambda: while_around(while_around()),
            "cond_in_cond": lambda: cond_around(cond_around())}


@pytest.mark.parametrize("nesting", list(NESTINGS))
def test_nested_cond_and_while_vectorize(nesting):
    step = NESTINGS[nesting]()
    x = draw([5, 5])
    y = vj.constant([4, -1, 2, -2, 2])  # both branches, and loops that do not run
    assert_pfor_matches_loop(lambda i: step(vj.gather(x, i), vj.gather(y, i)), 5)


ONE_TO_FIVE = [1, 2, 3, 4, 5.0]


@pytest.mark.parametrize("threshold, invariant_predicate", [(2.5, False), (6.0, False),
                                                           (0.5, True)],
                         ids=["predicate_varies", "one_branch_taken", "predicate_invariant"])
def test_cond_in_a_function_vectorizes(threshold, invariant_predicate):
    coin = draw([]) if invariant_predicate else None

    @vj.function
    def body(i):
        v = vj.gather(ONE_TO_FIVE, i)
        predicate = coin < threshold if invariant_predicate else v < threshold
        # both branches mix loop-variant and loop-invariant outputs
        return vj.cond(predicate, lambda: (threshold - v, threshold, 1.0, 2.0),
                       lambda: (v - threshold, 0.0, threshold, 3.0))
    assert_pfor_matches_loop(body, 5)


def test_cond_reading_a_variable_vectorizes():
    z = vj.Variable(5.0)

    @vj.function
    def body(i):
        v = vj.gather(ONE_TO_FIVE, i)
        return vj.cond(v < 2.5, lambda: z - v, lambda: z + v)
    picked = assert_pfor_matches_loop(body, 5)
    np.testing.assert_allclose(picked.numpy(), [4.0, 3.0, 8.0, 9.0, 10.0])


def square_plus_one():
    @vj.function
    def f(x):
        return vj.square(x) + 1
    return f


def sum_of_squares_calling_a_function():
    @vj.function
    def inner(x):
        return vj.square(x)

    @vj.function
    def outer(y):
        return vj.reduce_sum(inner(y)) + 2
    return outer


def sum_defining_a_function_inside():
    @vj.function
    def outer(y):
        @vj.function
        def inner(x):
            return vj.square(x) + 1
        return vj.reduce_sum(inner(y)) + 2
    return outer


@pytest.mark.parametrize("build, shape", [(square_plus_one, [4]),
                                          (sum_of_squares_calling_a_function, [4, 2]),
                                          (sum_defining_a_function_inside, [4, 2])],
                         ids=["simple", "nested_calls", "nested_definition"])
def test_function_called_in_the_body_vectorizes(build, shape):
    f, z = build(), draw(shape)
    assert_pfor_matches_loop(lambda i: f(vj.gather(z, i)), 4)


def test_python_loop_over_a_tensor_bound_in_the_body():
    def body(x):
        for _ in range(vj.constant(3)):  # TF needs autograph for this loop
            pass
        return vj.square(x)

    @vj.function
    def traced():
        return pfor(body, 4, fallback_to_while_loop=False)
    np.testing.assert_array_equal(traced().numpy(), [0, 1, 4, 9])
    assert_pfor_matches_loop(body, 4)


@pytest.mark.parametrize("reads_variable", BOOLS, ids=["reads_a_variable", "pure"])
def test_gradient_of_a_function_in_the_body_vectorizes(reads_variable):
    z = draw([4, 2])
    shift = vj.Variable(z[0]) if reads_variable else None

    @vj.function
    def f(x):
        return vj.square(x) + shift + 1 if reads_variable else vj.square(x) + 1

    def body(i):
        z_row = vj.gather(z, i)
        with vj.GradientTape() as tape:
            tape.watch(z_row)
            out = f(z_row)
        return out, tape.gradient(out, z_row)
    result = assert_pfor_matches_loop(body, 4)
    np.testing.assert_allclose(result[1].numpy(), 2 * z.numpy(), rtol=1e-12)  # d/dz z^2 + c


def test_switch_case_on_the_mapped_value():
    base = vj.constant(10)
    branch = vj.constant([1, 0, 0, 0, 2, 1, 0, 2, 0, 1])
    chosen = vectorized_map(
        lambda k: vj.switch_case(k, [lambda: base, lambda: base + 1, lambda: base + 2]), branch,
        fallback_to_while_loop=False)
    np.testing.assert_array_equal(chosen.numpy(), 10 + branch.numpy())  # branch k adds k


def test_switch_case_on_an_invariant_index_in_a_function():
    which = vj.constant(1)

    @vj.function
    def shifted(v):
        return vj.switch_case(which, [lambda: v + 1, lambda: v + 2])
    values = vj.constant([0, 1, 1, 0, 1, 0, 1, 0, 0])
    result = vectorized_map(shifted, values, fallback_to_while_loop=False)
    np.testing.assert_array_equal(result.numpy(), values.numpy() + 2)  # branch 1 adds 2


# == nests and variables ===================================================================
@dataclasses.dataclass
class Particle:
    """A dataclass nest standing in for TF's Particle CompositeTensor."""
    mass: object
    velocity: object


@pytest.mark.parametrize("parallel_iterations", [None, 3])
def test_dataclass_returned_by_the_body_is_stacked(parallel_iterations):
    speeds = draw([10])
    particles = pfor(lambda i: Particle(mass=4.0, velocity=vj.gather(speeds, i)), 10,
                     parallel_iterations=parallel_iterations)
    np.testing.assert_array_equal(particles.mass.numpy(), np.full(10, 4.0))
    np.testing.assert_array_equal(particles.velocity.numpy(), speeds.numpy())


def test_vectorized_map_slices_every_dataclass_field():
    values = [1.0, 2.0, 3.0, 4.0, 5.0]
    particles = Particle(mass=vj.constant(values), velocity=vj.constant(values))
    momenta = vectorized_map(lambda p: p.mass * p.velocity, particles)
    np.testing.assert_array_equal(momenta.numpy(), np.square(values))


def test_variable_created_by_the_first_call_only():
    created = []
    weights = vj.ones((2, 3), dtype=vj.float32)

    def f(z):
        if not created:
            created.append(vj.Variable(lambda: weights, name="a"))
        return vj.matmul(z, created[0] / 16)
    products = vectorized_map(f, vj.ones((3, 2, 2), dtype=vj.float32))
    np.testing.assert_allclose(products.numpy(), np.full((3, 2, 3), 2 / 16))


def test_vectorized_map_over_a_variable():
    v = vj.Variable([1, 2])
    np.testing.assert_array_equal(vectorized_map(lambda t: t + 1, v).numpy(), [2, 3])
