"""vj.function's first calls (issue 30): the trace runs the function's body once, the
optimized replay is built by a background worker (or, switched off, on the third replay
in the caller's thread), and neither changes a bit of any result. Expected values are
the same functions run eagerly."""
import gc
import logging

import numpy as np
import pytest

import vecjac as vj
from vecjac._src.transforms.function import background, plan as _plan_module
from vecjac._src.transforms.function import fusion as _fusion

RNG = np.random.default_rng(11)


def _counting_trajectory(counter, steps=40):
    """An RK4 trajectory written as a user writes it; counts how often its body runs."""
    def trajectory(p):
        counter.append(1)
        a, b = p[0], p[1]

        def rhs(y):
            return vj.stack([a * y[0] - b * y[0] * y[1], -y[1] / (1.0 + y[0] ** 2)])
        y, out = vj.constant([1.0, 0.5]), []
        for _ in range(steps):
            k1 = rhs(y)
            k2 = rhs(y + 0.025 * k1)
            k3 = rhs(y + 0.025 * k2)
            k4 = rhs(y + 0.05 * k3)
            y = y + 0.05 / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
            out.append(y)
        return vj.stack(out)
    return trajectory


@pytest.mark.parametrize("transform", ["jacfwd", "grad", "none"])
def test_the_first_call_runs_the_body_once_and_replays_never(transform):
    runs = []
    body = _counting_trajectory(runs)
    wrapped = {"jacfwd": vj.jacfwd(body),
               "grad": vj.grad(lambda p: vj.reduce_sum(body(p) ** 2)),
               "none": body}[transform]
    f = vj.function(wrapped)
    p = np.array([1.1, 0.4])
    f(p)
    assert len(runs) == 1  # one trace: no second pass, no eager re-run
    for _ in range(5):
        f(p + 0.01)
    assert len(runs) == 1 and f.experimental_get_tracing_count() == 1


def _eager(fn, *args):
    return np.asarray(fn(*[vj.constant(a) for a in args]))


def _chain_workload(t, a):
    u = t * a + 1.5 * t     # element-wise over a large shape: a compiled chain
    v = -(u / (a + 2.0)) * (u - 0.5)
    return vj.reduce_sum(v * u, axis=0)


def _segment_workload(p):
    return vj.jacfwd(_counting_trajectory([], steps=8))(p)


def _gradient_workload(p):
    """Reverse mode through the slices y[0], y[1]: their gradients (StridedSliceGrad,
    zeros with one value placed) are fused as zero-fill layouts."""
    trajectory = _counting_trajectory([], steps=8)
    return vj.grad(lambda q: vj.reduce_sum(trajectory(q) ** 2))(p)


def _plan_of(f):
    return next(iter(f._entries.values())).plans[0]


@pytest.mark.parametrize("work, make_args", [
    (_segment_workload, lambda k: (np.array([1.1 + 0.05 * k, 0.4]),)),
    (_gradient_workload, lambda k: (np.array([1.1 + 0.05 * k, 0.4]),)),
    (_chain_workload, lambda k: (RNG.standard_normal((8, 64, 64)),
                                 RNG.standard_normal((64, 64)) + 0.1 * k)),
], ids=["fused segment", "fused gradient", "chain"])
def test_background_compilation_changes_no_bit(monkeypatch, work, make_args):
    monkeypatch.setenv("VECJAC_BACKGROUND_COMPILE", "1")
    f = vj.function(work)
    for k in range(8):
        args = make_args(k)
        np.testing.assert_array_equal(f(*args).numpy(), _eager(work, *args))
        if k == 3:
            assert background.wait(timeout=120)
    plan = _plan_of(f)
    assert not plan._pending  # the job was submitted on the first replay and has run
    if _fusion.numba_module() is not None:  # the optimized replay is in use
        assert any(type(s.op).__name__ in ("_FusedOp", "_ChainOp")
                   for s in plan.fused_steps if s.kind == "op")
        if work is _gradient_workload:  # no slice gradient is left out of the segments
            assert not any(s.op.name == "StridedSliceGrad" for s in plan.fused_steps
                           if s.kind == "op")


