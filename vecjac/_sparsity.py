"""The sparsity tracer, and jacobian_sparsity / hessian_sparsity.

`SparsityTracer` is a follower on the transform stack (vecjac/_context.py), like the
ForwardAccumulator: it follows the values computed from the traced inputs, by id, and
keeps for each a boolean CSR pattern (value.size, n): which of the n traced input
elements each element depends on. apply() hands it every op with a followed input; it
runs the op (through apply(), hidden, so that transforms outside see it), then the op's
`pattern` rule (vecjac/_pattern_rules.py) on the inputs' patterns. Rules are structural,
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
import contextlib
import warnings

import numpy as np

from . import _pattern_rules as patterns
from ._context import Transform, hide, state, unhide
from ._dispatch import apply, record
from ._errors import _HOW, _call_site
from ._jvp_rules import self_adjoint
from .vectorize import converters
from ._fn_args import (check_argnums, check_callable, output_tensor, positions, prepare,
                       strict)
from ._tape import GradientTape
from ._unconnected import UnconnectedGradients

__all__ = ["jacobian_sparsity", "hessian_sparsity", "SparsityWarning", "SparsityTracer",
           "trace_jacobian", "trace_hessian",
           "trace_variables_hessian"]


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

    def pattern(self, tensor):
        """The pattern of `tensor` (empty when it does not depend on the traced inputs)."""
        p = self._patterns.get(tensor._tid)
        return p if p is not None else patterns.empty(tensor.size, self.n)

    # -- the transform ----------------------------------------------------------------------
    def follows(self, tensors):
        table = self._patterns
        for t in tensors:
            if t._tid in table:
                return True
        return False

    def varies(self, tensor):
        return tensor._tid in self._patterns and self.visible

    def value_read(self, tensor, how, test=None):
        if tensor._tid not in self._patterns or not self.visible:
            return
        file, line, _ = _call_site()
        desc = _HOW.get(how) or {"__bool__": "a Python truth test (if, while, and, or)",
                                 "numpy": ".numpy()", "internal": "a value-dependent "
                                 "choice (a while_loop condition)"}.get(how, how)
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
        result = self._rule(op, tensors, outs, attrs)
        for o, p in zip(outs, result):
            table[o._tid] = p if o.dtype.kind in "fc" else None
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
        if rule is None:
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

    def _warn(self, op):
        if op.name in self._warned:
            return
        self._warned.add(op.name)
        warnings.warn(f"{self.what}: op {op.name} has no sparsity rule, so every element "
                      "of its output is assumed to depend on every element of its inputs "
                      "(correct, but possibly far from sparse). Give it one: `pattern = "
                      "patterns.<family>` on its op block (vecjac/_pattern_rules.py), or "
                      "pass the pattern yourself (sparsity=...).", SparsityWarning,
                      stacklevel=_stacklevel())


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


# -- tracing a function -----------------------------------------------------------------------
def _traced_inputs(f, args, argnums, what):
    pos = positions(argnums, len(args), what)
    args, flat, _ = prepare(f, args, pos, what)
    return args, flat


def _single_output(y, what):
    if isinstance(y, (dict, list, tuple)):
        raise ValueError(f"{what}: f must return one Tensor, got a {type(y).__name__}; "
                         "flatten and concatenate the outputs (vj.concat([vj.reshape(t, "
                         "[-1]) for t in ...], 0))")
    return output_tensor(y, what, scalar=False)


@contextlib.contextmanager
def _tracing(flat, what):
    """A SparsityTracer watching the flat inputs, numbered in order (the columns)."""
    with SparsityTracer(sum(x.size for x in flat), what) as tracer:
        offset = 0
        for x in flat:
            tracer.watch(x, offset)
            offset += x.size
        yield tracer


def trace_jacobian(f, args, argnums, what):
    """(pattern (output size, input size), output Tensor, flat inputs) of f at args."""
    args, flat = _traced_inputs(f, args, argnums, what)
    with _tracing(flat, what) as tracer:
        y = _single_output(f(*args), what)
        pattern = tracer.pattern(y)
    return pattern, y, flat


def trace_hessian(f, args, argnums, what):
    """(symmetric pattern (n, n), scalar output, flat inputs): the gradient's Jacobian
    pattern, made symmetric."""
    args, flat = _traced_inputs(f, args, argnums, what)
    with _tracing(flat, what) as tracer:
        with strict(GradientTape(), what) as tape:
            tape.watch(flat)
            y = output_tensor(f(*args), what, scalar=True)
        grads = tape.gradient(y, flat, unconnected_gradients=UnconnectedGradients.ZERO)
        rows = [tracer.pattern(g) for g in grads]
    return _symmetrized(rows), y, flat


def trace_variables_hessian(loss_fn, leaves, what):
    """The symmetric Hessian pattern of `loss_fn()` (no arguments, reading `leaves`:
    Variables or Tensors) over the leaves' flat concatenation (flat_hessian's order)."""
    sizes = [int(np.prod(v.shape)) for v in leaves]
    with SparsityTracer(sum(sizes), what) as tracer:
        offset = 0
        for v, size in zip(leaves, sizes):
            tracer.watch_id(v._tid, size, offset)
            offset += size
        with strict(GradientTape(), what) as tape:
            tape.watch(leaves)
            loss = output_tensor(loss_fn(), what, scalar=True)
        grads = tape.gradient(loss, leaves, unconnected_gradients=UnconnectedGradients.ZERO)
        rows = [tracer.pattern(g) for g in grads]
    return _symmetrized(rows)


def _symmetrized(rows):
    sp = patterns.sparse()
    pattern = rows[0] if len(rows) == 1 else sp.vstack(rows, format="csr")
    pattern = (pattern + pattern.T).tocsr()
    pattern.sum_duplicates()
    return pattern.astype(bool)


def _check(f, argnums, what):
    check_callable(f, what)
    return check_argnums(argnums, what)


def jacobian_sparsity(f, *args, argnums=0):
    """The sparsity pattern of the Jacobian of `f` at `args`, as a boolean
    scipy.sparse.csr_array of shape (output size, input size) (C order; several argnums
    are concatenated in order).

    Structural: an entry is False only if that output can never depend on that input,
    whatever the input values (the pattern is traced through each op's sparsity rule, not
    read off values). `f` returns one Tensor. Python decisions on traced values raise
    (use vj.where / vj.cond).

    >>> vj.jacobian_sparsity(lambda x: x[1:] - x[:-1], np.zeros(4)).toarray().astype(int)
    array([[1, 1, 0, 0],
           [0, 1, 1, 0],
           [0, 0, 1, 1]])
    """
    what = "jacobian_sparsity"
    argnums = _check(f, argnums, what)
    return trace_jacobian(f, args, argnums, what)[0]


def hessian_sparsity(f, *args, argnums=0):
    """The sparsity pattern of the Hessian of scalar `f` at `args`: a symmetric boolean
    scipy.sparse.csr_array of shape (n, n), n the size of the argument(s).

    >>> f = lambda x: vj.reduce_sum(x[1:] * x[:-1])
    >>> vj.hessian_sparsity(f, np.ones(3)).toarray().astype(int)
    array([[0, 1, 0],
           [1, 0, 1],
           [0, 1, 0]])
    """
    what = "hessian_sparsity"
    argnums = _check(f, argnums, what)
    return trace_hessian(f, args, argnums, what)[0]
