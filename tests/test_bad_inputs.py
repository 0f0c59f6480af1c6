"""Bad-input fuzzing of every public function and every GradientTape method (issue 4).

Every public function of vj, vj.math, vj.nn, vj.linalg, vj.random, vj.image,
vj.vectorize, vj.signal, vj.scipy.special, vj.scipy.linalg, vj.scipy.signal, vj.scipy.fft
and the methods of the distributions of vj.scipy.stats is found programmatically (each
namespace's __all__, else dir()), so a new function is fuzzed automatically: its
arguments get a *role* from their name (x -> a float tensor, axis -> an axis, shape -> a
shape ...), or from the SPECS table below when
the name is not enough (keyed by the short name, or the qualified one where short names
repeat: "vj.scipy.stats.norm.logpdf"); a function with an argument of unknown role fails
test_every_public_function_is_fuzzed. Starting from a valid call, one argument at a time
is replaced by a bad value: every value of the role's catalogue (ROLE_BAD, deterministic)
and values drawn by hypothesis (arrays of any dtype and shape with NaN / Inf / empty,
ints, floats, strings, arbitrary objects). Accepted outcomes (see `run_case`):
- a result: every output is a numeric Tensor (or a Python value), no complex part was
  dropped silently, and where a NumPy or SciPy oracle exists (ORACLES: every vj.scipy
  function has SciPy's own) the value equals it;
- ValueError / TypeError / LookupError / RuntimeError whose message names the function
  and the argument (IndexError only for x[...] and out-of-range gather-style indices);
  an error raised inside a user callable passes through unchanged.
The call runs on an active tape watching the valid arguments: a failure must record
nothing (public functions validate before any op runs), leave the tape stack and pfor
state as they were, and a gradient computed afterwards must be correct. Tape methods get
the same treatment on a non-persistent tape (a failing call must not consume it).
Separate tests check that NaN / Inf propagate through values, gradients, Jacobians and
Hessians as IEEE arithmetic says.

`EXCLUDED` lists the few functions that cannot be fuzzed generically, with the reason;
test_excluded_functions_validate checks them by hand. Examples per function: 8
(derandomized) in CI, 100 random ones with VECJAC_HYPOTHESIS_PROFILE=thorough.
"""
import inspect
import os
import re
import warnings

import numpy as np
import pytest
import scipy.linalg
import scipy.signal
import scipy.special
import scipy.stats
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import vecjac as vj
from vecjac._src.core.context import state

NAMESPACES = {"vj": vj, "vj.math": vj.math, "vj.nn": vj.nn, "vj.linalg": vj.linalg,
              "vj.random": vj.random, "vj.image": vj.image, "vj.vectorize": vj.vectorize,
              "vj.scipy.special": vj.scipy.special, "vj.scipy.linalg": vj.scipy.linalg,
              "vj.scipy.signal": vj.scipy.signal, "vj.scipy.integrate": vj.scipy.integrate,
              "vj.debugging": vj.debugging, "vj.signal": vj.signal, "vj.scipy.fft": vj.scipy.fft,
              **{f"vj.scipy.stats.{d}": getattr(vj.scipy.stats, d)  # methods of each
                 for d in vj.scipy.stats.__all__}}

EXCLUDED = {  # each checked by test_excluded_functions_validate instead
    "defop": "registers a new global op under `name`: fuzzing would fill the registry",
    "custom_gradient": "a decorator: what it wraps runs later, with the user's arguments",
    "recompute_grad": "a decorator: what it wraps runs later, with the user's arguments",
    "set_seed": "changes the global seed that other tests rely on",
    "converter_coverage": "takes no arguments",
    "solve_ivp": "returns SciPy's OdeResult (a dict with SciPy's message and interpolant), "
                 "not Tensors; tests/api/scipy/test_solve_ivp.py checks its arguments",
    **dict.fromkeys(["elementwise", "broadcasting", "reduction", "axis_shift"],
                    "pfor rules: pfor calls them with an op and a ConvertContext"),
}
# Functions whose contract is "never raise": they are called with every bad value too.
NEVER_RAISE = {"is_tensor"}


def public_functions():
    """[(qualified name, function)], each function once (first namespace that has it)."""
    seen, out = set(), []
    for prefix, mod in NAMESPACES.items():
        names = getattr(mod, "__all__", None) or dir(mod)
        for n in sorted(names):
            f = getattr(mod, n, None)
            if (n.startswith("_") or f is None or inspect.isclass(f) or inspect.ismodule(f)
                    or not callable(f) or not getattr(f, "__module__", "").startswith("vecjac")
                    or id(f) in seen):
                continue
            seen.add(id(f))
            out.append((f"{prefix}.{n}", f))
    return out


# -- valid values per role ------------------------------------------------------------------
def F(*shape, lo=0.2, hi=0.9):
    n = int(np.prod(shape, dtype=np.int64))
    return np.linspace(lo, hi, n).reshape(shape) if n else np.zeros(shape)


SPD = np.array([[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 2.0]])
LOWER = np.tril(SPD)
BAND = np.array([[0.0, 1.0, 0.5], [4.0, 3.0, 2.0], [1.0, 0.2, 0.0]])  # SPD's, (l, u) = (1, 1)

PARAM_ROLES = {  # role of an argument, by its name
    **dict.fromkeys(["x", "y", "input", "features", "logits", "labels", "tensor", "t", "a",
                     "b", "input_tensor", "input_", "value", "params", "g", "values_one"],
                    "float"),
    **dict.fromkeys(["axis", "dim"], "axis"),
    "axes": "axes",
    **dict.fromkeys(["shape", "dims"], "shape"),
    **dict.fromkeys(["dtype", "out_type", "output_type"], "dtype"),
    **dict.fromkeys(["keepdims", "exclusive", "reverse", "transpose_a", "transpose_b",
                     "adjoint_a", "adjoint_b", "adjoint", "lower", "approximate",
                     "conjugate", "fallback_to_while_loop", "warn", "back_prop",
                     "full_matrices", "compute_uv", "fast", "stable"], "bool"),
    **dict.fromkeys(["a_is_sparse", "b_is_sparse", "validate_indices", "swap_memory",
                     "shape_invariants", "name", "validate_args"], "skip"),
    **dict.fromkeys(["epsilon", "variance_epsilon", "alpha", "beta", "clip_norm",
                     "contrast_factor", "clip_value_min", "clip_value_max", "mean",
                     "stddev", "minval", "maxval"], "scalar"),
    **dict.fromkeys(["matrix", "rhs", "diagonal", "images"], "float"),
    **dict.fromkeys(["parallel_iterations", "maximum_iterations"], "count"),
    **dict.fromkeys(["loop_fn", "fn", "true_fn", "false_fn", "cond", "body", "f"], "callable"),
}

ROLE_DEFAULTS = {"float": lambda: F(2, 3), "scalar": lambda: 0.5, "bool": lambda: False,
                 "dtype": lambda: vj.float64, "axis": lambda: -1, "axes": lambda: [0],
                 "shape": lambda: [2, 3], "count": lambda: None}

