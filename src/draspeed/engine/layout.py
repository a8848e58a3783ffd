"""Nodes as the compiled core sees them: positions, counters and capacity, node by node.

A :class:`NodeBlock` is everything the search needs of one node that no claim
changes: its searchable devices in upstream's order (*positions*), which of them are
in use, their counter consumption resolved to the node's counter slots (each slot in
its own exact unit), the capacity of shareable devices.  A :class:`Layout` lays the
blocks of many nodes end to end, so one problem (``draspeed.engine.claim_arrays``) covers all
of them and the core walks from node to node without coming back to Python.  A
one-node layout is the same thing with one block.
"""

from __future__ import annotations

import copy
import math
import threading
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np

from draspeed.api.model import Device, DeviceAttribute, Node
from draspeed.engine.slice_facts import SliceFacts, entries_of
from draspeed.errors import AllocationError
from draspeed.rules.ids import DeviceID
from draspeed.rules.node_selection import NodeSelectorError, node_matches

if TYPE_CHECKING:
    from draspeed.engine.snapshot import NodeView, Snapshot

_NANOS_PER_UNIT = 10**9
_WHOLE_LIMIT = 10**9 * 2**40  # whole values below this: per-slot sums stay far inside int64

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
    """What the search needs of one node that no claim changes (built once per view).

    Built from the slices' facts with numpy: Python touches only the node's slices,
    its pools' counter slots, distinct consumption values, devices with per-device
    node selection and the devices of shareable capacity.
    """

    def __init__(self, snap: Snapshot, view: NodeView) -> None:
        f = snap.features
        self.snap, self.view = snap, view
        self.g = g = np.asarray(view.positions, dtype=np.int64)
        P = self.n = len(g)
        in_use, _, committed = snap.holds().flags_at(g)
        self.in_use = in_use.astype(np.uint8)
        slice_of, index_of = snap.slices_of(g)
        # Positions come in runs of one slice (pools, then slices, in order).
        cuts = np.flatnonzero(np.diff(slice_of)) + 1 if P else np.zeros(0, np.int64)
        starts = [0, *cuts.tolist()]
        ends = [*cuts.tolist(), P]
        self.runs = [
            (int(slice_of[a]), index_of[a:b]) for a, b in zip(starts, ends, strict=True) if b > a
        ]
        facts = [snap.facts(s) for s, _ in self.runs]

        def gather(name: str) -> np.ndarray:
            if not self.runs:
                return np.zeros(0, dtype=bool)
            return np.concatenate(
                [getattr(fa, name)[idx] for fa, (_, idx) in zip(facts, self.runs, strict=True)]
            )

        multi = gather("multi") & f.consumable_capacity
        self.multi = multi.astype(np.uint8)
        # A committed share (with or without consumedCapacity) has paid the device's
        # counters and keeps it from being allocated whole (upstream #140437, #140798).
        self.committed = (committed & f.consumable_capacity).astype(np.uint8)
        consumes = gather("consumes")
        self.counters_blocked = (consumes & (not f.partitionable_devices)).astype(np.uint8)
        self.binding = gather("binding")
        self.tainted = np.flatnonzero(gather("tainted")).tolist()
        # Devices whose own capacity verdict needs a closer look than "fits whole".
        self._policy, self._has_capacity = gather("policy"), gather("has_capacity")
        policy = self._policy | (committed & self._has_capacity)
        self.capacity_policies = np.flatnonzero(policy).tolist()
        self._per_device_nodes(snap, view.node, slice_of)
        self._counters(view, facts, f.partitionable_devices)
        self._capacities(snap, np.flatnonzero(multi).tolist())
        self._attribute_values: dict[tuple[str, bool], list[list[tuple[str, object]]]] = {}

    @classmethod
    def restated(cls, parent: NodeBlock, snap: Snapshot, view: NodeView) -> NodeBlock:
        """The parent's block for the same positions under a newer committed state: the
        static arrays are shared, what committed claims decide is computed again."""
        f = snap.features
        available = [v for pool in view.pool_available for v in pool]
        if (
            not parent.whole
            or parent.multi.any()
            or not all(v % _NANOS_PER_UNIT == 0 and abs(v) < _WHOLE_LIMIT for v in available)
        ):
            return cls(snap, view)
        block = copy.copy(parent)
        block.snap, block.view = snap, view
        in_use, _, committed = snap.holds().flags_at(block.g)
        block.in_use = in_use.astype(np.uint8)
        block.committed = (committed & f.consumable_capacity).astype(np.uint8)
        block.capacity_policies = np.flatnonzero(
            parent._policy | (committed & parent._has_capacity)
        ).tolist()
        scaled = [v // _NANOS_PER_UNIT for v in available]
        block.slot_available = np.asarray(scaled, dtype=np.int64)
        block.slot_spread = np.abs(block.slot_available.astype(np.float64))
        block._exact = (scaled, parent._exact[1])
        block.needs_exact = bool((block.slot_spread + block.slot_charges >= _INT64_SAFE).any())
        return block

    @cached_property
    def devices(self) -> list[Device]:
        """The devices at the positions (model objects; built on first use)."""
        return [self.snap.device(g) for g in self.g.tolist()]

    @cached_property
    def ids(self) -> list[DeviceID]:
        return [self.snap.device_id(g) for g in self.g.tolist()]

    def _per_device_nodes(self, snap: Snapshot, node: Node, slice_of: np.ndarray) -> None:
        """Each device's own node selection (perDeviceNodeSelection slices) on this node."""
        self.pdn = np.zeros(self.n, dtype=np.uint8)
        self.pdn_errors: dict[int, str] = {}
        selective = {s for s, _ in self.runs if snap._slice_at[s].spec.per_device_node_selection}
        if not selective:
            return
        for p in np.flatnonzero(np.isin(slice_of, list(selective))).tolist():
            device = snap.device(int(self.g[p]))
            try:
                fits = node_matches(
                    node, device.node_name or "", bool(device.all_nodes), device.node_selector
                )
                self.pdn[p] = PDN_YES if fits else PDN_NO
            except NodeSelectorError as exc:
                self.pdn[p] = PDN_ERROR
                self.pdn_errors[p] = str(exc)

    def _counters(self, view: NodeView, facts: list[SliceFacts], partitionable: bool) -> None:
        """Counter slots per (pool, set, counter), each in an exact unit: whole numbers when
        every value is one (the usual case), else the gcd of the slot's values."""
        slot_base: list[int] = []
        available: list[int] = []
        for pool_available in view.pool_available:
            slot_base.append(len(available))
            available.extend(pool_available)
        n_slots = len(available)
        self.n_pools = len(view.pools)
        self.pos_pool = np.asarray(view.position_pool, dtype=np.int32)
        self.pool_slot_ptr = np.asarray([*slot_base, n_slots], dtype=np.int32)
        ptr_parts: list[np.ndarray] = []
        slot_parts: list[np.ndarray] = []
        runs: list[tuple[SliceFacts, np.ndarray, np.ndarray]] = []  # facts, entries, key slots
        total = 0
        cursor = 0
        for fa, (_, idx) in zip(facts, self.runs, strict=True):
            pool = int(self.pos_pool[cursor]) if len(idx) else 0
            cursor += len(idx)
            ptr, entries = entries_of(fa, idx) if partitionable else _no_entries(len(idx))
            ptr_parts.append(ptr[:-1] + total)
            total += int(ptr[-1])
            if not len(entries):
                continue
            # A run is one slice, so one pool: its keys map to that pool's slots.
            names = view.pool_slots[pool]
            where = {name: slot_base[pool] + k for k, name in enumerate(names)}
            key_slot = np.asarray([where[k] for k in fa.key_names], dtype=np.int32)
            slot_parts.append(key_slot[fa.value_key[entries]])
            runs.append((fa, entries, key_slot))
        self.cons_ptr = np.concatenate([*ptr_parts, np.asarray([total])]).astype(np.int32)
        self.n_slots, self.n_entries = n_slots, total
        self.cons_slot = (
            np.concatenate(slot_parts).astype(np.int32) if slot_parts else np.zeros(0, np.int32)
        )
        whole = all(fa.value_whole is not None for fa, _, _ in runs) and all(
            v % _NANOS_PER_UNIT == 0 and abs(v) < _WHOLE_LIMIT for v in available
        )
        self.whole = whole
        if whole:
            scaled = [v // _NANOS_PER_UNIT for v in available]
            amounts = (
                np.concatenate([fa.value_whole[e] for fa, e, _ in runs])  # type: ignore[index]
                if runs
                else np.zeros(0, np.int64)
            )
            self._exact: tuple[list[int], np.ndarray | list[int]] = (scaled, amounts)
        else:
            scaled, exact_amounts = self._gcd_units(available, runs)
            amounts = (
                np.asarray(exact_amounts, dtype=np.int64)
                if all(abs(a) < _INT64_SAFE for a in exact_amounts)
                else np.zeros(len(exact_amounts), dtype=np.int64)
            )
            self._exact = (scaled, exact_amounts)
        # |available| and the sum of |consumption| per slot bound every sum the search
        # makes; beyond int64 the exact Python lists are used instead.
        self.slot_spread = np.abs(np.asarray([float(v) for v in scaled], dtype=np.float64))
        self.slot_charges = np.zeros(n_slots, dtype=np.float64)
        if len(amounts):
            np.add.at(self.slot_charges, self.cons_slot, np.abs(amounts.astype(np.float64)))
        fits = all(abs(v) < _INT64_SAFE for v in scaled) and (
            whole or all(abs(a) < _INT64_SAFE for a in self._exact[1])
        )
        self.needs_exact = not fits or bool(
            (self.slot_spread + self.slot_charges >= _INT64_SAFE).any()
        )
        self.slot_available = np.asarray(scaled if fits else [0] * n_slots, dtype=np.int64)
        self.cons_amount = amounts if fits else np.zeros(len(amounts), dtype=np.int64)

    @staticmethod
    def _gcd_units(
        available: list[int], runs: list[tuple[SliceFacts, np.ndarray, np.ndarray]]
    ) -> tuple[list[int], list[int]]:
        """Available and per-entry amounts in each slot's gcd unit (exact integers)."""
        terms: list[set[int]] = [{v} for v in available]
        for fa, entries, key_slot in runs:
            for v in np.unique(entries).tolist():
                terms[int(key_slot[fa.value_key[v]])].add(fa.value_nanos[v])
        units = [unit_of(sorted(t)) for t in terms]
        amounts: list[int] = []
        for fa, entries, key_slot in runs:
            slots = key_slot[fa.value_key[entries]].tolist()
            nanos = fa.value_nanos
            amounts.extend(
                nanos[v] // units[slot] for v, slot in zip(entries.tolist(), slots, strict=True)
            )
        return [v // u for v, u in zip(available, units, strict=True)], amounts

    @property
    def exact_available(self) -> list[int]:
        return self._exact[0]

    @property
    def exact_amounts(self) -> list[int]:
        found = self._exact[1]
        return found.tolist() if isinstance(found, np.ndarray) else found

    def _capacities(self, snap: Snapshot, shared: list[int]) -> None:
        """Capacity entries of shared devices: the only capacity that runs out mid-search."""
        counts = np.zeros(self.n, dtype=np.int64)
        self.cap_room_nanos: list[int] = []
        self.cap_names: list[str] = []
        for p in shared:
            g = int(self.g[p])
            device = snap.device(g)
            already = snap.allocated.consumed_capacity.get(snap.device_id(g)) or {}
            for name in sorted(device.capacity):
                used = already.get(name)
                room = device.capacity[name].value.nanos - (used.nanos if used else 0)
                self.cap_room_nanos.append(room)
                self.cap_names.append(name)
            counts[p] = len(device.capacity)
        self.cap_ptr = np.zeros(self.n + 1, dtype=np.int32)
        np.cumsum(counts, out=self.cap_ptr[1:])
        self.n_caps = len(self.cap_room_nanos)

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


def _patched(array: np.ndarray, rows: list[tuple[int, int, np.ndarray]]) -> np.ndarray:
    """``array`` with ``[start, end)`` replaced by each row's values: a copy if any of
    them differs, else the array itself (layouts never write their arrays)."""
    if all(np.array_equal(array[start:end], values) for start, end, values in rows):
        return array
    out = array.copy()
    for start, end, values in rows:
        out[start:end] = values
    return out


def _no_entries(n: int) -> tuple[np.ndarray, np.ndarray]:
    return np.zeros(n + 1, dtype=np.int64), np.zeros(0, dtype=np.int32)


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
    """The view's block, built once (from its predecessor's, when a later version only
    changed what is committed)."""
    block = view.cache.get("block")
    if block is None:
        parent = view.cache.pop("block_from", None)
        block = NodeBlock.restated(parent, snap, view) if parent else NodeBlock(snap, view)
        view.cache["block"] = block
    return block


class Layout:
    """The blocks of many nodes end to end: the claims-independent half of a Problem."""

    def __init__(
        self, snap: Snapshot, nodes: list[Node], key: tuple[Any, ...] | None = None
    ) -> None:
        self.snap = snap
        self.key = key if key is not None else tuple(node_key(n) for n in nodes)
        self.entries: list[LayoutNode] = []
        for node, k in zip(nodes, self.key, strict=True):
            try:
                view = snap.node_view(node, k)
            except AllocationError as exc:
                self.entries.append(LayoutNode(node, None, None, str(exc)))
                continue
            self.entries.append(LayoutNode(node, view, node_block(snap, view)))
        self.index = {k: n for n, k in enumerate(self.key)}
        self.names = [e.node.name for e in self.entries]
        self.named: dict[str, list[int]] = {}
        for n, name in enumerate(self.names):
            self.named.setdefault(name, []).append(n)
        self.any_invalid = np.fromiter(
            (e.view is not None and e.view.any_invalid for e in self.entries),
            dtype=bool,
            count=len(self.entries),
        )
        self._lock = threading.RLock()
        # Nodes whose rows are out of date (their pools changed in a later version):
        # searched on their own, never through these arrays.
        self.stale: frozenset[int] = frozenset()
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
        counts = np.asarray(
            [(b.n, b.n_pools, b.n_slots, b.n_entries, b.n_caps) for b in present], dtype=np.int64
        ).reshape(-1, 5)
        bases = np.zeros_like(counts)
        np.cumsum(counts[:-1], axis=0, out=bases[1:])
        sizes, pools, slots, entries, caps = counts.T
        _, pool_base, slot_base, entry_base, cap_base = bases.T

        def shifted(name: str, base: np.ndarray, repeat: np.ndarray) -> np.ndarray:
            if not present:
                return np.zeros(0, dtype=np.int32)
            parts = np.concatenate([getattr(b, name) for b in present]).astype(np.int64)
            return (parts + np.repeat(base, repeat)).astype(np.int32)

        def ptr(name: str, base: np.ndarray, repeat: np.ndarray, end: int) -> np.ndarray:
            if not present:
                return np.asarray([end], dtype=np.int32)
            parts = np.concatenate([getattr(b, name)[:-1] for b in present]).astype(np.int64)
            return np.append(parts + np.repeat(base, repeat), end).astype(np.int32)

        total_slots = int(slots.sum())
        self.pos_pool = shifted("pos_pool", pool_base, sizes)
        self.pool_slot_ptr = ptr("pool_slot_ptr", slot_base, pools, total_slots)
        self.cons_ptr = ptr("cons_ptr", entry_base, sizes, int(entries.sum()))
        self.cons_slot = shifted("cons_slot", slot_base, entries)
        self.cap_ptr = ptr("cap_ptr", cap_base, sizes, int(caps.sum()))
        per_entry_slots = np.asarray(
            [b.n_slots if b is not None else 0 for b in blocks], dtype=np.int64
        )
        self.node_slot_ptr = np.zeros(len(blocks) + 1, dtype=np.int64)
        np.cumsum(per_entry_slots, out=self.node_slot_ptr[1:])
        self.tainted: list[int] = []
        self.capacity_policies: list[int] = []
        self.pdn_errors: dict[int, str] = {}
        self.cap_room_nanos: list[int] = []
        self.cap_names: list[str] = []
        for n, b in enumerate(blocks):
            if b is None or not (b.tainted or b.capacity_policies or b.pdn_errors or b.n_caps):
                continue
            off = int(self.node_ptr[n])
            self.tainted.extend(p + off for p in b.tainted)
            self.capacity_policies.extend(p + off for p in b.capacity_policies)
            self.pdn_errors.update((p + off, m) for p, m in b.pdn_errors.items())
            self.cap_room_nanos.extend(b.cap_room_nanos)
            self.cap_names.extend(b.cap_names)
        pool_base = int(pools.sum())
        self.n_pools = pool_base
        self.state = (self.in_use, self.committed, self.slot_available)

    def derive(
        self,
        snap: Snapshot,
        changed: Collection[str] | None,
        *,
        keep_claim_arrays: bool,
        stale: Iterable[str] = (),
    ) -> Layout:
        """This layout for a later version of the cluster in which only the nodes named
        in ``changed`` had their committed state change (None: any node may have).

        Positions and every claims-independent array are shared; of the committed state
        (in use, shares, counters left), the arrays in which those nodes' rows differ
        are copied and the rows replaced, the others shared.  Claim arrays carry over when
        ``keep_claim_arrays`` (they do not depend on that state), and are searched with
        this layout's ``state``.  If a node's positions or units changed after all, the
        layout is laid out anew.

        Nodes named in ``stale`` see other pools now (a slice update): their rows are
        left as they were and they are searched on their own (:attr:`stale`), until
        more than a twentieth of the nodes are, when the layout is laid out anew.
        """
        if changed is None:
            return Layout(snap, self.nodes, self.key)
        gone = set(self.stale)
        for name in stale:
            gone.update(self.named.get(name, ()))
        if len(gone) > max(64, len(self.entries) // 20):
            return Layout(snap, self.nodes, self.key)
        new = copy.copy(self)
        new.stale = frozenset(gone)
        new.snap = snap
        new._lock = threading.RLock()
        new._codes = dict(self._codes)
        rows = sorted({n for name in changed for n in self.named.get(name, ())} - gone)
        if not rows:  # nothing searchable changed: the committed state is shared too
            new.claim_sets = dict(self.claim_sets) if keep_claim_arrays else {}
            return new
        new.entries = list(self.entries)
        # Each state array is copied only if one of the rows it holds changed (an
        # exclusive allocation leaves shares alone, a node without counters its slots).
        patched: list[tuple[int, int, int, NodeBlock]] = []  # (positions, slots, block)
        policies = set(self.capacity_policies)
        for n in rows:
            entry = self.entries[n]
            if entry.block is None:
                return Layout(snap, self.nodes, self.key)
            view = snap.node_view(entry.node)
            block = node_block(snap, view)
            old = entry.block
            if not (
                block.n == old.n
                and block.cons_amount is old.cons_amount
                and np.array_equal(block.g, old.g)
                and not block.needs_exact
            ):
                return Layout(snap, self.nodes, self.key)
            off = int(self.node_ptr[n])
            patched.append((off, int(self.node_slot_ptr[n]), int(self.node_slot_ptr[n + 1]), block))
            policies.difference_update(range(off, off + block.n))
            policies.update(p + off for p in block.capacity_policies)
            new.entries[n] = LayoutNode(entry.node, view, block)
        in_use = _patched(self.in_use, [(o, o + b.n, b.in_use) for o, _, _, b in patched])
        committed = _patched(self.committed, [(o, o + b.n, b.committed) for o, _, _, b in patched])
        available = _patched(
            self.slot_available, [(lo, hi, b.slot_available) for _, lo, hi, b in patched]
        )
        new.in_use, new.committed, new.slot_available = in_use, committed, available
        new.state = (in_use, committed, available)
        new.capacity_policies = sorted(policies)
        new.claim_sets = (
            {
                k: v
                for k, v in self.claim_sets.items()
                if v.problem is None or v.problem.exact is None
            }
            if keep_claim_arrays
            else {}
        )
        return new

    def carried(self, snap: Snapshot, *, keep_claim_arrays: bool) -> Layout:
        """This layout for a later version that sees its nodes exactly as this one's did
        (the same views): everything is shared, claim arrays too if ``keep_claim_arrays``
        (the classes did not change)."""
        new = copy.copy(self)
        new.snap = snap
        new._lock = threading.RLock()
        new.claim_sets = dict(self.claim_sets) if keep_claim_arrays else {}
        new._codes = dict(self._codes)
        return new

    def device_at(self, lp: int) -> Device:
        """The device at layout position lp."""
        return self.snap.device(int(self.g[lp]))

    def id_at(self, lp: int) -> DeviceID:
        return self.snap.device_id(int(self.g[lp]))

    def exact_lists(self) -> tuple[list[int], list[int]]:
        """Counter availability per slot and consumption per entry as Python integers,
        for sums beyond int64 (rare: built only when asked)."""
        available: list[int] = []
        amounts: list[int] = []
        for e in self.entries:
            if e.block is not None:
                available.extend(e.block.exact_available)
                amounts.extend(e.block.exact_amounts)
        return available, amounts

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
