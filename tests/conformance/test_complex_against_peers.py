"""Differential checks of complex derivatives: the functional API against JAX (first and
second order, both modes, pfor Jacobians) and the tapes and accumulators against
TensorFlow, in complex128, on one table of complex-capable functions written once per
library. Skipped where the peer is not installed (`pip install -e ".[peers]"`).

The conventions compared (README, "Complex numbers"): vj.grad / vj.vjp / vj.jacrev /
vj.hessian give JAX's numbers, GradientTape and ForwardAccumulator TF's. Inputs sit off
every branch cut and away from 0 (abs and angle have no derivative there).
"""
import numpy as np
import pytest

import vecjac as vj

Z = np.array([0.8 + 0.6j, -0.4 + 1.1j, 1.3 - 0.5j, 0.35 + 0.2j])
W = np.array([0.5 - 1.0j, 1.5 + 0.25j, -0.75 + 0.5j, 1.0 + 1.0j])  # weights, cotangents
V = np.array([1.0 + 0.5j, -0.3 + 1.0j, 0.2 - 0.7j, -1.1 - 0.4j])  # tangents
M = np.array([[1.0 + 0.5j, 0.2, -0.3j, 0.1], [0.0, 1.2, 0.4 + 0.1j, -0.2j],
              [0.3j, -0.1, 0.9 - 0.2j, 0.5], [0.2, 0.1j, 0.0, 1.1 + 0.3j]])


def _table(np_like):
    """name -> (f, holomorphic) for a namespace with exp, log, ... (vecjac, jax.numpy, tf)."""
    x = np_like
    return {
        "exp": (x["exp"], True), "log": (x["log"], True), "sqrt": (x["sqrt"], True),
        "sin": (x["sin"], True), "cos": (x["cos"], True), "tan": (x["tan"], True),
        "tanh": (x["tanh"], True), "sinh": (x["sinh"], True), "arctan": (x["atan"], True),
        "arcsin": (x["asin"], True), "arcsinh": (x["asinh"], True),
        "reciprocal": (lambda z: 1 / z, True), "cube": (lambda z: z ** 3, True),
        "product": (lambda z: z * x["exp"](z) / (z + 2.0), True),
        "matvec": (lambda z: x["matvec"](z), True),
        "cumsum": (x["cumsum"], True), "cumprod": (x["cumprod"], True),
        "sum and prod": (lambda z: x["sum"](z) * x["prod"](z) + z, True),
        "abs": (lambda z: x["cast"](x["abs"](z)) * z, False),
        "conj": (lambda z: x["conj"](z) * z * z, False),
        "real and imag": (lambda z: x["cast"](x["real"](z) * x["imag"](z)) + z, False),
        "angle": (lambda z: x["cast"](x["angle"](z)) * x["exp"](z), False),
    }


def _vecjac():
    return {"exp": vj.exp, "log": vj.log, "sqrt": vj.sqrt, "sin": vj.sin, "cos": vj.cos,
            "tan": vj.tan, "tanh": vj.tanh, "sinh": vj.sinh, "atan": vj.atan,
            "asin": vj.asin, "asinh": vj.asinh, "cumsum": lambda z: vj.cumsum(z, 0),
            "cumprod": lambda z: vj.cumprod(z, 0), "sum": vj.reduce_sum,
            "prod": vj.reduce_prod, "abs": vj.abs, "conj": vj.math.conj,
            "real": vj.math.real, "imag": vj.math.imag, "angle": vj.math.angle,
            "cast": lambda r: vj.cast(r, vj.complex128),
            "matvec": lambda z: vj.linalg.matvec(vj.constant(M), z)}


VJ = _table(_vecjac())
NAMES = sorted(VJ)
HOLOMORPHIC = [n for n in NAMES if VJ[n][1]]


def _loss(f, conj, real, sum_):
    """Re(sum(conj(W) f(z))), a real loss in each library's ops."""
    return lambda z: real(sum_(f(z) * conj(W)))


# -- JAX -------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def jx():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy
    table = _table({"exp": jnp.exp, "log": jnp.log, "sqrt": jnp.sqrt, "sin": jnp.sin,
                    "cos": jnp.cos, "tan": jnp.tan, "tanh": jnp.tanh, "sinh": jnp.sinh,
                    "atan": jnp.arctan, "asin": jnp.arcsin, "asinh": jnp.arcsinh,
                    "cumsum": lambda z: jnp.cumsum(z, 0), "cumprod": lambda z: jnp.cumprod(z, 0),
                    "sum": jnp.sum, "prod": jnp.prod, "abs": jnp.abs, "conj": jnp.conj,
                    "real": jnp.real, "imag": jnp.imag, "angle": jnp.angle,
                    "cast": lambda r: r.astype(jnp.complex128),
                    "matvec": lambda z: jnp.asarray(M) @ z})
    return jax, jnp, table


def _jax_vjp(jax, f, x, ct):
    """JAX's VJP of f at x, jitted (one compile instead of each primitive's eagerly)."""
    return jax.jit(lambda x, ct: jax.vjp(f, x)[1](ct)[0])(x, ct)


