"""vj.nn: TF's tf.nn namespace."""
from vecjac._src.composites.conv import *  # noqa: F401,F403,E402
from vecjac._src.composites.nn_layers import *  # noqa: F401,F403,E402
from vecjac._src.composites.space import (depth_to_space, space_to_batch,  # noqa: F401,E402
                                          space_to_depth)
from vecjac._src.composites.sparse_xent import *  # noqa: F401,F403,E402
from vecjac._src.composites.tf_math import top_k  # noqa: F401,E402  (tf.nn.top_k is tf.math.top_k)
from vecjac._src.ops.nn.activations import *  # noqa: F401,F403
