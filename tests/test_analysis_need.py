"""The inverse question: nodes_needed against fills done by hand."""

from __future__ import annotations

import dataclasses

import pytest

from draspeed.analysis import AddNodes, fit, nodes_needed
from draspeed.analysis.bound import mix_bound
from draspeed.cluster import Cluster
from draspeed.generate import generate


def _cluster(kind: str, nodes: int, **options: object) -> tuple[object, list[object]]:
    objects = generate(kind, nodes, **options).decoded()  # type: ignore[arg-type]
    return Cluster.from_objects(objects).snapshot(), list(objects.templates)


def _named(templates: list[object], *names: str) -> list[object]:
    return [t for t in templates if t.metadata.name in names]  # type: ignore[attr-defined]


def _placed(snap: object, shapes: list[object], node_type: AddNodes, k: int, **kw: object) -> int:
    cluster = dataclasses.replace(node_type, count=k).apply(snap)  # type: ignore[arg-type]
    return fit(cluster, shapes, explain_failures=False, **kw).placed  # type: ignore[arg-type]


def test_gpu_nodes_needed() -> None:
    # Two nodes of 4 GPUs, half taken: 4 single-GPU pods fit; 16 more need 4 nodes.
    snap, templates = _cluster("nvidia-gpu", 2, gpus_per_node=4, allocated=0.5)
    single = _named(templates, "single-gpu")
    node_type = AddNodes(0, kind="nvidia-gpu", options={"gpus_per_node": 4})
    report = nodes_needed(snap, single, node_type, 20)  # type: ignore[arg-type]
    assert (report.nodes, report.placed_now, report.placed) == (4, 4, 20)
    assert report.per_node_bound == 4 and report.guess == 4
    assert (3, 16) in report.checks and (4, 20) in report.checks
    assert _placed(snap, single, node_type, 3) == 16 < 20 <= _placed(snap, single, node_type, 4)
    assert report.node_type == "nvidia-gpu:gpus_per_node=4"
    assert report.to_dict()["nodes"] == 4


def test_mig_mix_nodes_needed_is_the_least_that_is_enough() -> None:
    snap, templates = _cluster("nvidia-mig", 1, gpus_per_node=2)
    shapes = _named(templates, "mig-1g10gb", "mig-3g40gb")
    node_type = AddNodes(0, like="node-00000")
    report = nodes_needed(snap, shapes, node_type, 60, ratios=[2, 1])  # type: ignore[arg-type]
    k = report.nodes
    assert k is not None and k > 0
    enough = _placed(snap, shapes, node_type, k, ratios=[2, 1], max_pods=60)
    fewer = _placed(snap, shapes, node_type, k - 1, ratios=[2, 1], max_pods=60)
    assert enough == 60 > fewer
    # The first guess: the mix's optimum on one new node, in its proportions.
    one = dataclasses.replace(node_type, count=1)
    [name] = one.names()
    per_node = mix_bound(one.apply(snap), shapes, name, [2, 1])  # type: ignore[arg-type]
    assert report.per_node_bound == per_node and per_node is not None and per_node > 0
    assert len(report.checks) <= 5


def test_enough_already_and_never_enough() -> None:
    snap, templates = _cluster("nvidia-gpu", 1, gpus_per_node=4)
    single = _named(templates, "single-gpu")
    report = nodes_needed(snap, single, AddNodes(0, kind="nvidia-gpu"), 3)  # type: ignore[arg-type]
    assert report.nodes == 0 and report.checks == [(0, 3)]
    report = nodes_needed(snap, single, AddNodes(0, kind="example"), 10)  # type: ignore[arg-type]
    assert report.nodes is None and report.per_node_bound == 0
    assert report.reason == "a node of this type fits no pod of these shapes"
    with pytest.raises(ValueError, match="need: expected a whole number >= 0"):
        nodes_needed(snap, single, AddNodes(0, kind="example"), -1)  # type: ignore[arg-type]
