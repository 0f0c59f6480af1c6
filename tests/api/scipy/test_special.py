"""vj.scipy.special against scipy.special itself.

The ops' gradients, JVPs, second derivatives, float32 and pfor are the registry's job
(samples in vecjac/_src/ops/elementwise/scipy_special.py and bessel_ops.py). Here: values against
SciPy (grids with edges, broadcasting, dtypes), first and second derivatives against
SciPy's own derivative functions (ivp, jvp, polygamma, the densities of scipy.stats),
finite differences for the compositions (logsumexp, multigammaln), the LookupError of
shape parameters, NumPy dispatch of the ufuncs, and that `import vecjac` loads no SciPy.
"""
import subprocess
import sys

import numpy as np
import pytest
import scipy.special as sc
import scipy.stats as st

import vecjac as vj
from vecjac.testing import check_grads

S = vj.scipy.special
X = np.array([0.15, 0.6, 1.3, 2.7, 6.0])          # positive arguments
R = np.array([-2.6, -1.3, -0.4, 0.2, 1.1, 3.5])    # real line (poles avoided)
U = np.array([0.02, 0.2, 0.5, 0.8, 0.97])          # (0, 1)
V = np.array([[-1.5], [0.0], [0.5], [2.0], [3.0]])  # Bessel orders, broadcast against X
INTS = np.array([[0], [1], [2], [4]])

VALUES = {  # name: arguments (broadcasting); NaN, inf and poles included where SciPy has them
    "gammaln": (np.r_[R, 0.0, -3.0, 50.0, np.inf, np.nan],),
    "digamma": (np.r_[R, 0.0, 1e-8, 80.0],), "psi": (R,),
    "polygamma": (INTS, X), "rgamma": (np.r_[R, 0.0, -2.0, 170.5],),
    "gamma": (np.r_[R, 0.0, -1.0, 171.5],), "gammasgn": (np.r_[R, -0.5, 0.0, -1.0, 200.0],),
    "beta": (X[:, None], X), "betaln": (X[:, None], np.r_[X, 1e3]),
    "betainc": (X[:, None, None], X[:, None], np.r_[0.0, U, 1.0]),
    "gammainc": (X[:, None], np.r_[0.0, X, np.inf]), "gammaincc": (X[:, None], np.r_[0.0, X]),
    "erf": (np.r_[R, 7.0, -30.0],), "erfc": (np.r_[R, 7.0, 27.0],),
    "erfinv": (np.r_[-1.0, U * 2 - 1, 1.0, 1.5],), "erfcinv": (np.r_[0.0, U * 2, 2.0],),
    "logit": (np.r_[0.0, U, 1.0],), "expit": (np.r_[R, 800.0, -800.0],),
    "log_expit": (np.r_[R, 800.0, -800.0],),
    "ndtr": (np.r_[R, -40.0, 40.0],), "log_ndtr": (np.r_[R, -40.0, -1e3, 10.0],),
    "ndtri": (np.r_[0.0, U, 1.0],), "stdtr": (X[:, None], np.r_[R, -np.inf]),
    "xlogy": (np.array([[0.0], [1.5], [-2.0]]), np.r_[0.0, X]),
    "xlog1py": (np.array([[0.0], [1.5], [-2.0]]), np.r_[-1.0, U, X]),
    "entr": (np.r_[-1.0, 0.0, U, X],),
    "i0": (R,), "i1": (R,), "i0e": (np.r_[R, 700.0],), "i1e": (np.r_[R, 700.0],),
    "iv": (V, X), "ive": (V, np.r_[X, 800.0]), "jv": (V, X), "yv": (V, X), "kv": (V, X),
    "j0": (R,), "j1": (R,), "y0": (X,), "y1": (X,),
}


@pytest.mark.parametrize("name", sorted(VALUES))
def test_values_match_scipy(name):
    args = VALUES[name]
    with np.errstate(all="ignore"):
        expected = getattr(sc, name)(*args)
        got = getattr(S, name)(*args)
    assert got.dtype == np.float64 and got.shape == expected.shape
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-13, atol=1e-300)


