"""The pfor API (options, loop counts, vectorized_map, reductions across iterations), random
draws, nests and variables: cases from TensorFlow's pfor test-suite (sources and differences:
tests/conformance/tf_pfor_support.py), vectorized by vecjac and checked against the loop."""
import dataclasses
import functools

import numpy as np
import pytest

import vecjac as vj
from tests.conformance.tf_pfor_support import assert_pfor_matches_loop, draw
from vecjac.vectorize import for_loop, pfor, vectorized_map


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
