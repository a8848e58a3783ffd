"""The answer to "on which nodes do these claims fit": one outcome per node.

:meth:`draspeed.Allocator.feasible_nodes` fills a :class:`Feasibility` in one pass
over the cluster.  It keeps the answer as arrays (a status code per node) and makes
:class:`NodeOutcome` objects, and AllocationResults, only when asked for, so asking
about thousands of nodes costs the search, not the building of thousands of Python
objects nobody reads.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from draspeed.api.model import AllocationResult, Node
from draspeed.arguments import type_name

Status = Literal["fits", "does-not-fit", "error", "node-error", "timeout"]
STATUSES: tuple[Status, ...] = ("fits", "does-not-fit", "error", "node-error", "timeout")
FITS, DOES_NOT_FIT, ERROR, NODE_ERROR, TIMEOUT = range(5)


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
    """Per node (in the order asked): fits with which devices, does not fit, or error.

    ``codes[i]`` is the status of node i as an index into :data:`STATUSES`; ``errors``
    holds the message of each node whose status carries one; ``results(i)`` builds
    node i's AllocationResults (fresh objects on every call).
    """

    def __init__(
        self,
        names: Sequence[str],
        codes: np.ndarray,
        work: np.ndarray,
        errors: dict[int, str],
        results: Callable[[int], list[AllocationResult]],
    ) -> None:
        self._names = list(names)
        self.codes = codes
        self.works = work
        self.errors = errors
        self._results = results
        self._index: dict[str, int] | None = None

    @classmethod
    def from_outcomes(cls, outcomes: Sequence[NodeOutcome]) -> Feasibility:
        """Built from per-node outcomes (engines that answer node by node)."""
        made = {i: o for i, o in enumerate(outcomes)}

        def results(i: int) -> list[AllocationResult]:
            found = made[i].results
            assert found is not None
            return found

        return cls(
            [o.node for o in outcomes],
            np.asarray([STATUSES.index(o.status) for o in outcomes], dtype=np.int8),
            np.asarray([o.work for o in outcomes], dtype=np.int64),
            {i: o.error for i, o in enumerate(outcomes) if o.error is not None},
            results,
        )

    def _position(self, node: str | Node) -> int:
        """The index of a node asked about (a Node or its name); KeyError naming it
        for another, TypeError for anything but a node."""
        if isinstance(node, Node):
            node = node.name
        elif not isinstance(node, str):
            raise TypeError(f"node: expected a Node or a node name, got {type_name(node)}")
        if self._index is None:
            self._index = {name: i for i, name in enumerate(self._names)}
        found = self._index.get(node)
        if found is None:
            raise KeyError(f"node {node!r} was not asked about")
        return found

    def outcome(self, i: int) -> NodeOutcome:
        """Node i's outcome (results are built when first read)."""
        if isinstance(i, bool) or not isinstance(i, (int, np.integer)):
            raise TypeError(f"i: expected a node's index, got {type_name(i)}")
        if not -len(self._names) <= i < len(self._names):
            raise IndexError(f"i: node index {i} out of range for {len(self._names)} nodes")
        status = STATUSES[int(self.codes[i])]
        make = (lambda: self._results(i)) if status == "fits" else None
        return NodeOutcome(
            self._names[i], status, self.errors.get(i), int(self.works[i]), None, make
        )

    def __iter__(self) -> Iterator[NodeOutcome]:
        return (self.outcome(i) for i in range(len(self._names)))

    def __len__(self) -> int:
        return len(self._names)

    def __getitem__(self, node: str | Node) -> NodeOutcome:
        return self.outcome(self._position(node))

    def __contains__(self, node: object) -> bool:
        if not isinstance(node, (str, Node)):
            return False
        try:
            self._position(node)
        except KeyError:
            return False
        return True

    @property
    def nodes(self) -> list[str]:
        return list(self._names)

    @property
    def feasible(self) -> list[str]:
        """Names of the nodes where the claims fit, in the order asked."""
        names = self._names
        return [names[i] for i in np.flatnonzero(self.codes == FITS).tolist()]

    def fits(self, node: str | Node) -> bool:
        return int(self.codes[self._position(node)]) == FITS

    def result(self, node: str | Node) -> list[AllocationResult] | None:
        i = self._position(node)
        return self._results(i) if int(self.codes[i]) == FITS else None

    def error(self, node: str | Node) -> str | None:
        return self.errors.get(self._position(node))

    @property
    def work(self) -> int:
        """Search steps summed over nodes (``Stats.search_steps``: never more than
        upstream's ``NumAllocateOneInvocations``)."""
        return int(self.works.sum())

    def counts(self) -> dict[str, int]:
        """How many nodes have each status."""
        found = np.bincount(self.codes.astype(np.int64), minlength=len(STATUSES))
        return {s: int(found[k]) for k, s in enumerate(STATUSES)}

    def to_dict(self, *, with_results: bool = True) -> dict[str, Any]:
        """JSON-ready: per node its status, error and (optionally) results as v1 JSON."""
        from draspeed.api.encode import encode_allocation

        nodes = []
        for o in self:
            entry: dict[str, Any] = {"node": o.node, "status": o.status, "work": o.work}
            if o.error is not None:
                entry["error"] = o.error
            if with_results and o.fits:
                entry["allocations"] = [encode_allocation(r) for r in o.results or []]
            nodes.append(entry)
        return {"feasible": self.feasible, "nodes": nodes}
