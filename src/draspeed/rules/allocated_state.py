"""What already-allocated claims hold: the allocator's ``AllocatedState``.

Built as kube-scheduler's DRA plugin builds it (``allocateddevices.go``,
``foreachAllocatedDevice``): every result of every allocated claim counts,
including claims whose deallocation is pending, except results with admin
access, which never make a device unavailable. With DRAConsumableCapacity on,
a result with a shareID is one share of a multi-allocatable device (its
consumedCapacity, if any, adds to the device's aggregated consumption);
everything else marks the device as exclusively in use.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from draspeed.api.model import ResourceClaim
from draspeed.quantity import Quantity
from draspeed.quantity_sum import QuantitySum
from draspeed.rules.ids import DeviceID, SharedDeviceID


@dataclass(slots=True)
class AllocatedState:
    """Devices in use, device shares and the capacity the shares consume."""

    devices: set[DeviceID] = field(default_factory=set)
    shared_devices: set[SharedDeviceID] = field(default_factory=set)
    # Per device, what its shares consume, keyed like the model's device capacities
    # (exact sums: two shares' 1e999999 and 1Gi are compared without their digits).
    consumed_capacity: dict[DeviceID, dict[str, QuantitySum]] = field(default_factory=dict)
    # Devices with at least one share, derived from ``shared_devices`` for O(1) lookups.
    _shared_device_ids: set[DeviceID] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self._shared_device_ids = {share.device_id for share in self.shared_devices}

    @classmethod
    def from_claims(
        cls, claims: Iterable[ResourceClaim], *, consumable_capacity: bool = True
    ) -> AllocatedState:
        """Collect the state from claims; claims without an allocation are ignored."""
        state = cls()
        for claim in claims:
            allocation = claim.status.allocation
            if allocation is None:
                continue
            for result in allocation.devices.results:
                if result.admin_access:
                    continue
                device_id = DeviceID(result.driver, result.pool, result.device)
                if consumable_capacity and result.share_id is not None:
                    state.add_share(
                        SharedDeviceID(*device_id, result.share_id), result.consumed_capacity
                    )
                else:
                    state.devices.add(device_id)
        return state

    def add_share(self, share: SharedDeviceID, consumed: dict[str, Quantity]) -> None:
        """Record one share; an empty consumedCapacity (unset in the API) adds no capacity entry.

        Capacity names are kept as written: upstream matches them with the device's
        capacities literally.
        """
        self.shared_devices.add(share)
        self._shared_device_ids.add(share.device_id)
        if not consumed:
            return
        totals = self.consumed_capacity.setdefault(share.device_id, {})
        for name, amount in consumed.items():
            totals[name] = totals[name].add(amount) if name in totals else QuantitySum((amount,))

    def has_share(self, device_id: DeviceID) -> bool:
        """Whether some committed share of the device exists (with or without capacity)."""
        return device_id in self._shared_device_ids

    def is_allocated(self, device_id: DeviceID) -> bool:
        """Upstream's IsDeviceAllocated: exclusively, shared, or with consumed capacity."""
        return (
            device_id in self.devices
            or device_id in self._shared_device_ids
            or device_id in self.consumed_capacity
        )
