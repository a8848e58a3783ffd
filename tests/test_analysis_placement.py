"""A placement costs what it touches, and answers as asking every node would.

``fit`` remembers answers per node state and shares them between nodes of one kind
(draspeed.analysis.placement). Here every fill is compared with ``memoise=False``
(every question asked on the real snapshot), placement by placement, node by node
(usage, first failure), on generated clusters of every kind; and the scored node
orders with a plain reference written from kube-scheduler's formulas.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from draspeed.analysis import fit, fragmentation
from draspeed.analysis.inventory import Inventory
from draspeed.analysis.kinds import Kinds, compared_attributes
from draspeed.analysis.placement import _substitute
from draspeed.analysis.requests import SelectorVerdicts
from draspeed.analysis.shapes import ShapeOrder, as_shapes, normalise_ratios
from draspeed.analysis.strategies import Strategy, node_score
from draspeed.api.loader import Objects
from draspeed.cluster import Cluster
from draspeed.engine.allocator import Allocator
from draspeed.engine.snapshot import Snapshot
from draspeed.errors import AllocationError
from draspeed.generate import generate

CLUSTERS: list[tuple[str, int, dict[str, Any], list[str], list[float] | None]] = [
    (
        "example",
        4,
        {"gpus_per_node": 4, "allocated": 0.3},
        ["single-gpu", "two-gpus-same-model"],
        [2, 1],
    ),
    (
        "nvidia-gpu",
        5,
        {"gpus_per_node": 4, "allocated": 0.2},
        ["two-gpus-same-pcie-root", "single-gpu"],
        None,
    ),
    ("nvidia-mig", 3, {"gpus_per_node": 2, "allocated": 0.5}, ["mig-3g40gb", "mig-1g10gb"], [1, 3]),
    (
        "nvidia-mig",
        3,
        {"gpus_per_node": 2, "pool_per": "gpu"},
        ["gpu-or-mig", "two-mig-1g10gb-same-gpu"],
        None,
    ),
    (
        "scheduler-perf",
        4,
        {"fill": 0.5},
        ["test-claim-template", "test-claim-template-match"],
        None,
    ),
    (
        "network-attached",
        4,
        {},
        ["fabric-gpu", "two-fabric-gpus-same-rack", "gpu-or-link", "gpu-with-link"],
        [1, 1, 2, 1],
    ),
]


def _cluster(kind: str, nodes: int, options: dict[str, Any]) -> tuple[Snapshot, Objects]:
    objects = generate(kind, nodes, **options).decoded()
    return Cluster.from_objects(objects).snapshot(), objects


def _templates(objects: Objects, names: list[str]) -> list[Any]:
    return [next(t for t in objects.templates if t.metadata.name == n) for n in names]


@pytest.mark.parametrize("strategy", ["first-fit", "round-robin", "most-allocated", "best-fit"])
@pytest.mark.parametrize(
    ("kind", "nodes", "options", "names", "ratios"),
    CLUSTERS,
    ids=[f"{c[0]}-{'-'.join(f'{k}={v}' for k, v in c[2].items())}" for c in CLUSTERS],
)
def test_remembered_answers_place_what_asking_every_node_places(
    kind: str,
    nodes: int,
    options: dict[str, Any],
    names: list[str],
    ratios: list[float] | None,
    strategy: str,
) -> None:
    snap, objects = _cluster(kind, nodes, options)
    templates = _templates(objects, names)
    fast = fit(snap, templates, strategy, ratios)
    plain = fit(snap, templates, strategy, ratios, memoise=False)
    assert fast.placed == plain.placed > 0
    assert [(p.pod, p.shape, p.node, p.devices) for p in fast.placements] == [
        (p.pod, p.shape, p.node, p.devices) for p in plain.placements
    ]
    assert [n.to_dict() for n in fast.nodes] == [n.to_dict() for n in plain.nodes]
    assert fast.cluster.to_dict() == plain.cluster.to_dict()
    # The final states agree too: the same devices are held.
    assert fast.snapshot is not None and plain.snapshot is not None
    assert _held(fast.snapshot) == _held(plain.snapshot)


def test_shared_devices_with_consumable_capacity() -> None:
    # Volumes shared by many claims, each taking 10G of bandwidth, in a pool every
    # node sees: nothing is independent, every answer comes from the real snapshot.
    snap, objects = _cluster("network-attached", 3, {})
    templates = _templates(objects, ["volume-10g", "fabric-gpu"])
    fast = fit(snap, templates, "most-allocated", [4, 1], max_pods=40)
    plain = fit(snap, templates, "most-allocated", [4, 1], max_pods=40, memoise=False)
    assert fast.placed == 40 and fast.stopped == "max-pods"
    assert [(p.node, p.devices) for p in fast.placements] == [
        (p.node, p.devices) for p in plain.placements
    ]
    assert fast.cluster.to_dict() == plain.cluster.to_dict()


def _held(snap: Snapshot) -> list[tuple[str, list[tuple[str, str, str]]]]:
    out = []
    for claim in snap.allocated_claims:
        assert claim.status.allocation is not None
        devices = [(r.driver, r.pool, r.device) for r in claim.status.allocation.devices.results]
        out.append((claim.key, devices))
    return sorted(out)


def test_identical_nodes_are_asked_once() -> None:
    # 40 nodes of 8 H100: nine states (0..8 GPUs taken) whatever the number of nodes.
    snap, objects = _cluster("nvidia-gpu", 40, {})
    report = fit(snap, _templates(objects, ["single-gpu"]), explain_failures=False)
    assert report.placed == 320
    assert report.calls == 9
    # The nodes' GPUs differ by UUID, which the claim never reads: one kind.
    shapes = as_shapes(_templates(objects, ["single-gpu"]))
    verdicts = SelectorVerdicts(snap.classes, shapes, snap.features)
    kinds = Kinds(Inventory(snap, snap.nodes), snap.nodes, verdicts, compared_attributes(verdicts))
    assert len(kinds.kinds) == 1 and len(kinds.kinds[0].members) == 40


def test_a_selector_reading_the_uuid_tells_nodes_apart() -> None:
    snap, _ = _cluster("nvidia-gpu", 3, {"gpus_per_node": 2})
    uuid = next(
        d.attributes["gpu.nvidia.com/uuid"].value
        for rs in snap.slices
        if rs.spec.node_name == "node-00001"
        for d in rs.spec.devices
    )
    [claim] = _claim_with_selector(f"device.attributes['gpu.nvidia.com'].uuid == '{uuid}'")
    report = fit(snap, claim, explain_failures=False)
    assert [(p.node, p.devices) for p in report.placements] == [
        ("node-00001", ["gpu.nvidia.com/node-00001/gpu-0"])
    ]
    plain = fit(snap, claim, explain_failures=False, memoise=False)
    assert report.placements == plain.placements


def _claim_with_selector(expression: str) -> list[Any]:
    from draspeed.api.loader import load

    return load(
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim",
            "metadata": {"name": "pinned", "namespace": "default"},
            "spec": {
                "devices": {
                    "requests": [
                        {
                            "name": "gpu",
                            "exactly": {
                                "deviceClassName": "gpu.nvidia.com",
                                "selectors": [{"cel": {"expression": expression}}],
                            },
                        }
                    ]
                }
            },
        }
    ).claims


def test_errors_are_asked_on_the_real_node_and_reasons_mapped_to_its_names() -> None:
    # A selector that fails on every GPU: the allocator's error names the node's own
    # device, so it is asked on the real snapshot, node by node.
    snap, _ = _cluster("nvidia-gpu", 3, {"gpus_per_node": 1})
    [claim] = _claim_with_selector("device.attributes['gpu.nvidia.com'].nosuch == 'x'")
    fast = fit(snap, claim)
    plain = fit(snap, claim, memoise=False)
    failures = [n.first_failure for n in fast.nodes]
    assert [f.to_dict() if f else None for f in failures] == [
        n.first_failure.to_dict() if n.first_failure else None for n in plain.nodes
    ]
    assert all(f is not None and f.status == "error" for f in failures)
    assert len({f.reason for f in failures if f is not None}) == 3


def test_names_are_substituted_whole() -> None:
    text = "pool gpu.nvidia.com/node-1-gpu0, device node-1-gpu0/gpu-0 of node-1 (gpu-1)"
    names = {"node-1": "node-7", "node-1-gpu0": "node-7-gpu0", "gpu-0": "gpu-1", "gpu-1": "gpu-0"}
    assert _substitute(text, names) == (
        "pool gpu.nvidia.com/node-7-gpu0, device node-7-gpu0/gpu-1 of node-7 (gpu-0)"
    )


# ------------------------------------------------------------------ scored node orders


def by_score(
    snap: Snapshot, objects: Objects, names: list[str], order: str
) -> list[tuple[str, str]]:
    """kube-scheduler's loop by hand: every node asked for every pod, the best score
    wins (the first node on ties)."""
    shapes = as_shapes(_templates(objects, names))
    order_of = ShapeOrder(normalise_ratios(shapes, None))
    placed: list[tuple[str, str]] = []
    classes = sorted(
        {
            r.exactly.device_class_name
            for s in shapes
            for c in s.claims
            for r in c.spec.devices.requests
            if r.exactly is not None
        }
    )
    for s in order_of:
        claims = shapes[s].instantiate(len(placed))
        best: tuple[int, int, Any] | None = None
        for i, node in enumerate(snap.nodes):
            try:
                results = Allocator(snap).allocate(claims, node)
            except AllocationError:
                results = None
            if results is None:
                continue
            counts = {
                c: (d.total, d.in_use)
                for c, d in fragmentation(snap, [node], classes=classes).nodes[0].classes.items()
            }
            pod = {classes[0]: len(results[0].devices.results)}
            score = node_score(order, counts, pod)  # type: ignore[arg-type]
            if best is None or score > best[0]:
                best = (score, i, results)
        if best is None:
            order_of.retire(s)
            continue
        _, i, results = best
        snap = snap.add_allocated(
            [
                dataclasses.replace(c, status=dataclasses.replace(c.status, allocation=r))
                for c, r in zip(claims, results, strict=True)
            ]
        )
        placed.append((shapes[s].name, snap.nodes[i].name))
    return placed


@pytest.mark.parametrize("order", ["least-allocated", "most-allocated"])
def test_scored_orders_choose_as_kube_scheduler_scores(order: str) -> None:
    snap, objects = _cluster("nvidia-gpu", 4, {"gpus_per_node": 4, "allocated": 0.4})
    report = fit(snap, _templates(objects, ["single-gpu"]), order, explain_failures=False)
    expected = by_score(snap, objects, ["single-gpu"], order)
    assert [(p.shape, p.node) for p in report.placements] == expected
    empty, objects = _cluster("nvidia-gpu", 4, {"gpus_per_node": 4})
    report = fit(empty, _templates(objects, ["single-gpu"]), order, explain_failures=False)
    first = [p.node for p in report.placements[:4]]
    if order == "least-allocated":  # spreads: the emptiest node first
        assert first == ["node-00000", "node-00001", "node-00002", "node-00003"]
    else:  # packs: the fullest node that fits
        assert first == ["node-00000"] * 4


def test_node_score_follows_upstreams_integer_formulas() -> None:
    # 8 devices, 3 in use, a pod taking 1: least (8-4)*100/8 = 50, most 4*100/8 = 50.
    assert node_score("least-allocated", {"gpu": (8, 3)}, {"gpu": 1}) == 50
    assert node_score("most-allocated", {"gpu": (8, 3)}, {"gpu": 1}) == 50
    # 3 devices, 1 in use: least (3-2)*100/3 = 33 (integer division), most 66.
    assert node_score("least-allocated", {"gpu": (3, 1)}, {"gpu": 1}) == 33
    assert node_score("most-allocated", {"gpu": (3, 1)}, {"gpu": 1}) == 66
    # Averaged over classes; a class the node has none of does not count.
    assert (
        node_score("most-allocated", {"a": (4, 0), "b": (2, 1)}, {"a": 1, "b": 1, "c": 1})
        == (25 + 100) // 2
    )
    # More requested than there is: least scores 0, most caps at 100.
    assert node_score("least-allocated", {"gpu": (2, 2)}, {"gpu": 1}) == 0
    assert node_score("most-allocated", {"gpu": (2, 2)}, {"gpu": 1}) == 100


def test_strategy_names() -> None:
    assert str(Strategy.parse("best-fit")) == "best-fit"
    assert Strategy.parse("best-fit") == Strategy("first-fit", "best-fit")
    assert Strategy.parse("most-allocated+best-fit") == Strategy("most-allocated", "best-fit")
    assert str(Strategy.parse("least-allocated")) == "least-allocated"
    with pytest.raises(ValueError, match="unknown strategy"):
        Strategy.parse("first-fit+upstream")


def test_an_older_pool_generation_is_ignored_as_the_allocator_ignores_it() -> None:
    # node-00001 also publishes an older generation of its pool (another slice with
    # the same devices, generation 0): the allocator reads only the newest, and
    # held devices are those of the newest generation. Remembered answers agree.
    objects = generate("nvidia-gpu", 3, gpus_per_node=2, allocated=0.5).decoded()
    slices = list(objects.slices)
    [current] = [s for s in slices if s.spec.node_name == "node-00001"]
    older = dataclasses.replace(
        current,
        metadata=dataclasses.replace(current.metadata, name="node-00001-older"),
        spec=dataclasses.replace(
            current.spec, pool=dataclasses.replace(current.spec.pool, generation=0)
        ),
    )
    snap = Snapshot.build([*slices, older], objects.classes, objects.claims, nodes=objects.nodes)
    single = _templates(objects, ["single-gpu"])
    fast = fit(snap, single)
    plain = fit(snap, single, memoise=False)
    assert [(p.node, p.devices) for p in fast.placements] == [
        (p.node, p.devices) for p in plain.placements
    ]
    assert [n.to_dict() for n in fast.nodes] == [n.to_dict() for n in plain.nodes]


def test_answers_remembered_from_one_fill_to_the_next() -> None:
    from draspeed.analysis import AddNodes
    from draspeed.analysis.placement import AnswerMemory

    snap, objects = _cluster("nvidia-mig", 3, {"gpus_per_node": 2, "allocated": 0.4})
    templates = _templates(objects, ["mig-1g10gb", "mig-3g40gb"])
    memory = AnswerMemory(["mig-3g40gb", "mig-1g10gb"])
    with pytest.raises(ValueError, match="an answer memory of other shapes"):
        fit(snap, templates, memory=memory)
    memory = AnswerMemory(["mig-1g10gb", "mig-3g40gb"])
    for added in (0, 2, 3):
        cluster = AddNodes(added, kind="nvidia-mig", options={"gpus_per_node": 2}).apply(snap)
        alone = fit(cluster, templates, "best-fit", explain_failures=False)
        kept = fit(cluster, templates, "best-fit", explain_failures=False, memory=memory)
        assert [(p.node, p.devices) for p in kept.placements] == [
            (p.node, p.devices) for p in alone.placements
        ]
        assert [n.to_dict() for n in kept.nodes] == [n.to_dict() for n in alone.nodes]
        if added:  # the first fill's answers serve the later ones
            assert kept.calls < alone.calls


@pytest.mark.parametrize(
    ("kind", "nodes", "options", "names", "ratios"),
    CLUSTERS,
    ids=[f"{c[0]}-{'-'.join(f'{k}={v}' for k, v in c[2].items())}" for c in CLUSTERS],
)
def test_fragmentation_from_node_states_equals_the_snapshots(
    kind: str,
    nodes: int,
    options: dict[str, Any],
    names: list[str],
    ratios: list[float] | None,
) -> None:
    snap, objects = _cluster(kind, nodes, options)
    report = fit(snap, _templates(objects, names), ratios=ratios, explain_failures=False)
    before, after = report.before(), report.after()
    assert before is not None and after is not None
    assert before.to_dict() == fragmentation(snap).to_dict()
    assert report.snapshot is not None
    assert after.to_dict() == fragmentation(report.snapshot).to_dict()
