"""draspeed.analysis.fit: the same placements as calling Allocator.allocate by hand.

The hand-written reference below asks every node for every pod, without the
cursor fit() keeps per shape; equal placements (node and devices, pod by pod)
show that skipping nodes a shape already failed on loses nothing.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from typing import Any

import pytest

from draspeed.analysis import PodShape, fit
from draspeed.analysis.shapes import ShapeOrder, as_shapes, normalise_ratios
from draspeed.api.loader import Objects, load
from draspeed.api.model import Node, ResourceClaim, ResourceClaimTemplate
from draspeed.cluster import Cluster
from draspeed.engine.allocator import Allocator
from draspeed.engine.snapshot import Snapshot
from draspeed.errors import AllocationError
from draspeed.generate import generate


def _cluster(kind: str, nodes: int, **options: Any) -> tuple[Snapshot, Objects]:
    objects = generate(kind, nodes, **options).decoded()
    return Cluster.from_objects(objects).snapshot(), objects


def _template(objects: Objects, name: str) -> ResourceClaimTemplate:
    return next(t for t in objects.templates if t.metadata.name == name)


def _commit(snap: Snapshot, claims: list[ResourceClaim], results: list) -> Snapshot:
    return snap.add_allocated(
        [
            dataclasses.replace(c, status=dataclasses.replace(c.status, allocation=r))
            for c, r in zip(claims, results, strict=True)
        ]
    )


def _devices(results: list) -> list[str]:
    return [f"{d.driver}/{d.pool}/{d.device}" for r in results for d in r.devices.results]


def by_hand(
    snap: Snapshot, shapes: list[PodShape], weights: Sequence[float], round_robin: bool = False
) -> list[tuple[str, str, list[str]]]:
    """Place pods by asking every node, in order, for every pod: (shape, node, devices)."""
    nodes: list[Node] = snap.nodes
    order = ShapeOrder(weights)
    placed: list[tuple[str, str, list[str]]] = []
    start = [0] * len(shapes)
    for s in order:
        claims = shapes[s].instantiate(len(placed))
        n = len(nodes)
        tries = [(start[s] + k) % n for k in range(n)] if round_robin else range(n)
        for i in tries:
            try:
                results = Allocator(snap).allocate(claims, nodes[i])
            except AllocationError:
                results = None
            if results is not None:
                snap = _commit(snap, claims, results)
                placed.append((shapes[s].name, nodes[i].name, _devices(results)))
                start[s] = i + 1
                break
        else:
            order.retire(s)
    return placed


CASES = [
    ("example", 3, {"gpus_per_node": 4, "allocated": 0.25}, ["single-gpu"], None),
    ("example", 3, {"gpus_per_node": 4}, ["two-gpus-same-model", "single-gpu"], [1, 2]),
    ("nvidia-gpu", 3, {"gpus_per_node": 4, "allocated": 0.3}, ["two-gpus-same-pcie-root"], None),
    ("nvidia-mig", 1, {"gpus_per_node": 2}, ["mig-3g40gb", "mig-1g10gb"], [1, 3]),
    ("nvidia-mig", 2, {"gpus_per_node": 1, "allocated": 0.5}, ["gpu-or-mig"], None),
]


@pytest.mark.parametrize("strategy", ["first-fit", "round-robin"])
@pytest.mark.parametrize(
    ("kind", "nodes", "options", "names", "ratios"),
    CASES,
    ids=[f"{c[0]}-{'+'.join(c[3])}" for c in CASES],
)
def test_fit_places_what_allocating_by_hand_places(
    kind: str,
    nodes: int,
    options: dict,
    names: list[str],
    ratios: list[float] | None,
    strategy: str,
) -> None:
    snap, objects = _cluster(kind, nodes, **options)
    templates = [_template(objects, n) for n in names]
    report = fit(snap, templates, strategy, ratios, explain_failures=False)
    shapes = as_shapes(templates)
    expected = by_hand(
        snap, shapes, normalise_ratios(shapes, ratios), round_robin=strategy == "round-robin"
    )
    assert [(p.shape, p.node, p.devices) for p in report.placements] == expected
    assert report.placed == len(expected) > 0
    assert report.placed_by_shape == {
        s.name: sum(1 for e in expected if e[0] == s.name) for s in shapes
    }
    assert report.stopped == "full"
    # The final state has every placement; the input snapshot is unchanged.
    assert report.snapshot is not None
    assert len(report.snapshot.allocated_claims) == len(snap.allocated_claims) + report.placed
    assert sum(n.total_pods for n in report.nodes) == report.placed


def test_fit_counts_and_per_node_usage_on_example_nodes() -> None:
    # 3 nodes x 4 identical GPUs, 3 of them already taken: 9 single-GPU pods fit.
    snap, objects = _cluster("example", 3, gpus_per_node=4, allocated=0.25)
    report = fit(snap, _template(objects, "single-gpu"))
    assert report.placed == 9
    for node in report.nodes:
        assert node.usage.devices.total == 4
        assert node.usage.devices.in_use == 4
        assert node.usage.devices.free == 0
        assert node.first_failure is not None
        assert node.first_failure.status == "does-not-fit"
        assert node.first_failure.reason  # explain()'s summary
    assert sum(n.devices_placed for n in report.nodes) == 9
    assert report.cluster.devices.total == 12 and report.cluster.devices.in_use == 12
    # Asking the real snapshot: one call per pod and one failed call per node (a
    # full node is not asked again). Remembering answers per node state: the three
    # nodes publish the same GPUs, so each state is asked once whichever node is in it.
    plain = fit(snap, _template(objects, "single-gpu"), memoise=False)
    assert plain.calls == 9 + 3 and plain.work > 0
    assert report.calls < plain.calls
    assert [(p.node, p.devices) for p in report.placements] == [
        (p.node, p.devices) for p in plain.placements
    ]
    json.dumps(report.to_dict(placements=True))


def test_fit_counts_counters_on_dynamic_mig() -> None:
    # One H100 in dynamic-MIG mode: seven 1g.10gb placements fit, using 7 of 8
    # memory slices; slice 7 is left and nothing that is free can use it.
    snap, objects = _cluster("nvidia-mig", 1, gpus_per_node=1)
    report = fit(snap, _template(objects, "mig-1g10gb"))
    assert report.placed == 7
    [node] = report.nodes
    counters = node.usage.counters
    assert counters["multiprocessors"].used == 7 * 16
    assert counters["multiprocessors"].capacity == 132
    assert counters["memory-slice-3"].used == 1
    assert counters["memory-slice-7"].used == 0
    assert node.usage.stranded["memory-slice-7"] == 1
    assert node.usage.stranded["multiprocessors"] == 132 - 7 * 16
    # All seven 1g.10gb placements are taken: explain() says so.
    assert node.first_failure is not None
    assert "0 available (7 in use)" in (node.first_failure.reason or "")


def test_ratios_order_pods_deterministically() -> None:
    order = ShapeOrder([3, 1])
    picks = [s for _, s in zip(range(8), order, strict=False)]
    assert picks == [0, 0, 1, 0, 0, 0, 1, 0]
    snap, objects = _cluster("example", 2, gpus_per_node=4)
    report = fit(
        snap,
        [_template(objects, "single-gpu"), _template(objects, "gpu-40gi")],
        ratios={"single-gpu": 3, "gpu-40gi": 1},
        explain_failures=False,
    )
    assert [p.shape for p in report.placements[:4]] == [
        "single-gpu",
        "single-gpu",
        "gpu-40gi",
        "single-gpu",
    ]
    assert report.placed == 8


def test_max_pods_nodes_and_first_exhausted() -> None:
    snap, objects = _cluster("example", 3, gpus_per_node=2)
    single = _template(objects, "single-gpu")
    report = fit(snap, single, max_pods=3, explain_failures=False)
    assert report.placed == 3 and report.stopped == "max-pods"
    assert [p.node for p in report.placements] == ["node-00000", "node-00000", "node-00001"]
    report = fit(snap, single, nodes=["node-00002"], explain_failures=False)
    assert report.placed == 2 and [n.node for n in report.nodes] == ["node-00002"]
    two = _template(objects, "two-gpus-same-model")
    report = fit(snap, [two, single], stop_at_first_exhausted=True, explain_failures=False)
    assert report.stopped == "first-exhausted"
    # two@node0, single@node1, two@node2, single@node1, then two fits nowhere.
    assert report.placed_by_shape == {"two-gpus-same-model": 2, "single-gpu": 2}


def test_a_fatal_error_is_the_nodes_failure_reason() -> None:
    snap, _ = _cluster("example", 2, gpus_per_node=1)
    [claim] = load(
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim",
            "metadata": {"name": "c", "namespace": "default"},
            "spec": {
                "devices": {
                    "requests": [{"name": "r", "exactly": {"deviceClassName": "no-such-class"}}]
                }
            },
        }
    ).claims
    report = fit(snap, claim)
    assert report.placed == 0
    for node in report.nodes:
        assert node.first_failure is not None
        assert node.first_failure.status == "error"
        assert "no-such-class" in (node.first_failure.reason or "")


def test_multi_claim_pods_and_unknown_nodes() -> None:
    snap, objects = _cluster("example", 1, gpus_per_node=3)
    [proto] = [PodShape.of(_template(objects, "single-gpu")).claims[0]]
    pod = PodShape("two-claims", (proto, proto))
    report = fit(snap, pod, explain_failures=False)
    assert report.placed == 1  # 2 GPUs for the first pod, 1 left: the second does not fit
    assert len(report.placements[0].devices) == 2
    report = fit(snap, pod, nodes=["ghost"], explain_failures=False)
    assert report.placed == 0 and report.nodes[0].usage.devices.total == 0


def test_bad_arguments() -> None:
    snap, objects = _cluster("example", 1, gpus_per_node=1)
    single = _template(objects, "single-gpu")
    with pytest.raises(ValueError, match="unknown strategy 'worst-fit'"):
        fit(snap, single, "worst-fit")
    with pytest.raises(ValueError, match="unknown strategy 'round-robin\\+first-fit'"):
        fit(snap, single, "round-robin+first-fit")
    with pytest.raises(ValueError, match="listed twice"):
        fit(snap, single, nodes=["node-00000", "node-00000"])
    with pytest.raises(ValueError, match="ratios"):
        fit(snap, [single], ratios=[1, 2])
    with pytest.raises(ValueError, match="unknown shapes"):
        fit(snap, [single], ratios={"nope": 1})
    with pytest.raises(ValueError, match="no pod shapes"):
        fit(snap, [])
