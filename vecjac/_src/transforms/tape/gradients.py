"""Gradient control: stop_gradient, custom_gradient, recompute_grad and RegisterGradient."""
import contextlib
import functools
import inspect

from vecjac._src.core import nest
from vecjac._src.core.context import state
from vecjac._src.core.dispatch import apply, to_input
from vecjac._src.core.registry import REGISTRY, Op, lib
from vecjac._src.core.tensor import Tensor
from vecjac._src.transforms.tape.tape import GradientTape


def stop_gradient(input, name=None):
    """The value of `input`, with no gradient flowing back through it."""
    return lib.stop_gradient(input)


# -- custom_gradient ---------------------------------------------------------------------
class _CustomGradientOp(Op):
    """A one-off op around a user function and its `grad_fn` (TF's IdentityN).

    Inputs: f's arguments, the Variables f read, then f's outputs; outputs: f's outputs
    again (an identity), with fresh ids. Its gradient routes cotangents to the arguments
    through grad_fn only (none to the output slots, so f's own ops are not
    differentiated); forward mode derives the JVP from that gradient, so a forward pass
    computed outside vecjac still has a forward derivative; pfor keeps grad_fn for the
    tapes outside the loop (`converter`)."""
    name = "IdentityN"

    def __init__(self, grad_fn, n_args, variables, n_outputs):
        self.grad_fn = grad_fn
        self.n_args = n_args
        self.variables = variables
        self.n_outputs = n_outputs
        self.n_inputs = n_args + len(variables)

    def forward(self, *arrays):
        outs = arrays[self.n_inputs:]
        return outs[0] if self.n_outputs == 1 else tuple(outs)

    def gradient(self, entry, *dys):
        if self.variables:
            grads = self.grad_fn(*dys, variables=list(self.variables))
            if not (isinstance(grads, (tuple, list)) and len(grads) == 2):
                raise ValueError("custom_gradient: with variables, grad_fn must return "
                                 "(input_gradients, variable_gradients)")
            input_grads, var_grads = grads
            input_grads = _as_list(input_grads)
            var_grads = list(var_grads)
            if len(var_grads) != len(self.variables):
                raise ValueError(f"custom_gradient: grad_fn returned {len(var_grads)} "
                                 f"variable gradients for {len(self.variables)} variables")
        else:
            input_grads, var_grads = _as_list(self.grad_fn(*dys)), []
        if len(input_grads) != self.n_args:
            raise ValueError(f"custom_gradient: grad_fn returned {len(input_grads)} "
                             f"gradients for {self.n_args} inputs")
        return tuple(input_grads) + tuple(var_grads) + (None,) * self.n_outputs

    def converter(self, cx, *inputs):
        return apply(_LoopCustomGradientOp(self, cx.loop, cx.stacked), *inputs)


class _LoopCustomGradientOp(Op):
    """A custom-gradient call vectorized by pfor, as tapes outside the loop see it: the
    same identity, and a gradient that runs grad_fn inside the (reopened) loop, on the
    per-iteration view of the cotangent, as the loop body would have."""
    name = "IdentityN"

    def __init__(self, custom, loop, stacked):
        self.custom, self.loop, self.stacked = custom, loop, stacked
        self.n_outputs = custom.n_outputs

    def forward(self, *arrays):
        return self.custom.forward(*arrays)

    def gradient(self, entry, *dys):
        loop = self.loop
        with loop.reopened():
            per_iteration = [None if d is None else loop.stacked_view(d) for d in dys]
            grads = self.custom.gradient(entry, *per_iteration)
            out = []
            for g, x, s in zip(grads, entry.inputs, self.stacked):
                if g is None:
                    out.append(None)
                elif s:  # a stacked input: iteration k's cotangent is row k
                    out.append(loop.plain_view(g))
                else:  # a loop-invariant input: every iteration's cotangent adds up
                    out.append(loop.total(g))
        return tuple(out)


def _as_list(x):
    return list(x) if isinstance(x, (tuple, list)) else [x]


