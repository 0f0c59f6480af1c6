"""Registry-driven property tests: every registered op, through its Sample specs.

Each op block declares `samples = (Sample(...), ...)` (vecjac/_src/core/registry.py): the public
function to call and the kind of each tensor argument. For every (op, sample), with
values, seeds and named dims drawn by hypothesis:
- gradients and JVPs: check_grads to order 2 (float64) against finite differences, in
  reverse mode and in forward mode; the JVP agrees with the VJP (<u, J t> = <J^T u, t>);
- float32: float32 in gives float32 values (close to the float64 ones), gradients,
  jacobians and second derivatives, with no float64 op anywhere in between; the
  sample really runs the op;
- pfor: the vectorized loop equals the plain loop for every stacked/invariant
  combination of the tensor arguments, for the values, for gradients taken inside
  the loop (per-example gradients) and for JVPs along loop-variant tangents (jacfwd),
  with no while-loop fallback;
- jacobian: tape.jacobian (chunked by parallel_iterations or not), the jacobian of the
  gradient (Hessian) and, for small ops, the jacobian of the jacobian (nested pfor)
  equal central differences (numerical_jacobian).
A new op is covered as soon as it is registered; one without samples (or `covered_by`)
fails test_every_op_has_samples. Hypothesis profiles: tests/conftest.py.
"""
import importlib
import itertools
import pkgutil
import sys

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import vecjac as vj
from vecjac._src.core.registry import REGISTRY
from vecjac._src.core.samples import Arg, Sample
from vecjac._src.core.tensor import BorrowedTensor
from vecjac.testing import check_grads, check_pfor, numerical_jacobian


def _import_all_modules():
    """Ops registered by modules that `import vecjac` does not load are covered too."""
    for info in pkgutil.walk_packages(vj.__path__, "vecjac."):
        if info.name != "vecjac.__main__":
            try:
                importlib.import_module(info.name)
            except ImportError:  # an optional dependency (scipy, tqdm ...) is missing
                pass


_import_all_modules()


def _ours(op):
    """Ops of vecjac's own modules (not the ones tests or users make with vj.defop)."""
    return type(op).__module__.startswith("vecjac.")


OPS = {name: op for name, op in sorted(REGISTRY.items()) if _ours(op)}
CASES = [pytest.param(name, k, id=f"{name}-{k}")
         for name, op in OPS.items() for k in range(len(op.samples))]


def _complex_variant(sample):
    if sample.no_complex:
        return None
    """The sample with every differentiable float argument drawn complex (x + iy, both
    parts in the argument's range): how ops with complex rules are checked in complex128
    (and complex64 where the float32 test runs)."""
    def convert(v):
        if isinstance(v, Arg) and v.as_complex() is not None:
            return v.as_complex()
        if isinstance(v, list):
            return [convert(x) for x in v]
        if isinstance(v, tuple):
            return tuple(convert(x) for x in v)
        return v
    args = [convert(a) for a in sample.args]
    kwargs = {k: convert(v) for k, v in sample.kwargs.items()}
    if all(not (isinstance(a, Arg) and a.kind in ("complex", "csquare", "hpd"))
           for a in _flat_args(args, kwargs)):
        return None
    return Sample(sample.fn, *args, no_grad=sample.no_grad, no_pfor=sample.no_pfor,
                  no_f32=sample.no_f32, grad_order=sample.grad_order, tol=sample.tol,
                  dim_range=sample.dim_range, **kwargs)


def _flat_args(args, kwargs):
    out = []

    def visit(v):
        if isinstance(v, (list, tuple)):
            for x in v:
                visit(x)
        else:
            out.append(v)
    visit(list(args) + list(kwargs.values()))
    return out


# ops with complex rules: each float sample again with complex arguments ("<op>-c<k>")
COMPLEX_SAMPLES = {}
for _name, _op in OPS.items():
    if _op.complex_rules:
        for _k, _s in enumerate(_op.samples):
            _v = _complex_variant(_s)
            if _v is not None:
                COMPLEX_SAMPLES[(_name, f"c{_k}")] = _v
CASES += [pytest.param(name, k, id=f"{name}-{k}") for name, k in COMPLEX_SAMPLES]


# -- binding a sample --------------------------------------------------------------------
def _leaves(sample):
    """The Args of a sample in call order (positional, then keyword; lists flattened)."""
    out = []

    def visit(v):
        if isinstance(v, Arg):
            out.append(v)
        elif isinstance(v, (list, tuple)):
            for x in v:
                visit(x)
    for a in sample.args:
        visit(a)
    for v in sample.kwargs.values():
        visit(v)
    return out


