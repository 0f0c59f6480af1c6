"""The checkers must catch wrong rules: a wrong gradient, a wrong second derivative and a
wrong converter each make them fail."""
import numpy as np
import pytest

import vecjac as vj
from vecjac.testing import check_grads, check_pfor, numerical_jacobian

X = np.array([0.3, -0.8, 1.4])


@vj.custom_gradient
def wrong_first(x):
    return vj.sin(x), lambda dy: dy * vj.sin(x)  # should be cos


@vj.custom_gradient
def wrong_second(x):
    # first derivative right in value, but computed from a stopped x: its own derivative
    # (the second derivative of sin) comes out as zero instead of -sin
    return vj.sin(x), lambda dy: dy * vj.cos(vj.stop_gradient(x))


def test_check_grads_passes_on_correct_rules():
    check_grads(lambda x: vj.sin(x) * x, [X], order=3)


def test_check_grads_catches_a_wrong_gradient():
    with pytest.raises(AssertionError, match="order 1 w.r.t. argument 0"):
        check_grads(wrong_first, [X], order=1)


def test_check_grads_catches_a_wrong_second_derivative():
    check_grads(wrong_second, [X], order=1)  # first order is right
    with pytest.raises(AssertionError, match="order 2"):
        check_grads(wrong_second, [X], order=2)


def test_check_grads_names_the_argument():
    with pytest.raises(AssertionError, match="argument 1"):
        check_grads(lambda a, b: a * wrong_first(b), [X, X], order=1)


def test_check_grads_validates():
    for bad in (("sideways",), "fwd", (), None):
        with pytest.raises(ValueError, match="modes"):
            check_grads(vj.sin, [X], modes=bad)
    with pytest.raises(TypeError, match="floating"):
        check_grads(vj.sin, [np.array([1, 2])])


# correct gradient, wrong forward rule: only forward mode can see it
WRONG_JVP = vj.defop("TestWrongJvp", forward=np.sin,
                     gradient=lambda e, g: g * vj.cos(e.inputs[0]),
                     jvp=lambda e, t: t * vj.sin(e.inputs[0]))


def test_check_grads_catches_a_wrong_jvp_in_forward_mode_only():
    check_grads(lambda x: WRONG_JVP(x), [X], modes=("rev",))
    with pytest.raises(AssertionError, match="forward-mode derivative of order 1"):
        check_grads(lambda x: WRONG_JVP(x), [X], modes=("fwd",))


def test_check_grads_catches_a_wrong_second_order_jvp():
    # first-order JVP right (t * cos x), but written with an op whose own JVP is wrong
    wrong_cos = vj.defop("TestWrongCosJvp", forward=np.cos,
                         gradient=lambda e, g: -g * vj.sin(e.inputs[0]),
                         jvp=lambda e, t: t * vj.sin(e.inputs[0]))
    op = vj.defop("TestSinViaWrongCos", forward=np.sin,
                  gradient=lambda e, g: g * wrong_cos(e.inputs[0]),
                  jvp=lambda e, t: t * wrong_cos(e.inputs[0]))
    check_grads(lambda x: op(x), [X], order=1, modes=("fwd",))
    with pytest.raises(AssertionError, match="forward-mode derivative of order 2"):
        check_grads(lambda x: op(x), [X], order=2, modes=("fwd",))


def _wrong_converter(op, cx, x):
    return vj.reverse(x, [0]) if hasattr(vj, "reverse") else x[::-1]  # mixes iterations


WRONG_CONVERTER = vj.defop("TestWrongConverter", forward=lambda x: x * 2.0,
                           gradient=lambda e, g: g * 2.0, converter=_wrong_converter)


def test_check_pfor_catches_a_wrong_converter():
    data = vj.constant(np.arange(4.0))
    check_pfor(lambda i: vj.gather(data, i) * 2.0, 4)
    with pytest.raises(AssertionError, match="pfor != loop"):
        check_pfor(lambda i: WRONG_CONVERTER(vj.gather(data, i)), 4)


def test_numerical_jacobian_closed_form():
    j = numerical_jacobian(lambda v: np.array([v[0] * v[1], np.sin(v[1])]), np.array([2.0, 0.5]))
    np.testing.assert_allclose(j, [[0.5, 2.0], [0.0, np.cos(0.5)]], rtol=1e-8)


def test_check_grads_accepts_a_constant_output_in_both_modes():
    c = np.ones((3, 2))
    vj.testing.check_grads(lambda x: c, [np.ones((3, 2))], modes=("fwd", "rev"))
