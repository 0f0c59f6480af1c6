"""vj.scipy adapters against SciPy's own Rosenbrock derivatives and known solutions."""
import numpy as np
import pytest

import vecjac as vj

scipy_optimize = pytest.importorskip("scipy.optimize")


def rosen(x):
    return vj.reduce_sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


X0 = np.array([-1.2, 1.0, 0.8, 1.3])

rng = np.random.default_rng(2)
DATA = rng.standard_normal((60, 3))
LABELS = (DATA @ [1.5, -1.0, 0.5] + 0.5 * rng.standard_normal(60) > 0).astype(float)


def logistic(w, data, labels):
    z = vj.linalg.matvec(vj.constant(data), w)
    return vj.reduce_mean(vj.nn.softplus(z) - labels * z) + 0.01 * vj.reduce_sum(w ** 2)


def logistic_np(w):
    z = DATA @ w
    p = 1 / (1 + np.exp(-z))
    value = np.mean(np.logaddexp(0, z) - LABELS * z) + 0.01 * w @ w
    return value, DATA.T @ (p - LABELS) / len(DATA) + 0.02 * w


def test_adapters_match_scipy_rosenbrock_derivatives():
    value, grad = vj.scipy.fun_and_jac(rosen)(X0)
    assert isinstance(value, float) and grad.dtype == np.float64 and grad.shape == (4,)
    np.testing.assert_allclose(value, scipy_optimize.rosen(X0), rtol=1e-14)
    np.testing.assert_allclose(grad, scipy_optimize.rosen_der(X0), rtol=1e-12)
    H = vj.scipy.hess(rosen)(X0)
    assert H.dtype == np.float64 and type(H) is np.ndarray
    np.testing.assert_allclose(H, scipy_optimize.rosen_hess(X0), rtol=1e-12)
    p = np.array([0.3, -1.0, 2.0, 0.5])
    hp = vj.scipy.hessp(rosen)(X0, p)
    assert hp.dtype == np.float64 and hp.shape == (4,)
    np.testing.assert_allclose(hp, scipy_optimize.rosen_hess_prod(X0, p), rtol=1e-12)


def test_float64_out_even_from_float32_computation():
    f = lambda x: vj.reduce_sum(vj.cast(x, vj.float32) ** 2)  # noqa: E731
    value, grad = vj.scipy.fun_and_jac(f)(np.array([1.0, 2.0]))
    assert grad.dtype == np.float64 and value == 5.0
    assert vj.scipy.hess(f)(np.array([1.0, 2.0])).dtype == np.float64


@pytest.mark.parametrize("method,extra", [
    ("trust-exact", "hess"), ("Newton-CG", "hessp"), ("BFGS", None)])
def test_minimize_rosenbrock(method, extra):
    kwargs = {}
    if extra == "hess":
        kwargs["hess"] = vj.scipy.hess(rosen)
    elif extra == "hessp":
        kwargs["hessp"] = vj.scipy.hessp(rosen)
    # SciPy's documented start; from X0 the 4-D Rosenbrock falls into its other local minimum
    x0 = np.array([1.3, 0.7, 0.8, 1.9, 1.2])
    res = scipy_optimize.minimize(vj.scipy.fun_and_jac(rosen), x0, jac=True, method=method,
                                  options={"xtol" if method == "Newton-CG" else "gtol": 1e-10},
                                  **kwargs)
    assert res.success, res.message
    np.testing.assert_allclose(res.x, np.ones(5), atol=1e-5)


@pytest.mark.parametrize("method", ["trust-exact", "Newton-CG", "BFGS"])
def test_minimize_logistic_regression_with_args(method):
    # oracle: BFGS with the closed-form NumPy gradient
    ref = scipy_optimize.minimize(logistic_np, np.zeros(3), jac=True, method="BFGS",
                                  options={"gtol": 1e-10})
    options = {"xtol": 1e-10} if method == "Newton-CG" else {"gtol": 1e-10}
    res = vj.scipy.minimize(logistic, np.zeros(3), args=(DATA, LABELS), method=method,
                            options=options)
    assert res.success, res.message
    np.testing.assert_allclose(res.x, ref.x, atol=1e-5)
    assert np.linalg.norm(logistic_np(res.x)[1]) < 1e-7


def test_root_nonlinear_system():
    # x^2 + y^2 = r^2, x = y  ->  x = y = r / sqrt(2); r is passed through args
    def F(v, r):
        return vj.stack([v[0] ** 2 + v[1] ** 2 - r ** 2, v[0] - v[1]])
    fun = vj.scipy.fun_and_jac(F)
    value, J = fun(np.array([1.0, 0.5]), 2.0)
    np.testing.assert_allclose(value, [1.25 - 4.0, 0.5])
    np.testing.assert_allclose(J, [[2.0, 1.0], [1.0, -1.0]])
    res = scipy_optimize.root(fun, np.array([1.0, 0.5]), args=(2.0,), jac=True)
    assert res.success
    np.testing.assert_allclose(res.x, [np.sqrt(2.0)] * 2, rtol=1e-10)
    res = vj.scipy.root(F, [1.0, 0.5], args=(2.0,), method="lm")
    np.testing.assert_allclose(res.x, [np.sqrt(2.0)] * 2, rtol=1e-8)


def test_bad_inputs():
    with pytest.raises(TypeError, match="vj.scipy.fun_and_jac: f must be callable"):
        vj.scipy.fun_and_jac(None)
    with pytest.raises(ValueError, match=r"x must be 1-D.*shape \(2, 2\)"):
        vj.scipy.fun_and_jac(rosen)(np.ones((2, 2)))
    with pytest.raises(TypeError, match="x must be a 1-D float array"):
        vj.scipy.hess(rosen)(["a", "b"])
    with pytest.raises(ValueError, match=r"hessp: p has shape \(3,\), x has shape \(4,\)"):
        vj.scipy.hessp(rosen)(X0, np.ones(3))
    with pytest.raises(TypeError, match="f must return floating point values"):
        vj.scipy.fun_and_jac(lambda x: vj.constant(1))(X0)
    with pytest.raises(ValueError, match=r"scalar.*shape \(3,\)"):
        vj.scipy.hess(lambda x: x[1:])(X0)
    with pytest.raises(ValueError, match="jac is supplied by vecjac"):
        vj.scipy.minimize(rosen, X0, jac=False)