def _function(op, sample):
    """A name is looked up in the op's module, then in vj (dotted: "linalg.solve")."""
    if not isinstance(sample.fn, str):
        return sample.fn
    fn = getattr(sys.modules[type(op).__module__], sample.fn, None)
    if fn is None:
        fn = vj
        for part in sample.fn.split("."):
            fn = getattr(fn, part, None)
    assert callable(fn), (f"{op.name}: sample function {sample.fn!r} is neither in "
                          f"{type(op).__module__} nor in vj")
    return fn


def _caller(op, sample):
    """f(*leaf_tensors) -> the public function's result."""
    fn = _function(op, sample)

    def rebuild(v, it):
        if isinstance(v, Arg):
            return next(it)
        if isinstance(v, list):
            return [rebuild(x, it) for x in v]
        if isinstance(v, tuple):
            return tuple(rebuild(x, it) for x in v)
        return v

    def call(*tensors):
        it = iter(tensors)
        args = [rebuild(a, it) for a in sample.args]
        kwargs = {k: rebuild(v, it) for k, v in sample.kwargs.items()}
        return fn(*args, **kwargs)
    return call


def seed_of(k):
    """A seed for case k: the sample's index, or 1000 + it for a complex variant "c<k>"."""
    return k if isinstance(k, int) else 1000 + int(k[1:])


def _case(name, k):
    op = OPS[name]
    sample = COMPLEX_SAMPLES[name, k] if isinstance(k, str) else op.samples[k]
    leaves = _leaves(sample)
    diff = [j for j, a in enumerate(leaves) if a.floating and a.diff]
    differentiable = (op.differentiable and op.has_gradient and not sample.no_grad
                      and bool(diff))
    return op, sample, leaves, diff, differentiable


def _draw(data, sample, leaves):
    """Named dims and a NumPy generator, drawn by hypothesis."""
    names = sorted({d for a in leaves for d in a.shape + (a.hi,) if isinstance(d, str)})
    lo, hi = sample.dim_range
    bounds = {a.hi for a in leaves}  # an int argument's bound: at least 1
    dims = {n: data.draw(st.integers(max(lo, 1) if n in bounds else lo, hi), label=f"dim {n}")
            for n in names}
    seed = data.draw(st.integers(0, 2 ** 32 - 1), label="seed")
    return dims, np.random.default_rng(seed)


def _values(leaves, dims, rng, dtype=np.float64):
    return [a.value(rng, dims, dtype) for a in leaves]


def _outputs(out):
    return [o for o in vj.nest.flatten(out) if o is not None]


def _partial(call, values, diff):
    """f(*diff_tensors) with the other leaves fixed to `values`."""
    def f(*xs):
        args = [vj.constant(v) for v in values]
        for j, x in zip(diff, xs):
            args[j] = x
        return call(*args)
    return f


def _weighted_loss(outs, weights):
    """Re<u, o> summed over the outputs (real weights u: sum(u * Re o) for complex o)."""
    total = None
    for o, u in zip(outs, weights):
        if o.dtype.kind == "c":
            term = vj.reduce_sum(vj.math.real(o * vj.constant(np.conj(u).astype(o.dtype))))
        else:
            term = vj.reduce_sum(o * vj.constant(u.astype(o.dtype)))
        total = term if total is None else total + term
    return total


def _float_outputs(outs):
    """The outputs with derivatives: floating or complex."""
    return [o for o in outs if o.dtype.kind in "fc"]


def _pairing(a, b):
    """Re<a, b> = Re(sum(conj(a) * b)), the real inner product (complex_parts.py)."""
    return float(np.real(np.vdot(np.asarray(a), np.asarray(b))))


# -- the checks --------------------------------------------------------------------------
@pytest.mark.parametrize("name,k", CASES)
@given(data=st.data())
def test_gradients_match_finite_differences(name, k, data):
    op, sample, leaves, diff, differentiable = _case(name, k)
    if not differentiable:
        pytest.skip(f"{name}: not differentiable ({sample.no_grad or 'op flag'})")
    dims, rng = _draw(data, sample, leaves)
    values = _values(leaves, dims, rng)
    f = _partial(_caller(op, sample), values, diff)
    check_grads(f, [values[j] for j in diff], order=sample.grad_order, modes=("fwd", "rev"),
                seed=int(rng.integers(2 ** 31)), **sample.tol)


