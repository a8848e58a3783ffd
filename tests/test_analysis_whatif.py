"""draspeed.analysis.whatif: adding, removing and cordoning nodes, before and after."""

from __future__ import annotations

import json
from typing import Any

import pytest

from draspeed.analysis import (
    AddNodes,
    Change,
    Cordon,
    NodeTemplate,
    RemoveNodes,
    apply_changes,
    fit,
    fragmentation,
    what_if,
)
from draspeed.api.loader import Objects
from draspeed.api.model import (
    DeviceTaint,
    DeviceTaintRule,
    DeviceTaintSelector,
    ObjectMeta,
    ResourceClaimTemplate,
)
from draspeed.cluster import Cluster
from draspeed.engine.snapshot import Snapshot
from draspeed.generate import generate


def _gpu_cluster(nodes: int = 2, gpus: int = 2) -> tuple[Snapshot, Objects]:
    objects = generate("nvidia-gpu", nodes, gpus_per_node=gpus).decoded()
    return Cluster.from_objects(objects).snapshot(), objects


def _single(objects: Objects) -> ResourceClaimTemplate:
    return next(t for t in objects.templates if t.metadata.name == "single-gpu")


def test_added_generated_nodes_take_pods() -> None:
    snap, objects = _gpu_cluster()
    change = AddNodes(3, kind="nvidia-gpu", options={"gpus_per_node": 2})
    after = change.apply(snap)
    names = [n.name for n in after.nodes]
    assert names[-3:] == ["new-nvidia-gpu-00000", "new-nvidia-gpu-00001", "new-nvidia-gpu-00002"]
    report = fit(after, _single(objects), explain_failures=False)
    assert report.placed == 4 + 3 * 2
    assert report.node("new-nvidia-gpu-00001").pods == {"single-gpu": 2}
    # Pools and slices are the new node's own.
    new_slices = [s for s in after.slices if s.spec.node_name == "new-nvidia-gpu-00001"]
    assert [s.spec.pool.name for s in new_slices] == ["new-nvidia-gpu-00001"]
    assert new_slices[0].metadata.name.startswith("new-nvidia-gpu-00001-gpu.nvidia.com-")
    # The original snapshot is unchanged.
    assert len(snap.nodes) == 2


def test_nodes_like_an_existing_one_and_missing_classes() -> None:
    snap, objects = _gpu_cluster(1, 3)
    after = AddNodes(2, like="node-00000", prefix="clone").apply(snap)
    assert [n.name for n in after.nodes] == ["node-00000", "clone-00000", "clone-00001"]
    assert after.nodes[1].labels["kubernetes.io/hostname"] == "clone-00000"
    assert fit(after, _single(objects), explain_failures=False).placed == 9
    # Adding MIG nodes to a full-GPU cluster brings the MIG class along.
    with_mig = AddNodes(1, kind="nvidia-mig", options={"gpus_per_node": 1}).apply(snap)
    assert "mig.nvidia.com" in with_mig.classes
    frag = fragmentation(with_mig)
    assert frag.node("new-nvidia-mig-00000").free_by_profile["1g.10gb"] == 7


def test_template_stamp_renames_node_pool_and_slices() -> None:
    template = NodeTemplate.generated("nvidia-mig", gpus_per_node=1, pool_per="gpu")
    node, slices = template.stamp("gpu-box-7")
    assert node.name == "gpu-box-7"
    assert {s.spec.node_name for s in slices} == {"gpu-box-7"}
    assert {s.spec.pool.name for s in slices} == {"gpu-box-7-gpu0"}
    assert all(s.metadata.name.startswith("gpu-box-7-gpu0-") for s in slices)
    assert slices[0].raw["spec"]["nodeName"] == "gpu-box-7"
    # The template itself is untouched.
    assert {s.spec.node_name for s in template.slices} == {"node-00000"}


def test_remove_nodes() -> None:
    snap, objects = _gpu_cluster(3, 2)
    after = RemoveNodes(("node-00001",)).apply(snap)
    assert [n.name for n in after.nodes] == ["node-00000", "node-00002"]
    assert fit(after, _single(objects), explain_failures=False).placed == 4


