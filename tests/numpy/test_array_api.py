"""The array API namespace (`xp = t.__array_namespace__()`): its functions differentiate
like vecjac ops, its dtypes and promotion follow the standard's table, the Tensor
attributes it asks for exist, and SciPy's array-API code (SCIPY_ARRAY_API=1) runs on
Tensors with derivatives that match central differences.

The standard's own suite is benchmarks/array_api_conformance.py (slow, not here).
"""
import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import vecjac as vj
from vecjac._src.numpy import array_api as xp
from vecjac.testing import check_grads, numerical_jacobian

rng = np.random.default_rng(11)
A = rng.standard_normal((3, 4))
B = rng.standard_normal((4, 3))
S = rng.standard_normal((3, 3)) + 3 * np.eye(3)


# -- the protocol ---------------------------------------------------------------------------------
def test_tensor_and_variable_give_the_namespace():
    t = vj.constant(A)
    assert t.__array_namespace__() is xp
    assert t.__array_namespace__(api_version="2022.12") is xp
    assert vj.Variable(A).__array_namespace__(api_version="2023.12") is xp
    assert xp.__array_api_version__ == "2023.12"
    for bad in ("2021.12", "2024.12", "latest"):
        with pytest.raises(ValueError, match="api_version"):
            t.__array_namespace__(api_version=bad)


def test_tensor_attributes_of_the_standard():
    t = vj.constant(rng.standard_normal((2, 3, 4)))
    assert t.device == xp.__array_namespace_info__().default_device()
    assert t.to_device("cpu") is t
    with pytest.raises(ValueError, match="device"):
        t.to_device("gpu")
    np.testing.assert_array_equal(t.mT.numpy(), np.swapaxes(t.numpy(), -1, -2))
    np.testing.assert_array_equal(np.from_dlpack(t), t.numpy())
    i = vj.constant(np.array([5, 6, -3]))
    for got, want in [(i & 3, np.array([5, 6, -3]) & 3), (3 | i, 3 | np.array([5, 6, -3])),
                      (i ^ i, np.zeros(3, int)), (~i, ~np.array([5, 6, -3])),
                      (i << 2, np.array([5, 6, -3]) << 2), (i >> 1, np.array([5, 6, -3]) >> 1)]:
        np.testing.assert_array_equal(got.numpy(), want)
        assert got.dtype == want.dtype
    flags = vj.constant([True, False])
    np.testing.assert_array_equal((flags & True).numpy(), [True, False])
    np.testing.assert_array_equal((~flags).numpy(), [False, True])
    assert t[True].shape == (1, 2, 3, 4) and t[False].shape == (0, 2, 3, 4)


def test_dtypes_and_promotion_follow_the_standard_table():
    assert xp.result_type(xp.int8, xp.uint8) == xp.int16
    assert xp.result_type(xp.uint32, xp.int64) == xp.int64
    assert xp.result_type(xp.float32, xp.complex64) == xp.complex64
    assert xp.result_type(xp.float64, xp.complex64) == xp.complex128
    assert xp.result_type(vj.constant(np.float32(1)), 2.0) == xp.float32  # weak scalars
    with pytest.raises(TypeError, match="promotes no"):
        xp.result_type(xp.uint64, xp.int8)
    # the standard's can_cast, not NumPy's (np.can_cast(int8, float32) is True)
    assert xp.can_cast(xp.int8, xp.int16) and not xp.can_cast(xp.int8, xp.float32)
    assert not xp.can_cast(xp.float64, xp.float32)
    assert xp.isdtype(xp.uint8, "integral") and not xp.isdtype(xp.float32, "integral")
    assert xp.isdtype(xp.float32, ("bool", "real floating"))
    with pytest.raises(ValueError, match="kind"):
        xp.isdtype(xp.float32, "floating")
    info = xp.finfo(xp.float32)
    assert type(info.eps) is float and info.eps == float(np.finfo(np.float32).eps)
    assert xp.finfo(xp.complex64).dtype == xp.float32
    assert xp.iinfo(xp.int8).min == -128
    # sum widens integers to the default integer dtype, keeps float32
    assert xp.sum(vj.constant(np.ones(3, np.int8))).dtype == xp.int64
    assert xp.sum(vj.constant(np.ones(3, np.float32))).dtype == xp.float32


def test_bad_arguments_name_themselves():
    with pytest.raises(ValueError, match="copy=False"):
        xp.asarray([1.0, 2.0], copy=False)
    with pytest.raises(TypeError, match="astype: dtype"):
        xp.astype(vj.constant(A), "a string")
    with pytest.raises(ValueError, match="squeeze: axis 0 has length 3"):
        xp.squeeze(vj.constant(A), axis=0)
    with pytest.raises(ValueError, match="take: axis is needed"):
        xp.take(vj.constant(A), vj.constant([0]))
    with pytest.raises(ValueError, match="vecdot: the contracted axis"):
        xp.vecdot(vj.constant(A), vj.constant(np.ones((3, 1))))


# -- values against NumPy, derivatives against central differences -----------------------------
def test_values_match_numpy():
    t = vj.constant(A)
    for got, want in [
            (xp.std(t, axis=1, correction=1), np.std(A, axis=1, ddof=1)),
            (xp.cumulative_sum(t, axis=1, include_initial=True),
             np.concatenate([np.zeros((3, 1)), np.cumsum(A, axis=1)], axis=1)),
            (xp.sort(t, axis=0, descending=True), -np.sort(-A, axis=0)),
            (xp.argsort(vj.constant([1, 2, 2, 3]), descending=True), [3, 1, 2, 0]),
            (xp.linalg.trace(vj.constant(S)), np.trace(S)),
            (xp.clip(t, min=-0.5, max=vj.constant(np.full(4, 0.5))), np.clip(A, -0.5, 0.5)),
            (xp.unique_values(vj.constant([3, 1, 3])), [1, 3]),
            (xp.tensordot(t, vj.constant(B), axes=1), A @ B)]:
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-12, atol=1e-12)
        assert isinstance(got, vj.Tensor)


