"""Focused cases for the reference allocator, above all the post-snapshot upstream fixes.

Every device class here has no selector, so the cases exercise the search,
counters, capacity, constraints and errors, not CEL.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from draspeed.api.model import (
    AllocationResult,
    CapacityRequirements,
    Counter,
    CounterSet,
    Device,
    DeviceAllocationResult,
    DeviceAttribute,
    DeviceCapacity,
    DeviceClaim,
    DeviceClass,
    DeviceClassSpec,
    DeviceConstraint,
    DeviceCounterConsumption,
    DeviceRequest,
    DeviceRequestAllocationResult,
    DeviceSubRequest,
    DeviceTaint,
    ExactDeviceRequest,
    Node,
    ObjectMeta,
    ResourceClaim,
    ResourceClaimSpec,
    ResourceClaimStatus,
    ResourcePool,
    ResourceSlice,
    ResourceSliceSpec,
)
from draspeed.errors import AllocationError, AllocationTimeout, NodeAllocationError
from draspeed.features import Features
from draspeed.quantity import Quantity
from draspeed.reference import ReferenceAllocator

Q = Quantity.parse
DRIVER = "gpu.example.com"
NODE = Node(ObjectMeta(name="node-1"))
CLASS = DeviceClass(ObjectMeta(name="gpu"), DeviceClassSpec())
ALL_ON = Features()


def device(name: str, **kw: Any) -> Device:
    """A device; ``attrs`` maps bare ids to (kind, value), ``mem`` consumes counter-set cs."""
    attrs = kw.pop("attrs", {})
    mem = kw.pop("mem", None)
    capacity = kw.pop("capacity", None)
    dev = Device(name, **kw)
    dev.attributes = {f"{DRIVER}/{k}": DeviceAttribute(*v) for k, v in attrs.items()}
    if mem is not None:
        dev.consumes_counters = [DeviceCounterConsumption("cs", {"mem": Counter(Q(mem))})]
    if capacity is not None:
        # The model keys capacities fully qualified; claims and results write "cap".
        dev.capacity = {"cap": DeviceCapacity(Q(capacity))}
    return dev


def pool_slice(
    *devices: Device, counters: str | None = None, name: str = "s"
) -> list[ResourceSlice]:
    """The slices of pool "p" on node-1: one with the devices, one with counter set cs."""
    count = 2 if counters else 1
    slices = [
        ResourceSlice(
            ObjectMeta(name=name),
            ResourceSliceSpec(
                DRIVER, ResourcePool("p", 1, count), node_name="node-1", devices=list(devices)
            ),
        )
    ]
    if counters:
        counter_set = CounterSet("cs", {"mem": Counter(Q(counters))})
        slices.append(
            ResourceSlice(
                ObjectMeta(name=f"{name}-counters"),
                ResourceSliceSpec(
                    DRIVER,
                    ResourcePool("p", 1, count),
                    node_name="node-1",
                    shared_counters=[counter_set],
                ),
            )
        )
    return slices


def request(name: str, count: int = 1, **kw: Any) -> DeviceRequest:
    capacity = kw.pop("capacity", None)
    exact = ExactDeviceRequest("gpu", count=count, **kw)
    if capacity is not None:
        exact.capacity = CapacityRequirements({"cap": Q(capacity)})
    return DeviceRequest(name, exactly=exact)


def claim(
    *requests: DeviceRequest,
    constraints: list[DeviceConstraint] | None = None,
    name: str = "claim-0",
) -> ResourceClaim:
    return ResourceClaim(
        ObjectMeta(name=name, namespace="default"),
        ResourceClaimSpec(DeviceClaim(list(requests), constraints or [])),
    )


def allocated_claim(*results: DeviceRequestAllocationResult) -> ResourceClaim:
    done = claim(name="done")
    done.status = ResourceClaimStatus(AllocationResult(DeviceAllocationResult(list(results))))
    return done


def chosen(results: list[AllocationResult] | None) -> list[list[str]] | None:
    if results is None:
        return None
    return [[r.device for r in result.devices.results] for result in results]


def allocate(
    slices: list[ResourceSlice],
    *claims: ResourceClaim,
    allocated: tuple[ResourceClaim, ...] = (),
    features: Features = ALL_ON,
) -> list[list[str]] | None:
    return chosen(ReferenceAllocator(slices, [CLASS], allocated, features).allocate(claims, NODE))


# --------------------------------------------------------------------------------------
# The work counter and the basic search
# --------------------------------------------------------------------------------------


def test_counts_allocate_one_invocations_like_upstream() -> None:
    allocator = ReferenceAllocator(pool_slice(device("d0")), [CLASS])
    assert chosen(allocator.allocate([claim(request("r"))], NODE)) == [["d0"]]
    # device, end of request, end of claim, end of claims
    assert allocator.last_stats.num_allocate_one_invocations == 4


def test_devices_of_one_request_are_tried_as_combinations() -> None:
    # 3 identical devices, 4 wanted: upstream's combination pruning gives 2**3 + ... steps.
    allocator = ReferenceAllocator(pool_slice(*(device(f"d{i}") for i in range(3))), [CLASS])
    assert allocator.allocate([claim(request("r", 4))], NODE) is None
    # Every subset of {d0, d1, d2} is visited once (8 calls), plus the final failed level.
    assert allocator.last_stats.num_allocate_one_invocations == 8


def test_first_solution_follows_claim_and_request_order() -> None:
    slices = pool_slice(device("d0"), device("d1"), device("d2"))
    assert allocate(slices, claim(request("a"), request("b", 2))) == [["d0", "d1", "d2"]]
    assert allocate(slices, claim(request("a")), claim(request("b"))) == [["d0"], ["d1"]]


def test_deadline() -> None:
    allocator = ReferenceAllocator(pool_slice(device("d0")), [CLASS])
    with pytest.raises(AllocationTimeout, match=r"^filter operation aborted: context deadline"):
        allocator.allocate([claim(request("r"))], NODE, deadline=time.monotonic() - 1)
    assert allocator.last_stats.num_allocate_one_invocations == 1


# --------------------------------------------------------------------------------------
# kubernetes#140431: counters given back on rejection and on backtracking
# --------------------------------------------------------------------------------------


def test_tainted_candidate_gives_back_its_counters() -> None:
    tainted = device("d0", mem="8", taints=[DeviceTaint("broken", effect="NoSchedule")])
    slices = pool_slice(tainted, device("d1", mem="8"), counters="8")
    assert allocate(slices, claim(request("r"))) == [["d1"]]


def test_constraint_rejected_candidate_gives_back_its_counters() -> None:
    slices = pool_slice(
        device("a", attrs={"x": ("int", 1)}),
        device("b", attrs={"x": ("int", 2)}, mem="8"),
        device("c", attrs={"x": ("int", 1)}, mem="8"),
        counters="8",
    )
    the_claim = claim(
        request("r0"), request("r1"), constraints=[DeviceConstraint(match_attribute=f"{DRIVER}/x")]
    )
    assert allocate(slices, the_claim) == [["a", "c"]]


def test_backtracking_over_a_shared_device_gives_back_its_counters() -> None:
    # r0 first takes a share of s; r1 cannot (its capacity is used up) nor any device
    # with another x, so r0 backtracks and must find s's counters free again for d.
    slices = pool_slice(
        device(
            "s", attrs={"x": ("int", 1)}, mem="8", capacity="1", allow_multiple_allocations=True
        ),
        device("d", attrs={"x": ("int", 2)}, mem="8", capacity="1"),
        device("e", attrs={"x": ("int", 2)}, capacity="1"),
        counters="8",
    )
    the_claim = claim(
        request("r0", capacity="1"),
        request("r1", capacity="1"),
        constraints=[DeviceConstraint(match_attribute=f"{DRIVER}/x")],
    )
    assert allocate(slices, the_claim) == [["d", "e"]]


def test_shared_device_pays_its_counters_once() -> None:
    shared = device("s", mem="8", allow_multiple_allocations=True)
    slices = pool_slice(shared, counters="8")
    results = ReferenceAllocator(slices, [CLASS]).allocate(
        [claim(request("a"), request("b"))], NODE
    )
    assert results is not None
    shares = [r.share_id for r in results[0].devices.results]
    assert [r.device for r in results[0].devices.results] == ["s", "s"]
    assert all(shares) and shares[0] != shares[1]


# --------------------------------------------------------------------------------------
# kubernetes#140437 / #140798: committed shares recorded only by shareID
# --------------------------------------------------------------------------------------


def share_of(name: str) -> DeviceRequestAllocationResult:
    return DeviceRequestAllocationResult("r", DRIVER, "p", name, share_id="u-1")


def test_committed_share_does_not_pay_counters_again() -> None:
    slices = pool_slice(device("s", mem="8", allow_multiple_allocations=True), counters="8")
    assert allocate(slices, claim(request("r")), allocated=(allocated_claim(share_of("s")),)) == [
        ["s"]
    ]


def test_committed_share_blocks_exclusive_use() -> None:
    slices = pool_slice(device("s"))  # no longer allows multiple allocations
    assert (
        allocate(slices, claim(request("r")), allocated=(allocated_claim(share_of("s")),)) is None
    )


# --------------------------------------------------------------------------------------
# kubernetes#140326 / #140438: constraints restore their state
# --------------------------------------------------------------------------------------


def test_match_attribute_intersection_is_restored_on_backtrack() -> None:
    slices = pool_slice(
        device("d1", attrs={"numa": ("ints", (1, 2))}),
        device("d2", attrs={"numa": ("ints", (1,))}),
        device("d3", attrs={"numa": ("ints", (2,))}),
        device("d4", attrs={"numa": ("ints", (2,))}),
    )
    the_claim = claim(
        request("r", 3), constraints=[DeviceConstraint(match_attribute=f"{DRIVER}/numa")]
    )
    assert allocate(slices, the_claim) == [["d1", "d3", "d4"]]


def test_distinct_attribute_checks_every_device_of_a_request() -> None:
    slices = pool_slice(
        *(
            device(f"d{i}", attrs={"color": ("string", c)})
            for i, c in enumerate(["red", "blue", "red", "green"])
        )
    )
    the_claim = claim(
        request("r", 3), constraints=[DeviceConstraint(distinct_attribute=f"{DRIVER}/color")]
    )
    assert allocate(slices, the_claim) == [["d0", "d1", "d3"]]
    scalar = Features(list_type_attributes=False)
    assert allocate(slices, the_claim, features=scalar) == [["d0", "d1", "d3"]]


def test_match_attribute_scalar_mode_rejects_lists() -> None:
    slices = pool_slice(
        device("d1", attrs={"numa": ("int", 1)}), device("d2", attrs={"numa": ("ints", (1,))})
    )
    the_claim = claim(
        request("r", 2), constraints=[DeviceConstraint(match_attribute=f"{DRIVER}/numa")]
    )
    assert allocate(slices, the_claim) == [["d1", "d2"]]
    assert allocate(slices, the_claim, features=Features(list_type_attributes=False)) is None


# --------------------------------------------------------------------------------------
# kubernetes#140769: All with a matching but exhausted shared device fails
# --------------------------------------------------------------------------------------


def test_all_fails_when_a_matching_device_is_used_up() -> None:
    slices = pool_slice(
        device("d1", capacity="1", allow_multiple_allocations=True),
        device("d2", capacity="1", allow_multiple_allocations=True),
    )
    used_up = DeviceRequestAllocationResult(
        "r", DRIVER, "p", "d1", share_id="u-1", consumed_capacity={"cap": Q("1")}
    )
    all_request = request("r", allocation_mode="All", capacity="1")
    assert allocate(slices, claim(all_request)) == [["d1", "d2"]]
    assert allocate(slices, claim(all_request), allocated=(allocated_claim(used_up),)) is None


# --------------------------------------------------------------------------------------
# Admin access, prioritized lists, errors
# --------------------------------------------------------------------------------------


def test_admin_access_ignores_other_claims_but_not_its_own() -> None:
    slices = pool_slice(device("d0"))
    taken = allocated_claim(DeviceRequestAllocationResult("r", DRIVER, "p", "d0"))
    admin = request("r", admin_access=True)
    assert allocate(slices, claim(admin), allocated=(taken,)) == [["d0"]]
    assert allocate(slices, claim(admin, request("again", admin_access=True))) is None


def test_prioritized_list_picks_the_first_subrequest_that_fits() -> None:
    slices = pool_slice(device("d0"), device("d1"))
    choice = DeviceRequest(
        "p",
        first_available=[
            DeviceSubRequest("big", "gpu", count=3),
            DeviceSubRequest("small", "gpu", count=2),
        ],
    )
    results = ReferenceAllocator(slices, [CLASS]).allocate([claim(choice)], NODE)
    assert results is not None
    assert [r.request for r in results[0].devices.results] == ["p/small", "p/small"]


@pytest.mark.parametrize(
    ("the_claim", "features", "message"),
    [
        (
            claim(request("r", 33)),
            Features(),
            "claim default/claim-0: number of requested devices 33 exceeds the claim limit of 32",
        ),
        (
            claim(DeviceRequest("r", exactly=ExactDeviceRequest("nope"))),
            Features(),
            "claim default/claim-0, request r: could not retrieve device class nope: "
            'deviceclass.resource.k8s.io "nope" not found',
        ),
        (
            claim(request("r", allocation_mode="Some")),
            Features(),
            "claim default/claim-0, request r: unsupported count mode Some",
        ),
        (
            claim(request("r", admin_access=False)),
            Features(admin_access=False),
            "claim default/claim-0, request r: "
            "admin access is requested, but the feature is disabled",
        ),
        (
            claim(request("r", capacity="1")),
            Features(consumable_capacity=False),
            "claim default/claim-0, request r: "
            "has capacity requests, but the DRAConsumableCapacity feature is disabled",
        ),
        (
            claim(request("r"), constraints=[DeviceConstraint()]),
            Features(),
            "claim default/claim-0, constraint #0: empty constraint (unsupported constraint type?)",
        ),
    ],
)
def test_fatal_errors(the_claim: ResourceClaim, features: Features, message: str) -> None:
    with pytest.raises(AllocationError) as info:
        allocate(pool_slice(device("d0")), the_claim, features=features)
    assert str(info.value) == message


def test_all_with_constraint_violation_is_an_error() -> None:
    slices = pool_slice(
        device("d0", attrs={"x": ("int", 1)}), device("d1", attrs={"x": ("int", 2)})
    )
    the_claim = claim(
        request("r", allocation_mode="All"),
        constraints=[DeviceConstraint(match_attribute=f"{DRIVER}/x")],
    )
    with pytest.raises(AllocationError) as info:
        allocate(slices, the_claim)
    assert str(info.value) == (
        "claim default/claim-0, request r: cannot add device gpu.example.com/p/d1 "
        "because a claim constraint would not be satisfied"
    )


def test_invalid_pool_makes_the_node_unsuitable_with_a_reason() -> None:
    slices = pool_slice(device("d0"), device("d0"))
    with pytest.raises(NodeAllocationError, match=r"^invalid resource pools were encountered$"):
        allocate(slices, claim(request("r")))


def test_all_with_incomplete_pool_is_an_error() -> None:
    slices = pool_slice(device("d0"), counters="8")[:1]  # the counter slice is missing
    with pytest.raises(
        AllocationError, match=r"resource pool gpu\.example\.com/p is currently being updated"
    ):
        allocate(slices, claim(request("r", allocation_mode="All")))
    assert allocate(slices, claim(request("r"))) is None
