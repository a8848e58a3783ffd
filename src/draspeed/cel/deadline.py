"""Deadlines in the CEL layer: compiling and evaluating selectors before a search.

An ``allocate`` call with a deadline spends its first milliseconds here (compiling the
claims' selectors, evaluating them over the device table); the search checks its own
deadline in the compiled core. Deadlines are ``time.monotonic()`` values, as there.
"""

from __future__ import annotations

import time

from draspeed.errors import AllocationTimeout

# Loops over devices or value combinations look at the clock once per this many + 1.
CHECK_EVERY = 255


def check_deadline(deadline: float | None) -> None:
    """Raise AllocationTimeout if ``deadline`` has passed; nothing without a deadline."""
    if deadline is not None and time.monotonic() > deadline:
        raise AllocationTimeout()
