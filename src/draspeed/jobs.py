"""Whole jobs over loaded objects: what ``draspeed allocate`` does, callable from Python.

A job takes everything ``kubectl get -o yaml`` would print (slices, classes, nodes,
taint rules, claims) and interprets it the way kube-scheduler would for one pod:
claims that already carry ``status.allocation`` are committed state, the others are
the pod's claims, allocated together in input order.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, Protocol

from draspeed.api.model import AllocationResult, Node, ObjectMeta, ResourceClaim
from draspeed.errors import AllocationError, NodeAllocationError
from draspeed.features import Features

if TYPE_CHECKING:
    from collections.abc import Sequence

    from draspeed.api.loader import Objects
    from draspeed.api.model import DeviceClass, ResourceSlice

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


@dataclass(slots=True)
class AllocateOutcome:
    """What one allocation job decided, in the three shapes upstream can answer."""

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


def make_allocator(
    engine: Engine,
    slices: Sequence[ResourceSlice],
    classes: Sequence[DeviceClass],
    allocated: Sequence[ResourceClaim],
    features: Features,
    nodes: Sequence[Node] = (),
) -> AllocatorLike:
    """Build an allocator of the named engine over one cluster state (``nodes``: the
    Node objects known, whose labels node selectors read)."""
    if engine == "reference":
        # Imported here: the fast path never loads the reference engine.
        from draspeed.reference import ReferenceAllocator

        return ReferenceAllocator(slices, classes, allocated, features)
    if engine == "fast":
        from draspeed.engine.allocator import Allocator
        from draspeed.engine.snapshot import Snapshot

        return Allocator(Snapshot.build(slices, classes, allocated, features=features, nodes=nodes))
    raise ValueError(f"unknown engine {engine!r}; expected one of {', '.join(ENGINES)}")


def find_node(objects: Objects, name: str) -> Node:
    """The Node object of that name, or a node with that name and no labels."""
    for node in objects.nodes:
        if node.name == name:
            return node
    return Node(metadata=ObjectMeta(name=name))


def split_claims(
    claims: Sequence[ResourceClaim],
) -> tuple[list[ResourceClaim], list[ResourceClaim]]:
    """(already allocated, to allocate), both in input order."""
    allocated = [c for c in claims if c.status.allocation is not None]
    pending = [c for c in claims if c.status.allocation is None]
    return allocated, pending


def allocate_objects(
    objects: Objects,
    node_name: str,
    *,
    features: Features | None = None,
    engine: Engine = "fast",
    timeout: float | None = None,
) -> AllocateOutcome:
    """Allocate the pending claims of ``objects`` on one node, as kube-scheduler would.

    Fatal allocation errors are returned in the outcome (``error``), not raised, so a
    batch over many scenarios keeps going; input errors are raised while loading.
    """
    from draspeed.rules.taint_rules import apply_taint_rules

    features = features or Features()
    allocated, pending = split_claims(objects.claims)
    slices = apply_taint_rules(objects.slices, objects.taint_rules, objects.classes)
    outcome = AllocateOutcome(node=node_name, claims=pending, warnings=list(objects.warnings))
    allocator = make_allocator(engine, slices, objects.classes, allocated, features, objects.nodes)
    node = find_node(objects, node_name)
    start = time.monotonic()
    deadline = None if timeout is None else start + timeout
    try:
        outcome.results = allocator.allocate(pending, node, deadline=deadline)
    except NodeAllocationError as exc:
        outcome.error, outcome.error_is_node_local = str(exc), True
    except AllocationError as exc:
        outcome.error = str(exc)
    outcome.seconds = time.monotonic() - start
    outcome.work = allocator.last_stats.num_allocate_one_invocations
    return outcome
