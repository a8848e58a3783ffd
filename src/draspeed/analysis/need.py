"""The inverse question: how many nodes of a type must be added for N more pods to fit.

:func:`nodes_needed` answers it with the real allocator: a check is a fill
(:func:`~draspeed.analysis.fit.fit`, stopped once N pods are placed) of the cluster
with k nodes of the type added (:class:`~draspeed.analysis.whatif.AddNodes`), and the
answer is the smallest k whose fill places N pods. The first guess comes from the
optimal bound (:mod:`draspeed.analysis.bound`) of one empty node of the type for the
mix in its proportions: ``ceil((N - fit now) / bound)`` nodes. From there the search
steps up by what the pods per node seen so far say is missing until a count is
enough, then bisects between the last count that was not and it. Fills are assumed
to place no fewer pods with more nodes (new nodes come last in node order); the
answer is checked on both sides (k nodes fit N pods, k - 1 do not).
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from draspeed import arguments
from draspeed.analysis.fit import fit
from draspeed.analysis.node_list import snapshot_of
from draspeed.analysis.placement import AnswerMemory
from draspeed.analysis.shapes import ShapeSource, as_shapes, normalise_ratios
from draspeed.analysis.strategies import Strategy
from draspeed.analysis.whatif import AddNodes

if TYPE_CHECKING:
    from draspeed.engine.snapshot import Snapshot

DEFAULT_MAX_NODES = 100_000


@dataclass
class NeedReport:
    """How many nodes of a type give room for ``need`` more pods, and how that was found."""

    need: int
    node_type: str
    strategy: str
    nodes: int | None  # nodes to add; None: no number of them is enough
    placed_now: int  # pods of the mix that fit without new nodes (at most ``need``)
    placed: int | None  # pods that fit with ``nodes`` added (at most ``need``)
    per_node_bound: int | None  # the most pods one new node can hold (optimal bound)
    guess: int | None  # the bound's first guess
    checks: list[tuple[int, int]] = field(default_factory=list)  # (added, pods placed)
    seconds: float = 0.0
    reason: str | None = None  # why no number of nodes is enough

    def to_dict(self) -> dict[str, Any]:
        return {
            "need": self.need,
            "nodeType": self.node_type,
            "strategy": self.strategy,
            "nodes": self.nodes,
            "placedNow": self.placed_now,
            "placed": self.placed,
            "perNodeBound": self.per_node_bound,
            "guess": self.guess,
            "checks": [{"nodesAdded": k, "pods": p} for k, p in self.checks],
            "seconds": round(self.seconds, 6),
            "reason": self.reason,
        }


def nodes_needed(
    snapshot: Snapshot,
    templates: ShapeSource | Sequence[ShapeSource],
    node_type: AddNodes,
    need: int,
    *,
    strategy: str | Strategy = "first-fit",
    ratios: Mapping[str, float] | Sequence[float] | None = None,
    max_nodes: int = DEFAULT_MAX_NODES,
    timeout: float | None = None,
) -> NeedReport:
    """The fewest nodes like ``node_type`` (its ``count`` is ignored) to add so that a
    fill places ``need`` pods of ``templates`` (in the mix ``ratios``); ``timeout``
    bounds each allocate call (seconds), as :func:`~draspeed.analysis.fit.fit`'s."""
    snapshot_of(snapshot)
    arguments.instance_of(node_type, AddNodes, "node_type", "an AddNodes (the node to add)")
    need = arguments.whole(need, "need")
    max_nodes = arguments.whole(max_nodes, "max_nodes")
    timeout = arguments.timeout(timeout)
    start = time.monotonic()
    shapes = as_shapes(templates)
    chosen = Strategy.parse(strategy)
    checks: dict[int, int] = {}
    # The nodes of the cluster and the new ones are alike from one check to the next:
    # their answers are kept across the fills.
    memory = AnswerMemory([s.name for s in shapes])

    def placed(k: int) -> int:
        if k not in checks:
            cluster = dataclasses.replace(node_type, count=k).apply(snapshot)
            report = fit(
                cluster,
                shapes,
                chosen,
                ratios,
                max_pods=need,
                explain_failures=False,
                memory=memory,
                timeout=timeout,
            )
            checks[k] = report.placed
        return checks[k]

    report = NeedReport(
        need,
        node_type.node_type,
        str(chosen),
        None,
        placed(0),
        None,
        None,
        None,
    )
    if report.placed_now >= need:
        return _done(report, 0, checks, start)
    per_node = _per_node_bound(snapshot, shapes, node_type, normalise_ratios(shapes, ratios))
    report.per_node_bound = per_node
    if per_node == 0:
        report.reason = "a node of this type fits no pod of these shapes"
        return _done(report, None, checks, start)
    guess = 1 if per_node is None else max(1, math.ceil((need - report.placed_now) / per_node))
    guess = min(guess, max_nodes)  # (a need beyond any cluster is met by none: said so)
    report.guess = guess
    # Up from the guess, each step sized by the pods per node seen so far ...
    low, high = 0, guess
    while placed(high) < need:
        if high >= max_nodes:
            report.reason = f"{max_nodes} nodes are not enough"
            return _done(report, None, checks, start)
        gained = placed(high) - placed(low)
        if gained <= 0 and low > 0:
            report.reason = "adding nodes of this type places no more pods"
            return _done(report, None, checks, start)
        rate = gained / (high - low) if gained > 0 else float(per_node or 1)
        step = max(1, math.ceil((need - placed(high)) / rate))
        low, high = high, min(high + step, max_nodes)
    # ... then the smallest count that is enough, between the last that was not and it
    # (one fewer first: with a good guess, that settles it).
    if high - low > 1 and placed(high - 1) < need:
        low = high - 1
    while high - low > 1:
        middle = (low + high) // 2
        if placed(middle) >= need:
            high = middle
        else:
            low = middle
    return _done(report, high, checks, start)


def _done(
    report: NeedReport, nodes: int | None, checks: dict[int, int], start: float
) -> NeedReport:
    report.nodes = nodes
    report.placed = None if nodes is None else checks[nodes]
    report.checks = sorted(checks.items())
    report.seconds = time.monotonic() - start
    return report


def _per_node_bound(
    snapshot: Snapshot, shapes: list[Any], node_type: AddNodes, weights: list[float]
) -> int | None:
    """The most pods of the mix (in its proportions) one new node of the type holds
    (None: unbounded)."""
    from draspeed.analysis.bound import mix_bound

    one = dataclasses.replace(node_type, count=1)
    [name] = one.names()
    return mix_bound(one.apply(snapshot), shapes, name, weights)