def _jax_jvp(jax, f, x, t):
    return jax.jit(lambda x, t: jax.jvp(f, (x,), (t,))[1])(x, t)


def assert_close(a, b, rtol=1e-10):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=rtol, atol=1e-12)


@pytest.mark.parametrize("name", NAMES)
def test_grad_of_real_loss_matches_jax(jx, name):
    jax, jnp, table = jx
    mine = vj.grad(_loss(VJ[name][0], vj.math.conj, vj.math.real, vj.reduce_sum))(Z)
    theirs = jax.jit(jax.grad(_loss(table[name][0], jnp.conj, jnp.real, jnp.sum)))(Z)
    assert_close(mine.numpy(), theirs)


@pytest.mark.parametrize("name", NAMES)
def test_vjp_and_jvp_match_jax(jx, name):
    jax, _, table = jx
    _, pull = vj.vjp(VJ[name][0], Z)
    assert_close(pull(W)[0].numpy(), _jax_vjp(jax, table[name][0], Z, W))
    assert_close(vj.jvp(VJ[name][0], (Z,), (V,))[1].numpy(), _jax_jvp(jax, table[name][0], Z, V))


@pytest.mark.parametrize("name", HOLOMORPHIC)
def test_holomorphic_jacobians_and_hessians_match_jax(jx, name):
    jax, jnp, table = jx
    f, jf = VJ[name][0], table[name][0]
    assert_close(vj.jacfwd(f, holomorphic=True)(Z).numpy(),
           jax.jit(jax.jacfwd(jf, holomorphic=True))(Z))
    assert_close(vj.jacrev(f, holomorphic=True)(Z).numpy(),
           jax.jit(jax.jacrev(jf, holomorphic=True))(Z))
    scalar = lambda z: vj.reduce_sum(f(z) * W)  # noqa: E731
    jscalar = lambda z: jnp.sum(jf(z) * W)  # noqa: E731
    assert_close(vj.hessian(scalar, holomorphic=True)(Z).numpy(),
           jax.jit(jax.hessian(jscalar, holomorphic=True))(Z))


@pytest.mark.parametrize("name", NAMES)
def test_second_order_of_real_loss_matches_jax(jx, name):
    # the Jacobian (reverse, JAX's rows) of JAX's gradient of a real loss
    jax, jnp, table = jx
    grad = vj.grad(_loss(VJ[name][0], vj.math.conj, vj.math.real, vj.reduce_sum))
    jgrad = jax.grad(_loss(table[name][0], jnp.conj, jnp.real, jnp.sum))
    _, pull = vj.vjp(grad, Z)
    assert_close(pull(V)[0].numpy(), _jax_vjp(jax, jgrad, Z, V), rtol=1e-9)
    assert_close(vj.jvp(grad, (Z,), (V,))[1].numpy(), _jax_jvp(jax, jgrad, Z, V), rtol=1e-9)


# -- TensorFlow -------------------------------------------------------------------------
@pytest.fixture(scope="module")
def tfx():
    tf = pytest.importorskip("tensorflow")
    c128 = tf.complex128
    table = _table({"exp": tf.exp, "log": tf.math.log, "sqrt": tf.sqrt, "sin": tf.sin,
                    "cos": tf.cos, "tan": tf.tan, "tanh": tf.tanh, "sinh": tf.sinh,
                    "atan": tf.atan, "asin": tf.asin, "asinh": tf.asinh,
                    "cumsum": lambda z: tf.cumsum(z, 0), "cumprod": lambda z: tf.math.cumprod(z, 0),
                    "sum": tf.reduce_sum, "prod": tf.reduce_prod, "abs": tf.abs,
                    "conj": tf.math.conj, "real": tf.math.real, "imag": tf.math.imag,
                    "angle": tf.math.angle, "cast": lambda r: tf.cast(r, c128),
                    "matvec": lambda z: tf.linalg.matvec(tf.constant(M), z)})
    return tf, table


# where TF itself is wrong, the finite differences of the real map decide (README)
TF_DEFECTS = {"cumprod": "TF's gradient of a complex cumprod misses a conjugate"}


def _assert_tf_convention_by_differences(f, g, w):
    """g is the tape's pullback of w: Re<w, J v> (central differences) = Re<g, v>."""
    eps = 1e-6
    jv = (f(vj.constant(Z + eps * V)).numpy() - f(vj.constant(Z - eps * V)).numpy()) / (2 * eps)
    np.testing.assert_allclose(np.vdot(g, V).real, np.vdot(w, jv).real, rtol=1e-7)


