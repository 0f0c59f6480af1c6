"""vj.linalg (and vj.scipy.linalg's matrix functions, np.linalg's dispatch) on complex
matrices: derivatives in both modes to order 2, dtypes, pfor Jacobians and closed forms.

The convention (vecjac/_src/ops/elementwise/complex_parts.py): the tape's gradient is the
adjoint of the JVP under Re<a, b> = Re(sum(conj(a) b)), so a real loss L of z = x + iy
gets dL/dx + i dL/dy; vj.grad / vj.jacrev / vj.jacfwd follow JAX (holomorphic=True: the
complex derivative df/dz). Every expected value here is computed independently: central
differences of the real map (real and imaginary parts) written below, NumPy / SciPy
values, or closed forms (cofactors, left eigenvectors, singular vectors).

Decompositions whose vectors carry a phase freedom (svd, eigh, eig) are checked through
functions invariant under those phases (values, |u|^2, u diag(s) v^H); qr needs none
(LAPACK's r has a real diagonal, so q and r are locally unique) and is checked as it is.
"""
import numpy as np
import pytest
import scipy.linalg

import vecjac as vj
from vecjac._src.core.dispatch import apply
from vecjac._src.core.registry import REGISTRY, lib
from vecjac.testing import check_grads

RNG = np.random.default_rng(20260)
H = vj.linalg.matrix_transpose
conj, real = vj.math.conj, vj.math.real


def _c(*shape, scale=1.0):
    return scale * (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape))


def _square(*shape):
    """1.5 I + small complex noise: well conditioned, distinct eigenvalues."""
    return 1.5 * np.eye(shape[-1]) + _c(*shape, scale=0.3)


def _spread(m, n):
    """diag(1, 2, ...) + small complex noise: well separated singular values."""
    d = np.zeros((m, n), complex)
    k = min(m, n)
    d[np.arange(k), np.arange(k)] = np.arange(1, k + 1)
    return d + _c(m, n, scale=0.1)


def _hpd_half(n):
    """a with a + a^H Hermitian positive definite (so the whole of a can move)."""
    b = _c(n, n)
    return 0.5 * (b @ b.conj().T) + n * 0.5 * np.eye(n) + _c(n, n, scale=0.05)


def _ct(a):
    return conj(H(a))


def _abs2(z):
    return real(z * conj(z))


def _svd_invariant(a):
    s, u, v = vj.linalg.svd(a)
    return s, _abs2(u), _abs2(v), (u * s[..., None, :]) @ _ct(v)


def _eigh_invariant(a):
    e, v = vj.linalg.eigh(a)
    return e, _abs2(v)


def _eig_invariant(a):
    w, v = vj.linalg.eig(a)
    return w, _abs2(v)


A3, B32 = _square(3, 3), _c(3, 2)
TALL, WIDE = _spread(4, 3), _spread(2, 4)

