"""The fast engine's public face: upstream's ``Allocate`` contract over a Snapshot."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from draspeed import _core
from draspeed.api.model import AllocationResult, DeviceClass, Node, ResourceClaim
from draspeed.errors import AllocationError, AllocationTimeout, NodeAllocationError
from draspeed.problem import Prepared, ProblemBuilder
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

    def __init__(self, snapshot: Snapshot) -> None:
        self.snapshot = snapshot
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
        builder = ProblemBuilder(self.snapshot, view, claims)
        prepared = builder.build()
        outcome, work, picks, chosen_sub, err_alt, err_pos = _core.search(
            prepared.problem, deadline or 0.0
        )
        self.last_stats = Stats(work)
        if outcome == _OUT["found"]:
            return self._results(claims, node, prepared, picks, chosen_sub)
        if outcome == _OUT["selector_error"]:
            raise AllocationError(builder.selector_error_text(err_alt, err_pos))
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
            raise AllocationError("draspeed internal error: an int64 counter or capacity sum "
                                  "overflowed in the compiled core")
        if view.any_invalid:
            raise NodeAllocationError("invalid resource pools were encountered")
        return None

    def _results(self, claims: list[ResourceClaim], node: Node, prepared: Prepared,
                 picks: list[list[tuple[int, int]]], chosen_sub: list[int]) -> list[AllocationResult]:
        snap = self.snapshot
        out = []
        for c, claim in enumerate(claims):
            chosen = []
            for a, p in picks[c]:
                alt = prepared.alternatives[a]
                g = int(prepared.view.positions[p])
                share = prepared.share_use.get((a, p))
                multi = share is not None
                chosen.append(ChosenDevice(
                    request=alt.name,
                    parent_request=alt.parent,
                    device_id=snap.device_id(g),
                    device=snap.device(g),
                    slice=snap.device_slice_of(g),
                    share_id=str(uuid.uuid4()) if multi else None,
                    consumed_capacity=share or None,
                    admin_access=alt.admin,
                ))
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
                out.append(build_allocation_result(claim, chosen, classes, selected, node.name,
                                                   snap.features))
            except ResultError as exc:
                raise AllocationError(str(exc)) from exc
        return out
