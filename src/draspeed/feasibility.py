"""The answer to "on which nodes do these claims fit": one outcome per node.

:meth:`draspeed.Allocator.feasible_nodes` fills a :class:`Feasibility` in one pass
over the cluster.  Results are materialised only when asked for (``result``), so
asking about thousands of nodes costs the search, not the building of thousands
of AllocationResults nobody reads.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

from draspeed.api.model import AllocationResult

Status = Literal["fits", "does-not-fit", "error", "node-error", "timeout"]


@dataclass(slots=True)
class NodeOutcome:
    """What upstream's ``Allocate`` answers for one node.

    ``status``: ``fits`` (results available), ``does-not-fit`` (upstream returns
    no result and no error), ``error`` (a fatal allocation error, upstream's text
    in ``error``), ``node-error`` (upstream's ErrFailedAllocationOnNode: invalid
    pools made the node unsuitable), ``timeout`` (the deadline passed first).
    """

    node: str
    status: Status
    error: str | None = None
    work: int = 0
    _results: list[AllocationResult] | None = None
    _make: Callable[[], list[AllocationResult]] | None = field(default=None, repr=False)

    @property
    def fits(self) -> bool:
        return self.status == "fits"

    @property
    def results(self) -> list[AllocationResult] | None:
        """One AllocationResult per claim (claims' order), or None when not ``fits``."""
        if self._results is None and self._make is not None:
            self._results = self._make()
            self._make = None
        return self._results


class Feasibility:
    """Per node (in the order asked): fits with which devices, does not fit, or error."""

    def __init__(self, outcomes: list[NodeOutcome]) -> None:
        self._outcomes = outcomes
        self._by_name = {o.node: o for o in outcomes}

    def __iter__(self) -> Iterator[NodeOutcome]:
        return iter(self._outcomes)

    def __len__(self) -> int:
        return len(self._outcomes)

    def __getitem__(self, node: str) -> NodeOutcome:
        return self._by_name[node]

    def __contains__(self, node: object) -> bool:
        return node in self._by_name

    @property
    def nodes(self) -> list[str]:
        return [o.node for o in self._outcomes]

    @property
    def feasible(self) -> list[str]:
        """Names of the nodes where the claims fit, in the order asked."""
        return [o.node for o in self._outcomes if o.status == "fits"]

    def fits(self, node: str) -> bool:
        return self._by_name[node].fits

    def result(self, node: str) -> list[AllocationResult] | None:
        return self._by_name[node].results

    def error(self, node: str) -> str | None:
        return self._by_name[node].error

    @property
    def work(self) -> int:
        """Search steps summed over nodes (upstream's NumAllocateOneInvocations)."""
        return sum(o.work for o in self._outcomes)

    def to_dict(self, *, with_results: bool = True) -> dict[str, Any]:
        """JSON-ready: per node its status, error and (optionally) results as v1 JSON."""
        from draspeed.api.encode import encode_allocation

        nodes = []
        for o in self._outcomes:
            entry: dict[str, Any] = {"node": o.node, "status": o.status, "work": o.work}
            if o.error is not None:
                entry["error"] = o.error
            if with_results and o.fits:
                entry["allocations"] = [encode_allocation(r) for r in o.results or []]
            nodes.append(entry)
        return {"feasible": self.feasible, "nodes": nodes}
