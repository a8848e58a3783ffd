"""A cluster as kube-scheduler sees it: the one way from loaded objects to an allocator.

A dump (``kubectl get resourceslices,deviceclasses,resourceclaims,nodes,... -o yaml``)
holds more than an allocator takes. The scheduler reads it like this, and so does
every command and helper of draspeed:

- DeviceTaintRules are applied to the slices first (the scheduler's slice tracker
  patches every matching device's taints before the allocator sees it);
- claims that already carry ``status.allocation`` are in use: committed state;
- the other claims are the pod's claims, allocated together in input order; a
  ResourceClaimTemplate among the pod's claims (``claims=``) stands for the claim
  kube-controller-manager would make of it (:func:`draspeed.pods.instantiate_alone`);
- or, for a Pod of the input (:meth:`Cluster.pod`), its own claims: claims by name,
  claims made from its templates, and the claim for extended resources backed by a
  DeviceClass (:mod:`draspeed.pods`);
- Node objects are known with their labels; nodes named only by slices are known
  too, without labels. Any other node name is unknown (an input error).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, Protocol

from draspeed import arguments
from draspeed.api.coerce import ClaimsInput, NodeInput, as_node
from draspeed.api.model import (
    AllocationResult,
    DeviceClass,
    Node,
    ObjectMeta,
    Pod,
    ResourceClaim,
    ResourceClaimTemplate,
    ResourceSlice,
)
from draspeed.errors import AllocationError, InputError, NodeAllocationError
from draspeed.features import Features

if TYPE_CHECKING:
    from draspeed.api.loader import Objects
    from draspeed.engine.feasibility import Feasibility
    from draspeed.engine.snapshot import Snapshot
    from draspeed.pods import PodClaims
    from draspeed.scheduling import PodFeasibility

Engine = Literal["fast", "reference"]
ENGINES: tuple[Engine, ...] = ("fast", "reference")


class StatsLike(Protocol):
    @property
    def search_steps(self) -> int:
        """Search steps of the last call: upstream's ``NumAllocateOneInvocations`` for
        the reference engine; never more than that for the fast one (it prunes)."""
        ...


class AllocatorLike(Protocol):
    """What both engines offer: upstream's ``Allocate`` contract."""

    def allocate(
        self, claims: ClaimsInput, node: NodeInput, *, deadline: float | None = None
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
    check_engine(engine)
    if engine == "reference":
        # Imported here: the fast path never loads the reference engine.
        from draspeed.reference import ReferenceAllocator

        return ReferenceAllocator(slices, classes, allocated, features)
    from draspeed.engine.allocator import Allocator
    from draspeed.engine.snapshot import Snapshot

    return Allocator(Snapshot.build(slices, classes, allocated, features=features, nodes=nodes))


def check_engine(engine: object) -> None:
    """A ValueError for a name that is not one of :data:`ENGINES`."""
    if engine not in ENGINES:
        raise ValueError(f"unknown engine {engine!r}; expected one of {', '.join(ENGINES)}")


_POD = "a Pod or its namespace/name"


@dataclass(slots=True)
class AllocateOutcome:
    """What one allocation on one node decided, in the three shapes upstream can answer."""

    node: str
    claims: list[ResourceClaim]
    results: list[AllocationResult] | None = None  # None: does not fit (or error)
    error: str | None = None
    error_is_node_local: bool = False  # upstream's ErrFailedAllocationOnNode
    reason: str | None = None  # why the pod does not fit before allocating (scheduler)
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
    state, :meth:`allocator` either engine, :meth:`node` a node by name,
    :meth:`pod` a pod's claims, :meth:`feasible_nodes` and :meth:`allocate` the
    answers for the pending claims or for a pod.
    """

    slices: list[ResourceSlice]  # DeviceTaintRules applied
    classes: list[DeviceClass]
    allocated: list[ResourceClaim]  # in use (committed state)
    pending: list[ResourceClaim]  # the pod's claims, in input order
    nodes: list[Node]  # the Node objects given
    features: Features = field(default_factory=Features)
    warnings: list[str] = field(default_factory=list)
    claims: list[ResourceClaim] = field(default_factory=list)  # every claim of the input
    templates: list[ResourceClaimTemplate] = field(default_factory=list)
    pods: list[Pod] = field(default_factory=list)

    @classmethod
    def from_objects(
        cls,
        objects: Objects,
        *,
        features: Features | None = None,
        claims: Objects | None = None,
    ) -> Cluster:
        """The cluster of ``objects``; the pod's claims are its pending claims, or,
        with ``claims``, the pending claims of ``claims`` and a claim made from each of
        its ResourceClaimTemplates (its allocated claims join the committed state)."""
        from draspeed.api.loader import Objects
        from draspeed.pods import instantiate_alone
        from draspeed.rules.taint_rules import apply_taint_rules

        arguments.instance_of(objects, Objects, "objects", "Objects (what draspeed.load returns)")
        if claims is not None:
            arguments.instance_of(claims, Objects, "claims", "Objects (what draspeed.load returns)")
        if features is not None:
            arguments.instance_of(features, Features, "features", "Features")
        features = features or Features()
        allocated, pending = split_claims(objects.claims)
        warnings = list(objects.warnings)
        if claims is not None:
            more_allocated, pending = split_claims(claims.claims)
            allocated = allocated + more_allocated
            pending.extend(instantiate_alone(t) for t in claims.templates)
            warnings.extend(w for w in claims.warnings if w not in warnings)
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
            claims=list(objects.claims) + (list(claims.claims) if claims is not None else []),
            templates=list(objects.templates),
            pods=list(objects.pods),
        )

    def node(self, name: str) -> Node:
        """The Node object of that name, or a node with that name and no labels."""
        arguments.text(name, "name", "a node name")
        for node in self.nodes:
            if node.name == name:
                return node
        return Node(metadata=ObjectMeta(name=name))

    def known_node(self, name: str) -> Node:
        """The node of that name among :meth:`known_nodes`; InputError if unknown."""
        arguments.text(name, "name", "a node name")
        for node in self.known_nodes():
            if node.name == name:
                return node
        known = [n.name for n in self.known_nodes()]
        listed = ", ".join(known[:10]) + (", ..." if len(known) > 10 else "")
        raise InputError(
            f'node "{name}"',
            "",
            "not found: no Node object of that name and no ResourceSlice names it "
            f"(known nodes: {listed or 'none'})",
        )

    def known_nodes(self) -> list[Node]:
        """The Node objects given, then the nodes named by slices (sorted by name)."""
        given = {n.name for n in self.nodes}
        named = sorted({s.spec.node_name for s in self.slices if s.spec.node_name} - given)
        return [*self.nodes, *(Node(metadata=ObjectMeta(name=n)) for n in named)]

    def pod(self, pod: str | Pod) -> PodClaims:
        """The claims of a pod (``namespace/name`` of a Pod of the input, or a Pod):
        its claims by name, claims made from its templates where the input has none
        yet, and what it asks for as extended resources (:mod:`draspeed.pods`)."""
        from draspeed.pods import pod_claims

        if not isinstance(pod, (str, Pod)):
            raise TypeError(f"pod: expected {_POD}, got {arguments.type_name(pod)}")
        found = self.find_pod(pod) if isinstance(pod, str) else pod
        return pod_claims(found, self.claims, self.templates, self.classes, self.features)

    def find_pod(self, key: str) -> Pod:
        """The Pod ``namespace/name`` (``name`` alone: in namespace ``default``)."""
        arguments.text(key, "key", "a pod's namespace/name")
        namespace, _, name = key.rpartition("/")
        namespace = namespace or "default"
        for pod in self.pods:
            if pod.metadata.name == name and pod.metadata.namespace == namespace:
                return pod
        raise InputError(f'pod "{namespace}/{name}"', "", "not found in the input")

    def snapshot(self, *, copy: bool = False) -> Snapshot:
        """The fast engine's state of this cluster (committed claims hold their devices).

        It takes this cluster's objects over; ``copy=True`` gives it copies instead, for
        callers that go on changing those objects (see :meth:`Snapshot.build`)."""
        from draspeed.engine.snapshot import Snapshot

        return Snapshot.build(
            self.slices,
            self.classes,
            self.allocated,
            features=self.features,
            nodes=self.nodes,
            copy=copy,
        )

    def allocator(self, engine: Engine = "fast") -> AllocatorLike:
        """An allocator of the named engine over this cluster state."""
        return make_allocator(
            engine, self.slices, self.classes, self.allocated, self.features, self.nodes
        )

    def feasible_nodes(
        self,
        nodes: Sequence[Node | str] | None = None,
        *,
        engine: Engine = "fast",
        timeout: float | None = None,
    ) -> Feasibility:
        """On which nodes (default: :meth:`known_nodes`) the pending claims fit, and
        with which devices (``draspeed feasible``)."""
        from draspeed.scheduling import feasibility

        return feasibility(self, self._nodes(nodes), self.pending, engine=engine, timeout=timeout)

    def pod_feasibility(
        self,
        pod: str | Pod | PodClaims,
        nodes: Sequence[Node | str] | None = None,
        *,
        engine: Engine = "fast",
        timeout: float | None = None,
    ) -> PodFeasibility:
        """On which nodes a pod fits as far as its claims go (``draspeed feasible
        --pod``): per node, the scheduler's reason or the allocation of its claims."""
        from draspeed.pods import PodClaims
        from draspeed.scheduling import pod_feasibility

        claims = pod if isinstance(pod, PodClaims) else self._pod(pod)
        return pod_feasibility(self, claims, self._nodes(nodes), engine=engine, timeout=timeout)

    def allocate(
        self,
        node: str | Node,
        *,
        pod: str | Pod | PodClaims | None = None,
        engine: Engine = "fast",
        timeout: float | None = None,
    ) -> AllocateOutcome:
        """The pending claims (or ``pod``'s claims) allocated together on one node
        (``draspeed allocate``).

        Fatal allocation errors are returned in the outcome (``error``), not raised, so
        a batch over many clusters keeps going. ``timeout`` (seconds; None or 0: no
        bound) bounds the search as kube-scheduler's Filter timeout does.
        """
        from draspeed.pods import PodClaims

        check_engine(engine)
        timeout = arguments.timeout(timeout)
        target = self.node(node) if isinstance(node, str) else as_node(node)
        claims: Sequence[ResourceClaim] = self.pending
        reason = None
        if pod is not None:
            found = pod if isinstance(pod, PodClaims) else self._pod(pod)
            on_node = found.for_node(target)
            claims, reason = list(on_node.claims), on_node.reason
        outcome = AllocateOutcome(target.name, list(claims), warnings=list(self.warnings))
        if reason is not None:
            outcome.reason = reason
            return outcome
        allocator = self.allocator(engine)
        start = time.monotonic()
        deadline = None if timeout is None else start + timeout
        try:
            outcome.results = allocator.allocate(claims, target, deadline=deadline)
        except NodeAllocationError as exc:
            outcome.error, outcome.error_is_node_local = str(exc), True
        except AllocationError as exc:
            outcome.error = str(exc)
        outcome.seconds = time.monotonic() - start
        outcome.work = allocator.last_stats.search_steps
        return outcome

    def _pod(self, pod: str | Pod) -> PodClaims:
        """:meth:`pod`, told a PodClaims is welcome too (pod_feasibility, allocate)."""
        if not isinstance(pod, (str, Pod)):
            what = f"{_POD}, or its PodClaims"
            raise TypeError(f"pod: expected {what}, got {arguments.type_name(pod)}")
        return self.pod(pod)

    def _nodes(self, nodes: Sequence[Node | str] | Node | str | None) -> list[Node]:
        if nodes is None:
            return self.known_nodes()
        # (One name alone is one node, not a sequence of characters.)
        listed = arguments.names_or_items(nodes, Node, "nodes", "Nodes")
        return [self.node(n) if isinstance(n, str) else n for n in listed]
