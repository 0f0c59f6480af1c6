"""GradientTape rules, one test each: watching, persistence, structures, unconnected
gradients, higher order, threads, memory and failure atomicity."""
import gc
import threading
import weakref
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import vecjac as vj


def c(x):
    return vj.constant(np.asarray(x, dtype=np.float64))


# -- watching -----------------------------------------------------------------------------
def test_watch_tensor():
    x = c(3.0)
    with vj.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    assert float(tape.gradient(y, x)) == 6.0


def test_unwatched_constant_gets_none():
    x = c(3.0)
    with vj.GradientTape() as tape:
        y = x * x
    assert tape.gradient(y, x) is None


def test_watch_variable_explicitly():
    v = vj.Variable(2.0)
    with vj.GradientTape(watch_accessed_variables=False) as tape:
        tape.watch(v)
        y = v * v * v
    assert float(tape.gradient(y, v)) == 12.0


def test_watch_nest():
    x, y, v = c(1.0), c(2.0), vj.Variable(3.0)
    with vj.GradientTape(watch_accessed_variables=False) as tape:
        tape.watch({"a": x, "b": [y, (v,)]})
        z = x * y * v
    gx, gy, gv = tape.gradient(z, [x, y, v])
    assert (float(gx), float(gy), float(gv)) == (6.0, 3.0, 2.0)


@pytest.mark.parametrize("bad", ["x", 3.0, np.ones(2), [c(1.0), object()]])
def test_watch_bad_type(bad):
    with vj.GradientTape() as tape:
        with pytest.raises(ValueError, match="GradientTape.watch: passed in object of type"):
            tape.watch(bad)


def test_watch_accessed_variables_false():
    v = vj.Variable(2.0)
    with vj.GradientTape(watch_accessed_variables=False) as tape:
        y = v * v
    assert tape.gradient(y, v) is None
    assert tape.watched_variables() == ()


def test_accessed_trainable_variables_are_watched_automatically():
    v = vj.Variable(2.0)
    with vj.GradientTape() as tape:
        y = v * v
    assert float(tape.gradient(y, v)) == 4.0


def test_non_trainable_variables_not_watched():
    v = vj.Variable(2.0, trainable=False)
    with vj.GradientTape(persistent=True) as tape:
        y = v * v
    assert tape.gradient(y, v) is None
    assert tape.watched_variables() == ()
    with vj.GradientTape() as tape:  # an explicit watch still works
        tape.watch(v)
        y = v * v
    assert float(tape.gradient(y, v)) == 4.0


def test_tape_constructor_type_errors():
    with pytest.raises(TypeError, match="persistent must be a bool"):
        vj.GradientTape(persistent="yes")
    with pytest.raises(TypeError, match="watch_accessed_variables must be a bool"):
        vj.GradientTape(watch_accessed_variables=1)


def test_entering_an_active_tape_twice():
    tape = vj.GradientTape()
    with tape:
        with pytest.raises(ValueError, match="Tape is still recording.*already-active"):
            tape.__enter__()


# -- persistence, stop_recording, reset ----------------------------------------------------
def test_non_persistent_second_call_raises():
    x = c(2.0)
    with vj.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    assert float(tape.gradient(y, x)) == 4.0
    with pytest.raises(RuntimeError, match="non-persistent GradientTape can only be used"):
        tape.gradient(y, x)


def test_persistent_allows_many_calls():
    x = c([1.0, 2.0])
    with vj.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * x
        z = vj.reduce_sum(y)
    np.testing.assert_array_equal(tape.gradient(z, x).numpy(), [2.0, 4.0])
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), [2.0, 4.0])
    np.testing.assert_array_equal(tape.jacobian(y, x).numpy(), np.diag([2.0, 4.0]))


def test_stop_recording():
    x = c(3.0)
    with vj.GradientTape() as tape:
        tape.watch(x)
        y = x * x
        with tape.stop_recording():
            z = x * 10.0   # not recorded: contributes nothing to the gradient
        w = y + z
    assert float(tape.gradient(w, x)) == 6.0
    with pytest.raises(RuntimeError, match="not recording"):
        with tape.stop_recording():
            pass


def test_reset():
    x = c(2.0)
    with vj.GradientTape() as tape:
        tape.watch(x)
        y = x * x * x
        tape.reset()      # forgets the watch and everything recorded so far
        u = y * 2.0
        tape.watch(x)
        v = x * 5.0
    assert tape.gradient([u, v], x).numpy() == 5.0


def test_watched_variables_order_and_names():
    a, b, d = (vj.Variable(1.0, name=n) for n in ("a", "b", "d"))
    with vj.GradientTape() as tape:
        y = b * d
        tape.watch(a)
        y = y * a * b  # b again: listed once
    # in order of construction, as TF (not the order of first use)
    assert [v.name for v in tape.watched_variables()] == ["a:0", "b:0", "d:0"]
    assert tape.watched_variables()[1] is b


