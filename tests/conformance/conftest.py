"""Every test under tests/conformance/ is marked `conformance` (deselect with
-m "not conformance"): these files check vecjac against another project's behaviour
(JAX, TensorFlow) or run a suite ported from one, rather than test one module of vecjac.
"""
import pathlib

import pytest

HERE = pathlib.Path(__file__).resolve().parent


def pytest_collection_modifyitems(config, items):
    # pytest hands this hook every collected item, not only this folder's: filter by path
    for item in items:
        if HERE in item.path.resolve().parents:
            item.add_marker(pytest.mark.conformance)
