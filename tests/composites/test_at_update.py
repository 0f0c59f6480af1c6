"""x.at[idx].set / add / multiply / divide / power / min / max / get (composites/at_update.py)
and what Tensor.__setitem__ and a NumPy array receiving a Tensor say to write instead.

Expected values are NumPy's in-place operations on copies (ufunc.at for repeated indices,
an explicit loop for `set`, whose repeated indices NumPy leaves unspecified), central
differences (vj.testing.check_grads) and explicit loops over pfor's iterations.
"""
import warnings

import numpy as np
import pytest

import vecjac as vj

RNG = np.random.default_rng(7)
X = RNG.uniform(0.5, 2.0, size=(4, 5))  # positive: power's base

# index kinds, each with a NumPy equivalent; "repeats" ones select an element twice
INDICES = {
    "int": 2,
    "negative int": -1,
    "slice": slice(1, None),
    "strided slice": (slice(None, None, 2), slice(4, 0, -2)),
    "ellipsis": (Ellipsis, 1),
    "none": (None, 1, slice(1, 3)),
    "bool mask": X > 1.0,
    "bool rows": np.array([True, False, True, True]),
    "int array": np.array([3, 0, 1]),
    "int array 2-d": (np.array([[0, 1], [2, 3]]), np.array([[4, 3], [2, 1]])),
    "int and slice": (1, slice(None, 3)),
    "array and slice": (np.array([0, 3]), slice(1, 4)),
    "list": [0, 2],
    "repeats": np.array([1, 3, 1, 1]),
    "repeats 2-d": (np.array([0, 2, 0]), np.array([4, 1, 4])),
}
REPEATS = {"repeats", "repeats 2-d"}
UFUNCS = {"add": np.add, "multiply": np.multiply, "divide": np.divide, "power": np.power,
          "min": np.minimum, "max": np.maximum}


def _values(idx, lo=0.5, hi=1.5):
    return RNG.uniform(lo, hi, size=np.shape(X[idx]))


def _expected_set(x, idx, v):
    """x[idx] = v with the last occurrence of a repeated element winning: an explicit
    loop over the selected elements in C order (NumPy leaves the order unspecified)."""
    out = x.copy()
    numbers = np.arange(x.size).reshape(x.shape)[idx]
    for pos, value in zip(np.ravel(numbers), np.ravel(np.broadcast_to(v, numbers.shape))):
        out.flat[pos] = value
    return out


@pytest.mark.parametrize("kind", sorted(INDICES))
def test_set_matches_numpy_assignment(kind):
    idx = INDICES[kind]
    v = _values(idx)
    x = vj.constant(X)
    out = x.at[idx].set(v)
    expected = _expected_set(X, idx, v)
    if kind not in REPEATS:
        assigned = X.copy()
        assigned[idx] = v
        np.testing.assert_array_equal(expected, assigned)
    np.testing.assert_array_equal(out.numpy(), expected)
    np.testing.assert_array_equal(x.numpy(), X)  # x is unchanged


@pytest.mark.parametrize("method", sorted(UFUNCS))
@pytest.mark.parametrize("kind", sorted(INDICES))
def test_updates_match_numpy_ufunc_at(method, kind):
    idx = INDICES[kind]
    v = _values(idx)
    x = vj.constant(X)
    out = getattr(x.at[idx], method)(v)
    expected = X.copy()
    UFUNCS[method].at(expected, idx, v)
    if kind in REPEATS:  # combined in another order (x * (v1 v2) or x ** (v1 v2))
        np.testing.assert_allclose(out.numpy(), expected, rtol=1e-13)
    else:
        np.testing.assert_array_equal(out.numpy(), expected)
        inplace = X.copy()  # the in-place operator NumPy users write
        if method in ("min", "max"):
            inplace[idx] = UFUNCS[method](inplace[idx], v)
        else:
            operand = inplace[idx]
            operand = {"add": np.add, "multiply": np.multiply, "divide": np.divide,
                       "power": np.power}[method](operand, v)
            inplace[idx] = operand
        np.testing.assert_array_equal(out.numpy(), inplace)
    np.testing.assert_array_equal(x.numpy(), X)


@pytest.mark.parametrize("method", ("set", "add", "max"))
def test_non_adjacent_index_arrays_put_their_axes_first(method):
    """NumPy's rule: array indices split by a slice index the leading axes of x[idx]."""
    x3 = RNG.standard_normal((3, 4, 5))
    idx = (np.array([0, 2]), slice(1, 3), np.array([4, 0]))
    v = RNG.standard_normal((2, 2))  # x3[idx].shape: (2, 2), the arrays' axis first
    out = getattr(vj.constant(x3).at[idx], method)(v)
    expected = x3.copy()
    if method == "set":
        expected[idx] = v
    else:
        UFUNCS[method].at(expected, idx, v)
    np.testing.assert_array_equal(out.numpy(), expected)


