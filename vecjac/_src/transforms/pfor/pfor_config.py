"""TF's pfor_config: reductions across the iterations of a pfor loop, from inside loop_fn.

A loop_fn with a parameter named `pfor_config` (TF's rule: functools.partial and callable
objects are looked through) is called as loop_fn(i, pfor_config=config). Inside it,
`config.reduce(fn, *args)` calls fn once with every argument stacked over all
iterations (a leading axis of size iters) and returns fn's result, the same for every
iteration: the vectorized loop makes the stacked value available as a loop-invariant
one (`PFor.plain_view`), so the reduction is ordinary ops that tapes outside the loop
differentiate. reduce_concat, reduce_sum and reduce_mean are the common reductions.

A loop run in chunks (parallel_iterations < iters) never holds all iterations at once:
a reduction there raises ValueError, as in TF.
"""
import functools
import inspect

from vecjac._src.core.dispatch import convert_to_tensor
from vecjac._src.core.registry import lib

ARG = "pfor_config"


class PForConfig:
    """Reductions across the iterations of the running pfor loop (TF's PForConfig)."""

    def __init__(self, loop, chunked):
        self._loop = loop
        self._chunked = chunked

    def reduce(self, fn, *args):
        """fn(*stacked): each argument stacked over all iterations (leading axis of size
        iters); the result is loop-invariant (the same for every iteration)."""
        if self._chunked:
            raise ValueError("pfor_config: reductions across iterations are not supported "
                             "with parallel_iterations smaller than the number of "
                             "iterations (the loop runs in chunks)")
        return fn(*[self._loop.plain_view(convert_to_tensor(a, name=f"{ARG}.reduce: arg"))
                    for a in args])

    def reduce_concat(self, x):
        """Every iteration's x, stacked on a new axis 0 (loop-invariant)."""
        return self.reduce(lambda v: v, x)

    def reduce_mean(self, x):
        """The mean of x over the iterations (loop-invariant)."""
        return self.reduce(lambda v: lib.reduce_mean(v, axis=0), x)

    def reduce_sum(self, x):
        """The sum of x over the iterations (loop-invariant)."""
        return self.reduce(lambda v: lib.reduce_sum(v, axis=0), x)


def _takes_config(loop_fn):
    code = getattr(loop_fn, "__code__", None)
    if code is not None:  # a plain function: no signature object (jacfwd calls pfor often)
        return ARG in code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
    if isinstance(loop_fn, functools.partial) and ARG in loop_fn.keywords:
        return False  # bound by the caller already
    try:
        return ARG in inspect.signature(loop_fn).parameters
    except (TypeError, ValueError):  # builtins and the like: no config
        return False


def with_config(loop_fn, chunked):
    """loop_fn itself, or a function of the index passing it a PForConfig when it takes
    one (`chunked`: the loop runs in chunks, where reductions raise)."""
    if not _takes_config(loop_fn):
        return loop_fn

    def call(i):
        return loop_fn(i, **{ARG: PForConfig(i._pfor, chunked)})
    return call
