"""The one-line summary of an explanation: the allocation, the error or the main blocker."""

from __future__ import annotations

from draspeed.api.model import ResourceClaim
from draspeed.explain.results import Explanation


def summarise(out: Explanation, claims: list[ResourceClaim]) -> str:
    if out.status == "fits":
        parts = [
            f"{claim} gets {', '.join(devs) or 'no devices'}"
            for claim, devs in out.allocations.items()
        ]
        return "fits: " + "; ".join(parts) if parts else "fits: no claims to allocate"
    if out.status == "node-error":
        reasons = [f"pool {p.pool}: {p.reason}" for p in out.pools if p.state == "invalid"]
        return f"{out.error}: " + "; ".join(reasons) if reasons else (out.error or "node error")
    if out.status in ("error", "timeout"):
        return out.error or out.status
    if out.blockers:
        return out.blockers[0].message
    return "does not fit"
