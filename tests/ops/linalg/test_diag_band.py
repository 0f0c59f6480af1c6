"""vj.linalg.diag / diag_part with TF's k, num_rows, num_cols, padding_value and align
(matrix_diag_v3 / matrix_diag_part_v3), and vj.image.rgb_to_hsv / hsv_to_rgb /
adjust_hue / adjust_saturation.

Values are checked against references written here with explicit loops: for the
diagonals, entry by entry from TF's documented definition (diag: output[..., m, n] is
diagonal[..., k1 - d, index_in_diag] on the band, d = n - m, else padding_value); for the
colours, the textbook RGB <-> HSV formulas per pixel, with Python's colorsys as a second
reference; and against the examples of TF's documentation. Derivatives against finite
differences in forward and reverse mode (colours away from their branch points), pfor
against the plain loop with loop-variant inputs, and bad arguments against their errors.
"""
import colorsys
import math

import numpy as np
import pytest

import vecjac as vj
import vecjac._src.ops.linalg.diag_band
import vecjac._src.ops.nn.image
import vecjac._src.ops.linalg.matrix
from vecjac.testing import check_grads

RNG = np.random.default_rng(5)
ALIGNS = ["RIGHT_LEFT", "LEFT_RIGHT", "LEFT_LEFT", "RIGHT_RIGHT"]


# -- references: diagonals -------------------------------------------------------------------
def _diag_len(d, rows, cols):
    return min(cols - max(d, 0), rows + min(d, 0))


def _offset(d, max_len, rows, cols, align):
    """How far diagonal d is pushed right in its row of the band (TF's align)."""
    right = ((d >= 0 and align in ("RIGHT_LEFT", "RIGHT_RIGHT")) or
             (d <= 0 and align in ("LEFT_RIGHT", "RIGHT_RIGHT")))
    return max_len - _diag_len(d, rows, cols) if right else 0


def ref_diag(diagonal, k, rows, cols, padding=0, align="RIGHT_LEFT"):
    """TF's definition, entry by entry; rows, cols as the caller expects them."""
    k0, k1 = (k, k) if np.ndim(k) == 0 else k
    band = diagonal[..., None, :] if k0 == k1 else diagonal
    max_len = band.shape[-1]
    out = np.full(band.shape[:-2] + (rows, cols), padding, diagonal.dtype)
    for m in range(rows):
        for n in range(cols):
            d = n - m
            if k0 <= d <= k1:
                j = min(m, n) + _offset(d, max_len, rows, cols, align)
                out[..., m, n] = band[..., k1 - d, j]
    return out


def ref_diag_part(x, k, padding=0, align="RIGHT_LEFT"):
    k0, k1 = (k, k) if np.ndim(k) == 0 else k
    rows, cols = x.shape[-2:]
    max_len = max(_diag_len(d, rows, cols) for d in range(k0, k1 + 1))
    out = np.full(x.shape[:-2] + (k1 - k0 + 1, max_len), padding, x.dtype)
    for d in range(k0, k1 + 1):
        shift = _offset(d, max_len, rows, cols, align)
        for j in range(max_len):
            i = j - shift  # position along the diagonal, from its top-left end
            if 0 <= i < _diag_len(d, rows, cols):
                m, n = (i, i + d) if d >= 0 else (i - d, i)
                out[..., k1 - d, j] = x[..., m, n]
    return out[..., 0, :] if k0 == k1 else out


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


# == diag ===================================================================================
DIAGONALS = np.array([[[8, 9, 0], [1, 2, 3], [0, 4, 5]], [[2, 3, 0], [6, 7, 9], [0, 9, 1]]])
MATRICES = np.array([[[1, 2, 3, 4], [5, 6, 7, 8], [9, 8, 7, 6]],
                     [[5, 4, 3, 2], [1, 2, 3, 4], [5, 6, 7, 8]]])