# Per function: valid arguments (callables are called for a fresh value, except where the
# role is "callable") and role overrides. Unlisted arguments take PARAM_ROLES/ROLE_DEFAULTS.
IDX = lambda: np.array([0, 1])  # noqa: E731
SPECS = {
    "argmax": dict(args=dict(axis=0)), "argmin": dict(args=dict(axis=0)),
    "complex": dict(roles=dict(real="float", imag="float")),
    "batch_normalization": dict(args=dict(mean=lambda: F(3), variance=lambda: F(3),
                                          offset=lambda: F(3), scale=lambda: F(3),
                                          variance_epsilon=1e-3),
                                roles=dict(mean="float", variance="float",
                                           offset="float_or_none", scale="float_or_none")),
    "boolean_mask": dict(args=dict(mask=lambda: np.array([True, False])),
                         roles=dict(mask="mask", axis="axis_or_none")),
    "broadcast_to": dict(args=dict(input=lambda: F(1, 3))),
    "cast": dict(args=dict(dtype=vj.float32)),
    "clip_by_norm": dict(args=dict(clip_norm=1.0), roles=dict(axes="axes_or_none")),
    "ensure_shape": dict(args=dict(shape=[2, 3]), roles=dict(shape="shape_or_none")),
    "identity_n": dict(args=dict(input=lambda: [F(2), F(3)]), roles=dict(input="tensors")),
    "shape_n": dict(args=dict(input=lambda: [F(2), F(3)]),
                    roles=dict(input="tensors", out_type="dtype_or_none")),
    "bias_add": dict(args=dict(value=lambda: F(2, 3), bias=lambda: F(3)),
                     roles=dict(value="float", bias="float", data_format="data_format")),
    "band_part": dict(args=dict(num_lower=1, num_upper=0),
                      roles=dict(num_lower="int", num_upper="int")),
    "clip_by_value": dict(args=dict(clip_value_min=0.3, clip_value_max=0.6)),
    "concat": dict(args=dict(values=lambda: [F(2, 3), F(2, 3)], axis=0),
                   roles=dict(values="tensor_list")),
    "stack": dict(args=dict(values=lambda: [F(2, 3), F(2, 3)], axis=0),
                  roles=dict(values="tensor_list")),
    "cond": dict(args=dict(pred=True, true_fn=lambda: vj.constant(1.0),
                           false_fn=lambda: vj.constant(2.0)),
                 roles=dict(pred="pred")),
    "constant": dict(args=dict(value=lambda: F(2, 3), dtype=None, shape=None),
                     roles=dict(dtype="dtype_or_none", shape="shape_or_none")),
    "convert_to_tensor": dict(args=dict(value=lambda: F(2, 3), dtype=None),
                              roles=dict(dtype="dtype_or_none")),
    "cumsum": dict(args=dict(axis=1)), "cumprod": dict(args=dict(axis=1)),
    "einsum": dict(args=dict(equation="ij,jk->ik"), varargs=lambda: [F(2, 3), F(3, 4)],
                   roles=dict(equation="equation")),
    "eye": dict(args=dict(num_rows=3, num_columns=None, batch_shape=None, dtype=None),
                roles=dict(num_rows="size", num_columns="size_or_none",
                           batch_shape="shape_or_none", dtype="dtype_or_none")),
    "fill": dict(args=dict(dims=[2, 3], value=1.5), roles=dict(value="scalar")),
    "gather": dict(args=dict(indices=IDX, axis=None, batch_dims=0),
                   roles=dict(indices="indices", axis="axis_or_none", batch_dims="int")),
    "gather_nd": dict(args=dict(indices=lambda: np.array([[0, 1], [1, 2]]), batch_dims=0),
                      roles=dict(indices="indices", batch_dims="int")),
    "getitem": dict(args=dict(key=(0, slice(None))), roles=dict(key="key")),
    "l2_normalize": dict(args=dict(axis=None, dim=None),
                         roles=dict(axis="axis_or_none", dim="skip")),
    "leaky_relu": dict(args=dict(alpha=0.2)),
    "linspace": dict(args=dict(start=0.0, stop=1.0, num=5, axis=0),
                     roles=dict(start="scalar", stop="scalar", num="size")),
    "matmul": dict(args=dict(a=lambda: F(2, 3), b=lambda: F(3, 4), output_type=None),
                   roles=dict(output_type="skip")),
    "matrix_transpose": dict(args=dict(x=lambda: F(2, 3))),
    "moments": dict(args=dict(axes=[0], shift=None), roles=dict(shift="skip")),
    "norm": dict(args=dict(ord="euclidean", axis=None, keepdims=None),
                 roles=dict(ord="ord", axis="axis_or_none", keepdims="bool_or_none")),
    "one_hot": dict(args=dict(indices=IDX, depth=3, on_value=None, off_value=None,
                              axis=None, dtype=None),
                    roles=dict(indices="onehot_indices", depth="size",
                               on_value="scalar_or_none",
                               off_value="scalar_or_none", axis="axis_or_none",
                               dtype="dtype_or_none")),
    "ones": dict(args=dict(dtype=None), roles=dict(dtype="dtype_or_none")),
    "zeros": dict(args=dict(dtype=None), roles=dict(dtype="dtype_or_none")),
    "ones_like": dict(args=dict(dtype=None), roles=dict(dtype="dtype_or_none")),
    "zeros_like": dict(args=dict(dtype=None), roles=dict(dtype="dtype_or_none")),
    **{name: dict(args=dict(input=lambda r=rank: F(1, *(5,) * r, 2),
                            filters=lambda r=rank: F(*(2,) * r, 2, 3), padding="SAME",
                            **{stride: 1}, data_format=None, dilations=None),
                  roles=dict(filters="float", padding="conv_padding", data_format="data_format",
                             dilations="conv_strides_or_none", **{stride: strides_role}))
       for name, rank, stride, strides_role in [
           ("conv1d", 1, "stride", "conv_strides"), ("conv2d", 2, "strides", "conv_strides"),
           ("conv3d", 3, "strides", "conv_strides"),
           ("convolution", 2, "strides", "conv_strides_or_none")]},
    **{f"{kind}_pool{suffix}": dict(args=dict(input=lambda r=rank: F(1, *(5,) * r, 2), ksize=2,
                                              strides=1, padding="SAME", data_format=None),
                                    roles=dict(ksize="conv_strides", strides="conv_strides",
                                               padding="pool_padding",
                                               data_format="data_format"))
       for kind in ("max", "avg") for suffix, rank in (("", 2), ("1d", 1), ("2d", 2), ("3d", 3))},
    "pad": dict(args=dict(paddings=[[1, 0], [0, 2]], mode="CONSTANT", constant_values=0),
                roles=dict(paddings="paddings", mode="pad_mode", constant_values="scalar")),
    "range": dict(args=dict(start=0, limit=5, delta=1, dtype=None),
                  roles=dict(start="scalar", limit="scalar_or_none", delta="scalar",
                             dtype="dtype_or_none")),
    "shape": dict(args=dict(out_type=None), roles=dict(out_type="dtype_or_none")),
    "size": dict(args=dict(out_type=None), roles=dict(out_type="dtype_or_none")),
    "reshape": dict(args=dict(shape=[3, 2])),
    "reverse": dict(args=dict(axis=[0]), roles=dict(axis="axes")),
    "slice": dict(args=dict(begin=[0, 1], size=[2, 2]),
                  roles=dict(begin="shape", size="shape")),
    "split": dict(args=dict(num_or_size_splits=3, axis=1, num=None),
                  roles=dict(num_or_size_splits="size", num="skip")),
    "squeeze": dict(args=dict(input=lambda: F(1, 3), axis=None),
                    roles=dict(axis="axis_or_none")),
    "strided_slice": dict(args=dict(begin=[0, 0], end=[2, 3], strides=[1, 2]),
                          roles=dict(begin="slice_spec", end="slice_spec",
                                     strides="strides",
                                     begin_mask="int", end_mask="int", ellipsis_mask="int",
                                     new_axis_mask="int", shrink_axis_mask="int")),
    "tensor_scatter_nd_add": dict(args=dict(indices=lambda: np.array([[0], [1]]),
                                            updates=lambda: F(2, 3)),
                                  roles=dict(indices="indices", updates="float")),
    "tensor_scatter_nd_update": dict(args=dict(indices=lambda: np.array([[0], [1]]),
                                               updates=lambda: F(2, 3)),
                                     roles=dict(indices="indices", updates="float")),
    "tensordot": dict(args=dict(a=lambda: F(2, 3), b=lambda: F(3, 4), axes=1),
                      roles=dict(axes="tensordot_axes")),
    "tile": dict(args=dict(multiples=[2, 1]), roles=dict(multiples="shape")),
    "transpose": dict(args=dict(perm=None), roles=dict(perm="perm")),
    "unbroadcast": dict(args=dict(shape=(1, 3))),
    "unstack": dict(args=dict(num=None, axis=0), roles=dict(num="size_or_none")),
    "where": dict(args=dict(condition=lambda: F(2, 3) > 0.5, x=lambda: F(2, 3),
                            y=lambda: -F(2, 3)),
                  roles=dict(condition="mask", x="float_or_none", y="float_or_none")),
    "where_indices": dict(args=dict(condition=lambda: F(2, 3) > 0.5),
                          roles=dict(condition="float")),  # any shape, any numeric dtype
    "while_loop": dict(args=dict(cond=lambda i, s: i < 3, body=lambda i, s: (i + 1, s * 2.0),
                                 loop_vars=lambda: (vj.constant(0), vj.constant(1.0)),
                                 parallel_iterations=10, maximum_iterations=None),
                       roles=dict(loop_vars="loop_vars", maximum_iterations="size_or_none")),
    "sigmoid_cross_entropy_with_logits": dict(args=dict(labels=lambda: F(2, 3),
                                                        logits=lambda: F(2, 3))),
    "softmax_cross_entropy_with_logits": dict(args=dict(labels=lambda: F(2, 3))),
    "xlogy": dict(), "xdivy": dict(),
    "silu": dict(args=dict(beta=1.0)), "gelu": dict(args=dict(approximate=False)),
    "vectorized_map": dict(args=dict(fn=lambda x: x * 2.0, elems=lambda: F(4, 3),
                                     warn=False),
                           roles=dict(elems="float")),
    "pfor": dict(args=dict(loop_fn=lambda i: vj.cast(i, vj.float64) * 2.0, iters=4,
                           parallel_iterations=None),
                 roles=dict(iters="size")),
    "for_loop": dict(args=dict(loop_fn=lambda i: vj.cast(i, vj.float64) * 2.0, iters=4,
                               parallel_iterations=None),
                     roles=dict(iters="size")),
    "cholesky": dict(args=dict(input=lambda: SPD.copy())),
    "det": dict(args=dict(input=lambda: SPD.copy())),
    "slogdet": dict(args=dict(input=lambda: SPD.copy())),
    "logdet": dict(args=dict(matrix=lambda: SPD.copy())),
    "inv": dict(args=dict(input=lambda: SPD.copy())),
    "solve": dict(args=dict(matrix=lambda: SPD.copy(), rhs=lambda: F(3, 2))),
    "triangular_solve": dict(args=dict(matrix=lambda: LOWER.copy(), rhs=lambda: F(3, 2))),
    "diag": dict(args=dict(diagonal=lambda: F(3))),
    "diag_part": dict(args=dict(input=lambda: SPD.copy())),
    "trace": dict(args=dict(x=lambda: SPD.copy())),
    "matvec": dict(args=dict(a=lambda: F(2, 3), b=lambda: F(3))),
    "svd": dict(args=dict(tensor=lambda: SPD.copy())),
    "eigh": dict(args=dict(tensor=lambda: SPD.copy())),
    "eigvalsh": dict(args=dict(tensor=lambda: SPD.copy())),
    "eig": dict(args=dict(tensor=lambda: SPD.copy())),
    "eigvals": dict(args=dict(tensor=lambda: SPD.copy())),
    "pinv": dict(args=dict(a=lambda: F(2, 3), rcond=None), roles=dict(rcond="scalar_or_none")),
    "lstsq": dict(args=dict(matrix=lambda: SPD.copy(), rhs=lambda: F(3, 2),
                            l2_regularizer=0.0),
                  roles=dict(l2_regularizer="scalar")),
    "sort": dict(args=dict(values=lambda: F(2, 3)),
                 roles=dict(values="float", direction="direction")),
    "argsort": dict(args=dict(values=lambda: F(2, 3)),
                    roles=dict(values="float", direction="direction")),
    "searchsorted": dict(args=dict(sorted_sequence=lambda: F(2, 3), values=lambda: F(2, 3)),
                         roles=dict(sorted_sequence="float", values="float", side="side",
                                    out_type="dtype")),
    "normal": dict(args=dict(seed=1, mean=0.0, stddev=1.0), roles=dict(seed="seed")),
    "uniform": dict(args=dict(seed=1, minval=0.0, maxval=1.0),
                    roles=dict(seed="seed", maxval="scalar_or_none")),
    "adjust_contrast": dict(args=dict(images=lambda: F(2, 2, 1), contrast_factor=2.0)),
    "is_tensor": dict(args=dict(x=lambda: F(2, 3))),
    # function transforms: fuzz the transform's arguments and the call of its result
    **{n: dict(args=dict(f=lambda x: vj.reduce_sum(x * x), argnums=0, x=lambda: F(2, 3)),
               roles=dict(argnums="argnums", x="float", progress="bool", mode="jac_mode"),
               call=lambda fn, a, va: fn(**{k: v for k, v in a.items() if k != "x"})(a["x"]))
       for n in ("grad", "value_and_grad", "jacobian", "jacrev", "jacfwd", "hessian")},
    "set_memory_budget": dict(args=dict(nbytes=None), roles=dict(nbytes="memory_budget"),
                              call=lambda fn, a, va: (fn(**a), fn(None))[0]),
    "set_conversion_policy": dict(args=dict(policy="warn"),
                                  roles=dict(policy="conversion_policy")),
    "conversion_policy": dict(args=dict(policy="warn"), roles=dict(policy="conversion_policy"),
                              call=lambda fn, a, va: fn(**a).__enter__()),
    "jvp": dict(args=dict(f=lambda x: x * x, primals=lambda: (F(2, 3),),
                          tangents=lambda: (F(2, 3),), has_aux=False),
                roles=dict(primals="primals", tangents="primals")),
    "linearize": dict(args=dict(f=lambda x: x * x), varargs=lambda: [F(2, 3)],
                      call=lambda fn, a, va: fn(a["f"], *va)[1](*[np.ones(np.shape(v)) for v in va])),
    "batch_jacobian": dict(args=dict(f=lambda x: x * x, argnums=0, x=lambda: F(2, 3)),
                           roles=dict(argnums="argnums", x="float", progress="bool"),
                           call=lambda fn, a, va: fn(**{k: v for k, v in a.items()
                                                        if k != "x"})(a["x"])),
    "hvp": dict(args=dict(f=lambda x: vj.reduce_sum(x * x * x), x=lambda: F(2, 3),
                          v=lambda: F(2, 3)),
                roles=dict(v="float")),
    "vjp": dict(args=dict(f=lambda x: x * x, has_aux=False), varargs=lambda: [F(2, 3)],
                call=lambda fn, a, va: _pull(fn(a["f"], *va, has_aux=a["has_aux"]))),
    "function": dict(args=dict(f=lambda x: vj.reduce_sum(x * x), x=lambda: F(2, 3)),
                     roles=dict(input_signature="input_signature", reduce_retracing="bool",
                                x="float"),
                     call=lambda fn, a, va: fn(**{k: v for k, v in a.items()
                                                  if k != "x"})(a["x"])),
    "flat_hessian": dict(make=lambda: _quadratic(), roles=dict(loss_fn="callable",
                                                                variables="variables")),
    "roll": dict(args=dict(input=lambda: F(3, 4), shift=1, axis=0),
                 roles=dict(shift="int", axis="axis")),
    # sparsity: the traced function's arguments are varargs; the prepared functions are
    # fuzzed at construction and at their call (argument x, a 1-D float vector)
    "jacobian_sparsity": dict(args=dict(f=lambda x: x * x, argnums=0),
                              varargs=lambda: [F(4)], roles=dict(argnums="argnums")),
    "hessian_sparsity": dict(args=dict(f=lambda x: vj.reduce_sum(x * x * x), argnums=0),
                             varargs=lambda: [F(4)], roles=dict(argnums="argnums")),
    "sparse_jacobian": dict(args=dict(f=lambda x: x * x, argnums=0, mode="auto",
                                      x=lambda: F(4)),
                            roles=dict(argnums="argnums", x="float", mode="jac_mode",
                                       sparsity="skip"),
                            call=lambda fn, a, va: fn(**{k: v for k, v in a.items()
                                                         if k != "x"})(a["x"])),
    "sparse_hessian": dict(args=dict(f=lambda x: vj.reduce_sum(x * x * x), argnums=0,
                                     x=lambda: F(4)),
                           roles=dict(argnums="argnums", x="float", sparsity="skip"),
                           call=lambda fn, a, va: fn(**{k: v for k, v in a.items()
                                                        if k != "x"})(a["x"])),
    "unflatten_like": dict(make=lambda: {"variables": _quadratic()["variables"]},
                           roles=dict(variables="variables"),
                           call=lambda fn, a, va: fn(**a)(np.arange(3.0))),
    "newton_step": dict(make=lambda: _quadratic(), roles=dict(
        loss_fn="callable", variables="variables", damping="scalar",
        method="newton_method", cg_tol="scalar", cg_max_iters="size_or_none",
        sparse="bool")),
}


# vj.scipy: SciPy's argument names. Values are checked against SciPy itself (ORACLES).
PARAM_ROLES.update({
    **dict.fromkeys(["z", "v", "df", "k", "mu", "loc", "scale", "A", "q", "in1", "in2",
                     "cov"], "float"),
    **dict.fromkeys(["return_sign", "unit_diagonal", "overwrite_b", "check_finite",
                     "allow_singular", "disp"], "bool"),
    "blocksize": "skip"})
