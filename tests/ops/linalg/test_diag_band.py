"""vj.linalg.diag / diag_part with TF's k, num_rows, num_cols, padding_value and align
(matrix_diag_v3 / matrix_diag_part_v3): the bands of vecjac/_src/ops/linalg/diag_band.py.

Values are checked against references written here with explicit loops, entry by entry
from TF's documented definition (diag: output[..., m, n] is diagonal[..., k1 - d,
index_in_diag] on the band, d = n - m, else padding_value), and against the examples of
TF's documentation. Derivatives against finite differences in forward and reverse mode,
pfor against the plain loop with loop-variant inputs, and bad arguments against their
errors.
"""
import numpy as np
import pytest

import vecjac as vj
import vecjac._src.ops.linalg.diag_band
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