def test_diag_of_tf_docs_examples():
    diag = vj.linalg.diag
    np.testing.assert_array_equal(diag(np.array([[1, 2, 3, 4], [5, 6, 7, 8]])).numpy(),
                                  [np.diag([1, 2, 3, 4]), np.diag([5, 6, 7, 8])])
    np.testing.assert_array_equal(diag(np.array([[1, 2, 3], [4, 5, 6]]), k=1).numpy(),
                                  [np.diag([1, 2, 3], 1), np.diag([4, 5, 6], 1)])
    tridiagonal = [[[1, 8, 0], [4, 2, 9], [0, 5, 3]], [[6, 2, 0], [9, 7, 3], [0, 1, 9]]]
    right_left = np.array([[[0, 8, 9], [1, 2, 3], [4, 5, 0]], [[0, 2, 3], [6, 7, 9], [9, 1, 0]]])
    np.testing.assert_array_equal(diag(right_left, k=(-1, 1)).numpy(), tridiagonal)
    np.testing.assert_array_equal(diag(right_left, k=(-1, 1), align="RIGHT_LEFT").numpy(),
                                  tridiagonal)
    np.testing.assert_array_equal(diag(DIAGONALS, k=(-1, 1), align="LEFT_RIGHT").numpy(),
                                  tridiagonal)
    np.testing.assert_array_equal(diag(np.array([1, 2]), k=-1, num_rows=3, num_cols=4).numpy(),
                                  [[0, 0, 0, 0], [1, 0, 0, 0], [0, 2, 0, 0]])
    np.testing.assert_array_equal(
        diag(np.array([1, 2]), k=-1, num_rows=3, padding_value=9).numpy(),
        [[9, 9], [1, 9], [9, 2]])


def test_diag_part_of_tf_docs_examples():
    part = vj.linalg.diag_part
    np.testing.assert_array_equal(part(MATRICES).numpy(), [[1, 6, 7], [5, 2, 7]])
    np.testing.assert_array_equal(part(MATRICES, k=1).numpy(), [[2, 7, 6], [4, 3, 8]])
    np.testing.assert_array_equal(part(MATRICES, k=(-1, 2)).numpy(),
                                  [[[0, 3, 8], [2, 7, 6], [1, 6, 7], [5, 8, 0]],
                                   [[0, 3, 4], [4, 3, 8], [5, 2, 7], [1, 6, 0]]])
    np.testing.assert_array_equal(part(MATRICES, k=(-1, 2), align="LEFT_RIGHT").numpy(),
                                  [[[3, 8, 0], [2, 7, 6], [1, 6, 7], [0, 5, 8]],
                                   [[3, 4, 0], [4, 3, 8], [5, 2, 7], [0, 1, 6]]])
    np.testing.assert_array_equal(part(MATRICES, k=(-2, -1)).numpy(),
                                  [[[5, 8], [9, 0]], [[1, 6], [5, 0]]])
    np.testing.assert_array_equal(part(MATRICES, k=(1, 3), padding_value=9).numpy(),
                                  [[[9, 9, 4], [9, 3, 8], [2, 7, 6]],
                                   [[9, 9, 2], [9, 3, 4], [4, 3, 8]]])


# (diagonal shape, k, num_rows, num_cols, the output's matrix shape as TF infers it)
DIAG_CASES = [
    ((4,), 0, -1, -1, (4, 4)), ((2, 3), 2, -1, -1, (5, 5)), ((3,), -2, -1, -1, (5, 5)),
    ((2, 3), 0, 3, 5, (3, 5)), ((3,), 1, 3, -1, (3, 4)), ((3,), 1, -1, 6, (3, 6)),
    ((2, 3, 4), (-1, 1), -1, -1, (4, 4)), ((2, 2, 3), (0, 1), -1, -1, (3, 3)),
    ((4, 3), (-2, 1), -1, -1, (3, 3)), ((3, 3), (-1, 1), 3, 5, (3, 5)),
    ((2, 3), (1, 2), -1, -1, (4, 4)), ((2, 3), (1, 2), 3, 5, (3, 5)),
    ((2, 2), (-2, -1), -1, -1, (3, 3)), ((2, 2), (-2, -1), -1, 4, (3, 4)),
    ((2, 3), (-1, 0), 4, -1, (4, 3)),
]


