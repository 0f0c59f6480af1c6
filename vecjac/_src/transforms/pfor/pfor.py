"""pfor(): run a loop body once for all iterations, each op replaced by its converter.

Converter contract. `op.converter(cx, *inputs, **attrs)` receives every input as a plain
Tensor; `cx.stacked[k]` says whether input k varies over the loop, in which case its
axis 0 is the loop axis (size `cx.iters`). Attrs are the op's own, per-iteration (axes
normalized to non-negative ints by the public function). The converter builds the
outputs *with vecjac ops* (so tapes outside the loop record them) and returns them
stacked (loop axis 0), wrapping any loop-invariant output in `Unstacked`, or returns
NotImplemented to use the while-loop fallback for this call.

Levels. Each loop draws a level from the counter tapes use. dispatch() runs the converter
with tapes newer than the loop masked, then records the per-iteration op on them: a tape
created inside loop_fn sees per-iteration values; a tape created before sees the
vectorized computation. A tape sees each op at exactly one level (ARCHITECTURE.md 3, 5).
"""
import contextlib

import numpy as np

from vecjac._src.core import nest
from vecjac._src.core.context import (Transform, alone, alone_but_observed, hide,
                                      observe_forward, state, unhide)
from vecjac._src.core.dispatch import apply, convert_to_tensor, own_output, record
from vecjac._src.core.errors import reraise_value_left
from vecjac._src.core.flags import NO_FAST_PATHS
from vecjac._src.core.progress import chunk_progress
from vecjac._src.core.registry import lib
from vecjac._src.core.tensor import BorrowedTensor, Tensor
from vecjac._src.transforms.pfor.checks import (_check_converted, _check_flag, _check_iters,
                                                _check_parallel_iterations)
from vecjac._src.transforms.pfor.chunks import run_chunked
from vecjac._src.transforms.pfor.converters import broadcasting, elementwise
from vecjac._src.transforms.pfor.fallback import while_loop_fallback
from vecjac._src.transforms.pfor.pfor_config import with_config
from vecjac._src.transforms.pfor.stacked import StackedTensor, Unstacked
from vecjac._src.transforms.pfor.structured import (LazyStacked, OneHotStacked, is_structured,
                                                    seed_rows, worth_structuring)


class ConvertContext:
    """What a converter knows about the call: the loop and which inputs are stacked."""

    __slots__ = ("loop", "stacked")

    def __init__(self, loop, stacked):
        self.loop = loop
        self.stacked = stacked

    @property
    def iters(self):
        return self.loop.iters

    def stack(self, x):
        """A loop-invariant Tensor tiled along a new loop axis 0 (a broadcast view)."""
        return lib.broadcast_to(lib.expand_dims(x, 0), (self.iters,) + x.shape)

    def stack_all(self, inputs):
        return [x if s else self.stack(x) for x, s in zip(inputs, self.stacked)]

    def is_loop_index(self, x):
        """True when `x` is this loop's own index 0..iters-1 (no chunk offset)."""
        return x is self.loop.index._plain and self.loop.offset == 0


