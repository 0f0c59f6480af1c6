"""Differential checks against JAX in float64 of the forward-mode and second-order
functional API: vj.jvp, vj.linearize, vj.jacfwd, vj.jacobian(mode=...), vj.hessian and
vj.hvp against jax.jvp, jax.linearize, jax.jacfwd, jax.hessian and jvp-of-grad, on one
table of functions written once with vecjac and once with jax.numpy; then the API
contract (argnums, has_aux, nests, float32, scalars) and bad input. Skipped where JAX is
not installed (it is not a dependency; `pip install -e ".[peers]"` installs it, as CI does).

Inputs sit inside each function's domain and away from kinks (abs, relu, max, sort ties),
where the two libraries may choose different one-sided derivatives.

Deliberate: d/dx xlogy(x, y) (xdivy, xlog1py) at x = 0 is 0, TF's convention."""
import functools

import numpy as np
import pytest

import vecjac as vj

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)
from tests.conformance.jax_support import jax_run  # noqa: E402  (needs jax)
jnp = jax.numpy
jsp = jax.scipy

RNG = np.random.default_rng(11)

X = np.array([-1.3, -0.7, -0.25, 0.4, 0.9, 1.6])      # signs mixed, no zero
XP = np.array([0.3, 0.55, 0.8, 1.2, 1.7, 2.5])        # positive
XU = np.array([-0.8, -0.45, -0.1, 0.2, 0.55, 0.75])   # inside (-1, 1)
Y = np.array([0.8, -1.1, 0.35, -0.6, 1.4, 0.2])       # a second argument
A = RNG.standard_normal((4, 4)) / 3 + 2 * np.eye(4)   # well conditioned
B = RNG.standard_normal((4, 2))
C = RNG.standard_normal((4, 3))                       # tall, distinct singular values
SINGULAR = np.array([[1.0, 2, 3], [1, 2, 3], [4, 5, 7]])  # rank 2, LU hits an exact 0 pivot
X0 = np.array([0.0, 0.5, -1.2, 0.0])                  # xlogy's x, with zeros
Y0 = np.array([0.7, 2.0, 1.5, 3.0])


def _weights(shape):
    """Fixed position-dependent weights (a plain array, the same in both libraries)."""
    n = int(np.prod(shape, dtype=int))
    return np.linspace(0.5, 1.5, n).reshape(shape) if n else np.zeros(shape)


def scalarize_vj(f):
    def s(*args):
        total = 0.0
        for y in vj.nest.flatten(f(*args)):
            total = total + vj.reduce_sum(_weights(tuple(y.shape)) * (y + 0.5 * y * y))
        return total
    return s


def scalarize_jax(f):
    def s(*args):
        total = 0.0
        for y in jax.tree_util.tree_leaves(f(*args)):
            total = total + jnp.sum(_weights(y.shape) * (y + 0.5 * y * y))
        return total
    return s


def _layer_norm_vj(x):
    x = vj.reshape(x, (2, 3))
    mean = vj.reduce_mean(x, axis=-1, keepdims=True)
    var = vj.reduce_mean(vj.square(x - mean), axis=-1, keepdims=True)
    return (x - mean) * vj.rsqrt(var + 1e-5) * np.array([1.0, 0.5, 2.0]) + 0.1


def _layer_norm_jax(x):
    x = x.reshape(2, 3)
    mean = jnp.mean(x, axis=-1, keepdims=True)
    var = jnp.mean(jnp.square(x - mean), axis=-1, keepdims=True)
    return (x - mean) * jax.lax.rsqrt(var + 1e-5) * np.array([1.0, 0.5, 2.0]) + 0.1


def case(f_vj, f_jax, *args, rtol=1e-9, marks=()):
    return {"vj": f_vj, "jax": f_jax, "args": args, "rtol": rtol, "marks": marks}


def group(fns, *args):
    """Several functions of the same inputs as one case: its output is a dict keyed by
    function (a failure names the leaf). One case costs JAX one trace and compilation."""
    return case(lambda *v: {k: fv(*v) for k, (fv, _) in fns.items()},
                lambda *v: {k: fj(*v) for k, (_, fj) in fns.items()}, *args)


def xfail(reason, raises=AssertionError):
    return (pytest.mark.xfail(strict=True, reason=reason, raises=raises),)


