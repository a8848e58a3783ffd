"""One evaluation's budget: the cost limit, an allocation bound and the caller's deadline.

The evaluator charges every step into the :class:`Meter` of the evaluation (an
:class:`~draspeed.cel.evaluator.Activation` is one); library functions that loop over
large values or build large results reach the same meter through
:func:`current_meter`, so that they too stop at the limit or the deadline.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, TypeVar

from draspeed.errors import AllocationTimeout

# resourceapi.CELSelectorExpressionMaxCost: the runtime limit of one evaluation.
COST_LIMIT = 1_000_000

COST_MESSAGE = "operation cancelled: actual cost limit exceeded"

# What one evaluation may allocate, in list elements plus string characters. Upstream
# has no such bound: a few functions build results much larger than what they are
# charged (list concatenation costs 1, ``replace`` and ``format`` are charged by their
# inputs, ``flatten`` by its argument), so a chain of them can grow a value
# exponentially at a tiny cost, and cel-go runs out of memory. draspeed ends such an
# evaluation with the cost-limit error instead. Every value a selector can build within
# the cost limit by ordinary means (concatenation and join are charged per character,
# lists per element) stays far below this bound.
ALLOCATION_LIMIT = 10_000_000

# Python-level loops over large values look at the deadline once per this many + 1 steps.
TICK_MASK = 1023

# Large lists are built this many elements at a time, looking at the deadline between:
# copying a million elements takes tens of milliseconds on a busy machine.
CHUNK = 1 << 16


class CostLimitExceeded(Exception):
    """The evaluation used more than the runtime cost limit (never absorbed)."""

    def __init__(self) -> None:
        super().__init__(COST_MESSAGE)


class Meter:
    """One evaluation's running cost, its allocations and the caller's deadline."""

    __slots__ = ("allocated", "cost", "deadline", "limit")

    def __init__(self, limit: int = COST_LIMIT, deadline: float | None = None) -> None:
        self.cost = 0
        self.limit = limit
        self.allocated = 0
        self.deadline = deadline

    def charge(self, amount: int) -> None:
        """Add ``amount``; CostLimitExceeded once the total passes the limit."""
        self.cost += amount
        if self.cost > self.limit:
            raise CostLimitExceeded()

    def reserve(self, size: int) -> None:
        """Account for a result of ``size`` elements or characters before building it."""
        self.allocated += size
        if self.allocated > ALLOCATION_LIMIT:
            raise CostLimitExceeded()

    def tick(self) -> None:
        """AllocationTimeout once the deadline has passed (nothing without one)."""
        deadline = self.deadline
        if deadline is not None and time.monotonic() > deadline:
            raise AllocationTimeout()


class _Unmetered(Meter):
    """Outside any evaluation (library functions called directly, constant folding):
    nothing is counted, nothing is limited."""

    __slots__ = ()

    def charge(self, amount: int) -> None:
        pass

    def reserve(self, size: int) -> None:
        pass


_UNMETERED = _Unmetered()
_local = threading.local()


def current_meter() -> Meter:
    """The meter of the evaluation running in this thread (an unlimited one outside)."""
    return getattr(_local, "meter", _UNMETERED)


def swap_meter(meter: Meter) -> Meter:
    """Make ``meter`` this thread's current meter; returns the one it replaces (restore
    it with another swap when the evaluation ends)."""
    previous: Meter = getattr(_local, "meter", _UNMETERED)
    _local.meter = meter
    return previous


T = TypeVar("T")


def ticking(items: Iterable[T]) -> Iterator[T]:
    """Iterate ``items``, looking at the current evaluation's deadline now and then."""
    meter = current_meter()
    if meter.deadline is None:
        yield from items
        return
    for i, item in enumerate(items):
        if not i & TICK_MASK:
            meter.tick()
        yield item


class Ticker:
    """Counts work in a Python-level loop; looks at the deadline every few thousand units."""

    __slots__ = ("_left", "_meter")

    def __init__(self) -> None:
        self._meter = current_meter()
        self._left = TICK_MASK

    def step(self, work: int = 1) -> None:
        self._left -= work
        if self._left < 0:
            self._left = TICK_MASK
            self._meter.tick()


def extend_ticking(out: list[Any], items: Sequence[Any]) -> list[Any]:
    """``out.extend(items)`` a chunk at a time, looking at the deadline between chunks."""
    n = len(items)
    if n <= CHUNK:
        out.extend(items)
        return out
    meter = current_meter()
    for start in range(0, n, CHUNK):
        out.extend(items[start : start + CHUNK])
        meter.tick()
    return out
