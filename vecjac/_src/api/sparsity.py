"""jacobian_sparsity / hessian_sparsity, and the tracing of a function's Jacobian or Hessian
pattern for sparse Jacobians (vecjac/_src/api/sparse.py), with the sparsity tracer of
vecjac/_src/transforms/sparsity/tracer.py."""
import contextlib

import numpy as np

from vecjac._src.api.fn_args import (check_argnums, check_callable, output_tensor, positions,
                                     prepare, strict)
from vecjac._src.core.tensor import Tensor
from vecjac._src.core.unconnected import UnconnectedGradients
from vecjac._src.transforms.sparsity import patterns
from vecjac._src.transforms.sparsity.tracer import SparsityTracer
from vecjac._src.transforms.tape.tape import GradientTape

__all__ = ["jacobian_sparsity", "hessian_sparsity", "trace_jacobian", "trace_hessian",
           "trace_variables_hessian"]


# -- tracing a function -----------------------------------------------------------------------
def _single_output(y, what):
    if isinstance(y, (dict, list, tuple)):
        raise ValueError(f"{what}: f must return one Tensor, got a {type(y).__name__}; "
                         "flatten and concatenate the outputs (vj.concat([vj.reshape(t, "
                         "[-1]) for t in ...], 0))")
    return output_tensor(y, what, scalar=False)


@contextlib.contextmanager
def _tracing(flat, what, arguments, track):
    """A SparsityTracer watching the flat inputs, numbered in order (the columns), and
    following the `arguments` (not differentiated); track["read"] says afterwards whether
    Python read a value computed from them."""
    with SparsityTracer(sum(x.size for x in flat), what) as tracer:
        offset = 0
        for x in flat:
            tracer.watch(x, offset)
            offset += x.size
        for a in arguments:
            tracer.watch_argument(a)
        yield tracer
    if track is not None:
        track["read"] = tracer.read_arguments


def _followed(x, found):
    """`x` with its float array leaves as Tensors (appended to `found`), so that the
    tracer can follow them; other leaves as they are."""
    if isinstance(x, Tensor):
        if x.dtype.kind in "fc":
            found.append(x)
        return x
    if isinstance(x, np.ndarray) and x.dtype.kind in "fc":
        t = Tensor(np.array(x))
        found.append(t)
        return t
    if type(x) in (list, tuple):
        return type(x)(_followed(v, found) for v in x)
    if isinstance(x, dict):
        return {k: _followed(v, found) for k, v in x.items()}
    return x


def _arguments(args, kwargs, pos):
    """args and kwargs with the float arrays of the non-differentiated arguments as
    Tensors to follow, and those Tensors."""
    found = []
    args = [a if k in pos else _followed(a, found) for k, a in enumerate(args)]
    kwargs = {k: _followed(v, found) for k, v in (kwargs or {}).items()}
    return args, kwargs, found


def trace_jacobian(f, args, argnums, what, kwargs=None, track=None):
    """(pattern (output size, input size), output Tensor, flat inputs) of f at args;
    `track` (a dict) receives "read": whether the pattern may depend on the values of
    a non-differentiated float argument (Python read a value computed from one)."""
    pos = positions(argnums, len(args), what)
    args, flat, _ = prepare(f, args, pos, what)
    args, kwargs, followed = _arguments(args, kwargs, pos)
    with _tracing(flat, what, followed, track) as tracer:
        y = _single_output(f(*args, **kwargs), what)
        pattern = tracer.pattern(y)
    return pattern, y, flat


def trace_hessian(f, args, argnums, what, kwargs=None, track=None):
    """(symmetric pattern (n, n), scalar output, flat inputs): the gradient's Jacobian
    pattern, made symmetric; `track` as for trace_jacobian."""
    pos = positions(argnums, len(args), what)
    args, flat, _ = prepare(f, args, pos, what)
    args, kwargs, followed = _arguments(args, kwargs, pos)
    with _tracing(flat, what, followed, track) as tracer:
        with strict(GradientTape(), what) as tape:
            tape.watch(flat)
            y = output_tensor(f(*args, **kwargs), what, scalar=True)
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