def _differentiable_case(name, k, data):
    """(f of the differentiable leaves, those leaves as Tensors, rng) for a sample drawn
    by hypothesis; skips ops and samples that are not differentiable."""
    op, sample, leaves, diff, differentiable = _case(name, k)
    if not differentiable:
        pytest.skip(f"{name}: not differentiable ({sample.no_grad or 'op flag'})")
    dims, rng = _draw(data, sample, leaves)
    values = _values(leaves, dims, rng)
    f = _partial(_caller(op, sample), values, diff)
    return f, [vj.constant(values[j]) for j in diff], rng


@pytest.mark.parametrize("name,k", CASES)
@given(data=st.data())
def test_jvp_agrees_with_vjp(name, k, data):
    """<u, J t> from the op's forward rule equals <J^T u, t> from its gradient, for random
    t and u: the JVP and the VJP are transposes of one linear map (float64, tight)."""
    f, xs, rng = _differentiable_case(name, k, data)
    ts = [rng.standard_normal(x.shape) + (1j * rng.standard_normal(x.shape)
                                           if x.dtype.kind == "c" else 0) for x in xs]
    with vj.autodiff.ForwardAccumulator(xs, [vj.constant(t) for t in ts]) as acc:
        with vj.GradientTape() as tape:
            tape.watch(xs)
            floats = _float_outputs(_outputs(f(*xs)))
            weights = [rng.standard_normal(o.shape) for o in floats]
            loss = _weighted_loss(floats, weights)
    jvps = [acc.jvp(o, unconnected_gradients="zero") for o in floats]
    for o, t in zip(floats, jvps):
        assert t.shape == o.shape and t.dtype == o.dtype, \
            f"{name}: JVP of shape {t.shape} {t.dtype} for an output {o.shape} {o.dtype}"
    forward = sum(_pairing(u, t.numpy()) for t, u in zip(jvps, weights))
    grads = tape.gradient(loss, xs, unconnected_gradients="zero")
    reverse = sum(_pairing(g.numpy(), t) for g, t in zip(grads, ts))
    tol = 1e-5 if any(o.dtype in (np.float32, np.complex64) for o in floats) else 1e-9
    assert abs(forward - reverse) <= tol * max(1.0, abs(forward), abs(reverse)), \
        f"{name}: <u, J t> = {forward!r} (JVP) but <J^T u, t> = {reverse!r} (VJP)"


@pytest.mark.parametrize("name,k", CASES)
@given(data=st.data())
def test_values_under_an_accumulator_are_the_plain_calls(name, k, data):
    """An accumulator that nothing else observes computes values its own way (forwards
    run directly, sin with cos in one pass): the outputs must be the plain call's, as
    arrays (0-d inputs too) that .numpy() returns."""
    f, xs, rng = _differentiable_case(name, k, data)
    plain = _outputs(f(*xs))
    with vj.autodiff.ForwardAccumulator(xs, [vj.constant(rng.standard_normal(x.shape))
                                             for x in xs]):
        followed = _outputs(f(*xs))
    assert len(followed) == len(plain)
    for a, b in zip(plain, followed):
        assert (b.shape, b.dtype) == (a.shape, a.dtype), name
        np.testing.assert_array_equal(b.numpy(), a.numpy(), err_msg=name)