@pytest.mark.parametrize("align", ALIGNS)
@pytest.mark.parametrize("shape, k, num_rows, num_cols, matrix", DIAG_CASES, ids=str)
def test_diag_matches_loops(shape, k, num_rows, num_cols, matrix, align):
    v = RNG.standard_normal(shape)
    got = vj.linalg.diag(v, k=k, num_rows=num_rows, num_cols=num_cols, padding_value=-2.5,
                         align=align).numpy()
    np.testing.assert_array_equal(got, ref_diag(v, k, *matrix, padding=-2.5, align=align))
    # and diag_part with the same k and align takes the diagonals back out
    back = vj.linalg.diag_part(got, k=k, padding_value=-2.5, align=align).numpy()
    np.testing.assert_array_equal(back, ref_diag_part(got, k, -2.5, align))
    if matrix[0] == matrix[1]:  # every diagonal fits: the padding came from the layout
        np.testing.assert_array_equal(np.where(back == -2.5, v, back), v)


@pytest.mark.parametrize("align", ALIGNS)
@pytest.mark.parametrize("shape, k", [((3, 4), (-1, 2)), ((2, 4, 3), (-2, 1)), ((4, 4), 1),
                                      ((3, 5), -2), ((5, 3), (1, 2)), ((4, 3), (-3, -1)),
                                      ((2, 3, 3), (0, 0)), ((1, 6), (0, 5)), ((6, 1), (-5, 0))],
                         ids=str)
def test_diag_part_matches_loops(shape, k, align):
    x = RNG.standard_normal(shape)
    got = vj.linalg.diag_part(x, k=k, padding_value=7.0, align=align).numpy()
    np.testing.assert_array_equal(got, ref_diag_part(x, k, 7.0, align))


def test_float32_and_integers_keep_their_dtype_and_zero_padding_is_the_default():
    v = RNG.standard_normal((2, 3)).astype(np.float32)
    y = vj.linalg.diag(v, k=(0, 1), num_cols=4)
    assert y.dtype == np.float32
    np.testing.assert_array_equal(y.numpy(), ref_diag(v, (0, 1), 3, 4))
    p = vj.linalg.diag_part(y, k=(0, 1), padding_value=vj.constant(np.float32(5)))
    assert p.dtype == np.float32
    np.testing.assert_array_equal(p.numpy(), ref_diag_part(y.numpy(), (0, 1), 5))
    i = vj.linalg.diag(np.arange(3, dtype=np.int32), k=-1, padding_value=4)
    assert i.dtype == np.int32
    np.testing.assert_array_equal(i.numpy(), ref_diag(np.arange(3), -1, 4, 4, 4))
    # k, num_rows, num_cols as tensors or NumPy ints, as TF takes them
    t = vj.linalg.diag(v, k=vj.constant([0, 1]), num_rows=np.int64(3), num_cols=vj.constant(4))
    np.testing.assert_array_equal(t.numpy(), ref_diag(v, (0, 1), 3, 4))
    # the fast paths: the main diagonal, empty diagonals
    assert vj.linalg.diag(np.zeros((2, 0))).shape == (2, 0, 0)
    assert vj.linalg.diag_part(np.zeros((2, 0, 3))).shape == (2, 0)
    assert vj.linalg.diag(np.zeros(0), num_rows=2, padding_value=3.0).shape == (2, 0)


