"""Control flow: cond, switch_case and while_loop (TF's tf.cond / tf.switch_case /
tf.while_loop), eager and vectorizable.

Outside pfor all three are plain Python control flow: only the branch taken, and only
the iterations run, execute, and tapes record their ops like any others, so gradients,
Jacobians and Hessians go through them unchanged.

Inside pfor / vectorized_map a predicate (or switch_case's index) may differ per
iteration (a loop-variant value, which has no single Python value). Then cond evaluates
*both* branches for all iterations and selects per iteration with vj.where, switch_case
does the same with every branch, and while_loop keeps running the body while any
iteration still wants to, freezing finished iterations with vj.where. A loop-invariant
predicate or index inside pfor keeps the plain Python behaviour.
"""
import contextlib
import functools
import numbers

import numpy as np

from vecjac._src.core import nest
from vecjac._src.core.context import state, value_read, varies
from vecjac._src.core.dispatch import convert_to_tensor, to_input
from vecjac._src.core.registry import lib
from vecjac._src.core.tensor import Tensor
from vecjac._src.core.variables import Variable
from vecjac._src.ops.elementwise.logic import (equal, greater_equal, less, logical_and, logical_or,
                                               where)

__all__ = ["cond", "switch_case", "while_loop"]


def _loop_variant(x):
    return getattr(x, "_pfor", None) is not None


def _predicate(pred, fn, arg):
    """A Python bool, or a loop-variant scalar bool Tensor; errors name `fn` and `arg`."""
    if isinstance(pred, (bool, np.bool_)):
        return bool(pred)
    if isinstance(pred, Variable):
        pred = pred.read_value()
    if isinstance(pred, (np.ndarray, numbers.Number)) and not isinstance(pred, Tensor):
        pred = Tensor(np.asarray(pred))
    if not isinstance(pred, Tensor):
        raise TypeError(f"{fn}: {arg} must be a bool or a scalar bool Tensor, "
                        f"got {type(pred).__name__}")
    if pred.dtype != np.bool_:
        raise TypeError(f"{fn}: {arg} must have dtype bool, got {pred.dtype}")
    if pred.shape != ():
        raise ValueError(f"{fn}: {arg} must be a scalar (shape ()), got shape {pred.shape}")
    if _loop_variant(pred):
        return pred
    if state.stack and varies(pred):
        if fn == "cond":
            return pred  # a traced predicate: both branches, selected by vj.where
        value_read(pred, "internal")  # a while_loop cannot: the tracer raises
    value_read(pred, "internal", bool)  # the branch taken
    return bool(pred._value)


def _any(v):
    return bool(np.any(v))


# -- structures ----------------------------------------------------------------------------
def _describe(x):
    if isinstance(x, dict):
        return f"a dict with keys {sorted(map(str, x))}"
    if isinstance(x, (list, tuple)):
        return f"a {type(x).__name__} of {len(x)}"
    if nest.is_dataclass_instance(x):
        return f"a {type(x).__name__} (dataclass)"
    if x is None:
        return "None"
    return "a value" if not isinstance(x, Tensor) else "a Tensor"


def _check_same_structure(a, b, path, what):
    """Raise ValueError at the first place where nests `a` and `b` differ.

    Lists and tuples count as the same kind of sequence (a body returning a tuple for
    list loop_vars is fine); dicts must have the same keys; dataclass instances the same
    class.
    """
    a_seq, b_seq = isinstance(a, (list, tuple)), isinstance(b, (list, tuple))
    a_map, b_map = isinstance(a, dict), isinstance(b, dict)
    a_dc, b_dc = nest.is_dataclass_instance(a), nest.is_dataclass_instance(b)
    if a_seq != b_seq or a_map != b_map or (a is None) != (b is None) or a_dc != b_dc or (
            a_dc and type(a) is not type(b)):
        raise ValueError(f"{what} at {path}: {_describe(a)} vs {_describe(b)}")
    if a_dc:
        for name in nest.fields(a):
            _check_same_structure(getattr(a, name), getattr(b, name), f"{path}.{name}", what)
    if a_map:
        if set(a) != set(b):
            raise ValueError(f"{what} at {path}: {_describe(a)} vs {_describe(b)}")
        for k in a:
            _check_same_structure(a[k], b[k], f"{path}[{k!r}]", what)
    elif a_seq:
        if len(a) != len(b):
            raise ValueError(f"{what} at {path}: {_describe(a)} vs {_describe(b)}")
        for k, (x, y) in enumerate(zip(a, b)):
            _check_same_structure(x, y, f"{path}[{k}]", what)


