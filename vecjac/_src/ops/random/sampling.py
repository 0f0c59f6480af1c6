"""Seeded random tensors (TF's tf.random): normal, uniform, set_seed.

The samples themselves are constants (never recorded by tapes). With plain-number
parameters the result is a constant Tensor; when mean/stddev (minval/maxval) are Tensors
or Variables, the result is `sample * stddev + mean` built with vecjac ops, so gradients
flow to them (the reparameterization TF also gives) and they may vary over a pfor loop
(all iterations then share one sample). Seeding follows TF's two-level scheme, roughly:
- no global seed, no op seed: fresh entropy every call (not reproducible);
- global seed (set_seed), no op seed: one NumPy Generator seeded by the global seed, so
  the sequence of calls after set_seed(s) is reproducible;
- op seed given: the values come from (global seed or a fixed default, op seed, n) where
  n counts earlier calls with the same op seed since the last set_seed; repeated calls
  give different values, and the same program gives the same values every run.
The streams are NumPy's (PCG64), so values differ from TF's for the same seeds.

The draws are stateful ops (RandomStandardNormal, RandomUniform, RandomUniformInt) whose
forward consults the generator when it runs: vj.function replays them on every call, so
a traced function draws new values each time (as in TF).
"""
import numbers

import numpy as np

from vecjac._src.core.dispatch import apply, to_input
from vecjac._src.core.registry import Op, lib, register
from vecjac._src.core.samples import Sample
from vecjac._src.core.shapes import as_dtype, as_shape
from vecjac._src.core.tensor import Tensor
from vecjac._src.core.variables import Variable
from vecjac._src.ops.array.shaping import broadcast_to
from vecjac._src.ops.elementwise.arithmetic import add, multiply, subtract
from vecjac._src.ops.elementwise.logic import cast

__all__ = ["normal", "uniform", "set_seed"]

_DEFAULT_GLOBAL_SEED = 87654321  # used with an op seed when no global seed is set


class _State:
    global_seed = None
    global_rng = None
    op_counts = {}


def set_seed(seed):
    """Set the global random seed: later random calls repeat the same sequence."""
    if seed is not None and (not isinstance(seed, numbers.Integral) or isinstance(seed, bool)):
        raise TypeError(f"set_seed: seed must be an int or None, got {seed!r}")
    if seed is not None and seed < 0:
        raise ValueError(f"set_seed: seed must be non-negative, got {seed}")
    _State.global_seed = None if seed is None else int(seed)
    _State.global_rng = None if seed is None else np.random.default_rng(int(seed))
    _State.op_counts = {}


def _check_seed(seed, fn):
    if seed is None:
        return None
    if not isinstance(seed, numbers.Integral) or isinstance(seed, bool):
        raise TypeError(f"{fn}: seed must be an int or None, got {seed!r}")
    if seed < 0:
        raise ValueError(f"{fn}: seed must be non-negative, got {seed}")
    return int(seed)


def _generator(seed):
    """The generator of one draw (seed checked by _check_seed); counts op-seeded draws."""
    if seed is None:
        if _State.global_rng is not None:
            return _State.global_rng
        return np.random.default_rng()
    base = _DEFAULT_GLOBAL_SEED if _State.global_seed is None else _State.global_seed
    key = (base, seed)
    count = _State.op_counts.get(key, 0)
    _State.op_counts[key] = count + 1
    return np.random.default_rng([base, seed, count])


def _native(dt):
    return dt if dt in (np.float32, np.float64) else np.float64


_NO_PFOR = "random: every run draws anew (pfor runs it once, the loop once per iteration)"
_NO_F32 = "random: every run draws anew"


@register
class RandomStandardNormal(Op):
    differentiable = False
    stateful = True
    samples = (Sample("normal", (2, 3), no_pfor=_NO_PFOR, no_f32=_NO_F32),)

    def forward(self, shape, dtype, seed):
        return _generator(seed).standard_normal(shape, dtype=_native(dtype)).astype(
            dtype, copy=False)


@register
class RandomUniform(Op):
    differentiable = False
    stateful = True
    samples = (Sample("uniform", (3,), no_pfor=_NO_PFOR, no_f32=_NO_F32),)

    def forward(self, shape, dtype, seed):
        return _generator(seed).random(shape, dtype=_native(dtype)).astype(dtype, copy=False)


