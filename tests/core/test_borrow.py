"""A caller's ndarray read in place, never silently wrong (vecjac/_src/core/loans.py).

Inside a transformed call (vj.grad, value_and_grad, hvp, jvp, the Jacobian family) a
caller's array that vecjac keeps (a tape's entry, a loop value that is a view of it) is
lent: read-only until the call returns, then writeable again, and whatever still holds it
gets a copy. Elsewhere (a user's tape, vjp, linearize) it is copied. Every test below
checks one of: no copy is made; a write during the call raises; a write the lock cannot
refuse is seen (a copy); the flags come back as they were; nothing returned aliases the
caller's memory.
"""
import os
import subprocess
import sys
import threading
import tracemalloc

import numpy as np
import pytest

import vecjac as vj
from vecjac._src.core import loans
from vecjac._src.core.dispatch import own_output
from vecjac._src.core.flags import COPY_CALLER_ARRAYS
from vecjac._src.core.tensor import BorrowedTensor

RNG = np.random.default_rng(7)
# tests of lending itself; under VECJAC_COPY_CALLER_ARRAYS=1 every array is copied instead
lends = pytest.mark.skipif(COPY_CALLER_ARRAYS, reason="VECJAC_COPY_CALLER_ARRAYS=1 copies")


def _data(n=40, d=6):
    X = RNG.standard_normal((n, d))
    y = (RNG.random(n) < 0.5).astype(float)
    return X, y, RNG.standard_normal(d), RNG.standard_normal(d)


def _loss(X, y, seen=None):
    """The logistic loss; `seen` records whether X was read-only right after its use."""
    def loss(w):
        z = X @ w
        if seen is not None:
            seen.append(X.flags.writeable)
        return vj.reduce_mean(vj.nn.softplus(z) - y * z)
    return loss


def _every_transform(X, y, w, v):
    """(name, call) of each transformed call of the logistic loss on raw arrays."""
    loss = _loss(X, y)
    return [
        ("grad", lambda: vj.grad(loss)(w)),
        ("value_and_grad", lambda: vj.value_and_grad(loss)(w)[1]),
        ("hvp", lambda: vj.hvp(loss, w, v)),
        ("jvp", lambda: vj.jvp(loss, (w,), (v,))[1]),
        ("jacobian", lambda: vj.jacobian(lambda w: X @ w)(w)),
        ("jacrev", lambda: vj.jacrev(lambda w: vj.tanh(X @ w))(w)),
        ("jacfwd", lambda: vj.jacfwd(lambda w: vj.tanh(X @ w))(w)),
        ("hessian", lambda: vj.hessian(loss)(w)),
        ("jacfwd(jacrev)", lambda: vj.jacfwd(vj.jacrev(loss))(w)),
        ("batch_jacobian",
         lambda: vj.batch_jacobian(lambda W: vj.tanh(W @ X))(np.ones((3, 2, 40)))),
    ]


def _constant_twin(name, X, y, w, v):
    c = dict(_every_transform(vj.constant(X), vj.constant(y), w, v))
    return c[name]()


# -- no copy, and the flags come back ---------------------------------------------------------
@pytest.mark.parametrize("name", [n for n, _ in _every_transform(*_data())])
def test_writeable_again_after_every_transform_with_the_constants_result(name):
    X, y, w, v = _data()
    X0 = X.copy()
    call = dict(_every_transform(X, y, w, v))[name]
    result = call()
    assert X.flags.writeable and y.flags.writeable
    assert loans.lent_arrays() == []
    np.testing.assert_array_equal(X, X0)
    np.testing.assert_array_equal(result.numpy(), _constant_twin(name, X, y, w, v).numpy())
    assert not np.may_share_memory(result.numpy(), X)


@lends
@pytest.mark.parametrize("transform", ["grad", "hvp", "jacrev", "jacfwd"])
def test_a_kept_array_is_read_only_during_the_call(transform):
    X, y, w, v = _data()
    seen = []
    loss = _loss(X, y, seen)
    {"grad": lambda: vj.grad(loss)(w), "hvp": lambda: vj.hvp(loss, w, v),
     "jacrev": lambda: vj.jacrev(loss)(w), "jacfwd": lambda: vj.jacfwd(loss)(w)}[transform]()
    assert seen and not any(seen), "X was not lent: the call copied it"
    assert X.flags.writeable


