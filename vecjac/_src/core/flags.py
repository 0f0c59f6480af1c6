"""Process-wide switches, read once from the environment at import.

VECJAC_NO_FAST_PATHS=1: every op takes the generic route of the transforms (the op's
rule through apply(), seen by every transform outside), never a shortcut that computes
in NumPy directly because no other transform could see the difference
(vecjac/_src/core/context.py: alone). The results must agree either way: the switch is
for tests of the generic routes (.ci/run runs tests/test_registry.py under it) and for
telling a fast-path bug from a rule bug.
"""
import os


def _enabled(name):
    return os.environ.get(name, "").strip().lower() not in ("", "0", "false", "no")


NO_FAST_PATHS = _enabled("VECJAC_NO_FAST_PATHS")
