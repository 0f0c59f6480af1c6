"""vj.cond, vj.while_loop and vj.switch_case (vecjac/_src/composites/control_flow.py): eager
Python semantics (only the chosen branch runs), gradients, and the pfor behaviour against
the plain loop and Python; the argument errors of switch_case."""
import numpy as np
import pytest

import vecjac as vj
from vecjac.testing import check_grads, check_pfor
from vecjac.vectorize import for_loop, pfor, vectorized_map

RNG = np.random.default_rng(7)
XS = np.array([-1.5, -0.3, 0.4, 2.0, 0.9, -2.2])


# -- cond, eager -------------------------------------------------------------------------
@pytest.mark.parametrize("pred", [True, False, np.bool_(True), vj.constant(False),
                                  vj.Variable(True, trainable=False)])
def test_cond_eager_runs_only_the_chosen_branch(pred):
    calls = []

    def branch(tag):
        def fn():
            calls.append(tag)
            return {"v": vj.constant(1.0 if tag == "t" else 2.0), "tag": tag}
        return fn
    out = vj.cond(pred, branch("t"), branch("f"))
    expected = "t" if bool(np.asarray(pred)) else "f"
    assert calls == [expected]
    assert out["tag"] == expected  # the branch's own return value, untouched
    assert float(out["v"]) == (1.0 if expected == "t" else 2.0)


@pytest.mark.parametrize("x", [np.array(0.7), np.array(-0.4), np.array([0.5, -0.2, 1.1])])
def test_cond_eager_gradients(x):
    def f(x):
        return vj.cond(vj.reduce_sum(x) > 0, lambda: vj.sin(x) * x, lambda: x * x * x)
    check_grads(f, [x], order=2)
    # closed form of the first derivative on the side taken
    t = vj.constant(x)
    with vj.GradientTape() as tape:
        tape.watch(t)
        y = f(t)
    expected = np.cos(x) * x + np.sin(x) if x.sum() > 0 else 3 * x ** 2
    np.testing.assert_allclose(tape.gradient(y, t).numpy(), expected, rtol=1e-12)


def test_cond_float32_stays_float32():
    x = vj.constant(np.array([1.0, 2.0], np.float32))
    with vj.GradientTape() as tape:
        tape.watch(x)
        y = vj.cond(True, lambda: x * 3.0, lambda: x)
    assert y.dtype == np.float32 and tape.gradient(y, x).dtype == np.float32
    out = vectorized_map(lambda v: vj.cond(v > 1.5, lambda: v * 2.0, lambda: 0.0), x)
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out.numpy(), [0.0, 4.0])


# -- cond inside pfor ----------------------------------------------------------------------
def _branchy(i):
    x = vj.gather(vj.constant(XS), i)                      # loop-variant scalar
    w = vj.constant(np.array([1.0, -2.0, 0.5]))            # loop-invariant
    return vj.cond(x > 0,
                   lambda: {"a": x * w, "b": (vj.exp(x), 1.0)},
                   lambda: {"a": w + x, "b": (x * x, vj.cos(x))})


def test_cond_loop_variant_pred_matches_loop_and_numpy():
    check_pfor(_branchy, len(XS))
    out = pfor(_branchy, len(XS))
    w = np.array([1.0, -2.0, 0.5])
    pos = XS[:, None] > 0
    np.testing.assert_allclose(out["a"].numpy(), np.where(pos, XS[:, None] * w, w + XS[:, None]))
    np.testing.assert_allclose(out["b"][0].numpy(), np.where(XS > 0, np.exp(XS), XS ** 2))
    np.testing.assert_allclose(out["b"][1].numpy(), np.where(XS > 0, 1.0, np.cos(XS)))


def test_cond_loop_invariant_pred_inside_pfor_runs_one_branch():
    calls = []

    def loop_fn(i):
        x = vj.cast(i, vj.float64)
        return vj.cond(vj.constant(1.0) > 0, lambda: calls.append("t") or x + 1,
                       lambda: calls.append("f") or x - 1)
    np.testing.assert_array_equal(pfor(loop_fn, 4).numpy(), [1.0, 2.0, 3.0, 4.0])
    assert calls == ["t"]


