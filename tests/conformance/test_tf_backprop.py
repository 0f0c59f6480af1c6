"""TensorFlow's tape tests, tensorflow/python/eager/backprop_test.py (classes BackpropTest,
JacobianTest, BatchJacobianTest), ported to vecjac: `tf.` -> `vj.` must give the same
numbers and behaviour.

TF's internal helpers become public vecjac calls: gradients_function and implicit_grad
-> GradientTape, val_and_grad_function -> vj.value_and_grad, make_vjp -> vj.vjp,
embedding_lookup -> vj.gather, foldl -> vj.while_loop, defun -> vj.function. TF's
float32 constants are float64 here unless the case is about dtypes. Expected values are
the numbers TF asserts, closed forms, finite differences, or the plain loop
(experimental_use_pfor=False) against pfor. A few JacobianTest cases of newer TF
versions (foldl, cond inside a function, empty targets) are ported too.

Skipped (cannot apply to eager NumPy-backed vecjac):
- testGradientInsideLoop, testUnknownShapes, testNameScope: graph mode (ops.Graph,
  placeholders, sessions, op names).
- testZerosCacheDoesntLeakAcrossGraphs: graphs; its eager numbers are ported below.
- testGPU, testGPUImplicitGrad, testTensorCopyGPU2CPU2GPU, testTensorCopyCPU2GPU2CPU:
  GPU devices.
- testTapeGradientStringTarget, testTapeNoOpGradientStringSourceAndTarget,
  testTapeNoOpGradientWithMultiTargetMultiSourceIncludeString: string tensors.
- testWatchComposite: SparseTensor composites.
- testGetAttrType, testGetAttrList, testMakeAttrType, testMakeAttrTypeList,
  testMakeAttrShape, testMakeAttrShapeList: pywrap op-attribute internals.
- testInvalidRecordOperationMessage: tape_lib.record_operation internals.
- testImplicitGradOverEmbeddingLookup: IndexedSlices and a v1 optimizer; its dense
  gradient and SGD step are ported below.
- AggregateIndexedSlicesGradientsTest (5 cases): IndexedSlices internals.
- The memory checks of the decorators (assert_no_new_tensors, MemoryChecker): CPython
  refcount internals of TF; the computations they wrap are ported.
"""
import functools

import numpy as np
import pytest

import vecjac as vj


def c(x, dtype=np.float64):
    return vj.constant(np.asarray(x, dtype=dtype))


def num(t):
    return None if t is None else np.asarray(t.numpy() if hasattr(t, "numpy") else t)


def fd_grad(f, x, eps=1e-6):
    """Central finite differences of scalar numpy function f at float64 array x."""
    x = np.array(x, dtype=np.float64)
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = eps
        g[i] = (f(x + e) - f(x - e)) / (2 * eps)
    return g


def foldl(fn, elems):
    """TF's foldl without an initializer, as a vj.while_loop over the first axis."""
    n = elems.shape[0]
    _, acc = vj.while_loop(lambda i, a: i < n, lambda i, a: (i + 1, fn(a, elems[i])),
                           [vj.constant(1), elems[0]])
    return acc


IGNORE_DTYPE_WARNINGS = pytest.mark.filterwarnings("ignore:.*dtype of the")


# == BackpropTest: gradients of ops ========================================================
def test_aggregate_gradients_of_repeated_gathers():
    x = np.random.default_rng(0).random((4, 2))
    pairs = ([0, 1], [2, 3], [1, 3])
    xt = c(x)
    with vj.GradientTape() as tape:
        tape.watch(xt)
        g1, g2, g3 = (vj.gather(xt, c(i, np.int64)) for i in pairs)
        y = g1 * g2 * g3
    a, b, d = (x[i] for i in pairs)
    expected = np.zeros_like(x)
    np.add.at(expected, pairs[0], b * d)
    np.add.at(expected, pairs[1], a * d)
    np.add.at(expected, pairs[2], a * b)
    np.testing.assert_allclose(num(tape.gradient(y, xt)), expected)


def test_aggregate_gradients_of_gather_and_dense_sum():
    x = np.random.default_rng(1).random((4, 2)).astype(np.float32)
    xt = c(x, np.float32)
    with vj.GradientTape() as tape:
        tape.watch(xt)
        y = vj.gather(xt, c([0, 1], np.int64)) * vj.reduce_sum(xt * c(2.0, np.float32))
    expected = np.full_like(x, 2 * x[:2].sum())
    expected[:2] += 2 * x.sum()
    g = tape.gradient(y, xt)
    assert g.dtype == np.float32
    np.testing.assert_allclose(num(g), expected, rtol=1e-5)


def test_gradient_through_variable_value():
    x = vj.Variable(c(1.0), name="x")
    with vj.GradientTape() as tape:
        y = vj.add(vj.add(x.value(), c(2.0)), c(3.0))
    assert float(tape.gradient(y, x)) == 1.0


@pytest.mark.parametrize("decorator", [vj.function, lambda f: f], ids=["function", "eager"])
def test_no_op_behaviour_is_consistent(decorator):
    @decorator
    def f(x):
        x1 = vj.identity(x)
        x2 = vj.add(x, 0)
        x3 = vj.subtract(x, 0)
        x4 = vj.multiply(x, 1)
        with vj.GradientTape() as t:
            t.watch([x, x1, x2, x3, x4])
            loss = x * 2. + x1 * 3. + x2 * 3. + x3 * 3. + x4 * 3.
        return t.gradient(loss, [x, x1, x2, x3, x4])

    np.testing.assert_allclose([float(g) for g in f(c(10.))], [2., 3., 3., 3., 3.])


@pytest.mark.parametrize("x0, expected", [(5., 1.), (50., 100.)])
def test_where_gradient(x0, expected):
    x = c(x0)
    with vj.GradientTape() as tape:
        tape.watch(x)
        y = vj.where(x < 10, x, x * x)
    assert float(tape.gradient(y, x)) == expected


