"""draspeed.explain: small hand-built clusters, one per funnel stage that can block.

Each case asserts the allocator's verdict, the device counts of every stage, the
main reason (``summary``) and the blockers exactly, and that the JSON form gives
the same explanation back.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from draspeed.api.loader import load
from draspeed.cluster import split_claims
from draspeed.engine.snapshot import Snapshot
from draspeed.explain import Explanation, explain
from draspeed.features import Features
from draspeed.rules.taint_rules import apply_taint_rules

DRIVER = "gpu.example.com"
NODE = "n1"
SHARE = "8f2c1c4e-1d2b-4c3a-9e8f-0a1b2c3d4e5f"

Obj = dict[str, Any]


# --------------------------------------------------------------------------------------
# Builders: plain resource.k8s.io/v1 objects
# --------------------------------------------------------------------------------------


def device_class(name: str = "gpu", expression: str = f"device.driver == '{DRIVER}'") -> Obj:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": name},
        "spec": {"selectors": [{"cel": {"expression": expression}}]},
    }


def gpu(name: str, **fields: Any) -> Obj:
    attributes = {"index": {"int": int(name.rsplit("-", 1)[1])}}
    attributes.update(fields.pop("attributes", {}))
    return {"name": name, "attributes": attributes, **fields}


def gpus(n: int, **fields: Any) -> list[Obj]:
    return [gpu(f"gpu-{i}", **fields) for i in range(n)]


def resource_slice(
    devices: list[Obj] | None = None,
    *,
    name: str = "s1",
    pool: str = NODE,
    count: int = 1,
    counters: list[Obj] | None = None,
) -> Obj:
    spec: Obj = {
        "driver": DRIVER,
        "nodeName": NODE,
        "pool": {"name": pool, "generation": 1, "resourceSliceCount": count},
    }
    if devices is not None:
        spec["devices"] = devices
    if counters is not None:
        spec["sharedCounters"] = counters
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": name},
        "spec": spec,
    }


def request(name: str = "gpu", count: int = 1, cls: str = "gpu", **exact: Any) -> Obj:
    return {"name": name, "exactly": {"deviceClassName": cls, "count": count, **exact}}


def claim(
    name: str = "c1",
    requests: list[Obj] | None = None,
    constraints: list[Obj] | None = None,
    allocated: list[str] | None = None,
    results: list[Obj] | None = None,
) -> Obj:
    devices: Obj = {"requests": requests or [request()]}
    if constraints:
        devices["constraints"] = constraints
    obj: Obj = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"devices": devices},
    }
    if allocated is not None or results is not None:
        rname = devices["requests"][0]["name"]
        found = results or [
            {"request": rname, "driver": DRIVER, "pool": NODE, "device": d} for d in allocated or []
        ]
        obj["status"] = {"allocation": {"devices": {"results": found}}}
    return obj


def run(*objects: Obj, features: Features | None = None, node: str = NODE) -> Explanation:
    loaded = load(list(objects))
    allocated, pending = split_claims(loaded.claims)
    slices = apply_taint_rules(loaded.slices, loaded.taint_rules, loaded.classes)
    snapshot = Snapshot.build(slices, loaded.classes, allocated, features=features)
    explanation = explain(snapshot, pending, node)
    # The JSON form is plain JSON and gives the same explanation back.
    data = json.loads(json.dumps(explanation.to_dict()))
    assert data == explanation.to_dict()
    assert Explanation.from_dict(data) == explanation
    return explanation


def counts(e: Explanation, index: int = 0) -> list[int]:
    f = e.requests[index]
    return [c for _, c in f.counts()] + [f.needs]


# --------------------------------------------------------------------------------------
# One stage at a time
# --------------------------------------------------------------------------------------


def test_fits_lists_the_chosen_devices() -> None:
    e = run(device_class(), resource_slice(gpus(4)), claim(requests=[request(count=2)]))
    assert e.status == "fits" and e.fits
    assert e.allocations == {"default/c1": [f"{DRIVER}/n1/gpu-0", f"{DRIVER}/n1/gpu-1"]}
    assert e.requests[0].chosen == [f"{DRIVER}/n1/gpu-0", f"{DRIVER}/n1/gpu-1"]
    assert counts(e) == [4, 4, 4, 4, 4, 4, 4, 2]
    assert e.summary == f"fits: default/c1 gets {DRIVER}/n1/gpu-0, {DRIVER}/n1/gpu-1"
    assert e.blockers == [] and e.pools == []
    assert e.rows()[1][-1] == f"{DRIVER}/n1/gpu-0, {DRIVER}/n1/gpu-1"


def test_class_selector() -> None:
    e = run(
        device_class("other", "device.driver == 'other.example.com'"),
        resource_slice(gpus(4)),
        claim(requests=[request(cls="other")]),
    )
    assert e.status == "does-not-fit"
    assert counts(e) == [4, 0, 0, 0, 0, 0, 0, 1]
    assert e.requests[0].short_at == "classSelectors"
    assert e.summary == "request gpu: needs 1, 0 match class other"
    [blocker] = e.blockers
    assert (blocker.kind, blocker.details) == (
        "request",
        {"claim": "default/c1", "request": "gpu", "stage": "classSelectors"},
    )
    assert e.rows()[1][-1] == "short: class sel"


def test_request_selector() -> None:
    selector = {"cel": {"expression": f"device.attributes['{DRIVER}'].index >= 3"}}
    e = run(
        device_class(),
        resource_slice(gpus(4)),
        claim(requests=[request(count=2, selectors=[selector])]),
    )
    assert counts(e) == [4, 4, 1, 1, 1, 1, 1, 2]
    assert e.summary == "request gpu: needs 2, 1 match its selectors"


def test_in_use() -> None:
    e = run(
        device_class(),
        resource_slice(gpus(4)),
        claim("running", allocated=["gpu-0", "gpu-1", "gpu-2"]),
        claim(requests=[request(count=2)]),
    )
    assert counts(e) == [4, 4, 4, 1, 1, 1, 1, 2]
    assert e.requests[0].in_use == 3
    assert e.summary == "request gpu: needs 2, 1 available (3 in use)"
    assert e.blockers[0].details["stage"] == "available"


def test_admin_access_ignores_in_use() -> None:
    e = run(
        device_class(),
        resource_slice(gpus(2)),
        claim("running", allocated=["gpu-0", "gpu-1"]),
        claim(requests=[request(count=2, adminAccess=True)]),
    )
    assert e.status == "fits"
    assert counts(e) == [2, 2, 2, 2, 2, 2, 2, 2]
    assert e.requests[0].admin_access and e.requests[0].in_use == 0


def _partitioned(consumption: dict[str, int], memory: int = 4) -> list[Obj]:
    counters = [{"name": "cs", "counters": {"mem": {"value": str(memory)}}}]
    devices = [
        gpu(
            f"part-{i}",
            attributes={"size": {"int": amount}},
            consumesCounters=[{"counterSet": "cs", "counters": {"mem": {"value": str(amount)}}}],
        )
        for i, amount in enumerate(consumption.values())
    ]
    return [
        resource_slice(counters=counters, name="counters", count=2),
        resource_slice(devices, name="devices", count=2),
    ]


def test_counters_exhausted() -> None:
    whole = {"cel": {"expression": f"device.attributes['{DRIVER}'].size == 4"}}
    e = run(
        device_class(),
        *_partitioned({"part-0": 4, "part-1": 2, "part-2": 2}),
        claim("running", allocated=["part-1"]),
        claim(requests=[request(selectors=[whole])]),
    )
    assert e.status == "does-not-fit"
    assert counts(e) == [3, 3, 1, 1, 0, 0, 0, 1]
    assert e.summary == "request gpu: needs 1, 0 with enough shared counters left"
    counter = [b for b in e.blockers if b.kind == "counter"]
    assert [b.details for b in counter] == [
        {
            "pool": f"{DRIVER}/n1",
            "counterSet": "cs",
            "counters": [{"counter": "mem", "remaining": "2", "needed": "4"}],
            "request": "gpu",
            "devices": 1,
        }
    ]
    assert counter[0].message == (
        f"pool {DRIVER}/n1, counter set cs: mem remaining 2, needed 4 "
        "(1 device of request gpu blocked)"
    )


def test_counters_exhausted_together() -> None:
    """Each device fits the counters alone, two do not: found by relaxing the set."""
    e = run(
        device_class(),
        *_partitioned({"part-0": 6, "part-1": 6, "part-2": 6}, memory=10),
        claim(requests=[request(count=2)]),
    )
    assert e.status == "does-not-fit"
    assert counts(e) == [3, 3, 3, 3, 3, 3, 3, 2]
    [blocker] = e.blockers
    assert blocker.kind == "counter"
    assert blocker.details == {
        "pool": f"{DRIVER}/n1",
        "counterSet": "cs",
        "counters": [{"counter": "mem", "remaining": "10", "needed": "12"}],
        "alone": True,
    }
    assert e.summary == blocker.message


def test_capacity() -> None:
    shared = gpu(
        "gpu-0",
        allowMultipleAllocations=True,
        capacity={"memory": {"value": "10Gi"}},
    )
    running = claim(
        "running",
        results=[
            {
                "request": "gpu",
                "driver": DRIVER,
                "pool": NODE,
                "device": "gpu-0",
                "shareID": SHARE,
                "consumedCapacity": {"memory": "8Gi"},
            }
        ],
    )
    e = run(
        device_class(),
        resource_slice([shared]),
        running,
        claim(requests=[request(capacity={"requests": {"memory": "4Gi"}})]),
    )
    assert e.status == "does-not-fit"
    assert counts(e) == [1, 1, 1, 1, 1, 0, 0, 1]
    assert e.summary == "request gpu: needs 1, 0 with enough capacity left"


def test_taints_and_tolerations() -> None:
    taint = [{"key": "maintenance", "effect": "NoSchedule"}]
    devices = [gpu("gpu-0", taints=taint), gpu("gpu-1", taints=taint), gpu("gpu-2", taints=taint)]
    devices.append(gpu("gpu-3"))
    objects = (device_class(), resource_slice(devices))
    e = run(*objects, claim(requests=[request(count=2)]))
    assert counts(e) == [4, 4, 4, 4, 4, 4, 1, 2]
    assert e.summary == "request gpu: needs 2, 1 not tainted (3 tainted)"
    toleration = [{"key": "maintenance", "operator": "Exists", "effect": "NoSchedule"}]
    tolerated = run(*objects, claim(requests=[request(count=2, tolerations=toleration)]))
    assert tolerated.status == "fits" and counts(tolerated)[6] == 4
    # Explaining as if DRADeviceTaints were off: the taints no longer count.
    loaded = load([*objects, claim(requests=[request(count=2)])])
    snapshot = Snapshot.build(loaded.slices, loaded.classes)
    off = explain(snapshot, loaded.claims, NODE, features=Features(device_taints=False))
    assert off.status == "fits" and counts(off)[6] == 4


def _rooted(roots: list[str]) -> list[Obj]:
    return [
        gpu(f"gpu-{i}", attributes={"resource.kubernetes.io/pcieRoot": {"string": r}})
        for i, r in enumerate(roots)
    ]


def test_match_attribute_constraint() -> None:
    constraint = [{"matchAttribute": "resource.kubernetes.io/pcieRoot"}]
    e = run(
        device_class(),
        resource_slice(_rooted(["a", "a", "b", "b"])),
        claim(requests=[request(count=3)], constraints=constraint),
    )
    assert e.status == "does-not-fit"
    assert counts(e) == [4, 4, 4, 4, 4, 4, 4, 3]
    [blocker] = e.blockers
    assert blocker.kind == "constraint"
    assert blocker.details == {
        "claim": "default/c1",
        "index": 0,
        "type": "matchAttribute",
        "attribute": "resource.kubernetes.io/pcieRoot",
        "requests": [],
        "alone": True,
    }
    assert e.summary == (
        "claim default/c1, constraint #0 (matchAttribute resource.kubernetes.io/pcieRoot, "
        "all requests): without it the claims fit"
    )
    assert e.rows()[1][-1] == "enough"


def test_distinct_attribute_constraint_named_by_index() -> None:
    constraints = [
        {"matchAttribute": f"{DRIVER}/index", "requests": ["solo"]},
        {"distinctAttribute": "resource.kubernetes.io/pcieRoot", "requests": ["a", "b"]},
    ]
    e = run(
        device_class(),
        resource_slice(_rooted(["a", "a", "a", "a"])),
        claim(requests=[request("a"), request("b"), request("solo")], constraints=constraints),
    )
    assert e.status == "does-not-fit"
    kinds = [(b.kind, b.details.get("index"), b.details.get("type")) for b in e.blockers]
    assert kinds == [("constraint", 1, "distinctAttribute")]
    assert e.blockers[0].details["requests"] == ["a", "b"]


def test_requests_competing_for_devices() -> None:
    e = run(
        device_class(),
        resource_slice(gpus(4)),
        claim("c1", requests=[request(count=3)]),
        claim("c2", requests=[request(count=3)]),
    )
    assert e.status == "does-not-fit"
    assert [counts(e, i) for i in range(2)] == [[4, 4, 4, 4, 4, 4, 4, 3]] * 2
    [blocker] = e.blockers
    assert blocker.kind == "together"
    assert blocker.details == {
        "requests": ["default/c1/gpu", "default/c2/gpu"],
        "needs": 6,
        "candidates": 4,
    }


def test_incomplete_pool() -> None:
    e = run(device_class(), resource_slice(gpus(4), count=2), claim())
    assert e.status == "does-not-fit"
    assert counts(e) == [0, 0, 0, 0, 0, 0, 0, 1]
    assert [p.to_dict()["state"] for p in e.pools] == ["incomplete"]
    assert e.pools[0].pool == f"{DRIVER}/n1"
    assert e.summary == (
        f"request gpu: needs 1, 0 on the node; not searchable: pool {DRIVER}/n1 (incomplete)"
    )


def test_invalid_pool_is_a_node_error() -> None:
    e = run(
        device_class(),
        resource_slice(gpus(1), name="s1", count=2),
        resource_slice(gpus(1), name="s2", count=2),
        claim(),
    )
    assert e.status == "node-error"
    assert e.error == "invalid resource pools were encountered"
    assert [(p.state, p.reason) for p in e.pools] == [("invalid", "duplicate device name gpu-0")]
    assert e.summary == (
        f"invalid resource pools were encountered: pool {DRIVER}/n1: duplicate device name gpu-0"
    )


def test_too_many_devices_for_one_claim() -> None:
    e = run(device_class(), resource_slice(gpus(40)), claim(requests=[request(count=33)]))
    assert e.status == "error"
    assert (
        e.error == "claim default/c1: number of requested devices 33 exceeds the claim limit of 32"
    )
    assert e.summary == e.error
    assert e.requests[0].over_claim_limit
    assert [b.kind for b in e.blockers] == ["claim-limit"]


def test_alternative_over_the_claim_limit() -> None:
    never = {"cel": {"expression": f"device.attributes['{DRIVER}'].index > 100"}}
    prioritized = {
        "name": "more",
        "firstAvailable": [
            {"name": "big", "deviceClassName": "gpu", "count": 20},
            {"name": "small", "deviceClassName": "gpu", "count": 1, "selectors": [never]},
        ],
    }
    e = run(
        device_class(),
        resource_slice(gpus(21)),  # few: a failing request backtracks over every choice
        claim(requests=[request("base", count=20), prioritized]),
    )
    assert e.status == "does-not-fit"
    assert [f.request for f in e.requests] == ["base", "more/big", "more/small"]
    assert [f.over_claim_limit for f in e.requests] == [False, True, False]
    assert e.summary == (
        "request more: no alternative fits: big needs 20, which would give claim default/c1 "
        "more than 32 devices; small needs 1, 0 match its selectors"
    )


def test_cel_runtime_error_has_upstreams_text() -> None:
    broken = {"cel": {"expression": f"device.attributes['{DRIVER}'].missing == 1"}}
    e = run(device_class(), resource_slice(gpus(2)), claim(requests=[request(selectors=[broken])]))
    assert e.status == "error"
    assert e.error is not None
    assert e.error.startswith(
        f"claim default/c1: selector #0 on device {DRIVER}/n1/gpu-0: CEL runtime error: "
    )
    assert e.requests[0].selector_errors == 2
    assert e.requests[0].selector_error == e.error
    assert e.blockers[0].kind == "selector" and e.blockers[0].message == e.error
    assert e.summary == e.error


def test_missing_class_is_the_allocators_error() -> None:
    e = run(resource_slice(gpus(2)), claim())
    assert e.status == "error"
    assert e.error == (
        "claim default/c1, request gpu: could not retrieve device class gpu: "
        'deviceclass.resource.k8s.io "gpu" not found'
    )
    assert counts(e) == [2, 0, 0, 0, 0, 0, 0, 1]


def test_unknown_node_has_nothing() -> None:
    e = run(device_class(), resource_slice(gpus(2)), claim(), node="elsewhere")
    assert e.node == "elsewhere" and e.status == "does-not-fit"
    assert e.summary == "request gpu: needs 1, 0 on the node"


@pytest.mark.parametrize("mode", ["fits", "empty"])
def test_allocation_mode_all(mode: str) -> None:
    cls = device_class() if mode == "fits" else device_class("gpu", "false")
    all_of = {"name": "gpu", "exactly": {"deviceClassName": "gpu", "allocationMode": "All"}}
    e = run(cls, resource_slice(gpus(3)), claim(requests=[all_of]))
    if mode == "fits":
        assert e.status == "fits" and counts(e)[-1] == 3
        assert e.rows()[1][-2] == "all 3"
    else:
        assert e.status == "does-not-fit"
        assert (
            e.summary
            == "request gpu: asks for all matching devices, but no device on the node matches"
        )


def test_a_claim_given_twice_names_the_devices_of_both() -> None:
    """Upstream allocates each claim it is given, a repeated one as well: the claim's key
    lists both allocations' devices, not the last one's alone."""
    loaded = load([device_class(), resource_slice(gpus(3)), claim()])
    snapshot = Snapshot.build(loaded.slices, loaded.classes)
    explanation = explain(snapshot, [loaded.claims[0], loaded.claims[0]], NODE)
    assert explanation.fits
    assert explanation.allocations == {
        "default/c1": [f"{DRIVER}/{NODE}/gpu-0", f"{DRIVER}/{NODE}/gpu-1"]
    }