# name: (f, args); every argument complex128
CASES = {
    "solve": (vj.linalg.solve, [A3, B32]),
    "solve_adjoint": (lambda a, b: vj.linalg.solve(a, b, adjoint=True), [A3, B32]),
    "solve_batched": (vj.linalg.solve, [_square(2, 3, 3), _c(3, 1)]),
    "triangular_lower": (vj.linalg.triangular_solve, [A3, B32]),
    "triangular_upper_adjoint": (lambda a, b: vj.linalg.triangular_solve(
        a, b, lower=False, adjoint=True), [A3, B32]),
    "inv": (vj.linalg.inv, [A3]),
    "inv_adjoint_batched": (lambda a: vj.linalg.inv(a, adjoint=True), [_square(2, 3, 3)]),
    "det": (vj.linalg.det, [A3]),
    "det_batched": (vj.linalg.det, [_square(2, 2, 2)]),
    "det_singular": (vj.linalg.det, [_c(3, 2) @ _c(2, 3)]),
    "adjugate_singular": (lambda a: apply(lib.Adjugate, a), [_c(3, 2) @ _c(2, 3)]),
    "adjugate": (lambda a: apply(lib.Adjugate, a), [A3]),
    "slogdet": (vj.linalg.slogdet, [A3]),
    "cholesky": (lambda a: vj.linalg.cholesky(a + _ct(a)), [_hpd_half(3)]),
    "logdet": (lambda a: vj.linalg.logdet(a + _ct(a)), [_hpd_half(3)]),
    "qr_square": (vj.linalg.qr, [A3]),
    "qr_tall": (vj.linalg.qr, [TALL]),
    "qr_wide": (vj.linalg.qr, [WIDE]),
    "svd_square": (_svd_invariant, [_spread(3, 3)]),
    "svd_tall": (_svd_invariant, [TALL]),
    "svd_wide": (_svd_invariant, [WIDE]),
    "svd_values_batched": (lambda a: vj.linalg.svd(a, compute_uv=False),
                           [np.stack([_spread(3, 2), _spread(3, 2)])]),
    "eigh": (_eigh_invariant, [np.diag([1.0, 2.0, 3.0]) + _c(3, 3, scale=0.1)]),
    "eigvalsh": (vj.linalg.eigvalsh, [np.diag([1.0, 2.0]) + _c(2, 2, 2, scale=0.1)]),
    "eig": (_eig_invariant, [A3]),
    "eig_batched": (_eig_invariant, [_square(2, 2, 2)]),
    "eigvals": (vj.linalg.eigvals, [A3]),
    "pinv_tall": (vj.linalg.pinv, [TALL]),
    "pinv_wide": (vj.linalg.pinv, [WIDE]),
    "lstsq_tall": (vj.linalg.lstsq, [TALL, _c(4, 2)]),
    "lstsq_wide": (vj.linalg.lstsq, [WIDE, _c(2, 1)]),
    "lstsq_l2": (lambda a, b: vj.linalg.lstsq(a, b, l2_regularizer=0.5), [TALL, _c(4, 2)]),
    "lstsq_pinv": (lambda a, b: vj.linalg.lstsq(a, b, fast=False), [TALL, _c(4, 2)]),
    "diag_diag_part_trace": (lambda a: (vj.linalg.diag(vj.linalg.diag_part(a)),
                                        vj.linalg.trace(a)), [_c(2, 3, 3)]),
    "matvec_adjoint": (lambda a, b: vj.linalg.matvec(a, b, adjoint_a=True), [A3, _c(3)]),
    "expm": (vj.scipy.linalg.expm, [_c(3, 3, scale=0.5)]),
    "sqrtm": (vj.scipy.linalg.sqrtm, [A3]),
    "solve_sylvester": (vj.scipy.linalg.solve_sylvester, [A3, _square(2, 2), _c(3, 2)]),
}


# The adjugate's own second derivative at a singular complex matrix goes through the phase
# det(u) conj(det(v)), whose derivative has 1 / s_k terms that cancel only analytically
# (vecjac/_src/ops/linalg/adjugate.py): first order there; the determinant's first two.
FIRST_ORDER = {"adjugate_singular"}


@pytest.mark.parametrize("name", list(CASES))
def test_derivatives_match_finite_differences_to_order_two(name):
    # reverse and forward mode, orders 1 and 2, and vj.vjp's (JAX's) convention
    f, args = CASES[name]
    check_grads(f, args, order=1 if name in FIRST_ORDER else 2, modes=("fwd", "rev"))


@pytest.mark.parametrize("name", ["eig", "eigvals"])
def test_eig_of_a_real_matrix_with_complex_eigenvalues(name):
    # a real input, complex outputs: the tape keeps the real part of the cotangent
    rotation = np.array([[1.0, -2.0, 0.0], [2.0, 1.0, 0.0], [0.0, 0.0, 3.0]])
    a = rotation + 0.1 * RNG.standard_normal((3, 3))
    f = CASES[name][0]
    check_grads(f, [a], order=2)
    g = vj.grad(lambda x: vj.reduce_sum(_abs2(vj.linalg.eigvals(x))))(a)
    assert g.dtype == np.float64


# -- complex64 stays complex64 ----------------------------------------------------------
@pytest.mark.parametrize("name", [n for n in CASES if "singular" not in n])
def test_complex64_in_complex64_out(name):
    f, args = CASES[name]
    xs = [vj.constant(a.astype(np.complex64)) for a in args]
    with vj.GradientTape() as tape:
        tape.watch(xs)
        outs = vj.nest.flatten(f(*xs))
        loss = sum(vj.reduce_sum(_abs2(o) if o.dtype.kind == "c" else o) for o in outs)
    for o in outs:
        assert o.dtype in (np.complex64, np.float32), (name, o.dtype)
    for g in tape.gradient(loss, xs):
        assert g.dtype == np.complex64, (name, g.dtype)
    tangents = [vj.constant(np.ones_like(a, np.complex64)) for a in args]
    with vj.autodiff.ForwardAccumulator(xs, tangents) as acc:
        outs = vj.nest.flatten(f(*xs))
    for o in outs:
        assert acc.jvp(o).dtype == o.dtype, name