@pytest.mark.parametrize("name", sorted(VALUES))
def test_float32_in_float32_out(name):
    args = [np.asarray(a, np.float32) if np.asarray(a).dtype.kind == "f" else a
            for a in VALUES[name]]
    with np.errstate(all="ignore"):
        got = getattr(S, name)(*[vj.constant(a) for a in args])
        expected = getattr(sc, name)(*[np.asarray(a, np.float64) for a in args])
    assert got.dtype == np.float32
    finite = np.isfinite(expected) & (np.abs(expected) < 1e30)
    np.testing.assert_allclose(got.numpy()[finite], expected[finite], rtol=2e-5, atol=1e-6)


def test_every_public_function_has_a_value_case():
    assert set(S.__all__) == set(VALUES) | {"logsumexp", "multigammaln"}


def _derivatives(f, x):
    """Elementwise first and second derivatives of f at x (f elementwise in x)."""
    x = vj.constant(x)
    with vj.GradientTape() as outer:
        outer.watch(x)
        with vj.GradientTape() as inner:
            inner.watch(x)
            y = vj.reduce_sum(f(x))
        d1 = inner.gradient(y, x)
    return d1.numpy(), outer.gradient(d1, x, unconnected_gradients="zero").numpy()


def _pdf_deriv(pdf, x, h=1e-6):
    return (pdf(x + h) - pdf(x - h)) / (2 * h)


# name: (vecjac function of x, points, SciPy's first derivative, SciPy's second)
DERIVATIVES = {
    "gammaln": (S.gammaln, np.r_[-1.4, X], sc.psi, lambda x: sc.polygamma(1, x)),
    "digamma": (S.digamma, R, lambda x: sc.polygamma(1, x), lambda x: sc.polygamma(2, x)),
    "polygamma": (lambda x: S.polygamma(2, x), X, lambda x: sc.polygamma(3, x),
                  lambda x: sc.polygamma(4, x)),
    "gamma": (S.gamma, R, lambda x: sc.gamma(x) * sc.psi(x),
              lambda x: sc.gamma(x) * (sc.psi(x) ** 2 + sc.polygamma(1, x))),
    "gammasgn": (S.gammasgn, R, lambda x: 0 * x, lambda x: 0 * x),
    "rgamma": (S.rgamma, R, lambda x: -sc.rgamma(x) * sc.psi(x),
               lambda x: sc.rgamma(x) * (sc.psi(x) ** 2 - sc.polygamma(1, x))),
    "beta_a": (lambda a: S.beta(a, 1.7), X, lambda a: sc.beta(a, 1.7) * (
        sc.psi(a) - sc.psi(a + 1.7)), None),
    "betaln_b": (lambda b: S.betaln(0.8, b), X, lambda b: sc.psi(b) - sc.psi(b + 0.8),
                 lambda b: sc.polygamma(1, b) - sc.polygamma(1, b + 0.8)),
    "betainc": (lambda x: S.betainc(2.5, 0.7, x), U, lambda x: st.beta.pdf(x, 2.5, 0.7),
                lambda x: _pdf_deriv(lambda t: st.beta.pdf(t, 2.5, 0.7), x)),
    "gammainc": (lambda x: S.gammainc(1.7, x), X, lambda x: st.gamma.pdf(x, 1.7),
                 lambda x: _pdf_deriv(lambda t: st.gamma.pdf(t, 1.7), x)),
    "gammaincc": (lambda x: S.gammaincc(0.6, x), X, lambda x: -st.gamma.pdf(x, 0.6), None),
    "erfinv": (S.erfinv, U * 2 - 1, lambda y: np.sqrt(np.pi) / 2 * np.exp(sc.erfinv(y) ** 2),
               None),
    "erfcinv": (S.erfcinv, U * 2, lambda y: -np.sqrt(np.pi) / 2 * np.exp(sc.erfcinv(y) ** 2),
                None),
    "logit": (S.logit, U, lambda x: 1 / (x * (1 - x)), lambda x: (2 * x - 1) / (x * (1 - x)) ** 2),
    "ndtr": (S.ndtr, R, st.norm.pdf, lambda x: -x * st.norm.pdf(x)),
    "log_ndtr": (S.log_ndtr, np.r_[-30.0, R], lambda x: np.exp(st.norm.logpdf(x) - sc.log_ndtr(x)),
                 None),
    "ndtri": (S.ndtri, U, lambda y: 1 / st.norm.pdf(sc.ndtri(y)), None),
    "stdtr": (lambda x: S.stdtr(3.5, x), R, lambda x: st.t.pdf(x, 3.5),
              lambda x: _pdf_deriv(lambda t: st.t.pdf(t, 3.5), x)),
    "entr": (S.entr, X, lambda x: -(np.log(x) + 1), lambda x: -1 / x),
    "xlog1py_y": (lambda y: S.xlog1py(1.5, y), X, lambda y: 1.5 / (1 + y), None),
    "i0": (S.i0, R, lambda x: sc.ivp(0, x), lambda x: sc.ivp(0, x, 2)),
    "i1": (S.i1, R, lambda x: sc.ivp(1, x), lambda x: sc.ivp(1, x, 2)),
    "i0e": (S.i0e, R, lambda x: (sc.ivp(0, x) - np.sign(x) * sc.i0(x)) * np.exp(-abs(x)), None),
    "i1e": (S.i1e, R, lambda x: (sc.ivp(1, x) - np.sign(x) * sc.i1(x)) * np.exp(-abs(x)), None),
    "iv": (lambda x: S.iv(V, x), X, lambda x: sc.ivp(V, x), lambda x: sc.ivp(V, x, 2)),
    "ive": (lambda x: S.ive(V, x), X, lambda x: (sc.ivp(V, x) - sc.iv(V, x)) * np.exp(-x),
            None),
    "jv": (lambda x: S.jv(V, x), X, lambda x: sc.jvp(V, x), lambda x: sc.jvp(V, x, 2)),
    "yv": (lambda x: S.yv(V, x), X, lambda x: sc.yvp(V, x), lambda x: sc.yvp(V, x, 2)),
    "kv": (lambda x: S.kv(V, x), X, lambda x: sc.kvp(V, x), lambda x: sc.kvp(V, x, 2)),
    "j0": (S.j0, R, lambda x: sc.jvp(0, x), lambda x: sc.jvp(0, x, 2)),
    "j1": (S.j1, R, lambda x: sc.jvp(1, x), lambda x: sc.jvp(1, x, 2)),
    "y0": (S.y0, X, lambda x: sc.yvp(0, x), lambda x: sc.yvp(0, x, 2)),
    "y1": (S.y1, X, lambda x: sc.yvp(1, x), lambda x: sc.yvp(1, x, 2)),
}


