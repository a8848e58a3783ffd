"""Independent nodes grouped by what the allocator can tell of them for some pod shapes.

The allocator searches a node's devices in one order: its pools by driver and pool
name, each pool's slices by name, each slice's devices as listed. Two independent
nodes (:mod:`draspeed.analysis.inventory`) are of one *kind* when, position by
position in that order, they publish the same thing as far as these shapes'
allocation can tell, names aside:

- what the shapes' selectors read of each device (the values of the attributes and
  capacities they name, and the attributes that could fail to convert); two GPUs
  that differ by UUID are the same to a claim that never reads the UUID;
- each device's counter consumption, taints, binding conditions, and its
  capacities when it can be shared (consumable capacity);
- counter sets, numbered by the order in which devices first consume them (a
  counter set's name only pairs it with its devices);
- which devices of a pool share a name (a repeated name makes a pool invalid);
- for attributes that a constraint compares (matchAttribute, distinctAttribute):
  which devices share a value, numbered by first appearance on the node (list values,
  which constraints compare by intersection, are kept as they are);
- each pool's generation, slice count and slice layout.

The allocator's answer on one node of a kind, in some committed state, is then the
answer on every node of that kind in the same state, device positions mapped to
the node's own pools and devices (:class:`NodeLayout`). Anything the signature
leaves out cannot change an answer; anything it keeps that does not matter only
makes fewer nodes alike.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from draspeed.analysis.inventory import Inventory
from draspeed.analysis.requests import SelectorVerdicts
from draspeed.api._model_tree import signature

if TYPE_CHECKING:
    from draspeed.api.model import Device, Node, ResourceSlice
    from draspeed.rules.ids import PoolID

_LIST_KINDS = frozenset({"ints", "bools", "strings", "versions"})


@dataclass(eq=False)
class Kind:
    """Independent nodes that publish the same thing (for the shapes asked about)."""

    id: int
    rep: int  # node index of the first node of the kind: its slices stand for all
    slices: list[ResourceSlice]  # the representative's, in the allocator's order
    # What the kind's nodes publish, as far as the shapes can tell (equal signatures,
    # also from other node lists: the same kind).
    signature: Any = None
    members: list[int] = field(default_factory=list)  # node indices


@dataclass(slots=True)
class NodeLayout:
    """A node's devices by search position: the pool position and name of each."""

    pools: list[PoolID]  # the node's own pools, in the allocator's order
    pool_of: list[int]  # per device position: its pool's position
    names: list[str]  # per device position: its name
    # (pool position, device name) -> device position (the first, for a repeated name).
    index: dict[tuple[int, str], int]
    # Per pool position: counter set name -> its number on the node.
    counter_sets: list[dict[str, int]]


