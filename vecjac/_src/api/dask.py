"""Jacobians as Dask arrays: row blocks (or batch chunks) are tasks of a Dask graph, and
each task runs vecjac's own pfor over its block (issue 14; ARCHITECTURE.md 6).

    pip install vecjac[dask]        # dask[array,distributed], cloudpickle

- `jacobian(f, argnums=0, row_block=None)(*args)`: a `dask.array.Array` of shape
  `out + in`, chunked along the output axes, one task per block of at most `row_block`
  output elements (rows of the Jacobian); input axes are one chunk.
- `batch_jacobian(f, batch_block=None)(X)`: per-example Jacobians, shape
  `(batch,) + out + in`, chunked along axis 0 like X (one task per chunk of X).

Nothing is computed until you ask: `.compute()` (local threads, `scheduler="processes"`
or `"synchronous"`, or the active `distributed.Client`), `.persist()`, or write the
blocks to storage without holding the whole Jacobian anywhere:

    J.to_zarr("jac.zarr")                  # or dask.array.to_zarr(J, url)
    dask.array.to_hdf5("jac.h5", "/J", J)  # h5py; local schedulers

Progress goes through Dask's own diagnostics: `with dask.diagnostics.ProgressBar():
J.compute()` locally; with a client, `J = J.persist(); distributed.progress(J)`.

What travels: f, its arguments and whatever f closes over are pickled (cloudpickle) once
on the client into a single graph key; every block task depends on that key, so a worker
receives them once, not once per task (with the distributed scheduler; Dask's
"processes" scheduler ships task inputs with every task). Each task sends back its
block, rows x input size x itemsize bytes. A worker that dies costs only the recomputation
of the blocks it held: the graph has no side effects, and Dask reschedules them.

All argument checks (f callable and picklable, argnums, row_block, X) run on the client
before anything is submitted. See docs/scaling_out.md for sizes and measurements.
"""
import hashlib
import math
import numbers
import operator
import warnings

try:
    import cloudpickle
    import dask
    import dask.array as da
    from dask.highlevelgraph import HighLevelGraph
except ImportError as e:  # the optional dependency guard
    raise ImportError(f"vecjac.dask needs dask[array] and cloudpickle, which are not "
                      f"installed ({e}); install them with: pip install vecjac[dask]") from e

import numpy as np

from vecjac._src.api import dask_blocks as blocks
from vecjac._src.api.functional import vjp
from vecjac._src.api.jacobians import batch_jacobian as _batch_jacobian
from vecjac._src.core import nest
from vecjac._src.core.tensor import Tensor
from vecjac._src.core.variables import Variable
from vecjac._src.transforms.tape.jacobians import InteractingExamplesWarning

__all__ = ["jacobian", "batch_jacobian", "ROW_BLOCK_BYTES"]

# Memory budget of one block of the result (rows x input size x itemsize): 256 MiB, the
# default row_block / batch_block. A task's peak is this plus pfor's intermediates (the
# benchmark's workers peaked at 2.5x their 268 MB blocks; docs/scaling_out.md).
ROW_BLOCK_BYTES = 256 * 2**20


# -- checks (client side, before anything is submitted) ----------------------------------
def _check_callable(f, what):
    if not callable(f):
        raise TypeError(f"vecjac._src.api.dask.{what}: f must be callable, got {type(f).__name__}")


def _is_int(x):
    return isinstance(x, numbers.Integral) and not isinstance(x, (bool, np.bool_))


def _check_block(value, name, what):
    """None, or a positive int (rows per block / examples per block)."""
    if value is None:
        return None
    if not _is_int(value):
        raise TypeError(f"vecjac._src.api.dask.{what}: {name} must be a positive int or None, got "
                        f"{value!r} ({type(value).__name__})")
    if value <= 0:
        raise ValueError(f"vecjac._src.api.dask.{what}: {name} must be a positive int or None, got "
                         f"{value}")
    return int(value)