def _peak_bytes(call):
    for _ in range(3):  # warm-up (caches, numba's kernels)
        call()
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        call()
        return tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()


@lends
def test_no_copy_of_a_large_caller_array_per_call():
    X = RNG.standard_normal((4000, 250))  # 8 MB
    y = (RNG.random(4000) < 0.5).astype(float)
    w, v = RNG.standard_normal(250), RNG.standard_normal(250)
    loss = _loss(X, y)
    for call in (lambda: vj.grad(loss)(w), lambda: vj.hvp(loss, w, v)):
        assert _peak_bytes(call) < X.nbytes / 2
    A = RNG.standard_normal((4000, 8))  # the tall Jacobian: its columns stay views of A
    seen = []

    def tall(p):
        u = A @ p
        seen.append(A.flags.writeable)
        return vj.tanh(u) * vj.sin(A @ p)
    jac = vj.jacobian(tall)
    p = RNG.standard_normal(8)
    for _ in range(3):  # the first call learns the mode (reverse: a tape keeps A)
        J = jac(p)
    assert seen and not any(seen) and A.flags.writeable
    u = A @ p
    np.testing.assert_allclose(J.numpy(), (1 - np.tanh(u) ** 2)[:, None] * np.sin(u)[:, None]
                               * A + (np.tanh(u) * np.cos(u))[:, None] * A, rtol=1e-12)
    with vj.GradientTape() as tape:  # outside a transformed call: the tape copies
        wt = vj.constant(w)
        tape.watch(wt)
        z = X @ wt
    assert X.flags.writeable and tape.gradient(z, wt) is not None


# -- a write during the call: refused, or seen ---------------------------------------------------
@lends
@pytest.mark.parametrize("transform", ["grad", "hvp", "jacrev", "jacfwd", "hessian"])
def test_a_write_inside_the_function_raises_and_changes_nothing(transform):
    X, y, w, v = _data()
    X0 = X.copy()

    def loss(w):
        z = X @ w
        X[0, 0] = 100.0  # after the use: the tape (or a loop value) holds X
        return vj.reduce_mean(vj.nn.softplus(z) - y * z)
    call = {"grad": lambda: vj.grad(loss)(w), "hvp": lambda: vj.hvp(loss, w, v),
            "jacrev": lambda: vj.jacrev(loss)(w), "jacfwd": lambda: vj.jacfwd(loss)(w),
            "hessian": lambda: vj.hessian(loss)(w)}[transform]
    with pytest.raises(ValueError, match="read-only"):
        call()
    np.testing.assert_array_equal(X, X0)
    assert X.flags.writeable and loans.lent_arrays() == []
    X[0, 0] = 1.0  # the caller's array is its own again


def test_a_write_before_the_use_is_the_value_differentiated():
    X, y, w, _ = _data()
    X2 = 2 * X

    def loss(w):
        X[:] = X2  # not lent yet: the function computes with the new values throughout
        return _loss(X, y)(w)
    np.testing.assert_allclose(vj.grad(loss)(w).numpy(),
                               vj.grad(_loss(vj.constant(X2), y))(w).numpy(), rtol=1e-13)


@lends
def test_a_write_from_a_custom_gradient_raises():
    X, y, w, _ = _data()

    @vj.custom_gradient
    def scale(t):
        def backward(g):
            X[:] = 0.0  # the backward pass runs while the tape holds X
            return g
        return t, backward
    with pytest.raises(ValueError, match="read-only"):
        vj.grad(lambda w: vj.reduce_sum(scale(X @ w)))(w)
    assert X.flags.writeable and np.abs(X).min() > 0