@pytest.mark.parametrize("name,k", CASES)
@given(data=st.data())
def test_float32_in_float32_out(name, k, data):
    op, sample, leaves, diff, differentiable = _case(name, k)
    dims, rng = _draw(data, sample, leaves)
    values = _values(leaves, dims, rng, np.float32)
    call = _caller(op, sample)
    calls = []
    forward = op.forward

    def counting(*a, **kw):
        calls.append(1)
        return forward(*a, **kw)
    op.forward = counting  # instance attribute: apply() finds it first
    try:
        ref = _outputs(call(*[vj.constant(v.astype(_WIDE[v.dtype]) if v.dtype in _WIDE
                                          else v) for v in values]))
    finally:
        del op.forward
    assert calls, f"{name}: sample {sample!r} does not run the op {name}"
    for o in ref:
        assert np.all(np.isfinite(o.numpy())) or o.dtype.kind not in "fc", \
            f"{name}: sample {sample!r} gives non-finite values (fix its domain)"
    if sample.no_f32:
        return
    tensors = [vj.constant(v) for v in values]
    with vj.GradientTape(persistent=True) as outer:
        outer.watch([tensors[j] for j in diff])
        with vj.GradientTape() as tape:
            tape.watch([tensors[j] for j in diff])
            outs = _outputs(call(*tensors))
            floats = _float_outputs(outs)
            weights = [rng.standard_normal(o.shape).astype(np.float32) for o in floats]
            loss = _weighted_loss(floats, weights) if floats else None
        for o, r in zip(outs, ref):
            # the rule binds when some input is floating (int -> float64 is NumPy's)
            widened = r.dtype in _NARROW and any(a.floating for a in leaves)
            expected = _NARROW[r.dtype] if widened else r.dtype
            assert o.dtype == expected, (f"{name}: float32 inputs give a {o.dtype} output "
                                         f"(float64 inputs: {r.dtype})")
            scale = max(1.0, float(np.max(np.abs(r.numpy()), initial=0)))
            np.testing.assert_allclose(o.numpy(), r.numpy(), rtol=2e-4, atol=2e-4 * scale,
                                       err_msg=f"{name}: float32 value far from float64")
        if not differentiable:
            return
        grads = tape.gradient(loss, [tensors[j] for j in diff])
        present = [g for g in grads if g is not None]
        assert present, f"{name}: no gradient reaches any input"
        for j, g in zip(diff, grads):
            if g is not None:
                assert g.dtype == tensors[j].dtype, \
                    f"{name}: gradient of argument {j} is {g.dtype}"
        jac = outer.jacobian(floats[0], tensors[diff[0]])
        assert jac is None or jac.dtype in _NARROW.values(), \
            f"{name}: float32 jacobian is {jac.dtype}"
        _assert_float32_jvps(name, call, tensors, diff, rng)
        if sample.grad_order < 2:
            return
        second = _weighted_loss(present, [rng.standard_normal(g.shape) for g in present])
    # the tape casts every cotangent to its input's dtype: look for float64 work inside
    leaks = sorted({e.op.name for e in outer.recorded()
                    if any(o.dtype in _NARROW for o in e.outputs)})
    assert not leaks, f"{name}: float32 inputs, but ops {leaks} compute in float64"
    for j, h in zip(diff, outer.gradient(second, [tensors[j] for j in diff])):
        if h is not None:
            assert h.dtype == tensors[j].dtype, (f"{name}: second derivative w.r.t. argument "
                                                 f"{j} is {h.dtype}")


# float32 runs of float64 samples, complex64 of complex128 ones
_NARROW = {np.dtype(np.float64): np.dtype(np.float32),
           np.dtype(np.complex128): np.dtype(np.complex64)}
_WIDE = {v: k for k, v in _NARROW.items()}


def _assert_float32_jvps(name, call, tensors, diff, rng):
    """Forward mode keeps float32: tangents of every output, and no float64 op inside."""
    sources = [tensors[j] for j in diff]
    tangents = [vj.constant(rng.standard_normal(x.shape).astype(x.dtype)) for x in sources]
    with vj.GradientTape(persistent=True) as watcher:  # sees the JVP computation
        watcher.watch(sources + tangents)
        with vj.autodiff.ForwardAccumulator(sources, tangents) as acc:
            outs = _float_outputs(_outputs(call(*tensors)))
    for m, o in enumerate(outs):
        t = acc.jvp(o)
        assert t is None or t.dtype == o.dtype, f"{name}: JVP of output {m} is {t.dtype}"
    leaks = sorted({e.op.name for e in watcher.recorded()
                    if any(o.dtype in _NARROW for o in e.outputs)})
    assert not leaks, f"{name}: float32 tangents, but ops {leaks} compute in float64"


def _stack_patterns(n):
    """Every stacked/invariant combination of n tensor arguments, at least one stacked."""
    return [p for p in itertools.product((False, True), repeat=n) if any(p)]


