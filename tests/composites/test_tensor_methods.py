"""Tensors behave like the arrays they wrap (issue 10, section 2): ndarray methods with
NumPy's signatures and values (oracle: the same method on the ndarray), differentiable
where NumPy's are (oracle: finite differences), Python's protocols (round, operator.index,
iteration), matplotlib on Tensors, immutability (no aliasing of the caller's arrays) and
copies / pickles with an identity of their own."""
import copy
import inspect
import operator
import pickle
import warnings

import numpy as np
import pytest

import vecjac as vj
from vecjac.testing import check_grads

RNG = np.random.default_rng(10)
A = RNG.standard_normal((3, 4))
SQ = RNG.standard_normal((4, 4))
CUBE = RNG.standard_normal((2, 3, 4))

# (method, args, kwargs, operand): each compared with the ndarray method on the operand
CALLS = [
    ("sum", (), {}, A), ("sum", (0,), {}, A), ("sum", (), dict(axis=(0, 1), keepdims=True), A),
    ("sum", (), dict(dtype=np.float32), A), ("mean", (), dict(axis=1, keepdims=True), A),
    ("max", (), {}, A), ("max", (1,), {}, A), ("min", (), dict(axis=0, keepdims=True), A),
    ("prod", (1,), {}, A), ("std", (), {}, A), ("std", (), dict(axis=0, ddof=1), A),
    ("var", (1,), dict(ddof=1, keepdims=True), A), ("dot", (A.T,), {}, A),
    ("dot", (np.ones(4),), {}, A), ("ravel", (), {}, CUBE), ("flatten", (), {}, CUBE),
    ("copy", (), {}, A), ("clip", (-0.5, 0.5), {}, A), ("clip", (), dict(min=0.0), A),
    ("cumsum", (), {}, A), ("cumsum", (1,), {}, A), ("cumprod", (0,), {}, A),
    ("squeeze", (), {}, A[:, :1]), ("squeeze", (1,), {}, A[:, :1]), ("transpose", (), {}, CUBE),
    ("transpose", (1, 0, 2), {}, CUBE), ("transpose", ((2, 0, 1),), {}, CUBE),
    ("swapaxes", (0, 2), {}, CUBE), ("round", (), {}, A), ("round", (2,), {}, A),
    ("any", (), {}, A > 1), ("all", (1,), {}, A > -1), ("any", (0,), {}, A),
    ("argmax", (), {}, A), ("argmax", (1,), {}, A), ("argmin", (0,), dict(keepdims=True), A),
    ("argsort", (), {}, A), ("argsort", (0,), {}, A), ("reshape", (4, 3), {}, A),
    ("reshape", ((2, -1),), {}, A), ("reshape", ((4, 3),), dict(order="F"), A),
    ("astype", (np.float32,), {}, A), ("astype", (np.int64,), {}, A), ("conj", (), {}, A),
    ("conjugate", (), {}, A), ("trace", (), {}, SQ), ("trace", (1,), {}, SQ),
    ("trace", (-2,), {}, SQ), ("trace", (), dict(axis1=1, axis2=2), CUBE),
    ("trace", (1,), dict(axis1=0, axis2=2), CUBE), ("diagonal", (), {}, SQ),
    ("diagonal", (1,), {}, A), ("diagonal", (-1,), {}, A), ("diagonal", (7,), {}, A),
    ("diagonal", (1, 2, 0), {}, CUBE), ("nonzero", (), {}, A > 0.5),
    ("sort", (), {}, A), ("sort", (0,), {}, A), ("sort", (None,), {}, A),
    ("sort", (1,), {}, CUBE),
]


def _ndarray_result(method, args, kwargs, operand):
    arr = operand.copy()
    if method == "sort":  # ndarray.sort sorts in place; Tensor.sort returns the result
        return np.sort(arr, *args, **kwargs)
    return getattr(arr, method)(*args, **kwargs)


@pytest.mark.parametrize("variable", [False, True])
@pytest.mark.parametrize("call", CALLS, ids=lambda c: f"{c[0]}{c[1]}{sorted(c[2])}")
def test_methods_give_numpy_values_shapes_and_dtypes(call, variable):
    method, args, kwargs, operand = call
    x = vj.Variable(operand) if variable else vj.constant(operand)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no detour through NumPy with a warning
        got = getattr(x, method)(*args, **kwargs)
    want = _ndarray_result(method, args, kwargs, operand)
    if method == "nonzero":
        assert isinstance(got, tuple) and len(got) == len(want)
        pairs = list(zip(got, want))
    else:
        pairs = [(got, want)]
    for g, w in pairs:
        assert isinstance(g, vj.Tensor)
        g = g.numpy()
        assert g.shape == np.shape(w) and g.dtype == np.asarray(w).dtype
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)