def test_two_targets():
    with vj.GradientTape() as t:
        x, y = c(3.0), c(2.0)
        t.watch([x, y])
        xx, yy = 2 * x, 3 * y
    dx, dy = t.gradient([xx, yy], [x, y])
    assert (float(dx), float(dy)) == (2.0, 3.0)


def test_custom_gradient_returning_no_gradients_raises():
    @vj.custom_gradient
    def identity(x):
        return x, lambda _: []  # wrong: one gradient is due

    x = vj.Variable(1.0)
    with vj.GradientTape() as t:
        y = identity(x)
    with pytest.raises(ValueError):
        t.gradient(y, [x])


def test_output_gradient_weights_a_target_that_is_a_source():
    with vj.GradientTape() as t:
        x, y = c(3.0), c(2.0)
        t.watch([x, y])
        loss = x * y
    dx, = t.gradient([loss, x], [x], output_gradients=[1.0, 2.0])
    assert float(dx) == 4.0


def test_output_gradients_none_entry_means_ones():
    # backprop.py: output_gradients entries may be None (the default seed of ones)
    with vj.GradientTape() as t:
        x, y = c(3.0), c(2.0)
        t.watch([x, y])
        loss = x * y
    dx, = t.gradient([loss, x], [x], output_gradients=[None, 2.0])
    assert float(dx) == 4.0


def test_dy_of_identity_function():
    x = c(1.)
    with vj.GradientTape() as t:
        t.watch(x)
        y = x
    assert float(t.gradient(y, x, output_gradients=2.)) == 2.


@IGNORE_DTYPE_WARNINGS
def test_gradient_of_integer_tensor_is_none():
    x = vj.constant(1)
    with vj.GradientTape() as t:
        t.watch(x)
        y = x + x
    assert t.gradient(y, x) is None


def test_error_raised_in_custom_gradient_propagates():
    @vj.custom_gradient
    def f(x):
        def grad(_):
            raise RuntimeError("x")
        return x, grad

    x = c(1.0)
    with vj.GradientTape() as t:
        t.watch(x)
        y = f(x)
    with pytest.raises(RuntimeError):
        t.gradient(y, x)


def test_gradient_computed_inside_custom_gradient_forward():
    @vj.custom_gradient
    def f(x):
        with vj.GradientTape() as t:
            t.watch(x)
            sq = x * x
        return t.gradient(sq, x), lambda dy: 2 * dy

    assert float(f(c(1.0))) == 2.0


def test_gather_gradient_of_repeated_index_and_sgd_step():
    init = np.random.default_rng(2).random((10, 6)).astype(np.float32)
    embedding = vj.Variable(init, name="embedding")
    ids = vj.ones((8,), vj.int64)
    with vj.GradientTape() as t:
        y = c(1.0, np.float32) - vj.gather(embedding, ids)
    grad = t.gradient(y, embedding)
    expected = np.zeros_like(init)
    expected[1] = -8.0
    np.testing.assert_array_equal(num(grad), expected)
    embedding.assign_sub(0.1 * grad)
    np.testing.assert_allclose(num(embedding), init - 0.1 * expected, rtol=1e-6)


def test_watched_variables_in_construction_order():
    v0, v1 = vj.Variable(1.0), vj.Variable(2.0)
    with vj.GradientTape() as t:
        y = v1 * v1 + v0 * v0
    watched = t.watched_variables()
    assert watched[0] is v0 and watched[1] is v1
    g0, g1 = t.gradient(y, list(watched))
    assert (float(g0), float(g1)) == (2.0, 4.0)


# -- no-op and multi-target gradients -------------------------------------------------------
def test_no_op_gradient():
    x = c(3.0)
    with vj.GradientTape() as t:
        t.watch(x)
        y = x
    assert float(t.gradient(y, x)) == 1.0


def test_identity_gradient_is_identity():
    x = c(3.0)
    with vj.GradientTape() as t:
        t.watch(x)
        y = vj.identity(x)
    assert float(t.gradient(y, x)) == 1.0


def test_gather_of_function_output():
    f = vj.function(lambda x: x + 1)
    with vj.GradientTape() as t:
        x = c([1.0])
        t.watch(x)
        y = vj.gather(f(x), [0])
    np.testing.assert_array_equal(num(t.gradient(y, x)), [1.0])


def test_multi_target_where_one_is_the_source():
    x = c(2.0)
    with vj.GradientTape() as t:
        t.watch(x)
        y = x * x
    assert float(t.gradient([x, y], x)) == 5.0


def test_no_op_multi_target_all_the_source():
    x = c(3.0)
    with vj.GradientTape() as t:
        t.watch(x)
        y = x
    assert float(t.gradient([y, y], x)) == 2.0


def test_no_op_multi_target_multi_source():
    x, y = c(3.0), c(5.0)
    with vj.GradientTape() as t:
        t.watch(x)
        t.watch(y)
        z = y * y
    assert [float(g) for g in t.gradient([x, y, z], [x, y])] == [1.0, 11.0]


def test_variable_read_value_is_identity():
    v0 = vj.Variable(1.0)
    with vj.GradientTape() as t:
        y = v0.read_value()
    assert float(t.gradient(y, v0)) == 1.0


def test_no_op_gradient_2_by_2():
    a = c(np.full((2, 2), 2.0))
    with vj.GradientTape(persistent=True) as tape:
        tape.watch(a)
    np.testing.assert_array_equal(num(tape.gradient(a, [a])[0]), np.ones((2, 2)))
    np.testing.assert_array_equal(num(tape.gradient([a, a], [a])[0]), np.full((2, 2), 2.0))


# -- stop_recording, reset, watched variables -----------------------------------------------
def test_stop_recording_on_variable_created_in_tape():
    with vj.GradientTape() as t:
        x = vj.Variable(1.0)
        with t.stop_recording():
            y = x * x
    assert t.gradient(y, x) is None


