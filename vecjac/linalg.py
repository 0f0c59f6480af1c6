"""vj.linalg: TF's tf.linalg namespace."""
from .ops.linear_ops import matmul, matrix_transpose  # noqa: F401
from .ops.linalg_ops import *  # noqa: F401,F403
from .ops.diag_ops import *  # noqa: F401,F403
from .ops.decomposition_ops import *  # noqa: F401,F403
from .ops.qr_ops import *  # noqa: F401,F403
from .ops.norm_ops import *  # noqa: F401,F403
from .ops.tf_math_ops import cross  # noqa: F401,E402  (tf.linalg.cross)
