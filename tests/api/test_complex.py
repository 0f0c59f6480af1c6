"""Complex numbers: the two conventions side by side, holomorphic=True and its check, the
real Jacobian of a complex map, and complex values through pfor, replays and errors.

Expected values are closed forms (Wirtinger calculus by hand) or central differences of
the real map R^2n -> R^2m written here; the peers' numbers quoted in comments are facts
taken from their documented behaviour (README, "Complex numbers").
"""
import numpy as np
import pytest

import vecjac as vj
from vecjac.testing import check_grads

Z0 = np.array([1.0 + 1.0j, 0.5 - 2.0j, -1.5 + 0.25j])


def _real_jacobian_fd(f, z, eps=1e-6):
    """Central differences of the real map: (m, 2, n, 2) for complex z and f(z)."""
    z = np.asarray(z, complex)
    out = np.asarray(f(z))
    jac = np.zeros(out.shape + (2,) + z.shape + (2,))
    for idx in np.ndindex(z.shape):
        for part, step in ((0, eps), (1, 1j * eps)):
            dz = np.zeros_like(z)
            dz[idx] = step
            d = (np.asarray(f(z + dz)) - np.asarray(f(z - dz))) / (2 * eps)
            jac[(Ellipsis, 0) + idx + (part,)] = d.real
            jac[(Ellipsis, 1) + idx + (part,)] = d.imag
    return jac


# -- the convention table of the README: |z|^2 at 3 + 4j --------------------------------
def _abs2(z):
    return vj.math.real(z * vj.math.conj(z))


def test_abs_squared_at_3_plus_4j_in_each_api():
    z = vj.constant(np.array(3 + 4j))
    with vj.GradientTape() as tape:  # TF (and PyTorch): df/dx + i df/dy
        tape.watch(z)
        y = _abs2(z)
    assert tape.gradient(y, z).numpy() == 6 + 8j
    assert vj.grad(_abs2)(3 + 4j).numpy() == 6 - 8j  # JAX: df/dx - i df/dy
    _, pull = vj.vjp(_abs2, 3 + 4j)
    assert pull(1.0)[0].numpy() == 6 - 8j
    for direction, slope in ((1.0, 6.0), (1j, 8.0)):  # the JVP: one number in every API
        with vj.autodiff.ForwardAccumulator(z, vj.constant(np.array(direction + 0j))) as acc:
            y = _abs2(z)
        assert acc.jvp(y).numpy() == slope
        assert vj.jvp(_abs2, (3 + 4j,), (direction + 0j,))[1].numpy() == slope


def test_tape_gradient_is_the_steepest_ascent_direction():
    # d/dt L(z + t g) = |g|^2 for the TF-convention gradient g of a real loss L
    f = lambda z: vj.reduce_sum(vj.abs(vj.exp(z) - z * z) ** 2)  # noqa: E731
    z = vj.constant(Z0)
    with vj.GradientTape() as tape:
        tape.watch(z)
        y = f(z)
    g = tape.gradient(y, z).numpy()
    eps = 1e-6
    slope = (f(Z0 + eps * g).numpy() - f(Z0 - eps * g).numpy()) / (2 * eps)
    np.testing.assert_allclose(slope, np.vdot(g, g).real, rtol=1e-6)


# -- holomorphic=True ---------------------------------------------------------------------
NOT_HOLOMORPHIC = {"conj": vj.math.conj, "abs": lambda z: vj.cast(vj.abs(z), vj.complex128),
                   "real": lambda z: vj.cast(vj.math.real(z), vj.complex128),
                   "z * conj(z)": lambda z: z * vj.math.conj(z)}
HOLOMORPHIC = {"exp": (vj.exp, np.exp), "z**3": (lambda z: z ** 3, lambda z: 3 * z ** 2),
               "1/z": (lambda z: 1 / z, lambda z: -1 / z ** 2),
               "sin(z) * log(z)": (lambda z: vj.sin(z) * vj.log(z),
                                   lambda z: np.cos(z) * np.log(z) + np.sin(z) / z)}
TRANSFORMS = {"jacfwd": vj.jacfwd, "jacrev": vj.jacrev, "jacobian": vj.jacobian}


@pytest.mark.parametrize("transform", sorted(TRANSFORMS))
@pytest.mark.parametrize("name", sorted(NOT_HOLOMORPHIC))
def test_holomorphic_true_raises_for_a_function_that_is_not(name, transform):
    # JAX takes the claim on trust: jacfwd(jnp.conj, holomorphic=True) returns 1
    with pytest.raises(ValueError, match="not holomorphic"):
        TRANSFORMS[transform](NOT_HOLOMORPHIC[name], holomorphic=True)(Z0)


