"""What is used and what is left, per device, pool, node and cluster, in one snapshot.

The allocator answers "does this fit"; capacity reports also need "how much is
left and in what shape". :class:`Accounting` derives it from a snapshot's node
views and committed allocations:

- a device is *in use* when a committed allocation holds it (a share of a
  multi-allocatable device counts), *cordoned* when it carries a NoSchedule or
  NoExecute taint (a DeviceTaintRule's or its own), *counter-blocked* when one of
  the counters it consumes has less left than it needs, and *free* otherwise: it
  could be allocated on its own right now (ignoring claim tolerations);
- a *whole* device consumes no shared counters, or all of every counter set it
  touches (a full GPU next to its MIG partitions);
- a counter's remaining capacity is *stranded* when no device of its pool that is
  neither in use nor counter-blocked consumes that counter: it is left over, and
  nothing published can use it (taints aside: a cordoned pool's capacity counts as
  cordoned devices, not as stranded counters).

Pool-level facts do not depend on the node that sees the pool, so they are
computed once per pool and reused by every node (and by the cluster totals,
where pools seen by many nodes count once).
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from draspeed.analysis.amounts import nanos_of
from draspeed.api.model import Device, Node
from draspeed.quantity import Quantity
from draspeed.rules.ids import PoolID
from draspeed.rules.node_selection import NodeSelectorError, node_matches
from draspeed.rules.tolerations import BLOCKING_EFFECTS

if TYPE_CHECKING:
    from draspeed.engine.layout import NodeView, PoolView
    from draspeed.engine.snapshot import Snapshot

IN_USE, CORDONED, COUNTER_BLOCKED, WHOLE = 1, 2, 4, 8
_UNAVAILABLE = IN_USE | CORDONED | COUNTER_BLOCKED

CounterSlot = tuple[str, str]  # (counter set, counter)


def is_free(flags: int) -> bool:
    return not flags & _UNAVAILABLE


@dataclass(slots=True)
class CounterUse:
    """Used and total capacity of one counter (summed over counter sets)."""

    used: Quantity
    capacity: Quantity

    @property
    def fraction(self) -> float:
        """used / capacity (0 when there is no capacity)."""
        if self.capacity.is_zero():
            return 0.0
        return self.used.as_approximate_float() / self.capacity.as_approximate_float()

    def to_dict(self) -> dict[str, str]:
        return {"used": str(self.used), "capacity": str(self.capacity)}


@dataclass(slots=True)
class DeviceCounts:
    """Devices by state: ``total == in_use + cordoned + blocked + free``."""

    total: int = 0
    in_use: int = 0
    cordoned: int = 0
    blocked: int = 0  # not in use, not cordoned, but its counters are exhausted
    free: int = 0

    def count(self, flags: int, n: int = 1) -> None:
        """Count ``n`` devices with these flags."""
        self.total += n
        if flags & IN_USE:
            self.in_use += n
        elif flags & CORDONED:
            self.cordoned += n
        elif flags & COUNTER_BLOCKED:
            self.blocked += n
        else:
            self.free += n

    @classmethod
    def of(cls, flag_counts: Mapping[int, int]) -> DeviceCounts:
        """From how many devices carry each combination of flags."""
        counts = cls()
        for flags, n in flag_counts.items():
            counts.count(flags, n)
        return counts

    def to_dict(self) -> dict[str, int]:
        return {
            "total": self.total,
            "inUse": self.in_use,
            "cordoned": self.cordoned,
            "blocked": self.blocked,
            "free": self.free,
        }


@dataclass
class PoolState:
    """One pool's devices, counters and stranded capacity (node-independent).

    Amounts are exact integers in units of 1e-9 (``Quantity.nanos``); ``formats``
    keeps each counter's format for printing them back as quantities.
    """

    id: PoolID
    usable: bool  # complete and valid: the allocator searches it
    reason: str = ""  # why not usable
    devices: list[int] = field(default_factory=list)  # every published device
    capacity: dict[CounterSlot, int] = field(default_factory=dict)
    remaining: dict[CounterSlot, int] = field(default_factory=dict)
    stranded: dict[CounterSlot, int] = field(default_factory=dict)
    formats: dict[CounterSlot, str] = field(default_factory=dict)


# What one device consumes: ((counter set, counter), nanos) pairs, per counter set
# the counters it names, and the counters it needs some of.
_Demand = tuple[
    tuple[tuple[CounterSlot, int], ...],
    tuple[tuple[str, frozenset[str]], ...],
    tuple[CounterSlot, ...],
]


class Accounting:
    """Per-device flags and per-pool counters of one snapshot, computed on demand.

    Usage::

        acc = Accounting(snapshot)
        usage = acc.node_usage(node)          # NodeUsage
        for g, flags in acc.visible(node): ...
    """

    def __init__(self, snapshot: Snapshot, *, like: Accounting | None = None) -> None:
        self.snapshot = snapshot
        self._taints = snapshot.features.device_taints
        self._pools: dict[PoolID, PoolState] = {}
        self._flags: dict[int, int] = {}
        # Devices often share their consumption lists (generated and stamped nodes):
        # converted to integers once per list.
        self._demands: dict[int, tuple[list[Any], _Demand]] = {}
        # (pool capacity, pool remaining) -> id(demand) -> COUNTER_BLOCKED | WHOLE bits.
        self._verdicts: dict[tuple[Any, ...], dict[int, int]] = {}
        if like is not None:
            # Another version of the same devices (a fill's states): what depends on
            # the devices alone, not on what is allocated, is shared.
            self._demands, self._verdicts = like._demands, like._verdicts

    # --------------------------------------------------------------------- pools

    def pool(self, view: PoolView) -> PoolState:
        """The state of the pool ``view`` shows (computed the first time it is seen)."""
        found = self._pools.get(view.id)
        if found is not None:
            return found
        if view.incomplete or view.invalid:
            reason = "incomplete" if view.incomplete else f"invalid: {view.invalid_reason}"
            state = PoolState(view.id, usable=False, reason=reason)
        else:
            state = self._pool_state(view)
        self._pools[view.id] = state
        return state

    def _demand(self, device: Device) -> _Demand:
        uses = device.consumes_counters
        found = self._demands.get(id(uses))
        if found is not None and found[0] is uses:
            return found[1]
        amounts = tuple(
            ((use.counter_set, name), nanos_of(counter.value, f"counter {use.counter_set}/{name}"))
            for use in uses
            for name, counter in use.counters.items()
        )
        names = tuple((use.counter_set, frozenset(use.counters)) for use in uses)
        demand = (amounts, names, tuple(slot for slot, amount in amounts if amount > 0))
        self._demands[id(uses)] = (uses, demand)  # the list is kept alive with its id
        return demand

    def _pool_state(self, view: PoolView) -> PoolState:
        snap = self.snapshot
        devices = [*view.devices, *view.other_devices]
        objects = snap.devices(devices)
        capacity: dict[CounterSlot, int] = {}
        formats: dict[CounterSlot, str] = {}
        sets: dict[str, frozenset[str]] = {}
        for cs, counters in view.counter_sets.items():
            sets[cs] = frozenset(counters)
            for c, q in counters.items():
                capacity[(cs, c)] = nanos_of(q, f"pool {view.id}, counter {cs}/{c}")
                formats[(cs, c)] = q.format
        remaining = dict(capacity)
        demands = [self._demand(d) for d in objects]
        in_use = snap.allocated_at(devices)
        for used, (amounts, _, _) in zip(in_use, demands, strict=True):
            if used:
                for slot, amount in amounts:
                    if slot in remaining:
                        remaining[slot] -= amount
        # Pools in the same state (identical nodes, nothing allocated yet) share the
        # counter verdict of each device shape.
        state_key = (tuple(capacity.items()), tuple(remaining.items()))
        verdicts = self._verdicts.setdefault(state_key, {})
        usable: set[CounterSlot] = set()
        for g, device, used, demand in zip(devices, objects, in_use, demands, strict=True):
            counter_flags = verdicts.get(id(demand))
            if counter_flags is None:
                counter_flags = _counter_flags(demand, capacity, remaining, sets)
                verdicts[id(demand)] = counter_flags
            flags = counter_flags | (IN_USE if used else 0)
            if (
                self._taints
                and device.taints
                and any(t.effect in BLOCKING_EFFECTS for t in device.taints)
            ):
                flags |= CORDONED
            self._flags[g] = flags
            # Taints do not strand counters: cordoned capacity is reported as such.
            if not flags & (IN_USE | COUNTER_BLOCKED):
                usable.update(demand[2])
        stranded = {
            slot: left for slot, left in remaining.items() if left > 0 and slot not in usable
        }
        return PoolState(view.id, True, "", devices, capacity, remaining, stranded, formats)

    # --------------------------------------------------------------------- nodes

    def view(self, node: Node) -> NodeView:
        return self.snapshot.node_view(node)

    def pools(self, node: Node) -> list[PoolState]:
        """The pools ``node`` sees, in the allocator's order."""
        return [self.pool(p) for p in self.view(node).pools]

    def visible(self, node: Node) -> list[tuple[int, int]]:
        """``(device, flags)`` for every device the allocator may pick for ``node``."""
        out: list[tuple[int, int]] = []
        for pool_view in self.view(node).pools:
            state = self.pool(pool_view)
            if not state.usable:
                continue
            for g in pool_view.devices:
                if self._reaches(g, node):
                    out.append((g, self._flags[g]))
        return out

    def _reaches(self, g: int, node: Node) -> bool:
        """Per-device node selection: whether the device is usable on ``node``."""
        rs = self.snapshot.device_slice_of(g)
        if not rs.spec.per_device_node_selection:
            return True
        device = self.snapshot.device(g)
        try:
            return node_matches(
                node, device.node_name or "", bool(device.all_nodes), device.node_selector
            )
        except NodeSelectorError:
            return False

    def flags(self, g: int) -> int:
        """Flags of a device already seen through :meth:`visible` or :meth:`pool`."""
        return self._flags[g]

    def node_usage(self, node: Node) -> NodeUsage:
        flags = Counter(f for _, f in self.visible(node))
        return usage_of(flags, self.pools(node), node.name)

    def cluster_usage(self, nodes: Iterable[Node], name: str = "(cluster)") -> NodeUsage:
        """Totals over what any of ``nodes`` sees, each device and pool counted once."""
        devices: dict[int, int] = {}
        pools: dict[PoolID, PoolState] = {}
        for node in nodes:
            devices.update(self.visible(node))
            for pool in self.pools(node):
                pools.setdefault(pool.id, pool)
        return usage_of(Counter(devices.values()), pools.values(), name)


