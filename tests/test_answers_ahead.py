"""A prepared pod going through the nodes gets the answers of the nodes ahead made in
one pass (draspeed.engine.answers_ahead): each is the answer, and the work, that the
node's own search gives, whatever order the nodes are asked in and whatever differs
between them."""

from __future__ import annotations

import contextlib
import itertools
import random
import re
import time
from collections.abc import Callable
from typing import Any

import pytest

import draspeed
from draspeed.cluster import split_claims
from draspeed.engine import allocator as allocator_module
from draspeed.engine.allocator import Allocator
from draspeed.engine.answers_ahead import MIN_AHEAD
from draspeed.engine.snapshot import Snapshot
from draspeed.errors import AllocationError
from draspeed.features import Features
from draspeed.generate import generate
from draspeed.generate.scenarios import claim_from_template
from draspeed.testing.documents import resource_slice

_SHARE_ID = re.compile(r"share_id='[^']*'")
Order = Callable[[list[Any]], list[Any]]


def _ask(allocate: Callable[[Any], Any], stats: Callable[[], Any], node: Any) -> tuple[Any, Any]:
    try:
        return _SHARE_ID.sub("", repr(allocate(node))), stats().search_steps
    except AllocationError as exc:
        return "error", str(exc)


def _snapshot(objs: Any, allocated: list[Any], features: Features) -> Snapshot:
    return Snapshot.build(objs.slices, objs.classes, allocated, nodes=objs.nodes, features=features)


def _prepared(
    objs: Any, claims: list[Any], allocated: list[Any], features: Features, order: Order
) -> tuple[dict[str, Any], int]:
    """Each node's answer and work from one prepared pod asking the nodes in ``order``
    twice, and how many answers the pod's claim arrays remembered after two nodes."""
    snapshot = _snapshot(objs, allocated, features)
    ids = (f"share-{k}" for k in itertools.count())
    pod = Allocator(snapshot, share_id=lambda: next(ids)).prepare(claims)
    nodes = order(list(objs.nodes))
    out: dict[str, Any] = {}
    remembered = 0
    for i, node in enumerate([*nodes, *nodes]):
        answer = _ask(pod.allocate, lambda: pod.last_stats, node)
        assert out.setdefault(node.name, answer) == answer  # asked again: the same
        if i == 1:
            remembered = _remembered(snapshot)
    return out, remembered


def _remembered(snapshot: Snapshot) -> int:
    layout = snapshot.known_layout()
    assert layout is not None
    return max((len(arrays.answers) for arrays in layout.claim_sets.values()), default=0)


def _searched_alone(
    objs: Any, claims: list[Any], allocated: list[Any], features: Features
) -> dict[str, Any]:
    """Each node's answer from a fresh snapshot's ``feasible_nodes``: every node
    searched on its own, its results built the long way (no answer of another node)."""
    allocator = Allocator(_snapshot(objs, allocated, features), share_id=lambda: "")
    out: dict[str, Any] = {}
    for outcome in allocator.feasible_nodes(claims):
        if outcome.status in ("error", "node-error", "timeout"):
            out[outcome.node] = ("error", outcome.error)
        else:
            out[outcome.node] = (_SHARE_ID.sub("", repr(outcome.results)), outcome.work)
    return out