# name: vecjac function, jax function, inputs (one positional argument each)
CASES = {
    # -- elementwise math: one case per domain, a dict output keyed by function ------------
    "trig/hyperbolic": group({
        "sin": (vj.sin, jnp.sin), "cos": (vj.cos, jnp.cos),
        "tan": (lambda x: vj.tan(x * 0.6), lambda x: jnp.tan(x * 0.6)),
        "tanh": (vj.tanh, jnp.tanh), "sinh": (vj.sinh, jnp.sinh), "cosh": (vj.cosh, jnp.cosh),
        "arctan": (vj.atan, jnp.arctan), "arcsinh": (vj.asinh, jnp.arcsinh)}, X),
    "inverse trig (-1, 1)": group({
        "arcsin": (vj.asin, jnp.arcsin), "arccos": (vj.acos, jnp.arccos),
        "arctanh": (vj.atanh, jnp.arctanh), "log1p": (vj.math.log1p, jnp.log1p),
        "arccosh(x + 2)": (lambda x: vj.acosh(x + 2.0), lambda x: jnp.arccosh(x + 2.0))}, XU),
    "exp/log/powers": group({
        "exp": (vj.exp, jnp.exp), "expm1": (vj.math.expm1, jnp.expm1),
        "log": (vj.math.log, jnp.log), "sqrt": (vj.sqrt, jnp.sqrt),
        "rsqrt": (vj.math.rsqrt, jax.lax.rsqrt), "square": (vj.square, jnp.square),
        "pow scalar": (lambda x: x ** 3 + x ** 2.5 + vj.pow(x, -1.5),
                       lambda x: x ** 3 + x ** 2.5 + x ** -1.5)}, XP),
    "special": group({
        "erf": (vj.erf, jsp.special.erf), "erfc": (vj.erfc, jsp.special.erfc),
        "lgamma": (lambda x: vj.math.lgamma(x + 2.0), lambda x: jsp.special.gammaln(x + 2.0)),
        "digamma": (lambda x: vj.math.digamma(x + 2.0),
                    lambda x: jsp.special.digamma(x + 2.0)),
        "sigmoid": (vj.sigmoid, jax.nn.sigmoid), "softplus": (vj.nn.softplus, jax.nn.softplus)},
        X),
    "kinks away from the kink": group({  # abs, sign, clip, relu: no input at a kink
        "abs": (lambda x: vj.abs(x) * x, lambda x: jnp.abs(x) * x),
        "sign-like": (lambda x: vj.sign(x) * x ** 2 + vj.nn.softsign(x),
                      lambda x: jnp.sign(x) * x ** 2 + jax.nn.soft_sign(x)),
        "clip": (lambda x: vj.clip_by_value(x, -0.5, 1.0) * x,
                 lambda x: jnp.clip(x, -0.5, 1.0) * x),
        "relu": (lambda x: vj.nn.relu(x) * x, lambda x: jax.nn.relu(x) * x),
        "leaky_relu": (lambda x: vj.nn.leaky_relu(x, alpha=0.1) * x,
                       lambda x: jax.nn.leaky_relu(x, negative_slope=0.1) * x)}, X),
    "activations": group({
        "elu": (vj.nn.elu, jax.nn.elu), "silu": (vj.nn.silu, jax.nn.silu),
        "gelu exact": (vj.nn.gelu, lambda x: jax.nn.gelu(x, approximate=False)),
        "gelu tanh": (lambda x: vj.nn.gelu(x, approximate=True),
                      lambda x: jax.nn.gelu(x, approximate=True))}, X),
    "binary (x > 0, y)": group({
        "pow tensor exponent": (vj.pow, lambda x, y: x ** y),
        "atan2": (lambda x, y: vj.atan2(y, x), lambda x, y: jnp.arctan2(y, x)),
        "maximum/minimum": (lambda x, y: vj.maximum(x, y) * vj.minimum(x, y ** 2),
                            lambda x, y: jnp.maximum(x, y) * jnp.minimum(x, y ** 2)),
        "where": (lambda x, y: vj.where(y > 0, vj.sin(x) * y, y ** 2 - x),
                  lambda x, y: jnp.where(y > 0, jnp.sin(x) * y, y ** 2 - x)),
        "xlogy/xdivy/xlog1py": (
            lambda x, y: [vj.xlogy(y, x), vj.xdivy(y, x), vj.math.xlog1py(y, x)],
            lambda x, y: [jsp.special.xlogy(y, x), y / x, jsp.special.xlog1py(y, x)])},
        XP, Y),
    # (at x = 0, d/dx xlogy(x, y) is 0 in vecjac, as TF's gradient (x != 0) * log(y),
    # where JAX gives log(y): a deliberate TF convention, tested in
    # tests/ops/elementwise/test_unary.py, so x = 0 is not compared here)
    # -- reductions (distinct values: no ties at max / min) -------------------------------
    "reductions": group({
        "sum axis": (lambda x: vj.reduce_sum(vj.reshape(x, (2, 3)) ** 3, axis=0),
                     lambda x: jnp.sum(x.reshape(2, 3) ** 3, axis=0)),
        "mean keepdims": (lambda x: vj.reduce_mean(vj.sin(vj.reshape(x, (2, 3))), axis=1,
                                                   keepdims=True),
                          lambda x: jnp.mean(jnp.sin(x.reshape(2, 3)), axis=1, keepdims=True)),
        "prod axis": (lambda x: vj.reduce_prod(vj.reshape(x, (3, 2)), axis=0),
                      lambda x: jnp.prod(x.reshape(3, 2), axis=0)),
        "prod all": (vj.reduce_prod, jnp.prod),
        "max/min axis": (lambda x: vj.reduce_max(vj.reshape(x, (2, 3)), axis=1) *
                         vj.reduce_min(vj.reshape(x, (3, 2)), axis=0)[:2],
                         lambda x: jnp.max(x.reshape(2, 3), axis=1) *
                         jnp.min(x.reshape(3, 2), axis=0)[:2]),
        "max all": (lambda x: vj.reduce_max(x) * x, lambda x: jnp.max(x) * x),
        "logsumexp": (lambda x: vj.reduce_logsumexp(vj.reshape(x, (2, 3)), axis=-1),
                      lambda x: jsp.special.logsumexp(x.reshape(2, 3), axis=-1))}, X),
    "std/var": group({
        "std axis keepdims * var axis": (
            lambda x: vj.reduce_std(vj.reshape(x, (2, 3)), axis=1, keepdims=True) *
            vj.reduce_variance(vj.reshape(x, (2, 3)), axis=0),
            lambda x: jnp.std(x.reshape(2, 3), axis=1, keepdims=True) *
            jnp.var(x.reshape(2, 3), axis=0)),
        "std all": (vj.reduce_std, jnp.std),
        "var axis tuple": (lambda x: vj.reduce_variance(vj.reshape(x, (1, 2, 3)), axis=(0, 2)),
                           lambda x: jnp.var(x.reshape(1, 2, 3), axis=(0, 2)))}, X),
    # -- linear algebra ----------------------------------------------------------------------
    "matmul/einsum/solve": group({
        "matmul": (vj.matmul, jnp.matmul),
        "einsum": (lambda a, b: vj.einsum("ij,ik,jl->kl", a, b, a),
                   lambda a, b: jnp.einsum("ij,ik,jl->kl", a, b, a)),
        "solve": (vj.linalg.solve, jnp.linalg.solve)}, A, B),
    "inv/det/slogdet/trace": group({
        "inv": (vj.linalg.inv, jnp.linalg.inv), "det": (vj.linalg.det, jnp.linalg.det),
        "slogdet": (lambda a: vj.linalg.slogdet(a)[1], lambda a: jnp.linalg.slogdet(a)[1]),
        "trace": (lambda a: vj.linalg.trace(a @ a @ a), lambda a: jnp.trace(a @ a @ a))}, A),
    # det is a polynomial: derivatives of every order exist at singular matrices (the
    # first is the cofactor matrix); JAX computes them, finite differences agree
    "det singular": case(vj.linalg.det, jnp.linalg.det, SINGULAR),
    "symmetric: logdet/cholesky/eigh": group({
        "logdet": (lambda a: vj.linalg.logdet(a @ vj.transpose(a)),
                   lambda a: jnp.linalg.slogdet(a @ a.T)[1]),
        "cholesky": (lambda a: vj.linalg.cholesky(a @ vj.transpose(a) + np.eye(4)),
                     lambda a: jnp.linalg.cholesky(a @ a.T + np.eye(4))),
        "eigh values": (lambda a: vj.linalg.eigvalsh(a + vj.transpose(a)),
                        lambda a: jnp.linalg.eigvalsh(a + a.T))}, A),
    # A is full: both read only the triangle named (the other gets a zero derivative)
    "triangular solve": group({
        "lower": (lambda a, b: vj.linalg.triangular_solve(a, b, lower=True),
                  lambda a, b: jsp.linalg.solve_triangular(a, b, lower=True)),
        "upper adjoint": (
            lambda a, b: vj.linalg.triangular_solve(a, b, lower=False, adjoint=True),
            lambda a, b: jsp.linalg.solve_triangular(a, b, lower=False, trans="T"))}, A, B),
    "svd values/norm": group({
        "svd values": (lambda c: vj.linalg.svd(c, compute_uv=False),
                       lambda c: jnp.linalg.svd(c, compute_uv=False)),
        "norm": (lambda c: vj.norm(c) * vj.norm(c, axis=1) + vj.norm(c[0], ord=1),
                 lambda c: jnp.linalg.norm(c) * jnp.linalg.norm(c, axis=1)
                 + jnp.linalg.norm(c[0], ord=1))}, C),
    "qr": group({"q": (lambda c: vj.linalg.qr(c)[0], lambda c: jnp.linalg.qr(c)[0]),
                 "r (np.linalg.qr)": (lambda c: np.linalg.qr(c)[1],
                                      lambda c: jnp.linalg.qr(c)[1])}, C),
    "qr wide": group({"q": (lambda c: vj.linalg.qr(vj.transpose(c))[0],
                            lambda c: jnp.linalg.qr(c.T)[0]),
                      "r": (lambda c: vj.linalg.qr(vj.transpose(c))[1],
                            lambda c: jnp.linalg.qr(c.T)[1])}, C),
    # -- shapes and indexing ------------------------------------------------------------------
    "shapes": group({
        "reshape/transpose": (
            lambda x: vj.transpose(vj.reshape(x, (2, 3))) * np.arange(1, 4.0)[:, None],
            lambda x: x.reshape(2, 3).T * np.arange(1, 4.0)[:, None]),
        "split": (lambda x: [p * (k + 1.0) for k, p in enumerate(vj.split(x, [1, 2, 3]))],
                  lambda x: [p * (k + 1.0) for k, p in enumerate(jnp.split(x, [1, 3]))]),
        "pad": (lambda x: vj.pad(vj.reshape(x, (2, 3)), [[1, 0], [2, 1]], constant_values=0.5)
                * vj.pad(vj.reshape(x, (2, 3)), [[1, 0], [1, 2]], mode="SYMMETRIC"),
                lambda x: jnp.pad(x.reshape(2, 3), ((1, 0), (2, 1)), constant_values=0.5)
                * jnp.pad(x.reshape(2, 3), ((1, 0), (1, 2)), mode="symmetric")),
        "tile/roll": (lambda x: vj.tile(vj.reshape(x, (2, 3)), [2, 1]) *
                      vj.roll(vj.reshape(x, (3, 2)), 1, axis=0)[[0, 1, 2, 0]][:, [0, 1, 0]],
                      lambda x: jnp.tile(x.reshape(2, 3), (2, 1)) *
                      jnp.roll(x.reshape(3, 2), 1, axis=0)[np.array([0, 1, 2, 0])][
                          :, np.array([0, 1, 0])]),
        "cumsum reverse * cumprod exclusive": (
            lambda x: vj.cumsum(vj.reshape(x, (2, 3)), axis=1, reverse=True) *
            vj.cumprod(vj.reshape(x, (2, 3)), axis=1, exclusive=True),
            lambda x: jnp.flip(jnp.cumsum(jnp.flip(x.reshape(2, 3), 1), axis=1), 1) *
            jnp.concatenate([jnp.ones((2, 1)), jnp.cumprod(x.reshape(2, 3), axis=1)[:, :2]],
                            1)),
        "sort": (lambda x: vj.sort(x * np.array([1.0, -1, 1, -1, 1, 1])) * np.arange(1, 7.0),
                 lambda x: jnp.sort(x * np.array([1.0, -1, 1, -1, 1, 1])) * np.arange(1, 7.0))},
        X),
    "concat/stack": case(lambda x, y: vj.stack([vj.concat([x[:2], y[3:]], 0),
                                                vj.concat([y[:3] * x[3:], x[2:4] * 0.0 + 1.0],
                                                          0)[:5]], axis=1),
                         lambda x, y: jnp.stack([jnp.concatenate([x[:2], y[3:]]),
                                                 jnp.concatenate([y[:3] * x[3:],
                                                                  x[2:4] * 0.0 + 1.0])[:5]],
                                                axis=1), X, Y),
    "gather/slicing": group({
        "gather": (lambda a: vj.gather(a, [2, 0, 2], axis=1) * vj.gather(a[0], [3, 3, 1]),
                   lambda a: a[:, np.array([2, 0, 2])] * a[0][np.array([3, 3, 1])]),
        "slicing": (lambda a: a[::-2, 1:] * a[-3:-1, ::-1][:, :3] + a[-1, ::3][0],
                    lambda a: a[::-2, 1:] * a[-3:-1, ::-1][:, :3] + a[-1, ::3][0]),
        "fancy indexing": (lambda a: a[[0, 2, 2], 1:] * a[:, [3, 0, 1]][:3],
                           lambda a: a[np.array([0, 2, 2]), 1:] * a[:, np.array([3, 0, 1])][:3])},
        A),
    # -- nn ---------------------------------------------------------------------------------
    "softmax/log_softmax/layer norm": group({
        "softmax": (lambda x: vj.nn.softmax(vj.reshape(x, (2, 3)), axis=0),
                    lambda x: jax.nn.softmax(x.reshape(2, 3), axis=0)),
        "log_softmax": (vj.nn.log_softmax, jax.nn.log_softmax),
        "layer norm": (_layer_norm_vj, _layer_norm_jax)}, X),
}

