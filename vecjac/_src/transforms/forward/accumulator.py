"""ForwardAccumulator: forward-mode differentiation (TF's tf.autodiff.ForwardAccumulator).

An accumulator maps the values it follows (by tensor id) to their tangents. On the
transform stack it is a follower: apply() hands it every op with an input it holds a
tangent for, and `process` computes the primal outputs and their tangents with the op's
`jvp` rule (vecjac/_src/transforms/forward/rules.py), both through apply() with the accumulator and every
transform entered inside it hidden, so that the transforms outside see the work:
- a tape outside differentiates the JVP (back-over-forward);
- an accumulator outside pushes its own tangents through the JVP (higher order);
- a pfor loop outside vectorizes it: with a stacked tangent, that is jacfwd.
The op itself is then recorded on the tapes entered inside the accumulator, which see it
as a primitive (forward-over-back: acc.jvp(tape.gradient(...)) inside the `with`).

An op without a jvp rule gets the one derived from its VJP: the VJP is linear in the
cotangent u, so J t is the gradient with respect to u of <vjp(u), t>, taken at u = 0.
That costs a backward pass and its transpose, so hot ops carry their own rule.

Tangents of values that no longer exist are dropped (a weak reference on each output),
so a long simulation under an accumulator holds only the tangents still reachable.
"""
import weakref

import numpy as np

from vecjac._src.core import nest
from vecjac._src.core.context import (Transform, alone, alone_but_observed, hide, implicit,
                                      observe_forward, state, unhide)
from vecjac._src.core.dispatch import apply, convert_to_tensor, innermost_loop, own_output, record
from vecjac._src.core.errors import reraise_value_left, value_left
from vecjac._src.core.registry import Entry, lib
from vecjac._src.core.tensor import BorrowedTensor, Tensor
from vecjac._src.core.unconnected import (UnconnectedGradients, cut_by, refuse_complex_entry,
                                          unconnected_mode)
from vecjac._src.core.variables import Variable
from vecjac._src.transforms.forward.rules import multilinear
from vecjac._src.transforms.tape import zeros
from vecjac._src.transforms.tape.tape import GradientTape


def _primal_tensor(p, what):
    if isinstance(p, Variable):
        return p.read_value()
    if isinstance(p, Tensor):
        return p
    raise TypeError(f"{what}: primals must be Tensors or Variables (or nests of them), got "
                    f"{type(p).__name__}")