@pytest.mark.parametrize("name", sorted(DERIVATIVES))
def test_derivatives_match_scipy_derivative_functions(name):
    f, x, first, second = DERIVATIVES[name]
    d1, d2 = _derivatives(f, x)
    expected = first(x)
    if expected.shape != d1.shape:  # broadcast orders: the gradient sums over them
        expected = np.sum(expected, axis=0)
    np.testing.assert_allclose(d1, expected, rtol=1e-9, atol=1e-12)
    if second is not None:
        expected2 = second(x)
        if expected2.shape != d2.shape:
            expected2 = np.sum(expected2, axis=0)
        rtol = 1e-5 if "_pdf_deriv" in second.__code__.co_names else 1e-9
        np.testing.assert_allclose(d2, expected2, rtol=rtol, atol=1e-9)


def test_logsumexp_matches_scipy_and_differentiates():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((3, 4))
    b = rng.uniform(-1, 2, (3, 4))
    for kw in ({}, {"axis": 0}, {"axis": (0, 1), "keepdims": True}, {"b": b, "axis": 1},
               {"b": b[0], "axis": -1, "keepdims": True}):
        np.testing.assert_allclose(S.logsumexp(a, **kw).numpy(), sc.logsumexp(a, **kw),
                                   rtol=1e-13)
    value, sign = S.logsumexp(a, axis=1, b=b, return_sign=True)
    expected = sc.logsumexp(a, axis=1, b=b, return_sign=True)
    np.testing.assert_allclose(value.numpy(), expected[0], rtol=1e-12)
    np.testing.assert_array_equal(sign.numpy(), expected[1])
    # stable where exp overflows; terms with weight 0 are left out even at +inf
    np.testing.assert_allclose(S.logsumexp(np.array([1000.0, 1000.0])).numpy(),
                               1000 + np.log(2))
    assert float(S.logsumexp([np.inf, 1.0], b=[0.0, 1.0])) == 1.0
    check_grads(lambda x: S.logsumexp(x, axis=1), [a])
    check_grads(lambda x, w: S.logsumexp(x, axis=0, b=w), [a, np.abs(b) + 0.1])
    check_grads(lambda x, w: S.logsumexp(x, b=w, return_sign=True)[0], [a, b])
    x = vj.constant([1000.0, 1001.0, 999.0])
    with vj.GradientTape() as tape:
        tape.watch(x)
        y = S.logsumexp(x)
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), sc.softmax([1000.0, 1001.0, 999.0]))


