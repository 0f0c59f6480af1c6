"""The checks of pfor's arguments and of a converter's outputs (pfor.py: the contract),
with the errors that name what is wrong."""
import numbers

import numpy as np

from vecjac._src.core.tensor import Tensor
from vecjac._src.transforms.pfor.stacked import Unstacked
from vecjac._src.transforms.pfor.structured import is_structured


def _check_converted(op, outs, loop):
    """A converter's outputs follow the contract (module docstring): a clear error for a
    user converter (vj.defop) that returns NumPy arrays or per-iteration values, which
    would otherwise fail deep inside or give a silently wrong shape."""
    items = outs if type(outs) is tuple or type(outs) is list else (outs,)
    if op.n_outputs is not None and len(items) != op.n_outputs:  # None: varies (Split)
        raise ValueError(f"pfor: the converter of {op.name} returned {len(items)} outputs, "
                         f"the op has {op.n_outputs}")
    for k, o in enumerate(items):
        if is_structured(o, loop):
            continue
        t = o.tensor if type(o) is Unstacked else o
        if not isinstance(t, Tensor):
            raise TypeError(f"pfor: the converter of {op.name} returned an object of type "
                            f"{type(t).__name__} (output {k}); a converter returns Tensors "
                            "computed with vecjac ops (so that tapes outside the loop see "
                            "them), wrapping a loop-invariant output in Unstacked")
        if type(o) is not Unstacked and (not t.shape or t.shape[0] != loop.iters):
            raise ValueError(f"pfor: the converter of {op.name} returned shape {t.shape} "
                             f"(output {k}); a stacked output has the loop axis first, of "
                             f"size cx.iters = {loop.iters} (wrap a loop-invariant output "
                             "in Unstacked)")


def _check_iters(iters, what):
    if type(iters) is int and iters >= 0:
        return iters
    if isinstance(iters, Tensor):
        iters = iters.__index__()
    if not isinstance(iters, numbers.Integral) or isinstance(iters, bool) or iters < 0:
        raise ValueError(f"{what}: iters must be a non-negative integer, got {iters!r}")
    return int(iters)


def _check_flag(value, what, arg):
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{what}: {arg} must be a bool, got {value!r}")


def _check_parallel_iterations(p, what):
    if p is None:
        return None
    if not isinstance(p, numbers.Integral) or isinstance(p, bool) or p < 1:
        raise ValueError(f"{what}: parallel_iterations must be a positive integer, got {p!r}")
    return int(p)
