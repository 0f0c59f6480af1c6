"""FFTs: derivatives in every mode, against finite differences and closed forms.

- gradients and JVPs to order 2 (vj.testing.check_grads: central differences of the real
  map, the tape's real-inner-product adjoint, and vj.vjp's JAX convention for complex
  inputs) for every np.fft function on real and complex inputs: n even and odd, truncated
  and padded, each norm, one and several axes;
- the adjoint identity of the three primitives at larger sizes (a dot-product test);
- gradients of real losses through np.fft on Tensors against Parseval and against the
  closed form of a spectral smoothing loss (computed with NumPy on plain arrays);
- jacfwd / jacrev / hessian / vj.jacobian against numerical Jacobians of the real map;
- pfor over a batch (one batched transform, never the while-loop fallback), per-example
  gradients, sparsity patterns, vj.function replays.
"""
import numpy as np
import pytest

import vecjac as vj
from vecjac._src.ops.fft.transforms import FFT
from vecjac.testing import check_grads, check_pfor, numerical_jacobian

RNG = np.random.default_rng(7)
NORMS = ["backward", "ortho", "forward"]


def _real(*shape):
    return RNG.standard_normal(shape)


def _complex(*shape):
    return RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)


# -- gradients and JVPs against finite differences ---------------------------------------------
# (name, kwargs): input length 6 along axis -1, 3 along axis 0; n below, at and above it,
# odd and even
ONE_DIM = [(name, dict(n=n, axis=axis, norm=norm))
           for name in ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft")
           for n, axis, norm in [(None, -1, "backward"), (4, -1, "ortho"), (7, -1, "forward"),
                                 (9, 0, "backward"), (2, 0, "ortho"), (1, -1, "forward"),
                                 (5, 0, "forward"), (8, -1, "backward")]]
N_DIM = [(name, dict(s=s, axes=axes, norm=norm))
         for name in ("fftn", "ifftn", "rfftn", "irfftn")
         for s, axes, norm in [(None, None, "backward"), ((2, 5), (0, 1), "ortho"),
                               ((4, 8), (1, 0), "forward"), (None, (1, 0), "ortho"),
                               ((3, 3), (0, 0), "backward")]]
N_DIM += [(name, dict(norm=norm)) for name in ("fft2", "ifft2", "rfft2", "irfft2")
          for norm in NORMS]


@pytest.mark.parametrize("name,kwargs", ONE_DIM + N_DIM)
@pytest.mark.parametrize("kind", ["real", "complex"])
def test_gradients_and_jvps_match_finite_differences(name, kwargs, kind):
    if kind == "complex" and name.startswith(("rfft", "ihfft")):
        pytest.skip("a real transform")
    x = _real(3, 6) if kind == "real" else _complex(3, 6)
    f = getattr(np.fft, name)
    check_grads(lambda t: f(t, **kwargs), [x], order=2, modes=("fwd", "rev"))


@pytest.mark.parametrize("name", ["fftshift", "ifftshift"])
def test_shift_derivatives(name):
    f = getattr(np.fft, name)
    check_grads(lambda t: f(t, axes=(0, 1)), [_complex(3, 4)], order=2)


@pytest.mark.parametrize("name,kwargs", [("fft2d", {}), ("ifft3d", {}),
                                         ("rfft2d", dict(fft_length=[3, 7])),
                                         ("irfft", dict(fft_length=[5])),
                                         ("irfftnd", dict(axes=[0, 2], norm="ortho"))])
def test_tf_names_derivatives(name, kwargs):
    x = _real(2, 3, 4) if name.startswith("rfft") else _complex(2, 3, 4)
    f = getattr(vj.signal, name)
    check_grads(lambda t: f(t, **kwargs), [x], order=2)


def test_float32_derivatives_stay_float32():
    x = _real(2, 6).astype(np.float32)
    check_grads(lambda t: np.fft.irfft(np.fft.rfft(t, n=5) * 2.0, n=6), [x], order=2)
    g = vj.grad(lambda t: vj.reduce_sum(vj.math.abs(np.fft.fft2(t)) ** 2))(x)
    assert g.dtype == np.float32


