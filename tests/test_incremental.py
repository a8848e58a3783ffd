"""Snapshot versions: every update gives what a rebuild from the same objects gives.

The machine draws a cluster and feature gates, builds one snapshot, then runs a random
sequence of updates on it -- commit a pod's claims where they fit, release a claim,
republish a slice as a new pool generation, drop a slice, bring one back, drop every
slice of a node, drop or restore a class, a burst of many small updates in a row --
always asking the current version first, so that its caches (node views, blocks, the
cluster layout, one-node layouts, claim arrays) exist and are carried over. After
every step, ``feasible_nodes`` and ``allocate`` on the incremental version must equal
the same calls on a snapshot built from scratch from the objects the test tracks
itself; and an older version must still answer as it did.

Versions branch too: ``branch`` goes back to an earlier version and continues from
it, so siblings derived from one parent (each appending its own slices to the
store they share) must not see each other's changes. Some nodes are given as Node
objects and some are known only from their slices (so dropping a node's last slice
removes the node), and the persistent structures are made to merge and fold early
(tiny thresholds), so long chains exercise those paths within a few steps.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, replace
from typing import Any

from hypothesis import event, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, rule

import draspeed.engine.committed
import draspeed.engine.persistent
from draspeed.api.loader import load
from draspeed.api.model import (
    DeviceClass,
    Node,
    ResourceClaim,
    ResourceClaimStatus,
    ResourceSlice,
)
from draspeed.engine.allocator import Allocator
from draspeed.engine.snapshot import Snapshot
from draspeed.errors import AllocationError
from draspeed.features import Features
from draspeed.testing.cases import scenario_validation
from draspeed.testing.engines import results_json
from draspeed.testing.strategies import Cluster, claim_sets, clusters, features


def _answers(snapshot: Snapshot, claims: list[ResourceClaim]) -> dict[str, Any]:
    feasibility = Allocator(snapshot).feasible_nodes(claims)
    return {
        o.node: (o.status, o.error, None if o.results is None else results_json(o.results))
        for o in feasibility
    }


@dataclass
class Tracked:
    """The objects a version was made from, as the test tracks them itself."""

    snapshot: Snapshot
    slices: list[ResourceSlice]
    held: dict[str, ResourceClaim]
    classes: dict[str, DeviceClass]
    removed: list[ResourceSlice]


class Versions(RuleBasedStateMachine):
    cluster: Cluster
    gates: Features

    def __init__(self) -> None:
        super().__init__()
        self.next_claim = 0
        self.held: dict[str, ResourceClaim] = {}
        self.removed: list[ResourceSlice] = []
        self.history: list[tuple[Snapshot, list[ResourceClaim], dict[str, Any]]] = []
        self.versions: list[Tracked] = []
        self.saved = (draspeed.engine.persistent.MAX_DEPTH, draspeed.engine.committed.FOLD_MIN)

    @initialize(
        cluster=clusters(),
        gates=features(),
        given=st.integers(0, 3),
        depth=st.sampled_from([2, 3, 6]),
        fold=st.sampled_from([1, 3, 4096]),
    )
    def start(self, cluster: Cluster, gates: Features, given: int, depth: int, fold: int) -> None:
        self.cluster, self.gates = cluster, gates
        # Small thresholds: layers merge and holds fold after a few versions.
        draspeed.engine.persistent.MAX_DEPTH, draspeed.engine.committed.FOLD_MIN = depth, fold
        objects = load(cluster.documents, validate=scenario_validation(cluster.documents))
        # Nodes left out are known from their slices alone (unlabelled).
        self.nodes = objects.nodes[given:]
        self.all_nodes = objects.nodes
        self.slices = list(objects.slices)
        self.classes = {c.metadata.name: c for c in objects.classes}
        self.snapshot = Snapshot.build(
            self.slices, list(self.classes.values()), [], features=gates, nodes=self.nodes
        )

    def teardown(self) -> None:
        draspeed.engine.persistent.MAX_DEPTH, draspeed.engine.committed.FOLD_MIN = self.saved

    # -- helpers ---------------------------------------------------------------------

    def _claims(self, data: st.DataObject) -> list[ResourceClaim]:
        documents = data.draw(claim_sets(self.cluster, first=self.next_claim))
        self.next_claim += len(documents)
        return load(documents, validate=scenario_validation(documents)).claims

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
        self.versions.append(
            Tracked(
                self.snapshot,
                list(self.slices),
                dict(self.held),
                dict(self.classes),
                list(self.removed),
            )
        )
        # An earlier version still answers as it did when it was current.
        old, old_claims, old_answer = self.history[data.draw(st.integers(0, len(self.history) - 1))]
        assert _answers(old, old_claims) == old_answer

    # -- updates ---------------------------------------------------------------------

    def _node(self, data: st.DataObject) -> Node:
        """A node to allocate on: a known one (given, or named by slices), or not."""
        known = self.snapshot.nodes
        return data.draw(st.sampled_from(known if known else self.all_nodes))

    def _commit(self, data: st.DataObject) -> bool:
        claims = self._claims(data)
        node = self._node(data)
        try:
            results = Allocator(self.snapshot).allocate(claims, node)
        except AllocationError:
            results = None
        event(f"commit: {'fits' if results else 'no fit'}")
        if not results:
            return False
        done = [
            replace(c, status=ResourceClaimStatus(allocation=r))
            for c, r in zip(claims, results, strict=True)
        ]
        self.snapshot = self.snapshot.add_allocated(done)
        self.held.update((c.key, c) for c in done)
        return True

    def _release(self, data: st.DataObject) -> bool:
        if not self.held:
            return False
        key = data.draw(st.sampled_from(sorted(self.held)))
        self.snapshot = self.snapshot.remove_allocated(key)
        del self.held[key]
        return True

    @rule(data=st.data())
    def commit(self, data: st.DataObject) -> None:
        self._compare(data)
        if self._commit(data):
            self._compare(data)

    @rule(data=st.data())
    def release(self, data: st.DataObject) -> None:
        self._compare(data)
        if self._release(data):
            self._compare(data)

    @rule(data=st.data(), how=st.sampled_from(["republish", "drop", "restore"]))
    def slices_change(self, data: st.DataObject, how: str) -> None:
        self._compare(data)
        self._slices_change(data, how)
        event(f"slices: {how}")
        self._compare(data)

    @rule(data=st.data())
    def node_gone(self, data: st.DataObject) -> None:
        """Every slice of one node dropped at once (a node named only by slices leaves
        the known nodes; its slices can come back one by one with ``restore``)."""
        self._compare(data)
        names = sorted({s.spec.node_name for s in self.slices if s.spec.node_name})
        if not names:
            return
        name = data.draw(st.sampled_from(names))
        gone = [s for s in self.slices if s.spec.node_name == name]
        self.slices = [s for s in self.slices if s.spec.node_name != name]
        self.removed.extend(gone)
        self.snapshot = self.snapshot.update_slices(removed=gone)
        event(f"node gone: {'given' if any(n.name == name for n in self.nodes) else 'by slices'}")
        self._compare(data)

    @rule(data=st.data(), steps=st.integers(5, 40))
    def burst(self, data: st.DataObject, steps: int) -> None:
        """Many small updates with no question in between: long chains of versions (claim
        log links, map layers, holds overlays, pending layout trails) answered at once."""
        self._compare(data)
        for _ in range(steps):
            how = data.draw(st.sampled_from(["commit", "commit", "release", "republish"]))
            if how == "commit":
                self._commit(data)
            elif how == "release":
                self._release(data)
            else:
                self._slices_change(data, how)
        self._compare(data)

    @rule(data=st.data())
    def branch(self, data: st.DataObject) -> None:
        """Go back to an earlier version and go on from there: the next updates make
        siblings of versions already derived from it (which must answer as they did)."""
        if not self.versions:
            return
        back = self.versions[data.draw(st.integers(0, len(self.versions) - 1))]
        self.snapshot = back.snapshot
        self.slices, self.held = list(back.slices), dict(back.held)
        self.classes, self.removed = dict(back.classes), list(back.removed)
        event("branch")
        self._compare(data)
        if self._commit(data):
            self._compare(data)
        self._slices_change(data, "republish")
        self._compare(data)

    def _slices_change(self, data: st.DataObject, how: str) -> None:
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
