"""flatten / pack_sequence_as / map_structure for nests.

The implementation and its notes: vecjac/_src/core/nest.py."""
from vecjac._src.core.nest import (fields, flatten, is_dataclass_instance, is_nested,  # noqa: F401
                                   map_structure, pack_sequence_as, same_structure)
