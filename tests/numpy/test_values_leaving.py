"""Every way a followed value leaves vecjac through NumPy is loud (issue 25, items 5 and
11): functions that write into a plain array (copyto, put, place, putmask) or return an
object array (frompyfunc, vectorize) raise inside functional transforms and warn under a
tape, as np.asarray does; an element assignment raises the TypeError itself."""
import warnings

import numpy as np
import pytest

import vecjac as vj


def _setitem(x):
    buf = np.zeros(2)
    buf[0] = x[0]
    return vj.reduce_sum(x)


WAYS_OUT = [
    ("element assignment", _setitem),
    ("np.copyto", lambda x: (np.copyto(np.zeros(2), x), vj.reduce_sum(x))[1]),
    ("np.put", lambda x: (np.put(np.zeros(2), [0, 1], x), vj.reduce_sum(x))[1]),
    ("np.place", lambda x: (np.place(np.zeros(2), np.array([True, True]), x),
                            vj.reduce_sum(x))[1]),
    ("np.putmask", lambda x: (np.putmask(np.zeros(2), np.array([True, True]), x),
                              vj.reduce_sum(x))[1]),
    ("np.frompyfunc", lambda x: (np.frompyfunc(lambda a: a * 2, 1, 1)(x),
                                 vj.reduce_sum(x))[1]),
    ("np.vectorize", lambda x: (np.vectorize(lambda a: a * 2)(x), vj.reduce_sum(x))[1]),
]


@pytest.mark.parametrize("name,f", WAYS_OUT, ids=[n for n, _ in WAYS_OUT])
def test_inside_a_functional_transform_it_is_a_type_error(name, f):
    with pytest.raises(TypeError, match="grad: .* of a value being differentiated") as info:
        vj.grad(f)(np.array([1.0, 2.0]))
    assert type(info.value) is not ValueError  # not NumPy's wrapping of it


@pytest.mark.parametrize("name,f", WAYS_OUT, ids=[n for n, _ in WAYS_OUT])
def test_under_a_tape_it_warns(name, f):
    x = vj.constant([1.0, 2.0])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with vj.GradientTape() as tape:
            tape.watch(x)
            f(x)
    assert any(issubclass(w.category, vj.NotDifferentiableWarning) for w in caught), name


def test_element_assignment_under_the_raise_policy_is_a_type_error():
    x = vj.constant([1.0, 2.0])
    with vj.conversion_policy("raise"):
        with pytest.raises(TypeError, match="float()"):
            with vj.GradientTape() as tape:
                tape.watch(x)
                _setitem(x)


def test_integer_and_bool_results_lose_nothing():
    # np.allclose / np.argmax on a followed value: no derivative to lose, no error
    g = vj.grad(lambda x: vj.reduce_sum(x) * float(np.argmax(x) + 1))(np.array([1.0, 3.0]))
    np.testing.assert_allclose(g.numpy(), [2.0, 2.0])


def test_the_warning_names_a_users_module_named_like_scipy(tmp_path, monkeypatch):
    # a user's module whose name merely starts with "scipy" is the user's code
    (tmp_path / "scipy_helpers.py").write_text(
        "import numpy as np\n\ndef leave(t):\n    return np.asarray(t) * 1.0\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import scipy_helpers
    x = vj.constant([1.0])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with vj.GradientTape() as tape:
            tape.watch(x)
            scipy_helpers.leave(x)
    messages = [str(w.message) for w in caught if issubclass(w.category,
                                                            vj.NotDifferentiableWarning)]
    assert messages and "scipy_helpers.py:4" in messages[0]
