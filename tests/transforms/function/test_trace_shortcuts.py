"""vj.function's trace takes eager execution's shortcuts (issue 30, "the first hour").

Forward mode's primal forwards and pfor's element-wise and layout shortcuts compute an op
directly in NumPy; under the capture they tell it the forward they ran
(context.observe_forward), so the trace takes the route an eager call takes and records
steps a replay runs again. Shortcuts that compute something no op replays (the
accumulator's fused value and derivative) stay off under the capture. Expected values
are eager calls, to the bit.
"""
import weakref

import numpy as np
import pytest

import vecjac as vj
from vecjac._src.core import context
from vecjac._src.transforms.forward.accumulator import ForwardAccumulator
from vecjac._src.transforms.function.capture import Capture
from vecjac._src.transforms.pfor.pfor import PFor


def _trajectory(p, steps=12, dt=0.05):
    """RK4 as a user writes it; `x * y` broadcasts a per-iteration scalar tangent against
    a vector (pfor lines the loop axis up with a Reshape), vj.sin is a unary op with a
    derivative (the accumulator's fused shortcut, eager only)."""
    a, b = p[0], p[1]

    def rhs(y):
        x, z = y[0], y[1]
        return vj.stack([a * x - b * x * z, -z / (1.0 + x * x)]) + 0.01 * x * y
    y, out = vj.constant([1.0, 0.5]), []
    for _ in range(steps):
        k1 = rhs(y)
        k2 = rhs(y + dt / 2 * k1)
        k3 = rhs(y + dt / 2 * k2)
        k4 = rhs(y + dt * k3)
        y = y + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        out.append(vj.sin(y))
    return vj.stack(out)


class _Counts:
    """How often each shortcut ran (returned a result), with or without a capture."""

    def __init__(self, monkeypatch):
        self.runs = []
        for cls, name in ((PFor, "_elementwise_fast"), (PFor, "_layout_fast"),
                          (ForwardAccumulator, "_fused")):
            monkeypatch.setattr(cls, name, self._counted(getattr(cls, name), name))

    def _counted(self, method, name):
        def counted(*args):
            out = method(*args)
            if out is not None:
                self.runs.append((name, bool(context.state.observers)))
            return out
        return counted

    def under_capture(self, name):
        return sum(1 for n, observed in self.runs if n == name and observed)


@pytest.mark.skipif(context.NO_FAST_PATHS, reason="VECJAC_NO_FAST_PATHS=1: no shortcuts")
def test_the_trace_takes_the_eager_shortcuts_and_records_replayable_steps(monkeypatch):
    counts = _Counts(monkeypatch)
    jac = vj.jacfwd(_trajectory)
    f = vj.function(jac)
    p = np.array([1.1, 0.4])
    np.testing.assert_array_equal(f(p).numpy(), jac(vj.constant(p)).numpy())
    assert counts.under_capture("_elementwise_fast") > 100
    assert counts.under_capture("_layout_fast") > 20
    assert counts.under_capture("_fused") == 0  # its factor is no op's forward
    assert any(n == "_fused" for n, _ in counts.runs)  # (eager took it)
    plan = next(iter(f._entries.values())).plans[0]
    ops = {s.op.name for s in plan.steps if s.kind == "op"}
    assert {"Reshape", "Mul", "StridedSlice", "Pack", "Cos"} <= ops
    assert not plan.consts or max(v.size for v in plan.consts.values()) <= 4
    for k in range(4):  # replays (the interpreter, then the optimized one) at new points
        q = p + 0.03 * (k + 1)
        np.testing.assert_array_equal(f(q).numpy(), jac(vj.constant(q)).numpy())
    assert f.experimental_get_tracing_count() == 1


