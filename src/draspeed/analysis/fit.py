"""``fit``: place as many pods of the given shapes as fit, with the real allocator.

Every placement is one :meth:`Allocator.allocate` call on one node, and every
success is committed with :meth:`Snapshot.add_allocated` before the next pod is
tried, exactly as a scheduler binding pods one at a time would see the cluster.

Strategies (node order: the ``nodes`` given, else ``snapshot.nodes``):

- ``first-fit``: each pod goes to the first node, in node order, where it fits
  (nodes fill up one after the other: packing);
- ``round-robin``: each pod of a shape goes to the next node after the one its
  previous pod went to, wrapping around (spreading).

A mix of shapes is tried in a deterministic weighted order (``ratios``, see
:class:`~draspeed.analysis.shapes.ShapeOrder`); a shape that fits nowhere drops
out and the others go on (or the run stops, with ``stop_at_first_exhausted``).

Because allocations only grow during a run, a shape that did not fit on a node
never fits there later: each shape keeps a cursor and never asks a node twice
after a failure, so a run costs (pods placed + nodes × shapes) allocate calls.
The first failure on each node is explained (:func:`draspeed.explain.explain`).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from draspeed.analysis.accounting import Accounting, NodeUsage
from draspeed.analysis.shapes import (
    PodShape,
    ShapeOrder,
    ShapeSource,
    as_shapes,
    normalise_ratios,
)
from draspeed.api.model import AllocationResult, Node, ObjectMeta, ResourceClaim
from draspeed.engine.allocator import Allocator
from draspeed.errors import AllocationError, AllocationTimeout, NodeAllocationError

if TYPE_CHECKING:
    from draspeed.engine.snapshot import Snapshot

Strategy = Literal["first-fit", "round-robin"]
STRATEGIES: tuple[Strategy, ...] = ("first-fit", "round-robin")
FailureStatus = Literal["does-not-fit", "error", "node-error", "timeout"]

# progress(placed, nodes_done, nodes_total): nodes_done counts nodes no shape can use.
Progress = Callable[[int, int, int], None]


@dataclass(slots=True)
class Placement:
    """One pod placed: its number (placement order), shape, node and devices."""

    pod: int
    shape: str
    node: str
    devices: list[str]  # driver/pool/device


@dataclass(slots=True)
class Failure:
    """Why a shape stopped fitting on a node (the first failure there)."""

    shape: str
    status: FailureStatus
    reason: str | None  # explain()'s summary, or the allocator's error text

    def to_dict(self) -> dict[str, Any]:
        return {"shape": self.shape, "status": self.status, "reason": self.reason}


@dataclass
class NodeFit:
    """One node after the run: pods placed there, devices and counters in use."""

    node: str
    pods: dict[str, int]
    devices_placed: int
    usage: NodeUsage
    first_failure: Failure | None = None

    @property
    def total_pods(self) -> int:
        return sum(self.pods.values())

    def to_dict(self) -> dict[str, Any]:
        return {
            "node": self.node,
            "pods": dict(self.pods),
            "devicesPlaced": self.devices_placed,
            **self.usage.to_dict(),
            "firstFailure": None if self.first_failure is None else self.first_failure.to_dict(),
        }


@dataclass
class FitReport:
    """What :func:`fit` placed, where, and what blocked the rest."""

    strategy: Strategy
    shapes: list[str]
    ratios: list[float]
    placed: int
    placed_by_shape: dict[str, int]
    stopped: str  # "full", "max-pods" or "first-exhausted"
    nodes: list[NodeFit]
    cluster: NodeUsage
    placements: list[Placement]
    work: int  # search steps summed over every allocate call
    calls: int  # allocate calls
    seconds: float
    # The final state (every placement committed); not pickled, not compared.
    snapshot: Snapshot | None = field(default=None, repr=False, compare=False)

    def node(self, name: str) -> NodeFit:
        for n in self.nodes:
            if n.node == name:
                return n
        raise KeyError(name)

    def without_snapshot(self) -> FitReport:
        """The same report without the final snapshot (for sending between processes)."""
        return dataclasses.replace(self, snapshot=None)

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["snapshot"] = None
        return state

    def to_dict(self, *, placements: bool = False) -> dict[str, Any]:
        out: dict[str, Any] = {
            "strategy": self.strategy,
            "shapes": list(self.shapes),
            "ratios": dict(zip(self.shapes, self.ratios, strict=True)),
            "placed": self.placed,
            "placedByShape": dict(self.placed_by_shape),
            "stopped": self.stopped,
            "calls": self.calls,
            "work": self.work,
            "seconds": round(self.seconds, 6),
            "cluster": self.cluster.to_dict(),
            "nodes": [n.to_dict() for n in self.nodes],
        }
        if placements:
            out["placements"] = [dataclasses.asdict(p) for p in self.placements]
        return out


def resolve_nodes(snapshot: Snapshot, nodes: Sequence[Node | str] | None) -> list[Node]:
    """Node objects in the order given (names looked up among the snapshot's nodes;
    an unknown name is an unlabelled node), or the snapshot's nodes."""
    known = snapshot.nodes
    if nodes is None:
        return known
    by_name = {n.name: n for n in known}
    return [
        n if isinstance(n, Node) else by_name.get(n) or Node(metadata=ObjectMeta(name=n))
        for n in nodes
    ]