class PFor(Transform):
    """One active vectorized loop (one chunk of it, when parallel_iterations splits it).

    On the transform stack it follows its stacked values through `Tensor._pfor` (no
    role list: apply() finds the loop from the value) and processes every op they reach.
    """

    def __init__(self, iters, offset=0, fallback_to_while_loop=True, warn=False):
        self.iters = iters
        self.offset = offset
        self.fallback_to_while_loop = fallback_to_while_loop
        self.warn = warn
        self.active = True
        self.index = StackedTensor(Tensor(np.arange(offset, offset + iters)), self)
        self._local = None
        # bytes of the loop values created so far (dense stacked values and structured
        # forms): the working memory a chunked Jacobian sizes its next chunks from
        self.dense_bytes = 0

    @property
    def local_index(self):
        """0..iters-1 as a loop-variant scalar (equals `index` unless chunked)."""
        if self.offset == 0:
            return self.index
        if self._local is None:
            self._local = StackedTensor(Tensor(np.arange(self.iters)), self)
        return self._local

    def process(self, op, tensors, attrs):
        # runs for every op inside a loop: plain loops and inlined checks, no generators
        if not self.active:
            raise ValueError(f"{op.name}: a loop-variant value is used after its pfor / "
                             "vectorized_map has finished; return it from loop_fn instead")
        if type(op).converter in _PLAIN_FAMILIES:
            fast = self._elementwise_fast(op, tensors, attrs)
            if fast is not None:
                return fast
        elif op.stacked_attrs is not None:
            fast = self._layout_fast(op, tensors, attrs)
            if fast is not None:
                return fast
        elif op.stacked_forward is not None:
            fast = self._batched_fast(op, tensors, attrs)
            if fast is not None:
                return fast
        stacked = tuple([t._pfor is self for t in tensors])
        cx = ConvertContext(self, stacked)
        hidden = hide(self.level)
        try:
            outs = NotImplemented
            rule = op.structured
            if rule is not None and _any_structured(tensors, self):
                # structure kept where the op has a rule for its kind (structured.py);
                # other structured inputs reach the rule densely
                handled = getattr(rule, "kinds", _ONE_HOT)
                as_is = [type(t) in handled and t._pfor is self for t in tensors]
                if any(as_is):
                    mixed = tuple([t if keep else t._plain if s else t
                                   for t, keep, s in zip(tensors, as_is, stacked)])
                    outs = rule(cx, *mixed, **attrs)
            if outs is NotImplemented:
                plain = tuple([t._plain if s else t for t, s in zip(tensors, stacked)])
                if op.converter is not None:
                    outs = op.converter(cx, *plain, **attrs)
                    if outs is not NotImplemented and op.checked_converter:
                        _check_converted(op, outs, self)
                if outs is NotImplemented:
                    outs = while_loop_fallback(cx, op, plain, attrs)
            single = type(outs) is not tuple and type(outs) is not list
            outs = [outs] if single else list(outs)
            for k, o in enumerate(outs):
                if is_structured(o, self):
                    self.dense_bytes += o.held_bytes
                    continue  # already a loop value, with an id of its own
                unstacked = type(o) is Unstacked
                t = o.tensor if unstacked else o
                tid = t._tid
                for x in tensors:
                    if x._tid == tid:  # a pass-through needs its own id on inner tapes
                        t = lib.identity(t)
                        break
                if not unstacked:
                    self.dense_bytes += t._value.nbytes
                    outs[k] = StackedTensor(t, self)
        finally:
            unhide(hidden)
        outputs = tuple(outs)
        if state.tapes:
            record(op, tensors, outputs, attrs, above=self.level)
        return outputs[0] if single else outputs

    def _elementwise_fast(self, op, tensors, attrs):
        """The broadcasting / elementwise rule computed in place, when no transform could
        see the converter's ops (context.alone_but_observed: no tape or follower outside
        this loop) and the inputs are plain stacked or invariant values: NumPy on the
        stacked arrays, with no nested dispatch. Most ops of a forward-mode Jacobian take
        this path. Under vj.function's capture (an observer) the steps are those the
        converter would record, told to it directly: Reshape where a stacked input needs
        its loop axis lined up, then the op on the stacked values. None when it does not
        apply (the converter runs as usual)."""
        if not alone_but_observed(self):
            return None
        observed = state.observers
        rank, values, borrowed, plain = 0, [], [], []
        low = high = -1  # the lowest and highest per-iteration rank of stacked inputs
        for t in tensors:
            stacked = type(t) is StackedTensor and t._pfor is self
            if stacked:
                t = t._plain
            if type(t) is BorrowedTensor:  # a caller's array, or a lent view of one
                if observed:  # (its reshaped views: the converter's route copies them)
                    return None
                borrowed.append(t)
            elif type(t) is not Tensor:
                return None
            v = t._value
            r = v.ndim - stacked
            if stacked:
                low = r if low < 0 or r < low else low
                high = r if r > high else high
            values.append(v)
            plain.append(t)
            if r > rank:
                rank = r
        if low != high or rank != high:
            for k, t in enumerate(tensors):  # line the loop axis up (broadcasting)
                v = values[k]
                if type(t) is StackedTensor and v.ndim - 1 < rank:
                    shape = (v.shape[0],) + (1,) * (rank - v.ndim + 1) + v.shape[1:]
                    values[k] = v.reshape(shape)
                    if observed:
                        lined_up = Tensor(values[k])
                        observe_forward(lib.Reshape, (plain[k],), (lined_up,),
                                        {"shape": shape})
                        plain[k] = lined_up
        out = op.forward(*values, **attrs)
        if op.n_outputs == 1:
            out = out if type(out) is np.ndarray else np.asarray(out)
            self.dense_bytes += out.nbytes
            result = own_output(out, borrowed) if borrowed else Tensor(out)
            if observed:
                observe_forward(op, tuple(plain), (result,), attrs)
            return StackedTensor(result, self)
        outs = [np.asarray(o) for o in out]
        self.dense_bytes += sum([o.nbytes for o in outs])
        results = tuple([own_output(o, borrowed) for o in outs])
        if observed:
            observe_forward(op, tuple(plain), results, attrs)
        return tuple([StackedTensor(r, self) for r in results])

    def _layout_fast(self, op, tensors, attrs):
        """A layout op (getitem, stack, transpose) on plain stacked inputs only, when no
        transform could see the converter's ops (as _elementwise_fast): the op's forward
        on the stacked arrays with its `stacked_attrs`, with no nested dispatch (under a
        capture, the one step the converter records: the op with those attrs). None
        when it does not apply."""
        if not alone_but_observed(self):
            return None
        plain = []
        for t in tensors:
            if type(t) is not StackedTensor or t._pfor is not self or (
                    type(t._plain) is not Tensor and type(t._plain) is not BorrowedTensor):
                return None
            plain.append(t._plain)
        stacked_attrs = op.stacked_attrs(**attrs)
        out = op.forward(*[t._value for t in plain], **stacked_attrs)
        out = out if type(out) is np.ndarray else np.asarray(out)
        self.dense_bytes += out.nbytes
        result = own_output(out, plain)  # (views of a lent view: lent)
        if state.observers:
            observe_forward(op, tuple(plain), (result,), stacked_attrs)
        return StackedTensor(result, self)

    def _batched_fast(self, op, tensors, attrs):
        """An op whose forward vectorizes by itself (`stacked_forward`: MatVec with a
        plain matrix, OneHot of the loop index) on plain stacked or invariant inputs, when
        no transform could see the converter's ops (as _elementwise_fast). None when it
        does not apply."""
        if not alone(self):
            return None
        plain, stacked = [], []
        for t in tensors:
            s = type(t) is StackedTensor and t._pfor is self
            t = t._plain if s else t
            if type(t) is not Tensor and type(t) is not BorrowedTensor:
                return None
            plain.append(t)
            stacked.append(s)
        out = op.stacked_forward(ConvertContext(self, stacked), *plain, **attrs)
        if out is None:
            return None
        out = own_output(out if type(out) is np.ndarray else np.asarray(out), plain)
        self.dense_bytes += out._value.nbytes
        return StackedTensor(out, self)  # (a view of a caller's matrix: lent or copied)

    @contextlib.contextmanager
    def reopened(self):
        """Make a finished loop active again, as the innermost transform (a fresh level),
        so that code written for its iterations (a custom gradient's grad_fn, called
        by a tape outside the loop) runs vectorized on its stacked values."""
        if self.active:
            yield self
            return
        self.active = True
        self._push()
        try:
            yield self
        finally:
            self.active = False
            self._pop()

    def index_one_hot(self, depth, dtype):
        """one_hot(index, depth, axis=0) of this loop's index: a jacfwd's seeds. Dense
        seeds are the shared identity rows, wrapped directly: OneHot has no derivative
        and its rule for the loop index calls no op, so no transform could see more
        through apply(). Structured seeds (large), and all seeds under
        VECJAC_NO_FAST_PATHS, go through apply (OneHot's converter)."""
        if not NO_FAST_PATHS and not worth_structuring(self.iters, depth):
            rows = seed_rows(self.iters, depth, self.offset, np.dtype(dtype))
            self.dense_bytes += rows.nbytes
            return StackedTensor(Tensor(rows), self)
        return apply(lib.OneHot, self.index, depth=depth, axis=0, on_value=1, off_value=0,
                     dtype=dtype)

    def stacked_view(self, plain):
        """The loop-variant value whose iteration k is plain[k]."""
        self.dense_bytes += plain._value.nbytes
        return StackedTensor(plain, self)

    def plain_view(self, x):
        """All iterations of a loop value, stacked on axis 0 (an invariant one tiled)."""
        return x._plain if x._pfor is self else ConvertContext(self, ()).stack(x)

    def total(self, x):
        """The sum over iterations of a loop value."""
        if x._pfor is self:
            return lib.reduce_sum(x._plain, axis=0)
        return lib.multiply(x, self.iters)

    def one_hot_seed(self, seed):
        """Cotangent of the stacked plain value whose k-th slice carries `seed`."""
        oh = lib.one_hot(self.local_index, self.iters, dtype=seed.dtype)
        oh = lib.reshape(oh, (self.iters,) + (1,) * len(seed.shape))
        return lib.multiply(oh, lib.expand_dims(seed, 0))

    def own_slice(self, g):
        """Per-iteration slice k of a cotangent of the whole stacked value."""
        return lib.gather(g, self.local_index)


