"""glibc malloc tuning (vecjac/_src/core/allocator.py): on at import, switchable off, and it stops
the map / re-fault cycle of multi-megabyte temporaries."""
import os
import platform
import subprocess
import sys

import pytest

GLIBC = sys.platform.startswith("linux") and platform.libc_ver()[0] == "glibc"

# three 3 MiB temporaries alive at once, freed, again and again (a vectorized backward
# pass in miniature); prints the minor page faults per round after a warm-up
CHURN = """
import resource, sys, numpy as np
import vecjac
def round_():
    a = np.ones((3 << 20) // 8); b = a * 2.0; c = a + b
    return float(c[0])
for _ in range(5):
    round_()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(50):
    round_()
after = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
print(vecjac._src.core.allocator.tuned, (after - before) / 50)
"""


def _churn(setting):
    env = {**os.environ, "VECJAC_MALLOC_TUNING": setting}
    out = subprocess.run([sys.executable, "-c", CHURN], capture_output=True, text=True,
                         env=env, check=True)
    tuned, faults = out.stdout.split()
    return tuned == "True", float(faults)


@pytest.mark.skipif(not GLIBC, reason="the tuning applies to glibc only")
def test_tuned_at_import_and_temporaries_are_reused():
    tuned, faults = _churn("1")
    assert tuned
    assert faults < 20  # memory reused: no fresh pages per round


def _huge_pages_always():
    try:
        with open("/sys/kernel/mm/transparent_hugepage/enabled") as f:
            return "[always]" in f.read()
    except OSError:
        return False


@pytest.mark.skipif(not GLIBC, reason="the tuning applies to glibc only")
def test_switched_off_by_the_environment_and_then_glibc_refaults():
    tuned, faults = _churn("0")
    assert not tuned
    if not _huge_pages_always():  # with 2 MiB pages a round takes only a few faults
        assert faults > 500  # ~2300 pages of temporaries mapped and faulted every round


def test_tune_is_idempotent_and_reports_its_state():
    from vecjac._src.core import allocator
    first = allocator.tune()
    assert allocator.tune() == first == allocator.tuned
