"""Building blocks of snapshot versions: what changes between them, kept cheaply.

A :class:`~draspeed.snapshot.Snapshot` update returns a new version and leaves the
old one as it was (a scheduling cycle keeps seeing one consistent state).  The
pieces here let a version share almost everything with its parent:

- :class:`ClaimLog`: the committed claims as a chain of small changes, flattened
  every so often, so adding one claim does not copy all the others;
- :class:`Holds`: per device (global index), how many committed claims hold it
  exclusively, as a share, and as a share with consumed capacity -- arrays a new
  version copies (memcpy) and patches for the devices a change touches.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import numpy as np

from draspeed.api.model import ResourceClaim
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
            while node._flat is None:
                chain.append(node)
                assert node._parent is not None
                node = node._parent
            out = dict(node._flat)
            for link in reversed(chain):
                for key in link._removed:
                    out.pop(key, None)
                out.update(link._added)
            self._flat, self._parent, self._depth = out, None, 0
        return self._flat

    def get(self, key: str) -> ResourceClaim | None:
        """The claim with this key, found along the chain (no flat copy is made)."""
        node = self
        while node._flat is None:
            if key in node._added:
                return node._added[key]
            if key in node._removed:
                return None
            assert node._parent is not None
            node = node._parent
        return node._flat.get(key)

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


class Holds:
    """Per device (global index): exclusive holders, shares, shares with capacity.

    Base arrays shared by every version derived from the one that made them, plus a
    small overlay of the devices changed since (copied per version); the overlay is
    folded into new base arrays once it grows past a fraction of them, so an update
    costs what it touches.
    """

    __slots__ = ("_base", "_over", "n")

    def __init__(self, n: int, base: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None):
        self.n = n
        self._base = base if base is not None else tuple(np.zeros(n, np.int32) for _ in range(3))
        self._over: dict[int, tuple[int, int, int]] = {}

    def derive(self, n: int | None = None) -> Holds:
        """A copy to change (for ``n`` devices: new devices hold nothing yet)."""
        out = Holds.__new__(Holds)
        out.n = self.n if n is None else n
        out._base, out._over = self._base, dict(self._over)
        if len(out._over) > max(4096, out.n // 16):
            out._fold()
        return out

    def _fold(self) -> None:
        arrays = tuple(np.zeros(self.n, np.int32) for _ in range(3))
        m = min(self.n, len(self._base[0]))
        for mine, theirs in zip(arrays, self._base, strict=True):
            mine[:m] = theirs[:m]
        for g, counts in self._over.items():
            for k in range(3):
                arrays[k][g] = counts[k]
        self._base, self._over = arrays, {}

    def get(self, g: int) -> tuple[int, int, int]:
        found = self._over.get(g)
        if found is not None:
            return found
        if g >= len(self._base[0]):
            return (0, 0, 0)
        return (int(self._base[0][g]), int(self._base[1][g]), int(self._base[2][g]))

    def put(self, g: int, counts: tuple[int, int, int]) -> None:
        self._over[g] = counts

    def apply(
        self,
        holds: Iterable[tuple[DeviceID, int]],
        sign: int,
        devices_named: Callable[[DeviceID], list[int]],
        touched: set[int],
    ) -> None:
        """Add (sign 1) or remove (sign -1) holds; every device index touched is recorded."""
        for device_id, kind in holds:
            for g in devices_named(device_id):
                touched.add(g)
                exclusive, shares, capacity = self.get(g)
                if kind == EXCLUSIVE:
                    exclusive += sign
                else:
                    shares += sign
                    if kind == SHARE_WITH_CAPACITY:
                        capacity += sign
                self.put(g, (exclusive, shares, capacity))

    def flags_at(self, g: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(exclusively in use, allocated in any way, holds a committed share or capacity)
        for these devices, without building arrays for all of them."""
        base_n = len(self._base[0])
        inside = np.minimum(g, max(base_n - 1, 0))
        counts = [
            np.where(g < base_n, b[inside], 0) if base_n else np.zeros(len(g), np.int32)
            for b in self._base
        ]
        if self._over:
            for i, dev in enumerate(g.tolist()):
                found = self._over.get(dev)
                if found is not None:
                    for k in range(3):
                        counts[k][i] = found[k]
        in_use = counts[0] > 0
        committed = (counts[1] > 0) | (counts[2] > 0)
        return in_use, in_use | committed, committed
