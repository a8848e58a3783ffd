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
from dataclasses import dataclass

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
        """Key -> claim, in order; computed once, after which the chain is dropped."""
        if self._flat is None:
            assert self._parent is not None
            base = self._parent.flat()
            out = {k: c for k, c in base.items() if k not in self._removed}
            out.update(self._added)
            self._flat, self._parent, self._depth = out, None, 0
        return self._flat

    def __contains__(self, key: str) -> bool:
        return key in self.flat()

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


@dataclass(slots=True)
class Holds:
    """Per device (global index): exclusive holders, shares, shares with capacity."""

    exclusive: np.ndarray
    shares: np.ndarray
    with_capacity: np.ndarray

    @classmethod
    def empty(cls, n: int) -> Holds:
        return cls(*(np.zeros(n, dtype=np.int32) for _ in range(3)))

    def copy(self, n: int) -> Holds:
        """A copy sized for ``n`` devices (new devices hold nothing yet)."""
        out = Holds.empty(n)
        m = min(n, len(self.exclusive))
        out.exclusive[:m] = self.exclusive[:m]
        out.shares[:m] = self.shares[:m]
        out.with_capacity[:m] = self.with_capacity[:m]
        return out

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
                if kind == EXCLUSIVE:
                    self.exclusive[g] += sign
                else:
                    self.shares[g] += sign
                    if kind == SHARE_WITH_CAPACITY:
                        self.with_capacity[g] += sign

    def flags(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(exclusively in use, allocated in any way, holds a committed share or capacity)."""
        in_use = self.exclusive > 0
        committed = (self.shares > 0) | (self.with_capacity > 0)
        return in_use, in_use | committed, committed
