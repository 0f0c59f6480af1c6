"""Threads (issue 4, item 5): tapes, pfor loops and variable watching are thread-local, and
8 threads differentiating one model concurrently get the sequential results.

tests/transforms/tape/test_tape.py covers the basics (a tape ignores another thread's
ops; concurrent *gradients* on shared Variables). Here: jacobian, batch_jacobian and
Hessians run concurrently with tight thread switching, a pfor loop in one thread while
another thread computes, and which Variables a tape auto-watches when another thread
reads others.
"""
import sys
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import vecjac as vj
from vecjac._src.core.context import state

N_THREADS = 8


@pytest.fixture(autouse=True)
def fast_switching():
    """Switch threads every few microseconds so that the interleavings are many."""
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    yield
    sys.setswitchinterval(old)


def _model(seed=0):
    rng = np.random.default_rng(seed)
    return {"w1": vj.Variable(rng.standard_normal((3, 5)) * 0.7, name="w1"),
            "b1": vj.Variable(rng.standard_normal(5) * 0.2, name="b1"),
            "w2": vj.Variable(rng.standard_normal((5, 2)) * 0.7, name="w2")}


def _forward(m, x):
    return vj.matmul(vj.tanh(vj.matmul(x, m["w1"]) + m["b1"]), m["w2"])


def _everything(m, x_value):
    """gradient, jacobian, batch_jacobian and Hessian of one input, as NumPy arrays."""
    x = vj.constant(x_value)
    with vj.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = _forward(m, x)
        loss = vj.reduce_sum(y * y)
    grads = tape.gradient(loss, [m["w1"], m["b1"], m["w2"]])
    jac = tape.jacobian(y, m["w1"])
    jac_loop = tape.jacobian(y, m["b1"], experimental_use_pfor=False)
    batch = tape.batch_jacobian(y, x)
    with vj.GradientTape() as outer:
        with vj.GradientTape() as inner:
            loss2 = vj.reduce_sum(_forward(m, x) ** 2)
        g = inner.gradient(loss2, m["b1"])
    hess = outer.jacobian(g, m["b1"])
    return [a.numpy().copy() for a in (*grads, jac, jac_loop, batch, g, hess)]


def _run_concurrently(fn, inputs, repeats=10):
    barrier = threading.Barrier(len(inputs))

    def work(x):
        barrier.wait()   # all threads start together
        return [fn(x) for _ in range(repeats)]
    with ThreadPoolExecutor(len(inputs)) as pool:
        return list(pool.map(work, inputs))


def test_eight_threads_get_the_sequential_gradients_jacobians_and_hessians():
    m = _model()
    inputs = [np.random.default_rng(100 + k).standard_normal((4, 3)) for k in range(N_THREADS)]
    sequential = [_everything(m, x) for x in inputs]
    concurrent = _run_concurrently(lambda x: _everything(m, x), inputs)
    for k, (seq, runs) in enumerate(zip(sequential, concurrent)):
        for run in runs:
            for s, c in zip(seq, run):
                np.testing.assert_array_equal(c, s, err_msg=f"thread {k}")
    assert state.tapes == [] and state.stack == []


def test_threads_sharing_variables_while_one_assigns_to_its_own():
    """Reads of shared Variables stay consistent while other Variables change."""
    shared = _model()
    inputs = [np.random.default_rng(k).standard_normal((2, 3)) for k in range(N_THREADS)]
    expected = [_everything(shared, x)[0] for x in inputs]

    def work(x):
        mine = vj.Variable(np.zeros(3))
        out = None
        for step in range(5):
            mine.assign(np.full(3, float(step)))   # private state changes meanwhile
            with vj.GradientTape() as tape:
                loss = vj.reduce_sum(_forward(shared, vj.constant(x)) ** 2) + \
                    vj.reduce_sum(mine * 0.0)
            out = tape.gradient(loss, shared["w1"]).numpy()
        return out
    results = _run_concurrently(work, inputs, repeats=1)
    for e, r in zip(expected, results):
        np.testing.assert_array_equal(r[0], e)


