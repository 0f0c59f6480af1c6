"""vj.function: traces, guards, retracing, state, composition with transforms, errors.

Every expected value is the eager call of the same Python function (or a closed form):
a replay must give what eager execution gives, for every input. The per-op behaviour of
replays is covered by tests/transforms/function/test_capture.py (every registry sample).
"""
import warnings

import numpy as np
import pytest

import vecjac as vj

RNG = np.random.default_rng(3)


def assert_close(a, b, **kw):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), **kw)


# -- traces and signatures ---------------------------------------------------------------
def test_one_trace_per_signature_and_replays_follow_the_inputs():
    calls = []

    def f(x, scale):
        calls.append(1)  # a Python side effect: tracing only
        return vj.reduce_sum(vj.tanh(x) * scale)
    g = vj.function(f)
    for _ in range(3):
        x = RNG.standard_normal(4)
        assert_close(g(vj.constant(x), 2.0), np.sum(np.tanh(x)) * 2.0, rtol=1e-13)
    assert g.experimental_get_tracing_count() == 1 and len(calls) == 1
    g(vj.constant(RNG.standard_normal(4)), 3.0)   # another Python value: another trace
    g(RNG.standard_normal(5), 2.0)                # another shape (a NumPy array is a tensor)
    g(vj.constant(np.ones(4, np.float32)), 2.0)   # another dtype
    assert g.experimental_get_tracing_count() == 4 and len(calls) == 4
    g(vj.constant(RNG.standard_normal(5)), 2.0)   # shape (5,) float64 was traced
    assert g.experimental_get_tracing_count() == 4


def test_structures_kwargs_and_python_outputs():
    @vj.function
    def f(pair, d, *, shift=0.0):
        a, b = pair
        return {"sum": a + b + shift, "prod": a * d["w"], "tag": "ok", "none": None}
    for _ in range(2):
        a, b, w = RNG.standard_normal((3, 2))
        out = f((vj.constant(a), b), {"w": vj.constant(w)}, shift=1.5)
        assert_close(out["sum"], a + b + 1.5)
        assert_close(out["prod"], a * w)
        assert out["tag"] == "ok" and out["none"] is None
    assert f.experimental_get_tracing_count() == 1


def test_the_same_tensor_twice_is_two_inputs():
    f = vj.function(lambda x, y: x - 2.0 * y)
    x = vj.constant([1.0, 2.0])
    assert_close(f(x, x), [-1.0, -2.0])
    assert_close(f(x, vj.constant([0.0, 0.0])), [1.0, 2.0])


def test_returns_an_input_and_a_constant():
    c = vj.constant([5.0])
    f = vj.function(lambda x: (x, c, x * 1.0))
    x = vj.constant([1.0])
    f(x)
    out = f(vj.constant([2.0]))
    assert_close(out[0], [2.0])
    assert_close(out[1], [5.0])
    assert_close(out[2], [2.0])


