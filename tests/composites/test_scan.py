"""vj.scan / vj.foldl / vj.foldr (vecjac/_src/composites/scan.py): values against NumPy and
Python loops, gradients in both modes, pfor against the plain loop, and the argument errors.
vj.switch_case is in tests/composites/test_control_flow.py."""
import collections

import numpy as np
import pytest

import vecjac as vj
from vecjac.testing import check_grads, check_pfor
from vecjac.vectorize import for_loop, pfor, vectorized_map

RNG = np.random.default_rng(11)
XS = RNG.standard_normal(6)
M = RNG.standard_normal((5, 3))


# -- scan: values --------------------------------------------------------------------------
@pytest.mark.parametrize("x", [XS, M, np.arange(1, 7)])
def test_scan_is_cumsum_and_cumprod(x):
    np.testing.assert_allclose(vj.scan(lambda a, v: a + v, x).numpy(), np.cumsum(x, axis=0))
    np.testing.assert_allclose(vj.scan(lambda a, v: a * v, x).numpy(), np.cumprod(x, axis=0))
    init = np.full(x.shape[1:], 2, x.dtype)
    np.testing.assert_allclose(vj.scan(lambda a, v: a + v, x, initializer=init).numpy(),
                               2 + np.cumsum(x, axis=0))


@pytest.mark.parametrize("x", [XS, M])
def test_scan_reverse_keeps_the_order_of_elems(x):
    # TF's order: output i belongs to slice i, accumulated from the end
    expected = np.cumsum(x[::-1], axis=0)[::-1]
    np.testing.assert_allclose(vj.scan(lambda a, v: a + v, x, reverse=True).numpy(), expected)
    np.testing.assert_allclose(
        vj.scan(lambda a, v: a + v, x, initializer=np.ones(x.shape[1:]), reverse=True).numpy(),
        expected + 1)
    # TF's documented example
    np.testing.assert_array_equal(
        vj.scan(lambda a, v: a + v, np.arange(1, 7), reverse=True).numpy(),
        [21, 20, 18, 15, 11, 6])


def test_scan_non_commutative_step_against_python_loop():
    def step(a, v):
        return 0.5 * a - v * a + v

    def loop(x, a, order):
        out = {}
        for i in order:
            a = 0.5 * a - x[i] * a + x[i]
            out[i] = a
        return np.array([out[i] for i in sorted(out)])
    np.testing.assert_allclose(vj.scan(step, XS, initializer=0.3).numpy(),
                               loop(XS, 0.3, range(6)))
    np.testing.assert_allclose(vj.scan(step, XS, initializer=0.3, reverse=True).numpy(),
                               loop(XS, 0.3, range(5, -1, -1)))
    # no initializer: the first visited slice is the first accumulator and output
    np.testing.assert_allclose(vj.scan(step, XS, reverse=True).numpy(),
                               np.append(loop(XS, XS[5], range(4, -1, -1)), XS[5]))


def test_scan_nests():
    a, b = RNG.standard_normal((4, 2)), RNG.standard_normal(4)
    # elems (t1, [t2]); accumulator a dict; fn may return a dict of another type
    out = vj.scan(lambda acc, e: collections.OrderedDict(s=acc["s"] + e[0] * e[1][0],
                                                         n=acc["n"] + 1),
                  (a, [b]), initializer={"n": 0, "s": np.zeros(2)})
    assert isinstance(out, dict) and set(out) == {"n", "s"}
    np.testing.assert_allclose(out["s"].numpy(), np.cumsum(a * b[:, None], axis=0))
    np.testing.assert_array_equal(out["n"].numpy(), [1, 2, 3, 4])
    # TF's Fibonacci example; a list initializer, tuples returned: lists and tuples alike
    fib = vj.scan(lambda acc, _: (acc[1], acc[0] + acc[1]), np.array([1, 0, 0, 0, 0, 0]),
                  [np.array(0), np.array(1)])
    assert isinstance(fib, list)
    np.testing.assert_array_equal(fib[0].numpy(), [1, 1, 2, 3, 5, 8])
    np.testing.assert_array_equal(fib[1].numpy(), [1, 2, 3, 5, 8, 13])
    # no initializer: the accumulator has elems' structure
    pair = vj.scan(lambda acc, e: (acc[0] + e[0], acc[1] * e[1]), (XS, XS + 2.0))
    np.testing.assert_allclose(pair[0].numpy(), np.cumsum(XS))
    np.testing.assert_allclose(pair[1].numpy(), np.cumprod(XS + 2.0))


