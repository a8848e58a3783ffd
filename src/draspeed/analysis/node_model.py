"""One node's devices and counters in one committed state, read from its slices.

Best fit ranks devices with it (:mod:`draspeed.analysis.bestfit`) and the optimal
bound builds its model from it (:mod:`draspeed.analysis.bound`). Pools are gathered
as the allocator gathers them (``spec/upstream-allocator.md`` §2): the newest
generation of each pool; a pool short of slices is incomplete, one that repeats a
device name or counter set, or whose devices consume an unknown counter, is invalid;
neither is searched (their devices are kept, marked unusable, for reporting).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from draspeed.rules.allocated_state import AllocatedState
from draspeed.rules.ids import DeviceID, PoolID
from draspeed.rules.node_selection import NodeSelectorError, node_matches

if TYPE_CHECKING:
    from draspeed.api.model import Device, Node, ResourceSlice
    from draspeed.quantity import Quantity

Slot = tuple[PoolID, str, str]  # (pool, counter set, counter)


@dataclass(slots=True)
class ModelDevice:
    """One device the node sees, in the allocator's search order."""

    position: int
    slice: ResourceSlice
    device: Device
    id: DeviceID
    usable: bool  # the node can be given it: in a complete, valid pool, reaching the node
    held: bool  # some committed claim holds it (exclusively or a share)
    shared: bool  # held as shares only (more may fit within its capacity)
    consumed: dict[str, Quantity]  # what committed shares consume, by capacity name
    uses: dict[Slot, int] = field(default_factory=dict)  # counter consumption, nanos

    @property
    def shareable(self) -> bool:
        return bool(self.device.allow_multiple_allocations)


class NodeModel:
    """A node's devices (``devices``), counter capacities and what is left of them."""

    def __init__(
        self,
        slices: Sequence[ResourceSlice],
        allocated: AllocatedState,
        node: Node | None = None,
        *,
        partitionable: bool = True,
    ) -> None:
        self.capacity: dict[Slot, int] = {}
        self.unusable: dict[PoolID, str] = {}  # pool -> why the allocator skips it
        by_pool: dict[PoolID, list[ResourceSlice]] = {}
        for rs in slices:
            if not partitionable and (
                rs.spec.per_device_node_selection is not None or rs.spec.shared_counters
            ):
                continue
            by_pool.setdefault(PoolID(rs.spec.driver, rs.spec.pool.name), []).append(rs)
        self.devices: list[ModelDevice] = []
        for pid in sorted(by_pool):
            self._add_pool(pid, by_pool[pid], allocated, node)
        self.remaining = dict(self.capacity)
        for d in self.devices:
            if d.held:
                for slot, amount in d.uses.items():
                    if slot in self.remaining:
                        self.remaining[slot] -= amount

    def _add_pool(
        self,
        pid: PoolID,
        slices: list[ResourceSlice],
        allocated: AllocatedState,
        node: Node | None,
    ) -> None:
        newest = max(rs.spec.pool.generation for rs in slices)
        live = sorted(
            (rs for rs in slices if rs.spec.pool.generation == newest),
            key=lambda rs: rs.metadata.name,
        )
        why: str | None = "incomplete"
        if len(live) == live[0].spec.pool.resource_slice_count:
            why = _invalid(live)
        usable = why is None
        if why is not None:
            self.unusable[pid] = why
        if usable:
            for rs in live:
                for cs in rs.spec.shared_counters:
                    for name, counter in cs.counters.items():
                        self.capacity[(pid, cs.name, name)] = counter.value.nanos
        for rs in live:
            per_device = bool(rs.spec.per_device_node_selection)
            targets = node is None or per_device or _targets(rs, node)
            for device in rs.spec.devices:
                # Devices of the pool the node cannot use still hold counters.
                visible = targets and (not per_device or node is None or _reaches(device, node))
                did = DeviceID(pid.driver, pid.pool, device.name)
                shares = allocated.has_share(did) or did in allocated.consumed_capacity
                self.devices.append(
                    ModelDevice(
                        len(self.devices),
                        rs,
                        device,
                        did,
                        usable and visible,
                        allocated.is_allocated(did),
                        shares and did not in allocated.devices,
                        dict(allocated.consumed_capacity.get(did, {})),
                        {
                            (pid, u.counter_set, name): c.value.nanos
                            for u in device.consumes_counters
                            for name, c in u.counters.items()
                        },
                    )
                )

    def fits(self, d: ModelDevice, remaining: dict[Slot, int] | None = None) -> bool:
        """Whether the counters left cover what the device consumes."""
        left = self.remaining if remaining is None else remaining
        return all(amount <= left.get(slot, 0) for slot, amount in d.uses.items())

    def sets_of(self, d: ModelDevice) -> set[tuple[PoolID, str]]:
        """The counter sets a device consumes from."""
        return {(slot[0], slot[1]) for slot in d.uses}

    def left_share(self, sets: set[tuple[PoolID, str]], after: dict[Slot, int]) -> float:
        """Capacity left in these counter sets, as a share of their capacity."""
        total = left = 0.0
        for slot, capacity in self.capacity.items():
            if (slot[0], slot[1]) in sets and capacity > 0:
                total += 1.0
                left += after.get(slot, 0) / capacity
        return left / total if total else 1.0


def _invalid(live: list[ResourceSlice]) -> str | None:
    """Why a complete pool is invalid (upstream's checks), or None."""
    names: set[str] = set()
    sets: dict[str, set[str]] = {}
    for rs in live:
        for cs in rs.spec.shared_counters:
            if cs.name in sets:
                return f"duplicate counter set name {cs.name}"
            sets[cs.name] = set(cs.counters)
    for rs in live:
        if rs.spec.shared_counters:
            continue
        for device in rs.spec.devices:
            if device.name in names:
                return f"duplicate device name {device.name}"
            names.add(device.name)
            for use in device.consumes_counters:
                counters = sets.get(use.counter_set)
                if counters is None or not set(use.counters) <= counters:
                    return f"device {device.name} consumes an unknown counter"
    return None


def _targets(rs: ResourceSlice, node: Node) -> bool:
    """Whether a slice (without per-device node selection) is gathered for the node."""
    spec = rs.spec
    try:
        return node_matches(node, spec.node_name or "", bool(spec.all_nodes), spec.node_selector)
    except NodeSelectorError:
        return False


def _reaches(device: Device, node: Node) -> bool:
    try:
        return node_matches(
            node, device.node_name or "", bool(device.all_nodes), device.node_selector
        )
    except NodeSelectorError:
        return False
