"""vj.scipy.jac's last point is keyed by the arguments' values (issue 25, item 8): a
parameter dict mutated at the same x, and a new Tensor that reuses a freed id, give new
values. Expected values: the function itself and its dense Jacobian."""
import numpy as np

import vecjac as vj


def test_a_mutated_parameter_dict_is_a_new_point():
    f = lambda x, p: x * p["scale"]
    J = vj.scipy.jac(f)
    x, p = np.array([1.0, 2.0]), {"scale": 2.0}
    np.testing.assert_allclose(J.fun(x, p), [2.0, 4.0])
    np.testing.assert_allclose(J(x, p), 2.0 * np.eye(2))
    p["scale"] = 3.0
    np.testing.assert_allclose(J.fun(x, p), [3.0, 6.0])
    np.testing.assert_allclose(J(x, p), 3.0 * np.eye(2))


def test_a_new_tensor_with_a_reused_id_is_a_new_point():
    f = lambda x, c: x * c
    J = vj.scipy.jac(f)
    x = np.array([1.0, 2.0])
    for scale in (2.0, 3.0, 4.0):
        c = vj.constant(scale)  # the previous one is freed: its id may come back
        np.testing.assert_allclose(J.fun(x, c), scale * x)
        del c


def test_unknown_objects_are_never_reused():
    class Params:
        scale = 2.0
    f = lambda x, p: x * p.scale
    J = vj.scipy.jac(f)
    x, p = np.array([1.0, 2.0]), Params()
    np.testing.assert_allclose(J.fun(x, p), [2.0, 4.0])
    p.scale = 5.0
    np.testing.assert_allclose(J.fun(x, p), [5.0, 10.0])
