"""``fit``: place as many pods of the given shapes as fit, with the real allocator.

Pods are placed one at a time, each committed before the next is tried, exactly as
a scheduler binding pods one by one would see the cluster; every answer is the
allocator's (:class:`~draspeed.engine.allocator.Allocator`). The node each pod goes
to and the devices it gets follow a :class:`~draspeed.analysis.strategies.Strategy`
(node order: the ``nodes`` given, else ``snapshot.nodes``): by default ``first-fit``,
the first node in order where the pod fits, with upstream's own device choice.

A mix of shapes is tried in a deterministic weighted order (``ratios``, see
:class:`~draspeed.analysis.shapes.ShapeOrder`); a shape that fits nowhere drops
out and the others go on (or the run stops, with ``stop_at_first_exhausted``).

A placement costs what it touches (:mod:`draspeed.analysis.placement`): a node is
asked again only after something it sees has changed, and nodes that publish the
same thing in the same state share one answer. The result is the one asking every
node for every pod would give (``memoise=False`` does that, for comparison).
The first failure on each node is explained (:func:`draspeed.explain.explain`).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from draspeed import arguments
from draspeed.analysis.accounting import Accounting, NodeUsage
from draspeed.analysis.node_list import resolve_nodes, snapshot_of
from draspeed.analysis.placement import Answer, AnswerMemory, Placer
from draspeed.analysis.scheduler import Scheduler
from draspeed.analysis.shapes import (
    ShapeOrder,
    ShapeSource,
    as_shapes,
    normalise_ratios,
)
from draspeed.analysis.strategies import STRATEGIES, Strategy
from draspeed.api.model import Node
from draspeed.collector import without_collector

if TYPE_CHECKING:
    from draspeed.analysis.fragmentation import FragmentationReport
    from draspeed.engine.snapshot import Snapshot

FailureStatus = Literal["does-not-fit", "error", "node-error", "timeout"]

# progress(placed, nodes_done, nodes_total): nodes_done counts nodes no shape can use.
Progress = Callable[[int, int, int], None]

__all__ = [
    "STRATEGIES",
    "Failure",
    "FitReport",
    "NodeFit",
    "Placement",
    "Progress",
    "Strategy",
    "fit",
    "resolve_nodes",
]


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

    strategy: str
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
    # Builds the final state (every placement committed) on first use; not pickled.
    final: Callable[[], Snapshot] | None = field(default=None, repr=False, compare=False)
    _snapshot: Snapshot | None = field(default=None, repr=False, compare=False)
    # Fragmentation (profile attribute, before the fill?) -> report; not pickled.
    _after: Callable[[str, bool], FragmentationReport] | None = field(
        default=None, repr=False, compare=False
    )

    def after(self, profile_attribute: str = "profile") -> FragmentationReport | None:
        """Fragmentation with every placement committed (None once sent between
        processes): without building the final snapshot, nodes in the same state
        sharing one report."""
        return None if self._after is None else self._after(profile_attribute, False)

    def before(self, profile_attribute: str = "profile") -> FragmentationReport | None:
        """Fragmentation of the nodes before the fill (as :meth:`after`)."""
        return None if self._after is None else self._after(profile_attribute, True)

    @property
    def snapshot(self) -> Snapshot | None:
        """The cluster with every placement committed (None once sent between processes)."""
        if self._snapshot is None and self.final is not None:
            self._snapshot = self.final()
        return self._snapshot

    def node(self, name: str) -> NodeFit:
        for n in self.nodes:
            if n.node == name:
                return n
        raise KeyError(name)

    def without_snapshot(self) -> FitReport:
        """The same report without the final snapshot (for sending between processes)."""
        return dataclasses.replace(self, final=None, _snapshot=None, _after=None)

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["final"] = None
        state["_snapshot"] = None
        state["_after"] = None
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


@without_collector
def fit(
    snapshot: Snapshot,
    templates: ShapeSource | Sequence[ShapeSource],
    strategy: str | Strategy = "first-fit",
    ratios: Mapping[str, float] | Sequence[float] | None = None,
    nodes: Sequence[Node | str] | None = None,
    max_pods: int | None = None,
    *,
    explain_failures: bool = True,
    stop_at_first_exhausted: bool = False,
    timeout: float | None = None,
    progress: Progress | None = None,
    memoise: bool = True,
    memory: AnswerMemory | None = None,
) -> FitReport:
    """Place pods of ``templates`` (ResourceClaimTemplates, claims or :class:`PodShape`
    objects, each a shape) until none fits or ``max_pods`` are placed.

    ``strategy``: a :class:`~draspeed.analysis.strategies.Strategy` or its name
    (:data:`STRATEGIES`). ``timeout`` bounds each allocate call (seconds); a call that
    runs out counts as a failure on that node. ``snapshot`` is not changed: the final
    state is ``report.snapshot``. ``memoise=False`` asks the real snapshot every
    question (same answers, much slower: for checking). ``memory``: answers kept from
    earlier fills of the same shapes on clusters that share nodes (reused, and added to).
    """
    snapshot_of(snapshot)
    chosen = Strategy.parse(strategy)
    if max_pods is not None:
        max_pods = arguments.whole(max_pods, "max_pods")
    arguments.flag(explain_failures, "explain_failures")
    arguments.flag(stop_at_first_exhausted, "stop_at_first_exhausted")
    arguments.flag(memoise, "memoise")
    timeout = arguments.timeout(timeout)
    arguments.function(progress, "progress")
    if memory is not None:
        arguments.instance_of(memory, AnswerMemory, "memory", "an AnswerMemory")
    shapes = as_shapes(templates)
    weights = normalise_ratios(shapes, ratios)
    node_list = resolve_nodes(snapshot, nodes)
    start = time.monotonic()
    placer = Placer(snapshot, node_list, shapes, memoise=memoise, timeout=timeout, memory=memory)
    run = _Run(placer, chosen, explain_failures, progress)
    return run.go(weights, max_pods, stop_at_first_exhausted, start)


class _Run:
    """The state of one fit: the scheduler, and what was placed where."""

    def __init__(
        self,
        placer: Placer,
        strategy: Strategy,
        explain_failures: bool,
        progress: Progress | None,
    ) -> None:
        self.placer = placer
        self.shapes = placer.shapes
        self.nodes = placer.nodes
        self.strategy = strategy
        self.scheduler = Scheduler(placer, strategy, self._failed)
        self.explain_failures = explain_failures
        self.progress = progress
        n = len(self.nodes)
        self.pods: list[dict[str, int]] = [{} for _ in range(n)]
        self.devices_placed = [0] * n
        self.failures: list[Failure | None] = [None] * n
        self.placements: list[Placement] = []

    def go(
        self, weights: list[float], max_pods: int | None, stop_first: bool, start: float
    ) -> FitReport:
        order = ShapeOrder(weights)
        stopped = "full"
        for s in order:
            if max_pods is not None and len(self.placements) >= max_pods:
                stopped = "max-pods"
                break
            if not self._place(s):
                order.retire(s)
                self.scheduler.retire(s)
                self._report_progress()
                if stop_first:
                    stopped = "first-exhausted"
                    break
        seconds = time.monotonic() - start
        return self._report(weights, stopped, seconds)

    def _place(self, s: int) -> bool:
        """Place one pod of shape ``s`` where the strategy says; False: it fits nowhere."""
        pod = len(self.placements)
        found = self.scheduler.place(s, pod)
        if found is None:
            return False
        i, devices = found
        shape = self.shapes[s].name
        self.placements.append(Placement(pod, shape, self.nodes[i].name, devices))
        self.pods[i][shape] = self.pods[i].get(shape, 0) + 1
        self.devices_placed[i] += len(devices)
        self._report_progress()
        return True

    def _failed(self, i: int, s: int, pod: int, answer: Answer) -> None:
        if self.failures[i] is not None:
            return
        reason = answer.reason
        if answer.status == "does-not-fit" and self.explain_failures:
            reason = self.placer.explain(i, s, pod)
        self.failures[i] = Failure(self.shapes[s].name, answer.status, reason)  # type: ignore[arg-type]

    def _report_progress(self) -> None:
        if self.progress is not None:
            n = len(self.nodes)
            gone = [self.scheduler.gone(s) for s in range(len(self.shapes))]
            self.progress(len(self.placements), min(gone) if gone else 0, n)

    # ------------------------------------------------------------------ the report

    def _report(self, weights: list[float], stopped: str, seconds: float) -> FitReport:
        placer = self.placer
        accounting = Accounting(placer.real)
        per_node = [
            NodeFit(
                node.name,
                self.pods[i],
                self.devices_placed[i],
                placer.usage(i, accounting),
                self.failures[i],
            )
            for i, node in enumerate(self.nodes)
        ]
        by_shape = {shape.name: 0 for shape in self.shapes}
        for p in self.placements:
            by_shape[p.shape] += 1
        return FitReport(
            strategy=str(self.strategy),
            shapes=[s.name for s in self.shapes],
            ratios=list(weights),
            placed=len(self.placements),
            placed_by_shape=by_shape,
            stopped=stopped,
            nodes=per_node,
            cluster=placer.cluster_usage(),
            placements=self.placements,
            work=placer.work,
            calls=placer.calls,
            seconds=seconds,
            final=placer.final_snapshot,
            _after=lambda profile, initial: placer.fragmentation(profile, initial=initial),
        )
