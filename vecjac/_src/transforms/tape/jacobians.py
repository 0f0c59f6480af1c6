"""GradientTape.jacobian and batch_jacobian: pfor over the tape's own gradient with seeds.

The loop body is "the gradient of the target with a one-hot cotangent"; vj.vectorize.pfor
runs it for all target elements at once, so every gradient op of the backward pass runs
its converter on stacked cotangents. `experimental_use_pfor=False` runs the same body as
the plain loop (vj.vectorize.for_loop).
"""
import functools
import math
import warnings

import numpy as np

from vecjac._src.core import nest
from vecjac._src.core.context import value_read
from vecjac._src.core.dispatch import apply
from vecjac._src.core.memory import ChunkPlan, check_fits, chunk_plan
from vecjac._src.core.registry import lib
from vecjac._src.core.tensor import Tensor
from vecjac._src.core.unconnected import (ComplexNotSupported, UnconnectedGradients, leaf_tensor,
                                          unconnected_mode)
from vecjac._src.core.variables import Variable
from vecjac._src.transforms.pfor.pfor import for_loop, pfor, pfor_budgeted
from vecjac._src.transforms.pfor.structured import worth_structuring


class InteractingExamplesWarning(UserWarning):
    """batch_jacobian found that examples of the batch depend on each other.

    Found by two probes, one extra vectorized iteration each: a random combination of
    example 0's outputs, and one of the last example's (mixing can run one way only: a
    causal sum over the batch leaves example 0 alone), each differentiated with respect
    to the whole batch; a nonzero gradient on any other example warns. For large batch
    Jacobians (structured seeds) each probe weights one fixed pseudo-random output column,
    which catches mixing that reaches every column (batch norm, batch means, attention
    over the batch) but not mixing confined to other columns.
    `tape.batch_jacobian(..., check_independence=False)` skips the probes."""


_PFOR_HELP = ("Encountered an exception while vectorizing the {} computation. "
              "Vectorization can be disabled by setting experimental_use_pfor to False.")


def _run(loop_fn, iters, parallel_iterations, use_pfor, what, progress):
    """pfor (chunked by parallel_iterations, or by the memory budget's ChunkPlan) or the
    plain loop; TF's error on failure."""
    plan = parallel_iterations if type(parallel_iterations) is ChunkPlan else None
    if plan is not None:
        parallel_iterations = None
    elif parallel_iterations is not None and (
            not isinstance(parallel_iterations, int) or isinstance(parallel_iterations, bool)
            or parallel_iterations < 1):
        raise ValueError(f"{what}: parallel_iterations must be a positive integer, got "
                         f"{parallel_iterations!r}")
    bar = what if progress else False
    if not use_pfor:
        return for_loop(loop_fn, iters)
    if parallel_iterations == 1:  # pfor refuses one iteration at a time (as TF's)
        return for_loop(loop_fn, iters, progress=bar)
    try:
        if plan is not None:
            return pfor_budgeted(loop_fn, iters, plan, progress=bar)
        return pfor(loop_fn, iters, parallel_iterations=parallel_iterations, progress=bar)
    except (LookupError, RuntimeError, ComplexNotSupported):
        raise
    except Exception as e:
        raise ValueError(_PFOR_HELP.format(what) + f" ({type(e).__name__}: {e})") from e


@functools.lru_cache(maxsize=16)
def _probe_weights(n, one_column):
    """Weights of the interaction probes (seeds on example 0 and on the last example)
    over the n columns.

    Their gradients must vanish on every other example when examples are independent;
    fixed pseudo-random weights keep terms from cancelling by accident. Where the seeds
    stay structured (one-hot columns, see BatchJacobianSeed), a probe over all columns
    would densify them, so large batch Jacobians probe one fixed pseudo-random column.
    """
    rng = np.random.default_rng(0)
    if one_column:
        w = np.zeros(n)
        w[rng.integers(n)] = 1.0
    else:
        w = rng.uniform(0.5, 1.5, size=n)
    w.flags.writeable = False
    return w


