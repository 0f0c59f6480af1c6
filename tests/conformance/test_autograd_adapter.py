"""How the autograd-derived conformance cases run, and checks that this machinery can fail.

The cases themselves live in tests/conformance/test_autograd_cases.py (which says where
they come from) and its sibling modules. They are written as plain NumPy/SciPy code:

- NumPy functions called on `vj.Tensor`s reach vecjac through NumPy's dispatch
  (`__array_ufunc__` / `__array_function__`); the cases call `np.*` directly.
- autograd lets a Python list of traced values stand for one array (`np.mean([x, x + 2])`).
  vecjac, by design, turns `np.array(list_of_tensors)` into a constant, so the cases wrap
  such lists in `pack`, which stacks them with a differentiable `np.stack`. Functions that
  take a sequence of arrays themselves (concatenate, stack, einsum, select, ...) get the
  list unchanged: NumPy's dispatch looks inside it.
- SciPy: the `scipy.special` ufuncs are called as SciPy's own objects (they dispatch like
  NumPy's ufuncs); every other SciPy function comes from `vj.scipy` (`special_function`
  picks between the two by name).

A `DerivativeCase` is a function and a grid of inputs: every combination of the choices
given for each positional and keyword argument is one point. At each point the
derivatives of every order up to `order` (JVPs in "fwd" mode, VJPs in "rev" mode) are
compared with central differences by `vj.testing.check_grads`. Only the arguments named
by `wrt` (the first one by default) are differentiated; a list or tuple argument in `wrt`
stands for its elements, each of them differentiated.
"""
import dataclasses
import itertools

import numpy as np
import pytest
import scipy.special

import vecjac as vj

BOTH_MODES = ("fwd", "rev")


# --------------------------------------------------------------------------------------
# inputs
# --------------------------------------------------------------------------------------
class Draws:
    """Random inputs from one seeded generator (the cases depend only on shapes and
    ranges, not on particular numbers). A call without a shape gives a Python float."""

    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)

    def normal(self, *shape):
        value = self.rng.standard_normal(shape)
        return float(value) if not shape else value

    def uniform(self, low=0.0, high=1.0, *shape):
        value = self.rng.uniform(low, high, shape)
        return float(value) if not shape else value

    def positive(self, *shape, above=1.1):
        """A squared normal draw shifted away from zero: shape parameters, scales."""
        return self.normal(*shape) ** 2 + above

    def integer(self, low, high):
        return int(self.rng.integers(low, high))


def scaled_into(domain, unit):
    """Map draws in [0, 1) onto the interval `domain` (endpoints may come in any order)."""
    low, high = domain
    return unit * (high - low) + low


def standard_shapes(draws, domain=(-2.0, 2.0)):
    """One input of each shape the elementwise cases use -- a scalar, (2,), (3, 2) and
    (1, 2) -- all inside `domain`."""
    units = [0.4, draws.uniform(0, 1, 2), draws.uniform(0, 1, 3, 2), draws.uniform(0, 1, 1, 2)]
    return [scaled_into(domain, u) for u in units]


def broadcasting_pairs(draws, domain_a=(-2.0, 2.0), domain_b=(-2.0, 2.0), shared=True):
    """Choices for both operands of a binary elementwise function, in the four standard
    shapes (every pairing broadcasts). `shared=True` derives both operands from the same
    draws (each mapped into its own domain); functions that are discontinuous where the
    operands coincide (mod, remainder) get independent draws instead."""
    first = [0.6, draws.uniform(0, 1, 2), draws.uniform(0, 1, 3, 2), draws.uniform(0, 1, 1, 2)]
    second = first if shared else [0.7, draws.uniform(0, 1, 2), draws.uniform(0, 1, 3, 2),
                                   draws.uniform(0, 1, 1, 2)]
    return ([scaled_into(domain_a, u) for u in first],
            [scaled_into(domain_b, u) for u in second])


def pack(items):
    """What autograd's `np.array(items)` gives when items hold traced values: one
    differentiable array -- a (nested) list or tuple of Tensors stacked, a lone Tensor
    copied.

    autograd treats such a list as an array wherever NumPy expects one; in vecjac,
    `np.array` of Tensors deliberately gives a constant, so the cases say `pack`."""
    if isinstance(items, vj.Tensor):
        return np.copy(items)
    if isinstance(items, (list, tuple)) and any(_holds_tensor(e) for e in items):
        return np.stack([pack(e) for e in items])
    return items


