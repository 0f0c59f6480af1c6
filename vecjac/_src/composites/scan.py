"""scan, foldl and foldr (TF's tf.scan / tf.foldl / tf.foldr): fn over the slices of elems.

Each is a Python loop over the slices of `elems` along axis 0 (one vj.unstack per
tensor) that calls `fn(accumulator, slice)`; scan joins the accumulators with vj.stack.
Every step is made of ordinary vecjac ops, so tapes, forward accumulators, pfor /
vectorized_map and vj.function go through them with no rule of their own. Inside pfor
the number of steps is the per-iteration length of axis 0, the same for every
iteration, so no iteration needs masking (unlike a loop-variant vj.while_loop).
"""
import numbers

import numpy as np

from vecjac._src.composites.control_flow import _as_tensor, _check_same_structure, _leaf_paths
from vecjac._src.core import nest
from vecjac._src.core.registry import lib
from vecjac._src.ops.array.creation import zeros
from vecjac._src.ops.array.shaping import stack, stop_gradient, unstack

__all__ = ["foldl", "foldr", "scan"]


def _check_options(name, fn, parallel_iterations, flags):
    if not callable(fn):
        raise TypeError(f"{name}: fn must be callable, got {type(fn).__name__}")
    # accepted for TF compatibility, but still checked as TF does
    if (not isinstance(parallel_iterations, numbers.Integral)
            or isinstance(parallel_iterations, (bool, np.bool_)) or parallel_iterations < 1):
        raise ValueError(f"{name}: parallel_iterations must be a positive integer, got "
                         f"{parallel_iterations!r}")
    for arg, flag in flags.items():
        if not isinstance(flag, (bool, np.bool_)):
            raise TypeError(f"{name}: {arg} must be a bool, got {flag!r}")


def _tensors(name, structure, root):
    """The leaves of a nest as Tensors, and their readable paths; errors name `root`."""
    leaves = nest.flatten(structure)
    if structure is None or not leaves:
        raise ValueError(f"{name}: {root} must be a Tensor or a nest holding at least one "
                         f"Tensor, got {structure!r}")
    paths = _leaf_paths(structure, root)
    for path, leaf in zip(paths, leaves):
        if leaf is None:
            raise ValueError(f"{name}: {path} is None; {root} must hold Tensors")
    return [_as_tensor(v, None, name, p) for v, p in zip(leaves, paths)], paths


def _elems(name, elems):
    """elems' tensors and their common length along axis 0."""
    flat, paths = _tensors(name, elems, "elems")
    for path, t in zip(paths, flat):
        if t.ndim == 0:
            raise ValueError(f"{name}: {path} must have rank >= 1 (it is sliced along axis 0)"
                             ", got a scalar (a Python list is a nest of tensors: wrap one "
                             "sequence in vj.constant)")
    n = flat[0].shape[0]
    for path, t in zip(paths, flat):
        if t.shape[0] != n:
            raise ValueError(f"{name}: the tensors of elems must have the same length along "
                             f"axis 0, {paths[0]} has {n} and {path} has {t.shape[0]}")
    return flat, n


def _accumulate(name, fn, elems, initializer, reverse, same_shapes, keep_all):
    """Run fn over elems; (accumulator structure, final accumulator, kept accumulators).

    Kept accumulators (keep_all, for scan) are flat lists in the order of elems, the
    initial one included when it is a slice of elems (no initializer), as TF does.
    """
    flat_elems, n = _elems(name, elems)
    if initializer is None:
        if n == 0:
            raise ValueError(f"{name}: elems has length 0 along axis 0 and there is no "
                             "initializer; pass an initializer (it also gives the "
                             "accumulator's shape and dtype)")
        structure, source = elems, "elems"
    else:
        structure, source = initializer, "initializer"
        acc, _ = _tensors(name, initializer, "initializer")
    paths = _leaf_paths(structure, "accumulator")
    # every argument is checked: work starts here
    slices = [unstack(t) for t in flat_elems]
    order = list(range(n - 1, -1, -1) if reverse else range(n))
    if initializer is None:
        first = order.pop(0)
        acc = [s[first] for s in slices]
    kept = [acc] if keep_all and initializer is None else []
    for i in order:
        out = fn(nest.pack_sequence_as(structure, acc),
                 nest.pack_sequence_as(elems, [s[i] for s in slices]))
        acc = _next_accumulator(name, out, structure, source, paths, acc, same_shapes)
        if keep_all:
            kept.append(acc)
    if reverse:
        kept.reverse()
    return structure, acc, kept


