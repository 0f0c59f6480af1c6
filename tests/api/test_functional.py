"""Functional transforms (vj.grad, jacobian, hessian, hvp, vjp ...) and progress bars.

Oracles: closed forms, finite differences (vj.testing.numerical_jacobian) and the tape API.
"""
import collections
import dataclasses

import numpy as np
import pytest

import vecjac as vj
from vecjac._src.core import progress as vj_progress
from vecjac.testing import numerical_jacobian

RNG = np.random.default_rng(0)
A = RNG.standard_normal((3, 3))
X3 = RNG.standard_normal(3)


def quad(x):
    """x^T A x: gradient (A + A^T) x, Hessian A + A^T."""
    return vj.reduce_sum(x * vj.linalg.matvec(vj.constant(A.astype(x.dtype)), x))


def cubic_np(x):
    return np.sum(np.sin(x) * x ** 2)


def cubic(x):
    return vj.reduce_sum(vj.sin(x) * x ** 2)


def to_np(t):
    return np.asarray(t)


# -- grad / value_and_grad ---------------------------------------------------------------
@pytest.mark.parametrize("shape", [(), (3,), (2, 3)])
def test_grad_matches_finite_differences(shape):
    x = RNG.standard_normal(shape)
    g = vj.grad(cubic)(x)
    assert isinstance(g, vj.Tensor) and g.shape == shape
    np.testing.assert_allclose(to_np(g), numerical_jacobian(cubic_np, x), rtol=1e-6, atol=1e-8)


def test_grad_closed_form_and_tape_agree():
    g = vj.grad(quad)(X3)
    np.testing.assert_allclose(to_np(g), (A + A.T) @ X3, rtol=1e-12)
    x = vj.constant(X3)
    with vj.GradientTape() as tape:
        tape.watch(x)
        y = quad(x)
    np.testing.assert_allclose(to_np(g), to_np(tape.gradient(y, x)), rtol=1e-12)


def test_grad_argnums_tuple_negative_and_python_floats():
    f = lambda x, y: x * y ** 2  # noqa: E731
    gx, gy = vj.grad(f, argnums=(0, 1))(3.0, 2.0)
    assert float(gx) == 4.0 and float(gy) == 12.0
    assert gx.dtype == np.float64
    assert float(vj.grad(f, argnums=-1)(3.0, 2.0)) == 12.0
    assert float(vj.grad(f, argnums=[1])(3.0, 2.0)[0]) == 12.0


def test_grad_nests_dict_list_and_kwargs():
    def loss(params, data, scale=1.0):
        w, b = params["w"], params["b"]
        return scale * vj.reduce_sum((vj.linalg.matvec(w, data) + b[0]) ** 2)
    w = RNG.standard_normal((2, 3))
    b = [np.array(0.5)]
    data = RNG.standard_normal(3)
    g = vj.grad(loss)({"w": w, "b": b}, data, scale=2.0)
    assert set(g) == {"w", "b"} and isinstance(g["b"], list)
    r = w @ data + 0.5
    np.testing.assert_allclose(to_np(g["w"]), 4 * np.outer(r, data), rtol=1e-12)
    np.testing.assert_allclose(to_np(g["b"][0]), 4 * r.sum(), rtol=1e-12)


@dataclasses.dataclass
class Params:
    w: object
    b: object


@dataclasses.dataclass(frozen=True)
class FrozenParams:
    w: object
    b: object
    scale: object = dataclasses.field(default_factory=lambda: vj.constant(2.0), init=False)


WB = collections.namedtuple("WB", ["w", "b"])


def _default_dict(**kw):
    d = collections.defaultdict(list)
    d.update(kw)
    return d


NEST_KINDS = {
    "defaultdict": _default_dict,
    "OrderedDict": lambda **kw: collections.OrderedDict(sorted(kw.items(), reverse=True)),
    "namedtuple": lambda **kw: WB(**kw),
    "dataclass": lambda **kw: Params(**kw),
    "frozen dataclass": lambda **kw: FrozenParams(**kw),
}