def _check_argnums(argnums, what):
    if isinstance(argnums, (tuple, list)):
        if not argnums or not all(_is_int(a) for a in argnums):
            raise TypeError(f"vecjac._src.api.dask.{what}: argnums must be an int or a non-empty "
                            f"tuple of ints, got {argnums!r}")
        return tuple(int(a) for a in argnums)
    if not _is_int(argnums):
        raise TypeError(f"vecjac._src.api.dask.{what}: argnums must be an int or a non-empty tuple "
                        f"of ints, got {argnums!r} ({type(argnums).__name__})")
    return int(argnums)


def _positions(argnums, nargs, what):
    out = []
    for a in (argnums if isinstance(argnums, tuple) else (argnums,)):
        if not -nargs <= a < nargs:
            raise ValueError(f"vecjac._src.api.dask.{what}: argnums {a} is out of range: f was "
                             f"called with {nargs} positional argument{'s' * (nargs != 1)}")
        out.append(a % nargs)
    if len(set(out)) != len(out):
        raise ValueError(f"vecjac._src.api.dask.{what}: argnums {argnums} name the same argument "
                         "twice")
    return tuple(out)


def _pickled(obj, label, what):
    """cloudpickle.dumps(obj), or a TypeError saying what could not be pickled."""
    try:
        return cloudpickle.dumps(obj)
    except Exception as e:  # noqa: BLE001  (pickling raises TypeError, PicklingError, ...)
        raise TypeError(f"vecjac._src.api.dask.{what}: {label} cannot be pickled to be sent to Dask "
                        f"workers ({type(e).__name__}: {e}); it must not hold or close over "
                        "locks, open files, sockets, generators or other objects bound to "
                        "this process (create those inside f instead)") from None


def _float_array(x, label, what):
    """A differentiated argument as a floating NumPy array."""
    if nest.is_nested(x):
        raise TypeError(f"vecjac._src.api.dask.{what}: {label} must be an array (NumPy array, "
                        f"Tensor or float), got a {type(x).__name__}; nests are not "
                        "supported here: pass np.asarray(...) or one array per argument")
    try:
        arr = np.asarray(x)
    except Exception as e:  # noqa: BLE001
        raise TypeError(f"vecjac._src.api.dask.{what}: {label} must be an array, got "
                        f"{type(x).__name__} ({e})") from None
    if arr.dtype.kind != "f":
        raise TypeError(f"vecjac._src.api.dask.{what}: {label} must be real floating point (float32 "
                        f"or float64) to be differentiated, got dtype {arr.dtype}")
    return arr


def _token(pieces, *rest):
    """A graph-name token for pickled pieces (bytes) and a few small values. Hashes the
    bytes directly: dask.base.tokenize goes through their repr (0.4 s for 16 MB)."""
    h = hashlib.sha256()
    for p in pieces:
        h.update(len(p).to_bytes(8, "little"))
        h.update(p)
    h.update(repr(rest).encode())
    return h.hexdigest()[:32]


def _output_info(y, what):
    if not hasattr(y, "shape") or not hasattr(y, "dtype"):
        raise TypeError(f"vecjac._src.api.dask.{what}: f must return one Tensor, got "
                        f"{type(y).__name__}")
    return tuple(y.shape)