def _leaf_paths(structure, root):
    """Readable names of the leaves of `structure`, in nest.flatten order."""
    if isinstance(structure, dict):
        keys = sorted(structure, key=lambda k: (type(k).__name__, k) if not isinstance(
            k, str) else ("str", k))
        return [p for k in keys for p in _leaf_paths(structure[k], f"{root}[{k!r}]")]
    if isinstance(structure, (list, tuple)):
        return [p for k, c in enumerate(structure) for p in _leaf_paths(c, f"{root}[{k}]")]
    if nest.is_dataclass_instance(structure):
        return [p for name in nest.fields(structure)
                for p in _leaf_paths(getattr(structure, name), f"{root}.{name}")]
    return [root]


def _as_tensor(x, like, fn, where):
    """A branch or body output as a Tensor; Python numbers take `like`'s dtype."""
    if isinstance(x, Tensor):
        return x
    if isinstance(x, Variable):
        return x.read_value()
    if like is not None and isinstance(x, numbers.Number) and not isinstance(x, np.generic):
        return to_input(x, (like,))
    try:
        return convert_to_tensor(x)
    except (TypeError, ValueError) as err:
        raise TypeError(f"{fn}: {where} must be a Tensor or convertible to one, "
                        f"got {type(x).__name__} ({err})") from None


# -- cond ------------------------------------------------------------------------------------
def cond(pred, true_fn=None, false_fn=None, name=None):
    """true_fn() if pred else false_fn(), with the outputs of the branch taken.

    `pred` is a Python bool or a scalar bool Tensor. Outside pfor (or inside with a
    loop-invariant `pred`) only the chosen branch runs; its ops are recorded normally,
    so the result is differentiable. The output is the branch's own return value.

    Inside pfor / vectorized_map with a loop-variant `pred`, both branches run for every
    iteration and `vj.where(pred, true_out, false_out)` picks each iteration's result.
    The branches must then return the same nest structure (lists and tuples alike, dicts
    with the same keys) with matching dtypes and per-iteration shapes (scalars
    broadcast); the output has true_fn's structure. Because a branch's values are
    selected, not computed conditionally, NaN or inf produced by the branch an iteration
    does not take never reaches the values (NumPy's floating-point warnings are silenced
    while the branches run). Nor the gradients, through element-wise ops: the untaken
    branch receives a structural zero cotangent, which stays 0 through a rule whose
    derivative is infinite there (sqrt at 0, log at 0, 1/x at 0; README, "Selections").
    Through a reduction or another non-element-wise op in the branch it becomes 0 * inf
    = NaN again; guard the branch's *input* then (`vj.sqrt(vj.where(ok, x, 1.0))`).

    >>> vj.cond(vj.constant(2.0) > 1.0, lambda: 1.0, lambda: 0.0)
    1.0
    >>> x = vj.constant([-1.0, 2.0])
    >>> vj.vectorized_map(lambda v: vj.cond(v > 0, lambda: v * 10, lambda: -v), x).numpy()
    array([ 1., 20.])
    """
    if not callable(true_fn):
        raise TypeError(f"cond: true_fn must be callable, got {type(true_fn).__name__}")
    if not callable(false_fn):
        raise TypeError(f"cond: false_fn must be callable, got {type(false_fn).__name__}")
    p = _predicate(pred, "cond", "pred")
    if isinstance(p, bool):
        return true_fn() if p else false_fn()
    # Every iteration runs both branches, so each branch also sees the inputs it was
    # guarded against (log of a negative ...): NumPy's warnings about those are noise.
    with np.errstate(all="ignore"):
        true_out, false_out = true_fn(), false_fn()
    return _select_branches(p, true_out, false_out)


