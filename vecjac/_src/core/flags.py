"""Process-wide switches, read once from the environment at import.

VECJAC_NO_FAST_PATHS=1: every op takes the generic route of the transforms (the op's
rule through apply(), seen by every transform outside), never a shortcut that computes
in NumPy directly because no other transform could see the difference
(vecjac/_src/core/context.py: alone). The results must agree either way: the switch is
for tests of the generic routes (.ci/run runs tests/test_registry.py under it) and for
telling a fast-path bug from a rule bug.

VECJAC_COPY_CALLER_ARRAYS=1: a caller's ndarray that vecjac keeps beyond one op (a tape
records it, a loop value is a view of it) is always copied, never lent read-only for the
length of a transformed call (vecjac/_src/core/loans.py). For code that writes into such
an array during the call through another view made before it, which a loan cannot see.
"""
import os


def _enabled(name):
    return os.environ.get(name, "").strip().lower() not in ("", "0", "false", "no")


NO_FAST_PATHS = _enabled("VECJAC_NO_FAST_PATHS")
COPY_CALLER_ARRAYS = _enabled("VECJAC_COPY_CALLER_ARRAYS")
