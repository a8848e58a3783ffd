"""Which pools each node sees, and which nodes are alone with everything they see.

A capacity fill asks the same question on thousands of nodes. A node is
*independent* when every pool it sees is its own: all the pool's slices name that
node (``nodeName``), and no pool published for several nodes (``nodeSelector``,
``allNodes``, per-device node selection, or slices naming different nodes) reaches
it. What the allocator answers on such a node depends on that node's slices and on
what committed claims hold of them, and on nothing else in the cluster: it can be
asked once for every node that publishes the same thing in the same state
(:mod:`draspeed.analysis.kinds`). The other nodes share pools with their
neighbours and are always asked on the real snapshot.

Everything here is read from the published objects (``snapshot.slices``, the Node
objects, the committed claims), as kube-scheduler's gathering reads them; nothing
depends on the engine's internal indexes.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from draspeed.api.model import Node, ResourceClaim, ResourceSlice
from draspeed.rules.ids import PoolID
from draspeed.rules.node_selection import NodeSelectorError, node_matches

if TYPE_CHECKING:
    from draspeed.engine.snapshot import Snapshot


@dataclass(slots=True)
class Pool:
    """One pool's live slices (any generation), and the node it belongs to, if one."""

    id: PoolID
    slices: list[ResourceSlice] = field(default_factory=list)
    # The one node every slice names, or None: the pool is shared (or node-less).
    owner: str | None = None


@dataclass(slots=True)
class NodeHolding:
    """What one committed claim holds of one independent node's pools."""

    claim: ResourceClaim
    results: list[int]  # indices into claim.status.allocation.devices.results


class Inventory:
    """Pools, who sees them, and the committed claims' holdings per independent node.

    ``nodes`` are the nodes asked about (their labels decide what shared pools
    reach them). Usage::

        inv = Inventory(snapshot, nodes)
        inv.independent("node-00003")       # True: searched on its own
        inv.local_pools("node-00003")       # its pools, in the allocator's pool order
        inv.seers(pool_id)                  # names of the nodes that see a pool
    """

    def __init__(self, snapshot: Snapshot, nodes: Sequence[Node]) -> None:
        self.features = snapshot.features
        partitionable = self.features.partitionable_devices
        pools: dict[PoolID, Pool] = {}
        for rs in snapshot.slices:
            spec = rs.spec
            pid = PoolID(spec.driver, spec.pool.name)
            pool = pools.get(pid)
            if pool is None:
                pool = pools[pid] = Pool(pid, owner=spec.node_name or None)
            pool.slices.append(rs)
            if pool.owner is not None and spec.node_name != pool.owner:
                pool.owner = None
        # A slice the allocator would skip (partitionable devices off) cannot be seen.
        self._skipped = (
            set()
            if partitionable
            else {
                id(rs)
                for p in pools.values()
                for rs in p.slices
                if rs.spec.per_device_node_selection is not None or rs.spec.shared_counters
            }
        )
        self.pools = pools
        self._local: dict[str, list[PoolID]] = defaultdict(list)
        shared: list[Pool] = []
        for pool in pools.values():
            if pool.owner is not None:
                self._local[pool.owner].append(pool.id)
            else:
                shared.append(pool)
        for ids in self._local.values():
            ids.sort()  # the allocator's pool order: driver, then pool name
        self._seers: dict[PoolID, set[str]] = {}
        self._sees_shared: set[str] = set()
        for pool in shared:
            seen_by = {node.name for node in nodes if self._reaches(pool, node)}
            self._seers[pool.id] = seen_by
            self._sees_shared |= seen_by
        self._holdings: dict[str, list[NodeHolding]] | None = None
        self._claims = snapshot.allocated_claims

    def _reaches(self, pool: Pool, node: Node) -> bool:
        """Whether any slice of a shared pool is gathered for ``node`` (a broken node
        selector counts as reaching it: the allocator reports it there)."""
        for rs in pool.slices:
            if id(rs) in self._skipped:
                continue
            spec = rs.spec
            try:
                if spec.node_name or spec.all_nodes or spec.node_selector is not None:
                    if node_matches(
                        node, spec.node_name or "", bool(spec.all_nodes), spec.node_selector
                    ):
                        return True
                elif spec.per_device_node_selection and any(
                    node_matches(node, d.node_name or "", bool(d.all_nodes), d.node_selector)
                    for d in spec.devices
                ):
                    return True
            except NodeSelectorError:
                return True
        return False

    # ---------------------------------------------------------------------------- nodes

    def independent(self, node: str) -> bool:
        """Whether every pool ``node`` sees is its own."""
        return node not in self._sees_shared

    def local_pools(self, node: str) -> list[PoolID]:
        """The pools whose every slice names ``node``, in the allocator's order."""
        return self._local.get(node, [])

    def pools_seen(self, node: str) -> list[PoolID]:
        """Every pool ``node`` sees: its own, then the shared ones that reach it."""
        return [
            *self.local_pools(node),
            *(pid for pid, seen_by in self._seers.items() if node in seen_by),
        ]

    def seers(self, pool: PoolID) -> set[str] | None:
        """Names of the nodes (of those asked about) that see a shared pool; None for a
        pool of one node (only that node sees it)."""
        return self._seers.get(pool)

    def nodes_seeing(self, pool: PoolID) -> set[str]:
        """Names of the nodes that see ``pool`` (its owner, or its seers)."""
        found = self.pools.get(pool)
        if found is not None and found.owner is not None:
            return {found.owner}
        return self._seers.get(pool, set())

    def holdings(self, node: str) -> list[NodeHolding]:
        """The committed claims' results on ``node``'s own pools (independent nodes)."""
        if self._holdings is None:
            by_node: dict[str, list[NodeHolding]] = defaultdict(list)
            for claim in self._claims:
                allocation = claim.status.allocation
                if allocation is None:
                    continue
                per_node: dict[str, list[int]] = {}
                for i, r in enumerate(allocation.devices.results):
                    pool = self.pools.get(PoolID(r.driver, r.pool))
                    if pool is not None and pool.owner is not None:
                        per_node.setdefault(pool.owner, []).append(i)
                for owner, indices in per_node.items():
                    by_node[owner].append(NodeHolding(claim, indices))
            self._holdings = dict(by_node)
        return self._holdings.get(node, [])