NAMES = sorted(CASES)


def params(names=NAMES):
    return [pytest.param(n, marks=CASES[n]["marks"], id=n) for n in names]


def _tangents(args, seed):
    rng = np.random.default_rng(seed)
    return tuple(rng.standard_normal(np.shape(a)) for a in args)


def _leaves(tree):
    """Leaves as NumPy arrays, their paths and the container structure (vecjac Tensors
    and jax arrays are leaves for jax.tree_util)."""
    pairs, treedef = jax.tree_util.tree_flatten_with_path(tree)
    return ([np.asarray(x.numpy() if isinstance(x, vj.Tensor) else x) for _, x in pairs],
            [jax.tree_util.keystr(p) for p, _ in pairs], treedef)


def assert_close(ours, theirs, rtol=1e-9, atol=None, dtype=None):
    """Same nest structure, shapes and values (atol relative to the leaf's magnitude);
    with dtype, every leaf of ours has that dtype."""
    a, _, da = _leaves(ours)
    b, paths, db = _leaves(theirs)
    assert da == db, f"structure {da} != {db}"
    for x, y, path in zip(a, b, paths):
        assert x.shape == y.shape, f"leaf {path}: shape {x.shape} != {y.shape}"
        if dtype is not None:
            assert x.dtype == dtype, f"leaf {path}: dtype {x.dtype}, expected {dtype}"
        scale = max(1.0, float(np.max(np.abs(y), initial=0.0)))
        np.testing.assert_allclose(x, y, rtol=rtol, atol=(atol or rtol * 1e-2) * scale,
                                   err_msg=f"leaf {path}")


