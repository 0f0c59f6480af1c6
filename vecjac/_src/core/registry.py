"""Op, the op registry, and `lib`: the op library as seen from rules.

An op is one class block: `forward` on NumPy arrays, and beside it the rules each
transform uses (gradient, jvp, converter, structured, pattern), written with vecjac ops
so that they are themselves differentiable, vectorizable and traceable, and the facts
the fast paths and vj.function's replay read. Every attribute and method, who reads it,
when to set it and its default: docs/op_block.md. Rules are functions of the op
(`converter = broadcasting` binds like a method), so that family rules are written once
and shared. `@register` instantiates the block and files it under its TF-style name.

`lib` is the op library's public functions and primitives by their Python names, filled
as op modules load. Rules that need an op of a module loaded after their own (a
reduction's gradient broadcasts, broadcast_to's gradient reduces) and the transforms
(which import no concrete op) reach it as `lib.reshape`, `lib.GatherV2`: late binding
instead of an import cycle.
"""
import sys

# The modules of the built-in primitives: their rules are trusted (pfor does not re-check a
# converter's result), and vj.function's replay knows their forwards (a user op named "Mul"
# is not NumPy's multiply).
BUILTIN_OP_PREFIX = "vecjac._src.ops."


def is_builtin(op):
    """True for the primitives of vecjac's own op library (vecjac/_src/ops/)."""
    return type(op).__module__.startswith(BUILTIN_OP_PREFIX)


class Op:
    """Base of every primitive. Subclass, write `forward` and `gradient`, decorate with
    @register. Every attribute and method, who reads it and when to set it:
    docs/op_block.md."""

    # -- identity and contract
    name = None             # TF's op name; @register: the class name when not set
    n_outputs = 1           # forward returns a tuple when > 1
    differentiable = True   # False: never recorded (comparisons, argmax, integer ops)
    has_gradient = True     # set by @register: False when no `gradient` is written
    stateful = False        # each run may differ (random draws): never folded or merged
    shape_only = False      # outputs depend on input shapes and dtypes only (zeros_like)
    complex_rules = False   # the rules hold for complex values (the convention of
    #                         ops/elementwise/complex_parts.py); False: differentiating
    #                         through complex values raises ComplexNotSupported
    # -- rules of the transforms (None: the transform's fallback)
    jvp = None              # forward mode; None: derived from `gradient`
    converter = None        # pfor; None: a while loop over the iterations
    structured = None       # pfor on structured one-hot seeds (also a method)
    pattern = None          # sparsity; None: every output depends on every input
    # -- structural zeros (transforms/tape/zeros.py): element-wise ops only
    selects = None          # input slots a selecting op passes on (where: (1, 2))
    preserves_zeros = False  # gradient and jvp map an exact zero to one (add, neg)
    # -- fast paths: NumPy-level facts the transforms use when nothing else sees the op
    derivative = None       # element-wise: (x, y) arrays -> dy/dx (forward mode)
    array_gradient = None   # (e, g array) -> the gradient rule's cotangents as arrays, or
    #                         NotImplemented (the tape's backward when no transform is active)
    value_and_derivative = None  # x -> (y, dy/dx) in one pass (sin, cos)
    stacked_attrs = None    # layout ops: attrs for all pfor iterations stacked on axis 0
    stacked_forward = None  # (cx, *Tensors, **attrs) -> all iterations' output, or None
    note_primal = None      # (inputs, output): facts a primal proves (forward mode's fast path)
    checked_converter = True  # set by @register: pfor checks non-built-in converters
    # -- facts for vj.function's replay compiler (read only for built-in ops)
    inplace_ufunc = None    # the forward is exactly this NumPy ufunc: may write with out=
    fresh_output = False    # the forward always returns a new array (a ufunc's does)
    fusion_code = None      # instruction of fusion.py's float64 interpreter
    fusible_layout = False  # a pure layout op: fusion runs it on index maps
    fusible_zero_fill = False  # zeros with input elements placed in them (a slice's gradient)
    scalar_expression = None  # the forward on scalars, "{0} + {1}" (chains.py)
    selects_by_condition = False  # where(cond, x, y): a constant cond picks x or y
    # -- tests
    samples = ()            # Sample specs: how tests/test_registry.py calls this op
    covered_by = None       # internal op: the op whose gradient checks cover it

    def forward(self, *arrays, **attrs):
        raise NotImplementedError

    def gradient(self, entry, *cotangents):
        raise LookupError(f"gradient registry has no entry for: {self.name}")

    def selected(self, entry, k):
        """A selecting op (`selects`): (mask, sense), mask a bool Tensor broadcastable to
        the output: the output is input k where mask == sense (elsewhere its derivative
        in input k is zero). Reads entry.inputs and entry.attrs only."""
        raise NotImplementedError(f"{self.name} selects no input")

    def __call__(self, *inputs, **attrs):
        return lib.apply(self, *inputs, **attrs)

    def __repr__(self):
        return f"<Op {self.name}>"


