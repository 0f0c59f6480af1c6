"""NumPy functions and ufuncs on Tensors and Variables (vecjac/numpy_dispatch.py).

Every case runs a NumPy call twice: on plain arrays (the oracle) and on Tensors (dispatched
to vecjac ops). Values and dtypes must agree, the result must be a Tensor, gradients
through the NumPy call must match finite differences, and inside pfor the call must agree
with the plain loop for every stacked / loop-invariant combination of its inputs.
"""
import itertools
import warnings

import numpy as np
import pytest

import vecjac as vj
from vecjac import _numpy_dispatch as numpy_dispatch
from vecjac.testing import check_grads, check_pfor

rng = np.random.default_rng(0)
A = rng.standard_normal((3, 4))
A2 = rng.standard_normal((3, 4))
B = rng.standard_normal((4, 2))
P = rng.uniform(0.5, 2.0, (3, 4))
V = rng.standard_normal(4)
W = rng.standard_normal(3)
C3 = rng.standard_normal((2, 3, 4))
_m = rng.standard_normal((3, 3))
S = _m @ _m.T + 3 * np.eye(3)  # symmetric positive definite
M = rng.standard_normal((3, 2))

# (id, f, args, gradient order: 2 smooth, 1 piecewise smooth, 0 not differentiable)
CASES = [
    ("sin", np.sin, [A], 2), ("exp", np.exp, [A], 2), ("tanh", np.tanh, [A], 2),
    ("sqrt", np.sqrt, [P], 2), ("log", np.log, [P], 2), ("log2", np.log2, [P], 2),
    ("log10", np.log10, [P], 2), ("exp2", np.exp2, [A], 2), ("cbrt", np.cbrt, [P], 2),
    ("expm1", np.expm1, [A], 2), ("log1p", np.log1p, [P], 2), ("arcsinh", np.arcsinh, [A], 2),
    ("arctan", np.arctan, [A], 2), ("square", np.square, [A], 2),
    ("reciprocal", np.reciprocal, [P], 2), ("negative", np.negative, [A], 2),
    ("positive", np.positive, [A], 2), ("absolute", np.abs, [A], 1),
    ("deg2rad", np.deg2rad, [A], 2), ("trunc", np.trunc, [A * 3], 0),
    ("rint", np.rint, [A * 3], 0), ("sign", np.sign, [A], 0),
    ("add", np.add, [A, V], 2), ("subtract", np.subtract, [A, A2], 2),
    ("multiply", np.multiply, [A, A2], 2), ("divide", np.divide, [A, P], 2),
    ("power", np.power, [P, A], 2), ("float_power", np.float_power, [P, A], 2),
    ("maximum", np.maximum, [A, A2], 1), ("minimum", np.minimum, [A, A2], 1),
    ("hypot", np.hypot, [A, A2], 2), ("logaddexp", np.logaddexp, [A, A2], 2),
    ("arctan2", np.arctan2, [A, A2], 2), ("matmul", np.matmul, [A, B], 2),
    ("matmul_vec", np.matmul, [A, V], 2), ("vec_matmul", np.matmul, [W, A], 2),
    ("less", np.less, [A, A2], 0),
    ("sum", lambda x: np.sum(x, axis=0), [A], 2),
    ("sum_keepdims", lambda x: np.sum(x, keepdims=True), [A], 2),
    ("mean", lambda x: np.mean(x, axis=(0, 1)), [A], 2),
    ("mean_none", np.mean, [C3], 2),
    ("max", lambda x: np.max(x, axis=1), [A], 1), ("amin", np.amin, [A], 1),
    ("prod", lambda x: np.prod(x, axis=1), [A], 2),
    ("std_ddof", lambda x: np.std(x, axis=0, ddof=1), [A], 2),
    ("var", lambda x: np.var(x, axis=1, keepdims=True), [A], 2),
    ("cumsum_none", np.cumsum, [A], 2), ("cumprod", lambda x: np.cumprod(x, axis=1), [A], 2),
    ("argmax_none", np.argmax, [A], 0), ("argmin", lambda x: np.argmin(x, axis=1), [A], 0),
    ("any", lambda x: np.any(x > 1, axis=0), [A], 0),
    ("add_reduce", lambda x: np.add.reduce(x, axis=1), [A], 2),
    ("maximum_reduce", np.maximum.reduce, [A], 1),
    ("add_accumulate", np.add.accumulate, [A], 2),
    ("multiply_outer", np.multiply.outer, [V, W], 2),
    ("dot_mv", np.dot, [A, V], 2), ("dot_vv", np.dot, [V, V * 2], 2),
    ("dot_3d", np.dot, [C3, B], 2), ("dot_scalar", lambda x: np.dot(x, 2.0), [A], 2),
    ("vdot", np.vdot, [A, A2], 2), ("inner", np.inner, [A, A2], 2),
    ("outer", np.outer, [V, W], 2), ("tensordot", lambda a, b: np.tensordot(a, b, 1), [A, B], 2),
    ("einsum", lambda a, b: np.einsum("ij,jk->ik", a, b), [A, B], 2),
    ("trace", np.trace, [A], 2), ("trace_axes", lambda x: np.trace(x, axis1=0, axis2=2), [C3], 2),
    ("diagonal", np.diagonal, [A], 2), ("diag1", np.diag, [V], 2), ("diag2", np.diag, [A], 2),
    ("concatenate", lambda a, b: np.concatenate([a, b], axis=1), [A, A2], 2),
    ("concatenate_none", lambda a, b: np.concatenate([a, b], axis=None), [A, V], 2),
    ("stack", lambda a, b: np.stack([a, b], axis=-1), [A, A2], 2),
    ("vstack", lambda a, b: np.vstack([a, b]), [V, A], 2),
    ("hstack", lambda a, b: np.hstack([a, b]), [V, V], 2),
    ("split", lambda x: np.split(x, [1, 3], axis=1), [A], 2),
    ("split_sections", lambda x: np.split(x, 2, axis=1), [A], 2),
    ("reshape", lambda x: np.reshape(x, (-1, 2)), [A], 2), ("ravel", np.ravel, [A], 2),
    ("transpose", lambda x: np.transpose(x, (2, 0, 1)), [C3], 2),
    ("swapaxes", lambda x: np.swapaxes(x, 0, 2), [C3], 2),
    ("moveaxis", lambda x: np.moveaxis(x, 0, -1), [C3], 2),
    ("expand_dims", lambda x: np.expand_dims(x, (0, 2)), [A], 2),
    ("squeeze", lambda x: np.squeeze(x[None]), [A], 2),
    ("broadcast_to", lambda x: np.broadcast_to(x, (2, 4)), [V], 2),
    ("broadcast_arrays", np.broadcast_arrays, [A, V], 2),
    ("atleast_2d", np.atleast_2d, [V], 2), ("flip", np.flip, [A], 2),
    ("tile", lambda x: np.tile(x, (2, 1, 2)), [A], 2),
    ("pad", lambda x: np.pad(x, 1, mode="reflect"), [A], 2),
    ("pad_constant", lambda x: np.pad(x, ((0, 1), (2, 0)), constant_values=1.5), [A], 2),
    ("take", lambda x: np.take(x, [2, 0, 2], axis=1), [A], 2),
    ("diff", lambda x: np.diff(x, n=2), [A], 2),
    ("where", lambda a, b: np.where(a > 0, a, b), [A, A2], 1),
    ("clip", lambda x: np.clip(x, -0.5, 0.5), [A], 1),
    ("clip_max", lambda x: np.clip(x, None, 0.3), [A], 1),
    ("round", lambda x: np.round(x, 2), [A], 0),
    ("zeros_like", np.zeros_like, [A], 0), ("full_like", lambda x: np.full_like(x, 2.5), [A], 0),
    ("solve_vec", np.linalg.solve, [S, W], 2), ("solve", np.linalg.solve, [S, M], 2),
    ("inv", np.linalg.inv, [S], 2), ("det", np.linalg.det, [S], 2),
    ("slogdet", np.linalg.slogdet, [S], 2),
    # cholesky reads one triangle: differentiate through a symmetric input
    ("cholesky", lambda x: np.linalg.cholesky(x @ x.T + 3 * np.eye(3)), [_m], 2),
    ("cholesky_upper", lambda x: np.linalg.cholesky(x @ x.T + np.eye(3), upper=True), [_m], 2),
    ("norm", np.linalg.norm, [A], 2), ("norm_axis", lambda x: np.linalg.norm(x, axis=1), [A], 2),
    ("norm_ord1", lambda x: np.linalg.norm(x, ord=1, axis=0), [A], 1),
    ("norm_fro", lambda x: np.linalg.norm(x, "fro"), [A], 2),
    ("multi_dot", lambda a, b: np.linalg.multi_dot([a, b, b.T]), [A, B], 2),
    ("vecdot", np.linalg.vecdot, [A, A2], 2),
    ("matrix_transpose", np.matrix_transpose, [C3], 2),
]
IDS = [c[0] for c in CASES]