def _argnums(args):
    return 0 if len(args) == 1 else tuple(range(len(args)))


# JAX references, all at once per case: one jitted function (JAX's eager mode compiles
# every primitive for every new shape, and takes minutes for this table), compiled with
# XLA's cheapest settings (tests/conformance/jax_support.py: jax_run)


LIN_SEEDS = (2, 3, 4)


@functools.cache
def jax_refs(name):
    c = CASES[name]
    f, s, argnums = c["jax"], scalarize_jax(c["jax"]), _argnums(c["args"])

    def refs(args, jvp_t, lin_ts, hvp_v):
        y, f_jvp = jax.linearize(f, *args)
        return {"jvp": jax.jvp(f, args, jvp_t),
                "linearize": (y, [f_jvp(*t) for t in lin_ts]),
                "jacfwd": jax.jacfwd(f, argnums=argnums)(*args),
                "hessian": jax.hessian(s, argnums=argnums)(*args),
                # the hvp of s at args (a tuple: vj.hvp takes one nest), forward over reverse
                "hvp": jax.jvp(jax.grad(lambda xs: s(*xs)), (args,), (hvp_v,))[1]}
    args = c["args"]
    return jax_run(refs, args, _tangents(args, 1), [_tangents(args, k) for k in LIN_SEEDS],
                   _tangents(args, 5))


# -- the table, mode by mode -----------------------------------------------------------------
@pytest.mark.parametrize("name", params())
def test_jvp(name):
    c = CASES[name]
    y, ty = vj.jvp(c["vj"], c["args"], _tangents(c["args"], 1))
    y_ref, ty_ref = jax_refs(name)["jvp"]
    assert_close(y, y_ref, rtol=1e-12)
    assert_close(ty, ty_ref, rtol=c["rtol"])


