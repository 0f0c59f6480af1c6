"""NumPy functions and ufuncs on Tensors and Variables (vecjac/numpy_dispatch.py).

Every case runs a NumPy call twice: on plain arrays (the oracle) and on Tensors (dispatched
to vecjac ops). Values and dtypes must agree, the result must be a Tensor, gradients
through the NumPy call must match finite differences, and inside pfor the call must agree
with the plain loop for every stacked / loop-invariant combination of its inputs.
"""
import itertools
import warnings

import numpy as np
import pytest

import vecjac as vj
from vecjac._src.numpy import dispatch as numpy_dispatch
from vecjac.testing import check_grads, check_pfor

rng = np.random.default_rng(0)
A = rng.standard_normal((3, 4))
A2 = rng.standard_normal((3, 4))
B = rng.standard_normal((4, 2))
P = rng.uniform(0.5, 2.0, (3, 4))
V = rng.standard_normal(4)
W = rng.standard_normal(3)
C3 = rng.standard_normal((2, 3, 4))
_m = rng.standard_normal((3, 3))
S = _m @ _m.T + 3 * np.eye(3)  # symmetric positive definite
M = rng.standard_normal((3, 2))

# (id, f, args, gradient order: 2 smooth, 1 piecewise smooth, 0 not differentiable)
CASES = [
    ("sin", np.sin, [A], 2), ("exp", np.exp, [A], 2), ("tanh", np.tanh, [A], 2),
    ("sqrt", np.sqrt, [P], 2), ("log", np.log, [P], 2), ("log2", np.log2, [P], 2),
    ("log10", np.log10, [P], 2), ("exp2", np.exp2, [A], 2), ("cbrt", np.cbrt, [P], 2),
    ("expm1", np.expm1, [A], 2), ("log1p", np.log1p, [P], 2), ("arcsinh", np.arcsinh, [A], 2),
    ("arctan", np.arctan, [A], 2), ("square", np.square, [A], 2),
    ("reciprocal", np.reciprocal, [P], 2), ("negative", np.negative, [A], 2),
    ("positive", np.positive, [A], 2), ("absolute", np.abs, [A], 1),
    ("deg2rad", np.deg2rad, [A], 2), ("trunc", np.trunc, [A * 3], 0),
    ("rint", np.rint, [A * 3], 0), ("sign", np.sign, [A], 0),
    ("add", np.add, [A, V], 2), ("subtract", np.subtract, [A, A2], 2),
    ("multiply", np.multiply, [A, A2], 2), ("divide", np.divide, [A, P], 2),
    ("power", np.power, [P, A], 2), ("float_power", np.float_power, [P, A], 2),
    ("maximum", np.maximum, [A, A2], 1), ("minimum", np.minimum, [A, A2], 1),
    ("hypot", np.hypot, [A, A2], 2), ("logaddexp", np.logaddexp, [A, A2], 2),
    ("arctan2", np.arctan2, [A, A2], 2), ("matmul", np.matmul, [A, B], 2),
    ("matmul_vec", np.matmul, [A, V], 2), ("vec_matmul", np.matmul, [W, A], 2),
    ("less", np.less, [A, A2], 0),
    ("sum", lambda x: np.sum(x, axis=0), [A], 2),
    ("sum_keepdims", lambda x: np.sum(x, keepdims=True), [A], 2),
    ("mean", lambda x: np.mean(x, axis=(0, 1)), [A], 2),
    ("mean_none", np.mean, [C3], 2),
    ("max", lambda x: np.max(x, axis=1), [A], 1), ("amin", np.amin, [A], 1),
    ("prod", lambda x: np.prod(x, axis=1), [A], 2),
    ("std_ddof", lambda x: np.std(x, axis=0, ddof=1), [A], 2),
    ("var", lambda x: np.var(x, axis=1, keepdims=True), [A], 2),
    ("cumsum_none", np.cumsum, [A], 2), ("cumprod", lambda x: np.cumprod(x, axis=1), [A], 2),
    ("argmax_none", np.argmax, [A], 0), ("argmin", lambda x: np.argmin(x, axis=1), [A], 0),
    ("any", lambda x: np.any(x > 1, axis=0), [A], 0),
    ("add_reduce", lambda x: np.add.reduce(x, axis=1), [A], 2),
    ("maximum_reduce", np.maximum.reduce, [A], 1),
    ("add_accumulate", np.add.accumulate, [A], 2),
    ("multiply_outer", np.multiply.outer, [V, W], 2),
    ("dot_mv", np.dot, [A, V], 2), ("dot_vv", np.dot, [V, V * 2], 2),
    ("dot_3d", np.dot, [C3, B], 2), ("dot_scalar", lambda x: np.dot(x, 2.0), [A], 2),
    ("vdot", np.vdot, [A, A2], 2), ("inner", np.inner, [A, A2], 2),
    ("outer", np.outer, [V, W], 2), ("tensordot", lambda a, b: np.tensordot(a, b, 1), [A, B], 2),
    ("einsum", lambda a, b: np.einsum("ij,jk->ik", a, b), [A, B], 2),
    ("trace", np.trace, [A], 2), ("trace_axes", lambda x: np.trace(x, axis1=0, axis2=2), [C3], 2),
    ("diagonal", np.diagonal, [A], 2), ("diag1", np.diag, [V], 2), ("diag2", np.diag, [A], 2),
    ("concatenate", lambda a, b: np.concatenate([a, b], axis=1), [A, A2], 2),
    ("concatenate_none", lambda a, b: np.concatenate([a, b], axis=None), [A, V], 2),
    ("stack", lambda a, b: np.stack([a, b], axis=-1), [A, A2], 2),
    ("vstack", lambda a, b: np.vstack([a, b]), [V, A], 2),
    ("hstack", lambda a, b: np.hstack([a, b]), [V, V], 2),
    ("split", lambda x: np.split(x, [1, 3], axis=1), [A], 2),
    ("split_sections", lambda x: np.split(x, 2, axis=1), [A], 2),
    ("reshape", lambda x: np.reshape(x, (-1, 2)), [A], 2), ("ravel", np.ravel, [A], 2),
    ("transpose", lambda x: np.transpose(x, (2, 0, 1)), [C3], 2),
    ("swapaxes", lambda x: np.swapaxes(x, 0, 2), [C3], 2),
    ("moveaxis", lambda x: np.moveaxis(x, 0, -1), [C3], 2),
    ("expand_dims", lambda x: np.expand_dims(x, (0, 2)), [A], 2),
    ("squeeze", lambda x: np.squeeze(x[None]), [A], 2),
    ("broadcast_to", lambda x: np.broadcast_to(x, (2, 4)), [V], 2),
    ("broadcast_arrays", np.broadcast_arrays, [A, V], 2),
    ("atleast_2d", np.atleast_2d, [V], 2), ("flip", np.flip, [A], 2),
    ("tile", lambda x: np.tile(x, (2, 1, 2)), [A], 2),
    ("pad", lambda x: np.pad(x, 1, mode="reflect"), [A], 2),
    ("pad_constant", lambda x: np.pad(x, ((0, 1), (2, 0)), constant_values=1.5), [A], 2),
    ("take", lambda x: np.take(x, [2, 0, 2], axis=1), [A], 2),
    ("diff", lambda x: np.diff(x, n=2), [A], 2),
    ("where", lambda a, b: np.where(a > 0, a, b), [A, A2], 1),
    ("clip", lambda x: np.clip(x, -0.5, 0.5), [A], 1),
    ("clip_max", lambda x: np.clip(x, None, 0.3), [A], 1),
    ("round", lambda x: np.round(x, 2), [A], 0), ("fix", np.fix, [A * 3], 0),
    ("zeros_like", np.zeros_like, [A], 0), ("full_like", lambda x: np.full_like(x, 2.5), [A], 0),
    ("solve_vec", np.linalg.solve, [S, W], 2), ("solve", np.linalg.solve, [S, M], 2),
    ("inv", np.linalg.inv, [S], 2), ("det", np.linalg.det, [S], 2),
    ("slogdet", np.linalg.slogdet, [S], 2),
    # cholesky reads one triangle: differentiate through a symmetric input
    ("cholesky", lambda x: np.linalg.cholesky(x @ x.T + 3 * np.eye(3)), [_m], 2),
    ("cholesky_upper", lambda x: np.linalg.cholesky(x @ x.T + np.eye(3), upper=True), [_m], 2),
    ("norm", np.linalg.norm, [A], 2), ("norm_axis", lambda x: np.linalg.norm(x, axis=1), [A], 2),
    ("norm_ord1", lambda x: np.linalg.norm(x, ord=1, axis=0), [A], 1),
    ("norm_fro", lambda x: np.linalg.norm(x, "fro"), [A], 2),
    ("multi_dot", lambda a, b: np.linalg.multi_dot([a, b, b.T]), [A, B], 2),
    ("vecdot", np.linalg.vecdot, [A, A2], 2),
    ("matrix_transpose", np.matrix_transpose, [C3], 2),
]