def _select_branches(pred, true_out, false_out):
    _check_same_structure(true_out, false_out, "output",
                          "cond: true_fn and false_fn must return the same structure, "
                          "they differ")
    paths = _leaf_paths(true_out, "output")
    selected = []
    for path, t, f in zip(paths, nest.flatten(true_out), nest.flatten(false_out)):
        if t is None:  # both None: _check_same_structure compared them
            selected.append(None)
            continue
        t = _as_tensor(t, f if isinstance(f, Tensor) else None, "cond", f"true_fn {path}")
        f = _as_tensor(f, t, "cond", f"false_fn {path}")
        if t.dtype != f.dtype:
            raise TypeError(f"cond: {path} has dtype {t.dtype} in true_fn and {f.dtype} "
                            "in false_fn; both branches must return the same dtypes")
        if t.shape != f.shape and t.shape != () and f.shape != ():
            raise ValueError(f"cond: {path} has shape {t.shape} in true_fn and {f.shape} "
                             "in false_fn; with a loop-variant pred the branches must "
                             "return the same per-iteration shapes")
        selected.append(where(pred, t, f))
    return nest.pack_sequence_as(true_out, selected)


# -- switch_case -----------------------------------------------------------------------------
def _branches(branch_fns, default):
    """The branch callables in key order, then `default` if given, and their labels."""
    if not isinstance(branch_fns, (list, tuple, dict)):
        raise TypeError("switch_case: branch_fns must be a list of callables, a list of "
                        "(int, callable) pairs or a dict {int: callable}, got "
                        f"{type(branch_fns).__name__}")
    if not branch_fns:
        raise ValueError("switch_case: branch_fns must not be empty")
    if isinstance(branch_fns, dict):
        pairs = list(branch_fns.items())
    elif all(callable(f) for f in branch_fns):
        pairs = list(enumerate(branch_fns))
    elif any(callable(f) for f in branch_fns):  # a list of callables with a stray entry
        k = next(k for k, f in enumerate(branch_fns) if not callable(f))
        raise TypeError(f"switch_case: branch_fns[{k}] must be callable, got "
                        f"{type(branch_fns[k]).__name__} (branch_fns is a list of callables "
                        "or of (int, callable) pairs, not both)")
    else:
        pairs = list(branch_fns)
        for k, pair in enumerate(pairs):
            if not isinstance(pair, (tuple, list)) or len(pair) != 2:
                raise TypeError(f"switch_case: branch_fns[{k}] must be a callable or an "
                                f"(int, callable) pair, got {type(pair).__name__}")
    keys = []
    for key, fn in pairs:
        if not isinstance(key, numbers.Integral) or isinstance(key, (bool, np.bool_)):
            raise TypeError(f"switch_case: the keys of branch_fns must be ints, got {key!r}")
        if not callable(fn):
            raise TypeError(f"switch_case: branch_fns[{key}] must be callable, got "
                            f"{type(fn).__name__}")
        if int(key) in keys:
            raise ValueError(f"switch_case: branch_fns has the key {key} twice")
        keys.append(int(key))
    if sorted(keys) != list(range(len(keys))):
        raise ValueError(f"switch_case: the keys of branch_fns must be 0 to {len(keys) - 1}"
                         f" (contiguous), got {sorted(keys)}")
    if default is not None and not callable(default):
        raise TypeError(f"switch_case: default must be callable or None, got "
                        f"{type(default).__name__}")
    by_key = dict(zip(keys, (fn for _, fn in pairs)))
    fns = [by_key[k] for k in range(len(keys))]
    labels = [f"branch_fns[{k}]" for k in range(len(fns))]
    if default is not None:
        fns.append(default)
        labels.append("default")
    return fns, labels


