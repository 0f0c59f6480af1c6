"""core.context.suspended: every transform out of sight inside, the stack restored after
(also when the body raises); what runs inside is neither recorded nor followed."""
import numpy as np
import pytest

import vecjac as vj
from vecjac._src.core.context import state, suspended


def test_inside_no_transform_sees_the_ops_and_the_stack_comes_back():
    x = vj.constant(np.array([1.0, 2.0]))
    with vj.GradientTape(persistent=True) as tape, \
            vj.autodiff.ForwardAccumulator(x, np.ones(2)) as acc:
        tape.watch(x)
        outside = [list(getattr(state, n)) for n in suspended._LISTS]
        with suspended():
            assert state.stack == [] and state.tapes == [] and state.followers == []
            fresh = vj.constant(np.array([3.0]))
            inner = vj.exp(fresh)          # a solver's own value: nobody follows it
        y = vj.reduce_sum(x * x)
        assert [list(getattr(state, n)) for n in suspended._LISTS] == outside
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), [2.0, 4.0])
    np.testing.assert_allclose(float(acc.jvp(y)), 6.0)
    assert tape.gradient(inner, fresh) is None and acc.jvp(inner) is None


def test_the_stack_is_restored_when_the_body_raises():
    with vj.GradientTape():
        before = list(state.stack)
        with pytest.raises(RuntimeError, match="solver failed"):
            with suspended():
                raise RuntimeError("solver failed")
        assert state.stack == before
