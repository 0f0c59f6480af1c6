"""The sparsity tracer (a transform); jacobian_sparsity / hessian_sparsity and the tracing
of functions for sparse Jacobians are vecjac/_src/api/sparsity.py.

`SparsityTracer` is a follower on the transform stack (vecjac/_src/core/context.py), like the
ForwardAccumulator: it follows the values computed from the traced inputs, by id, and
keeps for each a boolean CSR pattern (value.size, n): which of the n traced input
elements each element depends on. apply() hands it every op with a followed input; it
runs the op (through apply(), hidden, so that transforms outside see it), then the op's
`pattern` rule (vecjac/_src/transforms/sparsity/patterns.py) on the inputs' patterns. Rules are structural,
so the pattern holds for every input value, not just the one traced.

Values are computed (the shapes, and the constant indices of gathers, come from them),
but a traced value must not decide anything in Python: `if x > 0`, float(x), np.asarray(x)
raise (value_read), since a pattern read off one branch would be wrong for the other.
vj.where and vj.cond take both branches into the pattern.

An op without a rule gets the conservative pattern (every output element depends on
every element of its traced inputs), with a SparsityWarning naming it once per trace.
The Hessian pattern is the Jacobian pattern of the gradient: a tape entered inside the
tracer records the traced ops (as tapes inside an accumulator do), and the tracer follows
the backward pass like any other computation.
"""
import warnings
import weakref

import numpy as np

from vecjac._src.core.context import Transform, hide, state, unhide
from vecjac._src.core.dispatch import apply, record
from vecjac._src.core.errors import _HOW, _call_site
from vecjac._src.transforms.forward.rules import self_adjoint
from vecjac._src.transforms.pfor import converters
from vecjac._src.transforms.sparsity import patterns, rows

__all__ = ["SparsityWarning", "SparsityTracer"]


class SparsityWarning(UserWarning):
    """An op without a sparsity rule was assumed dense (conservative)."""