@pytest.mark.parametrize("name", params())
def test_linearize(name):
    c = CASES[name]
    y, f_jvp = vj.linearize(c["vj"], *c["args"])
    y_ref, ts_ref = jax_refs(name)["linearize"]
    assert_close(y, y_ref, rtol=1e-12)
    for seed, t_ref in zip(LIN_SEEDS, ts_ref):
        assert_close(f_jvp(*_tangents(c["args"], seed)), t_ref, rtol=c["rtol"])


JACOBIANS = {
    "jacfwd": lambda f, argnums: vj.jacfwd(f, argnums=argnums),
    "fwd": lambda f, argnums: vj.jacobian(f, argnums=argnums, mode="fwd"),
    "rev": lambda f, argnums: vj.jacobian(f, argnums=argnums, mode="rev"),
    "auto": lambda f, argnums: vj.jacobian(f, argnums=argnums),
}


@pytest.mark.parametrize("mode", sorted(JACOBIANS))
@pytest.mark.parametrize("name", params())
def test_jacobian(name, mode):
    c = CASES[name]
    ours = JACOBIANS[mode](c["vj"], _argnums(c["args"]))(*c["args"])
    assert_close(ours, jax_refs(name)["jacfwd"], rtol=c["rtol"])


@pytest.mark.parametrize("name", params())
def test_hessian(name):
    c = CASES[name]
    ours = vj.hessian(scalarize_vj(c["vj"]), argnums=_argnums(c["args"]))(*c["args"])
    assert_close(ours, jax_refs(name)["hessian"], rtol=10 * c["rtol"])


@pytest.mark.parametrize("name", params())
def test_hvp(name):
    """vj.hvp(f, x, v) takes one argument (a nest): several arguments go in as a tuple."""
    c = CASES[name]
    args, vs = c["args"], _tangents(c["args"], 5)
    s = scalarize_vj(c["vj"])
    if len(args) == 1:
        ours = vj.hvp(s, args[0], vs[0])
    else:
        ours = vj.hvp(lambda xs: s(*xs), args, vs)
    theirs = jax_refs(name)["hvp"]
    assert_close(ours, theirs[0] if len(args) == 1 else theirs, rtol=10 * c["rtol"])


# -- second order by composition (JAX's hessian is jacfwd(jacrev)); vj.hessian is
# reverse over reverse and vj.hvp reverse over forward, so these run forward over reverse
# and forward over forward
COMPOSED = {
    "jacfwd(grad)": lambda s, argnums: vj.jacfwd(vj.grad(s, argnums=argnums), argnums=argnums),
    "jacfwd(jacfwd)": lambda s, argnums: vj.jacfwd(vj.jacfwd(s, argnums=argnums),
                                                   argnums=argnums),
}


@pytest.mark.parametrize("order", sorted(COMPOSED))
@pytest.mark.parametrize("name", params())
def test_hessian_by_composition(name, order):
    c = CASES[name]
    ours = COMPOSED[order](scalarize_vj(c["vj"]), _argnums(c["args"]))(*c["args"])
    assert_close(ours, jax_refs(name)["hessian"], rtol=10 * c["rtol"])


@pytest.mark.parametrize("name", params())
def test_hvp_as_jvp_of_grad(name):
    """Forward over reverse, as JAX's: vj.jvp of vj.grad."""
    c = CASES[name]
    args, vs = c["args"], _tangents(c["args"], 5)
    argnums = _argnums(args)
    ours = vj.jvp(vj.grad(scalarize_vj(c["vj"]), argnums=argnums), args, vs)[1]
    theirs = jax_refs(name)["hvp"]
    assert_close(ours, theirs[0] if len(args) == 1 else theirs, rtol=10 * c["rtol"])


def test_jacobian_auto_remembers_its_choice():
    """mode="auto" decides on the first call per input signature (runs f under a tape,
    then forward mode for tall Jacobians); the second call takes the remembered mode."""
    for name in ("shapes", "svd values/norm"):  # tall (fwd), wide (rev)
        c = CASES[name]
        jac = vj.jacobian(c["vj"], argnums=_argnums(c["args"]))
        for _ in range(2):
            assert_close(jac(*c["args"]), jax_refs(name)["jacfwd"], rtol=c["rtol"])


# -- the API contract --------------------------------------------------------------------
XS, WS = np.array([0.3, -0.8, 1.1]), np.array([[0.5, -1.2], [0.7, 0.4], [-0.3, 0.9]])


def f3_vj(x, w, z):
    return vj.tanh(vj.matmul(x[None, :], w))[0] * z + vj.reduce_sum(x ** 3) * z


def f3_jax(x, w, z):
    return jnp.tanh(x[None, :] @ w)[0] * z + jnp.sum(x ** 3) * z


ARGS3 = (XS, WS, np.array([1.5, -0.5]))


def test_argnums_int_and_tuple():
    """argnums an int, a tuple, a tuple out of order: results in argnums' order."""
    s_vj, s_jax = scalarize_vj(f3_vj), scalarize_jax(f3_jax)
    choices = (1, (0, 2), (2, 0))
    refs = jax_run(lambda a: [(jax.jacfwd(f3_jax, argnums=n)(*a),
                               jax.hessian(s_jax, argnums=n)(*a)) for n in choices], ARGS3)
    for argnums, (jac_ref, hess_ref) in zip(choices, refs):
        for mode in ("fwd", "rev", "auto"):
            assert_close(vj.jacobian(f3_vj, argnums=argnums, mode=mode)(*ARGS3), jac_ref)
        assert_close(vj.jacfwd(f3_vj, argnums=argnums)(*ARGS3), jac_ref)
        assert_close(vj.hessian(s_vj, argnums=argnums)(*ARGS3), hess_ref)


