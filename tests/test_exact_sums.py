"""Counter and capacity values beyond int64 are decided exactly, never wrapped."""

from __future__ import annotations

from typing import Any

import pytest

import draspeed
from draspeed.api import encode_allocation
from draspeed.cluster import Cluster, split_claims
from draspeed.engine.allocator import Allocator
from draspeed.engine.claim_arrays import ClaimArrays, claim_arrays
from draspeed.engine.snapshot import Snapshot
from draspeed.reference import ReferenceAllocator


def _cluster(
    total: str, each: str, count: int, shared_capacity: str | None = None
) -> list[dict[str, Any]]:
    devices: list[dict[str, Any]] = [
        {
            "name": f"dev-{i}",
            "consumesCounters": [{"counterSet": "set", "counters": {"c": {"value": each}}}],
        }
        for i in range(4)
    ]
    if shared_capacity is not None:
        devices.append(
            {
                "name": "shared",
                "allowMultipleAllocations": True,
                "capacity": {"bytes": {"value": shared_capacity}},
            }
        )
    pool = {"name": "pool", "generation": 1, "resourceSliceCount": 2}
    return [
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-1"}},
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": "cls"},
            "spec": {"selectors": [{"cel": {"expression": 'device.driver == "drv.example.com"'}}]},
        },
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceSlice",
            "metadata": {"name": "counters"},
            "spec": {
                "driver": "drv.example.com",
                "nodeName": "node-1",
                "pool": pool,
                "sharedCounters": [{"name": "set", "counters": {"c": {"value": total}}}],
            },
        },
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceSlice",
            "metadata": {"name": "devices"},
            "spec": {
                "driver": "drv.example.com",
                "nodeName": "node-1",
                "pool": pool,
                "devices": devices,
            },
        },
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim",
            "metadata": {"name": "claim", "namespace": "ns"},
            "spec": {
                "devices": {
                    "requests": [
                        {
                            "name": "req",
                            "exactly": {
                                "deviceClassName": "cls",
                                "count": count,
                                "selectors": [
                                    {"cel": {"expression": "!device.allowMultipleAllocations"}}
                                ],
                            },
                        }
                    ]
                }
            },
        },
    ]


def _both(docs: list[dict[str, Any]]) -> tuple[Any, Any, ClaimArrays]:
    objs = draspeed.load(docs)
    allocated, pending = split_claims(objs.claims)
    node = Cluster.from_objects(objs).node("node-1")
    snapshot = Snapshot.build(objs.slices, objs.classes, allocated)
    fast = Allocator(snapshot).allocate(pending, node)
    ref = ReferenceAllocator(objs.slices, objs.classes, allocated).allocate(pending, node)
    layout, _ = snapshot.layout_for(node)
    builder = claim_arrays(layout, pending)
    return fast, ref, builder


def _encoded(results: Any) -> Any:
    """Encoded results with the random shareIDs replaced by their presence."""
    if results is None:
        return None
    encoded = [encode_allocation(r) for r in results]
    for result in encoded:
        for device in result["devices"]["results"]:
            if "shareID" in device:
                device["shareID"] = "<share>"
    return encoded


def _exact(arrays: ClaimArrays) -> Any:
    assert arrays.problem is not None
    return arrays.problem.exact


@pytest.mark.parametrize(
    ("total", "each", "count", "fits", "exact"),
    [
        # Whole multiples of a common unit: scaled by their gcd, they fit int64.
        ("1e30", "3e29", 3, True, False),
        ("1e30", "3e29", 4, False, False),
        ("12345678901234567890123", "4115226300411522630041", 3, True, False),
        # No useful common unit: sums need Python integers.
        ("8Ei", "1", 4, True, True),  # BinarySI capped at 2^63-1 (odd), terms of 1
        ("12345678901234567890123", "4115226300411522630040", 3, True, True),
        ("12345678901234567890123", "4115226300411522630042", 3, False, True),
        ("100000000000000000000001", "33333333333333333333334", 3, False, True),
    ],
)
def test_counters_beyond_int64(total: str, each: str, count: int, fits: bool, exact: bool) -> None:
    fast, ref, builder = _both(_cluster(total, each, count))
    assert (fast is not None) == fits
    assert _encoded(fast) == _encoded(ref)
    assert (_exact(builder) is not None) == exact


def test_small_values_stay_in_int64() -> None:
    _fast, _ref, builder = _both(_cluster("80Gi", "10Gi", 3))
    assert _exact(builder) is None


@pytest.mark.parametrize(("shares", "fits"), [(2, True), (3, False)])
def test_shared_capacity_beyond_int64(shares: int, fits: bool) -> None:
    docs = _cluster("1", "1", 1, shared_capacity="100000000000000000000001")
    docs[-1]["spec"]["devices"]["requests"] = [
        {
            "name": f"share-{i}",
            "exactly": {
                "deviceClassName": "cls",
                "selectors": [{"cel": {"expression": "device.allowMultipleAllocations"}}],
                "capacity": {"requests": {"bytes": "33333333333333333333334"}},
            },
        }
        for i in range(shares)
    ]
    fast, ref, builder = _both(docs)
    assert (fast is not None) == fits
    assert _encoded(fast) == _encoded(ref)
    assert _exact(builder) is not None
