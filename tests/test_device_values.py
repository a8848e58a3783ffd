"""Capacity maps and taint lists are worked out once per distinct value and spread over
the positions of every node that sees the device: the answers are the reference
engine's, node by node, whatever mix of maps, policies, committed shares and taints."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import draspeed
from draspeed.engine.allocator import Allocator
from draspeed.engine.claim_arrays import claim_arrays
from draspeed.engine.device_values import DistinctValues
from draspeed.engine.snapshot import Snapshot
from draspeed.errors import AllocationError
from draspeed.features import Features
from draspeed.testing.engines import Inputs, check_engines, results_json

DRIVER = "fabric.example.com"
RACKS = ("a", "b")
NODES = 6  # node-k is in rack RACKS[k % 2]


def _policy(default: str) -> dict[str, Any]:
    return {"default": default, "validRange": {"min": "1G", "step": "1G"}}


# Capacity maps: the first two are equal (one map), the third has no policy, the fourth
# two capacities.
CAPACITIES: list[dict[str, Any]] = [
    {"bandwidth": {"value": "100G", "requestPolicy": _policy("1G")}},
    {"bandwidth": {"value": "100G", "requestPolicy": _policy("1G")}},
    {"bandwidth": {"value": "40G"}},
    {"bandwidth": {"value": "100G", "requestPolicy": _policy("2G")}, "memory": {"value": "80Gi"}},
]
TAINTS: list[list[dict[str, str]]] = [
    [],
    [{"key": "maintenance", "value": "true", "effect": "NoSchedule"}],
    [],
    [{"key": "degraded", "effect": "NoExecute"}, {"key": "maintenance", "effect": "NoSchedule"}],
]


def _fabric_slice(rack: str) -> dict[str, Any]:
    devices = []
    for i in range(8):
        device: dict[str, Any] = {
            "name": f"link-{i}",
            "allowMultipleAllocations": True,
            "capacity": CAPACITIES[i % 4],
        }
        if TAINTS[i % 4]:
            device["taints"] = TAINTS[i % 4]
        devices.append(device)
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"fabric-{rack}"},
        "spec": {
            "driver": DRIVER,
            "pool": {"name": f"fabric-{rack}", "generation": 1, "resourceSliceCount": 1},
            "nodeSelector": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "rack", "operator": "In", "values": [rack]}]}
                ]
            },
            "devices": devices,
        },
    }


def _claim(name: str, request: dict[str, Any], allocation: dict[str, Any] | None = None) -> Any:
    claim: dict[str, Any] = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
        "spec": {"devices": {"requests": [{"name": "link", "exactly": request}]}},
    }
    if allocation is not None:
        claim["status"] = {"allocation": allocation}
    return claim


def _committed(device: str, rack: str, bandwidth: str, k: int) -> Any:
    """A claim holding a share of ``device`` in rack ``rack``."""
    return _claim(
        f"held-{k}",
        {"deviceClassName": "fabric", "capacity": {"requests": {"bandwidth": bandwidth}}},
        {
            "devices": {
                "results": [
                    {
                        "request": "link",
                        "driver": DRIVER,
                        "pool": f"fabric-{rack}",
                        "device": device,
                        "shareID": f"00000000-0000-0000-0000-00000000000{k}",
                        "consumedCapacity": {"bandwidth": bandwidth},
                    }
                ]
            }
        },
    )


def _objects(committed: bool) -> draspeed.Objects:
    docs: list[Any] = [
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": f"node-{k}", "labels": {"rack": RACKS[k % 2]}},
        }
        for k in range(NODES)
    ]
    docs.append(
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": "fabric"},
            "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]},
        }
    )
    docs += [_fabric_slice(rack) for rack in RACKS]
    if committed:
        docs += [
            _committed("link-0", "a", "90G", 1),  # 10G left of 100G
            _committed("link-3", "a", "100G", 2),  # a whole capacity of a two-capacity map
            _committed("link-2", "b", "40G", 3),  # a map without policy, used up
        ]
    return draspeed.load(docs)


REQUESTS: dict[str, dict[str, Any]] = {
    "whole": {"deviceClassName": "fabric"},
    "bandwidth-30G": {"deviceClassName": "fabric", "capacity": {"requests": {"bandwidth": "30G"}}},
    "bandwidth-50G-three": {
        "deviceClassName": "fabric",
        "count": 3,
        "capacity": {"requests": {"bandwidth": "50G"}},
    },
    "memory": {"deviceClassName": "fabric", "capacity": {"requests": {"memory": "10Gi"}}},
    "tolerates-maintenance": {
        "deviceClassName": "fabric",
        "count": 8,
        "tolerations": [{"key": "maintenance", "operator": "Exists"}],
    },
    "all-mode": {"deviceClassName": "fabric", "allocationMode": "All"},
    "all-mode-bandwidth-20G": {
        "deviceClassName": "fabric",
        "allocationMode": "All",
        "capacity": {"requests": {"bandwidth": "20G"}},
        "tolerations": [{"operator": "Exists"}],
    },
    "all-mode-memory": {
        "deviceClassName": "fabric",
        "allocationMode": "All",
        "capacity": {"requests": {"memory": "1Gi"}},
        "tolerations": [{"operator": "Exists"}],
    },
    "tolerates-all": {
        "deviceClassName": "fabric",
        "count": 8,
        "tolerations": [{"operator": "Exists"}],
        "capacity": {"requests": {"bandwidth": "10G"}},
    },
}


@pytest.mark.parametrize("committed", [False, True], ids=["empty", "committed"])
@pytest.mark.parametrize("shape", sorted(REQUESTS))
def test_engines_agree_on_every_node(committed: bool, shape: str) -> None:
    objects = _objects(committed)
    pending = draspeed.load([_claim("pending", REQUESTS[shape])]).claims
    features = Features()
    allocated = [c for c in objects.claims if c.status.allocation]
    for node in objects.nodes:
        inputs = Inputs(objects.slices, objects.classes, allocated, pending, node, features)
        problems = check_engines(inputs)[2]
        assert not problems, f"{shape} on {node.name}: {problems}"


@pytest.mark.parametrize("shape", sorted(REQUESTS))
def test_feasible_nodes_match_allocate(shape: str) -> None:
    """The whole-cluster pass (one claim arrays over every node) answers as each node's
    own allocate on a fresh snapshot does: same results, same errors."""
    objects = _objects(committed=True)
    allocated = [c for c in objects.claims if c.status.allocation]
    pending = draspeed.load([_claim("pending", REQUESTS[shape])]).claims

    def snapshot() -> Snapshot:
        return Snapshot.build(objects.slices, objects.classes, allocated, nodes=objects.nodes)

    answer = Allocator(snapshot()).feasible_nodes(pending)
    for node in objects.nodes:
        try:
            results = Allocator(snapshot()).allocate(pending, node)
        except AllocationError as exc:
            assert answer.error(node.name) == str(exc), f"{shape} on {node.name}"
            continue
        assert answer.error(node.name) is None
        found = answer.result(node.name)
        assert (found is None) == (results is None), f"{shape} on {node.name}"
        if found is not None and results is not None:
            assert results_json(found) == results_json(results), f"{shape} on {node.name}"


def test_each_distinct_map_and_taint_list_once() -> None:
    objects = _objects(committed=True)
    allocated = [c for c in objects.claims if c.status.allocation]
    snap = Snapshot.build(objects.slices, objects.classes, allocated, nodes=objects.nodes)
    pending = draspeed.load([_claim("pending", REQUESTS["tolerates-all"])]).claims
    arrays = claim_arrays(snap.cluster_layout(), pending)
    table = snap.table
    # 16 devices, each on 3 nodes: three distinct capacity maps; the tainted devices
    # have two taint lists (only they are looked up).
    assert len(table.capacity_maps.values) == 3
    assert len(table.taint_lists.values) == 2
    assert len(arrays.shares) == 1 and len(arrays.shares[0]) == 3
    layout = arrays.layout
    assert layout.n_caps == NODES * 2 * (1 + 1 + 1 + 2)  # per node: its rack's 8 links
    # Committed shares give their entries a room of their own, on every node that sees
    # the device (rack a: three nodes; link-0 90G of 100G used, link-3 its bandwidth).
    assert len(layout.cap_used) == 3 + 3 + 3


def test_distinct_values_by_content() -> None:
    objects = _objects(committed=False)
    snap = Snapshot.build(objects.slices, objects.classes, nodes=objects.nodes)
    table = snap.table
    values = DistinctValues("capacity")
    ids = values.ids(table, np.arange(table.n_devices))
    # Devices 0 and 1 of each slice have equal maps; ids are stable on a second ask.
    assert ids[0] == ids[1] != ids[2] != ids[3]
    assert np.array_equal(values.ids(table, np.arange(table.n_devices)[::-1]), ids[::-1])
    assert len(values.values) == 3
    taints = DistinctValues("taints")
    taint_ids = taints.ids(table, np.arange(table.n_devices))
    assert taint_ids[0] == taint_ids[2] != taint_ids[1] != taint_ids[3]
