"""Whole-cluster feasibility (group ``feasible-cluster``) and snapshot updates (group
``incremental-update``).

``feasible-cluster``: one ``Allocator.feasible_nodes(claims)`` call over every node:

- ``warm``: the snapshot's layout and the claim set's arrays exist (a scheduler asking
  about its next pod of a shape it has seen); one round is one call;
- ``new-shape``: the layout exists, the claim set is new (its selector rows, bounds and
  constraint codes are built over the whole cluster, then the search runs);
- ``cold``: a fresh snapshot (pools gathered, node blocks built, layout, claim arrays).

Clusters: ``nvidia-gpu`` (8 H100 per node, a 1-GPU claim) at 50 / 500 / 5,000 nodes
(10x steps, for the scaling exponent), and dynamic-MIG nodes (8 H100, every placement
of every profile including the media-extension ones: 208 devices and 8 counter sets
per node, a 1g.10gb claim) at 50 / 500 / 5,000 nodes (the last one ~1M devices; the
MIG nodes are stamped at the model level from one generated node, since decoding
1M MIG devices from YAML takes minutes). ``extra_info``: nodes, devices, nodes that
fit, the work counter summed over nodes, and for the largest MIG cluster the resident
memory the snapshot and its layout added (``rss_mb``).

``incremental-update``: what a scheduling cycle pays to move to the next version --
``add_allocated`` of one pod's claim, and republishing one node's pool (a new
generation of its slices) -- each followed by a ``feasible_nodes`` call on the new
version (reported separately: the update itself is lazy, the first call after it
restates the touched nodes' rows); and ``allocate-after-add``, one ``allocate`` on
one node right after ``add_allocated`` (a placement loop's step, as ``draspeed fit``
takes it). At 500 and 5,000 nodes: an update's cost should not grow with the cluster.

Run: ``pytest bench/test_bench_feasible.py --benchmark-only``; ``--bench-huge`` is
not needed (the stamped MIG cluster builds in seconds).
"""

from __future__ import annotations

import copy
import gc
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from pytest_benchmark.fixture import BenchmarkFixture

from draspeed.analysis.whatif import AddNodes
from draspeed.api.loader import load
from draspeed.api.model import (
    CELDeviceSelector,
    DeviceSelector,
    ResourceClaim,
    ResourceClaimStatus,
)
from draspeed.engine.allocator import Allocator
from draspeed.engine.snapshot import Snapshot
from draspeed.generate import generate
from draspeed.generate.scenarios import claim_from_template

SIZES = [50, 500, 5000]
MIG = {"media_extensions": True}


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _claims(cluster: Any, template: str, pod: int) -> list[ResourceClaim]:
    doc = claim_from_template(cluster.template(template), f"pod-{pod}-claim-0")
    return load([doc], validate=False).claims


_CACHE: dict[tuple[str, int], tuple[Snapshot, Any, str]] = {}


def _cluster(kind: str, nodes: int) -> tuple[Snapshot, Any, str]:
    """(snapshot, generated cluster for its templates, template name), built once."""
    key = (kind, nodes)
    if key not in _CACHE:
        if kind == "nvidia-gpu":
            cluster = generate("nvidia-gpu", nodes)
            objects = cluster.decoded()
            snapshot = Snapshot.build(
                objects.slices, objects.classes, objects.claims, nodes=objects.nodes
            )
            _CACHE[key] = (snapshot, cluster, "single-gpu")
        else:
            cluster = generate("nvidia-mig", 1, **MIG)
            empty = Snapshot.build([], cluster.decoded().classes)
            snapshot = AddNodes(nodes, kind="nvidia-mig", options=MIG).apply(empty)
            _CACHE[key] = (snapshot, cluster, "mig-1g10gb")
    return _CACHE[key]


def _new_shape(claims: list[ResourceClaim], pod: int) -> list[ResourceClaim]:
    """The same claims with one more (always true) selector: a claim set not seen yet."""
    new = copy.deepcopy(claims)
    exactly = new[0].spec.devices.requests[0].exactly
    assert exactly is not None
    exactly.selectors = [
        *exactly.selectors,
        DeviceSelector(cel=CELDeviceSelector(expression=f'"{pod}" != ""')),
    ]
    return new


def _fresh(snapshot: Snapshot) -> Snapshot:
    return Snapshot.build(
        snapshot.slices,
        list(snapshot.classes.values()),
        snapshot.allocated_claims,
        features=snapshot.features,
        nodes=list(snapshot.given_nodes.values()),
    )


def _record(benchmark: BenchmarkFixture, snapshot: Snapshot, feasible: Any) -> None:
    layout = snapshot.cluster_layout()
    benchmark.extra_info.update(
        {
            "nodes": len(layout.nodes),
            "devices": int(layout.L),
            "nodes_fit": len(feasible.feasible),
            "work": feasible.work,
        }
    )


