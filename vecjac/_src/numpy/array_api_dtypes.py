"""Data types of vecjac's array API namespace: the dtype objects, their promotion, `isdtype`,
`finfo` / `iinfo`, `can_cast`, `result_type`, `astype`, the one device, and
`__array_namespace_info__` (the standard's inspection API).

vecjac's dtypes are NumPy's: the namespace offers all of the standard's (bool, int8 ..
int64, uint8 .. uint64, float32, float64, complex64, complex128). Complex Tensors compute
(NumPy does the arithmetic) but vecjac differentiates real floating point only: a transform
asked for the derivative of a complex input refuses with TypeError, never a wrong number.

Type promotion: vecjac's ops promote as NumPy 2 does (NEP 50), which agrees with the
standard's table on every pair the table defines: within a kind the wider type, a signed
and an unsigned integer the smallest signed type holding both (int8 with uint8 is int16).
They differ where the standard leaves the result undefined: int64 with uint64 (NumPy:
float64), and integers with floats across kinds (NumPy: a float; the standard promotes no
mixed kinds). `result_type` and `can_cast` answer for the table itself: `can_cast(int8,
float32)` is False, as the standard says, where NumPy's `np.can_cast` says True.
"""
import dataclasses

import numpy as np

from vecjac._src.core.tensor import Tensor
from vecjac._src.core.variables import Variable
from vecjac._src.ops.elementwise import logic as _lo

STANDARD = {}  # name in the namespace -> function (the namespace module reads this)


def standard(name):
    """Register a function under its name in the array API namespace. The Python function
    keeps a private name here (`_max`, `_bool` ...), so that this module never shadows a
    builtin (max, abs, all, round ...) for its own code."""
    def deco(fn):
        fn.__name__ = fn.__qualname__ = name
        STANDARD[name] = fn
        return fn
    return deco


