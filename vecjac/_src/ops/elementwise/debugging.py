"""TF's tf.debugging: check_numerics, an identity that refuses NaN and Inf.

The check is the op's forward, so every transform checks what it computes: an eager
call or vj.function's replay checks the value; pfor's converter runs the op once on the
stacked value (all iterations in one pass, never a per-iteration loop); the gradient and
the JVP are check_numerics of the cotangent and the tangent, as TF checks gradients.
TF's InvalidArgumentError is ValueError here, as for vecjac's other value checks.
"""
import numpy as np

from vecjac._src.core.dispatch import apply, to_input
from vecjac._src.core.registry import Op, lib, register
from vecjac._src.core.samples import Arg, Sample
from vecjac._src.transforms.pfor.converters import elementwise
from vecjac._src.transforms.sparsity import patterns

__all__ = ["check_numerics"]


def _problem(x):
    """TF's wording of what was found: 'Inf', 'NaN' or 'Inf and NaN'; None if finite."""
    if np.isfinite(x).all():  # one pass in the common case; counting only on failure
        return None
    nan = int(np.isnan(x).sum())
    inf = x.size - nan - int(np.isfinite(x).sum())
    found = " and ".join(w for w, n in (("Inf", inf), ("NaN", nan)) if n)
    return (f"{found} values (tensor of shape {x.shape}: {inf} Inf and {nan} NaN of "
            f"{x.size} entries)")


@register
class CheckNumerics(Op):
    preserves_zeros = True
    pattern = patterns.elementwise
    converter = elementwise  # the op on the stacked value: one check of every iteration
    samples = (Sample(lambda x: check_numerics(x, "sample"), Arg.float(2, "n")),
               Sample(lambda x: check_numerics(x, ""), Arg.float()))

    def forward(self, x, message):
        problem = _problem(x)
        if problem is not None:
            raise ValueError(f"check_numerics: {message} : Tensor had {problem}")
        return x

    def gradient(self, e, g):
        return apply(self, g, message=f"NaN or Inf in the gradient of check_numerics. "
                                      f"{e.attrs['message']}")

    def jvp(self, e, t):
        if t is None:
            return None
        return apply(self, t, message=f"NaN or Inf in the tangent of check_numerics. "
                                      f"{e.attrs['message']}")


def check_numerics(tensor, message, name=None):
    """`tensor` unchanged if it has no NaN and no Inf, else ValueError whose text starts
    with `message` (TF's tf.debugging.check_numerics: '<message> : Tensor had NaN
    values'). tensor: floating point; its gradient passes through, checked the same way.

    >>> vj.debugging.check_numerics(vj.constant([1.0, 2.0]), "x").numpy()
    array([1., 2.])
    """
    fn = "check_numerics"
    if not isinstance(message, str):
        raise TypeError(f"{fn}: message must be a str, got {type(message).__name__}")
    x = to_input(tensor, (), fn, "tensor")
    if x.dtype.kind != "f":
        raise TypeError(f"{fn}: tensor must be a floating point tensor (float16, float32, "
                        f"float64), got dtype {x.dtype}")
    return apply(CheckNumerics, x, message=message)


lib.publish(globals(), __all__)