class SparsityTracer(Transform):
    """Follows values computed from traced inputs and their sparsity patterns."""

    roles = ("followers",)

    def __init__(self, n, what):
        self.n = n
        self.what = what
        self._patterns = {}   # tensor id -> pattern (None: followed, not a float value)
        self._warned = set()
        self._value_dependent = set()  # ids of traced values vecjac read (value_read)
        self._arguments = set()  # ids of untraced arguments and values computed from them
        self.read_arguments = False  # whether Python read one of those (value_read)

    def __enter__(self):
        self._push()
        return self

    def __exit__(self, *exc):
        self._pop()
        return False

    def watch(self, tensor, offset):
        """Trace `tensor`: its elements are columns offset .. offset + size - 1."""
        self._patterns[tensor._tid] = patterns.identity_block(tensor.size, offset, self.n)

    def watch_id(self, tid, size, offset):
        """Trace the value with id `tid` (a Variable: its reads carry its id)."""
        self._patterns[tid] = patterns.identity_block(size, offset, self.n)

    def watch_argument(self, tensor):
        """Follow `tensor`, an argument that is not differentiated, and the values computed
        from it (not traced: no pattern), to learn whether Python reads their values
        (`read_arguments`): the caller's cached pattern then depends on them."""
        self._arguments.add(tensor._tid)

    def pattern(self, tensor):
        """The pattern of `tensor` (empty when it does not depend on the traced inputs)."""
        p = self._patterns.get(tensor._tid)
        return rows.canonical(p) if p is not None else patterns.empty(tensor.size, self.n)

    # -- the transform ----------------------------------------------------------------------
    def follows(self, tensors):
        table, arguments = self._patterns, self._arguments
        for t in tensors:
            if t._tid in table or t._tid in arguments:
                return True
        return False

    def varies(self, tensor):
        return tensor._tid in self._patterns and self.visible

    def value_read(self, tensor, how, test=None):
        if tensor._tid not in self._patterns or not self.visible:
            if self.visible and test is not np.shape and tensor._tid in self._arguments:
                self.read_arguments = True  # the structure may depend on an argument's value
            return
        if how == "internal" and (tensor.dtype.kind in "iu" or test is not None):
            # vecjac's own choice on a traced value. Integers and masks are indices
            # computed from the inputs (sort, top_k, gather(x, argsort(x)), interp,
            # segment ids): the ops that consume them get the conservative pattern. A
            # test on a float picks between exact formulas of one derivative (cumprod's
            # gradient with or without zeros): either formula's pattern holds.
            if tensor.dtype.kind in "biu":
                self._value_dependent.add(tensor._tid)
            return
        file, line, _ = _call_site()
        desc = _HOW.get(how) or {"__bool__": "a Python truth test (if, while, and, or)",
                                 "numpy": ".numpy()", "internal": "a vj.while_loop "
                                 "condition (or another choice of vecjac's)"}.get(how, how)
        raise TypeError(
            f"{self.what}: {desc} of a traced value, at {file}:{line}. Sparsity detection "
            "follows which inputs each value depends on, not the values themselves, so "
            "Python cannot branch on (or convert) a value computed from the inputs. Use "
            "vj.where or vj.cond (the pattern covers both branches), or compute the "
            "decision from constants; or pass the pattern yourself (sparsity=...).")

    def process(self, op, tensors, attrs):
        hidden = hide(self.level)
        try:
            outputs = apply(op, *tensors, **attrs)
        finally:
            unhide(hidden)
        outs = outputs if type(outputs) is tuple else (outputs,)
        table = self._patterns
        if not any(t._tid in table for t in tensors):  # computed from arguments only
            self._arguments.update(o._tid for o in outs)
        else:
            result = self._rule(op, tensors, outs, attrs)
            for o, p in zip(outs, result):
                table[o._tid] = p if o.dtype.kind in "fc" else None
                # the pattern dies with its value: a trace holds only the live ones
                weakref.finalize(o, table.pop, o._tid, None)
        if state.tapes:
            record(op, tensors, outs, attrs, above=self.level)
        return outputs

    def _rule(self, op, tensors, outs, attrs):
        table = self._patterns
        n = self.n
        if not op.differentiable or not any(o.dtype.kind in "fc" for o in outs):
            return [None] * len(outs)
        pats = tuple([table.get(t._tid) if t.dtype.kind in "fc" else None for t in tensors])
        if all(p is None for p in pats):  # only integer / boolean traced inputs
            return [None] * len(outs)
        traced = tuple([t._tid in table for t in tensors])
        cx = patterns.PatternContext(pats, traced, outs, n)
        rule = op.pattern
        if rule is None:
            family = _family_default(op)  # a plain function of the family: bind it
            rule = None if family is None else family.__get__(op, type(op))
        read = self._value_dependent
        if read and any(t._tid in read for t in tensors):
            # the op's structure depends on traced values (indices computed from the
            # inputs): every output may depend on every traced input of the op
            self._warn(op, "its structure depends on values computed from the inputs "
                       "(indices, segment ids)")
            result = patterns.conservative(cx)
        elif rule is None:
            self._warn(op)
            result = patterns.conservative(cx)
        else:
            result = rule(cx, *tensors, **attrs)
        if type(result) is not tuple:
            result = (result,)
        if len(result) != len(outs):
            raise RuntimeError(f"pattern of {op.name} returned {len(result)} patterns for "
                               f"{len(outs)} outputs (a bug in that op)")
        for o, p in zip(outs, result):
            if p is not None and p.shape != (o.size, n):
                raise RuntimeError(f"pattern of {op.name} has shape {p.shape} for an "
                                   f"output of {o.size} elements (a bug in that op)")
        return result

    def _warn(self, op, why=None):
        if op.name in self._warned:
            return
        self._warned.add(op.name)
        if why is None:
            warnings.warn(f"{self.what}: op {op.name} has no sparsity rule, so every element "
                          "of its output is assumed to depend on every element of its "
                          "inputs (correct, but possibly far from sparse). Give it one: "
                          "`pattern = patterns.<family>` on its op block "
                          "(vecjac/_src/transforms/sparsity/patterns.py), or pass the "
                          "pattern yourself (sparsity=...).", SparsityWarning,
                          stacklevel=_stacklevel())
        else:
            warnings.warn(f"{self.what}: every element of the output of {op.name} is "
                          f"assumed to depend on every element of its traced inputs: {why}, "
                          "which a structural pattern cannot follow (correct, but possibly "
                          "denser than the true pattern; pass sparsity=... if you know it).",
                          SparsityWarning, stacklevel=_stacklevel())


def _family_default(op):
    """The rule implied by an op's pfor family, for ops that name none: a broadcasting
    converter means element-wise NumPy broadcasting; an elementwise converter with a
    self-adjoint JVP means an element-wise unary op (a diagonal Jacobian). Other
    elementwise converters (batched linear algebra) say nothing about the pattern."""
    cls = type(op)
    if cls.converter is converters.broadcasting:
        return patterns.broadcasting
    if cls.converter is converters.elementwise and cls.jvp is self_adjoint:
        return patterns.elementwise
    return None


def _stacklevel():
    return _call_site()[2] + 1
