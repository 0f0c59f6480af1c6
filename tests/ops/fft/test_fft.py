"""FFTs: values against NumPy and SciPy, through every public name, and the errors.

np.fft.<name>(tensor) (NumPy dispatch), vj.signal (TF's names), vj.scipy.fft and
scipy.fft.<name>(tensor) (the uarray backend) all run vecjac's FFT ops; their values must
be NumPy's (SciPy's) for every argument combination: n / s (truncated, padded, odd and
even lengths), axis / axes (negative, reordered, repeated for NumPy), norm, dtypes. The
references are NumPy's and SciPy's own functions on plain arrays. Derivatives:
tests/ops/fft/test_fft_derivatives.py.
"""
import subprocess
import sys
import warnings

import numpy as np
import pytest
import scipy.fft

import vecjac as vj

RNG = np.random.default_rng(20240521)
NORMS = [None, "backward", "ortho", "forward"]


def _real(*shape):
    return RNG.standard_normal(shape)


def _complex(*shape):
    return RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)


def _assert_same(got, expected, exact=False):
    """Equal to NumPy's result: dtype, shape, and values bit for bit (`exact`: the same
    one-dimensional transforms in the same order) or to 1e-12 of their scale (1e-6 in
    single precision)."""
    assert isinstance(got, vj.Tensor), type(got)
    got = got.numpy()
    assert got.dtype == expected.dtype and got.shape == expected.shape, \
        (got.dtype, got.shape, expected.dtype, expected.shape)
    if exact:
        np.testing.assert_array_equal(got, expected)
    scale = max(1.0, float(np.max(np.abs(expected), initial=0)))
    tol = 1e-12 if expected.dtype.itemsize >= 8 and expected.dtype.kind != "c" or \
        expected.dtype == np.complex128 else 1e-6
    assert float(np.max(np.abs(got - expected), initial=0)) <= tol * scale


# -- np.fft on Tensors ------------------------------------------------------------------------
ONE_DIM = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft"]
REAL_ONLY = {"rfft", "ihfft"}
ONE_DIM_CASES = [(name, n, axis, norm, kind)
                 for name in ONE_DIM for n in (None, 1, 2, 5, 6, 9) for axis in (-1, 0)
                 for norm in NORMS for kind in ("real", "complex")
                 if not (kind == "complex" and name in REAL_ONLY)]


@pytest.mark.parametrize("name,n,axis,norm,kind", ONE_DIM_CASES)
def test_one_dimensional_values_match_numpy(name, n, axis, norm, kind):
    a = _real(4, 7) if kind == "real" else _complex(4, 7)  # axis 0: 4, axis -1: 7
    f = getattr(np.fft, name)
    _assert_same(f(vj.constant(a), n=n, axis=axis, norm=norm), f(a, n=n, axis=axis, norm=norm),
                 exact=True)


N_DIM = ["fft2", "ifft2", "rfft2", "irfft2", "fftn", "ifftn", "rfftn", "irfftn"]
S_AXES_2D = [(None, (-2, -1)), ((3, 5), (-2, -1)), ((4, 8), (0, 2)), ((2, 7), (2, 1)),
             (None, (1, 0))]
S_AXES_ND = [(None, None), (None, (0, 2)), ((2, 5), (0, 2)), ((4, 9), (2, 1)), ((5,), (-1,)),
             (None, (1, 0, 2)), ((3, 1, 4), (0, 1, 2)), ((3, 5), (1, 1)), ((2, -1), (0, 2))]
N_DIM_CASES = [(name, s, axes, norm, kind)
               for name in N_DIM for s, axes in (S_AXES_2D if "2" in name else S_AXES_ND)
               for norm in (None, "ortho", "forward") for kind in ("real", "complex")
               if not (kind == "complex" and name.startswith("rfft"))]


@pytest.mark.parametrize("name,s,axes,norm,kind", N_DIM_CASES)
def test_n_dimensional_values_match_numpy(name, s, axes, norm, kind):
    a = _real(3, 4, 6) if kind == "real" else _complex(3, 4, 6)
    f = getattr(np.fft, name)
    _assert_same(f(vj.constant(a), s=s, axes=axes, norm=norm), f(a, s=s, axes=axes, norm=norm),
                 exact=True)


def test_s_without_axes_is_the_last_axes_as_in_numpy():
    a = _complex(3, 4, 6)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # NumPy 2 deprecates it
        expected = np.fft.fftn(a, s=(5, 4))
        expected_r = np.fft.irfftn(a, s=(2, 9))
    _assert_same(np.fft.fftn(vj.constant(a), s=(5, 4)), expected)
    _assert_same(np.fft.irfftn(vj.constant(a), s=(2, 9)), expected_r)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int64, np.bool_, np.complex64])
