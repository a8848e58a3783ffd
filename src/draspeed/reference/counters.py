"""Shared counters of partitionable devices (sharedCounters / consumesCounters).

Per pool, what is available is every counter set's value minus what committed
allocations (exclusive or shared) consume; it may be negative, which simply
means nothing is left. While the search runs, the counters of tentatively
allocated devices are added up per pool. A device fits when, after adding its
consumption, no counter of the pool is overdrawn. Pools are keyed by
(driver, pool) (kubernetes#140435; the snapshot keyed by pool name only).
"""

from __future__ import annotations

from draspeed.api.model import Device
from draspeed.quantity_sum import QuantitySum
from draspeed.rules.allocated_state import AllocatedState
from draspeed.rules.ids import DeviceID, PoolID
from draspeed.rules.pools import Pool

# counter set -> counter -> amount. Exact sums: a counter of 1e999999 less 1Gi is
# compared without its million digits (upstream writes them out).
CounterTotals = dict[str, dict[str, QuantitySum]]

_ZERO = QuantitySum()


def available_counters(pool: Pool, allocated: AllocatedState) -> CounterTotals:
    """What the pool's counter sets offer after committed allocations."""
    available = {
        name: {counter: QuantitySum((c.value,)) for counter, c in counter_set.counters.items()}
        for name, counter_set in pool.counter_sets.items()
    }
    for slice_ in pool.slices + pool.slices_not_targeting_node:
        for device in slice_.spec.devices:
            if not device.consumes_counters:
                continue
            if not allocated.is_allocated(DeviceID(pool.driver, pool.name, device.name)):
                continue
            for consumption in device.consumes_counters:
                counters = available.get(consumption.counter_set)
                if counters is None:
                    continue
                for counter, amount in consumption.counters.items():
                    if counter in counters:
                        counters[counter] = counters[counter].add(amount.value.neg())
    return available


class CounterBook:
    """Counters consumed by the devices the current search has tentatively allocated."""

    def __init__(self, allocated: AllocatedState) -> None:
        self._allocated = allocated
        self._available: dict[PoolID, CounterTotals] = {}
        self._consumed: dict[PoolID, CounterTotals] = {}

    def _pool_available(self, pool: Pool) -> CounterTotals:
        available = self._available.get(pool.id)
        if available is None:
            available = self._available[pool.id] = available_counters(pool, self._allocated)
        return available

    def _apply(self, pool: Pool, device: Device, sign: int) -> None:
        consumed = self._consumed.setdefault(pool.id, {})
        for consumption in device.consumes_counters:
            counters = consumed.setdefault(consumption.counter_set, {})
            for counter, amount in consumption.counters.items():
                current = counters.get(counter, _ZERO)
                counters[counter] = current.add(amount.value if sign > 0 else amount.value.neg())

    def reserve(self, pool: Pool, device: Device) -> bool:
        """Reserve the device's counters if every counter of the pool stays covered."""
        available = self._pool_available(pool)
        self._apply(pool, device, +1)
        consumed = self._consumed[pool.id]
        for set_name, counters in available.items():
            used = consumed.get(set_name, {})
            for counter, amount in counters.items():
                if amount.cmp(used.get(counter, _ZERO)) < 0:
                    self._apply(pool, device, -1)
                    return False
        return True

    def release(self, pool: Pool, device: Device) -> None:
        """Give back what ``reserve`` took for the device."""
        self._apply(pool, device, -1)
