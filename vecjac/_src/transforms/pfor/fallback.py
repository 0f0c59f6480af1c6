"""The while-loop fallback: an op with no converter runs once per iteration.

Each stacked input is unstacked into its slices, the op runs on slice k of each, and the
results are stacked again. All of it goes through vecjac ops, so tapes outside the loop
can differentiate through the fallback too. It is correct but slow; a warning names the
op once per op type (every time with `warn=True`).
"""
import warnings

from vecjac._src.core.registry import REGISTRY, lib

_warned = set()


class FallbackWarning(UserWarning):
    """An op ran per iteration inside pfor because it has no converter."""


def while_loop_fallback(cx, op, inputs, attrs):
    loop = cx.loop
    if not loop.fallback_to_while_loop:
        raise ValueError(f"pfor: no vectorization rule (converter) for op {op.name}, and "
                         "fallback_to_while_loop=False")
    if loop.warn or op.name not in _warned:
        _warned.add(op.name)
        warnings.warn(f"pfor: op {op.name} has no converter; running it in a loop over "
                      f"{loop.iters} iterations (slow)", FallbackWarning, stacklevel=4)
    n = loop.iters
    slices = [lib.unstack(x, num=n) if s else None for x, s in zip(inputs, cx.stacked)]
    results = []
    for k in range(n):
        args = [sl[k] if sl is not None else x for x, sl in zip(inputs, slices)]
        out = op(*args, **attrs)
        results.append(out if isinstance(out, tuple) else (out,))
    if n == 0:
        raise ValueError(f"pfor: op {op.name} has no converter and the loop has 0 "
                         "iterations, so its output shape is unknown")
    outs = [lib.stack([r[j] for r in results], axis=0) for j in range(len(results[0]))]
    return outs[0] if op.n_outputs == 1 else tuple(outs)


def converter_coverage():
    """Which registered ops have a pfor converter.

    Returns {"converted": [names], "fallback": [names]}: ops in "fallback" still work
    inside pfor, one iteration at a time (see while_loop_fallback).
    """
    converted = sorted(name for name, op in REGISTRY.items() if op.converter is not None)
    fallback = sorted(name for name, op in REGISTRY.items() if op.converter is None)
    return {"converted": converted, "fallback": fallback}
