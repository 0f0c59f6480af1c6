"""The whole op library: importing this module loads every primitive family (vecjac/_src/ops/)
and every composite (vecjac/_src/composites/). Loading fills the registry and `lib`
(vecjac/_src/core/registry.py) and gives Tensor its operators (composites/operators.py) and
NumPy's ndarray methods (composites/tensor_methods.py). The order is the order the modules
were loaded in before the layout by layers, kept so that `lib` fills the same way."""
from vecjac._src.ops.elementwise import (complex_parts, arithmetic, extrema, logic,  # noqa: F401
                                         unary, special,
                                         scipy_special, bessel, debugging)
from vecjac._src.ops.reduce import reductions, cumulative, sort, segment  # noqa: F401
from vecjac._src.ops.linalg import (products, einsum, matrix, decomposition,  # noqa: F401
                                    matrix_function, qr, adjugate, banded, eig)
from vecjac._src.composites import (norm, control_flow, tf_math, conv, diag,  # noqa: F401
                                    space, scan, operators, tensor_methods)
from vecjac._src.ops.array import shaping, indexing, creation, layout, onehot  # noqa: F401
from vecjac._src.ops.array import scatter_update  # noqa: F401
from vecjac._src.composites import at_update  # noqa: F401
from vecjac._src.ops.nn import activations, image  # noqa: F401
from vecjac._src.ops.random import sampling  # noqa: F401
from vecjac._src.ops.scipy import signal  # noqa: F401
from vecjac._src.ops.fft import transforms  # noqa: F401
