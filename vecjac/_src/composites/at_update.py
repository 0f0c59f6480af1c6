"""Functional indexed updates, JAX's `x.at[idx]`: NumPy's in-place `x[idx] = v`,
`x[idx] += v`, ... for immutable Tensors (and the values of Variables).

    x = x.at[idx].set(v)        # x[idx] = v
    x = x.at[idx].add(v)        # x[idx] += v      (x[idx] -= v: .add(-v))
    x = x.at[idx].multiply(v)   # x[idx] *= v
    x = x.at[idx].divide(v)     # x[idx] /= v
    x = x.at[idx].power(v)      # x[idx] **= v
    x = x.at[idx].min(v)        # x[idx] = minimum(x[idx], v)
    x = x.at[idx].max(v)        # x[idx] = maximum(x[idx], v)
    x.at[idx].get()             # x[idx]

Each returns a new Tensor and leaves x as it was. `idx` is any NumPy index: ints, slices,
Ellipsis, None, boolean masks, integer arrays, tuples of those (NumPy's rules, including
where advanced indices put their axes); `v` broadcasts to the shape of x[idx] (leading
axes of size 1 beyond it are dropped, as NumPy's assignment does) and is cast to x's dtype.

Repeated integer indices (x.at[[0, 0]]) are NumPy's ufunc.at semantics, which JAX's
scatters share: `add` adds every occurrence (np.add.at), `multiply` / `divide` / `min` /
`max` combine them all (np.multiply.at, ...: x * v1 * v2, x / (v1 * v2), min(x, v1, v2)),
`power` raises to the product of the exponents (x ** (v1 * v2), np.power.at's result
for positive x). `set` keeps the LAST occurrence in the index's C order (NumPy's
assignment does so in practice; JAX leaves it unspecified). An index out of bounds is an
IndexError, raised before any work (JAX would drop the update silently).

Differentiable in x and v to any order, in every mode (tapes, forward mode, pfor and
jacobians, vj.function replay), with an exact sparsity pattern: `set` and the combining
updates are the primitive ScatterUpdate (vecjac/_src/ops/array/scatter_update.py) on
the flattened x, `add` is a scatter-add (GatherGrad), repeated indices are first combined
by the segment reductions. Indices may vary over a pfor loop (x.at[i].set(1.0) with the
loop index i).
"""
import math

import numpy as np

from vecjac._src.core.context import value_read
from vecjac._src.core.dispatch import apply, to_input
from vecjac._src.core.tensor import Tensor
from vecjac._src.core.variables import Variable
from vecjac._src.ops.array.indexing import GatherGrad, gather, getitem
from vecjac._src.ops.array.scatter_update import ScatterUpdate
from vecjac._src.ops.array.shaping import broadcast_to, reshape
from vecjac._src.ops.elementwise import arithmetic as _m
from vecjac._src.ops.elementwise import extrema as _extrema
from vecjac._src.ops.elementwise.logic import cast
from vecjac._src.ops.reduce import segment as _s

__all__ = ["IndexUpdates", "IndexedUpdate"]


class IndexUpdates:
    """`x.at`: index it (`x.at[idx]`) for the functional updates of x at idx."""

    __slots__ = ("_x",)

    def __init__(self, x):
        self._x = x

    def __getitem__(self, idx):
        return IndexedUpdate(self._x, idx)

    def __repr__(self):
        return f"IndexUpdates({self._x!r})"


