"""norm, clip_by_value, clip_by_norm, l2_normalize: forward against NumPy / closed forms,
gradients against finite differences (order 2), behaviour at 0, dtypes, pfor, errors."""
import itertools

import numpy as np
import pytest

import vecjac as vj
from vecjac.testing import check_grads, check_pfor

RNG = np.random.default_rng(5)


def _np_vector_norm(x, ord, axis, keepdims):
    p = 2 if ord in ("euclidean", "fro") else ord
    if axis is None:
        out = np.linalg.norm(x.reshape(-1), ord=p)
        return np.reshape(out, (1,) * x.ndim) if keepdims else out
    return np.linalg.norm(x, ord=p, axis=axis, keepdims=keepdims)


@pytest.mark.parametrize("ord", ["euclidean", "fro", 1, 2, np.inf, 3, 1.5, 0.5], ids=str)
@pytest.mark.parametrize("axis", [None, 0, -1])
@pytest.mark.parametrize("keepdims", [False, True])
def test_vector_norm(ord, axis, keepdims):
    x = RNG.standard_normal((3, 4))
    out = vj.norm(x, ord=ord, axis=axis, keepdims=keepdims)
    expected = _np_vector_norm(x, ord, axis, keepdims)
    assert out.shape == np.shape(expected)
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-13)
    if not keepdims:
        check_grads(lambda a: vj.norm(a, ord=ord, axis=axis), [x], order=2)


@pytest.mark.parametrize("ord", ["euclidean", "fro", 1, 2, np.inf], ids=str)
@pytest.mark.parametrize("axis", [(0, 1), (1, 0), (-1, -2), [1, 2]], ids=str)
@pytest.mark.parametrize("keepdims", [False, True])
def test_matrix_norm(ord, axis, keepdims):
    x = RNG.standard_normal((2, 3, 4))
    ax = tuple(axis)
    x_use = x[0] if max(ax) < 2 and min(ax) >= 0 else x
    out = vj.norm(x_use, ord=ord, axis=axis, keepdims=keepdims)
    np_ord = "fro" if ord in ("euclidean", "fro") else ord
    expected = np.linalg.norm(x_use, ord=np_ord, axis=ax, keepdims=keepdims)
    assert out.shape == expected.shape
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-13)
    check_grads(lambda a: vj.norm(a, ord=ord, axis=axis, keepdims=keepdims), [x_use], order=2)


def test_norm_float32_and_scalar_like_shapes():
    x = vj.constant(RNG.standard_normal((2, 3)).astype(np.float32))
    for ord, axis in [("euclidean", None), (1, 1), (np.inf, 0), ("fro", (0, 1)), (3, -1),
                      (2, (1, 0))]:
        with vj.GradientTape() as tape:
            tape.watch(x)
            y = vj.norm(x, ord=ord, axis=axis)
        assert y.dtype == np.float32
        assert tape.gradient(y, x).dtype == np.float32
    np.testing.assert_allclose(vj.norm([3.0, -4.0]).numpy(), 5.0)


def test_norm_gradient_at_zero_matches_tf():
    z = vj.constant(np.zeros(3))
    grads = {}
    for ord in ["euclidean", 1, np.inf]:
        with vj.GradientTape() as tape:
            tape.watch(z)
            y = vj.norm(z, ord=ord)
        with np.errstate(divide="ignore", invalid="ignore"):  # NaN expected for 2-norm
            grads[ord] = tape.gradient(y, z).numpy()
    assert np.all(np.isnan(grads["euclidean"]))  # as TF: sqrt(sum(x^2)) at 0
    np.testing.assert_array_equal(grads[1], np.zeros(3))
    np.testing.assert_array_equal(grads[np.inf], np.zeros(3))


@pytest.mark.parametrize("ord,axis", [("euclidean", None), (1, 1), ("fro", (0, 1)),
                                      (np.inf, (1, 0)), (2.5, 0), (2, (1, 0))])
def test_norm_pfor(ord, axis):
    xs = RNG.standard_normal((3, 2, 3))
    check_pfor(lambda i: vj.norm(vj.gather(xs, i), ord=ord, axis=axis), 3,
               fallback_to_while_loop=False)


