"""vj.function's plan optimizations: fused segments (vecjac/_fusion.py) and large
temporaries written in place (vecjac/_plan.py). The expected values are the eager
calls, to the bit: both optimizations run the same IEEE operations in the same order.
"""
import numpy as np

import vecjac as vj

RNG = np.random.default_rng(5)


# -- fused segments (vecjac/_fusion.py) -----------------------------------------------------------
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
    for k in range(5):  # trace, NumPy replays (warm-up), then the compiled segment
        p = vj.constant([1.1 + 0.1 * k, 0.4 - 0.05 * k])
        np.testing.assert_array_equal(f(p).numpy(), _rk4_sensitivities(p).numpy())
    plan = next(iter(f._entries.values())).plans[0]
    fused = [s for s in plan.fused_steps if s.kind == "op" and s.op.name == "Fused"]
    assert fused and fused[0].op.forward.calls == 4
    assert sum(len(s.op.forward.steps) for s in fused) > 100


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
    for _ in range(3):
        x = vj.constant(RNG.standard_normal((200, 200)) * 0.1)
        for got, want in zip(g(x), f(x)):
            np.testing.assert_array_equal(got.numpy(), want.numpy())
    plan = next(iter(g._entries.values())).plans[0]
    into = [(s.op.name, s.into is not None) for s in plan.steps if s.kind == "op"]
    assert ("Mul", False) in into and ("Tanh", True) in into and ("Sub", True) in into
