"""One capacity report: fragmentation of the cluster as it is, then how many pods fit.

:func:`analyze` is what ``draspeed capacity`` prints for one cluster state and
what every what-if and sweep scenario computes (the state of a dump:
``draspeed.Cluster.from_objects(objects).snapshot()``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from draspeed.analysis.fit import FitReport, Progress, fit
from draspeed.analysis.fragmentation import FragmentationReport, fragmentation
from draspeed.analysis.shapes import ShapeSource
from draspeed.analysis.strategies import Strategy

if TYPE_CHECKING:
    from draspeed.api.model import Node
    from draspeed.engine.snapshot import Snapshot


@dataclass
class CapacityReport:
    """Fragmentation before placing anything, and the fit of the shapes."""

    fragmentation: FragmentationReport
    fit: FitReport

    def to_dict(self, *, placements: bool = False) -> dict[str, Any]:
        return {
            "fit": self.fit.to_dict(placements=placements),
            "fragmentation": self.fragmentation.to_dict(),
        }


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
) -> CapacityReport:
    """:func:`~draspeed.analysis.fragmentation.fragmentation` of ``snapshot``, then
    :func:`~draspeed.analysis.fit.fit` of ``templates`` (same arguments)."""
    frag = fragmentation(snapshot, nodes, profile_attribute=profile_attribute)
    report = fit(
        snapshot,
        templates,
        strategy,
        ratios,
        nodes,
        max_pods,
        explain_failures=explain_failures,
        stop_at_first_exhausted=stop_at_first_exhausted,
        timeout=timeout,
        progress=progress,
    )
    return CapacityReport(frag, report)