def test_an_inf_off_the_band_does_not_leak():
    x = np.array([[1.0, np.inf, 2.0], [3.0, 4.0, -np.inf]])
    y, pull = vj.vjp(lambda a: vj.linalg.diag_part(a, k=(-1, 0)), x)
    np.testing.assert_array_equal(y.numpy(), [[1.0, 4.0], [3.0, 0.0]])
    (g,) = pull(vj.ones_like(y))
    np.testing.assert_array_equal(g.numpy(), [[1.0, 0.0, 0.0], [1.0, 1.0, 0.0]])


@pytest.mark.parametrize("align", ["RIGHT_LEFT", "LEFT_RIGHT"])
def test_diag_derivatives(align):
    check_grads(lambda v: vj.linalg.diag(v, k=(-1, 1), num_cols=5, align=align, padding_value=1.5),
                [RNG.standard_normal((2, 3, 3))], order=1, modes=("fwd", "rev"))
    check_grads(lambda v: vj.linalg.diag(v, k=2), [RNG.standard_normal((2, 3))], order=1,
                modes=("fwd", "rev"))
    check_grads(lambda x: vj.linalg.diag_part(x, k=(-2, 1), align=align, padding_value=3.0),
                [RNG.standard_normal((2, 4, 3))], order=1, modes=("fwd", "rev"))
    check_grads(lambda x: vj.linalg.diag_part(x, k=-1), [RNG.standard_normal((3, 4))],
                order=1, modes=("fwd", "rev"))


def test_padding_value_is_not_differentiated_as_in_tf():
    pad = vj.Variable(2.0)
    with vj.GradientTape(persistent=True) as tape:
        y = vj.linalg.diag(vj.constant([1.0, 2.0]), k=1, padding_value=pad)
        z = vj.linalg.diag_part(vj.ones((3, 3)), k=(1, 2), padding_value=pad)
    np.testing.assert_array_equal(y.numpy(), [[2, 1, 2], [2, 2, 2], [2, 2, 2]])
    assert tape.gradient(y, pad) is None and tape.gradient(z, pad) is None


def test_pfor_matches_the_loop():
    v, x = RNG.standard_normal((4, 2, 3)), RNG.standard_normal((4, 3, 5))
    pads = RNG.standard_normal(4)

    def loop_fn(i):
        vi, xi, pi = vj.gather(v, i), vj.gather(x, i), vj.gather(pads, i)
        return (vj.linalg.diag(vi, k=(0, 1), num_rows=3, padding_value=pi, align="LEFT_LEFT"),
                vj.linalg.diag(v[0], k=(-1, 0), padding_value=pi),
                vj.linalg.diag(vi[0], k=-2),
                vj.linalg.diag_part(xi, k=(-1, 3), padding_value=pi, align="RIGHT_RIGHT"),
                vj.linalg.diag_part(x[0], k=(1, 2), padding_value=pi),
                vj.linalg.diag_part(xi, k=2))
    for got, want in zip(vj.vectorize.pfor(loop_fn, 4, fallback_to_while_loop=False),
                         vj.vectorize.for_loop(loop_fn, 4)):
        np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_jacobians_of_diag():
    v = RNG.standard_normal((2, 3))
    jac = vj.jacobian(lambda a: vj.linalg.diag(a, k=(-1, 0), align="LEFT_RIGHT"), mode="rev")(v)
    jac_fwd = vj.jacobian(lambda a: vj.linalg.diag(a, k=(-1, 0), align="LEFT_RIGHT"),
                          mode="fwd")(v)
    expected = np.zeros((3, 3, 2, 3))
    for m in range(3):
        for n in range(3):
            d = n - m
            if -1 <= d <= 0:
                expected[m, n, -d, min(m, n) + _offset(d, 3, 3, 3, "LEFT_RIGHT")] = 1.0
    np.testing.assert_array_equal(np.asarray(jac), expected)
    np.testing.assert_array_equal(np.asarray(jac_fwd), expected)