@pytest.mark.parametrize("name", ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2",
                                  "irfftn"])
def test_dtypes_are_numpys(name, dtype):
    if dtype == np.complex64 and name in REAL_ONLY:
        pytest.skip("a real transform")
    a = (_real(3, 6) * 3).astype(dtype) if dtype != np.complex64 else \
        _complex(3, 6).astype(dtype)
    f = getattr(np.fft, name)
    _assert_same(f(vj.constant(a), norm="ortho"), f(a, norm="ortho"), exact=True)


def test_an_empty_batch_axis_transforms():
    for name in ("fft", "rfft", "irfft"):
        f = getattr(np.fft, name)
        _assert_same(f(vj.constant(np.zeros((0, 5))), n=4), f(np.zeros((0, 5)), n=4))


@pytest.mark.parametrize("name", ["fftshift", "ifftshift"])
@pytest.mark.parametrize("axes", [None, 0, -1, (0, 1), (1, 0, 1)])
def test_shifts_are_numpys_rolls(name, axes):
    a = _real(5, 4)
    f = getattr(np.fft, name)
    np.testing.assert_array_equal(f(vj.constant(a), axes=axes).numpy(), f(a, axes=axes))
    np.testing.assert_array_equal(f(vj.constant(a[0]), ).numpy(), f(a[0]))


def test_frequencies_are_numpys_and_a_tensor_spacing_is_differentiable():
    for n in (1, 4, 7):
        np.testing.assert_array_equal(np.fft.fftfreq(n, 0.1), vj.scipy.fft.fftfreq(n, 0.1))
        np.testing.assert_array_equal(np.fft.rfftfreq(n, 0.1),
                                      vj.scipy.fft.rfftfreq(n, vj.constant(0.1)))
    # k / (n d): the derivative in d is -k / (n d^2)
    g = vj.grad(lambda d: vj.reduce_sum(vj.scipy.fft.rfftfreq(6, d)))(0.5)
    np.testing.assert_allclose(g.numpy(), -np.sum(np.arange(4)) / (6 * 0.25))
    assert isinstance(np.fft.fftfreq(4, vj.constant(0.5)), vj.Tensor)  # NumPy's arithmetic


def test_numpy_names_are_listed_in_the_coverage_table():
    covered = vj._array_function.__globals__["covered_functions"]()
    for name in ONE_DIM + N_DIM + ["fftshift", "ifftshift"]:
        assert f"np.fft.{name}" in covered


# -- vj.signal: TF's names ----------------------------------------------------------------------
@pytest.mark.parametrize("rank,suffix", [(1, ""), (2, "2d"), (3, "3d")])
def test_tf_complex_transforms_run_over_the_innermost_axes(rank, suffix):
    z = _complex(2, 3, 4, 5)
    axes = tuple(range(-rank, 0))
    _assert_same(getattr(vj.signal, f"fft{suffix}")(z), np.fft.fftn(z, axes=axes))
    _assert_same(getattr(vj.signal, f"ifft{suffix}")(z), np.fft.ifftn(z, axes=axes))


@pytest.mark.parametrize("rank,suffix", [(1, ""), (2, "2d"), (3, "3d")])
@pytest.mark.parametrize("grow", [-1, 0, 2])
def test_tf_real_transforms_take_fft_length(rank, suffix, grow):
    x = _real(2, 3, 4, 5)
    axes = tuple(range(-rank, 0))
    lengths = [x.shape[a] + grow for a in axes]
    rfft, irfft = getattr(vj.signal, f"rfft{suffix}"), getattr(vj.signal, f"irfft{suffix}")
    _assert_same(rfft(x, fft_length=lengths), np.fft.rfftn(x, s=lengths, axes=axes))
    _assert_same(rfft(x), np.fft.rfftn(x, axes=axes))
    spectrum = np.fft.rfftn(x, axes=axes)
    _assert_same(irfft(spectrum, fft_length=vj.constant(np.array(lengths, np.int32))),
                 np.fft.irfftn(spectrum, s=lengths, axes=axes))
    _assert_same(irfft(spectrum), np.fft.irfftn(spectrum, axes=axes))


