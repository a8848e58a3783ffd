"""Encoding allocation results: upstream's exact JSON (v1), older shapes, claim echo."""

from __future__ import annotations

import copy
import json
import warnings
from pathlib import Path
from typing import Any

import pytest
import yaml

from draspeed.api import (
    DraspeedConversionWarning,
    claim_with_allocation,
    decode,
    decode_allocation,
    encode_allocation,
)
from draspeed.api.loader import load
from draspeed.api.model import (
    AllocationResult,
    DeviceAllocationConfiguration,
    DeviceAllocationResult,
    DeviceRequestAllocationResult,
    DeviceToleration,
    NodeSelector,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    OpaqueDeviceConfiguration,
    ResourceClaim,
)
from draspeed.errors import InputError
from draspeed.quantity import Quantity

DATA = Path(__file__).parent / "data" / "api"
DIFFERENTIAL = Path(__file__).parent / "data" / "differential"


def _upstream_results() -> list[tuple[str, dict[str, Any]]]:
    cases = []
    for path in sorted(DIFFERENTIAL.glob("*.expected.json")):
        expected = json.loads(path.read_text(encoding="utf-8"))
        for i, result in enumerate(expected.get("results", [])):
            cases.append((f"{path.name.split('.')[0]}[{i}]", result))
    return cases


UPSTREAM = _upstream_results()


def test_upstream_results_are_available() -> None:
    assert len(UPSTREAM) >= 100


@pytest.mark.parametrize(("name", "result"), UPSTREAM, ids=[n for n, _ in UPSTREAM])
def test_upstream_json_round_trips(name: str, result: dict[str, Any]) -> None:
    encoded = encode_allocation(decode_allocation(result))
    assert encoded == result
    # Byte-identical once keys are ordered the same way (no float or quantity drift).
    assert json.dumps(encoded, sort_keys=True) == json.dumps(result, sort_keys=True)


def _result() -> AllocationResult:
    return AllocationResult(
        devices=DeviceAllocationResult(
            results=[
                DeviceRequestAllocationResult(
                    request="gpus",
                    driver="gpu.example.com",
                    pool="node-1",
                    device="gpu-0",
                    tolerations=[DeviceToleration(key="k", operator="Exists")],
                    share_id="aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa",
                    consumed_capacity={
                        "memory": Quantity.parse("20480Mi"),
                        "cores": Quantity.parse("4"),
                    },
                ),
                DeviceRequestAllocationResult(
                    request="gpus",
                    driver="gpu.example.com",
                    pool="node-1",
                    device="gpu-1",
                    admin_access=True,
                ),
            ],
            config=[
                DeviceAllocationConfiguration(
                    source="FromClass",
                    requests=[],
                    opaque=OpaqueDeviceConfiguration(driver="gpu.example.com", parameters={"a": 1}),
                ),
            ],
        ),
        node_selector=NodeSelector(
            [
                NodeSelectorTerm(
                    match_fields=[
                        NodeSelectorRequirement(
                            key="metadata.name", operator="In", values=["node-1"]
                        )
                    ]
                )
            ]
        ),
    )


def test_v1_shape_and_omitempty() -> None:
    encoded = encode_allocation(_result())
    assert encoded == {
        "devices": {
            "results": [
                {
                    "request": "gpus",
                    "driver": "gpu.example.com",
                    "pool": "node-1",
                    "device": "gpu-0",
                    "tolerations": [{"key": "k", "operator": "Exists"}],
                    "shareID": "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa",
                    "consumedCapacity": {"cores": "4", "memory": "20Gi"},
                },
                {
                    "request": "gpus",
                    "driver": "gpu.example.com",
                    "pool": "node-1",
                    "device": "gpu-1",
                    "adminAccess": True,
                },
            ],
            "config": [
                {
                    "source": "FromClass",
                    "opaque": {"driver": "gpu.example.com", "parameters": {"a": 1}},
                }
            ],
        },
        "nodeSelector": {
            "nodeSelectorTerms": [
                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-1"]}]}
            ]
        },
    }
    # Go's struct order, and map keys sorted.
    first = encoded["devices"]["results"][0]
    assert list(first) == [
        "request",
        "driver",
        "pool",
        "device",
        "tolerations",
        "shareID",
        "consumedCapacity",
    ]
    assert list(first["consumedCapacity"]) == ["cores", "memory"]


def test_empty_result_keeps_devices() -> None:
    assert encode_allocation(AllocationResult()) == {"devices": {}}
    with_time = AllocationResult(allocation_timestamp="2026-11-20T10:00:00Z")
    assert encode_allocation(with_time)["allocationTimestamp"] == "2026-11-20T10:00:00Z"


@pytest.mark.parametrize("version", ["v1beta2", "v1beta1"])
def test_beta_versions_share_the_v1_shape(version: str) -> None:
    assert encode_allocation(_result(), f"resource.k8s.io/{version}") == encode_allocation(
        _result()
    )


def test_v1alpha3_prints_admin_access_and_drops_newer_fields() -> None:
    with pytest.warns(DraspeedConversionWarning) as record:
        encoded = encode_allocation(_result(), "resource.k8s.io/v1alpha3")
    first, second = encoded["devices"]["results"]
    assert first == {
        "request": "gpus",
        "driver": "gpu.example.com",
        "pool": "node-1",
        "device": "gpu-0",
        "adminAccess": None,
        "tolerations": [{"key": "k", "operator": "Exists"}],
    }
    assert second["adminAccess"] is True
    assert sorted(str(w.message).split(": ")[2].split()[0] for w in record) == [
        "consumedCapacity",
        "shareID",
    ]