# -- the scientific-code surface (issue 10 section 3) -------------------------------------
X3, Y3 = rng.standard_normal((4, 3)), rng.standard_normal((4, 3))
XP = np.array([-1.0, -0.2, 0.3, 0.9, 1.7])     # increasing sample points
FP = rng.standard_normal(5)
XQ = np.array([-1.65, -0.7, 0.05, 0.41, 1.2, 2.35, -0.95])  # queries, two outside [XP]
XC = np.array([0.0, 0.4, 1.1, 1.5])             # non-uniform coordinates
IDX = rng.integers(0, 4, (3, 2))
NF = A.copy()
NF[0, 0], NF[1, 2], NF[2, 1] = np.nan, np.inf, -np.inf
CZ = A + 1j * A2
ZS = np.array([0.0, 1e-4, -3e-3, 0.5, 2.0, -1.0])


def _svd_parts(r):  # sign-invariant: finite differences do not see LAPACK's signs
    return r.S, r.U * r.U, r.Vh * r.Vh


def _put(a, v, axis=1, idx=IDX):
    """np.put_along_axis returns vecjac's result; on plain arrays, NumPy's written copy."""
    if isinstance(a, vj.Tensor) or isinstance(v, vj.Tensor):  # vecjac: use the result
        return np.put_along_axis(a if isinstance(a, vj.Tensor) else vj.constant(a), idx, v,
                                 axis)
    a = a.copy()
    np.put_along_axis(a, idx, v, axis)
    return a