CHOL = np.linalg.cholesky(SPD)
SIMPLEX = np.array([[0.2, 0.5], [0.3, 0.25], [0.5, 0.25]])  # two points, along axis 0
SPECS.update({
    "vj.scipy.special.polygamma": dict(args=dict(n=1), roles=dict(n="float")),
    "vj.scipy.special.multigammaln": dict(args=dict(a=lambda: F(2, 3, lo=0.6, hi=2.0), d=2),
                                          roles=dict(d="int")),
    "vj.scipy.special.logsumexp": dict(roles=dict(b="float_or_none", axis="axis_or_none")),
    **{f"vj.scipy.stats.poisson.{m}": dict(args=dict(k=lambda: np.arange(6.0).reshape(2, 3)))
       for m in ("logpmf", "pmf", "cdf", "logcdf")},
    **{f"vj.scipy.stats.multivariate_normal.{m}": dict(
        args=dict(x=lambda: F(2, 3), mean=lambda: F(3), cov=lambda: SPD.copy()),
        roles=dict(mean="float_or_none")) for m in ("logpdf", "pdf")},
    "vj.scipy.stats.multivariate_normal.entropy": dict(
        args=dict(mean=lambda: F(3), cov=lambda: SPD.copy()), roles=dict(mean="float_or_none")),
    # the CDF in two dimensions, where SciPy's value is exact (above: quasi-Monte Carlo,
    # equal to the oracle only to about abseps); lower_limit raises NotImplementedError
    # (tests/api/scipy/test_stats.py)
    **{f"vj.scipy.stats.multivariate_normal.{m}": dict(
        args=dict(x=lambda: F(2, 2), mean=lambda: F(2), cov=lambda: SPD[:2, :2].copy()),
        roles=dict(mean="float_or_none", maxpts="skip", abseps="skip", releps="skip",
                   lower_limit="skip", rng="skip"))
       for m in ("cdf", "logcdf")},
    **{f"vj.scipy.stats.dirichlet.{m}": dict(
        args=dict(x=lambda: SIMPLEX.copy(), alpha=lambda: F(3, lo=0.5, hi=2.0)),
        roles=dict(alpha="float")) for m in ("logpdf", "pdf")},
    "vj.scipy.linalg.solve_triangular": dict(args=dict(a=lambda: LOWER.copy(),
                                                       b=lambda: F(3, 2), lower=True),
                                             roles=dict(trans="trans")),
    "vj.scipy.linalg.cho_solve": dict(args=dict(c_and_lower=lambda: (CHOL.copy(), True),
                                                b=lambda: F(3, 2)),
                                      roles=dict(c_and_lower="cho_factor")),
    "vj.scipy.linalg.solve_banded": dict(args=dict(l_and_u=(1, 1), ab=lambda: BAND.copy(),
                                                   b=lambda: F(3, 2)),
                                         roles=dict(l_and_u="band_shape", ab="float")),
    "vj.scipy.linalg.expm": dict(args=dict(A=lambda: SPD / 4)),
    "vj.scipy.integrate.odeint": dict(
        args=dict(func=lambda y, s: -y, y0=lambda: F(2), t=lambda: F(3)),
        roles=dict(func="callable", y0="float", t="float", args="skip", tfirst="bool",
                   adjoint="ode_adjoint", checkpoints="ode_checkpoints",
                   **dict.fromkeys(["Dfun", "col_deriv", "full_output", "ml", "mu", "rtol",
                                    "atol", "tcrit", "h0", "hmax", "hmin", "ixpr", "mxstep",
                                    "mxhnil", "mxordn", "mxords", "printmessg"], "skip"))),
    "vj.scipy.linalg.sqrtm": dict(args=dict(A=lambda: SPD.copy())),
    "vj.scipy.linalg.solve_sylvester": dict(args=dict(a=lambda: SPD.copy(),
                                                      b=lambda: F(2, 2) + 2 * np.eye(2),
                                                      q=lambda: F(3, 2))),
    "vj.scipy.signal.convolve": dict(args=dict(in2=lambda: F(2, 2)),
                                     roles=dict(mode="conv_mode", method="conv_method")),
})


# vj.math's TF names from vecjac/_src/composites/tf_math.py and segment_ops.py
SEG_IDS = lambda: np.array([0, 1])  # noqa: E731
SPECS.update({
    **{n: dict(roles=dict(inputs="tensor_list", shape="shape_or_none",
                          tensor_dtype="dtype_or_none"),
               args=dict(inputs=lambda: [F(2, 3), F(2, 3)]))
       for n in ("add_n", "accumulate_n")},
    "bincount": dict(args=dict(arr=lambda: np.array([0, 1, 1, 3])),
                     roles=dict(arr="bincount_arr", weights="float_or_none")),
    "in_top_k": dict(args=dict(targets=lambda: np.array([0, 2]), predictions=lambda: F(2, 3),
                               k=1),
                     roles=dict(targets="class_ids", predictions="float", k="int")),
    "invert_permutation": dict(args=dict(x=lambda: np.array([2, 0, 1])),
                               roles=dict(x="permutation")),
    "polyval": dict(args=dict(coeffs=lambda: [1.0, F(2, 3), 0.5]), roles=dict(coeffs="coeffs")),
    "scalar_mul": dict(args=dict(scalar=0.5), roles=dict(scalar="scalar")),
    "top_k": dict(args=dict(k=2), roles=dict(k="int")),
    **{f"unsorted_segment_{n}": dict(args=dict(data=lambda: F(2, 3), segment_ids=SEG_IDS,
                                               num_segments=2),
                                     roles=dict(data="float", segment_ids="indices",
                                                num_segments="size"))
       for n in ("sum", "mean", "sqrt_n", "max", "min", "prod")},
    **{f"segment_{n}": dict(args=dict(data=lambda: F(2, 3), segment_ids=SEG_IDS),
                            roles=dict(data="float", segment_ids="indices"))
       for n in ("sum", "mean", "max", "min", "prod")},
})

# sparse_softmax_cross_entropy_with_logits (vecjac/_src/composites/sparse_xent.py) and the sparse
# segment reductions (vecjac/_src/composites/sparse_segment.py)
SPECS.update({
    "sparse_softmax_cross_entropy_with_logits": dict(
        args=dict(labels=lambda: np.array([0, 2]), logits=lambda: F(2, 3)),
        roles=dict(labels="class_ids")),
    **{f"sparse_segment_{n}": dict(args=dict(data=lambda: F(3, 2),
                                             indices=lambda: np.array([0, 2]),
                                             segment_ids=SEG_IDS, num_segments=None),
                                   roles=dict(data="float", indices="indices",
                                              segment_ids="indices",
                                              num_segments="size_or_none"))
       for n in ("sum", "mean", "sqrt_n")},
})

# vj.nn.depthwise_conv2d / fused_batch_norm (vecjac/_src/composites/nn_layers.py). fused_batch_norm
# is fuzzed in inference, where mean and variance are required and checked (in training
# with exponential_avg_factor 1 they are ignored, as TF's kernel ignores them)
SPECS.update({
    "depthwise_conv2d": dict(args=dict(input=lambda: F(1, 5, 5, 2),
                                       filter=lambda: F(2, 2, 2, 3),
                                       strides=[1, 1, 1, 1], padding="SAME", data_format=None,
                                       dilations=None),
                             roles=dict(filter="float", strides="conv_strides",
                                        padding="conv_padding", data_format="data_format",
                                        dilations="conv_strides_or_none")),
    "fused_batch_norm": dict(args=dict(x=lambda: F(2, 2, 2, 3), scale=lambda: F(3),
                                       offset=lambda: F(3), mean=lambda: F(3),
                                       variance=lambda: F(3), epsilon=0.001,
                                       data_format="NHWC", is_training=False,
                                       exponential_avg_factor=1.0),
                             roles=dict(scale="float", offset="float", mean="float",
                                        variance="float", data_format="data_format",
                                        is_training="bool", exponential_avg_factor="scalar")),
})

# tensor_diag / set_diag (vecjac/_src/composites/diag.py) and the space / batch / depth moves
# (vecjac/_src/composites/space.py)
SPECS.update({
    "tensor_diag_part": dict(args=dict(input=lambda: F(2, 3, 2, 3))),
    "set_diag": dict(args=dict(input=lambda: F(2, 3), diagonal=lambda: F(2), k=0),
                     roles=dict(k="int", align="skip")),
    **{n: dict(args=dict(input=lambda shape=shape: F(*shape), block_size=2,
                         data_format="NHWC"),
               roles=dict(block_size="int", data_format="data_format"))
       for n, shape in (("space_to_depth", (1, 4, 4, 2)), ("depth_to_space", (1, 2, 2, 8)))},
    **{n: dict(args=dict(input=lambda: F(1, 3, 4, 2), block_shape=[2, 2],
                         paddings=[[1, 0], [0, 2]]),
               roles=dict(block_shape="shape", paddings="paddings"))
       for n in ("space_to_batch_nd", "space_to_batch")},
    "batch_to_space": dict(args=dict(input=lambda: F(4, 2, 3, 1), block_shape=[2, 2],
                                     crops=[[1, 0], [0, 2]]),
                           roles=dict(block_shape="shape", crops="paddings")),
})

# the FFTs: TF's names (vj.signal) and SciPy's (vj.scipy.fft)
_FFT_ROLES = dict(fft_length="fft_length", norm="fft_norm", n="size_or_none",
                  s="shape_or_none", axes="axes_or_none", overwrite_x="skip", workers="skip",
                  plan="skip", xp="skip", device="skip", d="scalar")
SPECS.update({
    **{f"vj.signal.{n}": dict(roles=_FFT_ROLES) for n in vj.signal.__all__},
    **{f"vj.signal.{n}": dict(args=dict(input=lambda: F(2, 2, 3)), roles=_FFT_ROLES)
       for n in ("fft3d", "ifft3d")},
    **{f"vj.signal.{n}": dict(args=dict(input_tensor=lambda: F(2, 2, 3)), roles=_FFT_ROLES)
       for n in ("rfft3d", "irfft3d")},
    **{f"vj.signal.{n}": dict(roles=dict(_FFT_ROLES, axes="shift_axes"))
       for n in ("fftshift", "ifftshift")},
    **{f"vj.scipy.fft.{n}": dict(roles=_FFT_ROLES) for n in vj.scipy.fft.__all__},
    **{f"vj.scipy.fft.{n}": dict(roles=dict(_FFT_ROLES, axes="shift_axes"))
       for n in ("fftshift", "ifftshift")},
    **{f"vj.scipy.fft.{n}": dict(args=dict(n=4), roles=dict(_FFT_ROLES, n="size"))
       for n in ("fftfreq", "rfftfreq")},
})


def _pull(out):
    y, pull = out
    return y, pull(vj.ones_like(y))


def _quadratic():
    v = vj.Variable(F(3))
    return dict(loss_fn=lambda: vj.reduce_sum((v - 1.0) ** 2 * (v + 2.0)), variables=[v])


def spec_of(qualname):
    """The SPECS entry of a function: by qualified name, else by short name."""
    return SPECS.get(qualname) or SPECS.get(qualname.rsplit(".", 1)[-1], {})


def base_call(fn_name, fn):
    """(args dict, varargs list, roles dict) of a valid call of fn."""
    spec = spec_of(fn_name)
    given_args, roles = dict(spec.get("args", {})), dict(spec.get("roles", {}))
    made = spec["make"]() if "make" in spec else {}  # related values, made together
    given_args.update({k: (lambda v=v: v) for k, v in made.items()})
    args, varargs = {}, list(spec["varargs"]()) if "varargs" in spec else []
    params = list(inspect.signature(fn).parameters.values())
    names = {p.name for p in params}
    # pseudo-arguments of a `call` hook (the argument of a transform's result)
    params += [inspect.Parameter(k, inspect.Parameter.KEYWORD_ONLY) for k in given_args
               if k not in names]
    for p in params:
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) or p.name.startswith("_"):
            continue
        role = roles.get(p.name) or PARAM_ROLES.get(p.name)
        if role is None:
            if p.default is not p.empty:
                role = "skip"   # an option that we do not know how to fuzz: leave default
            else:
                raise LookupError(f"{fn_name}: no role for argument {p.name!r}; add it to "
                                  "SPECS or PARAM_ROLES in tests/test_bad_inputs.py")
        roles[p.name] = role
        if p.name in given_args:
            v = given_args[p.name]
            is_value = role != "callable" or p.name in made
            args[p.name] = v() if callable(v) and is_value else v
        elif p.default is not p.empty:
            continue
        elif role in ROLE_DEFAULTS:
            args[p.name] = ROLE_DEFAULTS[role]()
        else:
            raise LookupError(f"{fn_name}: no valid default for {p.name!r} (role {role})")
    return args, varargs, roles


# -- bad values per role: (label, value, must_raise) ------------------------------------------
class Opaque:
    """An arbitrary object that is not a tensor, a number or a sequence."""


def _nan(shape=(2, 3)):
    a = F(*shape)
    a.reshape(-1)[0] = np.nan
    return a


def _inf(shape=(2, 3)):
    a = F(*shape)
    a.reshape(-1)[-1] = np.inf
    a.reshape(-1)[0] = -np.inf
    return a


NON_TENSORS = [("dict", {"a": 1.0}, True), ("empty dict", {}, True),
               ("object", Opaque(), True), ("string", "abc", True), ("bytes", b"ab", True),
               ("lambda", lambda: 1.0, True), ("ragged list", [[1.0, 2.0], [3.0]], True),
               ("list with None", [None, 1.0], True), ("set", {1.0}, True),
               ("object array", np.array([1.0, "a"], dtype=object), True),
               ("object array of floats", np.array([[1.0, 2.0]], dtype=object), True),
               ("string array", np.array(["a", "b"]), True),
               ("datetime array", np.array(["2020-01-01"], dtype="datetime64[D]"), True)]
