"""Loans: a caller's ndarray read in place for one transformed call, read-only meanwhile.

An operand of a multi-input op (`X` in `X @ w`) enters vecjac as a `BorrowedTensor` over
the caller's memory (core/dispatch.py: to_input). What keeps it beyond the op (a tape's
entry, a view that pfor passes on) must not see a later write by the caller. Two ways:

- a *loan*, inside a call whose end is known: vj.grad, value_and_grad, hvp, jvp and the
  Jacobian family open one around the call (`lending`). Lending an array clears its
  `writeable` flag, and those of the ndarrays it is a view of, until the outermost loan
  of the thread ends: a write through the array, its base or any view made from them
  meanwhile raises NumPy's "ValueError: assignment destination is read-only" instead of
  changing a derivative. At the end, every lent BorrowedTensor still alive (kept by a
  user's tape, a result, a traceback) gets a copy of its own, then the flags are
  restored. Loans of several threads on one array are counted; the flag comes back when
  the last ends, as it was when first lent (an array read-only before stays read-only).
  An array whose flag was set back to writeable during the loan (NumPy cannot prevent
  `a.flags.writeable = True` on an array that owns its memory) makes the call raise
  RuntimeError at its end: a write may have changed its result.
- a *copy*, everywhere else: a GradientTape of the user outside any loan, vjp's and
  linearize's closures, vj.function's captured constants (their lifetime is open), an
  array over memory NumPy arrays do not own (an ndarray subclass or a foreign buffer at
  the base of its views: mmap, bytes, another library's buffer), and every array when
  VECJAC_COPY_CALLER_ARRAYS=1 (core/flags.py).

What a loan cannot see: a writeable array made *before* the call over the same memory and
never handed to vecjac (an earlier view `v = X[:]`, a memoryview, torch.from_numpy(X))
keeps its own flag, and NumPy keeps no list of an array's views. Writing through it
during the call (from the function being differentiated, a callback, another thread) is
not refused. And a view the caller makes of a lent array during the call is born
read-only (NumPy's rule) and stays so when the loan ends; NumPy lets its owner set its
flag back once the base is writeable again.
"""
import threading
import weakref

import numpy as np

from vecjac._src.core.flags import COPY_CALLER_ARRAYS
from vecjac._src.core.tensor import BorrowedTensor, Tensor

_lock = threading.Lock()  # guards _held and _waiting: loans of all threads share them
_held = {}     # id(array) -> [array, loans holding it, writeable when first lent]
_waiting = {}  # id(base) -> views to make writeable again once their base is
_local = threading.local()


def current():
    """The loan of this thread's outermost transformed call, or None (copy, then)."""
    return getattr(_local, "loan", None)


def lent_arrays():
    """The arrays lent now, by any thread (for tests and debugging)."""
    with _lock:
        return [h[0] for h in _held.values()]


class lending:
    """`with lending(what):` around one call of a transformed function (`what`: its name,
    for the error of a tampered array). Nested calls join the outermost loan: a value an
    inner call lends may be kept by the outer call's tapes."""

    __slots__ = ("what",)

    def __init__(self, what):
        self.what = what

    def __enter__(self):
        if COPY_CALLER_ARRAYS:
            return None
        loan = getattr(_local, "loan", None)
        if loan is None:
            loan = _local.loan = Loan(self.what)
        loan.depth += 1
        return loan

    def __exit__(self, kind, exc, tb):
        if COPY_CALLER_ARRAYS:
            return False
        loan = _local.loan
        loan.depth -= 1
        if loan.depth == 0:
            _local.loan = None
            # (a traceback's frames may keep lent tensors: close() copies them)
            loan.close(raise_tampered=exc is None)
        return False


class Loan:
    """The arrays one outermost call has made read-only, and the BorrowedTensors over
    them that could outlive it (weak references)."""

    __slots__ = ("what", "depth", "arrays", "tensors")

    def __init__(self, what):
        self.what = what
        self.depth = 0
        self.arrays = {}   # id(array) -> array, each counted once in _held
        self.tensors = []  # weak references to the BorrowedTensors lent

    def lend(self, t):
        """Make `t`'s memory read-only until the loan ends; False when that cannot
        protect it (memory NumPy arrays do not own: copy it instead)."""
        v = t._value
        arrays = self.arrays
        if id(v) not in arrays:
            b = v.base  # a read-only view of an array held already cannot become writeable
            if b is None or id(b) not in arrays or v.flags.writeable:
                chain = _chain(v)
                if chain is None:
                    return False
                _hold([a for a in chain if id(a) not in arrays], arrays)
        self.tensors.append(weakref.ref(t))
        return True

    def track(self, t):
        """`t`, a BorrowedTensor over memory lent already (a view of a lent array),
        to be given a copy of its own if it outlives the loan."""
        t._value.setflags(write=False)  # a view vecjac made: nobody writes through it
        self.tensors.append(weakref.ref(t))
        return t

    def close(self, raise_tampered=True):
        """End the loan: a copy for every lent BorrowedTensor still alive, then the
        arrays' flags back (when no other loan holds them)."""
        try:
            for ref in self.tensors:
                t = ref()
                if t is not None and type(t) is BorrowedTensor:
                    t._value = t._value.copy(order="K")  # its layout: the same sums
                    t.__class__ = Tensor  # it owns its memory now
        finally:  # (a copy failing for memory must not leave the arrays read-only)
            self.tensors = []
            # (most calls lend nothing: no lock then)
            tampered = _release(list(self.arrays.values())) if self.arrays else ()
            self.arrays = {}
        if tampered and raise_tampered:
            shapes = ", ".join(f"shape {a.shape} dtype {a.dtype}" for a in tampered)
            raise RuntimeError(
                f"{self.what}: an array vecjac had made read-only for this call (a caller's "
                f"array read in place: {shapes}) was made writeable during the call, so a "
                "write to it may have changed the result. Do not set the writeable flag of "
                "arrays a transformed function reads while it runs; pass vj.constant(array) "
                "(a copy) if the array must change meanwhile")


def _chain(v):
    """`v` and the ndarrays it is a view of, down to the one owning the memory; None when
    the memory is not an ndarray's own (a buffer of another object, a subclass)."""
    chain = [v]
    b = v.base
    while b is not None:
        if type(b) is not np.ndarray:
            return None
        chain.append(b)
        b = b.base
    return chain if chain[-1].flags.owndata else None


def _hold(arrays, mine):
    with _lock:
        for a in arrays:
            h = _held.get(id(a))
            if h is None:
                _held[id(a)] = [a, 1, a.flags.writeable]
                a.setflags(write=False)
            else:
                h[1] += 1
            mine[id(a)] = a


def _release(arrays):
    """One loan fewer on each of `arrays`; those no loan holds get their flag back, owners
    before views (a view cannot be writeable over a read-only base). Returns the arrays
    found writeable although lent (their flag was set during the loan)."""
    tampered, views = [], []
    with _lock:
        for a in arrays:
            h = _held[id(a)]
            h[1] -= 1
            if h[1] == 0:
                del _held[id(a)]
                if a.flags.writeable:
                    tampered.append(a)
                elif not h[2]:
                    pass
                elif a.base is None:
                    _make_writeable(a)
                else:
                    views.append(a)
        for a in views:
            _make_writeable(a)
    return tampered


def _make_writeable(a):
    try:
        a.setflags(write=True)
    except ValueError:  # its base is still lent (by another thread's loan): wait for it
        if a.base is not None and id(a.base) in _held:
            _waiting.setdefault(id(a.base), []).append(a)
        return
    if _waiting:
        for view in _waiting.pop(id(a), ()):
            _make_writeable(view)
