"""Hypothesis profiles, chosen by the environment variable VECJAC_HYPOTHESIS_PROFILE:

- "ci" (default): few examples, derandomized (the same examples on every run), no
  deadline: the whole suite stays fast and reproducible.
- "thorough": many random examples per property (and the example database, so a failure
  found once is replayed first next time); run it before a release or after touching
  gradients or converters:
  VECJAC_HYPOTHESIS_PROFILE=thorough python -m pytest tests/test_registry.py
Tests that want the profile's example count must not pass max_examples themselves.

vj.function's optimized replays are built in the caller's thread on the third replay
(VECJAC_BACKGROUND_COMPILE=0), so that tests see them at a known call; the background
worker has its own tests (tests/transforms/function/test_background.py).
"""
import os

os.environ["VECJAC_BACKGROUND_COMPILE"] = "0"  # whatever the shell says: tests count calls

from hypothesis import HealthCheck, settings

_QUIET = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much]

settings.register_profile("ci", max_examples=3, deadline=None, derandomize=True,
                          suppress_health_check=_QUIET, print_blob=True)
settings.register_profile("thorough", max_examples=60, deadline=None,
                          suppress_health_check=_QUIET, print_blob=True)

PROFILE = os.environ.get("VECJAC_HYPOTHESIS_PROFILE", "ci")
if PROFILE not in ("ci", "thorough"):
    raise ValueError(f"VECJAC_HYPOTHESIS_PROFILE must be 'ci' or 'thorough', got {PROFILE!r}")
settings.load_profile(PROFILE)
