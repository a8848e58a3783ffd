"""Nodes as the compiled core sees them: positions, counters and capacity, node by node.

A :class:`NodeBlock` is everything the search needs of one node that no claim
changes: its searchable devices in upstream's order (*positions*), which of them are
in use, their counter consumption resolved to the node's counter slots (each slot in
its own exact unit), the capacity of shareable devices.  A :class:`Layout` lays the
blocks of many nodes end to end, so one problem (``draspeed.claimset``) covers all
of them and the core walks from node to node without coming back to Python.  A
one-node layout is the same thing with one block.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from draspeed.api.model import Device, DeviceAttribute, Node
from draspeed.errors import AllocationError
from draspeed.rules.ids import DeviceID
from draspeed.rules.node_selection import NodeSelectorError, node_matches

if TYPE_CHECKING:
    from draspeed.snapshot import NodeView, Snapshot

# Per-device node selection verdicts (claims-independent, node-dependent).
PDN_NONE, PDN_YES, PDN_NO, PDN_ERROR = 0, 1, 2, 3
_INT64_SAFE = 2**62


def node_key(node: Node) -> tuple[str, tuple[tuple[str, str], ...]]:
    """Nodes with the same name and labels see the same cluster."""
    return (node.name, tuple(sorted(node.labels.items())))


def unit_of(terms: list[int]) -> int:
    """The largest unit in which every term is a whole number (their gcd), at least 1."""
    unit = 0
    for t in terms:
        unit = math.gcd(unit, t)
    return unit or 1


class NodeBlock:
    """What the search needs of one node that no claim changes (built once per view)."""

    def __init__(self, snap: Snapshot, view: NodeView) -> None:
        f = snap.features
        self.view = view
        self.g = np.asarray(view.positions, dtype=np.int64)
        positions = self.g.tolist()
        self.devices: list[Device] = [snap.device(g) for g in positions]
        self.ids: list[DeviceID] = [snap.device_id(g) for g in positions]
        devices, ids, allocated = self.devices, self.ids, snap.allocated
        P = self.n = len(devices)
        self.in_use = np.fromiter((i in allocated.devices for i in ids), dtype=np.uint8, count=P)
        self.multi = np.fromiter(
            (f.consumable_capacity and bool(d.allow_multiple_allocations) for d in devices),
            dtype=np.uint8,
            count=P,
        )
        # A committed share (with or without consumedCapacity) has paid the device's
        # counters and keeps it from being allocated whole (upstream #140437, #140798).
        self.committed = np.fromiter(
            (
                f.consumable_capacity
                and (allocated.has_share(i) or i in allocated.consumed_capacity)
                for i in ids
            ),
            dtype=np.uint8,
            count=P,
        )
        self.counters_blocked = np.fromiter(
            (not f.partitionable_devices and bool(d.consumes_counters) for d in devices),
            dtype=np.uint8,
            count=P,
        )
        self.binding = np.fromiter(
            (bool(d.binding_conditions) for d in devices), dtype=bool, count=P
        )
        self.tainted = [p for p, d in enumerate(devices) if d.taints]
        # Devices whose own capacity verdict needs a closer look than "fits whole".
        self.capacity_policies = [
            p
            for p, d in enumerate(devices)
            if any(c.request_policy is not None for c in d.capacity.values())
            or ids[p] in allocated.consumed_capacity
        ]
        self._per_device_nodes(snap, view.node, positions)
        self._counters(view, f.partitionable_devices)
        self._capacities(snap)
        self._attribute_values: dict[tuple[str, bool], list[list[tuple[str, object]]]] = {}

    def _per_device_nodes(self, snap: Snapshot, node: Node, positions: list[int]) -> None:
        """Each device's own node selection (perDeviceNodeSelection slices) on this node."""
        self.pdn = np.zeros(self.n, dtype=np.uint8)
        self.pdn_errors: dict[int, str] = {}
        for p, g in enumerate(positions):
            if not snap.device_slice_of(g).spec.per_device_node_selection:
                continue
            device = self.devices[p]
            try:
                fits = node_matches(
                    node, device.node_name or "", bool(device.all_nodes), device.node_selector
                )
                self.pdn[p] = PDN_YES if fits else PDN_NO
            except NodeSelectorError as exc:
                self.pdn[p] = PDN_ERROR
                self.pdn_errors[p] = str(exc)

    def _counters(self, view: NodeView, partitionable: bool) -> None:
        """Counter slots per (pool, set, counter), each in its own exact unit (gcd)."""
        slot_base: list[int] = []
        slot_terms: list[list[int]] = []
        for pool_available in view.pool_available:
            slot_base.append(len(slot_terms))
            slot_terms.extend([q.nanos] for q in pool_available)
        index = [
            {name: slot_base[i] + k for k, name in enumerate(slots)}
            for i, slots in enumerate(view.pool_slots)
        ]
        cons_ptr, cons_slot, cons_nanos = [0], [], []
        if partitionable:
            for p, device in enumerate(self.devices):
                slots = index[int(view.position_pool[p])]
                for use in device.consumes_counters:
                    for name, counter in use.counters.items():
                        slot = slots[(use.counter_set, name)]
                        cons_slot.append(slot)
                        cons_nanos.append(counter.value.nanos)
                        slot_terms[slot].append(counter.value.nanos)
                cons_ptr.append(len(cons_slot))
        else:
            cons_ptr = [0] * (self.n + 1)
        units = [unit_of(terms) for terms in slot_terms]
        self.n_pools = len(view.pools)
        self.pos_pool = np.asarray(view.position_pool, dtype=np.int32)
        self.pool_slot_ptr = np.asarray([*slot_base, len(slot_terms)], dtype=np.int32)
        available = [terms[0] // u for terms, u in zip(slot_terms, units, strict=True)]
        amounts = [n // units[s] for n, s in zip(cons_nanos, cons_slot, strict=True)]
        self.cons_ptr = np.asarray(cons_ptr, dtype=np.int32)
        self.cons_slot = np.asarray(cons_slot, dtype=np.int32)
        # |available| and the sum of |consumption| per slot bound every sum the search
        # makes; beyond int64 the exact Python lists below are used instead.
        spread = [abs(v) for v in available]
        charges = [0] * len(slot_terms)
        for amount, slot in zip(amounts, cons_slot, strict=True):
            charges[slot] += abs(amount)
        self.slot_spread = np.asarray([float(v) for v in spread], dtype=np.float64)
        self.slot_charges = np.asarray([float(v) for v in charges], dtype=np.float64)
        self.exact_available, self.exact_amounts = available, amounts
        fits = all(v < _INT64_SAFE for v in spread) and all(c < _INT64_SAFE for c in charges)
        self.slot_available = np.asarray(available if fits else [0] * len(available), np.int64)
        self.cons_amount = np.asarray(amounts if fits else [0] * len(amounts), np.int64)
        self.needs_exact = not fits

    def _capacities(self, snap: Snapshot) -> None:
        """Capacity entries of shared devices: the only capacity that runs out mid-search."""
        cap_ptr = [0]
        self.cap_room_nanos: list[int] = []
        self.cap_names: list[str] = []
        for p, device in enumerate(self.devices):
            if self.multi[p]:
                already = snap.allocated.consumed_capacity.get(self.ids[p]) or {}
                for name in sorted(device.capacity):
                    used = already.get(name)
                    room = device.capacity[name].value.nanos - (used.nanos if used else 0)
                    self.cap_room_nanos.append(room)
                    self.cap_names.append(name)
            cap_ptr.append(len(self.cap_room_nanos))
        self.cap_ptr = np.asarray(cap_ptr, dtype=np.int32)

    def values_of(self, attribute: str, list_types: bool) -> list[list[tuple[str, object]]]:
        """Each position's values of one attribute, as a constraint compares them."""
        key = (attribute, list_types)
        found = self._attribute_values.get(key)
        if found is None:
            found = [
                attribute_values(d.attributes.get(attribute), list_types) for d in self.devices
            ]
            self._attribute_values[key] = found
        return found


def attribute_values(
    attribute: DeviceAttribute | None, list_types: bool
) -> list[tuple[str, object]]:
    """A constraint's view of one attribute: typed values; empty = no usable value."""
    if attribute is None or attribute.kind is None:
        return []
    kind = attribute.kind
    if kind in ("ints", "bools", "strings", "versions"):
        if not list_types:
            return []
        scalar = kind[:-1]
        return sorted({(scalar, v) for v in attribute.value}, key=repr)
    return [(kind, attribute.value)]


@dataclass(slots=True)
class LayoutNode:
    """One node of a layout: its block, or why the node cannot be asked about."""

    node: Node
    view: NodeView | None
    block: NodeBlock | None
    error: str | None = None  # pool gathering failed (upstream returns this error)


def node_block(snap: Snapshot, view: NodeView) -> NodeBlock:
    """The view's block, built once."""
    block = view.cache.get("block")
    if block is None:
        block = view.cache["block"] = NodeBlock(snap, view)
    return block


class Layout:
    """The blocks of many nodes end to end: the claims-independent half of a Problem."""

    def __init__(self, snap: Snapshot, nodes: list[Node]) -> None:
        self.snap = snap
        self.entries: list[LayoutNode] = []
        for node in nodes:
            try:
                view = snap.node_view(node)
            except AllocationError as exc:
                self.entries.append(LayoutNode(node, None, None, str(exc)))
                continue
            self.entries.append(LayoutNode(node, view, node_block(snap, view)))
        self.index = {node_key(e.node): n for n, e in enumerate(self.entries)}
        self._lock = threading.RLock()
        self.claim_sets: dict[bytes, Any] = {}  # claims signature -> claimset.ClaimArrays
        self._codes: dict[tuple[str, bool], tuple[np.ndarray, np.ndarray, np.ndarray, int]] = {}
        self._concatenate()

    @property
    def nodes(self) -> list[Node]:
        return [e.node for e in self.entries]

    def _concatenate(self) -> None:
        blocks = [e.block for e in self.entries]
        sizes = [b.n if b is not None else 0 for b in blocks]
        self.node_ptr = np.zeros(len(blocks) + 1, dtype=np.int32)
        np.cumsum(sizes, out=self.node_ptr[1:])
        present = [b for b in blocks if b is not None]
        self.L = int(self.node_ptr[-1])

        def cat(name: str, dtype: Any) -> np.ndarray:
            if not present:
                return np.zeros(0, dtype=dtype)
            return np.concatenate([getattr(b, name) for b in present]).astype(dtype, copy=False)

        self.g = cat("g", np.int64)
        self.in_use = cat("in_use", np.uint8)
        self.multi = cat("multi", np.uint8)
        self.committed = cat("committed", np.uint8)
        self.counters_blocked = cat("counters_blocked", np.uint8)
        self.binding = cat("binding", bool)
        self.pdn = cat("pdn", np.uint8)
        self.slot_available = cat("slot_available", np.int64)
        self.cons_amount = cat("cons_amount", np.int64)
        self.slot_spread = cat("slot_spread", np.float64)
        self.slot_charges = cat("slot_charges", np.float64)
        self.needs_exact = any(b.needs_exact for b in present)

        # Pointer arrays and indices into per-node spaces move by each node's base.
        pool_base = slot_base = cons_base = cap_base = 0
        pos_pool, pool_slot_ptr, cons_ptr, cons_slot, cap_ptr = [], [], [], [], []
        self.tainted: list[int] = []
        self.capacity_policies: list[int] = []
        self.pdn_errors: dict[int, str] = {}
        self.cap_room_nanos: list[int] = []
        self.cap_names: list[str] = []
        self.exact_available: list[int] = []
        self.exact_amounts: list[int] = []
        self.pos_devices: list[Device] = []
        self.pos_ids: list[DeviceID] = []
        for n, b in enumerate(blocks):
            if b is None:
                continue
            off = int(self.node_ptr[n])
            pos_pool.append(b.pos_pool + pool_base)
            pool_slot_ptr.append(b.pool_slot_ptr[:-1] + slot_base)
            cons_ptr.append(b.cons_ptr[:-1] + cons_base)
            cons_slot.append(b.cons_slot + slot_base)
            cap_ptr.append(b.cap_ptr[:-1] + cap_base)
            self.tainted.extend(p + off for p in b.tainted)
            self.capacity_policies.extend(p + off for p in b.capacity_policies)
            self.pdn_errors.update((p + off, m) for p, m in b.pdn_errors.items())
            self.cap_room_nanos.extend(b.cap_room_nanos)
            self.cap_names.extend(b.cap_names)
            self.exact_available.extend(b.exact_available)
            self.exact_amounts.extend(b.exact_amounts)
            self.pos_devices.extend(b.devices)
            self.pos_ids.extend(b.ids)
            pool_base += b.n_pools
            slot_base += int(b.pool_slot_ptr[-1])
            cons_base += int(b.cons_ptr[-1])
            cap_base += int(b.cap_ptr[-1])

        def ptr(parts: list[np.ndarray], end: int) -> np.ndarray:
            return np.concatenate([*parts, np.asarray([end], dtype=np.int32)]).astype(np.int32)

        self.pos_pool = (
            np.concatenate(pos_pool).astype(np.int32) if pos_pool else np.zeros(0, np.int32)
        )
        self.pool_slot_ptr = ptr(pool_slot_ptr, slot_base)
        self.cons_ptr = ptr(cons_ptr, cons_base)
        self.cons_slot = (
            np.concatenate(cons_slot).astype(np.int32) if cons_slot else np.zeros(0, np.int32)
        )
        self.cap_ptr = ptr(cap_ptr, cap_base)
        self.n_pools = pool_base

    def node_of(self, positions: np.ndarray) -> np.ndarray:
        """The node index of each layout position."""
        return np.searchsorted(self.node_ptr, positions, side="right") - 1

    def attribute_codes(
        self, attribute: str, list_types: bool
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
        """(value_ptr over positions, value codes, present per position, number of codes)
        of one attribute, as constraints compare it; built once per layout."""
        key = (attribute, list_types)
        with self._lock:
            found = self._codes.get(key)
            if found is not None:
                return found
            codes: dict[tuple[str, object], int] = {}
            ptr = [0]
            values: list[int] = []
            present = np.zeros(self.L, dtype=np.uint8)
            for e in self.entries:
                b = e.block
                if b is None:
                    continue
                off = len(ptr) - 1
                for p, (device, device_values) in enumerate(
                    zip(b.devices, b.values_of(attribute, list_types), strict=True)
                ):
                    present[off + p] = attribute in device.attributes
                    for value in device_values:
                        values.append(codes.setdefault(value, len(codes)))
                    ptr.append(len(values))
            found = (
                np.asarray(ptr, dtype=np.int64),
                np.asarray(values, dtype=np.int32),
                present,
                len(codes),
            )
            self._codes[key] = found
            return found