DIFFERENTIABLE = {
    "sum(axis=0)": lambda x: x.sum(axis=0), "mean keepdims": lambda x: x.mean(1, keepdims=True),
    "max(1)": lambda x: x.max(1), "min": lambda x: x.min(), "prod(0)": lambda x: x.prod(0),
    "std(ddof=1)": lambda x: x.std(axis=1, ddof=1), "var": lambda x: x.var(),
    "dot": lambda x: x.dot(x.T), "ravel": lambda x: x.ravel() * 2.0,
    "clip": lambda x: x.clip(-0.5, 0.5), "cumsum": lambda x: x.cumsum(1),
    "cumprod": lambda x: x.cumprod(), "transpose": lambda x: x.transpose(1, 0) * x.T,
    "swapaxes": lambda x: x.swapaxes(0, 1), "reshape": lambda x: x.reshape(2, 6) ** 2,
    "sort(1)": lambda x: x.sort(1) * np.arange(4.0), "sort(0)": lambda x: x.sort(0) ** 3,
    "sort(None)": lambda x: x.sort(None) * np.arange(12.0),
    "trace(1)": lambda x: x.trace(1) * x.sum(), "diagonal(-1)": lambda x: x.diagonal(-1) ** 2,
    "diagonal": lambda x: x.diagonal() ** 2, "astype": lambda x: x.astype(np.float64) * x,
    "copy": lambda x: x.copy() * x, "squeeze": lambda x: x[:1].squeeze() ** 2,
    "real": lambda x: x.real * x,
}


@pytest.mark.parametrize("name", sorted(DIFFERENTIABLE))
def test_methods_are_differentiable_to_second_order(name):
    check_grads(DIFFERENTIABLE[name], [A], order=2)


def test_methods_vectorize_inside_pfor():
    def row_stats(x):
        return vj.stack([x.sum(), x.max(), x.std(ddof=1), x.cumsum()[-1], x.dot(x),
                         x.clip(-0.5, 0.5).mean()])
    got = vj.vectorized_map(row_stats, A).numpy()
    want = np.stack([row_stats(vj.constant(r)).numpy() for r in A])
    np.testing.assert_allclose(got, want, rtol=1e-12)
    # sort is np.sort's op, which has a vectorization rule: rows sorted independently
    np.testing.assert_array_equal(vj.vectorized_map(lambda x: x.sort(), A).numpy(),
                                  np.sort(A, axis=1))


def test_methods_read_variables_for_tapes():
    v = vj.Variable(A)
    with vj.GradientTape() as tape:
        y = v.sort(axis=1)[:, -1].sum() + v.trace(1)
    expected = np.zeros_like(A)
    expected[np.arange(3), A.argmax(1)] += 1
    expected[np.arange(3), np.arange(3) + 1] += 1
    np.testing.assert_array_equal(tape.gradient(y, v).numpy(), expected)


@pytest.mark.parametrize("call", [lambda x: x.sum(out=np.zeros(())),
                                  lambda x: x.cumsum(out=np.zeros(12)),
                                  lambda x: x.clip(0, 1, out=np.zeros((3, 4))),
                                  lambda x: x.trace(1, out=np.zeros(())),
                                  lambda x: x.sum(0, None, np.zeros(4)),      # positional
                                  lambda x: x.round(1, np.zeros((3, 4)))])
def test_out_is_a_type_error_tensors_are_immutable(call):
    with pytest.raises(TypeError, match="immutable"):
        call(vj.constant(A))


def test_real_and_imag_of_real_tensors():
    x = vj.constant(A)
    np.testing.assert_array_equal(x.real.numpy(), A)
    with vj.GradientTape() as tape:
        tape.watch(x)
        y = vj.reduce_sum(x.real * 3.0 + x.imag)
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), np.full(A.shape, 3.0))
    assert x.imag.shape == A.shape and not np.any(x.imag.numpy())
    z = vj.constant(A + 2j * A)
    np.testing.assert_array_equal(z.real.numpy(), A)
    np.testing.assert_array_equal(z.imag.numpy(), 2 * A)
    np.testing.assert_array_equal(z.conj().numpy(), A - 2j * A)


