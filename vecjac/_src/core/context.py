"""The thread-local transform stack.

Every transform (GradientTape, the pfor loop, ForwardAccumulator, the sparsity tracer,
the plan capture of vj.function) is a `Transform` with a *level*, drawn from one counter
when it becomes active, so that "entered inside" is simply "has a larger level".

A transform plays one or more roles, each a list of `state` that apply() reads, and
implements the one hook of each role:
- owners: transforms that compute an op in their own view. `followers` follow values by
  id (ForwardAccumulator: the values it holds tangents for; the sparsity tracer: traced
  values); pfor loops follow their stacked values through the value itself
  (`Tensor._pfor`), which is cheaper to find. apply() hands an op with a followed input
  to the innermost such transform, whose `process(op, tensors, attrs)` computes the
  outputs with the op's rule (converter, jvp, pattern) and records the op, in its own
  view, on the tapes entered inside it (vecjac/_src/core/dispatch.py: record);
- `tapes` (recorders) and `observers` (plan capture): apply() calls their
  `after_forward(op, inputs, outputs, attrs)` once the forward of an op has run. A tape
  decides what it keeps (recording, visible, connected to an input); an observer sees
  every forward that runs, hidden or not.
Nothing else reaches into a transform: what others need to know is a public method.

`alone(transform)` is the one question the fast paths ask: could any other transform
see the difference between the op's rule through apply() and a shortcut?
`alone_but_observed(transform)` is the same question with observers set aside: a
shortcut that tells them every forward it computes (`observe_forward`) also runs under
vj.function's trace, which then records the steps eager execution takes.

Hiding. A rule's ops go through apply() again, so that transforms *outside* the one
running the rule see them. The transform itself and those entered inside it must not:
they see the op once, in the transform's view. `hide(level)` hides every active
transform with a level >= `level` until `unhide`.

A transform entered while a rule runs (the tape of a derived JVP, a loop reopened for a
custom gradient) belongs to the rule: it must see the rule's ops and stay outside the
transform running the rule. So its level is not the next integer but one between the
lowest hidden level and the highest visible one below it (levels are ordered numbers,
not counts); the stack stays sorted by level.
"""
import bisect
import itertools
import threading

from vecjac._src.core.flags import NO_FAST_PATHS

_levels = itertools.count(1)


def next_level():
    """A level for a transform becoming active now: inside every visible transform, and
    outside the transform whose rule is running, if any."""
    hidden = state.hidden
    if not hidden:
        return next(_levels)
    rule = min(hidden)
    below = max((t.level for t in state.stack if t.level < rule), default=0)
    return (below + rule) / 2


class _State(threading.local):
    def __init__(self):
        self.stack = []       # active transforms, oldest (outermost) first
        self.tapes = []       # the recorders among them
        self.followers = []   # transforms that follow values by id, outermost first
        self.observers = []   # transforms that see every forward
        self.hidden = {}      # level -> how many rules currently hide it
        self.variable_watchers = []  # callbacks told about every Variable read


state = _State()


class Transform:
    """Base of everything on the stack. Subclasses name their roles (`roles`: names of the
    `state` lists above) and call `_push` / `_pop` as they become active / inactive."""

    level = 0
    roles = ()

    def _push(self):
        self.level = level = next_level()
        st = state
        for lst in (st.stack,) + tuple([getattr(st, role) for role in self.roles]):
            if not lst or lst[-1].level < level:  # the innermost: most transforms
                lst.append(self)
            else:
                lst.insert(bisect.bisect_right([t.level for t in lst], level), self)

    def _pop(self):
        for role in self.roles:
            lst = getattr(state, role)
            if self in lst:
                lst.remove(self)
        if self in state.stack:
            state.stack.remove(self)

    @property
    def visible(self):
        return not state.hidden or self.level not in state.hidden

    def process(self, op, tensors, attrs):
        """The owner's hook: compute `op` on `tensors` in this transform's view (its
        rule, through apply() while hidden) and return the outputs, as apply() would."""
        raise NotImplementedError(f"{type(self).__name__} owns no values")

    def after_forward(self, op, inputs, outputs, attrs):
        """The recorder's and observer's hook: `op`'s forward ran on `inputs`."""

    def value_read(self, tensor, how, test=None):
        """`tensor`'s value is leaving vecjac (`how`, `test`: see value_read below). A
        transform that follows it may raise or warn (the derivative would be cut there)
        or record the read (plan capture: a guard). Default: nothing."""

    def varies(self, tensor):
        """Whether `tensor` stands for many values at once (a traced value), so that
        vecjac's own control flow must take every branch (vj.cond). Default: no."""
        return False


