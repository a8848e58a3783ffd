"""Building blocks of snapshot versions: what changes between them, kept cheaply.

A :class:`~draspeed.engine.snapshot.Snapshot` update returns a new version and leaves the
old one as it was (a scheduling cycle keeps seeing one consistent state).  The
pieces here let a version share almost everything with its parent:

- :class:`ClaimLog`: the committed claims as a chain of small changes, flattened
  every so often, so adding one claim does not copy all the others;
- :class:`Holds`: per device (global index), how many committed claims hold it
  exclusively, as a share, and as a share with consumed capacity -- arrays shared by
  versions plus a persistent overlay of the devices changed since, and the same
  counts per device ID (what a device republished under a new index starts with).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

import numpy as np

from draspeed.api.model import ResourceClaim
from draspeed.engine.persistent import PersistentMap
from draspeed.rules.ids import DeviceID

_FLATTEN_DEPTH = 32  # chain links kept before a version holds its own flat copy


class ClaimLog:
    """Committed claims by key (``namespace/name``), in the order they were added."""

    __slots__ = ("_added", "_depth", "_flat", "_parent", "_removed")

    def __init__(self, claims: Iterable[ResourceClaim] = ()) -> None:
        self._flat: dict[str, ResourceClaim] | None = {c.key: c for c in claims}
        self._parent: ClaimLog | None = None
        self._added: dict[str, ResourceClaim] = {}
        self._removed: frozenset[str] = frozenset()
        self._depth = 0

    def derive(self, added: list[ResourceClaim], removed: Iterable[str]) -> ClaimLog:
        """A log with ``removed`` keys gone and ``added`` in (a key added again moves
        to the end, as a rebuild from the new list would order it)."""
        child = ClaimLog.__new__(ClaimLog)
        child._flat = None
        child._parent = self
        child._added = {c.key: c for c in added}
        child._removed = frozenset(removed) | frozenset(child._added)
        child._depth = self._depth + 1
        if child._depth >= _FLATTEN_DEPTH:
            child.flat()
        return child

    def flat(self) -> dict[str, ResourceClaim]:
        """Key -> claim, in order; computed once, after which the chain is dropped. Only
        this link gets a copy: the changes along the chain are replayed onto the nearest
        link that has one (flattening every ancestor would copy every claim per link)."""
        if self._flat is None:
            chain: list[ClaimLog] = []
            node: ClaimLog = self
            base = node._flat_or_parent()
            while isinstance(base, ClaimLog):
                chain.append(node)
                node = base
                base = node._flat_or_parent()
            out = dict(base)
            for link in reversed(chain):
                for key in link._removed:
                    out.pop(key, None)
                out.update(link._added)
            self._flat, self._parent, self._depth = out, None, 0
        return self._flat

    def get(self, key: str) -> ResourceClaim | None:
        """The claim with this key, found along the chain (no flat copy is made)."""
        node = self
        while True:
            base = node._flat_or_parent()
            if not isinstance(base, ClaimLog):
                return base.get(key)
            if key in node._added:
                return node._added[key]
            if key in node._removed:
                return None
            node = base

    def _flat_or_parent(self) -> dict[str, ResourceClaim] | ClaimLog:
        """This link's flat dict if it has one, else its parent. Another thread may
        flatten the link meanwhile: it sets the dict before dropping the parent."""
        parent = self._parent  # read first: once it is None, the dict is set
        flat = self._flat
        if flat is not None:
            return flat
        assert parent is not None
        return parent

    def __contains__(self, key: str) -> bool:
        return self.get(key) is not None

    def __len__(self) -> int:
        return len(self.flat())


# What a committed result holds of its device.
EXCLUSIVE, SHARE, SHARE_WITH_CAPACITY = 0, 1, 2


def claim_holds(claim: ResourceClaim, consumable_capacity: bool) -> list[tuple[DeviceID, int]]:
    """What the claim's allocation holds, as kube-scheduler counts it: admin access
    holds nothing; with DRAConsumableCapacity a result with a shareID is a share."""
    allocation = claim.status.allocation
    if allocation is None:
        return []
    out = []
    for r in allocation.devices.results:
        if r.admin_access:
            continue
        device = DeviceID(r.driver, r.pool, r.device)
        if consumable_capacity and r.share_id is not None:
            out.append((device, SHARE_WITH_CAPACITY if r.consumed_capacity else SHARE))
        else:
            out.append((device, EXCLUSIVE))
    return out


Counts = tuple[int, int, int]  # exclusive holders, shares, shares with consumed capacity
# Changed devices a holds overlay keeps before it is folded into new base arrays (at
# least; a 256th of the devices on larger snapshots): folding copies the arrays, so
# this bounds the overlay while keeping the copying at a few bytes per change.
FOLD_MIN = 4096
_NOTHING: Counts = (0, 0, 0)


class Holds:
    """Per device (global index): exclusive holders, shares, shares with capacity.

    Base arrays shared by every version derived from the one that made them, plus an
    overlay of the devices changed since (a :class:`PersistentMap`, so a version costs
    what it changes); the overlay is folded into new base arrays once it outgrows a
    fixed share of them (amortised: a few bytes copied per change). The same counts
    are kept per device ID, pool by pool, for devices that appear later under a new
    index (a republished pool looks up what its devices hold in one step).
    """

    __slots__ = ("_base", "_by_pool", "_over", "n")

    def __init__(self, n: int, base: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None):
        self.n = n
        self._base = base if base is not None else tuple(np.zeros(n, np.int32) for _ in range(3))
        self._over: PersistentMap[int, Counts] = PersistentMap()
        # (driver, pool) -> device name -> counts, for the devices something holds.
        self._by_pool: PersistentMap[tuple[str, str], dict[str, Counts]] = PersistentMap()

    @classmethod
    def of_committed(
        cls,
        n: int,
        holds: Sequence[tuple[DeviceID, int]],
        devices_named: Callable[[Sequence[DeviceID]], tuple[np.ndarray, np.ndarray]],
    ) -> Holds:
        """What ``holds`` (of every committed claim) add up to, from nothing: what
        :meth:`apply` makes of them one by one, counted for all devices at once.
        ``devices_named(ids)`` gives (index into ids, device index) of every device
        with one of those IDs."""
        out = cls(n)
        if not holds:  # (nothing committed: no need to match the devices' names)
            return out
        by_pool: dict[tuple[str, str], dict[str, Counts]] = {}
        kinds = np.fromiter((kind for _, kind in holds), dtype=np.int8, count=len(holds))
        for device_id, kind in holds:  # per committed result, not per device
            held = by_pool.setdefault((device_id.driver, device_id.pool), {})
            held[device_id.device] = _plus(held.get(device_id.device, _NOTHING), _DELTA[kind])
        for key, held in by_pool.items():
            out._by_pool[key] = held
        at, g = devices_named([device_id for device_id, _ in holds])
        kind_at = kinds[at]
        for k, chosen in enumerate(
            (kind_at == EXCLUSIVE, kind_at != EXCLUSIVE, kind_at == SHARE_WITH_CAPACITY)
        ):
            out._base[k][:] = np.bincount(g[chosen], minlength=n)[:n]
        return out

    def derive(self, n: int | None = None) -> Holds:
        """A copy to change (for ``n`` devices: new devices hold nothing yet)."""
        out = Holds.__new__(Holds)
        out.n = self.n if n is None else n
        out._base = self._base
        out._over = self._over.derive()
        out._by_pool = self._by_pool.derive()
        if len(out._over) > max(FOLD_MIN, out.n // 256):
            out._fold()
        return out

    def _fold(self) -> None:
        arrays = tuple(np.zeros(self.n, np.int32) for _ in range(3))
        m = min(self.n, len(self._base[0]))
        for mine, theirs in zip(arrays, self._base, strict=True):
            mine[:m] = theirs[:m]
        over = self._over.flat()
        if over:
            where = np.fromiter(over.keys(), dtype=np.int64, count=len(over))
            counts = np.asarray(list(over.values()), dtype=np.int32).reshape(-1, 3)
            for k in range(3):
                arrays[k][where] = counts[:, k]
        self._base, self._over = arrays, PersistentMap()

    def get(self, g: int) -> Counts:
        found = self._over.get(g)
        if found is not None:
            return found
        if g >= len(self._base[0]):
            return _NOTHING
        return (int(self._base[0][g]), int(self._base[1][g]), int(self._base[2][g]))

    def put(self, g: int, counts: Counts) -> None:
        self._over[g] = counts

    def counts_of(self, device_id: DeviceID) -> Counts:
        """What the committed claims hold of the device with this ID."""
        return self.held_in_pool(device_id.driver, device_id.pool).get(device_id.device, _NOTHING)

    def held_in_pool(self, driver: str, pool: str) -> dict[str, Counts]:
        """Device name -> counts, for the devices of this pool something holds (do not
        change the dict: it is shared)."""
        return self._by_pool.get((driver, pool), _NO_HOLDS)

    def apply(
        self,
        holds: Iterable[tuple[DeviceID, int]],
        sign: int,
        devices_named: Callable[[DeviceID], list[int]],
        touched: set[int],
    ) -> None:
        """Add (sign 1) or remove (sign -1) holds; every device index touched is recorded."""
        pools: dict[tuple[str, str], dict[str, Counts]] = {}
        for device_id, kind in holds:
            one = _DELTA[kind]
            delta = one if sign == 1 else (-one[0], -one[1], -one[2])
            key = (device_id.driver, device_id.pool)
            held = pools.get(key)
            if held is None:  # copied once per pool and call: the old dict is shared
                held = pools[key] = dict(self.held_in_pool(*key))
            counts = _plus(held.get(device_id.device, _NOTHING), delta)
            if counts == _NOTHING:
                held.pop(device_id.device, None)
            else:
                held[device_id.device] = counts
            for g in devices_named(device_id):
                touched.add(g)
                self.put(g, _plus(self.get(g), delta))
        for key, held in pools.items():
            if held:
                self._by_pool[key] = held
            else:
                self._by_pool.pop(key, None)

    def for_gather(
        self,
    ) -> tuple[tuple[np.ndarray, np.ndarray, np.ndarray], np.ndarray, np.ndarray]:
        """(base arrays, overlay devices sorted, their three counts flattened): what
        the compiled pool gathering reads (draspeed.engine._gather)."""
        over = self._over.flat() if len(self._over) else {}
        keys = np.fromiter(over.keys(), dtype=np.int64, count=len(over))
        values = np.asarray(list(over.values()), dtype=np.int32).reshape(-1, 3)
        order = np.argsort(keys)
        base = tuple(np.ascontiguousarray(b, dtype=np.int32) for b in self._base)
        return (  # type: ignore[return-value]
            base,
            np.ascontiguousarray(keys[order]),
            np.ascontiguousarray(values[order].ravel(), dtype=np.int32),
        )

    def flags_at(self, g: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(exclusively in use, allocated in any way, holds a committed share or capacity)
        for these devices, without building arrays for all of them."""
        if len(g) <= 16:  # a few devices (an update's): numpy's per-call cost dominates
            rows = [self.get(x) for x in g.tolist()]
            exclusive, shares, capacity = (
                np.asarray([r[k] for r in rows], dtype=np.int32) for k in range(3)
            )
            in_use = exclusive > 0
            committed = (shares > 0) | (capacity > 0)
            return in_use, in_use | committed, committed
        base_n = len(self._base[0])
        if base_n and len(g) and int(g.max()) < base_n:  # (the usual case: one take each)
            counts = [b.take(g) for b in self._base]
        else:
            inside = np.minimum(g, max(base_n - 1, 0))
            counts = [
                np.where(g < base_n, b[inside], 0) if base_n else np.zeros(len(g), np.int32)
                for b in self._base
            ]
        if len(self._over) and len(g):
            found = self._over.get_present(g.tolist())
            if found:
                keys = np.fromiter(found.keys(), dtype=np.int64, count=len(found))
                order = np.argsort(keys)
                keys = keys[order]
                values = np.asarray(list(found.values()), dtype=np.int32).reshape(-1, 3)[order]
                at = np.minimum(np.searchsorted(keys, g), len(keys) - 1)
                hit = keys[at] == g
                for k in range(3):
                    counts[k][hit] = values[at[hit], k]
        in_use = counts[0] > 0
        committed = (counts[1] > 0) | (counts[2] > 0)
        return in_use, in_use | committed, committed


_NO_HOLDS: dict[str, Counts] = {}


# The counts one committed result of each kind adds.
_DELTA: dict[int, Counts] = {EXCLUSIVE: (1, 0, 0), SHARE: (0, 1, 0), SHARE_WITH_CAPACITY: (0, 1, 1)}


def _plus(a: Counts, b: Counts) -> Counts:
    return (a[0] + b[0], a[1] + b[1], a[2] + b[2])
