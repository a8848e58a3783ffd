"""Allocating and releasing claims on one cluster, both engines checked at every step.

The machine draws a cluster and feature gates, then runs a random sequence of:

- ``allocate``: one pod's claims on node-1; both engines must agree and their results
  must pass the invariant checker against everything held so far; a success is
  committed (the claims join the allocated set with the fast engine's results);
- ``release``: a held claim is dropped from the allocated set (the snapshot is
  rebuilt from the remaining claims, as a scheduler's next cycle would);
- ``ask_again``: the same pending claims asked twice of one fast allocator (for
  another node, then node-1) must give what a freshly built allocator gives: the
  snapshot's per-node and per-selector caches must not leak between calls.
"""

from __future__ import annotations

from typing import Any

from hypothesis import event, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, rule

from draspeed.api import encode_allocation
from draspeed.cluster import make_allocator
from draspeed.features import Features
from draspeed.testing.cases import Scenario
from draspeed.testing.engines import Inputs, check_engines, results_json
from draspeed.testing.strategies import Cluster, claim_sets, clusters, features

NODE = "node-1"


class AllocateAndRelease(RuleBasedStateMachine):
    """One cluster over time; ``held`` are committed claims with their allocation."""

    cluster: Cluster
    gates: Features

    def __init__(self) -> None:
        super().__init__()
        self.held: list[dict[str, Any]] = []
        self.next_claim = 0

    @initialize(cluster=clusters(), gates=features())
    def start(self, cluster: Cluster, gates: Features) -> None:
        self.cluster = cluster
        self.gates = gates

    def _inputs(self, pending: list[dict[str, Any]], node: str = NODE) -> Inputs:
        documents = [*self.cluster.documents, *self.held, *pending]
        return Scenario(documents, node, self.gates).inputs()

    def _draw_claims(self, data: st.DataObject) -> list[dict[str, Any]]:
        pending = data.draw(claim_sets(self.cluster, first=self.next_claim))
        self.next_claim += len(pending)
        return pending

    @rule(data=st.data())
    def allocate(self, data: st.DataObject) -> None:
        pending = self._draw_claims(data)
        fast, _, problems = check_engines(self._inputs(pending))
        assert not problems, "\n".join(problems)
        event(f"allocate: {fast.outcome}, {len(self.held)} claims held")
        if fast.raw is None:
            return
        for document, result in zip(pending, fast.raw, strict=True):
            self.held.append({**document, "status": {"allocation": encode_allocation(result)}})

    @rule(data=st.data())
    def release(self, data: st.DataObject) -> None:
        # No precondition (Hypothesis gives up on rules that are often disabled):
        # releasing from an empty set does nothing.
        if self.held:
            del self.held[data.draw(st.integers(0, len(self.held) - 1))]

    @rule(data=st.data(), other=st.sampled_from(["node-2", "node-3"]))
    def ask_again(self, data: st.DataObject, other: str) -> None:
        pending = self._draw_claims(data)
        inputs = self._inputs(pending)
        reused = make_allocator(
            "fast", inputs.slices, inputs.classes, inputs.allocated, inputs.features
        )
        for node in (other, NODE, other, NODE):
            asked = self._inputs(pending, node)
            try:
                got: Any = reused.allocate(asked.claims, asked.node)
                got = None if got is None else results_json(got)
            except Exception as exc:  # compared by type and text below
                got = (type(exc).__name__, str(exc))
            fresh = make_allocator(
                "fast", asked.slices, asked.classes, asked.allocated, asked.features
            )
            try:
                want: Any = fresh.allocate(asked.claims, asked.node)
                want = None if want is None else results_json(want)
            except Exception as exc:
                want = (type(exc).__name__, str(exc))
            assert got == want, f"reused allocator on {node}: {got!r}, fresh: {want!r}"


AllocateAndRelease.TestCase.settings = settings(
    settings(), max_examples=max(settings().max_examples // 3, 10), stateful_step_count=8
)
TestAllocateAndRelease = AllocateAndRelease.TestCase
