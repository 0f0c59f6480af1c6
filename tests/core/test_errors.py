"""Values leaving vecjac are loud (vecjac/_src/core/errors.py): every idiom that turns a Tensor into
a plain number raises inside functional transforms and pfor, warns under a recording tape
or accumulator (once per call site, with the line), and stays quiet outside transforms
and for the explicit t.numpy()."""
import math
import warnings

import numpy as np
import pytest

import vecjac as vj

P = np.array([1.0, 2.0])


def _buffer(p):
    out = np.zeros(2)
    out[0] = p[0] * 2  # assignment into a preallocated ndarray
    out[1] = p[1] ** 2
    return vj.constant(out)


IDIOMS = {
    "np.array of tensors": lambda p: vj.constant(np.array([p[0] * 2, p[1] ** 2])),
    "ndarray buffer": _buffer,
    "np.asarray inside f": lambda p: vj.constant(np.asarray(p) * 2),
    "float()": lambda p: float(p[1]) * p[0],
    "int()": lambda p: vj.constant(float(int(p[1] * 3.0))) * p[0],
    "complex()": lambda p: vj.constant(complex(p[0]).real) * p[1],
    "math.exp": lambda p: math.exp(p[0]) * p[1],
    "np.r_": lambda p: vj.constant(np.r_[p[0], p[1]]),
    "np.sum of a list": lambda p: vj.constant(np.sum([p[0], p[1]])) * p[0],
}


def _scipy_idioms():
    scipy_stats = pytest.importorskip("scipy.stats")
    scipy_integrate = pytest.importorskip("scipy.integrate")
    return {
        "scipy.stats.norm.logpdf": lambda p: vj.constant(scipy_stats.norm.logpdf(p)),
        "scipy.integrate.solve_ivp": lambda p: vj.constant(scipy_integrate.solve_ivp(
            lambda t, y: -p[0] * y, (0, 1), [1.0]).y[0, -1]) * p[1],
    }


def _assert_loud(excinfo):
    """The error, or the cause NumPy chained to its own error, explains the cut."""
    err = excinfo.value
    text = str(err) + " " + str(err.__cause__ or err.__context__ or "")
    assert "being differentiated" in text and "test_errors.py" in text, text


@pytest.mark.parametrize("name", sorted(IDIOMS))
@pytest.mark.parametrize("transform", ["jacobian", "jacfwd", "grad", "hessian", "vjp"])
def test_every_idiom_raises_inside_functional_transforms(name, transform):
    f = IDIOMS[name]
    call = {"jacobian": lambda: vj.jacobian(f)(P), "jacfwd": lambda: vj.jacfwd(f)(P),
            "grad": lambda: vj.grad(lambda p: vj.reduce_sum(f(p)))(P),
            "hessian": lambda: vj.hessian(lambda p: vj.reduce_sum(f(p)))(P),
            "vjp": lambda: vj.vjp(f, P)}[transform]
    with pytest.raises((TypeError, ValueError)) as excinfo:
        call()
    _assert_loud(excinfo)


def test_scipy_functions_that_convert_raise():
    for name, f in _scipy_idioms().items():
        with pytest.raises((TypeError, ValueError)) as excinfo:
            vj.jacobian(f)(P)
        _assert_loud(excinfo)


@pytest.mark.parametrize("name", sorted(IDIOMS))
def test_every_idiom_warns_under_a_tape_and_an_accumulator(name):
    p = vj.constant(P)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with vj.GradientTape() as tape:
            tape.watch(p)
            IDIOMS[name](p)
        with vj.autodiff.ForwardAccumulator(p, vj.ones(2)):
            IDIOMS[name](p)
    messages = [str(w.message) for w in caught
                if issubclass(w.category, vj.NotDifferentiableWarning)]
    assert any("GradientTape" in m and "test_errors.py" in m for m in messages), messages
    assert any("ForwardAccumulator" in m for m in messages), messages


