"""numba kernels: same results as NumPy, lazily loaded, switchable off."""
import os
import subprocess
import sys

import numpy as np
import pytest

import vecjac as vj
from vecjac._src.core.registry import REGISTRY
from vecjac._src.ops import kernels


@pytest.fixture(autouse=True)
def compile_at_once(monkeypatch):
    """These tests compare the kernels with NumPy: no warm-up requests."""
    monkeypatch.setattr(kernels, "WARMUP_REQUESTS", 0)


def reference(shape, idx, vals):
    out = np.zeros(shape, vals.dtype)
    np.add.at(out, (np.arange(idx.shape[0])[:, None], idx), vals)
    return out


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("nb, m, size, r", [(1, 5000, 300, 4), (3, 2000, 50, 2)])
def test_scatter_add_rows_matches_numpy(dtype, nb, m, size, r):
    rng = np.random.default_rng(0)
    idx = rng.integers(-size, size, (nb, m))  # negative indices count from the end
    vals = rng.standard_normal((nb, m, r)).astype(dtype)
    out = np.zeros((nb, size, r), dtype)
    used = kernels.scatter_add_rows(out, idx, vals)
    if not used:
        pytest.skip("numba is not available here")
    np.testing.assert_allclose(out, reference(out.shape, idx, vals),
                               rtol=1e-5 if dtype == np.float32 else 1e-12)


def test_small_inputs_do_not_use_the_kernel():
    out = np.zeros((1, 4, 1))
    assert not kernels.scatter_add_rows(out, np.zeros((1, 3), np.int64), np.ones((1, 3, 1)))


def test_gather_gradient_same_with_and_without_numba(monkeypatch):
    rng = np.random.default_rng(1)
    x = vj.constant(rng.standard_normal((500, 16)))
    idx = rng.integers(0, 500, 3000)

    def grad():
        with vj.GradientTape() as tape:
            tape.watch(x)
            y = vj.reduce_sum(vj.gather(x, idx) ** 2)
        return tape.gradient(y, x).numpy()
    with_numba = grad()
    monkeypatch.setenv("VECJAC_DISABLE_NUMBA", "1")
    without = grad()
    expected = np.zeros((500, 16))
    np.add.at(expected, idx, 2 * x.numpy()[idx])
    np.testing.assert_allclose(with_numba, expected, rtol=1e-12)
    np.testing.assert_allclose(without, expected, rtol=1e-12)


def _run_with_numba_on(code):
    """Run `code` in a fresh Python process with the kernels switched on."""
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**os.environ, "VECJAC_DISABLE_NUMBA": ""})


def test_import_and_small_problems_do_not_load_numba():
    code = ("import sys, numpy as np, vecjac as vj\n"
            "x = vj.constant(np.ones((5, 3)))\n"
            "with vj.GradientTape() as t:\n"
            "    t.watch(x)\n"
            "    y = vj.reduce_sum(vj.gather(x, [0, 2, 2]))\n"
            "t.gradient(y, x)\n"
            "print('numba' in sys.modules)\n")
    out = _run_with_numba_on(code)
    assert out.stdout.strip() == "False", out.stderr


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_scale_rows_matches_numpy(dtype):
    rng = np.random.default_rng(2)
    m = rng.standard_normal((300, 40)).astype(dtype)
    d = rng.standard_normal(300).astype(dtype)
    out = kernels.scale_rows(m, d)
    if out is None:
        pytest.skip("numba is not available here")
    assert out.dtype == dtype
    np.testing.assert_allclose(out, m * d[:, None], rtol=1e-6)
    assert kernels.scale_rows(m[:2, :2], d[:2]) is None  # small: NumPy


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_outer_rows_matches_numpy(dtype):
    rng = np.random.default_rng(3)
    d = rng.standard_normal((17, 256)).astype(dtype)
    r = rng.standard_normal((17, 64)).astype(dtype)
    out = kernels.outer_rows(d, r)
    if out is None:
        pytest.skip("numba is not available here")
    assert out.dtype == dtype and out.shape == (17, 256, 64)
    np.testing.assert_allclose(out, d[:, :, None] * r[:, None, :], rtol=1e-6)
    assert kernels.outer_rows(d[:2, :2], r[:2, :2]) is None  # small: NumPy
    assert kernels.outer_rows(d, r.astype(np.complex128)) is None  # other dtypes: NumPy