def test_switched_off_the_replay_is_optimized_on_the_fourth_call_in_the_caller(monkeypatch):
    monkeypatch.setenv("VECJAC_BACKGROUND_COMPILE", "0")
    submitted = []
    monkeypatch.setattr(background, "submit", submitted.append)
    f = vj.function(_segment_workload)
    p = np.array([1.1, 0.4])
    for _ in range(3):  # the trace and two replays by the step interpreter
        np.testing.assert_array_equal(f(p).numpy(), _eager(_segment_workload, p))
    plan = _plan_of(f)
    assert plan._pending and plan.fused_steps is plan.steps
    np.testing.assert_array_equal(f(p).numpy(), _eager(_segment_workload, p))
    assert not plan._pending and not submitted
    if _fusion.numba_module() is not None:
        assert plan.fused_steps is not plan.steps


def test_a_failing_optimization_keeps_the_step_by_step_replay(monkeypatch, caplog):
    monkeypatch.setenv("VECJAC_BACKGROUND_COMPILE", "0")

    def broken(*args, **kwargs):
        raise RuntimeError("fusion failed")
    monkeypatch.setattr(_plan_module, "_in_place", broken)
    f = vj.function(_segment_workload)
    with caplog.at_level(logging.WARNING, logger="vecjac"):
        for k in range(6):
            p = np.array([1.0 + 0.1 * k, 0.4])
            np.testing.assert_array_equal(f(p).numpy(), _eager(_segment_workload, p))
    assert "optimizing the replay failed" in caplog.text
    assert _plan_of(f).fused_steps is _plan_of(f).steps


def test_the_collector_is_paused_while_tracing_only():
    seen = []

    def body(x):
        seen.append(gc.isenabled())
        return x * 2.0
    f = vj.function(body)
    assert gc.isenabled()
    f(np.ones(3))
    assert seen == [False] and gc.isenabled()
    gc.disable()  # a caller who turned it off keeps it off
    try:
        vj.function(body)(np.ones(3))
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_what_outlives_the_trace_goes_to_the_oldest_generation_unwalked():
    """The plan's objects (a Step and its tuples per op) are not left young for the
    first collection to walk: the trace ends with them in the oldest generation
    (gc.freeze then gc.unfreeze), gen 0's count reset, so no collection runs as the
    collector resumes; objects a program froze itself stay frozen (then the trace
    leaves its objects young, and they are walked)."""
    p = np.array([1.1, 0.4])
    collections = []

    def seen(phase, info):
        if phase == "start":
            collections.append(info["generation"])
    gc.collect()
    gc.callbacks.append(seen)
    try:
        f = vj.function(_counting_trajectory([], steps=60))
        f(p)
        assert collections == [] and gc.get_freeze_count() == 0
        assert len(_plan_of(f).steps) > 1000  # (a plan of many objects)
        frozen = [[k] for k in range(50)]
        gc.freeze()
        try:
            mine = gc.get_freeze_count()
            vj.function(_counting_trajectory([], steps=60))(p)
            assert gc.get_freeze_count() == mine and collections
        finally:
            gc.unfreeze()
        del frozen
    finally:
        gc.callbacks.remove(seen)


def test_the_trace_builds_no_replay_the_first_replay_does():
    f = vj.function(_segment_workload)
    p = np.array([1.1, 0.4])
    f(p)
    plan = _plan_of(f)
    assert plan._replay is None  # (a function called once never pays for it)
    np.testing.assert_array_equal(f(p + 0.1).numpy(), _eager(_segment_workload, p + 0.1))
    assert plan._replay is not None


def test_exiting_while_the_worker_compiles_is_clean(tmp_path):
    """The interpreter exits right after the job is submitted: the worker stops at its
    next phase and ends before the interpreter is torn down (no crash, no traceback)."""
    import os
    import subprocess
    import sys
    script = tmp_path / "exit_early.py"
    script.write_text(
        "import numpy as np\n"
        "import vecjac as vj\n"
        "f = vj.function(lambda t, a: vj.reduce_sum((t * a + 1.5 * t) * (t - a), axis=0))\n"
        "t, a = np.ones((8, 64, 64)), np.full((64, 64), 2.0)\n"
        "f(t, a)\n"
        "print(float(f(t, a).numpy().sum()))\n")  # the second call submits the job
    env = dict(os.environ, VECJAC_BACKGROUND_COMPILE="1",
               PYTHONPATH=os.pathsep.join(sys.path))
    done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    # t * a + 1.5 t = 3.5 and t - a = -1 everywhere, summed over 8 x 64 x 64 elements
    assert float(done.stdout) == 8 * 64 * 64 * 3.5 * -1.0 and not done.stderr