@pytest.mark.parametrize("kwargs,err,match", [
    (dict(ord=0), ValueError, "ord must be a supported vector norm"),
    (dict(ord=-1, axis=0), ValueError, "ord must be a supported vector norm"),
    (dict(ord="nuc"), ValueError, "ord must be a supported vector norm"),
    (dict(ord=3, axis=(0, 1)), ValueError, "ord must be a supported matrix norm"),
    (dict(axis=(0, 0)), ValueError, "the two matrix axes must differ"),
    (dict(axis=(0, 1, 2)), ValueError, "axis must be None, an int or a pair"),
    (dict(axis=2), ValueError, "axis=2 is out of range"),
    (dict(keepdims=1), TypeError, "keepdims must be a bool"),
])
def test_norm_errors(kwargs, err, match):
    with pytest.raises(err, match=match):
        vj.norm(np.ones((2, 3)), **kwargs)


def test_norm_rejects_integers_and_scalars():
    with pytest.raises(TypeError, match="norm: tensor must be a floating-point"):
        vj.norm(np.array([1, 2]))
    with pytest.raises(ValueError, match="norm: tensor must have rank >= 1"):
        vj.norm(1.0)


# -- clip_by_value -------------------------------------------------------------------------
@pytest.mark.parametrize("lo,hi", [(-0.5, 0.5), (np.array([-1.0, 0.0, -0.2, 0.1]), 0.8),
                                   (np.full((3, 1), -0.3), np.array([0.2, 0.4, 1.0, 1.5]))])
def test_clip_by_value(lo, hi):
    x = RNG.uniform(-1.5, 1.5, (3, 4))
    out = vj.clip_by_value(x, lo, hi)
    np.testing.assert_array_equal(out.numpy(), np.clip(x, lo, hi))
    check_grads(lambda a: vj.clip_by_value(a, lo, hi), [x], order=2)
    if not np.isscalar(lo):  # tensor bounds get gradients too
        check_grads(lambda a, b, c: vj.clip_by_value(a, b, c), [x, lo, np.asarray(hi)],
                    order=2)


def test_clip_by_value_gradient_passes_inside_and_on_the_boundary():
    x = vj.constant([-2.0, -1.0, 0.0, 1.0, 2.0])
    with vj.GradientTape() as tape:
        tape.watch(x)
        y = vj.clip_by_value(x, -1.0, 1.0)
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), [0.0, 1.0, 1.0, 1.0, 0.0])
    np.testing.assert_array_equal(y.numpy(), [-1.0, -1.0, 0.0, 1.0, 1.0])


def test_clip_by_value_dtypes_and_pfor():
    x = vj.constant(np.array([0.5, 3.0], np.float32))
    with vj.GradientTape() as tape:
        tape.watch(x)
        y = vj.clip_by_value(x, 0.0, np.float64(1.0))  # non-Tensor bounds take x's dtype
    assert y.dtype == np.float32 and tape.gradient(y, x).dtype == np.float32
    assert vj.clip_by_value(np.array([1, 5]), 2, 3).dtype == np.int64
    xs, los = RNG.uniform(-2, 2, (3, 4)), RNG.uniform(-1, 0, (3, 4))
    for sx, slo in itertools.product([False, True], repeat=2):
        def loop_fn(i, sx=sx, slo=slo):
            a = vj.gather(xs, i) if sx else xs[0]
            lo = vj.gather(los, i) if slo else los[0]
            return vj.clip_by_value(a, lo, 0.5)
        check_pfor(loop_fn, 3, fallback_to_while_loop=False)


def test_clip_by_value_errors():
    with pytest.raises(ValueError, match=r"would broadcast t from \(3,\)"):
        vj.clip_by_value(np.ones(3), np.zeros((2, 3)), 1.0)
    with pytest.raises(TypeError, match="clip_value_min has dtype float64 but t has dtype "
                                        "float32"):
        vj.clip_by_value(np.ones(3, np.float32), vj.constant(0.0), 1.0)
    with pytest.raises(ValueError, match="clip_by_value: shapes are not broadcastable"):
        vj.clip_by_value(np.ones(3), np.zeros(2), 1.0)
    with pytest.raises(TypeError, match="clip_by_value: t must be a real"):
        vj.clip_by_value(np.array([True]), 0, 1)