def test_astype_casting_rule():
    with pytest.raises(TypeError, match="cannot cast from dtype float64 to int64"):
        vj.constant(A).astype(np.int64, casting="safe")
    assert vj.constant(A).astype("float32", casting="same_kind").dtype == np.float32


def test_method_signatures_are_numpys():
    assert str(inspect.signature(vj.Tensor.sum)) == str(inspect.signature(np.ndarray.sum))
    assert "ddof" in str(inspect.signature(vj.Variable.std))


# -- the explicit ways out: item and tolist ------------------------------------------------
def test_item_and_tolist_are_python_values_and_quiet_on_tapes():
    x = vj.constant(A)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with vj.GradientTape() as tape:
            tape.watch(x)
            values = x.tolist()
            first = x.item(0)
            y = vj.reduce_sum(x) * 2.0
    assert values == A.tolist() and first == A.item(0) and type(first) is float
    assert type(vj.constant(3).item()) is int and vj.Variable([[2.5]]).item() == 2.5
    assert tape.gradient(y, x) is not None
    with pytest.raises(ValueError, match="size 1"):
        x.item()
    with pytest.raises(TypeError, match="loop-variant"):
        vj.vectorized_map(lambda r: r * r.item(0), A)


def test_item_tells_the_transforms(monkeypatch):
    seen = []
    tape = vj.GradientTape()
    monkeypatch.setattr(tape, "value_read", lambda t, how, test=None: seen.append(how),
                        raising=False)
    with tape:
        vj.constant(A).item(1)
        vj.Variable(A).tolist()
    assert seen == ["numpy", "numpy"]


# -- Python protocols ----------------------------------------------------------------------
def test_round_and_operator_index_on_scalars():
    assert round(vj.constant(2.5)) == 2 and type(round(vj.constant(2.5))) is int
    assert round(vj.constant(3.5)) == 4 and round(vj.Variable(-1.7)) == -2
    assert round(vj.constant(7)) == 7
    r = round(vj.constant(2.567), 2)
    assert isinstance(r, vj.Tensor) and r.numpy() == np.round(2.567, 2)
    with pytest.raises(TypeError, match="scalar"):
        round(vj.constant([1.5, 2.5]))  # as ndarray: no round() of an array
    assert operator.index(vj.constant(3)) == 3 and [10, 11, 12][vj.constant(1)] == 11
    with pytest.raises(TypeError, match="scalar integer"):
        operator.index(vj.constant(3.0))


def test_a_scalar_tensor_is_not_iterable():
    s = vj.constant(1.5)
    assert not np.iterable(s) and np.iterable(vj.constant([1.0]))
    with pytest.raises(TypeError, match="scalar"):
        iter(s)
    with pytest.raises(TypeError, match="scalar"):
        len(s)


def test_matplotlib_draws_tensors_as_it_draws_arrays():
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    data = RNG.standard_normal(200)
    fig, (ax, ref) = plt.subplots(1, 2)
    try:
        counts, edges, _ = ax.hist(vj.constant(data), bins=7)
        want_counts, want_edges, _ = ref.hist(data, bins=7)
        np.testing.assert_array_equal(counts, want_counts)
        np.testing.assert_array_equal(edges, want_edges)
        line = ax.axhline(vj.constant(0.25))
        assert line.get_ydata()[0] == 0.25
        ax.set_xlim(vj.constant(-1.0), vj.Variable(2.0))
        assert ax.get_xlim() == (-1.0, 2.0)
        text = ax.text(vj.constant(0.5), vj.constant(1.5), "label")
        assert text.get_position() == (0.5, 1.5)
        ax.plot(vj.constant(data[:10]), vj.constant(data[:10]) ** 2)
        fig.canvas.draw()
    finally:
        plt.close(fig)


# -- immutability ----------------------------------------------------------------------------
def test_np_asarray_of_a_tensor_is_read_only():
    x = vj.constant(A)
    view = np.asarray(x)
    with pytest.raises(ValueError, match="read-only"):
        view[0, 0] = 1.0
    assert not x.numpy().flags.writeable
    np.testing.assert_array_equal(x.numpy(), A)