def _holds_tensor(x):
    if isinstance(x, (list, tuple)):
        return any(_holds_tensor(e) for e in x)
    return isinstance(x, vj.Tensor)


def special_function(name):
    """`scipy.special.<name>` as the cases call it: SciPy's own ufunc (reaching vecjac
    through NumPy's ufunc dispatch), else vecjac's version in vj.scipy.special."""
    sci = getattr(scipy.special, name)
    return sci if isinstance(sci, np.ufunc) else getattr(vj.scipy.special, name)


def to_numpy(x):
    """A vecjac result (a Tensor or a tuple/list of them) as NumPy arrays."""
    if isinstance(x, (list, tuple)):
        return type(x)(to_numpy(e) for e in x)
    return np.asarray(x)


def scalar_grad(f, wrt=0):
    """vj.grad of an f whose output has exactly one element but maybe not shape ():
    autograd's grad accepts any such output, vj.grad (like jax.grad) wants a scalar."""
    def reshaped(*args):
        y = f(*args)
        return np.reshape(y, ()) if np.ndim(y) and np.size(y) == 1 else y
    return vj.grad(reshaped, argnums=wrt)


# --------------------------------------------------------------------------------------
# derivative checks
# --------------------------------------------------------------------------------------
def check_derivatives(f, args, kwargs=None, wrt=0, order=2, modes=BOTH_MODES):
    """Derivatives of f(*args, **kwargs) in the arguments `wrt`, up to `order`, against
    central differences (vj.testing.check_grads); the other arguments stay fixed."""
    kwargs = kwargs or {}
    positions = (wrt,) if isinstance(wrt, int) else tuple(wrt)
    variables, layout = [], []  # layout: (position, container type or None, length)
    for k in positions:
        if isinstance(args[k], (list, tuple)):
            layout.append((k, type(args[k]), len(args[k])))
            variables += [np.array(e, dtype=float) for e in args[k]]
        else:
            layout.append((k, None, 1))
            variables.append(np.array(args[k], dtype=float))

    def of_variables(*tensors):
        full, rest = list(args), iter(tensors)
        for k, container, length in layout:
            full[k] = next(rest) if container is None else \
                container(next(rest) for _ in range(length))
        return f(*full, **kwargs)

    vj.testing.check_grads(of_variables, variables, order=order, modes=tuple(modes))


def _describe(args, kwargs):
    def short(a):
        if isinstance(a, (list, tuple)):
            return "[" + ", ".join(short(e) for e in a) + "]"
        return f"array{a.shape}" if isinstance(a, np.ndarray) else repr(a)
    return "(" + ", ".join([short(a) for a in args] +
                           [f"{k}={v!r}" for k, v in kwargs.items()]) + ")"


@dataclasses.dataclass(frozen=True)
class DerivativeCase:
    """f checked at every combination of `arg_choices` (one list per positional
    argument) and `kwarg_choices` (one list per keyword)."""
    f: object
    arg_choices: tuple
    kwarg_choices: dict
    wrt: object = 0
    order: int = 2
    modes: tuple = BOTH_MODES

    def points(self):
        names = list(self.kwarg_choices)
        for args in itertools.product(*self.arg_choices):
            for values in itertools.product(*(self.kwarg_choices[n] for n in names)):
                yield args, dict(zip(names, values))

    def assert_derivatives(self):
        checked = 0
        for args, kwargs in self.points():
            try:
                check_derivatives(self.f, args, kwargs, self.wrt, self.order, self.modes)
            except Exception as error:
                error.add_note(f"at {_describe(args, kwargs)}")
                raise
            checked += 1
        assert checked, "a grid with an empty list of choices checks nothing"


def point(f, *args, wrt=0, order=2, modes=BOTH_MODES, **kwargs):
    """One input: f(*args, **kwargs)."""
    return DerivativeCase(f, tuple([a] for a in args), {k: [v] for k, v in kwargs.items()},
                          wrt, order, modes)


def grid(f, *arg_choices, wrt=0, order=2, modes=BOTH_MODES, **kwarg_choices):
    """Every combination of the given choices (lists) of each argument."""
    return DerivativeCase(f, tuple(arg_choices), kwarg_choices, wrt, order, modes)


