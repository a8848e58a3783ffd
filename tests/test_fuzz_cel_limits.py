"""Fuzzing CEL's bounds: no selector runs past its deadline, none exhausts memory.

Inputs: well-typed expressions from a grammar of expensive constructs
(:func:`~draspeed.testing.strategies.heavy_cel_expressions`: comprehensions over large
ranges, nested, string and list doublings, sets, sorts, regexes, membership in large
lists...). Each is evaluated with a deadline; it must end (a verdict, a CEL error, the
cost-limit error, or AllocationTimeout) no later than ``SLACK`` after the deadline, and
the process's peak memory must stay within ``MEMORY`` of where it started.

The default run tries a few hundred expressions with a short deadline; the opt-in run
(``pytest -m fuzz tests/test_fuzz_cel_limits.py -s``) tries 30,000 with a 1 s deadline
and prints the worst overshoot it measured.
"""

from __future__ import annotations

import contextlib
import resource
import time
from dataclasses import dataclass

import pytest
from hypothesis import HealthCheck, given, settings

from draspeed.api.model import Device, DeviceAttribute
from draspeed.cel import DeviceTable, compile_selector, device_input
from draspeed.errors import AllocationTimeout, CELCompileError, CELRuntimeError
from draspeed.testing.strategies import heavy_cel_expressions

SLACK = 0.050  # seconds past the deadline an evaluation may take
MEMORY = 1 << 30  # bytes of peak-memory growth allowed
SHORT = settings(
    max_examples=200,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
LONG = settings(SHORT, max_examples=30_000)

DEVICE = Device(
    name="d",
    attributes={
        "gpu.example.com/numa": DeviceAttribute("int", 1),
        "gpu.example.com/ids": DeviceAttribute("ints", (1, 2, 3)),
    },
)
INPUT = device_input("gpu.example.com", DEVICE)
TABLE = DeviceTable.build([("gpu.example.com", DEVICE)] * 3)
BASELINE = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # peak RSS, bytes


@dataclass
class _Worst:
    overshoot: float = 0.0  # seconds
    expression: str = ""
    memory: int = 0  # bytes of peak-RSS growth


WORST = _Worst()


def _run(expression: str, budget: float) -> float:
    """Evaluate (per device, then the vector path) with a deadline ``budget`` away;
    the time past the deadline, if it was reached."""
    try:
        selector = compile_selector(expression)
    except CELCompileError:
        return 0.0
    worst = 0.0
    for evaluate in (
        lambda deadline: selector.matches(INPUT, deadline),
        lambda deadline: selector.evaluate(TABLE, deadline),
    ):
        started = time.monotonic()
        deadline = started + budget
        with contextlib.suppress(CELRuntimeError, AllocationTimeout):
            evaluate(deadline)
        worst = max(worst, time.monotonic() - deadline)
    return worst


def check(expression: str, budget: float) -> None:
    late = _run(expression, budget)
    for _ in range(2):  # a busy machine can stall any step: it must happen every time
        if late <= SLACK:
            break
        late = min(late, _run(expression, budget))
    grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - BASELINE
    if late > WORST.overshoot:
        WORST.overshoot, WORST.expression = late, expression
    WORST.memory = max(WORST.memory, grown)
    assert late <= SLACK, f"{late * 1000:.0f} ms past the deadline: {expression}"
    assert grown < MEMORY, f"peak memory grew by {grown / 1e6:.0f} MB: {expression}"


@SHORT
@given(heavy_cel_expressions())
def test_heavy_selectors_end_by_their_deadline(expression: str) -> None:
    check(expression, 0.2)


@pytest.mark.fuzz
@LONG
@given(heavy_cel_expressions())
def test_heavy_selectors_end_by_their_deadline_long(expression: str) -> None:
    check(expression, 1.0)


@pytest.mark.fuzz
def test_report_worst_overshoot() -> None:
    """Run last with ``-s``: the figures of this session's fuzzing."""
    print(
        f"\nworst overshoot {WORST.overshoot * 1000:.1f} ms "
        f"({WORST.expression[:200]}); peak memory growth {WORST.memory / 1e6:.0f} MB"
    )
