"""Memory (issue 4, item 4): what a tape keeps, leaks across many calls, and the peak
memory of chunked Jacobians.

tests/transforms/tape/test_tape.py already checks that a non-persistent tape frees an
intermediate after `gradient` and that a persistent one keeps it until deleted; here the
same holds for `jacobian`, `batch_jacobian`, nested Hessian tapes, pfor loops and failing
calls. The bounds are generous (a leak of one small array per call over thousands of
calls, a factor 2 on peaks) so that they hold on any allocator.
"""
import gc
import tracemalloc
import weakref

import numpy as np
import pytest

import vecjac as vj


def _watched(shape=(50,), seed=0):
    return vj.constant(np.random.default_rng(seed).standard_normal(shape))


# -- a non-persistent tape frees its recorded values after use --------------------------------
@pytest.mark.parametrize("use", ["gradient", "jacobian", "batch_jacobian"])
def test_non_persistent_tape_frees_intermediates_after_use(use):
    x = _watched((4, 5))
    with vj.GradientTape() as tape:
        tape.watch(x)
        h = vj.tanh(x) * 3.0
        y = vj.sin(h) * x
    ref = weakref.ref(h)
    result = getattr(tape, use)(y, x)
    del h, y
    gc.collect()
    assert ref() is None, f"tape.{use} kept an intermediate alive"
    assert result.shape[0] == 4 and not tape._entries


def test_hessian_tapes_free_intermediates():
    x = _watched((6,))
    with vj.GradientTape() as outer:
        outer.watch(x)
        with vj.GradientTape() as inner:
            inner.watch(x)
            h = vj.exp(x) * x
            loss = vj.reduce_sum(h * h)
        g = inner.gradient(loss, x)
    refs = [weakref.ref(h), weakref.ref(g)]
    hess = outer.jacobian(g, x)
    del h, g, loss
    gc.collect()
    assert all(r() is None for r in refs)
    assert hess.shape == (6, 6)


def test_pfor_and_failed_calls_do_not_keep_values_alive():
    x = _watched((8, 3))
    kept = []

    def loop_fn(i):
        row = vj.gather(x, i) * 2.0
        kept.append(weakref.ref(row))
        return vj.reduce_sum(row * row)
    out = vj.vectorize.pfor(loop_fn, 8)
    gc.collect()
    assert kept[0]() is None and out.shape == (8,)

    with vj.GradientTape() as tape:
        tape.watch(x)
        h = vj.sin(x)
        with pytest.raises(ValueError):
            vj.matmul(h, h)   # (8, 3) @ (8, 3): fails, must not pin h anywhere
        y = vj.reduce_sum(h)
    ref = weakref.ref(h)
    tape.gradient(y, x)
    del h, y
    gc.collect()
    assert ref() is None


# -- no growth over many calls ------------------------------------------------------------------
def _growth(step, warmup, calls):
    """Bytes still allocated after `calls` more calls than after `warmup` calls."""
    for _ in range(warmup):
        step()
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.take_snapshot()
        for _ in range(calls):
            step()
        gc.collect()
        after = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
    stats = after.compare_to(before, "filename")
    return sum(s.size_diff for s in stats), stats[:5]


def test_ten_thousand_gradient_calls_do_not_grow_memory():
    w = vj.Variable(np.linspace(-1.0, 1.0, 12).reshape(4, 3))
    x = vj.constant(np.ones((2, 4)))

    def step():
        with vj.GradientTape() as tape:
            loss = vj.reduce_sum(vj.tanh(vj.matmul(x, w)) ** 2)
        return tape.gradient(loss, w)
    growth, top = _growth(step, warmup=200, calls=10_000)
    # a leak of even one 96-byte kernel-sized array per call would be ~1 MB
    assert growth < 200_000, f"grew by {growth} bytes: {top}"


def test_two_thousand_jacobian_calls_do_not_grow_memory():
    x = _watched((6,))

    def step():
        with vj.GradientTape() as tape:
            tape.watch(x)
            y = vj.sin(x) * vj.reduce_sum(x * x)
        return tape.jacobian(y, x)
    growth, top = _growth(step, warmup=50, calls=2_000)
    assert growth < 200_000, f"grew by {growth} bytes: {top}"


# -- parallel_iterations bounds peak memory ----------------------------------------------------
def _jacobian_peak(parallel_iterations, n_out=400, n_in=400, hidden=2000):
    rng = np.random.default_rng(0)
    w1 = vj.constant(rng.standard_normal((n_in, hidden)) / np.sqrt(n_in))
    w2 = vj.constant(rng.standard_normal((hidden, n_out)) / np.sqrt(hidden))
    x = vj.constant(rng.standard_normal(n_in))
    with vj.GradientTape() as tape:
        tape.watch(x)
        y = vj.tanh(vj.matmul(vj.tanh(vj.matmul(x, w1)), w2))
    gc.collect()
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        jac = tape.jacobian(y, x, parallel_iterations=parallel_iterations)
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    return peak, jac


def test_parallel_iterations_bounds_peak_memory():
    """400 x 400 Jacobian through a 2000-wide hidden layer: all rows at once hold
    (400, 2000) cotangents; 8 rows at a time hold (8, 2000) ones."""
    peak_all, jac_all = _jacobian_peak(None)
    peak_8, jac_8 = _jacobian_peak(8)
    np.testing.assert_allclose(jac_8.numpy(), jac_all.numpy(), rtol=1e-12, atol=1e-14)
    out_bytes = jac_all.numpy().nbytes
    assert peak_all > 4 * out_bytes          # the unchunked loop does hold big intermediates
    assert peak_8 < peak_all / 2, (peak_8, peak_all)
    assert peak_8 < 4 * out_bytes, (peak_8, out_bytes)  # the result, its pieces, a little more


