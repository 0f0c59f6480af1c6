"""vj.image (vecjac/_src/ops/nn/image.py): adjust_contrast, rgb_to_hsv / hsv_to_rgb,
adjust_hue and adjust_saturation.

adjust_contrast: TF semantics, pfor rule, and no gradient (as in the TF guide). The
colours: values against the textbook RGB <-> HSV formulas per pixel written here, with
Python's colorsys as a second reference, and against the examples of TF's documentation;
derivatives against finite differences in forward and reverse mode (away from their
branch points), pfor against the plain loop with loop-variant inputs, and bad arguments
against their errors.
"""
import colorsys
import math

import numpy as np
import pytest

import vecjac as vj
from vecjac._src.core.registry import REGISTRY
from vecjac.testing import check_grads, check_pfor

RNG = np.random.default_rng(2)


def _np_contrast(x, f):
    m = x.mean(axis=(-3, -2), keepdims=True)
    return (x - m) * f + m


def test_guide_example_has_no_gradient():
    image = vj.Variable([[[0.5, 0.0, 0.0]]])
    delta = vj.Variable(0.1)
    with vj.GradientTape() as tape:
        new_image = vj.image.adjust_contrast(image, delta)
    with pytest.raises(LookupError) as info:
        tape.gradient(new_image, [image, delta])
    assert str(info.value) == "gradient registry has no entry for: AdjustContrastv2"
    assert REGISTRY["AdjustContrastv2"].has_gradient is False


