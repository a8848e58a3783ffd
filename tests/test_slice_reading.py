"""The compiled read of the slices (draspeed.engine._read.read_slices) lists every
device first, then reads them: a device list that changes while the slices are read
(a model subclass whose field runs code) is an error, never a crash or a device read
twice or not at all. Each device's counter consumption gets the id of its pattern:
devices consume alike exactly when their entries are equal, in order."""

from __future__ import annotations

from typing import Any

import pytest

from draspeed.api.loader import load
from draspeed.api.model import Counter, Device, DeviceCounterConsumption, ResourceSlice
from draspeed.engine import _read
from draspeed.quantity import Quantity
from draspeed.testing.documents import resource_slice


def _slice(name: str, devices: list[Any]) -> ResourceSlice:
    """A decoded slice of pool "pool" on node-1, given these model devices (built as a
    program builds them: subclasses and shared entries included)."""
    document = resource_slice(name, [], pool="pool", count=2, nodeName="node-1")
    [rs] = load([document]).slices
    rs.spec.devices = devices
    return rs


class _Growing(Device):
    """A device whose name, once read, adds a device to another list."""

    __slots__ = ("grows",)
    grows: list[Any]

    def __getattribute__(self, field: str) -> Any:
        if field == "name":
            object.__getattribute__(self, "grows").append(Device(name="late"))
        return object.__getattribute__(self, field)


def test_devices_listed_across_slices_in_order() -> None:
    slices = [_slice(f"s{k}", [Device(name=f"d{k}-{j}") for j in range(k % 4)]) for k in range(40)]
    read = _read.read_slices(slices, _read.Interning(), 0)
    want = [dev for rs in slices for dev in rs.spec.devices]
    assert [id(d) for d in read["devices"]] == [id(d) for d in want]
    assert read["s_ndev"].tolist() == [k % 4 for k in range(40)]
    assert read["s_first"].tolist() == [sum(k % 4 for k in range(s)) for s in range(40)]


def test_a_device_list_that_grows_while_read_is_an_error() -> None:
    later: list[Any] = [Device(name="b")]
    grower = _Growing(name="a")
    grower.grows = later
    slices = [_slice("s0", [grower]), _slice("s1", later)]
    with pytest.raises(ValueError, match="the slices changed while they were read"):
        _read.read_slices(slices, _read.Interning(), 0)


def _use(counter_set: str, **amounts: str) -> DeviceCounterConsumption:
    return DeviceCounterConsumption(
        counter_set, {name: Counter(Quantity(v)) for name, v in amounts.items()}
    )


class _Uses(DeviceCounterConsumption):
    """A consumption entry read by attribute, not by slot (a subclass)."""

    __slots__ = ()


def test_consumption_patterns_are_the_entries_in_order() -> None:
    shared = _use("gpu-0", memory="10Gi", sm="16")
    uses: list[list[Any]] = [
        [shared],
        [shared],  # the same object
        [_use("gpu-0", memory="10Gi", sm="16")],  # equal, another object
        [_use("gpu-0", sm="16", memory="10Gi")],  # the same counters in another order
        [_use("gpu-0", memory="10240Mi", sm="16")],  # an equal amount, written otherwise
        [_use("gpu-1", memory="10Gi", sm="16")],
        [_use("gpu-0")],  # a set named with no counters
        [_use("gpu-0", memory="10Gi", sm="16"), _use("gpu-1")],
        [_use("gpu-1"), _use("gpu-0", memory="10Gi", sm="16")],
        [_Uses("gpu-0", {"memory": Counter(Quantity("10Gi")), "sm": Counter(Quantity("16"))})],
        [_use("gpu-0", **{f"c{k}": str(k) for k in range(40)})],  # past a small buffer
        [_use("gpu-0", **{f"c{k}": str(k) for k in range(40)})],
    ]
    devices = [Device(name=f"d{i}", consumes_counters=u) for i, u in enumerate(uses)]
    names = _read.Interning()
    read = _read.read_slices([_slice("s", devices)], names, 0)
    ptr, sets, counters, quantities = names.pattern_arrays()
    strings, values = names.string_list, names.quantities

    def entries(pattern: int) -> list[tuple[Any, ...]]:
        out = []
        for e in range(ptr[pattern], ptr[pattern + 1]):
            counter = None if counters[e] < 0 else strings[counters[e]]
            amount = None if quantities[e] < 0 else values[quantities[e]]
            out.append((strings[sets[e]], counter, amount))
        return out

    def want(device_uses: list[Any]) -> list[tuple[Any, ...]]:
        out: list[tuple[Any, ...]] = []
        for use in device_uses:
            out.append((use.counter_set, None, None))
            out += [(use.counter_set, k, c.value) for k, c in use.counters.items()]
        return out

    ids = read["d_pattern"].tolist()
    for device_uses, pattern in zip(uses, ids, strict=True):
        assert entries(pattern) == want(device_uses)
    # Equal entries in the same order, and only they, share an id.
    assert ids[0] == ids[1] == ids[2] == ids[4] == ids[9]
    assert ids[10] == ids[11]
    assert len({ids[0], ids[3], ids[5], ids[6], ids[7], ids[8], ids[10]}) == 7


def test_find_all_gives_each_name_its_id_or_minus_one() -> None:
    names = _read.Interning()
    ids = [names.string(text) for text in ("node-1", "node-2", "node-3")]
    got = names.find_all(iter(["node-3", "nowhere", "node-1", "node-3"]), 4)
    assert got.dtype.name == "int32"
    assert got.tolist() == [ids[2], -1, ids[0], ids[2]]
    assert names.find_all([], 0).tolist() == []
    with pytest.raises(ValueError, match="more strings"):
        names.find_all(["node-1", "node-2"], 1)
    with pytest.raises(ValueError, match="fewer strings"):
        names.find_all(["node-1"], 2)
    with pytest.raises(TypeError, match="expected str, got int"):
        names.find_all([7], 1)  # type: ignore[list-item]


class _NamedLater(ResourceSlice):
    """A slice subclass: its name read as Python reads it, not from the slot."""

    __slots__ = ()


def test_object_names_read_every_kind_of_item_as_python_does() -> None:
    """Slices and Nodes by their slots (a list long enough for every look ahead),
    subclasses and other objects with a metadata.name as Python reads them; an object
    without one is the AttributeError Python raises."""
    from draspeed.api.model import Node, ObjectMeta

    slices = [_slice(f"s-{i}", []) for i in range(12)]
    nodes = [Node(metadata=ObjectMeta(f"n-{i}")) for i in range(12)]
    sub = _NamedLater(metadata=ObjectMeta("sub"), spec=slices[0].spec)

    class Other:
        metadata = ObjectMeta("other")

    items: list[Any] = [*slices[:5], Other(), sub, *nodes, *slices[5:]]
    assert _read.object_names(items) == [item.metadata.name for item in items]
    assert _read.object_names([]) == []
    with pytest.raises(AttributeError):
        _read.object_names([object()])
