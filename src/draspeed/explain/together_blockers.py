"""Requests that compete for the same devices: together they need more than there are."""

from __future__ import annotations

from draspeed.api.model import ResourceClaim
from draspeed.explain.alternatives import claim_alternatives
from draspeed.explain.facts import NodeFacts
from draspeed.explain.results import Blocker, Funnel


def together_blockers(
    facts: NodeFacts, claims: list[ResourceClaim], funnels: list[Funnel]
) -> list[Blocker]:
    """Requests that need more devices between them than they have candidates in all.

    Only plain exclusive requests are counted (no alternatives, no admin access, no
    devices allowing multiple allocations), where the count is a true lower bound.
    """
    candidates: dict[tuple[str, str], set[int]] = {}
    needs: dict[tuple[str, str], int] = {}
    for requests in claim_alternatives(claims):
        for alts in requests:
            if len(alts) != 1 or alts[0].admin or alts[0].mode != "ExactCount":
                continue
            alt = alts[0]
            claim = claims[alt.claim]
            device_class = facts.snap.classes.get(alt.class_name)
            if device_class is None:
                continue
            devices, _, _ = facts.select(facts.positions, device_class.spec.selectors, "")
            devices, _, _ = facts.select(devices, alt.selectors, "")
            found = set()
            for g in (int(x) for x in devices.tolist()):
                if facts.multi(facts.snap.device(g)):
                    break
                if (
                    facts.available(g, False)
                    and not facts.counter_shortfalls(g)
                    and facts.capacity_fits(g, alt.capacity)
                    and not facts.tainted(g, alt.tolerations)
                ):
                    found.add(g)
            else:
                candidates[(claim.key, alt.name)] = found
                needs[(claim.key, alt.name)] = alt.count
    if len(candidates) < 2:
        return []
    union: set[int] = set().union(*candidates.values())
    total = sum(needs.values())
    if total <= len(union):
        return []
    names = ", ".join(f"{c}/{r}" if len(claims) > 1 else r for c, r in candidates)
    return [
        Blocker(
            "together",
            f"requests {names} together need {total} devices, "
            f"but only {len(union)} distinct devices can serve them",
            {
                "requests": [f"{c}/{r}" for c, r in candidates],
                "needs": total,
                "candidates": len(union),
            },
        )
    ]
