"""vj.image.adjust_contrast: TF semantics, pfor rule, and no gradient (as in the TF guide)."""
import numpy as np
import pytest

import vecjac as vj
from vecjac._src.core.registry import REGISTRY
from vecjac.testing import check_pfor

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
    from vecjac._src.core.registry import REGISTRY
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