NONE_BAD = [("None", None, True)]
WRONG_DTYPES = [("int array", np.arange(6).reshape(2, 3), False),
                ("bool array", np.ones((2, 3), bool), False),
                ("complex array", F(2, 3) + 1j, False),
                ("uint8 array", np.arange(6, dtype=np.uint8).reshape(2, 3), False),
                ("float32 array", F(2, 3).astype(np.float32), False),
                ("float16 array", F(2, 3).astype(np.float16), False)]
IEEE = [("NaN", _nan(), False), ("Inf", _inf(), False), ("NaN scalar", float("nan"), False)]
EMPTY = [("empty (0,)", np.zeros(0), False), ("empty (0, 3)", np.zeros((0, 3)), False),
         ("empty (2, 0)", np.zeros((2, 0)), False), ("empty list", [], False)]
WRONG_SHAPES = [("scalar", 0.7, False), ("rank 1", F(3), False), ("shape (3, 2)", F(3, 2), False),
                ("rank 3", F(2, 3, 1), False), ("rank 4", F(1, 2, 3, 1), False),
                ("shape (4,)", F(4), False), ("shape (5, 5)", F(5, 5), False)]
TENSOR_BAD = NON_TENSORS + WRONG_DTYPES + IEEE + EMPTY + WRONG_SHAPES
AXIS_BAD = [("axis 5", 5, True), ("axis -5", -5, True), ("float axis", 1.5, True),
            ("string axis", "0", True), ("bool axis", True, True), ("dict axis", {}, True),
            ("object axis", Opaque(), True), ("huge axis", 2 ** 70, True),
            ("float array axis", np.array([0.0]), True), ("axis list [5]", [5], True),
            ("axis [0, 0]", [0, 0], True)]
SHAPE_BAD = [("negative dim", [-2, 3], True), ("float dims", [2.5, 3], True),
             ("string shape", "ab", True), ("nested shape", [[2, 3]], True),
             ("dict shape", {}, True), ("object shape", Opaque(), True),
             ("string dim", [2, "a"], True), ("float array shape", np.array([2.0, 3.0]), True),
             ("wrong size", [4, 5], False), ("empty shape", [], False), ("zero dim", [0, 3], False)]
DTYPE_BAD = [("unknown dtype", "nonsense", True), ("object dtype", object, True),
             ("string dtype", np.dtype("U3"), True), ("int as dtype", 3, True),
             ("dict dtype", {}, True), ("datetime dtype", np.dtype("datetime64[D]"), True),
             ("int32", vj.int32, False), ("bool", vj.bool, False),
             ("complex", vj.complex128, False),
             ("float16", vj.float16, False)]
BOOL_BAD = [("string bool", "yes", True), ("dict bool", {}, True), ("object bool", Opaque(), True),
            ("array bool", np.array([True, False]), True), ("int 1", 1, False),
            ("numpy bool", np.bool_(True), False)]
SCALAR_BAD = [("string", "abc", True), ("dict", {}, True), ("object", Opaque(), True),
              ("lambda", lambda: 1.0, True), ("string array", np.array(["a"]), True),
              ("NaN", float("nan"), False), ("Inf", float("inf"), False),
              ("complex", 1 + 2j, False),
              ("int", 2, False), ("bool", True, False), ("vector", F(3), False),
              ("matrix", F(2, 3), False), ("empty", np.zeros(0), False)]
COUNT_BAD = [("zero", 0, True), ("negative", -1, True), ("float", 1.5, True),
             ("string", "4", True), ("dict", {}, True), ("bool", True, True)]
SIZE_BAD = COUNT_BAD[1:] + [("zero", 0, False), ("array", np.array([2, 3]), False),
                            ("float array", np.array(2.0), True)]
INT_BAD = [("float", 1.5, True), ("string", "1", True), ("dict", {}, True),
           ("big", 7, False), ("negative", -1, False), ("object", Opaque(), True)]
CALLABLE_BAD = [("int", 3, True), ("string", "f", True), ("dict", {}, True),
                ("returns string", lambda *a: "abc", False),
                ("returns dict", lambda *a: {"a": Opaque()}, False),
                ("returns object", lambda *a: Opaque(), False),
                ("wrong arity", lambda: vj.constant(1.0), False)]
INDICES_BAD = [("float indices", np.array([0.0, 1.0]), True),
               ("out of range", np.array([7, 0]), True),
               ("negative out of range", np.array([-9]), True),
               ("string indices", np.array(["a"]), True),
               ("bool indices", np.array([True, False]), False),
               ("negative", np.array([-1]), False), ("empty", np.zeros(0, np.int64), False),
               ("rank 3", np.zeros((1, 1, 2), np.int64), False),
               ("scalar", 1, False), ("int32", np.array([0, 1], np.int32), False),
               ("complex", np.array([1j]), True)]
MASK_BAD = [("float mask", F(2, 3), False), ("wrong shape mask", np.ones(5, bool), True),
            ("int mask", np.array([1, 0]), False), ("string mask", np.array(["a"]), True),
            ("empty mask", np.zeros(0, bool), False), ("scalar mask", True, False)]
TENSOR_LIST_BAD = [("empty list", [], True), ("mismatched", [F(2, 3), F(3, 4)], True),
                   ("mixed rank", [F(2, 3), F(3)], True), ("with None", [F(2, 3), None], True),
                   ("with string", [F(2, 3), "a"], True),
                   ("dtype mix", [F(2, 3), np.ones((2, 3), int)], False),
                   ("single array", F(2, 3), False), ("tuple", (F(2, 3), F(2, 3)), False)]
EQUATION_BAD = [("unknown output label", "ij,jk->il", True), ("too few operands", "ij->ij", True),
                ("bad chars", "i$,jk->ik", True), ("rank mismatch", "ijk,jk->ik", True),
                ("empty", "", True), ("dim mismatch", "ij,ik->jk", True), ("int", 3, True)]
KEY_BAD = [("out of range", (5,), False), ("too many indices", (0, 0, 0), True),
           ("string key", "a", True), ("float key", 1.5, True), ("dict key", {}, True),
           ("object key", Opaque(), True), ("float array key", np.array([0.5]), True),
           ("new axis", None, False), ("ellipsis", (Ellipsis, 0), False),
           ("bool mask", np.array([True, False]), False),
           ("two ellipses", (Ellipsis, Ellipsis), True)]
ROLE_BAD = {
    "float": TENSOR_BAD + NONE_BAD, "float_or_none": TENSOR_BAD,
    "axis": AXIS_BAD + [("axis None", None, False)], "axis_or_none": AXIS_BAD,
    "axes": AXIS_BAD + NONE_BAD, "axes_or_none": AXIS_BAD,
    "shape": SHAPE_BAD + NONE_BAD, "shape_or_none": SHAPE_BAD,
    "dtype": DTYPE_BAD + [("None", None, False)], "dtype_or_none": DTYPE_BAD,
    "bool": BOOL_BAD + [("None", None, False)], "bool_or_none": BOOL_BAD,
    "scalar": SCALAR_BAD + NONE_BAD, "scalar_or_none": SCALAR_BAD,
    "count": COUNT_BAD, "size": SIZE_BAD + NONE_BAD, "size_or_none": SIZE_BAD,
    "int": INT_BAD + NONE_BAD, "callable": CALLABLE_BAD + NONE_BAD,
    "indices": INDICES_BAD + NON_TENSORS + NONE_BAD,
    "mask": MASK_BAD + NON_TENSORS + NONE_BAD,
    "tensor_list": TENSOR_LIST_BAD + NONE_BAD + [
        (label, v, True) for label, v, _ in NON_TENSORS if label not in ("ragged list",)],
    "tensors": [(label, v, label not in ("mismatched", "mixed rank", "dtype mix", "tuple"))
                for label, v, _ in TENSOR_LIST_BAD] + NONE_BAD + [
        (label, v, True) for label, v, _ in NON_TENSORS if label not in ("ragged list",)],
    "equation": EQUATION_BAD + NONE_BAD, "key": KEY_BAD,
    "ord": [("unknown ord", "nonsense", True), ("ord 0", 0, False), ("negative", -2, False),
            ("dict", {}, True), ("float", 1.5, False), ("inf", np.inf, False)],
    "pad_mode": [("unknown mode", "bogus", True), ("int mode", 3, True), ("None", None, True),
                 ("lowercase", "reflect", False)],
    "direction": [("unknown", "UP", True), ("lowercase", "ascending", True), ("int", 1, True),
                  ("None", None, True), ("dict", {}, True)],
    "side": [("unknown", "middle", True), ("upper case", "LEFT", True), ("int", 0, True),
             ("None", None, True)],
    "paddings": [("wrong rank", [[1, 0]], True), ("negative", [[-1, 0], [0, 0]], True),
                 ("float", [[1.5, 0], [0, 0]], True), ("string", "a", True),
                 ("None", None, True), ("3 columns", [[1, 0, 0], [0, 0, 0]], True)],
    "perm": [("repeated", [0, 0], True), ("too short", [0], True), ("out of range", [0, 5], True),
             ("string", "ab", True), ("float", [0.0, 1.0], True), ("dict", {}, True)],
    "tensordot_axes": [("too many", 5, True), ("negative", -1, True),
                       ("mismatch", [[0], [0]], True),
                       ("string", "a", True), ("None", None, True), ("float", 1.5, True),
                       ("out of range pair", [[7], [0]], True)],
    "seed": [("string seed", "abc", True), ("float seed", 1.5, True), ("dict seed", {}, True),
             ("negative seed", -1, False), ("None", None, False)],
    "slice_spec": [("negative", [-1, 0], False), ("too long", [0, 0, 0], False),
                   ("float", [0.5, 0], True), ("string", "ab", True), ("None", None, True),
                   ("dict", {}, True), ("nested", [[0, 0]], True), ("huge", [10 ** 6, 0], False)],
    "conv_strides": [("zero", 0, True), ("negative", -1, True), ("float", 1.5, True),
                     ("string", "ab", True), ("None", None, True), ("dict", {}, True),
                     ("bool", True, True), ("six ints", [1] * 6, True), ("empty", [], True)],
    "conv_strides_or_none": [("zero", 0, True), ("float", 1.5, True), ("string", "ab", True),
                             ("six ints", [1] * 6, True)],
    "conv_padding": [("unknown", "FULL", True), ("int", 3, True), ("None", None, True),
                     ("one pair", [[1, 1]], True), ("dict", {}, True),
                     ("lowercase", "same", False)],
    "pool_padding": [("unknown", "FULL", True), ("int", 3, True), ("None", None, True),
                     ("explicit pairs", [[0, 0]] * 4, True), ("lowercase", "valid", False)],
    "data_format": [("unknown", "NXYZ", True), ("int", 1, True), ("dict", {}, True),
                    ("None (the default)", None, False)],
    "strides": [("zero stride", [1, 0], True), ("negative", [-1, 1], False),
                ("float", [1.5, 1], True), ("string", "ab", True), ("None", None, False),
                ("wrong length", [1, 1, 1], True), ("dict", {}, True)],
    "onehot_indices": [("out of range", np.array([7, 0]), False),
                       ("negative", np.array([-1]), False), ("float", np.array([0.0, 1.0]), True),
                       ("complex", np.array([1j]), True), ("string", np.array(["a"]), True),
                       ("empty", np.zeros(0, np.int64), False)] + NON_TENSORS + NONE_BAD,
    "argnums": [("out of range", 5, True), ("negative out of range", -5, True),
                ("float", 1.5, True), ("string", "0", True), ("repeated", (0, 0), True),
                ("None", None, True), ("dict", {}, True), ("tuple", (0,), False)],
    "variables": [("None", None, True), ("string", "v", True), ("empty", [], True),
                  ("tensor", [vj.constant(F(3))], False), ("object", [Opaque()], True),
                  ("dict", {}, True), ("int variable", [vj.Variable(np.arange(3))], True)],
    "input_signature": [("string", "x", True), ("a spec, not a list", vj.TensorSpec(None), True),
                        ("list of ints", [3], True), ("dict", {}, True),
                        ("wrong shape", [vj.TensorSpec([5])], True),
                        ("wrong dtype", [vj.TensorSpec(None, vj.float32)], True),
                        ("two specs", [vj.TensorSpec(None)] * 2, True),
                        ("nested spec", [[vj.TensorSpec(None)]], True),
                        ("any shape", [vj.TensorSpec(None)], False), ("None", None, False)],
    "newton_method": [("unknown", "bogus", True), ("int", 3, True), ("None", None, True)],
    "memory_budget": [("negative", -1, True), ("zero", 0, True), ("float", 1.5, True),
                      ("string", "1GB", True), ("bool", True, True), ("huge", 2 ** 40, False)],
    "conversion_policy": [("unknown", "loudly", True), ("int", 1, True), ("None", None, True),
                          ("upper case", "WARN", True)],
    "jac_mode": [("unknown", "sideways", True), ("int", 3, True), ("None", None, True),
                 ("upper case", "FWD", True)],
    "primals": [("not a tuple", F(2, 3), True), ("empty", (), True), ("two", (F(2, 3), F(2, 3)), True),
                ("wrong shape", (F(3, 2),), True), ("int", (np.ones((2, 3), int),), True),
                ("complex", (F(2, 3) + 1j,), True), ("None", None, True),
                ("string", ("abc",), True), ("list", [F(2, 3)], False)],
    "loop_vars": [("None", None, True), ("string", "a", True), ("empty", [], True),
                  ("object", Opaque(), True)],
    "pred": [("string pred", "yes", True), ("vector pred", np.array([True, False]), True),
             ("None", None, True), ("object", Opaque(), True), ("float pred", 0.5, False),
             ("NaN pred", float("nan"), False)],
}