def test_cond_untaken_branch_nan_does_not_leak_into_values():
    x = vj.constant(np.array([-1.0, 0.0, 4.0]))
    out = vectorized_map(lambda v: vj.cond(v > 0, lambda: vj.log(v), lambda: v * 0.0), x)
    np.testing.assert_allclose(out.numpy(), [0.0, 0.0, np.log(4.0)])
    # nor into gradients: the untaken branch's zero cotangent stays zero through sqrt's
    # rule at 0 (structural zeros, tests/transforms/test_nan_free_where.py); guarding
    # the branch's input gives the same
    with vj.GradientTape(persistent=True) as tape:
        tape.watch(x)
        naive = vectorized_map(lambda v: vj.cond(v > 0, lambda: vj.sqrt(v), lambda: v), x)
        safe = vectorized_map(lambda v: vj.cond(
            v > 0, lambda: vj.sqrt(vj.where(v > 0, v, 1.0)), lambda: v), x)
    with np.errstate(invalid="ignore", divide="ignore"):  # sqrt(-1), 1 / 0 in the rules
        np.testing.assert_array_equal(tape.gradient(naive, x).numpy(), [1.0, 1.0, 0.25])
    np.testing.assert_allclose(tape.gradient(safe, x).numpy(), [1.0, 1.0, 0.25])


@pytest.mark.parametrize("x", [np.array([0.5, -1.2, 2.0, -0.3])])
def test_cond_loop_variant_gradients(x):
    def f(x):
        return vectorized_map(
            lambda v: vj.cond(v > 0, lambda: v * v * v, lambda: vj.sin(v) * 2.0), x)
    check_grads(f, [x], order=2)
    t = vj.constant(x)
    with vj.GradientTape() as tape:
        tape.watch(t)
        y = f(t)
    np.testing.assert_allclose(tape.jacobian(y, t).numpy(),
                               np.diag(np.where(x > 0, 3 * x ** 2, 2 * np.cos(x))), rtol=1e-12)


def test_cond_per_example_gradient_tape_inside_loop():
    w = vj.Variable(np.array([0.5, -1.0]))

    def per_example(x):
        with vj.GradientTape() as tape:
            h = vj.reduce_sum(w * x)
            loss = vj.cond(h > 0, lambda: h * h, lambda: -h)
        return tape.gradient(loss, w)
    xs = RNG.standard_normal((5, 2))
    grads = vectorized_map(per_example, vj.constant(xs))
    h = xs @ w.numpy()
    expected = np.where(h[:, None] > 0, 2 * h[:, None] * xs, -xs)
    np.testing.assert_allclose(grads.numpy(), expected, rtol=1e-12)


def test_bool_of_loop_variant_value_points_to_cond_and_where():
    def loop_fn(i):
        return 1.0 if i > 2 else 0.0
    with pytest.raises(TypeError, match=r"vj\.where.*vj\.cond"):
        pfor(loop_fn, 4)


@pytest.mark.parametrize("true_fn, false_fn, err, match", [
    (lambda v: (v, v), lambda v: v, ValueError, r"same structure.*output"),
    (lambda v: {"a": v}, lambda v: {"b": v}, ValueError, r"same structure.*keys"),
    (lambda v: [v, v], lambda v: [v, vj.cast(v, vj.float32)], TypeError,
     r"output\[1\].*dtype"),
    (lambda v: v * vj.ones(3), lambda v: v * vj.ones(2), ValueError, r"output.*shape"),
])
def test_cond_loop_variant_branch_mismatch_errors(true_fn, false_fn, err, match):
    x = vj.constant(XS)
    with pytest.raises(err, match=match):
        vectorized_map(lambda v: vj.cond(v > 0, lambda: true_fn(v), lambda: false_fn(v)), x)


@pytest.mark.parametrize("pred, err, match", [
    (vj.constant([True, False]), ValueError, r"cond: pred must be a scalar.*\(2,\)"),
    (vj.constant(1.0), TypeError, "cond: pred must have dtype bool"),
    ("yes", TypeError, "cond: pred must be a bool"),
])
def test_cond_bad_pred(pred, err, match):
    with pytest.raises(err, match=match):
        vj.cond(pred, lambda: 1.0, lambda: 0.0)


def test_cond_non_scalar_loop_variant_pred():
    x = vj.constant(RNG.standard_normal((3, 2)))
    with pytest.raises(ValueError, match="pred must be a scalar"):
        vectorized_map(lambda v: vj.cond(v > 0, lambda: v, lambda: -v), x)


