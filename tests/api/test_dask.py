"""vecjac.dask (issue 14): Jacobians and batch Jacobians as Dask arrays.

Values are checked against vj.jacrev / vj.batch_jacobian and independently against
closed forms or central differences written here; with Dask's local schedulers and a
LocalCluster of 2 worker processes. Also: f and x reach each worker once, a worker
killed mid-run costs recomputation only, results write to zarr / HDF5, and every bad
input is refused on the client before anything is computed.
"""
import logging
import os
import signal
import sys
import threading
import time

import numpy as np
import pytest

dask = pytest.importorskip("dask")
da = pytest.importorskip("dask.array")

import vecjac as vj  # noqa: E402
import vecjac.dask as vjd
from tests.api import _dask_helpers as helpers  # noqa: E402

RNG = np.random.default_rng(14)
A = RNG.standard_normal((12, 12)) / 3
W = RNG.standard_normal((3, 4))


def tanh_cubic(x):
    return vj.tanh(A @ x) + x ** 3


def tanh_cubic_jacobian(x):
    """Closed form: diag(1 - tanh(Ax)^2) A + diag(3 x^2)."""
    return (1 - np.tanh(A @ x) ** 2)[:, None] * A + np.diag(3 * x ** 2)


def central_differences(f, x, eps=1e-6):
    """J[..., k] = (f(x + eps e_k) - f(x - eps e_k)) / 2 eps, f on NumPy arrays."""
    y = np.asarray(f(x))
    jac = np.zeros(y.shape + (x.size,))
    for k in range(x.size):
        d = np.zeros(x.size)
        d[k] = eps
        d = d.reshape(x.shape)
        jac[..., k] = (np.asarray(f(x + d)) - np.asarray(f(x - d))) / (2 * eps)
    return jac.reshape(y.shape + x.shape)


def sync(J):
    return J.compute(scheduler="synchronous")


# -- values, local schedulers --------------------------------------------------------------
def test_rank1_blocks_match_vecjac_and_closed_form():
    x = np.linspace(-1, 1, 12)
    J = vjd.jacobian(tanh_cubic, row_block=5)(x)
    assert isinstance(J, da.Array)
    assert J.chunks == ((5, 5, 2), (12,))
    got = sync(J)
    np.testing.assert_allclose(got, tanh_cubic_jacobian(x), rtol=1e-12, atol=1e-14)
    np.testing.assert_array_equal(got, vj.jacrev(tanh_cubic)(x).numpy())


@pytest.mark.parametrize("row_block, chunks", [
    (100, ((5,), (4,))),                  # everything in one block
    (8, ((2, 2, 1), (4,))),              # leading axis, 2 slices of 4 rows
    (4, ((1, 1, 1, 1, 1), (4,))),        # one slice per block
    (3, ((1, 1, 1, 1, 1), (3, 1))),      # a slice does not fit: split the next axis
    (1, ((1,) * 5, (1,) * 4)),           # one row per block
])
def test_rank2_output_and_input(row_block, chunks):
    X = RNG.standard_normal((5, 3))

    def f(X):
        return vj.sin(X) @ W                               # (5, 4)

    J = vjd.jacobian(f, row_block=row_block)(X)
    assert J.shape == (5, 4, 5, 3)
    assert J.chunks == chunks + ((5,), (3,))
    expected = np.zeros((5, 4, 5, 3))
    for i in range(5):
        expected[i, :, i, :] = (np.cos(X[i])[:, None] * W).T    # d out[i, j] / d X[i, l]
    got = sync(J)
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-14)
    np.testing.assert_array_equal(got, vj.jacrev(f)(X).numpy())


def test_against_central_differences():
    X = RNG.standard_normal((3, 4))

    def f(X):
        return vj.reduce_sum(vj.sin(X) * X, axis=1) * vj.reduce_sum(X ** 2)

    def f_np(X):
        return np.sum(np.sin(X) * X, axis=1) * np.sum(X ** 2)

    got = sync(vjd.jacobian(f, row_block=2)(X))
    assert got.shape == (3, 3, 4)
    np.testing.assert_allclose(got, central_differences(f_np, X), rtol=1e-7, atol=1e-8)


def test_scalar_output_and_scalar_input():
    x = np.array([0.5, -1.0, 2.0])
    got = sync(vjd.jacobian(lambda x: vj.reduce_sum(x ** 3))(x))
    np.testing.assert_allclose(got, 3 * x ** 2, rtol=1e-14)
    got = sync(vjd.jacobian(lambda t: vj.sin(t * np.array([1.0, 2.0, 3.0])),
                            row_block=2)(0.3))
    np.testing.assert_allclose(got, np.array([1, 2, 3]) * np.cos(0.3 * np.array([1, 2, 3])),
                               rtol=1e-14)


