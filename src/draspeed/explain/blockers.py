"""Every reason the claims do not fit: short requests first, then (when each request
has enough on its own) what the allocator says ties them together.
"""

from __future__ import annotations

from typing import Any

from draspeed.api.model import Node, ResourceClaim
from draspeed.engine.snapshot import Snapshot
from draspeed.explain.constraint_blockers import constraint_blockers
from draspeed.explain.counter_blockers import counter_blockers, relaxed_counter_blockers
from draspeed.explain.facts import NodeFacts
from draspeed.explain.results import Blocker, Funnel
from draspeed.explain.together_blockers import together_blockers
from draspeed.explain.verdict import Verdict


def find_blockers(
    snapshot: Snapshot,
    facts: NodeFacts,
    claims: list[ResourceClaim],
    node: Node,
    funnels: list[Funnel],
    verdict: Verdict,
    timeout: float | None,
) -> list[Blocker]:
    blockers: list[Blocker] = []
    for f in funnels:
        if f.selector_error is not None:
            blockers.append(
                Blocker("selector", f.selector_error, {"claim": f.claim, "request": f.request})
            )
    for message in dict.fromkeys(facts.node_errors):
        blockers.append(Blocker("selector", message, {}))
    short = _short_requests(funnels)
    unsearchable = [
        f"{p.id} ({'invalid' if p.invalid else 'incomplete'})"
        for p in facts.view.pools
        if p.invalid or p.incomplete
    ]
    for key, fs in short.items():
        blocker = _request_blocker(key, fs, len(claims) > 1)
        if unsearchable and blocker.details.get("stage") == "onNode":
            blocker.message += "; not searchable: pool " + ", pool ".join(unsearchable)
        blockers.append(blocker)
    for f in (f for fs in short.values() for f in fs if f.short_at == "counters"):
        blockers.extend(counter_blockers(f))
    if short or verdict.status in ("error", "timeout"):
        return _dedupe(blockers)
    # Every request has enough candidates on its own: the search was blocked by what
    # ties the requests together. Ask the allocator what would have made it fit.
    found = constraint_blockers(snapshot, claims, node, timeout)
    found += relaxed_counter_blockers(snapshot, facts, claims, node, timeout)
    if not found:
        found = together_blockers(facts, claims, funnels)
    if not found:
        found = [
            Blocker(
                "search",
                "every request has enough devices on its own, but no combination of them "
                "satisfies all requests together",
                {},
            )
        ]
    return _dedupe(blockers + found)


def _dedupe(blockers: list[Blocker]) -> list[Blocker]:
    seen: set[str] = set()
    out = []
    for b in blockers:
        if b.message not in seen:
            seen.add(b.message)
            out.append(b)
    return out


def _short_requests(funnels: list[Funnel]) -> dict[tuple[str, str], list[Funnel]]:
    """Requests all of whose alternatives are short, keyed by (claim, request name)."""
    by_request: dict[tuple[str, str], list[Funnel]] = {}
    for f in funnels:
        by_request.setdefault((f.claim, f.request.split("/", 1)[0]), []).append(f)
    return {k: fs for k, fs in by_request.items() if all(f.short for f in fs)}


def _request_blocker(key: tuple[str, str], funnels: list[Funnel], name_claim: bool) -> Blocker:
    claim, request = key
    who = f"claim {claim}, request {request}" if name_claim else f"request {request}"
    if len(funnels) == 1 and funnels[0].request == request:
        f = funnels[0]
        message = f"{who}: {f.shortfall()}"
        stage = "claimLimit" if f.over_claim_limit else f.short_at
    else:
        parts = [f"{f.request.split('/', 1)[1]} {f.shortfall()}" for f in funnels]
        message = f"{who}: no alternative fits: " + "; ".join(parts)
        stage = None
    kind = "claim-limit" if all(f.over_claim_limit for f in funnels) else "request"
    details: dict[str, Any] = {"claim": claim, "request": request}
    if stage is not None:
        details["stage"] = stage
    return Blocker(kind, message, details)