class ForwardAccumulator(Transform):
    """Computes Jacobian-vector products with forward-mode autodiff (TF's
    `tf.autodiff.ForwardAccumulator`).

    `primals` (a Tensor, Variable or nest) are watched with `tangents` (same structure
    and shapes): every op run inside the `with` block pushes them forward, and
    `acc.jvp(y)` returns the tangent of any value y computed there (None when y does not
    depend on the primals; zeros with unconnected_gradients="zero").

    >>> x = vj.constant([1.0, 2.0])
    >>> with vj.autodiff.ForwardAccumulator(x, vj.constant([1.0, 0.0])) as acc:
    ...     y = vj.reduce_sum(x ** 3)
    >>> acc.jvp(y).numpy()
    array(3.)
    """

    roles = ("followers",)
    _strict = None  # a functional transform's name: values leaving vecjac raise (_errors)

    def __init__(self, primals, tangents):
        flat_p, flat_t = nest.flatten(primals), nest.flatten(tangents)
        if len(flat_p) != len(flat_t):
            raise ValueError(f"ForwardAccumulator: tangents must have the structure of "
                             f"primals: {len(flat_p)} primals, {len(flat_t)} tangents")
        seen = set()
        for p in flat_p:
            if id(p) in seen:
                raise ValueError(f"ForwardAccumulator: Tensor {p!r} was specified as a primal "
                                 "multiple times. This may indicate an error. If it was "
                                 "intended, please sum the corresponding tangents.")
            seen.add(id(p))
        self._tangents = {}   # tensor id -> tangent (None is zero)
        self._masks = {}      # tensor id -> ZeroMask of its tangent (tape/zeros.py)
        self.cut_by = None    # as GradientTape.cut_by: the first op without a derivative
        self._ref_tids = {}   # weak reference to an output -> its id: dropped when it dies
        self._release = self._release  # one bound method for every weak reference
        self._recording = False
        for k, (p, t) in enumerate(zip(flat_p, flat_t)):
            primal = _primal_tensor(p, "ForwardAccumulator")
            self._watch(primal, t, k, len(flat_p))
            # as TF: the tangent goes when the primal (the Tensor or Variable) does
            self._ref_tids[weakref.ref(p, self._release)] = primal._tid

    @classmethod
    def seeded(cls, primals, tangents):
        """An accumulator for seeds built valid by vecjac itself (distinct floating
        primals, tangents of their shapes and dtypes), without the checks of the public
        constructor: jacfwd builds one per call."""
        acc = cls.__new__(cls)
        acc._tangents = {p._tid: t for p, t in zip(primals, tangents)}
        acc._masks = {}
        acc.cut_by = None
        acc._ref_tids = {}
        acc._release = acc._release
        acc._recording = False
        return acc

    def tangent_or_zeros(self, y):
        """The tangent of Tensor y, zeros when it has none (jvp with "zero", for vecjac's
        own callers)."""
        found = self._tangents.get(y._tid)
        return lib.zeros_like(y) if found is None else found

    def release(self):
        """Drop every tangent. For vecjac's own one-use accumulators (jacfwd's, one per
        chunk): the weak references on its outputs call back into the accumulator, a
        cycle that only a garbage collection frees, with the seeds it holds."""
        self._tangents.clear()
        self._ref_tids.clear()

    def has_tangent(self, y):
        """Whether Tensor y has a tangent (it depends on the primals)."""
        return y._tid in self._tangents

    def set_strict(self, what):
        """Make values leaving vecjac errors naming `what` (a functional transform: its
        derivative is never silently cut); returns the accumulator."""
        self._strict = what
        return self

    def _watch(self, primal, tangent, k, n):
        label = "tangents" if n == 1 else f"tangents (leaf {k})"
        if primal.dtype.kind not in "fc":
            raise TypeError(f"ForwardAccumulator: the primal must be floating (e.g. "
                            f"float32) to have a tangent, got dtype {primal.dtype}")
        if not isinstance(tangent, Tensor):
            tangent = convert_to_tensor(tangent, name=f"ForwardAccumulator: {label}")
        if tangent.shape != primal.shape:
            raise ValueError(f"ForwardAccumulator: {label} has shape {tangent.shape}, the "
                             f"primal has shape {primal.shape}")
        if tangent.dtype != primal.dtype:
            if tangent.dtype.kind not in "biuf" and not (
                    tangent.dtype.kind == "c" and primal.dtype.kind == "c"):
                raise TypeError(f"ForwardAccumulator: {label} of dtype {tangent.dtype} "
                                f"cannot be the tangent of a {primal.dtype} primal")
            tangent = lib.cast(tangent, primal.dtype)
        tid = primal._tid
        old = self._tangents.get(tid)
        self._tangents[tid] = tangent if old is None else lib.add(old, tangent)

    # -- context --------------------------------------------------------------------------
    def __enter__(self):
        if self._recording:
            raise ValueError("Accumulator is already recording.")
        self._recording = True
        self._push()
        return self

    def __exit__(self, *exc):
        self._recording = False
        self._pop()
        reraise_value_left(exc[1])  # the TypeError, not NumPy's wrapping of it
        return False

    def jvp(self, primals, unconnected_gradients=UnconnectedGradients.NONE):
        """The tangent of each primal (a Tensor or nest) computed while recording."""
        mode = unconnected_mode(unconnected_gradients, "jvp")

        def fetch(p):
            if p is None:
                return None
            t = _primal_tensor(p, "jvp")
            found = self._tangents.get(t._tid)
            if found is not None:
                return found
            return lib.zeros_like(t) if mode is UnconnectedGradients.ZERO else None
        return nest.map_structure(fetch, primals)

    # -- the transform ----------------------------------------------------------------------
    def value_read(self, tensor, how, test=None):
        if implicit(how) and self._recording and tensor._tid in self._tangents and \
                self.visible:
            value_left(how, "a ForwardAccumulator", self._strict)

    def follows(self, tensors):
        tangents = self._tangents
        for t in tensors:
            if t._tid in tangents:
                return True
        return False

    def process(self, op, tensors, attrs):
        st = state
        level = self.level
        hidden = st.hidden
        # hide(level), inlined for the common case of this accumulator innermost: every
        # op of a forward pass comes here, and the calls were a tenth of its overhead
        if st.stack[-1] is self:
            hidden[level] = hidden.get(level, 0) + 1
            levels = None
        else:
            levels = hide(level)
        try:
            fast = alone(self)
            if fast and op.derivative is not None and not attrs and \
                    tensors[0]._pfor is None and tensors[0].dtype.kind == "f" and \
                    not (self._masks and tensors[0]._tid in self._masks):
                return self._fused(op, tensors[0])
            # the primal forward runs directly under vj.function's capture too (it is
            # told the forward); the fused and one-term shortcuts need `alone`
            outputs = self._primal(op, tensors, attrs, fast or alone_but_observed(self))
            if op.differentiable:
                if type(outputs) is not tuple:
                    self._push_tangent(op, tensors, outputs, attrs, fast)
                    outs = (outputs,)
                else:
                    outs = outputs
                    self._push_tangents(op, tensors, outs, attrs)
            else:
                outs = outputs if type(outputs) is tuple else (outputs,)
                if self.cut_by is None:
                    self.cut_by = cut_by(op, tensors, outs, self._tangents)
        finally:
            if levels is None:
                n = hidden[level] - 1
                if n:
                    hidden[level] = n
                else:
                    del hidden[level]
            else:
                unhide(levels)
        if st.tapes:
            record(op, tensors, outs, attrs, above=level)
        return outputs

    def _fused(self, op, x):
        """An elementwise op with a `derivative`, when no other transform sees the primal
        (context.alone, x no loop value): its value and derivative in NumPy (in one pass for sin
        and cos: value_and_derivative), and the tangent t * dy/dx, what its self-adjoint
        rule computes, without the rule's dispatch."""
        v = x._value
        if op.value_and_derivative is not None:
            value, factor = op.value_and_derivative(v)
        else:
            value = op.forward(v)
            factor = op.derivative(v, value)
        y = Tensor(value if type(value) is np.ndarray else np.asarray(value))
        t = self._tangents[x._tid]
        factor = Tensor(factor if type(factor) is np.ndarray else np.asarray(factor))
        if type(x) is BorrowedTensor:  # a lent view (a loop's result): nothing aliases it
            y, factor = own_output(y._value, (x,)), own_output(factor._value, (x,))
        loop = t._pfor
        # apply() would hand the product to the tangent's loop (jacfwd): nothing else can
        # see it, this accumulator being hidden and alone
        tangent = loop.process(lib.Mul, (t, factor), {}) if loop is not None else \
            apply(lib.Mul, t, factor)
        tid = y._tid
        self._tangents[tid] = tangent
        self._ref_tids[weakref.ref(y, self._release)] = tid
        return y

    def _primal(self, op, tensors, attrs, direct):
        """The op's outputs. Through apply(), for the transforms outside to see, unless
        only observers could (`direct`: context.alone_but_observed; and no loop value
        among the inputs): then the forward runs directly, which is most ops of a
        forward-mode sensitivity, and the observers (vj.function's capture) are told it,
        as apply() would tell them."""
        if not direct:
            return apply(op, *tensors, **attrs)
        borrowed = False
        values = []
        for t in tensors:
            if t._pfor is not None:
                return apply(op, *tensors, **attrs)
            if type(t) is BorrowedTensor:
                borrowed = True
            values.append(t._value)
        out = op.forward(*values, **attrs)
        if op.n_outputs == 1:
            out = out if type(out) is np.ndarray else np.asarray(out)
            result = own_output(out, tensors) if borrowed else Tensor(out)
            if state.observers:
                observe_forward(op, tensors, (result,), attrs)
            return result
        results = tuple([own_output(np.asarray(o), tensors) for o in out])
        if state.observers:
            observe_forward(op, tensors, results, attrs)
        return results

    def _push_tangent(self, op, tensors, o, attrs, fast=False):
        """The tangent of an op's one output `o` (most ops: no loop over outputs)."""
        table = self._tangents  # only floating (and complex) values ever get a tangent
        tangents = []
        for t in tensors:
            tangents.append(table.get(t._tid))
        if not op.complex_rules:
            refuse_complex_entry(op, [t for t, dt in zip(tensors, tangents) if dt is not None],
                                 (o,), "ForwardAccumulator")
        dt = None
        if fast and type(op).jvp is multilinear:
            if op.note_primal is not None:  # (MatVec: a finite product, a finite matrix)
                op.note_primal(tensors, o)
            dt = _one_term(op, tensors, tangents, attrs)
        if dt is None:
            entry = Entry(op, tensors, (o,), attrs)
            rule = op.jvp
            dt = rule(entry, *tangents) if rule is not None else \
                derived_jvp(entry, tangents, True)
        if dt is None or o.dtype.kind not in "fc":
            return
        if dt.shape != o.shape or dt.dtype != o.dtype:
            dt = _fit(op, dt, o)
        tid = o._tid
        masks = self._masks
        if masks or op.selects is not None:
            # a tangent that a selection zeroed stays zero through element-wise rules
            mask = zeros.tangent_mask(op, tensors, attrs, tangents, masks)
            if mask is not None:
                dt = zeros.fix_tangent(op, dt, mask)
                masks[tid] = mask
        table[tid] = dt
        self._ref_tids[weakref.ref(o, self._release)] = tid

    def _push_tangents(self, op, tensors, outs, attrs):
        """The tangents of an op with several outputs (a tuple)."""
        table = self._tangents
        tangents = [table.get(t._tid) for t in tensors]
        if not op.complex_rules:
            refuse_complex_entry(op, [t for t, dt in zip(tensors, tangents) if dt is not None],
                                 outs, "ForwardAccumulator")
        entry = Entry(op, tensors, outs, attrs)
        rule = op.jvp
        result = rule(entry, *tangents) if rule is not None else \
            derived_jvp(entry, tangents, False)
        if not isinstance(result, (tuple, list)) or len(result) != len(outs):
            raise RuntimeError(f"jvp of {op.name} returned {result!r} for {len(outs)} outputs")
        for o, dt in zip(outs, result):
            if dt is None or o.dtype.kind not in "fc":
                continue
            if dt.shape != o.shape or dt.dtype != o.dtype:
                dt = _fit(op, dt, o)
            tid = o._tid
            table[tid] = dt
            self._ref_tids[weakref.ref(o, self._release)] = tid

    def _release(self, ref):
        tid = self._ref_tids.pop(ref, None)
        self._tangents.pop(tid, None)
        if self._masks:
            self._masks.pop(tid, None)