CASES += [
    # np.linalg decompositions and norms
    ("svd", lambda x: _svd_parts(np.linalg.svd(x, full_matrices=False)), [A], 2),
    ("svd_full_values", np.linalg.svd, [A], 0),
    ("svd_full", lambda x: (lambda r: (r.S, r.U * r.U, r.Vh[:3] ** 2))(np.linalg.svd(x)),
     [A], 2),
    ("svd_tall_full", lambda x: (lambda r: (r.S, r.U[:, :2] ** 2))(np.linalg.svd(x)), [M], 2),
    ("svd_values", lambda x: np.linalg.svd(x, compute_uv=False), [C3], 2),
    ("svd_hermitian", lambda x: (lambda r: (r.S, r.U * r.U))(np.linalg.svd(x, hermitian=True)),
     [S], 2),
    ("svdvals", np.linalg.svdvals, [A], 2),
    ("eigh", lambda x: (lambda r: (r.eigenvalues, r.eigenvectors ** 2))(np.linalg.eigh(x)),
     [S], 2),
    ("eigh_upper", lambda x: np.linalg.eigh(x, UPLO="U").eigenvalues, [S], 2),
    ("eigvalsh", np.linalg.eigvalsh, [S], 2),
    ("pinv", np.linalg.pinv, [A], 2),
    ("pinv_rank1", lambda u, v: np.linalg.pinv(np.outer(u, v), rcond=1e-10), [V, W], 2),
    ("lstsq", lambda a, b: (lambda r: (r[0], r[1], r[3]))(np.linalg.lstsq(a, b)), [M, W], 2),
    ("lstsq_matrix", lambda a, b: np.linalg.lstsq(a, b)[0], [B, X3], 2),
    ("lstsq_wide", lambda a, b: np.linalg.lstsq(a, b)[:2], [A, W], 2),
    ("matrix_power3", lambda x: np.linalg.matrix_power(x, 3), [S], 2),
    ("matrix_power5", lambda x: np.linalg.matrix_power(x, 5), [S / 3], 2),
    ("matrix_power_neg", lambda x: np.linalg.matrix_power(x, -2), [S], 2),
    ("matrix_power0", lambda x: np.linalg.matrix_power(x, 0), [S], 0),
    ("norm_nuc", lambda x: np.linalg.norm(x, "nuc"), [A], 2),
    ("norm_2", lambda x: np.linalg.norm(x, 2), [A], 2),
    ("norm_m2", lambda x: np.linalg.norm(x, -2), [A], 2),
    ("norm_axes", lambda x: np.linalg.norm(x, axis=(2, 0)), [C3], 2),
    ("norm_nuc_axes", lambda x: np.linalg.norm(x, "nuc", axis=(0, 2), keepdims=True), [C3], 2),
    ("norm_m1", lambda x: np.linalg.norm(x, -1), [A], 1),
    ("norm_minf", lambda x: np.linalg.norm(x, -np.inf, axis=(1, 0)), [A], 1),
    ("norm_vec_m1", lambda x: np.linalg.norm(x, -1, axis=1), [P], 2),
    ("norm_vec0", lambda x: np.linalg.norm(x, 0, axis=0), [A], 0),
    ("norm_vec_minf", lambda x: np.linalg.norm(x, -np.inf, axis=1, keepdims=True), [A], 1),
    ("matrix_norm", lambda x: np.linalg.matrix_norm(x, ord=2), [C3], 2),
    ("vector_norm", lambda x: np.linalg.vector_norm(x, axis=(0, 2), ord=3), [P[None]], 2),
    # arrangement
    ("tril", lambda x: np.tril(x, -1), [A], 2), ("triu", lambda x: np.triu(x, 1), [C3], 2),
    ("tril_1d", np.tril, [V], 2),
    ("repeat", lambda x: np.repeat(x, 2, axis=1), [A], 2),
    ("repeat_counts", lambda x: np.repeat(x, [1, 0, 2], axis=0), [A], 2),
    ("repeat_flat", lambda x: np.repeat(x, 2), [A], 2),
    ("roll", lambda x: np.roll(x, 1, axis=1), [A], 2),
    ("roll_axes", lambda x: np.roll(x, (1, -2), axis=(0, 1)), [A], 2),
    ("roll_flat", lambda x: np.roll(x, 5), [A], 2),
    ("append", np.append, [A, V], 2), ("append_axis", lambda a, b: np.append(a, b, 0), [A, A2], 2),
    ("array_split", lambda x: np.array_split(x, 3, axis=1), [A], 2),
    ("split_decreasing", lambda x: np.split(x, [3, 1], axis=1), [A], 2),
    ("vsplit", lambda x: np.vsplit(x, [1]), [A], 2), ("hsplit", lambda x: np.hsplit(x, 2), [A], 2),
    ("dsplit", lambda x: np.dsplit(x, [1, 3]), [C3], 2),
    ("column_stack", lambda a, b: np.column_stack([a, b]), [V, B], 2),
    ("dstack", lambda a, b: np.dstack([a, b]), [A, A2], 2),
    ("kron", np.kron, [A, B], 2), ("kron_1d", np.kron, [V, W], 2),
    ("kron_mixed", np.kron, [C3, B], 2),
    ("cross", np.cross, [X3, Y3], 2),
    ("cross_axes", lambda a, b: np.cross(a.T, b, axisa=0, axisc=0), [X3, Y3], 2),
    ("linalg_cross", np.linalg.cross, [X3, Y3], 2),
    ("trace_offset", lambda x: np.trace(x, 1), [A], 2),
    ("trace_axes_offset", lambda x: np.trace(x, -1, 2, 0), [C3], 2),
    ("trace_int", lambda x: np.trace(x.astype(np.int32)), [A * 3], 0),
    ("diagonal_offset", lambda x: np.diagonal(x, 1), [A], 2),
    ("diagonal_axes", lambda x: np.diagonal(x, -1, 0, 2), [C3], 2),
    ("diagonal_empty", lambda x: np.diagonal(x, 5), [A], 0),
    ("linalg_diagonal", lambda x: np.linalg.diagonal(x, offset=-1), [C3], 2),
    ("linalg_trace", lambda x: np.linalg.trace(x, offset=2), [C3], 2),
    ("diag_k", lambda x: np.diag(x, 1), [V], 2), ("diag_mk", lambda x: np.diag(x, -2), [W], 2),
    ("diag2_k", lambda x: np.diag(x, -1), [A], 2),
    ("flip_axes", lambda x: np.flip(x, (0, 2)), [C3], 2),
    ("flipud", np.flipud, [A], 2), ("fliplr", np.fliplr, [A], 2),
    ("rot90", np.rot90, [A], 2), ("rot90_2", lambda x: np.rot90(x, 2), [A], 2),
    ("rot90_axes", lambda x: np.rot90(x, -1, axes=(1, 2)), [C3], 2),
    ("rollaxis", lambda x: np.rollaxis(x, 2), [C3], 2),
    ("rollaxis_start", lambda x: np.rollaxis(x, 0, 2), [C3], 2),
    ("moveaxis_many", lambda x: np.moveaxis(x, [0, 1], [-1, 0]), [C3], 2),
    ("atleast_3d", np.atleast_3d, [V], 2), ("atleast_3d_2d", np.atleast_3d, [A], 2),
    ("atleast_1d_many", np.atleast_1d, [V, A], 2),
    ("einsum_sublist", lambda a, b: np.einsum(a, [0, 1], b, [1, 2]), [A, B], 2),
    ("einsum_sublist_out", lambda a, b: np.einsum(a, [0, 1], b, [1, 2], [2, 0]), [A, B], 2),
    ("einsum_sublist_ellipsis", lambda c: np.einsum(c, [Ellipsis, 1], [Ellipsis]), [C3], 2),
    # element-wise and numerical helpers
    ("logaddexp2", np.logaddexp2, [A, A2], 2), ("logaddexp_ties", np.logaddexp, [A, A], 2),
    # NaN inputs: finite differences cannot step there (test_nan_handling_gradients)
    ("fmax", np.fmax, [NF, A2], 0), ("fmin", np.fmin, [A2, NF], 0),
    ("fmax_finite", np.fmax, [A, A2], 1), ("fmin_finite", np.fmin, [A, A2], 1),
    ("sinc", np.sinc, [A], 2), ("sinc_near_zero", np.sinc, [ZS], 2),
    ("nan_to_num", np.nan_to_num, [NF], 0),
    ("nan_to_num_values", lambda x: np.nan_to_num(x, nan=1.5, posinf=9.0, neginf=-9.0), [NF], 0),
    ("select", lambda a, b: np.select([a > 0.5, b < 0], [a, b * 2], default=-1.0), [A, A2], 1),
    ("linspace", lambda a, b: np.linspace(a, b, 5), [np.array(0.5), np.array(2.0)], 2),
    ("linspace_vectors", lambda a, b: np.linspace(a, b, 4, axis=1), [V, W[:1]], 2),
    ("linspace_retstep", lambda a, b: np.linspace(a, b, 7, endpoint=False, retstep=True),
     [V, V * 3], 2),
    ("linspace_int", lambda a, b: np.linspace(a, b, 6, dtype=int), [V * 5, V * 9], 0),
    ("interp", lambda x, fp: np.interp(x, XP, fp), [XQ, FP], 1),
    ("interp_xp", np.interp, [XQ, XP, FP], 1),
    ("interp_left_right", lambda x, fp: np.interp(x, XP, fp, left=-3.0, right=fp[2]),
     [XQ, FP], 1),
    ("interp_period", lambda x, fp: np.interp(x, XP, fp, period=2.5), [XQ, FP], 1),
    ("gradient", np.gradient, [A], 2), ("gradient_1d", np.gradient, [V], 2),
    ("gradient_spacing", lambda f: np.gradient(f, 0.5, axis=1), [A], 2),
    ("gradient_coords", lambda f: np.gradient(f, XC, axis=1, edge_order=2), [A], 2),
    ("gradient_tensor_coords", lambda f, x: np.gradient(f, 2.0, x), [A, XC], 2),
    ("gradient_edge2", lambda f: np.gradient(f, edge_order=2), [A], 2),
    ("real", np.real, [A], 2), ("imag", np.imag, [A], 0), ("real_if_close", np.real_if_close,
                                                         [A], 2),
    ("real_complex", np.real, [CZ], 0), ("imag_complex", np.imag, [CZ], 0),
    ("real_if_close_complex", np.real_if_close, [A + 1e-20j], 0),
    # sorting, searching, indexing
    ("sort", lambda x: np.sort(x, axis=0), [A], 1), ("sort_flat", lambda x: np.sort(x, None),
                                                     [A], 1),
    ("argsort", lambda x: np.argsort(x, axis=1), [A], 0),
    ("partition", lambda x: np.partition(x, 1, axis=1), [A], 1),
    ("partition_kths", lambda x: np.partition(x, (0, 2), axis=0), [A], 1),
    ("argpartition", lambda x: np.argpartition(x, 2), [A], 0),
    ("searchsorted", lambda v: np.searchsorted(np.sort(XP), v), [A], 0),
    ("searchsorted_right", lambda a, v: np.searchsorted(a, v, side="right",
                                                        sorter=np.argsort(a)), [FP, A], 0),
    ("take_along_axis", lambda x: np.take_along_axis(x, IDX, axis=1), [A], 2),
    ("take_along_axis_sorted", lambda x: np.take_along_axis(x, np.argsort(x, 0), 0), [A], 1),
    ("take_along_axis_broadcast", lambda x: np.take_along_axis(x, IDX[:1], 1), [A], 2),
    ("take_along_axis_none", lambda x: np.take_along_axis(x, IDX[0], None), [A], 2),
    ("put_along_axis", _put, [A, W[:, None]], 2),
    ("put_along_axis_axis0", lambda a, v: _put(a, v, 0, IDX.reshape(1, -1)[:, :4] % 3),
     [A, V], 2),
    ("take_wrap", lambda x: np.take(x, [5, -1, 2], axis=1, mode="wrap"), [A], 2),
    ("take_clip", lambda x: np.take(x, [[7, 0]], mode="clip"), [A], 2),
]
IDS = [c[0] for c in CASES]


