"""vj.TensorSpec: describes a Tensor argument of a vj.function (TF's tf.TensorSpec)."""
import numbers

import numpy as np

from vecjac._src.core.shapes import as_dtype


class TensorSpec:
    """Describes a Tensor argument of a vj.function (TF's `tf.TensorSpec`).

    `shape`: None (any rank) or a list of dims, each an int or None (any size);
    `dtype`: vecjac's default float, float64, unless given (TF's default is float32).

    >>> vj.TensorSpec([None, 3])
    TensorSpec(shape=(None, 3), dtype=float64, name=None)
    """

    __slots__ = ("shape", "dtype", "name")

    def __init__(self, shape, dtype=np.float64, name=None):
        if shape is not None:
            if isinstance(shape, numbers.Integral) or not isinstance(shape, (list, tuple)):
                raise TypeError(f"TensorSpec: shape must be None or a list/tuple of dims "
                                f"(int or None), got {shape!r}")
            dims = []
            for d in shape:
                if d is not None and (not isinstance(d, numbers.Integral)
                                      or isinstance(d, bool) or d < 0):
                    raise ValueError(f"TensorSpec: each dim of shape must be None or an "
                                     f"int >= 0, got {d!r} in {shape!r}")
                dims.append(None if d is None else int(d))
            shape = tuple(dims)
        if name is not None and not isinstance(name, str):
            raise TypeError(f"TensorSpec: name must be a string or None, got "
                            f"{type(name).__name__}")
        self.shape = shape
        self.dtype = as_dtype(dtype, "TensorSpec")
        self.name = name

    def is_compatible_with(self, x):
        """True when Tensor (or array) `x` has a matching dtype and shape."""
        return self.dtype == x.dtype and self._shape_fits(tuple(x.shape))

    def _shape_fits(self, shape):
        if self.shape is None:
            return True
        return len(shape) == len(self.shape) and all(
            d is None or d == n for d, n in zip(self.shape, shape))

    def __eq__(self, other):
        return isinstance(other, TensorSpec) and (self.shape, self.dtype, self.name) == (
            other.shape, other.dtype, other.name)

    def __hash__(self):
        return hash((self.shape, self.dtype, self.name))

    def __repr__(self):
        return f"TensorSpec(shape={self.shape}, dtype={self.dtype.name}, name={self.name!r})"