def test_repeated_add_counts_every_occurrence():
    x = vj.zeros(3)
    out = x.at[np.array([0, 2, 0, 0])].add(vj.constant([1.0, 10.0, 100.0, 1000.0]))
    np.testing.assert_array_equal(out.numpy(), [1101.0, 0.0, 10.0])


def test_repeated_set_keeps_the_last_occurrence():
    out = vj.zeros(3).at[np.array([1, 0, 1])].set(vj.constant([5.0, 6.0, 7.0]))
    np.testing.assert_array_equal(out.numpy(), [6.0, 7.0, 0.0])


def test_get_is_getitem():
    x = vj.constant(X)
    for idx in INDICES.values():
        np.testing.assert_array_equal(x.at[idx].get().numpy(), X[idx])


def test_values_broadcast_and_are_cast_to_x_dtype():
    x = vj.constant(X.astype(np.float32))
    out = x.at[1:, 2:].set(np.array([1.0, 2.0, 3.0]))  # a row, broadcast; float64 -> x's
    assert out.dtype == np.float32
    expected = X.astype(np.float32)
    expected[1:, 2:] = [1.0, 2.0, 3.0]
    np.testing.assert_array_equal(out.numpy(), expected)
    # leading axes of size 1 beyond x[idx]'s rank are dropped, as NumPy's assignment does
    out = vj.constant(X).at[0].set(np.ones((1, 1, 5)))
    np.testing.assert_array_equal(out.numpy()[0], np.ones(5))
    ints = vj.constant(np.arange(4)).at[1:3].add(10)
    assert ints.dtype == np.int64
    np.testing.assert_array_equal(ints.numpy(), [0, 11, 12, 3])


def test_empty_selection_returns_x():
    x = vj.constant(X)
    for method in ("set", "add", "multiply", "min"):
        np.testing.assert_array_equal(getattr(x.at[2:2], method)(1.0).numpy(), X)
    np.testing.assert_array_equal(x.at[np.zeros(X.shape, bool)].set(0.0).numpy(), X)


def test_variable_values_update_functionally():
    v = vj.Variable([1.0, 2.0, 3.0])
    with vj.GradientTape() as tape:
        y = v.at[1].multiply(4.0)
        loss = vj.reduce_sum(y * y)
    np.testing.assert_array_equal(y.numpy(), [1.0, 8.0, 3.0])
    np.testing.assert_array_equal(v.numpy(), [1.0, 2.0, 3.0])  # the Variable is unchanged
    np.testing.assert_allclose(tape.gradient(loss, v).numpy(), [2.0, 64.0, 6.0])


# -- derivatives -------------------------------------------------------------------------
CASES = [(method, kind) for method in ("set",) + tuple(sorted(UFUNCS))
         for kind in ("slice", "int array 2-d", "repeats", "bool mask", "none")]


def _update(method, idx):
    return lambda x, v: getattr(x.at[idx], method)(v)


@pytest.mark.parametrize("method,kind", CASES)
def test_gradients_match_finite_differences(method, kind):
    idx = INDICES[kind]
    v = _values(idx, 0.6, 1.4)
    x = X.copy()
    if method in ("min", "max"):  # no ties between x and v: away from the kinks
        v = np.where(np.abs(v - X[idx]) < 0.05, v + 0.2, v) if kind not in REPEATS else v
    f = _update(method, idx)
    vj.testing.check_grads(lambda a, b: vj.sin(f(a, b)), [x, v], order=2)


@pytest.mark.parametrize("method", ("set", "add", "multiply", "min"))
def test_pfor_jacobian_matches_the_loop(method):
    idx = INDICES["repeats 2-d"] if method != "set" else INDICES["int array 2-d"]
    x = vj.constant(X)
    v = vj.constant(_values(idx))
    with vj.GradientTape(persistent=True) as tape:
        tape.watch([x, v])
        y = vj.tanh(getattr(x.at[idx], method)(v * x[0, :v.shape[0]]))
    for source in (x, v):
        fast = tape.jacobian(y, source)
        loop = tape.jacobian(y, source, experimental_use_pfor=False)
        np.testing.assert_allclose(fast.numpy(), loop.numpy(), rtol=1e-13, atol=1e-15)
    jf = vj.jacfwd(lambda a: getattr(a.at[idx], method)(v * a[0, :v.shape[0]]))(x)
    jr = vj.jacrev(lambda a: getattr(a.at[idx], method)(v * a[0, :v.shape[0]]))(x)
    np.testing.assert_allclose(jf.numpy(), jr.numpy(), rtol=1e-13, atol=1e-15)


