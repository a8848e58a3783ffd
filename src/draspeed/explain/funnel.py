"""The funnels: per request (or alternative), the node's devices counted stage by stage."""

from __future__ import annotations

from draspeed.api.limits import ALLOCATION_RESULTS_MAX_SIZE
from draspeed.api.model import AllocationResult, ResourceClaim
from draspeed.explain.alternatives import Alternative
from draspeed.explain.facts import NodeFacts
from draspeed.explain.results import Funnel


def node_funnels(
    facts: NodeFacts,
    claims: list[ResourceClaim],
    alternatives: list[list[list[Alternative]]],
    results: list[AllocationResult] | None,
) -> list[Funnel]:
    chosen: dict[tuple[int, str], list[str]] = {}
    for c, result in enumerate(results or []):
        for r in result.devices.results:
            chosen.setdefault((c, r.request), []).append(f"{r.driver}/{r.pool}/{r.device}")
    funnels: list[Funnel] = []
    for c, requests in enumerate(alternatives):
        claim_funnels = [[_funnel(facts, claims[c], alt) for alt in alts] for alts in requests]
        # An alternative is unusable when even the smallest choice for every other
        # request leaves no room for it under the per-claim device limit.
        fewest = [min((f.needs for f in fs), default=0) for fs in claim_funnels]
        for ri, fs in enumerate(claim_funnels):
            others = sum(fewest) - fewest[ri]
            for f in fs:
                f.over_claim_limit = f.needs + others > ALLOCATION_RESULTS_MAX_SIZE
                f.chosen = chosen.get((c, f.request), [])
                funnels.append(f)
    return funnels


def _funnel(facts: NodeFacts, claim: ResourceClaim, alt: Alternative) -> Funnel:
    funnel = Funnel(
        claim=claim.key,
        request=alt.name,
        device_class=alt.class_name,
        allocation_mode=alt.mode,
        needs=alt.count,
        admin_access=alt.admin,
    )
    devices = facts.positions
    funnel.on_node = len(devices)
    device_class = facts.snap.classes.get(alt.class_name)
    if device_class is None:
        # The allocator reports the missing class as its error; nothing can match.
        if alt.mode == "All":
            funnel.needs = 0
        return funnel
    devices, errors_a, first_a = facts.select(
        devices, device_class.spec.selectors, f"class {alt.class_name}"
    )
    funnel.class_selectors = len(devices)
    offset_b = devices
    devices, errors_b, first_b = facts.select(devices, alt.selectors, f"claim {claim.key}")
    funnel.request_selectors = len(devices)
    funnel.selector_errors = errors_a + errors_b
    # Errors of the request's selectors come after the class's on the same device;
    # compare them in search order (global positions of the node's devices).
    firsts = []
    if first_a is not None:
        firsts.append((int(facts.positions[first_a[0]]), first_a[1]))
    if first_b is not None:
        firsts.append((int(offset_b[first_b[0]]), first_b[1]))
    if firsts:
        order = {int(g): i for i, g in enumerate(facts.positions.tolist())}
        funnel.selector_error = min(firsts, key=lambda e: order[e[0]])[1]

    candidates = [int(g) for g in devices.tolist()]
    if alt.mode == "All":
        candidates = [g for g in candidates if facts.statically_fits(g, alt.capacity)]
        funnel.needs = len(candidates)
    before = len(candidates)
    candidates = [g for g in candidates if facts.available(g, alt.admin)]
    funnel.available = len(candidates)
    funnel.in_use = before - len(candidates)
    kept = []
    for g in candidates:
        shortfalls = facts.counter_shortfalls(g)
        if shortfalls:
            funnel._counter_shorts.extend(shortfalls)
        else:
            kept.append(g)
    candidates = kept
    funnel.counters = len(candidates)
    candidates = [g for g in candidates if facts.capacity_fits(g, alt.capacity)]
    funnel.capacity = len(candidates)
    candidates = [g for g in candidates if not facts.tainted(g, alt.tolerations)]
    funnel.taints = len(candidates)
    return funnel
