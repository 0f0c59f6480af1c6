"""The op library: every primitive as one block (forward, gradient, jvp, converter,
samples), grouped by family. Loading it fills the registry and `lib`
(vecjac/_registry.py) and gives Tensor its operators (operators.py) and NumPy's ndarray
methods (tensor_methods.py)."""
from . import (math_ops, logic_ops, unary_ops, special_ops, reduce_ops, linear_ops, einsum_ops, norm_ops,  # noqa: F401
               array_ops, index_ops, creation_ops, layout_ops, onehot_ops, nn_ops,
               linalg_ops, decomposition_ops, sort_ops, random_ops, control_flow_ops,
               image_ops, scipy_special_ops, bessel_ops, tf_math_ops, segment_ops,
               matrix_function_ops, signal_ops, conv_ops, qr_ops, adjugate_ops, banded_ops,
               diag_ops, space_ops,
               debugging_ops,
               functional_ops,
               operators, tensor_methods)
