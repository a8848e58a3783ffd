"""What the node offers, independent of the claims: its searchable devices and
what committed claims left of its pools' counters and capacity.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from draspeed.api.model import Counter, Device, DeviceSelector, DeviceToleration
from draspeed.engine.layout import NodeView, PoolView
from draspeed.engine.snapshot import Snapshot
from draspeed.engine.store import ERROR, TRUE
from draspeed.explain.results import CounterShort
from draspeed.quantity import Quantity
from draspeed.quantity_sum import QuantitySum
from draspeed.rules import texts
from draspeed.rules.capacity import UnknownCapacityError, request_fits
from draspeed.rules.ids import DeviceID
from draspeed.rules.node_selection import NodeSelectorError, node_matches
from draspeed.rules.tolerations import taint_blocks

ZERO = QuantitySum()

# counter set -> counter -> amount, exact sums (no digits written out: a counter of
# 1e999999 less 1Gi is compared as it is).
Counters = dict[str, dict[str, QuantitySum]]


class NodeFacts:
    """The node's searchable devices and what committed claims left of its pools."""

    def __init__(self, snapshot: Snapshot, view: NodeView, deadline: float | None = None) -> None:
        self.snap = snapshot
        self.view = view
        self.deadline = deadline  # for evaluating selectors (AllocationTimeout once passed)
        self.features = snapshot.features
        self.pool_of: dict[int, PoolView] = {}
        self.node_errors: list[str] = []
        on_node: list[int] = []
        searchable = {int(g) for g in view.positions.tolist()}
        for pool in view.pools:
            if pool.incomplete or pool.invalid:
                continue
            for g in pool.devices:
                if g not in searchable:
                    continue
                self.pool_of[g] = pool
                if self._on_node(g):
                    on_node.append(g)
        self.positions = np.asarray(on_node, dtype=np.int64)
        self.remaining = {p.id: _remaining(snapshot, p) for p in view.pools if p.counter_sets}
        self._counter_verdicts: dict[int, list[CounterShort]] = {}

    def _on_node(self, g: int) -> bool:
        """Per-device node selection and the binding-conditions gate, as upstream applies
        them with the selectors (they are about the node, so they count here)."""
        device = self.snap.device(g)
        if not self.features.device_binding_and_status and device.binding_conditions:
            return False
        if not self.snap.device_slice_of(g).spec.per_device_node_selection:
            return True
        try:
            return node_matches(
                self.view.node, device.node_name or "", bool(device.all_nodes), device.node_selector
            )
        except NodeSelectorError as exc:
            self.node_errors.append(str(exc))
            return False

    def committed_share(self, device_id: DeviceID) -> bool:
        allocated = self.snap.allocated
        return self.features.consumable_capacity and (
            allocated.has_share(device_id) or device_id in allocated.consumed_capacity
        )

    def multi(self, device: Device) -> bool:
        return self.features.consumable_capacity and bool(device.allow_multiple_allocations)

    def available(self, g: int, admin: bool) -> bool:
        """Not held by a committed claim (a shared device: not held exclusively)."""
        if admin:
            return True
        device_id = self.snap.device_id(g)
        if device_id in self.snap.allocated.devices:
            return False
        return self.multi(self.snap.device(g)) or not self.committed_share(device_id)

    def counter_shortfalls(self, g: int) -> list[CounterShort]:
        """The counters this device alone would overdraw (empty: it fits)."""
        found = self._counter_verdicts.get(g)
        if found is not None:
            return found
        device = self.snap.device(g)
        pool = self.pool_of[g]
        found = []
        if device.consumes_counters and not self.features.partitionable_devices:
            # Without the gate such a device is never allocated; say which counter it wants.
            use = device.consumes_counters[0]
            name, amount = next(iter(use.counters.items()), ("", Counter(Quantity.from_int(0))))
            needed = QuantitySum((amount.value,))
            found.append(CounterShort(g, pool.id, use.counter_set, name, ZERO, needed))
        elif device.consumes_counters and not (
            self.multi(device) and self.committed_share(self.snap.device_id(g))
        ):
            needs = consumption(device)
            for set_name, counters in self.remaining.get(pool.id, {}).items():
                for name, left in counters.items():
                    need = needs.get(set_name, {}).get(name, ZERO)
                    if left.cmp(need) < 0:
                        found.append(CounterShort(g, pool.id, set_name, name, left, need))
        self._counter_verdicts[g] = found
        return found

    def capacity_fits(self, g: int, requests: dict[str, Quantity]) -> bool:
        if not self.features.consumable_capacity:
            return True
        device_id = self.snap.device_id(g)
        try:
            return request_fits(
                self.snap.allocated.consumed_capacity.get(device_id, {}),
                requests,
                self.snap.device(g).capacity,
                {},
            )
        except UnknownCapacityError:
            return False

    def statically_fits(self, g: int, requests: dict[str, Quantity]) -> bool:
        """Capacity ignoring committed use: what ``allocationMode: All`` collects by."""
        if not self.features.consumable_capacity:
            return True
        try:
            return request_fits({}, requests, self.snap.device(g).capacity, {})
        except UnknownCapacityError:
            return False

    def tainted(self, g: int, tolerations: list[DeviceToleration]) -> bool:
        return self.features.device_taints and taint_blocks(self.snap.device(g).taints, tolerations)

    def select(
        self, candidates: np.ndarray, selectors: Sequence[DeviceSelector], owner: str
    ) -> tuple[np.ndarray, int, tuple[int, str] | None]:
        """The candidates every selector accepts (in order, stopping at the first that
        does not), the number of CEL errors, and the first error (position, text)."""
        keep = np.ones(len(candidates), dtype=bool)
        errors = 0
        first: tuple[int, str] | None = None
        for i, selector in enumerate(selectors):
            pending = np.flatnonzero(keep)
            if not len(pending):
                break
            if selector.cel is None:
                message = texts.selector_empty(owner, i)
                errors += len(pending)
                keep[pending] = False
                first = _earlier(first, (int(pending[0]), message))
                break
            results = self.snap.selector_results(selector.cel.expression, self.deadline)
            verdict = self.snap.evaluate(results, candidates[pending], self.deadline)
            keep[pending[verdict != TRUE]] = False
            failed = pending[verdict == ERROR]
            if len(failed):
                errors += len(failed)
                p = int(failed[0])
                if results.compile_error is not None:
                    message = texts.selector_compile_error(owner, i, results.compile_error)
                else:
                    g = int(candidates[p])
                    device = self.snap.device_id(g)
                    message = texts.selector_runtime_error(
                        owner, i, device, results.messages.get(g, "")
                    )
                first = _earlier(first, (p, message))
        return candidates[keep], errors, first


def _earlier(a: tuple[int, str] | None, b: tuple[int, str]) -> tuple[int, str]:
    return b if a is None or b[0] < a[0] else a


def consumption(device: Device) -> Counters:
    out: Counters = {}
    for use in device.consumes_counters:
        counters = out.setdefault(use.counter_set, {})
        for name, amount in use.counters.items():
            counters[name] = counters.get(name, ZERO).add(amount.value)
    return out


def _remaining(snapshot: Snapshot, pool: PoolView) -> Counters:
    """The pool's counter sets minus what committed claims' devices consume."""
    left = {
        s: {name: QuantitySum((value,)) for name, value in counters.items()}
        for s, counters in pool.counter_sets.items()
    }
    for g in [*pool.devices, *pool.other_devices]:
        if not snapshot.allocated.is_allocated(snapshot.device_id(g)):
            continue
        for set_name, counters in consumption(snapshot.device(g)).items():
            have = left.get(set_name)
            if have is None:
                continue
            for name, amount in counters.items():
                if name in have:
                    have[name] = have[name].add(amount.neg())
    return left