def _leaves(x):
    return list(x) if isinstance(x, (tuple, list)) else [x]


@pytest.mark.parametrize("name,f,args,order", CASES, ids=IDS)
def test_values_match_numpy(name, f, args, order):
    expected = _leaves(f(*args))
    got = _leaves(f(*[vj.constant(a) for a in args]))
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        assert isinstance(g, vj.Tensor), f"{name}: result is {type(g).__name__}, not a Tensor"
        e = np.asarray(e)
        assert g.shape == e.shape and g.dtype == e.dtype, (g.shape, g.dtype, e.shape, e.dtype)
        np.testing.assert_allclose(g.numpy(), e, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name,f,args,order", [c for c in CASES if c[3]],
                         ids=[c[0] for c in CASES if c[3]])
def test_gradients_through_numpy_calls(name, f, args, order):
    check_grads(f, args, order=order)


# subset for pfor: each argument stacked (from a batch of 3 variants) or loop-invariant
PFOR_CASES = [c for c in CASES if c[0] in {
    "sin", "log2", "add", "divide", "matmul", "vec_matmul", "arctan2", "logaddexp", "sum",
    "std_ddof", "cumsum_none", "argmax_none", "add_reduce", "multiply_outer", "dot_mv",
    "dot_3d", "vdot", "outer", "einsum", "trace", "diag1", "concatenate_none", "vstack",
    "split", "ravel", "moveaxis", "expand_dims", "tile", "pad", "take", "diff", "where",
    "clip", "solve_vec", "slogdet", "norm", "zeros_like", "broadcast_arrays"}]