_ORDERS: dict[str, Order] = {
    "in-order": lambda nodes: nodes,
    "reversed": lambda nodes: nodes[::-1],
    "shuffled": lambda nodes: random.Random(5).sample(nodes, len(nodes)),
    "rotated": lambda nodes: nodes[len(nodes) // 3 :] + nodes[: len(nodes) // 3],
}

# (kind, options): clusters whose answers on most nodes are made ahead, and some whose
# answers never are (shared devices, slices that select their nodes by label); the
# scheduler_perf shapes whose every slice reaches every node with fewer nodes.
_GENERATED: list[tuple[str, dict[str, Any]]] = [
    ("scheduler-perf", {"fill": 0.4}),
    ("scheduler-perf", {"shape": "partitionable", "nodes": 2 * MIN_AHEAD + 3}),
    ("scheduler-perf", {"shape": "consumable-capacity", "nodes": 2 * MIN_AHEAD + 3}),
    ("nvidia-gpu", {"allocated": 0.5}),
    ("nvidia-mig", {"allocated": 0.4, "pool_per": "gpu"}),
    ("example", {"allocated": 0.3}),
    ("network-attached", {}),
]


@pytest.mark.parametrize(
    ("kind", "options"),
    _GENERATED,
    ids=[f"{k}-{'-'.join(map(str, o.values()))}" for k, o in _GENERATED],
)
def test_generated_clusters_answer_as_each_node_alone(kind: str, options: dict[str, Any]) -> None:
    options = dict(options)
    cluster = generate(kind, options.pop("nodes", 3 * MIN_AHEAD), seed=11, **options)
    objs = cluster.decoded()
    allocated = [c for c in objs.claims if c.status.allocation]
    for template in cluster.templates[:3]:
        name = template["metadata"]["name"]
        claims = draspeed.load([claim_from_template(cluster.template(name), "pod")]).claims
        features = Features()
        expected = _searched_alone(objs, claims, allocated, features)
        for order in _ORDERS.values():
            got, _ = _prepared(objs, claims, allocated, features, order)
            assert got == expected, name


def test_a_pass_over_the_nodes_makes_the_answers_ahead() -> None:
    # (What the tests above compare is only worth it if the answers were made ahead.)
    cluster = generate("nvidia-gpu", 3 * MIN_AHEAD, seed=3)
    objs = cluster.decoded()
    allocated = [c for c in objs.claims if c.status.allocation]
    name = cluster.templates[0]["metadata"]["name"]
    claims = draspeed.load([claim_from_template(cluster.template(name), "pod")]).claims
    got, remembered = _prepared(objs, claims, allocated, Features(), _ORDERS["in-order"])
    assert remembered >= MIN_AHEAD
    assert sum(answer[0] != "None" for answer in got.values()) >= MIN_AHEAD


def _slice(name: str, spec: dict[str, Any], devices: list[dict[str, Any]]) -> dict[str, Any]:
    return resource_slice(name, devices, **spec)


def _label_selector(value: str) -> dict[str, Any]:
    term = {"matchExpressions": [{"key": "r", "operator": "In", "values": [value]}]}
    return {"nodeSelectorTerms": [term]}


def _node_shapes(i: int) -> list[dict[str, Any]]:
    """Node i's slices, one of ten shapes a chosen device can take: whole and
    node-local, bound to the node (bindsToNode) on a label-selected slice, with binding
    conditions, with failure conditions alone (unvalidated), per-device nodeName,
    per-device node selector, label-selected, shared, node-local with a second slice
    ahead of it, node-local with a taint that the claim tolerates."""
    plain: dict[str, Any] = {"attributes": {"model": {"string": "a"}, "index": {"int": i % 3}}}
    name, shape = f"n{i}", i % 10
    devices: list[dict[str, Any]] = [{"name": f"d{d}", **plain} for d in range(3)]
    local: dict[str, Any] = {"nodeName": name}
    if shape == 1:
        devices[0]["bindsToNode"] = True
        local = {"nodeSelector": _label_selector(str(i))}
    elif shape == 2:
        devices[0].update(bindingConditions=["ready"], bindingFailureConditions=["failed"])
    elif shape == 3:
        devices[0]["bindingFailureConditions"] = ["failed"]
    elif shape == 4:
        local = {"perDeviceNodeSelection": True}
        for device in devices:
            device["nodeName"] = name
    elif shape == 5:
        local = {"perDeviceNodeSelection": True}
        for device in devices:
            device["nodeSelector"] = _label_selector(str(i))
    elif shape == 6:
        local = {"nodeSelector": _label_selector(str(i))}
    elif shape == 7:
        devices[0].update(allowMultipleAllocations=True, capacity={"mem": {"value": "10Gi"}})
    elif shape == 9:
        devices[0]["taints"] = [{"key": "k", "value": "v", "effect": "NoSchedule"}]
    slices = [_slice(f"s{i}", local, devices)]
    if shape == 8:
        slices.insert(0, _slice(f"s{i}x", {"nodeName": name}, [{"name": "x0", **plain}]))
    return slices


def _mixed_cluster(n_nodes: int) -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = [
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"n{i}", "labels": {"r": f"{i}"}}}
        for i in range(n_nodes)
    ]
    for i in range(n_nodes):
        docs += _node_shapes(i)
    docs.append(
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": "cls"},
            "spec": {"config": [{"opaque": {"driver": "drv.example.com", "parameters": {"c": 1}}}]},
        }
    )
    toleration = {"key": "k", "operator": "Exists", "effect": "NoSchedule"}
    claims: list[list[dict[str, Any]]] = [
        [{"name": "one", "exactly": {"deviceClassName": "cls", "tolerations": [toleration]}}],
        [
            {
                "name": "other",
                "firstAvailable": [
                    {"name": "three", "deviceClassName": "cls", "count": 3},
                    {"name": "two", "deviceClassName": "cls", "count": 2},
                ],
            },
            {"name": "admin", "exactly": {"deviceClassName": "cls", "adminAccess": True}},
        ],
    ]
    for c, requests in enumerate(claims):
        docs.append(
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceClaim",
                "metadata": {"name": f"claim-{c}", "namespace": "ns"},
                "spec": {
                    "devices": {
                        "requests": requests,
                        "constraints": [{"matchAttribute": "drv.example.com/model"}],
                        "config": [
                            {
                                "requests": [requests[0]["name"]],
                                "opaque": {"driver": "drv.example.com", "parameters": {"n": c}},
                            }
                        ],
                    }
                },
            }
        )
    return docs