_ONE_HOT = (OneHotStacked,)
_PLAIN_FAMILIES = (broadcasting, elementwise)


def _any_structured(tensors, loop):
    for t in tensors:
        if isinstance(t, LazyStacked) and t._pfor is loop:
            return True
    return False


def _finish(out, loop, what="pfor", lazy=False):
    """Loop outputs as plain stacked Tensors (loop-invariant ones tiled); with `lazy`,
    structured outputs stay structured (a chunked loop writes them into its result)."""
    def one(x):
        if x is None:
            return None
        if not isinstance(x, Tensor):
            x = convert_to_tensor(x, name=f"{what}: loop_fn output")
        if x._pfor is loop:
            return x if lazy and isinstance(x, LazyStacked) else x._plain
        if x._pfor is not None and x._pfor.level > loop.level:
            raise ValueError("pfor: loop_fn returned a value of an inner loop that has "
                             "finished")
        return ConvertContext(loop, ()).stack(x)
    if type(out) is list and not lazy and not any([nest.is_nested(x) for x in out]):
        # a flat list (of this loop's values, usually): the common case, no nest walked
        return [x._plain if isinstance(x, Tensor) and x._pfor is loop else one(x)
                for x in out]
    return [one(x) for x in nest.flatten(out)]


def _run_chunk(loop_fn, iters, offset, fallback, warn, lazy=False):
    """(loop_fn's output, its flat loop outputs, the bytes of loop values created)."""
    loop = PFor(iters, offset, fallback, warn)
    loop._push()
    try:
        out = loop_fn(loop.index)
        flat = _finish(out, loop, lazy=lazy)
    except ValueError as exc:
        reraise_value_left(exc)  # `buf[i] = value`: our TypeError, not NumPy's wrapping
        raise
    finally:
        loop.active = False
        loop.index = loop._local = None  # break the loop <-> index cycle: no GC needed
        loop._pop()
    return out, flat, loop.dense_bytes


