"""Gathering the resource pools a node can allocate from (upstream ``GatherPools``).

For one node: take the slices published for that node plus the slices without a
node name, keep the relevant ones (node name, all nodes, node selector, or any
device with per-device node selection matching the node), group them by pool
and keep only the newest generation. A pool whose slices are not all there is
re-checked against every slice of the cluster: a newer generation elsewhere makes
it obsolete (dropped); still missing slices make it *incomplete*. Complete pools
are validated (duplicate device names, counter sets) and may be *invalid*.

Order matters because the search is first-fit: pools sorted by (driver, pool),
pools containing devices with binding conditions after all others, slices
sorted by name, devices in slice order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from draspeed.api.model import CounterSet, Node, ResourceSlice
from draspeed.errors import DraspeedError
from draspeed.features import Features
from draspeed.rules import texts
from draspeed.rules.ids import PoolID
from draspeed.rules.node_selection import NodeSelectorError, node_matches


class PoolGatheringError(DraspeedError):
    """A slice's node selection could not be evaluated; ``str()`` is upstream's text."""


@dataclass(slots=True)
class Pool:
    """One pool as seen from one node."""

    driver: str
    name: str
    generation: int = 0
    incomplete: bool = False
    invalid: bool = False
    invalid_reason: str = ""
    # Slices with devices that may be allocated on the node, sorted by name.
    slices: list[ResourceSlice] = field(default_factory=list)
    # Slices of the same pool for other nodes: only their counter consumption matters.
    slices_not_targeting_node: list[ResourceSlice] = field(default_factory=list)
    counter_sets: dict[str, CounterSet] = field(default_factory=dict)

    @property
    def id(self) -> PoolID:
        return PoolID(self.driver, self.name)

    @property
    def usable(self) -> bool:
        """Whether the search may take devices from this pool."""
        return not (self.incomplete or self.invalid)

    def __str__(self) -> str:
        return str(self.id)


def _is_relevant(slice_: ResourceSlice, node: Node) -> bool | None:
    """True/False for a known node selection, None for one this version does not know."""
    spec = slice_.spec
    node_name = spec.node_name or ""
    all_nodes = bool(spec.all_nodes)
    if node_name or all_nodes or spec.node_selector is not None:
        try:
            return node_matches(node, node_name, all_nodes, spec.node_selector)
        except NodeSelectorError as err:
            raise PoolGatheringError(texts.slice_node_selection(slice_.metadata.name, err)) from err
    if spec.per_device_node_selection:
        for device in spec.devices:
            try:
                if node_matches(
                    node, device.node_name or "", bool(device.all_nodes), device.node_selector
                ):
                    return True
            except NodeSelectorError as err:
                raise PoolGatheringError(
                    texts.device_node_selection(device.name, slice_.metadata.name, err)
                ) from err
        return False
    return None


def _add_slice(pools: dict[PoolID, list[ResourceSlice]], slice_: ResourceSlice) -> None:
    """Keep only the newest generation of each pool."""
    pool_id = PoolID(slice_.spec.driver, slice_.spec.pool.name)
    current = pools.get(pool_id)
    generation = slice_.spec.pool.generation
    if current is None or generation > current[0].spec.pool.generation:
        pools[pool_id] = [slice_]
    elif generation == current[0].spec.pool.generation:
        current.append(slice_)


def _same_generation_slices(
    all_slices: Sequence[ResourceSlice], pool_id: PoolID, generation: int
) -> list[ResourceSlice] | None:
    """All cluster slices of the pool with that generation; None if a newer one exists."""
    found: list[ResourceSlice] = []
    for slice_ in all_slices:
        if slice_.spec.driver != pool_id.driver or slice_.spec.pool.name != pool_id.pool:
            continue
        if slice_.spec.pool.generation > generation:
            return None
        if slice_.spec.pool.generation == generation:
            found.append(slice_)
    return found


def _build_pool(
    pool_id: PoolID,
    targeting: list[ResourceSlice],
    features: Features,
    all_for_pool: Sequence[ResourceSlice],
) -> Pool:
    targeting = sorted(targeting, key=lambda s: s.metadata.name)
    generation = targeting[0].spec.pool.generation
    device_slices: list[ResourceSlice] = []
    counter_slices: list[ResourceSlice] = []
    other_slices: list[ResourceSlice] = []
    for slice_ in targeting:
        if features.partitionable_devices and slice_.spec.shared_counters:
            counter_slices.append(slice_)
        else:
            device_slices.append(slice_)
    if len(targeting) < len(all_for_pool):
        seen = {s.metadata.name for s in targeting}
        for slice_ in all_for_pool:
            if slice_.metadata.name in seen:
                continue
            if features.partitionable_devices and slice_.spec.shared_counters:
                counter_slices.append(slice_)
            else:
                other_slices.append(slice_)

    def invalid(reason: str) -> Pool:
        return Pool(pool_id.driver, pool_id.pool, generation, invalid=True, invalid_reason=reason)

    names: set[str] = set()
    for slice_ in device_slices:
        for device in slice_.spec.devices:
            if device.name in names:
                return invalid(texts.duplicate_device_name(device.name))
            names.add(device.name)

    if not features.partitionable_devices:
        return Pool(pool_id.driver, pool_id.pool, generation, slices=device_slices)

    counter_sets: dict[str, CounterSet] = {}
    for slice_ in counter_slices:
        for counter_set in slice_.spec.shared_counters:
            if counter_set.name in counter_sets:
                return invalid(texts.duplicate_counter_set(counter_set.name))
            counter_sets[counter_set.name] = counter_set

    for slice_ in device_slices + other_slices:
        for device in slice_.spec.devices:
            for consumption in device.consumes_counters:
                counter_set_ = counter_sets.get(consumption.counter_set)
                if counter_set_ is None:
                    return invalid(texts.counter_set_not_found(consumption.counter_set))
                for counter in consumption.counters:
                    if counter not in counter_set_.counters:
                        return invalid(texts.counter_not_found(counter, counter_set_.name))

    return Pool(
        pool_id.driver,
        pool_id.pool,
        generation,
        slices=device_slices,
        slices_not_targeting_node=other_slices,
        counter_sets=counter_sets,
    )


def _has_binding_conditions(pool: Pool) -> bool:
    return any(device.binding_conditions for s in pool.slices for device in s.spec.devices)


def slices_for_node(all_slices: Sequence[ResourceSlice], node: Node) -> list[ResourceSlice]:
    """The slices upstream considers for a node: its own first, then those without node name."""
    own = [s for s in all_slices if s.spec.node_name and s.spec.node_name == node.name]
    shared = [s for s in all_slices if not s.spec.node_name]
    return own + shared


def gather_pools(all_slices: Sequence[ResourceSlice], node: Node, features: Features) -> list[Pool]:
    """The pools of the node in search order; raises PoolGatheringError (upstream's text)."""
    pools: dict[PoolID, list[ResourceSlice]] = {}
    for slice_ in slices_for_node(all_slices, node):
        spec = slice_.spec
        if not features.partitionable_devices and (
            spec.per_device_node_selection is not None or spec.shared_counters
        ):
            continue
        if _is_relevant(slice_, node):
            _add_slice(pools, slice_)

    plain: list[Pool] = []
    with_binding_conditions: list[Pool] = []
    for pool_id, targeting in pools.items():
        expected = targeting[0].spec.pool.resource_slice_count
        all_for_pool: Sequence[ResourceSlice] = ()
        if len(targeting) != expected:
            found = _same_generation_slices(all_slices, pool_id, targeting[0].spec.pool.generation)
            if found is None:
                continue  # obsolete: the driver is publishing a newer generation
            if len(found) != expected:
                plain.append(
                    Pool(
                        pool_id.driver,
                        pool_id.pool,
                        targeting[0].spec.pool.generation,
                        incomplete=True,
                    )
                )
                continue
            all_for_pool = found
        pool = _build_pool(pool_id, targeting, features, all_for_pool)
        (with_binding_conditions if _has_binding_conditions(pool) else plain).append(pool)

    plain.sort(key=lambda p: p.id)
    with_binding_conditions.sort(key=lambda p: p.id)
    return plain + with_binding_conditions