def test_no_reference_cycles_in_gradients_and_jacobians():
    """Every value is freed by reference counting: a cycle (e.g. a self-referencing
    closure) keeps large Jacobians alive until the garbage collector runs, which piles up
    memory and makes the allocator fault in fresh pages on every call."""
    import gc
    x = vj.constant(np.linspace(-1.0, 1.0, 40))
    w = vj.constant(np.random.default_rng(0).standard_normal((40, 40)))

    def work():
        with vj.GradientTape(persistent=True) as tape:
            tape.watch(x)
            y = vj.tanh(vj.linalg.matvec(w, x)) + x ** 3
            loss = vj.reduce_sum(y)
        tape.gradient(loss, {"x": [x]})
        tape.jacobian(y, x)
        tape.jacobian(y, x, parallel_iterations=7)
        tape.batch_jacobian(vj.reshape(y, (4, 10)), vj.reshape(x, (4, 10)))
        vj.vectorized_map(lambda v: v * 2.0, vj.reshape(x, (8, 5)))
    work()
    gc.collect()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        work()
        gc.collect()
        cyclic = [type(o).__name__ for o in gc.garbage]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
    assert not cyclic, f"reference cycles left behind: {sorted(set(cyclic))}"


# -- the memory budget of dense Jacobians (vecjac/_src/core/memory.py) ----------------------------------
def _bratu(n):
    h2 = 1.0 / (n + 1) ** 2

    def residual(u):
        up = vj.concat([u[1:], vj.zeros(1)], 0)
        um = vj.concat([vj.zeros(1), u[:-1]], 0)
        return um - 2 * u + up + h2 * vj.exp(u)

    def jacobian(u):
        return (np.diag(-2 + h2 * np.exp(u)) + np.diag(np.ones(n - 1), 1)
                + np.diag(np.ones(n - 1), -1))
    return residual, jacobian


@pytest.mark.parametrize("mode", ["rev", "fwd"])
def test_budget_chunks_into_one_result_within_one_and_a_half_times(mode):
    n = 1200
    residual, jacobian = _bratu(n)
    u = np.linspace(0.0, 0.1, n)
    vj.set_memory_budget(2 * 2 ** 20)  # 2 MiB of working memory per chunk
    try:
        J = vj.jacobian(residual, mode=mode)
        J(u)  # the first call learns f's output size (auto / forward mode)
        gc.collect()
        tracemalloc.start()
        base = tracemalloc.get_traced_memory()[0]
        out = J(u)
        peak = tracemalloc.get_traced_memory()[1] - base
        tracemalloc.stop()
    finally:
        vj.set_memory_budget(None)
    np.testing.assert_allclose(out.numpy(), jacobian(u), rtol=1e-12, atol=1e-15)
    assert peak <= 1.5 * out.numpy().nbytes, (peak, out.numpy().nbytes)


def test_later_chunks_are_sized_from_what_the_first_used():
    """ChunkPlan: the estimate sizes the first chunk; a chunk that created fewer bytes of
    loop values per iteration (twice that, for converters' temporaries) lets the next
    ones grow, never beyond the estimate's rows when it used more."""
    from vecjac._src.core import memory
    vj.set_memory_budget(100_000)
    try:
        assert memory.chunk_plan(100, 1_000, 10 ** 6) is None  # one chunk fits
        plan = memory.chunk_plan(1000, 1_000, 10 ** 6)
    finally:
        vj.set_memory_budget(None)
    assert plan.first == 100
    assert plan.next_rows(used_bytes=100 * 50, rows=100) == 1000   # 100 bytes a row
    assert plan.next_rows(used_bytes=100 * 5_000, rows=100) == 100  # the estimate holds
    assert plan.next_rows(used_bytes=0, rows=100) == 100_000


def test_budget_chunks_show_progress(monkeypatch):
    bars = []

    class Bar:
        def __init__(self, total, desc, unit, leave):
            self.total, self.updates = total, []
            bars.append(self)

        def update(self, n):
            self.updates.append(n)

        def close(self):
            pass
    from vecjac._src.core import progress as _progress
    monkeypatch.setattr(_progress, "_tqdm", lambda: Bar)
    residual, _ = _bratu(300)
    vj.set_memory_budget(64 * 1024)
    try:
        vj.jacobian(residual, mode="rev", progress=True)(np.zeros(300))
    finally:
        vj.set_memory_budget(None)
    assert bars and bars[0].total == 300 and sum(bars[0].updates) == 300
    assert len(bars[0].updates) > 1  # several automatic chunks


def test_a_result_that_cannot_fit_fails_before_any_work():
    t = vj.constant(np.zeros(10 ** 6))
    with vj.GradientTape() as tape:
        tape.watch(t)
        y = vj.reshape(vj.stack([t] * 3), (-1,)) * 1.0
    entries = len(tape._entries)
    with pytest.raises(MemoryError, match="sparse_jacobian.*dask"):
        tape.jacobian(y, t)  # 3e6 x 1e6 float64: 24 TB
    assert len(tape._entries) == entries  # nothing ran
    with pytest.raises(ValueError, match="set_memory_budget: nbytes"):
        vj.set_memory_budget(-1)