def test_argnums_and_passed_through_arguments():
    x, w = RNG.standard_normal(3), RNG.standard_normal((4, 3))

    def f(x, w, scale, shift=0.0):
        return vj.tanh(w @ x) * scale + shift

    s = 1 - np.tanh(w @ x) ** 2
    jx = 2.0 * s[:, None] * w                               # d/dx
    jw = 2.0 * s[:, None, None] * np.eye(4)[:, :, None] * x  # d/dw[k, l] = s_i d_ik x_l
    got = sync(vjd.jacobian(f, argnums=1, row_block=3)(x, w, 2.0, shift=5.0))
    np.testing.assert_allclose(got, jw, rtol=1e-13, atol=1e-15)
    gx, gw = vjd.jacobian(f, argnums=(0, -2), row_block=3)(x, w, 2.0)
    assert gx.chunks[0] == gw.chunks[0] == (3, 1)
    np.testing.assert_allclose(sync(gx), jx, rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(sync(gw), jw, rtol=1e-13, atol=1e-15)


def test_float32_argument_keeps_its_dtype():
    x = np.linspace(0, 1, 6, dtype=np.float32)
    J = vjd.jacobian(lambda x: vj.sin(x) * 2.0, row_block=4)(x)
    assert J.dtype == np.float32
    got = sync(J)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, np.diag(2 * np.cos(x)), rtol=1e-6)


@pytest.mark.parametrize("scheduler", ["threads", "processes"])
def test_threads_and_processes_schedulers(scheduler):
    x = np.linspace(-1, 1, 12)
    J = vjd.jacobian(lambda x: vj.tanh(A @ x) + x ** 3, row_block=3)(x)  # a lambda
    got = J.compute(scheduler=scheduler, num_workers=2)
    np.testing.assert_allclose(got, tanh_cubic_jacobian(x), rtol=1e-12, atol=1e-14)


def test_progress_bar(capsys):
    diagnostics = pytest.importorskip("dask.diagnostics")
    J = vjd.jacobian(tanh_cubic, row_block=4)(np.ones(12))
    with diagnostics.ProgressBar(out=sys.stdout):
        J.compute(scheduler="threads")
    assert "100% Completed" in capsys.readouterr().out


# -- shipped once ---------------------------------------------------------------------------
def test_graph_holds_f_and_x_in_one_key():
    big = RNG.standard_normal(50_000)  # 400 kB closed over by f
    x = np.linspace(0, 1, 40)

    def f(x):
        return vj.tanh(x) * vj.reduce_sum(x * big[:40])

    J = vjd.jacobian(f, row_block=4)(x)
    graph = dict(J.__dask_graph__())
    cloudpickle = pytest.importorskip("cloudpickle")
    sizes = {k: len(cloudpickle.dumps(v)) for k, v in graph.items()}
    heavy = [k for k, s in sizes.items() if s > big.nbytes]
    assert len(heavy) == 1, sizes                  # f's closure is in one task only
    blocks = [k for k in graph if isinstance(k, tuple) and "blocks" in k[0]]
    assert len(blocks) == 10
    for k in blocks:
        assert dask.core.get_dependencies(graph, k) == {heavy[0]}


def test_batch_graph_holds_f_in_one_key():
    big = RNG.standard_normal(50_000)
    X = da.from_array(RNG.standard_normal((12, 3)), chunks=(3, 3))
    J = vjd.batch_jacobian(lambda X: vj.tanh(X * big[:3]))(X)
    graph = dict(J.__dask_graph__())
    cloudpickle = pytest.importorskip("cloudpickle")
    heavy = [k for k, v in graph.items() if len(cloudpickle.dumps(v)) > big.nbytes]
    assert len(heavy) == 1
    blocks = [k for k in graph if isinstance(k, tuple) and k[0] == J.name]
    assert len(blocks) == 4
    for k in blocks:
        assert heavy[0] in dask.core.get_dependencies(graph, k)


def test_local_scheduler_unpickles_f_once():
    tag = "threads-once"
    counted = helpers.Counted(tag)

    def f(x):
        assert counted.tag == tag
        return vj.sin(x) * 3.0

    J = vjd.jacobian(f, row_block=2)(np.linspace(0, 1, 12))   # 6 blocks
    before = helpers.unpickled(tag)
    np.testing.assert_allclose(J.compute(scheduler="threads"),
                               np.diag(3 * np.cos(np.linspace(0, 1, 12))), rtol=1e-14)
    assert helpers.unpickled(tag) - before == 1


