"""An answer asked again is a fresh copy: remembered results are never handed out
themselves, and every copy of a shared device's allocation has a shareID of its own."""

from __future__ import annotations

import itertools
import time
from typing import Any

import pytest

import draspeed
from draspeed.cluster import Cluster, split_claims
from draspeed.engine.allocator import Allocator
from draspeed.engine.snapshot import Snapshot


def _docs(shared: bool) -> list[dict[str, Any]]:
    device: dict[str, Any] = {"name": "dev-0", "capacity": {"bytes": {"value": "10Gi"}}}
    request: dict[str, Any] = {"deviceClassName": "cls"}
    if shared:
        device["allowMultipleAllocations"] = True
        request["capacity"] = {"requests": {"bytes": "1Gi"}}
    return [
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-1"}},
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": "cls"},
            "spec": {},
        },
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceSlice",
            "metadata": {"name": "slice"},
            "spec": {
                "driver": "drv.example.com",
                "nodeName": "node-1",
                "pool": {"name": "pool", "generation": 1, "resourceSliceCount": 1},
                "devices": [device],
            },
        },
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim",
            "metadata": {"name": "claim", "namespace": "ns"},
            "spec": {"devices": {"requests": [{"name": "req", "exactly": request}]}},
        },
    ]


def _asked_three_times(shared: bool) -> list[Any]:
    objs = draspeed.load(_docs(shared))
    allocated, pending = split_claims(objs.claims)
    node = Cluster.from_objects(objs).node("node-1")
    ids = (f"share-{k}" for k in itertools.count(1))
    allocator = Allocator(
        Snapshot.build(objs.slices, objs.classes, allocated), share_id=lambda: next(ids)
    )
    pod = allocator.prepare(pending)
    answers = [allocator.allocate(pending, node), pod.allocate(node), pod.allocate(node)]
    assert all(a is not None for a in answers)
    # The work counter of an answer given again is the search's, as if searched again.
    assert pod.last_stats == allocator.last_stats
    assert pod.last_stats.search_steps > 0
    return answers


def test_a_shared_device_gets_a_fresh_share_id_per_answer() -> None:
    answers = _asked_three_times(shared=True)
    share_ids = [a[0].devices.results[0].share_id for a in answers]
    assert share_ids == ["share-1", "share-2", "share-3"]
    for a in answers[1:]:
        a[0].devices.results[0].share_id = answers[0][0].devices.results[0].share_id
        assert a == answers[0]


def test_answers_share_no_mutable_object() -> None:
    for shared in (False, True):
        first, second, third = _asked_three_times(shared)
        assert first == second == third or shared
        result = first[0]
        result.devices.results[0].device = "changed"
        result.node_selector.node_selector_terms.clear()
        first.append(result)
        assert second[0].devices.results[0].device == "dev-0"
        assert second[0].node_selector.node_selector_terms
        assert len(second) == len(third) == 1
        if not shared:
            assert second[0].devices.results[0].share_id is None


def test_a_node_that_does_not_fit_is_asked_again_the_same() -> None:
    objs = draspeed.load(_docs(shared=False))
    allocated, pending = split_claims(objs.claims)
    exactly = pending[0].spec.devices.requests[0].exactly
    assert exactly is not None
    exactly.count = 2  # one device on the node
    node = Cluster.from_objects(objs).node("node-1")
    pod = Allocator(Snapshot.build(objs.slices, objs.classes, allocated)).prepare(pending)
    steps = []
    for _ in range(3):
        assert pod.allocate(node) is None
        steps.append(pod.last_stats.search_steps)
    assert steps[0] > 0 and len(set(steps)) == 1


def test_feasible_nodes_asked_again_answers_the_same() -> None:
    objs = draspeed.load(_docs(shared=False))
    allocated, pending = split_claims(objs.claims)
    allocator = Allocator(Snapshot.build(objs.slices, objs.classes, allocated, nodes=objs.nodes))
    first = allocator.feasible_nodes(pending)
    second = allocator.feasible_nodes(pending)
    assert first.to_dict() == second.to_dict()
    assert first.to_dict()["nodes"][0]["status"] == "fits"
    # A deadline that has passed is a timeout on every node, remembered answer or not.
    late = allocator.feasible_nodes(pending, deadline=time.monotonic() - 1)
    assert late.to_dict()["nodes"][0]["status"] == "timeout"


