"""vj.function's plan optimizations: fused segments (vecjac/_src/transforms/function/fusion.py) and large
temporaries written in place (vecjac/_src/transforms/function/plan.py). The expected values are the eager
calls, to the bit: both optimizations run the same IEEE operations in the same order.
"""
import numpy as np
from hypothesis import example, given
from hypothesis import strategies as st

import vecjac as vj
from vecjac._src.transforms.function import fusion as _fusion
from vecjac._src.core.dispatch import apply
from vecjac._src.core.registry import REGISTRY

RNG = np.random.default_rng(5)


# -- fused segments (vecjac/_src/transforms/function/fusion.py) -----------------------------------------------------------
def _rk4_sensitivities(p):
    """Forward sensitivities of a small ODE, written one op at a time: a long run of
    scalar arithmetic, slices, stacks and broadcasts (a fused segment when replayed)."""
    def trajectory(p):
        a, b = p[0], p[1]

        def rhs(y):
            return vj.stack([a * y[0] - b * y[0] * y[1], -y[1] / (1.0 + y[0] ** 2)])
        y, out = vj.constant([1.0, 0.5]), []
        for _ in range(6):
            k1 = rhs(y)
            k2 = rhs(y + 0.05 * k1)
            y = y + 0.1 * (k1 + k2) / 2.0
            out.append(y)
        return vj.transpose(vj.stack(out))
    return vj.jacfwd(trajectory)(p)


def test_fused_segments_give_the_eager_bits():
    f = vj.function(_rk4_sensitivities)
    for k in range(5):  # trace, step-by-step replays (warm-up), then the fused plan
        p = vj.constant([1.1 + 0.1 * k, 0.4 - 0.05 * k])
        np.testing.assert_array_equal(f(p).numpy(), _rk4_sensitivities(p).numpy())
    plan = next(iter(f._entries.values())).plans[0]
    fused = [s for s in plan.fused_steps if s.kind == "op" and s.op.name == "Fused"]
    assert fused and fused[0].op.forward.calls == 2  # built on the 4th call
    assert _fusion._state["kernel"] is not None or _fusion.numba_module() is None
    assert sum(len(s.op.forward.steps) for s in fused) > 100
    # forward mode's product rule (MulAdd) is fused too: it no longer cuts the runs short
    assert sum(s.op.name == "MulAdd" for s in plan.fused_steps if s.kind == "op") == 0
    assert sum(s.op.name == "MulAdd" for f in fused for s in f.op.forward.steps) > 10


def test_fused_segments_keep_ieee_results_and_split_at_guards():
    def f(x, y):
        z = x
        for _ in range(15):
            z = z * y - x
        s = vj.reduce_sum(z)  # not fused: ends the segment
        if s > 0:             # a guard between two segments
            z = -z
        for _ in range(15):
            z = z / y + x
        return z
    g = vj.function(f)
    with np.errstate(all="ignore"):
        for y in ([1.0, 2.0, 0.5], [0.0, 1.0, -1.0], [-2.0, 1.5, 0.0], [0.0, 0.0, 3.0]) * 3:
            x, y = vj.constant([0.5, -1.0, 2.0]), vj.constant(y)
            np.testing.assert_array_equal(g(x, y).numpy(), f(x, y).numpy())
    segments = [s.op.forward for plan in next(iter(g._entries.values())).plans
                for s in plan.fused_steps if s.kind == "op" and s.op.name == "Fused"]
    assert len(segments) == 4 and all(s.calls > 3 for s in segments)


def test_large_temporaries_are_reused_only_when_no_view_of_them_lives_on():
    def f(x):
        a = vj.exp(x)                   # a fresh array ...
        view = vj.transpose(a)          # ... that a live view shares
        b = a * 2.0                     # a is dead here, its memory is not
        c = vj.tanh(b) - 1.0            # b and then c can be written in place
        flat = vj.reshape(c, [-1])
        return vj.reshape(flat * flat, x.shape) + view, c
    g = vj.function(f)
    for _ in range(4):  # the optimized replay (in-place writes) from the 4th call
        x = vj.constant(RNG.standard_normal((200, 200)) * 0.1)
        for got, want in zip(g(x), f(x)):
            np.testing.assert_array_equal(got.numpy(), want.numpy())
    plan = next(iter(g._entries.values())).plans[0]
    into = [(s.op.name, s.into is not None) for s in plan.steps if s.kind == "op"]
    assert ("Mul", False) in into and ("Tanh", True) in into and ("Sub", True) in into