def _wb(p):
    return (p["w"], p["b"]) if isinstance(p, dict) else (p.w, p.b)


def _nest_loss(p):
    w, b = _wb(p)
    return vj.reduce_sum(vj.sin(w) * b ** 2)


@pytest.mark.parametrize("kind", sorted(NEST_KINDS))
def test_nest_kinds_through_grad_jacobian_hessian_and_tape(kind):
    """Dict subclasses, namedtuples and dataclass instances are nodes of a nest: results
    come back in the same kind of node (a defaultdict used to fail deep inside)."""
    make = NEST_KINDS[kind]
    w0, b0 = RNG.standard_normal(3), RNG.standard_normal(3)
    params = make(w=w0, b=b0)
    gw, gb = np.cos(w0) * b0 ** 2, 2 * np.sin(w0) * b0

    g = vj.grad(_nest_loss)(params)
    assert type(g) is type(params)
    for got, want in zip(_wb(g), (gw, gb)):
        np.testing.assert_allclose(to_np(got), want, rtol=1e-12)
    if kind == "defaultdict":
        assert g.default_factory is list
    if kind == "frozen dataclass":  # every field is a leaf, init=False ones too: the
        assert float(g.scale) == 0.0  # rebuild does not go through __init__

    jac = vj.jacobian(lambda p: vj.sin(_wb(p)[0]) * _wb(p)[1] ** 2)(params)
    np.testing.assert_allclose(to_np(_wb(jac)[0]), np.diag(gw), rtol=1e-12)
    hess = vj.hessian(_nest_loss)(params)
    np.testing.assert_allclose(to_np(_wb(_wb(hess)[1])[1]), np.diag(2 * np.sin(w0)),
                               rtol=1e-12)
    np.testing.assert_allclose(to_np(_wb(vj.hvp(_nest_loss, params, make(
        w=np.zeros(3), b=np.ones(3))))[0]), 2 * np.cos(w0) * b0, rtol=1e-12)

    sources = make(w=vj.Variable(w0), b=vj.constant(b0))
    with vj.GradientTape() as tape:
        tape.watch(sources)
        y = _nest_loss(sources)
    g = tape.gradient(y, sources)
    assert type(g) is type(sources)
    for got, want in zip(_wb(g), (gw, gb)):
        np.testing.assert_allclose(to_np(got), want, rtol=1e-12)


def test_nest_structure_mismatch_names_the_kinds():
    with pytest.raises(ValueError, match=r"x is a Params \(dataclass\) with fields \['w', "
                                         r"'b'\], v is a dict"):
        vj.hvp(_nest_loss, Params(w=np.ones(2), b=np.ones(2)), {"w": 1.0, "b": 1.0})


def test_grad_has_aux_and_value_and_grad():
    def f(x):
        return vj.reduce_sum(x ** 2), {"mean": vj.reduce_mean(x)}
    g, aux = vj.grad(f, has_aux=True)(np.array([1.0, 2.0]))
    np.testing.assert_allclose(to_np(g), [2.0, 4.0])
    assert float(aux["mean"]) == 1.5
    (v, aux), g = vj.value_and_grad(f, has_aux=True)(np.array([1.0, 2.0]))
    assert float(v) == 5.0 and float(aux["mean"]) == 1.5
    v, g = vj.value_and_grad(cubic)(X3)
    np.testing.assert_allclose(float(v), cubic_np(X3))
    np.testing.assert_allclose(to_np(g), numerical_jacobian(cubic_np, X3), rtol=1e-6)


def test_grad_float32_preserved():
    x = X3.astype(np.float32)
    v, g = vj.value_and_grad(cubic)(x)
    assert v.dtype == np.float32 and g.dtype == np.float32
    assert vj.hessian(cubic)(x).dtype == np.float32
    assert vj.hvp(cubic, x, np.ones(3, np.float32)).dtype == np.float32
    assert vj.hvp(cubic, x, vj.ones(3, dtype=vj.float32)).dtype == np.float32
    with pytest.raises(TypeError, match="dtypes must be equal"):  # as JAX: no silent cast
        vj.hvp(cubic, x, np.ones(3))
    assert vj.jacobian(vj.sin)(x).dtype == np.float32
    np.testing.assert_allclose(to_np(g), numerical_jacobian(cubic_np, X3), rtol=1e-4)