# -- Jacobians through pfor against central differences --------------------------------
def _holomorphic_fd(f, z, eps=1e-6):
    """df/dz of a holomorphic NumPy f: the derivative along the real axis of each entry."""
    y = np.asarray(f(z))
    jac = np.zeros(y.shape + z.shape, complex)
    for idx in np.ndindex(z.shape):
        d = np.zeros(z.shape)
        d[idx] = eps
        jac[(Ellipsis,) + idx] = (np.asarray(f(z + d)) - np.asarray(f(z - d))) / (2 * eps)
    return jac


def _real_pairs(y):
    y = np.asarray(y)
    return np.stack([y.real, y.imag], -1) if y.dtype.kind == "c" else y


def _real_map_fd(f, z, eps=1e-6):
    """The Jacobian of the real map (Re z, Im z) -> (Re f, Im f), vj.jacobian's layout."""
    x = np.stack([z.real, z.imag], -1)

    def g(x):
        return _real_pairs(f(x[..., 0] + 1j * x[..., 1]))
    y = g(x)
    jac = np.zeros(y.shape + x.shape)
    for idx in np.ndindex(x.shape):
        d = np.zeros(x.shape)
        d[idx] = eps
        jac[(Ellipsis,) + idx] = (g(x + d) - g(x - d)) / (2 * eps)
    return jac


HOLOMORPHIC = {  # vecjac function, NumPy / SciPy function, argument
    "inv": (vj.linalg.inv, np.linalg.inv, A3),
    "det": (vj.linalg.det, np.linalg.det, A3),
    "solve_in_a": (lambda a: vj.linalg.solve(a, B32), lambda a: np.linalg.solve(a, B32), A3),
    "solve_in_b": (lambda b: vj.linalg.solve(A3, b), lambda b: np.linalg.solve(A3, b), B32),
    "triangular_solve": (lambda a: vj.linalg.triangular_solve(a, B32),
                         lambda a: np.linalg.solve(np.tril(a), B32), A3),
    "eigvals": (vj.linalg.eigvals, lambda a: np.linalg.eig(a)[0], A3),
    "expm": (vj.scipy.linalg.expm, scipy.linalg.expm, CASES["expm"][1][0]),
    "sqrtm": (vj.scipy.linalg.sqrtm, scipy.linalg.sqrtm, A3),
    "inv_batched": (vj.linalg.inv, np.linalg.inv, _square(2, 2, 2)),
}


@pytest.mark.parametrize("mode", ["jacfwd", "jacrev"])
@pytest.mark.parametrize("name", list(HOLOMORPHIC))
def test_holomorphic_jacobians(name, mode):
    f, f_np, z = HOLOMORPHIC[name]
    jac = getattr(vj, mode)(f, holomorphic=True)(z)
    np.testing.assert_allclose(jac.numpy(), _holomorphic_fd(f_np, z), atol=1e-7, rtol=1e-6)


def _np_svd_invariant(a):
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    return np.abs(u) ** 2


NON_HOLOMORPHIC = {  # functions of z and conj(z): vj.jacobian is the real Jacobian
    "svd_values": (lambda a: vj.linalg.svd(a, compute_uv=False),
                   lambda a: np.linalg.svd(a, compute_uv=False), TALL),
    "svd_abs_u": (lambda a: _abs2(vj.linalg.svd(a)[1]), _np_svd_invariant, WIDE),
    "eigh_values": (vj.linalg.eigvalsh, np.linalg.eigvalsh, CASES["eigh"][1][0]),
    "eig_abs_v": (lambda a: _abs2(vj.linalg.eig(a)[1]),
                  lambda a: np.abs(np.linalg.eig(a)[1]) ** 2, A3),
    "cholesky": (lambda a: vj.linalg.cholesky(a + _ct(a)),
                 lambda a: np.linalg.cholesky(a + a.conj().T), _hpd_half(3)),
    "qr": (lambda a: vj.linalg.qr(a)[0], lambda a: np.linalg.qr(a)[0], TALL),
    "pinv": (vj.linalg.pinv, np.linalg.pinv, WIDE),
    "slogdet": (lambda a: vj.linalg.slogdet(a)[1], lambda a: np.linalg.slogdet(a)[1], A3),
    "slogdet_sign": (lambda a: vj.linalg.slogdet(a)[0], lambda a: np.linalg.slogdet(a)[0],
                     A3),
}


