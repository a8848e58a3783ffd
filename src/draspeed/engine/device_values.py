"""Device fields with few distinct values across a cluster, each value read once.

Shared devices (those that allow multiple allocations) are seen by many nodes: a
fabric-attached GPU is one device but a position on each node it reaches; a taint put
on a rack is on every device there. What such a device offers a request, and whether
its taints block one, depends on its capacity map or taint list alone, and the devices
of a cluster have few distinct ones. So capacity entries, static capacity verdicts,
the share a request takes and taint verdicts are worked out once per distinct value
and spread over positions with numpy, never per position or device in Python.

Which value a device has is found once per family (a slice never changes once read),
by compiled code that tells values apart by their model-tree signature
(:func:`draspeed.engine._read.distinct_ids`).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from draspeed.api._model_tree import signature
from draspeed.api.model import DeviceCapacity
from draspeed.engine import _read, beyond

if TYPE_CHECKING:
    from draspeed.engine.slice_table import SliceTable


class DistinctValues:
    """The distinct values of one device field in a family (append-only, ids stable)."""

    def __init__(self, field: str) -> None:
        self.field = field
        self.values: list[Any] = []
        self._lock = threading.Lock()
        self._by_key: dict[object, int] = {}
        self._of_device = np.full(0, -1, dtype=np.int32)  # global device -> value id

    def ids(self, table: SliceTable, devices: np.ndarray) -> np.ndarray:
        """The value id of each of ``devices`` (global indices)."""
        devices = np.asarray(devices, dtype=np.int64)
        with self._lock:
            if len(self._of_device) < table.n_devices:
                grown = np.full(table.n_devices, -1, dtype=np.int32)
                grown[: len(self._of_device)] = self._of_device
                self._of_device = grown
            found = self._of_device[devices]
            unknown = devices[found < 0]
            if len(unknown):
                unknown = np.unique(unknown)
                first_new = len(self.values)
                self._of_device[unknown] = _read.distinct_ids(
                    table.slices,
                    table.column("s_first"),
                    unknown,
                    self.field,
                    self._by_key,
                    self.values,
                    signature,
                )
                self._added(first_new)
                found = self._of_device[devices]
            return found

    def _added(self, first_new: int) -> None:
        """Values from ``first_new`` on are new (under the lock)."""


class CapacityMaps(DistinctValues):
    """The distinct capacity maps of a family's devices.

    Map c has entries ``ptr[c]`` to ``ptr[c + 1]`` of the flat lists: the capacity
    names in sorted order (as upstream walks a device's capacities when it checks a
    request) and each one's value in nano units (:func:`draspeed.engine.beyond.nanos`).
    """

    values: list[Mapping[str, DeviceCapacity]]

    def __init__(self) -> None:
        super().__init__("capacity")
        self.has_policy: list[bool] = []
        self.ptr: list[int] = [0]
        self.entry_map: list[int] = []  # flat entry -> its map
        self.entry_name: list[str] = []
        self.entry_nanos: list[int] = []
        self._ptr_array = np.zeros(1, dtype=np.int64)

    def _added(self, first_new: int) -> None:
        for c in range(first_new, len(self.values)):
            capacity = self.values[c]
            names = sorted(capacity)
            self.has_policy.append(any(capacity[n].request_policy is not None for n in names))
            self.entry_map.extend([c] * len(names))
            self.entry_name.extend(names)
            self.entry_nanos.extend(beyond.nanos(capacity[n].value) for n in names)
            self.ptr.append(len(self.entry_name))
        self._ptr_array = np.asarray(self.ptr, dtype=np.int64)

    def first_entries(self, ids: np.ndarray) -> np.ndarray:
        """Where each map's entries start in the flat lists."""
        return self._ptr_array[ids]

    def sizes(self, ids: np.ndarray) -> np.ndarray:
        """How many capacities each map has."""
        ptr = self._ptr_array
        return ptr[ids + 1] - ptr[ids]
