"""Per-node allocation (group ``allocate-per-node``): one pod's claims, asked on every
node of a generated cluster, one timed ``allocate`` call per round.

The reported statistics are per node (min / median / mean over the calls). Each
scenario runs on the fast engine and on the reference engine, on the same decoded
inputs. Fast-engine modes: ``warm``, one snapshot for the whole run; ``scheduler``,
kube-scheduler's loop (one pod per pass over the nodes, its claims prepared once,
each pod committed with ``add_allocated`` before the next is asked); ``cold``, every
timed call the first on its node, as when a new scheduling cycle begins.
``extra_info`` holds the engine, mode, cluster size, the work counter (median and max
``last_stats.search_steps`` per call), how many calls found a fit, and upstream's
own per-node time for the shape where spec §9 has one (``upstream_us``).

The scaling rows run the scheduler_perf one-device claim on clusters of 5, 50, 500 and
5,000 nodes (1x to 1000x): per-node cost should not grow with the cluster.

Run: ``pytest bench/test_bench_allocate.py --benchmark-only``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from pytest_benchmark.fixture import BenchmarkFixture

from draspeed.generate.scenarios import SCENARIOS, Loaded, Scenario

pytestmark = pytest.mark.benchmark(group="allocate-per-node")

# (engine, mode) pairs run for every scenario.
ENGINES = [("fast", "warm"), ("fast", "scheduler"), ("fast", "cold"), ("reference", "cold")]


def _record(benchmark: BenchmarkFixture, scenario: Scenario) -> None:
    benchmark.extra_info["scenario"] = scenario.name
    benchmark.extra_info["shape"] = scenario.description
    if scenario.upstream_us is not None:
        benchmark.extra_info["upstream_us"] = scenario.upstream_us


@pytest.mark.parametrize(("engine", "mode"), ENGINES, ids=[f"{e}-{m}" for e, m in ENGINES])
@pytest.mark.parametrize("name", list(SCENARIOS))
def test_allocate_per_node(
    benchmark: BenchmarkFixture,
    scenarios: Callable[[Scenario], Loaded],
    per_node: Callable[..., Any],
    name: str,
    engine: str,
    mode: str,
) -> None:
    scenario = SCENARIOS[name]
    driver = per_node(scenarios(scenario), engine, mode)
    _record(benchmark, scenario)
    driver.run(benchmark)


SCALING_NODES = [5, 50, 500, 5000]


@pytest.mark.parametrize("mode", ["warm", "cold"])
@pytest.mark.parametrize("nodes", SCALING_NODES, ids=[f"{n}-nodes" for n in SCALING_NODES])
def test_allocate_per_node_scaling(
    benchmark: BenchmarkFixture,
    scenarios: Callable[[Scenario], Loaded],
    per_node: Callable[..., Any],
    nodes: int,
    mode: str,
) -> None:
    base = SCENARIOS["sp-500x10-one-device"]
    scenario = Scenario(
        f"sp-{nodes}x10-one-device",
        base.kind,
        nodes,
        base.templates,
        dict(base.options),
        f"{nodes} nodes x 10 devices, a 1-device claim",
        base.upstream_us,
    )
    driver = per_node(scenarios(scenario), "fast", mode)
    _record(benchmark, scenario)
    benchmark.extra_info["scale"] = nodes // SCALING_NODES[0]
    driver.run(benchmark, max_passes=1)
