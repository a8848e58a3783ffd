"""Structures that snapshot versions share: a version changes a little, the rest is shared.

- :class:`PersistentMap`: a mapping made of layers; a derived map is an empty layer
  on top of its parent, so deriving and changing cost what changes, never a copy.
  Layers are merged now and then (small ones into one, the way a binary counter
  carries), which keeps the chain short and every entry merged a logarithmic
  number of times over its life, never the whole map per version.
- :class:`GrowingArray`: an append-only int64 array shared by every version that
  sees a prefix of it; appending writes into spare room, so older versions' views
  stay as they were.
- :class:`Trail`: a growing union of small sets, one link per version, read whole
  only when someone needs it.

Thread-safety: a map is *frozen* once something is derived from it; frozen maps
never change what they contain (merging their layers rewrites how, not what), so
any thread may read them. An unfrozen map belongs to the version that made it: its
writes need that version's lock, as a dict's would.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, Generic, TypeVar, cast

import numpy as np

K = TypeVar("K")
V = TypeVar("V")

# Layers a map may stack before its top layers are merged (a lookup walks each), and
# how much larger than the layers above it a layer must be to be left alone by a
# merge: layer sizes then grow geometrically downwards, so few layers stay apart.
MAX_DEPTH = 6
_SPREAD = 4


class _Gone:
    """Marks a key deleted in a layer (the layers below may still hold it)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<gone>"


_GONE: Any = _Gone()
_MISSING: Any = object()


class PersistentMap(Mapping[K, V], Generic[K, V]):
    """A mapping as a stack of layers, each a dict of what changed over the layer below.

    :meth:`derive` freezes this map and returns an empty, writable layer on top of it;
    :meth:`for_writing` gives this map itself while nothing was derived from it. Deleted
    keys are marked in the top layer (:data:`_GONE`) until a merge reaches the bottom.
    Iterating flattens the map once (its layers become one dict, in place). The order
    of iteration is not promised.
    """

    __slots__ = ("_depth", "_frozen", "_len", "_state")

    def __init__(self, items: Mapping[K, V] | Iterable[tuple[K, V]] = ()) -> None:
        own: dict[K, V] = dict(items)
        # (this layer's dict, the map below or None): one attribute, so a reader
        # never sees a merged layer over its old parent.
        self._state: tuple[dict[K, Any], PersistentMap[K, V] | None] = (own, None)
        self._depth = 1
        self._len = len(own)
        self._frozen = False

    # -- reading ---------------------------------------------------------------------

    def _lookup(self, key: K) -> Any:
        node: PersistentMap[K, V] | None = self
        while node is not None:
            own, node = node._state
            found = own.get(key, _MISSING)
            if found is not _MISSING:
                return found
        return _MISSING

    def get(self, key: K, default: Any = None) -> Any:
        found = self._lookup(key)
        return default if found is _MISSING or found is _GONE else found

    def __getitem__(self, key: K) -> V:
        found = self._lookup(key)
        if found is _MISSING or found is _GONE:
            raise KeyError(key)
        return cast(V, found)

    def __contains__(self, key: object) -> bool:
        found = self._lookup(cast(K, key))
        return found is not _MISSING and found is not _GONE

    def __len__(self) -> int:
        return self._len

    def __iter__(self) -> Iterator[K]:
        return iter(self.flat())

    def get_present(self, keys: Iterable[K]) -> dict[K, V]:
        """The entries of these keys that are present, walking each layer once: a layer
        smaller than the keys asked is scanned, a larger one probed key by key."""
        wanted = set(keys)
        found: dict[K, Any] = {}
        for own in reversed(self._layers()):  # bottom first: upper layers override
            if len(own) <= len(wanted):
                for key, value in own.items():
                    if key in wanted:
                        found[key] = value
            else:
                for key in wanted:
                    value = own.get(key, _MISSING)
                    if value is not _MISSING:
                        found[key] = value
        return {k: v for k, v in found.items() if v is not _GONE}

    def flat(self) -> dict[K, V]:
        """The entries as one dict, this map's own (do not change it). The first call
        on a layered map merges its layers into it, in place."""
        own, parent = self._state
        if parent is None:
            return own
        merged = _replay(self._layers(), bottom=True)
        self._state = (merged, None)
        self._depth = 1
        return merged

    def _layers(self) -> list[dict[K, Any]]:
        """The layers' dicts, top first."""
        out = []
        node: PersistentMap[K, V] | None = self
        while node is not None:
            own, node = node._state
            out.append(own)
        return out

    # -- versions --------------------------------------------------------------------

    def derive(self) -> PersistentMap[K, V]:
        """A writable map with this one's entries; this one is frozen from now on."""
        self._frozen = True
        if self._depth >= MAX_DEPTH:
            self._merge()
        child: PersistentMap[K, V] = PersistentMap.__new__(PersistentMap)
        child._state = ({}, self)
        child._depth = self._depth + 1
        child._len = self._len
        child._frozen = False
        return child

    def freeze(self) -> PersistentMap[K, V]:
        """This map, frozen (to share it: a writer then derives a layer of its own)."""
        self._frozen = True
        return self

    def for_writing(self) -> PersistentMap[K, V]:
        """This map if it may still change, else a writable layer over it."""
        return self.derive() if self._frozen else self

    @property
    def frozen(self) -> bool:
        return self._frozen

    @property
    def depth(self) -> int:
        """Layers a lookup may walk (at most; merges below may have shortened it)."""
        return self._depth

    def _merge(self) -> None:
        """Merge the top layers (two at least): down to the first layer more than
        ``_SPREAD`` times the size of those above it, or to the bottom. What the map
        contains does not change, only how many dicts a lookup walks."""
        chain: list[PersistentMap[K, V]] = []
        node: PersistentMap[K, V] | None = self
        while node is not None:
            chain.append(node)
            node = node._state[1]
        layers = [n._state[0] for n in chain]
        j = min(2, len(layers))
        size = sum(len(own) for own in layers[:j])
        while j < len(layers) and len(layers[j]) <= _SPREAD * size:
            size += len(layers[j])
            j += 1
        if j == len(layers):
            self._state, self._depth = (_replay(layers, bottom=True), None), 1
            return
        below = chain[j]
        self._state = (_replay(layers[:j], bottom=False), below)
        self._depth = below._depth + 1

    # -- writing (an unfrozen map, under its owner's lock) -----------------------------

    def _check_writable(self) -> None:
        if self._frozen:
            raise RuntimeError("a frozen PersistentMap does not change: use for_writing()")

    def __setitem__(self, key: K, value: V) -> None:
        self._check_writable()
        found = self._lookup(key)
        self._state[0][key] = value
        if found is _MISSING or found is _GONE:
            self._len += 1

    def __delitem__(self, key: K) -> None:
        self._check_writable()
        if key not in self:
            raise KeyError(key)
        own, parent = self._state
        if parent is None:
            del own[key]
        else:
            own[key] = _GONE
        self._len -= 1

    def pop(self, key: K, default: Any = _MISSING) -> Any:
        """Remove ``key`` and give its value (``default`` if absent, else KeyError)."""
        found = self._lookup(key)
        if found is _MISSING or found is _GONE:
            if default is _MISSING:
                raise KeyError(key)
            return default
        del self[key]
        return found

    def __repr__(self) -> str:
        return f"PersistentMap({self.flat()!r})"