@pytest.mark.parametrize("name,k", CASES)
@given(data=st.data())
def test_pfor_matches_loop(name, k, data):
    op, sample, leaves, diff, differentiable = _case(name, k)
    if sample.no_pfor:
        pytest.skip(f"{name}: {sample.no_pfor}")
    dims, rng = _draw(data, sample, leaves)
    iters = data.draw(st.integers(1, 3), label="iters")
    call = _caller(op, sample)
    # a loop-varying value for every argument; a pattern picks the invariant ones
    batches = [np.stack([a.value(rng, dims) for _ in range(iters)]) for a in leaves]
    invariant = [b[0] for b in batches]
    tangent_batches = [rng.standard_normal(b.shape) for b in batches]
    ref = _outputs(call(*[vj.constant(v) for v in invariant]))
    weights = [rng.standard_normal(o.shape) for o in _float_outputs(ref)]
    for pattern in _stack_patterns(len(leaves)):
        def loop_fn(i, pattern=pattern):
            xs = [vj.gather(vj.constant(b), i) if s else vj.constant(v)
                  for b, v, s in zip(batches, invariant, pattern)]
            if not differentiable:
                return call(*xs)
            with vj.GradientTape() as tape:  # inside the loop: per-example gradients
                tape.watch([xs[j] for j in diff])
                out = call(*xs)
                loss = _weighted_loss(_float_outputs(_outputs(out)), weights)
            grads = tape.gradient(loss, [xs[j] for j in diff])
            assert any(g is not None for g in grads), f"{name}: no gradient in the loop"
            # forward mode along a loop-variant tangent (jacfwd's loop body)
            sources = [xs[j] for j in diff]
            tangents = [vj.gather(vj.constant(tangent_batches[j]), i) for j in diff]
            with vj.autodiff.ForwardAccumulator(sources, tangents) as acc:
                outs = _float_outputs(_outputs(call(*xs)))
            return out, grads, [acc.jvp(o, unconnected_gradients="zero") for o in outs]
        try:
            check_pfor(loop_fn, iters, fallback_to_while_loop=False)
        except Exception as exc:
            stacked = [j for j, s in enumerate(pattern) if s]
            raise AssertionError(f"{name}: pfor != loop with arguments {stacked} stacked "
                                 f"(of {leaves}): {exc}") from exc


def _assert_close_to_numerical(actual, numeric, value, sample, what):
    tol = {"rtol": 1e-5, "atol": 1e-6}
    tol.update({key: v for key, v in sample.tol.items() if key in tol})
    expected = numerical_jacobian(numeric, value, eps=sample.tol.get("eps"))
    actual = np.zeros(expected.shape) if actual is None else actual.numpy()
    scale = max(1.0, float(np.max(np.abs(expected), initial=0)))
    np.testing.assert_allclose(actual, expected, rtol=tol["rtol"], atol=tol["atol"] * scale,
                               err_msg=what)


def _check_nested_jacobian(f, m, value, sample, what):
    def jacobian(v):
        t = vj.constant(v)
        with vj.GradientTape() as tape:
            tape.watch(t)
            y = _outputs(f(t))[m]
        jac = tape.jacobian(y, t)
        return jac, y.shape + t.shape
    x = vj.constant(value)
    with vj.GradientTape() as outer:
        outer.watch(x)
        with vj.GradientTape() as inner:
            inner.watch(x)
            y = _outputs(f(x))[m]
        jac = inner.jacobian(y, x)
    actual = None if jac is None else outer.jacobian(jac, x)

    def numeric(v):
        jac, shape = jacobian(v)
        return np.zeros(shape) if jac is None else jac.numpy()
    _assert_close_to_numerical(actual, numeric, value, sample, what)


@pytest.mark.parametrize("name,k", CASES)
@given(data=st.data())
def test_jacobian_and_hessian_match_numerical(name, k, data):
    """tape.jacobian of each output, and of the gradient (a Hessian: pfor over the
    backward pass of the backward pass), against central differences."""
    op, sample, leaves, diff, differentiable = _case(name, k)
    if not differentiable:
        pytest.skip(f"{name}: not differentiable ({sample.no_grad or 'op flag'})")
    dims, rng = _draw(data, sample, leaves)
    chunk = data.draw(st.sampled_from([None, 2, 3]), label="parallel_iterations")
    values = _values(leaves, dims, rng)
    call = _caller(op, sample)
    if any(leaves[j].kind in ("complex", "csquare", "hpd") for j in diff):  # real FD only
        pytest.skip("central differences of complex maps: tests/api/test_complex.py")
    for j in diff:
        f = _partial(call, values, [j])
        x = vj.constant(values[j])
        with vj.GradientTape(persistent=True) as outer:
            outer.watch(x)
            with vj.GradientTape() as inner:
                inner.watch(x)
                outs = _outputs(f(x))
                floats = _float_outputs(outs)
                weights = [rng.standard_normal(o.shape) for o in floats]
                loss = _weighted_loss(floats, weights)
            grad = inner.gradient(loss, x)
        for m, y in enumerate(outs):
            if y.dtype.kind != "f":
                continue

            def output(v, m=m):
                return np.asarray(_outputs(f(vj.constant(v)))[m].numpy(), np.float64)
            _assert_close_to_numerical(outer.jacobian(y, x, parallel_iterations=chunk),
                                       output, values[j], sample,
                                       f"{name}: jacobian of output {m} w.r.t. argument {j}")
        if sample.grad_order < 2 or grad is None:
            continue
        small = [m for m, y in enumerate(outs) if y.dtype.kind == "f" and y.size * x.size <= 64]
        if small:  # jacobian of a jacobian: a pfor inside a pfor
            _check_nested_jacobian(f, small[0], values[j], sample,
                                   f"{name}: jacobian of the jacobian of output {small[0]} "
                                   f"w.r.t. argument {j}")

        def gradient(v):
            t = vj.constant(v)
            with vj.GradientTape() as tape:
                tape.watch(t)
                total = _weighted_loss(_float_outputs(_outputs(f(t))), weights)
            g = tape.gradient(total, t)
            return np.zeros(v.shape) if g is None else g.numpy()
        _assert_close_to_numerical(outer.jacobian(grad, x), gradient, values[j], sample,
                                   f"{name}: Hessian w.r.t. argument {j} (jacobian of the "
                                   f"gradient)")


