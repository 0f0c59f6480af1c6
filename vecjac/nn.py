"""vj.nn: TF's tf.nn namespace."""
from .ops.nn_ops import *  # noqa: F401,F403
from .ops.conv_ops import *  # noqa: F401,F403,E402
from .ops.tf_math_ops import top_k  # noqa: F401,E402  (tf.nn.top_k is tf.math.top_k)
from .ops.space_ops import depth_to_space, space_to_batch, space_to_depth  # noqa: F401,E402
from .ops.sparse_xent_ops import *  # noqa: F401,F403,E402
from .ops.nn_layer_ops import *  # noqa: F401,F403,E402
