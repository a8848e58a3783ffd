"""Placing pods one at a time, asking the allocator each distinct question once.

A fill asks "does this pod fit on that node" tens of thousands of times, and
nearly every answer repeats one already given. :class:`Placer` keeps, per node:

- for an *independent* node (:mod:`draspeed.analysis.inventory`) its :class:`State`:
  its kind (:mod:`draspeed.analysis.kinds`) and what committed claims hold there,
  by device position. A state is asked about in its *world*: a one-node snapshot of
  the kind's representative (``Snapshot.build`` of its slices) where one claim holds
  the same positions (``add_allocated``). Answers are kept per (state, shape) and
  shared by every node in that state; committing one moves the node to the next
  state, known after the first time. A placement therefore costs a look-up and the
  copy of a result, whatever the size of the cluster;
- for every other node: the real snapshot with every pod placed on such nodes so
  far, and the answers asked there, kept until something the node sees changes
  (a placement on it, or on a pool it shares with others).

An answer a world cannot give for the node (an allocation error names devices and
claims; a timeout depends on the clock) is asked again on the real snapshot in the
node's state. ``memoise=False`` asks every question on the real snapshot.
"""

from __future__ import annotations

import dataclasses
import re
import time
import uuid
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from draspeed.analysis.accounting import Accounting, DeviceCounts, NodeUsage, sum_usages
from draspeed.analysis.amounts import nanos_of
from draspeed.analysis.bestfit import best_fit
from draspeed.analysis.inventory import Inventory
from draspeed.analysis.kinds import Kind, Kinds, NodeLayout, compared_attributes
from draspeed.analysis.node_model import NodeModel, Published
from draspeed.analysis.requests import SelectorVerdicts, members
from draspeed.api._model_tree import clone
from draspeed.api.model import (
    AllocationResult,
    DeviceAllocationResult,
    DeviceRequestAllocationResult,
    Node,
    ObjectMeta,
    ResourceClaim,
    ResourceClaimSpec,
    ResourceClaimStatus,
)
from draspeed.engine.allocator import Allocator
from draspeed.engine.snapshot import Snapshot
from draspeed.errors import AllocationError, AllocationTimeout, NodeAllocationError
from draspeed.quantity import Quantity
from draspeed.rules.allocated_state import AllocatedState
from draspeed.rules.ids import PoolID

if TYPE_CHECKING:
    from draspeed.analysis.fragmentation import FragmentationReport, NodeFragmentation
    from draspeed.analysis.shapes import PodShape
    from draspeed.analysis.strategies import DeviceChoice

Status = Literal["fits", "does-not-fit", "error", "node-error", "timeout"]
# What one committed result entry holds on a node: (device position, share, consumed).
Hold = tuple[int, bool, tuple[tuple[str, Quantity], ...]]


@dataclass(slots=True, eq=False)
class Answer:
    """What the allocator answered for one shape in one state (or on one node)."""

    status: Status
    reason: str | None = None  # the error text
    # The results; a world's answer names the kind representative's devices.
    results: list[AllocationResult] | None = None
    work: int = 0
    # A world's answer: the device positions taken, what they hold, the next state.
    positions: list[int] = field(default_factory=list)
    holds: tuple[Hold, ...] = ()
    next: State | None = None
    # Devices taken per DeviceClass (scoring).
    per_class: dict[str, int] = field(default_factory=dict)
    # True: a world's answer that only the real snapshot can give for a node.
    exact: bool = False

    @property
    def fits(self) -> bool:
        return self.status == "fits"


@dataclass(eq=False)
class State:
    """An independent node's kind and what committed claims hold on it."""

    id: int
    kind: Kind
    holds: tuple[Hold, ...]
    world: Snapshot | None = None
    # The state this one was first reached from, and what was added: its world is
    # derived from that one's (one claim more) rather than from the empty world.
    parent: tuple[State, tuple[Hold, ...]] | None = None
    answers: dict[Any, Answer] = field(default_factory=dict)
    memo: dict[Any, Any] = field(default_factory=dict)  # usage, class counts, reasons


