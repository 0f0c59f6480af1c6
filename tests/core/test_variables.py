"""vj.Variable (dtype, names, assign*, trainable, operators) and vj.Module collection."""
import numpy as np
import pytest

import vecjac as vj
from vecjac.vectorize import pfor


# -- construction ---------------------------------------------------------------------------
@pytest.mark.parametrize("value, dtype", [
    (3.0, np.float64), (3, np.int64), (True, np.bool_), ([1.0, 2.0], np.float64),
    (np.ones((2, 2), np.float32), np.float32), (vj.constant([1.0], vj.float32), np.float32),
])
def test_variable_dtype_follows_numpy(value, dtype):
    v = vj.Variable(value)
    assert v.dtype == dtype
    np.testing.assert_array_equal(v.numpy(), np.asarray(value))
    assert v.shape == np.shape(np.asarray(value))


def test_variable_dtype_argument_and_callable_initial_value():
    v = vj.Variable(lambda: np.arange(3), dtype=vj.float32)
    assert v.dtype == np.float32
    np.testing.assert_array_equal(v.numpy(), [0.0, 1.0, 2.0])


def test_variable_copies_its_initial_value():
    source = np.array([1.0, 2.0])
    v = vj.Variable(source)
    source[0] = 99.0
    assert v.numpy()[0] == 1.0
    with pytest.raises(ValueError):  # reads are read-only views
        v.numpy()[0] = 5.0


def test_variable_names():
    assert vj.Variable(3.0, name="x0").name == "x0:0"
    assert vj.Variable(3.0).name == "Variable:0"

    class Net(vj.Module):
        pass
    net = Net(name="my_net")
    with net.name_scope():
        v = vj.Variable(1.0, name="w")
    assert v.name == f"{net.name}/w:0" and net.name.startswith("my_net")
    assert "x0:0" in repr(vj.Variable(1.0, name="x0"))


@pytest.mark.parametrize("kwargs, err, match", [
    ({"trainable": "yes"}, TypeError, "trainable must be a bool"),
    ({"name": 3}, TypeError, "name must be a string"),
    ({"shape": (3,)}, ValueError, r"shape \(2,\), expected shape \(3,\)"),
])
def test_variable_bad_arguments(kwargs, err, match):
    with pytest.raises(err, match=match):
        vj.Variable([1.0, 2.0], **kwargs)


def test_variable_rejects_non_numeric():
    with pytest.raises(TypeError, match="numeric"):
        vj.Variable("hello")


# -- assign ---------------------------------------------------------------------------------
def test_assign_family_values_and_return():
    v = vj.Variable([1.0, 2.0])
    before = v.read_value()
    assert v.assign([5.0, 6.0]) is v
    np.testing.assert_array_equal(v.numpy(), [5.0, 6.0])
    np.testing.assert_array_equal(before.numpy(), [1.0, 2.0])  # earlier reads are immutable
    v.assign_add([1.0, 1.0])
    np.testing.assert_array_equal(v.numpy(), [6.0, 7.0])
    v.assign_sub(0.5)  # a scalar delta applies to every element
    np.testing.assert_array_equal(v.numpy(), [5.5, 6.5])
    v.assign(np.array([1, 2]))  # ints cast into a float variable
    assert v.dtype == np.float64
    np.testing.assert_array_equal(v.numpy(), [1.0, 2.0])
    v.assign(vj.constant([3.0, 4.0]))
    np.testing.assert_array_equal(v.read_value().numpy(), [3.0, 4.0])


@pytest.mark.parametrize("method", ["assign", "assign_add", "assign_sub"])
def test_assign_shape_errors(method):
    v = vj.Variable(np.zeros((2, 3)), name="w")
    with pytest.raises(ValueError, match=rf"Variable.{method}: value has shape \(3,\).*w:0.*"
                                         r"\(2, 3\)"):
        getattr(v, method)(np.ones(3))


@pytest.mark.parametrize("method", ["assign", "assign_add", "assign_sub"])
def test_assign_dtype_errors(method):
    v = vj.Variable(np.zeros(2, np.int64), name="k")
    with pytest.raises(TypeError, match=rf"Variable.{method}: cannot assign dtype float64"):
        getattr(v, method)(np.ones(2))
    np.testing.assert_array_equal(v.numpy(), [0, 0])  # unchanged after a failed assign


