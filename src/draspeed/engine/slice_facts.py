"""What the allocator needs of one ResourceSlice's devices, read once into arrays.

Slices are immutable once decoded, so their facts are computed the first time a
node needs them and shared by every node, layout and later snapshot version that
contains the same slice object.  Counter consumption is kept as a small table of
distinct (counter, amount) values plus one value id per entry, so per-node work
is numpy indexing, and exact Python integers are touched once per distinct value.
"""

from __future__ import annotations

import numpy as np

from draspeed.api.model import ResourceSlice

_NANOS_PER_UNIT = 10**9
# Whole values below this keep every per-slot sum of a node far inside int64.
_WHOLE_LIMIT = 10**9 * 2**40


class SliceFacts:
    """Per-device flags and counter consumption of one slice, as arrays."""

    __slots__ = (
        "binding",
        "cons_ptr",
        "cons_value",
        "consumes",
        "has_capacity",
        "index_of",
        "key_names",
        "multi",
        "n",
        "names",
        "policy",
        "sets_used",
        "tainted",
        "value_key",
        "value_nanos",
        "value_whole",
    )

    def __init__(self, rs: ResourceSlice) -> None:
        devices = rs.spec.devices
        n = self.n = len(devices)
        self.names = [d.name for d in devices]
        self.multi = np.fromiter(
            (bool(d.allow_multiple_allocations) for d in devices), dtype=bool, count=n
        )
        self.consumes = np.fromiter((bool(d.consumes_counters) for d in devices), bool, n)
        self.binding = np.fromiter((bool(d.binding_conditions) for d in devices), bool, n)
        self.tainted = np.fromiter((bool(d.taints) for d in devices), dtype=bool, count=n)
        self.has_capacity = np.fromiter((bool(d.capacity) for d in devices), bool, n)
        self.policy = np.fromiter(
            (any(c.request_policy is not None for c in d.capacity.values()) for d in devices),
            dtype=bool,
            count=n,
        )
        keys: dict[tuple[str, str], int] = {}
        values: dict[tuple[str, str, int], int] = {}
        value_key: list[int] = []
        value_nanos: list[int] = []
        ptr = [0]
        entries: list[int] = []
        sets_used: set[str] = set()
        add = entries.append
        for d in devices:
            for use in d.consumes_counters:
                cs = use.counter_set
                sets_used.add(cs)
                for name, counter in use.counters.items():
                    nanos = counter.value.nanos
                    v = values.get((cs, name, nanos))
                    if v is None:
                        v = values[(cs, name, nanos)] = len(value_nanos)
                        value_key.append(keys.setdefault((cs, name), len(keys)))
                        value_nanos.append(nanos)
                    add(v)
            ptr.append(len(entries))
        self.key_names = list(keys)
        # Named counter sets, with or without counters (an unknown one invalidates the pool).
        self.sets_used = sets_used
        self.value_key = np.asarray(value_key, dtype=np.int32)
        self.value_nanos = value_nanos
        # The same values in whole units, when every one is a whole number that fits
        # int64 comfortably (the usual case): nodes then scale nothing in Python.
        self.value_whole: np.ndarray | None = None
        if all(v % _NANOS_PER_UNIT == 0 and abs(v) < _WHOLE_LIMIT for v in value_nanos):
            self.value_whole = np.asarray(
                [v // _NANOS_PER_UNIT for v in value_nanos], dtype=np.int64
            )
        self.cons_ptr = np.asarray(ptr, dtype=np.int64)
        self.cons_value = np.asarray(entries, dtype=np.int32)
        self.index_of: dict[str, list[int]] | None = None

    def indices(self, name: str) -> list[int]:
        """The indices of the devices with this name (more than one only in a slice
        that repeats a name, which makes its pool invalid)."""
        if self.index_of is None:
            found: dict[str, list[int]] = {}
            for i, d in enumerate(self.names):
                found.setdefault(d, []).append(i)
            self.index_of = found
        return self.index_of.get(name, [])

    def consumption(self, i: int) -> list[tuple[tuple[str, str], int]]:
        """Device i's counter consumption: ((counter set, counter), nanos) per entry."""
        out = []
        for e in range(int(self.cons_ptr[i]), int(self.cons_ptr[i + 1])):
            v = int(self.cons_value[e])
            out.append((self.key_names[int(self.value_key[v])], self.value_nanos[v]))
        return out


def entries_of(facts: SliceFacts, devices: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """CSR (pointer per device, value ids) of the consumption entries of ``devices``
    (indices into the slice), in the given order."""
    starts = facts.cons_ptr[devices]
    counts = facts.cons_ptr[devices + 1] - starts
    ptr = np.zeros(len(devices) + 1, dtype=np.int64)
    np.cumsum(counts, out=ptr[1:])
    total = int(ptr[-1])
    if total == 0:
        return ptr, np.zeros(0, dtype=np.int32)
    # Entry e of device i is facts entry starts[i] + (e - ptr[i]).
    owner = np.repeat(np.arange(len(devices)), counts)
    within = np.arange(total) - ptr[owner]
    return ptr, facts.cons_value[starts[owner] + within]
