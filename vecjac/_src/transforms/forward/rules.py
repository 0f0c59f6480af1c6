"""Forward-mode rules shared by op families: the JVP counterpart of vectorize/converters.py.

A jvp rule `jvp(op, entry, *tangents)` receives one tangent per input (None where it is
zero or the input is not differentiable) and returns the output tangent, or a tuple of
them for several outputs (None: zero). It is written with vecjac ops, so the transforms
outside the accumulator see it: a tape differentiates JVPs, pfor vectorizes them (jacfwd:
one-hot tangents stay structured where the ops have structured rules).

- self_adjoint: elementwise unary ops. The Jacobian is diagonal, hence symmetric, so J t
  is the VJP with t as the cotangent: the op's own gradient, no second formula (complex
  values: Hermitian, J t = conj(VJP(conj t))).
- linear: ops linear in all their floating inputs jointly (reshape, concat, sum, gather's
  params, pad with its constant): the op applied to the tangents (zeros where missing),
  integer inputs (indices, shapes) as they are.
- linear_in(*slots): linear in those inputs, with a zero derivative almost everywhere in
  the other floating ones (ReluGrad: g * (y > 0)).
- multilinear: linear in each floating input separately (matmul, einsum, products): the
  product rule, one term per input with a tangent.
Ops without a rule get the one derived from their VJP (vecjac/_src/transforms/forward/accumulator.py).
"""
from vecjac._src.core.dispatch import apply
from vecjac._src.core.registry import lib


def self_adjoint(op, e, t):
    # (an op with a `derivative` skips this rule when the accumulator is alone: its
    # _fused path computes the same factor in NumPy)
    if t is None:
        return None
    if t.dtype.kind == "c" or e.outputs[0].dtype.kind == "c":
        # a diagonal complex Jacobian d: the gradient is conj(d) g, so d t is
        # conj(gradient(conj(t))) (the convention: ops/elementwise/complex_parts.py)
        return apply(lib.Conj, op.gradient(e, apply(lib.Conj, t)))
    return op.gradient(e, t)


def linear(op, e, *tangents):
    for t in tangents:  # a loop, not all(generator): this runs for every layout op
        if t is not None:
            break
    else:
        return None
    args = [x if x.dtype.kind not in "fc" else t if t is not None else lib.zeros_like(x)
            for x, t in zip(e.inputs, tangents)]
    return apply(op, *args, **e.attrs)


def linear_in(*slots):
    def rule(op, e, *tangents):
        if all(tangents[k] is None for k in slots):
            return None
        args = list(e.inputs)
        for k in slots:
            x = args[k]
            args[k] = tangents[k] if tangents[k] is not None else lib.zeros_like(x)
        return apply(op, *args, **e.attrs)
    return rule


def multilinear(op, e, *tangents):
    total = None
    for k, t in enumerate(tangents):
        if t is None:
            continue
        args = list(e.inputs)
        args[k] = t
        term = apply(op, *args, **e.attrs)
        total = term if total is None else apply(lib.Add, total, term)  # same shapes
    return total
