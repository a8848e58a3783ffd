""":func:`explain`: the allocator's verdict, the funnels around it, and the blockers."""

from __future__ import annotations

import time

from draspeed import arguments
from draspeed.api.coerce import ClaimsInput, NodeInput, as_claims, as_node
from draspeed.api.model import Node, ObjectMeta
from draspeed.engine.snapshot import Snapshot
from draspeed.errors import AllocationError, AllocationTimeout
from draspeed.explain.alternatives import claim_alternatives
from draspeed.explain.blockers import find_blockers
from draspeed.explain.facts import NodeFacts
from draspeed.explain.funnel import node_funnels
from draspeed.explain.results import Explanation, PoolNote
from draspeed.explain.summary import summarise
from draspeed.explain.verdict import ask
from draspeed.features import Features


def explain(
    snapshot: Snapshot,
    claims: ClaimsInput,
    node: NodeInput,
    *,
    features: Features | None = None,
    timeout: float | None = None,
) -> Explanation:
    """Whether ``claims`` (one pod's, allocated together) fit on ``node``, and why (not).

    ``features`` other than the snapshot's explain as if those gates were set (the
    snapshot is rebuilt with them). ``timeout`` bounds each allocator run (seconds;
    None or 0: no bound); a run that times out makes the status ``timeout``, or leaves
    that experiment out. ``claims`` and ``node`` are taken as ``Allocator.allocate``
    takes them; wrong types are a TypeError naming the argument.
    """
    snapshot = arguments.instance_of(snapshot, Snapshot, "snapshot", "a Snapshot")
    claims = as_claims(claims)
    timeout = arguments.timeout(timeout)
    if features is not None:
        features = arguments.instance_of(features, Features, "features", "Features")
    if not isinstance(node, (str, Node)):
        node = as_node(node)
    if features is not None and features != snapshot.features:
        snapshot = Snapshot.build(
            snapshot.slices,
            list(snapshot.classes.values()),
            snapshot.allocated_claims,
            features=features,
            nodes=list(snapshot.given_nodes.values()),
        )
    if isinstance(node, str):
        node = snapshot.given_nodes.get(node) or Node(metadata=ObjectMeta(name=node))
    # The funnels evaluate every selector on every device of the node: bounded by the
    # same budget as the allocator's run, which they follow.
    deadline = None if timeout is None else time.monotonic() + timeout
    verdict = ask(snapshot, claims, node, timeout)
    out = Explanation(
        node=node.name,
        claims=[c.key for c in claims],
        status=verdict.status,
        summary="",
        error=verdict.error,
        work=verdict.work,
    )
    if verdict.results is not None:
        # (A claim given twice is allocated twice, as upstream allocates each claim it
        # is given: its key names the devices of both.)
        for claim, result in zip(claims, verdict.results, strict=True):
            out.allocations.setdefault(claim.key, []).extend(
                f"{r.driver}/{r.pool}/{r.device}" for r in result.devices.results
            )
    try:
        view = snapshot.node_view(node)
    except AllocationError:
        # Pool gathering failed (a slice's node selector is broken): the allocator
        # said so in ``error``; there is nothing on the node to count.
        out.summary = verdict.error or "pool gathering failed"
        return out
    facts = NodeFacts(snapshot, view, deadline)
    out.pools = [
        PoolNote(
            str(p.id),
            "invalid" if p.invalid else "incomplete",
            p.invalid_reason
            if p.invalid
            else "not all slices of the pool's newest generation are published (being updated)",
        )
        for p in view.pools
        if p.invalid or p.incomplete
    ]
    alternatives = claim_alternatives(claims)
    try:
        out.requests = node_funnels(facts, claims, alternatives, verdict.results)
        if verdict.status != "fits":
            out.blockers = find_blockers(
                snapshot, facts, claims, node, out.requests, verdict, timeout
            )
    except AllocationTimeout:
        # Out of time: the allocator's verdict, without the funnels and blockers.
        out.requests, out.blockers = [], []
    out.summary = summarise(out, claims)
    return out