def test_grad_same_tensor_twice_gets_independent_gradients():
    x = vj.constant(3.0)
    gx, gy = vj.grad(lambda a, b: a * b ** 2, argnums=(0, 1))(x, x)
    assert float(gx) == 9.0 and float(gy) == 18.0


def test_grad_of_variable_argument_and_higher_order():
    v = vj.Variable(2.0)
    assert float(vj.grad(lambda x: x ** 3)(v)) == 12.0
    assert float(vj.grad(vj.grad(lambda x: x ** 3))(2.0)) == 12.0
    assert float(vj.grad(vj.grad(vj.grad(lambda x: x ** 4)))(2.0)) == 48.0


def test_grad_seen_by_outer_tape():
    x = vj.constant(1.5)
    with vj.GradientTape() as tape:
        tape.watch(x)
        g = vj.grad(lambda t: vj.sin(t) * t)(x)  # cos(t) t + sin(t)
    second = tape.gradient(g, x)
    np.testing.assert_allclose(float(second), 2 * np.cos(1.5) - 1.5 * np.sin(1.5))


def test_unconnected_argument_gives_zeros():
    gx, gy = vj.grad(lambda x, y: x ** 2, argnums=(0, 1))(2.0, np.ones(3))
    assert float(gx) == 4.0 and to_np(gy).tolist() == [0.0, 0.0, 0.0]


def test_per_example_gradients_through_vectorized_map():
    w = RNG.standard_normal(3)
    xs = RNG.standard_normal((5, 3))
    per_example = vj.vectorized_map(
        lambda x: vj.grad(lambda w_: vj.reduce_sum(w_ * x) ** 2)(w), vj.constant(xs))
    expected = 2 * (xs @ w)[:, None] * xs
    np.testing.assert_allclose(to_np(per_example), expected, rtol=1e-12)


# -- jacobian / batch_jacobian -------------------------------------------------------------
def test_jacobian_matches_finite_differences_and_tape():
    f_np = lambda x: np.tanh(A @ x) * x  # noqa: E731
    f = lambda x: vj.tanh(vj.linalg.matvec(vj.constant(A), x)) * x  # noqa: E731
    J = vj.jacobian(f)(X3)
    assert J.shape == (3, 3)
    np.testing.assert_allclose(to_np(J), numerical_jacobian(f_np, X3), rtol=1e-6, atol=1e-9)
    x = vj.constant(X3)
    with vj.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    np.testing.assert_allclose(to_np(J), to_np(tape.jacobian(y, x)), rtol=1e-12)
    J2 = vj.jacobian(f, parallel_iterations=2)(X3)
    np.testing.assert_allclose(to_np(J2), to_np(J), rtol=1e-12)


def test_jacobian_shapes_nests_and_argnums():
    x = RNG.standard_normal((2, 3))
    y = RNG.standard_normal(4)

    def f(x, y):
        return {"a": vj.reduce_sum(x, axis=0) * 2.0, "b": [vj.reduce_sum(y) * x]}
    J = vj.jacobian(f, argnums=(0, 1))(x, y)
    ja_x, ja_y = J["a"]
    assert ja_x.shape == (3, 2, 3) and ja_y.shape == (3, 4)
    np.testing.assert_allclose(to_np(ja_x), 2 * np.broadcast_to(np.eye(3)[:, None, :],
                                                                  (3, 2, 3)))
    assert not np.any(to_np(ja_y))
    jb_x, jb_y = J["b"][0]
    assert jb_x.shape == (2, 3, 2, 3) and jb_y.shape == (2, 3, 4)
    np.testing.assert_allclose(to_np(jb_x), y.sum() * np.eye(6).reshape(2, 3, 2, 3))
    np.testing.assert_allclose(to_np(jb_y), np.broadcast_to(x[:, :, None], (2, 3, 4)))
    J, aux = vj.jacobian(lambda x: (x * 3.0, "aux"), has_aux=True)(np.ones(2))
    assert aux == "aux" and to_np(J).tolist() == [[3.0, 0.0], [0.0, 3.0]]


