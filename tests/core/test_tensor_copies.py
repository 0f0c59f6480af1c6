"""Copies of a Tensor (issue 25, item 4): copy.copy and copy.deepcopy return the Tensor
(immutable, as TF does), so the derivative flows through; pickling a followed Tensor is a
way out, refused inside functional transforms and warned under a tape."""
import copy
import pickle

import numpy as np
import pytest

import vecjac as vj


@pytest.mark.parametrize("copier", [copy.copy, copy.deepcopy])
def test_copies_stay_connected(copier):
    f = lambda x: vj.reduce_sum(copier(x) * x ** 2)   # d/dx sum(x^3) = 3 x^2
    x = np.array([1.0, 2.0])
    np.testing.assert_allclose(vj.grad(f)(x).numpy(), 3 * x ** 2)
    np.testing.assert_allclose(vj.jacfwd(f)(x).numpy(), 3 * x ** 2)
    traced = vj.function(vj.grad(f))
    for v in (x, np.array([3.0, -1.0])):  # a replay, not a stale constant
        np.testing.assert_allclose(traced(v).numpy(), 3 * v ** 2)


def test_deepcopy_of_a_structure_shares_its_tensors():
    t = vj.constant([1.0, 2.0])
    assert copy.deepcopy({"a": [t]})["a"][0] is t


def test_pickling_a_followed_tensor_is_a_way_out():
    f = lambda x: vj.reduce_sum(pickle.loads(pickle.dumps(x)) * x)
    with pytest.raises(TypeError, match="pickling"):
        vj.grad(f)(np.array([1.0, 2.0]))
    x = vj.constant([1.0, 2.0])
    with vj.GradientTape() as tape:
        tape.watch(x)
        with pytest.warns(vj.NotDifferentiableWarning, match="pickling"):
            pickle.dumps(x * 2.0)


def test_pickling_outside_transforms_round_trips():
    t = vj.constant([1.0, 2.0])
    u = pickle.loads(pickle.dumps(t))
    np.testing.assert_array_equal(u.numpy(), t.numpy())
    assert u is not t