@pytest.mark.parametrize("make", [
    vj.constant, vj.convert_to_tensor, vj.identity, lambda a: vj.reshape(a, (4, 3)),
    lambda a: vj.transpose(a), lambda a: vj.Variable(a), lambda a: vj.constant(a, shape=(12,)),
    lambda a: vj.add(a, 0.0), lambda a: a + vj.constant(0.0), lambda a: np.sum(vj.constant(a)) + a,
], ids=["constant", "convert_to_tensor", "identity", "reshape", "transpose", "Variable",
        "constant(shape)", "add", "ndarray + tensor", "np.sum + ndarray"])
def test_a_later_write_into_the_callers_array_changes_nothing(make):
    source = A.copy()
    t = make(source)
    before = np.array(t)
    source[...] = 99.0
    np.testing.assert_array_equal(np.array(t), before)


def test_a_recorded_gradient_does_not_see_a_later_write():
    weights, x = np.array([1.0, 2.0, 3.0]), vj.constant([0.5, 0.5, 0.5])
    with vj.GradientTape() as tape:
        tape.watch(x)
        y = vj.reduce_sum(x * weights)  # the tape keeps `weights` for x's gradient
    weights[:] = -7.0
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), [1.0, 2.0, 3.0])


def test_writing_into_a_variables_array_cannot_change_it():
    v = vj.Variable(A)
    for view in (np.asarray(v), v.numpy(), v.read_value().numpy()):
        with pytest.raises(ValueError, match="read-only"):
            view[0, 0] = 1.0
    v.assign(A * 0)
    np.testing.assert_array_equal(v.numpy(), 0 * A)


# -- copies and pickles ----------------------------------------------------------------------
@pytest.mark.parametrize("duplicate", [copy.deepcopy, copy.copy,
                                       lambda v: pickle.loads(pickle.dumps(v))],
                         ids=["deepcopy", "copy", "pickle"])
def test_copied_variables_are_independent_under_one_tape(duplicate):
    v = vj.Variable([1.0, 2.0], name="w", trainable=False)
    w = duplicate(v)
    assert w is not v and w._tid != v._tid
    assert (w.name, w.trainable, w.dtype) == ("w:0", False, v.dtype)
    np.testing.assert_array_equal(w.numpy(), v.numpy())
    with vj.GradientTape() as tape:
        tape.watch([v, w])
        y = vj.reduce_sum(3.0 * v) + vj.reduce_sum(w * w)
    gv, gw = tape.gradient(y, [v, w])
    np.testing.assert_array_equal(gv.numpy(), [3.0, 3.0])  # a shared id summed both: 5, 7
    np.testing.assert_array_equal(gw.numpy(), [2.0, 4.0])
    w.assign([5.0, 6.0])
    np.testing.assert_array_equal(v.numpy(), [1.0, 2.0])


def test_unpickled_tensors_have_their_own_identity():
    # (copy.copy and copy.deepcopy return the Tensor itself: tests/core/test_tensor_copies.py)
    x = vj.constant([1.0, 2.0])
    y = pickle.loads(pickle.dumps(x))
    assert y._tid != x._tid and y.dtype == x.dtype
    np.testing.assert_array_equal(y.numpy(), x.numpy())
    with vj.GradientTape() as tape:
        tape.watch(x)
        z = vj.reduce_sum(x * y)
    np.testing.assert_array_equal(tape.gradient(z, x).numpy(), [1.0, 2.0])  # y: a constant
    assert copy.copy(x) is x  # an immutable value, like a tuple


def test_deepcopy_of_a_module_copies_its_variables_once():
    layer = vj.layers.Dense(2)
    layer(vj.constant(np.ones((1, 3))))
    layer.alias = layer.kernel
    twin = copy.deepcopy(layer)
    assert twin.alias is twin.kernel and twin.kernel is not layer.kernel
    assert {v._tid for v in twin.variables}.isdisjoint({v._tid for v in layer.variables})


def test_a_loop_variant_value_is_its_own_copy_but_cannot_be_pickled():
    np.testing.assert_array_equal(vj.vectorized_map(copy.deepcopy, A).numpy(), np.asarray(A))
    with pytest.raises(TypeError, match="loop-variant"):
        vj.vectorized_map(lambda a: pickle.loads(pickle.dumps(a)), A)