def test_auto_watched_variables_are_per_thread():
    a, b = vj.Variable(1.0, name="a"), vj.Variable(2.0, name="b")
    inside, release = threading.Event(), threading.Event()
    seen = {}

    def reader():
        with vj.GradientTape() as tape:
            inside.set()
            release.wait(5)
            y = b * b          # read only in this thread
        seen["watched"] = [v.name for v in tape.watched_variables()]
        seen["grad"] = float(tape.gradient(y, b))
    t = threading.Thread(target=reader)
    with vj.GradientTape() as tape:
        t.start()
        inside.wait(5)
        y = a * 3.0            # while the other thread's tape is active
        release.set()
        t.join()
    assert [v.name for v in tape.watched_variables()] == ["a:0"]
    assert seen == {"watched": ["b:0"], "grad": 4.0}
    ga, gb = tape.gradient(y, [a, b])
    assert float(ga) == 3.0 and gb is None


def test_a_pfor_loop_in_one_thread_does_not_leak_into_another():
    x = vj.constant(np.arange(12.0).reshape(4, 3))
    in_loop, release = threading.Event(), threading.Event()
    result = {}

    def loop_fn(i):
        row = vj.gather(x, i)
        in_loop.set()
        release.wait(5)        # hold the loop open while the main thread works
        return vj.reduce_sum(row * row)

    def looper():
        result["pfor"] = vj.vectorize.pfor(loop_fn, 4).numpy()
    t = threading.Thread(target=looper)
    t.start()
    in_loop.wait(5)
    assert state.stack == []          # this thread sees no active loop
    v = vj.constant([1.0, 2.0])
    with vj.GradientTape() as tape:
        tape.watch(v)
        y = v * v                     # plain values here, not stacked by the other loop
    jac = tape.jacobian(y, v).numpy()
    release.set()
    t.join()
    np.testing.assert_array_equal(jac, np.diag([2.0, 4.0]))
    np.testing.assert_array_equal(result["pfor"], (x.numpy() ** 2).sum(axis=1))


def test_tapes_created_concurrently_get_distinct_levels_and_stay_local():
    levels, errors = [], []

    def work(k):
        try:
            x = vj.constant(float(k + 1))
            with vj.GradientTape() as t1, vj.GradientTape() as t2:
                assert state.tapes == [t1, t2]   # only this thread's tapes
                t1.watch(x)
                t2.watch(x)
                y = x * x * x
            levels.extend([t1.level, t2.level])
            return float(t1.gradient(y, x)), float(t2.gradient(y, x))
        except Exception as e:  # noqa: BLE001 -- reported below
            errors.append(e)
            raise
    with ThreadPoolExecutor(N_THREADS) as pool:
        grads = list(pool.map(work, range(4 * N_THREADS)))
    assert not errors
    assert len(set(levels)) == len(levels)
    assert grads == [(3.0 * (k + 1) ** 2,) * 2 for k in range(4 * N_THREADS)]


def test_two_threads_differentiating_one_persistent_tape_for_different_sources():
    # which inputs of an entry a pass wants is per-pass state: kept on the shared entry,
    # a switch between setting it and reading it gave one thread the other's choice
    x1, x2 = vj.constant(np.arange(1.0, 5.0)), vj.constant(np.arange(2.0, 6.0))
    with vj.GradientTape(persistent=True) as tape:
        tape.watch([x1, x2])
        y = vj.reduce_sum(vj.sin(x1 * x2) * x1 + x2 ** 2)
    a, b = x1.numpy(), x2.numpy()
    want = {0: np.cos(a * b) * b * a + np.sin(a * b), 1: np.cos(a * b) * a * a + 2 * b}
    wrong = []

    def differentiate(k):
        for _ in range(1000):
            g = tape.gradient(y, (x1, x2)[k])
            if g is None or not np.allclose(g.numpy(), want[k], rtol=1e-12):
                wrong.append(k)

    threads = [threading.Thread(target=differentiate, args=(k,)) for k in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert wrong == []
