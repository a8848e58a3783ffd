"""The fast engine's public face: upstream's ``Allocate`` contract over a Snapshot."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from draspeed import _core
from draspeed.api.model import (
    AllocationResult,
    DeviceAllocationConfiguration,
    DeviceAllocationResult,
    DeviceClass,
    DeviceRequestAllocationResult,
    Node,
    NodeSelector,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    ObjectMeta,
    ResourceClaim,
)
from draspeed.errors import AllocationError, AllocationTimeout, NodeAllocationError
from draspeed.feasibility import Feasibility, NodeOutcome
from draspeed.problem import Prepared, prepare, selector_error_text
from draspeed.rules.results import ChosenDevice, ResultError, build_allocation_result
from draspeed.snapshot import Snapshot

_OUT = _core.OUTCOME


@dataclass(slots=True)
class Stats:
    """Counters of one call; ``num_allocate_one_invocations`` is upstream's work counter."""

    num_allocate_one_invocations: int = 0


class Allocator:
    """Allocates claims on one node at a time, exactly as upstream's allocator does.

    Build once per snapshot and call :meth:`allocate` for each (claims, node).
    Thread-safety: ``allocate`` keeps its state per call; many threads may use one
    allocator. ``last_stats`` is then the stats of whichever call finished last.
    """

    def __init__(
        self, snapshot: Snapshot, *, share_id: Callable[[], str] = lambda: str(uuid.uuid4())
    ) -> None:
        """``share_id`` makes the shareID of each shared allocation (tests may fix it)."""
        self.snapshot = snapshot
        self.share_id = share_id
        self.last_stats = Stats()

    def allocate(
        self, claims: Sequence[ResourceClaim], node: Node, *, deadline: float | None = None
    ) -> list[AllocationResult] | None:
        """One result per claim (input order), or None when the claims do not fit.

        Raises :class:`AllocationError` with upstream's text for fatal errors,
        :class:`NodeAllocationError` when invalid pools made the node unsuitable,
        and :class:`AllocationTimeout` when ``deadline`` (a ``time.monotonic()``
        value) passes first.
        """
        claims = list(claims)
        self.last_stats = Stats()
        if not claims:
            return []
        view = self.snapshot.node_view(node)
        prepared = prepare(self.snapshot, view, claims)
        outcome, work, picks, chosen_sub, err_alt, err_pos = _core.search(
            prepared.problem, deadline or 0.0
        )
        self.last_stats = Stats(work)
        if outcome == _OUT["found"]:
            # Same question, same picks: the same result, copied, with fresh shareIDs.
            key = (tuple(map(tuple, picks)), tuple(chosen_sub))
            templates = prepared.results.get(key)
            if templates is None:
                templates = self._results(claims, node, prepared, picks, chosen_sub)
                prepared.results[key] = templates
            return [_copy_result(t, self.share_id) for t in templates]
        if outcome == _OUT["selector_error"]:
            raise AllocationError(
                selector_error_text(
                    self.snapshot,
                    view,
                    claims,
                    prepared.alternatives[err_alt],
                    prepared.selector_errors[(err_alt, err_pos)],
                    err_pos,
                )
            )
        if outcome == _OUT["constraint_error"]:
            alt = prepared.alternatives[err_alt]
            device = self.snapshot.device_id(int(view.positions[err_pos]))
            raise AllocationError(
                f"claim {claims[alt.claim].key}, request {alt.name}: cannot add device {device} "
                "because a claim constraint would not be satisfied"
            )
        if outcome == _OUT["deadline"]:
            raise AllocationTimeout("filter operation aborted: context deadline exceeded")
        if outcome == _OUT["overflow"]:
            # The builder switches to exact sums before int64 could overflow; reaching
            # this means that bound is wrong, and guessing would be worse than stopping.
            raise AllocationError(
                "draspeed internal error: an int64 counter or capacity sum "
                "overflowed in the compiled core"
            )
        if view.any_invalid:
            raise NodeAllocationError("invalid resource pools were encountered")
        return None

    def feasible_nodes(
        self,
        claims: Sequence[ResourceClaim],
        nodes: Sequence[Node | str] | None = None,
        *,
        deadline: float | None = None,
    ) -> Feasibility:
        """For every node (``nodes``, or the snapshot's known nodes): what ``allocate``
        would answer there. Node names not known to the snapshot are unlabelled nodes."""
        claims = list(claims)
        outcomes = []
        for node in self._nodes(nodes):
            try:
                results = self.allocate(claims, node, deadline=deadline)
            except AllocationTimeout as exc:
                outcomes.append(NodeOutcome(node.name, "timeout", str(exc)))
                continue
            except NodeAllocationError as exc:
                outcomes.append(
                    NodeOutcome(
                        node.name,
                        "node-error",
                        str(exc),
                        self.last_stats.num_allocate_one_invocations,
                    )
                )
                continue
            except AllocationError as exc:
                outcomes.append(
                    NodeOutcome(
                        node.name, "error", str(exc), self.last_stats.num_allocate_one_invocations
                    )
                )
                continue
            work = self.last_stats.num_allocate_one_invocations
            if results is None:
                outcomes.append(NodeOutcome(node.name, "does-not-fit", None, work))
            else:
                outcomes.append(NodeOutcome(node.name, "fits", None, work, results))
        return Feasibility(outcomes)

    def _nodes(self, nodes: Sequence[Node | str] | None) -> list[Node]:
        if nodes is None:
            return self.snapshot.nodes
        known = self.snapshot.given_nodes
        return [
            n if isinstance(n, Node) else known.get(n) or Node(metadata=ObjectMeta(name=n))
            for n in nodes
        ]

    def _results(
        self,
        claims: list[ResourceClaim],
        node: Node,
        prepared: Prepared,
        picks: list[list[tuple[int, int]]],
        chosen_sub: list[int],
    ) -> list[AllocationResult]:
        snap = self.snapshot
        out = []
        for c, claim in enumerate(claims):
            chosen = []
            for a, p in picks[c]:
                alt = prepared.alternatives[a]
                g = int(prepared.view.positions[p])
                share = prepared.share_use.get((a, p))
                multi = share is not None
                chosen.append(
                    ChosenDevice(
                        request=alt.name,
                        parent_request=alt.parent,
                        device_id=snap.device_id(g),
                        device=snap.device(g),
                        slice=snap.device_slice_of(g),
                        share_id="" if multi else None,  # a fresh one per copy
                        consumed_capacity=share or None,
                        admin_access=alt.admin,
                    )
                )
            classes: list[DeviceClass | None] = []
            selected: list[int | None] = []
            for r in prepared.claim_requests[c]:
                alt_ids = prepared.request_alts[r]
                if prepared.request_has_subs[r]:
                    k = chosen_sub[r]
                    selected.append(k)
                    classes.append(prepared.alternatives[alt_ids[k]].device_class)
                else:
                    selected.append(None)
                    classes.append(prepared.alternatives[alt_ids[0]].device_class)
            try:
                out.append(
                    build_allocation_result(
                        claim, chosen, classes, selected, node.name, snap.features
                    )
                )
            except ResultError as exc:
                raise AllocationError(str(exc)) from exc
        return out


