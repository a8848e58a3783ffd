"""The long-lived state of the fast engine: cluster objects, indexed once.

A :class:`Snapshot` is built once per scheduling cycle from the ResourceSlices,
DeviceClasses and already-allocated claims.  What one node sees of it -- the pools
gathered as upstream gathers them, the devices in upstream's search order, the
counters still available -- is computed the first time that node is asked about
and kept (:class:`NodeView`), so asking again for the same node costs nothing.
Selector outcomes are kept per expression and device, so a selector is evaluated
at most once per device for the snapshot's lifetime.  Per-call scratch state
lives in :mod:`draspeed.engine.claim_arrays` and the compiled core, never here.

Updates return new versions that share nearly everything with the old one: the
slices, their facts, CEL tables and selector verdicts live in an append-only store
shared by the whole family of versions (:class:`~draspeed.engine.committed.SliceStore`); the
indexes, node views, holds and one-node layouts are persistent maps
(:mod:`draspeed.engine.persistent`), so an update costs what it changes, not the cluster.
"""

from __future__ import annotations

import threading
from bisect import bisect_right
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
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
from draspeed.cel import check_deadline, compile_selector
from draspeed.engine.committed import EXCLUSIVE, ClaimLog, Holds, SliceStore, claim_holds
from draspeed.engine.layout import node_key
from draspeed.engine.persistent import PersistentMap, Trail
from draspeed.engine.slice_facts import SliceFacts
from draspeed.errors import AllocationError, CELCompileError
from draspeed.features import Features
from draspeed.rules import texts
from draspeed.rules.allocated_state import AllocatedState
from draspeed.rules.ids import DeviceID, PoolID
from draspeed.rules.node_selection import NodeSelectorError, node_matches

if TYPE_CHECKING:
    from draspeed.cel import DeviceTable, Selector
    from draspeed.engine.layout import Layout
    from draspeed.quantity import Quantity

_LAYOUTS_KEPT = 64  # multi-node layouts remembered per snapshot (and one-node ones, at least)

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
    # The node's block (draspeed.engine.layout), filled lazily.
    cache: dict[object, Any] = field(default_factory=dict)


class SelectorResults:
    """One CEL expression's verdict per device, filled lazily; shared by the versions of
    a snapshot family (device g is the same device in all of them)."""

    __slots__ = ("compile_error", "messages", "selector", "verdict")

    def __init__(self, n_devices: int, selector: Selector | None, compile_error: str | None):
        self.selector = selector
        self.compile_error = compile_error
        self.verdict = np.full(n_devices, UNKNOWN, dtype=np.uint8)
        self.messages: dict[int, str] = {}

    def cover(self, n_devices: int) -> None:
        """Make room for the verdicts of ``n_devices`` devices (new ones unknown); the
        room doubles, so devices appended one pool at a time cost O(1) each. Under the
        store's lock; a reader holding the old array still finds what it had."""
        if len(self.verdict) < n_devices:
            bigger = np.full(max(n_devices, 2 * len(self.verdict)), UNKNOWN, dtype=np.uint8)
            bigger[: len(self.verdict)] = self.verdict
            self.verdict = bigger