# -- coverage ----------------------------------------------------------------------------
def test_every_op_has_samples():
    missing = sorted(name for name, op in OPS.items() if not op.samples and not op.covered_by)
    assert not missing, ("ops without sample specs: add `samples = (Sample(...),)` to their "
                         "blocks (or `covered_by = \"<Op>\"` for an internal op reached "
                         "only through another op's gradient): " + ", ".join(missing))


def test_sample_specs_are_well_formed():
    for name, op in OPS.items():
        for sample in op.samples:
            assert isinstance(sample, Sample), f"{name}: {sample!r} is not a Sample"
            _function(op, sample)
            for flag in (sample.no_grad, sample.no_pfor, sample.no_f32, sample.no_complex):
                assert flag is None or (isinstance(flag, str) and flag), \
                    f"{name}: skip flags take the reason as a string, got {flag!r}"
            assert set(sample.tol) <= {"eps", "rtol", "atol"}, f"{name}: tol {sample.tol}"


@pytest.mark.parametrize("name", sorted(n for n, op in OPS.items() if op.covered_by))
def test_covered_by_op_runs_it_in_its_gradient(name):
    """An internal op's correctness is the second-order check of the op named in
    covered_by: that op must exist, have samples, and reach this op in its gradients."""
    op = OPS[name]
    target = OPS.get(op.covered_by)
    assert target is not None, f"{name}: covered_by names {op.covered_by!r}, not an op"
    assert target.samples, f"{name}: covered_by op {op.covered_by} has no samples"
    calls = []
    forward = op.forward

    def counting(*a, **kw):
        calls.append(1)
        return forward(*a, **kw)
    op.forward = counting
    try:
        for k in range(len(target.samples)):
            _, sample, leaves, diff, differentiable = _case(target.name, k)
            if not differentiable:
                continue
            values = _values(leaves, {n: 2 for a in leaves for n in a.shape
                                      if isinstance(n, str)}, np.random.default_rng(k))
            f = _partial(_caller(target, sample), values, diff)
            check_grads(f, [values[j] for j in diff], order=2)
    finally:
        del op.forward
    assert calls, f"{name}: the gradients of {op.covered_by}'s samples never run {name}"


@pytest.mark.parametrize("name,k", CASES)
@pytest.mark.parametrize("size", [1, 3])  # size 1: the no-op shortcuts (squeeze, reshape)
def test_outputs_never_alias_the_callers_arrays(name, k, size):
    """Ops take raw ndarrays without copying them (BorrowedTensor); no output may share
    memory with them, or a later write to the caller's array would change the Tensor."""
    op, sample, leaves, _, _ = _case(name, k)
    lo, hi = sample.dim_range
    names = {d for a in leaves for d in a.shape + (a.hi,) if isinstance(d, str)}
    dims = {n: max(lo, min(hi, size)) for n in names}
    arrays = _values(leaves, dims, np.random.default_rng(seed_of(k)))
    try:
        out = _caller(op, sample)(*arrays)
    except (TypeError, ValueError):  # a sample that needs Tensors (e.g. a Variable method)
        return
    for o in _outputs(out):
        if isinstance(o, vj.Tensor):
            assert not isinstance(o, BorrowedTensor), f"{name}: returned the caller's array"
            for a in arrays:
                assert not np.may_share_memory(o._value, a), f"{name}: output aliases an input"