@pytest.mark.parametrize("mode", ["fwd", "auto"])  # auto: reverse for these sizes
@pytest.mark.parametrize("name", list(NON_HOLOMORPHIC))
def test_real_jacobians_of_non_holomorphic_maps(name, mode):
    f, f_np, z = NON_HOLOMORPHIC[name]
    jac = vj.jacobian(f, mode=mode)(z)
    np.testing.assert_allclose(jac.numpy(), _real_map_fd(f_np, z), atol=1e-7, rtol=1e-6)


def test_pfor_over_complex_matrices_equals_the_loop():
    batch = _square(4, 3, 3)
    rhs = _c(3, 2)

    def many(a):
        s, u, v = vj.linalg.svd(a)
        q, r = vj.linalg.qr(a)
        return (vj.linalg.inv(a), vj.linalg.det(a), vj.linalg.slogdet(a)[0],
                vj.linalg.solve(a, rhs), vj.linalg.eigvals(a), vj.linalg.eigvalsh(a), s,
                q, r, vj.linalg.pinv(a), vj.linalg.cholesky(a @ _ct(a)))
    vectorized = vj.vectorized_map(many, vj.constant(batch))
    for k, (v, a) in enumerate(zip(vectorized, zip(*[many(vj.constant(b)) for b in batch]))):
        np.testing.assert_allclose(v.numpy(), np.stack([x.numpy() for x in a]), atol=1e-12,
                                   err_msg=str(k))


# -- closed forms ---------------------------------------------------------------------------
def _cofactor_adjugate(a):
    """adj(a) from cofactors: adj(a)_ij = (-1)^(i+j) det(a without row j and column i)."""
    n = a.shape[-1]
    adj = np.zeros_like(a)
    for i in range(n):
        for j in range(n):
            minor = np.delete(np.delete(a, j, axis=0), i, axis=1)
            adj[i, j] = (-1) ** (i + j) * np.linalg.det(minor)
    return adj


@pytest.mark.parametrize("a", [A3, _c(3, 2) @ _c(2, 3)], ids=["invertible", "singular"])
def test_determinant_derivative_is_the_adjugate(a):
    adj = _cofactor_adjugate(a)
    np.testing.assert_allclose(apply(lib.Adjugate, vj.constant(a)).numpy(), adj, atol=1e-12)
    # JAX's convention, holomorphic: d det / dA = adj(A)^T (= det(A) inv(A)^T if invertible)
    for transform in (vj.grad, vj.jacfwd, vj.jacrev):
        d = transform(vj.linalg.det, holomorphic=True)(a)
        np.testing.assert_allclose(d.numpy(), adj.T, atol=1e-12)
    # the tape's: the adjoint of dA -> tr(adj(A) dA), g adj(A)^H. (TensorFlow's gradient
    # of a complex determinant, g det(A) inv(A)^H, lacks the conjugate of det(A); the
    # finite differences of test_derivatives_match_finite_differences_to_order_two, the
    # "det" case, agree with the conjugate.)
    t = vj.constant(a)
    with vj.GradientTape() as tape:
        tape.watch(t)
        d = vj.linalg.det(t)
    g = tape.gradient(d, t, output_gradients=vj.constant(np.array(0.5 - 2.0j)))
    np.testing.assert_allclose(g.numpy(), (0.5 - 2.0j) * adj.conj().T, atol=1e-12)


def test_inverse_and_log_determinant_closed_forms():
    a = A3
    x = np.linalg.inv(a)
    jac = vj.jacfwd(vj.linalg.inv, holomorphic=True)(a).numpy()
    # d(A^-1)_ij / dA_kl = -(A^-1)_ik (A^-1)_lj
    np.testing.assert_allclose(jac, -np.einsum("ik,lj->ijkl", x, x), atol=1e-12)
    # log|det A| = Re log det A: the tape's gradient is conj(A^-T) = A^-H
    t = vj.constant(a)
    with vj.GradientTape() as tape:
        tape.watch(t)
        sign, logabs = vj.linalg.slogdet(t)
    assert logabs.dtype == np.float64 and sign.dtype == np.complex128
    np.testing.assert_allclose(tape.gradient(logabs, t).numpy(), x.conj().T, atol=1e-12)
    s0, l0 = np.linalg.slogdet(a)
    np.testing.assert_allclose(sign.numpy(), s0, atol=1e-14)
    np.testing.assert_allclose(logabs.numpy(), l0, atol=1e-14)


