"""The suite collects and passes without the dask extra (issue 24): vj.dask leaves dir(vj),
`vj.dask` raises AttributeError naming the extra, and the tests that walk the whole public
surface still run. The dask extra is made unimportable in a subprocess."""
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _pytest(*args):
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "-p", "tests._without_dask", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=600)


@pytest.mark.skipif(sys.platform == "win32", reason="one subprocess is enough on Linux")
def test_the_public_surface_without_dask():
    runs = [_pytest("tests/test_architecture.py", "tests/test_namespaces.py",
                    "tests/api/test_dask.py", "tests/test_bad_inputs.py", "-k",
                    "not catalogued and not fuzz_"),
            _pytest("--collect-only", "tests/test_bad_inputs.py", "tests/test_doctests.py")]
    for out in runs:
        assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]


def test_vj_dask_without_the_extra_names_it():
    code = ("import sys; sys.path.insert(0, '.'); import tests._without_dask; import vecjac as vj\n"
            "assert 'dask' not in dir(vj)\n"
            "try:\n    vj.dask\nexcept AttributeError as e:\n    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert "pip install vecjac[dask]" in out.stdout


def test_ci_installs_the_peers_the_conformance_tests_compare_against():
    """tests/conformance/test_against_{jax,jax_forward,tf}.py skip without JAX and
    TensorFlow: the `peers` extra names them (not torch) and .ci/run installs it."""
    with open(os.path.join(ROOT, "pyproject.toml")) as f:
        text = f.read()
    line = next(line for line in text.splitlines() if line.startswith("peers = "))
    assert '"jax"' in line and '"tensorflow-cpu"' in line and "torch" not in line
    with open(os.path.join(ROOT, ".ci", "run")) as f:
        assert 'pip install -q -e ".[test,peers]"' in f.read()