def _next_accumulator(name, out, structure, source, paths, old, same_shapes):
    _check_same_structure(structure, out, "output",
                          f"{name}: fn must return the structure of {source} (the "
                          "accumulator), they differ")
    new = []
    for path, value, before in zip(paths, nest.flatten(out), old):
        t = _as_tensor(value, before, name, f"fn's {path}")
        if t.dtype != before.dtype:
            raise TypeError(f"{name}: fn changed the dtype of {path} from {before.dtype} to "
                            f"{t.dtype}; fn must keep the dtypes of {source} (cast, or pass "
                            "an initializer of the dtype fn returns)")
        if same_shapes and t.shape != before.shape:
            raise ValueError(f"{name}: fn changed the shape of {path} from {before.shape} to "
                             f"{t.shape}; fn must keep the shapes of {source} (pass an "
                             "initializer of the shape fn returns"
                             + (", or infer_shape=False)" if name == "scan" else ")"))
        new.append(t)
    return new


def _outputs(structure, flat, back_prop):
    if not back_prop:  # TF2's deprecated back_prop=False: the values carry no gradient
        flat = [stop_gradient(t) for t in flat]
    return nest.pack_sequence_as(structure, flat)


def scan(fn, elems, initializer=None, parallel_iterations=10, back_prop=True,
         swap_memory=False, infer_shape=True, reverse=False, name=None):
    """Every accumulator of `a = fn(a, x)` over the slices x of `elems`, stacked on axis 0.

    `elems` is a Tensor or a nest of Tensors of one length n along axis 0; fn receives
    the accumulator and the nest of the i-th slices. The first accumulator is
    `initializer` (a Tensor or a nest), or else the first slice of elems (the last one
    if reverse=True), which is then also the first output. fn returns the accumulator's
    structure (lists and tuples alike) with its dtypes (Python numbers take them) and,
    with infer_shape=True, its shapes. Output: the accumulator's structure, each leaf
    of shape [n] + its shape. reverse=True visits elems from last to first and still
    writes output i for slice i (TF's order: a reversed cumulative sum). With n == 0,
    the initializer gives the output shape [0] + its shape (no initializer: an error).
    back_prop=False stops gradients at the result; parallel_iterations and swap_memory
    are accepted for TF compatibility. A Python loop of vecjac ops: differentiable in
    both modes and vectorizable by pfor as it is.

    >>> vj.scan(lambda a, x: a + x, vj.constant([1, 2, 3, 4])).numpy()
    array([ 1,  3,  6, 10])
    >>> vj.scan(lambda a, x: a + x, vj.constant([1, 2, 3, 4]), reverse=True).numpy()
    array([10,  9,  7,  4])
    >>> fib = vj.scan(lambda a, _: (a[1], a[0] + a[1]), vj.zeros([5]), (0.0, 1.0))
    >>> fib[0].numpy()
    array([1., 1., 2., 3., 5.])
    """
    _check_options("scan", fn, parallel_iterations,
                   {"back_prop": back_prop, "swap_memory": swap_memory,
                    "infer_shape": infer_shape, "reverse": reverse})
    structure, last, kept = _accumulate("scan", fn, elems, initializer, bool(reverse),
                                        bool(infer_shape), keep_all=True)
    paths = _leaf_paths(structure, "accumulator")
    if not kept:  # no slice: the empty stack of initializer-shaped values
        return _outputs(structure, [zeros((0,) + t.shape, t.dtype) for t in last],
                        back_prop)
    for k, path in enumerate(paths):
        shapes = {acc[k].shape for acc in kept}
        if len(shapes) > 1:  # only with infer_shape=False
            raise ValueError(f"scan: fn returned shapes {sorted(shapes)} for {path}; the "
                             "accumulators are stacked, so they must share one shape")
    return _outputs(structure, [stack([acc[k] for acc in kept])
                                for k in range(len(paths))], back_prop)


def foldl(fn, elems, initializer=None, parallel_iterations=10, back_prop=True,
          swap_memory=False, name=None):
    """The last accumulator of `a = fn(a, x)` over the slices x of `elems`, first to last.

    As vj.scan without the stacking: the first accumulator is `initializer`, or else
    elems' first slice; fn must keep the accumulator's structure, dtypes and shapes. The
    result has the accumulator's structure; with n == 0 it is the initializer.

    >>> vj.foldl(lambda a, x: a * 10 + x, vj.constant([1, 2, 3])).numpy()
    array(123)
    """
    _check_options("foldl", fn, parallel_iterations,
                   {"back_prop": back_prop, "swap_memory": swap_memory})
    structure, last, _ = _accumulate("foldl", fn, elems, initializer, False, True, False)
    return _outputs(structure, last, back_prop)


def foldr(fn, elems, initializer=None, parallel_iterations=10, back_prop=True,
          swap_memory=False, name=None):
    """The last accumulator of `a = fn(a, x)` over the slices x of `elems`, last to first.

    As vj.foldl, visiting elems from the end; without an initializer the first
    accumulator is elems' *last* slice (what TF does; its docstring says first).

    >>> vj.foldr(lambda a, x: a * 10 + x, vj.constant([1, 2, 3])).numpy()
    array(321)
    """
    _check_options("foldr", fn, parallel_iterations,
                   {"back_prop": back_prop, "swap_memory": swap_memory})
    structure, last, _ = _accumulate("foldr", fn, elems, initializer, True, True, False)
    return _outputs(structure, last, back_prop)


lib.publish(globals(), __all__)
