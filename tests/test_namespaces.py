"""Public namespaces: TF names present, and no Python builtin shadowed by an import.

`vj.range`, `vj.slice`, `vj.abs`, `vj.round`, `vj.pow` are TF names that are also Python
builtins. A star-import that brings one of them into an op module silently replaces the
builtin for every function of that module (this once made `transpose` build Tensors for
`range(ndim)`), so they must never arrive in a module by import.
"""
import builtins
import importlib
import pkgutil

import numpy as np
import pytest

import vecjac as vj

MODULES = sorted(m.name for m in pkgutil.walk_packages(vj.__path__, "vecjac."))
# modules that need an optional dependency (an extra), skipped where it is missing
OPTIONAL = {"vecjac.dask": "dask.array", "vecjac._src.api.dask": "dask.array",
            "vecjac._src.api.dask_blocks": "cloudpickle"}


@pytest.mark.parametrize("name", MODULES)
def test_no_builtin_is_shadowed_by_an_import(name):
    if name.endswith("__main__"):
        pytest.skip("the CLI entry point")
    if name in OPTIONAL:
        pytest.importorskip(OPTIONAL[name])
    module = importlib.import_module(name)
    own_code = [v for v in vars(module).values()
                if callable(v) and getattr(v, "__module__", None) == name]
    if not own_code:
        pytest.skip("a pure re-export namespace (vj.math ...): exporting the names is its job")
    shadowed = [n for n in dir(builtins) if not n.startswith("_") and n in vars(module)
                and getattr(vars(module)[n], "__module__", name) != name]
    assert not shadowed, f"{name} imports names that shadow builtins: {shadowed}"


def test_tf_names_that_are_builtins_are_exported():
    np.testing.assert_array_equal(vj.range(4).numpy(), [0, 1, 2, 3])
    assert float(vj.abs(-2.0)) == 2.0 and float(vj.math.abs(-3.0)) == 3.0
    assert float(vj.round(2.5)) == 2.0 and float(vj.pow(2.0, 3.0)) == 8.0
    np.testing.assert_array_equal(vj.slice(vj.constant([1, 2, 3, 4]), [1], [2]).numpy(), [2, 3])
    assert "np" not in vars(vj) and "register" not in vars(vj)