def _aux_vj(x):
    y = vj.sin(x) * x[::-1]
    return y, {"cos": vj.cos(x), "count": 3}


def _aux_jax(x):
    y = jnp.sin(x) * x[::-1]
    return y, {"cos": jnp.cos(x), "count": 3}


def test_has_aux():
    """(output, aux) from f: aux comes back as f returned it (a Tensor stays a Tensor, a
    Python int an int), next to the same derivatives as without aux."""
    t = _tangents((XS,), 1)

    def s_vj(x):
        y, aux = _aux_vj(x)
        return vj.reduce_sum(y ** 2), aux

    def s_jax(x):
        y, aux = _aux_jax(x)
        return jnp.sum(y ** 2), aux

    ref = jax_run(lambda x, t: {"jvp": jax.jvp(_aux_jax, (x,), t, has_aux=True),
                                "jacfwd": jax.jacfwd(_aux_jax, has_aux=True)(x),
                                "hessian": jax.hessian(s_jax, has_aux=True)(x)}, XS, t)

    def check_aux(aux, aux_ref):
        assert isinstance(aux["cos"], vj.Tensor) and aux["count"] == 3
        assert_close(aux["cos"], aux_ref["cos"])

    y, ty, aux = vj.jvp(_aux_vj, (XS,), t, has_aux=True)
    assert_close((y, ty), ref["jvp"][:2])
    check_aux(aux, ref["jvp"][2])
    for make in (vj.jacfwd, vj.jacrev, vj.jacobian,
                 lambda f, has_aux: vj.jacobian(f, has_aux=has_aux, mode="fwd")):
        jac, aux = make(_aux_vj, has_aux=True)(XS)
        assert_close(jac, ref["jacfwd"][0])
        check_aux(aux, ref["jacfwd"][1])
    hess, aux = vj.hessian(s_vj, has_aux=True)(XS)
    assert_close(hess, ref["hessian"][0])
    check_aux(aux, ref["hessian"][1])


def test_linearize_has_aux():
    t = _tangents((XS,), 1)
    y, f_jvp, aux = vj.linearize(_aux_vj, XS, has_aux=True)
    y_ref, t_ref, _ = vj.jvp(_aux_vj, (XS,), t, has_aux=True)  # checked against JAX above
    assert_close((y, f_jvp(*t)), (y_ref, t_ref))
    assert_close(aux["cos"], np.cos(XS))


# nests: a dict and a list in, a tuple of a dict and a list out
PARAMS = {"w": WS, "b": np.array([0.2, -0.4])}


def nest_vj(params, xs):
    h = vj.tanh(vj.matmul(xs[0][None, :], params["w"]) + params["b"])[0]
    return {"h": h * xs[1], "norm": vj.norm(h)}, [h[::-1] * xs[1], vj.reduce_sum(h ** 2)]


def nest_jax(params, xs):
    h = jnp.tanh(xs[0][None, :] @ params["w"] + params["b"])[0]
    return {"h": h * xs[1], "norm": jnp.linalg.norm(h)}, [h[::-1] * xs[1], jnp.sum(h ** 2)]


NEST_ARGS = (PARAMS, [XS, 1.3])   # a Python float leaf too


def test_nests_in_and_out():
    args = NEST_ARGS
    t = _nest_tangents(args)
    s_vj, s_jax = scalarize_vj(nest_vj), scalarize_jax(nest_jax)
    hvp_v = t[0]

    def refs(a, t):
        y, f_jvp = jax.linearize(nest_jax, *a)
        return {"jvp": jax.jvp(nest_jax, a, t), "linearize": (y, f_jvp(*t)),
                "jacfwd": jax.jacfwd(nest_jax, argnums=(0, 1))(*a),
                "hessian": jax.hessian(s_jax)(*a),
                "hvp": jax.jvp(jax.grad(lambda p: s_jax(p, a[1])), (a[0],), (t[0],))[1]}
    ref = jax_run(refs, args, t)
    assert_close(vj.jvp(nest_vj, args, t), ref["jvp"])
    y, f_jvp = vj.linearize(nest_vj, *args)
    assert_close((y, f_jvp(*t)), ref["linearize"])
    for mode in ("fwd", "rev", "auto"):
        assert_close(vj.jacobian(nest_vj, argnums=(0, 1), mode=mode)(*args), ref["jacfwd"])
    assert_close(vj.jacfwd(nest_vj, argnums=(0, 1))(*args), ref["jacfwd"])
    assert_close(vj.hessian(s_vj)(*args), ref["hessian"])
    assert_close(vj.hvp(lambda p: s_vj(p, args[1]), args[0], hvp_v), ref["hvp"])


def _nest_tangents(args):
    rng = np.random.default_rng(7)
    return jax.tree_util.tree_map(lambda a: rng.standard_normal(np.shape(a)), args)