def test_v1alpha2_classic_shape() -> None:
    sink: list[str] = []
    with pytest.warns(DraspeedConversionWarning):
        encoded = encode_allocation(_result(), "resource.k8s.io/v1alpha2", sink=sink)
    assert encoded == {
        "resourceHandles": [
            {
                "driverName": "gpu.example.com",
                "structuredData": {
                    "vendorClassParameters": {"a": 1},
                    "vendorClaimParameters": None,
                    "nodeName": "node-1",
                    "results": [
                        {"vendorRequestParameters": None, "namedResources": {"name": "gpu-0"}},
                        {"vendorRequestParameters": None, "namedResources": {"name": "gpu-1"}},
                    ],
                },
            }
        ],
        "availableOnNodes": {
            "nodeSelectorTerms": [
                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-1"]}]}
            ]
        },
    }
    assert any("request names" in s for s in sink)
    assert any("consumedCapacity" in s for s in sink)


def test_v1alpha2_round_trip_of_a_classic_claim() -> None:
    raw = yaml.safe_load(
        (DATA / "seeds" / "resourceclaim-v1alpha2.yaml").read_text(encoding="utf-8")
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DraspeedConversionWarning)
        claim = decode(raw)
    assert isinstance(claim, ResourceClaim) and claim.status.allocation is not None
    encoded = encode_allocation(claim.status.allocation, "resource.k8s.io/v1alpha2")
    original = copy.deepcopy(raw["status"]["allocation"])
    del original["shareable"]  # lost in conversion (warned when decoding)
    original["resourceHandles"][0]["structuredData"]["vendorClaimParameters"] = (
        None  # Go prints null
    )
    assert encoded == original


def test_unknown_version_is_refused() -> None:
    with pytest.raises(InputError, match=r"cannot encode for 'resource\.k8s\.io/v2'"):
        encode_allocation(_result(), "resource.k8s.io/v2")


# ------------------------------------------------------------------ claim_with_allocation


def _claim(version: str = "v1") -> ResourceClaim:
    raw = {
        "apiVersion": f"resource.k8s.io/{version}",
        "kind": "ResourceClaim",
        "metadata": {"name": "c", "namespace": "ns", "uid": "u-1"},
        "spec": {
            "devices": {"requests": [{"name": "gpus", "exactly": {"deviceClassName": "gpu"}}]}
        },
        "status": {"reservedFor": [{"resource": "pods", "name": "p", "uid": "x"}]},
        "futureField": True,
    }
    if version == "v1beta1":
        raw["spec"] = {"devices": {"requests": [{"name": "gpus", "deviceClassName": "gpu"}]}}
    claim = decode(raw, validate="ignore")  # futureField: echoed, though unknown
    assert isinstance(claim, ResourceClaim)
    return claim


def test_claim_with_allocation_is_a_deep_copy_with_status() -> None:
    claim = _claim()
    before = copy.deepcopy(claim.raw)
    doc = claim_with_allocation(claim, _result())
    assert claim.raw == before  # untouched
    assert doc["status"]["allocation"] == encode_allocation(_result())
    assert doc["status"]["reservedFor"] == before["status"]["reservedFor"]
    assert doc["futureField"] is True and doc["apiVersion"] == "resource.k8s.io/v1"
    doc["spec"]["devices"]["requests"][0]["name"] = "changed"
    assert claim.raw["spec"]["devices"]["requests"][0]["name"] == "gpus"


def test_claim_with_allocation_in_the_claims_own_version() -> None:
    claim = _claim("v1beta1")
    doc = claim_with_allocation(claim, _result())
    assert doc["apiVersion"] == "resource.k8s.io/v1beta1"
    assert doc["status"]["allocation"]["devices"]["results"][1]["adminAccess"] is True


def test_claim_with_allocation_classic_sets_driver_name() -> None:
    raw = yaml.safe_load(
        (DATA / "seeds" / "resourceclaim-v1alpha2.yaml").read_text(encoding="utf-8")
    )
    del raw["status"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DraspeedConversionWarning)
        claim = load(raw).claims[0]
    single = AllocationResult(
        devices=DeviceAllocationResult(
            results=[
                DeviceRequestAllocationResult(
                    request="request", driver="gpu.example.com", pool="node-1", device="gpu-7"
                )
            ]
        )
    )
    with pytest.warns(DraspeedConversionWarning, match="pool 'node-1' cannot be expressed"):
        doc = claim_with_allocation(claim, single)
    assert doc["status"]["driverName"] == "gpu.example.com"
    handle = doc["status"]["allocation"]["resourceHandles"][0]
    assert handle["structuredData"]["results"][0]["namedResources"] == {"name": "gpu-7"}


def test_claim_from_typed_list_gets_type_meta_back() -> None:
    objects = load(
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaimList",
            "items": [
                {
                    "metadata": {"name": "c", "namespace": "ns"},
                    "spec": {
                        "devices": {
                            "requests": [{"name": "r", "exactly": {"deviceClassName": "x"}}]
                        }
                    },
                }
            ],
        }
    )
    doc = claim_with_allocation(objects.claims[0], AllocationResult())
    assert (doc["apiVersion"], doc["kind"]) == ("resource.k8s.io/v1", "ResourceClaim")
    assert "kind" not in objects.claims[0].raw