def _counter_flags(
    demand: _Demand,
    capacity: dict[CounterSlot, int],
    remaining: dict[CounterSlot, int],
    sets: dict[str, frozenset[str]],
) -> int:
    """COUNTER_BLOCKED when a counter has less left than the device needs; WHOLE when
    it consumes nothing shared, or all of every counter set it touches."""
    amounts, names, _ = demand
    flags = 0
    whole = all(sets.get(cs) == counters for cs, counters in names)
    for slot, amount in amounts:
        if amount > remaining.get(slot, 0):
            flags |= COUNTER_BLOCKED
        if amount != capacity.get(slot, 0):
            whole = False
    return flags | WHOLE if whole else flags


@dataclass
class NodeUsage:
    """Devices by state, counters used / total and stranded, for a node or the cluster."""

    node: str
    devices: DeviceCounts
    counters: dict[str, CounterUse]
    stranded: dict[str, Quantity]
    unusable_pools: dict[str, str]  # pool -> why the allocator skips it

    def to_dict(self) -> dict[str, Any]:
        return {
            "devices": self.devices.to_dict(),
            "counters": {k: v.to_dict() for k, v in self.counters.items()},
            "strandedCounters": {k: str(v) for k, v in self.stranded.items()},
            "unusablePools": dict(self.unusable_pools),
        }


