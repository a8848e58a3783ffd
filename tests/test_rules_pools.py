"""Pool gathering: relevance, generations, completeness, validation, order."""

from __future__ import annotations

from typing import Any

from draspeed.api.model import (
    Counter,
    CounterSet,
    Device,
    DeviceCounterConsumption,
    Node,
    NodeSelector,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    ObjectMeta,
    ResourcePool,
    ResourceSlice,
    ResourceSliceSpec,
)
from draspeed.features import Features
from draspeed.quantity import Quantity
from draspeed.rules.pools import PoolGatheringError, gather_pools

NODE = Node(ObjectMeta(name="node-1", labels={"zone": "z1"}))


def sl(
    name: str,
    pool: str,
    *devices: str,
    driver: str = "d",
    gen: int = 1,
    count: int = 1,
    **spec: Any,
) -> ResourceSlice:
    if not {"node_name", "all_nodes", "node_selector", "per_device_node_selection"} & set(spec):
        spec["node_name"] = "node-1"
    return ResourceSlice(
        ObjectMeta(name=name),
        ResourceSliceSpec(
            driver=driver,
            pool=ResourcePool(pool, gen, count),
            devices=[Device(d) for d in devices],
            **spec,
        ),
    )


def ids(pools: list) -> list[str]:
    return [str(p.id) for p in pools]


def test_relevance_and_order() -> None:
    zone = NodeSelector([NodeSelectorTerm([NodeSelectorRequirement("zone", "In", ["z1"])])])
    other_zone = NodeSelector([NodeSelectorTerm([NodeSelectorRequirement("zone", "In", ["z2"])])])
    slices = [
        sl("s-b", "b", "x"),
        sl("s-other-node", "c", "x", node_name="node-2"),
        sl("s-a", "a", "x", driver="e", all_nodes=True),
        sl("s-z", "z", "x", node_selector=zone),
        sl("s-z2", "y", "x", node_selector=other_zone),
        sl("s-unknown", "u", "x", node_name=None),  # no node selection at all: ignored
    ]
    assert ids(gather_pools(slices, NODE, Features())) == ["d/b", "d/z", "e/a"]


def test_newest_generation_wins_and_slices_sorted() -> None:
    slices = [
        sl("s2", "p", "b", gen=2, count=2),
        sl("s0", "p", "old", gen=1),
        sl("s1", "p", "a", gen=2, count=2),
    ]
    (pool,) = gather_pools(slices, NODE, Features())
    assert pool.generation == 2 and not pool.incomplete
    assert [s.metadata.name for s in pool.slices] == ["s1", "s2"]


def test_incomplete_and_obsolete_pools() -> None:
    # Two slices announced, one for this node, one for another: complete after the recheck.
    split = [sl("p-1", "p", "a", count=2), sl("p-2", "p", "b", count=2, node_name="node-2")]
    (pool,) = gather_pools(split, NODE, Features())
    assert not pool.incomplete and [s.metadata.name for s in pool.slices] == ["p-1"]
    assert [s.metadata.name for s in pool.slices_not_targeting_node] == ["p-2"]
    # One slice missing altogether: incomplete, no devices.
    (pool,) = gather_pools(split[:1], NODE, Features())
    assert pool.incomplete and not pool.slices and not pool.usable
    # A newer generation on another node makes this node's view obsolete: dropped.
    newer = [*split[:1], sl("p-3", "p", "c", gen=2, count=1, node_name="node-2")]
    assert gather_pools(newer, NODE, Features()) == []


def counters_slice(name: str, pool: str, *sets: str) -> ResourceSlice:
    return sl(
        name,
        pool,
        shared_counters=[CounterSet(s, {"mem": Counter(Quantity.parse("8Gi"))}) for s in sets],
        count=2,
    )


