"""Counter sets that block: those keeping a request's available devices out, and
those whose exhaustion blocked the search (found with the sets made unlimited).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from draspeed.api.model import (
    AllocationResult,
    Counter,
    CounterSet,
    Node,
    ResourceClaim,
    ResourceSlice,
)
from draspeed.engine.layout import NodeView
from draspeed.engine.snapshot import Snapshot
from draspeed.errors import QuantityError
from draspeed.explain.facts import ZERO, NodeFacts, consumption
from draspeed.explain.results import Blocker, Funnel
from draspeed.explain.verdict import ask
from draspeed.quantity import Quantity
from draspeed.quantity_sum import QuantitySum
from draspeed.rules.ids import DeviceID, PoolID


def _counter_set_blocker(
    pool: PoolID,
    counter_set: str,
    counters: list[tuple[str, QuantitySum, QuantitySum]],
    tail: str,
    extra: dict[str, Any],
) -> Blocker:
    """One counter set with the counters it lacks: (name, remaining, needed)."""
    shown = "; ".join(f"{n} remaining {r}, needed {d}" for n, r, d in counters[:3])
    if len(counters) > 3:
        shown += f"; {len(counters) - 3} more"
    return Blocker(
        "counter",
        f"pool {pool}, counter set {counter_set}: {shown} {tail}",
        {
            "pool": str(pool),
            "counterSet": counter_set,
            "counters": [
                {"counter": n, "remaining": str(r), "needed": str(d)} for n, r, d in counters
            ],
            **extra,
        },
    )


def counter_blockers(f: Funnel) -> list[Blocker]:
    """The counter sets that keep this request's otherwise available devices out: per
    counter, what is left and the least any of those devices needs."""
    least: dict[tuple[PoolID, str], dict[str, tuple[QuantitySum, QuantitySum]]] = {}
    devices: dict[tuple[PoolID, str], set[int]] = {}
    for s in f._counter_shorts:
        key = (s.pool, s.counter_set)
        counters = least.setdefault(key, {})
        devices.setdefault(key, set()).add(s.device)
        have = counters.get(s.counter)
        if have is None or s.needed.cmp(have[1]) < 0:
            counters[s.counter] = (s.remaining, s.needed)
    blockers = []
    for (pool, counter_set), counters in least.items():
        rows = [(n, r, d) for n, (r, d) in sorted(counters.items())]
        n = len(devices[(pool, counter_set)])
        blockers.append(
            _counter_set_blocker(
                pool,
                counter_set,
                rows,
                f"({n} device{'s' if n != 1 else ''} of request {f.request} blocked)",
                {"request": f.request, "devices": n},
            )
        )
    return blockers


def _at_least(total: QuantitySum) -> Quantity:
    """``total`` as a counter value, or where it cannot be written out, a power of ten
    above it: the relaxed set only has to be large enough for any choice."""
    try:
        return total.quantity()
    except QuantityError:
        return Quantity.parse(f"1e{total.magnitude_bound()}")


def _relaxed_snapshot(
    snapshot: Snapshot, view: NodeView, node: Node, relax: set[tuple[PoolID, str]]
) -> Snapshot:
    """The node's pools only, with the named counter sets large enough for any choice.

    Only slices of pools the node sees matter to an allocation on it; a relaxed set
    gets, per counter, what the whole pool's devices could ever consume on top.
    """
    pools = {p.id for p in view.pools}
    slices = [rs for rs in snapshot.slices if PoolID(rs.spec.driver, rs.spec.pool.name) in pools]
    totals: dict[tuple[PoolID, str], dict[str, QuantitySum]] = {}
    for rs in slices:
        pid = PoolID(rs.spec.driver, rs.spec.pool.name)
        for device in rs.spec.devices:
            for set_name, counters in consumption(device).items():
                sums = totals.setdefault((pid, set_name), {})
                for name, amount in counters.items():
                    sums[name] = sums.get(name, ZERO).add(amount)
    relaxed: list[ResourceSlice] = []
    for rs in slices:
        pid = PoolID(rs.spec.driver, rs.spec.pool.name)
        if not any((pid, cs.name) in relax for cs in rs.spec.shared_counters):
            relaxed.append(rs)
            continue
        sets = []
        for cs in rs.spec.shared_counters:
            if (pid, cs.name) not in relax:
                sets.append(cs)
                continue
            extra = totals.get((pid, cs.name), {})
            sets.append(
                CounterSet(
                    cs.name,
                    {
                        n: Counter(
                            _at_least(QuantitySum((c.value,)).add(extra[n]))
                            if n in extra
                            else c.value
                        )
                        for n, c in cs.counters.items()
                    },
                )
            )
        relaxed.append(replace(rs, spec=replace(rs.spec, shared_counters=sets)))
    return Snapshot.build(
        relaxed,
        list(snapshot.classes.values()),
        snapshot.allocated_claims,
        features=snapshot.features,
        nodes=[node],
    )


def relaxed_counter_blockers(
    snapshot: Snapshot,
    facts: NodeFacts,
    claims: list[ResourceClaim],
    node: Node,
    timeout: float | None,
) -> list[Blocker]:
    """Counter sets whose exhaustion blocked the search: with them unlimited the claims
    fit, and the solution found then needs more than they have left."""
    every = {(p.id, s) for p in facts.view.pools for s in p.counter_sets}
    if not every or not snapshot.features.partitionable_devices:
        return []
    whole = ask(_relaxed_snapshot(snapshot, facts.view, node, every), claims, node, timeout)
    if whole.status != "fits":
        return []
    singles = []
    for key in sorted(every):
        trial = ask(_relaxed_snapshot(snapshot, facts.view, node, {key}), claims, node, timeout)
        if trial.status == "fits":
            singles.append((key, trial))
    chosen = singles or [(key, whole) for key in sorted(every)]
    blockers = []
    for (pid, set_name), trial in chosen:
        need = _needed(facts, trial.results or [], pid, set_name)
        left = facts.remaining.get(pid, {}).get(set_name, {})
        rows = [
            (name, left.get(name, ZERO), need[name])
            for name in sorted(need)
            if need[name].cmp(left.get(name, ZERO)) > 0
        ]
        if rows:
            tail = (
                "(the claims fit if this set had enough)"
                if singles
                else "(the claims fit if every counter set had enough)"
            )
            blockers.append(
                _counter_set_blocker(pid, set_name, rows, tail, {"alone": bool(singles)})
            )
    return blockers


def _needed(
    facts: NodeFacts, results: list[AllocationResult], pid: PoolID, set_name: str
) -> dict[str, QuantitySum]:
    """What the devices of ``results`` in that pool consume of one counter set
    (each device once; a device with a committed share has paid already)."""
    by_id = {facts.snap.device_id(g): g for g in facts.pool_of}
    need: dict[str, QuantitySum] = {}
    seen: set[DeviceID] = set()
    for result in results:
        for r in result.devices.results:
            device_id = DeviceID(r.driver, r.pool, r.device)
            if device_id.pool_id != pid or device_id in seen or device_id not in by_id:
                continue
            seen.add(device_id)
            device = facts.snap.device(by_id[device_id])
            if facts.multi(device) and facts.committed_share(device_id):
                continue
            for name, amount in consumption(device).get(set_name, {}).items():
                need[name] = need.get(name, ZERO).add(amount)
    return need