def test_stop_then_start_recording():
    with vj.GradientTape(persistent=True) as t:
        x = vj.Variable(1.0)
        x2 = x * 2
        with t.stop_recording():
            y = x2 * x2
        z = x2 * x2
    assert t.gradient(y, x2) is None
    assert float(t.gradient(z, x2)) == 4.0  # 2.0 if x * 2 were not recorded


def test_reset_forgets_earlier_ops():
    with vj.GradientTape() as t:
        v = vj.Variable(1.0)
        loss = v * v
        t.reset()
        loss += v * v
    assert float(t.gradient(loss, v)) == 2.0


def test_python_max_of_variables():
    x = [vj.Variable(2.), vj.Variable(3.), vj.Variable(5.)]
    with vj.GradientTape() as t:
        f = max(x)
    grad = t.gradient(f, x)
    assert float(num(f)) == 5.
    assert grad[0] is None and grad[1] is None and float(grad[2]) == 1.0


def test_automatically_watched_variables_and_reset():
    with vj.GradientTape() as t:
        assert len(t.watched_variables()) == 0
        v = vj.Variable(1.0)
        loss = v * v
        assert list(t.watched_variables()) == [v]
        t.reset()
        assert len(t.watched_variables()) == 0
        loss += v * v
        assert list(t.watched_variables()) == [v]


def test_explicitly_watched_variables_and_reset():
    with vj.GradientTape() as t:
        assert len(t.watched_variables()) == 0
        v = vj.Variable(1.0)
        t.watch(v)
        assert list(t.watched_variables()) == [v]
        t.reset()
        assert len(t.watched_variables()) == 0
        t.watch(v)
        assert list(t.watched_variables()) == [v]


def test_selectively_watch_variables():
    x1, x2 = vj.Variable(1.0), vj.Variable(1.0)
    with vj.GradientTape(watch_accessed_variables=False) as tape:
        tape.watch(x2)
        y = x1 ** 2
        z = x2 ** 3
    assert tape.watched_variables() == (x2,)
    dy, dz = tape.gradient([y, z], [x1, x2])
    assert dy is None and float(dz) == 3.0


def test_watched_variables_after_non_persistent_gradient_call():
    with vj.GradientTape() as tape:
        x = vj.Variable(1.0)
        tape.watch(x)
    tape.gradient(x, x)
    assert tape.watched_variables() == (x,)


def test_watched_variables_only_from_last_tape():
    with vj.GradientTape() as tape:
        tape.watch(vj.Variable(1.0))
    with vj.GradientTape() as tape:
        z = vj.Variable(2.0)
        tape.watch(z)
    tape.gradient(z, z)
    assert tape.watched_variables() == (z,)


def test_watched_variables_respect_reset():
    with vj.GradientTape() as tape:
        x = vj.Variable(1.0)
        tape.watch(x)
        assert tape.watched_variables() == (x,)
        tape.reset()
        z = vj.Variable(2.0)
        tape.watch(z)
        assert tape.watched_variables() == (z,)
    tape.gradient(z, z)
    assert tape.watched_variables() == (z,)


def test_watch_ndarray_raises_value_error():
    with pytest.raises(ValueError, match="ndarray"):
        vj.GradientTape().watch(np.array(1.))


# -- softmax cross entropy, second order -----------------------------------------------------
def test_softmax_cross_entropy_gradient():
    logits, labels = c([[0.0, 0.0]]), c([[1.0, 0.0]])
    with vj.GradientTape() as t:
        t.watch(logits)
        loss = vj.reduce_mean(
            vj.nn.softmax_cross_entropy_with_logits(logits=logits, labels=labels),
            vj.constant([0]))
    np.testing.assert_array_equal(num(t.gradient(loss, logits)), [[-0.5, 0.5]])


def test_second_gradient_of_softmax_cross_entropy():
    f = c([[0.1]])
    with vj.GradientTape() as outer:
        outer.watch(f)
        with vj.GradientTape() as inner:
            inner.watch(f)
            first = vj.reduce_sum(vj.nn.softmax_cross_entropy_with_logits(
                labels=c([[0.0]]), logits=f), [0])
        second = vj.reduce_sum(inner.gradient(first, f), [0])
    np.testing.assert_array_equal(num(outer.gradient(second, f)), [[0.0]])


def test_gradient_within_tape_block():
    v1 = vj.Variable(1.)
    for persistent in (False, True):
        with vj.GradientTape(persistent=persistent) as t:
            loss = 2 * v1
            grad = t.gradient(loss, v1)
        assert float(grad) == 2.0


def test_nested_self_context_raises_value_error():
    with vj.GradientTape() as t:
        with pytest.raises(ValueError):
            with t:
                pass


def test_watching_is_tape_local():
    x1 = vj.Variable(2.0, trainable=False)
    x2 = vj.Variable(2.0, trainable=False)
    with vj.GradientTape() as tape1:
        with vj.GradientTape() as tape2:
            tape1.watch(x1)
            tape2.watch([x1, x2])
            y = x1 ** 3
            z = x2 ** 2
            dy, dz = tape2.gradient([y, z], [x1, x2])
        d2y, d2z = tape1.gradient([dy, dz], [x1, x2])
    assert (float(dy), float(dz)) == (12.0, 4.0)
    assert float(d2y) == 12.0 and d2z is None


def test_vjp():
    result, vjp = vj.vjp(lambda x: x * x, c(3.0))
    assert float(result) == 9.0
    assert float(vjp(2.0)[0]) == 12.0
    assert float(vjp(c(2.0))[0]) == 12.0  # callable more than once (TF's persistent)


def test_grad_grad():
    assert float(vj.grad(vj.grad(lambda x: x * x))(c(3.0))) == 2.0
    assert float(vj.grad(vj.grad(vj.exp))(c(0.0))) == 1.0


@IGNORE_DTYPE_WARNINGS
@pytest.mark.parametrize("wrap", [vj.stop_gradient, lambda i: i], ids=["stop_gradient", "raw"])
def test_gradient_of_argmax_is_none(wrap):
    x = c([0.0])
    with vj.GradientTape() as t:
        t.watch(x)
        i = wrap(vj.argmax(x))
    assert t.gradient(i, x) is None


