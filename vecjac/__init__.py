"""vecjac: gradients, Jacobians, batch Jacobians and Hessians over NumPy arrays.

TensorFlow's GradientTape API (import vecjac as vj; replace tf. with vj.), with
Jacobians vectorized by a pfor-style loop transform. See README.md.

This module only re-exports: the public surface is pinned by tests/test_namespaces.py.
Internal modules have private names (vecjac/_tape.py ...); the public namespaces are
vj.math, vj.nn, vj.linalg, vj.random, vj.image, vj.layers, vj.nest, vj.vectorize,
vj.testing, vj.scipy, vj.debugging and vj.autodiff (ForwardAccumulator).
"""
__version__ = "0.1.0"

import importlib as _importlib

from . import _allocator

_allocator.tune()  # glibc keeps large temporaries for reuse (see vecjac/_allocator.py)

from ._tensor import (Tensor, constant, is_tensor,  # noqa: E402
                      float16, float32, float64, int8, int16, int32, int64, uint8,
                      complex64, complex128)
from ._dispatch import convert_to_tensor  # noqa: E402
from ._variables import Module, Variable  # noqa: E402
from ._errors import (NotDifferentiableWarning, conversion_policy,  # noqa: E402
                      set_conversion_policy)
from ._unconnected import UnconnectedGradients  # noqa: E402
from ._memory import set_memory_budget  # noqa: E402
from ._registry import defop  # noqa: E402
from . import ops as _ops  # noqa: E402  (loads the op library)
from ._numpy_dispatch import array_function as _array_function  # noqa: E402,F401
from ._tape import GradientTape  # noqa: E402
from ._jacobians import InteractingExamplesWarning  # noqa: E402
from ._gradients import (RegisterGradient, custom_gradient, recompute_grad,  # noqa: E402
                         stop_gradient)
from .ops.math_ops import (add, subtract, multiply, divide, truediv, negative, pow,  # noqa
                           maximum, minimum, squared_difference, floordiv, floormod)
from .ops.logic_ops import (equal, not_equal, less, less_equal, greater,  # noqa: E402
                            greater_equal, logical_and, logical_or, logical_xor,
                            logical_not, cast, where)
from .ops.unary_ops import *  # noqa: F401,F403,E402
from .ops.special_ops import *  # noqa: F401,F403,E402
from .ops.reduce_ops import *  # noqa: F401,F403,E402
from .ops.linear_ops import *  # noqa: F401,F403,E402
from .ops.einsum_ops import *  # noqa: F401,F403,E402
from .ops.norm_ops import *  # noqa: F401,F403,E402
from .ops.array_ops import *  # noqa: F401,F403,E402
from .ops.index_ops import *  # noqa: F401,F403,E402
from .ops.creation_ops import *  # noqa: F401,F403,E402
from .ops.layout_ops import *  # noqa: F401,F403,E402
from .ops.sort_ops import *  # noqa: F401,F403,E402
from .ops.onehot_ops import *  # noqa: F401,F403,E402
from .ops.control_flow_ops import *  # noqa: F401,F403,E402
from .ops.functional_ops import *  # noqa: F401,F403,E402  (scan, foldl, foldr)
from .ops.nn_ops import *  # noqa: F401,F403,E402  (TF exposes e.g. vj.sigmoid at top level too)
from .ops.tf_math_ops import add_n, atan2, scalar_mul  # noqa: F401,E402  (tf.add_n ...)
from .ops.space_ops import batch_to_space, space_to_batch, space_to_batch_nd  # noqa: F401,E402
# TF names that shadow Python builtins, kept out of the star-exported __all__ lists
from .ops.creation_ops import range  # noqa: F401,E402,A004
from .ops.layout_ops import slice  # noqa: F401,E402,A004
from .ops.unary_ops import abs, round  # noqa: F401,E402,A004
from . import math, nn, linalg, random, vectorize, nest, testing, layers, image  # noqa: E402
from . import autodiff  # noqa: E402
from . import debugging  # noqa: F401,E402  (tf.debugging.check_numerics)
from .vectorize import vectorized_map  # noqa: F401,E402
from ._functional import grad, value_and_grad, vjp, jvp, linearize, hvp  # noqa: F401,E402
from ._functional_jacobians import (jacobian, jacrev, jacfwd, batch_jacobian,  # noqa: E402
                                    hessian)
from ._newton import flat_hessian, newton_step, unflatten_like  # noqa: F401,E402
from ._sparsity import jacobian_sparsity, hessian_sparsity  # noqa: F401,E402
from ._sparse import sparse_jacobian, sparse_hessian  # noqa: F401,E402
from ._function import TensorSpec, function  # noqa: F401,E402
from . import scipy  # noqa: F401,E402


def __getattr__(name):
    # vj.dask is optional (pip install vecjac[dask]) and dask.array takes 0.7 s to import:
    # loaded on first use, not with vecjac
    if name == "dask":
        return _importlib.import_module(".dask", __name__)
    raise AttributeError(f"module 'vecjac' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | {"dask"})

from ._tensor import bool_ as bool  # noqa: A004,E402  (TF spells it vj.bool)