@register
class RandomUniformInt(Op):
    differentiable = False
    stateful = True
    samples = (Sample("uniform", (4,), minval=2, maxval=9, dtype="int64", no_pfor=_NO_PFOR,
                      no_f32=_NO_F32),)

    def forward(self, shape, minval, maxval, dtype, seed):
        return _generator(seed).integers(minval, maxval, size=shape, dtype=dtype)


def _dtype(dtype, fn):
    return as_dtype(dtype, fn, "dtype", "iuf")


def _is_tensor(value):
    return isinstance(value, (Tensor, Variable))


def _param(value, dtype, shape, fn, arg):
    """A parameter broadcastable to `shape`: a Tensor (kept, for gradients) or an array."""
    if _is_tensor(value):
        t = to_input(value, (), fn, arg)
        if t.dtype.kind not in "biuf":
            raise TypeError(f"{fn}: {arg} must be real, got dtype {t.dtype}")
        pshape = t.shape
    else:
        t = np.asarray(value)
        if t.dtype.kind not in "biuf":
            raise TypeError(f"{fn}: {arg} must be a real number or tensor, got dtype "
                            f"{t.dtype}")
        pshape = t.shape
    try:
        if np.broadcast_shapes(pshape, shape) != shape:
            raise ValueError
    except ValueError:
        raise ValueError(f"{fn}: {arg} of shape {pshape} does not broadcast to shape "
                         f"{shape}") from None
    if isinstance(t, np.ndarray):
        return t.astype(dtype, copy=False)
    return t if t.dtype == dtype else cast(t, dtype)


def _affine(sample, scale, shift):
    """sample * scale + shift with vecjac ops (the sample is a Tensor drawn by an op);
    the identity when scale is 1 and shift 0."""
    out = sample
    if not (isinstance(scale, np.ndarray) and np.all(scale == 1)):
        out = multiply(out, scale)
    if not (isinstance(shift, np.ndarray) and np.all(shift == 0)):
        out = add(out, shift)
    return out if out.shape == sample.shape else broadcast_to(out, sample.shape)


def normal(shape, mean=0.0, stddev=1.0, dtype=np.float64, seed=None, name=None):
    """Samples of N(mean, stddev^2) of the given shape (float64 by default).

    mean and stddev are scalars or arrays broadcastable to `shape`.
    """
    fn = "normal"
    dims = as_shape(shape, fn)
    dt = _dtype(dtype, fn)
    if dt.kind != "f":
        raise TypeError(f"{fn}: dtype must be floating point, got {dt}")
    m = _param(mean, dt, dims, fn, "mean")
    s = _param(stddev, dt, dims, fn, "stddev")
    z = apply(RandomStandardNormal, shape=dims, dtype=dt, seed=_check_seed(seed, fn))
    return _affine(z, s, m)


def uniform(shape, minval=0, maxval=None, dtype=np.float64, seed=None, name=None):
    """Samples uniform on [minval, maxval) of the given shape (float64 by default).

    Floats: maxval defaults to 1; minval and maxval may be arrays broadcastable to
    `shape`. Integer dtypes need scalar minval < maxval.
    """
    fn = "uniform"
    dims = as_shape(shape, fn)
    dt = _dtype(dtype, fn)
    if dt.kind in "iu":
        if maxval is None:
            raise ValueError(f"{fn}: maxval must be given for integer dtype {dt}")
        lo, hi = np.asarray(minval), np.asarray(maxval)
        if lo.ndim or hi.ndim or lo.dtype.kind not in "iu" or hi.dtype.kind not in "iu":
            raise TypeError(f"{fn}: for integer dtype {dt}, minval and maxval must be "
                            f"integer scalars, got {minval!r} and {maxval!r}")
        if not lo < hi:
            raise ValueError(f"{fn}: need minval < maxval, got minval={int(lo)}, "
                             f"maxval={int(hi)}")
        return apply(RandomUniformInt, shape=dims, minval=int(lo), maxval=int(hi), dtype=dt,
                     seed=_check_seed(seed, fn))
    if dt.kind != "f":
        raise TypeError(f"{fn}: dtype must be floating point or integer, got {dt}")
    lo = _param(minval, dt, dims, fn, "minval")
    hi = _param(1.0 if maxval is None else maxval, dt, dims, fn, "maxval")
    seed = _check_seed(seed, fn)
    if isinstance(lo, np.ndarray) and isinstance(hi, np.ndarray):
        width = hi - lo
    else:
        width = subtract(hi, lo)
    u = apply(RandomUniform, shape=dims, dtype=dt, seed=seed)
    return _affine(u, width, lo)

lib.publish(globals(), __all__)