@pytest.mark.parametrize("name", sorted(NOT_HOLOMORPHIC))
def test_grad_holomorphic_raises_for_a_function_that_is_not(name):
    with pytest.raises(ValueError, match="Cauchy-Riemann"):
        vj.grad(lambda z: vj.reduce_sum(NOT_HOLOMORPHIC[name](z)), holomorphic=True)(Z0)


@pytest.mark.parametrize("transform", sorted(TRANSFORMS))
@pytest.mark.parametrize("name", sorted(HOLOMORPHIC))
def test_holomorphic_jacobians_are_the_complex_derivative(name, transform):
    f, df = HOLOMORPHIC[name]
    jac = TRANSFORMS[transform](f, holomorphic=True)(Z0)
    assert jac.dtype == np.complex128
    np.testing.assert_allclose(jac.numpy(), np.diag(df(Z0)), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("name", sorted(HOLOMORPHIC))
def test_holomorphic_grad_and_hessian(name):
    f, df = HOLOMORPHIC[name]
    g = vj.grad(lambda z: vj.reduce_sum(f(z)), holomorphic=True)(Z0)
    np.testing.assert_allclose(g.numpy(), df(Z0), rtol=1e-12)
    # the second derivative of sum(z**3) is diag(6 z)
    h = vj.hessian(lambda z: vj.reduce_sum(z ** 3), holomorphic=True)(Z0)
    np.testing.assert_allclose(h.numpy(), np.diag(6 * Z0), rtol=1e-12)


def test_holomorphic_check_runs_once_per_signature():
    calls = []

    def f(z):
        calls.append(1)
        return vj.exp(z)
    jac = vj.jacfwd(f, holomorphic=True)
    jac(Z0)
    first = len(calls)
    jac(Z0 * 2)
    assert first == 3 and len(calls) == 4  # the check's two JVPs, then one run per call


# -- vj.jacobian without holomorphic: the real Jacobian -----------------------------------
def test_real_jacobian_of_z_squared_is_the_documented_matrix():
    jac = vj.jacobian(lambda z: z ** 2)(np.array(1 + 1j))
    np.testing.assert_allclose(jac.numpy(), [[2, -2], [2, 2]], rtol=1e-14)


NON_HOLOMORPHIC_MAPS = {
    "abs2 and conj": (lambda z: z * vj.math.conj(z) + vj.math.conj(z) ** 2,
                      lambda z: z * np.conj(z) + np.conj(z) ** 2),
    "angle and abs": (lambda z: vj.cast(vj.math.angle(z) * vj.abs(z), vj.complex128) * z,
                      lambda z: np.angle(z) * np.abs(z) * z),
    "matmul with conj": (lambda z: vj.linalg.matvec(vj.constant(np.array(
        [[1, 2j, 0], [0.5, 1, -1j], [1j, 0, 2]])), vj.math.conj(z) * vj.exp(z)),
        lambda z: np.array([[1, 2j, 0], [0.5, 1, -1j], [1j, 0, 2]]) @ (np.conj(z) * np.exp(z))),
}


@pytest.mark.parametrize("mode", ["auto", "fwd", "rev"])
@pytest.mark.parametrize("name", sorted(NON_HOLOMORPHIC_MAPS))
def test_real_jacobian_matches_central_differences(name, mode):
    f, ref = NON_HOLOMORPHIC_MAPS[name]
    jac = vj.jacobian(f, mode=mode)(Z0)
    assert jac.shape == (3, 2, 3, 2) and jac.dtype == np.float64
    np.testing.assert_allclose(jac.numpy(), _real_jacobian_fd(ref, Z0), rtol=1e-6, atol=1e-8)


def test_real_jacobian_of_real_loss_of_complex_input():
    f = lambda z: vj.reduce_sum(vj.abs(z) ** 3)  # noqa: E731
    jac = vj.jacobian(f)(Z0)
    assert jac.shape == (3, 2)
    np.testing.assert_allclose(
        jac.numpy(), _real_jacobian_fd(lambda z: np.sum(np.abs(z) ** 3) + 0j, Z0)[0],
        rtol=1e-6)


# -- JAX's functional convention through vjp, jacrev and hvp --------------------------------
def test_jacrev_of_real_loss_is_the_conjugate_of_the_tape_jacobian():
    f = lambda z: vj.abs(z) ** 2 + vj.math.real(z)  # noqa: E731
    rows = vj.jacrev(f)(Z0).numpy()
    np.testing.assert_allclose(rows, np.diag(2 * np.conj(Z0) + 1), rtol=1e-12)
    z = vj.constant(Z0)
    with vj.GradientTape() as tape:
        tape.watch(z)
        y = f(z)
    np.testing.assert_allclose(tape.jacobian(y, z).numpy(), np.diag(2 * Z0 + 1), rtol=1e-12)


def test_hvp_of_real_loss_of_complex_input():
    # L = sum |z|^4: the gradient (JAX) 2 |z|^2 conj(z) * 2; its derivative along v
    f = lambda z: vj.reduce_sum(vj.abs(z) ** 4)  # noqa: E731
    v = np.array([1 - 1j, 0.5j, 2 + 0j])
    got = vj.hvp(f, Z0, v).numpy()
    eps = 1e-6
    grad = vj.grad(f)
    fd = (grad(Z0 + eps * v).numpy() - grad(Z0 - eps * v).numpy()) / (2 * eps)
    np.testing.assert_allclose(got, fd, rtol=1e-6)


@pytest.mark.parametrize("dtype", [np.complex128, np.complex64])
def test_check_grads_on_complex_functions(dtype):
    z = Z0.astype(dtype)
    check_grads(lambda z: vj.exp(z) * vj.math.conj(z) + vj.abs(z) * z, [z], order=2)


def test_complex64_stays_complex64():
    z = Z0.astype(np.complex64)
    assert vj.grad(lambda z: vj.reduce_sum(vj.abs(vj.sin(z))))(z).dtype == np.complex64
    assert vj.jacfwd(vj.exp, holomorphic=True)(z).dtype == np.complex64
    assert vj.jacobian(vj.exp)(z).dtype == np.float32


# -- pfor, replays, errors ------------------------------------------------------------------
def test_batch_of_complex_gradients_vectorizes_like_the_loop():
    zs = vj.constant(np.stack([Z0, 2 * Z0, Z0 * 1j]))

    def body(i):
        z = vj.gather(zs, i)
        with vj.GradientTape() as tape:
            tape.watch(z)
            y = vj.reduce_sum(vj.abs(vj.exp(z) * z) ** 2)
        return tape.gradient(y, z)
    vectorized = vj.vectorize.pfor(body, 3, fallback_to_while_loop=False).numpy()
    looped = np.stack([body(vj.constant(np.asarray(i))).numpy() for i in range(3)])
    np.testing.assert_allclose(vectorized, looped, rtol=1e-12)


def test_replayed_complex_gradient_equals_eager():
    g = vj.grad(lambda z: vj.reduce_sum(vj.abs(vj.exp(z) * z - 1j) ** 2))
    replay = vj.function(g)
    replay(Z0)
    np.testing.assert_array_equal(replay(2 * Z0).numpy(), g(2 * Z0).numpy())


def test_op_without_complex_rules_refuses_by_name():
    # maximum has no order on complex values: its rules are written for reals only
    z = vj.constant(Z0)
    with vj.GradientTape() as tape:
        tape.watch(z)
        y = vj.reduce_sum(vj.abs(vj.math.squared_difference(z, 1.0)))
    with pytest.raises(TypeError, match="SquaredDifference.*complex"):
        tape.gradient(y, z)


@pytest.mark.parametrize("call", [
    lambda: vj.sparse_jacobian(lambda z: z ** 2)(Z0),
    lambda: vj.sparse_jacobian(lambda x: vj.exp(1j * x))(np.ones(3)),
    lambda: vj.sparse_hessian(lambda z: vj.reduce_sum(vj.abs(z)))(Z0),
], ids=["complex input", "complex output", "hessian"])
def test_sparse_jacobians_of_complex_functions_refuse_clearly(call):
    with pytest.raises(TypeError, match="complex dtype.*sparse Jacobians and Hessians are real"):
        call()


def test_complex_variables_on_a_tape():
    v = vj.Variable(np.array([1 + 2j, 3 - 1j]))
    with vj.GradientTape() as tape:  # watched automatically, as float Variables are
        y = vj.reduce_sum(vj.math.real(v * v))
    # Re(z^2) = x^2 - y^2: df/dx + i df/dy = 2x - 2iy = 2 conj(z)
    np.testing.assert_array_equal(tape.gradient(y, v).numpy(), 2 * np.conj(v.numpy()))


@pytest.mark.parametrize("transform", sorted(TRANSFORMS))
def test_np_fft_is_holomorphic_with_the_dft_matrix_as_derivative(transform):
    n = len(Z0)
    dft = np.exp(-2j * np.pi * np.outer(np.arange(n), np.arange(n)) / n)  # closed form
    jac = TRANSFORMS[transform](np.fft.fft, holomorphic=True)(Z0)
    np.testing.assert_allclose(jac.numpy(), dft, atol=1e-13)