def test_gradient_of_adds_with_constants():
    x = c(1.0)
    with vj.GradientTape() as t:
        t.watch(x)
        y = vj.add(vj.add(x, c(2.0)), c(3.0))
    assert float(t.gradient(y, x)) == 1.0


def test_grad_of_all_arguments():
    x, y = c(1.0), c(2.0)
    dx, dy = vj.grad(lambda a, b: a * b, argnums=(0, 1))(x, y)
    assert (float(dx), float(dy)) == (2.0, 1.0)


def test_unconnected_variable_read_gives_none():
    v = vj.Variable(1.0, name="testUnconnectedNone")
    with vj.GradientTape() as t:
        v.read_value()
        y = c(1.0)
    assert t.gradient(y, v) is None


# -- GradientTape structure, reentry, persistence, higher order -----------------------------
def test_reenter_tape_context():
    g = vj.GradientTape()
    with g:
        x = c(3.0)
        g.watch(x)
        y = 2 * x
    with g:
        z = 2 * y
    assert [float(v) for v in g.gradient(target=z, sources=[x])] == [4.0]


def test_repeated_source():
    with vj.GradientTape() as g:
        x = c(3.0)
        g.watch(x)
        y = 2 * x
    assert [float(v) for v in g.gradient(target=y, sources=[x, x])] == [2.0, 2.0]


def test_persistent_repeated_source():
    with vj.GradientTape(persistent=True) as g:
        x, y = c(3.0), c(5.0)
        g.watch(x)
        g.watch(y)
        z = x * x + x * y
    assert [float(v) for v in g.gradient(target=z, sources=[x, x])] == [11.0, 11.0]
    assert [float(v) for v in g.gradient(target=z, sources=[y, x])] == [3.0, 11.0]


def test_gradient_structure_follows_sources():
    with vj.GradientTape(persistent=True) as g:
        x1, x2, x3 = c(3.0), c(3.1), c(3.2)
        g.watch(x1)
        g.watch(x2)
        g.watch(x3)
        y = x1 + 2 * x2 + 3 * x3

    def values(s):
        return vj.nest.map_structure(float, g.gradient(y, s))

    assert values(x1) == 1.0
    assert values((x1,)) == (1.0,)
    assert values((x1, x2)) == (1.0, 2.0)
    assert values([(x1, x2), (x2, x3)]) == [(1.0, 2.0), (2.0, 3.0)]
    assert values((x1, x2, [x1, x3])) == (1.0, 2.0, [1.0, 3.0])
    assert values([x1, {"x2": x2, "x3": x3}]) == [1.0, {"x2": 2.0, "x3": 3.0}]


def test_inner_tape_gradient_feeds_outer_tape():
    with vj.GradientTape() as g:
        x = c(3.0)
        g.watch(x)
        y = x * x
        with vj.GradientTape() as gg:
            gg.watch(y)
            z = 2 * y
        inner_grad = gg.gradient(z, [y])[0]
        assert float(inner_grad) == 2.0
        y += inner_grad
    assert float(g.gradient(y, [x])[0]) == 6.0


def test_gradient_of_variable_wrt_other_variable_is_none():
    with vj.GradientTape() as g:
        x = vj.Variable([3.0])
        y = vj.Variable([2.0])
    assert g.gradient(x, y) is None


def test_gradient_through_cond():
    x = c(3.0)
    with vj.GradientTape() as g:
        g.watch(x)
        y = vj.cond(x < x, lambda: x, lambda: x * x)
    assert float(g.gradient(y, [x])[0]) == 6.0


def test_gradient_through_while_loop():
    i, x = vj.constant(1), c(2.)
    with vj.GradientTape() as g:
        g.watch([x])
        _, y = vj.while_loop(lambda i, _: i < 3, lambda i, x: (i + 1, x * 2), [i, x])
    assert float(num(y)) == 8.0
    assert float(g.gradient(y, [x])[0]) == 4.0


def test_non_persistent_gradient_called_twice_raises():
    with vj.GradientTape() as g:
        x = c(3.0)
        g.watch(x)
        y = x * x
        z = y * y
    g.gradient(z, [x])
    with pytest.raises(RuntimeError, match=r"GradientTape\.gradient can only be called once"):
        g.gradient(y, [x])


def test_persistent_tape():
    with vj.GradientTape(persistent=True) as g:
        x = c(3.0)
        g.watch(x)
        y = x * x
        z = y * y
    assert float(g.gradient(z, [x])[0]) == 4 * 3 * 3 * 3
    assert float(g.gradient(y, [x])[0]) == 2 * 3


def test_higher_order_gradient_on_one_persistent_tape():
    with vj.GradientTape(persistent=True) as g:
        x = c(3.0)
        g.watch(x)
        y = x ** 3
        dy_dx = g.gradient(y, x)
        d2y_dx2 = g.gradient(dy_dx, x)
    d3y_dx3 = g.gradient(d2y_dx2, x)
    assert [float(v) for v in (y, dy_dx, d2y_dx2, d3y_dx3)] == [27, 27, 18, 6]


def test_persistent_nested_tape():
    with vj.GradientTape(persistent=True) as g:
        x = c(3.0)
        g.watch(x)
        y = x * x
        with vj.GradientTape(persistent=True) as gg:
            gg.watch(y)
            z = 2 * y
        for _ in range(2):
            inner_grad = gg.gradient(z, [y])[0]
            assert float(inner_grad) == 2.0
        y += inner_grad
        del gg
    assert float(g.gradient(y, [x])[0]) == 6.0
    assert float(g.gradient(z, [x])[0]) == 12.0


def test_gradient_of_variable_product():
    v = vj.Variable(1.0, name="v")
    with vj.GradientTape() as g:
        y = v * v
    assert float(g.gradient(y, [v])[0]) == 2.0


