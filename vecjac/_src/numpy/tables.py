"""The tables of NumPy's protocols: which NumPy function or ufunc runs which vecjac op.

Filled by vecjac/_src/numpy/functions.py, _numpy_linalg.py and _numpy_ufuncs.py (decorators
`_functions` / `_ufuncs`); read by vecjac/_src/numpy/dispatch.py.
"""
import collections

import numpy as np

from vecjac._src.core.tensor import Tensor
from vecjac._src.core.variables import Variable


class _Unsupported(Exception):
    """An adapter declines this call (an argument it cannot express): NumPy computes it."""


UFUNCS = {}      # np.ufunc -> vecjac function taking the ufunc's inputs
FUNCTIONS = {}   # NumPy function -> adapter with NumPy's signature
_targets = {}    # NumPy name -> the vecjac op(s) it becomes, for coverage_table()
_warned = set()  # NumPy names already warned about (NotDifferentiableWarning once each)


def _lookup(path):
    obj = np
    for part in path.split("."):
        obj = getattr(obj, part, None)
    return obj


def _np_name(f):
    module = getattr(f, "__module__", None) or "numpy"
    for sub in ("linalg", "fft"):
        if module.endswith(sub):
            return f"np.{sub}.{f.__name__}"
    return "np." + f.__name__


def _ufuncs(target, *names):
    def deco(fn):
        for name in names:
            uf = _lookup(name)
            if uf is not None:
                UFUNCS[uf] = fn
                _targets[f"np.{name}"] = target
        return fn
    return deco


def _functions(target, *names):
    def deco(fn):
        for name in names:
            f = _lookup(name)
            if f is not None:
                FUNCTIONS[f] = fn
                _targets[f"np.{name}"] = target
        return fn
    return deco


def _is_vj(x):
    return isinstance(x, Tensor) or isinstance(x, Variable)


def _dtype(x):
    return x.dtype if hasattr(x, "dtype") else np.asarray(x).dtype


def covered_functions():
    """Sorted NumPy names (e.g. 'np.sum', 'np.linalg.solve') that run as vecjac ops."""
    return sorted(_targets)


def coverage_table():
    """The Markdown table of covered NumPy names and the vecjac op(s) each becomes."""
    by_target = collections.defaultdict(list)
    for np_name in sorted(_targets):
        by_target[_targets[np_name]].append(np_name)
    rows = sorted(by_target.items(), key=lambda kv: (kv[1][0].startswith("scipy"), kv[1][0]))
    lines = ["| NumPy | vecjac |", "|---|---|"]
    lines += [f"| {', '.join(f'`{n}`' for n in names)} | `{target}` |"
              for target, names in rows]
    return "\n".join(lines)

