"""Worst cases (group ``pathological``): upstream issue #131730.

``n`` identical devices and a claim for ``n + 1``: no solution exists, and a search
that tries combinations visits 2^n of them (upstream: n=12 9.8 ms, n=16 113 ms,
n=20 2.3 s, n=31 hours; spec §9). The fast engine must answer "does not fit" in
< 10 ms for the issue's case (ask 32 where 31 match) by pruning that cannot change
which solution is found first. Variants: all devices identical (``identical-n``), and
64 devices of which a selector lets 31 match (``identical-64-match-31``).

Every call carries a 60 s deadline, so a regression fails with AllocationTimeout
instead of hanging the run. The reference engine (a plain search, like upstream's)
runs only where it finishes in seconds. ``extra_info``: the work counter per call.

Run: ``pytest bench/test_bench_pathological.py --benchmark-only``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import pytest
from pytest_benchmark.fixture import BenchmarkFixture

from draspeed.generate.scenarios import Loaded, Scenario, identical_devices

if TYPE_CHECKING:
    from draspeed.cluster import Engine

pytestmark = pytest.mark.benchmark(group="pathological")

DEADLINE_S = 60.0

CASES = [
    # (scenario, engines)
    (identical_devices(8), ("fast", "reference")),
    (identical_devices(12), ("fast", "reference")),
    (identical_devices(16), ("fast",)),
    (identical_devices(20), ("fast",)),
    (identical_devices(31), ("fast",)),
    (identical_devices(64, matching=31), ("fast",)),
]
PARAMS = [(s, e) for s, engines in CASES for e in engines]


@pytest.mark.parametrize(("scenario", "engine"), PARAMS, ids=[f"{s.name}-{e}" for s, e in PARAMS])
def test_no_solution(
    benchmark: BenchmarkFixture,
    scenarios: Callable[[Scenario], Loaded],
    scenario: Scenario,
    engine: Engine,
) -> None:
    loaded = scenarios(scenario)
    allocator = loaded.allocator(engine)
    node = loaded.nodes[0]

    def allocate() -> object:
        return allocator.allocate(loaded.claims, node, deadline=time.monotonic() + DEADLINE_S)

    assert allocate() is None  # one-time costs (CEL compile, node view) out of the way
    start = time.perf_counter()
    assert allocate() is None
    first = time.perf_counter() - start
    rounds = 3 if first > 1.0 else (20 if first > 0.05 else 200)
    result = benchmark.pedantic(allocate, rounds=rounds, iterations=1, warmup_rounds=1)
    assert result is None
    exact = loaded.claims[0].spec.devices.requests[0].exactly
    assert exact is not None
    benchmark.extra_info.update(
        {
            "scenario": scenario.name,
            "shape": scenario.description,
            "engine": engine,
            "devices": loaded.n_devices,
            "count": exact.count,
            "work": allocator.last_stats.search_steps,
        }
    )