@dataclass(slots=True)
class Record:
    """One pod on one node: its number, shape, and the answer committed."""

    pod: int
    shape: int
    answer: Answer
    holds: tuple[Hold, ...] = ()  # on an independent node
    claims: list[ResourceClaim] | None = None  # real claims, once materialised


class AnswerMemory:
    """Answers kept from one placer to the next over clusters that share nodes (the
    inverse question's fills): per kind -- its representative's name and names of
    pools and devices, and what it publishes -- and state, shape and device choice.
    Only for placers of the same shapes (``shapes``: their names)."""

    def __init__(self, shapes: Sequence[str]) -> None:
        self.shapes = list(shapes)
        self._kinds: dict[Any, int] = {}
        self.answers: dict[tuple[int, tuple[Hold, ...], Any], Answer] = {}

    def kind(self, key: Any) -> int:
        """A number for a kind key (the same for an equal key from another placer)."""
        return self._kinds.setdefault(key, len(self._kinds))


class Placer:
    """The cluster as pods are placed: ask, commit, remove, and read the state back.

    Usage::

        placer = Placer(snapshot, nodes, shapes)
        answer = placer.ask(i, s, pod)             # node i, shape s, pod number
        if answer.fits:
            placer.commit(i, s, pod, answer)      # placer.changed: nodes to ask again
        placer.usage(i); placer.final_snapshot()
    """

    def __init__(
        self,
        snapshot: Snapshot,
        nodes: Sequence[Node],
        shapes: Sequence[PodShape],
        *,
        memoise: bool = True,
        timeout: float | None = None,
        memory: AnswerMemory | None = None,
    ) -> None:
        if memory is not None and memory.shapes != [s.name for s in shapes]:
            raise ValueError("an answer memory of other shapes")
        self.memory = memory
        self._remembered: dict[int, int] = {}  # kind id -> its number in the memory
        self.base = snapshot
        self.real = snapshot  # base + every pod placed on a node searched for real
        self.nodes = list(nodes)
        self.shapes = list(shapes)
        self.timeout = timeout
        self.features = snapshot.features
        self.verdicts = SelectorVerdicts(snapshot.classes, shapes, snapshot.features)
        self.inventory = Inventory(snapshot, self.nodes)
        self.index = {n.name: i for i, n in enumerate(self.nodes)}
        self.kinds = Kinds(
            self.inventory,
            self.nodes if memoise else [],
            self.verdicts,
            compared_attributes(self.verdicts),
        )
        self.kind_of: list[Kind | None] = (
            self.kinds.kind_of if memoise else [None] * len(self.nodes)
        )
        self._states: dict[tuple[int, tuple[Hold, ...]], State] = {}
        self._worlds: dict[int, Snapshot] = {}  # kind id -> its empty world
        self.state: list[State | None] = [
            None if k is None else self._initial_state(i, k) for i, k in enumerate(self.kind_of)
        ]
        self.initial = list(self.state)  # before any pod is placed
        self.version = [0] * len(self.nodes)
        self.records: list[list[Record]] = [[] for _ in self.nodes]
        # Answers asked on the real snapshot: node -> (version, key -> answer).
        self._asked: dict[int, tuple[int, dict[Any, Answer]]] = {}
        self._ask_claims = [shape.instantiate(0) for shape in self.shapes]
        # The DeviceClasses the shapes ask for (what scoring counts).
        self.classes = sorted(
            {a.alternative.class_name for shape in self.verdicts.shapes for a in shape.alternatives}
        )
        self._class_counts: dict[int, tuple[int, dict[str, tuple[int, int]]]] = {}
        self._kind_facts: dict[int, _KindFacts] = {}
        self._published: dict[tuple[str, int], Published] = {}
        self.changed: set[int] = set()  # nodes whose answers the last change altered
        self.calls = 0  # allocate calls
        self.work = 0  # search steps over them
        # Device-level accounting shared by the usage of every state (_state_usage).
        self._accounting: Accounting | None = None

    # ------------------------------------------------------------------------ states

    def _layout(self, i: int) -> NodeLayout:
        return self.kinds.layout(i)

    def _initial_state(self, i: int, kind: Kind) -> State:
        holds: list[Hold] = []
        for held in self.inventory.holdings(self.nodes[i].name):
            allocation = held.claim.status.allocation
            assert allocation is not None
            entries = [allocation.devices.results[j] for j in held.results]
            holds.extend(self._holds_of(entries, i))
        return self._intern(kind, tuple(sorted(holds)))

    def _holds_of(self, entries: Sequence[DeviceRequestAllocationResult], i: int) -> list[Hold]:
        """What result entries (in node i's names) hold, by device position."""
        consumable = self.features.consumable_capacity
        layout = self._layout(i)
        pool_at = {pid: k for k, pid in enumerate(layout.pools)}
        out: list[Hold] = []
        for r in entries:
            if r.admin_access:
                continue  # admin access holds nothing
            k = pool_at[PoolID(r.driver, r.pool)]
            # A device the pool does not publish (a stale claim) holds nothing either.
            p = layout.index.get((k, r.device))
            if p is None:
                continue
            share = consumable and r.share_id is not None
            consumed = tuple(sorted(r.consumed_capacity.items())) if share else ()
            out.append((p, share, consumed))
        return out

    def _intern(self, kind: Kind, holds: tuple[Hold, ...]) -> State:
        key = (kind.id, holds)
        found = self._states.get(key)
        if found is None:
            found = self._states[key] = State(len(self._states), kind, holds)
        return found

    def world(self, state: State) -> Snapshot:
        """The state's one-node snapshot (built the first time it is asked about)."""
        if state.world is None:
            kind = state.kind
            empty = self._worlds.get(kind.id)
            if empty is None:
                empty = self._worlds[kind.id] = Snapshot.build(
                    kind.slices,
                    list(self.base.classes.values()),
                    features=self.features,
                    nodes=[self.nodes[kind.rep]],
                )
            parent = state.parent
            if parent is not None and parent[0].world is not None:
                state.world = parent[0].world.add_allocated(self._holding_claim(state, parent[1]))
            elif state.holds:
                state.world = empty.add_allocated(self._holding_claim(state, state.holds))
            else:
                state.world = empty
        return state.world

    def _holding_claim(self, state: State, holds: tuple[Hold, ...]) -> ResourceClaim:
        """One claim that holds these positions on the representative (all the
        allocator reads of committed claims is what they hold)."""
        layout = self._layout(state.kind.rep)
        results = [
            DeviceRequestAllocationResult(
                request="held",
                driver=layout.pools[layout.pool_of[p]].driver,
                pool=layout.pools[layout.pool_of[p]].pool,
                device=layout.names[p],
                share_id=f"share-{state.id}-{n}" if share else None,
                consumed_capacity=dict(consumed),
            )
            for n, (p, share, consumed) in enumerate(holds)
        ]
        return ResourceClaim(
            metadata=ObjectMeta(name=f"capacity-state-{state.id}", namespace="draspeed"),
            spec=ResourceClaimSpec(),
            status=ResourceClaimStatus(
                allocation=AllocationResult(devices=DeviceAllocationResult(results=results))
            ),
        )

    # --------------------------------------------------------------------------- ask

    def ask(self, i: int, s: int, pod: int, choice: DeviceChoice = "upstream") -> Answer:
        """Whether pod number ``pod`` of shape ``s`` fits on node ``i`` now, and where
        (``choice``: upstream's devices, or best fit's)."""
        key = s if choice == "upstream" else (choice, s)
        state = self.state[i]
        if state is not None:
            found = state.answers.get(key)
            if found is None:
                found = state.answers[key] = self._ask_world(state, s, choice)
            if not found.exact:
                return found
        version = self.version[i]
        cached = self._asked.get(i)
        if cached is None or cached[0] != version:
            cached = self._asked[i] = (version, {})
        found = cached[1].get(key)
        if found is None:
            found = cached[1][key] = self._ask_real(i, s, pod, choice)
        return found

    def _ask_world(self, state: State, s: int, choice: DeviceChoice) -> Answer:
        memory = self.memory
        if memory is None:
            return self._ask_world_now(state, s, choice)
        key = (
            self._memory_kind(state.kind),
            state.holds,
            s if choice == "upstream" else (choice, s),
        )
        found = memory.answers.get(key)
        if found is None:
            found = memory.answers[key] = self._ask_world_now(state, s, choice)
        if found.next is None:
            return found
        # The next state is this placer's own (the answer's holds lead there).
        answer = dataclasses.replace(found)
        answer.next = self._intern(state.kind, tuple(sorted(state.holds + found.holds)))
        if answer.next.world is None and answer.next.parent is None:
            answer.next.parent = (state, found.holds)
        return answer

    def _memory_kind(self, kind: Kind) -> int:
        found = self._remembered.get(kind.id)
        if found is None:
            assert self.memory is not None
            layout = self._layout(kind.rep)
            key = (
                self.nodes[kind.rep].name,
                tuple(layout.pools),
                tuple(layout.names),
                kind.signature,
            )
            found = self._remembered[kind.id] = self.memory.kind(key)
        return found

    def _ask_world_now(self, state: State, s: int, choice: DeviceChoice) -> Answer:
        kind = state.kind
        rep = self.nodes[kind.rep]
        world = self.world(state)
        claims = self._ask_claims[s]
        if choice == "best-fit":
            upstream = self.ask_state(state, s)
            answer = best_fit(
                world,
                self.published(kind.rep),
                self.verdicts.shapes[s],
                self.verdicts,
                upstream,
                lambda other: self._allocate(other, claims, rep, s),
            )
            if answer is upstream:
                return upstream
        else:
            answer = self._allocate(world, claims, rep, s)
        if answer.status != "fits":
            # Errors name devices and claims: the real node says them in its own words.
            answer.exact = answer.status != "does-not-fit"
            return answer
        assert answer.results is not None
        entries = [r for result in answer.results for r in result.devices.results]
        layout = self._layout(kind.rep)
        pool_at = {pid: k for k, pid in enumerate(layout.pools)}
        answer.positions = [
            layout.index[(pool_at[PoolID(r.driver, r.pool)], r.device)] for r in entries
        ]
        answer.holds = tuple(self._holds_of(entries, kind.rep))
        answer.next = self._intern(kind, tuple(sorted(state.holds + answer.holds)))
        if answer.next.world is None and answer.next.parent is None:
            answer.next.parent = (state, answer.holds)
        return answer

    def ask_state(self, state: State, s: int) -> Answer:
        """Upstream's answer for shape ``s`` in a state (kept with the state)."""
        found = state.answers.get(s)
        if found is None:
            found = state.answers[s] = self._ask_world(state, s, "upstream")
        return found

    def _ask_real(self, i: int, s: int, pod: int, choice: DeviceChoice) -> Answer:
        node = self.nodes[i]
        snapshot = self._real_snapshot(i)
        claims = self.shapes[s].instantiate(pod)
        if choice == "best-fit":
            return best_fit(
                snapshot,
                self.published(i),
                self.verdicts.shapes[s],
                self.verdicts,
                self.ask(i, s, pod),
                lambda other: self._allocate(other, claims, node, s),
            )
        return self._allocate(snapshot, claims, node, s)

    def published(self, i: int) -> Published:
        """What node ``i`` publishes (for a node of a kind: what its representative
        does), read once."""
        kind = self.kind_of[i]
        key: tuple[str, int] = ("kind", kind.id) if kind is not None else ("node", i)
        found = self._published.get(key)
        if found is None:
            partitionable = self.features.partitionable_devices
            if kind is not None:
                node = self.nodes[kind.rep]
                slices = kind.slices
            else:
                node = self.nodes[i]
                seen = self.inventory.pools_seen(node.name)
                slices = [rs for pid in seen for rs in self.inventory.pools[pid].slices]
            found = self._published[key] = Published(slices, node, partitionable=partitionable)
        return found

    def _allocate(
        self, snapshot: Snapshot, claims: list[ResourceClaim], node: Node, s: int
    ) -> Answer:
        allocator = Allocator(snapshot)
        deadline = None if self.timeout is None else time.monotonic() + self.timeout
        try:
            results = allocator.allocate(claims, node, deadline=deadline)
        except AllocationTimeout as exc:
            answer = Answer("timeout", str(exc))
        except NodeAllocationError as exc:
            answer = Answer("node-error", str(exc))
        except AllocationError as exc:
            answer = Answer("error", str(exc))
        else:
            if results is None:
                answer = Answer("does-not-fit")
            else:
                answer = Answer("fits", results=results)
                answer.per_class = self._per_class(s, results)
        answer.work = allocator.last_stats.search_steps
        self.calls += 1
        self.work += answer.work
        return answer

    def _per_class(self, s: int, results: list[AllocationResult]) -> dict[str, int]:
        requests = self.verdicts.shapes[s]
        out: dict[str, int] = {}
        for c, result in enumerate(results):
            for r in result.devices.results:
                name = requests.class_of(c, r.request)
                out[name] = out.get(name, 0) + 1
        return out

    def _real_snapshot(self, i: int) -> Snapshot:
        """The real snapshot as node ``i`` sees it now: for an independent node, its
        own placements are added (they live in its state otherwise)."""
        if self.state[i] is None or not self.records[i]:
            return self.real
        return self.real.add_allocated(
            [c for record in self.records[i] for c in self._real_claims(i, record)]
        )

    # ------------------------------------------------------------------------ commit

    def commit(self, i: int, s: int, pod: int, answer: Answer) -> list[str]:
        """Place pod ``pod`` of shape ``s`` on node ``i`` as ``answer`` says (it fits);
        its devices as ``driver/pool/device``. ``changed`` then names every node whose
        answers may differ."""
        assert answer.fits and answer.results is not None
        record = Record(pod, s, answer)
        self.records[i].append(record)
        self.version[i] += 1
        self.changed = {i}
        state = self.state[i]
        if state is not None:
            if answer.next is not None:
                record.holds = answer.holds
                self.state[i] = answer.next
                return self._device_names(i, answer.positions)
            # An answer of the real snapshot, on an independent node.
            entries = [r for res in answer.results for r in res.devices.results]
            record.holds = tuple(self._holds_of(entries, i))
            self.state[i] = self._intern(state.kind, tuple(sorted(state.holds + record.holds)))
            return [f"{r.driver}/{r.pool}/{r.device}" for r in entries]
        self.real = self.real.add_allocated(self._real_claims(i, record))
        entries = [r for res in answer.results for r in res.devices.results]
        self._touch({PoolID(r.driver, r.pool) for r in entries})
        return [f"{r.driver}/{r.pool}/{r.device}" for r in entries]

    def _touch(self, pools: set[PoolID]) -> None:
        """Nodes that see a pool whose allocations changed: their answers are stale."""
        for pool in pools:
            for name in self.inventory.nodes_seeing(pool):
                j = self.index.get(name)
                if j is not None and self.state[j] is None:
                    self.version[j] += 1
                    self.changed.add(j)

    def remove(self, i: int, pod: int) -> None:
        """Take pod number ``pod`` off node ``i`` (it leaves; its devices are free)."""
        records = self.records[i]
        k = next(k for k, r in enumerate(records) if r.pod == pod)
        record = records.pop(k)
        self.version[i] += 1
        self.changed = {i}
        state = self.state[i]
        if state is not None:
            left = Counter(state.holds)
            left.subtract(record.holds)
            self.state[i] = self._intern(state.kind, tuple(sorted(left.elements())))
            return
        claims = self._real_claims(i, record)
        self.real = self.real.remove_allocated([c.key for c in claims])
        assert record.answer.results is not None
        entries = [r for res in record.answer.results for r in res.devices.results]
        self._touch({PoolID(r.driver, r.pool) for r in entries})

    # --------------------------------------------------------------------- read back

    def _device_names(self, i: int, positions: list[int]) -> list[str]:
        layout = self._layout(i)
        out = []
        for p in positions:
            pid = layout.pools[layout.pool_of[p]]
            out.append(f"{pid.driver}/{pid.pool}/{layout.names[p]}")
        return out

    def _real_claims(self, i: int, record: Record) -> list[ResourceClaim]:
        """The pod's claims with their allocations, in the node's own names."""
        if record.claims is None:
            answer = record.answer
            assert answer.results is not None
            results = [_copy(r) for r in answer.results]
            if answer.next is not None:  # a world's answer: the representative's names
                kind = self.kind_of[i]
                assert kind is not None
                self._rename(results, kind.rep, i)
            claims = self.shapes[record.shape].instantiate(record.pod)
            record.claims = [
                dataclasses.replace(c, status=dataclasses.replace(c.status, allocation=r))
                for c, r in zip(claims, results, strict=True)
            ]
        return record.claims

    def _rename(self, results: list[AllocationResult], rep: int, i: int) -> None:
        """Results on node ``rep`` made node ``i``'s: devices by position, node name."""
        src, dst = self._layout(rep), self._layout(i)
        pool_at = {pid: k for k, pid in enumerate(src.pools)}
        old, new = self.nodes[rep].name, self.nodes[i].name
        for result in results:
            for r in result.devices.results:
                p = src.index[(pool_at[PoolID(r.driver, r.pool)], r.device)]
                r.pool = dst.pools[dst.pool_of[p]].pool
                r.device = dst.names[p]
            if result.node_selector is not None:
                for term in result.node_selector.node_selector_terms:
                    for requirement in term.match_fields:
                        if requirement.key == "metadata.name":
                            requirement.values = [
                                new if v == old else v for v in requirement.values
                            ]

    def final_snapshot(self) -> Snapshot:
        """The input snapshot with every placed pod committed."""
        claims = [
            c
            for i, records in enumerate(self.records)
            if self.state[i] is not None
            for r in records
            for c in self._real_claims(i, r)
        ]
        return self.real.add_allocated(claims) if claims else self.real

    def usage(self, i: int, accounting: Accounting | None = None) -> NodeUsage:
        """Devices and counters of node ``i`` now."""
        state = self.state[i]
        if state is None:
            return (accounting or Accounting(self.real)).node_usage(self.nodes[i])
        return self._as_node(i, self._state_usage(state))

    def _state_usage(self, state: State) -> NodeUsage:
        found = state.memo.get("usage")
        if found is None:
            rep = self.nodes[state.kind.rep]
            if self._accounting is None:
                self._accounting = Accounting(self.real)
            found = state.memo["usage"] = Accounting(
                self.world(state), like=self._accounting
            ).node_usage(rep)
        return found

    def _as_node(self, i: int, usage: NodeUsage) -> NodeUsage:
        kind = self.kind_of[i]
        assert kind is not None
        src, dst = self.kinds.pools[kind.rep], self.kinds.pools[i]
        rename = {str(a): str(b) for a, b in zip(src, dst, strict=True)}
        return dataclasses.replace(
            usage,
            node=self.nodes[i].name,
            unusable_pools={rename.get(p, p): why for p, why in usage.unusable_pools.items()},
        )

    def class_counts(self, i: int) -> dict[str, tuple[int, int]]:
        """Per DeviceClass the shapes use: (devices of the class node ``i`` sees, devices
        in use) now -- what least/most-allocated scoring reads."""
        from draspeed.analysis.fragmentation import fragmentation

        state = self.state[i]
        if state is not None:
            found = state.memo.get("classes")
            if found is None:
                facts = self._facts(state.kind)
                held = {p for p, _, _ in state.holds}
                found = state.memo["classes"] = {
                    name: (len(positions), len(held.intersection(positions)))
                    for name, positions in facts.classes.items()
                }
            return found
        cached = self._class_counts.get(i)
        if cached is None or cached[0] != self.version[i]:
            report = fragmentation(self.real, [self.nodes[i]], classes=self.classes)
            cached = self._class_counts[i] = (self.version[i], _counts(report.nodes[0].classes))
        return cached[1]

    def counter_use(self, i: int) -> dict[str, tuple[int, int]]:
        """Per counter name: (used, capacity) on node ``i`` now, in nanos."""
        state = self.state[i]
        if state is None:
            counters = self.usage(i).counters
            return {n: (c.used.nanos, c.capacity.nanos) for n, c in counters.items()}
        found = state.memo.get("counters")
        if found is None:
            facts = self._facts(state.kind)
            used = dict.fromkeys(facts.capacity, 0)
            for p in {p for p, _, _ in state.holds}:
                for name, amount in facts.consumes[p].items():
                    if name in used:
                        used[name] += amount
            found = state.memo["counters"] = {n: (used[n], c) for n, c in facts.capacity.items()}
        return found

    def _facts(self, kind: Kind) -> _KindFacts:
        """A kind's devices, position by position: class membership and counter use."""
        found = self._kind_facts.get(kind.id)
        if found is None:
            found = self._kind_facts[kind.id] = _KindFacts.of(self, kind)
        return found

    def cluster_usage(self, name: str = "(cluster)") -> NodeUsage:
        """Totals over the nodes, each device and pool counted once."""
        others = [n for i, n in enumerate(self.nodes) if self.state[i] is None]
        parts = [(Accounting(self.real).cluster_usage(others, name), 1)]
        by_state = Counter(state for state in self.state if state is not None)
        parts += [(self._state_usage(state), n) for state, n in by_state.items()]
        total = sum_usages(name, parts)
        # Pools that cannot be searched, by their own names on each node.
        for i, state in enumerate(self.state):
            if state is not None and state.memo["usage"].unusable_pools:
                total.unusable_pools.update(self.usage(i).unusable_pools)
        return total

    def fragmentation(
        self, profile_attribute: str = "profile", *, initial: bool = False
    ) -> FragmentationReport:
        """The fragmentation report of the nodes now (placements included; with
        ``initial``, as they were before any): nodes in the same state share one
        report, named after each node."""
        from draspeed.analysis.fragmentation import (
            CLUSTER,
            FragmentationReport,
            fragmentation,
            summed,
        )

        states = self.initial if initial else self.state
        classes = list(self.base.classes)
        others = [n for i, n in enumerate(self.nodes) if states[i] is None]
        real = fragmentation(
            self.base if initial else self.real,
            others,
            classes=classes,
            profile_attribute=profile_attribute,
        )
        errors = dict(real.class_errors)
        of_state: dict[int, NodeFragmentation] = {}
        parts: list[tuple[NodeFragmentation, int]] = [(real.cluster, 1)]
        for one, n in Counter(s for s in states if s is not None).items():
            key = ("fragmentation", profile_attribute)
            found = one.memo.get(key)
            if found is None:
                rep = self.nodes[one.kind.rep]
                report = fragmentation(
                    self.world(one), [rep], classes=classes, profile_attribute=profile_attribute
                )
                found = one.memo[key] = (report.nodes[0], report.class_errors)
            of_state[one.id], more = found
            errors.update(more)
            parts.append((of_state[one.id], n))
        by_name = {n.node: n for n in real.nodes}
        nodes: list[NodeFragmentation] = []
        for i, node in enumerate(self.nodes):
            state = states[i]
            if state is None:
                nodes.append(by_name[node.name])
            else:
                mine = of_state[state.id]
                nodes.append(
                    dataclasses.replace(mine, node=node.name, usage=self._as_node(i, mine.usage))
                )
        cluster = summed(CLUSTER, parts)
        return FragmentationReport(nodes, cluster, profile_attribute, errors)

    def explain(self, i: int, s: int, pod: int) -> str | None:
        """Why shape ``s`` does not fit on node ``i`` now (explain()'s summary)."""
        from draspeed.explain import explain

        claims = self.shapes[s].instantiate(pod)
        state = self.state[i]
        if state is None or self.ask(i, s, pod).exact:
            return str(explain(self._real_snapshot(i), claims, self.nodes[i]).summary)
        key = ("reason", s)
        found = state.memo.get(key)
        rep = state.kind.rep
        if found is None:
            text = str(explain(self.world(state), claims, self.nodes[rep]).summary)
            found = state.memo[key] = (text, [c.key for c in claims])
        text, keys = found
        names = dict(zip(keys, (c.key for c in claims), strict=True))
        names.update(self._names(rep, i))
        return _substitute(text, names)

    def _names(self, rep: int, i: int) -> dict[str, str]:
        """Node ``rep``'s names that stand where node ``i``'s do: node, pools, devices,
        counter sets."""
        src, dst = self._layout(rep), self._layout(i)
        names = {self.nodes[rep].name: self.nodes[i].name}
        for a, b in zip(src.pools, dst.pools, strict=True):
            names[a.pool] = b.pool
        for a_name, b_name in zip(src.names, dst.names, strict=True):
            names.setdefault(a_name, b_name)
        for a_sets, b_sets in zip(src.counter_sets, dst.counter_sets, strict=True):
            b_by_number = {n: name for name, n in b_sets.items()}
            for name, n in a_sets.items():
                if n in b_by_number:
                    names.setdefault(name, b_by_number[n])
        return names