@pytest.mark.benchmark(group="feasible-cluster")
@pytest.mark.parametrize("nodes", SIZES, ids=[f"{n}-nodes" for n in SIZES])
@pytest.mark.parametrize("kind", ["nvidia-gpu", "nvidia-mig"])
@pytest.mark.parametrize("mode", ["warm", "new-shape", "cold"])
def test_feasible_nodes(benchmark: BenchmarkFixture, kind: str, nodes: int, mode: str) -> None:
    if mode == "cold" and nodes == SIZES[-1] and kind == "nvidia-mig":
        pytest.skip("cold 1M-device rounds take minutes; measured once in new-shape setup")
    before = _rss_mb()
    snapshot, cluster, template = _cluster(kind, nodes)
    claims = _claims(cluster, template, 0)
    allocator = Allocator(snapshot)
    feasible = allocator.feasible_nodes(claims)  # layout and this claim set built
    if kind == "nvidia-mig" and nodes == SIZES[-1]:
        benchmark.extra_info["rss_mb"] = round(_rss_mb() - before, 1)
    counter = iter(range(1, 10**9))

    if mode == "warm":
        benchmark.pedantic(lambda: allocator.feasible_nodes(claims), rounds=15, warmup_rounds=2)
    elif mode == "new-shape":

        def setup() -> tuple[tuple[Any, ...], dict[str, Any]]:
            return (_new_shape(claims, next(counter)),), {}

        benchmark.pedantic(allocator.feasible_nodes, setup=setup, rounds=5)
    else:

        def cold_setup() -> tuple[tuple[Any, ...], dict[str, Any]]:
            return (Allocator(_fresh(snapshot)), claims), {}

        gc.collect()
        benchmark.pedantic(
            lambda a, c: a.feasible_nodes(c), setup=cold_setup, rounds=2 if nodes > 500 else 3
        )
    _record(benchmark, snapshot, feasible)


INCREMENTAL_SIZES = SIZES[-2:]


@pytest.mark.benchmark(group="incremental-update")
@pytest.mark.parametrize("nodes", INCREMENTAL_SIZES, ids=[f"{n}-nodes" for n in INCREMENTAL_SIZES])
@pytest.mark.parametrize("kind", ["nvidia-gpu", "nvidia-mig"])
@pytest.mark.parametrize(
    "step",
    [
        "add_allocated",
        "feasible-after-add",
        "allocate-after-add",
        "update_slices",
        "feasible-after-update",
    ],
)
def test_incremental(benchmark: BenchmarkFixture, kind: str, nodes: int, step: str) -> None:
    snapshot, cluster, template = _cluster(kind, nodes)
    asked = _claims(cluster, template, 0)
    Allocator(snapshot).feasible_nodes(asked)  # the version everything derives from
    state: dict[str, Any] = {"snap": snapshot, "pod": 1000}

    def next_pod() -> list[ResourceClaim]:
        state["pod"] += 1
        return _claims(cluster, template, state["pod"])

    if step in ("add_allocated", "feasible-after-add", "allocate-after-add"):
        by_name = {n.name: n for n in snapshot.nodes}
        node_names = list(by_name)

        def setup() -> tuple[tuple[Any, ...], dict[str, Any]]:
            snap: Snapshot = state["snap"]
            claims = next_pod()
            name = node_names[state["pod"] % len(node_names)]
            results = Allocator(snap).allocate(claims, by_name[name])
            assert results
            done = [
                replace(c, status=ResourceClaimStatus(allocation=r))
                for c, r in zip(claims, results, strict=True)
            ]
            if step == "add_allocated":
                return (snap, done), {}
            state["snap"] = snap.add_allocated(done)
            if step == "allocate-after-add":  # the next pod, on the next node
                after = node_names[(state["pod"] + 1) % len(node_names)]
                return (state["snap"], _claims(cluster, template, state["pod"] + 10**6), after), {}
            return (state["snap"],), {}

        if step == "add_allocated":

            def run(snap: Snapshot, done: list[ResourceClaim]) -> None:
                state["snap"] = snap.add_allocated(done)

        elif step == "allocate-after-add":

            def run(snap: Snapshot, claims: list[ResourceClaim], name: str) -> None:  # type: ignore[misc]
                assert Allocator(snap).allocate(claims, by_name[name])

        else:

            def run(snap: Snapshot) -> None:  # type: ignore[misc]
                Allocator(snap).feasible_nodes(asked)

        benchmark.pedantic(run, setup=setup, rounds=20)
    else:
        slices = snapshot.slices

        def setup() -> tuple[tuple[Any, ...], dict[str, Any]]:
            snap: Snapshot = state["snap"]
            state["pod"] += 1
            victim = slices[(state["pod"] * 7919) % len(slices)]
            pool = [
                s
                for s in snap.slices
                if s.spec.pool.name == victim.spec.pool.name and s.spec.driver == victim.spec.driver
            ]
            fresh = []
            for s in pool:
                new = copy.copy(s)
                new.spec = copy.copy(s.spec)
                new.spec.pool = replace(s.spec.pool, generation=s.spec.pool.generation + 1)
                fresh.append(new)
            if step == "update_slices":
                return (snap, fresh), {}
            state["snap"] = snap.update_slices(added=fresh)
            return (state["snap"],), {}

        if step == "update_slices":

            def run(snap: Snapshot, fresh: list[Any]) -> None:  # type: ignore[misc]
                state["snap"] = snap.update_slices(added=fresh)

        else:

            def run(snap: Snapshot) -> None:  # type: ignore[misc]
                Allocator(snap).feasible_nodes(asked)

        benchmark.pedantic(run, setup=setup, rounds=8)
    layout = snapshot.cluster_layout()
    benchmark.extra_info.update({"nodes": len(layout.nodes), "devices": int(layout.L)})