@pytest.mark.parametrize("transform", ["jacfwd", "jacobian", "hessian"])
def test_replays_of_derivatives_of_a_loop_equal_eager_to_the_bit(transform):
    wrapped = {"jacfwd": vj.jacfwd(_trajectory), "jacobian": vj.jacobian(_trajectory),
               "hessian": vj.hessian(lambda p: vj.reduce_sum(_trajectory(p, steps=4)))
               }[transform]
    f = vj.function(wrapped)
    for k in range(6):
        p = np.array([1.1 - 0.02 * k, 0.4 + 0.01 * k])
        np.testing.assert_array_equal(f(p).numpy(), wrapped(vj.constant(p)).numpy())
    assert f.experimental_get_tracing_count() == 1


class _Watcher(context.Transform):
    roles = ("observers",)

    def after_forward(self, op, inputs, outputs, attrs):
        pass


def test_alone_but_observed_sets_observers_aside_and_nothing_else():
    x = vj.constant([1.0, 2.0])
    fast = not context.NO_FAST_PATHS
    with ForwardAccumulator(x, vj.constant([1.0, 0.0])) as acc:
        assert context.alone_but_observed(acc) == fast
        watcher = _Watcher()
        watcher._push()
        try:
            assert not context.alone(acc)
            assert context.alone_but_observed(acc) == fast
        finally:
            watcher._pop()
        with vj.GradientTape():  # a tape records the rules' ops: no shortcut
            assert not context.alone_but_observed(acc)
    with ForwardAccumulator(x, vj.constant([1.0, 0.0])) as outer:
        with ForwardAccumulator(x, vj.constant([0.0, 1.0])) as inner:
            assert not context.alone_but_observed(inner)  # the outer one follows
            assert context.alone_but_observed(outer) == fast


def test_a_direct_primal_forward_is_a_step_not_a_constant():
    """The accumulator's primal forward under a capture: a recorded step on the input's
    slot (a constant would replay the trace's value)."""
    x = vj.constant([0.3, 0.9])
    with Capture() as capture:
        slot = capture.add_input(x)
        with ForwardAccumulator(x, vj.constant([1.0, 1.0])) as acc:
            y = x * x + 1.0
    assert acc.jvp(y) is not None
    assert capture.slot(y) not in capture.consts
    ops = [(s.op.name, s.ins) for s in capture.steps if s.kind == "op"]
    assert ("Mul", (slot, slot)) in ops


# -- slots by Tensor id (capture.py: slot_of) --------------------------------------------
def test_every_read_of_a_variable_is_its_own_slot():
    """All reads of a Variable carry its tid: a read taken before an assignment stays
    that read (its value then), in an op and in a guard, at the trace and at replays."""
    v = vj.Variable(1.0)

    def body(x):
        old = v.read_value()
        v.assign_add(x)
        new = v.read_value()
        if old > 2.0:  # a guard on the first read, after the assignment
            return old * 10.0 + new
        return old * 100.0 + new
    f = vj.function(body)
    w = vj.Variable(1.0)

    def eager(x):  # the same on a twin Variable, eagerly
        old = w.read_value()
        w.assign_add(x)
        new = w.read_value()
        return old * 10.0 + new if old > 2.0 else old * 100.0 + new
    for k in range(5):
        x = vj.constant(0.75 + k)
        np.testing.assert_array_equal(f(x).numpy(), eager(x).numpy())
        np.testing.assert_array_equal(v.numpy(), w.numpy())


def test_the_trace_keeps_no_tensor_alive():
    """Slots are keyed by tid: the trace's intermediate Tensors die as eagerly."""
    dead = []

    def body(x):
        y = x * 2.0
        ref = weakref.ref(y)
        z = y + 1.0
        del y
        dead.append(ref() is None)  # while tracing
        return z
    f = vj.function(body)
    np.testing.assert_array_equal(f(np.ones(3)).numpy(), np.full(3, 3.0))
    assert dead == [True]
    np.testing.assert_array_equal(f(np.full(3, 2.0)).numpy(), np.full(3, 5.0))