@lends
def test_a_write_from_another_thread_during_the_call_raises():
    X, y, w, _ = _data()
    inside, written = threading.Event(), threading.Event()
    errors = []

    def writer():
        inside.wait()
        try:
            X[0, 0] = 5.0
        except ValueError as e:
            errors.append(e)
        written.set()

    def loss(w):
        z = X @ w
        inside.set()
        written.wait(10)
        return vj.reduce_sum(z * z)
    t = threading.Thread(target=writer)
    t.start()
    g = vj.grad(loss)(w)
    t.join()
    assert len(errors) == 1 and "read-only" in str(errors[0])
    np.testing.assert_allclose(g.numpy(), 2 * X.T @ (X @ w), rtol=1e-12)


@lends
def test_making_a_lent_array_writeable_again_fails_the_call():
    X, y, w, _ = _data()

    def loss(w):
        z = X @ w
        X.flags.writeable = True  # deliberately around the lock
        X[0, 0] = 100.0
        return vj.reduce_sum(z * z)
    with pytest.raises(RuntimeError, match="made writeable during the call"):
        vj.grad(loss)(w)
    assert X.flags.writeable and loans.lent_arrays() == []


@lends
def test_a_vj_function_inside_a_transform_reads_its_array_argument_in_place():
    X, y, w, _ = _data()
    fn = vj.function(lambda w, X: vj.reduce_sum((X @ w) ** 2))
    fn(w, X)  # traced outside transforms; inside them its ops are replayed on the tape
    flags = []

    def loss(w):
        out = fn(w, X)
        flags.append(X.flags.writeable)
        return out
    for _ in range(2):
        g = vj.grad(loss)(w)
    assert flags == [False, False] and X.flags.writeable
    np.testing.assert_allclose(g.numpy(), 2 * X.T @ (X @ w), rtol=1e-12)
    big = RNG.standard_normal((4000, 250))
    wb = RNG.standard_normal(250)
    fn(wb, big)
    assert _peak_bytes(lambda: vj.grad(lambda w: fn(w, big))(wb)) < big.nbytes / 2


# -- exceptions, persistence, what outlives the call --------------------------------------------
def test_released_after_an_exception_and_what_the_traceback_keeps_owns_its_memory():
    X, y, w, _ = _data()

    def loss(w):
        z = X @ w
        raise KeyError("boom")
    for _ in range(2):
        with pytest.raises(KeyError, match="boom"):
            vj.grad(loss)(w)
        assert X.flags.writeable and loans.lent_arrays() == []


def test_a_users_persistent_tape_inside_a_call_keeps_a_copy():
    X, y, w, _ = _data()
    tapes = []

    def loss(w):
        tape = vj.GradientTape(persistent=True)
        with tape:
            tape.watch(w)
            z = X @ w
            out = vj.reduce_sum(z * z)
        tapes.append((tape, out, w))
        return out
    g = vj.grad(loss)(w)
    X0 = X.copy()
    X[:] = 0.0  # after the call: the user's tape must not see it
    tape, out, wt = tapes[0]
    for _ in range(2):  # persistent: twice
        np.testing.assert_allclose(tape.gradient(out, wt).numpy(), g.numpy(), rtol=1e-14)
    np.testing.assert_allclose(g.numpy(), 2 * X0.T @ (X0 @ w), rtol=1e-12)


def test_a_users_tape_outside_any_call_copies():
    X, y, w, _ = _data()
    wt = vj.constant(w)
    with vj.GradientTape(persistent=True) as tape:
        tape.watch(wt)
        out = vj.reduce_sum((X @ wt) ** 2)
        assert X.flags.writeable  # an open-ended holder: nothing is locked
    X0 = X.copy()
    X[:] = 1.0
    np.testing.assert_allclose(tape.gradient(out, wt).numpy(), 2 * X0.T @ (X0 @ w),
                               rtol=1e-12)


def test_vjp_and_linearize_copy_what_their_closures_keep():
    X, _, w, v = _data()
    X0 = X.copy()
    _, pull = vj.vjp(lambda w: X @ w, w)
    _, push = vj.linearize(lambda w: vj.tanh(X @ w), w)
    assert X.flags.writeable
    X[:] = 0.0
    ct = np.ones(X.shape[0])
    np.testing.assert_allclose(pull(ct)[0].numpy(), X0.T @ ct, rtol=1e-12)
    np.testing.assert_allclose(push(v).numpy(), (1 - np.tanh(X0 @ w) ** 2) * (X0 @ v),
                               rtol=1e-12)


