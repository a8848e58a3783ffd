"""One node's devices and counters in one committed state, read from its slices.

Best fit ranks devices with it (:mod:`draspeed.analysis.bestfit`) and the optimal
bound builds its model from it (:mod:`draspeed.analysis.bound`). What the node
publishes is read once (:class:`Published`: pools gathered as the allocator gathers
them, ``spec/upstream-allocator.md`` §2 -- the newest generation of each pool; a pool
short of slices is incomplete, one that repeats a device name or counter set, or
whose devices consume an unknown counter, is invalid; neither is searched, their
devices are kept, marked unusable, for reporting); a :class:`NodeModel` adds what
committed claims hold.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from draspeed.analysis.amounts import nanos_of
from draspeed.rules.allocated_state import AllocatedState
from draspeed.rules.ids import DeviceID, PoolID
from draspeed.rules.node_selection import NodeSelectorError, node_matches

if TYPE_CHECKING:
    from draspeed.api.model import Device, Node, ResourceSlice
    from draspeed.quantity_sum import QuantitySum

Slot = tuple[PoolID, str, str]  # (pool, counter set, counter)


@dataclass(slots=True)
class ModelDevice:
    """One device the node sees, in the allocator's search order."""

    position: int
    slice: ResourceSlice
    device: Device
    id: DeviceID
    usable: bool  # the node can be given it: in a complete, valid pool, reaching the node
    held: bool = False  # some committed claim holds it (exclusively or a share)
    shared: bool = False  # held as shares only (more may fit within its capacity)
    consumed: dict[str, QuantitySum] = field(default_factory=dict)  # by committed shares
    uses: dict[Slot, int] = field(default_factory=dict)  # counter consumption, nanos

    @property
    def shareable(self) -> bool:
        return bool(self.device.allow_multiple_allocations)


class Published:
    """What a node publishes, whatever is in use: its devices in search order, counter
    capacities, and consumption as integer arrays -- one column per counter, in units
    of the column's greatest common divisor, so that counts of nanos of mebibytes stay
    exact (int64, or Python integers past it)."""

    def __init__(
        self,
        slices: Sequence[ResourceSlice],
        node: Node | None = None,
        *,
        partitionable: bool = True,
    ) -> None:
        self.capacity: dict[Slot, int] = {}
        self.unusable: dict[PoolID, str] = {}  # pool -> why the allocator skips it
        self.devices: list[ModelDevice] = []  # in no state: nothing held
        by_pool: dict[PoolID, list[ResourceSlice]] = {}
        for rs in slices:
            if not partitionable and (
                rs.spec.per_device_node_selection is not None or rs.spec.shared_counters
            ):
                continue
            by_pool.setdefault(PoolID(rs.spec.driver, rs.spec.pool.name), []).append(rs)
        for pid in sorted(by_pool):
            self._add_pool(pid, by_pool[pid], node)
        self.slots = sorted(self.capacity)
        column = {slot: k for k, slot in enumerate(self.slots)}
        values: list[list[int]] = [[self.capacity[s]] for s in self.slots]
        for d in self.devices:
            for slot, amount in d.uses.items():
                if slot in column:
                    values[column[slot]].append(amount)
        units = [math.gcd(*v) or 1 for v in values]
        biggest = max(
            (max(abs(x) for x in v) // u for v, u in zip(values, units, strict=True)), default=0
        )
        dtype: type = np.int64 if biggest < 2**62 else object
        self.units = units
        self.matrix: np.ndarray = np.zeros((len(self.devices), len(self.slots)), dtype=dtype)
        self.sets = np.zeros((len(self.devices), len(self.slots)), dtype=bool)
        set_columns: dict[tuple[PoolID, str], list[int]] = {}
        for slot, k in column.items():
            set_columns.setdefault((slot[0], slot[1]), []).append(k)
        for d in self.devices:
            for slot, amount in d.uses.items():
                at = column.get(slot)
                if at is not None:
                    self.matrix[d.position, at] = amount // units[at]
            for group in {(slot[0], slot[1]) for slot in d.uses}:
                self.sets[d.position, set_columns.get(group, [])] = True
        self.capacity_vector: np.ndarray = np.asarray(
            [self.capacity[s] // u for s, u in zip(self.slots, units, strict=True)], dtype=dtype
        )
        self.consumes = np.asarray([bool(d.uses) for d in self.devices], dtype=bool)
        self.usable = np.asarray([d.usable for d in self.devices], dtype=bool)

    def _add_pool(self, pid: PoolID, slices: list[ResourceSlice], node: Node | None) -> None:
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
                        self.capacity[(pid, cs.name, name)] = nanos_of(
                            counter.value, f"pool {pid}, counter {cs.name}/{name}"
                        )
        for rs in live:
            per_device = bool(rs.spec.per_device_node_selection)
            targets = node is None or per_device or _targets(rs, node)
            for device in rs.spec.devices:
                # Devices of the pool the node cannot use still hold counters.
                visible = targets and (not per_device or node is None or _reaches(device, node))
                self.devices.append(
                    ModelDevice(
                        len(self.devices),
                        rs,
                        device,
                        DeviceID(pid.driver, pid.pool, device.name),
                        usable and visible,
                        uses={
                            (pid, u.counter_set, name): nanos_of(
                                c.value,
                                f"device {pid}/{device.name}, counter {u.counter_set}/{name}",
                            )
                            for u in device.consumes_counters
                            for name, c in u.counters.items()
                        },
                    )
                )


class NodeModel:
    """A node's devices (``devices``), counter capacities and what is left of them,
    with what committed claims (``allocated``) hold."""

    def __init__(
        self,
        slices: Sequence[ResourceSlice] | Published,
        allocated: AllocatedState,
        node: Node | None = None,
        *,
        partitionable: bool = True,
    ) -> None:
        published = (
            slices
            if isinstance(slices, Published)
            else Published(slices, node, partitionable=partitionable)
        )
        self.published = published
        self.capacity = published.capacity
        self.unusable = published.unusable
        self.devices: list[ModelDevice] = []
        held = np.zeros(len(published.devices), dtype=bool)
        for d in published.devices:
            did = d.id
            is_held = allocated.is_allocated(did)
            shares = allocated.has_share(did) or did in allocated.consumed_capacity
            self.devices.append(
                ModelDevice(
                    d.position,
                    d.slice,
                    d.device,
                    did,
                    d.usable,
                    is_held,
                    shares and did not in allocated.devices,
                    dict(allocated.consumed_capacity.get(did, {})),
                    d.uses,
                )
            )
            held[d.position] = is_held
        self.held = held
        self.remaining = dict(self.capacity)
        for d in self.devices:
            if d.held:
                for slot, amount in d.uses.items():
                    if slot in self.remaining:
                        self.remaining[slot] -= amount
        used = published.matrix[held].sum(axis=0) if held.any() else 0
        self.remaining_vector = published.capacity_vector - used

    def fitting(self) -> np.ndarray:
        """Per device: whether the counters left cover what it consumes."""
        matrix = self.published.matrix
        if not matrix.shape[1]:
            return np.ones(len(self.devices), dtype=bool)
        return np.asarray((matrix <= self.remaining_vector).all(axis=1), dtype=bool)

    def left_share(self, position: int, after: np.ndarray) -> float:
        """Capacity left (``after``) in the counter sets device ``position`` consumes
        from, as a share of their capacity."""
        columns = self.published.sets[position]
        capacity = self.published.capacity_vector[columns]
        if not len(capacity):
            return 1.0
        counted = capacity > 0
        if not counted.any():
            return 1.0
        return float(np.mean(after[columns][counted] / capacity[counted]))


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
