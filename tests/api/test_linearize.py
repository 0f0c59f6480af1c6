"""vj.linearize evaluates f once and returns a linear function of the tangent, fixed at
the point (issue 25, item 6; JAX's jax.linearize). Expected values: closed forms."""
import numpy as np

import vecjac as vj


def test_random_draws_are_fixed_and_f_jvp_is_linear():
    vj.random.set_seed(3)
    calls = []

    def f(x):
        calls.append(1)
        return vj.sin(x) * vj.random.normal([2], dtype=vj.float64)
    x = np.array([0.3, 1.0])
    y, f_jvp = vj.linearize(f, x)
    noise = y.numpy() / np.sin(x)  # the one draw
    t = np.array([1.0, -2.0])
    first = f_jvp(t).numpy()
    np.testing.assert_allclose(first, np.cos(x) * noise * t, rtol=1e-13)
    np.testing.assert_allclose(f_jvp(3.0 * t).numpy(), 3.0 * first, rtol=1e-13)
    np.testing.assert_array_equal(f_jvp(t).numpy(), first)
    assert len(calls) == 1


def test_later_changes_do_not_move_the_point():
    w = vj.Variable(np.array([1.0, 2.0]))
    c = np.array([1.0, 1.0])
    y, f_jvp = vj.linearize(lambda x: x * w ** 2 + c * x ** 2, np.array([3.0, 4.0]))
    expected = np.array([1.0, 4.0]) + 2 * np.array([3.0, 4.0])
    w.assign([5.0, 5.0])
    c[:] = 0.0
    np.testing.assert_allclose(f_jvp(np.ones(2)).numpy(), expected)


def test_nests_aux_and_unconnected_outputs():
    f = lambda x, z: ({"a": x * z, "b": vj.reduce_sum(x), "c": vj.constant(2.0)}, "aux")
    y, f_jvp, aux = vj.linearize(f, np.array([1.0, 2.0]), np.array([3.0, 4.0]),
                                 has_aux=True)
    out = f_jvp(np.array([1.0, 0.0]), np.array([0.0, 1.0]))
    np.testing.assert_allclose(out["a"].numpy(), [3.0, 2.0])
    np.testing.assert_allclose(out["b"].numpy(), 1.0)
    np.testing.assert_allclose(out["c"].numpy(), 0.0)
    assert aux == "aux"