@pytest.mark.parametrize("kwargs, match", [
    (dict(k=(1, 0)), r"k = \(1, 0\) must have k\[0\] <= k\[1\]"),
    (dict(k=1.5), "k must be an int"),
    (dict(k=(0, 1, 2)), "k must be an int or a pair"),
    (dict(align="RIGHT"), "align must be one of RIGHT_LEFT, LEFT_RIGHT, LEFT_LEFT, RIGHT_RIGHT"),
    (dict(align=None), "align must be one of"),
    (dict(num_rows=2), r"num_rows must be >= 3 for diagonals of length 3 and k = \(0, 0\), "
                       "got 2"),
    (dict(k=-1, num_cols=2), r"num_cols must be >= 3 .* got 2"),
    (dict(num_rows=4, num_cols=5), r"num_rows = 4 or num_cols = 5 must be the smallest .*"
                                   r"\(3 rows, 3 columns\)"),
    (dict(num_rows=-3), r"num_rows must be -1 \(inferred\) or >= 0, got -3"),
    (dict(num_cols=2.0), r"num_cols must be an int \(-1: inferred\)"),
    (dict(k=(-1, 1)), r"diagonal must have shape \(\.\.\., 3, L\) for k = \(-1, 1\)"),
    (dict(diagonal=np.zeros((5, 2)), k=(-3, 1)), r"k = \(-3, 1\) must lie in \(-2, 2\)"),
    (dict(padding_value=np.zeros(2)), r"padding_value must be a scalar, got shape \(2,\)"),
    (dict(padding_value=np.float32(1)), "padding_value dtype float32 differs from diagonal "
                                        "dtype float64"),
    (dict(diagonal=np.arange(3), padding_value=1.5), "padding_value 1.5 is not a value of "
                                                     "diagonal's dtype int64"),
    (dict(padding_value="a"), "padding_value"),
])
def test_diag_bad_inputs(kwargs, match):
    args = dict(diagonal=np.zeros(3)) | kwargs
    with vj.GradientTape() as tape:
        tape.watch(vj.constant(0.0))
        with pytest.raises((ValueError, TypeError), match=f"diag: {match}"):
            vj.linalg.diag(**args)
    assert len(tape._entries) == 0  # nothing ran before the error


@pytest.mark.parametrize("kwargs, match", [
    (dict(k=(1, 0)), r"k = \(1, 0\) must have k\[0\] <= k\[1\]"),
    (dict(k=3), r"k = \(3, 3\) must lie in \(-2, 3\) for matrices of 2 x 3"),
    (dict(k=(-2, 0)), r"k = \(-2, 0\) must lie in \(-2, 3\)"),
    (dict(k=np.array([0.0, 1.0])), "k must be an int or a pair"),
    (dict(k=1, align="left"), "align must be one of"),
    (dict(k=1, padding_value=np.zeros((1, 1))), "padding_value must be a scalar"),
    (dict(padding_value=vj.constant(1, vj.int32)), "padding_value dtype int32 differs from "
                                                   "input dtype float64"),
    (dict(input=np.zeros(3)), "input must have rank >= 2"),
    (dict(input=np.array([["a", "b"]])), "input"),
])
def test_diag_part_bad_inputs(kwargs, match):
    args = dict(input=np.zeros((2, 3))) | kwargs
    with pytest.raises((ValueError, TypeError), match=f"diag_part: {match}"):
        vj.linalg.diag_part(**args)


def test_k_cannot_vary_over_a_loop():
    with pytest.raises(ValueError, match="diag: k cannot vary over a pfor loop"):
        vj.vectorize.pfor(lambda i: vj.linalg.diag(vj.ones(2), k=i), 2)
    with pytest.raises(ValueError, match="diag_part: k cannot vary over a pfor loop"):
        vj.vectorize.pfor(lambda i: vj.linalg.diag_part(vj.ones((2, 2)), k=vj.stack([i, i])), 2)


# == colours ================================================================================
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