# -- structures ----------------------------------------------------------------------------
def test_nested_sources_give_nested_result():
    x, y, z = c(1.0), c(2.0), c(3.0)
    with vj.GradientTape() as tape:
        tape.watch([x, y, z])
        out = x * y + z * z
    g = tape.gradient(out, {"first": x, "rest": [y, (z,)]})
    assert set(g) == {"first", "rest"} and isinstance(g["rest"], list)
    assert isinstance(g["rest"][1], tuple)
    assert (float(g["first"]), float(g["rest"][0]), float(g["rest"][1][0])) == (2.0, 1.0, 6.0)


def test_nested_targets_are_summed():
    x = c(2.0)
    with vj.GradientTape() as tape:
        tape.watch(x)
        targets = {"sq": x * x, "more": [x * 3.0, (vj.sin(x),)]}
    np.testing.assert_allclose(float(tape.gradient(targets, x)), 4.0 + 3.0 + np.cos(2.0))


def test_non_scalar_target_is_summed():
    x = c([[1.0, -2.0], [3.0, 0.5]])
    with vj.GradientTape() as tape:
        tape.watch(x)
        y = x * x * x
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), 3 * x.numpy() ** 2)


def test_output_gradients_weight_the_targets():
    x = c([1.0, 2.0, 3.0])
    u = np.array([0.5, -1.0, 2.0])
    with vj.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * x
        s = vj.sin(x)
    np.testing.assert_allclose(tape.gradient(y, x, output_gradients=c(u)).numpy(),
                               u * 2 * x.numpy())
    g = tape.gradient([y, s], x, output_gradients=[c(u), c(2 * u)])
    np.testing.assert_allclose(g.numpy(), u * 2 * x.numpy() + 2 * u * np.cos(x.numpy()))
    with pytest.raises(ValueError, match="output_gradients has 1 tensors, target has 2"):
        tape.gradient([y, s], x, output_gradients=[c(u)])


@pytest.mark.parametrize("mode", [vj.UnconnectedGradients.NONE, "none", "NONE"])
def test_unconnected_gradients_none(mode):
    x, y = c(1.0), c([1.0, 2.0])
    with vj.GradientTape() as tape:
        tape.watch([x, y])
        z = x * 2.0
    gx, gy = tape.gradient(z, [x, y], unconnected_gradients=mode)
    assert float(gx) == 2.0 and gy is None


@pytest.mark.parametrize("mode", [vj.UnconnectedGradients.ZERO, "zero"])
def test_unconnected_gradients_zero(mode):
    x, y = c(1.0), vj.constant(np.ones((2, 3), np.float32))
    with vj.GradientTape() as tape:
        tape.watch([x, y])
        z = x * 2.0
    gy = tape.gradient(z, y, unconnected_gradients=mode)
    assert gy.shape == (2, 3) and gy.dtype == np.float32 and not gy.numpy().any()


def test_unconnected_gradients_bad_value():
    x = c(1.0)
    with vj.GradientTape() as tape:
        tape.watch(x)
        y = x * 2.0
    with pytest.raises(ValueError, match="unconnected_gradients"):
        tape.gradient(y, x, unconnected_gradients="sometimes")


def test_integer_sources_and_targets_give_none_with_warning():
    k = vj.constant(3)
    x = c(2.0)
    with vj.GradientTape(persistent=True) as tape:
        with pytest.warns(UserWarning, match="floating"):
            tape.watch(k)
        tape.watch(x)
        y = vj.cast(k, vj.float64) * x
        n = k * 2
    with pytest.warns(UserWarning, match="source tensor must be floating"):
        gk, gx = tape.gradient(y, [k, x])
    assert gk is None and float(gx) == 3.0
    with pytest.warns(UserWarning, match="target tensor must be floating"):
        assert tape.gradient(n, x) is None


def test_variable_assign_inside_tape_stops_gradient():
    x = c(3.0)
    v = vj.Variable(0.0)
    with vj.GradientTape(persistent=True) as tape:
        tape.watch(x)
        v.assign(x * 2.0)
        y = v * v
    assert tape.gradient(y, x) is None
    assert float(tape.gradient(y, v)) == 12.0  # d(v^2)/dv at the assigned value 6


# -- several tapes ---------------------------------------------------------------------------
def test_multiple_tapes_at_once():
    x, y = c(2.0), c(5.0)
    with vj.GradientTape() as tx, vj.GradientTape() as ty:
        tx.watch(x)
        ty.watch(y)
        z = x * x * y
    assert float(tx.gradient(z, x)) == 20.0
    assert float(ty.gradient(z, y)) == 4.0