def test_a_result_that_is_the_callers_matrix_is_a_copy():
    A = RNG.standard_normal((50, 4))
    p = RNG.standard_normal(4)
    for jac in (vj.jacfwd, vj.jacobian):
        J = jac(lambda p: A @ p)(p)  # jacfwd's columns are a view of A until the end
        assert type(J) is vj.Tensor and not np.may_share_memory(J._value, A)
        A0 = A.copy()
        A[:] = 0.0
        np.testing.assert_array_equal(J.numpy(), A0)
        A[:] = A0


@lends
def test_a_lent_view_leaves_as_a_copy_and_outlives_the_loan_with_its_own_memory():
    A = RNG.standard_normal((5, 3))
    with loans.lending("test"):
        t = own_output(A.T, (BorrowedTensor(A),))  # an op's view of a caller's array
        assert type(t) is BorrowedTensor and not A.flags.writeable
        for out in (t.numpy(), np.asarray(t), np.array(t), vj.constant(t).numpy(),
                    vj.Variable(t).numpy()):
            assert not np.may_share_memory(out, A)
            np.testing.assert_array_equal(out, A.T)
        with pytest.raises(ValueError, match="copy"):
            np.asarray(t, copy=False)
    assert type(t) is vj.Tensor and not np.may_share_memory(t._value, A)
    assert A.flags.writeable
    A[:] = 0.0
    assert np.abs(t.numpy()).min() > 0


# -- views, bases, flags as they were -----------------------------------------------------------
@lends
@pytest.mark.parametrize("view", ["columns", "transpose"])
def test_a_view_and_its_base_are_both_read_only_during_the_call(view):
    base = RNG.standard_normal((40, 10))
    X = base[:, 2:8] if view == "columns" else base.T[2:8].T
    y = (RNG.random(40) < 0.5).astype(float)
    w = RNG.standard_normal(6)
    flags = []

    def loss(w):
        z = X @ w
        flags.append((X.flags.writeable, base.flags.writeable, base[:1].flags.writeable))
        with pytest.raises(ValueError, match="read-only"):
            base[0, 3] = 7.0  # through the base, or a view of it made now
        return vj.reduce_mean(vj.nn.softplus(z) - y * z)
    g = vj.grad(loss)(w)
    assert flags == [(False, False, False)]
    assert X.flags.writeable and base.flags.writeable
    np.testing.assert_allclose(g.numpy(), vj.grad(_loss(vj.constant(X), y))(w).numpy(),
                               rtol=1e-14)


@lends
def test_a_view_made_during_the_call_is_born_read_only_and_can_be_made_writeable_after():
    X, y, w, _ = _data()
    views = []

    def loss(w):
        z = X @ w
        views.append(X[:5])  # NumPy: a view of a read-only array is read-only
        return vj.reduce_sum(z * z)
    vj.grad(loss)(w)
    v = views[0]
    assert X.flags.writeable and not v.flags.writeable
    v.flags.writeable = True
    v[0, 0] = 3.0
    assert X[0, 0] == 3.0


def test_read_only_inputs_stay_read_only():
    X, y, w, _ = _data()
    X.flags.writeable = False
    vj.grad(_loss(X, y))(w)
    assert not X.flags.writeable
    base = RNG.standard_normal((40, 6))  # a read-only view of a writeable base
    view = base[:]
    view.flags.writeable = False
    vj.grad(_loss(view, y))(w)
    assert not view.flags.writeable and base.flags.writeable
    B = np.broadcast_to(RNG.standard_normal(6), (40, 6))  # read-only by NumPy
    vj.grad(_loss(B, y))(w)
    assert not B.flags.writeable and B.base.flags.writeable