def test_per_example_updates_match_a_python_loop():
    """The rows of a batch vary over the loop; the update is the same for each."""
    batch = vj.constant(RNG.standard_normal((6, 5)))
    idx = np.array([4, 0, 4])

    def per_row(r):
        return vj.reduce_sum(vj.sin(r.at[idx].add(r[1:4] ** 2).at[2:].multiply(r[0])))

    grads = vj.vectorized_map(lambda r: vj.grad(per_row)(r), batch)
    for k in range(6):
        np.testing.assert_allclose(grads.numpy()[k], vj.grad(per_row)(batch[k]).numpy(),
                                   rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("method", ("set", "add", "multiply", "max"))
def test_indices_varying_over_the_loop(method):
    """x.at[i] with the loop index, and index arrays that differ (and repeat) per
    iteration: the vectorized loop against the explicit one."""
    table = np.array([[0, 2, 0], [1, 1, 1], [3, 0, 2], [2, 3, 3]])
    x = vj.constant(X[0, :4])
    vals = vj.constant(RNG.uniform(0.5, 1.5, size=(4, 3)))

    def one(i):
        rows = vj.gather(vj.constant(table), i)
        y = getattr(x.at[rows], method)(vals[0] * x[0])
        return getattr(y.at[i], method)(2.0)

    fast = vj.vectorized_map(one, vj.range(4))
    loop = vj.stack([one(vj.constant(i)) for i in range(4)])
    np.testing.assert_allclose(fast.numpy(), loop.numpy(), rtol=1e-14)
    jac_fast = vj.vectorized_map(lambda i: vj.jacobian(lambda a: getattr(
        a.at[vj.gather(vj.constant(table), i)], method)(vals[0] * a[0]))(x), vj.range(4))
    for i in range(4):
        jac = vj.jacobian(lambda a: getattr(a.at[table[i]], method)(vals[0] * a[0]))(x)
        np.testing.assert_allclose(jac_fast.numpy()[i], jac.numpy(), rtol=1e-14)


def test_one_hot_rows_by_the_loop_index():
    rows = vj.vectorized_map(lambda i: vj.zeros(4).at[i].set(1.0), vj.range(4))
    np.testing.assert_array_equal(rows.numpy(), np.eye(4))


@pytest.mark.parametrize("method", ("set", "add", "multiply", "divide", "power", "min"))
def test_function_replay_equals_eager(method):
    idx = (np.array([0, 2, 0]), np.array([4, 1, 4]))

    def f(x, v):
        y = getattr(x.at[idx], method)(v)
        return y.at[1:, ::2].add(y[0, :3] * 2.0)

    fast = vj.function(f)
    for seed in range(3):
        rng = np.random.default_rng(seed)
        x = vj.constant(rng.uniform(0.5, 2.0, size=(4, 5)))
        v = vj.constant(rng.uniform(0.5, 1.5, size=3))
        np.testing.assert_array_equal(fast(x, v).numpy(), f(x, v).numpy())
    g = vj.function(vj.grad(lambda x, v: vj.reduce_sum(f(x, v) ** 2), argnums=(0, 1)))
    for got, want in zip(g(x, v), vj.grad(lambda x, v: vj.reduce_sum(f(x, v) ** 2),
                                          argnums=(0, 1))(x, v)):
        np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_sparsity_pattern_is_exact():
    """set: the written elements depend on v only, the others on x only; add / multiply:
    the written elements on x and v; a repeated index on all of its values."""
    n = 5

    def pattern(method):
        def f(z):
            x, v = z[:n], z[n:]
            return getattr(x.at[np.array([1, 3, 1])], method)(v)
        return vj.jacobian_sparsity(f, np.ones(n + 3)).toarray().astype(int)

    eye = np.eye(n, dtype=int)
    set_expected = np.hstack([eye, np.zeros((n, 3), int)])
    set_expected[[1, 3], [1, 3]] = 0
    set_expected[1, n + 2] = set_expected[3, n + 1] = 1  # the last occurrence of 1 wins
    np.testing.assert_array_equal(pattern("set"), set_expected)
    combined = np.hstack([eye, np.zeros((n, 3), int)])
    combined[1, [n, n + 2]] = combined[3, n + 1] = 1
    for method in ("add", "multiply", "max"):
        np.testing.assert_array_equal(pattern(method), combined)


def test_scipy_style_rhs():
    """A right-hand side ported from SciPy's docs style (f = zeros; f[0] = ...;
    f[1:] -= ...): its Jacobian against the closed form."""
    k = 0.3

    def rhs(t, y):
        f = vj.zeros_like(y)
        f = f.at[0].set(-y[0] * y[1])
        f = f.at[1:].add(-k * y[1:] ** 2)
        return f

    y = np.array([1.5, 2.0, -0.5])
    jac = vj.jacobian(lambda y: rhs(0.0, y))(y).numpy()
    expected = np.array([[-y[1], -y[0], 0.0],
                         [0.0, -2 * k * y[1], 0.0],
                         [0.0, 0.0, -2 * k * y[2]]])
    np.testing.assert_allclose(jac, expected, rtol=1e-15)


# -- errors, before any work -------------------------------------------------------------
def test_bad_index_names_idx_and_the_shape():
    x = vj.constant(X)
    with pytest.raises(IndexError, match=r"x\.at\[idx\]\.set: bad idx 4 for x of shape "
                                         r"\(4, 5\): index 4 is out of bounds"):
        x.at[4].set(1.0)
    with pytest.raises(IndexError, match=r"x\.at\[idx\]\.add: bad idx .*too many indices"):
        x.at[0, 1, 2].add(1.0)
    with pytest.raises(IndexError, match=r"x\.at\[idx\]\.set: index arrays must be integers"):
        x.at[vj.constant([0.5])].set(1.0)
    with pytest.raises(IndexError, match=r"bad idx"):
        x.at[np.array([0, 7])].multiply(2.0)


def test_bad_values_name_the_expected_and_given_shapes():
    x = vj.constant(X)
    with pytest.raises(ValueError, match=r"x\.at\[idx\]\.set: values must broadcast to the "
                                         r"shape of x\[idx\], \(3, 5\), got shape \(3,\)"):
        x.at[1:].set(np.ones(3))
    with pytest.raises(ValueError, match=r"x\.at\[idx\]\.add: values .* \(2,\), got shape "
                                         r"\(2, 2\)"):
        x.at[0, :2].add(np.ones((2, 2)))
    with pytest.raises(TypeError, match="complex values cannot be written"):
        x.at[0].set(1j)
    with pytest.raises(TypeError, match="integer dtype"):
        vj.constant([1, 2]).at[0].divide(2)


def test_tensor_item_assignment_says_what_to_write():
    y = vj.constant([1.0, 2.0, 3.0])
    k = 0.5
    with pytest.raises(TypeError, match="immutable") as info:
        y[1:] -= k * y[1:]
    assert "`y = y.at[1:].add(-(k * y[1:]))`" in str(info.value)
    assert "`x = x.at[idx].set(v)`" in str(info.value)
    with pytest.raises(TypeError) as info:
        y[0] = 5.0
    assert "`y = y.at[0].set(5.0)`" in str(info.value)
    f = np.zeros_like(y)  # NumPy dispatches: a Tensor
    with pytest.raises(TypeError) as info:
        f[0, ...] *= y[0]
    assert "`f = f.at[0, ...].multiply(y[0])`" in str(info.value)
    z = y
    z += 1.0  # augmented assignment of a name rebinds it: still fine
    np.testing.assert_array_equal(z.numpy(), [2.0, 3.0, 4.0])
    np.testing.assert_array_equal(y.numpy(), [1.0, 2.0, 3.0])


def _rhs_into_ndarray(y):
    f = np.zeros(3)
    f[1:] = 2.0 * y[1:]
    return f


def test_ndarray_assignment_of_a_tensor_suggests_building_it_in_vecjac():
    y = vj.constant([1.0, 2.0, 3.0])
    with pytest.raises(TypeError) as info:
        vj.jacobian(_rhs_into_ndarray)(y)
    message = str(info.value)
    for part in ("NumPy array f", "vj.stack / vj.concat", "`f = vj.zeros(3)`",
                 "`f = f.at[1:].set(2.0 * y[1:])`"):
        assert part in message, (part, message)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with vj.GradientTape() as tape:
            tape.watch(y)
            _rhs_into_ndarray(y)
    assert any("`f = f.at[1:].set(2.0 * y[1:])`" in str(w.message) for w in caught)
    with pytest.raises(TypeError, match=r"f = vj\.zeros\(3\)"):
        vj.vectorized_map(_rhs_into_ndarray, vj.constant(np.ones((2, 3))))


def test_in_place_operator_on_an_ndarray_slice_suggests_at():
    y = vj.constant([1.0, 2.0, 3.0])
    f = np.zeros(3)
    with pytest.raises(TypeError, match=r"out= is not supported") as info:
        f[1:] -= 0.5 * y[1:]
    assert "`f = f.at[1:].add(-(0.5 * y[1:]))`" in str(info.value)


def test_ufunc_at_names_the_functional_update():
    y = vj.constant([1.0, 2.0])
    with pytest.raises(TypeError, match=r"immutable: write `a = a\.at\[idx\]\.add\(v\)`"):
        np.add.at(y, [0], 1.0)
    with pytest.raises(TypeError, match=r"a NumPy array.*`a = a\.at\[idx\]\.max\(v\)`"):
        np.maximum.at(np.zeros(2), [0], y[0])
