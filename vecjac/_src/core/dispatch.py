"""apply(): the single dispatch point of every primitive, and input conversion.

apply(op, *inputs, **attrs):
1. converts inputs to Tensors (a Variable is read, and tapes that auto-watch see it; a
   Python scalar takes the dtype of the tensors it meets);
2. finds the innermost visible transform that follows an input (a pfor loop whose
   stacked value it is, an accumulator holding a tangent for it, a tracer) and hands it
   the op: the transform computes the outputs with its rule, whose own ops come back
   through apply() for the transforms outside it to see (vecjac/_src/core/context.py);
3. otherwise runs `forward` and calls `after_forward` of the observers and the tapes
   (each tape records the op if it follows an input).
"""
import numbers

import numpy as np

from vecjac._src.core import loans
from vecjac._src.core.context import state
from vecjac._src.core.registry import lib
from vecjac._src.core.tensor import BorrowedTensor, Tensor, as_array, as_dtype
from vecjac._src.core.variables import Variable


def apply(op, *inputs, **attrs):
    """Run `op` on `inputs`: hand it to a transform, or compute and record. Tensor(s)."""
    tensors = inputs  # *args: a tuple already, kept when every input is a Tensor
    owner = None
    for t in inputs:  # one pass: the innermost loop among Tensor inputs (the common case)
        if not isinstance(t, Tensor):
            tensors = tuple([x if isinstance(x, Tensor) else to_input(x, inputs)
                             for x in inputs])
            owner = innermost_loop(tensors)
            break
        p = t._pfor
        if p is not None and (owner is None or p.level > owner.level):
            owner = p
    st = state
    if st.followers:  # the innermost visible follower inside the loop, if one follows
        hidden = st.hidden
        for tr in reversed(st.followers):
            if owner is not None and tr.level < owner.level:
                break
            if hidden and tr.level in hidden:
                continue
            if tr.follows(tensors):
                owner = tr
                break
    if owner is not None:
        return owner.process(op, tensors, attrs)
    tapes = st.tapes  # (one list, changed in place: read once)
    if tapes and _borrows(tensors) and _recorded(op, tensors):
        # a tape will keep the caller's array: lent inside a transformed call, else its
        # copy (made now, so that the forward reads it from cache)
        tensors = keep(tensors)
    n = len(tensors)  # one or two inputs called directly: a third of small ops' dispatch
    if n == 1:
        out = op.forward(tensors[0]._value, **attrs) if attrs else \
            op.forward(tensors[0]._value)
    elif n == 2 and not attrs:
        out = op.forward(tensors[0]._value, tensors[1]._value)
    else:
        out = op.forward(*[t._value for t in tensors], **attrs)
    if op.n_outputs == 1:  # the common case, without building a tuple
        if type(out) is not np.ndarray:
            out = np.asarray(out)
        for t in tensors:  # own_output's test inlined: most ops borrow nothing
            if type(t) is BorrowedTensor:
                result = own_output(out, tensors)
                break
        else:
            result = Tensor(out)
        if st.observers:
            _after_forward(op, tensors, (result,), attrs)
        elif tapes:  # (apply() lent or copied borrowed inputs a tape will keep)
            outputs = (result,)
            for tape in tapes:
                tape.after_forward(op, tensors, outputs, attrs)
        return result
    outputs = tuple([own_output(np.asarray(o), tensors) for o in out])
    if st.tapes or st.observers:
        _after_forward(op, tensors, outputs, attrs)
    return outputs


def innermost_loop(tensors):
    """The innermost pfor loop among `tensors`' values (None: no loop value)."""
    owner = None
    for t in tensors:
        p = t._pfor
        if p is not None and (owner is None or p.level > owner.level):
            owner = p
    return owner


def _after_forward(op, tensors, outputs, attrs):
    st = state
    for observer in st.observers:
        observer.after_forward(op, tensors, outputs, attrs)
    for tape in st.tapes:  # (apply() lent or copied borrowed inputs a tape will keep)
        tape.after_forward(op, tensors, outputs, attrs)


lib.apply = apply  # Op.__call__ and the rules reach apply through the library namespace


def own_output(out, tensors):
    """The Tensor of `out` (an op's output array), which never aliases memory the caller
    can write to. When it may share memory with a caller's array (a BorrowedTensor
    input): inside a transformed call (a loan, core/loans.py; no observer) a
    BorrowedTensor lent like that input, read-only until the call ends and copied if it
    outlives it (a backward pass transposes a recorded matrix); else a copy."""
    for t in tensors:
        if type(t) is BorrowedTensor and np.may_share_memory(out, t._value):
            loan = loans.current()
            if loan is not None and not state.observers and loan.lend(t):
                return loan.track(BorrowedTensor(out))
            return Tensor(out.copy())
    return Tensor(out)


def unborrow(tensors):
    """`tensors` with every BorrowedTensor replaced by a copy of its value under the same
    id: what outlives the call (a captured constant, a tape's entry outside a transformed
    call) owns its memory."""
    for t in tensors:
        if type(t) is BorrowedTensor:
            return tuple([Tensor(x._value.copy(), x._tid) if type(x) is BorrowedTensor
                          else x for x in tensors])
    return tensors


# A caller's array up to this size is copied rather than lent when a tape keeps it: a
# loan costs a lock, two flag writes, a walk of the view chain and a weak reference
# (3-5 us), a copy of a few hundred bytes 0.3 us (the constants of small functions:
# np.arange(1, n + 1) in x ** 2 - i)
SMALL_COPY_BYTES = 1024


