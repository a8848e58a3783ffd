"""One capacity report: fragmentation before and after placing, the fit, and how it
compares with other strategies and with the optimal bound.

:func:`analyze` is what ``draspeed capacity`` prints for one cluster state and
what every what-if and sweep scenario computes (the state of a dump:
``draspeed.Cluster.from_objects(objects).snapshot()``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from draspeed import arguments
from draspeed.analysis.bound import DEFAULT_TIME_LIMIT, BoundReport, optimal_bound
from draspeed.analysis.fit import FitReport, Progress, fit
from draspeed.analysis.fragmentation import FragmentationReport
from draspeed.analysis.node_list import snapshot_of
from draspeed.analysis.shapes import ShapeSource, as_shapes
from draspeed.analysis.strategies import Strategy

if TYPE_CHECKING:
    from draspeed.api.model import Node
    from draspeed.engine.snapshot import Snapshot


@dataclass
class StrategyCount:
    """What another strategy placed (compared with the report's own)."""

    strategy: str
    placed: int
    placed_by_shape: dict[str, int]
    seconds: float

    @classmethod
    def of(cls, report: FitReport) -> StrategyCount:
        return cls(report.strategy, report.placed, dict(report.placed_by_shape), report.seconds)

    def to_dict(self) -> dict[str, Any]:
        return {
            "strategy": self.strategy,
            "placed": self.placed,
            "placedByShape": dict(self.placed_by_shape),
            "seconds": round(self.seconds, 6),
        }


@dataclass
class CapacityReport:
    """Fragmentation before placing anything, the fit of the shapes, fragmentation
    after it; optionally the optimal bound and other strategies' counts."""

    fragmentation: FragmentationReport
    fit: FitReport
    after: FragmentationReport | None = None
    bound: BoundReport | None = None
    strategies: list[StrategyCount] = field(default_factory=list)
    # With the bound: each shape filled on its own (same strategy), per shape.
    alone: dict[str, int] = field(default_factory=dict)

    def placed_by_strategy(self) -> dict[str, int]:
        """Pods placed per strategy: the report's own first."""
        return {
            self.fit.strategy: self.fit.placed,
            **{s.strategy: s.placed for s in self.strategies},
        }

    def to_dict(self, *, placements: bool = False) -> dict[str, Any]:
        out: dict[str, Any] = {
            "fit": self.fit.to_dict(placements=placements),
            "fragmentation": self.fragmentation.to_dict(),
        }
        if self.after is not None:
            out["after"] = self.after.to_dict()
        if self.strategies:
            out["strategies"] = [
                StrategyCount.of(self.fit).to_dict(),
                *(s.to_dict() for s in self.strategies),
            ]
        if self.bound is not None:
            out["bound"] = self.bound.to_dict()
            out["aloneFilled"] = dict(self.alone)
        return out


def analyze(
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
    profile_attribute: str = "profile",
    progress: Progress | None = None,
    compare: Sequence[str | Strategy] = (),
    bound: bool = False,
    time_limit: float | None = DEFAULT_TIME_LIMIT,
) -> CapacityReport:
    """:func:`~draspeed.analysis.fit.fit` of ``templates``, with the
    :func:`~draspeed.analysis.fragmentation.fragmentation` of ``snapshot`` before and
    after it. ``compare``: other strategies to fill with too (their
    counts only); ``bound``: the optimal bound (:mod:`draspeed.analysis.bound`, needs
    scipy), keeping the fit's pods to measure its gap; ``time_limit`` per solve."""
    snapshot_of(snapshot)
    arguments.text(profile_attribute, "profile_attribute", "an attribute name")
    compared = arguments.names_or_items(compare, Strategy, "compare", "Strategies")
    arguments.flag(bound, "bound")
    time_limit = arguments.time_limit(time_limit)
    options: dict[str, Any] = {
        "ratios": ratios,
        "nodes": nodes,
        "max_pods": max_pods,
        "stop_at_first_exhausted": stop_at_first_exhausted,
        "timeout": timeout,
    }
    report = fit(
        snapshot,
        templates,
        strategy,
        explain_failures=explain_failures,
        progress=progress,
        **options,
    )
    own = str(Strategy.parse(strategy))
    fills = [
        fit(snapshot, templates, other, explain_failures=False, **options)
        for other in dict.fromkeys(str(Strategy.parse(s, "compare")) for s in compared)
        if other != own
    ]
    bound_report = None
    alone: dict[str, int] = {}
    if bound:
        bound_report = optimal_bound(
            snapshot, templates, nodes, keep=report, also_keep=fills, time_limit=time_limit
        )
        # Each shape filled on its own, as the optimum alone is: per profile.
        for shape in as_shapes(templates):
            alone[shape.name] = fit(
                snapshot,
                shape,
                strategy,
                nodes=nodes,
                max_pods=max_pods,
                explain_failures=False,
                timeout=timeout,
            ).placed
    others = [StrategyCount.of(f) for f in fills]
    # Before and after the fill from the fill's own node states (as fragmentation()
    # of the snapshots would report, without asking every node's view).
    before = report.before(profile_attribute)
    assert before is not None
    return CapacityReport(
        before, report, report.after(profile_attribute), bound_report, others, alone
    )