def _leaks(n, rows):
    """Whether the probes of batch_jacobian (rows n: example 0, n + 1: the last example)
    reached examples other than their own."""
    leaked = np.abs(rows[n:]) > 0  # each probe's gradient on every example
    leaked[0, 0] = False
    if len(leaked) > 1:
        leaked[1, -1] = False
    return bool(leaked.any())


class JacobianMixin:
    """The Jacobian methods of GradientTape (which supplies _gradient, _check_usable,
    _consume, _entries: (op, inputs, outputs, attrs) tuples, and _persistent)."""

    def _auto_chunk(self, what, iters, result_shape, dtype, row_extra):
        """The chunks from the memory budget (a ChunkPlan, vecjac/_src/core/memory.py), or
        None. One iteration's working memory is estimated from the recorded values:
        cotangents of the largest of them, a few at a time, plus `row_extra` elements of
        its row (the later chunks are sized from what the first used)."""
        result_bytes = check_fits(what, result_shape, dtype)
        largest = max((o.size for e in self._entries for o in e[2]), default=0)
        row_bytes = (6 * largest + row_extra) * np.dtype(dtype).itemsize
        return chunk_plan(iters, row_bytes, result_bytes)

    def _check_loop_mode(self, use_pfor, progress, what):
        self._check_usable(what)
        if not isinstance(use_pfor, (bool, np.bool_)):
            raise TypeError(f"{what}: experimental_use_pfor must be a bool, "
                            f"got {use_pfor!r}")
        if not isinstance(progress, (bool, np.bool_)):
            raise TypeError(f"{what}: progress must be a bool, got {progress!r}")
        if not use_pfor and not self._persistent:
            raise RuntimeError(f"GradientTape must be created with persistent=True to "
                               f"compute the {what} with experimental_use_pfor=False.")

    def jacobian(self, target, sources, unconnected_gradients=UnconnectedGradients.NONE,
                 parallel_iterations=None, experimental_use_pfor=True, progress=False):
        """Jacobian of `target` w.r.t. each source: shape target.shape + source.shape.

        One vector-Jacobian product per target element, vectorized by pfor
        (`parallel_iterations` elements at a time when given). progress=True shows a
        tqdm bar over the chunks when the loop runs in chunks (nothing without tqdm,
        nothing by default): one chunk is one vectorized call with no intermediate
        progress to report, so an unchunked Jacobian shows no bar; pass
        `parallel_iterations` to see one on a long Jacobian.

        >>> x = vj.constant([1.0, 2.0])
        >>> with vj.GradientTape() as tape:
        ...     tape.watch(x)
        ...     y = x * x
        >>> tape.jacobian(y, x).numpy()
        array([[2., 0.],
               [0., 4.]])
        """
        self._check_loop_mode(experimental_use_pfor, progress, "jacobian")
        mode = unconnected_mode(unconnected_gradients, "jacobian")
        if not isinstance(target, (Tensor, Variable)):
            raise TypeError(f"jacobian: target must be a single Tensor, got "
                            f"{type(target).__name__}")
        target = leaf_tensor(target, "jacobian: target")
        flat_sources = [leaf_tensor(s, "jacobian: sources") for s in nest.flatten(sources)]
        m = target.size
        tshape = target.shape

        def loop_fn(i):
            seed = lib.reshape(lib.one_hot(i, m, dtype=target.dtype), tshape)
            return self._gradient(target, list(flat_sources), seed, UnconnectedGradients.NONE)

        if m == 0 or target.dtype.kind not in "fc":
            if target.dtype.kind not in "fc":
                warnings.warn("The dtype of the target tensor must be floating (e.g. "
                              f"float32) when calling GradientTape.jacobian, got "
                              f"{target.dtype}", stacklevel=2)
            rows = [None] * len(flat_sources)
        else:
            n = sum(s.size for s in flat_sources)
            chunk = parallel_iterations if parallel_iterations is not None else \
                self._auto_chunk("jacobian", m, (m, n), target.dtype, n)
            rows = _run(loop_fn, m, chunk, experimental_use_pfor, "jacobian", progress)
        out = []
        for s, r in zip(flat_sources, rows):
            if r is None:
                out.append(None if mode is UnconnectedGradients.NONE and m else
                           lib.zeros(tshape + s.shape, dtype=s.dtype))
            else:
                out.append(lib.reshape(r, tshape + s.shape))
        self._consume()
        return nest.pack_sequence_as(sources, out)

    def batch_jacobian(self, target, source, unconnected_gradients=UnconnectedGradients.NONE,
                       parallel_iterations=None, experimental_use_pfor=True, progress=False,
                       check_independence=True):
        """Per-example Jacobian: shape (batch,) + target.shape[1:] + source.shape[1:].

        Example k of the target must depend on example k of the source only. Two extra
        vectorized iterations check that for the first and the last example (random
        weights on their outputs: their gradient must vanish on every other example;
        InteractingExamplesWarning otherwise; check_independence=False skips it). Mixing
        among the other examples alone is not seen. progress: as in `jacobian`.
        """
        self._check_loop_mode(experimental_use_pfor, progress, "batch_jacobian")
        unconnected_mode(unconnected_gradients, "batch_jacobian")
        target = leaf_tensor(target, "batch_jacobian: target")
        source = leaf_tensor(source, "batch_jacobian: source")
        if target.ndim < 2:
            raise ValueError(f"batch_jacobian: target must have rank at least 2, got shape "
                             f"{target.shape}")
        if source.ndim < 2:
            raise ValueError(f"batch_jacobian: source must have rank at least 2, got shape "
                             f"{source.shape}")
        if target.shape[0] != source.shape[0]:
            raise ValueError(f"batch_jacobian: Need first dimension of target shape "
                             f"{target.shape} and source shape {source.shape} to match (the "
                             "batch)")  # TF's wording
        batch = target.shape[0]
        n = int(math.prod(target.shape[1:]))
        out_shape = (batch,) + target.shape[1:] + source.shape[1:]
        if n == 0 or batch == 0 or target.dtype.kind not in "fc":
            self._consume()
            return lib.zeros(out_shape, dtype=target.dtype)
        # two probes: example 0 and the last example, one extra vectorized iteration each.
        # The last catches mixing that only runs forward through the batch (a cumulative
        # sum over it: example 0 depends on itself alone), example 0 the reverse. The
        # second probe costs nothing measurable (benchmarks 4 and 5, interleaved in one
        # process: minima 370 vs 366 us and 1.68 vs 1.74 ms, within noise)
        probes = 2 if check_independence and batch > 1 else 0
        iters = n + probes
        weights = _probe_weights(n, worth_structuring(iters, batch * n))
        seed_attrs = dict(batch=batch, n=n, probe=weights, dtype=np.dtype(target.dtype))

        def loop_fn(j):
            seed = lib.reshape(apply(lib.BatchJacobianSeed, j, **seed_attrs), target.shape)
            return self._gradient(target, [source], seed, UnconnectedGradients.NONE)[0]

        chunk = parallel_iterations if parallel_iterations is not None else \
            self._auto_chunk("batch_jacobian", iters, out_shape, target.dtype, 0)
        rows = _run(loop_fn, iters, chunk, experimental_use_pfor, "batch_jacobian", progress)
        self._consume()
        if rows is None:
            return lib.zeros(out_shape, dtype=target.dtype)
        if probes:
            value_read(rows, "internal", functools.partial(_leaks, n))
            if _leaks(n, rows._value):
                warnings.warn(
                    "batch_jacobian: examples in the batch are not independent (the target "
                    "of the first or last example depends on the source of other examples, "
                    "e.g. through batch normalization in training mode); the result holds, "
                    "for each example, the sum over all target examples, which is probably "
                    "not what you want. Use jacobian() for the full (batch, ..., batch, ...) "
                    "Jacobian.", InteractingExamplesWarning, stacklevel=2)
            rows = apply(lib.StridedSlice, rows, key=(slice(None, n, None),))
        perm = (1, 0) + tuple(range(2, rows.ndim))
        return lib.reshape(apply(lib.Transpose, rows, perm=perm), out_shape)