def test_batch_jacobian_matches_per_example_jacobians():
    W = RNG.standard_normal((3, 2))
    xs = RNG.standard_normal((4, 3))
    f = lambda x: vj.sigmoid(vj.matmul(x, vj.constant(W)))  # noqa: E731
    B = vj.batch_jacobian(f)(xs)
    assert B.shape == (4, 2, 3)
    for k in range(4):
        s = 1 / (1 + np.exp(-(xs[k] @ W)))
        np.testing.assert_allclose(to_np(B[k]), (s * (1 - s))[:, None] * W.T, rtol=1e-10)
    B32 = vj.batch_jacobian(f)(xs.astype(np.float32).astype(np.float64))
    np.testing.assert_allclose(to_np(B32), to_np(B), rtol=1e-6)
    assert vj.batch_jacobian(lambda x: x ** 2)(np.ones((2, 3), np.float32)).dtype == np.float32


# -- hessian / hvp / vjp -------------------------------------------------------------------
def test_hessian_closed_form_and_finite_differences():
    H = vj.hessian(quad)(X3)
    assert H.shape == (3, 3)
    np.testing.assert_allclose(to_np(H), A + A.T, rtol=1e-12, atol=1e-14)
    x = RNG.standard_normal((2, 2))
    H = vj.hessian(cubic)(x)
    assert H.shape == (2, 2, 2, 2)
    grad_np = lambda z: 2 * z * np.sin(z) + z ** 2 * np.cos(z)  # noqa: E731
    np.testing.assert_allclose(to_np(H), numerical_jacobian(grad_np, x), rtol=1e-6, atol=1e-8)


def test_hessian_blocks_over_argnums_tuple():
    f = lambda x, y: vj.reduce_sum(x ** 2) * vj.reduce_sum(y ** 3)  # noqa: E731
    x, y = np.array([1.0, 2.0]), np.array([1.0, -1.0, 2.0])
    H = vj.hessian(f, argnums=(0, 1))(x, y)
    assert [[h.shape for h in row] for row in H] == [[(2, 2), (2, 3)], [(3, 2), (3, 3)]]
    sx, sy = np.sum(x ** 2), np.sum(y ** 3)
    np.testing.assert_allclose(to_np(H[0][0]), 2 * sy * np.eye(2))
    np.testing.assert_allclose(to_np(H[0][1]), np.outer(2 * x, 3 * y ** 2))
    np.testing.assert_allclose(to_np(H[1][0]), np.outer(3 * y ** 2, 2 * x))
    np.testing.assert_allclose(to_np(H[1][1]), sx * np.diag(6 * y))


def test_hvp_matches_hessian_and_nests():
    v = RNG.standard_normal(3)
    np.testing.assert_allclose(to_np(vj.hvp(quad, X3, v)), (A + A.T) @ v, rtol=1e-12)
    x = {"a": np.array([1.0, 2.0]), "b": np.array(0.5)}
    v = {"a": np.array([1.0, -1.0]), "b": np.array(2.0)}
    f = lambda p: vj.reduce_sum(p["a"] ** 2) * p["b"] ** 2  # noqa: E731
    hv = vj.hvp(f, x, v)
    # H = [[2 b^2 I, 4 b a], [4 b a^T, 2 |a|^2]]
    b, a = 0.5, x["a"]
    np.testing.assert_allclose(to_np(hv["a"]), 2 * b ** 2 * v["a"] + 4 * b * a * v["b"])
    np.testing.assert_allclose(float(hv["b"]), 4 * b * a @ v["a"] + 2 * a @ a * v["b"])
    # linear f: the Hessian is zero, and hvp says so
    assert not np.any(to_np(vj.hvp(lambda z: vj.reduce_sum(z * 2.0), X3, np.ones(3))))