def test_gradient_wrt_intermediate_and_input():
    x = c(3.0)
    with vj.GradientTape() as g:
        g.watch(x)
        y = x * x
        z = y * y
    dz_dx, dz_dy = g.gradient(z, [x, y])
    assert (float(dz_dx), float(dz_dy)) == (108.0, 18.0)


# -- unconnected gradients -------------------------------------------------------------------
def test_unconnected_gradients_default_none():
    x, y = c(1.0), c(3.0)
    with vj.GradientTape() as g:
        g.watch([x, y])
        z = y * 2
    assert g.gradient(z, x) is None


@pytest.mark.parametrize("make", [c, vj.Variable], ids=["tensor", "variable"])
def test_unconnected_gradients_zero(make):
    x, y = make(np.ones((2, 2))), make(3.0)
    with vj.GradientTape() as g:
        g.watch([x, y])
        z = y * 2
    dz_dx = g.gradient(z, x, unconnected_gradients="zero")
    np.testing.assert_array_equal(num(dz_dx), np.zeros((2, 2)))


def test_unknown_unconnected_gradients_value():
    x, y = c(1.0), c(1.0)
    with vj.GradientTape() as g:
        g.watch([x, y])
        z = y * 2
    with pytest.raises(ValueError, match=r"Unknown value for unconnected_gradients: 'nonsense'"):
        g.gradient(z, x, unconnected_gradients="nonsense")


def test_unconnected_gradients_zero_through_nested_functions():
    f = vj.function(lambda x: x * x)
    h = vj.function(lambda y: vj.stop_gradient(f(y)))
    x = c(1.0)
    with vj.GradientTape() as g:
        g.watch(x)
        y = h(x + 2.)
    assert float(g.gradient(y, x, unconnected_gradients="zero")) == 0.0


# -- value_and_grad and argument handling ----------------------------------------------------
def test_value_and_grad_of_all_arguments():
    val, (dx, dy) = vj.value_and_grad(lambda a, b: a * b, argnums=(0, 1))(2.0, 3.0)
    assert (float(val), float(dx), float(dy)) == (6.0, 3.0, 2.0)


def test_value_and_grad_of_one_argument():
    val, grads = vj.value_and_grad(lambda a, b: a * b, argnums=(1,))(2.0, 3.0)
    assert float(val) == 6.0 and len(grads) == 1 and float(grads[0]) == 2.0


def test_grad_of_multiply_with_python_float():
    assert float(vj.grad(lambda x: vj.multiply(x, x))(3.0)) == 6.0


def test_grad_of_varargs_function():
    assert float(vj.grad(lambda *args: args[0] * args[0])(1.0)) == 2.0


def test_grad_of_partial():
    part = functools.partial(lambda x, y: x * y, c(2.0))
    assert float(vj.grad(part)(c(1.0))) == 2.0


def test_gradient_of_tuple_output_sums_both():
    x = c(1.0)
    with vj.GradientTape() as t:
        t.watch(x)
        out = (x, 2 * x)
    assert float(t.gradient(out, x)) == 3.0


def test_exception_inside_differentiated_function_leaves_tapes_usable():
    def bad(unused_x):
        raise ValueError()

    with pytest.raises(ValueError):
        vj.grad(bad)(1.0)
    with pytest.raises(ValueError):
        with vj.GradientTape() as t:
            t.watch(c(1.0))
            bad(None)
    assert float(vj.grad(lambda x: x * x)(1.0)) == 2.0


def test_stack_of_variable_value_gradient():
    x = vj.Variable(c([1.0]), name="x")
    with vj.GradientTape() as t:
        a = vj.add(x.value(), 1.0)
        y = vj.reduce_mean(vj.stack([a, a], axis=0))
    np.testing.assert_array_equal(num(t.gradient(y, x)), [1.0])


def test_gradient_of_two_outputs():
    x = c([0.0, 1.0, 2.0])
    with vj.GradientTape() as t:
        t.watch(x)
        out = (x + 2, x * x)
    np.testing.assert_array_equal(num(t.gradient(out, x)), [1.0, 3.0, 5.0])


def test_conv2d_gradient_wrt_the_image_only():
    image, kernel = c([[[[1.0]]]]), c([[[[2.0]]]])
    with vj.GradientTape() as t:
        t.watch(image)
        y = vj.nn.conv2d(image, kernel, [1, 1, 1, 1], "SAME")
    np.testing.assert_array_equal(num(t.gradient(y, image)), [[[[2.0]]]])


@pytest.mark.parametrize("x", [c(1.), 1., c([[1.]]), [[1.]]], ids=["scalar", "float",
                                                                      "matrix", "nested_list"])
def test_same_object_for_two_arguments(x):
    # TF's gradients_function differentiates the sum of f's output
    dx, dy = vj.grad(lambda a, b: vj.reduce_sum(vj.multiply(a, b)), argnums=(0, 1))(x, x)
    expected = np.ones(np.shape(num(x) if isinstance(x, vj.Tensor) else x))
    for g in (dx, dy):  # a nested list of floats is a nest: its gradient too
        np.testing.assert_array_equal(np.asarray(vj.nest.map_structure(num, g)), expected)


def test_same_variable_for_two_arguments():
    v = vj.Variable(1., name="testSameObjectForMultipleArguments.Variable")
    dx, dy = vj.grad(vj.multiply, argnums=(0, 1))(v, v)
    assert (float(dx), float(dy)) == (1., 1.)


# -- custom gradients --------------------------------------------------------------------------
@vj.custom_gradient
def _square_plus_one_grad(x):
    return vj.square(x), lambda dr: 2 * dr * x + 1


def test_custom_gradient_of_variable_argument():
    x = vj.Variable(3., name="X")
    with vj.GradientTape() as t:
        y = _square_plus_one_grad(x)
    assert float(y) == 9.0 and float(t.gradient(y, x)) == 7.0


class _Quadratic:
    def __init__(self):
        self.a, self.b, self.c = vj.Variable(1.), vj.Variable(2.), vj.Variable(3.)

    def __call__(self, x):
        return self.a * x * x + self.b * x + self.c