DTYPES = {name: np.dtype(name) for name in (
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float32", "float64", "complex64", "complex128")}
_KIND_OF = {"b": "bool", "i": "signed integer", "u": "unsigned integer",
            "f": "real floating", "c": "complex floating"}
_KINDS = {"bool": "b", "signed integer": "i", "unsigned integer": "u", "integral": "iu",
          "real floating": "f", "complex floating": "c", "numeric": "iufc"}


def dtype_of(x, name):
    """The dtype of an array or a dtype argument, TypeError naming `name` otherwise."""
    if isinstance(x, (Tensor, Variable, np.ndarray)):
        return x.dtype
    try:
        dt = np.dtype(x) if x is not None else None
    except TypeError:
        dt = None
    if dt is None or dt.kind not in "biufc":
        raise TypeError(f"{name}: expected an array or a dtype of the array API namespace "
                        f"(e.g. xp.float64), got {x!r}")
    return dt


@standard("isdtype")
def _isdtype(dtype, kind):
    """Whether `dtype` is `kind`: a dtype, one of the standard's kind names ('bool',
    'signed integer', 'unsigned integer', 'integral', 'real floating', 'complex floating',
    'numeric') or a tuple of those."""
    dt = dtype_of(dtype, "isdtype: dtype")
    if isinstance(dtype, (Tensor, Variable, np.ndarray)):
        raise TypeError(f"isdtype: dtype must be a dtype, got an array ({type(dtype).__name__})")
    kinds = kind if isinstance(kind, tuple) else (kind,)
    for k in kinds:
        if isinstance(k, str):
            if k not in _KINDS:
                raise ValueError(f"isdtype: unknown kind {k!r}; expected one of "
                                 f"{sorted(_KINDS)}")
            if dt.kind in _KINDS[k]:
                return True
        elif dt == dtype_of(k, "isdtype: kind"):
            return True
    return False


# -- promotion (the standard's table) ----------------------------------------------------------
def _promote_pair(a, b):
    if a == b:
        return a
    if a.kind in "fc" and b.kind in "fc" and "c" in (a.kind, b.kind):
        # a complex type whose parts are as precise as the more precise input
        part = max(d.itemsize // (2 if d.kind == "c" else 1) for d in (a, b))
        return np.dtype(f"complex{16 * part}")
    if a.kind == "b" or b.kind == "b" or (a.kind in "iu") != (b.kind in "iu"):
        return None  # the standard promotes no mixed kinds (bool, integer, float)
    if a.kind == b.kind:
        return max(a, b, key=lambda d: d.itemsize)
    signed, unsigned = (a, b) if a.kind == "i" else (b, a)
    if signed.itemsize > unsigned.itemsize:
        return signed
    if unsigned.itemsize < 8:
        return np.dtype(f"int{8 * 2 * unsigned.itemsize}")
    return None  # uint64 with any signed integer: no standard type holds both


def promote(dtypes, name):
    """The standard's result dtype of `dtypes`; TypeError naming `name` where the standard
    defines none."""
    result = dtypes[0]
    for dt in dtypes[1:]:
        promoted = _promote_pair(result, dt)
        if promoted is None:
            raise TypeError(f"{name}: the array API standard promotes no {result} with {dt} "
                            "(mixed kinds, or uint64 with a signed integer); cast first "
                            "with xp.astype")
        result = promoted
    return result


_SCALAR_DEFAULTS = {bool: "bool", int: "int64", float: "float64", complex: "complex128"}


@standard("result_type")
def _result_type(*arrays_and_dtypes):
    """The dtype the standard's promotion table gives these arrays and dtypes. Python
    scalars (allowed from the standard's 2024.12 on, and used so by SciPy) are weak: they
    take the arrays' dtype within its kind (float32 with 1.0 is float32), and alone give
    the default dtype of their kind; an int or float scalar with arrays of a lower kind
    gives the default dtype of the scalar's kind (int8 with 1.0 is float64, as in NumPy)."""
    if not arrays_and_dtypes:
        raise ValueError("result_type: at least one array or dtype is needed")
    scalars = [x for x in arrays_and_dtypes if type(x) in _SCALAR_DEFAULTS]
    dts = [dtype_of(x, f"result_type: argument {k}") for k, x in enumerate(arrays_and_dtypes)
           if type(x) not in _SCALAR_DEFAULTS]
    if not dts:
        dts = [np.dtype(_SCALAR_DEFAULTS[type(scalars[0])])]
        scalars = scalars[1:]
    result = promote(dts, "result_type")
    for scalar in scalars:
        result = _with_scalar(result, type(scalar))
    return result


def _with_scalar(dt, scalar_type):
    order = "biufc"  # bool < integers < real floating < complex floating
    rank = {bool: 0, int: 1, float: 3, complex: 4}[scalar_type]
    kind_rank = 1 if dt.kind in "iu" else order.index(dt.kind)
    if rank <= kind_rank:
        return dt
    if scalar_type is complex and dt.kind == "f":
        return np.dtype(f"complex{16 * dt.itemsize}")
    return np.dtype(_SCALAR_DEFAULTS[scalar_type])


@standard("can_cast")
def _can_cast(from_, to, /):
    """Whether the standard's promotion of `from_` with `to` is `to` (casting that loses
    nothing by the table: int8 -> int16 yes, int8 -> float32 no, float64 -> float32 no)."""
    a, b = dtype_of(from_, "can_cast: from_"), dtype_of(to, "can_cast: to")
    if isinstance(to, (Tensor, Variable, np.ndarray)):
        raise TypeError("can_cast: to must be a dtype, got an array")
    return _promote_pair(a, b) == b


@standard("astype")
def _astype(x, dtype, /, *, copy=True, device=None):
    """x cast to `dtype` (vj.cast: differentiable between floating dtypes). Tensors are
    immutable, so a Tensor of the same dtype is returned as it is whatever `copy` says."""
    check_device(device, "astype")
    dt = dtype_of(dtype, "astype: dtype")
    if isinstance(x, Variable):
        x = x.read_value()
    if not isinstance(x, Tensor):
        raise TypeError(f"astype: x must be an array (vj.Tensor), got {type(x).__name__}")
    return x if x.dtype == dt else _lo.cast(x, dt)


@dataclasses.dataclass(frozen=True)
class finfo_object:  # noqa: N801 (the standard's name for what finfo returns)
    bits: int
    eps: float
    max: float
    min: float
    smallest_normal: float
    dtype: np.dtype


@dataclasses.dataclass(frozen=True)
class iinfo_object:  # noqa: N801
    bits: int
    max: int
    min: int
    dtype: np.dtype


@standard("finfo")
def _finfo(type, /):  # noqa: A002 (the standard's parameter name)
    """Machine limits of a floating dtype, as Python floats."""
    dt = dtype_of(type, "finfo: type")
    if dt.kind not in "fc":
        raise ValueError(f"finfo: expected a floating dtype, got {dt}")
    f = np.finfo(dt)  # of a complex dtype: of its real and imaginary parts
    return finfo_object(int(f.bits), float(f.eps), float(f.max), float(f.min),
                        float(f.smallest_normal), f.dtype)


@standard("iinfo")
def _iinfo(type, /):  # noqa: A002
    """Limits of an integer dtype, as Python ints."""
    dt = dtype_of(type, "iinfo: type")
    if dt.kind not in "iu":
        raise ValueError(f"iinfo: expected an integer dtype, got {dt}")
    i = np.iinfo(dt)
    return iinfo_object(int(i.bits), int(i.max), int(i.min), dt)


# -- the device ----------------------------------------------------------------------------------
class Device:
    """vecjac computes with NumPy on the CPU: its only device."""

    def __eq__(self, other):
        return isinstance(other, Device) or other == "cpu"

    def __hash__(self):
        return hash("cpu")

    def __repr__(self):
        return "Device('cpu')"


CPU = Device()


def check_device(device, name):
    if device is not None and device != CPU:
        raise ValueError(f"{name}: device must be None, 'cpu' or xp.Device('cpu') (vecjac "
                         f"runs on the CPU), got {device!r}")


# -- inspection (__array_namespace_info__) -----------------------------------------------------
class Info:
    """What `__array_namespace_info__()` returns: capabilities, devices and dtypes."""

    def capabilities(self):
        return {"boolean indexing": True, "data-dependent shapes": True,
                "max dimensions": 64}

    def default_device(self):
        return CPU

    def devices(self):
        return [CPU]

    def default_dtypes(self, *, device=None):
        check_device(device, "default_dtypes")
        return {"real floating": DTYPES["float64"], "complex floating": DTYPES["complex128"],
                "integral": DTYPES["int64"], "indexing": DTYPES["int64"]}

    def dtypes(self, *, device=None, kind=None):
        check_device(device, "dtypes")
        if kind is None:
            return dict(DTYPES)
        return {name: dt for name, dt in DTYPES.items() if _isdtype(dt, kind)}


@standard("__array_namespace_info__")
def _array_namespace_info():
    return Info()
