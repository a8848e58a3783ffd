"""Best-fit device choice for partitionable devices (``--strategy best-fit``).

Upstream takes the first devices in its search order that work. On partitionable
devices (devices consuming shared counters: MIG partitions of a GPU, cores of a
socket) that spreads small pods over free placements in the order the driver
published them, which can strand capacity: a 1g.10gb at memory slice 0 of an H100
blocks every larger profile starting there, while one at slice 6 blocks fewer.

Best fit chooses instead, when upstream's answer uses partitionable devices:

- for a pod that takes one device: among the devices that could serve the request
  alternative upstream chose (its selectors, free, counters left, taints
  tolerated), the one on the counter sets with the least capacity left after it
  (pack the fullest GPU first), then the one that makes the fewest other free
  devices of its pool unusable, then upstream's order;
- for a pod that takes several devices: the counter set with the least capacity
  left among those with a device the pod could use, the allocator choosing within it.

The answer always comes from the allocator: the node is asked again with every
free device outside the candidate taken out of its slices (devices in use stay,
with what they consume), so whatever it answers is an allocation the real node
allows. When no candidate works (a pod spanning counter sets, ``All`` requests,
shared devices), upstream's answer stands.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from draspeed.analysis.node_model import ModelDevice, NodeModel
from draspeed.analysis.requests import AlternativeSpec, SelectorVerdicts, ShapeRequests, eligible
from draspeed.rules.allocated_state import AllocatedState
from draspeed.rules.ids import DeviceID, PoolID
from draspeed.rules.tolerations import taint_blocks

if TYPE_CHECKING:
    from draspeed.analysis.placement import Answer
    from draspeed.api.model import ResourceSlice
    from draspeed.engine.snapshot import Snapshot

TRIES = 8  # restricted asks before upstream's answer is kept


def best_fit(
    snapshot: Snapshot,
    slices: Sequence[ResourceSlice],
    requests: ShapeRequests,
    verdicts: SelectorVerdicts,
    upstream: Answer,
    ask: Callable[[Snapshot], Answer],
) -> Answer:
    """Best fit's answer for a pod on a node (see the module), from upstream's.

    ``slices``: the slices the node sees in ``snapshot``; ``ask(snapshot)`` asks the
    allocator for the pod on the node in another snapshot.
    """
    if not upstream.fits or upstream.results is None:
        return upstream
    entries = [r for res in upstream.results for r in res.devices.results]
    if any(r.share_id is not None for r in entries):
        return upstream
    if any(a.alternative.mode == "All" for a in requests.alternatives):
        return upstream
    allocated = AllocatedState.from_claims(
        snapshot.allocated_claims, consumable_capacity=snapshot.features.consumable_capacity
    )
    node = NodeModel(slices, allocated, partitionable=snapshot.features.partitionable_devices)
    by_id = {d.id: d for d in node.devices}
    taken = [by_id.get(DeviceID(r.driver, r.pool, r.device)) for r in entries]
    if not any(d is not None and d.uses for d in taken):
        return upstream  # no partitionable device: nothing to fit better
    if len(entries) == 1 and len(requests.claims) == 1:
        candidates = _single(node, requests, verdicts, entries[0].request)
    else:
        candidates = _groups(node, requests, verdicts)
    for keep in candidates[:TRIES]:
        answer = ask(_restricted(snapshot, node, keep))
        if answer.fits:
            return answer
    return upstream


def _alternative(requests: ShapeRequests, name: str) -> AlternativeSpec | None:
    for a in requests.alternatives:
        if a.alternative.name == name:
            return a
    return None


def _usable(
    node: NodeModel, verdicts: SelectorVerdicts, spec: AlternativeSpec
) -> list[ModelDevice]:
    """Free devices that could serve ``spec`` now: selectors, counters, taints."""
    table = verdicts.evaluate([(d.id.driver, d.device) for d in node.devices])
    ok = eligible(table, spec)
    tolerations = spec.alternative.tolerations
    return [
        d
        for d, good in zip(node.devices, ok.tolist(), strict=True)
        if good and not d.held and node.fits(d) and not taint_blocks(d.device.taints, tolerations)
    ]


def _single(
    node: NodeModel, requests: ShapeRequests, verdicts: SelectorVerdicts, request: str
) -> list[set[DeviceID]]:
    """One-device pods: candidate devices, best first."""
    spec = _alternative(requests, request)
    if spec is None:
        return []
    usable = _usable(node, verdicts, spec)
    # The free devices some request of the shapes being placed could use: what a
    # choice should leave open (other devices matter to no pod of this run).
    wanted: set[int] = set()
    for shape in verdicts.shapes:
        for other_spec in shape.alternatives:
            wanted.update(d.position for d in _usable(node, verdicts, other_spec))
    free = [node.devices[p] for p in sorted(wanted) if node.devices[p].uses]
    ranked = []
    for d in usable:
        if not d.uses:
            continue
        after = dict(node.remaining)
        for slot, amount in d.uses.items():
            after[slot] = after.get(slot, 0) - amount
        sets = node.sets_of(d)
        pool = d.id.pool_id
        blocked = sum(
            1
            for other in free
            if other is not d and other.id.pool_id == pool and not node.fits(other, after)
        )
        ranked.append(((blocked, node.left_share(sets, after), d.position), {d.id}))
    ranked.sort(key=lambda item: item[0])
    return [keep for _, keep in ranked]


def _groups(
    node: NodeModel, requests: ShapeRequests, verdicts: SelectorVerdicts
) -> list[set[DeviceID]]:
    """Several-device pods: counter sets with a device the pod could use, fullest first."""
    usable: set[int] = set()
    for spec in requests.alternatives:
        usable.update(d.position for d in _usable(node, verdicts, spec))
    members: dict[tuple[PoolID, str], set[DeviceID]] = {}
    for d in node.devices:
        if d.usable and not d.held:
            for group in node.sets_of(d):
                members.setdefault(group, set()).add(d.id)
    ranked = []
    for group, ids in members.items():
        if not any(node.devices[p].id in ids for p in usable):
            continue
        share = node.left_share({group}, node.remaining)
        first = min(node.devices[p].position for p in usable if node.devices[p].id in ids)
        ranked.append(((share, first), ids))
    ranked.sort(key=lambda item: item[0])
    return [ids for _, ids in ranked]


def _restricted(snapshot: Snapshot, node: NodeModel, keep: set[DeviceID]) -> Snapshot:
    """``snapshot`` with every free device of the node's slices but ``keep`` removed
    (devices in use stay, and so does what they consume)."""
    changed: list[ResourceSlice] = []
    by_slice: dict[int, list[ModelDevice]] = {}
    for d in node.devices:
        by_slice.setdefault(id(d.slice), []).append(d)
    for group in by_slice.values():
        rs = group[0].slice
        kept = [d.device for d in group if d.held or d.id in keep]
        if len(kept) != len(rs.spec.devices):
            changed.append(dataclasses.replace(rs, spec=dataclasses.replace(rs.spec, devices=kept)))
    return snapshot.update_slices(added=changed) if changed else snapshot


__all__ = ["TRIES", "best_fit"]