def test_jacobian_inside_custom_gradient_with_variables():
    quad = _Quadratic()

    @vj.function
    def call(q, x):
        @vj.custom_gradient
        def _call():
            y = q(x)

            def grad(dy, variables=None):
                with vj.GradientTape(persistent=True) as g:
                    g.watch(variables)
                    y = q(x)
                return (), [2 * vj.reduce_sum(dy * g.jacobian(y, v)) for v in variables]

            return y, grad

        return _call()

    x = c([1., 2., 3.])
    with vj.GradientTape(persistent=True) as g:
        g.watch([quad.a, quad.b, quad.c])
        y = call(quad, x)
    assert g.gradient(y, x) is None
    ga, gb, gc = g.gradient(y, [quad.a, quad.b, quad.c])
    assert (float(ga), float(gb), float(gc)) == (28., 12., 6.)  # twice the true gradient


def test_custom_gradient_training_loop():
    @vj.custom_gradient
    def my_mul(x, y):
        return x * y, lambda dr: [dr * y, dr * x]

    x = vj.Variable(2., name="x")
    losses = []
    for _ in range(5):
        with vj.GradientTape() as t:
            loss = my_mul(2., x.read_value())
        losses.append(float(loss))
        x.assign_sub(0.25 * t.gradient(loss, x))
    assert losses == [4.0, 3., 2., 1., 0.]


def test_custom_gradient_identity():
    @vj.custom_gradient
    def my_identity(x):
        return x, lambda dresult: [2 * dresult]

    assert float(vj.grad(my_identity)(1.0)) == 2.0


def test_value_and_grad_of_function_returning_none():
    def fn(x, y):
        x * y  # noqa: B018 (forgot to return)

    # TF's message; the type is JAX's (vj.value_and_grad is the JAX-style API): TypeError
    with pytest.raises(TypeError, match="Cannot differentiate a function that returns None"):
        vj.value_and_grad(fn, argnums=(0, 1))(c(1.), c(2.))


def test_gradient_of_split_and_concat_is_stable():
    def get_grad():
        t = c(np.ones((10, 4)))
        x = c(np.full((10, 4), 2.0))
        with vj.GradientTape() as tape:
            tape.watch(x)
            x1, _ = vj.split(x, num_or_size_splits=2, axis=1)
            y = vj.concat([x1 ** 2, t], axis=1)
        return num(tape.gradient(y, x))

    expected = np.concatenate([np.full((10, 2), 4.0), np.zeros((10, 2))], axis=1)
    np.testing.assert_array_equal(get_grad(), expected)
    np.testing.assert_array_equal(get_grad(), expected)


def test_equal_constants_are_distinct_sources():
    with vj.GradientTape() as g:
        x1, x2 = c(3.0), c(3.0)
        g.watch(x1)
        g.watch(x2)
        y = x1 + x2
    assert [float(v) for v in g.gradient(target=y, sources=[x1])] == [1.0]


def test_variables_and_constants_give_the_same_gradients():
    def get_grads(a, b):
        with vj.GradientTape() as tape:
            tape.watch([a, b])
            y, z = a ** 3, b ** 2
        return [float(g) for g in tape.gradient([y, z], [a, b])]

    assert get_grads(c(2.0), c(2.0)) == [12.0, 4.0]
    assert get_grads(vj.Variable(2.0), vj.Variable(2.0)) == [12.0, 4.0]


def test_custom_gradient_of_square():
    @vj.custom_gradient
    def f(x):
        return x * x, lambda dy: [4 * dy]

    with vj.GradientTape() as t:
        x = c(1.0)
        t.watch(x)
        y = f(x)
    assert float(t.gradient(y, x)) == 4.0


def test_override_second_order_with_custom_gradient():
    @vj.custom_gradient
    def f(x):
        def first_order_grad(dz):
            @vj.custom_gradient
            def first_order_custom(unused_x):
                return -1.1, lambda ddz: -2.1 * ddz

            return dz * first_order_custom(x)

        return x + 10., first_order_grad

    x = c(1.)
    with vj.GradientTape() as outer:
        outer.watch(x)
        with vj.GradientTape() as inner:
            inner.watch(x)
            d = f(x) ** 4.
        dd = inner.gradient(d, x)
        np.testing.assert_allclose(num(dd), 4. * 11. ** 3 * -1.1)
    np.testing.assert_allclose(num(outer.gradient(dd, x)),
                               3. * 4. * 11. ** 2 * -1.1 * -1.1 + 4. * 11. ** 3 * -2.1)


def test_custom_gradient_second_order_and_transpose():
    @vj.custom_gradient
    def f(x):
        z = 2. * vj.constant(x.numpy())  # TF: tensor_util.constant_value

        def g(dz):
            @vj.custom_gradient
            def first_order(unused_x, unused_dz):
                return 2.1, lambda unused_ddz: (2.2, 3.1)

            return first_order(x, dz)

        return z, g

    with vj.GradientTape(persistent=True) as t:
        with vj.GradientTape() as tt:
            x = c(1.)
            t.watch(x)
            tt.watch(x)
            output_grad = vj.ones([], vj.float64)
            t.watch(output_grad)
            output = f(x)
            np.testing.assert_allclose(num(output), 2.)
        gc = tt.gradient(output, x, output_gradients=output_grad)
        np.testing.assert_allclose(num(gc), 2.1)
    np.testing.assert_allclose(num(t.gradient(gc, x)), 2.2)
    np.testing.assert_allclose(num(t.gradient(gc, output_grad)), 3.1)


def test_max_pool3d_gradient():
    x = c(np.arange(1, 25, dtype=np.float64).reshape(1, 3, 2, 4, 1))
    with vj.GradientTape() as t:
        t.watch(x)
        y = vj.nn.max_pool3d(x, ksize=(2, 2, 1), strides=(1, 1, 1), padding="SAME")
    # values increase in C order: each window's max is its last element (SAME pads after)
    expected = np.zeros((3, 2, 4))
    for d, h, w in np.ndindex(3, 2, 4):
        expected[min(d + 1, 2), min(h + 1, 1), w] += 1
    np.testing.assert_array_equal(num(t.gradient(y, x)).reshape(3, 2, 4), expected)


