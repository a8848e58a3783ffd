"""The allocator's own answer for a pod's claims on a node, in NodeOutcome's terms."""

from __future__ import annotations

import time
from dataclasses import dataclass

from draspeed.api.model import AllocationResult, Node, ResourceClaim
from draspeed.engine.allocator import Allocator
from draspeed.engine.feasibility import Status
from draspeed.engine.snapshot import Snapshot
from draspeed.errors import AllocationError, AllocationTimeout, NodeAllocationError


@dataclass(slots=True)
class Verdict:
    status: Status
    error: str | None
    work: int
    results: list[AllocationResult] | None


def ask(
    snapshot: Snapshot, claims: list[ResourceClaim], node: Node, timeout: float | None
) -> Verdict:
    """What the allocator answers, in NodeOutcome's terms."""
    allocator = Allocator(snapshot)
    deadline = None if timeout is None else time.monotonic() + timeout
    try:
        results = allocator.allocate(claims, node, deadline=deadline)
    except AllocationTimeout as exc:
        return Verdict("timeout", str(exc), allocator.last_stats.search_steps, None)
    except NodeAllocationError as exc:
        return Verdict("node-error", str(exc), allocator.last_stats.search_steps, None)
    except AllocationError as exc:
        return Verdict("error", str(exc), allocator.last_stats.search_steps, None)
    work = allocator.last_stats.search_steps
    if results is None:
        return Verdict("does-not-fit", None, work, None)
    return Verdict("fits", None, work, results)
