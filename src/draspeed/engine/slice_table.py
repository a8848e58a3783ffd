"""Every slice of a snapshot family, read once into flat arrays (append-only).

Slice s and global device g mean the same thing in every version of the family: a
version sees the first ``n_slices`` slices and ``n_devices`` devices of the table
(the ones it removed, and those a sibling appended, are dead to it). The arrays are
filled by compiled code (``draspeed.engine._read``) and read by compiled code (pool
gathering, ``draspeed.engine._gather``); Python touches slices and devices here only
when an answer names them (:meth:`SliceTable.device`, :meth:`SliceTable.device_id`).
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from draspeed.api._model_tree import untrack_list
from draspeed.api.model import Device, ResourceSlice
from draspeed.engine import _read
from draspeed.engine._gather import NOT_WHOLE
from draspeed.engine.device_values import CapacityMaps, DistinctValues
from draspeed.engine.persistent import GrowingArray
from draspeed.rules.ids import DeviceID

_NANOS_PER_UNIT = 10**9
# Whole values below this keep every per-slot sum of a node far inside int64.
_WHOLE_LIMIT = 2**40

# Per-slice and per-device columns of the table, with their dtypes.
_SLICE_COLUMNS = {
    "s_first": np.int64,
    "s_ndev": np.int32,
    "s_pool": np.int32,
    "s_gen": np.int64,
    "s_count": np.int64,
    "s_node": np.int32,
    "s_sel": np.uint8,
    "s_per_device": np.uint8,
    "s_selector": np.int32,
    "s_name": np.int32,
}
_DEVICE_COLUMNS = {
    "d_name": np.int32,
    "d_flags": np.uint8,
    "d_pattern": np.int32,
    "d_pdn": np.uint8,
    "d_pdn_node": np.int32,
    "d_pdn_selector": np.int32,
}
FLAGS = _read.DEVICE_FLAGS
SELECTION = _read.SELECTION


class SliceTable:
    """The slices of a snapshot family and their arrays; appends under ``lock``."""

    def __init__(self, slices: Sequence[ResourceSlice] = ()) -> None:
        self.lock = threading.RLock()
        self.names = _read.Interning()
        # (Long-lived, one per slice: out of the cyclic collector's walks.)
        self.slices: list[ResourceSlice] = untrack_list([])
        self._columns = {
            k: GrowingArray(dtype=t) for k, t in {**_SLICE_COLUMNS, **_DEVICE_COLUMNS}.items()
        }
        # Counter sets of counter-set slices: slice s owns sets [s_cs_ptr[s], s_cs_ptr[s+1]),
        # set k owns counters [cs_c_ptr[k], cs_c_ptr[k+1]).
        self._s_cs_ptr = GrowingArray([0], dtype=np.int32)
        self._cs_name = GrowingArray(dtype=np.int32)
        self._cs_c_ptr = GrowingArray([0], dtype=np.int32)
        self._c_name = GrowingArray(dtype=np.int32)
        self._c_quantity = GrowingArray(dtype=np.int32)
        self.n_slices = 0
        self.n_devices = 0
        self._derived: dict[Any, Any] = {}
        # Counter layouts sorted by name, by appearance sequence (string ids): filled by
        # every gather of the family (ids never change; the GIL guards the dict).
        self.sorted_slots: dict[bytes, bytes] = {}
        # Devices' capacity maps and taint lists, each distinct one once.
        self.capacity_maps = CapacityMaps()
        self.taint_lists = DistinctValues("taints")
        # Each append's drivers and devices (the lists its CEL table reads), by the
        # append's first device index.
        self._device_lists: dict[int, tuple[list[str], list[Device]]] = {}
        self.append(slices)

    def append(self, slices: Sequence[ResourceSlice]) -> tuple[int, int, int]:
        """Append ``slices``: (index of the first of them, slices and devices after)."""
        slices = list(slices)
        with self.lock:
            start = self.n_slices
            if not slices:
                return start, self.n_slices, self.n_devices
            batch = _read.read_slices(slices, self.names, self.n_devices)
            for name, column in self._columns.items():
                column.append(batch[name], owned=True)  # (made by this read alone)
            self._s_cs_ptr.append(batch["s_cs_ptr"][1:] + len(self._cs_name))
            self._cs_c_ptr.append(batch["cs_c_ptr"][1:] + len(self._c_name))
            self._cs_name.append(batch["cs_name"])
            self._c_name.append(batch["c_name"])
            self._c_quantity.append(batch["c_quantity"])
            if batch["devices"]:
                self._device_lists[self.n_devices] = (batch["drivers"], batch["devices"])
            self.slices.extend(slices)
            self.n_slices += len(slices)
            self.n_devices += len(batch["d_name"])
            self._derived = {}
            return start, self.n_slices, self.n_devices

    def device_lists(self, start: int) -> tuple[list[str], list[Device]]:
        """The drivers and devices of the append whose first device is ``start``, as
        its reading listed them."""
        return self._device_lists[start]

    # ---- arrays ----------------------------------------------------------------------

    def column(self, name: str, n: int | None = None) -> np.ndarray:
        """A per-slice (``s_*``) or per-device (``d_*``) column, the first n entries."""
        column = self._columns[name]
        return column.view(len(column) if n is None else n)

    def arrays(self, n_slices: int, n_devices: int) -> dict[str, Any]:
        """What :func:`draspeed.engine._gather.gather` reads, for a version that sees the
        first ``n_slices`` slices and ``n_devices`` devices."""
        with self.lock:
            out: dict[str, Any] = {k: self.column(k, n_slices) for k in _SLICE_COLUMNS}
            out.update({k: self.column(k, n_devices) for k in _DEVICE_COLUMNS})
            out["s_cs_ptr"] = self._s_cs_ptr.view(n_slices + 1)
            out["cs_name"] = self._cs_name.view(len(self._cs_name))
            out["cs_c_ptr"] = self._cs_c_ptr.view(len(self._cs_c_ptr))
            out["c_name"] = self._c_name.view(len(self._c_name))
            out["c_quantity"] = self._c_quantity.view(len(self._c_quantity))
            out["p_ptr"], out["p_set"], out["p_counter"], out["p_quantity"] = self._patterns()
            # (Called by the gathering only if a node has many pools, or a pool many
            # slices: sorting by strings costs nothing otherwise.)
            out["ranks"] = functools.partial(self._ranks, n_slices)
            out["pool_slice_ptr"], out["pool_slices"] = self._pool_slices(n_slices)
            return out

    def _patterns(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        n = len(self.names.pattern_ptr)
        found = self._derived.get("patterns")
        if found is None or len(found[0]) != n:
            found = self._derived["patterns"] = self.names.pattern_arrays()
        return found

    def _ranks(self, n_slices: int) -> tuple[np.ndarray, np.ndarray]:
        """Each pool's place when all are ordered by (driver, name), as upstream orders
        a node's pools, and each of the first n_slices slices' name's place among the
        distinct names in order (equal names, equal places). Python and Go order
        strings alike."""
        with self.lock:
            keys = self.names.pool_keys
            found = self._derived.get("pool_rank")
            if found is None or len(found) != len(keys):
                found = np.empty(len(keys), dtype=np.int32)
                found[sorted(range(len(keys)), key=keys.__getitem__)] = np.arange(len(keys))
                self._derived["pool_rank"] = found
            key = ("name_rank", n_slices)
            names = self._derived.get(key)
            if names is None:
                ids = self.column("s_name", n_slices)
                distinct = np.unique(ids)
                texts = [self.names.string_list[i] for i in distinct.tolist()]
                place = np.empty(len(distinct), dtype=np.int32)
                place[sorted(range(len(texts)), key=texts.__getitem__)] = np.arange(len(texts))
                names = self._derived[key] = place[np.searchsorted(distinct, ids)]
            return found, names

    def _pool_slices(self, n_slices: int) -> tuple[np.ndarray, np.ndarray]:
        """Each pool's slices among the first n_slices, in table order (CSR)."""
        key = ("pool_slices", n_slices)
        found = self._derived.get(key)
        if found is None:
            pools = self.column("s_pool", n_slices)
            n_pools = len(self.names.pool_keys)
            order = np.argsort(pools, kind="stable").astype(np.int32)
            ptr = np.zeros(n_pools + 1, dtype=np.int32)
            np.cumsum(np.bincount(pools, minlength=n_pools), out=ptr[1:])
            found = self._derived[key] = (ptr, order)
        return found

    def quantity_whole(self) -> np.ndarray:
        """Each quantity in whole units, or ``NOT_WHOLE`` (not a small whole number)."""
        nanos = self.names.quantity_nanos
        found = self._derived.get("whole")
        if found is None or len(found) != len(nanos):
            found = np.fromiter(
                (
                    v // _NANOS_PER_UNIT
                    if v % _NANOS_PER_UNIT == 0 and abs(v) < _WHOLE_LIMIT * _NANOS_PER_UNIT
                    else NOT_WHOLE
                    for v in nanos
                ),
                dtype=np.int64,
                count=len(nanos),
            )
            self._derived["whole"] = found
        return found

    # ---- devices ---------------------------------------------------------------------

    def slice_of(self, g: int) -> tuple[int, int]:
        """(slice index, index in the slice) of global device g."""
        first = self._columns["s_first"].view(self.n_slices)
        s = int(np.searchsorted(first, g, side="right")) - 1
        return s, g - int(first[s])

    def slices_of(self, g: np.ndarray, n_slices: int) -> np.ndarray:
        """The slice index of each global device in ``g``."""
        first = self._columns["s_first"].view(n_slices)
        return np.searchsorted(first, g, side="right") - 1

    def device(self, g: int) -> Device:
        s, d = self.slice_of(g)
        return self.slices[s].spec.devices[d]

    def devices(self, g: Sequence[int]) -> list[Device]:
        """The devices at these global indices (one search for all of them)."""
        first = self._columns["s_first"].view(self.n_slices)
        at = np.asarray(g, dtype=np.int64)
        s = self.slices_of(at, self.n_slices)
        slices = self.slices
        return [
            slices[k].spec.devices[d]
            for k, d in zip(s.tolist(), (at - first[s]).tolist(), strict=True)
        ]

    def device_slice(self, g: int) -> ResourceSlice:
        return self.slices[self.slice_of(g)[0]]

    def device_id(self, g: int) -> DeviceID:
        s, d = self.slice_of(g)
        spec = self.slices[s].spec
        return DeviceID(spec.driver, spec.pool.name, spec.devices[d].name)

    def devices_named(self, device: DeviceID, slices: Sequence[int]) -> list[int]:
        """The global indices of the devices named ``device.device`` in ``slices``."""
        name = self.names.find(device.device)
        if name < 0:
            return []
        d_name = self._columns["d_name"].view(self.n_devices)
        first = self._columns["s_first"].view(self.n_slices)
        count = self._columns["s_ndev"].view(self.n_slices)
        out: list[int] = []
        for s in slices:
            lo = int(first[s])
            hit = np.flatnonzero(d_name[lo : lo + int(count[s])] == name)
            out.extend(lo + int(i) for i in hit)
        return out

    def devices_named_many(
        self, ids: Sequence[DeviceID], n_slices: int, live: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """Every device of a live slice (``live``: a flag per slice, of the first
        ``n_slices``) in the pool of one of ``ids`` and named like it: (index into
        ``ids``, global device index) pairs, by index. One dict lookup per ID; the
        devices are matched by sorting, in numpy."""
        names = self.names
        strings, pools = names.strings, names.pools
        width = len(names.string_list) + 1
        wanted = np.full(len(ids), -1, dtype=np.int64)
        for i, device_id in enumerate(ids):
            driver = strings.get(device_id.driver)
            pool = strings.get(device_id.pool)
            name = strings.get(device_id.device)
            if driver is None or pool is None or name is None:
                continue  # not in any slice: no device has this ID
            pool_id = pools.get((driver, pool))
            if pool_id is not None:
                wanted[i] = pool_id * width + name
        live_slices = np.flatnonzero(live[:n_slices])
        lengths = self.column("s_ndev", n_slices)[live_slices].astype(np.int64)
        starts = self.column("s_first", n_slices)[live_slices]
        g = _ranges(starts, lengths)
        keys = (
            np.repeat(self.column("s_pool", n_slices)[live_slices].astype(np.int64), lengths)
            * width
            + self.column("d_name", self.n_devices)[g]
        )
        order = np.argsort(keys, kind="stable")
        keys = keys[order]
        lo = np.searchsorted(keys, wanted, side="left")
        hi = np.where(wanted < 0, lo, np.searchsorted(keys, wanted, side="right"))
        matches = hi - lo
        at = np.repeat(np.arange(len(ids), dtype=np.int64), matches)
        return at, g[order[_ranges(lo, matches)]]


def _ranges(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """``starts[i], starts[i] + 1, ..., starts[i] + lengths[i] - 1`` for each i, joined."""
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    before = np.cumsum(lengths) - lengths
    return np.repeat(np.asarray(starts, dtype=np.int64) - before, lengths) + np.arange(
        total, dtype=np.int64
    )