def pfor(loop_fn, iters, fallback_to_while_loop=True, parallel_iterations=None, warn=False,
         progress=False):
    """Vectorized `[loop_fn(i) for i in range(iters)]`, stacked along a new axis 0.

    `loop_fn(i)` receives the loop index as a loop-variant int scalar and returns a
    Tensor or a nest of Tensors (None leaves stay None); each output has shape
    (iters,) + its per-iteration shape; a loop_fn with a `pfor_config` parameter gets
    TF's reductions across iterations (vectorize/pfor_config.py). `parallel_iterations=p`
    runs p iterations at a time (bounded memory, same result). Ops without a converter
    run per iteration (warned once per op, or always with warn=True);
    fallback_to_while_loop=False makes that a ValueError instead. `progress=True` shows a tqdm bar over the chunks (when
    tqdm is installed and the loop runs in more than one chunk).

    >>> vj.vectorize.pfor(lambda i: vj.cast(i, vj.float64) ** 2, 4).numpy()
    array([0., 1., 4., 9.])
    """
    if not callable(loop_fn):
        raise TypeError(f"pfor: loop_fn must be callable, got {type(loop_fn).__name__}")
    iters = _check_iters(iters, "pfor")
    if fallback_to_while_loop is not True:  # (the defaults skip the checks: jacfwd's path)
        _check_flag(fallback_to_while_loop, "pfor", "fallback_to_while_loop")
    if warn is not False:
        _check_flag(warn, "pfor", "warn")
    p = None if parallel_iterations is None else \
        _check_parallel_iterations(parallel_iterations, "pfor")
    if p == 1:  # as TF
        raise ValueError("pfor: parallel_iterations=1 runs one iteration at a time; use "
                         "vj.vectorize.for_loop for a sequential loop")
    loop_fn = with_config(loop_fn, p is not None and p < iters)  # TF's pfor_config
    return _run(loop_fn, iters, p, None, fallback_to_while_loop, warn, progress)