@pytest.mark.parametrize("binding", [False, True], ids=["binding-off", "binding-on"])
def test_nodes_whose_answers_take_other_branches_answer_as_each_node_alone(binding: bool) -> None:
    # (unvalidated: failure conditions alone are refused by the API server)
    objs = draspeed.load(_mixed_cluster(8 * MIN_AHEAD // 3), validate=False)
    allocated, pending = split_claims(objs.claims)
    features = Features(device_binding_conditions=binding)
    for claims in ([pending[0]], pending):
        expected = _searched_alone(objs, claims, allocated, features)
        assert (
            sum(answer[0] != "error" and answer[0] != "None" for answer in expected.values()) > 40
        )
        for order in _ORDERS.values():
            got, _ = _prepared(objs, claims, allocated, features, order)
            assert got == expected


def test_a_call_with_a_deadline_answers_its_node_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    real = allocator_module.answer_ahead

    def spy(arrays: Any, n: int, *args: Any) -> None:
        calls.append(n)
        real(arrays, n, *args)

    monkeypatch.setattr(allocator_module, "answer_ahead", spy)
    cluster = generate("nvidia-gpu", MIN_AHEAD, seed=3)
    objs = cluster.decoded()
    allocated = [c for c in objs.claims if c.status.allocation]
    name = cluster.templates[0]["metadata"]["name"]
    claims = draspeed.load([claim_from_template(cluster.template(name), "pod")]).claims
    pod = Allocator(_snapshot(objs, allocated, Features())).prepare(claims)
    for node in objs.nodes:
        with contextlib.suppress(AllocationError):
            pod.allocate(node, deadline=time.monotonic() + 60)
    assert calls == []
    pod = Allocator(_snapshot(objs, allocated, Features())).prepare(claims)
    for node in objs.nodes:
        with contextlib.suppress(AllocationError):
            pod.allocate(node)
    assert calls  # (on a snapshot of its own, the same pod without a deadline does)


@pytest.mark.parametrize(
    ("shape", "windows"),
    # shared devices: no answer of the pass is made by analogy, none is searched ahead;
    # slices that select their nodes by label: answers by analogy, not made ahead
    [("consumable-capacity", 0), ("partitionable", 2)],
)
def test_a_pass_whose_answers_are_not_made_ahead_stops_searching_ahead(
    shape: str, windows: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    from draspeed.engine import answers_ahead

    searched: list[int] = []
    real = answers_ahead._core.search_nodes

    def spy(problem: Any, deadline: float, nodes: Any, state: Any) -> Any:
        searched.append(len(nodes))
        return real(problem, deadline, nodes, state)

    monkeypatch.setattr(answers_ahead._core, "search_nodes", spy)
    cluster = generate("scheduler-perf", 2 * MIN_AHEAD + 3, seed=11, shape=shape)
    objs = cluster.decoded()
    name = cluster.templates[0]["metadata"]["name"]
    claims = draspeed.load([claim_from_template(cluster.template(name), "pod")]).claims
    got, _ = _prepared(objs, claims, [], Features(), _ORDERS["in-order"])
    assert len(searched) == windows == min(windows, answers_ahead.IDLE_WINDOWS)
    assert got == _searched_alone(objs, claims, [], Features())
