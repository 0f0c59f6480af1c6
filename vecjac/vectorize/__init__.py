"""The pfor transform: vectorized loops, the while-loop fallback, converters.

The family converters (`elementwise`, `broadcasting`, `reduction`, `axis_shift`) are the
library's own pfor rules; `vj.defop(..., converter=vj.vectorize.elementwise)` gives a
user op the same rule."""
from .converters import axis_shift, broadcasting, elementwise, reduction  # noqa: F401
from .fallback import FallbackWarning, converter_coverage  # noqa: F401
from .pfor import PFor, for_loop, pfor, vectorized_map  # noqa: F401
from .stacked import StackedTensor, Unstacked  # noqa: F401