def custom_gradient(f):
    """Decorator: `f(*args)` returns `(y, grad_fn)`; tapes use `grad_fn(*dy)` for f's VJP.

    When `f` reads trainable Variables, `grad_fn` must accept a `variables` keyword and
    return `(input_gradients, variable_gradients)`, as in TensorFlow. Ops inside `f` are
    recorded, so that `grad_fn` is differentiable for higher orders, but gradients reach
    the inputs only through `grad_fn`. Forward mode (ForwardAccumulator, vj.jvp, jacfwd)
    derives the JVP from grad_fn too; inside pfor / vectorized_map, tapes outside the loop
    use grad_fn as well.
    """
    if not callable(f):
        raise TypeError(f"custom_gradient: f must be callable, got {type(f).__name__}")
    name = getattr(f, "__name__", "f")  # errors on the wrapper's arguments name f

    @functools.wraps(f)
    def wrapped(*args, **kwargs):
        inputs = [a if isinstance(a, Tensor) else to_input(a, (), f"custom_gradient({name})",
                                                            f"argument {k}")
                  for k, a in enumerate(args)]
        read = {}
        state.variable_watchers.append(lambda v: read.setdefault(v._tid, v))
        try:
            # f's own ops stay recorded: grad_fn may use f's intermediates, and outer tapes
            # need them connected to differentiate grad_fn (higher order)
            result = f(*inputs, **kwargs)
        finally:
            state.variable_watchers.pop()
        if not (isinstance(result, (tuple, list)) and len(result) == 2 and callable(result[1])):
            raise TypeError("custom_gradient: the decorated function must return "
                            "(outputs, grad_fn)")
        outputs, grad_fn = result
        variables = [v for v in read.values() if v.trainable]
        if variables and "variables" not in inspect.signature(grad_fn).parameters:
            raise TypeError("custom_gradient: the function reads variables "
                            f"{[v.name for v in variables]}, so grad_fn must accept a "
                            "keyword argument 'variables'")
        flat = [to_input(o, (), f"custom_gradient({name})", "output")
                for o in nest.flatten(outputs)]
        op = _CustomGradientOp(grad_fn, len(inputs), variables, len(flat))
        outs = apply(op, *inputs, *[v.read_value() for v in variables], *flat)
        return nest.pack_sequence_as(outputs, [outs] if len(flat) == 1 else list(outs))
    return wrapped


# -- recompute_grad ----------------------------------------------------------------------
def recompute_grad(f):
    """Decorator (TF's `tf.recompute_grad`): tapes keep none of `f`'s intermediate values;
    the backward pass runs `f` again, under a tape of its own, and differentiates that.

    Memory for compute: a block of a deep model keeps only its inputs and outputs on the
    tape, at the price of a second forward pass of the block per gradient. Gradients
    reach `f`'s Tensor arguments and the trainable Variables it reads; higher orders,
    forward mode and pfor work as through `custom_gradient`, which this is built on.

    >>> g = vj.recompute_grad(lambda x: vj.reduce_sum(vj.tanh(x) ** 2))
    >>> x = vj.constant([0.5, 1.0])
    >>> with vj.GradientTape() as tape:
    ...     tape.watch(x)
    ...     y = g(x)
    >>> tape.gradient(y, x).numpy().round(4)
    array([0.7269, 0.6397])
    """
    if not callable(f):
        raise TypeError(f"recompute_grad: f must be callable, got {type(f).__name__}")

    @functools.wraps(f)
    def wrapped(*args, **kwargs):
        @custom_gradient
        def block(*xs):
            with _tapes_paused():  # f's ops are not recorded: nothing of f is kept
                out = f(*xs, **kwargs)

            def grad_fn(*dys, variables=None):
                wanted = [x for x in xs if x.dtype.kind in "fc"] + list(variables or [])
                with GradientTape() as tape:
                    tape.watch(wanted)
                    again = f(*xs, **kwargs)
                found = tape.gradient(nest.flatten(again), wanted, output_gradients=list(dys),
                                      unconnected_gradients="zero")
                found = iter(found)
                grads = [next(found) if x.dtype.kind in "fc" else None for x in xs]
                return grads if variables is None else (grads, list(found))
            return out, grad_fn
        return block(*args)
    return wrapped


@contextlib.contextmanager
def _tapes_paused():
    """Every tape of this thread that records stops recording inside the block."""
    with contextlib.ExitStack() as stack:
        for tape in state.tapes:
            if tape.recording:
                stack.enter_context(tape.stop_recording())
        yield


# -- RegisterGradient --------------------------------------------------------------------
class RegisterGradient:
    """Decorator registering `fn(op, *grads)` as the gradient of op type `op_type`.

    `op` has `.inputs`, `.outputs` and `.attrs`; `fn` returns one gradient per input
    (None where not differentiable), written with vecjac ops.
    """

    def __init__(self, op_type):
        if not isinstance(op_type, str):
            raise TypeError(f"RegisterGradient: op_type must be a string, got "
                            f"{type(op_type).__name__}")
        self._op_type = op_type

    def __call__(self, fn):
        op = REGISTRY.get(self._op_type)
        if op is None:
            raise LookupError(f"RegisterGradient: no op named {self._op_type!r}; define it "
                              "first with vj.defop")
        if op.has_gradient and "gradient" in vars(op):
            raise KeyError(f"Registering two gradient with name '{self._op_type}'!")
        op.gradient = fn
        op.has_gradient = True
        return fn
