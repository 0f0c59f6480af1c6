"""vj.function's inputs (issue 25, items 2, 3 and 11): NumPy arguments are copied as eager
vecjac copies them, ndarray subclasses are read as arrays at call time, Python floats
are keyed exactly, generator functions are refused. Expected values: the eager call."""
import numpy as np
import pytest

import vecjac as vj


def test_results_never_alias_the_callers_array():
    f = vj.function(lambda x: vj.reshape(x, [-1]))
    g = vj.function(lambda x: x[1:])
    a = np.arange(4.0)
    for _ in range(3):  # the trace, then replays
        r, s = f(a), g(a)
        a[1] = 100.0
        assert r.numpy()[1] == 1.0 and s.numpy()[0] == 1.0
        a[1] = 1.0


def test_a_tape_around_a_call_records_a_copy():
    w = vj.Variable(np.array([1.0, 2.0, 3.0]))
    fn = vj.function(lambda w, c: vj.reduce_sum(w * c))
    for _ in range(2):
        buf = np.array([1.0, 2.0, 3.0])
        with vj.GradientTape() as tape:
            y = fn(w, buf)
        buf[:] = 0.0  # the caller reuses its buffer before asking for the gradient
        np.testing.assert_array_equal(tape.gradient(y, w).numpy(), [1.0, 2.0, 3.0])


@pytest.mark.parametrize("make", [
    lambda v: np.ma.masked_array(v),
    lambda v: v.view(type("UserArray", (np.ndarray,), {})),
])
def test_ndarray_subclasses_are_read_at_call_time(make):
    f = vj.function(lambda x: vj.reduce_sum(x) * 2.0)
    a = make(np.array([1.0, 2.0, 3.0]))
    assert float(f(a)) == 12.0
    a[:] = [10.0, 10.0, 10.0]  # in place: the same object, new values
    assert float(f(a)) == 60.0


def test_memmap_arguments_are_read_at_call_time(tmp_path):
    m = np.memmap(tmp_path / "x.dat", dtype=np.float64, mode="w+", shape=(3,))
    m[:] = [1.0, 2.0, 3.0]
    f = vj.function(lambda x: vj.reduce_sum(x * x))
    assert float(f(m)) == 14.0
    m[:] = [0.0, 0.0, 2.0]
    assert float(f(m)) == 4.0


@pytest.mark.parametrize("zero", [-0.0, np.float64(-0.0), np.float32(-0.0)])
def test_negative_zero_is_its_own_key(zero):
    f = vj.function(lambda x, s: x / s)
    with np.errstate(divide="ignore"):
        assert float(f(np.ones(1), 0.0)[0]) == np.inf
        assert float(f(np.ones(1), zero)[0]) == -np.inf


def test_generator_functions_are_refused():
    def gen(x):
        yield x * 2.0
    with pytest.raises(TypeError, match="generator function"):
        vj.function(gen)