def _leaves(x):
    return list(x) if isinstance(x, (tuple, list)) else [x]


@pytest.mark.parametrize("name,f,args,order", CASES, ids=IDS)
def test_values_match_numpy(name, f, args, order):
    check_values_match(name, f, args, f)


def check_values_match(name, f, args, run):
    """run(*Tensors) against f(*arrays): the same leaves, each a Tensor with NumPy's
    shape, dtype and values."""
    expected = _leaves(f(*args))
    got = _leaves(run(*[vj.constant(a) for a in args]))
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        assert isinstance(g, vj.Tensor), f"{name}: result is {type(g).__name__}, not a Tensor"
        e = np.asarray(e)
        assert g.shape == e.shape and g.dtype == e.dtype, (g.shape, g.dtype, e.shape, e.dtype)
        np.testing.assert_allclose(g.numpy(), e, rtol=1e-12, atol=1e-12)


F32_CASES = [c for c in CASES if c[0] != "dot_scalar"]  # np.dot(float32, 2.0) is float64


@pytest.mark.parametrize("name,f,args,order", F32_CASES, ids=[c[0] for c in F32_CASES])
def test_float32_values_and_dtypes_match_numpy(name, f, args, order):
    """float32 inputs: the result has NumPy's dtype (float32 stays float32, np.interp
    widens ...) and NumPy's float32 values."""
    args = [a.astype(np.float32) if a.dtype == np.float64 else a for a in args]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # np.cross of 2-vectors
        expected = _leaves(f(*args))
        got = _leaves(f(*[vj.constant(a) for a in args]))
    for g, e in zip(got, expected):
        e = np.asarray(e)
        g = g.numpy() if isinstance(g, vj.Tensor) else np.asarray(g)
        assert g.shape == e.shape and g.dtype == e.dtype, (g.shape, g.dtype, e.shape, e.dtype)
        np.testing.assert_allclose(g, e, rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("name,f,args,order", [c for c in CASES if c[3]],
                         ids=[c[0] for c in CASES if c[3]])
def test_gradients_through_numpy_calls(name, f, args, order):
    check_grads(f, args, order=order)


# subset for pfor: each argument stacked (from a batch of 3 variants) or loop-invariant
PFOR_CASES = [c for c in CASES if c[0] in {
    "sin", "log2", "add", "divide", "matmul", "vec_matmul", "arctan2", "logaddexp", "sum",
    "std_ddof", "cumsum_none", "argmax_none", "add_reduce", "multiply_outer", "dot_mv",
    "dot_3d", "vdot", "outer", "einsum", "trace", "diag1", "concatenate_none", "vstack",
    "split", "ravel", "moveaxis", "expand_dims", "tile", "pad", "take", "diff", "where",
    "clip", "solve_vec", "slogdet", "norm", "zeros_like", "broadcast_arrays",
    "svd", "svd_full", "svd_values", "svd_hermitian", "eigh", "pinv", "lstsq", "lstsq_wide",
    "matrix_power5", "matrix_power_neg", "norm_nuc", "norm_2", "norm_axes", "norm_minf",
    "vector_norm", "tril_1d", "repeat_counts", "roll_axes", "roll_flat", "append",
    "fmax_finite", "array_split", "split_decreasing", "column_stack", "kron_mixed", "cross", "cross_axes",
    "trace_axes_offset", "diagonal_empty", "diag_k", "diag2_k", "rot90_axes", "rollaxis",
    "atleast_3d", "einsum_sublist_out", "logaddexp2", "fmax", "sinc_near_zero", "nan_to_num",
    "select", "linspace_vectors", "linspace_retstep", "interp", "interp_xp", "interp_period",
    "gradient", "gradient_tensor_coords", "gradient_edge2", "real_complex", "imag_complex",
    "sort", "argsort", "partition", "searchsorted_right", "take_along_axis_sorted",
    "take_along_axis_broadcast", "put_along_axis", "put_along_axis_axis0", "take_wrap"}]


@pytest.mark.parametrize("name,f,args,order", PFOR_CASES, ids=[c[0] for c in PFOR_CASES])
def test_inside_pfor(name, f, args, order):
    check_inside_pfor(f, args)


def check_inside_pfor(f, args):
    """f under pfor against the loop, with every subset of its arguments loop-variant."""
    batches = [vj.constant(np.stack([a, a * 1.1 + 0.05, a * 0.9])) for a in args]
    for mask in itertools.product([True, False], repeat=len(args)):
        if not any(mask):
            continue

        def loop_fn(i, mask=mask):
            xs = [vj.gather(b, i) if s else a for b, a, s in zip(batches, args, mask)]
            return f(*xs)
        check_pfor(loop_fn, 3)


def test_jacobian_through_numpy_code_matches_finite_differences():
    x = vj.constant(A)
    with vj.GradientTape() as tape:
        tape.watch(x)
        y = np.sum(np.tanh(np.dot(x, B)), axis=1)
    jac = tape.jacobian(y, x)
    numeric = vj.testing.numerical_jacobian(lambda a: np.tanh(a @ B).sum(axis=1), A)
    np.testing.assert_allclose(jac.numpy(), numeric, rtol=1e-6, atol=1e-8)


def test_np_mean_on_a_tensor_keeps_the_gradient():
    # the guide's "calculation outside of vecjac": with the protocols it stays on the tape
    x = vj.Variable([[1.0, 2.0], [3.0, 4.0]], dtype=vj.float32)
    with vj.GradientTape() as tape:
        x2 = x ** 2
        y = np.mean(x2, axis=0)
        y = vj.reduce_mean(y, axis=0)
    assert isinstance(y, vj.Tensor)
    g = tape.gradient(y, x)
    assert g.dtype == np.float32
    np.testing.assert_allclose(g.numpy(), 2 * np.array([[1.0, 2.0], [3.0, 4.0]]) / 4)
    # leaving explicitly through np.asarray still cuts the gradient
    with vj.GradientTape() as tape:
        y = vj.reduce_mean(np.mean(np.asarray(x ** 2), axis=0))
    assert tape.gradient(y, x) is None


def test_float32_stays_float32():
    x = vj.constant(A.astype(np.float32))
    with vj.GradientTape() as tape:
        tape.watch(x)
        y = np.sum(np.sin(x) * 2.0 + np.where(x > 0, x, 0.5)) / np.float32(3)
    assert y.dtype == np.float32
    assert tape.gradient(y, x).dtype == np.float32
    assert np.mean(vj.constant([1, 2, 3])).dtype == np.float64  # NumPy: int mean is float64


def test_ndarray_operator_tensor_uses_the_reflected_operator():
    t = vj.constant(A)
    for op in ["__add__", "__sub__", "__mul__", "__truediv__", "__pow__", "__lt__", "__ge__",
               "__eq__"]:
        got = getattr(P, op)(t)
        assert isinstance(got, vj.Tensor), op
        np.testing.assert_allclose(got.numpy(), getattr(P, op)(A), err_msg=op)
    got = B.T @ vj.constant(B)
    assert isinstance(got, vj.Tensor)
    np.testing.assert_allclose(got.numpy(), B.T @ B)


def test_asarray_still_gives_the_plain_array():
    t = vj.constant(A)
    plain = np.asarray(t)
    assert type(plain) is np.ndarray and plain.shape == A.shape
    assert type(np.array(t, dtype=np.float32)) is np.ndarray
    v = vj.Variable(A)
    assert type(np.asarray(v)) is np.ndarray


def test_variables_dispatch_and_are_watched():
    v = vj.Variable(V)
    with vj.GradientTape() as tape:
        y = np.sum(np.sin(v) * np.array([1.0, 2.0, 3.0, 4.0]))
    np.testing.assert_allclose(tape.gradient(y, v).numpy(), np.cos(V) * [1, 2, 3, 4])
    with vj.GradientTape() as tape:
        y = np.linalg.norm(np.concatenate([v, v]))
    np.testing.assert_allclose(tape.gradient(y, v).numpy(), 2 * V / np.linalg.norm(
        np.concatenate([V, V])))


def test_scipy_special_ufuncs_dispatch():
    special = pytest.importorskip("scipy.special")
    x = vj.constant(A)
    got = special.expit(x)
    assert isinstance(got, vj.Tensor)
    np.testing.assert_allclose(got.numpy(), special.expit(A))
    check_grads(lambda t: special.log_expit(t) + special.erf(t), [A])


@pytest.fixture
def fresh_warnings():
    numpy_dispatch._warned.clear()
    yield
    numpy_dispatch._warned.clear()


def test_uncovered_function_warns_once_on_a_tape(fresh_warnings):
    x = vj.constant(A)
    with vj.GradientTape() as tape:
        tape.watch(x)
        with pytest.warns(vj.NotDifferentiableWarning, match=r"np\.unique: no vecjac op") as rec:
            y = np.unique(x)
        assert rec[0].filename == __file__  # points at the caller's line
        assert type(y) is np.ndarray
        np.testing.assert_array_equal(y, np.unique(A))
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            np.unique(x)  # once per function
        total = vj.reduce_sum(y)
    assert tape.gradient(total, x) is None


def test_uncovered_function_is_silent_off_the_tape(fresh_warnings):
    x = vj.constant(A)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        y = np.unique(x)  # no tape: no gradient to lose (e.g. plotting code)
        assert np.allclose(x, A)  # bool results never warn
    np.testing.assert_array_equal(y, np.unique(A))


def test_unsupported_argument_falls_back_with_a_warning(fresh_warnings):
    x = vj.constant(A)
    with vj.GradientTape() as tape:
        tape.watch(x)
        with pytest.warns(vj.NotDifferentiableWarning, match=r"np\.max: argument initial="):
            y = np.max(x, initial=10.0)
    assert float(y) == 10.0


def test_uncovered_function_inside_pfor_raises():
    X = vj.constant(np.stack([A, A2]))
    with pytest.raises(TypeError, match=r"np\.unique has no vecjac op.*pfor"):
        vj.vectorize.pfor(lambda i: np.unique(vj.gather(X, i)), 2)


def test_spectral_norm_runs_as_numpy_and_differentiates():
    # np.linalg.norm(matrix, 2) (the spectral norm) gives NumPy's value without a tape,
    # and on a tape the gradient u1 v1^T (top singular vectors) flows, with no warning
    assert float(np.linalg.norm(vj.constant(A), 2)) == pytest.approx(np.linalg.norm(A, 2))
    x = vj.constant(A)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with vj.GradientTape() as tape:
            tape.watch(x)
            value = np.linalg.norm(x, 2)
        g = tape.gradient(value, x)
    u, s, vh = np.linalg.svd(A)
    np.testing.assert_allclose(g.numpy(), np.outer(u[:, 0], vh[0]), rtol=1e-10, atol=1e-12)


def test_out_is_a_type_error():
    t = vj.constant(A)
    buf = np.zeros_like(A)
    with pytest.raises(TypeError, match=r"np\.sin: out= is not supported"):
        np.sin(t, out=buf)
    with pytest.raises(TypeError, match=r"np\.sum: out= is not supported"):
        np.sum(t, axis=0, out=np.zeros(4))
    with pytest.raises(TypeError, match=r"array = array \+ tensor"):
        buf += t
    with pytest.raises(TypeError, match="immutable"):
        np.add.at(t, [0], 1.0)


def test_bad_inputs_keep_vecjac_messages():
    with pytest.raises(ValueError, match="diag"):
        np.diag(vj.constant(C3))
    with pytest.raises(ValueError, match="equal division"):
        np.split(vj.constant(A), 3, axis=1)
    with pytest.raises((ValueError, TypeError), match="solve"):
        np.linalg.solve(vj.constant(A), vj.constant(V))


def test_introspection_is_per_iteration_inside_pfor():
    X = vj.constant(C3)
    seen = []

    def loop_fn(i):
        x = vj.gather(X, i)
        seen.append((np.shape(x), np.ndim(x), np.size(x), np.result_type(x, 1.0)))
        return np.sum(x)
    vj.vectorize.pfor(loop_fn, 2)
    assert seen == [((3, 4), 2, 12, np.float64)]


def test_docstring_table_is_current():
    table = numpy_dispatch.coverage_table()
    assert table in numpy_dispatch.__doc__, \
        "regenerate the table in vecjac/numpy_dispatch.py's docstring with coverage_table()"
    names = numpy_dispatch.covered_functions()
    assert {"np.sin", "np.sum", "np.concatenate", "np.linalg.solve", "np.einsum"} <= set(names)


def test_arctan2_on_the_axes_value_and_gradient():
    y = np.array([1.0, -1.0, 0.0, 0.0, 1.0, -1.0, 2.0, -3.0])
    x = np.array([0.0, 0.0, -1.0, 1.0, -1.0, -1.0, -0.5, -0.1])
    ty, tx = vj.constant(y), vj.constant(x)
    with vj.GradientTape() as tape:
        tape.watch([ty, tx])
        r = np.arctan2(ty, tx)
    np.testing.assert_allclose(r.numpy(), np.arctan2(y, x), atol=1e-15)
    gy, gx = tape.gradient(r, [ty, tx])
    np.testing.assert_allclose(gy.numpy(), x / (x**2 + y**2), atol=1e-15)
    np.testing.assert_allclose(gx.numpy(), -y / (x**2 + y**2), atol=1e-15)


# -- what the cases above cannot express ---------------------------------------------------
T34, V4 = vj.constant(np.ones((3, 4))), vj.constant(np.arange(4.0))
ERRORS = [  # (call, error, the function and argument it names)
    (lambda: np.flip(T34, axis=5), np.exceptions.AxisError, r"np\.flip: axis"),
    (lambda: np.roll(T34, 1, axis=5), np.exceptions.AxisError, r"np\.roll: axis"),
    (lambda: np.trace(T34, axis1=0, axis2=9), np.exceptions.AxisError, r"np\.trace: axis2"),
    (lambda: np.fliplr(V4), ValueError, r"np\.fliplr: m must be at least 2-d"),
    (lambda: np.repeat(T34, -1), ValueError, r"np\.repeat: repeats may not"),
    (lambda: np.repeat(T34, [1, 2], axis=1), ValueError, r"np\.repeat: repeats of shape"),
    (lambda: np.linalg.matrix_power(vj.constant(np.eye(2)), 1.5), TypeError,
     r"np\.linalg\.matrix_power: the exponent n"),
    (lambda: np.take_along_axis(T34, np.ones((3, 1)), 1), TypeError,
     r"np\.take_along_axis: indices must be integers"),
    (lambda: np.take_along_axis(T34, np.full((3, 1), 9), 1), IndexError,
     r"np\.take_along_axis: index 9 is out of bounds"),
    (lambda: np.select([T34 > 0], [T34, T34]), ValueError, r"np\.select: condlist and choicelist"),
    (lambda: np.select([T34], [T34]), TypeError, r"np\.select: condlist\[0\]"),
    (lambda: np.interp(V4, [0.0, 1.0], [1.0, 2.0, 3.0]), ValueError, r"np\.interp: fp and xp"),
    (lambda: np.linalg.eigh(vj.constant(np.eye(2)), UPLO="X"), ValueError,
     r"np\.linalg\.eigh: UPLO"),
    (lambda: np.linalg.svd(V4), np.linalg.LinAlgError, r"np\.linalg\.svd: a must be at least"),
    (lambda: np.linalg.lstsq(T34, V4), np.linalg.LinAlgError, r"np\.linalg\.lstsq: incompatible"),
    (lambda: np.rot90(T34, axes=(0, 0)), ValueError, r"np\.rot90: axes must be different"),
    (lambda: np.moveaxis(T34, [0, 1], [0]), ValueError, r"np\.moveaxis: source and destination"),
    (lambda: np.linspace(vj.constant(0.0), 1.0, -1), ValueError, r"np\.linspace: num"),
    (lambda: np.gradient(T34, edge_order=3), ValueError, r"np\.gradient: edge_order"),
    (lambda: np.diagonal(V4), ValueError, r"np\.diagonal: the array must be at least 2-d"),
    (lambda: np.array_split(T34, 0), ValueError, r"np\.array_split: indices_or_sections"),
    (lambda: np.dsplit(T34, 2), ValueError, r"np\.dsplit: only works on arrays of 3"),
    (lambda: np.cross(T34, T34), ValueError, r"np\.cross: incompatible dimensions"),
    (lambda: np.partition(T34, 9), ValueError, r"np\.partition: kth=9"),
    (lambda: np.searchsorted(T34, 1.0), ValueError, r"np\.searchsorted: a must be 1-D"),
    (lambda: np.take(T34, [0], mode="bogus"), ValueError, r"np\.take: mode"),
    (lambda: np.linalg.norm(T34, "bogus"), ValueError, r"np\.linalg\.norm: invalid norm order"),
    (lambda: np.linalg.norm(V4, "fro", axis=0), ValueError, r"for vectors"),
    (lambda: np.einsum(T34, [0, 99]), ValueError, r"np\.einsum: sublist labels"),
    (lambda: np.put_along_axis(np.ones((3, 4)), np.zeros((3, 1), int), V4[:1][None], 1),
     TypeError, r"np\.put_along_axis: arr is a NumPy array"),
]


@pytest.mark.parametrize("k", range(len(ERRORS)))
def test_bad_arguments_raise_numpys_error_naming_the_function(k):
    call, error, match = ERRORS[k]
    with pytest.raises(error, match=match):
        call()


def _gradient_of(f, *xs):
    ts = [vj.constant(x) for x in xs]
    with vj.GradientTape() as tape:
        tape.watch(ts)
        y = vj.reduce_sum(f(*ts))
    return [g.numpy() for g in tape.gradient(y, ts)]


def test_nan_handling_gradients():
    """Where NaN / inf are replaced or skipped, the derivative is 0, elsewhere the usual
    one, and never NaN (finite differences cannot step from a NaN: exact values here)."""
    finite = np.isfinite(NF)
    (g,) = _gradient_of(np.nan_to_num, NF)
    np.testing.assert_array_equal(g, finite * 1.0)
    gx, gy = _gradient_of(np.fmax, NF, A2)
    x_wins = ~np.isnan(NF) & (np.nan_to_num(NF, nan=-np.inf) >= A2)
    np.testing.assert_array_equal(gx, x_wins * 1.0)
    np.testing.assert_array_equal(gy, 1.0 - x_wins)
    gx, gy = _gradient_of(np.fmin, A2, NF)
    y_wins = ~np.isnan(NF) & (np.nan_to_num(NF, nan=np.inf) < A2)
    np.testing.assert_array_equal(gy, y_wins * 1.0)


def test_logaddexp_extremes_ties_and_precision():
    x = np.array([0.0, 3.0, np.inf, -np.inf, np.inf, np.nan, 0.0, 1e3])
    y = np.array([-40.0, 3.0, np.inf, -np.inf, 1.0, 1.0, -800.0, -1e3])
    for f in (np.logaddexp, np.logaddexp2):
        with np.errstate(invalid="ignore"):
            np.testing.assert_allclose(f(vj.constant(x), vj.constant(y)).numpy(), f(x, y),
                                       rtol=1e-13, atol=0)
    # at a tie each input gets half (a max-based formula would give one of them 1)
    gx, gy = _gradient_of(np.logaddexp, np.array([3.0, -1.0]), np.array([3.0, -1.0]))
    np.testing.assert_allclose(gx, 0.5)
    np.testing.assert_allclose(gy, 0.5)


def test_sinc_derivatives_at_zero():
    x = vj.constant(np.array([0.0, 1e-9]))
    with vj.GradientTape() as outer:
        outer.watch(x)
        with vj.GradientTape() as inner:
            inner.watch(x)
            y = vj.reduce_sum(np.sinc(x))
        g = inner.gradient(y, x)
        total = vj.reduce_sum(g)
    h = outer.gradient(total, x)
    np.testing.assert_allclose(g.numpy(), [0.0, -np.pi**2 / 3 * 1e-9], atol=1e-20)
    np.testing.assert_allclose(h.numpy(), -np.pi**2 / 3, rtol=1e-12)


@pytest.mark.parametrize("a,b", [(M, W), (np.outer(W, [1.0, 2.0]), W), (A, W),
                                 (B, X3)], ids=["tall", "rank1", "wide", "matrix_rhs"])
def test_lstsq_rank_and_residuals_match_numpy(a, b):
    x, residuals, rank, s = np.linalg.lstsq(vj.constant(a), vj.constant(b))
    ex, eres, erank, es = np.linalg.lstsq(a, b)
    assert type(rank) is int and rank == erank
    assert isinstance(residuals, vj.Tensor) and residuals.shape == eres.shape
    np.testing.assert_allclose(residuals.numpy(), eres, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(x.numpy(), ex, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(s.numpy(), es, rtol=1e-12)


def test_put_along_axis_returns_a_new_array_and_writes_nothing():
    a = vj.constant(A)
    idx = np.array([[1], [0], [3]])
    out = np.put_along_axis(a, idx, vj.constant(W[:, None]), axis=1)
    expected = A.copy()
    np.put_along_axis(expected, idx, W[:, None], axis=1)
    np.testing.assert_array_equal(out.numpy(), expected)
    np.testing.assert_array_equal(a.numpy(), A)  # the input is unchanged


def test_svd_full_matrices_extra_columns_have_nan_derivatives():
    """np.linalg.svd's default full_matrices=True on a non-square matrix: the extra columns
    of U are any orthonormal complement, so their derivative is NaN, not a silent value;
    S and the first k columns differentiate normally."""
    x = vj.constant(M)  # 3 x 2: U is 3 x 3, its last column the arbitrary one
    with vj.GradientTape(persistent=True) as tape:
        tape.watch(x)
        r = np.linalg.svd(x)
        defined = vj.reduce_sum(r.S) + vj.reduce_sum(r.U[:, :2] ** 2)
        arbitrary = vj.reduce_sum(r.U[:, 2] ** 3)
    assert np.all(np.isfinite(tape.gradient(defined, x).numpy()))
    assert np.all(np.isnan(tape.gradient(arbitrary, x).numpy()))


@pytest.mark.parametrize("transform", ["jvp", "jacfwd", "jacrev", "hessian", "hvp"])
def test_uncovered_function_inside_a_functional_transform_raises(transform, fresh_warnings):
    # NumPy would compute on the plain values: every derivative would silently be zero
    f = lambda a: vj.reduce_sum(np.unique(a) ** 2)  # noqa: E731
    calls = {"jvp": lambda: vj.jvp(f, (A,), (A,)), "jacfwd": lambda: vj.jacfwd(f)(A),
             "jacrev": lambda: vj.jacrev(f)(A), "hessian": lambda: vj.hessian(f)(A),
             "hvp": lambda: vj.hvp(f, A, A)}
    with pytest.raises(TypeError, match=rf"{transform}: np\.unique \(no vecjac op"):
        calls[transform]()


def test_uncovered_function_under_an_accumulator_warns(fresh_warnings):
    x = vj.constant(A)
    with vj.autodiff.ForwardAccumulator(x, vj.ones_like(x)) as acc:
        with pytest.warns(vj.NotDifferentiableWarning, match=r"np\.unique \(no vecjac op.*"
                                                              r"ForwardAccumulator"):
            y = np.unique(x)
    assert acc.jvp(vj.constant(y)) is None


def test_a_bool_result_of_an_uncovered_function_loses_no_derivative(fresh_warnings):
    # np.isclose has no vecjac op; its bool result carries no derivative, so functional
    # transforms accept it (a float result would be refused: the test above)
    f = lambda a: vj.reduce_sum(a ** 2) if np.isclose(a, a).all() else vj.reduce_sum(a)  # noqa: E731
    np.testing.assert_allclose(vj.grad(f)(A).numpy(), 2 * A)


def test_linspace_with_a_python_number_end():
    x = vj.constant(np.float32(1.2))
    assert np.linspace(x, 3.4, 5).dtype == np.float32  # the number takes the Tensor's dtype
    np.testing.assert_allclose(float(vj.grad(lambda s: vj.reduce_sum(np.linspace(s, 3.4, 5)))(1.2)),
                               2.5)
    np.testing.assert_allclose(float(vj.grad(lambda e: vj.reduce_sum(np.linspace(1.2, e, 5)))(3.4)),
                               2.5)