def test_vjp_matches_jacobian_transpose_and_is_reusable():
    f = lambda x, y: vj.sin(x) * y  # noqa: E731
    x, y = RNG.standard_normal(3), RNG.standard_normal(3)
    out, pull = vj.vjp(f, x, y)
    np.testing.assert_allclose(to_np(out), np.sin(x) * y)
    for ct in (np.ones(3), RNG.standard_normal(3)):
        gx, gy = pull(ct)
        np.testing.assert_allclose(to_np(gx), ct * np.cos(x) * y, rtol=1e-12)
        np.testing.assert_allclose(to_np(gy), ct * np.sin(x), rtol=1e-12)
    out, pull, aux = vj.vjp(lambda x: ([x * 2.0, x ** 2], 7), np.array([1.0, 3.0]),
                            has_aux=True)
    (g,) = pull([np.ones(2), np.ones(2)])
    assert aux == 7 and to_np(g).tolist() == [4.0, 8.0]
    (g32,) = vj.vjp(vj.sin, np.zeros(2, np.float32))[1](np.ones(2, np.float32))
    assert g32.dtype == np.float32
    with pytest.raises(TypeError, match="cotangent has dtype float64, expected float32"):
        vj.vjp(vj.sin, np.zeros(2, np.float32))[1](np.ones(2))


# -- bad input -------------------------------------------------------------------------------
@pytest.mark.parametrize("transform", [vj.grad, vj.value_and_grad, vj.jacobian,
                                       vj.batch_jacobian, vj.hessian])
def test_bad_argnums(transform):
    with pytest.raises(TypeError, match="argnums"):
        transform(cubic, argnums=1.0)
    with pytest.raises(TypeError, match="argnums"):
        transform(cubic, argnums=True)
    with pytest.raises(ValueError, match="argnums"):
        transform(cubic, argnums=())
    with pytest.raises(ValueError, match="repeated"):
        transform(cubic, argnums=(0, 0))
    with pytest.raises(ValueError, match="argnums 1 is out of range.*1 positional"):
        transform(cubic, argnums=1)(np.ones((2, 2)))
    with pytest.raises(TypeError, match="f must be callable"):
        transform(3.0)


@pytest.mark.parametrize("transform", [vj.grad, vj.value_and_grad, vj.jacobian, vj.hessian])
def test_has_aux_needs_a_pair(transform):
    with pytest.raises(ValueError, match="has_aux=True.*pair.*got Tensor"):
        transform(cubic, has_aux=True)(X3)
    with pytest.raises(ValueError, match="pair.*length 3"):
        transform(lambda x: (cubic(x), 1, 2), has_aux=True)(X3)
    with pytest.raises(TypeError, match="has_aux must be a bool"):
        transform(cubic, has_aux="yes")


@pytest.mark.parametrize("transform", [vj.grad, vj.value_and_grad, vj.hessian])
def test_scalar_output_required(transform):
    with pytest.raises(ValueError, match=r"scalar.*shape \(3,\)"):
        transform(vj.sin)(X3)
    with pytest.raises(ValueError, match="scalar.*list"):
        transform(lambda x: [cubic(x)])(X3)
    with pytest.raises(ValueError, match=r"hvp: .*scalar.*shape \(3,\)"):
        vj.hvp(vj.sin, X3, X3)


@pytest.mark.parametrize("transform", [vj.grad, vj.jacobian, vj.hessian, vj.batch_jacobian])
def test_non_float_inputs_name_the_argument(transform):
    def f(x, weights):
        return vj.reduce_sum(x * weights)
    with pytest.raises(TypeError, match=r"argument 1 \(weights\).*floating.*int64"):
        transform(f, argnums=(0, 1))(np.ones((2, 2)), np.ones((2, 2), dtype=np.int64))
    with pytest.raises(TypeError, match=r"argument 0 \(x\).*floating"):
        transform(f)(3, 1.0)
    with pytest.raises(TypeError, match=r"argument 0 \(x\).*floating.*str"):
        transform(f)({"a": "text"}, 1.0)