# -- the adjoint identity of the primitives ----------------------------------------------------
@pytest.mark.parametrize("n", [63, 64])
@pytest.mark.parametrize("norm", NORMS)
def test_gradients_are_adjoints_under_the_real_inner_product(n, norm):
    """Re<L x, g> = Re<x, grad(g)> for random x and g: FFT, RFFT, IRFFT along the axis of
    length n (the tape's cotangents for a real input are real: RFFT and IRFFT's real side)."""
    def pullback(fn, x, g):
        t = vj.constant(x)
        with vj.GradientTape() as tape:
            tape.watch(t)
            y = fn(t)
        return y.numpy(), tape.gradient(y, t, output_gradients=vj.constant(g)).numpy()

    def pairing(a, b):
        return float(np.real(np.vdot(a, b)))
    cases = [(lambda t: np.fft.fft(t, axis=0, norm=norm), _complex(n, 3), _complex(n, 3)),
             (lambda t: np.fft.fft(t, axis=0, norm=norm), _real(n, 3), _complex(n, 3)),
             (lambda t: np.fft.rfft(t, axis=0, norm=norm), _real(n, 3), _complex(n // 2 + 1, 3)),
             (lambda t: np.fft.irfft(t, n=n, axis=0, norm=norm), _complex(n // 2 + 1, 3),
              _real(n, 3))]
    for fn, x, g in cases:
        y, back = pullback(fn, x, g)
        assert back.dtype == x.dtype
        assert abs(pairing(y, g) - pairing(x, back)) <= 1e-10 * max(1.0, abs(pairing(y, g)))


def test_irfft_ignores_the_imaginary_parts_of_dc_and_nyquist():
    for n in (6, 7):
        h = _complex(n // 2 + 1)
        t = vj.constant(h)
        with vj.GradientTape() as tape:
            tape.watch(t)
            loss = vj.reduce_sum(np.fft.irfft(t, n=n) * np.arange(n, dtype=float) ** 2)
        g = tape.gradient(loss, t).numpy()
        assert g[0].imag == 0
        if n % 2 == 0:
            assert g[-1].imag == 0
        else:
            assert g[-1].imag != 0  # the last bin of an odd n stands for two


# -- real losses through np.fft on Tensors -----------------------------------------------------
def test_parseval_gradient():
    x = _real(5, 6)
    g = vj.grad(lambda u: vj.reduce_sum(np.abs(np.fft.fft2(u)) ** 2))(x)
    np.testing.assert_allclose(g.numpy(), 2 * 30 * x, rtol=1e-12, atol=1e-12)
    z = _complex(7)
    # TF's convention on the tape: dL/dx + i dL/dy = 2 n z; vj.grad (JAX's): its conjugate
    t = vj.constant(z)
    with vj.GradientTape() as tape:
        tape.watch(t)
        loss = vj.reduce_sum(np.abs(np.fft.ifft(t, norm="forward")) ** 2)
    np.testing.assert_allclose(tape.gradient(loss, t).numpy(), 2 * 7 * z, rtol=1e-12)
    np.testing.assert_allclose(
        vj.grad(lambda w: vj.reduce_sum(np.abs(np.fft.fft(w)) ** 2))(z).numpy(),
        2 * 7 * np.conj(z), rtol=1e-12)


def test_spectral_smoothing_loss_against_its_closed_form():
    """L(u) = sum |H * fft2(u)|^2 + lam * sum (irfft2(rfft2(u) * K) - d)^2 with a complex
    filter H and a real kernel spectrum K. Closed form (u real, F the 2-D DFT, N = u.size):
    grad = 2 N Re(ifft2(|H|^2 fft2(u))) + 2 lam irfft2(conj-weighted ...) computed below
    with NumPy on plain arrays, the second term by the adjoint of u -> irfft2(rfft2(u) K),
    which for a real symmetric kernel is the same map."""
    m, n = 6, 8
    u, d = _real(m, n), _real(m, n)
    H = _complex(m, n)
    ky, kx = np.meshgrid(np.fft.fftfreq(m), np.fft.rfftfreq(n), indexing="ij")
    K = np.exp(-(kx ** 2 + ky ** 2) * 10.0)  # real, even in k: a symmetric convolution
    lam = 0.3

    def loss(u):
        smooth = np.fft.irfft2(np.fft.rfft2(u) * K, s=(m, n))
        return vj.reduce_sum(np.abs(H * np.fft.fft2(u)) ** 2) + \
            lam * vj.reduce_sum((smooth - d) ** 2)
    smooth = np.fft.irfft2(np.fft.rfft2(u) * K, s=(m, n))
    expected = (2 * m * n * np.real(np.fft.ifft2(np.abs(H) ** 2 * np.fft.fft2(u))) +
                2 * lam * np.fft.irfft2(np.fft.rfft2(smooth - d) * K, s=(m, n)))
    np.testing.assert_allclose(vj.grad(loss)(u).numpy(), expected, rtol=1e-10, atol=1e-10)
    eps = 1e-6
    k = (2, 3)
    bump = np.zeros_like(u)
    bump[k] = eps
    fd = (loss(vj.constant(u + bump)).numpy() - loss(vj.constant(u - bump)).numpy()) / (2 * eps)
    np.testing.assert_allclose(expected[k], fd, rtol=1e-6)


# -- Jacobians and Hessians against numerical Jacobians of the real map ---------------------------
def _as_pairs(y):
    y = np.asarray(y.numpy() if isinstance(y, vj.Tensor) else y)
    return np.stack([y.real, y.imag], axis=-1) if y.dtype.kind == "c" else y


def test_jacfwd_jacrev_of_real_maps():
    x = _real(3, 5)

    def f(t):  # real in, real out
        return np.fft.irfft(np.fft.rfft(t, n=6, axis=1) ** 2, n=5, axis=1)
    expected = numerical_jacobian(lambda v: f(vj.constant(v)).numpy(), x)
    np.testing.assert_allclose(vj.jacfwd(f)(x).numpy(), expected, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(vj.jacrev(f)(x).numpy(), expected, rtol=1e-6, atol=1e-8)


def test_jacobian_of_complex_maps_is_the_real_jacobian():
    z = _complex(4)

    def f(w):
        return np.fft.fft(w, n=5, norm="ortho") * np.fft.ifft(w, n=5)
    jac = vj.jacobian(f)(z).numpy()  # (5, 2) x (4, 2): real and imaginary parts

    def real_map(v):
        return _as_pairs(f(vj.constant(v[..., 0] + 1j * v[..., 1])))
    expected = numerical_jacobian(real_map, np.stack([z.real, z.imag], -1))
    np.testing.assert_allclose(jac, expected, rtol=1e-6, atol=1e-8)


def test_hessian_of_a_spectral_loss():
    x = _real(2, 4)

    def loss(t):
        return vj.reduce_sum(np.abs(np.fft.rfft2(t) ** 2 + np.fft.fft(t, axis=0)[:, :3]) ** 2)
    hess = vj.hessian(loss)(x).numpy().reshape(8, 8)

    def grad(v):
        return vj.grad(loss)(v).numpy()
    np.testing.assert_allclose(hess, numerical_jacobian(grad, x).reshape(8, 8), rtol=1e-6,
                               atol=1e-6)
    np.testing.assert_allclose(hess, hess.T, atol=1e-10)


# -- pfor, sparsity, vj.function ----------------------------------------------------------------
def test_pfor_runs_one_batched_transform_per_op():
    batch = _complex(4, 3, 6)
    reals = _real(4, 3, 6)

    def loop_fn(i):
        z = vj.gather(vj.constant(batch), i)
        x = vj.gather(vj.constant(reals), i)
        with vj.GradientTape() as tape:  # per-example gradients
            tape.watch(x)
            spectrum = np.fft.rfft2(x, s=(4, 5)) * np.fft.fft2(z, s=(4, 6))[:, :3]
            y = np.fft.irfft2(spectrum, s=(3, 6))
            loss = vj.reduce_sum(y ** 2)
        return y, np.fft.ifftn(z, axes=(1,), norm="ortho"), tape.gradient(loss, x)
    check_pfor(loop_fn, 4, fallback_to_while_loop=False)
    calls = []
    forward = FFT.forward

    def counting(*a, **kw):
        calls.append(1)
        return forward(*a, **kw)
    FFT.forward = counting
    try:
        vj.vectorized_map(lambda z: np.fft.fft(z, axis=0), vj.constant(batch))
    finally:
        del FFT.forward
    assert len(calls) == 1


def test_sparsity_patterns_are_dense_along_the_transformed_axes_only():
    x = np.ones((3, 4))
    P = vj.jacobian_sparsity(lambda t: vj.math.real(np.fft.fft(t, axis=1)), x).toarray()
    np.testing.assert_array_equal(P, np.kron(np.eye(3), np.ones((4, 4))))
    P = vj.jacobian_sparsity(lambda t: np.fft.irfft(np.fft.rfft(t, axis=0), n=5, axis=0),
                             np.ones((5, 2))).toarray()
    np.testing.assert_array_equal(P, np.kron(np.ones((5, 5)), np.eye(2)))
    # a real-input sparsity detection through the sparse Jacobian: the values too
    def f(t):  # sparse Jacobians take a vector
        return vj.reshape(vj.math.real(np.fft.rfft(vj.reshape(t, (3, 4)), axis=1)), (-1,))
    J = vj.sparse_jacobian(f)(_real(12)).toarray()
    expected = np.kron(np.eye(3), np.real(np.fft.rfft(np.eye(4), axis=0)))
    np.testing.assert_allclose(J, expected, atol=1e-12)


def test_function_replay_equals_eager_on_complex_values():
    def f(z, x):
        spectrum = np.fft.fft2(z) * np.fft.rfft2(x, s=(3, 6))[:, :, None][..., 0][:, :4]
        return vj.reduce_sum(np.abs(np.fft.ifftshift(np.fft.ifft2(spectrum), axes=0)) ** 2)
    z, x = _complex(3, 4), _real(3, 5)
    fast = vj.function(f)
    for _ in range(3):  # the trace, then replays
        np.testing.assert_allclose(fast(z, x).numpy(), f(vj.constant(z), vj.constant(x)).numpy(),
                                   rtol=1e-13)
    grad = vj.function(vj.grad(f, argnums=(0, 1)))
    eager = vj.grad(f, argnums=(0, 1))(z, x)
    for _ in range(2):
        for a, b in zip(grad(z, x), eager):
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12)


def test_hessian_through_a_complex_input_of_hfft():
    z = _complex(5)

    def loss(w):
        return vj.reduce_sum(np.abs(np.fft.hfft(w, n=8)) ** 2)
    x = np.stack([z.real, z.imag])

    def real_loss(t):
        return loss(vj.math.complex(t[0], t[1]))
    h = vj.hessian(real_loss)(x).numpy().reshape(10, 10)
    expected = numerical_jacobian(lambda u: vj.grad(real_loss)(u).numpy(), x).reshape(10, 10)
    np.testing.assert_allclose(h, expected, rtol=1e-6, atol=1e-6)
