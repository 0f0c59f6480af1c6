"""vj.scipy.signal (vecjac/_src/api/scipy/signal.py) against scipy.signal: convolve's
values in every mode and method, integer inputs, and its derivatives against finite
differences. Gradients, JVPs, second order and pfor of the op itself are the registry's
(samples in vecjac/_src/ops/scipy/signal.py).
"""
import numpy as np
import pytest
import scipy.signal as ssig

import vecjac as vj
from vecjac.testing import check_grads, numerical_jacobian

RNG = np.random.default_rng(3)

CONVOLUTIONS = [(RNG.standard_normal(7), RNG.standard_normal(3)),
                (RNG.standard_normal(3), RNG.standard_normal(6)),
                (RNG.standard_normal((4, 5)), RNG.standard_normal((2, 3))),
                (RNG.standard_normal((3, 2)), RNG.standard_normal((2, 4))),
                (RNG.standard_normal((2, 3, 4)), RNG.standard_normal((2, 2, 2)))]


@pytest.mark.parametrize("mode", ["full", "valid", "same"])
@pytest.mark.parametrize("method", ["auto", "direct", "fft"])
def test_convolve_matches_scipy(mode, method):
    for in1, in2 in CONVOLUTIONS:
        try:
            expected = ssig.convolve(in1, in2, mode=mode, method=method)
        except ValueError:  # 'valid' with neither input the larger one on every axis
            with pytest.raises(ValueError, match="convolve: for 'valid' mode"):
                vj.scipy.signal.convolve(in1, in2, mode=mode, method=method)
            continue
        got = vj.scipy.signal.convolve(in1, in2, mode=mode, method=method)
        np.testing.assert_allclose(got.numpy(), expected, rtol=1e-10, atol=1e-12)
    ints = vj.scipy.signal.convolve(np.arange(5), np.array([1, -1]), mode=mode, method=method)
    assert ints.dtype == np.int64
    np.testing.assert_array_equal(ints.numpy(), ssig.convolve(np.arange(5), [1, -1], mode=mode,
                                                              method=method))


@pytest.mark.parametrize("mode", ["full", "valid", "same"])
def test_convolve_derivatives(mode):
    for in1, in2 in (CONVOLUTIONS[0], CONVOLUTIONS[1], CONVOLUTIONS[2], CONVOLUTIONS[4]):
        check_grads(lambda a, b: vj.scipy.signal.convolve(a, b, mode=mode), [in1, in2])
    in1, in2 = CONVOLUTIONS[2]
    t = vj.constant(in2)
    with vj.GradientTape() as tape:  # pfor over the convolution's backward pass
        tape.watch(t)
        y = vj.scipy.signal.convolve(in1, t, mode=mode)
    expected = numerical_jacobian(lambda v: ssig.convolve(in1, v, mode=mode), in2)
    np.testing.assert_allclose(tape.jacobian(y, t).numpy(), expected, rtol=1e-6, atol=1e-8)
