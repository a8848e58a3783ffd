"""Capacity analysis (group ``capacity``): whole fits and sweeps, one timed run each.

- ``fit-gpu``: single-GPU pods placed first-fit until the cluster is full, on 100,
  1,000 and 5,000 nodes of 8 H100 full GPUs (800 to 40,000 placements);
- ``fit-mig``: a 1g.10gb / 3g.40gb / 7g.80gb mix (ratio 1:1:1) until full on 100 and
  1,000 dynamic-MIG nodes (152 devices and 8 counter sets per node), stamped from one
  generated node (``AddNodes``), as a what-if does; ``fit-mig-generated`` the same on
  a generated 1,000-node cluster (slice names differ per node, so its nodes fall into
  more kinds);
- ``fit-gpu-plain``: the 100-node GPU fill asking the real snapshot every question
  (``memoise=False``): what the fill cost before answers were shared;
- ``sweep-local`` / ``sweep-dask``: 64 what-if scenarios (16 node counts x 4 pod
  shapes on a small 8x H100 cluster) on a local pool of 2 processes, and on a Dask
  ``LocalCluster`` of 2 worker processes (started outside the timed part; the
  workers' first imports and cluster builds are inside it, as for the local pool).

The fills time ``fit`` from the snapshot to the report (reading the cluster's nodes
and pools included); explanations are off (``explain_failures=False``). ``extra_info``:
pods placed, allocate calls, search steps (work), node kinds, nodes, devices,
microseconds per placement. ``DRASPEED_BENCH_GPU_NODES`` / ``DRASPEED_BENCH_MIG_NODES``
(comma-separated) replace the node counts.

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
from draspeed.analysis.shapes import PodShape
from draspeed.api.loader import Objects
from draspeed.cluster import Cluster
from draspeed.engine.snapshot import Snapshot
from draspeed.generate import generate

pytestmark = pytest.mark.benchmark(group="capacity")


def _sizes(variable: str, default: str) -> list[int]:
    return [int(n) for n in os.environ.get(variable, default).split(",")]


GPU_NODES = _sizes("DRASPEED_BENCH_GPU_NODES", "100,1000,5000")
MIG_NODES = _sizes("DRASPEED_BENCH_MIG_NODES", "100,1000")
MIG_MIX = ("1g.10gb", "3g.40gb", "7g.80gb")


def _timed_fit(
    benchmark: BenchmarkFixture, snapshot: Snapshot, shapes: Any, **options: Any
) -> FitReport:
    reports: list[FitReport] = []

    def run() -> None:
        start = time.perf_counter()
        reports.append(fit(snapshot, shapes, explain_failures=False, **options))
        benchmark.extra_info["wall_s"] = round(time.perf_counter() - start, 3)

    benchmark.pedantic(run, rounds=1, iterations=1)
    [report] = reports
    seconds = benchmark.extra_info["wall_s"]
    benchmark.extra_info.update(
        {
            "nodes": len(snapshot.nodes),
            "devices": sum(len(s.spec.devices) for s in snapshot.slices),
            "pods_placed": report.placed,
            "allocate_calls": report.calls,
            "work": report.work,
            "us_per_placement": round(1e6 * seconds / max(report.placed, 1), 1),
        }
    )
    return report


def _single_gpu(objects: Objects) -> Any:
    return next(t for t in objects.templates if t.metadata.name == "single-gpu")


@pytest.mark.parametrize("nodes", GPU_NODES)
def test_fit_gpu_until_full(benchmark: BenchmarkFixture, nodes: int) -> None:
    objects = generate("nvidia-gpu", nodes).decoded()
    snapshot = Cluster.from_objects(objects).snapshot()
    report = _timed_fit(benchmark, snapshot, _single_gpu(objects))
    assert report.placed == 8 * nodes


def test_fit_gpu_plain(benchmark: BenchmarkFixture) -> None:
    objects = generate("nvidia-gpu", 100).decoded()
    snapshot = Cluster.from_objects(objects).snapshot()
    report = _timed_fit(benchmark, snapshot, _single_gpu(objects), memoise=False)
    assert report.placed == 800


def mig_shape(profile: str) -> PodShape:
    """One pod with one claim for a MIG device of ``profile``."""
    return PodShape.of(
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaimTemplate",
            "metadata": {"name": "mig-" + profile.replace(".", ""), "namespace": "default"},
            "spec": {
                "spec": {
                    "devices": {
                        "requests": [
                            {
                                "name": "mig",
                                "exactly": {
                                    "deviceClassName": "mig.nvidia.com",
                                    "selectors": [
                                        {
                                            "cel": {
                                                "expression": "device.attributes"
                                                f"['gpu.nvidia.com'].profile == '{profile}'"
                                            }
                                        }
                                    ],
                                },
                            }
                        ]
                    }
                }
            },
        }
    )


@pytest.mark.parametrize("nodes", MIG_NODES)
def test_fit_mig_mix_until_full(benchmark: BenchmarkFixture, nodes: int) -> None:
    template_cluster = generate("nvidia-mig", 1).decoded()
    empty = Snapshot.build([], template_cluster.classes)
    snapshot = AddNodes(nodes, kind="nvidia-mig").apply(empty)
    report = _timed_fit(benchmark, snapshot, [mig_shape(p) for p in MIG_MIX])
    # Per GPU one 7g.80gb, or two 3g.40gb, or 3g.40gb and 1g.10gb ...: every GPU used.
    assert report.cluster.counters["multiprocessors"].used > 0
    assert report.stopped == "full" and report.placed >= 8 * nodes


def test_fit_mig_generated(benchmark: BenchmarkFixture) -> None:
    # The 1,000 nodes (fewer when asked for smaller sizes): the generator makes
    # at most a million devices, about 4,800 such nodes.
    nodes = min(MIG_NODES[-1], 1000)
    objects = generate("nvidia-mig", nodes).decoded()
    snapshot = Cluster.from_objects(objects).snapshot()
    report = _timed_fit(benchmark, snapshot, [mig_shape(p) for p in MIG_MIX])
    assert report.placed >= 8 * nodes


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
