"""Background compilation for vj.function: a plan's fusion and numba kernels built by a
worker thread while its NumPy replay serves the calls.

A plan is first replayed step by step with NumPy (vecjac/_src/transforms/function/plan.py).
Its optimized replay (fused segments, compiled chains, generated code) costs numba's
import and cache load (0.4-0.9 s) and a compile per chain, and the fusion itself about
10 us per step: paid on one call, that was a stall of up to a second on the fourth
call. Here it is a job for one worker thread, started on the plan's first replay; the
plan switches to the optimized replay when the job has finished (one attribute store).
Both replays give the same bits, so the switch never changes a result, only when calls
get faster. Python's GIL shares one core between the worker and the caller: the work is
not free, but no call waits for all of it.

VECJAC_BACKGROUND_COMPILE=0 switches the worker off (read at each plan's first replay):
the job then runs on the plan's third replay, in the caller's thread, as before. Each
job is announced on the "vecjac" logger (INFO): what is compiled, and how long it took.
"""
import atexit
import logging
import os
import threading

logger = logging.getLogger("vecjac")
_lock = threading.Lock()
_jobs = []
_worker = None
_idle = threading.Event()
_idle.set()
_stopping = threading.Event()


def enabled():
    """True unless VECJAC_BACKGROUND_COMPILE is 0, false or no."""
    return os.environ.get("VECJAC_BACKGROUND_COMPILE", "").strip().lower() not in (
        "0", "false", "no")


def submit(job):
    """Run job() in the worker thread (started when needed, ended when idle)."""
    global _worker
    with _lock:
        _jobs.append(job)
        _idle.clear()
        if _worker is None:
            _worker = threading.Thread(target=_work, name="vecjac-compile", daemon=True)
            _worker.start()


def _work():
    global _worker
    while True:
        with _lock:
            if not _jobs or _stopping.is_set():
                _worker = None
                _idle.set()
                return
            job = _jobs.pop(0)
        try:
            job()
        except Exception:  # noqa: BLE001  the NumPy replay stays: slower, still right
            logger.debug("vecjac: a background compile failed", exc_info=True)


def wait(timeout=None):
    """Block until every submitted job has finished (tests, benchmarks); True if so."""
    return _idle.wait(timeout)


def stopping():
    """True once the interpreter exits: a job stops at its next phase, unfinished."""
    return _stopping.is_set()


@atexit.register
def _stop():
    """At exit, the worker (a daemon thread, so that exiting does not wait for its
    queue) finishes the phase at hand and ends before the interpreter is torn down
    under it: one kernel compile at most, not the whole queue."""
    _stopping.set()
    worker = _worker
    if worker is not None:
        worker.join()
