"""The family of element-wise unary ops, and their derivative written once.

Such an op's Jacobian is diagonal: the VJP g -> g * dy/dx is also its JVP (self_adjoint),
and forward mode's fast path wants dy/dx in NumPy (vecjac/_src/transforms/forward/
accumulator.py: `_fused`). A block of `UnaryWithDerivative` writes dy/dx once,

    @staticmethod
    def dydx(x, y, xp=ARRAYS):     # x the input, y the output
        return xp.Rsqrt(1 - x * x)

against a namespace `xp` of the family's op blocks by class name, and gets from it
- `gradient`: g * dydx(x, y, TENSORS), where xp.Rsqrt applies the op to Tensors, so the
  rule is differentiable again (Hessians), vectorizable and traceable;
- `derivative(x, y)`: dydx itself on ndarrays, where xp.Rsqrt is the op's own NumPy
  forward: the same operations in the same order as the rule, hence the same bits.
Arithmetic (+ - * / unary -) is written with operators, which Tensors and ndarrays share.
ARRAYS is a default argument, not bound by functools.partial, because the fast path
calls `derivative` once per op of a forward-mode pass and the partial costs 5% of it.
Ops whose gradient is not g times a factor (log: g / x, rounding: zeros) keep writing
`gradient` on the plain `Unary` base, and have no fast path.
"""
import functools

from vecjac._src.core.dispatch import apply
from vecjac._src.core.registry import Op
from vecjac._src.ops.elementwise.complex_parts import conj_if_complex
from vecjac._src.transforms.forward.rules import self_adjoint
from vecjac._src.transforms.pfor.converters import elementwise
from vecjac._src.transforms.sparsity import patterns


class _OpNamespace:
    """The family's op blocks by class name (xp.Cos), filled as they are instantiated.
    A plain object: a __getattr__ hook would slow every lookup by 40 ns."""


class _TensorOps(_OpNamespace):
    """xp.Cos(x) is the op applied to Tensors: what rules are written with."""


class _ArrayOps(_OpNamespace):
    """xp.Cos(x) is the op's NumPy forward on ndarrays: what the fast path runs."""


TENSORS = _TensorOps()
ARRAYS = _ArrayOps()


class Unary(Op):
    """Element-wise unary op: the family's pfor, jvp and sparsity rules. Its block is
    callable in derivative formulas as xp.<class name>."""
    jvp = self_adjoint
    pattern = patterns.elementwise
    converter = elementwise

    def __init__(self):
        name = type(self).__name__
        setattr(TENSORS, name, functools.partial(apply, self))
        setattr(ARRAYS, name, self.forward)


class UnaryWithDerivative(Unary):
    """Element-wise unary op whose gradient is g * dy/dx: write the staticmethod
    `dydx(x, y, xp=ARRAYS)` (see the module docstring), not `gradient` or `derivative`."""

    dydx = None

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if cls.dydx is not None:
            cls.derivative = staticmethod(cls.dydx)  # the fast path: xp = ARRAYS

    def gradient(self, e, g):
        d = self.dydx(e.inputs[0], e.outputs[0], TENSORS)
        # complex z: the cotangent of a holomorphic op is conj(f'(z)) g (complex_parts.py)
        return g * (conj_if_complex(d) if d.dtype.kind == "c" else d)