ROLE_BAD.update({
    "trans": [("unknown", 3, True), ("letter", "X", True), ("None", None, True),
              ("float", 1.5, True), ("bool", True, True), ("T", "T", False), ("2", 2, False)],
    "band_shape": [("negative", (1, -1), True), ("three items", (1, 1, 1), True),
                   ("None", None, True), ("float", (1.0, 1), True), ("bool", (True, 1), True),
                   ("rows do not match", (0, 1), True), ("list", [1, 1], False)],
    "cho_factor": [("not a pair", LOWER, True), ("None", None, True),
                   ("three items", (CHOL, True, 1), True), ("lower string", (CHOL, "yes"), True),
                   ("non-square", (F(2, 3), True), True), ("NaN", (_nan((3, 3)), True), True),
                   ("zero diagonal", (np.zeros((3, 3)), True), True),
                   ("list", [CHOL, True], False), ("upper", (CHOL.T.copy(), False), False),
                   ("int", (np.eye(3, dtype=int), True), False)],
    "conv_mode": [("unknown", "circular", True), ("int", 1, True), ("None", None, True),
                  ("upper case", "FULL", True), ("valid", "valid", False),
                  ("same", "same", False)],
    "conv_method": [("unknown", "winograd", True), ("int", 0, True), ("None", None, True),
                    ("fft", "fft", False), ("direct", "direct", False)],
})
ROLE_BAD.update({
    "fft_length": [("zero", [0], True), ("negative", [-2], True), ("float", [2.5], True),
                   ("string", "ab", True), ("dict", {}, True), ("object", Opaque(), True),
                   ("bool", [True], True), ("too many", [2, 2, 2, 2], True),
                   ("one", [4], False), ("int", 4, False), ("array", np.array([3]), False),
                   ("None", None, False)],
    "fft_norm": [("unknown", "bogus", True), ("upper case", "ORTHO", True), ("int", 1, True),
                 ("dict", {}, True), ("ortho", "ortho", False), ("forward", "forward", False),
                 ("None", None, False)],
    "shift_axes": [entry for entry in AXIS_BAD if entry[0] != "axis [0, 0]"] +
                  [("None", None, False), ("repeated", [0, 0], False)],
})
# vj.math.bincount / invert_permutation / polyval arguments
ROLE_BAD.update({
    "bincount_arr": [("float", F(3), True), ("negative", np.array([-1, 2]), True),
                     ("string", np.array(["a"]), True), ("empty", np.zeros(0, np.int64), False),
                     ("2-d", np.zeros((2, 2), np.int64), False)] + NONE_BAD,
    "permutation": [("repeated", np.array([0, 0, 1]), True), ("out of range", np.array([0, 3]), True),
                    ("float", F(3), True), ("2-d", np.zeros((2, 2), np.int64), True),
                    ("string", np.array(["a"]), True), ("empty", np.zeros(0, np.int64), False)]
    + NONE_BAD,
    # in_top_k: an out-of-range target is simply not in the top k (TF)
    "class_ids": [("float ids", np.array([0.0, 1.0]), True), ("out of range", np.array([7, 0]), False),
                  ("string ids", np.array(["a"]), True), ("wrong length", np.array([0]), True),
                  ("negative", np.array([-1, 0]), False)] + NON_TENSORS + NONE_BAD,
    "coeffs": [("not a list", F(3), True), ("with string", [1.0, "a"], True),
               ("with None", [1.0, None], True), ("empty", [], False)] + NONE_BAD,
})

# vj.math.approximate_equal / bucketize (vecjac/_src/composites/tf_math.py; cross needs no spec:
# two F(2, 3) are valid) and vj.debugging.check_numerics (vecjac/_src/ops/elementwise/debugging.py)
SPECS.update({
    "approximate_equal": dict(args=dict(tolerance=1e-5), roles=dict(tolerance="scalar")),
    "bucketize": dict(args=dict(boundaries=[0.3, 0.5, 0.5, 0.8]),
                      roles=dict(boundaries="boundaries")),
    "check_numerics": dict(args=dict(message="m"), roles=dict(message="message")),
})
ROLE_BAD.update({
    "boundaries": [("unsorted", [0.8, 0.3], True), ("NaN", [0.3, float("nan")], True),
                   ("array, not a list", np.array([0.3, 0.8]), True), ("string", "ab", True),
                   ("with string", [0.3, "a"], True), ("with None", [0.3, None], True),
                   ("nested", [[0.3]], True), ("bool", [True], True), ("empty", [], False),
                   ("ints", [0, 1], False), ("tuple", (0.3, 0.8), False),
                   ("repeated", [0.5, 0.5], False), ("infinite", [-np.inf, np.inf], False)]
    + NONE_BAD,
    "message": [("int", 3, True), ("bytes", b"m", True), ("list", ["m"], True),
                ("empty", "", False)] + NONE_BAD,
})

# vj.scan / foldl / foldr (vecjac/_src/composites/scan.py) and vj.switch_case
# (vecjac/_src/composites/control_flow.py). fn returns its slice: valid for elems of any dtype and
# shape, so every error comes from the function's own checks. Only initializers rejected
# before fn runs are catalogued: one fn rejects afterwards has recorded ops already.
_BRANCH = lambda: vj.constant(1.0)  # noqa: E731
SPECS.update({
    **{n: dict(args=dict(fn=lambda a, x: x, elems=lambda: F(4, 3), initializer=None),
               roles=dict(elems="float", initializer="initializer", infer_shape="bool"))
       for n in ("scan", "foldl", "foldr")},
    "switch_case": dict(args=dict(branch_index=1, branch_fns=[_BRANCH, lambda: vj.constant(2.0)],
                                  default=None),
                        roles=dict(branch_index="branch_index", branch_fns="branch_fns",
                                   default="callable_or_none")),
})
ROLE_BAD.update({
    "initializer": [("string", "a", True), ("object", Opaque(), True),
                    ("with None", [F(3), None], True), ("empty list", [], True),
                    ("empty dict", {}, True), ("string array", np.array(["a"]), True),
                    ("lambda", lambda: 1.0, True), ("slice-shaped", F(3), False)],
    "branch_index": [("float", 1.5, True), ("string", "1", True), ("bool", True, True),
                     ("vector", np.array([0, 1]), True), ("float array", np.array(1.0), True),
                     ("dict", {}, True), ("object", Opaque(), True),
                     ("out of range", 7, False), ("negative", -1, False),
                     ("int32 array", np.array(0, np.int32), False)] + NONE_BAD,
    "branch_fns": [("empty", [], True), ("not callable", [1, 2], True),
                   ("duplicate keys", [(0, _BRANCH), (0, _BRANCH)], True),
                   ("gap in keys", {0: _BRANCH, 2: _BRANCH}, True),
                   ("string key", {"a": _BRANCH}, True), ("mixed", [_BRANCH, (1, _BRANCH)], True),
                   ("string", "ab", True), ("one branch", [_BRANCH], False),
                   ("pairs", [(1, _BRANCH), (0, _BRANCH)], False),
                   ("dict", {1: _BRANCH, 0: _BRANCH}, False)] + NONE_BAD,
    "callable_or_none": CALLABLE_BAD,
})


# -- NumPy oracles: a result accepted for a bad input must equal these ------------------------
def _reduce(npf, keep_int_dtype=False):
    def oracle(input_tensor, axis=None, keepdims=False):
        ax = tuple(axis) if isinstance(axis, list) else axis
        x = np.asarray(input_tensor)
        if keep_int_dtype and x.dtype.kind in "iu":  # TF: int32 sums stay int32 (and wrap)
            return npf(x, axis=ax, keepdims=bool(keepdims), dtype=x.dtype)
        return npf(x, axis=ax, keepdims=bool(keepdims))
    return oracle


def _logsumexp(x, axis=None, keepdims=False):
    x = np.asarray(x)
    m = np.max(x, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0)
    return np.squeeze(np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True)) + m,
                      axis=None if keepdims else axis) if not keepdims else \
        np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True)) + m


def _keep_int(x):
    dt = np.asarray(x).dtype
    return dt if dt.kind in "iu" else None


UNARY_NP = {"exp": np.exp, "log": np.log, "log1p": np.log1p, "expm1": np.expm1,
            "sqrt": np.sqrt, "rsqrt": lambda x: 1 / np.sqrt(x), "square": np.square,
            "abs": np.abs, "sin": np.sin, "cos": np.cos, "tan": np.tan, "asin": np.arcsin,
            "acos": np.arccos, "atan": np.arctan, "sinh": np.sinh, "cosh": np.cosh,
            "tanh": np.tanh, "asinh": np.arcsinh, "acosh": np.arccosh, "atanh": np.arctanh,
            "floor": np.floor, "ceil": np.ceil, "round": np.round, "reciprocal": lambda x: 1 / x,
            "is_nan": np.isnan, "is_inf": np.isinf, "is_finite": np.isfinite,
            "negative": np.negative, "sign": np.sign, "identity": lambda x: x,
            "relu": lambda x: np.maximum(x, 0), "sigmoid": lambda x: 1 / (1 + np.exp(-x)),
            "softsign": lambda x: x / (1 + np.abs(x)), "logical_not": np.logical_not}
UNARY_ARG = {"relu": "features", "softsign": "features", "identity": "input"}
BINARY_NP = {"add": np.add, "subtract": np.subtract, "multiply": np.multiply,
             "divide": np.true_divide, "truediv": np.true_divide, "realdiv": np.true_divide,
             "pow": np.power, "maximum": np.maximum, "minimum": np.minimum,
             "squared_difference": lambda x, y: np.square(np.subtract(x, y)),
             "floordiv": np.floor_divide, "floor_div": np.floor_divide,
             "floormod": np.mod, "mod": np.mod, "equal": np.equal, "not_equal": np.not_equal,
             "less": np.less, "less_equal": np.less_equal, "greater": np.greater,
             "greater_equal": np.greater_equal, "logical_and": np.logical_and,
             "logical_or": np.logical_or, "logical_xor": np.logical_xor}
ORACLES = {n: (lambda f, a: lambda **kw: f(np.asarray(kw[a])))(f, UNARY_ARG.get(n, "x"))
           for n, f in UNARY_NP.items()}
ORACLES.update({n: (lambda f: lambda x, y: f(np.asarray(x), np.asarray(y)))(f)
                for n, f in BINARY_NP.items()})
ORACLES.update({
    "reduce_sum": _reduce(np.sum, True), "reduce_mean": _reduce(np.mean),
    "reduce_prod": _reduce(np.prod, True), "reduce_all": _reduce(np.all),
    "reduce_any": _reduce(np.any), "reduce_variance": _reduce(np.var),
    "reduce_std": _reduce(np.std), "reduce_logsumexp": _reduce(_logsumexp),
    "reduce_euclidean_norm": _reduce(lambda x, axis, keepdims: np.sqrt(np.sum(np.square(
        np.abs(x.astype(np.float64) if x.dtype.kind in "biu" else x)), axis=axis,
        keepdims=keepdims))),
    # TF: max/min of an empty set are -inf / +inf rather than an error
    "reduce_max": _reduce(lambda x, axis, keepdims: np.max(
        x, axis=axis, keepdims=keepdims, initial=-np.inf) if x.dtype.kind == "f" else
        np.max(x, axis=axis, keepdims=keepdims)),
    "reduce_min": _reduce(lambda x, axis, keepdims: np.min(
        x, axis=axis, keepdims=keepdims, initial=np.inf) if x.dtype.kind == "f" else
        np.min(x, axis=axis, keepdims=keepdims)),
    "matmul": lambda a, b, **kw: np.matmul(np.asarray(a), np.asarray(b)),
    "matvec": lambda a, b, **kw: np.matmul(np.asarray(a), np.asarray(b)[..., None])[..., 0],
    "det": lambda input: np.linalg.det(np.asarray(input)),
    "inv": lambda input: np.linalg.inv(np.asarray(input)),
    "solve": lambda matrix, rhs: np.linalg.solve(np.asarray(matrix), np.asarray(rhs)),
    "trace": lambda x: np.trace(np.asarray(x), axis1=-2, axis2=-1, dtype=_keep_int(x)),
    "diag_part": lambda input: np.diagonal(np.asarray(input), axis1=-2, axis2=-1),
    "eigvalsh": lambda tensor: np.linalg.eigvalsh(np.asarray(tensor)),
    # always complex (NumPy's is real when every eigenvalue is)
    "eigvals": lambda tensor: np.linalg.eigvals(np.asarray(tensor)).astype(
        np.result_type(np.asarray(tensor).dtype, np.complex64)),
    "sort": lambda values, axis=-1, direction="ASCENDING": np.sort(np.asarray(values), axis),
    "transpose": lambda a, perm=None, **kw: np.transpose(np.asarray(a), perm),
    "matrix_transpose": lambda x: np.swapaxes(np.asarray(x), -1, -2),
    "reshape": lambda tensor, shape: np.reshape(np.asarray(tensor), shape),
    "cumsum": lambda x, axis=0, **kw: np.cumsum(np.asarray(x), axis=axis, dtype=_keep_int(x)),
    "cumprod": lambda x, axis=0, **kw: np.cumprod(np.asarray(x), axis=axis, dtype=_keep_int(x)),
    "concat": lambda values, axis: np.concatenate([np.asarray(v) for v in values], axis),
    "stack": lambda values, axis=0: np.stack([np.asarray(v) for v in values], axis),
    "broadcast_to": lambda input, shape: np.broadcast_to(np.asarray(input), shape),
    "tile": lambda input, multiples: np.tile(np.asarray(input), multiples),
    "expand_dims": lambda input, axis: np.expand_dims(np.asarray(input), axis),
})
ORACLE_CALL_ARGS = {"matmul": ("a", "b"), "matvec": ("a", "b"), "cumsum": ("x", "axis"),
                    "inv": ("input",), "solve": ("matrix", "rhs"),
                    "cumprod": ("x", "axis"), "transpose": ("a", "perm"),
                    # overwrite_b is ignored (SciPy rejects a NumPy bool there)
                    "cho_solve": ("c_and_lower", "b", "check_finite"),
                    "solve_banded": ("l_and_u", "ab", "b", "check_finite"),
                    "odeint": ("func", "y0", "t", "tfirst"),
                    "solve_triangular": ("a", "b", "trans", "lower", "unit_diagonal",
                                         "check_finite")}