def test_one_off_calls_stay_with_numpy_and_repeated_ones_compile():
    code = ("import sys, numpy as np\n"
            "from vecjac._src.ops import kernels\n"
            "d, r = np.ones((8, 100)), np.ones((8, 64))\n"
            "used = [kernels.outer_rows(d, r) is not None for _ in range(3)]\n"
            "print(used, 'numba' in sys.modules)\n"
            "later = [kernels.outer_rows(d, r) is not None for _ in range(2)]\n"
            "print(all(later) or 'outer_rows' in kernels._broken)\n")
    out = _run_with_numba_on(code)
    first, later = out.stdout.strip().splitlines()
    assert first == "[False, False, False] False", out.stderr
    assert later == "True", out.stderr


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("layout", ["C", "F", "3-D"])
def test_times_rows_kernels_match_numpy_bit_for_bit(dtype, layout):
    rng = np.random.default_rng(4)
    shape = (8, 50, 20) if layout == "3-D" else (8, 1000)
    a, d = (rng.standard_normal(shape).astype(dtype) for _ in range(2))
    if layout == "F":  # stored transposed, as jacfwd's tangents through a matrix
        a, d = np.asfortranarray(a), np.asfortranarray(d)
    b, c = (rng.standard_normal(shape[1:]).astype(dtype) for _ in range(2))
    prod, fused = kernels.times_rows(a, b), kernels.times_rows_add(a, b, c, d)
    if prod is None:
        pytest.skip("numba is not available here")
    # the same operations in the same order as NumPy's: identical, not merely close
    assert prod.dtype == dtype and np.array_equal(prod, a * b)
    assert fused.dtype == dtype and np.array_equal(fused, a * b + c * d)
    if layout == "F":  # the layout is kept for the ops that follow
        assert prod.flags.f_contiguous and fused.flags.f_contiguous


@pytest.mark.parametrize("rank", [2, 3])
def test_times_rows_add_reads_strided_views_with_numpy_bits(rank):
    # a species of an interleaved state (x.reshape(n, n, 2)[..., 0]) and its tangents;
    # one factor of each product contiguous, as u * u * v's second product rule has it
    rng = np.random.default_rng(7)
    shape = (8, 40, 30) if rank == 3 else (8, 1200)
    state, primal = rng.standard_normal(shape + (2,)), rng.standard_normal(shape[1:] + (2,))
    a, d = state[..., 0], state[..., 1]
    b, c = primal[..., 0], np.ascontiguousarray(primal[..., 1])
    if kernels.times_rows(np.ones((8, 1000)), np.ones(1000)) is None:
        pytest.skip("numba is not available here")
    for x, y, z, w in ((a, b, c, d), (np.ascontiguousarray(a), b, c, d)):
        fused = kernels.times_rows_add(x, y, z, w)
        assert fused is not None and np.array_equal(fused, x * y + z * w)
    backwards = d[..., ::-1]  # negative strides: walked backwards, still one pass
    assert np.array_equal(kernels.times_rows_add(a, b, c, backwards), a * b + c * backwards)


def test_times_rows_kernels_decline_what_they_do_not_cover():
    a, b = np.ones((8, 1000)), np.ones(1000)
    assert kernels.times_rows(a[:, :10], b[:10]) is None          # small: NumPy
    assert kernels.times_rows(a, b.astype(np.float32)) is None    # mixed dtypes
    assert kernels.times_rows(a[:, ::2], b[::2]) is None          # strided: a copy would cost
    assert kernels.times_rows(a, np.ones(999)) is None            # not rows of b's shape
    assert kernels.times_rows_add(a, b, b, np.asfortranarray(a)) is None  # mixed layouts