def pfor_budgeted(loop_fn, iters, plan, progress=False):
    """pfor chunked by a memory budget's ChunkPlan (vecjac/_src/core/memory.py): the
    first chunk of plan.first iterations, the next ones sized from what it used. For
    vecjac's own Jacobians (loop_fn and plan built valid); one iteration per chunk is
    allowed here."""
    return _run(with_config(loop_fn, True), iters, plan.first, plan, True, False, progress)


def _run(loop_fn, iters, p, plan, fallback, warn, progress):
    if p is None or p >= iters:
        out, flat, _ = _run_chunk(loop_fn, iters, 0, fallback, warn)
        return flat if type(out) is list and len(out) == len(flat) and \
            not any([nest.is_nested(x) for x in out]) else nest.pack_sequence_as(out, flat)

    def run(n, start, lazy):
        return _run_chunk(loop_fn, n, start, fallback, warn, lazy)
    with chunk_progress(progress, iters, "pfor") as bar:
        return run_chunked(run, iters, p, bar, plan)


def for_loop(loop_fn, iters, parallel_iterations=None, progress=False):
    """The explicit loop `[loop_fn(i) for i in range(iters)]`, stacked: pfor's oracle.

    `parallel_iterations` is accepted for API symmetry; the loop is sequential.
    `progress=True` shows a tqdm bar over the iterations.
    """
    if not callable(loop_fn):
        raise TypeError(f"for_loop: loop_fn must be callable, got {type(loop_fn).__name__}")
    iters = _check_iters(iters, "for_loop")
    _check_parallel_iterations(parallel_iterations, "for_loop")
    if iters == 0:
        return pfor(loop_fn, 0)
    results, structure = [], None
    with chunk_progress(progress, iters, "for_loop") as bar:
        for i in range(iters):
            out = loop_fn(Tensor(np.asarray(i)))
            structure = out
            results.append([None if x is None else
                            convert_to_tensor(x, name="for_loop: loop_fn output")
                            for x in nest.flatten(out)])
            if bar is not None:
                bar(1)
    flat = []
    for k in range(len(results[0])):
        parts = [r[k] for r in results]
        flat.append(None if parts[0] is None else lib.stack(parts, axis=0))
    return nest.pack_sequence_as(structure, flat)


def vectorized_map(fn, elems, fallback_to_while_loop=True, warn=True):
    """`fn` applied to each slice of `elems` along axis 0, vectorized (TF's vectorized_map).

    `elems` is a Tensor or a nest of Tensors with the same first dimension (a first
    dimension of 1 broadcasts); `fn` receives the slices in the same structure.
    """
    if not callable(fn):
        raise TypeError(f"vectorized_map: fn must be callable, got {type(fn).__name__}")
    _check_flag(fallback_to_while_loop, "vectorized_map", "fallback_to_while_loop")
    _check_flag(warn, "vectorized_map", "warn")
    flat = [convert_to_tensor(e, name="vectorized_map: elems") for e in nest.flatten(elems)]
    if not flat:
        raise ValueError("vectorized_map: elems is empty")
    for e in flat:
        if e.ndim == 0:
            raise ValueError("vectorized_map: every element of elems needs rank >= 1, "
                             "got a scalar")
    sizes = {e.shape[0] for e in flat}
    n = max(sizes)
    if not sizes <= {1, n}:
        raise ValueError(f"vectorized_map: elems have different first dimensions "
                         f"{[e.shape[0] for e in flat]}")

    def loop_fn(i):
        sliced = [lib.gather(e, i) if e.shape[0] == n else e[0] for e in flat]
        out = fn(nest.pack_sequence_as(elems, sliced))
        leaves = [x if x is None or isinstance(x, Tensor) else
                  convert_to_tensor(x, name="vectorized_map: fn output")
                  for x in nest.flatten(out)]
        return nest.pack_sequence_as(out, leaves)
    return pfor(loop_fn, n, fallback_to_while_loop=fallback_to_while_loop, warn=warn)