def test_recompute_grad_of_nested_functions_with_while_loop():
    inner = vj.function(lambda z: z + 1)

    @vj.function
    def middle(y):
        y, _ = vj.while_loop(lambda y, i: i < 10., lambda y, i: (inner(y), i + 1.0),
                             [y, c(0.0)])
        return y

    outer = vj.recompute_grad(vj.function(lambda x: middle(x)))
    for _ in range(3):
        x = vj.Variable(1.0, name="x")
        with vj.GradientTape() as t:
            y = outer(x)
            assert float(y) == 11.0
        assert float(t.gradient(y, x)) == 1.0


# == JacobianTest ============================================================================
def _jacobian(use_pfor):
    with vj.GradientTape(persistent=not use_pfor) as g:
        x, y = c([1., 2.]), c([3., 4.])
        g.watch(x)
        g.watch(y)
        z = x * x * y
    jac = g.jacobian(z, [x, y], experimental_use_pfor=use_pfor)
    return jac, [np.diag(2 * num(x) * num(y)), np.diag(num(x) ** 2)]


@pytest.mark.parametrize("in_function", [False, True], ids=["eager", "function"])
@pytest.mark.parametrize("use_pfor", [True, False], ids=["pfor", "loop"])
def test_jacobian(use_pfor, in_function):
    run = vj.function(lambda: _jacobian(use_pfor)) if in_function else \
        (lambda: _jacobian(use_pfor))
    jac, answer = run()
    for j, a in zip(jac, answer):
        np.testing.assert_array_equal(num(j), a)


def test_jacobian_loop_needs_persistent_tape():
    with vj.GradientTape() as g:
        x = c([1.0, 2.0])
        g.watch(x)
        y = x * x
    with pytest.raises(RuntimeError, match="persistent"):
        g.jacobian(y, x, experimental_use_pfor=False)


def test_jacobian_parallel_iterations():
    xv = np.array([[1., 2], [3, 4]])
    with vj.GradientTape(persistent=True) as g:
        x = c(xv)
        g.watch(x)
        y = vj.matmul(x, x)
    # d(XX)_ij / dX_kl = [i == k] X_lj + X_ik [j == l]
    eye = np.eye(2)
    expected = np.einsum("ik,lj->ijkl", eye, xv) + np.einsum("ik,jl->ijkl", xv, eye)
    j2 = num(g.jacobian(y, x, parallel_iterations=2))
    np.testing.assert_allclose(j2, num(g.jacobian(y, x, parallel_iterations=3)))
    np.testing.assert_allclose(j2, num(g.jacobian(y, x, parallel_iterations=3,
                                                  experimental_use_pfor=False)))
    np.testing.assert_allclose(j2, expected)


def test_nested_jacobian_then_batch_jacobian():
    x = vj.ones((10, 2), vj.float64)
    with vj.GradientTape() as g:
        g.watch(x)
        with vj.GradientTape() as gg:
            gg.watch(x)
            y = vj.reduce_sum(vj.square(x))
        dy_x = gg.jacobian(y, x)
    dy_xx = g.batch_jacobian(dy_x, x)
    np.testing.assert_allclose(num(dy_xx), [[[2., 0], [0, 2.]]] * 10)


def test_jacobian_of_gather_pfor_matches_loop():
    with vj.GradientTape(persistent=True) as g:
        inp = c(np.random.default_rng(3).random((3, 2)))
        g.watch(inp)
        output = vj.gather(inp, [0, 2])
    pfor = num(g.jacobian(output, inp, experimental_use_pfor=True))
    np.testing.assert_allclose(pfor, num(g.jacobian(output, inp, experimental_use_pfor=False)))
    expected = np.zeros((2, 2, 3, 2))
    for r, src in enumerate([0, 2]):
        for k in range(2):
            expected[r, k, src, k] = 1.0
    np.testing.assert_array_equal(pfor, expected)


def _grad(f):
    def grad_function(primal):
        with vj.GradientTape() as tape:
            tape.watch(primal)
            primal_out = f(primal)
        return tape.batch_jacobian(primal_out, primal)
    return grad_function


def test_nested_batch_jacobian_of_foldl():
    def f(x):
        return vj.reshape(foldl(lambda a, b: vj.cos(a + b), vj.transpose(x)), [1, 1])

    x = c([[1., 2.]])
    s = 3.0  # f(x) = cos(x0 + x1)
    np.testing.assert_allclose(num(f(x)), [[np.cos(s)]])
    d1 = [[[-np.sin(s), -np.sin(s)]]]
    d2 = [[[[-np.cos(s)] * 2] * 2]]
    np.testing.assert_allclose(num(_grad(f)(x)), d1)
    np.testing.assert_allclose(num(_grad(_grad(f))(x)), d2)
    np.testing.assert_allclose(num(vj.function(_grad(_grad(f)))(x)), d2)


def test_jacobian_of_foldl_in_function():
    fold_sum = vj.function(functools.partial(foldl, lambda a, b: a + b))
    for persistent, modes in ((True, (True, False)), (False, (True,))):
        for use_pfor in modes:
            x = vj.zeros([3], vj.float64)
            with vj.GradientTape(persistent=persistent) as tape:
                tape.watch(x)
                result = fold_sum(x)
            np.testing.assert_allclose(
                num(tape.jacobian(result, x, experimental_use_pfor=use_pfor)), [1., 1., 1.])


@pytest.mark.parametrize("use_pfor", [True, False], ids=["pfor", "loop"])
def test_jacobian_of_foldl_inside_function(use_pfor):
    @vj.function
    def compute_jacobian():
        x = vj.zeros([3], vj.float64)
        with vj.GradientTape(persistent=True) as tape:
            tape.watch(x)
            result = foldl(lambda a, b: a + b, x)
        return tape.jacobian(result, x, experimental_use_pfor=use_pfor)

    np.testing.assert_allclose(num(compute_jacobian()), [1., 1., 1.])