def test_multigammaln_matches_scipy_and_differentiates():
    a = np.array([[2.0, 3.5], [7.25, 1.6]])
    for d in (1, 2, 3):
        np.testing.assert_allclose(S.multigammaln(a, d).numpy(), sc.multigammaln(a, d),
                                   rtol=1e-13)
    check_grads(lambda t: S.multigammaln(t, 3), [a])
    with pytest.raises(ValueError, match="multigammaln"):
        S.multigammaln(a, 5)  # a > (d - 1) / 2 fails for 1.6, as in SciPy
    with pytest.raises(ValueError, match="positive integer"):
        S.multigammaln(a, 0)


SHAPE_PARAMETERS = {  # name: (function of (parameter, x), parameter value, x)
    "betainc a": (lambda p, x: S.betainc(p, 2.0, x), 1.5, 0.3),
    "betainc b": (lambda p, x: S.betainc(2.0, p, x), 1.5, 0.3),
    "gammainc a": (lambda p, x: S.gammainc(p, x), 1.5, 0.7),
    "gammaincc a": (lambda p, x: S.gammaincc(p, x), 1.5, 0.7),
    "polygamma n": (lambda p, x: S.polygamma(p, x), 1.0, 0.7),
    "stdtr df": (lambda p, x: S.stdtr(p, x), 3.0, 0.7),
    "iv v": (lambda p, x: S.iv(p, x), 1.5, 0.7), "ive v": (lambda p, x: S.ive(p, x), 1.5, 0.7),
    "jv v": (lambda p, x: S.jv(p, x), 1.5, 0.7), "yv v": (lambda p, x: S.yv(p, x), 1.5, 0.7),
    "kv v": (lambda p, x: S.kv(p, x), 1.5, 0.7),
}


@pytest.mark.parametrize("case", sorted(SHAPE_PARAMETERS))
def test_shape_parameter_derivatives_raise_never_a_silent_zero(case):
    f, p0, x0 = SHAPE_PARAMETERS[case]
    name, param = case.split()
    p, x = vj.constant(p0), vj.constant(x0)
    with vj.GradientTape(persistent=True) as tape:
        tape.watch([p, x])
        y = f(p, x)
    assert tape.gradient(y, x) is not None  # x alone is fine
    with pytest.raises(LookupError, match=rf"{name}: the derivative with respect to {param}"):
        tape.gradient(y, p)
    with pytest.raises(LookupError, match=rf"with respect to {param}"):
        with vj.autodiff.ForwardAccumulator(p, vj.constant(1.0)):
            f(p, x)
    # a constant parameter (stop_gradient) is fine
    with vj.GradientTape() as tape:
        tape.watch([p, x])
        y = f(vj.stop_gradient(p), x)
    assert tape.gradient(y, p) is None


UFUNCS = sorted(n for n in VALUES if isinstance(getattr(sc, n), np.ufunc))


@pytest.mark.parametrize("name", UFUNCS)
def test_scipy_ufuncs_on_tensors_run_vecjac_ops(name):
    args = [vj.constant(a) for a in VALUES[name]]
    with vj.GradientTape() as tape:
        tape.watch(args)
        with np.errstate(all="ignore"):
            got = getattr(sc, name)(*args)
        loss = vj.reduce_sum(vj.where(vj.is_finite(got), got, 0.0))
    assert isinstance(got, vj.Tensor)
    with np.errstate(all="ignore"):
        np.testing.assert_allclose(got.numpy(), getattr(S, name)(*VALUES[name]).numpy())
    with np.errstate(all="ignore"):  # the grids hold poles and infinities
        grads = tape.gradient(loss, args[-1])
    assert grads is not None  # the last argument is differentiable in every one of them


def test_import_vecjac_does_not_import_scipy():
    code = ("import sys, vecjac; assert not [m for m in sys.modules if m.startswith('scipy')],"
            " sorted(m for m in sys.modules if m.startswith('scipy'))[:5]")
    subprocess.run([sys.executable, "-c", code], check=True)