def test_a_prepared_pod_on_the_snapshots_own_nodes_answers_fresh_copies() -> None:
    # The snapshot knows the node (the usual scheduler case): answers asked again come
    # from the claim arrays' memo by the shortest way; they must be as fresh as ever.
    objs = draspeed.load(_docs(shared=True))
    allocated, pending = split_claims(objs.claims)
    ids = (f"share-{k}" for k in itertools.count(1))
    snapshot = Snapshot.build(objs.slices, objs.classes, allocated, nodes=objs.nodes)
    allocator = Allocator(snapshot, share_id=lambda: next(ids))
    [node] = snapshot.nodes
    pod = allocator.prepare(pending)
    answers = [pod.allocate(node) for _ in range(4)]
    answers.append(pod.allocate("node-1"))  # by name: the same answer
    assert pod.known is not None  # the memo was reached
    assert all(a is not None for a in answers)
    steps = pod.last_stats.search_steps
    assert steps > 0 and allocator.last_stats == pod.last_stats
    share_ids = [a[0].devices.results[0].share_id for a in answers if a]
    assert share_ids == [f"share-{k}" for k in range(1, 6)]
    first = answers[0]
    assert first is not None
    # Changing every list and map of one answer changes no other answer.
    first[0].devices.results[0].tolerations.append(first[0])  # type: ignore[arg-type]
    first[0].devices.results[0].consumed_capacity.clear()
    first[0].devices.config.append(first[0])  # type: ignore[arg-type]
    terms = first[0].node_selector
    assert terms is not None
    terms.node_selector_terms[0].match_expressions.append(terms)  # type: ignore[arg-type]
    again = pod.allocate(node)
    assert again is not None
    result = again[0]
    assert result.devices.results[0].tolerations == []
    assert result.devices.results[0].consumed_capacity
    assert result.devices.config == []
    assert result.node_selector is not None
    assert result.node_selector.node_selector_terms[0].match_expressions == []
    assert pod.last_stats.search_steps == steps
    # A deadline still ahead answers from the memo; one that has passed is a timeout,
    # remembered answer or not, with no work counted; a bad one is refused.
    in_time = pod.allocate(node, deadline=time.monotonic() + 60)
    assert in_time is not None and answers[1] is not None
    assert in_time[0].devices.results[0].share_id == "share-7"  # 6 came before
    in_time[0].devices.results[0].share_id = answers[1][0].devices.results[0].share_id
    assert in_time == answers[1]
    assert pod.last_stats.search_steps == steps
    with pytest.raises(draspeed.AllocationTimeout):
        pod.allocate(node, deadline=time.monotonic() - 1)
    assert pod.last_stats.search_steps == 0
    with pytest.raises(TypeError, match="deadline"):
        pod.allocate(node, deadline="soon")  # type: ignore[arg-type]


def test_a_node_whose_pools_changed_is_answered_as_a_fresh_snapshot_answers() -> None:
    # After a slice update the cluster layout keeps its arrays and marks the node stale;
    # a prepared pod asked there twice must answer as a snapshot built afresh does.
    docs = _docs(shared=False)
    second = {**docs[2], "metadata": {"name": "slice-2"}}
    second["spec"] = {
        **docs[2]["spec"],
        "pool": {"name": "pool-2", "generation": 1, "resourceSliceCount": 1},
        "devices": [{"name": "dev-9"}],
    }
    objs = draspeed.load(docs)
    allocated, pending = split_claims(objs.claims)
    snapshot = Snapshot.build(objs.slices, objs.classes, allocated, nodes=objs.nodes)
    [node] = snapshot.nodes
    first_pod = Allocator(snapshot).prepare(pending)
    for _ in range(2):
        first_pod.allocate(node)
    [added] = draspeed.load([second]).slices
    later = snapshot.update_slices(added=[added], removed=["slice"])
    pod = Allocator(later).prepare(pending)
    answers = [pod.allocate(node) for _ in range(3)]
    assert later.cluster_layout().stale == {0}  # the case this test is about
    fresh = Snapshot.build(later.slices, objs.classes, allocated, nodes=objs.nodes)
    expected = Allocator(fresh).allocate(pending, fresh.nodes[0])
    assert expected is not None and expected[0].devices.results[0].device == "dev-9"
    assert answers == [expected] * 3
