"""Snapshot versions: every update gives what a rebuild from the same objects gives.

The machine draws a cluster and feature gates, builds one snapshot, then runs a random
sequence of updates on it -- commit a pod's claims where they fit, release a claim,
republish a slice as a new pool generation, drop a slice, bring one back, drop or
restore a class -- always asking the current version first, so that its caches
(node views, blocks, the cluster layout, claim arrays) exist and are carried over.
After every step, ``feasible_nodes`` and ``allocate`` on the incremental version must
equal the same calls on a snapshot built from scratch from the objects the test
tracks itself; and an older version must still answer as it did.
"""

from __future__ import annotations

import copy
from dataclasses import replace
from typing import Any

from hypothesis import event, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, rule

from draspeed.allocator import Allocator
from draspeed.api.model import ResourceClaim, ResourceClaimStatus, ResourceSlice
from draspeed.errors import AllocationError
from draspeed.features import Features
from draspeed.load import load
from draspeed.snapshot import Snapshot
from draspeed.testing.engines import results_json
from draspeed.testing.strategies import Cluster, claim_sets, clusters, features


def _answers(snapshot: Snapshot, claims: list[ResourceClaim]) -> dict[str, Any]:
    feasibility = Allocator(snapshot).feasible_nodes(claims)
    return {
        o.node: (o.status, o.error, None if o.results is None else results_json(o.results))
        for o in feasibility
    }


class Versions(RuleBasedStateMachine):
    cluster: Cluster
    gates: Features

    def __init__(self) -> None:
        super().__init__()
        self.next_claim = 0
        self.held: dict[str, ResourceClaim] = {}
        self.removed: list[ResourceSlice] = []
        self.history: list[tuple[Snapshot, list[ResourceClaim], dict[str, Any]]] = []

    @initialize(cluster=clusters(), gates=features())
    def start(self, cluster: Cluster, gates: Features) -> None:
        self.cluster, self.gates = cluster, gates
        objects = load(cluster.documents)
        self.nodes = objects.nodes
        self.slices = list(objects.slices)
        self.classes = {c.metadata.name: c for c in objects.classes}
        self.snapshot = Snapshot.build(
            self.slices, list(self.classes.values()), [], features=gates, nodes=self.nodes
        )

    # -- helpers ---------------------------------------------------------------------

    def _claims(self, data: st.DataObject) -> list[ResourceClaim]:
        documents = data.draw(claim_sets(self.cluster, first=self.next_claim))
        self.next_claim += len(documents)
        return load(documents).claims

    def _rebuilt(self) -> Snapshot:
        return Snapshot.build(
            self.slices,
            list(self.classes.values()),
            list(self.held.values()),
            features=self.gates,
            nodes=self.nodes,
        )

    def _compare(self, data: st.DataObject) -> None:
        """The incremental version answers as a rebuild does (and warms its caches)."""
        claims = self._claims(data)
        assert [s.metadata.name for s in self.snapshot.slices] == [
            s.metadata.name for s in self.slices
        ]
        assert [c.key for c in self.snapshot.allocated_claims] == list(self.held)
        got = _answers(self.snapshot, claims)
        assert got == _answers(self._rebuilt(), claims)
        self.history.append((self.snapshot, claims, got))
        # An earlier version still answers as it did when it was current.
        old, old_claims, old_answer = self.history[data.draw(st.integers(0, len(self.history) - 1))]
        assert _answers(old, old_claims) == old_answer

    # -- updates ---------------------------------------------------------------------

    @rule(data=st.data())
    def commit(self, data: st.DataObject) -> None:
        self._compare(data)
        claims = self._claims(data)
        node = data.draw(st.sampled_from(self.nodes))
        try:
            results = Allocator(self.snapshot).allocate(claims, node)
        except AllocationError:
            results = None
        event(f"commit: {'fits' if results else 'no fit'}")
        if not results:
            return
        done = [
            replace(c, status=ResourceClaimStatus(allocation=r))
            for c, r in zip(claims, results, strict=True)
        ]
        self.snapshot = self.snapshot.add_allocated(done)
        self.held.update((c.key, c) for c in done)
        self._compare(data)

    @rule(data=st.data())
    def release(self, data: st.DataObject) -> None:
        self._compare(data)
        if not self.held:
            return
        key = data.draw(st.sampled_from(sorted(self.held)))
        self.snapshot = self.snapshot.remove_allocated(key)
        del self.held[key]
        self._compare(data)

    @rule(data=st.data(), how=st.sampled_from(["republish", "drop", "restore"]))
    def slices_change(self, data: st.DataObject, how: str) -> None:
        self._compare(data)
        if how == "restore":
            if not self.removed:
                return
            back = self.removed.pop(data.draw(st.integers(0, len(self.removed) - 1)))
            self.snapshot = self.snapshot.update_slices(added=[back])
            self.slices.append(back)
        elif self.slices:
            i = data.draw(st.integers(0, len(self.slices) - 1))
            old = self.slices.pop(i)
            if how == "drop":
                self.snapshot = self.snapshot.update_slices(removed=[old.metadata.name])
                self.removed.append(old)
            else:  # the driver republishes its pool: a new generation of every slice
                pool = old.spec.pool
                newer = [
                    s
                    for s in self.slices
                    if s.spec.pool.name == pool.name and s.spec.driver == old.spec.driver
                ]
                bumped = []
                for s in [old, *newer]:
                    fresh = copy.deepcopy(s)
                    fresh.spec.pool.generation = pool.generation + 1
                    bumped.append(fresh)
                self.slices = [s for s in self.slices if s not in newer]
                self.slices.extend(bumped)
                self.snapshot = self.snapshot.update_slices(added=bumped)
        event(f"slices: {how}")
        self._compare(data)

    @rule(data=st.data())
    def classes_change(self, data: st.DataObject) -> None:
        self._compare(data)
        names = sorted(self.classes)
        if not names:
            return
        name = data.draw(st.sampled_from(names))
        cls = self.classes[name]
        if data.draw(st.booleans()):
            del self.classes[name]
            self.snapshot = self.snapshot.update_classes(removed=[name])
            self._compare(data)
            self.classes[name] = cls
            self.snapshot = self.snapshot.update_classes(added=[cls])
        else:
            changed = copy.deepcopy(cls)
            changed.spec.selectors = changed.spec.selectors[:-1]
            self.classes[name] = changed
            self.snapshot = self.snapshot.update_classes(added=[changed])
        self._compare(data)


Versions.TestCase.settings = settings(
    settings(), max_examples=max(settings().max_examples // 3, 12), stateful_step_count=8
)
TestVersions = Versions.TestCase
