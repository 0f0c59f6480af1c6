"""vj.math: TF's tf.math namespace."""
from .ops.einsum_ops import *  # noqa: F401,F403
from .ops.linear_ops import *  # noqa: F401,F403
from .ops.logic_ops import *  # noqa: F401,F403
from .ops.math_ops import *  # noqa: F401,F403
from .ops.norm_ops import *  # noqa: F401,F403
from .ops.reduce_ops import *  # noqa: F401,F403
from .ops.segment_ops import *  # noqa: F401,F403
from .ops.sparse_segment_ops import *  # noqa: F401,F403
from .ops.special_ops import *  # noqa: F401,F403
from .ops.tf_math_ops import *  # noqa: F401,F403
from .ops.unary_ops import *  # noqa: F401,F403
# names that shadow Python builtins stay out of the star-exported __all__ lists
from .ops.math_ops import pow  # noqa: F401,E402
from .ops.unary_ops import abs, round  # noqa: F401,E402