def test_tf_n_dimensional_forms_and_shifts():
    x = _real(3, 4, 5)
    _assert_same(vj.signal.fftnd(x, axes=[0, 2], norm="ortho"),
                 np.fft.fftn(x, axes=(0, 2), norm="ortho"))
    _assert_same(vj.signal.ifftnd(x, fft_length=[6], axes=[1]), np.fft.ifftn(x, s=(6,), axes=(1,)))
    _assert_same(vj.signal.rfftnd(x, fft_length=[2, 8], axes=[0, 1]),
                 np.fft.rfftn(x, s=(2, 8), axes=(0, 1)))
    _assert_same(vj.signal.irfftnd(x, norm="forward"), np.fft.irfftn(x, norm="forward"))
    np.testing.assert_array_equal(vj.signal.fftshift(x, axes=1).numpy(),
                                  np.fft.fftshift(x, axes=1))
    np.testing.assert_array_equal(vj.signal.ifftshift(x).numpy(), np.fft.ifftshift(x))


# -- SciPy: vj.scipy.fft and scipy.fft.<name>(tensor) -------------------------------------------
SCIPY_CASES = [("fft", dict(n=5)), ("ifft", dict(axis=0, norm="ortho")), ("rfft", dict(n=8)),
               ("irfft", dict(n=7, norm="forward")), ("hfft", dict(n=6)), ("ihfft", dict(n=5)),
               ("fft2", dict(s=(3, 3))), ("ifft2", dict(axes=(0, 1))),
               ("rfft2", dict(norm="ortho")), ("irfft2", dict(s=(4, 5))),
               ("hfft2", dict(s=(2, 9))), ("ihfft2", dict(norm="forward")),
               ("fftn", dict(axes=(0,))), ("ifftn", dict(s=(2, 3, 4))),
               ("rfftn", dict(axes=(2, 0))), ("irfftn", dict(axes=(1, 2))),
               ("hfftn", dict(norm="ortho")), ("ihfftn", dict(s=(3, 3), axes=(0, 1)))]


@pytest.mark.parametrize("name,kwargs", SCIPY_CASES)
def test_scipy_names_match_scipy(name, kwargs):
    a = _real(3, 4, 6) if name in ("rfft", "ihfft", "rfft2", "ihfft2", "rfftn", "ihfftn") \
        else _complex(3, 4, 6)
    expected = getattr(scipy.fft, name)(a, **kwargs)
    _assert_same(getattr(vj.scipy.fft, name)(a, **kwargs), expected)
    _assert_same(getattr(scipy.fft, name)(vj.constant(a), **kwargs), expected)  # the backend


def test_scipy_fft_on_a_tensor_is_differentiable():
    x = _real(8)

    def loss(x):  # sum |X_k|^2 = n sum x^2 (Parseval), so the gradient is 2 n x
        return vj.reduce_sum(vj.math.abs(scipy.fft.fft(x)) ** 2)
    np.testing.assert_allclose(vj.grad(loss)(x).numpy(), 2 * 8 * x, rtol=1e-12)
    g = vj.grad(lambda x: vj.reduce_sum(scipy.fft.irfft(scipy.fft.rfft(x) * 2.0)))(x)
    np.testing.assert_allclose(g.numpy(), np.full(8, 2.0), rtol=1e-12)


def test_scipy_calls_without_tensors_stay_scipys():
    a = _real(6)
    np.testing.assert_array_equal(scipy.fft.rfft(a), scipy.fft._pocketfft.rfft(a))
    assert type(scipy.fft.dct(vj.constant(a))) is np.ndarray  # no vecjac op: SciPy's


@pytest.mark.parametrize("scipy_first", [False, True])
def test_the_backend_is_registered_whichever_is_imported_first(scipy_first):
    imports = ["import scipy.fft", "import vecjac as vj"]
    code = "; ".join((imports if scipy_first else imports[::-1]) + [
        "import numpy as np, sys",
        "t = vj.constant(np.arange(4.0))",
        "print(type(scipy.fft.fft(t)).__name__, type(scipy.fft.fft(np.arange(4.0))).__name__,"
        " sum(type(f).__name__ == '_AfterScipyFFT' for f in sys.meta_path))"])
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["Tensor", "ndarray", "0"]