def test_memory_numpy_does_not_own_is_copied_and_a_write_is_seen():
    buf = bytearray(RNG.standard_normal((40, 6)).tobytes())
    X = np.frombuffer(buf, dtype=np.float64).reshape(40, 6)  # writeable, over a bytearray
    y = (RNG.random(40) < 0.5).astype(float)
    w = RNG.standard_normal(6)
    X0 = X.copy()

    def loss(w):
        z = X @ w
        assert X.flags.writeable  # not lendable: the tape copied it
        X[:] = 0.0               # so this write cannot reach the gradient
        return vj.reduce_mean(vj.nn.softplus(z) - y * z)
    g = vj.grad(loss)(w)
    np.testing.assert_allclose(g.numpy(), vj.grad(_loss(vj.constant(X0), y))(w).numpy(),
                               rtol=1e-14)


# -- several holders: threads, nesting, generators -------------------------------------------
@lends
def test_two_threads_share_a_lent_array_and_the_last_one_restores_it():
    X, y, w, _ = _data()
    inside, release = threading.Event(), threading.Event()
    result = {}

    def slow(w):
        z = X @ w
        inside.set()
        release.wait(10)
        return vj.reduce_sum(z * z)

    def other():
        result["g"] = vj.grad(slow)(w)
    t = threading.Thread(target=other)
    t.start()
    inside.wait(10)
    g = vj.grad(_loss(X, y))(w)  # this thread's call ends first ...
    assert not X.flags.writeable  # ... while the other still holds X
    release.set()
    t.join()
    assert X.flags.writeable and loans.lent_arrays() == []
    np.testing.assert_allclose(result["g"].numpy(), 2 * X.T @ (X @ w), rtol=1e-12)
    np.testing.assert_allclose(g.numpy(), vj.grad(_loss(vj.constant(X), y))(w).numpy())


def test_threads_computing_gradients_on_one_array_concurrently():
    X, y, w, _ = _data(200, 8)
    expected = vj.grad(_loss(vj.constant(X), y))(w).numpy()
    barrier = threading.Barrier(6)
    results = []

    def work():
        barrier.wait()
        for _ in range(20):
            results.append(vj.grad(_loss(X, y))(w).numpy())
    threads = [threading.Thread(target=work) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 120
    for r in results:
        np.testing.assert_array_equal(r, expected)
    assert X.flags.writeable and loans.lent_arrays() == []


@lends
def test_nested_transforms_lend_until_the_outermost_call_ends():
    X, y, w, _ = _data()
    flags = []

    def loss(w):
        def inner(w):
            return _loss(X, y)(w)
        g = vj.grad(inner)(w)  # the inner call ends; the outer one still holds X
        flags.append(X.flags.writeable)
        return vj.reduce_sum(g * g)
    H = vj.jacfwd(vj.grad(loss))(w)
    assert flags and not any(flags)
    assert X.flags.writeable
    Xc = vj.constant(X)
    expected = vj.jacfwd(vj.grad(lambda w: vj.reduce_sum(vj.grad(_loss(Xc, y))(w) ** 2)))(w)
    np.testing.assert_allclose(H.numpy(), expected.numpy(), rtol=1e-12)


def test_a_generator_between_calls_holds_nothing():
    X, y, w, _ = _data()

    def steps():
        for _ in range(3):
            yield vj.grad(_loss(X, y))(w)
    it = steps()
    next(it)
    assert X.flags.writeable  # suspended between calls
    X[0, 0] += 1.0
    next(it)
    it.close()
    assert X.flags.writeable and loans.lent_arrays() == []


# -- the switch that always copies ---------------------------------------------------------------
def test_the_copy_switch_sees_a_write_through_an_earlier_view():
    """What a loan cannot refuse: a write through a writeable view made before the call
    (NumPy keeps no list of views). VECJAC_COPY_CALLER_ARRAYS=1 copies instead."""
    code = """
import numpy as np, vecjac as vj
X = np.random.default_rng(0).standard_normal((30, 4))
earlier = X[:]                # a writeable view made before the call
w = np.ones(4)
X0 = X.copy()
def loss(w):
    z = X @ w
    earlier[:] = 0.0          # not refused: the switch made the tape copy X
    return vj.reduce_sum(z * z)
g = vj.grad(loss)(w).numpy()
np.testing.assert_allclose(g, 2 * X0.T @ (X0 @ w), rtol=1e-12)
print("ok")
"""
    env = dict(os.environ, VECJAC_COPY_CALLER_ARRAYS="1")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr
