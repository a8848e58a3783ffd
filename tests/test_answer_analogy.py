"""A node's first answer made from an earlier node's answer of the same kind
(draspeed.engine.analogy) is the answer the long way builds, on every node, whatever
differs between the nodes."""

from __future__ import annotations

import contextlib
import itertools
import re
from typing import Any

import pytest

import draspeed
from draspeed.cluster import split_claims
from draspeed.engine import allocator as allocator_module
from draspeed.engine.allocator import Allocator
from draspeed.engine.analogy import Recipe
from draspeed.engine.snapshot import Snapshot
from draspeed.errors import AllocationError
from draspeed.features import Features
from draspeed.generate import generate
from draspeed.generate.scenarios import claim_from_template
from draspeed.testing.documents import resource_slice

_SHARE_ID = re.compile(r"share_id='[^']*'")


def _answers(objs: Any, claims: list[Any], allocated: list[Any], features: Features) -> list[Any]:
    """Every node asked twice by one prepared pod, then by a fresh allocator each."""
    snapshot = Snapshot.build(
        objs.slices, objs.classes, allocated, nodes=objs.nodes, features=features
    )
    ids = (f"share-{k}" for k in itertools.count())
    pod = Allocator(snapshot, share_id=lambda: next(ids)).prepare(claims)
    out: list[Any] = []
    for node in [*objs.nodes, *objs.nodes]:
        try:
            answer = pod.allocate(node)
            out.append((_SHARE_ID.sub("", repr(answer)), pod.last_stats.search_steps))
        except AllocationError as exc:
            out.append(("error", str(exc)))
    return out


def _long_way(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(allocator_module, "_by_analogy", lambda *args: None)


def _recipes(objs: Any, claims: list[Any], allocated: list[Any], features: Features) -> int:
    """How many kinds of answers a pass over the nodes made by analogy."""
    snapshot = Snapshot.build(
        objs.slices, objs.classes, allocated, nodes=objs.nodes, features=features
    )
    pod = Allocator(snapshot).prepare(claims)
    for node in objs.nodes:
        with contextlib.suppress(AllocationError):
            pod.allocate(node)
    layout = snapshot.known_layout()
    assert layout is not None
    return sum(
        isinstance(recipe, Recipe)
        for arrays in layout.claim_sets.values()
        for recipe in arrays.analogies.values()
    )


# (kind, options, whether its answers are made by analogy: no shared device)
_GENERATED: list[tuple[str, dict[str, Any], bool]] = [
    ("scheduler-perf", {"fill": 0.4}, True),
    # slices that select their nodes by label
    ("scheduler-perf", {"shape": "partitionable"}, True),
    # shared devices
    ("scheduler-perf", {"shape": "consumable-capacity"}, False),
    ("nvidia-gpu", {"allocated": 0.5}, True),
    ("nvidia-mig", {"allocated": 0.4, "pool_per": "gpu"}, True),
    ("example", {"allocated": 0.3}, True),
    # rack pools that select their nodes, devices that select their own
    ("network-attached", {}, True),
]


@pytest.mark.parametrize(
    ("kind", "options", "by_analogy"),
    _GENERATED,
    ids=[f"{k}-{'-'.join(map(str, o.values()))}" for k, o, _ in _GENERATED],
)
def test_generated_clusters_answer_alike_both_ways(
    kind: str, options: dict[str, Any], by_analogy: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    cluster = generate(kind, 6, seed=7, **options)
    objs = cluster.decoded()
    allocated = [c for c in objs.claims if c.status.allocation]
    made = 0
    for template in cluster.templates:
        name = template["metadata"]["name"]
        claims = draspeed.load([claim_from_template(cluster.template(name), "pod-claim")]).claims
        for features in (Features(), Features(device_binding_conditions=False)):
            with monkeypatch.context() as patched:
                _long_way(patched)
                expected = _answers(objs, claims, allocated, features)
            assert _answers(objs, claims, allocated, features) == expected, name
            made += _recipes(objs, claims, allocated, features)
    assert (made > 0) == by_analogy


def _slice(name: str, spec: dict[str, Any], devices: list[dict[str, Any]]) -> dict[str, Any]:
    return resource_slice(name, devices, **spec)


def _mixed_nodes() -> list[dict[str, Any]]:
    """Nodes whose answers take different branches: a node-local slice, binding
    conditions, per-device node selection, a slice that selects its node by label (with
    one term, two, or before a node-local one), a tainted device, a shared device."""
    plain = {"attributes": {"model": {"string": "a"}}}
    docs: list[dict[str, Any]] = [
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"n{i}", "labels": {"r": f"{i}"}}}
        for i in range(10)
    ]
    two_terms = {
        "nodeSelectorTerms": [
            {"matchExpressions": [{"key": "r", "operator": "In", "values": ["8"]}]},
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n8"]}]},
        ]
    }
    docs += [
        _slice("s0", {"nodeName": "n0"}, [{"name": "d0", **plain}, {"name": "d1", **plain}]),
        _slice("s1", {"nodeName": "n1"}, [{"name": "d0", **plain}, {"name": "d1", **plain}]),
        _slice(
            "s2",
            {"nodeName": "n2"},
            [
                {
                    "name": "d0",
                    **plain,
                    "bindingConditions": ["ready"],
                    "bindingFailureConditions": ["failed"],
                    "bindsToNode": True,
                },
                {"name": "d1", **plain},
            ],
        ),
        _slice(
            "s3",
            {"perDeviceNodeSelection": True},
            [{"name": "d0", **plain, "nodeName": "n3"}, {"name": "d1", **plain, "nodeName": "n3"}],
        ),
        _slice(
            "s4",
            {
                "nodeSelector": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "r", "operator": "In", "values": ["4"]}]}
                    ]
                }
            },
            [{"name": "d0", **plain}, {"name": "d1", **plain}],
        ),
        _slice(
            "s5",
            {"nodeName": "n5"},
            [
                {
                    "name": "d0",
                    **plain,
                    "taints": [{"key": "k", "value": "v", "effect": "NoSchedule"}],
                },
                {"name": "d1", **plain},
            ],
        ),
        _slice(
            "s6",
            {"nodeName": "n6"},
            [
                {
                    "name": "d0",
                    **plain,
                    "allowMultipleAllocations": True,
                    "capacity": {"mem": {"value": "10Gi"}},
                },
                {"name": "d1", **plain},
            ],
        ),
        _slice("s7", {"nodeName": "n7"}, [{"name": "d0", **plain}, {"name": "d1", **plain}]),
        _slice(
            "s8", {"nodeSelector": two_terms}, [{"name": "d0", **plain}, {"name": "d1", **plain}]
        ),
        # n9: a device of a label-selected slice first, then a node-local one
        _slice(
            "s9a",
            {
                "nodeSelector": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "r", "operator": "In", "values": ["9"]}]}
                    ]
                }
            },
            [{"name": "d0", **plain}],
        ),
        _slice("s9b", {"nodeName": "n9"}, [{"name": "d0", **plain}, {"name": "d1", **plain}]),
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": "cls"},
            "spec": {"config": [{"opaque": {"driver": "drv.example.com", "parameters": {"c": 1}}}]},
        },
    ]
    requests = [
        {
            "name": "one",
            "exactly": {
                "deviceClassName": "cls",
                "tolerations": [{"key": "k", "operator": "Exists", "effect": "NoSchedule"}],
            },
        },
        {
            "name": "other",
            "firstAvailable": [
                {"name": "two", "deviceClassName": "cls", "count": 2},
                {"name": "single", "deviceClassName": "cls"},
            ],
        },
    ]
    for c, admin in enumerate((False, True)):
        docs.append(
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceClaim",
                "metadata": {"name": f"claim-{c}", "namespace": "ns"},
                "spec": {
                    "devices": {
                        "requests": requests[c : c + 1]
                        if not admin
                        else [
                            {
                                "name": "admin",
                                "exactly": {"deviceClassName": "cls", "adminAccess": True},
                            },
                            *requests[1:],
                        ],
                        "config": [
                            {
                                "requests": ["one"] if c == 0 else ["admin"],
                                "opaque": {"driver": "drv.example.com", "parameters": {"n": c}},
                            }
                        ],
                    }
                },
            }
        )
    return docs


@pytest.mark.parametrize("binding", [False, True], ids=["binding-off", "binding-on"])
def test_nodes_whose_answers_take_other_branches_answer_alike_both_ways(
    binding: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    # (unvalidated: the API server refuses a slice's selector of two terms, which the
    # allocator refuses in its own words)
    objs = draspeed.load(_mixed_nodes(), validate=False)
    allocated, pending = split_claims(objs.claims)
    features = Features(device_binding_conditions=binding)
    with monkeypatch.context() as patched:
        _long_way(patched)
        expected = _answers(objs, pending, allocated, features)
    got = _answers(objs, pending, allocated, features)
    assert got == expected
    assert sum(answer[0] != "error" and answer[0] != "None" for answer in got) >= 8
    assert _recipes(objs, pending, allocated, features) > 0