def fit(
    snapshot: Snapshot,
    templates: ShapeSource | Sequence[ShapeSource],
    strategy: Strategy = "first-fit",
    ratios: Mapping[str, float] | Sequence[float] | None = None,
    nodes: Sequence[Node | str] | None = None,
    max_pods: int | None = None,
    *,
    explain_failures: bool = True,
    stop_at_first_exhausted: bool = False,
    timeout: float | None = None,
    progress: Progress | None = None,
) -> FitReport:
    """Place pods of ``templates`` (ResourceClaimTemplates, claims or :class:`PodShape`
    objects, each a shape) until none fits or ``max_pods`` are placed.

    ``timeout`` bounds each allocate call (seconds); a call that runs out counts as a
    failure on that node. ``snapshot`` is not changed: the final state is
    ``report.snapshot``.
    """
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown strategy {strategy!r}; expected one of {', '.join(STRATEGIES)}")
    if max_pods is not None and max_pods < 0:
        raise ValueError(f"max_pods must be >= 0, got {max_pods}")
    shapes = as_shapes(templates)
    weights = normalise_ratios(shapes, ratios)
    run = _Run(
        snapshot,
        shapes,
        resolve_nodes(snapshot, nodes),
        strategy,
        explain_failures,
        timeout,
        progress,
    )
    return run.go(weights, max_pods, stop_at_first_exhausted)