# -- jacobian -----------------------------------------------------------------------------
def jacobian(f, argnums=0, row_block=None):
    """A function returning the Jacobian of `f` as a lazy `dask.array.Array`.

    For an output of shape `out` and an argument of shape `a`, the Jacobian has shape
    `out + a` and the argument's dtype; `argnums` a tuple gives a tuple of arrays (their
    blocks come from the same tasks). Each block is one task: a forward pass of f and
    vecjac's pfor over at most `row_block` rows (output elements), the VJPs with one-hot
    seeds for rows [start, start + rows). Chunks: along the leading output axis when
    `row_block >= prod(out[1:])` (row_block // prod(out[1:]) slices per block), otherwise
    single indices on leading axes and a range on the first axis whose trailing slice
    fits (see `vecjac._src.api.dask_blocks.output_chunks`); the argument's axes are one chunk.
    Default `row_block`: ROW_BLOCK_BYTES (256 MiB) // (argument size x itemsize), at
    least 1. f is evaluated once on the client to learn the output's shape.

    f returns one Tensor; differentiated arguments are arrays (NumPy, Tensors, floats);
    other arguments and keyword arguments are passed through. Everything must pickle
    (cloudpickle): closures and lambdas do; locks, open files and sockets do not.

    >>> J = vj.dask.jacobian(lambda x: vj.tanh(x) * vj.reduce_sum(x), row_block=2)(
    ...     np.ones(5))
    >>> J.shape, J.chunks[0]
    ((5, 5), (2, 2, 1))
    >>> np.allclose(J.compute(), vj.jacobian(lambda x: vj.tanh(x) * vj.reduce_sum(x))(
    ...     np.ones(5)))
    True
    """
    what = "jacobian"
    _check_callable(f, what)
    argnums = _check_argnums(argnums, what)
    row_block = _check_block(row_block, "row_block", what)
    _pickled(f, "f", what)  # fail now rather than at the first call

    def jacobian_fn(*args, **kwargs):
        positions = _positions(argnums, len(args), what)
        args = list(args)
        for p in positions:
            args[p] = _float_array(args[p], f"argument {p}", what)
        # pickled piece by piece, before f runs here, so that an error names the piece (f
        # is pickled again: a closure sees its variables' values at this call)
        pickled = [_pickled(f, "f", what), _pickled(kwargs, "the keyword arguments", what)]
        pickled += [_pickled(a, f"argument {k}", what) for k, a in enumerate(args)]
        diff = [args[p] for p in positions]
        y, _ = vjp(blocks._bind(f, args, kwargs, positions), *diff)
        out_shape = _output_info(y, what)
        dtypes = tuple(a.dtype for a in diff)
        width = sum(a.size for a in diff)
        rb = row_block or max(1, ROW_BLOCK_BYTES // max(1, width * max(d.itemsize
                                                                       for d in dtypes)))
        payload = pickled[:2] + [cloudpickle.dumps((positions, out_shape, dtypes))] + \
            pickled[2:]
        arrays = _jacobian_graph(payload, out_shape, rb, diff, dtypes)
        return arrays if isinstance(argnums, tuple) else arrays[0]
    return jacobian_fn


def _jacobian_graph(payload, out_shape, row_block, diff, dtypes):
    """One key unpickling the payload, one task per row block (computing the block for
    every differentiated argument), and per argument an array layer picking its part."""
    token = _token(payload, row_block)
    payload_key = f"vecjac-jacobian-payload-{token}"
    raw = f"vecjac-jacobian-blocks-{token}"
    chunks = blocks.output_chunks(out_shape, row_block)
    layer = {payload_key: (blocks.load_payload, list(payload))}
    picks = [{} for _ in diff]
    names = [f"vecjac-jacobian-arg{k}-{token}" for k in range(len(diff))]
    for idx, start, shape in blocks.iter_blocks(out_shape, chunks):
        # legacy tuple tasks: the string payload_key is a reference to that key
        layer[(raw,) + idx] = (blocks.jacobian_block, payload_key, start, shape)
        for k, a in enumerate(diff):
            picks[k][(names[k],) + idx + (0,) * a.ndim] = (operator.getitem, (raw,) + idx, k)
    layers = {raw: layer, **dict(zip(names, picks))}
    deps = {raw: set(), **{n: {raw} for n in names}}
    graph = HighLevelGraph(layers, deps)
    return tuple(da.Array(graph, name, chunks=chunks + tuple((d,) for d in a.shape),
                          dtype=dt, meta=np.empty((0,) * (len(out_shape) + a.ndim), dt))
                 for name, a, dt in zip(names, diff, dtypes))


