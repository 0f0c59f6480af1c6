"""vj.linalg: TF's tf.linalg namespace."""
from vecjac._src.composites.diag import *  # noqa: F401,F403
from vecjac._src.composites.norm import *  # noqa: F401,F403
from vecjac._src.composites.tf_math import cross  # noqa: F401,E402  (tf.linalg.cross)
from vecjac._src.ops.linalg.decomposition import *  # noqa: F401,F403
from vecjac._src.ops.linalg.eig import *  # noqa: F401,F403
from vecjac._src.ops.linalg.matrix import *  # noqa: F401,F403
from vecjac._src.ops.linalg.products import matmul, matrix_transpose  # noqa: F401
from vecjac._src.ops.linalg.qr import *  # noqa: F401,F403