@pytest.mark.parametrize("name", NAMES)
def test_tape_gradient_and_jacobian_match_tf(tfx, name):
    tf, table = tfx
    if name in TF_DEFECTS:
        f = VJ[name][0]
        z = vj.constant(Z)
        with vj.GradientTape(persistent=True) as tape:
            tape.watch(z)
            y = f(z)
        _assert_tf_convention_by_differences(
            f, tape.gradient(y, z, output_gradients=vj.constant(W)).numpy(), W)
        for i, row in enumerate(tape.jacobian(y, z).numpy()):
            _assert_tf_convention_by_differences(f, row, np.eye(len(Z))[i])
        return
    z = vj.constant(Z)
    with vj.GradientTape(persistent=True) as tape:
        tape.watch(z)
        y = VJ[name][0](z)
    tz = tf.constant(Z)
    with tf.GradientTape(persistent=True) as ttape:
        ttape.watch(tz)
        ty = table[name][0](tz)
    assert_close(tape.gradient(y, z, output_gradients=vj.constant(W)).numpy(),
           ttape.gradient(ty, tz, output_gradients=tf.constant(W)).numpy())
    assert_close(tape.jacobian(y, z).numpy(), ttape.jacobian(ty, tz).numpy())


@pytest.mark.parametrize("name", NAMES)
def test_forward_accumulator_matches_tf(tfx, name):
    tf, table = tfx
    z = vj.constant(Z)
    with vj.autodiff.ForwardAccumulator(z, vj.constant(V)) as acc:
        y = VJ[name][0](z)
    if name in TF_DEFECTS:  # TF derives this JVP from its gradient: central differences
        eps = 1e-6
        f = VJ[name][0]
        jv = (f(vj.constant(Z + eps * V)).numpy() - f(vj.constant(Z - eps * V)).numpy()) \
            / (2 * eps)
        np.testing.assert_allclose(acc.jvp(y).numpy(), jv, rtol=1e-7)
        return
    tz = tf.constant(Z)
    with tf.autodiff.ForwardAccumulator(tz, tf.constant(V)) as tacc:
        ty = table[name][0](tz)
    assert_close(acc.jvp(y).numpy(), tacc.jvp(ty).numpy())


# -- linear algebra: JAX's functional API on complex matrices -------------------------------
A = M + 0.5 * np.eye(4)


def _linalg_table(np_like):
    x = np_like
    herm = lambda b: x["matmul"](b, x["adjoint"](b)) + np.eye(4)  # noqa: E731
    return {  # name -> (f of a complex matrix b, holomorphic)
        "inv": (x["inv"], True), "det": (x["det"], True),
        "solve": (lambda b: x["solve"](b, Z[:, None] * np.ones((4, 2))), True),
        "slogdet logabs": (lambda b: x["cast"](x["slogdet"](b)[1]) * b, False),
        "cholesky": (lambda b: x["cholesky"](herm(b)), False),
        "eigh values": (lambda b: x["cast"](x["eigvalsh"](herm(b))), False),
        "svd values": (lambda b: x["cast"](x["svdvals"](b)), False),
        "qr": (lambda b: x["qr"](b)[1], False),
        "pinv": (lambda b: x["pinv"](b[:, :3]), False),
    }


VJL = _linalg_table({"inv": vj.linalg.inv, "det": vj.linalg.det, "solve": vj.linalg.solve,
                     "slogdet": vj.linalg.slogdet, "cholesky": vj.linalg.cholesky,
                     "eigvalsh": lambda a: vj.linalg.eigh(a)[0],
                     "svdvals": lambda a: vj.linalg.svd(a, compute_uv=False),
                     "qr": vj.linalg.qr, "pinv": vj.linalg.pinv, "matmul": vj.matmul,
                     "adjoint": lambda a: vj.math.conj(vj.transpose(a)),
                     "cast": lambda r: vj.cast(r, vj.complex128)})


@pytest.mark.parametrize("name", sorted(VJL))
def test_linalg_vjp_jvp_and_real_loss_gradient_match_jax(jx, name):
    jax, jnp, _ = jx
    theirs = _linalg_table({
        "inv": jnp.linalg.inv, "det": jnp.linalg.det, "solve": jnp.linalg.solve,
        "slogdet": jnp.linalg.slogdet, "cholesky": jnp.linalg.cholesky,
        "eigvalsh": jnp.linalg.eigvalsh, "svdvals": lambda a: jnp.linalg.svd(
            a, compute_uv=False), "qr": jnp.linalg.qr, "pinv": jnp.linalg.pinv,
        "matmul": jnp.matmul, "adjoint": lambda a: jnp.conj(a.T),
        "cast": lambda r: r.astype(jnp.complex128)})
    f, holomorphic = VJL[name]
    jf = theirs[name][0]
    out = np.asarray(jf(A))
    ct = (np.arange(out.size).reshape(out.shape) % 3 + 1) * (1 - 0.5j)
    _, pull = vj.vjp(f, A)
    assert_close(pull(ct)[0].numpy(), _jax_vjp(jax, jf, A, ct), rtol=1e-8)
    dA = np.outer(V, W) / 4
    assert_close(vj.jvp(f, (A,), (dA,))[1].numpy(), _jax_jvp(jax, jf, A, dA), rtol=1e-8)
    if holomorphic:
        assert_close(vj.jacfwd(f, holomorphic=True)(A).numpy(),
               jax.jit(jax.jacfwd(jf, holomorphic=True))(A), rtol=1e-8)