def test_cordon_pools_nodes_and_rules() -> None:
    snap, objects = _gpu_cluster(3, 2)
    single = _single(objects)
    assert (
        fit(Cordon(pools=("node-00000",)).apply(snap), single, explain_failures=False).placed == 4
    )
    assert (
        fit(
            Cordon(pools=("gpu.nvidia.com/node-00000", "node-00002")).apply(snap),
            single,
            explain_failures=False,
        ).placed
        == 2
    )
    cordoned = Cordon(nodes=("node-00001",)).apply(snap)
    report = fit(cordoned, single)
    assert report.placed == 4
    failure = report.node("node-00001").first_failure
    assert failure is not None and "taint" in (failure.reason or "")
    rule = DeviceTaintRule(
        metadata=ObjectMeta(name="bad-gpus"),
        device_selector=DeviceTaintSelector(driver="gpu.nvidia.com", device="gpu-1"),
        taint=DeviceTaint(key="example.com/unhealthy", effect="NoSchedule"),
    )
    assert fit(Cordon(rules=(rule,)).apply(snap), single, explain_failures=False).placed == 3
    # A taint with effect None keeps no device from being allocated.
    assert (
        fit(
            Cordon(nodes=("node-00000",), effect="None").apply(snap), single, explain_failures=False
        ).placed
        == 6
    )


def test_what_if_reports_before_after_and_delta() -> None:
    snap, objects = _gpu_cluster(2, 2)
    changes: list[Change] = [
        AddNodes(2, kind="nvidia-gpu", options={"gpus_per_node": 2}),
        RemoveNodes(("node-00000",)),
        Cordon(nodes=("node-00001",)),
    ]
    report = what_if(snap, _single(objects), changes, explain_failures=False)
    assert report.before.fit.placed == 4
    assert report.after.fit.placed == 4  # +4 new, -2 removed, -2 cordoned
    delta = report.delta()
    assert delta["placed"] == 0
    assert delta["devices"]["total"] == 2 and delta["devices"]["cordoned"] == 2
    assert delta["freeWholeDevices"] == 0
    assert report.changes[0] == "add 2 nodes (nvidia-gpu:gpus_per_node=2)"
    json.dumps(report.to_dict())
    assert apply_changes(snap, []) is snap


def test_what_if_errors() -> None:
    snap, objects = _gpu_cluster(1, 1)
    with pytest.raises(ValueError, match="exactly one"):
        AddNodes(1)
    with pytest.raises(ValueError, match="already exist"):
        AddNodes(1, kind="nvidia-gpu", prefix="node").apply(snap)
    with pytest.raises(ValueError, match="no node-local"):
        AddNodes(1, like="ghost").apply(snap)
    with pytest.raises(TypeError, match="nodes"):
        what_if(snap, _single(objects), [], nodes=["node-00000"])


def test_one_name_alone_is_one_name() -> None:
    """A str where names go is one name, not a sequence of its characters (RemoveNodes
    and Cordon did nothing, fragmentation reported classes 'g', 'p', 'u', ...)."""
    from draspeed.analysis.sweep import FileCluster

    snap, _ = _gpu_cluster(nodes=2)
    node = snap.nodes[0].name
    assert RemoveNodes(node).names == RemoveNodes([node]).names == (node,)  # type: ignore[arg-type]
    assert len(apply_changes(snap, [RemoveNodes(node)]).nodes) == 1  # type: ignore[arg-type]
    assert Cordon(nodes=node).nodes == (node,)  # type: ignore[arg-type]
    assert Cordon(pools="p").pools == ("p",)  # type: ignore[arg-type]
    assert FileCluster("/tmp/cluster.yaml").paths == ("/tmp/cluster.yaml",)  # type: ignore[arg-type]
    report = fragmentation(snap, classes="gpu.nvidia.com")
    assert list(report.cluster.classes) == ["gpu.nvidia.com"]


@pytest.mark.parametrize(
    ("count", "error"), [(-1, ValueError), (100_001, ValueError), (2.5, TypeError)]
)
def test_added_nodes_are_counted_as_generate_counts(count: Any, error: type[Exception]) -> None:
    """At most generate's MAX_NODES at once, a whole number (10**9 nodes ran until memory
    ran out; 2.5 was taken)."""
    with pytest.raises(error, match=r"count|nodes"):
        AddNodes(count, kind="nvidia-gpu")
