"""A pytest plugin (`-p tests._without_dask`) that makes the dask extra look uninstalled:
dask, distributed and cloudpickle cannot be imported (tests/test_optional_extras.py)."""
import importlib.abc
import sys


class _NotInstalled(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] in ("dask", "distributed", "cloudpickle"):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


if not any(isinstance(f, _NotInstalled) for f in sys.meta_path):
    sys.meta_path.insert(0, _NotInstalled())
