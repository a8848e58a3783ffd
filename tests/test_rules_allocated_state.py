"""The allocated state built from already-allocated claims."""

from __future__ import annotations

from draspeed.api.model import (
    AllocationResult,
    DeviceAllocationResult,
    DeviceRequestAllocationResult,
    ObjectMeta,
    ResourceClaim,
    ResourceClaimSpec,
    ResourceClaimStatus,
)
from draspeed.quantity import Quantity
from draspeed.rules.allocated_state import AllocatedState
from draspeed.rules.ids import DeviceID


def allocated(*results: DeviceRequestAllocationResult, deallocating: bool = False) -> ResourceClaim:
    return ResourceClaim(
        ObjectMeta(name="c"),
        ResourceClaimSpec(),
        ResourceClaimStatus(
            allocation=AllocationResult(DeviceAllocationResult(list(results))),
            deallocation_requested=deallocating,
        ),
    )


def result(device: str, **kw: object) -> DeviceRequestAllocationResult:
    return DeviceRequestAllocationResult("r", "d", "p", device, **kw)  # type: ignore[arg-type]


def test_state_from_claims() -> None:
    gi = Quantity.parse("1Gi")
    claims = [
        allocated(result("plain"), result("admin", admin_access=True)),
        allocated(
            result("shared", share_id="s1", consumed_capacity={"mem": gi}),
            result("shared", share_id="s2", consumed_capacity={"mem": gi}),
            result("share-no-capacity", share_id="s3"),
        ),
        allocated(result("leaving"), deallocating=True),
        ResourceClaim(ObjectMeta(name="pending"), ResourceClaimSpec()),
    ]
    state = AllocatedState.from_claims(claims)
    assert state.devices == {DeviceID("d", "p", "plain"), DeviceID("d", "p", "leaving")}
    # Names are qualified with the driver, like the model's device capacities.
    assert state.consumed_capacity == {DeviceID("d", "p", "shared"): {"mem": Quantity.parse("2Gi")}}
    assert len(state.shared_devices) == 3
    for name in ("plain", "leaving", "shared", "share-no-capacity"):
        assert state.is_allocated(DeviceID("d", "p", name))
    assert not state.is_allocated(DeviceID("d", "p", "admin"))
    assert state.has_share(DeviceID("d", "p", "share-no-capacity"))
    assert not state.has_share(DeviceID("d", "p", "plain"))


def test_shares_are_exclusive_without_consumable_capacity() -> None:
    claims = [allocated(result("shared", share_id="s1"))]
    state = AllocatedState.from_claims(claims, consumable_capacity=False)
    assert state.devices == {DeviceID("d", "p", "shared")} and not state.shared_devices