class IndexedUpdate:
    """`x.at[idx]`: the functional updates of x at idx (each returns a new Tensor).

    >>> x = vj.constant([1.0, 2.0, 3.0])
    >>> x.at[1:].set(0.0).numpy()
    array([1., 0., 0.])
    >>> x.at[[0, 0, 2]].add(1.0).numpy()  # a repeated index adds every time
    array([3., 2., 4.])
    """

    __slots__ = ("_x", "_idx")

    def __init__(self, x, idx):
        self._x, self._idx = x, idx

    def __repr__(self):
        return f"IndexedUpdate({self._x!r}, {self._idx!r})"

    def get(self):
        """x[idx]."""
        return getitem(_tensor(self._x, "get"), self._idx)

    def set(self, values):
        """x with x[idx] replaced by `values` (the last occurrence of a repeated index
        wins): NumPy's `x[idx] = values`, as a new Tensor."""
        x, pos, v = _prepare(self, "set", values)
        if x.size == 0 or _size(pos) == 0:
            return x
        flat, v = _flat(x), _flat(v)
        if isinstance(pos, np.ndarray):
            pos = pos.reshape(-1)
            keep = None if _basic(self._idx) else _last_of_each(pos)
            if keep is not None:
                pos, v = pos[keep], gather(v, keep)
            out = apply(ScatterUpdate, flat, v, Tensor(pos), axis=0, batch_dims=0, unique=True)
        else:  # positions varying over a pfor loop: the op keeps the last per iteration
            out = apply(ScatterUpdate, flat, v, _flat(pos), axis=0, batch_dims=0,
                        unique=False)
        return out if x.ndim == 1 else reshape(out, x.shape)

    def add(self, values):
        """x with `values` added at x[idx], every occurrence of a repeated index counted
        (np.add.at): NumPy's `x[idx] += values`, as a new Tensor. `x[idx] -= values` is
        `.add(-values)`."""
        x, pos, v = _prepare(self, "add", values)
        if x.size == 0 or _size(pos) == 0:
            return x
        pos = Tensor(pos.reshape(-1)) if isinstance(pos, np.ndarray) else _flat(pos)
        added = apply(GatherGrad, _flat(v), pos, shape=(x.size,), axis=0, batch_dims=0)
        out = _m.add(_flat(x), added)
        return out if x.ndim == 1 else reshape(out, x.shape)

    def multiply(self, values):
        """x with x[idx] multiplied by `values` (a repeated index: by all of its values,
        np.multiply.at): NumPy's `x[idx] *= values`, as a new Tensor."""
        return _combine(self, "multiply", values, _s.unsorted_segment_prod, _m.multiply)

    def divide(self, values):
        """x with x[idx] divided by `values` (a repeated index: by the product of its
        values, np.divide.at): NumPy's `x[idx] /= values`, as a new Tensor."""
        return _combine(self, "divide", values, _s.unsorted_segment_prod, _m.divide)

    def power(self, values):
        """x with x[idx] raised to `values` (a repeated index: to the product of its
        values, as JAX; np.power.at's result for positive x): NumPy's `x[idx] **= values`,
        as a new Tensor."""
        return _combine(self, "power", values, _s.unsorted_segment_prod, _m.pow)

    def min(self, values):
        """x with x[idx] replaced by minimum(x[idx], values) (a repeated index: the
        minimum over all of its values, np.minimum.at), as a new Tensor."""
        return _combine(self, "min", values, _s.unsorted_segment_min, _extrema.minimum)

    def max(self, values):
        """x with x[idx] replaced by maximum(x[idx], values) (a repeated index: the
        maximum over all of its values, np.maximum.at), as a new Tensor."""
        return _combine(self, "max", values, _s.unsorted_segment_max, _extrema.maximum)


def _tensor(x, method):
    if isinstance(x, Variable):
        return x.read_value()  # read when the update is made, for tapes to see
    return to_input(x, fn=f"x.at[idx].{method}", arg="x")


def _flat(t):
    return t if len(t.shape) == 1 else reshape(t, (math.prod(t.shape),))


def _basic(idx):
    """Whether idx is a basic index (ints, slices, Ellipsis, None): its elements are
    distinct, so no index repeats."""
    return all(k is None or k is Ellipsis or isinstance(k, (int, np.integer, slice))
               and not isinstance(k, bool)
               for k in (idx if isinstance(idx, tuple) else (idx,)))


def _size(pos):
    return pos.size if isinstance(pos, np.ndarray) else math.prod(pos.shape)


def _last_of_each(pos):
    """The sorted positions in `pos` (1-d) of the last occurrence of each value, or None
    when no value repeats."""
    _, first_reversed = np.unique(pos[::-1], return_index=True)
    if first_reversed.size == pos.size:
        return None
    return np.sort(pos.size - 1 - first_reversed)


def _combine(ref, method, values, segment_reduce, op):
    """x.at[idx].<method>(values): op(x[idx], values) written back; the values of a
    repeated index first reduced into one (segment_reduce)."""
    x, pos, v = _prepare(ref, method, values)
    if x.size == 0 or _size(pos) == 0:
        return x
    if method == "divide" and x.dtype.kind not in "fc":
        raise TypeError(f"x.at[idx].divide: x has the integer dtype {x.dtype}, which cannot "
                        "hold quotients; cast x first (x.astype(float))")
    flat, v = _flat(x), _flat(v)
    m = _size(pos)
    if isinstance(pos, np.ndarray):
        pos = pos.reshape(-1)
        if not _basic(ref._idx):
            places, inverse = np.unique(pos, return_inverse=True)
            if places.size < pos.size:
                _no_complex(v, method)
                v = segment_reduce(v, Tensor(inverse.reshape(-1)), places.size)
                pos = places
        pos, unique = Tensor(pos), True
    else:  # varying over a pfor loop: a repeated place gets the reduction of all of its
        pos = _flat(pos)  # values at every one of its occurrences
        value_read(pos, "internal")
        rows = pos._value.reshape(-1, m)
        if m > 1 and (np.diff(np.sort(rows, axis=1), axis=1) == 0).any():
            _no_complex(v, method)
            v = gather(segment_reduce(v, pos, x.size), pos)
        unique = False
    new = op(gather(flat, pos), v)
    out = apply(ScatterUpdate, flat, new, pos, axis=0, batch_dims=0, unique=unique)
    return out if x.ndim == 1 else reshape(out, x.shape)