# -- the array API's fft extension ------------------------------------------------------------
def test_array_api_fft_extension():
    x = _real(3, 6)
    xp = vj.constant(x).__array_namespace__()
    _assert_same(xp.fft.rfft(vj.constant(x), n=8, axis=0, norm="ortho"),
                 np.fft.rfft(x, n=8, axis=0, norm="ortho"), exact=True)
    _assert_same(xp.fft.irfftn(vj.constant(x), s=(3, 4), axes=(0, 1)),
                 np.fft.irfftn(x, s=(3, 4), axes=(0, 1)), exact=True)
    _assert_same(xp.fft.ihfft(x), np.fft.ihfft(x), exact=True)
    _assert_same(xp.fft.fftshift(vj.constant(x), axes=(0,)), np.fft.fftshift(x, axes=(0,)),
                 exact=True)
    freq = xp.fft.rfftfreq(6, d=0.5, dtype=xp.float32)
    assert freq.dtype == np.float32
    np.testing.assert_array_equal(freq.numpy(), np.fft.rfftfreq(6, 0.5).astype(np.float32))
    g = vj.grad(lambda t: xp.sum(xp.abs(xp.fft.fftn(t)) ** 2))(x)  # Parseval
    np.testing.assert_allclose(g.numpy(), 2 * x.size * x, rtol=1e-12)
    with pytest.raises(ValueError, match="fft.fftn: axes must be unique"):
        xp.fft.fftn(vj.constant(x), axes=(0, 0))


# -- errors name the argument, expected and given -------------------------------------------------
BAD = [
    (lambda t: np.fft.fft(t, n=0), ValueError,
     r"np.fft.fft: n must be a positive number of FFT points \(>= 1\), got 0"),
    (lambda t: np.fft.rfft(t, n=2.5), TypeError, r"np.fft.rfft: n must be an int .* got float"),
    (lambda t: np.fft.fft(t, n=True), TypeError, r"np.fft.fft: n must be an int"),
    (lambda t: np.fft.ifft(t, axis=2), np.exceptions.AxisError,
     r"np.fft.ifft: axis=2 is out of range for an input of rank 2 \(expected -2 <= axis < 2\)"),
    (lambda t: np.fft.fft2(t, axes=(0, 3)), np.exceptions.AxisError, r"np.fft.fft2: axes=3"),
    (lambda t: np.fft.fft(t, norm="orthogonal"), ValueError,
     r'np.fft.fft: norm must be "backward", "ortho" or "forward" \(or None .*\), got '
     r"'orthogonal'"),
    (lambda t: np.fft.fftn(t, s=(3, 3), axes=(0,)), ValueError,
     r"np.fft.fftn: s and axes must have the same length, got s=\[3, 3\] \(2 entries\) and "
     r"axes=\[0\] \(1\)"),
    (lambda t: np.fft.rfftn(t, s=(3, 0)), ValueError, r"np.fft.rfftn: s must be a positive"),
    (lambda t: np.fft.rfft(t + 1j), TypeError, r"np.fft.rfft: a must be real .* complex128"),
    (lambda t: np.fft.irfft(t[:, :1]), ValueError,
     r"np.fft.irfft: the output length 2 \* \(bins - 1\) is 0 .* \(n\)"),
    (lambda t: np.fft.fft(t[:, :0]), ValueError, r"np.fft.fft: the input has length 0"),
    (lambda t: vj.signal.rfft2d(t, fft_length=[4]), ValueError,
     r"rfft2d: fft_length must have 2 entries \(one per transformed axis\), got \[4\]"),
    (lambda t: vj.signal.irfft(t, fft_length=[-3]), ValueError,
     r"irfft: fft_length must be a positive number of FFT points \(>= 1\), got -3"),
    (lambda t: vj.signal.fft3d(t), ValueError, r"fft3d: input must have rank >= 3 .* \(3, 4\)"),
    (lambda t: vj.signal.fftnd(t, axes=[1, 1]), ValueError, r"fftnd: axes must be unique"),
    (lambda t: vj.scipy.fft.fft(t, axis=-3), ValueError, r"scipy.fft.fft: axis=-3 is out of "),
    (lambda t: scipy.fft.fftn(t, axes=(0, 0)), ValueError, r"scipy.fft.fftn: axes must be uniq"),
    (lambda t: scipy.fft.rfft(t, norm=1), ValueError, r"scipy.fft.rfft: norm must be"),
    (lambda t: scipy.fft.fft(t, plan=object()), NotImplementedError, r"precomputed plan"),
    (lambda t: vj.scipy.fft.fftfreq(0), ValueError, r"fftfreq: n must be a positive"),
    (lambda t: np.fft.fftshift(t, axes=4), np.exceptions.AxisError, r"fftshift: axes=4"),
]


@pytest.mark.parametrize("k", range(len(BAD)))
def test_bad_arguments_raise_naming_them(k):
    call, error, message = BAD[k]
    t = vj.constant(_real(3, 4))
    with vj.GradientTape() as tape:
        tape.watch(t)
        with pytest.raises(error, match=message):
            call(t)
