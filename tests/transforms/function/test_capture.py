"""Every registry sample through vj.function: a replay equals the eager call.

For each (op, sample) of tests/test_registry.py, values A and B are drawn; the function
is traced at A and replayed at B (or retraced there, when a guard says the trace does not
apply), and the result must equal the eager call at B exactly (the replay runs the same
forwards in the same order). Differentiable samples also go through vj.function of
vj.grad (the backward pass replayed) and of vj.jacfwd (forward mode under pfor: the
fast paths of pfor and of the accumulator must not hide ops from the capture). One
fixed draw per sample keeps the file quick; the registry tests cover the op semantics.
"""
import warnings

import numpy as np
import pytest

import vecjac as vj
from tests.test_registry import (CASES, _caller, _case, _float_outputs, _outputs,
                                 _weighted_loss, seed_of)


def _dims(leaves, sample):
    names = sorted({d for a in leaves for d in a.shape + (a.hi,) if isinstance(d, str)})
    lo, hi = sample.dim_range
    return {n: min(max(lo, 2), hi) + k % 2 if hi > 2 else max(lo, 1)
            for k, n in enumerate(names)}


def _assert_same(got, want, what):
    got, want = _outputs(got), _outputs(want)
    assert len(got) == len(want), what
    for g, w in zip(got, want):
        if w is None:
            assert g is None, what
            continue
        assert isinstance(g, vj.Tensor), what
        assert g.shape == w.shape and g.dtype == w.dtype, f"{what}: {g.shape} vs {w.shape}"
        np.testing.assert_array_equal(g.numpy(), w.numpy(), err_msg=what)


@pytest.mark.parametrize("name,k", CASES)
def test_replay_equals_eager(name, k):
    op, sample, leaves, diff, differentiable = _case(name, k)
    if op.stateful:
        pytest.skip(f"{name}: draws anew on every run (tests/api/test_function.py)")
    dims = _dims(leaves, sample)
    rng = np.random.default_rng(1234 + seed_of(k))
    a = [leaf.value(rng, dims) for leaf in leaves]
    b = [leaf.value(rng, dims) for leaf in leaves]
    call = _caller(op, sample)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        f = vj.function(call)
        _assert_same(f(*[vj.constant(v) for v in a]), call(*[vj.constant(v) for v in a]),
                     f"{name}: trace")
        _assert_same(f(*[vj.constant(v) for v in b]), call(*[vj.constant(v) for v in b]),
                     f"{name}: replay")
        if not differentiable:
            return
        weights = {}

        def loss(*xs):
            args = [vj.constant(v) for v in b]
            for j, x in zip(diff, xs):
                args[j] = x
            floats = _float_outputs(_outputs(call(*args)))
            for m, o in enumerate(floats):
                if m not in weights:
                    weights[m] = np.random.default_rng(m).standard_normal(o.shape)
            return _weighted_loss(floats, [weights[m] for m in range(len(floats))])
        argnums = tuple(range(len(diff)))
        grad = vj.grad(loss, argnums=argnums)
        g = vj.function(grad)
        g(*[a[j] for j in diff])
        _assert_same(list(g(*[b[j] for j in diff])), list(grad(*[b[j] for j in diff])),
                     f"{name}: gradient replay")
        x = b[diff[0]]
        if x.size > 6:
            return

        def output(v):
            args = [vj.constant(u) for u in b]
            args[diff[0]] = v
            return _float_outputs(_outputs(call(*args)))[0]
        # a complex argument: vj.jacobian's real form (jacfwd wants real inputs, as JAX)
        jac = vj.jacobian(output, mode="fwd") if np.iscomplexobj(x) else vj.jacfwd(output)
        fj = vj.function(jac)
        fj(a[diff[0]])
        _assert_same(fj(x), jac(x), f"{name}: jacfwd replay")
