"""The compiled read of the slices (draspeed.engine._read.read_slices) lists every
device first, then reads them: a device list that changes while the slices are read
(a model subclass whose field runs code) is an error, never a crash or a device read
twice or not at all."""

from __future__ import annotations

from typing import Any

import pytest

from draspeed.api.model import Device, ObjectMeta, ResourcePool, ResourceSlice, ResourceSliceSpec
from draspeed.engine import _read


def _slice(name: str, devices: list[Any]) -> ResourceSlice:
    return ResourceSlice(
        metadata=ObjectMeta(name=name),
        spec=ResourceSliceSpec(
            driver="gpu.example.com",
            pool=ResourcePool(name="pool", generation=1, resource_slice_count=2),
            node_name="node-1",
            devices=devices,
        ),
    )


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