def alone(transform):
    """Whether no transform but `transform` could see the difference if it computed an op
    directly (in NumPy, or by handing it straight to a loop) instead of running the op's
    rule through apply(): no tape, no observer, and no follower outside it. Transforms
    entered inside it are hidden while its rules run, so they see neither route. Every
    fast path asks this or `alone_but_observed` (and nothing else) about the stack; under
    VECJAC_NO_FAST_PATHS=1 both are always False. Inputs that are loop values are the
    fast paths' own business."""
    if NO_FAST_PATHS:
        return False
    st = state
    if st.tapes or st.observers:
        return False
    followers = st.followers
    return not followers or followers[0].level >= transform.level


def alone_but_observed(transform):
    """`alone`, with observers (vj.function's capture) allowed: no tape and no follower
    outside `transform`. A fast path may then run under a trace if it tells the observers,
    by `observe_forward`, each forward it computes directly: an op's own forward on the
    values of Tensors, which a replay runs again and gets the same bits. A shortcut that
    computes anything else (the accumulator's fused value and derivative, pfor's batched
    forwards, a value-dependent fact) must ask `alone`: under a capture its result would
    be a value nobody saw computed, a constant of the plan, silently wrong at replay."""
    if NO_FAST_PATHS:
        return False
    if state.tapes:
        return False
    followers = state.followers
    return not followers or followers[0].level >= transform.level


def observe_forward(op, inputs, outputs, attrs):
    """Tell the observers that `op`'s forward ran on `inputs` (Tensors) and gave `outputs`
    (a tuple of Tensors), as apply() does: for a fast path that computed it directly."""
    for observer in state.observers:
        observer.after_forward(op, inputs, outputs, attrs)


def hide(level):
    """Hide every active transform of level >= `level`; returns what to pass to unhide."""
    st = state
    hidden = st.hidden
    stack = st.stack
    if stack and stack[-1].level == level:  # only the innermost transform: most ops
        hidden[level] = hidden.get(level, 0) + 1
        return (level,)
    levels = []
    for t in reversed(stack):
        if t.level < level:
            break
        levels.append(t.level)
        hidden[t.level] = hidden.get(t.level, 0) + 1
    return levels


def unhide(levels):
    hidden = state.hidden
    for lv in levels:
        n = hidden[lv] - 1
        if n:
            hidden[lv] = n
        else:
            del hidden[lv]


# -- values leaving vecjac --------------------------------------------------------------
# How a tensor's value leaves: Python's implicit conversions (np.asarray and everything
# that calls it, float(), int(), operator.index, complex(), math.*), a truth test, the
# explicit t.numpy(), or a value-dependent choice inside vecjac itself.
IMPLICIT = frozenset(("__array__", "__float__", "__int__", "__index__", "__complex__",
                      "__reduce__"))
# np.asarray(t, int) / np.int64(t): an array of integers or bools, which carries no
# derivative in any convention (TF's cast to int has none, JAX's a float0 zero), so the
# transforms that refuse implicit conversions let it pass; capture still guards the value
INTEGRAL_ARRAY = "__array__ (integer dtype)"
READS = IMPLICIT | {"__bool__", "numpy", "internal", INTEGRAL_ARRAY}


class NumpyFallback(str):
    """`how` of a read by a NumPy function that has no vecjac op, run on the plain value
    (vecjac/_src/numpy/dispatch.py): as implicit as np.asarray, and the text names the
    function, for the messages of the transforms that refuse or warn."""


def implicit(how):
    """Whether a read is an implicit conversion (the derivative would stop there)."""
    return how in IMPLICIT or type(how) is NumpyFallback


def varies(tensor):
    """True when an active transform follows `tensor` as a value standing for many (the
    sparsity tracer): vj.cond then runs both branches and selects with vj.where."""
    for t in state.stack:
        if t.varies(tensor):
            return True
    return False


def value_read(tensor, how, test=None):
    """Tell every active transform, innermost first, that `tensor`'s value is read by
    Python (`how` in READS). Called by Tensor's conversions; raises what a transform
    raises (a loop-variant value, a value a functional transform differentiates).

    `test` (for how="internal": vecjac's own value-dependent choices) is the function
    of the value (an ndarray) that the choice depends on, e.g. "all finite", so that
    plan capture re-checks just that at replay; None means the whole value matters."""
    for t in reversed(state.stack):
        t.value_read(tensor, how, test)


class suspended:
    """Every transform out of sight for what runs inside (tapes, accumulators, loops,
    observers, Variable watchers), restored on exit. For an op's forward that runs
    vecjac code on fresh values of its own, such as a solver's iterations
    (vecjac/_src/api/scipy/implicit.py): no transform outside follows those values, so
    hiding them changes no derivative, and spares each op of the solve the transforms'
    checks and vj.function's replay-under-transforms path."""

    _LISTS = ("stack", "tapes", "followers", "observers", "variable_watchers")

    def __enter__(self):
        st = state
        self._saved = [(name, getattr(st, name)) for name in self._LISTS]
        self._hidden = st.hidden
        for name in self._LISTS:
            setattr(st, name, [])
        st.hidden = {}
        return self

    def __exit__(self, *exc):
        st = state
        for name, lst in self._saved:
            setattr(st, name, lst)
        st.hidden = self._hidden
        return False