def test_scalar_inputs():
    """Python floats and 0-d arrays as primals and tangents."""
    def f_vj(x, y):
        return vj.sin(x) * y ** 2 + vj.exp(x * y)

    def f_jax(x, y):
        return jnp.sin(x) * y ** 2 + jnp.exp(x * y)

    args, t = (0.7, np.array(-0.4)), (0.3, np.array(1.2))
    ref = jax_run(lambda a, t: {"jvp": jax.jvp(f_jax, a, t),
                                "jacfwd": jax.jacfwd(f_jax, argnums=(0, 1))(*a),
                                "hessian": jax.hessian(f_jax, argnums=(0, 1))(*a),
                                "hvp": jax.jvp(jax.grad(lambda v: f_jax(v, a[1])), (a[0],),
                                               (t[0],))[1]}, args, t)
    assert_close(vj.jvp(f_vj, args, t), ref["jvp"])
    assert_close(vj.linearize(f_vj, *args)[1](*t), ref["jvp"][1])
    for mode in ("fwd", "rev", "auto"):
        assert_close(vj.jacobian(f_vj, argnums=(0, 1), mode=mode)(*args), ref["jacfwd"])
    assert_close(vj.hessian(f_vj, argnums=(0, 1))(*args), ref["hessian"])
    assert_close(vj.hvp(lambda v: f_vj(v, args[1]), args[0], t[0]), ref["hvp"])


def test_float32_stays_float32():
    """float32 inputs give float32 values, tangents, Jacobians and Hessians (as in JAX),
    within float32 accuracy of JAX's float64 results."""
    def f_vj(x, w):
        return vj.nn.softplus(vj.matmul(vj.tanh(x)[None, :], w))[0] * 2.0 + \
            vj.reduce_logsumexp(x) + vj.exp(x[:2]) / 3.0

    def f_jax(x, w):
        return jax.nn.softplus(jnp.tanh(x)[None, :] @ w)[0] * 2.0 + \
            jsp.special.logsumexp(x) + jnp.exp(x[:2]) / 3.0

    s_vj, s_jax = scalarize_vj(f_vj), scalarize_jax(f_jax)
    args = (XS, WS)
    t = _tangents(args, 1)
    args32, t32 = [tuple(a.astype(np.float32) for a in v) for v in (args, t)]

    def refs(a, t):
        return {"jvp": jax.jvp(f_jax, a, t), "jacfwd": jax.jacfwd(f_jax, argnums=(0, 1))(*a),
                "hessian": jax.hessian(s_jax, argnums=(0, 1))(*a),
                "hvp": jax.jvp(jax.grad(lambda v: s_jax(*v)), (a,), (t,))[1]}
    ref = jax_run(refs, args, t)          # float64, the values to approach
    f32, tol = np.dtype(np.float32), 2e-5
    assert_close(vj.jvp(f_vj, args32, t32), ref["jvp"], rtol=tol, dtype=f32)
    assert_close(vj.linearize(f_vj, *args32)[1](*t32), ref["jvp"][1], rtol=tol, dtype=f32)
    for mode in ("fwd", "rev", "auto"):
        assert_close(vj.jacobian(f_vj, argnums=(0, 1), mode=mode)(*args32), ref["jacfwd"],
                     rtol=tol, dtype=f32)
    assert_close(vj.jacfwd(f_vj, argnums=(0, 1))(*args32), ref["jacfwd"], rtol=tol, dtype=f32)
    assert_close(vj.hessian(s_vj, argnums=(0, 1))(*args32), ref["hessian"], rtol=tol,
                 dtype=f32)
    assert_close(vj.hvp(lambda v: s_vj(*v), args32, t32), ref["hvp"], rtol=tol, dtype=f32)


def test_chunked_jacobians():
    """80 inputs, 120 outputs: forward mode learns the output size first and sizes its
    chunks by the memory budget; parallel_iterations=7 leaves a ragged last chunk."""
    rng = np.random.default_rng(1)
    x, w = rng.standard_normal(80), rng.standard_normal((120, 80)) / 9

    def f_vj(v):
        return vj.tanh(vj.linalg.matvec(w, v)) * vj.concat([v, v[:40]], 0) + vj.reduce_sum(v * v)

    def f_jax(v):
        return jnp.tanh(w @ v) * jnp.concatenate([v, v[:40]]) + jnp.sum(v * v)

    ref = jax_run(jax.jacfwd(f_jax), x)
    auto = vj.jacobian(f_vj)
    for jac in (vj.jacfwd(f_vj), auto, auto, vj.jacrev(f_vj),
                vj.jacobian(f_vj, mode="fwd", parallel_iterations=7),
                vj.jacobian(f_vj, mode="rev", parallel_iterations=7)):
        assert_close(jac(x), ref)


# -- bad input: a clear TypeError / ValueError before f runs ----------------------------------
class Counted:
    """f, counting its calls (errors must come before any work)."""

    def __init__(self):
        self.calls = 0

    def __call__(self, x, y=None):
        self.calls += 1
        return vj.sin(x) if y is None else vj.sin(x) * y


