"""N-dimensional convolution (vj.scipy.signal.convolve) as an op.

Convolve(in1, in2, mode, method, batch): the convolution over the trailing axes of
scipy.signal.convolve (imported at the first call), in mode "full" or "valid" ("same"
is a slice of "full", vecjac/_src/api/scipy/signal.py); the first `batch` axes of both inputs
are batch axes that broadcast (pfor adds one per loop). Convolution is bilinear, and
its adjoint is a convolution with the other operand flipped:
- full:  d in1 = valid(g, flip(in2)),  d in2 = valid(g, flip(in1));
- valid (in1 at least as large as in2 on every axis):
         d in1 = full(g, flip(in2)),   d in2 = valid(flip(in1), g).
"""
import numpy as np

from vecjac._src.core.dispatch import apply
from vecjac._src.core.registry import Op, lib, register
from vecjac._src.core.samples import Arg, Sample
from vecjac._src.ops.array.layout import reverse
from vecjac._src.ops.array.shaping import reshape
from vecjac._src.ops.elementwise.arithmetic import unbroadcast
from vecjac._src.ops.elementwise.scipy_special import scipy_module
from vecjac._src.transforms.forward.rules import multilinear

__all__ = []


def _flip(x, batch):
    return reverse(x, list(range(batch, x.ndim))) if x.ndim > batch else x


@register
class Convolve(Op):
    jvp = multilinear
    samples = (Sample("scipy.signal.convolve", Arg.float("n"), Arg.float(3)),
               Sample("scipy.signal.convolve", Arg.float(4, 3), Arg.float(2, "n"),
                      mode="valid"),
               Sample("scipy.signal.convolve", Arg.float(3, "n"), Arg.float(2, 3), mode="same"),
               Sample("scipy.signal.convolve", Arg.float(2), Arg.float(5), mode="valid",
                      method="fft"))

    def forward(self, in1, in2, mode, method, batch):
        signal = scipy_module("signal")
        dtype = np.result_type(in1, in2)
        if batch == 0:
            return np.asarray(signal.convolve(in1, in2, mode=mode, method=method),
                              dtype=dtype)
        shape = np.broadcast_shapes(in1.shape[:batch], in2.shape[:batch])
        if all(n == 1 for n in in2.shape[:batch]) or (
                mode == "full" and all(n == 1 for n in in1.shape[:batch])):
            # a size-1 batch axis convolves as the identity along it: one call for all
            out = signal.convolve(in1, in2, mode=mode, method=method)
            return np.asarray(out, dtype=dtype)
        in1 = np.broadcast_to(in1, shape + in1.shape[batch:])
        in2 = np.broadcast_to(in2, shape + in2.shape[batch:])
        parts = [signal.convolve(in1[k], in2[k], mode=mode, method=method)
                 for k in np.ndindex(shape)]
        core = parts[0].shape if parts else tuple(
            n1 + n2 - 1 if mode == "full" else n1 - n2 + 1
            for n1, n2 in zip(in1.shape[batch:], in2.shape[batch:]))
        return np.asarray(parts, dtype=dtype).reshape(shape + core)

    def gradient(self, e, g):
        in1, in2 = e.inputs
        attrs = e.attrs
        batch, mode = attrs["batch"], attrs["mode"]
        g1 = g2 = None
        adjoint = dict(attrs, mode="valid" if mode == "full" else "full")
        if e.needs[0]:
            g1 = unbroadcast(apply(Convolve, g, _flip(in2, batch), **adjoint), in1.shape)
        if e.needs[1]:
            g2 = (apply(Convolve, g, _flip(in1, batch), **adjoint) if mode == "full" else
                  apply(Convolve, _flip(in1, batch), g, **attrs))
            g2 = unbroadcast(g2, in2.shape)
        return g1, g2

    def converter(self, cx, in1, in2, **attrs):
        # the loop axis becomes a leading batch axis; an invariant operand gets a size-1
        # one, which broadcasts
        args = [x if s else reshape(x, (1,) + x.shape)
                for x, s in zip((in1, in2), cx.stacked)]
        return apply(self, *args, **dict(attrs, batch=attrs["batch"] + 1))

lib.publish(globals(), __all__)