def test_cond_branches_must_be_callable():
    with pytest.raises(TypeError, match="cond: false_fn must be callable"):
        vj.cond(True, lambda: 1.0, 0.0)


# -- while_loop, eager -----------------------------------------------------------------------
def test_while_loop_eager_structures():
    i, s = vj.while_loop(lambda i, s: i < 5, lambda i, s: (i + 1, s + vj.cast(i, vj.float64)),
                         (vj.constant(0), vj.constant(0.0)))
    assert int(i) == 5 and float(s) == 10.0
    # a single Tensor: one argument, a single Tensor back
    x = vj.while_loop(lambda x: x < 100.0, lambda x: x * 3.0, vj.constant(1.0))
    assert isinstance(x, vj.Tensor) and float(x) == 243.0
    # a one-element list: the body may return a bare value; the result is a list
    out = vj.while_loop(lambda x: x < 10, lambda x: x + 4, [vj.constant(1)])
    assert isinstance(out, list) and int(out[0]) == 13
    # dict (one argument) and nested tuples (one argument per top-level element)
    d = vj.while_loop(lambda d: d["n"] > 0, lambda d: {"n": d["n"] - 1, "p": d["p"] * 2.0},
                      {"n": vj.constant(3), "p": vj.constant(1.0)})
    assert int(d["n"]) == 0 and float(d["p"]) == 8.0
    n, (a, b) = vj.while_loop(lambda n, ab: n < 6, lambda n, ab: (n + 1, (ab[1], ab[0] + ab[1])),
                              (0, (vj.constant(0.0), vj.constant(1.0))))
    assert int(n) == 6 and float(a) == 8.0 and float(b) == 13.0  # Fibonacci


def test_while_loop_maximum_iterations_eager():
    out = vj.while_loop(lambda i: True, lambda i: i + 1, [vj.constant(0)], maximum_iterations=7)
    assert int(out[0]) == 7
    zero = vj.while_loop(lambda i: True, lambda i: i + 1, [vj.constant(0)],
                         maximum_iterations=vj.constant(0))
    assert int(zero[0]) == 0


@pytest.mark.parametrize("x", [np.array(0.3), np.array([0.2, -0.7, 1.3])])
def test_while_loop_eager_gradients(x):
    def f(x):
        # three steps of x <- sin(x) + x / 2, counted by an integer loop variable
        return vj.while_loop(lambda i, y: i < 3, lambda i, y: (i + 1, vj.sin(y) + y * 0.5),
                             (vj.constant(0), x))[1]
    check_grads(f, [x], order=2)
    y, dy = x.astype(float), np.ones_like(x, dtype=float)
    for _ in range(3):
        y, dy = np.sin(y) + y / 2, (np.cos(y) + 0.5) * dy
    t = vj.constant(x)
    with vj.GradientTape() as tape:
        tape.watch(t)
        out = f(t)
    np.testing.assert_allclose(out.numpy(), y, rtol=1e-12)
    np.testing.assert_allclose(tape.gradient(out, t).numpy(), dy, rtol=1e-12)


@pytest.mark.parametrize("cond, body, loop_vars, err, match", [
    (lambda a, b: a < 3, lambda a, b: (a + 1,), (vj.constant(0), vj.constant(1.0)),
     ValueError, r"structure of loop_vars"),
    (lambda a, b: a < 3, lambda a, b: (a + 1, vj.ones(2)), (vj.constant(0), vj.constant(1.0)),
     ValueError, r"shape of loop_vars\[1\] from \(\) to \(2,\)"),
    (lambda d: d["k"] < 3, lambda d: {"k": d["k"] + 1, "v": vj.cast(d["v"], vj.float32)},
     {"k": vj.constant(0), "v": vj.constant(1.0)}, TypeError,
     r"dtype of loop_vars\['v'\] from float64 to float32"),
    (lambda a: vj.constant([True, True]), lambda a: a, vj.constant(0.0), ValueError,
     "result of cond must be a scalar"),
    (lambda a: a, lambda a: a, vj.constant(1.0), TypeError, "result of cond must have dtype bool"),
    (lambda a: a < 1, lambda a: None, [vj.constant(0.0)], ValueError,
     r"loop_vars\[0\]: a Tensor vs None"),
    (lambda a: a < 1, lambda a: a, [], ValueError, "loop_vars must not be empty"),
    ("no", lambda a: a, [vj.constant(0.0)], TypeError, "cond must be callable"),
    (lambda a: a < 1, 3, [vj.constant(0.0)], TypeError, "body must be callable"),
])
def test_while_loop_errors(cond, body, loop_vars, err, match):
    with pytest.raises(err, match=match):
        vj.while_loop(cond, body, loop_vars)