X2 = np.array([0.5, 1.5])
BAD_CALLS = {
    "jvp: one tangent short": (lambda f: vj.jvp(f, (X2, X2), (X2,)), ValueError),
    "jvp: one tangent too many": (lambda f: vj.jvp(f, (X2,), (X2, X2)), ValueError),
    "jvp: tangents not a tuple": (lambda f: vj.jvp(f, (X2,), X2), TypeError),
    "jvp: primals not a tuple": (lambda f: vj.jvp(f, X2, (X2,)), TypeError),
    "jvp: tangent shape": (lambda f: vj.jvp(f, (X2,), (np.ones(3),)), ValueError),
    "jvp: tangent shape (2, 1)": (lambda f: vj.jvp(f, (X2,), (np.ones((2, 1)),)), ValueError),
    "jvp: integer tangent": (lambda f: vj.jvp(f, (X2,), (np.array([1, 2]),)), TypeError),
    "jvp: complex tangent": (lambda f: vj.jvp(f, (X2,), (X2 + 1j,)), TypeError),
    "jvp: integer primal": (lambda f: vj.jvp(f, (np.array([1, 2]),), (X2,)), TypeError),
    "jvp: tangent nest": (lambda f: vj.jvp(f, ({"a": X2},), ({"b": X2},)), ValueError),
    "jvp: has_aux not a bool": (lambda f: vj.jvp(f, (X2,), (X2,), has_aux="yes"), TypeError),
    "jvp: f not callable": (lambda f: vj.jvp(3.0, (X2,), (X2,)), TypeError),
    "linearize: no primals": (lambda f: vj.linearize(f), ValueError),
    "jacobian: unknown mode": (lambda f: vj.jacobian(f, mode="forward")(X2), ValueError),
    "jacobian: mode None": (lambda f: vj.jacobian(f, mode=None)(X2), ValueError),
    "jacfwd: argnums a float": (lambda f: vj.jacfwd(f, argnums=0.0)(X2), TypeError),
    "jacfwd: argnums out of range": (lambda f: vj.jacfwd(f, argnums=2)(X2, X2), ValueError),
    "jacfwd: argnums repeated": (lambda f: vj.jacfwd(f, argnums=(0, 0))(X2, X2), ValueError),
    "jacfwd: argnums empty": (lambda f: vj.jacfwd(f, argnums=())(X2), ValueError),
    "jacfwd: integer argument": (lambda f: vj.jacfwd(f)(np.array([1, 2])), TypeError),
    "jacobian: has_aux not a bool": (lambda f: vj.jacobian(f, has_aux=1)(X2), TypeError),
    "hessian: argnums a string": (lambda f: vj.hessian(f, argnums="0")(X2), TypeError),
    "hessian: argnums out of range": (lambda f: vj.hessian(f, argnums=(0, 3))(X2, X2),
                                      ValueError),
    "hvp: v shape": (lambda f: vj.hvp(f, X2, np.ones(3)), ValueError),
    "hvp: v nest": (lambda f: vj.hvp(f, {"a": X2}, {"b": X2}), ValueError),
    "hvp: v a list for an array": (lambda f: vj.hvp(f, X2, [1.0, 2.0]), ValueError),
}


@pytest.mark.parametrize("call", sorted(BAD_CALLS))
def test_bad_input_raises_before_f_runs(call):
    make, error = BAD_CALLS[call]
    f = Counted()
    with pytest.raises(error) as info:
        make(f)
    assert f.calls == 0
    assert len(str(info.value)) > 20   # a sentence, not a bare NumPy/KeyError message


BAD_LINEARIZED = {
    "one tangent short": ((X2, X2), (X2,), ValueError),
    "tangent shape": ((X2,), (np.ones(3),), ValueError),
    "integer tangent": ((X2,), (np.array([1, 2]),), TypeError),
}


@pytest.mark.parametrize("call", sorted(BAD_LINEARIZED))
def test_bad_linearized_tangents_raise_before_f_runs(call):
    primals, tangents, error = BAD_LINEARIZED[call]
    f = Counted()
    _, f_jvp = vj.linearize(f, *primals)
    calls = f.calls
    with pytest.raises(error):
        f_jvp(*tangents)
    assert f.calls == calls


# dtype mismatches that jax.jvp rejects ("dtypes must be equal") and vecjac casts silently,
# although vj.jvp's docstring asks for tangents with "the dtypes of its primal"
DTYPE_MISMATCHES = {
    "jvp: float32 tangent, float64 primal": lambda f: vj.jvp(
        f, (X2,), (X2.astype(np.float32),)),
    "jvp: float64 tangent, float32 primal": lambda f: vj.jvp(
        f, (X2.astype(np.float32),), (X2,)),
    "linearize: float32 tangent": lambda f: vj.linearize(f, X2)[1](X2.astype(np.float32)),
    "hvp: integer v": lambda f: vj.hvp(lambda x: vj.reduce_sum(f(x)), X2, np.array([1, 2])),
    "hvp: float32 v, float64 x": lambda f: vj.hvp(lambda x: vj.reduce_sum(f(x)), X2,
                                                  X2.astype(np.float32)),
}


@pytest.mark.parametrize("call", sorted(DTYPE_MISMATCHES))
def test_tangent_dtype_mismatch_raises(call):
    f = Counted()
    try:
        DTYPE_MISMATCHES[call](f)
    except (TypeError, ValueError):
        return
    raise AssertionError(f"{call}: no error; f ran {f.calls} time(s)")


with_unique = {  # np.unique has no vecjac op: NumPy would run it on the plain values
    "jvp": lambda f, a: vj.jvp(f, (a,), (a,)),
    "jacfwd": lambda f, a: vj.jacfwd(f)(a),
    "jacrev": lambda f, a: vj.jacrev(f)(a),
    "hessian": lambda f, a: vj.hessian(lambda x: vj.reduce_sum(f(x)))(a),
    "hvp": lambda f, a: vj.hvp(lambda x: vj.reduce_sum(f(x)), a, a),
}


@pytest.mark.parametrize("transform", sorted(with_unique))
def test_numpy_function_without_op_raises_inside_transforms(transform):
    # README: a NumPy function without a vecjac op on a value a functional transform
    # differentiates is a TypeError (its derivative would silently be zero)
    with pytest.raises(TypeError, match="no vecjac op"):
        with_unique[transform](lambda a: np.unique(a), C)
