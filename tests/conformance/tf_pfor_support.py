"""Loop bodies from TensorFlow's pfor test-suite, vectorized by vecjac: the inputs and the
one check shared by tests/conformance/test_tf_pfor_*.py (cases grouped by topic there).

Where the cases come from: tensorflow/python/ops/parallel_for/control_flow_ops_test.py,
math_test.py and array_test.py in TensorFlow. A case is a function of the loop index that
TensorFlow's suite vectorizes, with its input shapes and dtypes, the choice of which inputs
vary over the loop, and the op's options. The check is ours: `assert_pfor_matches_loop` runs
`vj.vectorize.pfor` with the per-iteration fallback off (an op without a converter is an
error, the default of TF's test helper) and compares it with calling the body index by
index in Python: nest structure, shapes, dtypes and values of every output. Some cases
also compare with NumPy or a closed form. Inputs are float64 draws from one seeded NumPy
generator (TF draws float32), hence the tight tolerances.

Where vecjac and TF differ, the quantity checked stays the same:
- `vj.while_loop` returns a list even for one loop variable (TF 2's return_same_structure);
  TF's v1 cases unpack it.
- TF seeds the scalar l2 loss of max_pool / max_pool3d with a ones tensor shaped like the
  pool, which only works because TF's L2Loss gradient broadcasts it. vecjac checks seed
  shapes, so the pool output is seeded with `pooled * ones`: the same gradient.
- TF's conv2d_backprop_input / _filter and the depthwise ones are gradient kernels; here they
  are tape gradients of the forward convolution under the same seed. (TF skips its
  conv2d_backprop_input case, b/262851489.)
- Logical ops get `x > 0.5`: TF's `x > 0` on draws from [0, 1) is all True.
- The vectorized_map outer product runs a batch of 10, not 100 (time and memory); the
  per-example shapes are TF's.
- for_loop rejects parallel_iterations=0 with ValueError (TF: TypeError).
- TF's Select (v1 where) cases with conditions [2] and [2, 3, 5] are rows of the where table;
  its [2, 3] condition picks whole rows, a tf.compat.v1 behaviour that is not ported.
- inv and neg are reciprocal and negative, div is realdiv, add_v2 is add: one row each.
- Ops vecjac lacks are strict xfails called with TF's arguments, so they turn into checks
  when the op arrives.

Not ported, and why:
- dynamic shapes (placeholder_with_default): vectorized_map_with_dynamic_shape and the
  placeholder halves of the unit-dimension broadcast and gather cases;
- run_functions_eagerly (test_disable_tf_function) has no counterpart; its values are kept;
- IndexedSlices: IndexedSlicesTest and the IndexedSlices half of test_bias_add;
- graph mode, sessions, v1 control flow and resources: ReductionTest.test_var_loop_len,
  WhileV1Test, RNNTest, StackTest, TensorArrayTest, SparseTest, LoggingTest.test_assert and
  TensorListTest (vecjac has no TensorArray or TensorList);
- no bitwise, tf.signal, parsing or Print in vecjac: BitwiseTest, SpectralTest,
  ParsingTest, LoggingTest.test_print / test_print_v2;
- samplers vj.random lacks (truncated_normal, random_gamma, random_poisson, categorical,
  StatelessRandomTest) and OptionalTest;
- MaxPoolV2 (max_pool with a tensor ksize; max_pool itself is here) and the GPU-only NCHW
  cases (depthwise *_nchw, fused_batch_norm in NCHW);
- WhileV2Test.test_invariant_while_with_control_dependency: its loop is here, without the
  control dependency;
- igamma_grad_a and test_sparse_segment_grad are TF gradient kernels: vecjac does not
  differentiate igamma in `a` by design (LookupError, README) and differentiates its sparse
  segment ops through the ops they are made of;
- CompositeTensorTest's batched-TypeSpec broadcasting and RaggedTensor cases (a dataclass
  nest stands in for the Particle CompositeTensor in the other two);
- VariableTest.test_create_variable_repeated (a tf.function rule), test_variable_shape
  (resource handles), and the Benchmarks.
"""
import dataclasses
from typing import Callable

import numpy as np
import pytest

import vecjac as vj
from vecjac.vectorize import pfor

RNG = np.random.default_rng(2018)
BOOLS = [True, False]