FUNCTIONS = [
    ("elementwise", lambda x: xp.sum(xp.sin(x) * xp.exp(x) + xp.logaddexp(x, x * x), axis=0)),
    ("statistics", lambda x: xp.std(x, axis=1, correction=1) + xp.max(x, axis=1)
     + xp.var(x, axis=1)),
    ("manipulation", lambda x: xp.reshape(xp.concat([xp.flip(x, axis=0), xp.roll(x, 1)],
                                                    axis=1), (-1,))),
    ("sort_take_where", lambda x: xp.take(xp.sort(x, axis=1, descending=True),
                                          vj.constant([0, 2]), axis=1)
     + xp.where(x > 0, x, x * x)[:, :2]),
    ("cumulative_sum", lambda x: xp.cumulative_sum(x, axis=0, include_initial=True)),
    ("linear_algebra", lambda x: xp.vecdot(x, xp.matmul(xp.matmul(x, xp.matrix_transpose(x)), x))),
    ("linalg_solve", lambda x: xp.linalg.solve(vj.constant(S) + x[:, :3] * 0.1, x)),
    ("linalg_norms", lambda x: xp.linalg.vector_norm(x, axis=1)
     + xp.linalg.matrix_norm(x[:, :3])),
]


@pytest.mark.parametrize("name,f", FUNCTIONS, ids=[name for name, _ in FUNCTIONS])
def test_namespace_functions_differentiate(name, f):
    check_grads(f, [A], order=1, modes=("rev", "fwd"))


@pytest.mark.parametrize("name,f", FUNCTIONS[:5], ids=[name for name, _ in FUNCTIONS[:5]])
def test_namespace_functions_vectorize(name, f):
    batch = np.stack([A, 2 * A, -A])
    mapped = vj.vectorized_map(f, vj.constant(batch)).numpy()
    for k in range(len(batch)):
        np.testing.assert_allclose(mapped[k], f(vj.constant(batch[k])).numpy(), rtol=1e-12)


def test_gradient_through_the_namespace_of_the_argument():
    def loss(x):
        space = x.__array_namespace__()
        return space.mean(space.tanh(x) ** 2)

    g = vj.grad(loss)(A)
    np.testing.assert_allclose(g.numpy(), numerical_jacobian(loss, A), rtol=1e-6, atol=1e-9)


def test_functions_without_a_derivative_refuse_under_a_transform():
    # the set functions are NumPy's: a derivative through them would silently be zero
    with pytest.raises(TypeError, match="unique"):
        vj.grad(lambda x: xp.sum(xp.unique_values(x)))(A)
    # complex values compute (here rounded by NumPy) but are not differentiated
    with pytest.raises(TypeError, match="complex"):
        vj.grad(lambda x: xp.sum(xp.real(xp.round(xp.astype(x, xp.complex128)))))(A)


# -- SciPy's array API code on Tensors (SCIPY_ARRAY_API=1, set before SciPy is imported) ----------
SCIPY_SCRIPT = r"""
import json, os
assert os.environ["SCIPY_ARRAY_API"] == "1"
import numpy as np
import scipy.integrate, scipy.special, scipy.stats
import vecjac as vj
from vecjac.testing import numerical_jacobian

x0 = np.array([0.3, -1.2, 2.0, 0.7, 1.1])
w = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
cases = {
    "scipy.special.softmax": lambda x: vj.reduce_sum(scipy.special.softmax(x) * w),
    "scipy.stats.moment": lambda x: scipy.stats.moment(x, order=3),
    "scipy.stats.skew": lambda x: scipy.stats.skew(x),
    "scipy.stats.kurtosis": lambda x: scipy.stats.kurtosis(x),
    "scipy.stats.gmean": lambda x: scipy.stats.gmean(vj.exp(x)),
    "scipy.stats.hmean": lambda x: scipy.stats.hmean(vj.exp(x)),
    "scipy.stats.sem": lambda x: scipy.stats.sem(x),
    "scipy.integrate.trapezoid": lambda x: scipy.integrate.trapezoid(x * x, x=vj.cumsum(vj.exp(x))),
    "scipy.integrate.cumulative_trapezoid":
        lambda x: vj.reduce_sum(scipy.integrate.cumulative_trapezoid(x * x) * w[:4]),
}
report = {}
for name, f in cases.items():
    value = f(vj.constant(x0))
    grad = vj.grad(f)(x0).numpy()
    fd = numerical_jacobian(lambda x: np.asarray(f(x)), x0)
    report[name] = {"tensor": isinstance(value, vj.Tensor),
                    "error": float(np.max(np.abs(grad - fd))),
                    "scale": float(np.max(np.abs(fd)))}
# in-place updates (array_api_extra's `at`, e.g. in logsumexp) meet an immutable Tensor
try:
    scipy.special.logsumexp(vj.constant(x0))
    report["logsumexp"] = "ran"
except TypeError as e:
    report["logsumexp"] = str(e)
print(json.dumps(report))
"""


def test_scipy_array_api_functions_differentiate():
    root = pathlib.Path(vj.__file__).resolve().parent.parent
    env = dict(os.environ, SCIPY_ARRAY_API="1",
               PYTHONPATH=os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, "-c", SCIPY_SCRIPT], env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert "immutable" in report.pop("logsumexp")
    assert len(report) >= 5
    for name, result in report.items():
        assert result["tensor"], f"{name} left vecjac (its result is no Tensor)"
        assert result["error"] <= 1e-6 * max(1.0, result["scale"]), (name, result)