def test_assign_loop_variant_value_inside_pfor():
    v = vj.Variable(0.0)
    with pytest.raises(ValueError, match="loop-variant"):
        pfor(lambda i: v.assign(vj.cast(i, vj.float64)), 3)


# -- trainable, operators ---------------------------------------------------------------------
def test_trainable_flag():
    assert vj.Variable(1.0).trainable is True
    assert vj.Variable(1.0, trainable=False).trainable is False


def test_operators_return_tensors():
    v = vj.Variable([1.0, -2.0])
    m = vj.Variable(np.eye(2))
    cases = {
        "add": (v + 1, [2.0, -1.0]), "radd": (1 + v, [2.0, -1.0]),
        "sub": (v - v, [0.0, 0.0]), "rsub": (3.0 - v, [2.0, 5.0]),
        "mul": (v * v, [1.0, 4.0]), "div": (v / 2, [0.5, -1.0]),
        "rdiv": (2.0 / v, [2.0, -1.0]), "pow": (v ** 2, [1.0, 4.0]),
        "neg": (-v, [-1.0, 2.0]), "abs": (abs(v), [1.0, 2.0]),
        "matmul": (v @ m, [1.0, -2.0]), "getitem": (v[1], -2.0),
        "gt": (v > 0, [True, False]), "np_radd": (np.array([1.0, 1.0]) + v, [2.0, -1.0]),
    }
    for name, (out, expected) in cases.items():
        assert type(out) is vj.Tensor, name
        np.testing.assert_array_equal(out.numpy(), expected, err_msg=name)
    assert float(vj.Variable(2.5)) == 2.5 and int(vj.Variable(3)) == 3
    assert np.asarray(v).tolist() == [1.0, -2.0]
    assert v.reshape((2, 1)).shape == (2, 1) and v.astype(vj.float32).dtype == np.float32


# -- Module ----------------------------------------------------------------------------------
class Block(vj.Module):
    def __init__(self, n, name=None):
        super().__init__(name=name)
        self.w = vj.Variable(np.ones(n), name="w")
        self.count = vj.Variable(0, trainable=False, name="count")


class Model(vj.Module):
    def __init__(self):
        super().__init__()
        self.first = Block(2)
        self.blocks = [Block(3), Block(4)]
        self.table = {"b": vj.Variable(2.0, name="b"), "a": vj.Variable(1.0, name="a")}
        self.shared = self.first.w    # the same Variable again: listed once
        self.pair = (vj.Variable(5.0, name="p"), "not a variable", 3)
        self.cycle = self             # cycles are fine


def test_module_collects_nested_modules_lists_dicts_once():
    m = Model()
    all_vars = m.variables
    assert isinstance(all_vars, tuple)
    assert len(all_vars) == len({id(v) for v in all_vars}) == 9
    expected_trainable = [m.first.w, m.blocks[0].w, m.blocks[1].w, m.table["b"],
                          m.table["a"], m.pair[0]]
    assert [id(v) for v in m.trainable_variables] == [id(v) for v in expected_trainable]
    assert [id(v) for v in m.non_trainable_variables] == [
        id(m.first.count), id(m.blocks[0].count), id(m.blocks[1].count)]
    assert all(v.trainable for v in m.trainable_variables)


def test_module_names_are_unique_and_snake_case():
    a, b = Block(1), Block(1)
    assert a.name.startswith("block") and b.name.startswith("block") and a.name != b.name
    assert Model().name.startswith("model")


def test_module_variables_get_gradients():
    m = Block(3)
    x = vj.constant([1.0, 2.0, 3.0])
    with vj.GradientTape() as tape:
        y = vj.reduce_sum(m.w * x) + vj.cast(m.count, vj.float64)
    grads = tape.gradient(y, m.trainable_variables)
    assert len(grads) == 1
    np.testing.assert_array_equal(grads[0].numpy(), [1.0, 2.0, 3.0])


def test_name_scope_is_thread_local():
    import threading
    module = vj.Module(name="scope_in_other_thread")
    entered, release = threading.Event(), threading.Event()

    def hold_scope():
        with module.name_scope():
            entered.set()
            release.wait(5)
    t = threading.Thread(target=hold_scope)
    t.start()
    entered.wait(5)
    try:
        v = vj.Variable(1.0, name="free")
    finally:
        release.set()
        t.join()
    assert v.name == "free:0"