def test_mul_and_muladd_forwards_use_the_kernels_with_numpy_results():
    rng = np.random.default_rng(5)
    a, d = rng.standard_normal((2, 6, 900))
    b, c = rng.standard_normal((2, 900))
    mul, muladd = REGISTRY["Mul"], REGISTRY["MulAdd"]
    for x, y in ((a, b), (b, a), (np.asfortranarray(a), b)):
        assert np.array_equal(mul.forward(x, y), x * y)
    assert np.array_equal(muladd.forward(a, b, c, d), a * b + c * d)


def test_sincos_within_an_ulp_of_numpy_and_declines_the_rest():
    x = np.random.default_rng(6).standard_normal((40, 50)) * 10
    both = kernels.sincos(x)
    if both is None:
        pytest.skip("numba is not available here")
    np.testing.assert_array_max_ulp(both[0], np.sin(x), maxulp=1)
    np.testing.assert_array_max_ulp(both[1], np.cos(x), maxulp=1)
    assert both[0].shape == x.shape
    assert kernels.sincos(x[:10, :10]) is None                   # small: NumPy
    assert kernels.sincos(x.astype(np.float32)) is None           # NumPy's own float32 sin
    assert kernels.sincos(x[:, ::2].T) is None                    # not contiguous


@pytest.mark.parametrize("shapes", [((6000, 1), (1, 8)), ((240, 8, 1), (1, 64)),
                                    ((50, 90, 1), (50, 1, 8))])
def test_column_times_row_is_the_matrix_product_bit_for_bit(shapes):
    rng = np.random.default_rng(7)
    a, b = rng.standard_normal(shapes[0]), rng.standard_normal(shapes[1])
    out = kernels.column_times_row(a, b)
    if out is None:
        pytest.skip("numba is not available here")
    assert out.shape == np.matmul(a, b).shape
    assert np.array_equal(out, np.matmul(a, b)) and np.array_equal(out, a * b)
    # and through the op, as a matmul of an inner dimension 1
    assert np.array_equal(vj.matmul(a, b).numpy(), np.matmul(a, b))
    assert kernels.column_times_row(np.ones((3, 1)), np.ones((1, 8))) is None  # small: NumPy
    assert kernels.column_times_row(np.ones((2, 3, 900, 1)), np.ones((1, 8))) is None  # rank


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_plus_layouts_is_numpys_sum_bit_for_bit(dtype):
    rng = np.random.default_rng(8)
    x = rng.standard_normal((30, 64, 16)).astype(dtype)
    bias = rng.standard_normal((30, 1, 16)).astype(dtype)
    swapped = rng.standard_normal((30, 16, 64)).astype(dtype).transpose(0, 2, 1)
    sliced = rng.standard_normal((30, 20)).astype(dtype)[:, 2:18].reshape(30, 1, 16)
    cases = [(x, np.broadcast_to(bias, x.shape)),           # a bias's broadcast cotangent
             (np.broadcast_to(sliced, x.shape), x),         # the other way round, strided rows
             (x, swapped), (swapped, x)]                     # a transposed product's
    for a, b in cases:
        out = kernels.plus_layouts(a, b)
        if out is None:
            pytest.skip("numba is not available here")
        assert out.dtype == dtype and out.flags.c_contiguous
        assert np.array_equal(out, a + b)
        # and through the op (its forward, and the public function)
        assert np.array_equal(REGISTRY["AddV2"].forward(a, b), a + b)
        assert np.array_equal(vj.add(a, b).numpy(), a + b)


def test_plus_layouts_declines_what_it_does_not_cover():
    x = np.ones((30, 64, 16))
    assert kernels.plus_layouts(x, x) is None                           # NumPy is as fast
    assert kernels.plus_layouts(x[:2, :4], x[:2, :4, ::-1]) is None     # small: NumPy
    assert kernels.plus_layouts(x, x[:, :, ::-1]) is None               # other strides
    assert kernels.plus_layouts(x, np.ones((30, 1, 16))) is None        # shapes differ
    mixed = np.ones((30, 16, 64), np.float32).transpose(0, 2, 1)
    assert kernels.plus_layouts(x, mixed) is None                       # dtypes differ
    assert kernels.plus_layouts(x.reshape(30, 1024), np.asfortranarray(x.reshape(30, 1024))) is None  # rank
