"""Constraints that block: dropping them (one, else all) makes the claims fit."""

from __future__ import annotations

from dataclasses import replace

from draspeed.api.model import DeviceConstraint, Node, ResourceClaim
from draspeed.engine.snapshot import Snapshot
from draspeed.explain.results import Blocker
from draspeed.explain.verdict import ask


def _describe(constraint: DeviceConstraint) -> tuple[str, str]:
    if constraint.match_attribute is not None:
        return "matchAttribute", constraint.match_attribute
    if constraint.distinct_attribute is not None:
        return "distinctAttribute", constraint.distinct_attribute
    return "unknown", ""


def _without_constraints(
    claims: list[ResourceClaim], drop: set[tuple[int, int]]
) -> list[ResourceClaim]:
    """Copies of the claims without the constraints named (claim index, constraint index)."""
    out = []
    for c, claim in enumerate(claims):
        kept = [k for i, k in enumerate(claim.spec.devices.constraints) if (c, i) not in drop]
        if len(kept) == len(claim.spec.devices.constraints):
            out.append(claim)
            continue
        devices = replace(claim.spec.devices, constraints=kept)
        out.append(replace(claim, spec=replace(claim.spec, devices=devices)))
    return out


def _constraint_blocker(claim: ResourceClaim, index: int, alone: bool) -> Blocker:
    constraint = claim.spec.devices.constraints[index]
    kind, attribute = _describe(constraint)
    requests = ", ".join(constraint.requests) if constraint.requests else "all requests"
    effect = "without it the claims fit" if alone else "without the constraints the claims fit"
    return Blocker(
        "constraint",
        f"claim {claim.key}, constraint #{index} ({kind} {attribute}, {requests}): {effect}",
        {
            "claim": claim.key,
            "index": index,
            "type": kind,
            "attribute": attribute,
            "requests": list(constraint.requests),
            "alone": alone,
        },
    )


def constraint_blockers(
    snapshot: Snapshot, claims: list[ResourceClaim], node: Node, timeout: float | None
) -> list[Blocker]:
    where = [
        (c, i) for c, claim in enumerate(claims) for i in range(len(claim.spec.devices.constraints))
    ]
    found = []
    for c, i in where:
        trial = _without_constraints(claims, {(c, i)})
        if ask(snapshot, trial, node, timeout).status == "fits":
            found.append(_constraint_blocker(claims[c], i, alone=True))
    if found or len(where) < 2:
        return found
    if ask(snapshot, _without_constraints(claims, set(where)), node, timeout).status == "fits":
        return [_constraint_blocker(claims[c], i, alone=False) for c, i in where]
    return []