# -- a distributed LocalCluster of 2 worker processes --------------------------------------
@pytest.fixture(scope="module")
def client():
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1,
                                  dashboard_address=":0", silence_logs=logging.ERROR) as lc:
        with distributed.Client(lc, set_as_default=False) as c:
            yield c


def test_distributed_closure_lambda_and_argnums(client):
    x, w = RNG.standard_normal(5), RNG.standard_normal((6, 5))
    offset = RNG.standard_normal(6)
    f = lambda x, w: vj.tanh(w @ x + offset)  # noqa: E731  (a lambda closing over offset)
    jx, jw = vjd.jacobian(f, argnums=(0, 1), row_block=2)(x, w)
    gx, gw = client.gather(client.compute([jx, jw]))
    s = 1 - np.tanh(w @ x + offset) ** 2
    np.testing.assert_allclose(gx, s[:, None] * w, rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(gw, s[:, None, None] * np.eye(6)[:, :, None] * x,
                               rtol=1e-13, atol=1e-15)


def test_distributed_ships_f_once_per_worker(client):
    tag = "distributed-once"
    counted = helpers.Counted(tag)
    big = RNG.standard_normal(10_000)

    def f(x):
        assert counted.tag == tag
        return vj.tanh(x * big[:x.shape[0]]) * vj.reduce_sum(x)

    x = np.linspace(0, 1, 60)
    J = vjd.jacobian(f, row_block=5)(x)                       # 12 blocks
    got = client.compute(J).result()
    np.testing.assert_allclose(got, vj.jacobian(f)(x).numpy(), rtol=1e-13, atol=1e-15)
    per_worker = client.run(helpers.unpickled, tag)
    assert len(per_worker) == 2 and max(per_worker.values()) <= 1, per_worker
    assert sum(per_worker.values()) >= 1, per_worker


def test_distributed_batch_jacobian(client):
    X = da.from_array(RNG.standard_normal((11, 3)), chunks=(4, 3))
    f = lambda X: vj.tanh(X @ W)  # noqa: E731
    J = vjd.batch_jacobian(f)(X)
    got = client.compute(J).result()
    s = 1 - np.tanh(X.compute() @ W) ** 2                     # (11, 4)
    np.testing.assert_allclose(got, s[:, :, None] * W.T[None], rtol=1e-13, atol=1e-15)


def test_killed_worker_costs_recomputation_only():
    """SIGKILL one of 2 worker processes once it holds a finished block: the result must
    still be complete and exactly the single-process one (Dask recomputes lost blocks)."""
    distributed = pytest.importorskip("distributed")
    x = np.linspace(-1, 1, 12)

    def slow(x):
        time.sleep(0.12)  # each block task takes a while: the kill lands mid-run
        return vj.tanh(A @ x) + x ** 3

    J = vjd.jacobian(slow, row_block=1)(x)                    # 12 blocks, ~0.8 s per worker
    with distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1,
                                  dashboard_address=":0",
                                  silence_logs=logging.CRITICAL) as lc, \
            distributed.Client(lc, set_as_default=False) as c:
        pids = c.run(os.getpid)
        victim = sorted(pids)[0]
        future = c.compute(J)
        deadline = time.monotonic() + 15
        while not any(isinstance(k, tuple) for k in c.has_what().get(victim, ())):
            assert time.monotonic() < deadline, "the victim never finished a block"
            time.sleep(0.01)
        assert not future.done()
        os.kill(pids[victim], signal.SIGKILL)
        got = future.result(timeout=30)
        assert pids[victim] not in c.run(os.getpid).values()  # it did die
    # the same blocks computed without a fault, in this process (BLAS threading may round
    # the last bit differently across processes, so not bit for bit)
    np.testing.assert_allclose(got, J.compute(scheduler="synchronous"), rtol=1e-13,
                               atol=1e-15)
    np.testing.assert_allclose(got, tanh_cubic_jacobian(x), rtol=1e-12, atol=1e-14)


