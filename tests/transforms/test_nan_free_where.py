"""Structural zeros (vecjac/_src/transforms/tape/zeros.py): a (co)tangent that a selection
(where, np.where, maximum / minimum, clip_by_value, a loop-variant vj.cond) zeroed stays
an exact zero through the element-wise rules of the branch it was not taken from, in
every mode; a singularity of the selected branch is still inf / NaN; code without a
selection runs the ops it ran before.

Each case: f, points holding the singular element(s) and regular ones, and closed forms
of the Jacobian J(x) and of the Hessian H(x) of sum(f): every mode is compared with them
exactly where they are 0 and to 1e-12 elsewhere (a NaN fails both). The selection
upstream of the singular op (where(x > 0, sqrt(x), 0)) was reverse mode's problem; first
order forward mode always gave 0 there, and those cells guard that it still does.
Downstream (sqrt(where(x > 0, x, 0))) was forward mode's: a zero tangent times inf.
"""
import gc
import weakref

import numpy as np
import pytest

import vecjac as vj
from vecjac._src.transforms.pfor import structured

POS = (np.array([0.0, 2.0]),)  # the singular point 0, a regular point 2


def _diag(d):
    return lambda x: np.diag(d(x))


def _where_pos(fn):
    """fn(x) where x > 0, exact 0 elsewhere (without evaluating fn at x <= 0)."""
    return lambda x: np.array([fn(v) if v > 0 else 0.0 for v in x])


def _norm(x):
    return vj.reduce_sum(x ** 2)


def _norm_jac(x):
    n = np.sqrt(np.sum(x ** 2))
    return x / n if n > 0 else np.zeros_like(x)


def _norm_hess(x):
    n = np.sqrt(np.sum(x ** 2))
    if n == 0:
        return np.zeros((x.size, x.size))
    return (np.eye(x.size) - np.outer(x, x) / n ** 2) / n


def _cond_sqrt(x):
    return vj.vectorized_map(
        lambda v: vj.cond(v > 0, lambda: vj.sqrt(v), lambda: vj.zeros_like(v)), x)


SQRT_J = _diag(_where_pos(lambda v: 0.5 / np.sqrt(v)))
SQRT_H = _diag(_where_pos(lambda v: -0.25 * v ** -1.5))
LOG_J = _diag(_where_pos(lambda v: 1 / v))
LOG_H = _diag(_where_pos(lambda v: -1 / v ** 2))

# name: (f, points x, J(x), H(x) of sum(f)). Upstream: the singular op is in the untaken
# branch (reverse mode's problem); downstream: it follows the selection (forward mode's).
CASES = {
    "sqrt": (lambda x: vj.where(x > 0, vj.sqrt(x), 0.0), POS, SQRT_J, SQRT_H),
    "log": (lambda x: vj.where(x > 0, vj.log(x), 0.0), POS, LOG_J, LOG_H),
    "x/x": (lambda x: vj.where(x != 0, x / x, 1.0), POS,
            lambda x: np.zeros((2, 2)), lambda x: np.zeros((2, 2))),
    "safe norm": (lambda x: vj.where(_norm(x) > 0, vj.sqrt(_norm(x)), 0.0),
                  (np.zeros(3), np.array([1.0, -2.0, 2.0])), _norm_jac, _norm_hess),
    "np.where": (lambda x: np.where(x > 0, np.sqrt(x), 0.0), POS, SQRT_J, SQRT_H),
    "maximum": (lambda x: vj.maximum(vj.log(x), -1.0), POS, LOG_J, LOG_H),
    "clip_by_value": (lambda x: vj.clip_by_value(vj.log(x), -1.0, 1.0), POS, LOG_J, LOG_H),
    "np.clip": (lambda x: np.clip(np.log(x), -1.0, 1.0), POS, LOG_J, LOG_H),
    "vj.cond in vectorized_map": (_cond_sqrt, POS, SQRT_J, SQRT_H),
    "downstream sqrt": (lambda x: vj.sqrt(vj.where(x > 0, x, 0.0)), POS, SQRT_J, SQRT_H),
    "downstream sqrt of maximum": (lambda x: vj.sqrt(vj.maximum(x, 0.0)),
                                   (np.array([-1.0, 2.0]),), SQRT_J, SQRT_H),
}


def _total(f):
    return lambda x: vj.reduce_sum(f(x))


def _tape_gradient(f, x):
    x = vj.constant(x)
    with vj.GradientTape() as tape:
        tape.watch(x)
        y = vj.reduce_sum(f(x))
    return tape.gradient(y, x)