def _replay(layers: list[dict[Any, Any]], *, bottom: bool) -> dict[Any, Any]:
    """One dict for these layers (top first); ``bottom``: they reach the bottom of the
    map, so deletion marks are dropped instead of kept."""
    out = dict(layers[-1])
    for own in reversed(layers[:-1]):
        out.update(own)
    if bottom:
        gone = [k for k, v in out.items() if v is _GONE]
        for k in gone:
            del out[k]
    return out


class GrowingArray:
    """An append-only array (int64 unless ``dtype`` says otherwise); a version sees
    ``view(n)``, the first n items.

    Appending writes into spare room (doubling it when full), so the views older
    versions hold keep their contents. :meth:`append` gives the index it wrote at:
    appends from two versions never overlap (the second lands after the first).
    """

    __slots__ = ("_buffer", "_lock", "_n")

    def __init__(self, values: Sequence[int] | np.ndarray = (), dtype: Any = np.int64) -> None:
        data = np.asarray(values, dtype=dtype)
        self._buffer = np.zeros(max(16, 2 * len(data)), dtype=dtype)
        self._buffer[: len(data)] = data
        self._n = len(data)
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return self._n

    def append(self, values: Sequence[int] | np.ndarray, *, owned: bool = False) -> int:
        """Append ``values``; the index of the first of them. ``owned``: an array the
        caller made for this and never changes again, which an empty array without room
        for it takes over as its buffer (no copy; the next append copies it)."""
        with self._lock:
            start, end = self._n, self._n + len(values)
            if (
                owned
                and start == 0
                and end > len(self._buffer)
                and isinstance(values, np.ndarray)
                and values.dtype == self._buffer.dtype
                and values.ndim == 1
                and values.flags.c_contiguous
                and values.flags.writeable
            ):
                self._buffer = values
                self._n = end
                return start
            if end > len(self._buffer):
                bigger = np.zeros(max(2 * len(self._buffer), end), dtype=self._buffer.dtype)
                bigger[:start] = self._buffer[:start]
                self._buffer = bigger  # views of the old buffer keep it alive
            self._buffer[start:end] = values
            self._n = end
            return start

    def view(self, n: int) -> np.ndarray:
        """The first n items (read-only; later appends never change them)."""
        out = self._buffer[:n]
        out.flags.writeable = False
        return out


class Trail(Generic[K]):
    """A union of sets built one link per version: adding is O(what is added), the
    union is computed once, when first asked for."""

    __slots__ = ("_all", "_items", "_prev")

    def __init__(self, items: Iterable[K] = (), prev: Trail[K] | None = None) -> None:
        self._items = frozenset(items)
        self._prev = prev
        self._all: frozenset[K] | None = None if prev is not None else self._items

    def add(self, items: Iterable[K]) -> Trail[K]:
        """A trail with ``items`` too (this one unchanged)."""
        return Trail(items, self)

    def all(self) -> frozenset[K]:
        """Every item added along the trail."""
        found = self._all
        if found is None:
            parts: list[frozenset[K]] = []
            node = self
            while True:
                done = node._all
                if done is not None:
                    break
                prev = node._prev
                if prev is None:  # another thread finished this link meanwhile
                    done = node._all
                    assert done is not None
                    break
                parts.append(node._items)
                node = prev
            found = done.union(*parts)
            self._all = found
            self._prev = None  # the links below are not needed any more
        return found
