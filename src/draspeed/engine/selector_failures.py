"""Why the erring positions of a selector verdict row err, made when asked for.

A selector can fail on most devices of a cluster (it reads an attribute only some
devices have); the search stops at the first such device it tries, so only a few of
those reasons are ever read. They are kept per group of positions that fail alike,
with the rule that makes one position's reason, not as a tuple per position.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

# (from_class, selector index, compile error, runtime error): formatted when raised.
SelectorFailure = tuple[bool, int, str | None, str | None]

_REMOVED = object()


class SelectorFailures:
    """The failure of each erring position of one selector row (by layout position)."""

    __slots__ = ("_groups", "_own")

    def __init__(self) -> None:
        # Set one by one, later than the groups (a position's reason resolved, or
        # removed when it turned out not to fail).
        self._own: dict[int, object] = {}
        # (positions, ascending; the reason of one of them)
        self._groups: list[tuple[np.ndarray, Callable[[int], SelectorFailure]]] = []

    def copy(self) -> SelectorFailures:
        """A copy that changes apart from this one (the groups' arrays are shared: they
        are never changed)."""
        out = SelectorFailures()
        out._own = dict(self._own)
        out._groups = list(self._groups)
        return out

    def add_many(self, positions: np.ndarray, reason: Callable[[int], SelectorFailure]) -> None:
        """``positions`` (ascending) fail, each for ``reason(position)``."""
        if len(positions):
            self._groups.append((np.asarray(positions, dtype=np.int64), reason))

    def get(self, lp: int) -> SelectorFailure | None:
        found = self._own.get(lp)
        if found is not None:
            return None if found is _REMOVED else found  # type: ignore[return-value]
        for positions, reason in reversed(self._groups):
            i = int(np.searchsorted(positions, lp))
            if i < len(positions) and positions[i] == lp:
                return reason(lp)
        return None

    def __getitem__(self, lp: int) -> SelectorFailure:
        found = self.get(lp)
        if found is None:
            raise KeyError(lp)
        return found

    def __setitem__(self, lp: int, failure: SelectorFailure) -> None:
        self._own[lp] = failure

    def remove(self, lp: int) -> None:
        """Position lp does not fail (after all)."""
        self._own[lp] = _REMOVED