def test_scan_empty_elems_needs_the_initializer():
    out = vj.scan(lambda a, v: a + v, np.zeros((0, 3)), initializer=np.ones(3))
    assert out.shape == (0, 3) and out.dtype == np.float64
    out = vj.scan(lambda a, v: a, np.zeros(0), initializer=(np.float32(1.0), np.zeros((2, 2))))
    assert out[0].shape == (0,) and out[0].dtype == np.float32 and out[1].shape == (0, 2, 2)
    with pytest.raises(ValueError, match=r"scan: elems has length 0.*initializer"):
        vj.scan(lambda a, v: a + v, np.zeros((0, 3)))


def test_scan_infer_shape():
    x = M  # (5, 3); a scalar initializer grows to (3,) at the first step
    with pytest.raises(ValueError, match=r"scan: fn changed the shape of accumulator from "
                                         r"\(\) to \(3,\).*infer_shape=False"):
        vj.scan(lambda a, v: a + v, x, initializer=0.0)
    np.testing.assert_allclose(vj.scan(lambda a, v: a + v, x, initializer=0.0,
                                       infer_shape=False).numpy(), np.cumsum(x, axis=0))
    # outputs that still differ cannot be stacked
    with pytest.raises(ValueError, match=r"scan: fn returned shapes .* accumulator"):
        vj.scan(lambda a, v: vj.concat([vj.reshape(a, [-1]), vj.reshape(v, [1])], 0), XS[:3],
                initializer=np.zeros(0), infer_shape=False)


def test_scan_float32_stays_float32():
    x = XS.astype(np.float32)
    out = vj.scan(lambda a, v: a * 0.5 + v, x)
    assert out.dtype == np.float32
    out = vj.scan(lambda a, v: a + v, x, initializer=np.float32(1.0))
    assert out.dtype == np.float32
    # a Python float initializer is float64 (vecjac's rule, as in vj.while_loop)
    with pytest.raises(TypeError, match="scan: fn changed the dtype of accumulator from "
                                        "float64 to float32"):
        vj.scan(lambda a, v: vj.cast(a, vj.float32) + v, x, initializer=1.0)


# -- scan: derivatives -------------------------------------------------------------------------
def _recurrence(x, w):
    return vj.scan(lambda a, v: vj.tanh(a * w + v), x, initializer=vj.zeros([3]))


def test_scan_gradients_both_modes():
    check_grads(lambda x: vj.scan(lambda a, v: a * vj.sin(v) + v * v, x), [XS],
                modes=("fwd", "rev"))
    check_grads(_recurrence, [M, RNG.standard_normal(3)], modes=("fwd", "rev"))
    check_grads(lambda x: vj.scan(lambda a, v: a * v - v, x, initializer=0.5, reverse=True),
                [XS], modes=("fwd", "rev"))


def test_scan_jacobian_closed_form():
    # d cumsum / dx: ones on and below the diagonal; reversed: on and above
    x = vj.constant(XS)
    with vj.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = vj.scan(lambda a, v: a + v, x)
        yr = vj.scan(lambda a, v: a + v, x, reverse=True)
        p = vj.scan(lambda a, v: a * v, x)
    np.testing.assert_allclose(tape.jacobian(y, x).numpy(), np.tril(np.ones((6, 6))))
    np.testing.assert_allclose(tape.jacobian(yr, x).numpy(), np.triu(np.ones((6, 6))))
    # d prod(x[:i+1]) / dx_j = prod(x[:i+1]) / x_j for j <= i
    expected = np.tril(np.cumprod(XS)[:, None] / XS[None, :])
    np.testing.assert_allclose(tape.jacobian(p, x).numpy(), expected, rtol=1e-10)
    with vj.autodiff.ForwardAccumulator(x, vj.constant(np.ones(6))) as acc:
        z = vj.scan(lambda a, v: a + v, x)
    np.testing.assert_allclose(acc.jvp(z).numpy(), np.arange(1.0, 7.0))


def test_scan_back_prop_false_stops_gradients():
    x = vj.constant(XS)
    with vj.GradientTape() as tape:
        tape.watch(x)
        y = vj.scan(lambda a, v: a + v, x, back_prop=False)
        z = vj.reduce_sum(y) + vj.reduce_sum(x)
    np.testing.assert_allclose(tape.gradient(z, x).numpy(), np.ones(6))
    np.testing.assert_allclose(y.numpy(), np.cumsum(XS))
    with vj.autodiff.ForwardAccumulator(x, vj.constant(np.ones(6))) as acc:
        y = vj.scan(lambda a, v: a + v, x, back_prop=False)
    assert acc.jvp(y) is None


