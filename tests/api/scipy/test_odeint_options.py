"""odeint's adjoint and forward-sensitivity integrations take only the options that
apply to them (issue 25, item 7): h0 and tcrit gave a gradient of exactly 0. Checked
against the closed form of exponential decay, in both modes."""
import warnings

import numpy as np
import pytest

import vecjac as vj


def decay(y, t, k):
    return -k * y


@pytest.mark.parametrize("options", [dict(h0=1e-3), dict(tcrit=[2.0]), dict(hmax=0.05),
                                     dict(atol=[1e-10, 1e-11], rtol=1e-10)],
                         ids=["h0", "tcrit", "hmax", "per-component atol"])
def test_options_reach_only_the_integrations_they_apply_to(options):
    y0 = np.array([1.0, 2.0])
    tolerances = {"rtol": 1e-10, "atol": 1e-12, **options}
    f = lambda k: vj.scipy.integrate.odeint(decay, y0, [0.0, 0.5, 1.0], args=(k,),
                                           **tolerances)[2, 1]
    exact = -2.0 * np.exp(-0.5)  # d/dk 2 exp(-k t) at t = 1, k = 0.5
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # SciPy's "Illegal input" warning fails the test
        assert abs(float(vj.grad(f)(np.array(0.5))) - exact) < 1e-6
        assert abs(float(vj.jacfwd(f)(np.array(0.5))) - exact) < 1e-6