@dataclass
class _KindFacts:
    """What a kind's representative publishes, by device position: the usable devices
    of each DeviceClass the shapes use, and counter consumption and capacity by counter
    name (as usage reports add them up over counter sets), usable pools only."""

    classes: dict[str, list[int]]
    consumes: list[dict[str, int]]
    capacity: dict[str, int]

    @classmethod
    def of(cls, placer: Placer, kind: Kind) -> _KindFacts:
        slices = placer.kinds._slices(kind.rep)
        model = NodeModel(
            kind.slices, AllocatedState(), partitionable=placer.features.partitionable_devices
        )
        newest: dict[PoolID, int] = {}
        for _, rs in slices:
            pid = PoolID(rs.spec.driver, rs.spec.pool.name)
            newest[pid] = max(newest.get(pid, rs.spec.pool.generation), rs.spec.pool.generation)
        usable: list[bool] = []
        consumes: list[dict[str, int]] = []
        capacity: dict[str, int] = {}
        rows = []
        for _, rs in slices:
            pid = PoolID(rs.spec.driver, rs.spec.pool.name)
            live = pid not in model.unusable and rs.spec.pool.generation == newest[pid]
            if live:
                for cs in rs.spec.shared_counters:
                    for name, counter in cs.counters.items():
                        capacity[name] = capacity.get(name, 0) + nanos_of(
                            counter.value, f"pool {pid}, counter {cs.name}/{name}"
                        )
            for device in rs.spec.devices:
                rows.append((rs.spec.driver, device))
                usable.append(live)
                uses: dict[str, int] = {}
                if live:
                    for use in device.consumes_counters:
                        for name, counter in use.counters.items():
                            uses[name] = uses.get(name, 0) + nanos_of(
                                counter.value, f"device {pid}/{device.name}, counter {name}"
                            )
                consumes.append(uses)
        table = placer.verdicts.evaluate(rows)
        mask = np.asarray(usable, dtype=bool)
        classes = {
            name: np.flatnonzero(
                members(table, placer.verdicts.class_expressions.get(name)) & mask
            ).tolist()
            for name in placer.classes
        }
        return cls(classes, consumes, capacity)


def _counts(classes: dict[str, DeviceCounts]) -> dict[str, tuple[int, int]]:
    return {name: (c.total, c.in_use) for name, c in classes.items()}


def _copy(result: AllocationResult) -> AllocationResult:
    """A result of its own, with fresh share IDs."""
    out = clone(result)
    for r in out.devices.results:
        if r.share_id is not None:
            r.share_id = str(uuid.uuid4())
    return out


_NAME_CHARS = r"[A-Za-z0-9._-]"


def _substitute(text: str, names: dict[str, str]) -> str:
    """``text`` with whole names replaced (a name inside a longer one is left alone)."""
    wanted = {a: b for a, b in names.items() if a != b}
    if not wanted:
        return text
    pattern = re.compile(
        f"(?<!{_NAME_CHARS})("
        + "|".join(re.escape(a) for a in sorted(wanted, key=len, reverse=True))
        + f")(?!{_NAME_CHARS})"
    )
    return pattern.sub(lambda m: wanted[m.group(1)], text)
