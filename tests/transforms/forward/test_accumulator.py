"""Forward mode: ForwardAccumulator (TF's semantics), vj.jvp / linearize / jacfwd /
jacobian(mode) / hessian / hvp, and how forward mode composes with tapes and pfor.

Every op's JVP is checked by the registry tests (tests/test_registry.py); this file holds
what samples cannot express: the accumulator's rules, composition, errors, structure.
"""
import contextlib
import gc
import warnings

import numpy as np
import pytest

import vecjac as vj
from vecjac.autodiff import ForwardAccumulator
from vecjac.testing import check_grads, numerical_jacobian
from vecjac._src.core.flags import NO_FAST_PATHS
from vecjac._src.transforms.pfor import structured

RNG = np.random.default_rng(7)
A = RNG.standard_normal((6, 3))
B = RNG.standard_normal((6, 3))


def tall(p):
    return vj.tanh(vj.constant(A) @ p) * vj.sin(vj.constant(B) @ p)


def tall_np(p):
    return np.tanh(A @ p) * np.sin(B @ p)


# -- TF's ForwardAccumulator ---------------------------------------------------------------
def test_tf_docstring_examples():
    primal = vj.constant(1.1)
    with ForwardAccumulator(primal, vj.constant(1.0)) as outer:
        with ForwardAccumulator(primal, vj.constant(1.0)) as inner:
            primal_out = primal ** vj.constant(3.5)
    inner_jvp = inner.jvp(primal_out)
    np.testing.assert_allclose(inner_jvp.numpy(), 3.5 * 1.1 ** 2.5, rtol=1e-14)
    np.testing.assert_allclose(outer.jvp(inner_jvp).numpy(), 3.5 * 2.5 * 1.1 ** 1.5, rtol=1e-14)
    # forward over backward: an HVP
    v = vj.Variable([1.0, 2.0])
    with ForwardAccumulator(v, vj.constant([1.0, 0.0])) as acc:
        with vj.GradientTape() as tape:
            y = vj.reduce_sum(v ** 3.0)
        backward = tape.gradient(y, v)
    np.testing.assert_allclose(backward.numpy(), [3.0, 12.0])
    np.testing.assert_allclose(acc.jvp(backward).numpy(), [6.0, 0.0])


def test_inner_accumulator_does_not_see_outer_jvp_computation():
    x = vj.constant(2.0)
    with ForwardAccumulator(x, vj.constant(1.0)) as outer:
        with ForwardAccumulator(x, vj.constant(1.0)) as inner:
            y = x ** 3.0
    assert inner.jvp(outer.jvp(y)) is None  # reversed order does not work (as in TF)


def test_dense_layer_example_matches_tape_gradient():
    x = vj.constant([[2.0, 3.0], [1.0, 4.0]])
    targets = vj.constant([[1.0], [-1.0]])
    dense = vj.layers.Dense(1)
    dense.build((None, 2))
    loss_fn = lambda: vj.reduce_sum((dense(x) - targets) ** 2.0)  # noqa: E731
    columns = []
    for t in ([[1.0], [0.0]], [[0.0], [1.0]]):
        with ForwardAccumulator(dense.kernel, vj.constant(t)) as acc:
            columns.append(acc.jvp(loss_fn()).numpy())
    with ForwardAccumulator(dense.bias, vj.constant([1.0])) as acc:
        bias_fprop = acc.jvp(loss_fn())
    with vj.GradientTape() as tape:
        loss = loss_fn()
    kernel_grad, bias_grad = tape.gradient(loss, (dense.kernel, dense.bias))
    np.testing.assert_allclose(kernel_grad.numpy()[:, 0], columns, rtol=1e-12)
    np.testing.assert_allclose(bias_grad.numpy(), [bias_fprop.numpy()], rtol=1e-12)