def _accumulator(f, x):
    x = vj.constant(x)
    with vj.autodiff.ForwardAccumulator(x, vj.ones_like(x)) as acc:
        y = f(x)
    return acc.jvp(y)


def _forward_over_tape(f, x):
    x = vj.constant(x)
    with vj.autodiff.ForwardAccumulator(x, vj.ones_like(x)) as acc:
        with vj.GradientTape() as tape:
            tape.watch(x)
            y = vj.reduce_sum(f(x))
        g = tape.gradient(y, x)
    return acc.jvp(g)


def _replayed(transform):
    """transform(f) under vj.function, traced at another point, replayed at x."""
    def mode(f, x):
        fn = vj.function(transform(f))
        fn(x + 3.0)
        fn(x + 1.0)
        return fn(x)
    return mode


def _per_example_gradients(f, x):
    rows = vj.vectorized_map(lambda v: vj.grad(_total(f))(v), vj.constant(np.stack([x, x])))
    return rows[1]


# mode: (what it computes from J and H, how)
MODES = {
    "GradientTape.gradient": ("grad", _tape_gradient),
    "vj.grad": ("grad", lambda f, x: vj.grad(_total(f))(x)),
    "ForwardAccumulator": ("jvp", _accumulator),
    "vj.jvp": ("jvp", lambda f, x: vj.jvp(f, (x,), (np.ones_like(x),))[1]),
    "vj.jacfwd": ("jac", lambda f, x: vj.jacfwd(f)(x)),
    "vj.jacrev": ("jac", lambda f, x: vj.jacrev(f)(x)),
    "vj.jacobian": ("jac", lambda f, x: vj.jacobian(f)(x)),
    "vj.hessian (reverse over reverse)": ("hess", lambda f, x: vj.hessian(_total(f))(x)),
    "jacfwd of grad (forward over reverse)": (
        "hess", lambda f, x: vj.jacfwd(vj.grad(_total(f)))(x)),
    "accumulator over tape (forward over reverse)": ("hvp", _forward_over_tape),
    "vj.hvp (reverse over forward)": ("hvp", lambda f, x: vj.hvp(_total(f), x,
                                                                  np.ones_like(x))),
    "vj.function(vj.grad)": ("grad", _replayed(lambda f: vj.grad(_total(f)))),
    "vj.function(vj.jacrev)": ("jac", _replayed(vj.jacrev)),
    "vj.function(vj.jacfwd)": ("jac", _replayed(vj.jacfwd)),
    "vj.function(vj.hessian)": ("hess", _replayed(lambda f: vj.hessian(_total(f)))),
    "per-example gradients (pfor)": ("grad", _per_example_gradients),
}


def expected(what, jac, hess, x):
    j, h = jac(x), hess(x)
    ones = np.ones_like(x)
    if what == "grad":  # 1^T J: J's output axes summed
        return j.reshape(-1, x.size).sum(axis=0).reshape(x.shape)
    if what == "jvp":
        return j.reshape(-1, x.size) @ ones.ravel() if j.ndim > 1 else j @ ones
    if what == "jac":
        return j
    return h if what == "hess" else h @ ones


def _assert_exact_where_zero(got, want):
    got = np.asarray(got)
    assert got.shape == want.shape
    # atol 0: exactly 0 where the closed form is 0 (a NaN or -0 mismatch aside: +-0 equal)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=0)


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("case", list(CASES))
def test_no_nan_the_mathematics_does_not_have(case, mode):
    f, points, jac, hess = CASES[case]
    what, run = MODES[mode]
    for x in points:
        with np.errstate(all="ignore"):  # the untaken branches compute sqrt(-1), log(0) ...
            got = run(f, x)
        _assert_exact_where_zero(got, expected(what, jac, hess, x))


def test_structured_jacobian_seeds(monkeypatch):
    """Large Jacobians keep their one-hot seeds structured; the zeros are exact there
    too (forced here at a small size)."""
    monkeypatch.setattr(structured, "MIN_DENSE_SIZE", 0)
    monkeypatch.setattr(structured, "ENABLED", True)
    f, x, jac, _ = CASES["sqrt"]
    x = np.array([0.0, 2.0, 0.0, 4.0, -1.0])
    with np.errstate(all="ignore"):
        for mode in (vj.jacrev, vj.jacfwd):
            _assert_exact_where_zero(mode(f)(x), jac(x))


def test_a_broadcast_input_sums_only_its_unmasked_copies():
    """d/ds sum(where(x > 0, s / x, 0)) for a scalar s: x = 0's term is 0 / 0 in the
    rule's sum over the copies of s, and must not reach it."""
    x = vj.constant(np.array([0.0, 2.0, 4.0]))

    def f(s):
        return vj.reduce_sum(vj.where(x > 0, s / x, 0.0))
    with np.errstate(all="ignore"):
        for mode in (vj.grad, vj.jacrev, vj.jacfwd):
            assert float(mode(f)(3.0)) == 0.75