@pytest.mark.parametrize("name,f,args,order", PFOR_CASES, ids=[c[0] for c in PFOR_CASES])
def test_inside_pfor(name, f, args, order):
    batches = [vj.constant(np.stack([a, a * 1.1 + 0.05, a * 0.9])) for a in args]
    for mask in itertools.product([True, False], repeat=len(args)):
        if not any(mask):
            continue

        def loop_fn(i, mask=mask):
            xs = [vj.gather(b, i) if s else a for b, a, s in zip(batches, args, mask)]
            return f(*xs)
        check_pfor(loop_fn, 3)


def test_jacobian_through_numpy_code_matches_finite_differences():
    x = vj.constant(A)
    with vj.GradientTape() as tape:
        tape.watch(x)
        y = np.sum(np.tanh(np.dot(x, B)), axis=1)
    jac = tape.jacobian(y, x)
    numeric = vj.testing.numerical_jacobian(lambda a: np.tanh(a @ B).sum(axis=1), A)
    np.testing.assert_allclose(jac.numpy(), numeric, rtol=1e-6, atol=1e-8)


def test_np_mean_on_a_tensor_keeps_the_gradient():
    # the guide's "calculation outside of vecjac": with the protocols it stays on the tape
    x = vj.Variable([[1.0, 2.0], [3.0, 4.0]], dtype=vj.float32)
    with vj.GradientTape() as tape:
        x2 = x ** 2
        y = np.mean(x2, axis=0)
        y = vj.reduce_mean(y, axis=0)
    assert isinstance(y, vj.Tensor)
    g = tape.gradient(y, x)
    assert g.dtype == np.float32
    np.testing.assert_allclose(g.numpy(), 2 * np.array([[1.0, 2.0], [3.0, 4.0]]) / 4)
    # leaving explicitly through np.asarray still cuts the gradient
    with vj.GradientTape() as tape:
        y = vj.reduce_mean(np.mean(np.asarray(x ** 2), axis=0))
    assert tape.gradient(y, x) is None


