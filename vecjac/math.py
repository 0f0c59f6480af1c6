"""vj.math: TF's tf.math namespace."""
from vecjac._src.composites.norm import *  # noqa: F401,F403
from vecjac._src.composites.sparse_segment import *  # noqa: F401,F403
from vecjac._src.composites.tf_math import *  # noqa: F401,F403
# names that shadow Python builtins stay out of the star-exported __all__ lists
from vecjac._src.ops.elementwise.arithmetic import *  # noqa: F401,F403
from vecjac._src.ops.elementwise.extrema import *  # noqa: F401,F403
from vecjac._src.ops.elementwise.arithmetic import pow  # noqa: F401,E402
from vecjac._src.ops.elementwise.logic import *  # noqa: F401,F403
from vecjac._src.ops.elementwise.special import *  # noqa: F401,F403
from vecjac._src.ops.elementwise.unary import *  # noqa: F401,F403
from vecjac._src.ops.elementwise.unary import abs, round  # noqa: F401,E402
from vecjac._src.ops.elementwise.complex_parts import complex  # noqa: F401,E402,A004
from vecjac._src.ops.linalg.einsum import *  # noqa: F401,F403
from vecjac._src.ops.linalg.products import *  # noqa: F401,F403
from vecjac._src.ops.reduce.cumulative import *  # noqa: F401,F403
from vecjac._src.ops.reduce.reductions import *  # noqa: F401,F403
from vecjac._src.ops.reduce.segment import *  # noqa: F401,F403