def test_warning_once_per_call_site_with_the_default_filter():
    x = vj.constant(3.0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        with vj.GradientTape() as tape:
            tape.watch(x)
            for _ in range(5):
                float(x)  # one call site
            float(x * 2)  # another
    lines = {str(w.message).split(", at ")[1].split(":")[1] for w in caught}
    assert len(caught) == 2 and len(lines) == 2


def test_policy_switch_global_and_block():
    x = vj.constant(3.0)
    with vj.GradientTape() as tape:
        tape.watch(x)
        with vj.conversion_policy("raise"):
            with pytest.raises(TypeError, match="GradientTape follows"):
                float(x)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            with vj.conversion_policy("ignore"):
                assert float(x) == 3.0
            vj.set_conversion_policy("ignore")
            try:
                assert float(x) == 3.0
            finally:
                vj.set_conversion_policy("warn")
    with pytest.raises(ValueError, match="policy must be one of"):
        vj.set_conversion_policy("sometimes")


def test_quiet_outside_transforms_and_for_numpy():
    x = vj.constant(P)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert float(x[0]) == 1.0 and np.asarray(x).sum() == 3.0 and math.exp(x[0]) > 2
        with vj.GradientTape() as tape:
            tape.watch(x)
            y = x * 2
            assert y.numpy().sum() == 6.0  # the explicit way out
            unrelated = vj.constant(5.0)
            assert float(unrelated) == 5.0  # not followed by the tape
        assert float(y[0]) == 2.0  # the tape has stopped recording


def test_stacked_values_raise_with_help():
    def body(i):
        x = vj.cast(i, vj.float64)
        float(x)
    with pytest.raises(TypeError, match="loop-variant"):
        vj.vectorize.pfor(body, 3)
    with pytest.raises(TypeError, match="loop-variant"):
        vj.vectorize.pfor(lambda i: vj.constant(np.asarray(vj.cast(i, vj.float64))), 3)


def test_variables_are_read_when_converted():
    v = vj.Variable([1.0, 2.0])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with vj.GradientTape():
            np.asarray(v)
    assert any(issubclass(w.category, vj.NotDifferentiableWarning) for w in caught)
    arr = np.asarray(v)
    with pytest.raises(ValueError, match="read-only"):
        arr[0] = 5.0  # writing into the conversion cannot change the Variable
    assert v.numpy()[0] == 1.0


def test_functional_transform_of_an_independent_output_warns():
    with pytest.warns(vj.NotDifferentiableWarning, match="does not depend"):
        g = vj.grad(lambda x: vj.constant(2.0) * 1.0)(P)
    np.testing.assert_array_equal(g.numpy(), [0.0, 0.0])
    with pytest.warns(vj.NotDifferentiableWarning, match="does not depend"):
        vj.jacobian(lambda x: vj.ones(3), mode="fwd")(P)


def test_integer_arrays_of_differentiated_values_pass():
    # np.int64(t) / np.asarray(t, int): integers carry no derivative in any convention
    # (autograd's test_cast_to_int indexes with them), so the transforms let them pass
    def f(p):
        picks = np.int64(vj.floor(p * 0.0) + np.array([1.0, 0.0]))  # [1, 0], from p
        assert picks.dtype == np.int64
        return p[picks] ** 2 * np.array([1.0, 3.0])
    expected = np.diag([2 * P[0] * 3.0, 2 * P[1]])[::-1]  # d f_i / d p_j
    for jac in (vj.jacobian(f), vj.jacfwd(f)):
        np.testing.assert_allclose(jac(P).numpy(), expected)
    with pytest.raises(TypeError, match="being differentiated"):  # floats still refused
        vj.grad(lambda p: vj.reduce_sum(vj.constant(np.asarray(p, np.float64)) * p))(P)
    # vj.function guards the integers it read: a change re-traces, never a stale value
    g = vj.function(lambda p: p[np.asarray(p[0] > 0, np.int64)])
    assert float(g(np.array([1.0, 5.0]))) == 5.0
    assert float(g(np.array([-1.0, 5.0]))) == -1.0
