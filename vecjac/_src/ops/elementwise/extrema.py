"""Maximum and minimum: element-wise selections between two inputs (their gradients
route the cotangent to the input picked, ties to x as in TF; structural zeros of the
other input, transforms/tape/zeros.py)."""
import numpy as np

from vecjac._src.core.arguments import apply_binary
from vecjac._src.core.registry import Op, lib, register
from vecjac._src.core.samples import Arg, Sample
from vecjac._src.ops.elementwise.arithmetic import _pick
from vecjac._src.ops.elementwise.logic import greater_equal, less_equal, where
from vecjac._src.ops.elementwise.unbroadcast import unbroadcast
from vecjac._src.transforms.pfor.converters import broadcasting
from vecjac._src.transforms.sparsity import patterns


class _Extremum(Op):
    """maximum / minimum: the rules of both, given `picks_x(x, y)`, where the output is x
    (ties go to x, as in TF); the gradient sends g there to x and elsewhere to y."""
    pattern = patterns.broadcasting
    selects = (0, 1)  # structural zeros (transforms/tape/zeros.py)
    converter = broadcasting

    def gradient(self, e, g):
        x, y = e.inputs
        pick_x = self.picks_x(x, y)
        return (unbroadcast(where(pick_x, g, 0), x.shape),
                unbroadcast(where(pick_x, 0, g), y.shape))

    def jvp(self, e, tx, ty):
        return _pick(self.picks_x(*e.inputs), tx, ty, e)

    def selected(self, e, k):
        return self.picks_x(*e.inputs), k == 0  # as the gradient: x where pick_x, y where not


@register
class Maximum(_Extremum):
    picks_x = staticmethod(greater_equal)
    samples = (Sample("maximum", Arg.float(2, "n"), Arg.float("n")),
               Sample("maximum", Arg.float(2, 1, 3), Arg.float("m", 1)),
               Sample("maximum", Arg.float(), Arg.float(3)))

    def forward(self, x, y):
        return np.maximum(x, y)


@register
class Minimum(_Extremum):
    picks_x = staticmethod(less_equal)
    samples = (Sample("minimum", Arg.float(2, "n"), Arg.float("n")),
               Sample("minimum", Arg.float(2, 1, 3), Arg.float("m", 1)),
               Sample("minimum", Arg.float(), Arg.float(3)))

    def forward(self, x, y):
        return np.minimum(x, y)


def maximum(x, y, name=None):
    return apply_binary(Maximum, x, y, "maximum")


def minimum(x, y, name=None):
    return apply_binary(Minimum, x, y, "minimum")


__all__ = ["maximum", "minimum"]
lib.publish(globals(), __all__)
