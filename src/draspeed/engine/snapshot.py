"""The long-lived state of the fast engine: cluster objects, read once into arrays.

A :class:`Snapshot` is built once per scheduling cycle from the ResourceSlices,
DeviceClasses and already-allocated claims. The slices are read into a flat table in
compiled code (:mod:`draspeed.engine.slice_table`); what nodes see of them -- pools
gathered as upstream gathers them, devices in upstream's search order, counters still
available -- is laid out in compiled code too, for all known nodes at once, the first
time a node is asked about (:mod:`draspeed.engine.layout`). Selector outcomes are kept
per expression and device (:mod:`draspeed.engine.store`), so a selector is evaluated
at most once per device for the snapshot's lifetime. Per-call scratch state lives in
:mod:`draspeed.engine.claim_arrays` and the compiled core, never here.

Updates return new versions that share nearly everything with the old one: the slice
table, CEL tables and selector verdicts are shared by the whole family of versions; the
slice indexes, holds and one-node layouts are persistent maps
(:mod:`draspeed.engine.persistent`), so an update costs what it changes, not the cluster.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Any, TypeVar

import numpy as np

from draspeed import arguments
from draspeed.api._model_tree import clone
from draspeed.api.coerce import (
    cluster_claims,
    cluster_classes,
    cluster_nodes,
    cluster_slices,
    object_name,
)
from draspeed.api.model import (
    Device,
    DeviceClass,
    Node,
    ObjectMeta,
    ResourceClaim,
    ResourceSlice,
)
from draspeed.collector import collector_paused
from draspeed.engine import _gather, _read
from draspeed.engine.committed import ClaimLog, Holds, claim_holds
from draspeed.engine.layout import Layout, NodeView, attribute_values, node_key
from draspeed.engine.next_version import (
    PendingLayout,
    copy_snapshot,
    derive_allocations,
    derive_slices,
)
from draspeed.engine.persistent import PersistentMap, Trail
from draspeed.engine.slice_index import SliceIndex
from draspeed.engine.slice_table import SELECTION, SliceTable
from draspeed.engine.store import ERROR, FALSE, TRUE, UNKNOWN, SelectorResults, SliceStore
from draspeed.features import Features
from draspeed.rules.allocated_state import AllocatedState
from draspeed.rules.ids import DeviceID, PoolID
from draspeed.rules.node_selection import NodeViews, SelectorKey, selector_key

__all__ = ["Snapshot"]

_LAYOUTS_KEPT = 64  # multi-node layouts remembered per snapshot (and one-node ones, at least)


_Model = TypeVar("_Model", ResourceSlice, DeviceClass, ResourceClaim, Node)


def _owned(objects: list[_Model], copy: bool) -> list[_Model]:
    """``objects``, or deep copies of them when ``copy`` (in compiled code: one walk of
    each object tree, no constructor calls)."""
    if not copy:
        return objects
    with collector_paused():  # millions of new small objects: no collector passes
        return [clone(o) for o in objects]


def _owned_by_name(objects: dict[str, _Model], copy: bool) -> dict[str, _Model]:
    """``objects`` by name, or deep copies of them when ``copy``."""
    if not copy:
        return objects
    return dict(zip(objects, _owned(list(objects.values()), copy), strict=True))


def _features(value: object) -> Features:
    return arguments.instance_of(value, Features, "features", "Features")


class Snapshot:
    """Slices, classes and committed allocations, read for the fast engine.

    Thread-safety: a snapshot never changes after ``build``; its lazily filled caches
    are guarded by a lock, so allocators on many threads may share it. What the
    versions of one family share is guarded by the store's lock (appends, selector
    verdicts, CEL tables) or never changes once another version sees it.
    """

    def __init__(
        self,
        slices: Sequence[ResourceSlice],
        classes: Sequence[DeviceClass],
        allocated_claims: Sequence[ResourceClaim],
        features: Features,
        nodes: dict[str, Node] | None = None,
        copies_inputs: bool = False,
    ) -> None:
        self.features = features
        # Whether this family works on its own deep copies of the objects it is given.
        self.copies_inputs = copies_inputs
        # Slices by index s and devices by global index g, never renumbered in later
        # versions: an update appends new slices to the family's store and marks
        # removed ones dead. This version sees the first _n_slices slices.
        self._store = SliceStore(slices, features)
        self.table: SliceTable = self._store.table
        self._n_slices = self.table.n_slices
        self._n_chunks = len(self._store.chunks)
        self.n_devices = self.table.n_devices
        self._dead: PersistentMap[int, bool] = PersistentMap()
        self._dead_devices = 0
        self.classes = {c.metadata.name: c for c in classes}
        self._claims = ClaimLog(c for c in allocated_claims if c.status.allocation is not None)
        # The Nodes the caller gave, by name (read once, when they were checked); a
        # version never changes this dict, an update makes its own.
        self.given_nodes: dict[str, Node] = {} if nodes is None else nodes
        self._index: SliceIndex | None = None
        self._allocated: AllocatedState | None = None
        self._holds: Holds | None = None
        self._lock = threading.RLock()
        self._layouts: dict[tuple[Any, ...], Layout] = {}
        # One-node layouts (the nodes searched on their own), with the epochs they were
        # made in: persistent, so a later version reuses those of nodes it did not change.
        self._node_layouts: PersistentMap[tuple[Any, ...], tuple[Layout, tuple[int, ...]]] = (
            PersistentMap()
        )
        self._classes_epoch = 0
        # What changed since the family began: per node name (its pools or committed
        # state), or for every node at once. Numbers come from one family-wide counter.
        self._epochs: PersistentMap[str, int] = PersistentMap()
        self._all_epoch = 0
        self._counter = itertools.count(1)
        self._known: list[Node] | None = None
        self._known_names: frozenset[str] | None = None
        self._cluster: Layout | None = None
        # Set on a derived version: how to make its cluster layout from an earlier one.
        self._cluster_from: PendingLayout | None = None
        self._inputs: dict[str, Any] = {}  # this version's gather inputs, made once
        self._given_ids()  # looked up while the names just read are in cache

    @classmethod
    def build(
        cls,
        slices: Sequence[ResourceSlice],
        classes: Sequence[DeviceClass],
        allocated_claims: Sequence[ResourceClaim] = (),
        *,
        features: Features | None = None,
        nodes: Sequence[Node | str] = (),
        copy: bool = False,
    ) -> Snapshot:
        """Read a cluster state. ``nodes``: Node objects or names (labels matter for
        node selectors); nodes named only by slices are known too, without labels.

        By default the objects are taken over, not copied: like the objects of an
        informer's cache that upstream's allocator reads, they must not be changed
        afterwards, or the snapshot, which reads parts of them on first use, changes
        with them. ``copy=True`` makes this snapshot and every version derived from it
        work on deep copies of what they are given (here and in the updates), for
        callers that go on changing their objects; it costs about 2 us per device and
        24 us per allocated claim.
        Wrong types are a TypeError naming the argument; two different objects of one
        name a ValueError (an equal repeat is dropped).
        """
        copy = arguments.flag(copy, "copy")
        with collector_paused():
            return cls(
                _owned(cluster_slices(slices, names_of=_read.object_names), copy),
                _owned(cluster_classes(classes), copy),
                _owned(cluster_claims(allocated_claims, "allocated_claims"), copy),
                Features() if features is None else _features(features),
                _owned_by_name(cluster_nodes(nodes, names_of=_read.object_names), copy),
                copy,
            )

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

        Costs what changed: nodes the slices do not target keep their layouts, and
        selectors are evaluated for the new devices only.
        """
        added = self._owned(cluster_slices(added, "added"))
        removed = arguments.names_or_items(removed, ResourceSlice, "removed", "a ResourceSlice")
        gone = {r if isinstance(r, str) else r.metadata.name for r in removed}
        gone |= {a.metadata.name for a in added}
        named = self._slice_index().named
        dead = {named[name] for name in gone if name in named}
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
                self.given_nodes,
                self.copies_inputs,
            )
        return derive_slices(self, list(added), dead)

    def add_allocated(self, claims: ResourceClaim | Sequence[ResourceClaim]) -> Snapshot:
        """A new version where ``claims`` (with ``status.allocation``) hold their devices;
        a claim with the key of an allocated one replaces it. Costs what the claims touch."""
        new = self._owned(cluster_claims(claims, "claims"))
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
        items = arguments.names_or_items(claims, ResourceClaim, "claims", "a ResourceClaim")
        keys = {c if isinstance(c, str) else c.key for c in items}
        held = [found for k in keys if (found := self._claims.get(k)) is not None]
        return derive_allocations(self, [], held)

    def update_classes(
        self, added: Sequence[DeviceClass] = (), removed: Sequence[DeviceClass | str] = ()
    ) -> Snapshot:
        """A new version with classes added, replaced (same name) or removed."""
        added = self._owned(cluster_classes(added, "added"))
        removed = arguments.names_or_items(removed, DeviceClass, "removed", "a DeviceClass")
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
        added = arguments.items_of(added, Node, "added", "a Node")
        # (Two different Nodes of one name: refused, as Snapshot.build refuses them.)
        added = self._owned(arguments.unique(added, object_name, "added", "Nodes"))
        removed = arguments.names_or_items(removed, Node, "removed", "a Node")
        gone = {r if isinstance(r, str) else r.name for r in removed}
        child = self._derive_plain()
        child.given_nodes = {n: v for n, v in self.given_nodes.items() if n not in gone}
        child.given_nodes.update((n.name, n) for n in added)
        child._cluster_from = None  # other nodes: the layout is laid out anew
        child._known = child._known_names = None
        child._inputs = {}
        return child

    def _owned(self, objects: list[_Model]) -> list[_Model]:
        """What this family keeps of objects it is given (copies, if it copies)."""
        return _owned(objects, self.copies_inputs)

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
        count = self.table.column("s_ndev")  # a sibling's slices too (see derive_slices)
        return sum(int(count[s]) for s in slices)

    def _epoch_of(self, name: str) -> tuple[int, int]:
        """What must be the same for a node's one-node layout to still hold."""
        return (self._all_epoch, self._epochs.get(name, 0))

    def _bump(self, names: Iterable[str], everywhere: bool) -> None:
        """Record that these nodes (or every node) see other pools or state now."""
        if everywhere:
            self._all_epoch = next(self._counter)
            return
        names = list(names)
        if names:
            self._epochs = self._epochs.derive()
            stamp = next(self._counter)
            for name in names:
                self._epochs[name] = stamp
            self._epochs.freeze()

    # ----------------------------------------------------------------------------------
    # What the version holds
    # ----------------------------------------------------------------------------------

    @property
    def slices(self) -> list[ResourceSlice]:
        """The live slices, in the order a rebuild from them would use."""
        with self._lock:  # flattening the dead set writes it (once)
            dead = self._dead.flat()
        return [rs for s, rs in enumerate(self.table.slices[: self._n_slices]) if s not in dead]

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
        return list(self._known_nodes())

    def _known_nodes(self) -> list[Node]:
        with self._lock:
            if self._known is None:
                given = self.given_nodes
                names = self.table.names
                # Told apart by string id, not by str: sets of node names read every
                # name object again (a cache miss each, 5,000 nodes: 1.3-1.9 ms).
                given_ids = self._given_ids()
                strings = names.string_list
                # A flag per string id: named by a live slice, and not a given node's.
                named_here = np.zeros(len(strings), dtype=bool)
                named_here[self._slice_node_ids()] = True
                named_here[given_ids[given_ids >= 0]] = False
                # (name, id) of each, by name.
                pairs = sorted((strings[i], i) for i in np.flatnonzero(named_here).tolist())
                named = [name for name, _ in pairs]
                self._known = [*given.values(), *(Node(ObjectMeta(name=n)) for n in named)]
                self._known_names = None  # (made when first asked for)
                ids = np.concatenate(
                    [given_ids, np.fromiter((i for _, i in pairs), np.int32, len(pairs))]
                )
                # The known nodes' names and string ids, for their layout and gathering
                # (with the list they are of: a later version may lay out other nodes).
                self._inputs["known"] = (self._known, [*given, *named], ids)
            return self._known

    def _given_ids(self) -> np.ndarray:
        """The string ids of the given nodes' names (-1: a name no slice has), from
        the last lookup while no string was added since (the strings only grow)."""
        names = self.table.names
        found = self._inputs.get("given_ids")
        if found is not None:
            given, count, ids = found
            if given is self.given_nodes and count == len(names.string_list):
                return ids
        ids = names.find_all(self.given_nodes, len(self.given_nodes))
        self._inputs["given_ids"] = (self.given_nodes, len(names.string_list), ids)
        return ids

    def known_names_and_ids(self, nodes: Sequence[Node]) -> tuple[list[str], np.ndarray] | None:
        """The names and string ids of ``nodes`` if they are this version's known nodes
        (the very list :meth:`_known_nodes` made), else None."""
        found = self._inputs.get("known")
        if found is None or found[0] is not nodes:
            return None
        return found[1], found[2]

    def _slice_node_ids(self) -> np.ndarray:
        """The string ids of the node names of the live slices (repeats included)."""
        ids = self.table.column("s_node", self._n_slices)[self._live().astype(bool)]
        return ids[ids >= 0]

    def _live(self) -> np.ndarray:
        """1 for each slice this version sees, 0 for dead ones (and a sibling's)."""
        found = self._inputs.get("live")
        if found is None:
            found = np.ones(self._n_slices, dtype=np.uint8)
            with self._lock:
                dead = self._dead.flat()
            if dead:
                found[np.fromiter(dead, dtype=np.int64, count=len(dead))] = 0
            self._inputs["live"] = found
        return found

    def _slice_index(self) -> SliceIndex:
        """The live slices by node, pool and name (built on first use: updates need them)."""
        with self._lock:
            if self._index is None:
                self._index = SliceIndex.build(self.table.slices[: self._n_slices], self._live())
            return self._index

    # ----------------------------------------------------------------------------------
    # Layouts: nodes laid end to end for the compiled core
    # ----------------------------------------------------------------------------------

    def layout(self, nodes: Sequence[Node]) -> Layout:
        """The layout of these nodes (in this order), built once per node list."""
        nodes = list(nodes)
        if len(nodes) == 1:  # never the cluster layout, even of a one-node cluster: its
            with self._lock:  # row may be stale, and layout_for asks here for such nodes
                return self._node_layout(nodes[0])
        known = self._known_nodes()
        if len(nodes) == len(known) and all(
            a is b or (a.name == b.name and a.labels == b.labels)
            for a, b in zip(nodes, known, strict=True)
        ):
            return self.cluster_layout()
        key = tuple(node_key(n) for n in nodes)
        with self._lock:
            found = self._layouts.get(key)
            if found is None:
                found = Layout(self, nodes, key)
                if len(self._layouts) >= _LAYOUTS_KEPT:  # forget the oldest
                    self._layouts.pop(next(iter(self._layouts)))
                self._layouts[key] = found
            return found

    def _node_layout(self, node: Node) -> Layout:
        """One node's layout (under the lock): an earlier version's if this version sees
        the node as that one did -- the same object while the classes are the same too,
        else a copy without claim arrays -- or a new one."""
        key = node_key(node)
        stamp = self._epoch_of(node.name)
        found = self._node_layouts.get(key)
        if found is not None:
            layout, (all_epoch, node_epoch, classes_epoch) = found
            if layout.snap is self:
                return layout
            if (all_epoch, node_epoch) == stamp:
                if classes_epoch == self._classes_epoch:
                    return layout  # nothing it holds differs in this version
                layout = layout.carried(self, keep_claim_arrays=False)
            else:
                layout = Layout(self, [node], (key,))
        else:
            layout = Layout(self, [node], (key,))
        kept = self._node_layouts
        if len(kept) >= max(_LAYOUTS_KEPT, len(self._known_nodes()) // 10):
            kept = PersistentMap()  # start afresh rather than keep every node ever asked
        self._node_layouts = kept.for_writing()
        self._node_layouts[key] = (layout, (*stamp, self._classes_epoch))
        return layout

    def layout_for(self, node: Node) -> tuple[Layout, int]:
        """Where to search ``node``: the known nodes' layout if it is one of them (so
        claim-level work is shared by every node asked), else a layout of its own."""
        cluster = self._cluster  # once set, never replaced: read without the lock
        if cluster is not None:
            n = cluster.position.get(id(node), -1)
            if n >= 0 and cluster.nodes[n] is node and n not in cluster.stale:
                return cluster, n
        if cluster is None and node.name in self._known_name_set():
            cluster = self.cluster_layout()
        if cluster is not None:
            # By name (unique among the known nodes), then the labels compared: no
            # sorted key made on the hot path.
            for n in cluster.named.get(node.name, ()):
                known = cluster.nodes[n]
                # The snapshot's own Node object (the usual caller passes it back): no
                # labels compared.
                if n not in cluster.stale and (known is node or known.labels == node.labels):
                    return cluster, n
        return self.layout([node]), 0

    def _known_name_set(self) -> frozenset[str]:
        with self._lock:
            known = self._known_nodes()
            if self._known_names is None:
                self._known_names = frozenset(map(object_name, known))
            return self._known_names

    def known_layout(self) -> Layout | None:
        """The layout of the known nodes if it was made already (never makes it)."""
        return self._cluster

    def cluster_layout(self) -> Layout:
        """The layout of the known nodes (:attr:`nodes`), built once; a version made by
        an allocation or class change patches its parent's instead of laying it out anew."""
        found = self._cluster
        if found is not None:  # set once per version: no lock needed to read it then
            return found
        with self._lock, collector_paused():
            found = self._cluster
            if found is None:
                pending = self._cluster_from
                self._cluster_from = None
                nodes = self._known_nodes()
                if pending is not None and pending.base.nodes is nodes:
                    found = pending.base.derive(
                        self,
                        None if pending.changed is None else pending.changed.all(),
                        keep_claim_arrays=pending.keep,
                        stale=pending.stale.all(),
                    )
                else:
                    found = Layout(self, nodes)
                self._cluster = found
            return found

    def gather(self, nodes: Sequence[Node]) -> dict[str, Any]:
        """The compiled pool gathering of these nodes in this version
        (:func:`draspeed.engine._gather.gather`)."""
        table = self.table
        with self._lock:
            own_order, own_keys, shared = self._candidates()
            known = self.known_names_and_ids(nodes)
            if known is not None:
                ids = known[1]
            else:
                ids = table.names.find_all(map(object_name, nodes), len(nodes))
            lo = np.searchsorted(own_keys, ids, side="left").astype(np.int32)
            hi = np.searchsorted(own_keys, ids, side="right").astype(np.int32)
            verdict, n_selectors = self._selector_verdicts(nodes)
            holds, keys, values = self.holds().for_gather()
            arrays = table.arrays(self._n_slices, self.n_devices)
            live = self._live()
        return _gather.gather(
            arrays,
            table.names.string_list,
            table.names.pool_keys,
            live,
            ids,
            own_order,
            lo,
            hi,
            shared,
            verdict,
            n_selectors,
            holds,
            keys,
            values,
            table.quantity_whole(),
            self.features.partitionable_devices,
            table.sorted_slots,
        )

    def _candidates(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(live slices with a node name, sorted by it; their node name ids; the live
        slices without one), in table order within each node: once per version."""
        found = self._inputs.get("candidates")
        if found is None:
            live = self._live().astype(bool)
            node = self.table.column("s_node", self._n_slices)
            own = np.flatnonzero(live & (node >= 0))
            order = own[np.argsort(node[own], kind="stable")].astype(np.int32)
            shared = np.flatnonzero(live & (node < 0)).astype(np.int32)
            found = self._inputs["candidates"] = (order, node[order], shared)
        return found

    def _selector_verdicts(self, nodes: Sequence[Node]) -> tuple[np.ndarray, int]:
        """Whether each node selector a candidate slice or device uses selects each node
        (1), not (0), or does not parse (2): ``[n * n_selectors + k]``."""
        used = self._used_selectors()
        if not used:
            return np.zeros(0, dtype=np.uint8), 0
        selectors = self.table.names.selectors
        k = len(selectors)
        out = np.zeros((len(nodes), k), dtype=np.uint8)
        # Slices decoded one by one hold equal selectors as distinct objects (one per
        # rack, say, repeated on every slice of it): each distinct one is matched once.
        same: dict[SelectorKey, list[int]] = {}
        for sid in used:
            same.setdefault(selector_key(selectors[sid]), []).append(sid)
        views = NodeViews(nodes)
        for sids in same.values():
            out[:, sids] = views.verdicts(selectors[sids[0]])[:, None]
        return out.ravel(), k

    def _used_selectors(self) -> list[int]:
        found = self._inputs.get("selectors")
        if found is None:
            t, n = self.table, self._n_slices
            live = self._live().astype(bool)
            sel = t.column("s_sel", n)
            used = set(
                t.column("s_selector", n)[live & (sel == SELECTION["node_selector"])].tolist()
            )
            per_device = np.flatnonzero(live & (t.column("s_per_device", n) != 0))
            if len(per_device):
                first, count = t.column("s_first", n), t.column("s_ndev", n)
                devices = np.concatenate(
                    [np.arange(first[s], first[s] + count[s]) for s in per_device.tolist()]
                )
                pdn = t.column("d_pdn", self.n_devices)[devices]
                chosen = t.column("d_pdn_selector", self.n_devices)[devices]
                used.update(chosen[pdn == SELECTION["node_selector"]].tolist())
            found = self._inputs["selectors"] = sorted(used)
        return found

    def attribute_codes(
        self, positions: np.ndarray, attribute: str, list_types: bool
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
        """(value_ptr, codes, present, number of codes) of one attribute at these
        devices (global indices), as constraints compare it."""
        table = self.table
        return _read.attribute_codes(
            table.slices,
            table.column("s_first"),
            np.ascontiguousarray(positions, dtype=np.int64),
            attribute,
            list_types,
            attribute_values,
        )

    # ----------------------------------------------------------------------------------
    # Devices
    # ----------------------------------------------------------------------------------

    def slice_of(self, g: int) -> tuple[int, int]:
        """(slice index, device index in the slice) of global device g."""
        return self.table.slice_of(g)

    def device(self, g: int) -> Device:
        return self.table.device(g)

    def devices(self, g: Sequence[int]) -> list[Device]:
        return self.table.devices(g)

    def allocated_at(self, g: Sequence[int]) -> list[bool]:
        """Per global device index: allocated in any way (upstream's IsDeviceAllocated
        of its ID), from the per-device holds rather than one ID lookup each."""
        at = np.asarray(g, dtype=np.int64)
        return self.holds().flags_at(at)[1].tolist() if len(at) else []

    def device_slice_of(self, g: int) -> ResourceSlice:
        return self.table.device_slice(g)

    def device_id(self, g: int) -> DeviceID:
        return self.table.device_id(g)

    @property
    def n_slices(self) -> int:
        """How many of the family's slices this version sees (its removed ones too)."""
        return self._n_slices

    # ----------------------------------------------------------------------------------
    # Selectors
    # ----------------------------------------------------------------------------------

    def selector_results(self, expression: str, deadline: float | None = None) -> SelectorResults:
        """The (lazily filled) verdicts of one expression (see SliceStore)."""
        return self._store.selector_results(expression, deadline)

    def evaluate(
        self,
        results: SelectorResults,
        devices: np.ndarray,
        deadline: float | None = None,
        *,
        lazy: bool = False,
    ) -> np.ndarray:
        """Verdicts of ``results``' expression for ``devices`` (global indices); with
        ``lazy``, devices past one over the CEL cost limit may stay UNKNOWN."""
        return self._store.evaluate(results, devices, self._n_chunks, deadline, lazy=lazy)

    def evaluate_device(
        self, results: SelectorResults, g: int, deadline: float | None = None
    ) -> int:
        """The verdict of ``results``' expression for device g alone (remembered)."""
        found = int(results.verdict[g]) if g < len(results.verdict) else UNKNOWN
        if found != UNKNOWN or results.selector is None:
            return ERROR if results.selector is None else found
        from draspeed.cel import device_input
        from draspeed.errors import CELRuntimeError

        cel_input = device_input(
            self.device_slice_of(g).spec.driver,
            self.device(g),
            list_type_attributes=self.features.list_type_attributes,
            consumable_capacity=True,
        )
        try:
            verdict = TRUE if results.selector.matches(cel_input, deadline) else FALSE
            message = None
        except CELRuntimeError as exc:
            verdict, message = ERROR, str(exc)
        with self._store.lock:
            results.cover(self.n_devices)
            if message is not None:
                results.messages[g] = message
            results.verdict[g] = verdict
        return verdict

    # ----------------------------------------------------------------------------------
    # Nodes
    # ----------------------------------------------------------------------------------

    def node_view(self, node: Node) -> NodeView:
        """What ``node`` sees (its pools in upstream's order and searchable devices), as
        explain and capacity analysis read it; raises upstream's AllocationError when
        pool gathering fails on the node."""
        from draspeed.errors import AllocationError

        with self._lock:
            layout = self._node_layout(node)
        error = layout.errors.get(0)
        if error is not None:
            raise AllocationError(error)
        return layout.node_view(0)

    def holds(self) -> Holds:
        """How many committed claims hold each device, and how (built on first use)."""
        with self._lock, collector_paused():
            if self._holds is None:
                consumable = self.features.consumable_capacity
                committed = [
                    hold
                    for claim in self._claims.flat().values()
                    for hold in claim_holds(claim, consumable)
                ]
                live = self._live()
                self._holds = Holds.of_committed(
                    self.n_devices,
                    committed,
                    lambda ids: self.table.devices_named_many(ids, self._n_slices, live),
                )
            return self._holds

    def _devices_named(self, device_id: DeviceID) -> list[int]:
        """Every live device with this ID (one, unless a pool repeats a name)."""
        pool = PoolID(device_id.driver, device_id.pool)
        slices = self._slice_index().of_pool.get(pool, ())
        return self.table.devices_named(device_id, slices)