def test_float32_stays_float32():
    x = vj.constant(A.astype(np.float32))
    with vj.GradientTape() as tape:
        tape.watch(x)
        y = np.sum(np.sin(x) * 2.0 + np.where(x > 0, x, 0.5)) / np.float32(3)
    assert y.dtype == np.float32
    assert tape.gradient(y, x).dtype == np.float32
    assert np.mean(vj.constant([1, 2, 3])).dtype == np.float64  # NumPy: int mean is float64


def test_ndarray_operator_tensor_uses_the_reflected_operator():
    t = vj.constant(A)
    for op in ["__add__", "__sub__", "__mul__", "__truediv__", "__pow__", "__lt__", "__ge__",
               "__eq__"]:
        got = getattr(P, op)(t)
        assert isinstance(got, vj.Tensor), op
        np.testing.assert_allclose(got.numpy(), getattr(P, op)(A), err_msg=op)
    got = B.T @ vj.constant(B)
    assert isinstance(got, vj.Tensor)
    np.testing.assert_allclose(got.numpy(), B.T @ B)


def test_asarray_still_gives_the_plain_array():
    t = vj.constant(A)
    plain = np.asarray(t)
    assert type(plain) is np.ndarray and plain.shape == A.shape
    assert type(np.array(t, dtype=np.float32)) is np.ndarray
    v = vj.Variable(A)
    assert type(np.asarray(v)) is np.ndarray


def test_variables_dispatch_and_are_watched():
    v = vj.Variable(V)
    with vj.GradientTape() as tape:
        y = np.sum(np.sin(v) * np.array([1.0, 2.0, 3.0, 4.0]))
    np.testing.assert_allclose(tape.gradient(y, v).numpy(), np.cos(V) * [1, 2, 3, 4])
    with vj.GradientTape() as tape:
        y = np.linalg.norm(np.concatenate([v, v]))
    np.testing.assert_allclose(tape.gradient(y, v).numpy(), 2 * V / np.linalg.norm(
        np.concatenate([V, V])))


def test_scipy_special_ufuncs_dispatch():
    special = pytest.importorskip("scipy.special")
    x = vj.constant(A)
    got = special.expit(x)
    assert isinstance(got, vj.Tensor)
    np.testing.assert_allclose(got.numpy(), special.expit(A))
    check_grads(lambda t: special.log_expit(t) + special.erf(t), [A])


@pytest.fixture
def fresh_warnings():
    numpy_dispatch._warned.clear()
    yield
    numpy_dispatch._warned.clear()


def test_uncovered_function_warns_once_on_a_tape(fresh_warnings):
    x = vj.constant(A)
    with vj.GradientTape() as tape:
        tape.watch(x)
        with pytest.warns(vj.NotDifferentiableWarning, match=r"np\.sort: no vecjac op") as rec:
            y = np.sort(x, axis=1)
        assert rec[0].filename == __file__  # points at the caller's line
        assert type(y) is np.ndarray
        np.testing.assert_array_equal(y, np.sort(A, axis=1))
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            np.sort(x)  # once per function
        total = vj.reduce_sum(y)
    assert tape.gradient(total, x) is None


def test_uncovered_function_is_silent_off_the_tape(fresh_warnings):
    x = vj.constant(A)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        y = np.sort(x)  # no tape: no gradient to lose (e.g. plotting code)
        assert np.allclose(x, A)  # bool results never warn
        assert np.argsort(x).dtype.kind == "i"
    np.testing.assert_array_equal(y, np.sort(A))