def test_non_float_output_and_vjp_inputs():
    with pytest.raises(TypeError, match="floating point values.*int64"):
        vj.grad(lambda x: vj.constant(3))(1.0)
    with pytest.raises(TypeError, match="vjp: argument 0.*floating"):
        vj.vjp(lambda x: x, np.arange(3))
    with pytest.raises(ValueError, match="at least one argument"):
        vj.vjp(vj.sin)


def test_hvp_v_must_match_x():
    with pytest.raises(ValueError, match=r"hvp: v has shape \(2,\), expected \(3,\)"):
        vj.hvp(cubic, X3, np.ones(2))
    with pytest.raises(ValueError, match="hvp: v must have the structure of x.*dict"):
        vj.hvp(lambda p: cubic(p["a"]), {"a": X3}, [np.ones(3)])
    with pytest.raises(ValueError, match=r"hvp: v \(leaf 1\) has shape \(\), expected \(2,\)"):
        vj.hvp(lambda p: cubic(p[0]) + cubic(p[1]), [X3, np.ones(2)], [X3, 1.0])
    with pytest.raises(TypeError, match="hvp: v"):
        vj.hvp(cubic, X3, "abc")


def test_vjp_cotangent_must_match_output():
    _, pull = vj.vjp(vj.sin, X3)
    with pytest.raises(ValueError, match=r"cotangent has shape \(2,\), expected \(3,\)"):
        pull(np.ones(2))
    with pytest.raises(ValueError, match="structure of f's output"):
        pull([np.ones(3), np.ones(3)])


def test_batch_jacobian_rejects_nested_output():
    with pytest.raises(ValueError, match="batch_jacobian: f must return one Tensor"):
        vj.batch_jacobian(lambda x: [x, x])(np.ones((2, 2)))


# -- complex values ----------------------------------------------------------------------
Z = np.array([1.0 + 2.0j, 0.5 - 1.0j])
XR = np.array([0.3, 0.7])


def _through_complex(x):
    """|exp(x (0.5 + i))| = exp(0.5 x): real in and out, complex in between."""
    return vj.abs(vj.exp(vj.cast(x, vj.complex128) * vj.constant(0.5 + 1.0j)))


def _tape(method, make_source, f):
    src = vj.constant(make_source())
    with vj.GradientTape(persistent=True) as tape:
        tape.watch(src)
        y = f(src)
    return getattr(tape, method)(y, src)


def _accumulator(f):
    x = vj.constant(XR)
    with vj.autodiff.ForwardAccumulator(x, vj.ones_like(x)) as acc:
        y = f(x)
    return acc.jvp(y)


def _sum_through(x):
    return vj.reduce_sum(_through_complex(x))


_HALF = 0.5 * np.exp(0.5 * XR)  # d/dx exp(0.5 x), the closed form of _through_complex
# real in, real out, complex in between: the real derivative, in every transform (the
# old refusal guarded exactly this path: it once gave -0.18 where 0.58 is right)
REAL_THROUGH_COMPLEX = {
    "tape gradient": (lambda: _tape("gradient", lambda: XR, _sum_through), _HALF),
    "tape jacobian": (lambda: _tape("jacobian", lambda: XR, _through_complex), np.diag(_HALF)),
    "tape batch_jacobian": (lambda: _tape("batch_jacobian", lambda: XR[:, None],
                                          _through_complex), _HALF[:, None, None]),
    "accumulator": (lambda: _accumulator(_through_complex), _HALF),
    "grad": (lambda: vj.grad(_sum_through)(XR), _HALF),
    "jacobian": (lambda: vj.jacobian(_through_complex)(XR), np.diag(_HALF)),
    "jacfwd": (lambda: vj.jacfwd(_through_complex)(XR), np.diag(_HALF)),
    "jacrev": (lambda: vj.jacrev(_through_complex)(XR), np.diag(_HALF)),
    "hessian": (lambda: vj.hessian(_sum_through)(XR), np.diag(0.5 * _HALF)),
    "hvp": (lambda: vj.hvp(_sum_through, XR, np.ones(2)), 0.5 * _HALF),
    "vjp": (lambda: vj.vjp(_through_complex, XR)[1](np.ones(2))[0], _HALF),
    "jvp": (lambda: vj.jvp(_through_complex, (XR,), (np.ones(2),))[1], _HALF),
}