def _copy_result(template: AllocationResult, share_id: Callable[[], str]) -> AllocationResult:
    """A result the caller may change freely, with a fresh shareID per shared device.

    Explicit constructors, not dataclasses.replace: this runs on every cached answer.
    """
    devices = template.devices
    return AllocationResult(
        devices=DeviceAllocationResult(
            results=[
                DeviceRequestAllocationResult(
                    r.request,
                    r.driver,
                    r.pool,
                    r.device,
                    r.admin_access,
                    list(r.tolerations),
                    list(r.binding_conditions),
                    list(r.binding_failure_conditions),
                    None if r.share_id is None else share_id(),
                    dict(r.consumed_capacity),
                )
                for r in devices.results
            ],
            config=[
                DeviceAllocationConfiguration(c.source, list(c.requests), c.opaque)
                for c in devices.config
            ],
        ),
        node_selector=_copy_selector(template.node_selector),
    )


def _copy_selector(selector: NodeSelector | None) -> NodeSelector | None:
    if selector is None:
        return None
    return NodeSelector(
        [
            NodeSelectorTerm(
                [
                    NodeSelectorRequirement(r.key, r.operator, list(r.values))
                    for r in term.match_expressions
                ],
                [
                    NodeSelectorRequirement(r.key, r.operator, list(r.values))
                    for r in term.match_fields
                ],
            )
            for term in selector.node_selector_terms
        ]
    )