def table(rows):
    """pytest parameters from rows `(id, case or list of cases, *marks)`; ids are unique."""
    params, seen = [], set()
    for row_id, cases, *marks in rows:
        assert row_id not in seen, f"duplicate case id {row_id}"
        seen.add(row_id)
        cases = tuple(cases) if isinstance(cases, (list, tuple)) else (cases,)
        params.append(pytest.param(cases, id=row_id, marks=marks))
    return params


def check_all(cases):
    for case in cases:
        case.assert_derivatives()


def no_vecjac_op(what):
    """The case differentiates a function vecjac has no op for: its transforms refuse
    the call with a TypeError (by design, rather than a silently wrong zero)."""
    return pytest.mark.xfail(strict=True, raises=TypeError, reason=f"missing: {what}")


# --------------------------------------------------------------------------------------
# the machinery itself: it must be able to fail, and it must visit what it claims to
# --------------------------------------------------------------------------------------
@vj.custom_gradient
def _sine_with_doubled_gradient(x):
    return np.sin(x), lambda dy: 2.0 * dy * np.cos(x)


@pytest.mark.parametrize("wrt", [0, 1], ids=["first", "second"])
def test_check_derivatives_rejects_a_wrong_gradient(wrt):
    f = lambda a, b: _sine_with_doubled_gradient(a) * _sine_with_doubled_gradient(b)
    with pytest.raises(AssertionError):
        check_derivatives(f, [0.3, 0.8], wrt=wrt, order=1, modes=("rev",))


def test_check_derivatives_differentiates_only_the_requested_argument():
    # the second factor would fail the check; it is held fixed, so the check passes
    f = lambda a, b: np.sin(a) * _sine_with_doubled_gradient(b)
    check_derivatives(f, [0.3, 0.8], wrt=0, order=1, modes=("rev",))
    with pytest.raises(AssertionError):
        check_derivatives(f, [0.3, 0.8], wrt=1, order=1, modes=("rev",))


def test_a_list_argument_stands_for_its_differentiated_elements():
    received = []

    def f(items, scale):
        received.append(type(items))
        return scale * (items[0] * np.sin(items[1]))

    check_derivatives(f, [(0.5, np.array([0.1, 0.2])), 3.0], order=1, modes=("rev",))
    assert received and all(t is tuple for t in received)
    with pytest.raises(AssertionError):
        check_derivatives(lambda items: items[0] * _sine_with_doubled_gradient(items[1]),
                          [[0.5, 0.25]], order=1, modes=("rev",))


def test_a_grid_visits_every_combination_of_choices():
    seen = []

    def f(x, y, axis=None):
        seen.append((np.shape(x), np.shape(y), axis))
        return np.sum(x * y, axis=axis)

    case = grid(f, [np.ones(2), np.ones((3, 2))], [np.ones(2)], axis=[None, -1], order=1,
                modes=("rev",))
    assert len(list(case.points())) == 4
    case.assert_derivatives()
    assert set(seen) == {((2,), (2,), None), ((2,), (2,), -1),
                                 ((3, 2), (2,), None), ((3, 2), (2,), -1)}


def test_an_empty_grid_is_an_error_not_a_pass():
    with pytest.raises(AssertionError, match="checks nothing"):
        grid(np.sin, []).assert_derivatives()


def test_a_failing_grid_point_is_named_in_the_error():
    case = grid(lambda x: _sine_with_doubled_gradient(x), [0.3], order=1, modes=("rev",))
    with pytest.raises(AssertionError) as info:
        case.assert_derivatives()
    assert any("at (0.3)" in note for note in info.value.__notes__)


def test_pack_makes_a_list_of_tensors_one_differentiable_array():
    # d/dx sum([x, 2x, x**2]) = 1 + 2 + 2x
    g = vj.grad(lambda x: np.sum(pack([x, 2.0 * x, x ** 2])))(1.5)
    assert float(g) == pytest.approx(6.0)
    assert pack([1.0, 2.0]) == [1.0, 2.0]  # nothing to stack: left alone


def test_special_function_keeps_scipy_ufuncs_and_takes_the_rest_from_vecjac():
    assert special_function("erf") is scipy.special.erf
    assert special_function("logsumexp") is vj.scipy.special.logsumexp


def test_scalar_grad_accepts_a_one_element_output():
    g = scalar_grad(lambda x: np.sum(x ** 3, keepdims=True))(np.array([1.0, 2.0]))
    np.testing.assert_allclose(to_numpy(g), [3.0, 12.0])
