"""Progress bars over pfor chunks (`jacobian(..., progress=True)`).

A bar appears only when the loop runs in chunks: it is created when the first chunk
finishes, so unchunked work prints nothing. It uses tqdm.auto (a widget in Jupyter, text
on stderr elsewhere) when tqdm is installed; without tqdm the first chunk warns once that
no bar can be shown (pip install tqdm). Nothing is shown by default.
"""
import contextlib
import importlib
import warnings

import numpy as np


def _tqdm():
    # tqdm is optional and costs import time: loaded on the first bar only
    try:
        return importlib.import_module("tqdm.auto").tqdm
    except ImportError:
        return None


class ChunkProgress:
    """Callback given to pfor's chunk loop: receives the size of each finished chunk."""

    def __init__(self, total, desc):
        self.total = total
        self.desc = desc
        self.done = 0
        self._bar = None
        self._failed = False

    def __call__(self, n):
        self.done += n
        if self._bar is None and not self._failed:
            tqdm = _tqdm()
            if tqdm is None:
                self._failed = True
                warnings.warn(f"{self.desc}: progress=True shows a bar with tqdm, which is not "
                              "installed (pip install tqdm); computing without one",
                              RuntimeWarning, stacklevel=2)
                return
            self._bar = tqdm(total=self.total, desc=self.desc, unit="row", leave=False)
        if self._bar is not None:
            self._bar.update(n)

    def close(self):
        if self._bar is not None:
            self._bar.close()
            self._bar = None


@contextlib.contextmanager
def chunk_progress(enabled, total, desc):
    """A ChunkProgress for `total` loop iterations when `enabled` (True, or a string: the
    bar's description instead of `desc`), else None."""
    if isinstance(enabled, str):
        desc, enabled = enabled, True
    if not isinstance(enabled, (bool, np.bool_)):
        raise TypeError(f"{desc}: progress must be a bool, got {enabled!r}")
    if not enabled:
        yield None
        return
    progress = ChunkProgress(total, desc)
    try:
        yield progress
    finally:
        progress.close()