# -- batch_jacobian -----------------------------------------------------------------------
def _batch_array(X, batch_block, what):
    """X as a dask array chunked along axis 0 only (NumPy input wrapped, chunk sizes
    from batch_block or, for NumPy X, later from the memory budget)."""
    if isinstance(X, (Tensor, Variable)):
        X = np.asarray(X)
    if not isinstance(X, (da.Array, np.ndarray)):
        raise TypeError(f"vecjac._src.api.dask.{what}: X must be a dask.array.Array or a NumPy "
                        f"array of shape (batch, ...), got {type(X).__name__}")
    if X.ndim < 2:
        raise ValueError(f"vecjac._src.api.dask.{what}: X must have rank >= 2 (batch, ...), got "
                         f"shape {X.shape}")
    if X.dtype.kind != "f":
        raise TypeError(f"vecjac._src.api.dask.{what}: X must be real floating point (float32 or "
                        f"float64), got dtype {X.dtype}")
    if isinstance(X, da.Array):
        if any(math.isnan(c) for c in X.chunks[0]):
            raise ValueError(f"vecjac._src.api.dask.{what}: X has unknown chunk sizes along the batch "
                             "axis; call X.compute_chunk_sizes() first")
        split = [ax for ax in range(1, X.ndim) if len(X.chunks[ax]) > 1]
        if split:
            fix = ", ".join(f"{ax}: -1" for ax in range(1, X.ndim))
            raise ValueError(f"vecjac._src.api.dask.{what}: X must be chunked along the batch axis "
                             f"(axis 0) only, got chunks {X.chunks} (split along axis "
                             f"{', '.join(map(str, split))}); each task needs whole "
                             f"examples: rechunk with X.rechunk({{{fix}}})")
        if batch_block is not None:
            X = X.rechunk({0: batch_block})
    return X


def batch_jacobian(f, batch_block=None):
    """A function returning per-example Jacobians as a lazy `dask.array.Array`.

    `f` maps X of shape `(batch,) + a` to `(batch,) + out`, example k depending on
    example k only, for any batch size; the result has shape `(batch,) + out + a`,
    chunked along axis 0 exactly like X (other axes one chunk). Each chunk is one task
    running `vj.batch_jacobian(f)` on that chunk of X (`map_blocks`).

    X: a dask array chunked along axis 0 only (otherwise ValueError: rechunk with
    `X.rechunk({1: -1, ...})`), or a NumPy array (or Tensor), wrapped with
    `da.from_array` in chunks of `batch_block` examples. `batch_block=None` picks, for
    NumPy X, ROW_BLOCK_BYTES (256 MiB) // (bytes of one example's Jacobian), at least 1;
    a given batch_block also rechunks a dask X along axis 0.

    The client computes the first (up to) two examples of X and their batch Jacobian
    once, to learn the output shape and dtype; vecjac's check for examples that interact
    (`vj.InteractingExamplesWarning`) therefore warns on the client.

    >>> X = dask.array.ones((10, 3), chunks=(4, 3))
    >>> J = vj.dask.batch_jacobian(lambda x: x ** 2)(X)
    >>> J.shape, J.chunks[0]
    ((10, 3, 3), (4, 4, 2))
    """
    what = "batch_jacobian"
    _check_callable(f, what)
    batch_block = _check_block(batch_block, "batch_block", what)
    _pickled(f, "f", what)

    def batch_jacobian_fn(X):
        X = _batch_array(X, batch_block, what)
        f_bytes = _pickled(f, "f", what)
        head = np.asarray(X[:2]) if X.shape[0] else np.zeros((1,) + X.shape[1:], X.dtype)
        with warnings.catch_warnings():
            # interactions are worth a warning for the user's X, not for the zero probe
            if not X.shape[0]:
                warnings.simplefilter("ignore", InteractingExamplesWarning)
            probe = np.asarray(_batch_jacobian(f)(head))
        in_tail = tuple(X.shape[1:])
        out_tail = probe.shape[1:len(probe.shape) - len(in_tail)]
        dtype = probe.dtype
        if isinstance(X, np.ndarray):
            per_example = max(1, math.prod(out_tail) * math.prod(in_tail) * dtype.itemsize)
            rows = batch_block or max(1, ROW_BLOCK_BYTES // per_example)
            X = da.from_array(X, chunks=(rows,) + in_tail)
        token = _token([f_bytes], X.name)
        loaded = dask.delayed(blocks.load_payload, pure=True)(
            [f_bytes], dask_key_name=f"vecjac-batch-jacobian-payload-{token}")
        ndim = 1 + len(out_tail) + len(in_tail)
        return da.map_blocks(
            blocks.batch_jacobian_block, X, loaded, out_tail, dtype,
            name=f"vecjac-batch-jacobian-{token}", dtype=dtype,
            chunks=(X.chunks[0],) + tuple((d,) for d in out_tail + in_tail),
            new_axis=list(range(X.ndim, ndim)), meta=np.empty((0,) * ndim, dtype))
    return batch_jacobian_fn