def _clamped(n_fns, value):
    """The branch an index value runs: out-of-range indices run the last callable."""
    k = int(value)
    return k if 0 <= k < n_fns else n_fns - 1


def _branch_index(branch_index, n_fns):
    """The branch to run (a Python int), or a loop-variant scalar int Tensor."""
    x = branch_index.read_value() if isinstance(branch_index, Variable) else branch_index
    if isinstance(x, (bool, np.bool_)):
        raise TypeError(f"switch_case: branch_index must be an int scalar, got {x!r}")
    if isinstance(x, numbers.Integral):
        return _clamped(n_fns, x)
    if isinstance(x, np.ndarray):
        x = Tensor(x)
    if not isinstance(x, Tensor):
        raise TypeError(f"switch_case: branch_index must be an int scalar or a scalar int "
                        f"Tensor, got {type(x).__name__}")
    if x.dtype.kind not in "iu":
        raise TypeError(f"switch_case: branch_index must have an integer dtype, got {x.dtype}")
    if x.shape != ():
        raise ValueError(f"switch_case: branch_index must be a scalar (shape ()), got "
                         f"shape {x.shape}")
    if _loop_variant(x) or (state.stack and varies(x)):
        return x  # loop-variant or traced: every branch runs, selected by vj.where
    # a replayed vj.function re-checks only which branch the value picks
    value_read(x, "internal", functools.partial(_clamped, n_fns))
    return _clamped(n_fns, x._value)


def switch_case(branch_index, branch_fns, default=None, name="switch_case"):
    """The result of the branch that `branch_index` selects (TF's tf.switch_case).

    `branch_fns` is a list of callables (the position is the key), a list of
    (int, callable) pairs or a dict {int: callable}; the keys must be 0 to n - 1. An
    index that matches no key runs `default`, or the branch with the largest key if
    there is no default (TF's rule; negative indices included). `branch_index` is a
    Python int or a scalar integer Tensor. Outside pfor (or inside with a
    loop-invariant index) only the selected branch runs and its own return value is the
    result, differentiable like any other ops.

    Inside pfor / vectorized_map with a loop-variant index, every branch (and default)
    runs for every iteration and each iteration's result is picked with vj.where, as
    vj.cond does for a loop-variant predicate: the branches must then return the same
    nest structure with matching dtypes and per-iteration shapes (scalars broadcast);
    the output has the first branch's structure. What a branch computes for iterations
    that do not select it is discarded from the values (NumPy warnings silenced), but
    an infinite derivative there still makes the gradient NaN (see vj.cond).

    >>> vj.switch_case(vj.constant(1), [lambda: 10.0, lambda: 20.0, lambda: 30.0])
    20.0
    >>> vj.switch_case(7, {0: lambda: 10.0, 1: lambda: 20.0}, default=lambda: -1.0)
    -1.0
    >>> i = vj.constant([2, 0, 5])
    >>> vj.vectorized_map(lambda k: vj.switch_case(k, [lambda: k * 10, lambda: -k]), i).numpy()
    array([-2,  0, -5])
    """
    fns, labels = _branches(branch_fns, default)
    index = _branch_index(branch_index, len(fns))
    if isinstance(index, int):
        return fns[index]()
    # every iteration runs every branch, including on the inputs a branch guards against
    with np.errstate(all="ignore"):
        outs = [fn() for fn in fns]
    return _select_by_index(index, outs, labels)