@pytest.mark.parametrize("name", sorted(REAL_THROUGH_COMPLEX))
def test_real_function_through_complex_values_has_the_real_derivative(name):
    call, expected = REAL_THROUGH_COMPLEX[name]
    got = call()
    assert got.dtype == np.float64, name
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-12, err_msg=name)


# JAX's dtype rules of the functional API (holomorphic=False): an error naming the dtype
JAX_COMPLEX_ERRORS = {
    "grad, complex output": lambda: vj.grad(
        lambda x: vj.reduce_sum(vj.cast(x, vj.complex128)))(XR),
    "jacrev, complex output": lambda: vj.jacrev(lambda x: vj.cast(x, vj.complex128))(XR),
    "jacfwd, complex input": lambda: vj.jacfwd(vj.abs)(Z),
    "hessian, complex input": lambda: vj.hessian(lambda z: vj.reduce_sum(vj.abs(z)))(Z),
    "grad holomorphic, real input": lambda: vj.grad(lambda x: x * 1j, holomorphic=True)(0.5),
    "grad holomorphic, real output": lambda: vj.grad(lambda z: vj.abs(z),
                                                     holomorphic=True)(1j),
}


@pytest.mark.parametrize("name", sorted(JAX_COMPLEX_ERRORS))
def test_jax_dtype_rules_for_complex_values(name):
    with pytest.raises(TypeError, match="complex|real-valued"):
        JAX_COMPLEX_ERRORS[name]()


def test_complex_values_off_the_differentiated_path_are_fine():
    x = vj.constant(XR)
    with vj.GradientTape() as tape:
        tape.watch(x)
        side = vj.abs(vj.exp(vj.cast(vj.stop_gradient(x), vj.complex128) * 1j))
        y = vj.reduce_sum(x * x * side)
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), 2 * XR)  # |exp(i x)| = 1


# -- progress bars ---------------------------------------------------------------------------
class FakeBar:
    made = []

    def __init__(self, total, desc, **kwargs):
        self.total, self.desc, self.updates, self.closed = total, desc, [], False
        FakeBar.made.append(self)

    def update(self, n):
        self.updates.append(n)

    def close(self):
        self.closed = True


@pytest.fixture
def fake_tqdm(monkeypatch):
    FakeBar.made = []
    monkeypatch.setattr(vj_progress, "_tqdm", lambda: FakeBar)
    return FakeBar.made


def _tape_jac(method, **kw):
    x = vj.constant(RNG.standard_normal((2, 5)))
    with vj.GradientTape() as tape:
        tape.watch(x)
        y = x ** 2
    return getattr(tape, method)(y, x, **kw)


def test_progress_over_chunks_for_tape_and_functional(fake_tqdm):
    J = _tape_jac("jacobian", parallel_iterations=4, progress=True)
    assert J.shape == (2, 5, 2, 5)
    bar, = fake_tqdm
    assert (bar.total, bar.desc, bar.updates, bar.closed) == (10, "jacobian", [4, 4, 2], True)
    B = _tape_jac("batch_jacobian", parallel_iterations=2, progress=True)
    assert B.shape == (2, 5, 5) and fake_tqdm[1].desc == "batch_jacobian"
    assert sum(fake_tqdm[1].updates) == fake_tqdm[1].total == 7  # 5 columns, 2 probes
    vj.jacobian(vj.sin, parallel_iterations=2, progress=True)(X3)
    assert fake_tqdm[2].updates == [2, 1]
    vj.hessian(cubic, parallel_iterations=1, progress=True)(X3)
    assert fake_tqdm[3].updates == [1, 1, 1]
    vj.batch_jacobian(lambda x: x ** 2, parallel_iterations=1, progress=True)(np.ones((2, 2)))
    assert len(fake_tqdm) == 5


