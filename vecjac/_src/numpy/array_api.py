"""vecjac's array API namespace (the Python array API standard, version 2023.12).

`xp = t.__array_namespace__()` for a vj.Tensor (or vj.Variable) returns this module, so
code written against the standard (SciPy under SCIPY_ARRAY_API=1, array-api-compat users,
scikit-learn's array API support) computes with vecjac ops and stays differentiable: every
function goes through the same adapters as NumPy's dispatch (`np.sin(t)`).

The functions live in array_api_elementwise.py, array_api_creation.py (creation and
manipulation), array_api_functions.py (searching, sorting, statistics, sets, utility,
indexing, linear algebra) and array_api_dtypes.py (dtypes, promotion, finfo / iinfo,
inspection); the Tensor attributes the standard asks (device, to_device, mT,
__array_namespace__, __dlpack__, integer bitwise operators) are in array_api_object.py.
This module only gathers their names: it has no code of its own, so the standard's names
that are Python builtins (abs, all, any, bool, max, min, pow, round, sum) shadow nothing.

The `linalg` extension is `xp.linalg` (array_api_linalg.py), the `fft` extension `xp.fft`
(array_api_fft.py: vecjac's FFT ops, differentiable with complex values). Not here:
in-place item assignment (`x[i] = v`: Tensors are immutable, as JAX arrays are;
`x = x.at[i].set(v)` is the functional form).
"""
import math

from vecjac._src.numpy import array_api_creation as _creation  # noqa: F401 (registers)
from vecjac._src.numpy import array_api_elementwise as _elementwise  # noqa: F401
from vecjac._src.numpy import array_api_fft as fft
from vecjac._src.numpy import array_api_functions as _functions  # noqa: F401
from vecjac._src.numpy import array_api_linalg as linalg
from vecjac._src.numpy.array_api_dtypes import DTYPES, STANDARD

__array_api_version__ = "2023.12"

e = math.e
pi = math.pi
inf = math.inf
nan = math.nan
newaxis = None

# the dtypes (bool, int8 ... float64) and the functions, under the standard's names
globals().update(DTYPES)
globals().update(STANDARD)

__all__ = sorted(["__array_api_version__", "e", "pi", "inf", "nan", "newaxis", "linalg", "fft",
                  *DTYPES, *STANDARD])
