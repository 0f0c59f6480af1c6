"""Every `>>>` example in the package runs and prints what its docstring says.

One collector instead of per-module lists: a module added to vecjac is checked as soon as
its docstrings hold an example. Examples see `vj` (vecjac), `np` and, where the dask
extra is installed, `dask`; output is compared with ELLIPSIS and NORMALIZE_WHITESPACE."""
import doctest
import importlib
import importlib.util
import pkgutil

import numpy as np
import pytest

import vecjac as vj


def _installed(*names):
    try:
        return all(importlib.util.find_spec(n) is not None for n in names)
    except (ImportError, ValueError):
        return False


HAS_DASK = _installed("dask", "cloudpickle")
NEEDS_DASK = {"vecjac.dask", "vecjac._src.api.dask", "vecjac._src.api.dask_blocks"}


def _modules():
    names = ["vecjac"] + [m.name for m in pkgutil.walk_packages(vj.__path__, "vecjac.")
                          if m.name != "vecjac.__main__"]
    return sorted(n for n in names if HAS_DASK or n not in NEEDS_DASK)


def _examples():
    finder = doctest.DocTestFinder(exclude_empty=True)
    cases = []
    for name in _modules():
        module = importlib.import_module(name)
        for test in finder.find(module, name):
            # a name re-exported by a facade is found there again: check it where it lives
            if test.examples and test.filename == module.__file__:
                cases.append(test)
    return sorted(cases, key=lambda t: t.name)


EXAMPLES = _examples()


def test_the_package_has_examples():
    # a floor, so that a broken finder cannot pass by finding nothing
    assert len(EXAMPLES) >= 40, [t.name for t in EXAMPLES]


@pytest.mark.parametrize("test", EXAMPLES, ids=[t.name for t in EXAMPLES])
def test_docstring_example(test):
    test.globs.update({"vj": vj, "np": np})
    if HAS_DASK:
        test.globs["dask"] = importlib.import_module("dask")
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    with np.printoptions(legacy=False):
        runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, f"{test.name}: {result.failed} of {result.attempted} failed"