class Snapshot:
    """Slices, classes and committed allocations, indexed for the fast engine.

    Thread-safety: a snapshot is immutable after ``build``; its lazily filled
    caches are guarded by a lock, so allocators on many threads may share it.
    What the versions of one family share is guarded by the store's lock (selector
    verdicts, CEL tables, appends) or never changes once another version sees it.
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
        # Slices by index s and devices by global index g (every device of every slice,
        # slice by slice), never renumbered in later versions: an update appends the new
        # slices to the family's store and marks removed ones dead, so indices stay
        # valid. The store's lists are shared: this version reads its first _n_slices.
        self._store = SliceStore(slices)
        self._slice_at = self._store.slices
        self._first = self._store.first
        self._facts = self._store.facts
        self._chunks = self._store.chunks
        self._n_slices = len(self._slice_at)
        self._n_chunks = len(self._chunks)
        self.n_devices = self._store.n_devices
        self._first_arr = self._store.first_arr.view(self._n_slices)
        self._dead: PersistentMap[int, bool] = PersistentMap()
        self._dead_devices = 0
        self.classes = {c.metadata.name: c for c in classes}
        self._claims = ClaimLog(c for c in allocated_claims if c.status.allocation is not None)
        self.given_nodes = {n.name: n for n in nodes}
        on_node: dict[str, list[int]] = defaultdict(list)
        shared: list[int] = []
        of_pool: dict[PoolID, list[int]] = defaultdict(list)
        named: dict[str, int] = {}
        for s_idx, rs in enumerate(self._slice_at):
            (on_node[rs.spec.node_name] if rs.spec.node_name else shared).append(s_idx)
            of_pool[PoolID(rs.spec.driver, rs.spec.pool.name)].append(s_idx)
            named[rs.metadata.name] = s_idx
        # Indexes of the live slices, persistent: a version changes the keys it touches.
        self._slices_on_node = PersistentMap((k, tuple(v)) for k, v in on_node.items()).freeze()
        self._slices_shared: tuple[int, ...] = tuple(shared)
        self._slices_of_pool = PersistentMap((k, tuple(v)) for k, v in of_pool.items()).freeze()
        self._slice_named = PersistentMap(named).freeze()
        self._allocated: AllocatedState | None = None
        self._holds: Holds | None = None
        self._lock = threading.RLock()
        # Node views gathered by this version (writes: under the lock, after for_writing).
        self._nodes: PersistentMap[tuple[str, tuple[tuple[str, str], ...]], NodeView] = (
            PersistentMap()
        )
        # Node name -> keys (name, labels) that ever had a view, in any version (shared by
        # all versions; only grows), so an update finds the views of a node by name.
        self._view_keys: dict[str, set[tuple[str, tuple[tuple[str, str], ...]]]] = {}
        self._layouts: dict[tuple[Any, ...], Layout] = {}
        # One-node layouts (the nodes searched on their own), with the class epoch their
        # claim arrays were made in: persistent, so a later version reuses those of
        # the nodes it did not change (update_classes starts a new epoch).
        self._node_layouts: PersistentMap[tuple[Any, ...], tuple[Layout, int]] = PersistentMap()
        self._classes_epoch = 0
        self._known: list[Node] | None = None
        self._known_keys: set[Any] | None = None
        self._known_key_tuple: tuple[Any, ...] = ()
        self._cluster: Layout | None = None
        # Set on a derived version: how to make its cluster layout from an earlier one.
        self._cluster_from: PendingLayout | None = None

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
        in; an added slice whose name exists replaces it (a new pool generation).

        Costs what changed: nodes the slices do not target keep their gathered pools
        and arrays, selectors are evaluated for the new devices only.
        """
        gone = {r if isinstance(r, str) else r.metadata.name for r in removed}
        gone |= {a.metadata.name for a in added}
        dead = {self._slice_named[name] for name in gone if name in self._slice_named}
        if not dead and not added:
            return self._derive_plain()
        dead_devices = self._dead_devices + self._count_devices(dead)
        if dead_devices > max(self.n_devices - dead_devices, 4096):
            # Mostly dead slices: a fresh build is cheaper than carrying them along.
            return Snapshot(
                [*(rs for rs in self.slices if rs.metadata.name not in gone), *added],
                list(self.classes.values()),
                list(self._claims.flat().values()),
                self.features,
                list(self.given_nodes.values()),
            )
        return derive_slices(self, list(added), dead)

    def add_allocated(self, claims: ResourceClaim | Sequence[ResourceClaim]) -> Snapshot:
        """A new version where ``claims`` (with ``status.allocation``) hold their devices;
        a claim with the key of an allocated one replaces it. Costs what the claims touch."""
        new = [claims] if isinstance(claims, ResourceClaim) else list(claims)
        for claim in new:
            if claim.status.allocation is None:
                raise ValueError(f"claim {claim.key} has no status.allocation to add")
        # Looked up along the chain of changes: no copy of every claim per version.
        replaced = [found for c in new if (found := self._claims.get(c.key)) is not None]
        return derive_allocations(self, new, replaced)

    def remove_allocated(
        self, claims: ResourceClaim | str | Sequence[ResourceClaim | str]
    ) -> Snapshot:
        """A new version without these allocated claims (claims or ``namespace/name`` keys)."""
        items = [claims] if isinstance(claims, (ResourceClaim, str)) else list(claims)
        keys = {c if isinstance(c, str) else c.key for c in items}
        held = [found for k in keys if (found := self._claims.get(k)) is not None]
        return derive_allocations(self, [], held)

    def update_classes(
        self, added: Sequence[DeviceClass] = (), removed: Sequence[DeviceClass | str] = ()
    ) -> Snapshot:
        """A new version with classes added, replaced (same name) or removed."""
        gone = {r if isinstance(r, str) else r.metadata.name for r in removed}
        child = self._derive_plain(keep_claim_arrays=False)
        child._classes_epoch += 1  # claim arrays made before do not carry over
        child.classes = {n: c for n, c in self.classes.items() if n not in gone}
        child.classes.update((c.metadata.name, c) for c in added)
        return child

    def update_nodes(
        self, added: Sequence[Node] = (), removed: Sequence[Node | str] = ()
    ) -> Snapshot:
        """A new version with Node objects added, replaced (same name) or removed."""
        gone = {r if isinstance(r, str) else r.name for r in removed}
        child = self._derive_plain()
        child.given_nodes = {n: v for n, v in self.given_nodes.items() if n not in gone}
        child.given_nodes.update((n.name, n) for n in added)
        child._cluster_from = None  # other nodes: the layout is laid out anew
        child._known = child._known_keys = None
        return child

    def _derive_plain(self, *, keep_claim_arrays: bool = True) -> Snapshot:
        """A version sharing everything with this one (caches included)."""
        child = copy_snapshot(self)
        pending = self._pending_layout()
        if pending is not None:
            child._cluster_from = replace(pending, keep=pending.keep and keep_claim_arrays)
        return child

    def _pending_layout(self) -> PendingLayout | None:
        """What a derived version starts its cluster layout from: this version's layout,
        or the one this version would itself have derived its own from."""
        with self._lock:  # cluster_layout moves _cluster_from to _cluster
            if self._cluster is not None:
                return PendingLayout(self._cluster, Trail(), True, Trail())
            return self._cluster_from

    def _count_devices(self, slices: Iterable[int]) -> int:
        return sum(len(self._slice_at[s].spec.devices) for s in slices)

    @property
    def slices(self) -> list[ResourceSlice]:
        """The live slices, in the order a rebuild from them would use."""
        with self._lock:  # flattening the dead set writes it (once)
            dead = self._dead.flat()
        return [rs for s, rs in enumerate(self._slice_at[: self._n_slices]) if s not in dead]

    @property
    def allocated_claims(self) -> list[ResourceClaim]:
        """The committed claims (with ``status.allocation``), in the order added."""
        return list(self._claims.flat().values())

    @property
    def allocated(self) -> AllocatedState:
        """What the committed claims hold (built on first use)."""
        with self._lock:
            if self._allocated is None:
                self._allocated = AllocatedState.from_claims(
                    self._claims.flat().values(),
                    consumable_capacity=self.features.consumable_capacity,
                )
            return self._allocated

    @property
    def nodes(self) -> list[Node]:
        """The known nodes: the Node objects given, then nodes named by slices (sorted),
        as unlabelled Node objects."""
        return list(self._known_nodes()[0])

    def _known_nodes(self) -> tuple[list[Node], tuple[Any, ...], set[Any]]:
        """(known nodes, their keys in order, the same keys as a set), computed once per
        version whose nodes may differ from its parent's."""
        with self._lock:
            if self._known is None or self._known_keys is None:
                out = list(self.given_nodes.values())
                for name in sorted(self._slices_on_node):
                    if name not in self.given_nodes:
                        out.append(Node(metadata=ObjectMeta(name=name)))
                keys = tuple(node_key(n) for n in out)
                self._known, self._known_key_tuple, self._known_keys = out, keys, set(keys)
            return self._known, self._known_key_tuple, self._known_keys

    # ----------------------------------------------------------------------------------
    # Layouts: nodes laid end to end for the compiled core
    # ----------------------------------------------------------------------------------

    def layout(self, nodes: Sequence[Node]) -> Layout:
        """The layout of these nodes (in this order), built once per node list."""
        from draspeed.engine.layout import Layout

        key = tuple(node_key(n) for n in nodes)
        if len(key) == 1:  # never the cluster layout, even of a one-node cluster: its
            with self._lock:  # row may be stale, and layout_for asks here for such nodes
                return self._node_layout(nodes[0], key)
        known = self._known_nodes()[1]
        if key == known:  # the known nodes: kept apart (hashing their key is not free)
            return self.cluster_layout()
        with self._lock:
            found = self._layouts.get(key)
            if found is None:
                found = Layout(self, list(nodes), key)
                if len(self._layouts) >= _LAYOUTS_KEPT:  # forget the oldest
                    self._layouts.pop(next(iter(self._layouts)))
                self._layouts[key] = found
            return found

    def _node_layout(self, node: Node, key: tuple[Any, ...]) -> Layout:
        """One node's layout (under the lock): an earlier version's if this version sees
        the node as it did (the very same view) -- the same object while the classes
        are the same too, else a copy without claim arrays -- or a new one."""
        from draspeed.engine.layout import Layout

        found = self._node_layouts.get(key)
        if found is not None:
            layout, epoch = found
            if layout.snap is self:
                return layout
            if all(
                e.view is not None and self._nodes.get(k) is e.view
                for e, k in zip(layout.entries, layout.key, strict=True)
            ):
                if epoch == self._classes_epoch:
                    return layout  # nothing it holds differs in this version
                layout = layout.carried(self, keep_claim_arrays=False)
            else:
                layout = Layout(self, [node], key)
        else:
            layout = Layout(self, [node], key)
        kept = self._node_layouts
        if len(kept) >= max(_LAYOUTS_KEPT, len(self._known_nodes()[1]) // 10):
            kept = PersistentMap()  # start afresh rather than keep every node ever asked
        self._node_layouts = kept.for_writing()
        self._node_layouts[key] = (layout, self._classes_epoch)
        return layout

    def layout_for(self, node: Node) -> tuple[Layout, int]:
        """Where to search ``node``: the known nodes' layout if it is one of them (so
        claim-level work is shared by every node asked), else a layout of its own."""
        cluster = self._cluster  # once set, never replaced: read without the lock
        if cluster is not None:
            # By name (unique among the known nodes), then the labels compared: no
            # sorted key made on the hot path.
            for n in cluster.named.get(node.name, ()):
                if n not in cluster.stale and cluster.entries[n].node.labels == node.labels:
                    return cluster, n
        key = node_key(node)
        if key in self._known_nodes()[2]:
            cluster = self.cluster_layout()
            n = cluster.index[key]
            if n not in cluster.stale:
                return cluster, n
        return self.layout([node]), 0

    def cluster_layout(self) -> Layout:
        """The layout of the known nodes (:attr:`nodes`), built once; a version made by
        an allocation or class change patches its parent's instead of laying it out anew."""
        with self._lock:
            found = self._cluster
            if found is None:
                pending = self._cluster_from
                self._cluster_from = None
                nodes, keys, _ = self._known_nodes()
                # Same nodes: usually the very same key object, so this costs nothing.
                if pending is not None and (pending.base.key is keys or pending.base.key == keys):
                    found = pending.base.derive(
                        self,
                        None if pending.changed is None else pending.changed.all(),
                        keep_claim_arrays=pending.keep,
                        stale=pending.stale.all(),
                    )
                else:
                    from draspeed.engine.layout import Layout

                    found = Layout(self, nodes, keys)
                self._cluster = found
            return found

    # ----------------------------------------------------------------------------------
    # Devices
    # ----------------------------------------------------------------------------------

    def slice_of(self, g: int) -> tuple[int, int]:
        """(slice index, device index in the slice) of global device g."""
        s = bisect_right(self._first, g, 0, self._n_slices) - 1
        return s, g - self._first[s]

    def slices_of(self, g: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`slice_of` for an array of global indices."""
        s = np.searchsorted(self._first_arr, g, side="right") - 1
        return s, g - self._first_arr[s]

    def device(self, g: int) -> Device:
        s, d = self.slice_of(g)
        return self._slice_at[s].spec.devices[d]

    def device_slice_of(self, g: int) -> ResourceSlice:
        return self._slice_at[self.slice_of(g)[0]]

    def device_id(self, g: int) -> DeviceID:
        s, d = self.slice_of(g)
        rs = self._slice_at[s]
        return DeviceID(rs.spec.driver, rs.spec.pool.name, rs.spec.devices[d].name)

    # ----------------------------------------------------------------------------------
    # Selectors
    # ----------------------------------------------------------------------------------

    def selector_results(self, expression: str, deadline: float | None = None) -> SelectorResults:
        """The (lazily filled) verdicts of one expression; compiles it once (a deadline
        that passes first raises AllocationTimeout and caches nothing)."""
        store = self._store
        with store.lock:
            found = store.selectors.get(expression)
            if found is None:
                try:
                    selector = compile_selector(expression, deadline)
                    found = SelectorResults(store.n_devices, selector, None)
                except CELCompileError as exc:
                    found = SelectorResults(store.n_devices, None, str(exc))
                store.selectors[expression] = found
            else:  # made for fewer devices: a later version appended some
                found.cover(self.n_devices)
            return found

    def evaluate(
        self, results: SelectorResults, devices: np.ndarray, deadline: float | None = None
    ) -> np.ndarray:
        """Verdicts of ``results``' expression for ``devices`` (global indices).

        Each chunk of the device table is evaluated at once the first time any of its
        devices is asked about (numpy over columns; rows it cannot lower are evaluated
        one by one, memoised on what they read); later asks only index the answer.
        """
        if results.selector is None:
            return np.full(len(devices), ERROR, dtype=np.uint8)
        if len(devices) and (results.verdict[devices] == UNKNOWN).any():
            with self._store.lock:
                results.cover(self.n_devices)
                for k in range(self._n_chunks):
                    start, end, _ = self._chunks[k]
                    if results.verdict[start] != UNKNOWN or start == end:
                        continue
                    check_deadline(deadline)  # building a chunk's table is not interrupted
                    table = self._chunk_table(k)
                    match, error, messages = results.selector.evaluate(table, deadline=deadline)
                    verdict = np.where(match, TRUE, FALSE).astype(np.uint8)
                    verdict[error] = ERROR
                    results.messages.update((start + row, m) for row, m in messages.items())
                    results.verdict[start:end] = verdict
        return results.verdict[devices]

    def _chunk_table(self, k: int) -> DeviceTable:
        """The columnar table of chunk k's devices, built once (shared by every version;
        under the store's lock)."""
        start, end, table = self._chunks[k]
        if table is None:
            from draspeed.cel import DeviceTable

            rows: list[tuple[str, Device]] = []
            s = self.slice_of(start)[0]  # a chunk starts at a slice's first device
            while s < self._n_slices and self._first[s] < end:
                rs = self._slice_at[s]
                rows.extend((rs.spec.driver, device) for device in rs.spec.devices)
                s += 1
            table = DeviceTable.build(
                rows,
                list_type_attributes=self.features.list_type_attributes,
                # The experimental allocator hands CEL the device's real value
                # whatever the DRAConsumableCapacity gate says.
                consumable_capacity=True,
            )
            self._chunks[k] = (start, end, table)
        return table

    # ----------------------------------------------------------------------------------
    # Nodes
    # ----------------------------------------------------------------------------------

    def node_view(self, node: Node, key: Any = None) -> NodeView:
        """What ``node`` sees: gathered once per node name and labels, then reused
        (``key``: the node's :func:`~draspeed.engine.layout.node_key`, if the caller has it)."""
        key = key if key is not None else node_key(node)
        with self._lock:
            found = self._nodes.get(key)
            if found is None:
                found = self._gather(node)
                self._nodes = self._nodes.for_writing()  # frozen once a version derived
                self._nodes[key] = found
                self._view_keys.setdefault(node.name, set()).add(key)
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
                            texts.gather_pools(
                                texts.device_node_selection(device.name, rs.metadata.name, exc)
                            )
                        ) from exc
        except NodeSelectorError as exc:
            raise AllocationError(
                texts.gather_pools(texts.slice_node_selection(rs.metadata.name, exc))
            ) from exc
        return False

    def _gather(self, node: Node) -> NodeView:
        partitionable = self.features.partitionable_devices
        by_pool: dict[PoolID, list[int]] = {}
        for s_idx in [*self._slices_on_node.get(node.name, ()), *self._slices_shared]:
            rs = self._slice_at[s_idx]
            if not partitionable and (
                rs.spec.per_device_node_selection is not None or rs.spec.shared_counters
            ):
                continue
            if not self._relevant(rs, node):
                continue
            pid = PoolID(rs.spec.driver, rs.spec.pool.name)
            have = by_pool.get(pid)
            gen = rs.spec.pool.generation
            if have is None or gen > self._slice_at[have[0]].spec.pool.generation:
                by_pool[pid] = [s_idx]
            elif gen == self._slice_at[have[0]].spec.pool.generation:
                have.append(s_idx)

        plain: list[PoolView] = []
        with_conditions: list[PoolView] = []
        for pid, targeting in by_pool.items():
            first = self._slice_at[targeting[0]].spec.pool
            all_of_pool: list[int] | None = None
            if len(targeting) != first.resource_slice_count:
                all_of_pool = []
                obsolete = False
                for s_idx in self._slices_of_pool[pid]:
                    gen = self._slice_at[s_idx].spec.pool.generation
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
        targeting = sorted(targeting, key=lambda s: self._slice_at[s].metadata.name)
        device_slices: list[int] = []
        counter_slices: list[int] = []
        other_slices: list[int] = []
        for s_idx in targeting:
            shared = partitionable and bool(self._slice_at[s_idx].spec.shared_counters)
            (counter_slices if shared else device_slices).append(s_idx)
        if all_of_pool is not None and len(targeting) < len(all_of_pool):
            names = {self._slice_at[s].metadata.name for s in targeting}
            for s_idx in all_of_pool:
                if self._slice_at[s_idx].metadata.name in names:
                    continue
                shared = partitionable and bool(self._slice_at[s_idx].spec.shared_counters)
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
            first = self._first[s_idx]
            pool.devices.extend(range(first, first + facts.n))
            if facts.binding.any():
                pool.has_binding_conditions = True
        if not partitionable:
            return pool
        for s_idx in counter_slices:
            for cs in self._slice_at[s_idx].spec.shared_counters:
                if cs.name in pool.counter_sets:
                    return PoolView(
                        pid, invalid=True, invalid_reason=texts.duplicate_counter_set(cs.name)
                    )
                pool.counter_sets[cs.name] = {n: c.value for n, c in cs.counters.items()}
        for s_idx in other_slices:
            first = self._first[s_idx]
            pool.other_devices.extend(range(first, first + len(self._slice_at[s_idx].spec.devices)))
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
        holds = self.holds()
        for p_idx, pool in enumerate(pools):
            slots = [
                (cs, c) for cs in sorted(pool.counter_sets) for c in sorted(pool.counter_sets[cs])
            ]
            available = {slot: pool.counter_sets[slot[0]][slot[1]].nanos for slot in slots}
            if slots:
                members = np.asarray([*pool.devices, *pool.other_devices], dtype=np.int64)
                allocated = holds.flags_at(members)[1]
                for g in members[allocated].tolist():
                    s_idx, d_idx = self.slice_of(g)
                    for slot, nanos in self.facts(s_idx).consumption(d_idx):
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
        """Slice s_idx's device facts, read once (for every version)."""
        found = self._facts[s_idx]
        if found is None:
            found = self._store.facts_of(s_idx)
        return found

    def holds(self) -> Holds:
        """How many committed claims hold each device, and how (built on first use)."""
        with self._lock:
            if self._holds is None:
                holds = Holds(self.n_devices)
                consumable = self.features.consumable_capacity
                touched: set[int] = set()
                for claim in self._claims.flat().values():
                    holds.apply(claim_holds(claim, consumable), 1, self._devices_named, touched)
                self._holds = holds
            return self._holds

    def _devices_named(self, device_id: DeviceID) -> list[int]:
        """Every live device with this ID (one, unless a pool repeats a name)."""
        out: list[int] = []
        for s_idx in self._slices_of_pool.get(PoolID(device_id.driver, device_id.pool), ()):
            first = self._first[s_idx]
            out.extend(first + i for i in self.facts(s_idx).indices(device_id.device))
        return out


def _first_duplicate(snap: Snapshot, device_slices: list[int]) -> str:
    seen: set[str] = set()
    for s_idx in device_slices:
        for device in snap._slice_at[s_idx].spec.devices:
            if device.name in seen:
                return texts.duplicate_device_name(device.name)
            seen.add(device.name)
    raise AssertionError("no duplicate device name")  # the caller saw one


def _missing_counter(snap: Snapshot, pool: PoolView, devices: list[int]) -> str:
    """Upstream's reason for the first device that consumes an unknown counter."""
    for g in devices:
        for use in snap.device(g).consumes_counters:
            counters = pool.counter_sets.get(use.counter_set)
            if counters is None:
                return texts.counter_set_not_found(use.counter_set)
            for name in use.counters:
                if name not in counters:
                    return texts.counter_not_found(name, use.counter_set)
    raise AssertionError("no unknown counter")  # the caller saw one


# --------------------------------------------------------------------------------------
# Deriving versions: share what did not change, patch or forget what did
# --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PendingLayout:
    """How a derived version makes its cluster layout from an earlier version's:
    ``changed``, nodes whose committed state changed (None: any may have); ``keep``,
    whether claim arrays carry over; ``stale``, nodes whose pools changed (searched on
    their own from then on). Both name sets grow one link per version (a Trail), so a
    chain of updates without a layout in between costs what each update changed."""

    base: Layout
    changed: Trail[str] | None
    keep: bool
    stale: Trail[str]


def copy_snapshot(parent: Snapshot) -> Snapshot:
    """A version sharing the parent's immutable parts and caches; its own lock, its own
    layer of node views (the parent's are frozen: views the parent gathers later stay
    its own) and its own (empty) layouts. Callers then change what their update changes."""
    child = Snapshot.__new__(Snapshot)
    with parent._lock:
        child.__dict__.update(parent.__dict__)
        child._nodes = parent._nodes.derive()
        child._node_layouts = parent._node_layouts.derive()
    child._lock = threading.RLock()
    child._layouts = {}
    child._cluster = None
    child._cluster_from = None
    return child


def derive_allocations(
    parent: Snapshot, added: list[ResourceClaim], removed: list[ResourceClaim]
) -> Snapshot:
    """A version with claims committed or released: the holds of the devices they touch
    are patched, and so are the views and layout rows of the nodes those devices are on."""
    consumable = parent.features.consumable_capacity
    child = copy_snapshot(parent)
    child._claims = parent._claims.derive(added, (c.key for c in removed))
    child._allocated = None
    old = parent.holds()
    holds = old.derive()
    touched: set[int] = set()
    for claim in removed:
        holds.apply(claim_holds(claim, consumable), -1, parent._devices_named, touched)
    for claim in added:
        holds.apply(claim_holds(claim, consumable), 1, parent._devices_named, touched)
    child._holds = holds
    probe = np.asarray(sorted(touched), dtype=np.int64)
    before, after = old.flags_at(probe), holds.flags_at(probe)
    flipped = (before[0] != after[0]) | (before[1] != after[1]) | (before[2] != after[2])
    changed = probe[flipped].tolist()
    allocated_flips = {
        g: bool(a) for g, b, a in zip(probe.tolist(), before[1], after[1], strict=True) if b != a
    }
    capacity = any(
        kind != EXCLUSIVE for c in (*added, *removed) for _, kind in claim_holds(c, consumable)
    )
    # Shares change capacity left even when no flag flips: their nodes change too.
    names, everywhere = _nodes_of(parent, sorted(touched) if capacity else changed)
    # Views of the nodes whose devices changed are patched, the others shared.
    keys = (
        list(child._nodes)
        if everywhere
        else [k for name in names for k in parent._view_keys.get(name, ()) if k in child._nodes]
    )
    for key in keys:
        child._nodes[key] = _patched_view(child, child._nodes[key], allocated_flips)
    pending = parent._pending_layout()
    if pending is not None:
        child._cluster_from = PendingLayout(
            pending.base,
            None if (everywhere or pending.changed is None) else pending.changed.add(names),
            pending.keep and not capacity,
            pending.stale,
        )
    return child


def _nodes_of(snap: Snapshot, devices: list[int]) -> tuple[set[str], bool]:
    """Names of the nodes that see the pools of these devices (a pool's counters and
    completeness are shared by every node it has a slice for); True if any node may."""
    pools = set()
    for g in devices:
        rs = snap.device_slice_of(g)
        pools.add(PoolID(rs.spec.driver, rs.spec.pool.name))
    return _nodes_seeing(snap, pools)


def _nodes_seeing(snap: Snapshot, pools: set[PoolID]) -> tuple[set[str], bool]:
    names: set[str] = set()
    for pid in pools:
        for s_idx in snap._slices_of_pool.get(pid, ()):
            name = snap._slice_at[s_idx].spec.node_name
            if not name:
                return names, True
            names.add(name)
    return names, False


def _patched_view(snap: Snapshot, view: NodeView, flips: dict[int, bool]) -> NodeView:
    """The view with pool counters left recomputed for devices whose allocation flipped
    (``flips``: device -> allocated now)."""
    available = [list(a) for a in view.pool_available]
    if flips and any(view.pool_slots):
        where = {p.id: i for i, p in enumerate(view.pools)}
        for g, now in flips.items():
            s_idx, d_idx = snap.slice_of(g)
            rs = snap._slice_at[s_idx]
            i = where.get(PoolID(rs.spec.driver, rs.spec.pool.name))
            if i is None or not view.pool_slots[i]:
                continue
            slot_of = {name: k for k, name in enumerate(view.pool_slots[i])}
            sign = -1 if now else 1
            for slot, nanos in snap.facts(s_idx).consumption(d_idx):
                k = slot_of.get(slot)
                if k is not None:
                    available[i][k] += sign * nanos
    out = replace(view, pool_available=available, cache={})
    block = view.cache.get("block")
    if block is not None:
        out.cache["block_from"] = block
    return out


def derive_slices(parent: Snapshot, added: list[ResourceSlice], dead: set[int]) -> Snapshot:
    """A version with slices gone (marked dead) and new ones appended: nodes they target
    are gathered again, the others keep their views; new devices get fresh holds.

    The new slices go to the end of the family's store. Slices a sibling appended there
    since this parent was made are not this version's: they are dead to it.
    """
    child = copy_snapshot(parent)
    gap: range | list[int] = []
    new = range(0)
    if added:  # else the child sees exactly the parent's slices
        store = parent._store
        start, child._n_slices, child._n_chunks, child.n_devices = store.append(added)
        gap = range(parent._n_slices, start)
        child._first_arr = store.first_arr.view(child._n_slices)
        new = range(start, child._n_slices)
    newly_dead = [*dead, *gap]
    if newly_dead:
        child._dead = parent._dead.derive()
        for s in newly_dead:
            child._dead[s] = True
        child._dead_devices = parent._dead_devices + parent._count_devices(newly_dead)
    _reindex(child, parent, dead, new)
    # Holds: the old devices keep theirs, new devices take what the claims hold of
    # their device IDs (a republished device: what its predecessor held).
    if parent._holds is not None:
        holds = parent._holds.derive(child.n_devices)
        for s in new:
            rs = parent._slice_at[s]
            held = holds.held_in_pool(rs.spec.driver, rs.spec.pool.name)
            if held:
                first = parent._first[s]
                for d, device in enumerate(rs.spec.devices):
                    counts = held.get(device.name)
                    if counts is not None:
                        holds.put(first + d, counts)
        # Dead devices keep their counts: no live view can see them.
        child._holds = holds
    else:
        child._holds = None
    named_before = {parent._slice_at[s].spec.node_name for s in dead}
    if any(
        rs.spec.node_name not in parent._slices_on_node for rs in added if rs.spec.node_name
    ) or any(name and name not in child._slices_on_node for name in named_before):
        child._known = child._known_keys = None  # the nodes named by slices differ
    # Nodes the changed slices target see other pools now; the rest keep their views.
    # Nodes that see a changed pool (in this version or the last) are gathered again.
    touched = [*added, *(parent._slice_at[s] for s in dead)]
    pools = {PoolID(rs.spec.driver, rs.spec.pool.name) for rs in touched}
    before, everywhere_before = _nodes_seeing(parent, pools)
    after, everywhere_after = _nodes_seeing(child, pools)
    if everywhere_before or everywhere_after:
        child._nodes = PersistentMap()
        return child
    for target in before | after:
        for key in parent._view_keys.get(target, ()):
            child._nodes.pop(key, None)
    # The cluster layout carries over: those nodes are searched on their own until
    # enough of them have changed to lay the cluster out anew.
    pending = parent._pending_layout()
    if pending is not None:
        child._cluster_from = replace(pending, stale=pending.stale.add(before | after))
    return child


def _reindex(child: Snapshot, parent: Snapshot, dead: set[int], new: range) -> None:
    """The child's slice indexes: the parent's, with the keys of dead and new slices
    written again (each list once, whatever the number of its slices that changed)."""
    at = parent._slice_at
    on_node: dict[str, list[int]] = {}
    of_pool: dict[PoolID, list[int]] = {}
    shared = list(parent._slices_shared) if any(not at[s].spec.node_name for s in dead) else None
    named = child._slice_named = parent._slice_named.derive()
    for s in dead:
        spec = at[s].spec
        pid = PoolID(spec.driver, spec.pool.name)
        if pid not in of_pool:
            of_pool[pid] = list(parent._slices_of_pool.get(pid, ()))
        of_pool[pid].remove(s)
        if spec.node_name:
            if spec.node_name not in on_node:
                on_node[spec.node_name] = list(parent._slices_on_node.get(spec.node_name, ()))
            on_node[spec.node_name].remove(s)
        else:
            assert shared is not None
            shared.remove(s)
        if named.get(at[s].metadata.name) == s:
            del named[at[s].metadata.name]
    for s in new:
        rs = at[s]
        pid = PoolID(rs.spec.driver, rs.spec.pool.name)
        if pid not in of_pool:
            of_pool[pid] = list(parent._slices_of_pool.get(pid, ()))
        of_pool[pid].append(s)
        if rs.spec.node_name:
            if rs.spec.node_name not in on_node:
                on_node[rs.spec.node_name] = list(parent._slices_on_node.get(rs.spec.node_name, ()))
            on_node[rs.spec.node_name].append(s)
        else:
            if shared is None:
                shared = list(parent._slices_shared)
            shared.append(s)
        named[rs.metadata.name] = s
    child._slices_on_node = _written(parent._slices_on_node, on_node)
    child._slices_of_pool = _written(parent._slices_of_pool, of_pool)
    if shared is not None:
        child._slices_shared = tuple(shared)
    named.freeze()


def _written(index: PersistentMap[Any, tuple[int, ...]], lists: dict[Any, list[int]]) -> Any:
    """``index`` with these keys' lists replaced (an empty list removes its key)."""
    if not lists:
        return index
    out = index.derive()
    for key, members in lists.items():
        if members:
            out[key] = tuple(members)
        elif key in out:
            del out[key]
    return out.freeze()