# -- storage --------------------------------------------------------------------------------
def test_write_to_zarr(tmp_path):
    zarr = pytest.importorskip("zarr")
    x = np.linspace(-1, 1, 12)
    J = vjd.jacobian(tanh_cubic, row_block=5)(x)
    with dask.config.set(scheduler="threads"):
        J.to_zarr(str(tmp_path / "jac.zarr"))
    stored = zarr.open(str(tmp_path / "jac.zarr"), mode="r")
    assert stored.shape == (12, 12)
    np.testing.assert_allclose(stored[...], tanh_cubic_jacobian(x), rtol=1e-12, atol=1e-14)


def test_write_to_hdf5(tmp_path):
    h5py = pytest.importorskip("h5py")
    X = RNG.standard_normal((10, 3))
    J = vjd.batch_jacobian(lambda X: vj.tanh(X @ W), batch_block=4)(X)
    with dask.config.set(scheduler="threads"):
        da.to_hdf5(str(tmp_path / "jac.h5"), "/J", J)
    with h5py.File(tmp_path / "jac.h5", "r") as h5:
        stored = h5["/J"][...]
    s = 1 - np.tanh(X @ W) ** 2
    np.testing.assert_allclose(stored, s[:, :, None] * W.T[None], rtol=1e-13, atol=1e-15)


# -- batch_jacobian ---------------------------------------------------------------------------
def test_batch_jacobian_keeps_the_chunks_of_x():
    Xn = RNG.standard_normal((10, 2, 3))
    X = da.from_array(Xn, chunks=(4, 2, 3))
    V = RNG.standard_normal((3, 2))

    def f(X):
        return vj.sin(X) @ V                                  # (batch, 2, 2)

    J = vjd.batch_jacobian(f)(X)
    assert J.shape == (10, 2, 2, 2, 3) and J.chunks[0] == (4, 4, 2)
    got = sync(J)
    np.testing.assert_array_equal(got, vj.batch_jacobian(f)(Xn).numpy())
    # out[b, i, j] = sum_l sin(X[b, i, l]) V[l, j]: d / dX[b, k, l] = d_ik cos(X[b, k, l]) V[l, j]
    expected = np.einsum("ik,bkl,lj->bijkl", np.eye(2), np.cos(Xn), V)
    np.testing.assert_allclose(got, expected, rtol=1e-13, atol=1e-15)


def test_batch_jacobian_of_a_numpy_array():
    Xn = RNG.standard_normal((7, 3))
    f = lambda X: vj.tanh(X @ W)  # noqa: E731
    J = vjd.batch_jacobian(f)(Xn)                          # 7 x 4 x 3 doubles: one chunk
    assert J.chunks[0] == (7,)
    J3 = vjd.batch_jacobian(f, batch_block=3)(Xn)
    assert J3.chunks == ((3, 3, 1), (4,), (3,))
    s = 1 - np.tanh(Xn @ W) ** 2
    for got in (sync(J), sync(J3)):
        np.testing.assert_allclose(got, s[:, :, None] * W.T[None], rtol=1e-13, atol=1e-15)


def test_batch_jacobian_warns_about_interacting_examples_on_the_client():
    X = da.from_array(RNG.standard_normal((6, 3)), chunks=(3, 3))
    with pytest.warns(vj.InteractingExamplesWarning):
        vjd.batch_jacobian(lambda X: X - vj.reduce_mean(X, axis=0))(X)


# -- bad input, refused on the client before anything is computed ----------------------------
def _counting_x(n=8, ncols=3, chunks=(4, 3)):
    """A dask X whose chunks count how often they are computed."""
    tag = f"x-{n}-{chunks}-{time.monotonic_ns()}"

    def make(block, block_info=None):
        helpers.UNPICKLED[tag] = helpers.UNPICKLED.get(tag, 0) + 1
        return block
    X = da.ones((n, ncols), chunks=chunks).map_blocks(make, meta=np.empty((0, 0)))
    return X, tag


def test_unpicklable_f_is_refused_up_front():
    lock = threading.Lock()
    calls = []

    def f(x):
        calls.append(1)
        with lock:
            return vj.sin(x)

    with pytest.raises(TypeError, match=r"jacobian: f cannot be pickled.*lock"):
        vjd.jacobian(f)
    with pytest.raises(TypeError, match=r"batch_jacobian: f cannot be pickled.*lock"):
        vjd.batch_jacobian(f)
    assert not calls


def test_unpicklable_argument_is_named():
    with pytest.raises(TypeError, match=r"argument 1 cannot be pickled.*lock"):
        vjd.jacobian(lambda x, lk: vj.sin(x))(np.ones(3), threading.Lock())