def test_chains_over_large_arrays_give_the_eager_bits():
    """Runs of element-wise ops over one large shape become one compiled loop nest
    (vecjac/_src/transforms/function/chains.py): broadcast operands, scalars, small ops interleaved (run first),
    an intermediate read later, sums over a middle axis (with and without keepdims). A
    sum that the Sum op computes with BLAS (inner size <= 512, here axis 1 of
    (40, 64, 16)) stays its own step: a loop nest cannot give BLAS's bits."""
    def f(t, a, b, c):
        u = t * a + b * t          # (40, 64, 16) with (64, 16) and (16,) operands
        small = vj.tanh(a) * 2.0   # interleaved small ops, independent of the chain
        v = -(u / c) * (u - 1.5)
        v = apply(REGISTRY["MulAdd"], v, a, u, b)  # forward mode's product rule
        w = v * small + u
        s2 = vj.reduce_sum(w * w, axis=0, keepdims=True)  # ends the chain's loop nest
        s1 = vj.reduce_sum(w, axis=1)  # by BLAS: its own step
        return s1, s2, u, vj.reduce_sum(w)
    g = vj.function(f)
    for k in range(5):
        t = vj.constant(RNG.standard_normal((40, 64, 16)))
        a, b = vj.constant(RNG.standard_normal((64, 16))), vj.constant(RNG.standard_normal(16))
        c = vj.constant(np.where(RNG.random((40, 1, 16)) < 0.1, 0.0, 1.0 + k))
        with np.errstate(all="ignore"):
            for got, want in zip(g(t, a, b, c), f(t, a, b, c)):
                np.testing.assert_array_equal(got.numpy(), want.numpy())
    plan = next(iter(g._entries.values())).plans[0]
    chains = [s.op.forward for s in plan.fused_steps
              if s.kind == "op" and type(s.op).__name__ == "_ChainOp"]
    assert chains and chains[0].calls == 2  # built on the 4th call
    assert chains[0]._kernel not in (None, False) or _fusion.numba_module() is None
    assert sum(st.op.name == "Sum" for c in chains for st in c.steps) == 1
    assert any(s.kind == "op" and s.op.name == "Sum" and s.attrs["axis"] == (1,)
               for s in plan.fused_steps)
    assert sum(st.op.name == "MulAdd" for c in chains for st in c.steps) == 1


def test_non_contiguous_arguments_replay_as_contiguous_ones():
    def f(x):
        return vj.reduce_sum(x * x - x, axis=0)
    g = vj.function(f)
    base = RNG.standard_normal((300, 200))
    for x in (base.T, np.ascontiguousarray(base.T), base.T * 2.0, base[::2, ::2].T):
        np.testing.assert_array_equal(g(x).numpy(), f(vj.constant(np.ascontiguousarray(x)))
                                      .numpy())


# -- random element-wise chains with constants, across the replay's size thresholds -------------
# (issue 29: an in-place write decided before chain() reordered the steps). Sizes on both
# sides of _fusion.MAX_SIZE (4096), the in-place FREE_BYTES (8192 float64) and
# _chains.MIN_SIZE (16384).
_UNARY = {"exp": lambda a: vj.exp(0.1 * a), "sin": vj.sin, "tanh": vj.tanh, "neg": lambda a: -a,
          "square": vj.square, "shift": lambda a: vj.pad(a, [[1, 0]])[:-1]}
_BINARY = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
           "div": lambda a, b: a / (1.5 + vj.square(b))}
_step = st.one_of(
    st.tuples(st.just("unary"), st.sampled_from(sorted(_UNARY)), st.integers(0, 50)),
    st.tuples(st.just("const"), st.sampled_from(sorted(_BINARY)),
              st.floats(-3.0, 3.0, allow_nan=False).filter(lambda c: abs(c) > 0.1),
              st.integers(0, 50), st.booleans()),
    st.tuples(st.just("pair"), st.sampled_from(sorted(_BINARY)), st.integers(0, 50),
              st.integers(0, 50)))


def _chain_function(program):
    """f(x) = the last value of a program over earlier values (indices taken modulo the
    number of values so far); every intermediate stays reachable."""
    def f(x):
        values = [x]
        for step in program:
            kind, name = step[0], step[1]
            if kind == "unary":
                values.append(_UNARY[name](values[step[2] % len(values)]))
            elif kind == "const":
                a = values[step[3] % len(values)]
                values.append(_BINARY[name](step[2], a) if step[4] else _BINARY[name](a, step[2]))
            else:
                values.append(_BINARY[name](values[step[2] % len(values)],
                                            values[step[3] % len(values)]))
        return values[-1] + 0.5 * values[len(values) // 2]
    return f


@given(program=st.lists(_step, min_size=2, max_size=12),
       n=st.sampled_from([1000, 4096, 4100, 8192, 8200, 16384, 16400, 40000]))
@example(program=[("unary", "exp", 0), ("const", "mul", 6.0, 1, True)], n=20000)  # 6 exp(u)
@example(program=[("unary", "exp", 0), ("unary", "exp", 0)], n=16384)  # found by hypothesis
def test_random_elementwise_chains_replay_as_eager(program, n):
    f = _chain_function(program)
    traced = vj.function(f)
    grad = vj.function(vj.grad(lambda x: vj.reduce_sum(f(x))))
    J, J_eager = vj.sparse_jacobian(f, jit=True), vj.sparse_jacobian(f)
    rng = np.random.default_rng(n)
    with np.errstate(all="ignore"):
        for _ in range(5):  # trace, NumPy warm-up replays, compiled replays
            x = rng.standard_normal(n)
            np.testing.assert_array_equal(traced(x).numpy(), f(vj.constant(x)).numpy())
            np.testing.assert_array_equal(
                grad(x).numpy(), vj.grad(lambda x: vj.reduce_sum(f(x)))(x).numpy())
            got, want = J(x), J_eager(x)
            assert got.nnz == want.nnz and np.array_equal(got.data, want.data,
                                                           equal_nan=True)
