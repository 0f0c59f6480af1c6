"""glibc malloc tuning (vecjac/_src/core/allocator.py): on at import, switchable off, and it stops
the map / re-fault cycle of multi-megabyte temporaries."""
import os
import platform
import subprocess
import sys

import pytest

GLIBC = sys.platform.startswith("linux") and platform.libc_ver()[0] == "glibc"

# temporaries alive at once, freed, again and again; prints the minor page faults per
# round after a warm-up
CHURN = """
import resource, sys, numpy as np
import vecjac
def round_():
    {body}
for _ in range(5):
    round_()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range({rounds}):
    round_()
after = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
print(vecjac._src.core.allocator.tuned, (after - before) / {rounds})
"""
# a vectorized backward pass in miniature: three 3 MiB temporaries
SMALL = CHURN.format(rounds=50, body="a = np.ones((3 << 20) // 8); b = a * 2.0; c = a + b")
# a million-unknown sparse Jacobian's (colors x size) tangents: six 24 MiB temporaries,
# 144 MiB freed together at the end of a round
LARGE = CHURN.format(rounds=10, body="a = np.ones((24 << 20) // 8); b = a * 2.0; c = a + b; "
                                     "d = c - a; e = d * b; f = e + c")


def _churn(setting, program=SMALL):
    env = {**os.environ, "VECJAC_MALLOC_TUNING": setting}
    out = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                         env=env, check=True)
    tuned, faults = out.stdout.split()
    return tuned == "True", float(faults)


@pytest.mark.skipif(not GLIBC, reason="the tuning applies to glibc only")
def test_tuned_at_import_and_temporaries_are_reused():
    tuned, faults = _churn("1")
    assert tuned
    assert faults < 20  # memory reused: no fresh pages per round


@pytest.mark.skipif(not GLIBC, reason="the tuning applies to glibc only")
def test_a_round_of_large_temporaries_is_kept_for_the_next():
    # 144 MiB freed at once stays in the heap (below the trim threshold): the next round
    # reuses it instead of faulting it in again
    tuned, faults = _churn("1", LARGE)
    assert tuned
    assert faults < 20


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