# == inputs and the one check =============================================================
def draw(shape, low=0.0, high=1.0):
    """Uniform float64 values as a tensor (TF's cases use random_uniform)."""
    return vj.constant(RNG.uniform(low, high, size=shape))


def gaussian(shape):
    return vj.constant(RNG.standard_normal(shape))


def class_ids(shape, classes):
    return vj.constant(RNG.integers(0, classes, size=shape).astype(np.int32))


def complex_draw(shape):
    return vj.constant(RNG.uniform(size=shape) + 1j * RNG.uniform(size=shape))


def stacked(shape, varies=True, iters=2):
    """`shape` behind a loop axis of length `iters` when the input varies over the loop."""
    return ((iters,) if varies else ()) + tuple(shape)


def at(t, i, varies=True):
    """Example i of `t` when `t` varies over the loop, else `t` itself."""
    return vj.gather(t, i) if varies else t


def half_sum_of_squares(t):
    """The scalar loss of several cases (TF's nn.l2_loss)."""
    return vj.reduce_sum(t * t) / 2


def persistent_tape(*sources):
    """A persistent tape that already watches `sources`; loop bodies enter it again."""
    tape = vj.GradientTape(persistent=True)
    with tape:
        for source in sources:
            tape.watch(source)
    return tape


def _as_array(value):
    return np.asarray(value.numpy() if hasattr(value, "numpy") else value)


def assert_pfor_matches_loop(body, iters, *, fallback=False, parallel_iterations=None,
                             rtol=1e-9, atol=1e-12):
    """pfor(body) against body called for each index, leaf by leaf; returns pfor's result.

    Integer and boolean leaves must agree exactly, floats within rtol / atol; tensor leaves
    must also agree in dtype (a Python constant leaf has no dtype of its own)."""
    vectorized = pfor(body, iters, fallback_to_while_loop=fallback,
                      parallel_iterations=parallel_iterations)
    count = int(iters)
    # with no iterations the body still runs once, for its structure and example shapes
    per_index = [body(vj.constant(k)) for k in range(max(count, 1))]
    assert vj.nest.same_structure(vectorized, per_index[0]), (vectorized, per_index[0])
    leaves = [vj.nest.flatten(result) for result in per_index]
    for k, got in enumerate(vj.nest.flatten(vectorized)):
        first = leaves[0][k]
        if first is None:
            assert got is None
            continue
        if count:
            want = np.stack([_as_array(row[k]) for row in leaves])
        else:
            want = np.empty((0,) + _as_array(first).shape, _as_array(first).dtype)
        value = got.numpy()
        assert value.shape == want.shape, (k, value.shape, want.shape)
        if vj.is_tensor(first):
            assert value.dtype == want.dtype, (k, value.dtype, want.dtype)
        if want.dtype.kind in "biu":
            np.testing.assert_array_equal(value, want, err_msg=f"output {k}")
        else:
            np.testing.assert_allclose(value, want, rtol=rtol, atol=atol, equal_nan=True,
                                       err_msg=f"output {k}")
    return vectorized


@dataclasses.dataclass(frozen=True)
class Case:
    """A loop body: `make()` draws its inputs and returns body(i)."""
    name: str
    make: Callable
    iters: int = 3
    rtol: float = 1e-9
    atol: float = 1e-12

    def assert_vectorizes(self):
        return assert_pfor_matches_loop(self.make(), self.iters, rtol=self.rtol,
                                        atol=self.atol)


def params(rows):
    return [pytest.param(case, id=case.name) for case in rows]


def over_rows(fn, *shapes, fixed=(), index=False):
    """make() of the usual body: fn(example i of each varying input..., *invariant inputs).

    Inputs are uniform draws: one per shape in `shapes` (varying over the loop), one per
    shape in `fixed` (loop invariant). With index=True fn gets the loop index first."""
    def make():
        varying = [draw(shape) for shape in shapes]
        invariant = [draw(shape) for shape in fixed]

        def body(i):
            rows = [vj.gather(t, i) for t in varying]
            return fn(i, *rows, *invariant) if index else fn(*rows, *invariant)
        return body
    return make


def rows_of(make_input, fn):
    """make() of body(i) = fn(example i of make_input())."""
    def make():
        t = make_input()
        return lambda i: fn(vj.gather(t, i))
    return make


def missing(what):
    """Strict xfail for a function vecjac lacks (its attribute lookup fails)."""
    return pytest.mark.xfail(strict=True, raises=AttributeError, reason=f"{what} missing")
