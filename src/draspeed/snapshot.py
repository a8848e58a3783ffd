"""The long-lived state of the fast engine: cluster objects, indexed once.

A :class:`Snapshot` is built once per scheduling cycle from the ResourceSlices,
DeviceClasses and already-allocated claims.  What one node sees of it -- the pools
gathered as upstream gathers them, the devices in upstream's search order, the
counters still available -- is computed the first time that node is asked about
and kept (:class:`NodeView`), so asking again for the same node costs nothing.
Selector outcomes are kept per expression and device, so a selector is evaluated
at most once per device for the snapshot's lifetime.  Per-call scratch state
lives in :mod:`draspeed.claimset` and the compiled core, never here.
"""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from draspeed.api.model import (
    Device,
    DeviceClass,
    Node,
    ObjectMeta,
    ResourceClaim,
    ResourceSlice,
)
from draspeed.errors import AllocationError, CELCompileError
from draspeed.features import Features
from draspeed.rules.allocated_state import AllocatedState
from draspeed.rules.ids import DeviceID, PoolID
from draspeed.rules.node_selection import NodeSelectorError, node_matches
from draspeed.slicefacts import SliceFacts

if TYPE_CHECKING:
    from draspeed.cel import DeviceTable, Selector
    from draspeed.layout import Layout
    from draspeed.quantity import Quantity

_LAYOUTS_KEPT = 64  # layouts remembered per snapshot (one-node layouts are the usual many)

# Selector verdicts per device, as kept in SelectorResults.
UNKNOWN, FALSE, TRUE, ERROR = 255, 0, 1, 2


@dataclass(slots=True)
class PoolView:
    """One pool as gathered for one node (upstream's ``Pool``)."""

    id: PoolID
    incomplete: bool = False
    invalid: bool = False
    invalid_reason: str = ""
    # Global device indices of the slices targeting the node, in search order.
    devices: list[int] = field(default_factory=list)
    # Devices of the pool's slices that do not target the node (counter accounting).
    other_devices: list[int] = field(default_factory=list)
    # counter set name -> counter name -> capacity, from the pool's counter-set slices.
    counter_sets: dict[str, dict[str, Quantity]] = field(default_factory=dict)
    has_binding_conditions: bool = False


@dataclass(slots=True)
class NodeView:
    """Everything about one node that does not depend on the claims asked for."""

    node: Node
    pools: list[PoolView]
    any_invalid: bool
    # Searchable devices (complete, valid pools) in upstream's order: global indices.
    positions: np.ndarray
    # Pool index (into ``pools``) of each position.
    position_pool: np.ndarray
    # Counter slots of each pool: (counter set, counter) names and what is still available
    # (in nanos: committed allocations' consumption subtracted).
    pool_slots: list[list[tuple[str, str]]]
    pool_available: list[list[int]]
    # The node's block (draspeed.layout), filled lazily.
    cache: dict[object, Any] = field(default_factory=dict)


class SelectorResults:
    """One CEL expression's verdict per device of the snapshot, filled lazily."""

    __slots__ = ("compile_error", "messages", "selector", "verdict")

    def __init__(self, n_devices: int, selector: Selector | None, compile_error: str | None):
        self.selector = selector
        self.compile_error = compile_error
        self.verdict = np.full(n_devices, UNKNOWN, dtype=np.uint8)
        self.messages: dict[int, str] = {}