@pytest.mark.parametrize("bad", [-1, 2.5, vj.constant([1, 2]), vj.constant(1.0)])
def test_while_loop_bad_maximum_iterations(bad):
    with pytest.raises(ValueError, match="maximum_iterations"):
        vj.while_loop(lambda i: i < 3, lambda i: i + 1, [vj.constant(0)], maximum_iterations=bad)


def test_while_loop_shape_invariants_allow_growing_outside_pfor():
    out = vj.while_loop(lambda x: x.shape[0] < 8,
                        lambda x: vj.concat([x, x], axis=0), [vj.ones(1)],
                        shape_invariants=[None])
    assert out[0].shape == (8,)


# -- while_loop inside pfor: loop-variant iteration counts -----------------------------------
def _collatz_steps(n):
    steps = 0
    while n > 1:
        n = n // 2 if n % 2 == 0 else 3 * n + 1
        steps += 1
    return steps


def _collatz(i):
    n0 = vj.gather(vj.constant(np.arange(1, 28)), i)

    def body(n, k):
        return vj.cond(n % 2 == 0, lambda: n // 2, lambda: 3 * n + 1), k + 1
    return vj.while_loop(lambda n, k: n > 1, body, (n0, vj.constant(0)))


def test_while_loop_collatz_loop_variant_counts():
    n, k = pfor(_collatz, 27)
    np.testing.assert_array_equal(k.numpy(), [_collatz_steps(m) for m in range(1, 28)])
    np.testing.assert_array_equal(n.numpy(), np.ones(27))
    check_pfor(_collatz, 27)
    # chunks stop independently and give the same counts
    chunked = pfor(_collatz, 27, parallel_iterations=5)[1]
    np.testing.assert_array_equal(chunked.numpy(), k.numpy())


A = np.array([0.25, 2.0, 9.0, 150.0, 1e4])


def _newton_sqrt(a):
    # Newton for y^2 = a from y = a + 1: the iteration count grows with a
    return vj.while_loop(lambda y, k: vj.abs(y * y - a) > 1e-13 * a,
                         lambda y, k: (0.5 * (y + a / y), k + 1), (a + 1.0, vj.constant(0)))


def test_while_loop_newton_converges_at_different_counts():
    y, k = vectorized_map(_newton_sqrt, vj.constant(A))
    np.testing.assert_allclose(y.numpy(), np.sqrt(A), rtol=1e-12)
    assert len(set(k.numpy().tolist())) > 2  # really different iteration counts
    ref_y, ref_k = for_loop(lambda i: _newton_sqrt(vj.gather(vj.constant(A), i)), len(A))
    np.testing.assert_array_equal(k.numpy(), ref_k.numpy())
    np.testing.assert_allclose(y.numpy(), ref_y.numpy(), rtol=1e-14)


def test_while_loop_newton_gradients_through_pfor():
    a = vj.constant(A)
    with vj.GradientTape() as tape:
        tape.watch(a)
        y = vectorized_map(lambda ai: _newton_sqrt(ai)[0], a)
    # the derivative of the converged iterate is the derivative of sqrt
    np.testing.assert_allclose(tape.jacobian(y, a).numpy(), np.diag(0.5 / np.sqrt(A)),
                               rtol=1e-8)

    def per_example(ai):  # a tape inside the loop: per-iteration gradients
        with vj.GradientTape() as t:
            t.watch(ai)
            yi = _newton_sqrt(ai)[0]
        return t.gradient(yi, ai)
    np.testing.assert_allclose(vectorized_map(per_example, a).numpy(), 0.5 / np.sqrt(A),
                               rtol=1e-8)


def test_while_loop_hessian_through_pfor():
    a = vj.constant(A)
    with vj.GradientTape() as outer:
        outer.watch(a)
        with vj.GradientTape() as inner:
            inner.watch(a)
            y = vectorized_map(lambda ai: _newton_sqrt(ai)[0], a)
        g = inner.gradient(y, a)
    np.testing.assert_allclose(outer.jacobian(g, a).numpy(), np.diag(-0.25 * A ** -1.5),
                               rtol=1e-7)


def test_while_loop_float32_in_pfor():
    x = vj.constant(np.array([0.5, 3.0, 7.0], np.float32))
    with vj.GradientTape() as tape:
        tape.watch(x)
        y = vectorized_map(lambda v: vj.while_loop(lambda z: z < 10.0, lambda z: z * 2.0,
                                                   [v])[0], x)
    assert y.dtype == np.float32
    np.testing.assert_array_equal(y.numpy(), [16.0, 12.0, 14.0])
    g = tape.gradient(y, x)
    assert g.dtype == np.float32
    np.testing.assert_array_equal(g.numpy(), [32.0, 4.0, 2.0])


def test_while_loop_maximum_iterations_in_pfor():
    targets = np.array([0, 2, 5, 9])

    def loop_fn(i):
        t = vj.gather(vj.constant(targets), i)
        return vj.while_loop(lambda c: c < t, lambda c: c + 1, [vj.constant(0)],
                             maximum_iterations=4)[0]
    np.testing.assert_array_equal(pfor(loop_fn, 4).numpy(), np.minimum(targets, 4))
    check_pfor(loop_fn, 4)

    def variant_max(i):  # maximum_iterations itself varies over the loop
        return vj.while_loop(lambda c: True, lambda c: c + 1, [vj.constant(0)],
                             maximum_iterations=vj.gather(vj.constant(targets), i))[0]
    np.testing.assert_array_equal(pfor(variant_max, 4).numpy(), targets)
    check_pfor(variant_max, 4)


def test_while_loop_finished_iterations_are_frozen():
    # iterations stop at different steps; the body keeps running for the others and
    # would push a finished value to inf / NaN if it were not frozen
    x = vj.constant(np.array([0.5, 3.0, 40.0]))
    out = vectorized_map(lambda v: vj.while_loop(lambda y: y < 100.0,
                                                 lambda y: y * y + 1.0, [v])[0], x)
    ref = []
    for v in x.numpy():
        while v < 100.0:
            v = v * v + 1.0
        ref.append(v)
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-14)