def _select_by_index(index, outs, labels):
    for out, label in zip(outs[1:], labels[1:]):
        _check_same_structure(outs[0], out, "output",
                              f"switch_case: every branch must return the same structure, "
                              f"{labels[0]} and {label} differ")
    m = len(outs)
    index = where(logical_or(less(index, 0), greater_equal(index, m)),
                      m - 1, index)
    selected = []
    for path, leaves in zip(_leaf_paths(outs[0], "output"),
                            zip(*[nest.flatten(out) for out in outs])):
        if leaves[0] is None:  # None in every branch: _check_same_structure compared them
            selected.append(None)
            continue
        like = next((v for v in leaves if isinstance(v, Tensor)), None)
        ts = [_as_tensor(v, like, "switch_case", f"{label} {path}")
              for v, label in zip(leaves, labels)]
        for t, label in zip(ts[1:], labels[1:]):
            if t.dtype != ts[0].dtype:
                raise TypeError(f"switch_case: {path} has dtype {ts[0].dtype} in "
                                f"{labels[0]} and {t.dtype} in {label}; every branch must "
                                "return the same dtypes")
        shapes = {t.shape for t in ts if t.shape != ()}
        if len(shapes) > 1:
            raise ValueError(f"switch_case: {path} has shapes "
                             f"{', '.join(f'{t.shape} in {lb}' for t, lb in zip(ts, labels))};"
                             " with a loop-variant branch_index every branch must return the "
                             "same per-iteration shapes")
        result = ts[-1]
        for k in range(m - 2, -1, -1):
            result = where(equal(index, k), ts[k], result)
        selected.append(result)
    return nest.pack_sequence_as(outs[0], selected)


# -- while_loop --------------------------------------------------------------------------------
def _call(fn, loop_vars, spread):
    return fn(*loop_vars) if spread else fn(loop_vars)


def _max_iterations(maximum_iterations):
    if maximum_iterations is None:
        return None
    m = maximum_iterations
    if isinstance(m, Variable):
        m = m.read_value()
    if isinstance(m, Tensor):
        if m.shape != () or m.dtype.kind not in "iu":
            raise ValueError("while_loop: maximum_iterations must be a scalar int, got "
                             f"shape {m.shape} dtype {m.dtype}")
        if _loop_variant(m):
            return m
        value_read(m, "internal", int)
        m = int(m._value)
    if not isinstance(m, numbers.Integral) or isinstance(m, bool):
        raise ValueError(f"while_loop: maximum_iterations must be a non-negative int, "
                         f"got {maximum_iterations!r}")
    if m < 0:
        raise ValueError(f"while_loop: maximum_iterations must be non-negative, got {m}")
    return int(m)


