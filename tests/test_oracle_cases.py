"""draspeed.testing.oracle_cases: the upstream harness's case lines, checked without the
harness against the differential corpus, whose YAML files hold exactly the v1 objects
(API defaults applied) that upstream answered.

The corpus's objects were written from the same case lines the harness read, so a case
written from the decoded objects must give back each object's ``spec`` unchanged, and
the in-use state must be what the allocated claim holds.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest
import yaml

from draspeed.api.loader import load
from draspeed.features import Features
from draspeed.testing.cases import case_files, read_case
from draspeed.testing.oracle_cases import case_line, oracle_case, oracle_features

DIFFERENTIAL = Path(__file__).parent / "data" / "differential"
CASES = case_files(DIFFERENTIAL)
# Shared devices with consumed capacity, an exclusively allocated device, firstAvailable
# with tolerations, claim config, node-local and network-attached pools.
RICH = DIFFERENTIAL / "s1-00043.expected.json"


def _case(expected_path: Path) -> dict[str, Any]:
    inputs, _ = read_case(expected_path)
    return oracle_case(
        inputs.slices,
        inputs.classes,
        inputs.claims,
        node=inputs.node,
        allocated=inputs.allocated,
        features=inputs.features,
        case_id=expected_path.name.removesuffix(".expected.json"),
    )


def _documents(expected_path: Path) -> dict[tuple[str, str], dict[str, Any]]:
    text = expected_path.with_name(expected_path.name.removesuffix(".expected.json") + ".yaml")
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    docs = yaml.load_all(text.read_text(encoding="utf-8"), Loader=loader)
    return {(d["kind"], d["metadata"]["name"]): d for d in docs}


def test_rich_case_line() -> None:
    case = _case(RICH)
    line = case_line(case)
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert msgspec.json.decode(line) == case
    assert case["id"] == "s1-00043"
    assert case["allocator"] == "experimental"
    assert case["normalizeShareIDs"] is True
    assert case["features"] == dict.fromkeys(
        [
            "AdminAccess",
            "PrioritizedList",
            "PartitionableDevices",
            "DeviceTaints",
            "ConsumableCapacity",
            "DeviceBindingAndStatus",
            "ListTypeAttributes",
        ],
        True,
    )
    node = case["node"]
    assert node["metadata"]["name"] == "node-2"
    assert node["metadata"]["labels"]["kubernetes.io/hostname"] == "node-2"
    assert "nodes" not in case
    assert [c["metadata"]["name"] for c in case["claims"]] == ["claim-0", "claim-1"]
    assert all(c["metadata"]["namespace"] == "default" for c in case["claims"])
    # The allocated claim: nic-0 exclusively, one share of sgpu-1 consuming 40Gi of memory.
    assert case["allocatedDevices"] == [
        {"driver": "net.example.com", "pool": "node-2-net", "device": "nic-0"}
    ]
    assert case["allocatedSharedDevices"] == [
        {
            "driver": "gpu.example.com",
            "pool": "node-2-sgpu",
            "device": "sgpu-1",
            "shareID": "d8604ea9-0000-4000-8000-4d159797a63f",
        }
    ]
    assert case["aggregatedCapacity"] == [
        {
            "driver": "gpu.example.com",
            "pool": "node-2-sgpu",
            "device": "sgpu-1",
            "consumedCapacity": {"memory": "40Gi"},
        }
    ]


@pytest.mark.parametrize("path", CASES, ids=[p.name.split(".")[0] for p in CASES])
def test_objects_are_the_corpus_objects(path: Path) -> None:
    """Every slice, class and pending claim of the case is the corpus's object: the same
    v1 ``spec``, defaults (``allocationMode``, ``count``, toleration ``operator``) in."""
    case = _case(path)
    documents = _documents(path)
    expected = json.loads(path.read_text(encoding="utf-8"))
    assert case["node"]["metadata"]["name"] == expected["node"]
    for kind, key in (
        ("ResourceSlice", "slices"),
        ("DeviceClass", "classes"),
        ("ResourceClaim", "claims"),
    ):
        for obj in case[key]:
            assert obj["kind"] == kind and obj["apiVersion"] == "resource.k8s.io/v1"
            document = documents[(kind, obj["metadata"]["name"])]
            assert obj["spec"] == document["spec"], (kind, obj["metadata"]["name"])
    pending = [d for (kind, _), d in documents.items() if kind == "ResourceClaim"]
    pending = [d for d in pending if "status" not in d]
    assert [c["metadata"]["name"] for c in case["claims"]] == [
        d["metadata"]["name"] for d in pending
    ]


def test_case_objects_load_back_to_the_same_model() -> None:
    inputs, _ = read_case(RICH)
    case = _case(RICH)
    again = load([*case["slices"], *case["classes"], *case["claims"], case["node"]])
    assert [s.spec for s in again.slices] == [s.spec for s in inputs.slices]
    assert [c.spec for c in again.classes] == [c.spec for c in inputs.classes]
    assert [c.spec for c in again.claims] == [c.spec for c in inputs.claims]
    assert again.nodes[0].labels == inputs.node.labels


def test_older_api_versions_are_written_as_v1() -> None:
    """The case holds what draspeed decoded, in the v1 shape the harness reads."""
    objects = load(
        [
            {
                "apiVersion": "resource.k8s.io/v1beta1",
                "kind": "ResourceSlice",
                "metadata": {"name": "node-a-gpu"},
                "spec": {
                    "driver": "gpu.example.com",
                    "pool": {"name": "node-a", "generation": 3, "resourceSliceCount": 1},
                    "nodeName": "node-a",
                    "devices": [
                        {
                            "name": "gpu-0",
                            "basic": {
                                "attributes": {
                                    "model": {"string": "h100"},
                                    "resource.kubernetes.io/pcieRoot": {"string": "pci-0"},
                                },
                                "capacity": {"memory": {"value": "80Gi"}},
                            },
                        }
                    ],
                },
            },
            {
                "apiVersion": "resource.k8s.io/v1beta1",
                "kind": "ResourceClaim",
                "metadata": {"name": "c", "namespace": "ns"},
                "spec": {"devices": {"requests": [{"name": "r", "deviceClassName": "gpu"}]}},
            },
        ]
    )
    case = oracle_case(objects.slices, [], objects.claims)
    assert case["slices"][0]["spec"] == {
        "driver": "gpu.example.com",
        "pool": {"name": "node-a", "generation": 3, "resourceSliceCount": 1},
        "nodeName": "node-a",
        "devices": [
            {
                "name": "gpu-0",
                "attributes": {
                    "model": {"string": "h100"},
                    "resource.kubernetes.io/pcieRoot": {"string": "pci-0"},
                },
                "capacity": {"memory": {"value": "80Gi"}},
            }
        ],
    }
    assert case["claims"][0]["spec"] == {
        "devices": {
            "requests": [
                {
                    "name": "r",
                    "exactly": {
                        "deviceClassName": "gpu",
                        "allocationMode": "ExactCount",
                        "count": 1,
                    },
                }
            ]
        }
    }
    assert case["allocatedDevices"] == []


def test_features_follow_the_gates() -> None:
    features = Features.parse(
        "DRAAdminAccess=false,DRAConsumableCapacity=false,DRAResourceClaimDeviceStatus=false"
    )
    assert oracle_features(features) == {
        "AdminAccess": False,
        "PrioritizedList": True,
        "PartitionableDevices": True,
        "DeviceTaints": True,
        "ConsumableCapacity": False,
        # Upstream's DeviceBindingAndStatus needs both binding gates.
        "DeviceBindingAndStatus": False,
        "ListTypeAttributes": True,
    }


def test_nodes_for_bench_nodes() -> None:
    inputs, _ = read_case(RICH)
    case = oracle_case(inputs.slices, inputs.classes, inputs.claims, nodes=[inputs.node] * 2)
    assert "node" not in case
    assert [n["metadata"]["name"] for n in case["nodes"]] == ["node-2", "node-2"]


def test_capacity_names_are_written_as_given() -> None:
    """A capacity name is compared literally (``mem`` and ``<driver>/mem`` are two
    capacities): the case writes the driver's own qualified name as given. It was
    written bare in the slice while the claim's request kept it qualified, and the
    harness then found no such capacity."""
    from draspeed import load
    from draspeed.testing.documents import resource_slice
    from draspeed.testing.oracle_cases import oracle_case

    device = {
        "name": "d0",
        "allowMultipleAllocations": True,
        "capacity": {"d.example.com/mem": {"value": "8Gi"}, "cores": {"value": "4"}},
    }
    objects = load([resource_slice("s", [device], driver="d.example.com", nodeName="node-1")])
    case = oracle_case(objects.slices, [], [])
    (device,) = case["slices"][0]["spec"]["devices"]
    assert set(device["capacity"]) == {"d.example.com/mem", "cores"}