def _one_term(op, tensors, tangents, attrs):
    """The multilinear rule (matmul, matvec, einsum) when one input has a tangent: the
    op with that input replaced by its tangent, handed to the innermost loop among the
    arguments as apply() would hand it (jacfwd: a matrix times stacked tangents), when
    the accumulator is alone (context.alone) and hidden, so that nothing else could see
    the op. None when several inputs have tangents (the rule's product terms)."""
    k = -1
    for j, t in enumerate(tangents):
        if t is not None:
            if k >= 0:
                return None
            k = j
    if k < 0:
        return None
    args = list(tensors)
    args[k] = tangents[k]
    owner = innermost_loop(args)
    return owner.process(op, tuple(args), attrs) if owner is not None else \
        apply(op, *args, **attrs)


def _fit(op, dt, o):
    """A rule's tangent `dt` broadcast and cast to its output `o` (a rule may give a
    broadcastable shape or another floating dtype)."""
    if dt.shape != o.shape:
        try:
            dt = lib.broadcast_to(dt, o.shape)
        except ValueError:
            raise RuntimeError(f"jvp of {op.name} gave shape {dt.shape} for an output of "
                               f"shape {o.shape} (a bug in that op)") from None
    if dt.dtype != o.dtype:
        dt = lib.cast(dt, o.dtype)
    return dt