def test_eigenvalue_derivatives_from_left_eigenvectors():
    a = A3
    w, left, right = scipy.linalg.eig(a, left=True, right=True)
    jac = vj.jacfwd(vj.linalg.eigvals, holomorphic=True)(a).numpy()
    order = [int(np.argmin(np.abs(w - x))) for x in np.linalg.eigvals(a)]
    for i, k in enumerate(order):  # d w = y^H dA x / (y^H x)
        y, x = left[:, k], right[:, k]
        np.testing.assert_allclose(jac[i], np.outer(y.conj(), x) / (y.conj() @ x), atol=1e-11)


def test_singular_value_and_hermitian_eigenvalue_gradients():
    a = TALL
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    t = vj.constant(a)
    with vj.GradientTape(persistent=True) as tape:
        tape.watch(t)
        sv = vj.linalg.svd(t, compute_uv=False)
        parts = [sv[i] for i in range(3)]
    for i in range(3):  # d s_i = Re(u_i^H dA v_i): the gradient u_i v_i^H
        np.testing.assert_allclose(tape.gradient(parts[i], t).numpy(),
                                   np.outer(u[:, i], vh[i]), atol=1e-12)
    h = CASES["eigh"][1][0]
    e, v = np.linalg.eigh(h)
    t = vj.constant(h)
    with vj.GradientTape() as tape:
        tape.watch(t)
        top = vj.linalg.eigvalsh(t)[-1]
    # d e = Re(v^H dA v) of the Hermitian matrix of the lower triangle: 2 v v^H strictly
    # below the diagonal, its real diagonal on it, 0 above
    p = np.outer(v[:, -1], v[:, -1].conj())
    expected = np.tril(2 * p, -1) + np.diag(np.diag(p).real)
    np.testing.assert_allclose(tape.gradient(top, t).numpy(), expected, atol=1e-12)


def test_qr_has_a_real_diagonal_and_unique_factors():
    for a in (A3, TALL, WIDE):
        q, r = vj.linalg.qr(a)
        np.testing.assert_allclose((q @ r).numpy(), a, atol=1e-12)
        np.testing.assert_allclose((_ct(q) @ q).numpy(), np.eye(q.shape[-1]), atol=1e-12)
        assert np.all(np.diagonal(r.numpy()).imag == 0)


def test_jvp_and_gradient_are_adjoint_even_where_the_phase_matters():
    """Re<u, J t> = Re<J* u, t> for u and v themselves (not phase invariant): both rules
    fix the same phase convention."""
    fns = {"svd": lambda a: vj.linalg.svd(a)[1:], "eigh": lambda a: vj.linalg.eigh(a)[1],
           "eig": lambda a: vj.linalg.eig(a)[1]}
    for name, f in fns.items():
        a = vj.constant(_spread(3, 3))
        t = _c(3, 3)
        with vj.autodiff.ForwardAccumulator(a, vj.constant(t)) as acc:
            with vj.GradientTape() as tape:
                tape.watch(a)
                outs = vj.nest.flatten(f(a))
                us = [_c(*o.shape) for o in outs]
                loss = sum(real(vj.reduce_sum(o * vj.constant(u.conj()))) for o, u in
                           zip(outs, us))
        forward = sum(np.real(np.vdot(u, acc.jvp(o).numpy())) for o, u in zip(outs, us))
        reverse = np.real(np.vdot(tape.gradient(loss, a).numpy(), t))
        np.testing.assert_allclose(forward, reverse, rtol=1e-10, err_msg=name)


def test_eig_values_dtypes_and_degenerate_vectors():
    w, v = vj.linalg.eig(A3)
    ew, ev = np.linalg.eig(A3)
    np.testing.assert_allclose(w.numpy(), ew, atol=1e-13)
    np.testing.assert_allclose(v.numpy(), ev, atol=1e-13)
    np.testing.assert_allclose(np.linalg.norm(v.numpy(), axis=0), 1.0, rtol=1e-13)
    assert vj.linalg.eigvals(np.eye(2)).dtype == np.complex128  # NumPy: float64 here
    assert vj.linalg.eigvals(np.eye(2, dtype=np.float32)).dtype == np.complex64
    # a tie: the eigenvalues' gradient exists (the trace's), the vectors' is NaN
    g = vj.grad(lambda x: vj.reduce_sum(real(vj.linalg.eigvals(x))))(np.eye(3))
    np.testing.assert_allclose(g.numpy(), np.eye(3), atol=1e-14)
    g = vj.grad(lambda x: vj.reduce_sum(_abs2(vj.linalg.eig(x)[1]) * np.arange(9.0)
                                        .reshape(3, 3)))(np.eye(3))
    assert np.all(np.isnan(g.numpy()))