# -- clip_by_norm ------------------------------------------------------------------------
def _np_clip_by_norm(t, c, axes):
    n = np.sqrt(np.sum(t * t, axis=axes, keepdims=True))
    return t * c / np.maximum(n, c)


@pytest.mark.parametrize("axes", [None, 0, 1, [0, 1]], ids=str)
@pytest.mark.parametrize("clip", [0.5, 100.0])
def test_clip_by_norm(axes, clip):
    t = RNG.standard_normal((3, 4))
    out = vj.clip_by_norm(t, clip, axes=axes)
    np_axes = tuple(axes) if isinstance(axes, list) else axes
    np.testing.assert_allclose(out.numpy(), _np_clip_by_norm(t, clip, np_axes), rtol=1e-13)
    if clip == 100.0:
        np.testing.assert_allclose(out.numpy(), t, rtol=1e-15)  # inside: unchanged
    check_grads(lambda a: vj.clip_by_norm(a, clip, axes=axes), [t], order=2)
    check_grads(lambda a, c: vj.clip_by_norm(a, c, axes=axes), [t, np.array(0.7)], order=2)


def test_clip_by_norm_safe_at_zero_and_float32():
    z = vj.constant(np.zeros((2, 3)))
    with vj.GradientTape() as tape:
        tape.watch(z)
        y = vj.reduce_sum(vj.clip_by_norm(z, 1.0, axes=1))
    g = tape.gradient(y, z)
    np.testing.assert_array_equal(g.numpy(), np.ones((2, 3)))
    x = vj.constant(np.ones(3, np.float32))
    with vj.GradientTape() as tape:
        tape.watch(x)
        y = vj.clip_by_norm(x, 1.0)
    assert y.dtype == np.float32 and tape.gradient(y, x).dtype == np.float32


def test_clip_by_norm_pfor_and_errors():
    ts = RNG.standard_normal((3, 2, 4))
    check_pfor(lambda i: vj.clip_by_norm(vj.gather(ts, i), 1.0, axes=1), 3,
               fallback_to_while_loop=False)
    check_pfor(lambda i: vj.clip_by_norm(ts[0], vj.cast(i, vj.float64) + 0.5), 3,
               fallback_to_while_loop=False)
    with pytest.raises(ValueError, match="clip_by_norm: clip_norm of shape"):
        vj.clip_by_norm(np.ones(3), np.ones((2, 3)))
    with pytest.raises(TypeError, match="clip_by_norm: t must be a floating"):
        vj.clip_by_norm(np.array([1, 2]), 1.0)
    with pytest.raises(ValueError, match="clip_by_norm: axes=2 is out of range"):
        vj.clip_by_norm(np.ones((2, 2)), 1.0, axes=2)


# -- l2_normalize ------------------------------------------------------------------------
@pytest.mark.parametrize("axis", [None, 0, -1, (0, 1)], ids=str)
def test_l2_normalize(axis):
    x = RNG.standard_normal((3, 4))
    out = vj.l2_normalize(x, axis=axis)
    expected = x / np.sqrt(np.sum(x * x, axis=axis, keepdims=True))
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-13)
    check_grads(lambda a: vj.l2_normalize(a, axis=axis), [x], order=2)
    xs = RNG.standard_normal((3, 3, 4))
    check_pfor(lambda i: vj.l2_normalize(vj.gather(xs, i), axis=axis), 3,
               fallback_to_while_loop=False)


def test_l2_normalize_at_zero_float32_and_errors():
    z = vj.constant(np.zeros(3, np.float32))
    with vj.GradientTape() as tape:
        tape.watch(z)
        y = vj.l2_normalize(z)
    g = tape.gradient(y, z)
    assert y.dtype == g.dtype == np.float32
    np.testing.assert_array_equal(y.numpy(), np.zeros(3))
    assert np.all(np.isfinite(g.numpy()))  # 1 / sqrt(epsilon), as TF
    with pytest.raises(ValueError, match="l2_normalize: epsilon must be a non-negative"):
        vj.l2_normalize(np.ones(2), epsilon=-1.0)
    with pytest.raises(TypeError, match="l2_normalize: x must be a floating"):
        vj.l2_normalize(np.array([1, 2]))
