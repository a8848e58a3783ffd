"""Shared test setup: Hypothesis profiles and the opt-in ``fuzz`` marker.

Hypothesis profiles, chosen with ``HYPOTHESIS_PROFILE`` (default ``ci``):

- ``ci``: the default test run; few examples, the same on every run (derandomized), no
  example database, seconds per test;
- ``dev``: more examples and a local database of failing examples, for development;
- ``deep``: long runs before a release (tens of minutes).

Tests marked ``fuzz`` are long fuzz runs: they run only when selected with
``-m fuzz``; the default run executes their short counterparts instead.
"""

from __future__ import annotations

import os
import sys

import pytest
from hypothesis import HealthCheck, Phase, settings

# The CEL parser and compiler raise the recursion limit when first used (deeply nested
# expressions; the syntax check the highest, to 40 frames a level of cel-go's 250);
# raising it up front keeps Hypothesis from warning that it changed while a test ran.
sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))

_SLOW_DATA = [HealthCheck.too_slow, HealthCheck.data_too_large]

settings.register_profile(
    "ci",
    max_examples=60,
    deadline=None,
    database=None,
    # The same examples on every run: CI stays reproducible; dev and deep explore.
    derandomize=True,
    print_blob=True,
    suppress_health_check=_SLOW_DATA,
)
settings.register_profile(
    "dev",
    max_examples=400,
    deadline=None,
    print_blob=True,
    suppress_health_check=_SLOW_DATA,
)
settings.register_profile(
    "deep",
    max_examples=5000,
    deadline=None,
    print_blob=True,
    phases=list(Phase),
    suppress_health_check=_SLOW_DATA,
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Long fuzz runs only when asked for with ``-m fuzz``."""
    if "fuzz" in (config.getoption("-m") or ""):
        return
    skip = pytest.mark.skip(reason="long fuzz run: select it with -m fuzz")
    for item in items:
        if "fuzz" in item.keywords:
            item.add_marker(skip)