def while_loop(cond, body, loop_vars, shape_invariants=None, parallel_iterations=10,
               back_prop=True, swap_memory=False, maximum_iterations=None, name=None):
    """Repeat `loop_vars = body(*loop_vars)` while `cond(*loop_vars)`; returns loop_vars.

    `loop_vars` is a Tensor (cond and body then take it as their one argument), a list
    or tuple (cond and body take one argument per element, as in TF) or a dict (passed
    as one argument); elements may themselves be nests. `body` returns the same
    structure (a bare value is accepted for a one-element list), each variable with
    its dtype and, unless `shape_invariants` is given, its shape. The result has the
    structure and shapes of `loop_vars`. At most `maximum_iterations` iterations run.
    Only `shape_invariants is not None` is used (it allows shapes to change, outside
    pfor); parallel_iterations, back_prop and swap_memory are accepted for TF
    compatibility.

    Outside pfor this is a Python loop, differentiable because every op is recorded.
    Inside pfor / vectorized_map, a loop-variant condition makes every iteration run
    the body until *no* iteration's condition holds (or maximum_iterations is reached);
    iterations that are done keep their values: `vars = vj.where(active, new, old)`.
    The body therefore also runs on finished iterations' values; anything it computes
    there (even NaN or inf, without NumPy warnings) is discarded from the values, but,
    as for vj.cond, a non-finite derivative in a discarded step can still make the
    gradient NaN. A loop-invariant condition inside pfor keeps the plain Python loop.

    >>> vj.while_loop(lambda i, s: i < 4, lambda i, s: (i + 1, s + i), (0, 0.0))
    (<vj.Tensor: shape=(), dtype=int64, numpy=array(4)>, <vj.Tensor: ... numpy=array(6.)>)
    """
    if not callable(cond):
        raise TypeError(f"while_loop: cond must be callable, got {type(cond).__name__}")
    if not callable(body):
        raise TypeError(f"while_loop: body must be callable, got {type(body).__name__}")
    if isinstance(loop_vars, (list, tuple)) and not loop_vars:
        raise ValueError("while_loop: loop_vars must not be empty")
    # accepted for TF compatibility, but still checked as TF does
    if (not isinstance(parallel_iterations, numbers.Integral)
            or isinstance(parallel_iterations, bool) or parallel_iterations < 1):
        raise ValueError(f"while_loop: parallel_iterations must be a positive integer, got "
                         f"{parallel_iterations!r}")
    for arg, flag in (("back_prop", back_prop), ("swap_memory", swap_memory)):
        if not isinstance(flag, (bool, np.bool_)):
            raise TypeError(f"while_loop: {arg} must be a bool, got {flag!r}")
    max_iters = _max_iterations(maximum_iterations)
    spread = isinstance(loop_vars, (list, tuple))
    paths = _leaf_paths(loop_vars, "loop_vars")
    if any(v is None for v in nest.flatten(loop_vars)):
        raise ValueError("while_loop: loop_vars must not contain None")
    flat = [_as_tensor(v, None, "while_loop", p)
            for v, p in zip(nest.flatten(loop_vars), paths)]
    current = nest.pack_sequence_as(loop_vars, flat)
    active = None   # loop-variant "still running" mask, once iterations may differ
    step = 0
    while not (isinstance(max_iters, int) and step >= max_iters):
        go = _predicate(_call(cond, current, spread), "while_loop", "the result of cond")
        if _loop_variant(max_iters):
            go = _both(go, less(step, max_iters))
        if active is not None:
            go = _both(active, go)
        if go is not True and go is not False:
            value_read(go, "internal", _any)  # whether another iteration runs
        if go is False or (go is not True and not _any(go._value)):
            break  # (a mask's plain value holds every iteration of every enclosing loop)
        with np.errstate(all="ignore") if go is not True else _no_context:
            # (finished iterations run the body too; their warnings are noise)
            new_flat = _next_vars(body, current, loop_vars, spread, paths, flat,
                                  shape_invariants is None or go is not True)
        if go is not True:
            new_flat = [where(go, n, o) for n, o in zip(new_flat, flat)]
            active = go
        flat = new_flat
        current = nest.pack_sequence_as(loop_vars, flat)
        step += 1
    return current


_no_context = contextlib.nullcontext()


def _both(a, b):
    """Logical and of two predicates, each a Python bool or a loop-variant Tensor."""
    if a is False or b is False:
        return False
    if a is True:
        return b
    if b is True:
        return a
    return logical_and(a, b)


def _next_vars(body, current, loop_vars, spread, paths, old_flat, same_shapes):
    out = _call(body, current, spread)
    if spread and len(loop_vars) == 1 and not isinstance(out, (list, tuple)):
        out = [out]
    _check_same_structure(loop_vars, out, "loop_vars",
                          "while_loop: body must return the structure of loop_vars, "
                          "they differ")
    leaves = nest.flatten(out)
    new_flat = []
    for path, new, old in zip(paths, leaves, old_flat):
        new = _as_tensor(new, old, "while_loop", f"body's {path}")
        if new.dtype != old.dtype:
            raise TypeError(f"while_loop: body changed the dtype of {path} from "
                            f"{old.dtype} to {new.dtype}")
        if same_shapes and new.shape != old.shape:
            raise ValueError(f"while_loop: body changed the shape of {path} from "
                             f"{old.shape} to {new.shape} (shapes must stay the same; "
                             "outside pfor, pass shape_invariants to allow it)")
        new_flat.append(new)
    return new_flat

lib.publish(globals(), __all__)
