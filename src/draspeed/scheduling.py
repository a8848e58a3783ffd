"""On which nodes claims fit: for a set of pending claims, and for a pod.

:func:`feasibility` asks either engine about every node (the fast engine in one pass,
the reference engine node by node). :func:`pod_feasibility` does what kube-scheduler's
DynamicResources plugin does for a pod on each node: the reasons a node is out before
any allocation (:meth:`draspeed.pods.PodClaims.for_node`), then the allocation of the
pod's pending claims and, where the node needs one, its extended-resource claim.
Nodes that need the same claims are asked together.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from draspeed import arguments
from draspeed.cluster import check_engine
from draspeed.engine.feasibility import Feasibility, NodeOutcome
from draspeed.errors import AllocationError, AllocationTimeout, NodeAllocationError

if TYPE_CHECKING:
    from draspeed.api.model import Node, ResourceClaim
    from draspeed.cluster import Cluster, Engine
    from draspeed.engine.feasibility import Status
    from draspeed.pods import PodClaims, RequestMapping

Progress = Callable[[int], None]


def feasibility(
    cluster: Cluster,
    nodes: Sequence[Node],
    claims: Sequence[ResourceClaim],
    *,
    engine: Engine = "fast",
    timeout: float | None = None,
    deadline: float | None = None,
    progress: Progress | None = None,
) -> Feasibility:
    """``Allocator.feasible_nodes`` for the fast engine (one pass over the nodes); the
    reference engine is asked node by node (``progress(1)`` after each)."""
    check_engine(engine)
    timeout = arguments.timeout(timeout)
    deadline = arguments.deadline(deadline)
    if deadline is None and timeout is not None:
        deadline = time.monotonic() + timeout
    if engine == "reference":
        return Feasibility.from_outcomes(
            _reference_outcomes(cluster, nodes, claims, deadline, progress)
        )
    from draspeed.engine.allocator import Allocator

    allocator = Allocator(cluster.snapshot())
    return allocator.feasible_nodes(list(claims), list(nodes), deadline=deadline)


def _reference_outcomes(
    cluster: Cluster,
    nodes: Sequence[Node],
    claims: Sequence[ResourceClaim],
    deadline: float | None,
    progress: Progress | None,
) -> list[NodeOutcome]:
    allocator = cluster.allocator("reference")
    outcomes = []
    for node in nodes:
        try:
            results = allocator.allocate(claims, node, deadline=deadline)
        except AllocationTimeout as exc:
            outcomes.append(NodeOutcome(node.name, "timeout", str(exc)))
        except AllocationError as exc:
            status: Status = "node-error" if isinstance(exc, NodeAllocationError) else "error"
            work = allocator.last_stats.search_steps
            outcomes.append(NodeOutcome(node.name, status, str(exc), work))
        else:
            work = allocator.last_stats.search_steps
            if results is None:
                outcomes.append(NodeOutcome(node.name, "does-not-fit", None, work))
            else:
                outcomes.append(NodeOutcome(node.name, "fits", None, work, results))
        if progress is not None:
            progress(1)
    return outcomes


@dataclass
class PodFeasibility:
    """Per node, whether a pod's claims fit (:func:`pod_feasibility`).

    ``feasibility`` has one outcome per node; a node ruled out before allocating is
    ``does-not-fit`` with the scheduler's reason as its ``error``. ``claims[node]``
    are the claims that node's results belong to (the pending claims, then the
    extended-resource claim where the node needs one), ``mappings[node]`` which
    request of that claim serves which container.
    """

    pod: PodClaims
    feasibility: Feasibility
    claims: dict[str, tuple[ResourceClaim, ...]]
    mappings: dict[str, tuple[RequestMapping, ...]]

    @property
    def feasible(self) -> list[str]:
        return self.feasibility.feasible

    def __iter__(self) -> Any:
        return iter(self.feasibility)

    def __len__(self) -> int:
        return len(self.feasibility)

    def to_dict(self, *, with_results: bool = True) -> dict[str, Any]:
        """JSON-ready: the pod, its claims, and per node the outcome with the claims
        allocated there."""
        doc = self.feasibility.to_dict(with_results=with_results)
        for entry in doc["nodes"]:
            node = entry["node"]
            entry["claims"] = [c.key for c in self.claims.get(node, ())]
            maps = self.mappings.get(node)
            if maps:
                entry["requestMappings"] = [m.to_dict() for m in maps]
        pod = self.pod
        return {
            "pod": pod.pod.key,
            "claims": [c.key for c in pod.claims],
            "made": [c.key for c in pod.made],
            "extendedResources": dict(pod.extended),
            **doc,
        }


def pod_feasibility(
    cluster: Cluster,
    pod: PodClaims,
    nodes: Sequence[Node],
    *,
    engine: Engine = "fast",
    timeout: float | None = None,
    progress: Progress | None = None,
) -> PodFeasibility:
    """What the DynamicResources plugin's Filter answers for ``pod`` on each node."""
    check_engine(engine)
    timeout = arguments.timeout(timeout)
    deadline = None if timeout is None else time.monotonic() + timeout
    outcomes: list[NodeOutcome | None] = [None] * len(nodes)
    claims: dict[str, tuple[ResourceClaim, ...]] = {}
    mappings: dict[str, tuple[RequestMapping, ...]] = {}
    groups: dict[tuple[int, ...], list[int]] = {}
    asked: dict[tuple[int, ...], tuple[ResourceClaim, ...]] = {}
    for i, node in enumerate(nodes):
        on_node = pod.for_node(node)
        claims[node.name] = on_node.claims
        if on_node.mappings:
            mappings[node.name] = on_node.mappings
        if on_node.reason is not None:
            outcomes[i] = NodeOutcome(node.name, "does-not-fit", on_node.reason)
            if progress is not None and engine == "reference":
                progress(1)
            continue
        key = tuple(id(c) for c in on_node.claims)
        groups.setdefault(key, []).append(i)
        asked[key] = on_node.claims
    for key, members in groups.items():
        found = feasibility(
            cluster,
            [nodes[i] for i in members],
            asked[key],
            engine=engine,
            deadline=deadline,
            progress=progress,
        )
        for i, outcome in zip(members, found, strict=True):
            outcomes[i] = outcome
    done = [o for o in outcomes if o is not None]
    assert len(done) == len(nodes)
    return PodFeasibility(pod, Feasibility.from_outcomes(done), claims, mappings)