@pytest.mark.parametrize("shape", [(4, 5, 3), (2, 4, 5, 3), (2, 2, 3, 3, 1)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_forward(shape, dtype):
    x = RNG.uniform(size=shape).astype(dtype)
    y = vj.image.adjust_contrast(x, 1.7)
    assert y.shape == shape and y.dtype == dtype
    np.testing.assert_allclose(y.numpy(), _np_contrast(x.astype(np.float64), 1.7),
                               rtol=1e-5 if dtype == np.float32 else 1e-12, atol=1e-6)
    y2 = vj.image.adjust_contrast(vj.constant(x), vj.constant(0.5))  # float64 factor
    assert y2.dtype == dtype


def test_uint8_images_saturate():
    x = RNG.integers(0, 256, size=(3, 4, 2)).astype(np.uint8)
    y = vj.image.adjust_contrast(x, 3.0)
    assert y.dtype == np.uint8
    # TF: to floats in [0, 1], adjust, back by * (255 + 0.5), clip, truncate
    flt = x.astype(np.float64) / 255
    expected = np.clip(_np_contrast(flt, 3.0) * 255.5, 0, 255).astype(np.uint8)
    assert np.max(np.abs(y.numpy().astype(int) - expected.astype(int))) <= 1
    assert y.numpy().min() == 0 and y.numpy().max() == 255


def test_pfor_combinations():
    images = RNG.uniform(size=(3, 4, 5, 2))
    factors = np.array([0.5, 1.0, 2.0])
    f = vj.image.adjust_contrast
    check_pfor(lambda i: f(vj.gather(images, i), 1.5), 3)
    check_pfor(lambda i: f(images[0], vj.gather(factors, i)), 3)
    check_pfor(lambda i: f(vj.gather(images, i), vj.gather(factors, i)), 3)
    batch = RNG.uniform(size=(3, 2, 4, 5, 2))
    check_pfor(lambda i: f(vj.gather(batch, i), vj.gather(factors, i)), 3)


@pytest.mark.parametrize("call,err,match", [
    (lambda: vj.image.adjust_contrast(np.ones((4, 3)), 2.0), ValueError,
     r"adjust_contrast: images must have rank >= 3"),
    (lambda: vj.image.adjust_contrast(np.ones((2, 2, 3)), np.ones(3)), ValueError,
     "adjust_contrast: contrast_factor must be a scalar"),
    (lambda: vj.image.adjust_contrast(np.ones((2, 2, 3), complex), 2.0), TypeError,
     "adjust_contrast: images"),
    (lambda: vj.image.adjust_contrast(np.ones((2, 2, 3)), 1j), TypeError,
     "adjust_contrast: contrast_factor"),
])
def test_bad_inputs(call, err, match):
    with pytest.raises(err, match=match):
        call()


# -- references: colours ---------------------------------------------------------------------
def ref_rgb_to_hsv(x):
    """Textbook formulas, one pixel at a time: hue from the largest channel, in turns."""
    out = np.zeros(x.shape, np.float64)
    for idx in np.ndindex(*x.shape[:-1]):
        r, g, b = (float(c) for c in x[idx])
        v, lo = max(r, g, b), min(r, g, b)
        c = v - lo
        if c == 0:
            h = 0.0
        elif v == r:
            h = ((g - b) / c) % 6
        elif v == g:
            h = (b - r) / c + 2
        else:
            h = (r - g) / c + 4
        out[idx] = (h / 6, c / v if v > 0 else 0.0, v)
    return out


def ref_hsv_to_rgb(x):
    """Textbook sector formulas (i = floor(6 h), f, p, q, t), one pixel at a time."""
    out = np.zeros(x.shape, np.float64)
    for idx in np.ndindex(*x.shape[:-1]):
        h, s, v = (float(c) for c in x[idx])
        i = math.floor(h * 6) % 6
        f = h * 6 - math.floor(h * 6)
        p, q, t = v * (1 - s), v * (1 - s * f), v * (1 - s * (1 - f))
        out[idx] = [(v, t, p), (q, v, p), (p, v, t), (p, q, v), (t, p, v), (v, p, q)][i]
    return out


def colorsys_map(x, fn):
    out = np.zeros(x.shape, np.float64)
    for idx in np.ndindex(*x.shape[:-1]):
        out[idx] = fn(*(float(c) for c in x[idx]))
    return out


def ref_adjust_hue(x, delta):
    def one(r, g, b):
        h, s, v = colorsys.rgb_to_hsv(r, g, b)
        return colorsys.hsv_to_rgb((h + delta) % 1.0, s, v)
    return colorsys_map(x, one)


def ref_adjust_saturation(x, factor):
    def one(r, g, b):
        h, s, v = colorsys.rgb_to_hsv(r, g, b)
        return colorsys.hsv_to_rgb(h, min(max(s * factor, 0.0), 1.0), v)
    return colorsys_map(x, one)


def clean_pixels(n, margin=0.05):
    """Pixels in (0, 1) with distinct channels, spread >= 4 margin and hue (in turns)
    away from the sector borders (multiples of 1/6) by `margin`, saturation <= 0.8: away
    from every branch point of the colour functions (and of small hue shifts and
    saturation factors <= 1.2)."""
    out = []
    while len(out) < n:
        h = RNG.uniform(0, 1)
        if min(abs(h * 6 - round(h * 6)), 1) < 6 * margin:
            continue
        s, v = RNG.uniform(0.3, 0.8), RNG.uniform(0.4, 0.95)
        out.append(colorsys.hsv_to_rgb(h, s, v))
    return np.array(out)


# -- colours ----------------------------------------------------------------------------------
def test_rgb_to_hsv_and_back_match_textbook_formulas_and_colorsys():
    x = np.concatenate([RNG.uniform(0, 1, (40, 3)),
                        [[0, 0, 0], [1, 1, 1], [0.5, 0.5, 0.5], [1, 0, 0], [0, 1, 0], [0, 0, 1],
                         [1, 1, 0], [0, 1, 1], [1, 0, 1], [0.2, 0.1, 0.2], [0.9, 0.9, 0.1]]])
    x = x.reshape(3, 17, 3)
    hsv = vj.image.rgb_to_hsv(x).numpy()
    np.testing.assert_allclose(hsv, ref_rgb_to_hsv(x), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(hsv, colorsys_map(x, colorsys.rgb_to_hsv), rtol=1e-12,
                               atol=1e-15)
    rgb = vj.image.hsv_to_rgb(hsv).numpy()
    np.testing.assert_allclose(rgb, ref_hsv_to_rgb(hsv), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(rgb, colorsys_map(hsv, colorsys.hsv_to_rgb), rtol=1e-12,
                               atol=1e-15)
    np.testing.assert_allclose(rgb, x, rtol=1e-12, atol=1e-15)  # a round trip
    h = RNG.uniform(0, 1, (30, 3))
    np.testing.assert_allclose(vj.image.hsv_to_rgb(h).numpy(), ref_hsv_to_rgb(h), atol=1e-15)


def test_float32_stays_float32():
    x = RNG.uniform(0, 1, (2, 4, 4, 3)).astype(np.float32)
    for f, ref in [(vj.image.rgb_to_hsv, ref_rgb_to_hsv),
                   (lambda a: vj.image.adjust_hue(a, 0.3), lambda a: ref_adjust_hue(a, 0.3)),
                   (lambda a: vj.image.adjust_saturation(a, 0.6),
                    lambda a: ref_adjust_saturation(a, 0.6))]:
        y = f(x)
        assert y.dtype == np.float32
        np.testing.assert_allclose(y.numpy(), ref(x.astype(np.float64)), rtol=2e-6, atol=2e-6)
    assert vj.image.hsv_to_rgb(vj.image.rgb_to_hsv(x)).dtype == np.float32


@pytest.mark.parametrize("delta", [0.25, -0.4, 0.9, -0.95, 1.0, -1.0, 0.0])
def test_adjust_hue_matches_colorsys_and_wraps_round(delta):
    x = np.concatenate([RNG.uniform(0, 1, (30, 3)), [[1, 0, 0], [0.3, 0.3, 0.3], [0, 0, 0]]])
    x = x.reshape(3, 11, 3)
    got = vj.image.adjust_hue(x, delta).numpy()
    np.testing.assert_allclose(got, ref_adjust_hue(x, delta), rtol=1e-12, atol=1e-14)
    if abs(delta) == 1.0:  # a whole turn
        np.testing.assert_allclose(got, x, atol=1e-14)


def test_adjust_hue_of_tf_docs_examples():
    x = np.array([[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], [[7.0, 8.0, 9.0], [10.0, 11.0, 12.0]]],
                 np.float32)
    np.testing.assert_array_equal(vj.image.adjust_hue(x, 0.2).numpy(), np.array(
        [[[2.3999996, 1, 3], [5.3999996, 4, 6]], [[8.4, 7, 9], [11.4, 10, 12]]], np.float32))
    image = np.arange(1, 19, dtype=np.int32).reshape(3, 2, 3)
    got = vj.image.adjust_hue(image, 0.2)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got.numpy(), [[[2, 1, 3], [5, 4, 6]], [[8, 7, 9],
                                                [11, 10, 12]], [[14, 13, 15], [17, 16, 18]]])


def test_adjust_hue_keeps_the_colour_of_pixels_below_zero_as_tf():
    # TF's AdjustHue rotates (hue, min, max), also where max <= 0 (saturation would be 0)
    np.testing.assert_allclose(vj.image.adjust_hue(np.array([[[-1.0, -2.0, -3.0]]]), 0.5).numpy(),
                               [[[-3.0, -2.0, -1.0]]], atol=1e-15)


@pytest.mark.parametrize("factor", [0.0, 0.4, 1.0, 1.7, 3.0, -0.5])
def test_adjust_saturation_matches_colorsys_and_clips(factor):
    x = np.concatenate([RNG.uniform(0, 1, (30, 3)), [[1, 0, 0], [0.3, 0.3, 0.3], [0, 0, 0]]])
    x = x.reshape(3, 11, 3)
    got = vj.image.adjust_saturation(x, factor).numpy()
    np.testing.assert_allclose(got, ref_adjust_saturation(x, factor), rtol=1e-12, atol=1e-14)
    # the largest channel (the value) never changes; the saturation stays in [0, 1]
    np.testing.assert_allclose(got.max(-1), x.max(-1), rtol=1e-12)
    assert (got.min(-1) >= -1e-12).all()
    if factor <= 0:
        np.testing.assert_allclose(got, np.repeat(x.max(-1, keepdims=True), 3, -1), atol=1e-14)


def test_adjust_saturation_of_integer_images():
    image = np.array([[[200, 100, 50], [10, 20, 30]]], np.uint8)
    got = vj.image.adjust_saturation(image, 0.5)
    assert got.dtype == np.uint8
    ref = ref_adjust_saturation(image.astype(np.float32) / np.float32(255), 0.5)
    np.testing.assert_array_equal(got.numpy(), np.clip(ref * 255.5, 0, 255).astype(np.uint8))


def test_colour_derivatives_away_from_branch_points():
    x = clean_pixels(12).reshape(2, 2, 3, 3)
    modes = dict(order=1, modes=("fwd", "rev"))
    check_grads(vj.image.rgb_to_hsv, [x], **modes)
    check_grads(vj.image.hsv_to_rgb, [vj.image.rgb_to_hsv(x).numpy()], **modes)
    check_grads(lambda a, d: vj.image.adjust_hue(a, d), [x, np.array(0.08)], **modes)
    check_grads(lambda a, f: vj.image.adjust_saturation(a, f), [x, np.array(1.2)], **modes)
    check_grads(lambda a, f: vj.image.adjust_saturation(a, f), [x, np.array(0.5)], **modes)
    # clipped saturation: the factor no longer matters
    g = vj.grad(lambda f: vj.reduce_sum(vj.image.adjust_saturation(x, f)))(vj.constant(5.0))
    assert g.numpy() == 0.0


def test_the_hue_of_a_gray_does_not_move():
    # grays have hue 0 by convention (the hue jumps there); its derivative is 0, as in
    # TF's RGBToHSV gradient, and no 0 / 0 is formed
    gray, along = np.full((2, 3), 0.4), RNG.standard_normal((2, 3))
    hue = lambda a: vj.image.rgb_to_hsv(a)[..., 0]  # noqa: E731
    np.testing.assert_array_equal(vj.grad(lambda a: vj.reduce_sum(hue(a)))(gray).numpy(), 0)
    _, tangent = vj.jvp(hue, (gray,), (along,))
    np.testing.assert_array_equal(tangent.numpy(), 0)


def test_pfor_matches_the_loop_for_colours():
    images = RNG.uniform(0, 1, (4, 2, 3, 3))
    deltas, factors = RNG.uniform(-1, 1, 4), RNG.uniform(0, 2, 4)

    def loop_fn(i):
        im = vj.gather(images, i)
        return (vj.image.rgb_to_hsv(im), vj.image.hsv_to_rgb(im),
                vj.image.adjust_hue(im, vj.gather(deltas, i)),
                vj.image.adjust_hue(images[0], vj.gather(deltas, i)),
                vj.image.adjust_hue(im, -0.7),
                vj.image.adjust_saturation(im, vj.gather(factors, i)),
                vj.image.adjust_saturation(images[1], vj.gather(factors, i)),
                vj.image.adjust_saturation(im, 1.5))
    for got, want in zip(vj.vectorize.pfor(loop_fn, 4, fallback_to_while_loop=False),
                         vj.vectorize.for_loop(loop_fn, 4)):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-14, atol=1e-15)


def test_per_example_gradients_under_pfor():
    images = clean_pixels(8).reshape(4, 1, 2, 3)

    def loop_fn(i):
        im = vj.gather(images, i)
        with vj.GradientTape() as tape:
            tape.watch(im)
            loss = vj.reduce_sum(vj.image.adjust_hue(vj.image.adjust_saturation(im, 0.7), 0.1))
        return tape.gradient(loss, im)
    got = vj.vectorize.pfor(loop_fn, 4).numpy()
    want = vj.vectorize.for_loop(loop_fn, 4).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-12)


@pytest.mark.parametrize("fn, args, error, match", [
    ("adjust_hue", (np.zeros((1, 1, 3)), 1.5), ValueError,
     r"delta must be in the interval \[-1, 1\], got 1.5"),
    ("adjust_hue", (np.zeros((1, 1, 3)), vj.constant(-2.0)), ValueError, "delta must be in"),
    ("adjust_hue", (np.zeros((1, 1, 3)), float("nan")), ValueError, "delta must be in"),
    ("adjust_hue", (np.zeros((1, 1, 3)), np.zeros(2)), ValueError,
     r"delta must be a scalar, got shape \(2,\)"),
    ("adjust_hue", (np.zeros((1, 1, 3)), "a"), TypeError, "delta"),
    ("adjust_hue", (np.zeros((1, 1, 4)), 0.1), ValueError,
     r"image must have 3 channels \(last dimension of size 3\), got shape \(1, 1, 4\)"),
    ("adjust_hue", (np.zeros((1, 3)), 0.1), ValueError,
     r"image must have rank >= 3, got shape \(1, 3\)"),
    ("adjust_hue", (np.zeros((1, 1, 3), complex), 0.1), TypeError,
     "image must be real numeric, got dtype complex128"),
    ("adjust_saturation", (np.zeros((1, 1, 2)), 0.5), ValueError, "image must have 3 channels"),
    ("adjust_saturation", (np.zeros((1, 1, 3)), np.ones((1,))), ValueError,
     "saturation_factor must be a scalar"),
    ("adjust_saturation", (np.zeros((1, 1, 3)), 1j), TypeError,
     "saturation_factor must be a real number"),
    ("adjust_saturation", (np.zeros((1, 1, 3), bool), 0.5), TypeError,
     "image must be real numeric, got dtype bool"),
    ("rgb_to_hsv", (np.zeros((2, 3), np.uint8),), TypeError,
     "images must be floating-point, got dtype uint8"),
    ("rgb_to_hsv", (np.zeros(4),), ValueError, "images must have 3 channels"),
    ("hsv_to_rgb", (np.zeros((2, 3), np.int32),), TypeError, "images must be floating-point"),
    ("hsv_to_rgb", (3.0,), ValueError, r"images must have rank >= 1, got shape \(\)"),
])
def test_colour_bad_inputs(fn, args, error, match):
    with pytest.raises(error, match=f"{fn}: {match}"):
        getattr(vj.image, fn)(*args)


def test_delta_may_vary_over_a_loop_and_then_wraps_round():
    x = RNG.uniform(0, 1, (1, 2, 3))
    got = vj.vectorize.pfor(lambda i: vj.image.adjust_hue(x, vj.cast(i, vj.float64) * 1.5), 2)
    np.testing.assert_allclose(got.numpy()[1], ref_adjust_hue(x, 0.5), atol=1e-14)