# -- the real path is untouched ---------------------------------------------------------
def test_real_matrices_record_no_complex_op():
    complex_ops = {"Conj", "Real", "Imag", "Complex", "ComplexAbs", "Angle"}
    a = np.diag([1.0, 2.0, 3.0]) + 0.1 * RNG.standard_normal((3, 3))
    for name, (f, args) in CASES.items():
        if name in ("eig", "eig_batched", "eigvals"):
            continue  # eig is complex whatever its input
        xs = [vj.constant(np.real(x) + (a if x.shape == (3, 3) else 0)) for x in args]
        with vj.GradientTape(persistent=True) as outer:
            outer.watch(xs)
            with vj.GradientTape() as tape:
                tape.watch(xs)
                loss = sum(vj.reduce_sum(o) for o in vj.nest.flatten(f(*xs)))
            tape.gradient(loss, xs)
        used = {e.op.name for e in outer.recorded()} & complex_ops
        assert not used, (name, used)


def test_every_listed_op_has_complex_rules():
    names = ["MatrixSolve", "MatrixTriangularSolve", "MatrixInverse", "MatrixDeterminant",
             "LogMatrixDeterminant", "Cholesky", "Qr", "Svd", "SelfAdjointEigV2", "Eig",
             "MatrixPinv", "MatrixSolveLs", "MatrixDiagV3", "MatrixDiagPartV3", "Adjugate",
             "MatrixExponential", "MatrixSquareRoot", "SolveSylvester"]
    assert [n for n in names if not REGISTRY[n].complex_rules] == []


# -- np.linalg on complex Tensors -------------------------------------------------------
B41 = _c(4, 1)
HPD = A3 @ A3.conj().T  # (np.conjugate of a complex Tensor is NumPy's, without derivative)
NUMPY = {
    "solve": (lambda a: np.linalg.solve(a, B32), A3),
    "solve_vector": (lambda a: np.linalg.solve(a, B32[:, 0]), A3),
    "inv": (np.linalg.inv, A3),
    "det": (np.linalg.det, A3),
    "slogdet": (lambda a: tuple(np.linalg.slogdet(a)), A3),
    "cholesky": (np.linalg.cholesky, HPD),
    "cholesky_upper": (lambda a: np.linalg.cholesky(a, upper=True), HPD),
    "qr": (lambda a: tuple(np.linalg.qr(a)), TALL),
    "svd": (lambda a: np.linalg.svd(a, full_matrices=False)[1], TALL),
    "svd_product": (lambda a: (lambda u, s, vh: (u * s[..., None, :]) @ vh)(
        *np.linalg.svd(a, full_matrices=False)), TALL),
    "svd_hermitian": (lambda a: np.abs(np.linalg.svd(a, hermitian=True)[2]), HPD),
    "eigh_upper": (lambda a: np.linalg.eigh(a, UPLO="U")[0], A3),
    "eigvalsh": (np.linalg.eigvalsh, A3),
    "eig": (lambda a: tuple(np.linalg.eig(a)), A3),
    "eigvals": (np.linalg.eigvals, A3),
    "pinv": (np.linalg.pinv, WIDE),
    "lstsq": (lambda a: (lambda r: (r[0], r[1], r[3]))(np.linalg.lstsq(a, B41, rcond=None)),
              TALL),
    "norm_2": (lambda a: np.linalg.norm(a, 2), A3),
}


@pytest.mark.parametrize("name", list(NUMPY))
def test_numpy_linalg_dispatches_complex_tensors_to_the_ops(name, recwarn):
    f, a = NUMPY[name]
    expected = f(a)
    t = vj.constant(a)
    with vj.GradientTape() as tape:
        tape.watch(t)
        got = f(t)
        leaves = [x for x in vj.nest.flatten(got)]
        loss = sum(vj.reduce_sum(_abs2(x) if x.dtype.kind == "c" else x) for x in leaves)
    assert all(isinstance(x, vj.Tensor) for x in leaves), name
    assert not recwarn.list, [str(w.message) for w in recwarn.list]  # no NumPy fallback
    for x, y in zip(leaves, vj.nest.flatten(expected)):
        np.testing.assert_allclose(x.numpy(), y, atol=1e-12, err_msg=name)
    assert tape.gradient(loss, t) is not None
