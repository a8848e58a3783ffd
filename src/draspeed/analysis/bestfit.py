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
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from draspeed.analysis.node_model import ModelDevice, NodeModel, Published
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
    published: Published,
    requests: ShapeRequests,
    verdicts: SelectorVerdicts,
    upstream: Answer,
    ask: Callable[[Snapshot], Answer],
) -> Answer:
    """Best fit's answer for a pod on a node (see the module), from upstream's.

    ``published``: what the node sees in ``snapshot`` (:class:`Published`);
    ``ask(snapshot)`` asks the allocator for the pod on the node in another snapshot.
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
    node = NodeModel(published, allocated)
    by_id = {d.id: d for d in node.devices}
    taken = [by_id.get(DeviceID(r.driver, r.pool, r.device)) for r in entries]
    if not any(d is not None and d.uses for d in taken):
        return upstream  # no partitionable device: nothing to fit better
    choice = _Choice(node, verdicts)
    if len(entries) == 1 and len(requests.claims) == 1:
        candidates = choice.single(requests, entries[0].request)
    else:
        candidates = choice.groups(requests)
    for keep in candidates[:TRIES]:
        answer = ask(_restricted(snapshot, node, keep))
        if answer.fits:
            return answer
    return upstream


class _Choice:
    """Ranks a node's devices (or counter sets) for a pod, best fit first."""

    def __init__(self, node: NodeModel, verdicts: SelectorVerdicts) -> None:
        self.node = node
        self.verdicts = verdicts
        devices = node.devices
        self.table = verdicts.evaluate([(d.id.driver, d.device) for d in devices])
        # Free now: usable, not held, counters left for it.
        self.free = node.published.usable & ~node.held & node.fitting()
        self.tainted = [p for p, d in enumerate(devices) if d.device.taints]

    def usable(self, spec: AlternativeSpec) -> np.ndarray:
        """Devices that could serve ``spec`` now: selectors, free, taints tolerated."""
        ok = eligible(self.table, spec) & self.free
        tolerations = spec.alternative.tolerations
        for p in self.tainted:
            if ok[p] and taint_blocks(self.node.devices[p].device.taints, tolerations):
                ok[p] = False
        return ok

    def single(self, requests: ShapeRequests, request: str) -> list[set[DeviceID]]:
        """One-device pods: candidate devices, best first: fewest devices the run's
        pods could use made unusable, then the least capacity left in its counter
        sets, then upstream's order."""
        spec = next((a for a in requests.alternatives if a.alternative.name == request), None)
        if spec is None:
            return []
        node, published = self.node, self.node.published
        consumes = published.consumes
        # The free devices some request of the shapes being placed could use: what a
        # choice should leave open (other devices matter to no pod of this run).
        wanted = np.zeros(len(node.devices), dtype=bool)
        for shape in self.verdicts.shapes:
            for other in shape.alternatives:
                wanted |= self.usable(other)
        others = np.flatnonzero(wanted & consumes)
        matrix, left = published.matrix, node.remaining_vector
        ranked = []
        for p in np.flatnonzero(self.usable(spec) & consumes).tolist():
            after = left - matrix[p]
            blocked = (matrix[others] > after).any(axis=1)
            count = int(blocked.sum()) - int(bool(wanted[p] and blocked[others == p].any()))
            ranked.append(((count, node.left_share(p, after), p), {node.devices[p].id}))
        ranked.sort(key=lambda item: item[0])
        return [keep for _, keep in ranked]

    def groups(self, requests: ShapeRequests) -> list[set[DeviceID]]:
        """Several-device pods: counter sets with a device the pod could use, the one
        with the least capacity left first."""
        node = self.node
        usable = np.zeros(len(node.devices), dtype=bool)
        for spec in requests.alternatives:
            usable |= self.usable(spec)
        members: dict[tuple[PoolID, str], set[int]] = {}
        for d in node.devices:
            if d.usable and not d.held:
                for slot in d.uses:
                    members.setdefault((slot[0], slot[1]), set()).add(d.position)
        ranked = []
        left = node.remaining_vector
        for positions in members.values():
            first = min((p for p in positions if usable[p]), default=None)
            if first is None:
                continue
            ranked.append(
                ((node.left_share(first, left), first), {node.devices[p].id for p in positions})
            )
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
