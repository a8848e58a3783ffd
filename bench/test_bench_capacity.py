"""Capacity analysis (group ``capacity``): whole fits and sweeps, one timed run each.

- ``fit-gpu``: single-GPU pods placed first-fit until the cluster is full, on 5,000
  8x H100 full-GPU nodes (40,000 placements, each one ``allocate`` call and one
  ``Snapshot.add_allocated``).
- ``fit-mig``: single-GPU pods (the full-GPU device of each H100) until full on 1,000
  dynamic-MIG nodes (152 devices and 8 counter sets per node; 8,000 placements);
  the nodes are stamped from one generated node (``AddNodes``), as a what-if does.
- ``sweep-local`` / ``sweep-dask``: 64 what-if scenarios (16 node counts x 4 pod
  shapes on a small 8x H100 cluster) on a local pool of 2 processes, and on a Dask
  ``LocalCluster`` of 2 worker processes (started outside the timed part; the
  workers' first imports and cluster builds are inside it, as for the local pool).

Failure explanations are off in the fits (``explain_failures=False``): the figure is
the placement loop. ``extra_info``: pods placed, allocate calls, search steps (work),
nodes, devices, microseconds per placement. The node counts can be lowered with
``DRASPEED_BENCH_GPU_NODES`` and ``DRASPEED_BENCH_MIG_NODES`` (the figures then say so).

Run: ``pytest bench/test_bench_capacity.py --benchmark-only``.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from typing import Any

import pytest
from pytest_benchmark.fixture import BenchmarkFixture

from draspeed.analysis import (
    AddNodes,
    CapacityScenario,
    FitReport,
    GeneratedCluster,
    fit,
    sweep,
)
from draspeed.api.loader import Objects
from draspeed.cluster import Cluster
from draspeed.engine.snapshot import Snapshot
from draspeed.generate import generate

pytestmark = pytest.mark.benchmark(group="capacity")

GPU_NODES = int(os.environ.get("DRASPEED_BENCH_GPU_NODES", "5000"))
MIG_NODES = int(os.environ.get("DRASPEED_BENCH_MIG_NODES", "1000"))


def _record(
    benchmark: BenchmarkFixture, report: FitReport, nodes: int, devices: int, seconds: float
) -> None:
    benchmark.extra_info.update(
        {
            "nodes": nodes,
            "devices": devices,
            "pods_placed": report.placed,
            "allocate_calls": report.calls,
            "work": report.work,
            "us_per_placement": round(1e6 * seconds / max(report.placed, 1), 1),
        }
    )


def _devices(snapshot: Snapshot) -> int:
    return sum(len(s.spec.devices) for s in snapshot.slices)


def _single_gpu(objects: Objects) -> Any:
    return next(t for t in objects.templates if t.metadata.name == "single-gpu")


def test_fit_gpu_until_full(benchmark: BenchmarkFixture) -> None:
    objects = generate("nvidia-gpu", GPU_NODES).decoded()
    snapshot = Cluster.from_objects(objects).snapshot()
    template = _single_gpu(objects)
    reports: list[FitReport] = []

    def run() -> None:
        start = time.perf_counter()
        reports.append(fit(snapshot, template, explain_failures=False))
        benchmark.extra_info["wall_s"] = round(time.perf_counter() - start, 3)

    benchmark.pedantic(run, rounds=1, iterations=1)
    [report] = reports
    assert report.placed == 8 * GPU_NODES
    _record(benchmark, report, GPU_NODES, _devices(snapshot), benchmark.extra_info["wall_s"])


def _mig_cluster(nodes: int) -> tuple[Snapshot, Any]:
    template_cluster = generate("nvidia-mig", 1).decoded()
    empty = Snapshot.build([], template_cluster.classes)
    return AddNodes(nodes, kind="nvidia-mig").apply(empty), _single_gpu(template_cluster)


def test_fit_mig_until_full(benchmark: BenchmarkFixture) -> None:
    snapshot, template = _mig_cluster(MIG_NODES)
    reports: list[FitReport] = []

    def run() -> None:
        start = time.perf_counter()
        reports.append(fit(snapshot, template, explain_failures=False))
        benchmark.extra_info["wall_s"] = round(time.perf_counter() - start, 3)

    benchmark.pedantic(run, rounds=1, iterations=1)
    [report] = reports
    assert report.placed == 8 * MIG_NODES
    _record(benchmark, report, MIG_NODES, _devices(snapshot), benchmark.extra_info["wall_s"])


# ------------------------------------------------------------------------------ sweeps

SWEEP_SHAPES = ("single-gpu", "two-gpus-same-pcie-root", "h100-80gb", "mix")


def _sweep_scenarios() -> list[CapacityScenario]:
    base = GeneratedCluster.of("nvidia-gpu", 4, gpus_per_node=4, allocated=0.25)
    out = []
    for added in range(16):
        change = AddNodes(added, kind="nvidia-gpu", options={"gpus_per_node": 4})
        for shape in SWEEP_SHAPES:
            templates: tuple[str, ...] = (
                ("single-gpu", "two-gpus-same-pcie-root") if shape == "mix" else (shape,)
            )
            out.append(
                CapacityScenario(
                    f"{shape}+{added}",
                    base,
                    templates,
                    (change,),
                    ratios=(2.0, 1.0) if shape == "mix" else None,
                )
            )
    return out


def _record_sweep(benchmark: BenchmarkFixture, results: list) -> None:
    benchmark.extra_info.update(
        {
            "scenarios": len(results),
            "pods_placed": sum(r.placed for r in results),
            "work": sum(r.report.fit.work for r in results),
            "scenario_s_sum": round(sum(r.seconds for r in results), 3),
            "workers_used": len({r.worker for r in results}),
        }
    )


def test_sweep_local_pool(benchmark: BenchmarkFixture) -> None:
    scenarios = _sweep_scenarios()
    results: list = []
    benchmark.pedantic(
        lambda: results.extend(sweep(scenarios, max_workers=2)), rounds=1, iterations=1
    )
    assert len(results) == 64
    _record_sweep(benchmark, results)


@pytest.fixture(scope="module")
def dask_client() -> Iterator[Any]:
    from dask.distributed import Client, LocalCluster

    with (
        LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
        Client(cluster) as client,
    ):
        yield client


def test_sweep_dask_local_cluster(benchmark: BenchmarkFixture, dask_client: Any) -> None:
    scenarios = _sweep_scenarios()
    results: list = []
    benchmark.pedantic(
        lambda: results.extend(sweep(scenarios, dask_client)), rounds=1, iterations=1
    )
    assert len(results) == 64
    _record_sweep(benchmark, results)
    local = [r.to_dict(timings=False) for r in sweep(scenarios[:4], max_workers=2)]
    assert [r.to_dict(timings=False) for r in results[:4]] == local