# -- scan: pfor ---------------------------------------------------------------------------------
def test_scan_inside_pfor_matches_loop_and_numpy():
    rows, w = vj.constant(RNG.standard_normal((4, 5))), vj.constant(RNG.standard_normal(4))

    def loop_fn(i):
        x, wi = vj.gather(rows, i), vj.gather(w, i)       # loop-variant elems and factor
        return (vj.scan(lambda a, v: a * wi + v, x),        # variant elems, no initializer
                vj.scan(lambda a, v: a + v * wi, vj.constant(XS), initializer=wi),  # variant init
                vj.scan(lambda a, v: a * v, vj.constant(XS), reverse=True),         # invariant
                vj.foldl(lambda a, v: a * wi + v, x), vj.foldr(lambda a, v: a * wi + v, x))
    check_pfor(loop_fn, 4)
    out = pfor(loop_fn, 4)
    r, wv = rows.numpy(), w.numpy()
    for i in range(4):
        a, expected = r[i, 0], [r[i, 0]]
        for v in r[i, 1:]:
            a = a * wv[i] + v
            expected.append(a)
        np.testing.assert_allclose(out[0].numpy()[i], expected)
        np.testing.assert_allclose(out[1].numpy()[i], wv[i] + np.cumsum(XS * wv[i]))
        np.testing.assert_allclose(out[2].numpy()[i], np.cumprod(XS[::-1])[::-1])
        np.testing.assert_allclose(out[3].numpy()[i], expected[-1])
        a = r[i, -1]
        for v in r[i, -2::-1]:
            a = a * wv[i] + v
        np.testing.assert_allclose(out[4].numpy()[i], a)


def test_scan_vectorized_per_example_gradients():
    xs = RNG.standard_normal((3, 4))
    w = vj.Variable(np.array(0.7))

    def per_example(x):
        with vj.GradientTape() as tape:
            loss = vj.reduce_sum(vj.scan(lambda a, v: a * w + v, x))
        return tape.gradient(loss, w)
    grads = vectorized_map(per_example, vj.constant(xs))
    # Python loop with the derivative carried along: a_i = a_{i-1} w + x_i
    expected = []
    for x in xs:
        a, da, total = x[0], 0.0, 0.0
        for v in x[1:]:
            a, da = a * 0.7 + v, da * 0.7 + a
            total += da
        expected.append(total)
    np.testing.assert_allclose(grads.numpy(), expected, rtol=1e-12)
    looped = for_loop(lambda i: per_example(vj.gather(vj.constant(xs), i)), 3)
    np.testing.assert_allclose(grads.numpy(), looped.numpy(), rtol=1e-12)


# -- foldl / foldr -------------------------------------------------------------------------------
def test_folds_values():
    np.testing.assert_allclose(vj.foldl(lambda a, v: a + v, M).numpy(), M.sum(0))
    np.testing.assert_allclose(vj.foldr(lambda a, v: a + v, M).numpy(), M.sum(0))
    digits = np.array([1, 2, 3, 4])
    assert int(vj.foldl(lambda a, v: a * 10 + v, digits)) == 1234
    assert int(vj.foldr(lambda a, v: a * 10 + v, digits)) == 4321   # starts from the last
    assert int(vj.foldl(lambda a, v: a * 10 + v, digits, initializer=np.int64(9))) == 91234
    assert int(vj.foldr(lambda a, v: a * 10 + v, digits, initializer=np.int64(9))) == 94321
    # nests, and a namedtuple accumulator kept as such
    Acc = collections.namedtuple("Acc", "total count")
    out = vj.foldl(lambda acc, e: Acc(acc.total + e[0] * e[1], acc.count + 1), (XS, XS),
                   initializer=Acc(0.0, 0))
    assert isinstance(out, Acc) and int(out.count) == 6
    np.testing.assert_allclose(out.total.numpy(), np.sum(XS * XS))
    # empty elems: the initializer itself
    empty = vj.foldr(lambda a, v: a + v, np.zeros((0, 2)), initializer=np.array([1.0, 2.0]))
    np.testing.assert_array_equal(empty.numpy(), [1.0, 2.0])
    with pytest.raises(ValueError, match=r"foldl: elems has length 0.*initializer"):
        vj.foldl(lambda a, v: a + v, np.zeros(0))