def derived_jvp(entry, tangents, single=True):
    """J t from the VJP: the gradient with respect to u of <vjp(u), t>, at u = 0."""
    outs = entry.outputs
    us = [lib.zeros_like(o) if o.dtype.kind in "fc" else None for o in outs]
    watched = [u for u in us if u is not None]
    with GradientTape() as tape:
        tape.watch(watched)
        e = Entry(entry.op, entry.inputs, outs, entry.attrs)
        e.needs = tuple(t is not None for t in tangents)
        cots = entry.op.gradient(e, *[u if u is not None else lib.zeros_like(o)
                                      for u, o in zip(us, outs)])
        if not isinstance(cots, (tuple, list)):
            cots = (cots,)
        total = None
        for c, t in zip(cots, tangents):
            if c is None or t is None:
                continue
            if c.dtype.kind == "c" or t.dtype.kind == "c":  # the real inner product
                term = lib.real(lib.reduce_sum(lib.multiply(lib.conj(c), t)))
            else:
                term = lib.reduce_sum(lib.multiply(c, t))
            total = term if total is None else lib.add(total, term)
    if total is None:
        return None if single else (None,) * len(outs)
    grads = tape.gradient(total, watched)
    it = iter(grads)
    result = tuple(next(it) if u is not None else None for u in us)
    return result[0] if single else result