SELECTED = {  # the singular op in the branch that is taken: its inf / NaN is real
    "where": lambda x: vj.where(x >= 0, vj.sqrt(x), 0.0),
    "maximum": lambda x: vj.sqrt(vj.maximum(x, 0.0)),  # ties go to x
    "plain sqrt": vj.sqrt,
}


@pytest.mark.parametrize("case", list(SELECTED))
def test_a_singularity_of_the_selected_branch_stays(case):
    f = SELECTED[case]
    with np.errstate(all="ignore"):
        assert float(vj.grad(f)(0.0)) == np.inf
        assert float(vj.jvp(f, (0.0,), (1.0,))[1]) == np.inf
        assert float(vj.jacrev(f)(0.0)) == np.inf
        assert float(vj.jacfwd(f)(0.0)) == np.inf
        assert not np.isfinite(float(vj.hessian(f)(0.0)))


def test_a_zero_the_caller_passes_is_no_structural_zero():
    """A gradient computed through a where, used as output_gradients of another tape:
    its zeros are values, and 0 * inf stays NaN there (masks stay in their pass)."""
    x = vj.constant(np.array([0.0, 2.0]))
    z = vj.constant(np.array([0.0, 1.0]))
    with np.errstate(all="ignore"):
        g = vj.grad(_total(CASES["sqrt"][0]))(x)  # [0, 0.35]: the 0 from the where
        with vj.GradientTape() as tape:
            tape.watch(z)
            y = vj.sqrt(z)
        out = tape.gradient(y, z, output_gradients=g).numpy()
    assert np.isnan(out[0]) and out[1] == float(g[1]) * 0.5


def test_a_long_chain_of_selections():
    """Masks made of masks, thousands deep: no recursion limit, still exact."""
    x = vj.constant(np.array([0.0, 4.0]))
    with vj.GradientTape() as tape:
        tape.watch(x)
        y = vj.sqrt(x)
        for k in range(2000):
            y = vj.maximum(y + 0.0, -1.0 - k)
        y = vj.where(x > 0, y, 0.0)
    with np.errstate(all="ignore"):
        assert tape.gradient(y, x).numpy().tolist() == [0.0, 0.25]


def test_an_accumulator_lets_masked_values_die():
    """A tangent's mask goes with it: it keeps no value alive (masks read inputs only)."""
    x = vj.constant(np.array([0.0, 4.0]))
    with np.errstate(all="ignore"), vj.autodiff.ForwardAccumulator(x, vj.ones_like(x)) as acc:
        y = vj.sqrt(vj.where(x > 0, x, 0.0))
        assert acc.jvp(y).numpy().tolist() == [0.0, 0.25]
        ref = weakref.ref(y)
        del y
        gc.collect()
        assert ref() is None


def _backward_ops(f, x):
    """The ops of the backward pass of sum(f) at x, as a tape outside records them."""
    x = vj.constant(x)
    with vj.GradientTape(persistent=True) as outer:
        outer.watch(x)
        with vj.GradientTape() as inner:
            inner.watch(x)
            y = vj.reduce_sum(f(x))
        n = outer.entry_count
        g = inner.gradient(y, x)
    return [e.op.name for e in outer.recorded()[n:]], g


def test_code_without_a_selection_runs_the_same_ops():
    """No mask, no extra op: the backward pass of where-free code is its rules' ops."""
    x = np.array([0.5, 2.0])
    ops, g = _backward_ops(lambda x: vj.sqrt(x) * x, x)
    # Mul's two sides, sqrt's g * (0.5 / y), the sum of x's two cotangents
    assert ops == ["Mul", "Mul", "RealDiv", "Mul", "AddV2"]
    y = np.sqrt(x)
    np.testing.assert_array_equal(g.numpy(), 1.0 * y + (1.0 * x) * (0.5 / y))


def test_a_selection_fixes_only_what_it_masks():
    """With a where, the fix is one select per element-wise rule the masked cotangent
    reaches, and its values are the rule's where nothing is masked."""
    x = np.array([0.5, 2.0])
    ops, g = _backward_ops(lambda x: vj.where(x > 1.0, vj.sqrt(x), 0.0), x)
    # sqrt's rule g * (0.5 / y), then the fix (Select's own rule is on constants only)
    assert ops == ["RealDiv", "Mul", "SelectV2"]
    assert g.numpy().tolist() == [0.0, 1.0 * (0.5 / np.sqrt(2.0))]