def _scipy_oracle(f, params):
    """SciPy's function as an oracle: ufuncs take positional arguments only."""
    if isinstance(f, np.ufunc):
        return lambda **kw: f(*[kw[p] for p in params if p in kw])
    return lambda **kw: f(**kw)


for _name in vj.scipy.special.__all__:
    ORACLES[f"vj.scipy.special.{_name}"] = _scipy_oracle(
        getattr(scipy.special, _name),
        list(inspect.signature(getattr(vj.scipy.special, _name)).parameters))


def _widened(f):
    """scipy.stats computes with its inputs' dtypes (log(scale) of a uint8 or float16 scale
    is a float16): the oracle gets float64 values, the exact answer vecjac must match."""
    def oracle(**kw):
        return f(**{k: v.astype(np.float64) if isinstance(v, np.ndarray) and v.dtype.kind
                    in "iuf" and v.dtype.itemsize < 8 else v for k, v in kw.items()})
    return oracle


for _dist in vj.scipy.stats.__all__:
    for _m in ("logpdf", "pdf", "logpmf", "pmf", "cdf", "logcdf"):
        if hasattr(getattr(vj.scipy.stats, _dist), _m):
            ORACLES[f"vj.scipy.stats.{_dist}.{_m}"] = _widened(
                getattr(getattr(scipy.stats, _dist), _m))
for _name in vj.scipy.linalg.__all__:
    ORACLES[f"vj.scipy.linalg.{_name}"] = getattr(scipy.linalg, _name)
ORACLES["vj.scipy.signal.convolve"] = scipy.signal.convolve
for _name in vj.scipy.fft.__all__:
    if _name != "backend":
        ORACLES[f"vj.scipy.fft.{_name}"] = getattr(scipy.fft, _name)


def _tf_fft(kind, rank):
    """TF's innermost-axes FFTs through NumPy's n-dimensional ones."""
    f = getattr(np.fft, f"{kind}n")
    axes = tuple(range(-rank, 0))
    if kind in ("fft", "ifft"):
        return lambda input: f(np.asarray(input), axes=axes)
    return lambda input_tensor, fft_length=None: f(
        np.asarray(input_tensor), s=None if fft_length is None else
        np.asarray(fft_length).reshape(-1).tolist(), axes=axes)


for _kind in ("fft", "ifft", "rfft", "irfft"):
    for _rank, _suffix in ((1, ""), (2, "2d"), (3, "3d")):
        ORACLES[f"vj.signal.{_kind}{_suffix}"] = _tf_fft(_kind, _rank)
    ORACLES[f"vj.signal.{_kind}nd"] = (lambda f: lambda input_tensor, fft_length=None, axes=None,
                                       norm=None: f(np.asarray(input_tensor), s=None if
                                                    fft_length is None else np.asarray(
                                                        fft_length).reshape(-1).tolist(),
                                                    axes=axes, norm=norm))(
        getattr(np.fft, f"{_kind}n"))
ORACLES["vj.signal.fftshift"] = lambda x, axes=None: np.fft.fftshift(np.asarray(x), axes)
ORACLES["vj.signal.ifftshift"] = lambda x, axes=None: np.fft.ifftshift(np.asarray(x), axes)


def _approximate_equal_oracle(x, y, tolerance=1e-5, **kw):
    x, y = np.asarray(x), np.asarray(y)
    if x.dtype.kind in "iu":  # as vecjac: no wrap-around of unsigned differences
        x, y = x.astype(np.float64), y.astype(np.float64)
    return np.abs(x - y) < tolerance


ORACLES.update({  # vecjac/_src/composites/tf_math.py, vecjac/_src/ops/elementwise/debugging.py
    "cross": lambda a, b, **kw: np.cross(np.asarray(a), np.asarray(b)),
    "approximate_equal": _approximate_equal_oracle,
    "bucketize": lambda input, boundaries, **kw: np.digitize(np.asarray(input), boundaries),
    "check_numerics": lambda tensor, **kw: np.asarray(tensor),
})


def _logsumexp_oracle(a, axis=None, b=None, keepdims=False, return_sign=False):
    if np.size(a) == 0 and not return_sign:  # SciPy 1.17 raises IndexError for (2, 0)
        with np.errstate(divide="ignore"):
            return np.log(np.sum(np.exp(a) * (1 if b is None else b), axis=axis,
                                 keepdims=keepdims))
    return scipy.special.logsumexp(a, axis=axis, b=b, keepdims=keepdims,
                                   return_sign=return_sign)


ORACLES["vj.scipy.special.logsumexp"] = _logsumexp_oracle

# diag / diag_part with TF's k, num_rows, num_cols, padding_value, align (vecjac/_src/ops/
# linalg/diag_band.py) and the colour adjustments of vj.image (vecjac/_src/ops/nn/image.py)
SPECS.update({
    "diag": dict(args=dict(diagonal=lambda: F(3)),
                 roles=dict(k="int", num_rows="int", num_cols="int", padding_value="scalar",
                            align="align")),
    "diag_part": dict(args=dict(input=lambda: SPD.copy()),
                      roles=dict(k="int", padding_value="scalar", align="align")),
    "adjust_hue": dict(args=dict(image=lambda: F(1, 2, 3), delta=0.2),
                       roles=dict(image="float", delta="scalar")),
    "adjust_saturation": dict(args=dict(image=lambda: F(1, 2, 3), saturation_factor=0.5),
                              roles=dict(image="float", saturation_factor="scalar")),
    "rgb_to_hsv": dict(args=dict(images=lambda: F(2, 3))),
    "hsv_to_rgb": dict(args=dict(images=lambda: F(2, 3))),
})
SPECS["set_diag"]["roles"]["align"] = "align"
ROLE_BAD["ode_adjoint"] = [("unknown", "adjoints", True), ("upper case", "INTERPOLATED", True),
                           ("bool", True, True), ("None", None, True), ("int", 0, True)]
# checkpoints applies to adjoint="checkpoint" only: with the default adjoint, any count raises
ROLE_BAD["ode_checkpoints"] = [("negative", -1, True), ("float", 2.5, True), ("string", "4", True),
                               ("a count, without adjoint='checkpoint'", 4, True)]
ROLE_BAD["align"] = [("unknown", "RIGHT", True), ("lower case", "right_left", True),
                     ("int", 1, True), ("None", None, True), ("dict", {}, True)]
ORACLES["diag_part"] = lambda input, k=0, **kw: np.diagonal(np.asarray(input), offset=k,
                                                            axis1=-2, axis2=-1)


def _oracle(qualname, args):
    short = qualname.rsplit(".", 1)[-1]
    f = ORACLES.get(qualname) or ORACLES.get(short)
    if f is None:
        return None
    keys = ORACLE_CALL_ARGS.get(short)
    kw = {k: v for k, v in args.items() if keys is None or k in keys}
    if (short in ("cumsum", "cumprod") and (args.get("exclusive") or args.get("reverse"))
            or args.get("transpose_a") or args.get("transpose_b") or args.get("adjoint")
            or args.get("adjoint_a") or args.get("adjoint_b")):
        return None
    kw = {k: (np.asarray(v._value) if isinstance(v, vj.Tensor) else v) for k, v in kw.items()}
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return ("ok", f(**kw))
        except Exception as e:  # NumPy rejects the input
            return ("err", e)


# -- judging one call ----------------------------------------------------------------------------
ALLOWED = (ValueError, TypeError, LookupError, RuntimeError)
NEVER = (IndexError, KeyError, NotImplementedError, RecursionError, AttributeError)
# x[...] may raise IndexError (as Python and NumPy do); gather-style lookups only for
# out-of-range indices
INDEX_ERROR_OK = {"getitem", "strided_slice"}
GATHER_STYLE = {"gather", "gather_nd", "tensor_scatter_nd_add", "tensor_scatter_nd_update"}
ALIASES = {"floor_div": ("floordiv",), "mod": ("floormod",), "truediv": ("divide",),
           "realdiv": ("divide",), "swish": ("silu",)}


class UserError(Exception):
    """Raised by a user callable: must come out unchanged."""


def _leaves(x):
    if hasattr(x, "_fields"):  # a namedtuple result (NewtonStep): fields of any type
        return [v for v in x if isinstance(v, vj.Tensor)]
    if isinstance(x, (list, tuple)):
        return [leaf for v in x for leaf in _leaves(v)]
    if isinstance(x, dict):
        return [leaf for v in x.values() for leaf in _leaves(v)]
    return [x]


def names_function(msg, short, fn):
    names = {short, fn.__name__, *ALIASES.get(short, ())}
    return any(re.search(rf"(?<![A-Za-z0-9_]){re.escape(n)}(?![A-Za-z0-9_])", msg)
               for n in names)


def names_argument(msg, arg):
    aliases = {"inputs": ("inputs", "operand"), "key": ("key", "index", "indices"),
               "args": ("args", "argument")}.get(arg, (arg,))
    return any(re.search(rf"(?<![A-Za-z0-9_]){re.escape(a)}(?![A-Za-z0-9_])", msg)
               for a in aliases)


def _is_scipy_sparse(x):
    return type(x).__module__.startswith("scipy.sparse")


def check_result(qualname, out, args, label, role):
    """A result for a bad input: numeric Tensors, equal to the NumPy oracle if any."""
    problems = []
    if role == "callable":  # what a user function returns may come back as it is (cond)
        return problems
    for leaf in _leaves(out):
        if _is_scipy_sparse(leaf):  # the sparse Jacobians and patterns (issue 12)
            if leaf.dtype.kind not in "bf":
                problems.append(f"returned a sparse matrix of dtype {leaf.dtype}")
            continue
        if isinstance(leaf, vj.Tensor):
            if leaf._value.dtype.kind not in "biufc":
                problems.append(f"returned a Tensor of dtype {leaf._value.dtype}")
            if type(leaf._value) is not np.ndarray:
                problems.append(f"Tensor wraps a {type(leaf._value).__name__}")
        elif leaf is not None and not isinstance(leaf, (int, float, bool, np.generic,
                                                        vj.Variable)) and not hasattr(
                                                            out, "_fields"):
            problems.append(f"returned a {type(leaf).__name__}")
    expected = _oracle(qualname, args)
    if expected is not None and not problems:
        kind, value = expected
        if kind == "err":
            problems.append(f"returned a result where NumPy raises {type(value).__name__}: "
                            f"{value}")
        elif isinstance(value, tuple):  # several outputs (logsumexp's sign, sqrtm's error)
            outs = out if isinstance(out, tuple) else (out,)
            if len(outs) != len(value):
                problems.append(f"{len(outs)} outputs, the oracle gives {len(value)}")
            for o, v in zip(outs, value):
                problems += _compare(o, v)
        else:
            problems += _compare(out, value)
    return problems


def _compare(out, value):
    """Problems of one output against the oracle's value."""
    got = np.asarray(out._value) if isinstance(out, vj.Tensor) else np.asarray(out)
    value = np.asarray(value)
    if got.shape != value.shape:
        return [f"shape {got.shape}, NumPy gives {value.shape}"]
    if value.dtype.kind == "c" and got.dtype.kind != "c":
        return [f"dropped the imaginary part (dtype {got.dtype})"]
    if value.dtype.kind in "biufc" and value.size:
        tol = 1e-3 if got.dtype.itemsize <= 4 else 1e-6
        try:
            np.testing.assert_allclose(got.astype(value.dtype) if value.dtype.kind
                                       != "b" else got, value, rtol=tol, atol=tol,
                                       equal_nan=True)
        except AssertionError as e:
            return [f"value differs from NumPy: {str(e)[:300]}"]
    return []