def test_jacobian_of_gradient_through_cond_in_function():
    @vj.function
    def f(x):
        return vj.cond(x > 0., lambda: x ** 3., lambda: x ** 2.)

    with vj.GradientTape(persistent=True) as tape:
        x = c(1.)
        tape.watch(x)
        y = f(x)
        grad = tape.gradient(y, x)
    assert float(grad) == 3.
    assert float(tape.jacobian(grad, x, experimental_use_pfor=False)) == 6.
    assert float(tape.jacobian(grad, x, experimental_use_pfor=True)) == 6.


def test_empty_target_jacobian_pfor_matches_loop():
    variable = vj.Variable(1.0)
    rng = np.random.default_rng(4)
    inputs = (c(rng.uniform(size=(0, 4))), c(rng.uniform(size=(0, 3))))
    with vj.GradientTape(persistent=True) as tape:
        outputs = variable * vj.cast(vj.concat(inputs, axis=-1), vj.float32)
    pfor = tape.jacobian(outputs, variable, experimental_use_pfor=True)
    loop = tape.jacobian(outputs, variable, experimental_use_pfor=False)
    assert pfor.shape == loop.shape == (0, 7)


@pytest.mark.parametrize("use_pfor", [True, False], ids=["pfor", "loop"])
def test_unconnected_jacobian(use_pfor):
    # backprop.py: each row is tape.gradient(..., unconnected_gradients); None stays None
    with vj.GradientTape(persistent=True) as g:
        x, y = c([1., 2.]), c([[3., 4., 5.]])
        g.watch([x, y])
        z = x * 2.
    jx, jy = g.jacobian(z, [x, y], experimental_use_pfor=use_pfor)
    np.testing.assert_array_equal(num(jx), 2 * np.eye(2))
    assert jy is None
    jy = g.jacobian(z, y, unconnected_gradients="zero", experimental_use_pfor=use_pfor)
    assert jy.shape == (2, 1, 3) and not num(jy).any()


# == BatchJacobianTest =======================================================================
def _batch_jacobian(use_pfor):
    with vj.GradientTape(persistent=not use_pfor) as g:
        x, y = c([[1., 2.], [3., 4.]]), c([[3., 4.], [5., 6.]])
        g.watch(x)
        z = x * x * y
    bj = g.batch_jacobian(z, x, experimental_use_pfor=use_pfor)
    xv, yv = num(x), num(y)
    return bj, np.stack([np.diag(2 * xv[0] * yv[0]), np.diag(2 * xv[1] * yv[1])])


@pytest.mark.parametrize("in_function", [False, True], ids=["eager", "function"])
@pytest.mark.parametrize("use_pfor", [True, False], ids=["pfor", "loop"])
def test_batch_jacobian(use_pfor, in_function):
    run = vj.function(lambda: _batch_jacobian(use_pfor)) if in_function else \
        (lambda: _batch_jacobian(use_pfor))
    bj, answer = run()
    np.testing.assert_array_equal(num(bj), answer)


def test_batch_jacobian_loop_needs_persistent_tape():
    with vj.GradientTape() as g:
        x = c([[1.0, 2.0]])
        g.watch(x)
        y = x * x
    with pytest.raises(RuntimeError, match="persistent"):
        g.batch_jacobian(y, x, experimental_use_pfor=False)


def test_batch_jacobian_bad_shape():
    x = c(np.random.default_rng(5).random((2, 3)))
    with vj.GradientTape() as g:
        y = vj.concat([x, x], axis=0)
    with pytest.raises(ValueError, match="Need first dimension"):
        g.batch_jacobian(y, x)


@pytest.mark.parametrize("xshape, yshape", [((2,), (2, 2)), ((2, 2), (2,))],
                         ids=["input", "output"])
def test_batch_jacobian_bad_rank(xshape, yshape):
    rng = np.random.default_rng(6)
    x = c(rng.random(xshape))
    with vj.GradientTape() as g:
        y = c(rng.random(yshape))
    with pytest.raises(ValueError, match="must have rank at least 2"):
        g.batch_jacobian(y, x)


def test_batch_jacobian_parallel_iterations():
    wv = np.array([[1., 2, 3, 4], [5, 6, 7, 8]])
    with vj.GradientTape(persistent=True) as g:
        x = c([[1., 2], [3, 4]])
        g.watch(x)
        y = vj.matmul(x, c(wv))
    b2 = num(g.batch_jacobian(y, x, parallel_iterations=2))
    np.testing.assert_allclose(b2, num(g.batch_jacobian(y, x, parallel_iterations=3)))
    np.testing.assert_allclose(b2, np.stack([wv.T, wv.T]))


@pytest.mark.parametrize("use_pfor", [True, False], ids=["pfor", "loop"])
@pytest.mark.parametrize("use_function", [True, False], ids=["function", "eager"])
def test_batch_jacobian_degenerate_shape(use_function, use_pfor):
    def f(x):
        with vj.GradientTape(persistent=True) as tape:
            tape.watch(x)
            y = x ** 2
        return tape.batch_jacobian(y, x, experimental_use_pfor=use_pfor)

    if use_function:
        f = vj.function(f)
    assert tuple(vj.shape(f(vj.zeros([1, 0], vj.float64))).numpy()) == (1, 0, 0)


@pytest.mark.parametrize("mode", ["none", "zero"])
def test_unconnected_batch_jacobian_is_zeros(mode):
    # backprop.py: a None result becomes zeros of the result shape in both modes
    with vj.GradientTape() as g:
        x = c(np.ones((2, 3)))
        g.watch(x)
        y = c(np.ones((2, 4))) * 2.
    bj = g.batch_jacobian(y, x, unconnected_gradients=mode)
    assert bj.shape == (2, 4, 3) and not num(bj).any()
