"""vecjac: gradients, Jacobians, batch Jacobians and Hessians over NumPy arrays.

TensorFlow's GradientTape API (import vecjac as vj; replace tf. with vj.), with
Jacobians vectorized by a pfor-style loop transform. See README.md.

This module only re-exports: the public surface is pinned by tests/test_namespaces.py.
Internal modules have private names (vecjac/_src/transforms/tape/tape.py ...); the public namespaces are
vj.math, vj.nn, vj.linalg, vj.random, vj.image, vj.signal, vj.layers, vj.nest,
vj.vectorize, vj.testing, vj.scipy, vj.debugging and vj.autodiff (ForwardAccumulator).
"""
__version__ = "0.1.0"

import importlib as _importlib
import importlib.util as _importlib_util

from vecjac._src.core import allocator as _allocator

_allocator.tune()  # glibc keeps large temporaries for reuse (see vecjac/_src/core/allocator.py)

from vecjac._src.core.tensor import (Tensor, constant, is_tensor, float16, float32, float64, int8,  # noqa: E402
                                     int16, int32, int64, uint8, complex64, complex128)
from vecjac._src.core.dispatch import convert_to_tensor  # noqa: E402
from vecjac._src.core.variables import Module, Variable  # noqa: E402
from vecjac._src.core.errors import (NotDifferentiableWarning, conversion_policy,  # noqa: E402
                                     set_conversion_policy)
from vecjac._src.core.unconnected import UnconnectedGradients  # noqa: E402
from vecjac._src.core.memory import set_memory_budget  # noqa: E402
from vecjac._src.core.registry import defop  # noqa: E402
from vecjac._src import all_ops as _all_ops  # noqa: E402,F401  (loads the op library)
from vecjac._src.numpy.dispatch import array_function as _array_function  # noqa: E402,F401
from vecjac._src.numpy.array_api_object import array_namespace as _array_namespace  # noqa: E402,F401
from vecjac._src.transforms.tape.tape import GradientTape  # noqa: E402
from vecjac._src.transforms.tape.jacobians import InteractingExamplesWarning  # noqa: E402
from vecjac._src.transforms.tape.gradients import (RegisterGradient, custom_gradient,  # noqa: E402
                                                   recompute_grad, stop_gradient)
from vecjac._src.ops.elementwise.arithmetic import (add, subtract, multiply, divide,  # noqa
                                                    truediv, negative, pow,
                                                    squared_difference, floordiv, floormod)
from vecjac._src.ops.elementwise.extrema import maximum, minimum  # noqa: E402
from vecjac._src.ops.elementwise.logic import (equal, not_equal, less, less_equal, greater,  # noqa: E402
                                               greater_equal, logical_and, logical_or, logical_xor,
                                               logical_not, cast, where)
from vecjac._src.ops.elementwise.unary import *  # noqa: F401,F403,E402
from vecjac._src.ops.elementwise.special import *  # noqa: F401,F403,E402
from vecjac._src.ops.reduce.cumulative import cumprod, cumsum  # noqa: F401,E402
from vecjac._src.ops.reduce.reductions import *  # noqa: F401,F403,E402
from vecjac._src.ops.linalg.products import *  # noqa: F401,F403,E402
from vecjac._src.ops.linalg.einsum import *  # noqa: F401,F403,E402
from vecjac._src.composites.norm import *  # noqa: F401,F403,E402
from vecjac._src.ops.array.shaping import *  # noqa: F401,F403,E402
from vecjac._src.ops.array.indexing import *  # noqa: F401,F403,E402
from vecjac._src.ops.array.creation import *  # noqa: F401,F403,E402
from vecjac._src.ops.array.layout import *  # noqa: F401,F403,E402
from vecjac._src.ops.reduce.sort import *  # noqa: F401,F403,E402
from vecjac._src.ops.array.onehot import *  # noqa: F401,F403,E402
from vecjac._src.composites.control_flow import *  # noqa: F401,F403,E402
from vecjac._src.composites.scan import *  # noqa: F401,F403,E402  (scan, foldl, foldr)
from vecjac._src.ops.nn.activations import *  # noqa: F401,F403,E402  (TF exposes e.g. vj.sigmoid at top level too)
from vecjac._src.composites.tf_math import (add_n, atan2, linspace, scalar_mul)  # noqa: F401,E402  (tf.add_n ...)
from vecjac._src.composites.space import (batch_to_space, space_to_batch, space_to_batch_nd)  # noqa: F401,E402
# TF names that shadow Python builtins, kept out of the star-exported __all__ lists
from vecjac._src.ops.array.creation import range  # noqa: F401,E402,A004
from vecjac._src.ops.array.layout import slice  # noqa: F401,E402,A004
from vecjac._src.ops.elementwise.unary import abs, round  # noqa: F401,E402,A004
from vecjac._src.ops.elementwise.complex_parts import complex  # noqa: F401,E402,A004  (tf.complex)
from vecjac import math, nn, linalg, random, vectorize, image, signal  # noqa: E402
from vecjac._src.core import nest  # noqa: E402
from vecjac._src.api import testing, layers  # noqa: E402
from vecjac import autodiff  # noqa: E402
from vecjac import debugging  # noqa: F401,E402  (tf.debugging.check_numerics)
from vecjac.vectorize import vectorized_map  # noqa: F401,E402
from vecjac._src.api.functional import (grad, value_and_grad, vjp, jvp, linearize, hvp)  # noqa: F401,E402
from vecjac._src.api.jacobians import (jacobian, jacrev, jacfwd, batch_jacobian, hessian)  # noqa: E402
from vecjac._src.api.newton import flat_hessian, newton_step, unflatten_like  # noqa: F401,E402
from vecjac._src.api.sparsity import (jacobian_sparsity, hessian_sparsity)  # noqa: F401,E402
from vecjac._src.api.sparse import sparse_jacobian, sparse_hessian  # noqa: F401,E402
from vecjac._src.api.function import TensorSpec, function  # noqa: F401,E402
from vecjac import scipy  # noqa: F401,E402
from vecjac._src.api.scipy.fft import install_backend as _install_fft_backend  # noqa: E402

_install_fft_backend()  # scipy.fft.<name>(tensor) runs vecjac's FFTs (vecjac/_src/api/scipy/fft.py)


def __getattr__(name):
    # vj.dask is optional (pip install vecjac[dask]) and dask.array takes 0.7 s to import:
    # loaded on first use, not with vecjac. Without the extra the attribute does not exist
    # (AttributeError, so hasattr and inspect.getmembers work), and the message says why.
    if name == "dask":
        try:
            return _importlib.import_module(".dask", __name__)
        except ImportError as e:
            raise AttributeError(f"module 'vecjac' has no attribute 'dask': {e}") from e
    raise AttributeError(f"module 'vecjac' has no attribute {name!r}")


def __dir__():
    names = set(globals())
    if "dask" in names or _dask_installed():
        names.add("dask")
    return sorted(names)


def _dask_installed():
    try:
        return all(_importlib_util.find_spec(m) is not None for m in ("dask", "cloudpickle"))
    except (ValueError, ImportError):  # None in sys.modules, or a finder that refuses it
        return False

from vecjac._src.core.tensor import bool_ as bool  # noqa: A004,E402  (TF spells it vj.bool)