class Kinds:
    """The kind of every independent node of a node list (None: not independent)."""

    def __init__(
        self,
        inventory: Inventory,
        nodes: Sequence[Node],
        verdicts: SelectorVerdicts,
        compared: set[str],
    ) -> None:
        self.inventory = inventory
        self.kinds: list[Kind] = []
        self.kind_of: list[Kind | None] = [None] * len(nodes)
        self.pools: list[list[PoolID]] = [[] for _ in nodes]
        self._nodes = nodes
        self._verdicts = verdicts
        self._compared = sorted(compared)
        self._interned: dict[bytes, bytes] = {}
        # driver -> id(device) -> its feature (_feature).
        self._features: dict[str, dict[int, tuple[bytes, tuple[str, ...]]]] = {}
        self._layouts: dict[int, NodeLayout] = {}
        by_signature: dict[Any, Kind] = {}
        for i, node in enumerate(nodes):
            if not inventory.independent(node.name):
                continue
            self.pools[i] = inventory.local_pools(node.name)
            key = self._signature(self._slices(i))
            kind = by_signature.get(key)
            if kind is None:
                kind = Kind(len(self.kinds), i, [rs for _, rs in self._slices(i)], key)
                by_signature[key] = kind
                self.kinds.append(kind)
            kind.members.append(i)
            self.kind_of[i] = kind

    def _slices(self, i: int) -> list[tuple[int, ResourceSlice]]:
        """Node i's slices in the allocator's order, with their pool positions."""
        pools = self.inventory.pools
        return [
            (k, rs)
            for k, pid in enumerate(self.pools[i])
            for rs in sorted(pools[pid].slices, key=lambda r: r.metadata.name)
        ]

    def layout(self, i: int) -> NodeLayout:
        """Node i's device positions (made the first time they are needed)."""
        found = self._layouts.get(i)
        if found is None:
            slices = self._slices(i)
            newest: dict[int, int] = {}
            for k, rs in slices:
                generation = rs.spec.pool.generation
                newest[k] = max(newest.get(k, generation), generation)
            pool_of: list[int] = []
            names: list[str] = []
            current: list[bool] = []  # in its pool's newest generation
            sets: list[dict[str, int]] = [{} for _ in self.pools[i]]
            for k, rs in slices:
                for device in rs.spec.devices:
                    pool_of.append(k)
                    names.append(device.name)
                    current.append(rs.spec.pool.generation == newest[k])
                    for use in device.consumes_counters:
                        sets[k].setdefault(use.counter_set, len(sets[k]))
            for k, rs in slices:
                for cs in rs.spec.shared_counters:
                    sets[k].setdefault(cs.name, len(sets[k]))
            # A name stands for its first device in the pool's newest generation (what
            # the allocator reads), else for its first device at all.
            index: dict[tuple[int, str], int] = {}
            for p in sorted(range(len(names)), key=lambda p: not current[p]):
                index.setdefault((pool_of[p], names[p]), p)
            found = self._layouts[i] = NodeLayout(self.pools[i], pool_of, names, index, sets)
        return found

    # ------------------------------------------------------------------ signatures

    def _signature(self, slices: list[tuple[int, ResourceSlice]]) -> Any:
        values: dict[str, dict[Any, int]] = {name: {} for name in self._compared}
        by_pool: dict[int, list[tuple[ResourceSlice, list[int]]]] = {}
        sets: dict[int, dict[str, int]] = {}
        names: dict[int, dict[str, int]] = {}
        for k, rs in slices:
            pool_sets = sets.setdefault(k, {})
            pool_names = names.setdefault(k, {})
            devices: list[Any] = []
            for device in rs.spec.devices:
                feature, consumed = self._feature(rs.spec.driver, device)
                numbers = tuple(pool_sets.setdefault(cs, len(pool_sets)) for cs in consumed)
                name = pool_names.setdefault(device.name, len(pool_names))
                devices.append((feature, numbers, name))
                if values:
                    devices.append(self._classes(device, values))
            by_pool.setdefault(k, []).append((rs, devices))
        parts: list[Any] = []
        for k, pool_slices in by_pool.items():
            pool_sets = sets[k]
            defined: list[Any] = []
            for rs, _ in pool_slices:
                for cs in rs.spec.shared_counters:
                    number = pool_sets.setdefault(cs.name, len(pool_sets))
                    defined.append((number, signature(list(cs.counters.items()))))
            defined.sort()
            parts.append(
                (
                    pool_slices[0][0].spec.driver,
                    tuple(defined),
                    tuple(
                        (
                            rs.spec.pool.generation,
                            rs.spec.pool.resource_slice_count,
                            rs.spec.per_device_node_selection,
                            len(rs.spec.shared_counters),
                            tuple(devices),
                        )
                        for rs, devices in pool_slices
                    ),
                )
            )
        return tuple(parts)

    def _feature(self, driver: str, device: Device) -> tuple[bytes, tuple[str, ...]]:
        """What the allocator can tell of a device, names aside (compiled model-tree
        bytes), and the counter sets it consumes (by name: numbered per node).

        Made once per device object: nodes stamped from one (what-if copies) share
        their device objects. Ids stay meaningful: the inventory holds the slices."""
        by_id = self._features.get(driver)
        if by_id is None:
            by_id = self._features[driver] = {}
        found = by_id.get(id(device))
        if found is None:
            found = by_id[id(device)] = self._new_feature(driver, device)
        return found

    def _new_feature(self, driver: str, device: Device) -> tuple[bytes, tuple[str, ...]]:
        verdicts = self._verdicts
        parts = verdicts.parts(driver, device)
        if parts is None:  # a selector reads the whole device: its own verdicts
            parts = [verdicts.verdict_row(verdicts.keys([(driver, device)])[0])]
        uses = device.consumes_counters
        multi = bool(device.allow_multiple_allocations)
        parts += [
            # The counters of each consumption, names and amounts in order (the walk
            # of a dict in the signature is that of its items).
            [use.counters for use in uses],
            device.taints,
            device.binds_to_node,
            device.binding_conditions,
            device.binding_failure_conditions,
            multi,
        ]
        if multi:  # consumable capacity: what shares may take
            parts.append(device.capacity)
        # One compiled model-tree signature per device: equal bytes for equal content,
        # one object per content (equal features compare by identity first).
        content = signature(parts)
        return (
            self._interned.setdefault(content, content),
            tuple([use.counter_set for use in uses]),
        )

    def _classes(self, device: Device, values: dict[str, dict[Any, int]]) -> tuple[Any, ...]:
        """Per compared attribute: which value class the device is in on this node."""
        out: list[Any] = []
        for name, seen in values.items():
            attribute = device.attributes.get(name)
            if attribute is None:
                out.append(None)
            elif attribute.kind in _LIST_KINDS:
                out.append((attribute.kind, attribute.value))
            else:
                value = (attribute.kind, attribute.value)
                out.append(seen.setdefault(value, len(seen)))
        return tuple(out)


def compared_attributes(verdicts: SelectorVerdicts) -> set[str]:
    """The attributes some constraint of the shapes compares."""
    out: set[str] = set()
    for shape in verdicts.shapes:
        for claim in shape.constraints:
            for _, match, distinct in claim:
                out.update(a for a in (match, distinct) if a)
    return out