def test_retracing_warning_after_five_new_signatures():
    f = vj.function(lambda x: x * 2.0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for n in range(1, 7):
            f(np.ones(n))
    assert any("triggered retracing" in str(w.message) for w in caught)
    assert f.experimental_get_tracing_count() == 6


def test_reduce_retracing_traces_a_signature_when_it_comes_again():
    f = vj.function(lambda x: x * 2.0, reduce_retracing=True)
    for n in range(1, 6):
        assert_close(f(np.ones(n)), 2.0 * np.ones(n))
    assert f.experimental_get_tracing_count() == 0
    assert_close(f(np.ones(3)), 2.0 * np.ones(3))
    assert f.experimental_get_tracing_count() == 1


# -- guards -------------------------------------------------------------------------------
def test_python_if_on_a_tensor_gives_the_eager_branch():
    @vj.function
    def f(x):
        if vj.reduce_sum(x) > 0:
            return x * 2.0
        return x * 3.0
    for x in ([1.0, 2.0], [-1.0, -2.0], [3.0, 1.0], [-5.0, 1.0]):
        assert_close(f(vj.constant(x)), np.asarray(x) * (2.0 if sum(x) > 0 else 3.0))
    assert f.experimental_get_tracing_count() == 2  # one trace per branch, then replays


def test_float_read_changing_every_call_falls_back_to_eager_with_a_warning():
    @vj.function
    def f(x, s):
        return x * float(s)  # Python number: the trace bakes it in
    x = vj.constant([1.0, 2.0])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for k in range(9):
            assert_close(f(x, vj.constant(float(k))), [k, 2.0 * k])
    assert any("float()" in str(w.message) and "eagerly" in str(w.message) for w in caught)
    assert f.experimental_get_tracing_count() == 5


def test_numpy_and_int_reads_are_guarded():
    @vj.function
    def f(x, n):
        k = int(n)
        return x[:k] * x.numpy().sum()
    x = vj.constant([1.0, 2.0, 3.0])
    for n, xs in ((2, x), (2, x), (3, x), (2, x * 2.0)):
        xv = xs.numpy()
        assert_close(f(xs, vj.constant(n)), xv[:n] * xv.sum())


def test_boolean_mask_and_where_indices_follow_the_values():
    @vj.function
    def f(x):
        return vj.boolean_mask(x, x > 0) * 2.0, vj.where(x > 1)
    for x in ([1.0, -1.0, 2.0], [-1.0, -1.0, 3.0], [1.0, 2.0, 3.0], [1.0, -1.0, 2.0]):
        x = np.asarray(x)
        masked, idx = f(vj.constant(x))
        assert_close(masked, x[x > 0] * 2.0)
        assert_close(idx, np.argwhere(x > 1))
    assert f.experimental_get_tracing_count() == 3


def test_vj_cond_and_while_loop_follow_the_values():
    @vj.function
    def f(x, n):
        y = vj.cond(vj.reduce_sum(x) > 0, lambda: x * 2.0, lambda: -x)
        _, y = vj.while_loop(lambda i, v: i < n, lambda i, v: (i + 1, v * 2.0),
                             (vj.constant(0), y))
        return y
    for x, n in (([1.0], 2), ([1.0], 3), ([-1.0], 2), ([2.0], 2)):
        expected = (np.asarray(x) * 2.0 if sum(x) > 0 else -np.asarray(x)) * 2.0 ** n
        assert_close(f(vj.constant(x), vj.constant(n)), expected)


def test_structured_seeds_with_a_non_finite_factor_replay_as_eager():
    """A Jacobian large enough for structured one-hot seeds: a factor that becomes
    non-finite must give the dense NaNs (0 * inf), as eager does."""
    n = 128

    def jac(a, x):
        with vj.GradientTape() as tape:
            tape.watch(x)
            y = a * x
        return tape.jacobian(y, x)
    f = vj.function(jac)
    a = RNG.standard_normal(n)
    x = vj.constant(RNG.standard_normal(n))
    assert_close(f(vj.constant(a), x), np.diag(a))
    a2 = a.copy()
    a2[3] = np.inf
    with np.errstate(invalid="ignore"):
        got, want = f(vj.constant(a2), x), jac(vj.constant(a2), x)
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    assert np.isnan(want.numpy()).any()


def test_batch_jacobian_interaction_probe_warns_when_examples_start_to_interact():
    def bj(x, c):
        with vj.GradientTape() as tape:
            tape.watch(x)
            y = x * x + c * vj.reduce_mean(x, axis=0)
        return tape.batch_jacobian(y, x)
    f = vj.function(bj)
    x = vj.constant(RNG.standard_normal((3, 2)))
    with warnings.catch_warnings():
        warnings.simplefilter("error", vj.InteractingExamplesWarning)
        f(x, vj.constant(0.0))
        f(x * 2.0, vj.constant(0.0))
    with pytest.warns(vj.InteractingExamplesWarning):
        got = f(x, vj.constant(1.0))
    with pytest.warns(vj.InteractingExamplesWarning):
        assert_close(got, bj(x, vj.constant(1.0)))


# -- state ------------------------------------------------------------------------------------
def test_variables_are_read_at_call_time_and_assignments_replay():
    v = vj.Variable([1.0, 2.0])
    count = vj.Variable(0.0)

    @vj.function
    def f(x):
        count.assign_add(1.0)
        return x * v
    x = vj.constant([3.0, 4.0])
    assert_close(f(x), [3.0, 8.0])
    v.assign([10.0, 20.0])
    assert_close(f(x), [30.0, 80.0])
    f(x)
    assert count.numpy() == 3.0 and f.experimental_get_tracing_count() == 1


def test_reads_before_and_after_an_assignment_inside():
    v = vj.Variable(1.0)

    @vj.function
    def f():
        before = v.read_value()
        v.assign(before * 3.0)
        return before, v.read_value()
    for k in range(3):
        b, a = f()
        assert b.numpy() == 3.0 ** k and a.numpy() == 3.0 ** (k + 1)


def test_variable_value_read_by_python_is_guarded():
    v = vj.Variable(2.0)
    f = vj.function(lambda x: x * v.numpy())
    assert_close(f(vj.constant(1.0)), 2.0)
    v.assign(5.0)
    assert_close(f(vj.constant(1.0)), 5.0)


def test_random_ops_draw_the_eager_sequence():
    def f(x):
        return x + vj.random.normal((3,)) + vj.random.uniform((3,), seed=4)
    x = vj.constant(np.zeros(3))
    vj.random.set_seed(11)
    eager = [f(x).numpy() for _ in range(3)]
    vj.random.set_seed(11)
    g = vj.function(f)
    traced = [g(x).numpy() for _ in range(3)]
    vj.random.set_seed(None)
    assert_close(traced, eager, rtol=0, atol=0)
    assert not np.allclose(traced[0], traced[1])


# -- composition --------------------------------------------------------------------------------
def _loss(x):
    return vj.reduce_sum(vj.sin(x) * x ** 2) + vj.reduce_prod(vj.tanh(x))


@pytest.mark.parametrize("transform", [
    vj.grad(_loss), vj.jacobian(lambda x: vj.sin(x) * x[::-1]), vj.hessian(_loss),
    vj.jacfwd(lambda x: vj.tanh(x) * x[0]), vj.jacrev(lambda x: vj.exp(x) * x[1]),
    lambda x: vj.jvp(lambda y: vj.sin(y) * y, (x,), (vj.ones_like(x),)),
    lambda x: vj.hvp(_loss, x, vj.constant([1.0, -1.0, 0.5])),
    lambda x: vj.value_and_grad(_loss)(x),
], ids=["grad", "jacobian", "hessian", "jacfwd", "jacrev", "jvp", "hvp", "value_and_grad"])
def test_functional_transforms_inside(transform):
    f = vj.function(transform)
    for _ in range(3):
        x = vj.constant(RNG.standard_normal(3))
        got, want = vj.nest.flatten(f(x)), vj.nest.flatten(transform(x))
        for g, w in zip(got, want):
            assert_close(g, w, rtol=1e-12, atol=1e-14)
    assert f.experimental_get_tracing_count() == 1


def test_tapes_jacobian_and_batch_jacobian_inside():
    @vj.function
    def f(w, x):
        with vj.GradientTape(persistent=True) as tape:
            tape.watch(x)
            y = vj.nn.elu(x @ w)
            loss = vj.reduce_sum(y ** 2)
        return tape.gradient(loss, w), tape.jacobian(y, w), tape.batch_jacobian(y, x)
    for _ in range(2):
        w, x = RNG.standard_normal((3, 2)), RNG.standard_normal((4, 3))
        z = x @ w
        d = np.where(z > 0, 1.0, np.exp(np.minimum(z, 0)))
        y = np.where(z > 0, z, np.expm1(np.minimum(z, 0)))
        g, j, bj = f(vj.constant(w), vj.constant(x))
        assert_close(g, x.T @ (2 * y * d), rtol=1e-12)
        assert_close(j, np.einsum("bk,bi,kj->bkij", d, x, np.eye(2)), rtol=1e-12, atol=1e-15)
        assert_close(bj, np.einsum("bk,ik->bki", d, w), rtol=1e-12)
    assert f.experimental_get_tracing_count() == 1


def test_function_of_a_hessian_in_a_newton_loop():
    hess, grad = vj.function(vj.hessian(_loss)), vj.function(vj.grad(_loss))
    x = np.array([0.3, -0.2, 0.5])
    x_eager = x.copy()
    for _ in range(4):
        x = x - np.linalg.solve(hess(x).numpy(), grad(x).numpy())
        x_eager = x_eager - np.linalg.solve(vj.hessian(_loss)(x_eager).numpy(),
                                            vj.grad(_loss)(x_eager).numpy())
    assert_close(x, x_eager, rtol=1e-12)
    assert hess.experimental_get_tracing_count() == 1


def test_newton_step_inside():
    def make():
        w = vj.Variable([3.0, -2.0, 0.5])
        return w, lambda: vj.reduce_sum((w - 1.0) ** 4 + w ** 2)
    w1, loss1 = make()
    w2, loss2 = make()
    step = vj.function(lambda: vj.newton_step(loss2, [w2], damping=1e-3).loss)
    for _ in range(4):
        eager = vj.newton_step(loss1, [w1], damping=1e-3).loss
        traced = step()
        assert_close(w2.numpy(), w1.numpy(), rtol=1e-12)
        assert_close(traced, eager, rtol=1e-12)
    assert step.experimental_get_tracing_count() == 1


def test_a_tape_outside_differentiates_through_a_function():
    f = vj.function(lambda x, y: vj.reduce_sum(vj.sin(x) * y))
    y = vj.constant([1.0, 2.0])
    for k in range(3):  # eager under the tape at first; later the plan replays recorded
        x = vj.constant([0.5 * k, 1.0])
        with vj.GradientTape() as tape:
            tape.watch(x)
            z = f(x, y) * 3.0
        assert_close(tape.gradient(z, x), 3.0 * np.cos(x.numpy()) * y.numpy())
        f(x, y)  # a call outside any transform: traces once
    assert f.experimental_get_tracing_count() == 1


def test_an_accumulator_and_functional_transforms_outside():
    f = vj.function(lambda x: vj.sin(x) * x)
    x = vj.constant([0.3, 0.7])
    f(x)
    with vj.autodiff.ForwardAccumulator(x, vj.constant([1.0, 0.0])) as acc:
        y = f(x)
    assert_close(acc.jvp(y), [np.cos(0.3) * 0.3 + np.sin(0.3), 0.0])
    assert_close(vj.grad(lambda x: vj.reduce_sum(f(x)))(x), np.cos(x.numpy()) * x.numpy()
           + np.sin(x.numpy()))
    assert_close(vj.hessian(lambda x: vj.reduce_sum(f(x)))(x),
           np.diag(2 * np.cos(x.numpy()) - x.numpy() * np.sin(x.numpy())), atol=1e-14)


def test_inside_pfor_and_nested_functions():
    inner = vj.function(lambda x: x * x)
    outer = vj.function(lambda x: inner(x) + 1.0)
    x = vj.constant([1.0, 2.0, 3.0])
    assert_close(outer(x), [2.0, 5.0, 10.0])
    assert_close(vj.vectorized_map(lambda r: inner(r) * 2.0, x), [2.0, 8.0, 18.0])
    assert_close(outer(vj.constant([2.0, 2.0, 2.0])), [5.0, 5.0, 5.0])


def test_custom_gradient_inside_with_a_tape_outside():
    @vj.custom_gradient
    def clip(y):
        return y, lambda dy: vj.clip_by_norm(dy, 0.5)
    f = vj.function(lambda x: clip(x * x))
    for k in range(2):
        x = vj.constant(2.0 + k)
        f(x)
        with vj.GradientTape() as tape:
            tape.watch(x)
            out = f(x)
        assert_close(tape.gradient(out, x), 0.5 * 2 * (2.0 + k))


def test_a_failing_replay_raises_the_eager_error():
    f = vj.function(lambda a: vj.linalg.cholesky(a))
    f(vj.constant(np.eye(2) * 2.0))
    with pytest.raises(Exception) as traced:
        f(vj.constant(-np.eye(2)))
    with pytest.raises(Exception) as eager:
        vj.linalg.cholesky(vj.constant(-np.eye(2)))
    assert type(traced.value) is type(eager.value)


# -- methods, input_signature, errors ---------------------------------------------------------------
def test_method_with_input_signature_as_in_the_guide():
    @vj.custom_gradient
    def clip_gradients(y):
        return y, lambda dy: vj.clip_by_norm(dy, 0.5)

    class MyModule(vj.Module):
        @vj.function(input_signature=[vj.TensorSpec(None)])
        def call_custom_grad(self, x):
            return clip_gradients(x)
    model = MyModule()
    x = vj.constant([-2.0, 2.0])
    assert_close(model.call_custom_grad(x), [-2.0, 2.0])
    assert_close(model.call_custom_grad([1.0, 3.0, 4.0]), [1.0, 3.0, 4.0])  # converted
    with vj.GradientTape() as tape:
        tape.watch(x)
        out = model.call_custom_grad(x)
    assert_close(tape.gradient(out, x), [0.5 / np.sqrt(2)] * 2)
    with pytest.raises(TypeError, match="input_signature"):
        model.call_custom_grad(vj.constant([1.0], vj.float32))
    with pytest.raises(TypeError, match="input_signature"):
        model.call_custom_grad(x, x)
    assert model.call_custom_grad.experimental_get_tracing_count() == 2  # (2,) and (3,)
    other = MyModule()
    other.call_custom_grad(x)  # another instance: another trace
    assert other.call_custom_grad.experimental_get_tracing_count() == 3


def test_input_signature_checks_shapes_and_converts():
    f = vj.function(lambda x, y: x * y, input_signature=[vj.TensorSpec([None, 2]),
                                                         vj.TensorSpec([], vj.float32)])
    out = f(np.ones((3, 2)), 2)
    assert out.dtype == np.float64 and out.shape == (3, 2)
    with pytest.raises(ValueError, match="input_signature.*shape"):
        f(np.ones((3, 3)), 2)
    with pytest.raises(TypeError, match="input_signature"):
        f(np.ones((3, 2)), vj.constant(2.0))
    assert f(x=np.ones((1, 2)), y=1.0).shape == (1, 2)


def test_tensor_spec():
    spec = vj.TensorSpec([None, 3], vj.float32, name="x")
    assert repr(spec) == "TensorSpec(shape=(None, 3), dtype=float32, name='x')"
    assert spec.is_compatible_with(vj.constant(np.ones((5, 3), np.float32)))
    assert not spec.is_compatible_with(vj.constant(np.ones((5, 3))))
    assert vj.TensorSpec(None) == vj.TensorSpec(None, vj.float64)
    assert vj.TensorSpec(None).is_compatible_with(np.ones((2, 2, 2)))
    with pytest.raises(TypeError, match="TensorSpec: shape"):
        vj.TensorSpec(3)
    with pytest.raises(ValueError, match="TensorSpec: each dim"):
        vj.TensorSpec([2, -1])
    with pytest.raises(TypeError, match="TensorSpec"):
        vj.TensorSpec([2], dtype="nonsense")


def test_bad_arguments_of_function():
    with pytest.raises(TypeError, match="function: f must be callable"):
        vj.function(3)
    with pytest.raises(TypeError, match="function: input_signature"):
        vj.function(lambda x: x, input_signature=vj.TensorSpec(None))
    with pytest.raises(TypeError, match="function: input_signature"):
        vj.function(lambda x: x, input_signature=[(3,)])
    with pytest.raises(TypeError, match="function: reduce_retracing"):
        vj.function(lambda x: x, reduce_retracing="yes")
    with pytest.raises(TypeError, match="function.*argument 0"):
        vj.function(lambda x: x)(np.array(["a"]))
    decorate = vj.function(input_signature=[vj.TensorSpec(None)])
    assert decorate(lambda x: x * 2.0)([1.0]).numpy().tolist() == [2.0]


def test_numbers_and_arrays_in_the_result_become_tensors_as_in_tf():
    f = vj.function(lambda x: {"y": x * 2.0, "k": 3, "a": np.arange(2.0), "none": None,
                               "tag": "ok"})
    for v in (1.0, 2.0):  # the trace, then the replay
        out = f(vj.constant(v))
        assert isinstance(out["k"], vj.Tensor) and out["k"].numpy() == 3
        np.testing.assert_array_equal(out["a"].numpy(), [0.0, 1.0])
        assert out["none"] is None and out["tag"] == "ok"
        assert float(out["y"]) == 2 * v
