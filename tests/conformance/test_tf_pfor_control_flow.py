"""Control flow: while loops, scans, conds, functions, switch_case: cases from TensorFlow's pfor test-suite (sources and differences:
tests/conformance/tf_pfor_support.py), vectorized by vecjac and checked against the loop."""
import numpy as np
import pytest

import vecjac as vj
from tests.conformance.tf_pfor_support import BOOLS, assert_pfor_matches_loop, draw
from vecjac.vectorize import for_loop, pfor, vectorized_map

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