def test_while_loop_in_nested_pfor():
    m = np.array([[1, 3, 6], [2, 7, 4]])

    def outer(i):
        def inner(j):
            n0 = vj.gather(vj.gather(vj.constant(m), i), j)
            return vj.while_loop(lambda n, k: n > 0, lambda n, k: (n - 2, k + 1),
                                 (n0, vj.constant(0)))[1]
        return pfor(inner, 3)
    np.testing.assert_array_equal(pfor(outer, 2).numpy(), (m + 1) // 2)


def test_while_loop_loop_variant_shape_change_is_an_error():
    x = vj.constant(np.array([1.0, 5.0]))
    with pytest.raises(ValueError, match=r"shape of loop_vars\[0\]"):
        vectorized_map(lambda v: vj.while_loop(
            lambda y: y[0] < 3.0, lambda y: vj.concat([y, y], 0), [vj.reshape(v, (1,))],
            shape_invariants=[None])[0], x)


# -- switch_case, eager --------------------------------------------------------------------------
def _recording(calls, tag, value):
    def fn():
        calls.append(tag)
        return value
    return fn


@pytest.mark.parametrize("form", ["list", "pairs", "dict"])
@pytest.mark.parametrize("index, expected", [(0, "a"), (1, "b"), (2, "c"), (3, "c"),
                                             (-1, "c"), (99, "c")])
def test_switch_case_runs_only_the_selected_branch(form, index, expected):
    calls = []
    fns = [_recording(calls, t, t) for t in "abc"]
    branch_fns = {"list": fns, "pairs": [(2, fns[2]), (0, fns[0]), (1, fns[1])],
                  "dict": {1: fns[1], 2: fns[2], 0: fns[0]}}[form]
    assert vj.switch_case(vj.constant(index), branch_fns) == expected
    assert calls == [expected]   # out of range, no default: the largest key (TF)


@pytest.mark.parametrize("index, expected", [(0, 10.0), (1, 20.0), (2, -1.0), (-3, -1.0)])
def test_switch_case_default(index, expected):
    out = vj.switch_case(index, [lambda: vj.constant(10.0), lambda: vj.constant(20.0)],
                         default=lambda: vj.constant(-1.0))
    assert float(out) == expected


@pytest.mark.parametrize("index", [np.int32(1), np.array(1, np.int64), vj.constant(1, vj.int32),
                                   vj.Variable(np.array(1), trainable=False), np.uint8(1)])
def test_switch_case_index_kinds(index):
    assert vj.switch_case(index, [lambda: 0, lambda: 1]) == 1


def test_switch_case_gradients_through_the_selected_branch():
    branches = [lambda x: vj.sin(x) * x, lambda x: x * x * x, lambda x: vj.exp(-x)]
    x0 = np.array([0.3, -1.1])
    for k, closed in enumerate([np.cos(x0) * x0 + np.sin(x0), 3 * x0 ** 2, -np.exp(-x0)]):
        def f(x, k=k):
            return vj.switch_case(vj.constant(k), [lambda b=b: b(x) for b in branches])
        check_grads(f, [x0], modes=("fwd", "rev"))
        t = vj.constant(x0)
        with vj.GradientTape() as tape:
            tape.watch(t)
            y = vj.reduce_sum(f(t))
        np.testing.assert_allclose(tape.gradient(y, t).numpy(), closed, rtol=1e-12)


def test_switch_case_in_function_replays_and_retraces():
    @vj.function
    def f(k, x):
        return vj.switch_case(k, [lambda: x + 1.0, lambda: x * 10.0], default=lambda: -x)
    x = vj.constant([1.0, 2.0])
    for k, expected in [(0, [2.0, 3.0]), (1, [10.0, 20.0]), (5, [-1.0, -2.0]), (0, [2.0, 3.0]),
                        (-2, [-1.0, -2.0]), (1, [10.0, 20.0])]:
        np.testing.assert_allclose(f(vj.constant(k), x).numpy(), expected)


# -- switch_case inside pfor ------------------------------------------------------------------
KS = np.array([2, 0, 1, 5, -1, 1, 0])
XK = np.random.default_rng(11).standard_normal(len(KS))


def _switchy(i):
    k = vj.gather(vj.constant(KS), i)                               # loop-variant index
    x = vj.gather(vj.constant(XK), i)
    w = vj.constant([1.0, -2.0, 0.5])                               # loop-invariant
    return vj.switch_case(k, [lambda: {"a": x * w, "b": (vj.exp(x), 1.0)},
                              lambda: {"a": w + x, "b": (x * x, vj.cos(x))},
                              lambda: {"a": w, "b": (x, 2.0)}],
                          default=lambda: {"a": -w * x, "b": (vj.sin(x), 3.0)})


def test_switch_case_loop_variant_index_matches_loop_and_python():
    check_pfor(_switchy, len(KS), fallback_to_while_loop=False)
    out = pfor(_switchy, len(KS))
    w = np.array([1.0, -2.0, 0.5])
    for i, (k, x) in enumerate(zip(KS, XK)):
        a, b0, b1 = {0: (x * w, np.exp(x), 1.0), 1: (w + x, x * x, np.cos(x)),
                     2: (w, x, 2.0)}.get(k, (-w * x, np.sin(x), 3.0))
        np.testing.assert_allclose(out["a"].numpy()[i], a)
        np.testing.assert_allclose(out["b"][0].numpy()[i], b0)
        np.testing.assert_allclose(out["b"][1].numpy()[i], b1)


def test_switch_case_loop_variant_without_default_takes_the_last_branch():
    ks = vj.constant([0, 3, -2, 1])
    out = vectorized_map(lambda k: vj.switch_case(k, [lambda: k * 0 + 100, lambda: k * 2]),
                         ks, fallback_to_while_loop=False)
    np.testing.assert_array_equal(out.numpy(), [100, 6, -4, 2])


def test_switch_case_loop_variant_runs_every_branch_once():
    calls = []
    out = vectorized_map(lambda k: vj.switch_case(k, [_recording(calls, "a", 1.0),
                                                      _recording(calls, "b", 2.0)]),
                         vj.constant([1, 0, 1]))
    assert sorted(calls) == ["a", "b"]
    np.testing.assert_array_equal(out.numpy(), [2.0, 1.0, 2.0])


def test_switch_case_loop_variant_gradients():
    x0 = np.array([0.5, -1.2, 2.0, -0.3, 0.8])
    ks = vj.constant([0, 1, 2, 1, 0])

    def f(x):
        return vectorized_map(lambda kv: vj.switch_case(
            kv[0], [lambda: kv[1] ** 3, lambda: vj.sin(kv[1]) * 2.0, lambda: vj.exp(kv[1])]),
            (ks, x))
    check_grads(f, [x0], modes=("fwd", "rev"))
    t = vj.constant(x0)
    with vj.GradientTape() as tape:
        tape.watch(t)
        y = f(t)
    d = np.select([ks.numpy() == 0, ks.numpy() == 1], [3 * x0 ** 2, 2 * np.cos(x0)],
                  np.exp(x0))
    np.testing.assert_allclose(tape.jacobian(y, t).numpy(), np.diag(d), rtol=1e-12)


def test_switch_case_loop_invariant_index_inside_pfor_runs_one_branch():
    calls = []

    def loop_fn(i):
        x = vj.cast(i, vj.float64)
        return vj.switch_case(vj.constant(1), [lambda: calls.append("a") or x,
                                               lambda: calls.append("b") or x * 3.0])
    np.testing.assert_array_equal(pfor(loop_fn, 3).numpy(), [0.0, 3.0, 6.0])
    assert calls == ["b"]


@pytest.mark.parametrize("fns, err, match", [
    ([lambda v: (v, v), lambda v: v], ValueError,
     r"every branch must return the same structure, branch_fns\[0\] and branch_fns\[1\]"),
    ([lambda v: {"a": v}, lambda v: {"a": v}, lambda v: {"b": v}], ValueError,
     r"branch_fns\[0\] and branch_fns\[2\] differ.*keys"),
    ([lambda v: [v, v], lambda v: [v, vj.cast(v, vj.float32)]], TypeError,
     r"output\[1\] has dtype float64 in branch_fns\[0\] and float32 in branch_fns\[1\]"),
    ([lambda v: v, lambda v: v * vj.ones(3), lambda v: v * vj.ones(2)], ValueError,
     r"output has shapes .*\(3,\) in branch_fns\[1\], \(2,\) in branch_fns\[2\]"),
])
def test_switch_case_loop_variant_branch_mismatch_errors(fns, err, match):
    with pytest.raises(err, match=match):
        vectorized_map(lambda kv: vj.switch_case(kv[0], [lambda f=f: f(kv[1]) for f in fns]),
                       (vj.constant([0, 1]), vj.constant([0.5, 1.5])))


@pytest.mark.parametrize("kwargs, err, match", [
    ({"branch_fns": []}, ValueError, r"branch_fns must not be empty"),
    ({"branch_fns": lambda: 1.0}, TypeError, r"branch_fns must be a list .* got function"),
    ({"branch_fns": [lambda: 1.0, 2.0]}, TypeError,
     r"branch_fns\[1\] must be callable, got float"),
    ({"branch_fns": [(0, lambda: 1.0), 2.0]}, TypeError,
     r"branch_fns\[1\] must be a callable or an \(int, callable\) pair, got float"),
    ({"branch_fns": [(0, lambda: 1.0), (0, lambda: 2.0)]}, ValueError,
     r"branch_fns has the key 0 twice"),
    ({"branch_fns": {0: lambda: 1.0, 2: lambda: 2.0}}, ValueError,
     r"keys of branch_fns must be 0 to 1 \(contiguous\), got \[0, 2\]"),
    ({"branch_fns": {"a": lambda: 1.0}}, TypeError, r"keys of branch_fns must be ints"),
    ({"branch_fns": [(0, lambda: 1.0), (1, "f")]}, TypeError,
     r"branch_fns\[1\] must be callable, got str"),
    ({"default": 3}, TypeError, r"default must be callable or None, got int"),
    ({"branch_index": 1.0}, TypeError, r"branch_index must be an int scalar"),
    ({"branch_index": True}, TypeError, r"branch_index must be an int scalar, got True"),
    ({"branch_index": vj.constant(1.0)}, TypeError,
     r"branch_index must have an integer dtype, got float64"),
    ({"branch_index": np.array([0, 1])}, ValueError, r"branch_index must be a scalar"),
    ({"branch_index": "0"}, TypeError, r"branch_index must be an int scalar .* got str"),
])
def test_switch_case_argument_errors(kwargs, err, match):
    calls = []
    args = {"branch_index": 0, "branch_fns": [lambda: calls.append(0) or 1.0], "default": None}
    args.update(kwargs)
    with pytest.raises(err, match=match):
        vj.switch_case(**args)
    assert calls == []   # checked before any branch runs