def _no_complex(v, method):
    if v.dtype.kind == "c":
        raise TypeError(f"x.at[idx].{method}: repeated indices with complex values are not "
                        "supported (their values are combined by a real segment "
                        "reduction); make the indices unique")


# -- the index and the values, checked before any work -----------------------------------
def _prepare(ref, method, values):
    """(x, positions, values): x a Tensor; positions the flat (C-order) positions in x of
    the elements x[idx] selects, shaped like x[idx] (an int64 ndarray, or an int Tensor
    when the index varies over a pfor loop); values cast to x's dtype and broadcast to
    that shape."""
    fn = f"x.at[idx].{method}"
    x = _tensor(ref._x, method)
    pos = _positions(x, ref._idx, fn)
    v = _values(values, x, tuple(pos.shape), fn, ref._idx)
    return x, pos, v


def _loop_variant(k):
    if isinstance(k, slice):
        return any(_loop_variant(b) for b in (k.start, k.stop, k.step))
    return isinstance(k, Tensor) and k._pfor is not None


def _concrete(k, fn):
    """An index part NumPy can take: Tensors and Variables as their values."""
    if isinstance(k, Variable):
        k = k.read_value()
    if isinstance(k, Tensor):
        value_read(k, "internal")  # the positions become constants (vj.function: a guard)
        if k.dtype.kind not in "biu":
            raise IndexError(f"{fn}: index arrays must be integers or booleans, got a "
                             f"Tensor of dtype {k.dtype} (in idx)")
        return k._value
    if isinstance(k, slice):
        return slice(*(_concrete(b, fn) if isinstance(b, (Tensor, Variable)) else b
                       for b in (k.start, k.stop, k.step)))
    if isinstance(k, (list, tuple)):
        return np.asarray([_concrete(e, fn) for e in k] if any(
            isinstance(e, (Tensor, Variable)) for e in k) else k)
    return k


def _positions(x, idx, fn):
    key = idx if isinstance(idx, tuple) else (idx,)
    if any(_loop_variant(k) for k in key):
        # the index varies over a pfor loop: vecjac's getitem of the element numbers
        numbers = Tensor(np.arange(x.size, dtype=np.int64).reshape(x.shape))
        try:
            return getitem(numbers, idx)
        except (IndexError, ValueError, TypeError) as e:
            raise type(e)(f"{fn}: bad idx {idx!r} for x of shape {x.shape}: {e}") from None
    key = tuple(_concrete(k, fn) for k in key)
    numbers = np.arange(x.size, dtype=np.int64).reshape(x.shape)
    try:
        return numbers[key if isinstance(idx, tuple) else key[0]]
    except (IndexError, ValueError, TypeError) as e:
        raise IndexError(f"{fn}: bad idx {_show(idx)} for x of shape {x.shape}: {e}") from None


def _show(idx):
    text = repr(idx)
    return text if len(text) <= 80 else text[:77] + "..."


def _values(values, x, shape, fn, idx):
    v = to_input(values, (x,), fn, "values")
    if v.dtype != x.dtype:
        if v.dtype.kind == "c" and x.dtype.kind != "c":
            raise TypeError(f"{fn}: complex values cannot be written into x of dtype "
                            f"{x.dtype}")
        v = cast(v, x.dtype)
    vs = v.shape
    extra = len(vs) - len(shape)
    if extra > 0 and all(d == 1 for d in vs[:extra]):  # NumPy drops leading 1s
        v, vs = reshape(v, vs[extra:]), vs[extra:]
    try:
        ok = np.broadcast_shapes(vs, shape) == shape
    except ValueError:
        ok = False
    if not ok:
        raise ValueError(f"{fn}: values must broadcast to the shape of x[idx], {shape}, "
                         f"got shape {v.shape} (x.shape {x.shape}, idx {_show(idx)})")
    return broadcast_to(v, shape) if vs != shape else v


def _at(self):
    """Functional indexed updates, JAX's: `x = x.at[idx].set(v)` for NumPy's `x[idx] = v`,
    `.add(v)` for `x[idx] += v`, and .multiply, .divide, .power, .min, .max, .get. Each
    returns a new Tensor (x is unchanged). See vecjac/_src/composites/at_update.py."""
    return IndexUpdates(self)


Tensor.at = property(_at)
Variable.at = property(_at)  # the update reads the Variable's value (it stays unchanged)