def test_watch_rules_and_errors():
    x = vj.constant([1.0, 2.0])
    with pytest.raises(ValueError, match="multiple times"):
        ForwardAccumulator([x, x], [vj.ones(2), vj.ones(2)])
    acc = ForwardAccumulator(x, vj.ones(2))
    with acc:
        with pytest.raises(ValueError, match="already recording"):
            acc.__enter__()
    with pytest.raises(ValueError, match="shape"):
        ForwardAccumulator(x, vj.ones(3))
    with pytest.raises(ValueError, match="structure"):
        ForwardAccumulator([x], [vj.ones(2), vj.ones(2)])
    with pytest.raises(TypeError, match="floating"):
        ForwardAccumulator(vj.constant([1, 2]), vj.constant([1, 1]))
    with pytest.raises(TypeError, match="complex128 cannot be the tangent of a float64"):
        ForwardAccumulator(vj.constant([1.0]), vj.constant([1j]))
    with pytest.raises(TypeError, match="primals must be Tensors"):
        ForwardAccumulator(np.ones(2), np.ones(2))


def test_ops_outside_the_with_block_are_not_tracked():
    x = vj.constant(3.0)
    acc = ForwardAccumulator(x, vj.constant(1.0))
    y_before = x * x
    with acc:
        y_inside = x * x
    y_after = x * x
    assert acc.jvp(y_before) is None and acc.jvp(y_after) is None
    assert float(acc.jvp(y_inside)) == 6.0
    assert float(acc.jvp(y_after, unconnected_gradients="zero")) == 0.0
    assert float(acc.jvp(x)) == 1.0  # a watched primal's own tangent


def test_unconnected_and_integer_values():
    x = vj.constant([1.0, 2.0])
    with ForwardAccumulator(x, vj.ones(2)) as acc:
        c = vj.constant(5.0) * 2.0
        k = vj.argmax(x)
        y = vj.cast(x, vj.int32) + 1
    assert acc.jvp(c) is None and acc.jvp(k) is None and acc.jvp(y) is None
    np.testing.assert_array_equal(acc.jvp([c, x], unconnected_gradients="zero")[0].numpy(), 0.0)


def test_tape_outside_differentiates_the_jvp():
    x = vj.constant([1.0, 2.0])
    with vj.GradientTape() as tape:
        tape.watch(x)
        with ForwardAccumulator(x, vj.constant([1.0, 1.0])) as acc:
            y = vj.reduce_sum(vj.sin(x) * x)
        j = acc.jvp(y)
    # d/dx of sum(cos(x) x + sin(x)) = -sin(x) x + 2 cos(x)
    expected = -np.sin([1.0, 2.0]) * [1.0, 2.0] + 2 * np.cos([1.0, 2.0])
    np.testing.assert_allclose(tape.gradient(j, x).numpy(), expected, rtol=1e-12)


def test_tape_inside_ignores_the_tangent_computation():
    x = vj.constant(2.0)
    with ForwardAccumulator(x, vj.constant(1.0)):
        with vj.GradientTape() as tape:
            tape.watch(x)
            y = vj.exp(x)
    assert [e.op.name for e in tape.recorded()] == ["Exp"]  # not the tangent's Mul
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), np.exp(2.0))


def test_third_order_by_nested_accumulators_and_variables():
    v = vj.Variable(0.7)
    with ForwardAccumulator(v, vj.constant(1.0)) as a1:
        with ForwardAccumulator(v, vj.constant(1.0)) as a2:
            with ForwardAccumulator(v, vj.constant(1.0)) as a3:
                y = vj.sin(v * 2.0)
            d1 = a3.jvp(y)
        d2 = a2.jvp(d1)
    d3 = a1.jvp(d2)
    np.testing.assert_allclose([d1.numpy(), d2.numpy(), d3.numpy()],
                               [2 * np.cos(1.4), -4 * np.sin(1.4), -8 * np.cos(1.4)],
                               rtol=1e-12)


