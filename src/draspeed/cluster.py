"""A cluster as kube-scheduler sees it: the one way from loaded objects to an allocator.

A dump (``kubectl get resourceslices,deviceclasses,resourceclaims,nodes,... -o yaml``)
holds more than an allocator takes. The scheduler reads it like this, and so does
every command and helper of draspeed:

- DeviceTaintRules are applied to the slices first (the scheduler's slice tracker
  patches every matching device's taints before the allocator sees it);
- claims that already carry ``status.allocation`` are in use: committed state;
- the other claims are the pod's claims, allocated together in input order;
- Node objects are known with their labels; nodes named only by slices are known
  too, without labels.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, Protocol

from draspeed.api.model import (
    AllocationResult,
    DeviceClass,
    Node,
    ObjectMeta,
    ResourceClaim,
    ResourceSlice,
)
from draspeed.errors import AllocationError, NodeAllocationError
from draspeed.features import Features

if TYPE_CHECKING:
    from draspeed.api.loader import Objects
    from draspeed.engine.snapshot import Snapshot

Engine = Literal["fast", "reference"]
ENGINES: tuple[Engine, ...] = ("fast", "reference")


class StatsLike(Protocol):
    @property
    def num_allocate_one_invocations(self) -> int:
        """Search steps, counted as upstream counts its allocateOne calls."""
        ...


class AllocatorLike(Protocol):
    """What both engines offer: upstream's ``Allocate`` contract."""

    def allocate(
        self, claims: Sequence[ResourceClaim], node: Node, *, deadline: float | None = None
    ) -> list[AllocationResult] | None: ...

    @property
    def last_stats(self) -> StatsLike:
        """Counters of the last call."""
        ...


def split_claims(
    claims: Sequence[ResourceClaim],
) -> tuple[list[ResourceClaim], list[ResourceClaim]]:
    """(in use: with ``status.allocation``, pending: without), both in input order."""
    allocated = [c for c in claims if c.status.allocation is not None]
    pending = [c for c in claims if c.status.allocation is None]
    return allocated, pending


def make_allocator(
    engine: Engine,
    slices: Sequence[ResourceSlice],
    classes: Sequence[DeviceClass],
    allocated: Sequence[ResourceClaim],
    features: Features,
    nodes: Sequence[Node] = (),
) -> AllocatorLike:
    """An allocator of the named engine over one cluster state (``nodes``: the Node
    objects known, whose labels node selectors read)."""
    if engine == "reference":
        # Imported here: the fast path never loads the reference engine.
        from draspeed.reference import ReferenceAllocator

        return ReferenceAllocator(slices, classes, allocated, features)
    if engine == "fast":
        from draspeed.engine.allocator import Allocator
        from draspeed.engine.snapshot import Snapshot

        return Allocator(Snapshot.build(slices, classes, allocated, features=features, nodes=nodes))
    raise ValueError(f"unknown engine {engine!r}; expected one of {', '.join(ENGINES)}")


@dataclass(slots=True)
class AllocateOutcome:
    """What one allocation on one node decided, in the three shapes upstream can answer."""

    node: str
    claims: list[ResourceClaim]
    results: list[AllocationResult] | None = None  # None: does not fit (or error)
    error: str | None = None
    error_is_node_local: bool = False  # upstream's ErrFailedAllocationOnNode
    work: int = 0
    seconds: float = 0.0
    warnings: list[str] = field(default_factory=list)

    @property
    def fits(self) -> bool:
        return self.results is not None


@dataclass(slots=True)
class Cluster:
    """The cluster state of a dump and the pod's claims, as the scheduler reads them.

    Build it with :meth:`from_objects`; then :meth:`snapshot` is the fast engine's
    state, :meth:`allocator` either engine, :meth:`node` a node by name.
    """

    slices: list[ResourceSlice]  # DeviceTaintRules applied
    classes: list[DeviceClass]
    allocated: list[ResourceClaim]  # in use (committed state)
    pending: list[ResourceClaim]  # the pod's claims, in input order
    nodes: list[Node]  # the Node objects given
    features: Features = field(default_factory=Features)
    warnings: list[str] = field(default_factory=list)

    @classmethod
    def from_objects(
        cls,
        objects: Objects,
        *,
        features: Features | None = None,
        claims: Objects | None = None,
    ) -> Cluster:
        """The cluster of ``objects``; the pod's claims are its pending claims, or,
        with ``claims``, the pending claims of ``claims`` (whose allocated claims join
        the committed state)."""
        from draspeed.rules.taint_rules import apply_taint_rules

        features = features or Features()
        allocated, pending = split_claims(objects.claims)
        warnings = list(objects.warnings)
        if claims is not None:
            more_allocated, pending = split_claims(claims.claims)
            allocated = allocated + more_allocated
            warnings.extend(claims.warnings)
        slices = apply_taint_rules(
            objects.slices,
            objects.taint_rules,
            objects.classes,
            list_type_attributes=features.list_type_attributes,
            consumable_capacity=features.consumable_capacity,
        )
        return cls(
            slices,
            list(objects.classes),
            allocated,
            pending,
            list(objects.nodes),
            features,
            warnings,
        )

    def node(self, name: str) -> Node:
        """The Node object of that name, or a node with that name and no labels."""
        for node in self.nodes:
            if node.name == name:
                return node
        return Node(metadata=ObjectMeta(name=name))

    def known_nodes(self) -> list[Node]:
        """The Node objects given, then the nodes named by slices (sorted by name)."""
        given = {n.name for n in self.nodes}
        named = sorted({s.spec.node_name for s in self.slices if s.spec.node_name} - given)
        return [*self.nodes, *(Node(metadata=ObjectMeta(name=n)) for n in named)]

    def snapshot(self) -> Snapshot:
        """The fast engine's state of this cluster (committed claims hold their devices)."""
        from draspeed.engine.snapshot import Snapshot

        return Snapshot.build(
            self.slices, self.classes, self.allocated, features=self.features, nodes=self.nodes
        )

    def allocator(self, engine: Engine = "fast") -> AllocatorLike:
        """An allocator of the named engine over this cluster state."""
        return make_allocator(
            engine, self.slices, self.classes, self.allocated, self.features, self.nodes
        )

    def allocate(
        self, node: str | Node, *, engine: Engine = "fast", timeout: float | None = None
    ) -> AllocateOutcome:
        """The pending claims allocated together on one node (``draspeed allocate``).

        Fatal allocation errors are returned in the outcome (``error``), not raised, so
        a batch over many clusters keeps going.
        """
        target = self.node(node) if isinstance(node, str) else node
        outcome = AllocateOutcome(target.name, self.pending, warnings=list(self.warnings))
        allocator = self.allocator(engine)
        start = time.monotonic()
        deadline = None if timeout is None else start + timeout
        try:
            outcome.results = allocator.allocate(self.pending, target, deadline=deadline)
        except NodeAllocationError as exc:
            outcome.error, outcome.error_is_node_local = str(exc), True
        except AllocationError as exc:
            outcome.error = str(exc)
        outcome.seconds = time.monotonic() - start
        outcome.work = allocator.last_stats.num_allocate_one_invocations
        return outcome