def test_folds_gradients():
    def f(x, w):
        return (vj.foldl(lambda a, v: vj.sin(a) * w + v, x),
                vj.foldr(lambda a, v: a * v + w, x, initializer=vj.ones([3])))
    check_grads(f, [M, RNG.standard_normal(3)], modes=("fwd", "rev"))
    # closed form: foldl with a * v is the product
    x = vj.constant(XS)
    with vj.GradientTape() as tape:
        tape.watch(x)
        p = vj.foldl(lambda a, v: a * v, x, back_prop=True)
    np.testing.assert_allclose(tape.gradient(p, x).numpy(), np.prod(XS) / XS, rtol=1e-10)


def test_fold_shape_and_dtype_are_kept():
    with pytest.raises(ValueError, match=r"foldl: fn changed the shape of accumulator from "
                                         r"\(\) to \(3,\)"):
        vj.foldl(lambda a, v: a + v, M, initializer=0.0)
    with pytest.raises(TypeError, match=r"foldr: fn changed the dtype"):
        vj.foldr(lambda a, v: a + v * 0.5, np.arange(3), initializer=0)


# -- argument errors -------------------------------------------------------------------------
@pytest.mark.parametrize("fn_name", ["scan", "foldl", "foldr"])
@pytest.mark.parametrize("kwargs, err, match", [
    ({"fn": 3, "elems": XS}, TypeError, r"fn must be callable, got int"),
    ({"fn": lambda a, v: a, "elems": (XS, XS[:4])}, ValueError,
     r"same length along axis 0, elems\[0\] has 6 and elems\[1\] has 4"),
    ({"fn": lambda a, v: a, "elems": 2.0}, ValueError, r"elems must have rank >= 1"),
    ({"fn": lambda a, v: a, "elems": [1.0, 2.0]}, ValueError, r"elems\[0\] must have rank >= 1"),
    ({"fn": lambda a, v: a, "elems": None}, ValueError, r"elems must be a Tensor or a nest"),
    ({"fn": lambda a, v: a, "elems": []}, ValueError, r"elems must be a Tensor or a nest"),
    ({"fn": lambda a, v: a, "elems": (XS, None)}, ValueError, r"elems\[1\] is None"),
    ({"fn": lambda a, v: a, "elems": "abc"}, TypeError, r"elems must be a Tensor"),
    ({"fn": lambda a, v: a, "elems": XS, "initializer": [1.0, None]}, ValueError,
     r"initializer\[1\] is None"),
    ({"fn": lambda a, v: a, "elems": XS, "initializer": {}}, ValueError,
     r"initializer must be a Tensor or a nest"),
    ({"fn": lambda a, v: a, "elems": XS, "parallel_iterations": 0}, ValueError,
     r"parallel_iterations must be a positive integer, got 0"),
    ({"fn": lambda a, v: a, "elems": XS, "back_prop": "no"}, TypeError,
     r"back_prop must be a bool"),
    ({"fn": lambda a, v: (a, a), "elems": XS}, ValueError,
     r"fn must return the structure of elems \(the accumulator\), they differ at output"),
    ({"fn": lambda a, v: [a], "elems": XS, "initializer": (0.0, 1.0)}, ValueError,
     r"fn must return the structure of initializer.*a list of 1"),
    ({"fn": lambda a, v: "x", "elems": XS}, TypeError,
     r"fn's accumulator must be a Tensor or convertible"),
    ({"fn": lambda a, v: a > 0, "elems": XS}, TypeError,
     r"fn changed the dtype of accumulator from float64 to bool"),
])
def test_scan_and_fold_argument_errors(fn_name, kwargs, err, match):
    fn = getattr(vj, fn_name)
    x = vj.constant([1.0, 2.0])
    with vj.GradientTape() as tape:
        tape.watch(x)
        with pytest.raises(err, match=match) as info:
            fn(**kwargs)
        assert not tape._entries  # nothing recorded: checked before any op runs
    assert str(info.value).startswith(f"{fn_name}: ")


def test_scan_only_flags_are_checked():
    with pytest.raises(TypeError, match=r"scan: infer_shape must be a bool"):
        vj.scan(lambda a, v: a, XS, infer_shape=None)
    with pytest.raises(TypeError, match=r"scan: reverse must be a bool"):
        vj.scan(lambda a, v: a, XS, reverse="yes")


def test_scan_validates_before_any_op():
    x, y = vj.constant(XS), vj.constant(XS[:3])
    calls = []
    with vj.GradientTape() as tape:
        tape.watch([x, y])
        with pytest.raises(ValueError, match="same length"):
            vj.scan(lambda a, v: calls.append(1) or a, (x, y))
        assert not tape._entries
    assert calls == []