class _Run:
    """The state of one fit: current snapshot, per-shape cursors, tallies."""

    def __init__(
        self,
        snapshot: Snapshot,
        shapes: list[PodShape],
        nodes: list[Node],
        strategy: Strategy,
        explain_failures: bool,
        timeout: float | None,
        progress: Progress | None,
    ) -> None:
        self.snap = snapshot
        self.shapes = shapes
        self.nodes = nodes
        self.strategy = strategy
        self.explain_failures = explain_failures
        self.timeout = timeout
        self.progress = progress
        n = len(nodes)
        # first-fit: cursor[s] is the first node shape s may still fit on.
        self.cursor = [0] * len(shapes)
        # round-robin: the nodes shape s may still fit on, and where its next pod goes.
        self.live = [list(range(n)) for _ in shapes]
        self.turn = [0] * len(shapes)
        self.gone = [0] * len(shapes)  # nodes shape s has given up on
        self.pods: list[dict[str, int]] = [{} for _ in nodes]
        self.devices_placed = [0] * n
        self.failures: list[Failure | None] = [None] * n
        self.placements: list[Placement] = []
        self.work = 0
        self.calls = 0

    # ------------------------------------------------------------------ the loop

    def go(self, weights: list[float], max_pods: int | None, stop_first: bool) -> FitReport:
        start = time.monotonic()
        order = ShapeOrder(weights)
        stopped = "full"
        for s in order:
            if max_pods is not None and len(self.placements) >= max_pods:
                stopped = "max-pods"
                break
            if not self._place(s):
                order.retire(s)
                self.gone[s] = len(self.nodes)
                self._report_progress()
                if stop_first:
                    stopped = "first-exhausted"
                    break
        seconds = time.monotonic() - start
        return self._report(weights, stopped, seconds)

    def _place(self, s: int) -> bool:
        """Place one pod of shape ``s`` on its next node that fits; False: none does."""
        shape = self.shapes[s]
        claims = shape.instantiate(len(self.placements))
        while True:
            i = self._next_node(s)
            if i is None:
                return False
            node = self.nodes[i]
            results, failure = self._allocate(shape, claims, node)
            if results is not None:
                self._commit(s, i, claims, results)
                return True
            if self.failures[i] is None:
                self.failures[i] = failure
            self._give_up(s)
            self._report_progress()

    def _next_node(self, s: int) -> int | None:
        if self.strategy == "first-fit":
            return self.cursor[s] if self.cursor[s] < len(self.nodes) else None
        live = self.live[s]
        return live[self.turn[s]] if live else None

    def _give_up(self, s: int) -> None:
        """The node ``_next_node(s)`` returned does not fit shape ``s``, now or later."""
        self.gone[s] += 1
        if self.strategy == "first-fit":
            self.cursor[s] += 1
            return
        live = self.live[s]
        del live[self.turn[s]]
        if self.turn[s] >= len(live):
            self.turn[s] = 0

    def _allocate(
        self, shape: PodShape, claims: list[ResourceClaim], node: Node
    ) -> tuple[list[AllocationResult] | None, Failure | None]:
        allocator = Allocator(self.snap)
        deadline = None if self.timeout is None else time.monotonic() + self.timeout
        status: FailureStatus
        reason: str | None
        try:
            results = allocator.allocate(claims, node, deadline=deadline)
        except AllocationTimeout as exc:
            status, reason = "timeout", str(exc)
        except NodeAllocationError as exc:
            status, reason = "node-error", str(exc)
        except AllocationError as exc:
            status, reason = "error", str(exc)
        else:
            self.calls += 1
            self.work += allocator.last_stats.search_steps
            if results is not None:
                return results, None
            status, reason = "does-not-fit", self._explain(claims, node)
            return None, Failure(shape.name, status, reason)
        self.calls += 1
        self.work += allocator.last_stats.search_steps
        return None, Failure(shape.name, status, reason)

    def _explain(self, claims: list[ResourceClaim], node: Node) -> str | None:
        if not self.explain_failures:
            return None
        from draspeed.explain import explain

        return str(explain(self.snap, claims, node).summary)

    def _commit(
        self, s: int, i: int, claims: list[ResourceClaim], results: list[AllocationResult]
    ) -> None:
        allocated = [
            dataclasses.replace(c, status=dataclasses.replace(c.status, allocation=r))
            for c, r in zip(claims, results, strict=True)
        ]
        self.snap = self.snap.add_allocated(allocated)
        shape = self.shapes[s].name
        devices = [f"{d.driver}/{d.pool}/{d.device}" for r in results for d in r.devices.results]
        node = self.nodes[i].name
        self.placements.append(Placement(len(self.placements), shape, node, devices))
        self.pods[i][shape] = self.pods[i].get(shape, 0) + 1
        self.devices_placed[i] += len(devices)
        if self.strategy == "round-robin":
            live = self.live[s]
            self.turn[s] = (self.turn[s] + 1) % len(live)
        self._report_progress()

    def _report_progress(self) -> None:
        if self.progress is not None:
            done = min(self.gone) if self.gone else 0
            self.progress(len(self.placements), done, len(self.nodes))

    # ------------------------------------------------------------------ the report

    def _report(self, weights: list[float], stopped: str, seconds: float) -> FitReport:
        accounting = Accounting(self.snap)
        per_node = [
            NodeFit(
                node.name,
                self.pods[i],
                self.devices_placed[i],
                accounting.node_usage(node),
                self.failures[i],
            )
            for i, node in enumerate(self.nodes)
        ]
        by_shape = {shape.name: 0 for shape in self.shapes}
        for p in self.placements:
            by_shape[p.shape] += 1
        return FitReport(
            strategy=self.strategy,
            shapes=[s.name for s in self.shapes],
            ratios=list(weights),
            placed=len(self.placements),
            placed_by_shape=by_shape,
            stopped=stopped,
            nodes=per_node,
            cluster=accounting.cluster_usage(self.nodes),
            placements=self.placements,
            work=self.work,
            calls=self.calls,
            seconds=seconds,
            snapshot=self.snap,
        )