def test_tangents_of_dead_values_are_released():
    x = vj.constant(np.ones(1000))
    with ForwardAccumulator(x, vj.ones(1000)) as acc:
        for _ in range(50):
            x = vj.sin(x)
        gc.collect()
        assert len(acc._tangents) < 10  # the watched primal and the live chain end


def test_custom_gradient_gives_the_jvp_from_grad_fn():
    @vj.custom_gradient
    def log1pexp(x):
        e = vj.exp(x)
        return vj.math.log(1 + e), lambda dy: dy * (1 - 1 / (1 + e))
    x = vj.constant([0.0, 100.0])
    with ForwardAccumulator(x, vj.ones(2)) as acc:
        y = log1pexp(x)
    np.testing.assert_allclose(acc.jvp(y).numpy(), [0.5, 1.0])  # not NaN at 100


def test_custom_gradient_forward_pass_outside_vecjac():
    @vj.custom_gradient
    def cube(x):
        y = vj.constant(np.asarray(x) ** 3)  # computed by NumPy: no tape would see it
        return y, lambda dy: dy * 3 * x ** 2
    x = vj.constant(2.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with ForwardAccumulator(x, vj.constant(1.0)) as acc:
            y = cube(x)
    assert float(acc.jvp(y)) == 12.0


# -- functional forward mode --------------------------------------------------------------
def test_jvp_matches_jacobian_times_tangent():
    p, t = RNG.standard_normal(3), RNG.standard_normal(3)
    y, ty = vj.jvp(tall, (p,), (t,))
    np.testing.assert_allclose(y.numpy(), tall_np(p), rtol=1e-14)
    np.testing.assert_allclose(ty.numpy(), numerical_jacobian(tall_np, p) @ t, rtol=1e-7)


def test_jvp_nests_argnums_and_aux():
    def f(d, s):
        return {"a": d["w"] * s, "b": vj.reduce_sum(d["w"]) ** 2}, "aux"
    d = {"w": np.array([1.0, 2.0])}
    y, ty, aux = vj.jvp(f, (d, 3.0), ({"w": np.array([1.0, 0.0])}, 0.5), has_aux=True)
    assert aux == "aux"
    np.testing.assert_allclose(ty["a"].numpy(), [1.0 * 3 + 1.0 * 0.5, 2.0 * 0.5])
    np.testing.assert_allclose(ty["b"].numpy(), 2 * 3.0 * 1.0)


@pytest.mark.parametrize("call, match", [
    (lambda: vj.jvp(tall, np.ones(3), (np.ones(3),)), "primals must be a tuple"),
    (lambda: vj.jvp(tall, (np.ones(3),), (np.ones(2),)), "shape"),
    (lambda: vj.jvp(tall, (np.ones(3),), (np.ones(3), np.ones(3))), "2 tangents"),
    (lambda: vj.jvp(tall, (np.ones(3),), (np.ones(3, int),)), "floating"),
    (lambda: vj.jvp(tall, (np.ones(3) + 0j,), (np.ones(3),)), "complex"),
    (lambda: vj.jacobian(tall, mode="sideways"), "mode must be one of"),
    (lambda: vj.jacfwd(tall, argnums=3)(np.ones(3)), "out of range"),
])
def test_bad_forward_arguments(call, match):
    with pytest.raises((TypeError, ValueError), match=match):
        call()


def test_linearize_reuses_the_point():
    p = RNG.standard_normal(3)
    y, f_jvp = vj.linearize(tall, p)
    np.testing.assert_allclose(y.numpy(), tall_np(p))
    J = numerical_jacobian(tall_np, p)
    for t in np.eye(3):
        np.testing.assert_allclose(f_jvp(t).numpy(), J @ t, rtol=1e-7, atol=1e-9)
    with pytest.raises(ValueError, match="shape"):
        f_jvp(np.ones(4))


@pytest.mark.parametrize("mode", ["fwd", "rev", "auto"])
def test_jacobian_modes_agree_with_finite_differences(mode):
    p = RNG.standard_normal(3)
    J = vj.jacobian(tall, mode=mode)
    expected = numerical_jacobian(tall_np, p)
    for _ in range(2):  # auto decides on the first call and remembers
        np.testing.assert_allclose(J(p).numpy(), expected, rtol=1e-7, atol=1e-9)


def test_jacfwd_nested_outputs_and_several_arguments():
    def f(a, b):
        return {"prod": a[:, None] * b[None, :], "sum": vj.reduce_sum(a) * vj.reduce_sum(b)}
    a, b = RNG.standard_normal(2), RNG.standard_normal(3)
    fwd = vj.jacfwd(f, argnums=(0, 1))(a, b)
    rev = vj.jacrev(f, argnums=(0, 1))(a, b)
    for key in ("prod", "sum"):
        for k in range(2):
            assert fwd[key][k].shape == rev[key][k].shape
            np.testing.assert_allclose(fwd[key][k].numpy(), rev[key][k].numpy(), rtol=1e-14)
    assert fwd["prod"][1].shape == (2, 3, 3)


def test_jacfwd_has_no_fallback_and_keeps_seeds_structured():
    x = RNG.standard_normal(200)
    w = vj.constant(RNG.standard_normal((300, 200)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a FallbackWarning would fail here
        J = vj.jacfwd(lambda v: vj.tanh(w @ v) * 2.0)(x)
    expected = (1 - np.tanh(w.numpy() @ x) ** 2)[:, None] * w.numpy() * 2.0
    np.testing.assert_allclose(J.numpy(), expected, rtol=1e-12)
    seen = []
    orig = vj.vectorize.PFor.process

    def spy(loop, op, tensors, attrs):
        seen.append((op.name, [type(t).__name__ for t in tensors]))
        return orig(loop, op, tensors, attrs)
    vj.vectorize.PFor.process = spy
    try:
        vj.jacfwd(lambda v: w @ v)(x)
    finally:
        vj.vectorize.PFor.process = orig
    assert ("MatVec", ["Tensor", "OneHotStacked"]) in seen  # one-hot tangent reached it lazily
    materialized = []
    dense = structured.OneHotStacked._materialize
    structured.OneHotStacked._materialize = lambda s: materialized.append(1) or dense(s)
    try:
        J = vj.jacfwd(lambda v: w @ v)(x)
    finally:
        structured.OneHotStacked._materialize = dense
    assert not materialized  # the structured rule gave the columns of w directly
    np.testing.assert_allclose(J.numpy(), w.numpy(), rtol=0, atol=0)


def test_jacfwd_through_a_matrix_equals_the_loop_with_nan_and_inf():
    # small dense seeds times a plain matrix take a shortcut (the matrix's columns); it
    # must equal the loop, where 0 * inf makes a whole row NaN, and own its memory
    p = RNG.standard_normal(4)
    for bad in (None, np.inf, np.nan):
        a = RNG.standard_normal((6, 4))
        if bad is not None:
            a[2, 1] = bad
        for mat in (a, vj.constant(a)):
            f = (lambda v: vj.sin(mat @ v)) if bad is None else (lambda v: mat @ v)
            with np.errstate(invalid="ignore"):
                J = vj.jacfwd(f)(p).numpy()
                loop = vj.jacfwd(f, parallel_iterations=1)(p).numpy()
            np.testing.assert_array_equal(J, loop)
            if bad is None:
                np.testing.assert_allclose(J, np.cos(a @ p)[:, None] * a, rtol=1e-14)
            else:
                assert not np.isfinite(J[2]).any() and np.isfinite(np.delete(J, 2, 0)).all()
    a = RNG.standard_normal((6, 4))
    J = vj.jacfwd(lambda v: a @ v)(p)
    a[:] = 0.0  # the caller's array changes: the Jacobian does not
    assert np.abs(J.numpy()).min() > 0


@pytest.mark.skipif(NO_FAST_PATHS, reason="tests a shortcut that VECJAC_NO_FAST_PATHS=1 turns off")
def test_a_finite_primal_product_spares_jacfwd_its_pass_over_a_callers_matrix(monkeypatch):
    # MatVec.note_primal: a finite A @ p of a finite p without zeros proves A finite, so
    # the columns shortcut needs no pass over A (a caller's array has no cached check);
    # a zero in p or a non-finite product leaves the check (and the loop's NaNs) as they were
    checked = []
    all_finite = structured._all_finite
    monkeypatch.setattr(structured, "_all_finite",
                        lambda v: checked.append(v.shape) or all_finite(v))
    rng = np.random.default_rng(3)  # (the module's RNG feeds the tests below)
    a = rng.standard_normal((60, 8))
    zero = rng.standard_normal(8)
    zero[5] = 0.0
    for p, bad in ((rng.standard_normal(8), None), (zero, None),
                   (rng.standard_normal(8), np.inf), (rng.standard_normal(8), np.nan)):
        m = a.copy()
        if bad is not None:
            m[3, 2] = bad
        checked.clear()
        with np.errstate(invalid="ignore"):
            J = vj.jacfwd(lambda v: vj.tanh(m @ v))(p).numpy()
            loop = vj.jacfwd(lambda v: vj.tanh(m @ v), parallel_iterations=1)(p).numpy()
        np.testing.assert_array_equal(J, loop)
        assert ((60, 8) in checked) == (bad is not None or not p.all()), (p, bad, checked)


def test_sin_and_cos_in_one_pass_give_the_jvps_of_the_two_passes():
    # above kernels.SINCOS_MIN_SIZE forward mode takes value and derivative from one
    # sincos loop when nothing else watches; under a tape (second order) it must not
    x = RNG.standard_normal(3000)
    t = RNG.standard_normal(3000)
    for fn, value, slope in ((vj.sin, np.sin, np.cos), (vj.cos, np.cos, lambda v: -np.sin(v))):
        for _ in range(5):  # past the kernel's warm-up requests
            primal = vj.constant(x)
            with ForwardAccumulator(primal, vj.constant(t)) as acc:
                y = fn(primal)
            np.testing.assert_array_max_ulp(y.numpy(), value(x), maxulp=1)
            np.testing.assert_array_max_ulp(acc.jvp(y).numpy(), slope(x) * t, maxulp=2)
        hvp = vj.hvp(lambda v: vj.reduce_sum(fn(v)), x, t)
        np.testing.assert_allclose(hvp.numpy(), -value(x) * t, rtol=1e-13)


def test_one_hot_of_the_loop_index_in_chunks_equals_the_loop():
    for chunk in (None, 3, 2):
        for on, off in ((None, None), (2.0, -1.0)):
            got = vj.vectorize.pfor(lambda i: vj.one_hot(i, 5, on_value=on, off_value=off),
                                    7, parallel_iterations=chunk).numpy()
            want = np.stack([vj.one_hot(k, 5, on_value=on, off_value=off).numpy()
                             for k in range(7)])
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(got, want)


def test_jacfwd_with_parallel_iterations_and_the_loop():
    p = RNG.standard_normal(3)
    ref = vj.jacrev(tall)(p).numpy()
    for chunk in (1, 2):
        np.testing.assert_allclose(vj.jacfwd(tall, parallel_iterations=chunk)(p).numpy(), ref,
                                   rtol=1e-14)


def test_hessian_and_hvp_against_differences_of_the_gradient():
    def f(x):
        return vj.reduce_sum(vj.sin(x) * x ** 3) + vj.reduce_sum(x[:-1] * x[1:])
    x, v = RNG.standard_normal(4), RNG.standard_normal(4)
    H = vj.hessian(f)(x).numpy()
    grad = lambda z: np.cos(z) * z ** 3 + 3 * np.sin(z) * z ** 2 + \
        np.concatenate([z[1:], [0]]) + np.concatenate([[0], z[:-1]])  # noqa: E731
    np.testing.assert_allclose(H, numerical_jacobian(grad, x), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(H, H.T, rtol=1e-12)
    np.testing.assert_allclose(vj.hvp(f, x, v).numpy(), H @ v, rtol=1e-12)


def test_hvp_vectorizes_and_nests_under_a_tape():
    # hvp is reverse over forward (a tape around an accumulator): many directions at
    # once under vectorized_map, and a tape outside differentiates it once more
    def f(x):
        return vj.reduce_sum(vj.exp(x) * x[::-1]) + vj.reduce_sum(vj.sin(x) ** 2)
    x = RNG.standard_normal(4)
    H = vj.hessian(f)(x).numpy()
    V = RNG.standard_normal((5, 4))
    HV = vj.vectorized_map(lambda v: vj.hvp(f, x, v), V).numpy()
    np.testing.assert_allclose(HV, V @ H.T, rtol=1e-12, atol=1e-12)
    v = V[0]
    xt = vj.constant(x)
    with vj.GradientTape() as tape:
        tape.watch(xt)
        quad = vj.reduce_sum(vj.hvp(f, xt, v) * v)  # v^T H(x) v
    third = tape.gradient(quad, xt).numpy()
    want = numerical_jacobian(lambda z: v @ vj.hessian(f)(z).numpy() @ v, x)
    np.testing.assert_allclose(third, np.ravel(want), rtol=1e-6, atol=1e-7)


def test_check_grads_in_forward_mode_composes_to_third_order():
    check_grads(lambda x, y: vj.linalg.det(x) * vj.tanh(y), [np.eye(2) + 0.3, np.array(0.4)],
                order=3, modes=("fwd",))


@pytest.mark.parametrize("fn, value, slope", [
    (vj.tanh, np.tanh, lambda x: 1 - np.tanh(x) ** 2),
    (vj.sigmoid, lambda x: 1 / (1 + np.exp(-x)), lambda x: np.exp(-x) / (1 + np.exp(-x)) ** 2),
    (vj.sqrt, np.sqrt, lambda x: 0.5 / np.sqrt(x)),
    (vj.sin, np.sin, np.cos)])
def test_fast_paths_give_the_tangents_of_the_rules(fn, value, slope):
    # alone (no tape, observer or other follower), ops with a derivative and matvecs with
    # one varying input skip their rule's dispatch: the tangents must be the rule's bits
    # (a recording tape outside makes every op take its rule), in the input's dtype
    a = RNG.standard_normal((4, 3))
    for dtype in (np.float32, np.float64):
        for shape in ((), (5,), (3, 4)):
            x = (np.abs(RNG.standard_normal(shape)) + 0.5).astype(dtype)
            t = RNG.standard_normal(shape).astype(dtype)
            got = []
            for taped in (False, True):
                with vj.GradientTape() if taped else contextlib.nullcontext():
                    primal = vj.constant(x)
                    with ForwardAccumulator(primal, vj.constant(t)) as acc:
                        y = fn(primal)
                    got.append(acc.jvp(y).numpy())
            assert got[0].dtype == dtype
            np.testing.assert_array_equal(got[0], got[1])
            tol = 1e-5 if dtype == np.float32 else 1e-13
            np.testing.assert_allclose(got[0], slope(x.astype(float)) * t, rtol=tol, atol=tol)
        v = (np.abs(RNG.standard_normal(3)) + 0.5).astype(dtype)
        f = vj.jacfwd(lambda v: fn(vj.constant(a.astype(dtype)) @ fn(v)))
        with vj.GradientTape():
            ruled = f(v).numpy()
        fast = f(v).numpy()
        assert fast.dtype == dtype
        np.testing.assert_array_equal(fast, ruled)
        u = a @ value(v.astype(float))
        np.testing.assert_allclose(fast, slope(u)[:, None] * a * slope(v.astype(float)),
                                   rtol=1e-5 if dtype == np.float32 else 1e-13)
