"""The pfor transform: vectorized loops, the while-loop fallback, converters.

The family converters (`elementwise`, `broadcasting`, `reduction`, `axis_shift`) are the
library's own pfor rules; `vj.defop(..., converter=vj.vectorize.elementwise)` gives a
user op the same rule."""
from vecjac._src.transforms.pfor.converters import (axis_shift, broadcasting,  # noqa: F401
                                                    elementwise, reduction)
from vecjac._src.transforms.pfor.fallback import FallbackWarning, converter_coverage  # noqa: F401
from vecjac._src.transforms.pfor.pfor import PFor, for_loop, pfor, vectorized_map  # noqa: F401
from vecjac._src.transforms.pfor.stacked import StackedTensor, Unstacked  # noqa: F401