def _call(fn, args, varargs, qualname=""):
    spec = spec_of(qualname)
    if "call" in spec:
        return spec["call"](fn, args, varargs)
    if varargs:
        first = [args[k] for k in list(args)[:1]]
        return fn(*first, *varargs, **{k: v for k, v in list(args.items())[1:]})
    return fn(**args)


def run_case(qualname, fn, arg, label, bad, must_raise, watch=True):
    """Call fn with argument `arg` replaced by `bad`, on an active tape; return problems."""
    short = qualname.rsplit(".", 1)[-1]
    args, varargs, roles = base_call(qualname, fn)
    if "[" in arg:  # an element of *args
        arg, k = arg[:-1].split("[")
        varargs[int(k)] = bad
    else:
        args[arg] = bad
    x0 = vj.constant([1.0, 2.0])
    problems = []
    with vj.GradientTape(persistent=True) as tape:
        tape.watch(x0)
        y0 = x0 * x0
        if watch:  # valid float arguments become watched Tensors: a failure must not record
            for k, v in list(args.items()):
                if k != arg and roles.get(k) == "float" and isinstance(v, np.ndarray):
                    args[k] = vj.constant(v)
                    tape.watch(args[k])
        n_entries, saved = len(tape._entries), (list(state.tapes), dict(state.hidden),
                                                 list(state.stack))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            warnings.simplefilter("error", np.exceptions.ComplexWarning)
            try:
                with np.errstate(all="ignore"):
                    out = _call(fn, args, varargs, qualname)
            except UserError:
                out, err = None, None
            except BaseException as e:  # noqa: B036 -- judged below
                out, err = None, e
            else:
                err = None
        if err is not None:
            where = f"{type(err).__name__}: {err}"
            ok_index = isinstance(err, IndexError) and (
                short in INDEX_ERROR_OK or short in GATHER_STYLE and "out of bounds" in str(err))
            if isinstance(err, np.exceptions.ComplexWarning):
                problems.append(f"silently drops an imaginary part ({where})")
            elif isinstance(err, NEVER) and not ok_index:
                problems.append(f"raises {where}")
            elif not isinstance(err, ALLOWED):
                problems.append(f"raises {where}")
            elif short in NEVER_RAISE:
                problems.append(f"must never raise, got {where}")
            elif (roles.get(arg) == "callable" and _user_callable_error(err)
                  or _raised_in_user_code(err)):
                pass
            else:
                msg = str(err)
                # a value that is not bad in itself may make the call invalid through
                # another argument (transpose_a=True on mismatched shapes): then the
                # message may name that other argument instead
                named = [arg] if must_raise else [arg] + list(roles)
                if not names_function(msg, short, fn):
                    problems.append(f"message does not name the function: {where}")
                elif not any(names_argument(msg, a) for a in named):
                    problems.append(f"message does not name argument {arg!r}: {where}")
            # a failure detected after user code ran (a callable argument) may follow
            # complete entries of the user's own ops; anything else validates first
            if len(tape._entries) != n_entries and roles.get(arg) != "callable":
                problems.append(f"left {len(tape._entries) - n_entries} entries recorded "
                                f"after failing with {where}")
        elif must_raise and short not in NEVER_RAISE:
            problems.append(f"accepted the bad value (returned {_describe(out)})")
        else:
            problems += check_result(qualname, out, args, label, roles.get(arg))
        if (list(state.tapes), dict(state.hidden), list(state.stack)) != saved:
            problems.append("left the tape stack / pfor state changed")
            state.tapes[:], state.stack[:] = saved[0], saved[2]
            state.hidden.clear()
            state.hidden.update(saved[1])
        z = vj.reduce_sum(y0 * 3.0)
    g = tape.gradient(z, x0)
    if g is None or not np.allclose(g._value, [6.0, 12.0]):
        problems.append(f"the tape gives a wrong gradient afterwards: {g}")
    return [f"{qualname}({arg}={label}): {p}" for p in problems]


def _user_callable_error(err):
    # Python's own error for calling a user function with the wrong number of arguments
    return isinstance(err, TypeError) and "positional argument" in str(err)


def _raised_in_user_code(err):
    """True when the innermost frame is a function of this module (a user callable such
    as `f` of vj.grad fails on the value it was given: its own error, passed through)."""
    tb = err.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return tb is not None and tb.tb_frame.f_code.co_filename == __file__ and \
        tb.tb_frame.f_code.co_name == "<lambda>"


def _describe(out):
    if isinstance(out, vj.Tensor):
        return f"Tensor shape {out.shape} dtype {out.dtype}"
    return type(out).__name__


def cases(qualname, fn):
    """Every (argument, label, bad value, must_raise) for a deterministic sweep."""
    args, varargs, roles = base_call(qualname, fn)
    out = []
    for arg, role in roles.items():
        if role == "skip":
            continue
        for label, value, must in ROLE_BAD[role]:
            out.append((arg, label, value, must))
    star = next((p.name for p in inspect.signature(fn).parameters.values()
                 if p.kind == p.VAR_POSITIONAL), "args")
    for k in range(len(varargs)):
        for label, value, must in ROLE_BAD["float"]:
            out.append((f"{star}[{k}]", label, value, must))
    return out


FUNCTIONS = [(q, f) for q, f in public_functions() if q.rsplit(".", 1)[-1] not in EXCLUDED]


def sweep(functions=None):
    problems = []
    for q, f in functions or FUNCTIONS:
        try:
            cs = cases(q, f)
        except LookupError as e:
            problems.append(str(e))
            continue
        for arg, label, value, must in cs:
            problems += run_case(q, f, arg, label, value, must)
    return problems


# -- the tests -----------------------------------------------------------------------------------
# Hypothesis examples per function: few in CI, many with VECJAC_HYPOTHESIS_PROFILE=thorough
# (see tests/conftest.py). The deterministic sweep covers every catalogued bad value anyway.
FUZZ_EXAMPLES = 100 if os.environ.get("VECJAC_HYPOTHESIS_PROFILE") == "thorough" else 8
IDS = [q for q, _ in FUNCTIONS]


def test_every_public_function_is_fuzzed():
    """Every public function has a valid call (roles known) or is excluded with a reason."""
    names = {q.rsplit(".", 1)[-1] for q, _ in public_functions()}
    assert names >= set(EXCLUDED), f"stale EXCLUDED entries: {set(EXCLUDED) - names}"
    assert len(FUNCTIONS) > 150
    for q, fn in FUNCTIONS:
        args, varargs, roles = base_call(q, fn)   # LookupError names a missing role
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = _call(fn, args, varargs, q)
        assert not check_result(q, out, args, "valid", None), q


@pytest.mark.parametrize("qualname", IDS)
def test_catalogued_bad_values(qualname):
    """Every argument of every public function with every catalogued bad value."""
    fn = dict(FUNCTIONS)[qualname]
    problems = [p for arg, label, value, must in cases(qualname, fn)
                for p in run_case(qualname, fn, arg, label, value, must)]
    assert not problems, "\n".join(problems)


# hypothesis strategies: (label, value, must_raise) per role
_NONTENSOR = st.one_of(st.text(max_size=4), st.builds(Opaque), st.dictionaries(
    st.text(max_size=2), st.floats(), max_size=2), st.binary(max_size=3))
_ARRAYS = hnp.arrays(
    dtype=st.sampled_from([np.float64, np.float32, np.int64, np.int32, np.uint8, np.bool_,
                           np.complex128, np.float16]),
    shape=hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=4))


def _labelled(strategy, label, must):
    return strategy.map(lambda v: (f"{label} {_short(v)}", v, must))


def _short(v):
    text = repr(v) if not isinstance(v, np.ndarray) else f"array{v.shape} {v.dtype}"
    return text[:40]


def role_strategy(role):
    catalogued = st.sampled_from(ROLE_BAD[role])
    extra = []
    if role in ("float", "float_or_none", "indices", "onehot_indices", "mask"):
        extra = [_labelled(_ARRAYS, "array", False), _labelled(_NONTENSOR, "object", True)]
    elif role.startswith("axis") or role.startswith("axes"):
        extra = [_labelled(st.integers(-9, 9), "int", False),
                 _labelled(st.floats(), "float", True), _labelled(st.text(max_size=3), "str", True)]
    elif role.startswith("shape") or role in ("slice_spec", "strides"):
        extra = [_labelled(st.lists(st.integers(-3, 5), max_size=4), "ints", False),
                 _labelled(st.lists(st.floats(), min_size=1, max_size=3), "floats", True)]
    elif role.startswith("scalar"):  # bounded: range(0, 1e300) is an honest MemoryError
        extra = [_labelled(st.floats(-1e4, 1e4) | st.sampled_from([np.nan, np.inf, -np.inf]),
                           "float", False),
                 _labelled(st.complex_numbers(), "complex", False),
                 _labelled(_NONTENSOR, "object", True)]
    elif role.startswith("bool"):
        extra = [_labelled(st.text(max_size=3), "str", True),
                 _labelled(st.booleans(), "bool", False)]
    elif role in ("size", "size_or_none", "count", "int"):
        extra = [_labelled(st.integers(-4, 9), "int", False), _labelled(st.floats(), "float", True)]
    elif role.startswith("dtype"):
        extra = [_labelled(st.sampled_from(["U5", "M8[s]", "O", "V8", "S3", "m8[s]"]),
                           "non-numeric dtype", True)]
    return st.one_of(catalogued, *extra)


@pytest.mark.parametrize("qualname", IDS)
@settings(max_examples=FUZZ_EXAMPLES, deadline=None, derandomize=FUZZ_EXAMPLES < 100)
@given(data=st.data())
def test_fuzz(qualname, data):
    """hypothesis draws an argument and a bad value for it (arrays of any dtype and shape,
    NaN / Inf / empty included, ints, floats, strings, objects)."""
    fn = dict(FUNCTIONS)[qualname]
    _, varargs, roles = base_call(qualname, fn)
    fuzzable = sorted(a for a, r in roles.items() if r != "skip")
    star = next((p.name for p in inspect.signature(fn).parameters.values()
                 if p.kind == p.VAR_POSITIONAL), "args")
    fuzzable += [f"{star}[{k}]" for k in range(len(varargs))]
    arg = data.draw(st.sampled_from(fuzzable), label="argument")
    label, value, must = data.draw(role_strategy(roles.get(arg, "float")), label="bad value")
    problems = run_case(qualname, fn, arg, label, value, must, watch=data.draw(st.booleans()))
    assert not problems, "\n".join(problems)


# -- GradientTape methods -----------------------------------------------------------------------
X0 = np.array([[0.3, -1.2, 2.0], [0.7, 0.1, -0.4]])
TARGET_BAD = [(label, v, label != "empty dict") for label, v, _ in NON_TENSORS] + NONE_BAD + [
    ("numpy array", F(2, 3), True), ("int", 3, True), ("float", 1.5, True)]
TAPE_ROLES = {
    "watch": {"tensor": TARGET_BAD},
    "gradient": {"target": TARGET_BAD, "sources": TARGET_BAD,
                 "output_gradients": [("wrong shape", F(3, 2), True), ("rank 3", F(2, 3, 2), True),
                                      ("string", "abc", True), ("object", Opaque(), True),
                                      ("too many", [F(2, 3), F(2, 3)], True),
                                      ("scalar", 2.0, False), ("NaN", _nan(), False),
                                      ("int", np.ones((2, 3), int), False)],
                 "unconnected_gradients": [("unknown", "sometimes", True), ("int", 3, True),
                                           ("None", None, True), ("object", Opaque(), True)]},
    "jacobian": {"target": TARGET_BAD + [("list", "LIST", True)], "sources": TARGET_BAD,
                 "unconnected_gradients": [("unknown", "sometimes", True), ("None", None, True)],
                 "parallel_iterations": COUNT_BAD + [("array", np.array([2, 3]), True)],
                 "experimental_use_pfor": [("string", "yes", True), ("None", None, True),
                                           ("array", np.array([True]), True)]},
    "batch_jacobian": {"target": TARGET_BAD + [("rank 1", "RANK1", True),
                                               ("other batch", "BATCH3", True)],
                       "source": TARGET_BAD + [("rank 1", "RANK1", True)],
                       "unconnected_gradients": [("unknown", "sometimes", True)],
                       "parallel_iterations": COUNT_BAD,
                       "experimental_use_pfor": [("string", "yes", True), ("None", None, True)]},
}