def consuming(name: str, pool: str, counter_set: str, counter: str = "mem") -> ResourceSlice:
    device = Device(
        "dev",
        consumes_counters=[
            DeviceCounterConsumption(counter_set, {counter: Counter(Quantity.parse("1Gi"))})
        ],
    )
    return ResourceSlice(
        ObjectMeta(name=name),
        ResourceSliceSpec(
            driver="d", pool=ResourcePool(pool, 1, 2), node_name="node-1", devices=[device]
        ),
    )


def test_invalid_pools() -> None:
    dup = [sl("a1", "p", "x", count=2), sl("a2", "p", "x", count=2)]
    (pool,) = gather_pools(dup, NODE, Features())
    assert pool.invalid and pool.invalid_reason == "duplicate device name x"
    cases = {
        "counter set cs not found": [counters_slice("c", "p", "other"), consuming("d", "p", "cs")],
        "counter cpu not found in counter set cs": [
            counters_slice("c", "p", "cs"),
            consuming("d", "p", "cs", "cpu"),
        ],
        "duplicate counter set name cs": [
            counters_slice("c1", "p", "cs"),
            counters_slice("c2", "p", "cs"),
        ],
    }
    for reason, slices in cases.items():
        (pool,) = gather_pools(slices, NODE, Features())
        assert pool.invalid and pool.invalid_reason == reason
    (pool,) = gather_pools(
        [*cases["counter set cs not found"][:1], consuming("d", "p", "other")], NODE, Features()
    )
    assert not pool.invalid and set(pool.counter_sets) == {"other"}


def test_partitionable_off_skips_counter_and_per_device_slices() -> None:
    per_device = ResourceSlice(
        ObjectMeta(name="pd"),
        ResourceSliceSpec(
            driver="d",
            pool=ResourcePool("q", 1, 1),
            per_device_node_selection=True,
            devices=[Device("x", node_name="node-1")],
        ),
    )
    slices = [counters_slice("c", "p", "cs"), consuming("d", "p", "cs"), per_device]
    assert ids(gather_pools(slices, NODE, Features())) == ["d/p", "d/q"]
    (pool,) = gather_pools(slices, NODE, Features(partitionable_devices=False))
    # The counter slice is skipped for the node but still counts for completeness;
    # without the feature nothing about counters is kept.
    assert str(pool.id) == "d/p" and not pool.incomplete and not pool.counter_sets
    assert [s.metadata.name for s in pool.slices] == ["d"] and not pool.slices_not_targeting_node


def test_per_device_node_selection_any_device() -> None:
    def per_device(*nodes: str) -> ResourceSlice:
        return ResourceSlice(
            ObjectMeta(name="pd"),
            ResourceSliceSpec(
                driver="d",
                pool=ResourcePool("q", 1, 1),
                per_device_node_selection=True,
                devices=[Device(f"x{i}", node_name=n) for i, n in enumerate(nodes)],
            ),
        )

    assert ids(gather_pools([per_device("node-2", "node-1")], NODE, Features())) == ["d/q"]
    assert gather_pools([per_device("node-2", "node-3")], NODE, Features()) == []


def test_binding_condition_pools_last() -> None:
    bound = sl("s-a", "a", "x")
    bound.spec.devices[0].binding_conditions = ["attached"]
    slices = [bound, sl("s-b", "b", "x"), sl("s-c", "c", "x")]
    assert ids(gather_pools(slices, NODE, Features())) == ["d/b", "d/c", "d/a"]


def test_node_selection_errors_name_the_slice() -> None:
    bad = NodeSelector([NodeSelectorTerm([NodeSelectorRequirement("zone", "In", [])])])
    try:
        gather_pools([sl("bad-slice", "p", "x", node_selector=bad)], NODE, Features())
    except PoolGatheringError as err:
        assert str(err).startswith(
            "failed to perform node selection for slice bad-slice: "
            "failed to parse node selector &NodeSelector{"
        )
    else:
        raise AssertionError("expected PoolGatheringError")