REGISTRY = {}


class Library:
    """Namespace of the op library (see the module docstring)."""

    def __getattr__(self, name):
        raise AttributeError(f"the op library has no function or op {name!r} (is the "
                             "module that defines it loaded?)")

    def publish(self, namespace, names):
        """Make `names` of a module's `namespace` (its globals()) reachable as lib.<name>."""
        for name in names:
            setattr(self, name, namespace[name])


lib = Library()


def register(cls):
    """Class decorator: instantiate an Op block and file it in REGISTRY by name."""
    if "name" not in vars(cls):  # a block's own name: never one inherited from a base
        cls.name = cls.__name__
    op = cls()
    if op.name in REGISTRY:  # two blocks under one name: the second would replace the first
        raise ValueError(f"register: an op named {op.name!r} is already registered "
                         f"({type(REGISTRY[op.name]).__module__}.{type(REGISTRY[op.name]).__name__})")
    if "gradient" not in _own_attrs(cls) and op.differentiable:
        op.has_gradient = False
    # the op library's converters are tested against the loop for every sample; pfor
    # checks the contract only for the others (vj.defop), as it runs for every op
    op.checked_converter = not is_builtin(op)
    REGISTRY[op.name] = op
    setattr(lib, cls.__name__, op)
    return op


def _own_attrs(cls):
    names = set()
    for klass in cls.__mro__:
        if klass is Op:
            break
        names.update(vars(klass))
    return names


class Entry:
    """One recorded op: what a gradient or jvp rule receives (TF calls it `op`)."""

    __slots__ = ("op", "inputs", "outputs", "attrs", "needs")

    def __init__(self, op, inputs, outputs, attrs):
        self.op = op
        self.inputs = inputs
        self.outputs = outputs
        self.attrs = attrs
        self.needs = None  # per input: is its cotangent wanted (set by the backward pass)

    @property
    def type(self):
        return self.op.name

    def __repr__(self):
        return f"<Entry {self.op.name} {[t.shape for t in self.inputs]}>"


def defop(name, forward, gradient=None, converter=None, jvp=None, n_outputs=1,
          differentiable=True):
    """Extension API: a new primitive from plain functions; returns the registered Op.

    `forward(*arrays, **attrs)` works on NumPy arrays. The optional rules follow the
    contract of the built-in ones (vecjac/_src/core/registry.py) and may be the library's family
    rules (`vj.vectorize.elementwise`, `vj.vectorize.broadcasting`):
    - `gradient(entry, *cotangents)` returns one cotangent per input, with vecjac ops
      (add one later with vj.RegisterGradient);
    - `jvp(entry, *tangents)` returns the output tangent(s); without one, forward mode
      derives it from `gradient`;
    - `converter(op, cx, *inputs, **attrs)` is the pfor rule (without one, pfor runs this
      op once per iteration, with a FallbackWarning).
    """
    if not isinstance(name, str) or not name:
        raise ValueError(f"defop: name must be a non-empty string, got {name!r}")
    if name in REGISTRY:
        raise ValueError(f"defop: an op named {name!r} is already registered")
    if not callable(forward):
        raise TypeError(f"defop: forward must be callable, got {type(forward).__name__}")
    for arg, rule in (("gradient", gradient), ("converter", converter), ("jvp", jvp)):
        if rule is not None and not callable(rule):
            raise TypeError(f"defop: {arg} must be callable or None, got "
                            f"{type(rule).__name__}")
    if not isinstance(n_outputs, int) or isinstance(n_outputs, bool) or n_outputs < 1:
        raise ValueError(f"defop: n_outputs must be a positive int, got {n_outputs!r}")
    attrs = {"name": name, "n_outputs": n_outputs, "differentiable": bool(differentiable),
             "forward": staticmethod(forward),
             # the caller's module, so that the registry tests tell user ops from ours
             "__module__": sys._getframe(1).f_globals.get("__name__", "__main__")}
    if converter is not None:
        attrs["converter"] = converter  # binds like a built-in family rule: (op, cx, ...)
    if gradient is not None:
        attrs["gradient"] = staticmethod(gradient)
    if jvp is not None:
        attrs["jvp"] = staticmethod(jvp)
    cls = type(name, (Op,), attrs)
    op = cls()
    if gradient is None and op.differentiable:
        op.has_gradient = False
    REGISTRY[name] = op
    return op