def test_no_progress_by_default_or_unchunked(fake_tqdm, capsys):
    _tape_jac("jacobian", parallel_iterations=3)
    _tape_jac("jacobian", progress=True)  # one chunk: no bar
    vj.jacobian(vj.sin, parallel_iterations=1)(X3)
    assert fake_tqdm == []
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == ""


def test_progress_real_tqdm_writes_stderr_and_absent_tqdm_is_silent(monkeypatch, capsys):
    pytest.importorskip("tqdm")
    _tape_jac("jacobian", parallel_iterations=3, progress=True)
    assert "jacobian" in capsys.readouterr().err
    monkeypatch.setattr(vj_progress, "_tqdm", lambda: None)
    J = _tape_jac("jacobian", parallel_iterations=3, progress=True)
    captured = capsys.readouterr()
    assert J.shape == (2, 5, 2, 5) and captured.err == "" and captured.out == ""


def test_progress_must_be_bool():
    with pytest.raises(TypeError, match="progress must be a bool"):
        _tape_jac("jacobian", progress="yes")
    with pytest.raises(TypeError, match="jacobian: progress must be a bool"):
        vj.jacobian(vj.sin, progress=1)


def test_hessian_has_aux():
    H, aux = vj.hessian(lambda x: (vj.reduce_sum(x ** 3), x * 2.0), has_aux=True)(
        np.array([1.0, 2.0]))
    np.testing.assert_allclose(np.asarray(H), np.diag([6.0, 12.0]))
    np.testing.assert_allclose(np.asarray(aux), [2.0, 4.0])


def test_linearize_with_aux():
    x = np.array([0.3, -1.2])
    y, f_jvp, aux = vj.linearize(lambda v: (vj.sin(v) * v, {"n": vj.cos(v)}), x, has_aux=True)
    np.testing.assert_allclose(y.numpy(), np.sin(x) * x)
    np.testing.assert_allclose(f_jvp(np.ones(2)).numpy(), np.cos(x) * x + np.sin(x))
    np.testing.assert_allclose(aux["n"].numpy(), np.cos(x))
    with pytest.raises(TypeError, match="has_aux must be a bool"):
        vj.linearize(vj.sin, x, has_aux="yes")


# -- jacobian(mode="auto"): the first call learns the output size without an extra pass ------
def test_auto_mode_first_call_runs_f_once():
    calls = []

    def trajectory(p):  # 3 parameters, 200 outputs: forward mode
        calls.append(1)
        t = vj.constant(np.linspace(0.0, 1.0, 200))
        return p[0] * vj.exp(-p[1] * t) + p[2] * t
    p = np.array([1.0, 0.5, 0.2])
    jac = vj.jacobian(trajectory)
    first = jac(p).numpy()
    assert len(calls) == 1  # no recorded pass spent on learning the output size
    t = np.linspace(0.0, 1.0, 200)
    expected = np.stack([np.exp(-p[1] * t), -p[0] * t * np.exp(-p[1] * t), t], axis=1)
    np.testing.assert_allclose(first, expected, rtol=1e-13)

    def loss(x):  # 100 inputs, a scalar: reverse mode, whose recorded pass is the work
        calls.append(1)
        return vj.reduce_sum(x ** 3)
    calls.clear()
    x = np.linspace(-1.0, 1.0, 100)
    np.testing.assert_allclose(vj.jacobian(loss)(x).numpy(), 3 * x ** 2, rtol=1e-14)
    assert len(calls) == 1


def test_auto_mode_later_calls_take_the_learned_mode():
    # 3 inputs, 1 output: the first call ran forward mode, later ones reverse; same values
    f = lambda x: vj.reshape(vj.reduce_sum(vj.sin(x) * x), [1])  # noqa: E731
    jac = vj.jacobian(f)
    x = np.array([0.3, -1.2, 2.0])
    expected = np.sin(x) + x * np.cos(x)
    for _ in range(2):
        np.testing.assert_allclose(jac(x).numpy(), expected[None, :], rtol=1e-14)