@pytest.mark.parametrize("bad, error, match", [
    (0, ValueError, r"row_block must be a positive int or None, got 0"),
    (-3, ValueError, r"row_block must be a positive int or None, got -3"),
    (2.5, TypeError, r"row_block must be a positive int or None, got 2.5 \(float\)"),
    (True, TypeError, r"row_block must be a positive int or None, got True \(bool\)"),
    ("8", TypeError, r"row_block must be a positive int or None, got '8' \(str\)"),
])
def test_bad_row_block(bad, error, match):
    with pytest.raises(error, match=match):
        vjd.jacobian(tanh_cubic, row_block=bad)
    with pytest.raises(error, match=match.replace("row_block", "batch_block")):
        vjd.batch_jacobian(tanh_cubic, batch_block=bad)


def test_not_callable():
    with pytest.raises(TypeError, match=r"jacobian: f must be callable, got ndarray"):
        vjd.jacobian(np.ones(3))
    with pytest.raises(TypeError, match=r"batch_jacobian: f must be callable, got str"):
        vjd.batch_jacobian("tanh")


def test_bad_argnums():
    with pytest.raises(ValueError, match=r"argnums 2 is out of range: f was called with "
                                         r"2 positional arguments"):
        vjd.jacobian(lambda x, y: x * y, argnums=2)(np.ones(2), np.ones(2))
    with pytest.raises(ValueError, match=r"argnums -2 is out of range"):
        vjd.jacobian(vj.sin, argnums=-2)(np.ones(2))
    with pytest.raises(TypeError, match=r"argnums must be an int or a non-empty tuple"):
        vjd.jacobian(vj.sin, argnums="0")
    with pytest.raises(TypeError, match=r"argnums must be an int or a non-empty tuple"):
        vjd.jacobian(vj.sin, argnums=())
    with pytest.raises(ValueError, match=r"name the same argument twice"):
        vjd.jacobian(lambda x, y: x * y, argnums=(0, -2))(np.ones(2), np.ones(2))


def test_bad_differentiated_argument():
    with pytest.raises(TypeError, match=r"argument 0 must be real floating point .* got "
                                        r"dtype int64"):
        vjd.jacobian(vj.sin)(np.arange(3))
    with pytest.raises(TypeError, match=r"argument 0 must be an array .* got a dict"):
        vjd.jacobian(vj.sin)({"a": np.ones(2)})


def test_f_returning_a_pair():
    with pytest.raises(TypeError, match=r"f must return one Tensor, got tuple"):
        vjd.jacobian(lambda x: (x, x))(np.ones(2))


def test_non_array_x():
    with pytest.raises(TypeError, match=r"X must be a dask.array.Array or a NumPy array "
                                        r"of shape \(batch, ...\), got list"):
        vjd.batch_jacobian(vj.tanh)([[1.0, 2.0]])
    with pytest.raises(ValueError, match=r"X must have rank >= 2 \(batch, ...\), got "
                                         r"shape \(4,\)"):
        vjd.batch_jacobian(vj.tanh)(np.ones(4))
    with pytest.raises(TypeError, match=r"X must be real floating point .* got dtype int"):
        vjd.batch_jacobian(vj.tanh)(np.ones((4, 2), dtype=int))


def test_x_chunked_along_a_feature_axis_is_refused_without_computing_it():
    X, tag = _counting_x(chunks=(4, 2))
    with pytest.raises(ValueError, match=r"chunked along the batch axis \(axis 0\) only, "
                                         r".*split along axis 1.*X\.rechunk\(\{1: -1\}\)"):
        vjd.batch_jacobian(vj.tanh)(X)
    assert helpers.unpickled(tag) == 0
    # the suggested rechunk works
    J = vjd.batch_jacobian(vj.tanh)(X.rechunk({1: -1}))
    np.testing.assert_allclose(sync(J), np.tile(np.eye(3) * (1 - np.tanh(1.0) ** 2), (8, 1, 1)),
                               rtol=1e-14)


def test_missing_dask_names_the_extra(monkeypatch):
    for name in [m for m in sys.modules if m == "dask" or m.startswith("dask.")]:
        monkeypatch.setitem(sys.modules, name, None)
    for name in ("vecjac.dask", "vecjac._src.api.dask"):
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.delattr(vj, "dask", raising=False)
    with pytest.raises(ImportError, match=r"pip install vecjac\[dask\]"):
        __import__("vecjac.dask")
    # the attribute: absent (so inspect.getmembers(vj) and hasattr work), with the hint
    with pytest.raises(AttributeError, match=r"pip install vecjac\[dask\]"):
        vj.dask
    assert "dask" not in dir(vj)