def _tape_case(method, arg, label, bad, must):
    """Call tape.<method> with one bad argument on a NON-persistent tape: a failure must
    neither consume the tape nor record anything, so the correct gradient still follows."""
    x = vj.constant(X0)
    problems = []
    with vj.GradientTape() as tape:
        tape.watch(x)
        y = vj.sin(x) * x
        n_entries = len(tape._entries)
        if method == "watch":
            call = lambda: tape.watch(bad)  # noqa: E731
        else:
            special = {"LIST": [y, y], "RANK1": vj.reshape(y, (6,)),
                       "BATCH3": vj.concat([y, y[:1]], axis=0)}
            bad = special.get(bad, bad) if isinstance(bad, str) else bad
            n_entries = len(tape._entries)
            args = {"target": y, "sources": x, "source": x}
            args = {k: v for k, v in args.items()
                    if k in inspect.signature(getattr(tape, method)).parameters}
            args[arg] = bad
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            if method == "watch":
                with tape:   # watch only makes sense while recording
                    call()
                    tape._recording = True
            else:
                getattr(tape, method)(**args)
            err = None
        except Exception as e:  # noqa: BLE001 -- judged below
            err = e
    where = f"{type(err).__name__}: {err}"
    if err is None:
        if must:
            problems.append("accepted the bad value")
    elif not isinstance(err, ALLOWED) or isinstance(err, NEVER):
        problems.append(f"raises {where}")
    elif not re.search(rf"\b{method}\b", str(err)) or not (
            names_argument(str(err), arg) or not must):
        problems.append(f"message does not name {method} and {arg}: {where}")
    if err is not None and len(tape._entries) != n_entries:
        problems.append(f"recorded {len(tape._entries) - n_entries} entries before failing")
    if err is not None or method == "watch":  # the tape is still usable and correct
        g = tape.gradient(y, x)
        expected = np.cos(X0) * X0 + np.sin(X0)
        if g is None or not np.allclose(g._value, expected):
            problems.append(f"wrong gradient afterwards: {g}")
    return [f"GradientTape.{method}({arg}={label}): {p}" for p in problems]


TAPE_CASES = [(m, a, label, v, must) for m, roles in TAPE_ROLES.items()
              for a, bads in roles.items() for label, v, must in bads]


@pytest.mark.parametrize("method", sorted(TAPE_ROLES))
def test_tape_methods_catalogued_bad_values(method):
    problems = [p for m, a, label, v, must in TAPE_CASES if m == method
                for p in _tape_case(m, a, label, v, must)]
    assert not problems, "\n".join(problems)


@settings(max_examples=4 * FUZZ_EXAMPLES, deadline=None, derandomize=FUZZ_EXAMPLES < 100)
@given(case=st.sampled_from([(m, a) for m, roles in TAPE_ROLES.items() for a in roles]),
       value=st.one_of(_NONTENSOR, _ARRAYS, st.integers(), st.floats(), st.none()))
def test_tape_methods_fuzz(case, value):
    """Arbitrary values for each argument: any outcome but a bad exception or a broken tape
    (numbers and arrays can be valid output_gradients / parallel_iterations)."""
    method, arg = case
    problems = _tape_case(method, arg, _short(value), value, False)
    assert not problems, "\n".join(problems)


def test_stop_recording_and_reset_misuse_leave_the_tape_working():
    x = vj.constant(X0)
    tape = vj.GradientTape(persistent=True)
    with pytest.raises(RuntimeError, match="stop_recording: the tape is not recording"):
        with tape.stop_recording():
            pass
    with tape:
        tape.watch(x)
        y0 = x * x
        with tape.stop_recording():
            with pytest.raises(RuntimeError, match="stop_recording"):
                with tape.stop_recording():   # nested: the tape is not recording
                    pass
            ignored = x * 100.0
        y = vj.sin(x) * x
        with pytest.raises(ValueError, match="matmul"):  # a failing op in between
            vj.matmul(x, x)
        total = y + ignored   # `ignored` is a constant for this tape
    np.testing.assert_allclose(tape.gradient(total, x).numpy(), np.cos(X0) * X0 + np.sin(X0))
    tape.reset()   # outside the `with`: forgets everything, the tape works again
    assert tape.gradient(y, x) is None
    with tape:
        tape.watch(x)
        with pytest.raises(ValueError, match="watch"):  # TF's error type
            tape.watch({"a": Opaque()})
        z = x * x * x
        tape.reset()   # inside: as if entered anew
        tape.watch(x)
        w = x * 2.0 + y0   # y0 was recorded before the reset: a constant now
    assert tape.gradient(z, x) is None
    np.testing.assert_allclose(tape.gradient(w, x).numpy(), 2.0 * np.ones_like(X0))


def test_failures_inside_pfor_leave_loop_and_tape_state_clean():
    x = vj.constant(X0)
    with vj.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = vj.sin(x)
        n_entries = len(tape._entries)

        def bad_body(i):
            row = vj.gather(x, i)
            return vj.matmul(row, row)   # (3,) @ (3,) is fine, then (3,) @ (2, 3) is not
        for body in (bad_body, lambda i: vj.matmul(vj.gather(x, i), x),
                     lambda i: vj.reduce_sum(vj.gather(x, i), axis=5)):
            try:
                vj.vectorize.pfor(body, 2)
            except ValueError as err:
                assert "matmul" in str(err) or "reduce_sum" in str(err)
            assert state.stack == [tape] and state.hidden == {}
            assert state.tapes == [tape]
        del n_entries
        z = vj.reduce_sum(y * y)
    np.testing.assert_allclose(tape.gradient(z, x).numpy(), 2 * np.sin(X0) * np.cos(X0))
    # the jacobian of a loop that failed before still works
    np.testing.assert_allclose(tape.jacobian(y, x).numpy().reshape(6, 6),
                               np.diag(np.cos(X0).reshape(-1)))


# -- NaN / Inf propagate through values and gradients (IEEE) ----------------------------------
SPECIAL = np.array([np.nan, np.inf, -np.inf, 0.5, -0.3])
with np.errstate(all="ignore"):
    IEEE_UNARY = {  # name: (value, derivative) in NumPy, evaluated with IEEE rules
        "exp": (np.exp, np.exp), "expm1": (np.expm1, np.exp),
        "log": (np.log, lambda x: 1 / x), "log1p": (np.log1p, lambda x: 1 / (1 + x)),
        "sqrt": (np.sqrt, lambda x: 0.5 / np.sqrt(x)), "square": (np.square, lambda x: 2 * x),
        "sin": (np.sin, np.cos), "cos": (np.cos, lambda x: -np.sin(x)),
        "tanh": (np.tanh, lambda x: 1 - np.tanh(x) ** 2),
        "atan": (np.arctan, lambda x: 1 / (1 + x * x)),
        "sinh": (np.sinh, np.cosh), "cosh": (np.cosh, np.sinh),
        "reciprocal": (lambda x: 1 / x, lambda x: -1 / (x * x)),
        "sigmoid": (lambda x: 1 / (1 + np.exp(-x)),
                    lambda x: (1 / (1 + np.exp(-x))) * (1 - 1 / (1 + np.exp(-x)))),
        "softplus": (lambda x: np.logaddexp(x, 0), lambda x: 1 / (1 + np.exp(-x))),
        "elu": (lambda x: np.where(x > 0, x, np.expm1(x)), lambda x: np.where(x > 0, 1, np.exp(x))),
        "erf": (None, lambda x: 2 / np.sqrt(np.pi) * np.exp(-x * x)),
    }


@pytest.mark.parametrize("name", sorted(IEEE_UNARY))
def test_nan_and_inf_propagate_through_unary_values_and_gradients(name):
    fn, (value, deriv) = getattr(vj, name), IEEE_UNARY[name]
    x = vj.constant(SPECIAL)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no exception, not even a warning
        with np.errstate(all="ignore"):
            with vj.GradientTape() as tape:
                tape.watch(x)
                y = fn(x)
            g = tape.gradient(y, x)
            expected_g = deriv(SPECIAL)
            expected_y = value(SPECIAL) if value else None
    if expected_y is not None:
        np.testing.assert_allclose(y.numpy(), expected_y, rtol=1e-12, equal_nan=True)
    assert np.isnan(y.numpy()[0]) and np.isnan(g.numpy()[0])  # NaN in, NaN out: no silent 0
    np.testing.assert_allclose(g.numpy(), expected_g, rtol=1e-12, atol=0, equal_nan=True)


def test_nan_and_inf_propagate_through_binary_reductions_and_matmul():
    a = np.array([[np.nan, 1.0], [2.0, np.inf]])
    b = np.array([[0.5, -1.0], [3.0, 2.0]])
    xa, xb = vj.constant(a), vj.constant(b)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("error")
        with vj.GradientTape(persistent=True) as tape:
            tape.watch([xa, xb])
            prod = xa * xb
            quot = xa / xb
            mm = vj.matmul(xa, xb)
            total = vj.reduce_sum(xa)
            lse = vj.reduce_logsumexp(xb * xa, axis=1)
        ga, gb = tape.gradient(prod, [xa, xb])
        np.testing.assert_array_equal(ga.numpy(), b)            # d(ab)/da = b: finite
        np.testing.assert_array_equal(gb.numpy(), a)            # d(ab)/db = a: NaN, Inf
        ga, gb = tape.gradient(quot, [xa, xb])
        np.testing.assert_allclose(ga.numpy(), 1 / b)
        np.testing.assert_allclose(gb.numpy(), -a / b ** 2, equal_nan=True)
        ga, gb = tape.gradient(mm, [xa, xb])
        np.testing.assert_allclose(ga.numpy(), np.ones((2, 2)) @ b.T)
        np.testing.assert_allclose(gb.numpy(), a.T @ np.ones((2, 2)), equal_nan=True)
        np.testing.assert_array_equal(tape.gradient(total, xa).numpy(), np.ones((2, 2)))
        assert np.isnan(lse.numpy()[0]) and np.isnan(tape.gradient(lse, xa).numpy()[0]).all()
        np.testing.assert_allclose(mm.numpy(), a @ b, equal_nan=True)


def test_nan_propagates_through_jacobians_and_hessians_without_touching_clean_entries():
    xs = np.array([0.3, np.nan, -0.8, 1.1])
    x = vj.constant(xs)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("error")
        with vj.GradientTape(persistent=True) as outer:
            outer.watch(x)
            with vj.GradientTape() as inner:
                inner.watch(x)
                y = vj.tanh(x) * x
                s = vj.reduce_sum(y * y)
            g = inner.gradient(s, x)
        jac = outer.jacobian(y, x).numpy()
        hess = outer.jacobian(g, x).numpy()
        loop = outer.jacobian(y, x, experimental_use_pfor=False).numpy()
    clean = [0, 2, 3]
    t = np.tanh(xs)
    dy = t + xs * (1 - t * t)
    np.testing.assert_allclose(np.diag(jac)[clean], dy[clean])
    np.testing.assert_array_equal(jac[np.ix_(clean, clean)] - np.diag(np.diag(jac)[clean]), 0)
    assert np.isnan(jac[1, 1]) and np.isnan(hess[1, 1]) and np.isnan(g.numpy()[1])
    np.testing.assert_allclose(g.numpy()[clean], (2 * (t * xs) * dy)[clean])
    np.testing.assert_allclose(jac[np.ix_(clean, clean)], loop[np.ix_(clean, clean)])
    # Row / column 1 off the diagonal is d y_i / d x_1 = 0 exactly, but the chain rule
    # multiplies the 0 of a one-hot seed by the NaN local derivative: IEEE gives NaN, as
    # in TF and JAX. pfor (structured seeds included) must agree with the loop exactly.
    np.testing.assert_array_equal(jac, loop)


def test_excluded_functions_validate():
    with pytest.raises(ValueError, match="defop: name must be a non-empty string"):
        vj.defop("", lambda a: a)
    with pytest.raises(TypeError, match="defop: forward must be callable"):
        vj.defop("VjFuzzNotCallable", 3)
    with pytest.raises(ValueError, match="defop: an op named 'Sin' is already registered"):
        vj.defop("Sin", np.sin)
    with pytest.raises(TypeError, match="custom_gradient: f must be callable"):
        vj.custom_gradient(3)
    with pytest.raises(ValueError, match="solve_ivp: y0 must be finite"):
        vj.scipy.integrate.solve_ivp(lambda t, y: -y, (0.0, 1.0), [np.nan])
    with pytest.raises(TypeError, match="recompute_grad: f must be callable"):
        vj.recompute_grad("f")

    @vj.custom_gradient
    def double(x):
        return x * 2.0, lambda dy: dy * 2.0
    with pytest.raises(TypeError, match=r"custom_gradient\(double\): argument 0"):
        double({"a": 1})
    for bad in ("abc", 1.5, {}):
        with pytest.raises(TypeError, match="set_seed: seed must be an int"):
            vj.random.set_seed(bad)
    coverage = vj.vectorize.converter_coverage()
    assert set(coverage) == {"converted", "fallback"}
    square = vj.defop("VjFuzzSquareRule", lambda a: a * a, converter=vj.vectorize.elementwise)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the family rule vectorizes: no fallback warning
        out = vj.vectorize.pfor(lambda i: square(vj.cast(i, vj.float64)), 3)
    np.testing.assert_array_equal(out.numpy(), [0.0, 1.0, 4.0])
