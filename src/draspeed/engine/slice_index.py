"""Which live slices a snapshot version has on each node, in each pool, under each name.

Built once per snapshot family from the slice table; a derived version rewrites only
the keys its update touches (the maps are persistent, :mod:`draspeed.engine.persistent`),
so an update costs what it changed, not the cluster.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from draspeed.api.model import ResourceSlice
from draspeed.engine.persistent import PersistentMap
from draspeed.rules.ids import PoolID

__all__ = ["SliceIndex"]


@dataclass(frozen=True, slots=True)
class SliceIndex:
    """The live slices of a version by node name, by pool and by name (persistent maps:
    a derived version writes the keys it changes)."""

    on_node: PersistentMap[str, tuple[int, ...]]
    shared: tuple[int, ...]  # slices without a node name
    of_pool: PersistentMap[PoolID, tuple[int, ...]]
    named: PersistentMap[str, int]

    @classmethod
    def build(cls, slices: Sequence[ResourceSlice], live: np.ndarray) -> SliceIndex:
        """The index of ``slices`` (by position) whose ``live`` flag is set."""
        on_node: dict[str, list[int]] = {}
        shared: list[int] = []
        of_pool: dict[PoolID, list[int]] = {}
        named: dict[str, int] = {}
        for s, rs in enumerate(slices):
            if not live[s]:
                continue
            spec = rs.spec
            if spec.node_name:
                on_node.setdefault(spec.node_name, []).append(s)
            else:
                shared.append(s)
            of_pool.setdefault(PoolID(spec.driver, spec.pool.name), []).append(s)
            named[rs.metadata.name] = s
        return cls(
            PersistentMap((k, tuple(v)) for k, v in on_node.items()).freeze(),
            tuple(shared),
            PersistentMap((k, tuple(v)) for k, v in of_pool.items()).freeze(),
            PersistentMap(named).freeze(),
        )

    def rewritten(self, slices: Sequence[ResourceSlice], dead: set[int], new: range) -> SliceIndex:
        """This index with the ``dead`` slices gone and the ``new`` ones in (positions
        in ``slices``); each key's list is written once, whatever the number of its
        slices that changed."""
        on_node: dict[str, list[int]] = {}
        of_pool: dict[PoolID, list[int]] = {}
        shared = list(self.shared) if any(not slices[s].spec.node_name for s in dead) else None
        named = self.named.derive()
        for s in dead:
            spec = slices[s].spec
            pid = PoolID(spec.driver, spec.pool.name)
            if pid not in of_pool:
                of_pool[pid] = list(self.of_pool.get(pid, ()))
            of_pool[pid].remove(s)
            if spec.node_name:
                if spec.node_name not in on_node:
                    on_node[spec.node_name] = list(self.on_node.get(spec.node_name, ()))
                on_node[spec.node_name].remove(s)
            else:
                assert shared is not None
                shared.remove(s)
            if named.get(slices[s].metadata.name) == s:
                del named[slices[s].metadata.name]
        for s in new:
            rs = slices[s]
            pid = PoolID(rs.spec.driver, rs.spec.pool.name)
            if pid not in of_pool:
                of_pool[pid] = list(self.of_pool.get(pid, ()))
            of_pool[pid].append(s)
            if rs.spec.node_name:
                if rs.spec.node_name not in on_node:
                    on_node[rs.spec.node_name] = list(self.on_node.get(rs.spec.node_name, ()))
                on_node[rs.spec.node_name].append(s)
            else:
                if shared is None:
                    shared = list(self.shared)
                shared.append(s)
            named[rs.metadata.name] = s
        return SliceIndex(
            _written(self.on_node, on_node),
            tuple(shared) if shared is not None else self.shared,
            _written(self.of_pool, of_pool),
            named.freeze(),
        )


def _written(index: PersistentMap[Any, tuple[int, ...]], lists: dict[Any, list[int]]) -> Any:
    """``index`` with these keys' lists replaced (an empty list removes its key)."""
    if not lists:
        return index
    out = index.derive()
    for key, members in lists.items():
        if members:
            out[key] = tuple(members)
        elif key in out:
            del out[key]
    return out.freeze()