def usage_of(flag_counts: Mapping[int, int], pools: Iterable[PoolState], name: str) -> NodeUsage:
    """Totals over devices (how many carry each combination of flags) and ``pools``
    (each pool counted once)."""
    counts = DeviceCounts.of(flag_counts)
    capacity: dict[str, int] = {}
    used: dict[str, int] = {}
    stranded: dict[str, int] = {}
    formats: dict[str, str] = {}
    unusable: dict[str, str] = {}
    seen: set[PoolID] = set()
    for pool in pools:
        if pool.id in seen:
            continue
        seen.add(pool.id)
        if not pool.usable:
            unusable[str(pool.id)] = pool.reason
            continue
        for slot, total in pool.capacity.items():
            counter = slot[1]
            capacity[counter] = capacity.get(counter, 0) + total
            used[counter] = used.get(counter, 0) + total - pool.remaining[slot]
            formats.setdefault(counter, pool.formats[slot])
        for slot, left in pool.stranded.items():
            stranded[slot[1]] = stranded.get(slot[1], 0) + left
    counters = {
        c: CounterUse(_quantity(used[c], formats[c]), _quantity(capacity[c], formats[c]))
        for c in sorted(capacity)
    }
    left_over = {c: _quantity(stranded[c], formats[c]) for c in sorted(stranded)}
    return NodeUsage(name, counts, counters, left_over, unusable)


@functools.lru_cache(maxsize=4096)
def _quantity(nanos: int, format: str) -> Quantity:
    """Sums repeat from node to node; quantities are immutable, so they are shared."""
    return Quantity.from_nanos(nanos, format)


def sum_usages(name: str, parts: Iterable[tuple[NodeUsage, int]]) -> NodeUsage:
    """The totals of usages over disjoint devices and pools, each counted ``n`` times
    (nodes in the same state share one usage)."""
    counts = DeviceCounts()
    used: dict[str, int] = {}
    capacity: dict[str, int] = {}
    stranded: dict[str, int] = {}
    formats: dict[str, str] = {}
    unusable: dict[str, str] = {}
    for usage, n in parts:
        d = usage.devices
        counts.total += n * d.total
        counts.in_use += n * d.in_use
        counts.cordoned += n * d.cordoned
        counts.blocked += n * d.blocked
        counts.free += n * d.free
        for counter, use in usage.counters.items():
            used[counter] = used.get(counter, 0) + n * use.used.nanos
            capacity[counter] = capacity.get(counter, 0) + n * use.capacity.nanos
            formats.setdefault(counter, use.capacity.format)
        for counter, left in usage.stranded.items():
            stranded[counter] = stranded.get(counter, 0) + n * left.nanos
            formats.setdefault(counter, left.format)
        unusable.update(usage.unusable_pools)
    return NodeUsage(
        name,
        counts,
        {
            c: CounterUse(_quantity(used[c], formats[c]), _quantity(capacity[c], formats[c]))
            for c in sorted(capacity)
        },
        {c: _quantity(stranded[c], formats[c]) for c in sorted(stranded)},
        unusable,
    )
