"""vj.random: normal, uniform, set_seed (shapes, dtypes, statistics, seeding, errors)."""
import numpy as np
import pytest

import vecjac as vj


@pytest.fixture(autouse=True)
def _reset_global_seed():
    vj.random.set_seed(None)
    yield
    vj.random.set_seed(None)


@pytest.mark.parametrize("fn", [vj.random.normal, vj.random.uniform])
def test_shape_and_dtype(fn):
    x = fn((2, 3))
    assert isinstance(x, vj.Tensor) and x.shape == (2, 3) and x.dtype == np.float64
    assert fn([4], dtype=vj.float32).dtype == np.float32
    assert fn((), dtype="float32").shape == ()
    assert fn((0, 2)).shape == (0, 2)


def test_normal_statistics():
    x = vj.random.normal((200000,), mean=2.0, stddev=3.0, seed=7).numpy()
    # standard errors: 3 / sqrt(n) for the mean, about 3 / sqrt(2n) for the std
    assert abs(x.mean() - 2.0) < 5 * 3 / np.sqrt(x.size)
    assert abs(x.std() - 3.0) < 5 * 3 / np.sqrt(2 * x.size)


def test_normal_with_array_parameters():
    mean = np.array([0.0, 100.0, -100.0])
    x = vj.random.normal((5000, 3), mean=mean, stddev=np.array([1.0, 2.0, 0.0]), seed=1)
    m = x.numpy().mean(0)
    np.testing.assert_allclose(m, mean, atol=0.2)
    assert np.all(x.numpy()[:, 2] == -100.0)


def test_uniform_range_and_statistics():
    x = vj.random.uniform((100000,), minval=-2.0, maxval=3.0, seed=3).numpy()
    assert x.min() >= -2.0 and x.max() < 3.0
    assert abs(x.mean() - 0.5) < 5 * 5 / np.sqrt(12 * x.size)
    y = vj.random.uniform((1000,), seed=3, dtype=vj.float32).numpy()
    assert y.min() >= 0 and y.max() < 1


def test_uniform_integers():
    x = vj.random.uniform((5000,), minval=-3, maxval=4, dtype=vj.int32, seed=0)
    assert x.dtype == np.int32
    assert set(np.unique(x.numpy()).tolist()) == set(range(-3, 4))


def test_set_seed_makes_sequences_reproducible():
    vj.random.set_seed(1234)
    first = [vj.random.normal((3,)).numpy(), vj.random.uniform((2,)).numpy(),
             vj.random.normal((3,), seed=5).numpy(), vj.random.normal((3,), seed=5).numpy()]
    vj.random.set_seed(1234)
    again = [vj.random.normal((3,)).numpy(), vj.random.uniform((2,)).numpy(),
             vj.random.normal((3,), seed=5).numpy(), vj.random.normal((3,), seed=5).numpy()]
    for a, b in zip(first, again):
        np.testing.assert_array_equal(a, b)
    # successive calls (with or without an op seed) give new values
    assert not np.array_equal(first[0], vj.random.normal((3,)).numpy())
    assert not np.array_equal(first[2], first[3])
    # a different global seed gives different values for the same op seed
    vj.random.set_seed(99)
    assert not np.array_equal(first[2], vj.random.normal((3,), seed=5).numpy())


def test_op_seed_without_global_seed_is_reproducible_per_program():
    a = vj.random.uniform((4,), seed=11).numpy()
    b = vj.random.uniform((4,), seed=11).numpy()
    vj.random.set_seed(None)  # resets the per-op-seed counters, as a new program would
    np.testing.assert_array_equal(vj.random.uniform((4,), seed=11).numpy(), a)
    assert not np.array_equal(a, b)


def test_unseeded_calls_differ():
    assert not np.array_equal(vj.random.normal((8,)).numpy(), vj.random.normal((8,)).numpy())


def test_plain_results_are_not_recorded_tensor_parameters_are():
    x = vj.constant(1.0)
    with vj.GradientTape() as tape:
        tape.watch(x)
        y = vj.random.normal((3,), seed=2) + x
    assert tape.gradient(y, x).numpy() == 3.0
    mean, std = vj.Variable(1.0), vj.Variable(2.0)
    with vj.GradientTape() as tape:
        z = vj.random.normal((4,), mean=mean, stddev=std, seed=4)
    vj.random.set_seed(None)
    sample = vj.random.normal((4,), seed=4).numpy()  # the same draw, from the same seed
    np.testing.assert_allclose(z.numpy(), 1.0 + 2.0 * sample)
    gm, gs = tape.gradient(z, [mean, std])
    assert gm.numpy() == 4.0 and np.isclose(gs.numpy(), sample.sum())
    lo = vj.Variable(0.5)
    with vj.GradientTape() as tape:
        u = vj.random.uniform((4,), minval=lo, maxval=2.0, seed=4)
    np.testing.assert_allclose(tape.gradient(u, lo).numpy(), np.sum(1 - (u.numpy() - 0.5) / 1.5))


def test_tensor_parameters_vary_over_pfor():
    means = np.array([0.0, 10.0, 20.0])
    out = vj.vectorize.pfor(lambda i: vj.random.normal((2,), mean=vj.gather(means, i),
                                                        stddev=0.0), 3)
    np.testing.assert_array_equal(out.numpy(), np.repeat(means[:, None], 2, axis=1))


@pytest.mark.parametrize("call,err,match", [
    (lambda: vj.random.normal((2, -1)), ValueError, "normal: shape has a negative"),
    (lambda: vj.random.normal((2.5,)), TypeError, "normal: shape"),
    (lambda: vj.random.normal((2,), dtype=vj.int32), TypeError, "normal: dtype must be float"),
    (lambda: vj.random.normal((2,), dtype="nonsense"), TypeError, "normal: dtype"),
    (lambda: vj.random.normal((2,), mean=np.ones(3)), ValueError, "normal: mean of shape"),
    (lambda: vj.random.normal((2,), seed=1.5), TypeError, "normal: seed"),
    (lambda: vj.random.normal((2,), seed=-1), ValueError, "normal: seed"),
    (lambda: vj.random.uniform((2,), dtype=vj.int64), ValueError,
     "uniform: maxval must be given"),
    (lambda: vj.random.uniform((2,), 5, 5, dtype=vj.int64), ValueError,
     "uniform: need minval < maxval"),
    (lambda: vj.random.uniform((2,), 0.5, 5, dtype=vj.int64), TypeError,
     "uniform: for integer dtype"),
    (lambda: vj.random.uniform((2,), maxval=np.ones(4)), ValueError, "uniform: maxval"),
    (lambda: vj.random.uniform((2,), dtype=vj.bool), TypeError, "uniform: dtype"),
    (lambda: vj.random.set_seed("x"), TypeError, "set_seed: seed"),
    (lambda: vj.random.set_seed(-3), ValueError, "set_seed: seed"),
])
def test_bad_inputs(call, err, match):
    with pytest.raises(err, match=match):
        call()
