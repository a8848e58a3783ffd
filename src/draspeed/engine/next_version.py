"""How a snapshot update makes the next version: share what did not change, note what did.

Every update of a :class:`~draspeed.engine.snapshot.Snapshot` returns a new version.
It starts as a copy sharing the parent's immutable parts and caches
(:func:`copy_snapshot`); committing or releasing claims patches the holds of the
devices they touch (:func:`derive_allocations`); replacing slices appends them to the
family's store and marks the old ones dead (:func:`derive_slices`). Both note which
nodes changed, so the next cluster layout is made from the last one
(:class:`PendingLayout`) rather than laid out anew.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from draspeed.api.model import ResourceClaim, ResourceSlice
from draspeed.engine.committed import EXCLUSIVE, claim_holds
from draspeed.engine.layout import Layout
from draspeed.engine.persistent import Trail
from draspeed.rules.ids import PoolID

if TYPE_CHECKING:  # the snapshot calls this module; nothing here calls it back
    from draspeed.engine.snapshot import Snapshot

__all__ = ["PendingLayout", "copy_snapshot", "derive_allocations", "derive_slices"]


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
    (empty) layouts. Callers then change what their update changes."""
    child = object.__new__(type(parent))
    with parent._lock:
        for name in _SHARED:
            setattr(child, name, getattr(parent, name))
        child._node_layouts = parent._node_layouts.derive()
    child._lock = threading.RLock()
    child._layouts = {}
    child._cluster = None
    child._cluster_from = None
    child._inputs = dict(parent._inputs)
    return child


# What a derived version starts with from its parent (updates then replace some).
_SHARED = (
    "features",
    "copies_inputs",
    "_store",
    "table",
    "_n_slices",
    "_n_chunks",
    "n_devices",
    "_dead",
    "_dead_devices",
    "classes",
    "_claims",
    "given_nodes",
    "_index",
    "_allocated",
    "_holds",
    "_classes_epoch",
    "_epochs",
    "_all_epoch",
    "_counter",
    "_known",
    "_known_names",
)


def derive_allocations(
    parent: Snapshot, added: list[ResourceClaim], removed: list[ResourceClaim]
) -> Snapshot:
    """A version with claims committed or released: the holds of the devices they touch
    are patched, and the nodes those devices are on noted as changed."""
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
    capacity = any(
        kind != EXCLUSIVE for c in (*added, *removed) for _, kind in claim_holds(c, consumable)
    )
    # Shares change capacity left even when no flag flips: their nodes change too.
    names, everywhere = _nodes_of(parent, sorted(touched) if capacity else changed)
    child._bump(names, everywhere)
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
    index = snap._slice_index()
    for pid in pools:
        for s_idx in index.of_pool.get(pid, ()):
            name = snap.table.slices[s_idx].spec.node_name
            if not name:
                return names, True
            names.add(name)
    return names, False


def derive_slices(parent: Snapshot, added: list[ResourceSlice], dead: set[int]) -> Snapshot:
    """A version with slices gone (marked dead) and new ones appended: nodes they target
    see other pools now; new devices get fresh holds.

    The new slices go to the end of the family's store. Slices a sibling appended there
    since this parent was made are not this version's: they are dead to it.
    """
    child = copy_snapshot(parent)
    child._inputs = {}
    gap: range | list[int] = []
    new = range(0)
    if added:  # else the child sees exactly the parent's slices
        store = parent._store
        start, child._n_slices, child._n_chunks, child.n_devices = store.append(added)
        gap = range(parent._n_slices, start)
        new = range(start, child._n_slices)
    newly_dead = [*dead, *gap]
    if newly_dead:
        child._dead = parent._dead.derive()
        for s in newly_dead:
            child._dead[s] = True
        child._dead_devices = parent._dead_devices + parent._count_devices(newly_dead)
    child._index = parent._slice_index().rewritten(child.table.slices, dead, new)
    # Holds: the old devices keep theirs, new devices take what the claims hold of
    # their device IDs (a republished device: what its predecessor held).
    if parent._holds is not None:
        holds = parent._holds.derive(child.n_devices)
        first = child.table.column("s_first")
        for s in new:
            rs = child.table.slices[s]
            held = holds.held_in_pool(rs.spec.driver, rs.spec.pool.name)
            if held:
                base = int(first[s])
                for d, device in enumerate(rs.spec.devices):
                    counts = held.get(device.name)
                    if counts is not None:
                        holds.put(base + d, counts)
        # Dead devices keep their counts: no live view can see them.
        child._holds = holds
    else:
        child._holds = None
    parent_index = parent._slice_index()
    child_index = child._slice_index()
    named_before = {child.table.slices[s].spec.node_name for s in dead}
    if any(
        rs.spec.node_name not in parent_index.on_node for rs in added if rs.spec.node_name
    ) or any(name and name not in child_index.on_node for name in named_before):
        child._known = child._known_names = None  # the nodes named by slices differ
    # Nodes that see a changed pool (in this version or the last) see other pools now.
    touched = [*added, *(child.table.slices[s] for s in dead)]
    pools = {PoolID(rs.spec.driver, rs.spec.pool.name) for rs in touched}
    before, everywhere_before = _nodes_seeing(parent, pools)
    after, everywhere_after = _nodes_seeing(child, pools)
    if everywhere_before or everywhere_after:
        child._bump((), True)
        return child
    child._bump(before | after, False)
    # The cluster layout carries over: those nodes are searched on their own until
    # enough of them have changed to lay the cluster out anew.
    pending = parent._pending_layout()
    if pending is not None:
        child._cluster_from = replace(pending, stale=pending.stale.add(before | after))
    return child