def test_nested_tapes_second_and_third_order():
    x = c(1.0)
    with vj.GradientTape() as t3:
        t3.watch(x)
        with vj.GradientTape() as t2:
            t2.watch(x)
            with vj.GradientTape() as t1:
                t1.watch(x)
                y = x * x * x
            d1 = t1.gradient(y, x)   # 3 x^2
        d2 = t2.gradient(d1, x)      # 6 x
    d3 = t3.gradient(d2, x)          # 6
    assert (float(d1), float(d2), float(d3)) == (3.0, 6.0, 6.0)
    for x0 in (-0.7, 2.5):  # the closed forms elsewhere too
        x = c(x0)
        with vj.GradientTape() as outer:
            outer.watch(x)
            with vj.GradientTape() as inner:
                inner.watch(x)
                y = vj.sin(x) * x
            d1 = inner.gradient(y, x)
        np.testing.assert_allclose(float(d1), np.cos(x0) * x0 + np.sin(x0))
        np.testing.assert_allclose(float(outer.gradient(d1, x)),
                                   2 * np.cos(x0) - x0 * np.sin(x0))


def test_gradient_of_intermediate_values():
    x = c(0.5)
    with vj.GradientTape(persistent=True) as tape:
        tape.watch(x)
        h = x * x
        y = vj.sin(h)
    np.testing.assert_allclose(float(tape.gradient(y, h)), np.cos(0.25))
    np.testing.assert_allclose(float(tape.gradient(y, x)), np.cos(0.25) * 2 * 0.5)
    assert tape.gradient(h, y) is None  # upstream of the source: unconnected


# -- threads ---------------------------------------------------------------------------------
def test_tape_is_thread_local():
    x = c(2.0)
    box = {}

    def other_thread():
        box["y"] = x * x                       # our tape must not record this
        with vj.GradientTape() as own:         # while its own tape works there
            own.watch(x)
            z = x * x * x
        box["g"] = own.gradient(z, x)
    with vj.GradientTape() as tape:
        tape.watch(x)
        t = threading.Thread(target=other_thread)
        t.start()
        t.join()
        w = x * 3.0
    assert float(box["g"]) == 12.0
    assert tape.gradient([box["y"], w], x).numpy() == 3.0


def test_threads_computing_gradients_concurrently_on_shared_variables():
    w = vj.Variable(np.linspace(-1.0, 1.0, 6).reshape(2, 3))
    b = vj.Variable(np.array([0.1, -0.2, 0.3]))
    xs = [np.random.default_rng(k).standard_normal((4, 2)) for k in range(8)]
    barrier = threading.Barrier(8)

    def grads(x, wait):
        if wait:
            barrier.wait()
        out = []
        for _ in range(20):
            with vj.GradientTape() as tape:
                loss = vj.reduce_sum(vj.tanh(vj.matmul(c(x), w) + b) ** 2)
            out = [g.numpy() for g in tape.gradient(loss, [w, b])]
        return out
    sequential = [grads(x, False) for x in xs]
    with ThreadPoolExecutor(8) as pool:
        concurrent = list(pool.map(lambda x: grads(x, True), xs))
    for s, p in zip(sequential, concurrent):
        for gs, gp in zip(s, p):
            np.testing.assert_array_equal(gs, gp)


# -- memory and failure atomicity --------------------------------------------------------------
def test_non_persistent_tape_frees_recorded_tensors():
    x = c(np.ones(1000))
    with vj.GradientTape() as tape:
        tape.watch(x)
        h = vj.sin(x) * 2.0
        y = vj.reduce_sum(h * h)
    ref = weakref.ref(h)
    g = tape.gradient(y, x)
    del h, y
    gc.collect()
    assert ref() is None
    assert g.shape == (1000,)


def test_persistent_tape_keeps_tensors_until_deleted():
    x = c(np.ones(10))
    with vj.GradientTape(persistent=True) as tape:
        tape.watch(x)
        h = vj.exp(x)
        y = vj.reduce_sum(h)
    ref = weakref.ref(h)
    tape.gradient(y, x)
    del h, y
    gc.collect()
    assert ref() is not None   # the tape may still be asked for gradients
    del tape
    gc.collect()
    assert ref() is None


def test_failing_op_leaves_tape_consistent():
    boom = vj.defop("VjTestExplodingOp", lambda a: (_ for _ in ()).throw(
        FloatingPointError("boom")), gradient=lambda e, g: g)
    x = c([1.0, 2.0])
    with vj.GradientTape() as tape:
        tape.watch(x)
        y = x * x
        with pytest.raises(FloatingPointError, match="boom"):
            boom(y)
        with pytest.raises(ValueError, match="matmul"):
            vj.matmul(vj.reshape(y, (1, 2)), c(np.ones((3, 1))))
        z = vj.reduce_sum(y * 3.0)
    np.testing.assert_allclose(tape.gradient(z, x).numpy(), 6 * x.numpy())
