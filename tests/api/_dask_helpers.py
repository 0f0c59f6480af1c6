"""Helpers that tests/api/test_dask.py ships to Dask workers by reference (so this module is
imported in the workers: keep it light, no pytest)."""
import os

# how many times each Counted tag was unpickled in this process
UNPICKLED = {}


def _unpickle(tag):
    UNPICKLED[tag] = UNPICKLED.get(tag, 0) + 1
    return Counted(tag)


class Counted:
    """An object that counts its unpickling (per process, per tag): closed over by f, it
    tells how many times f's closure reached each worker."""

    def __init__(self, tag):
        self.tag = tag

    def __reduce__(self):
        return _unpickle, (self.tag,)


def unpickled(tag):
    return UNPICKLED.get(tag, 0)


def pid():
    return os.getpid()