def keep(tensors):
    """`tensors` as a tape keeps them: inside a transformed call (a loan, core/loans.py)
    each BorrowedTensor is lent, its caller array read-only until the call ends; outside,
    when its memory cannot be protected, or when it is small (SMALL_COPY_BYTES), replaced
    by a copy under the same id."""
    loan = loans.current()
    if loan is None:
        return unborrow(tensors)
    kept = None
    for k, t in enumerate(tensors):
        if type(t) is BorrowedTensor and (t._value.nbytes <= SMALL_COPY_BYTES
                                          or not loan.lend(t)):
            kept = kept or list(tensors)
            kept[k] = Tensor(t._value.copy(), t._tid)
    return tensors if kept is None else tuple(kept)


def _borrows(tensors):
    for t in tensors:
        if type(t) is BorrowedTensor:
            return True
    return False


def _recorded(op, inputs, above=0):
    """Whether a tape newer than level `above` will record `op` on `inputs`."""
    if not op.differentiable:
        return False
    for tape in state.tapes:
        if tape.level > above and tape.records(inputs):
            return True
    return False


def record(op, inputs, outputs, attrs, above=0):
    """Tell every tape newer than level `above` that `op` ran (`after_forward`): each
    records it if it follows an input. Borrowed inputs are lent or copied first (`keep`),
    once for all the tapes, when one of them will keep them (apply() has done so already)."""
    if _borrows(inputs) and _recorded(op, inputs, above):
        inputs = keep(inputs)
    for tape in state.tapes:
        if tape.level > above:
            tape.after_forward(op, inputs, outputs, attrs)


# -- input conversion -------------------------------------------------------------------
def _weak_dtype(value, inputs):
    """dtype of a Python scalar mixed with Tensors: it takes theirs where it fits."""
    if isinstance(value, bool):
        return None
    for other in inputs:
        if isinstance(other, (Tensor, Variable)):
            dt = other.dtype
        else:
            continue
        if isinstance(value, numbers.Integral) and dt.kind in "iufc":
            return dt
        if isinstance(value, numbers.Real) and dt.kind in "fc":
            return dt
        if isinstance(value, numbers.Complex) and dt.kind == "c":
            return dt
    return None


def to_input(x, inputs=(), fn=None, arg="input"):
    """Tensor for one op input (Variables read, Python scalars weakly typed).

    `fn` and `arg` (the public function and argument names) label conversion errors.
    """
    if isinstance(x, Tensor):
        return x
    if type(x) is float:  # the commonest scalar (dt / 2 * k): _weak_dtype without the ABCs
        for other in inputs:
            if isinstance(other, (Tensor, Variable)) and other.dtype.kind in "fc":
                return Tensor(np.asarray(x, dtype=other.dtype))
    elif type(x) is int:  # the next (2 * x, x - 1): the same, an int takes any numeric dtype
        for other in inputs:
            if isinstance(other, (Tensor, Variable)) and other.dtype.kind in "iufc":
                return Tensor(np.asarray(x, dtype=other.dtype))
    if isinstance(x, Variable):
        return x.read_value()
    if isinstance(x, numbers.Number) and not isinstance(x, np.generic):  # Python scalar
        dt = _weak_dtype(x, inputs)
        if dt is not None:
            return Tensor(np.asarray(x, dtype=dt))
    if isinstance(x, (list, tuple)):
        return convert_to_tensor(x, name=f"{fn}: {arg}" if fn else arg)
    if len(inputs) > 1 and type(x) is np.ndarray and x.dtype.kind in "biufc":
        # an operand of a multi-input op (A in A @ x): the caller's array, not copied. Not
        # for one-input functions, whose no-op shortcuts (squeeze, transpose) return x.
        # A small one is copied now, as a tape would keep it (keep): 0.3 us, where the
        # borrowed Tensor's checks downstream cost 1-2 us (j * x of small functions)
        return Tensor(x.copy()) if x.nbytes <= SMALL_COPY_BYTES else BorrowedTensor(x)
    return Tensor(as_array(x, None, f"{fn}: {arg}" if fn else arg))


def _contains_tensor(value):
    if isinstance(value, (Tensor, Variable)):
        return True
    if isinstance(value, (list, tuple)):
        return any(_contains_tensor(v) for v in value)
    return False


def convert_to_tensor(value, dtype=None, name="value"):
    """A Tensor from a Tensor, Variable, NumPy array, Python scalar or nested list.

    A Variable is read (and the read is seen by tapes watching it). Lists containing
    Tensors are stacked with a differentiable `vj.stack`. A Tensor whose dtype differs
    from `dtype` is an error (as in TF): cast explicitly with `vj.cast`.
    """
    label = "convert_to_tensor: value" if name == "value" else name
    if dtype is not None:
        dtype = as_dtype(dtype, "convert_to_tensor: dtype")
    if isinstance(value, Tensor):
        if dtype is not None and value.dtype != dtype:
            raise ValueError(f"{label}: Tensor has dtype {value.dtype}, requested dtype "
                             f"{dtype}; use vj.cast to convert")
        return value
    if isinstance(value, Variable):
        t = value.read_value()
        if dtype is not None and t.dtype != dtype:
            raise ValueError(f"{label}: Variable has dtype {t.dtype}, requested dtype "
                             f"{dtype}; use vj.cast to convert")
        return t
    if isinstance(value, (list, tuple)) and _contains_tensor(value):
        t = lib.stack([convert_to_tensor(v, name=label) for v in value])
        return lib.cast(t, dtype) if dtype is not None and t.dtype != dtype else t
    return Tensor(as_array(value, dtype, label))