def test_unsupported_argument_falls_back_with_a_warning(fresh_warnings):
    x = vj.constant(A)
    with vj.GradientTape() as tape:
        tape.watch(x)
        with pytest.warns(vj.NotDifferentiableWarning, match=r"np\.max: argument initial="):
            y = np.max(x, initial=10.0)
    assert float(y) == 10.0


def test_uncovered_function_inside_pfor_raises():
    X = vj.constant(np.stack([A, A2]))
    with pytest.raises(TypeError, match=r"np\.sort has no vecjac op.*pfor"):
        vj.vectorize.pfor(lambda i: np.sort(vj.gather(X, i)), 2)


def test_a_norm_without_a_vecjac_op_runs_in_numpy(fresh_warnings):
    # np.linalg.norm(matrix, 2) (the spectral norm) runs as NumPy would; on a tape it
    # warns that the gradient stops there (vj.norm raised NotImplementedError)
    assert np.linalg.norm(vj.constant(A), 2) == np.linalg.norm(A, 2)
    x = vj.constant(A)
    with vj.GradientTape() as tape:
        tape.watch(x)
        with pytest.warns(vj.NotDifferentiableWarning, match="np.linalg.norm"):
            value = np.linalg.norm(x, 2)
    assert value == np.linalg.norm(A, 2)


def test_out_is_a_type_error():
    t = vj.constant(A)
    buf = np.zeros_like(A)
    with pytest.raises(TypeError, match=r"np\.sin: out= is not supported"):
        np.sin(t, out=buf)
    with pytest.raises(TypeError, match=r"np\.sum: out= is not supported"):
        np.sum(t, axis=0, out=np.zeros(4))
    with pytest.raises(TypeError, match=r"array = array \+ tensor"):
        buf += t
    with pytest.raises(TypeError, match="immutable"):
        np.add.at(t, [0], 1.0)


def test_bad_inputs_keep_vecjac_messages():
    with pytest.raises(ValueError, match="diag"):
        np.diag(vj.constant(C3))
    with pytest.raises(ValueError, match="equal division"):
        np.split(vj.constant(A), 3, axis=1)
    with pytest.raises((ValueError, TypeError), match="solve"):
        np.linalg.solve(vj.constant(A), vj.constant(V))


def test_introspection_is_per_iteration_inside_pfor():
    X = vj.constant(C3)
    seen = []

    def loop_fn(i):
        x = vj.gather(X, i)
        seen.append((np.shape(x), np.ndim(x), np.size(x), np.result_type(x, 1.0)))
        return np.sum(x)
    vj.vectorize.pfor(loop_fn, 2)
    assert seen == [((3, 4), 2, 12, np.float64)]


def test_docstring_table_is_current():
    table = numpy_dispatch.coverage_table()
    assert table in numpy_dispatch.__doc__, \
        "regenerate the table in vecjac/numpy_dispatch.py's docstring with coverage_table()"
    names = numpy_dispatch.covered_functions()
    assert {"np.sin", "np.sum", "np.concatenate", "np.linalg.solve", "np.einsum"} <= set(names)


def test_arctan2_on_the_axes_value_and_gradient():
    y = np.array([1.0, -1.0, 0.0, 0.0, 1.0, -1.0, 2.0, -3.0])
    x = np.array([0.0, 0.0, -1.0, 1.0, -1.0, -1.0, -0.5, -0.1])
    ty, tx = vj.constant(y), vj.constant(x)
    with vj.GradientTape() as tape:
        tape.watch([ty, tx])
        r = np.arctan2(ty, tx)
    np.testing.assert_allclose(r.numpy(), np.arctan2(y, x), atol=1e-15)
    gy, gx = tape.gradient(r, [ty, tx])
    np.testing.assert_allclose(gy.numpy(), x / (x**2 + y**2), atol=1e-15)
    np.testing.assert_allclose(gx.numpy(), -y / (x**2 + y**2), atol=1e-15)
