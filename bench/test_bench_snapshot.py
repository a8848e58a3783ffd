"""Snapshot construction (group ``snapshot-build``) at 1x, 10x, 100x and 1000x size.

Input: decoded generated clusters (decoding has its own group, ``decode``).

- ``build``: ``Snapshot.build(slices, classes, allocated_claims)``.
- ``build+views``: the same, then every node's view gathered once (pools, search
  order, available counters): what a scheduling cycle pays before its first
  ``allocate`` on each node.

Shapes: the scheduler_perf driver (10 devices per node, 100 to 100,000 nodes: 1k to
1M devices, half of them pre-allocated) and 8x H100 dynamic-MIG nodes (152 devices and
8 counter sets per node, ~30 % of the GPUs carved up: 1k to 100k devices; the ~1M
device row needs ``--bench-huge``, since generating and decoding its input takes
minutes). ``extra_info``: devices, nodes, allocated claims, and the resident memory
the snapshot added (``snapshot_rss_mb``, measured on one extra build).

Run: ``pytest bench/test_bench_snapshot.py --benchmark-only [--bench-huge]``.
"""

from __future__ import annotations

import gc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pytest_benchmark.fixture import BenchmarkFixture

from draspeed.api.loader import Objects
from draspeed.engine.snapshot import Snapshot

pytestmark = pytest.mark.benchmark(group="snapshot-build")

# (kind, nodes, options, scale): scale 1 is about 1,000 devices.
SIZES: list[tuple[str, int, dict[str, Any], int]] = [
    ("scheduler-perf", 100, {"fill": 0.5}, 1),
    ("scheduler-perf", 1_000, {"fill": 0.5}, 10),
    ("scheduler-perf", 10_000, {"fill": 0.5}, 100),
    ("scheduler-perf", 100_000, {"fill": 0.5}, 1000),
    ("nvidia-mig", 7, {"allocated": 0.3}, 1),
    ("nvidia-mig", 66, {"allocated": 0.3}, 10),
    ("nvidia-mig", 658, {"allocated": 0.3}, 100),
    ("nvidia-mig", 6_580, {"allocated": 0.3}, 1000),
]
HUGE = {("nvidia-mig", 6_580)}


def _rss_mb() -> float:
    pages = int(Path("/proc/self/statm").read_text().split()[1])
    return pages * 4096 / 2**20


def _build(objects: Objects) -> Snapshot:
    return Snapshot.build(objects.slices, objects.classes, objects.claims)


def _build_and_views(objects: Objects) -> Snapshot:
    snapshot = _build(objects)
    for node in objects.nodes:
        snapshot.node_view(node)
    return snapshot


@pytest.mark.parametrize("step", ["build", "build+views"])
@pytest.mark.parametrize(
    ("kind", "nodes", "options", "scale"), SIZES, ids=[f"{k}-{s}x" for k, _, _, s in SIZES]
)
def test_snapshot_build(
    benchmark: BenchmarkFixture,
    request: pytest.FixtureRequest,
    clusters: Callable[..., Objects],
    kind: str,
    nodes: int,
    options: dict[str, Any],
    scale: int,
    step: str,
) -> None:
    if (kind, nodes) in HUGE and not request.config.getoption("--bench-huge"):
        pytest.skip("~1M MIG devices: run with --bench-huge")
    objects = clusters(kind, nodes, **options)
    fn = _build if step == "build" else _build_and_views
    gc.collect()
    before = _rss_mb()
    kept = fn(objects)
    added = _rss_mb() - before
    del kept
    snapshot = benchmark.pedantic(fn, args=(objects,), rounds=3, iterations=1)
    benchmark.extra_info.update(
        {
            "kind": kind,
            "scale": scale,
            "nodes": nodes,
            "devices": snapshot.n_devices,
            "allocated_claims": len(objects.claims),
            "snapshot_rss_mb": round(added, 1),
        }
    )