class Snapshot:
    """Slices, classes and committed allocations, indexed for the fast engine.

    Thread-safety: a snapshot is immutable after ``build``; its lazily filled
    caches are guarded by a lock, so allocators on many threads may share it.
    """

    def __init__(
        self,
        slices: Sequence[ResourceSlice],
        classes: Sequence[DeviceClass],
        allocated_claims: Sequence[ResourceClaim],
        features: Features,
        nodes: Sequence[Node] = (),
    ) -> None:
        self.features = features
        self.slices = list(slices)
        self.classes = {c.metadata.name: c for c in classes}
        self.allocated_claims = [c for c in allocated_claims if c.status.allocation is not None]
        self.given_nodes = {n.name: n for n in nodes}
        self.allocated = AllocatedState.from_claims(
            allocated_claims, consumable_capacity=features.consumable_capacity
        )
        # Global device index g: every device of every slice, slice by slice.
        self.device_slice: list[int] = []
        self.device_index: list[int] = []
        self.slice_first_device: list[int] = []
        for s_idx, rs in enumerate(self.slices):
            self.slice_first_device.append(len(self.device_slice))
            for d_idx in range(len(rs.spec.devices)):
                self.device_slice.append(s_idx)
                self.device_index.append(d_idx)
        self.n_devices = len(self.device_slice)
        self.device_slice_arr = np.asarray(self.device_slice, dtype=np.int64)
        self.device_index_arr = np.asarray(self.device_index, dtype=np.int64)
        self._facts: list[SliceFacts | None] = [None] * len(self.slices)
        self._flags: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        self._slices_on_node: dict[str, list[int]] = defaultdict(list)
        self._slices_shared: list[int] = []
        self._slices_of_pool: dict[PoolID, list[int]] = defaultdict(list)
        for s_idx, rs in enumerate(self.slices):
            if rs.spec.node_name:
                self._slices_on_node[rs.spec.node_name].append(s_idx)
            else:
                self._slices_shared.append(s_idx)
            self._slices_of_pool[PoolID(rs.spec.driver, rs.spec.pool.name)].append(s_idx)
        self._lock = threading.RLock()
        self._nodes: dict[tuple[str, tuple[tuple[str, str], ...]], NodeView] = {}
        self._selectors: dict[str, SelectorResults] = {}
        self._table: DeviceTable | None = None
        self._layouts: dict[tuple[Any, ...], Layout] = {}
        self._known: list[Node] | None = None
        self._known_keys: set[Any] | None = None
        self._cluster: Layout | None = None

    @classmethod
    def build(
        cls,
        slices: Sequence[ResourceSlice],
        classes: Sequence[DeviceClass],
        allocated_claims: Sequence[ResourceClaim] = (),
        *,
        features: Features | None = None,
        nodes: Sequence[Node] = (),
    ) -> Snapshot:
        """Index a cluster state. ``nodes``: Node objects (labels matter for node
        selectors); nodes named only by slices are known too, without labels."""
        return cls(slices, classes, allocated_claims, features or Features(), nodes)

    # ----------------------------------------------------------------------------------
    # Versions: every update returns a new snapshot; this one stays as it was
    # ----------------------------------------------------------------------------------

    def update_slices(
        self,
        added: Sequence[ResourceSlice] = (),
        removed: Sequence[ResourceSlice | str] = (),
    ) -> Snapshot:
        """A new version with ``removed`` (slices or slice names) gone and ``added``
        in; an added slice whose name exists replaces it (a new pool generation)."""
        gone = {r if isinstance(r, str) else r.metadata.name for r in removed}
        gone |= {a.metadata.name for a in added}
        kept = [rs for rs in self.slices if rs.metadata.name not in gone]
        return self._derive(slices=[*kept, *added])

    def add_allocated(self, claims: ResourceClaim | Sequence[ResourceClaim]) -> Snapshot:
        """A new version where ``claims`` (with ``status.allocation``) hold their devices;
        a claim with the key of an allocated one replaces it."""
        new = [claims] if isinstance(claims, ResourceClaim) else list(claims)
        for claim in new:
            if claim.status.allocation is None:
                raise ValueError(f"claim {claim.key} has no status.allocation to add")
        keys = {c.key for c in new}
        kept = [c for c in self.allocated_claims if c.key not in keys]
        return self._derive(allocated=[*kept, *new])

    def remove_allocated(
        self, claims: ResourceClaim | str | Sequence[ResourceClaim | str]
    ) -> Snapshot:
        """A new version without these allocated claims (claims or ``namespace/name`` keys)."""
        items = [claims] if isinstance(claims, (ResourceClaim, str)) else list(claims)
        keys = {c if isinstance(c, str) else c.key for c in items}
        return self._derive(allocated=[c for c in self.allocated_claims if c.key not in keys])

    def update_classes(
        self, added: Sequence[DeviceClass] = (), removed: Sequence[DeviceClass | str] = ()
    ) -> Snapshot:
        """A new version with classes added, replaced (same name) or removed."""
        gone = {r if isinstance(r, str) else r.metadata.name for r in removed}
        classes = {n: c for n, c in self.classes.items() if n not in gone}
        classes.update((c.metadata.name, c) for c in added)
        return self._derive(classes=list(classes.values()))

    def update_nodes(
        self, added: Sequence[Node] = (), removed: Sequence[Node | str] = ()
    ) -> Snapshot:
        """A new version with Node objects added, replaced (same name) or removed."""
        gone = {r if isinstance(r, str) else r.name for r in removed}
        nodes = {n: v for n, v in self.given_nodes.items() if n not in gone}
        nodes.update((n.name, n) for n in added)
        return self._derive(nodes=list(nodes.values()))

    def _derive(
        self,
        *,
        slices: Sequence[ResourceSlice] | None = None,
        classes: Sequence[DeviceClass] | None = None,
        allocated: Sequence[ResourceClaim] | None = None,
        nodes: Sequence[Node] | None = None,
    ) -> Snapshot:
        return Snapshot(
            self.slices if slices is None else slices,
            list(self.classes.values()) if classes is None else classes,
            self.allocated_claims if allocated is None else allocated,
            self.features,
            list(self.given_nodes.values()) if nodes is None else nodes,
        )

    @property
    def nodes(self) -> list[Node]:
        """The known nodes: the Node objects given, then nodes named by slices (sorted),
        as unlabelled Node objects."""
        if self._known is None:
            out = list(self.given_nodes.values())
            for name in sorted(self._slices_on_node):
                if name not in self.given_nodes:
                    out.append(Node(metadata=ObjectMeta(name=name)))
            self._known = out
        return list(self._known)

    # ----------------------------------------------------------------------------------
    # Layouts: nodes laid end to end for the compiled core
    # ----------------------------------------------------------------------------------

    def layout(self, nodes: Sequence[Node]) -> Layout:
        """The layout of these nodes (in this order), built once per node list."""
        from draspeed.layout import Layout, node_key

        key = tuple(node_key(n) for n in nodes)
        with self._lock:
            found = self._layouts.get(key)
            if found is None:
                found = Layout(self, list(nodes))
                if len(self._layouts) >= _LAYOUTS_KEPT:
                    # Keep the known nodes' layout; forget the oldest other one.
                    victim = next((k for k in self._layouts if len(k) == 1), None)
                    self._layouts.pop(victim if victim is not None else next(iter(self._layouts)))
                self._layouts[key] = found
            return found

    def layout_for(self, node: Node) -> tuple[Layout, int]:
        """Where to search ``node``: the known nodes' layout if it is one of them (so
        claim-level work is shared by every node asked), else a layout of its own."""
        from draspeed.layout import node_key

        key = node_key(node)
        if self._known_keys is None:
            self._known_keys = {node_key(k) for k in self.nodes}
        if key in self._known_keys:
            cluster = self.cluster_layout()
            return cluster, cluster.index[key]
        return self.layout([node]), 0

    def cluster_layout(self) -> Layout:
        """The layout of the known nodes (:attr:`nodes`), built once."""
        found = self._cluster
        if found is None:
            found = self._cluster = self.layout(self.nodes)
        return found

    # ----------------------------------------------------------------------------------
    # Devices
    # ----------------------------------------------------------------------------------

    def device(self, g: int) -> Device:
        return self.slices[self.device_slice[g]].spec.devices[self.device_index[g]]

    def device_slice_of(self, g: int) -> ResourceSlice:
        return self.slices[self.device_slice[g]]

    def device_id(self, g: int) -> DeviceID:
        rs = self.slices[self.device_slice[g]]
        return DeviceID(rs.spec.driver, rs.spec.pool.name, self.device(g).name)

    # ----------------------------------------------------------------------------------
    # Selectors
    # ----------------------------------------------------------------------------------

    def selector_results(self, expression: str) -> SelectorResults:
        """The (lazily filled) verdicts of one expression; compiles it once."""
        with self._lock:
            found = self._selectors.get(expression)
            if found is None:
                from draspeed.cel import compile_selector

                try:
                    found = SelectorResults(self.n_devices, compile_selector(expression), None)
                except CELCompileError as exc:
                    found = SelectorResults(self.n_devices, None, str(exc))
                self._selectors[expression] = found
            return found

    def evaluate(self, results: SelectorResults, devices: np.ndarray) -> np.ndarray:
        """Verdicts of ``results``' expression for ``devices`` (global indices).

        The first request evaluates the expression for every device of the snapshot at
        once on the columnar table (numpy; rows it cannot lower are evaluated one by
        one, memoised on what they read), so later nodes only index the answer.
        """
        if results.selector is None:
            return np.full(len(devices), ERROR, dtype=np.uint8)
        if results.verdict.size and results.verdict[0] == UNKNOWN:
            with self._lock:
                if results.verdict[0] == UNKNOWN:
                    match, error, messages = results.selector.evaluate(self.table())
                    verdict = np.where(match, TRUE, FALSE).astype(np.uint8)
                    verdict[error] = ERROR
                    results.messages.update(messages)
                    results.verdict = verdict
        return results.verdict[devices]

    def table(self) -> DeviceTable:
        """The columnar device table (every device, global index order), built once."""
        with self._lock:
            if self._table is None:
                from draspeed.cel import DeviceTable

                self._table = DeviceTable.build(
                    [
                        (self.slices[s].spec.driver, self.device(g))
                        for g, s in enumerate(self.device_slice)
                    ],
                    list_type_attributes=self.features.list_type_attributes,
                    # The experimental allocator hands CEL the device's real value
                    # whatever the DRAConsumableCapacity gate says.
                    consumable_capacity=True,
                )
            return self._table

    # ----------------------------------------------------------------------------------
    # Nodes
    # ----------------------------------------------------------------------------------

    def node_view(self, node: Node) -> NodeView:
        """What ``node`` sees: gathered once per node name and labels, then reused."""
        key = (node.name, tuple(sorted(node.labels.items())))
        with self._lock:
            found = self._nodes.get(key)
            if found is None:
                found = self._gather(node)
                self._nodes[key] = found
            return found

    def _relevant(self, rs: ResourceSlice, node: Node) -> bool:
        spec = rs.spec
        try:
            if spec.node_name or spec.all_nodes or spec.node_selector is not None:
                return node_matches(
                    node, spec.node_name or "", bool(spec.all_nodes), spec.node_selector
                )
            if spec.per_device_node_selection:
                for device in spec.devices:
                    try:
                        if node_matches(
                            node,
                            device.node_name or "",
                            bool(device.all_nodes),
                            device.node_selector,
                        ):
                            return True
                    except NodeSelectorError as exc:
                        raise AllocationError(
                            f"gather pool information: failed to perform node selection for device "
                            f"{device.name} in slice {rs.metadata.name}: {exc}"
                        ) from exc
        except NodeSelectorError as exc:
            raise AllocationError(
                f"gather pool information: failed to perform node selection for slice "
                f"{rs.metadata.name}: {exc}"
            ) from exc
        return False

    def _gather(self, node: Node) -> NodeView:
        partitionable = self.features.partitionable_devices
        by_pool: dict[PoolID, list[int]] = {}
        for s_idx in [*self._slices_on_node.get(node.name, ()), *self._slices_shared]:
            rs = self.slices[s_idx]
            if not partitionable and (
                rs.spec.per_device_node_selection is not None or rs.spec.shared_counters
            ):
                continue
            if not self._relevant(rs, node):
                continue
            pid = PoolID(rs.spec.driver, rs.spec.pool.name)
            have = by_pool.get(pid)
            gen = rs.spec.pool.generation
            if have is None or gen > self.slices[have[0]].spec.pool.generation:
                by_pool[pid] = [s_idx]
            elif gen == self.slices[have[0]].spec.pool.generation:
                have.append(s_idx)

        plain: list[PoolView] = []
        with_conditions: list[PoolView] = []
        for pid, targeting in by_pool.items():
            first = self.slices[targeting[0]].spec.pool
            all_of_pool: list[int] | None = None
            if len(targeting) != first.resource_slice_count:
                all_of_pool = []
                obsolete = False
                for s_idx in self._slices_of_pool[pid]:
                    gen = self.slices[s_idx].spec.pool.generation
                    if gen > first.generation:
                        obsolete = True
                        break
                    if gen == first.generation:
                        all_of_pool.append(s_idx)
                if obsolete:
                    continue
                if len(all_of_pool) != first.resource_slice_count:
                    plain.append(PoolView(pid, incomplete=True))
                    continue
            pool = self._build_pool(pid, targeting, all_of_pool)
            (with_conditions if pool.has_binding_conditions else plain).append(pool)
        plain.sort(key=lambda p: (p.id.driver, p.id.pool))
        with_conditions.sort(key=lambda p: (p.id.driver, p.id.pool))
        pools = plain + with_conditions
        return self._index_node(node, pools)

    def _build_pool(
        self, pid: PoolID, targeting: list[int], all_of_pool: list[int] | None
    ) -> PoolView:
        partitionable = self.features.partitionable_devices
        targeting = sorted(targeting, key=lambda s: self.slices[s].metadata.name)
        device_slices: list[int] = []
        counter_slices: list[int] = []
        other_slices: list[int] = []
        for s_idx in targeting:
            shared = partitionable and bool(self.slices[s_idx].spec.shared_counters)
            (counter_slices if shared else device_slices).append(s_idx)
        if all_of_pool is not None and len(targeting) < len(all_of_pool):
            names = {self.slices[s].metadata.name for s in targeting}
            for s_idx in all_of_pool:
                if self.slices[s_idx].metadata.name in names:
                    continue
                shared = partitionable and bool(self.slices[s_idx].spec.shared_counters)
                (counter_slices if shared else other_slices).append(s_idx)

        pool = PoolView(pid)
        names_seen = 0
        seen: set[str] = set()
        for s_idx in device_slices:
            facts = self.facts(s_idx)
            seen.update(facts.names)
            names_seen += facts.n
            if len(seen) != names_seen:  # a repeated name: find the first, in order
                return PoolView(
                    pid, invalid=True, invalid_reason=_first_duplicate(self, device_slices)
                )
            first = self.slice_first_device[s_idx]
            pool.devices.extend(range(first, first + facts.n))
            if facts.binding.any():
                pool.has_binding_conditions = True
        if not partitionable:
            return pool
        for s_idx in counter_slices:
            for cs in self.slices[s_idx].spec.shared_counters:
                if cs.name in pool.counter_sets:
                    return PoolView(
                        pid, invalid=True, invalid_reason=f"duplicate counter set name {cs.name}"
                    )
                pool.counter_sets[cs.name] = {n: c.value for n, c in cs.counters.items()}
        for s_idx in other_slices:
            first = self.slice_first_device[s_idx]
            pool.other_devices.extend(range(first, first + len(self.slices[s_idx].spec.devices)))
        known = {(cs, c) for cs, counters in pool.counter_sets.items() for c in counters}
        for s_idx in [*device_slices, *other_slices]:
            facts = self.facts(s_idx)
            if not (facts.sets_used <= pool.counter_sets.keys() and set(facts.key_names) <= known):
                reason = _missing_counter(self, pool, [*pool.devices, *pool.other_devices])
                return PoolView(pid, invalid=True, invalid_reason=reason)
        return pool

    def _index_node(self, node: Node, pools: list[PoolView]) -> NodeView:
        positions: list[np.ndarray] = []
        position_pool: list[np.ndarray] = []
        pool_slots: list[list[tuple[str, str]]] = []
        pool_available: list[list[int]] = []
        allocated = self.allocated_flags()[1]
        for p_idx, pool in enumerate(pools):
            slots = [
                (cs, c) for cs in sorted(pool.counter_sets) for c in sorted(pool.counter_sets[cs])
            ]
            available = {slot: pool.counter_sets[slot[0]][slot[1]].nanos for slot in slots}
            if slots:
                members = np.asarray([*pool.devices, *pool.other_devices], dtype=np.int64)
                for g in members[allocated[members]].tolist():
                    facts = self.facts(self.device_slice[g])
                    for slot, nanos in facts.consumption(self.device_index[g]):
                        if slot in available:  # validated: always, unless the pool is invalid
                            available[slot] -= nanos
            pool_slots.append(slots)
            pool_available.append([available[s] for s in slots])
            if pool.incomplete or pool.invalid:
                continue
            positions.append(np.asarray(pool.devices, dtype=np.int64))
            position_pool.append(np.full(len(pool.devices), p_idx, dtype=np.int32))
        return NodeView(
            node=node,
            pools=pools,
            any_invalid=any(p.invalid for p in pools),
            positions=np.concatenate(positions) if positions else np.zeros(0, np.int64),
            position_pool=(
                np.concatenate(position_pool) if position_pool else np.zeros(0, np.int32)
            ),
            pool_slots=pool_slots,
            pool_available=pool_available,
        )

    # ----------------------------------------------------------------------------------
    # Per-slice facts and committed allocations, as arrays over devices
    # ----------------------------------------------------------------------------------

    def facts(self, s_idx: int) -> SliceFacts:
        """Slice s_idx's device facts, read once."""
        found = self._facts[s_idx]
        if found is None:
            found = self._facts[s_idx] = SliceFacts(self.slices[s_idx])
        return found

    def allocated_flags(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per device (global index): (exclusively in use, allocated in any way, holds a
        committed share or its capacity); devices are matched by (driver, pool, name)."""
        with self._lock:
            if self._flags is None:
                in_use = np.zeros(self.n_devices, dtype=bool)
                committed = np.zeros(self.n_devices, dtype=bool)
                a = self.allocated
                for ids, target in (
                    (a.devices, in_use),
                    (a._shared_device_ids, committed),
                    (a.consumed_capacity.keys(), committed),
                ):
                    for device_id in ids:
                        for g in self._devices_named(device_id):
                            target[g] = True
                self._flags = (in_use, in_use | committed, committed)
            return self._flags

    def _devices_named(self, device_id: DeviceID) -> list[int]:
        out: list[int] = []
        for s_idx in self._slices_of_pool.get(PoolID(device_id.driver, device_id.pool), ()):
            first = self.slice_first_device[s_idx]
            out.extend(first + i for i in self.facts(s_idx).indices(device_id.device))
        return out


def _first_duplicate(snap: Snapshot, device_slices: list[int]) -> str:
    seen: set[str] = set()
    for s_idx in device_slices:
        for device in snap.slices[s_idx].spec.devices:
            if device.name in seen:
                return f"duplicate device name {device.name}"
            seen.add(device.name)
    raise AssertionError("no duplicate device name")  # the caller saw one


def _missing_counter(snap: Snapshot, pool: PoolView, devices: list[int]) -> str:
    """Upstream's reason for the first device that consumes an unknown counter."""
    for g in devices:
        for use in snap.device(g).consumes_counters:
            counters = pool.counter_sets.get(use.counter_set)
            if counters is None:
                return f"counter set {use.counter_set} not found"
            for name in use.counters:
                if name not in counters:
                    return f"counter {name} not found in counter set {use.counter_set}"
    raise AssertionError("no unknown counter")  # the caller saw one
