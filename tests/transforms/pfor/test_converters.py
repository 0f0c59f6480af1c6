"""Every op with a generic converter (elementwise, broadcasting, reduction) against the
plain loop in float32, for every stacked/invariant combination of its inputs, on
hypothesis-drawn shapes (rank 0 to 3), broadcast patterns and iteration counts.

tests/test_registry.py checks every op's pfor against the loop through its samples, in
float64 and on the sample's shape families; this module adds what samples cannot
express: float32 values through the family converters (the loop and pfor must agree on
the dtype too) on arbitrary shapes. Ops added later with these converters are covered
automatically."""
import inspect

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import vecjac as vj
from vecjac._src.core.registry import REGISTRY
from vecjac.testing import check_pfor
from vecjac._src.transforms.pfor import converters

# at least 8 examples; more under the "thorough" profile (tests/conftest.py)
SETTINGS = settings(max_examples=max(8, settings.default.max_examples), deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


def _uses(op, rule):
    return getattr(op.converter, "__func__", None) is rule


# ops whose inputs need a special domain or attrs to run
DOMAIN = {"Acosh": (1.2, 3.0), "Atanh": (-0.8, 0.8), "Asin": (-0.8, 0.8),
          "Acos": (-0.8, 0.8)}
BOOL_INPUTS = {"LogicalAnd", "LogicalOr", "LogicalXor", "LogicalNot", "Any", "All"}
ATTRS = {"Cast": {"dtype": np.dtype(np.float32)}, "ZerosLike": {"dtype": np.dtype(np.float64)},
         "OnesLike": {"dtype": np.dtype(np.float64)}, "LeakyRelu": {"alpha": 0.2}}


def _attrs(name):
    """Sample attrs: from ATTRS, else skip ops whose forward needs attrs we don't know."""
    if name in ATTRS:
        return ATTRS[name]
    params = list(inspect.signature(REGISTRY[name].forward).parameters.values())
    required = [p.name for p in params[1:] if p.default is p.empty
                and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    if required:
        pytest.skip(f"{name}: no sample attrs for {required} (tested in its family)")
    return {}
# linalg ops reuse `elementwise` / `broadcasting` for their batch semantics but need
# square matrices: their own tests cover them
MATRIX_MODULES = {"vecjac._src.ops.linalg.matrix", "vecjac._src.ops.linalg.matrix_function",
                  "vecjac._src.ops.linalg.adjugate", "vecjac._src.ops.linalg.qr"}
# three broadcasting inputs: their registry samples cover every stacked combination
TERNARY = {"SelectV2", "Betainc"}

UNARY = sorted(n for n, op in REGISTRY.items()
               if _uses(op, converters.elementwise) and n != "SelectV2"
               and type(op).__module__ not in MATRIX_MODULES)
BINARY = sorted(n for n, op in REGISTRY.items()
                if _uses(op, converters.broadcasting) and n not in TERNARY
                and type(op).__module__ not in MATRIX_MODULES
                and len(inspect.signature(op.forward).parameters) == 2)  # not MulAdd
REDUCTIONS = sorted(n for n, op in REGISTRY.items() if _uses(op, converters.reduction))


def _value(name, shape, rng, dtype=np.float32):
    lo, hi = DOMAIN.get(name, (0.2, 0.9))
    x = rng.uniform(lo, hi, size=shape).astype(dtype)
    return x > 0.5 if name in BOOL_INPUTS else x


F32_TOL = {"rtol": 1e-5, "atol": 1e-6}


shapes = st.lists(st.integers(1, 3), min_size=0, max_size=3).map(tuple)


def _runner(name, arrays, stacked, iters, attrs):
    op = REGISTRY[name]
    tensors = [vj.constant(a) for a in arrays]

    def loop_fn(i):
        args = [vj.gather(t, i) if s else t for t, s in zip(tensors, stacked)]
        return op(*args, **attrs)
    return loop_fn


@pytest.mark.parametrize("name", UNARY)
@SETTINGS
@given(shape=shapes, iters=st.integers(1, 4), seed=st.integers(0, 2 ** 16))
def test_elementwise_converters_match_the_loop(name, shape, iters, seed):
    rng = np.random.default_rng(seed)
    if REGISTRY[name].n_outputs != 1:
        pytest.skip("multi-output op")
    x = _value(name, (iters,) + shape, rng)
    check_pfor(_runner(name, [x], [True], iters, _attrs(name)), iters, **F32_TOL)


@pytest.mark.parametrize("name", BINARY)
@pytest.mark.parametrize("stacked", [(True, True), (True, False), (False, True)])
@SETTINGS
@given(shape=shapes, drop=st.integers(0, 3), ones=st.integers(0, 7),
       iters=st.integers(1, 4), seed=st.integers(0, 2 ** 16))
def test_broadcasting_converters_match_the_loop(name, stacked, shape, drop, ones, iters, seed):
    rng = np.random.default_rng(seed)
    # the second operand has lower rank and size-1 axes: both broadcast directions
    other = tuple(1 if (ones >> k) & 1 else d for k, d in enumerate(shape[drop:]))
    shapes_ = [shape, other] if seed % 2 else [other, shape]
    arrays = [_value(name, ((iters,) if s else ()) + sh, rng)
              for sh, s in zip(shapes_, stacked)]
    check_pfor(_runner(name, arrays, stacked, iters, {}), iters, **F32_TOL)


@pytest.mark.parametrize("name", REDUCTIONS)
@SETTINGS
@given(shape=shapes, mask=st.integers(0, 7), use_none=st.booleans(), keepdims=st.booleans(),
       iters=st.integers(1, 4), seed=st.integers(0, 2 ** 16))
def test_reduction_converters_match_the_loop(name, shape, mask, use_none, keepdims, iters, seed):
    rng = np.random.default_rng(seed)
    axis = None if use_none else tuple(a for a in range(len(shape)) if (mask >> a) & 1)
    x = _value(name, (iters,) + shape, rng)
    check_pfor(_runner(name, [x], [True], iters, {"axis": axis, "keepdims": keepdims}), iters,
               **F32_TOL)


def test_the_generic_families_are_populated():
    assert {"Exp", "Tanh", "Neg"} <= set(UNARY)
    assert {"AddV2", "Mul", "Pow", "Maximum"} <= set(BINARY)
    assert {"Sum", "Mean", "Max"} <= set(REDUCTIONS)
