"""The common shape of a ResourceSlice device, decoded straight from the load's caches.

Nearly every device of a cluster dump is a name, attributes with one scalar value each
and capacities without a request policy, whose names, values and quantities already
occurred earlier in the same load. :func:`decode_common_devices` builds such a device
with a few dict lookups and no field paths. Whatever it is not sure about (another
shape, extra fields, a name, int, version or quantity seen for the first time, list
values, duplicate keys, too many entries) goes to the checked decoder of
:mod:`draspeed.api.slices`, which is the only one that reports errors and fills the
caches; so this path only has to be right for input it accepts, and it accepts only
what the checked decoder accepted before (or, for new strings, would accept). A
capacity map equal to the previous one (the usual case within a pool) is copied.

Measured on the 100,000 GPUs of bench/test_bench_decode.py (callgrind, instructions per
device): ~30k here against ~41k in the checked decoder, and ~41k when the devices are
first validated into msgspec Structs and the model is built from those (the conversion
plus a hash per attribute value to find its cached model object cost more than the dict
lookups they replace).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from draspeed.api import limits
from draspeed.api.context import DecodeContext
from draspeed.api.model import Device, DeviceAttribute, DeviceCapacity

# New string attributes (uuids, serial numbers: one per device) are made without the
# frozen dataclass __init__, whose object.__setattr__ calls cost twice as much: the
# slots are set as that __init__ sets them.
_new = object.__new__
_set_kind: Callable[[DeviceAttribute, str], None] = vars(DeviceAttribute)["kind"].__set__
_set_value: Callable[[DeviceAttribute, Any], None] = vars(DeviceAttribute)["value"].__set__

_MAX_FIELDS = limits.RESOURCE_SLICE_MAX_ATTRIBUTES_AND_CAPACITIES_PER_DEVICE


class _Unusual(Exception):
    """This device is not of the common shape, or not cached yet."""


def decode_common_devices(
    ctx: DecodeContext,
    devices_raw: list[Any],
    driver: str,
    nested: bool,
    bare_capacity: bool,
    checked: Callable[[int, Any], Device],
) -> list[Device]:
    """The devices of one slice; ``checked(i, raw)`` decodes device ``i`` with every
    check when it is not of the common shape.

    ``nested``: the fields are under ``basic`` (v1beta1, v1alpha3); ``bare_capacity``:
    capacities are bare quantities (v1alpha3).
    """
    caches = ctx.caches
    validate = ctx.validate
    key_names = caches.attribute_names[driver]
    attributes = caches.attributes
    strings = attributes["string"][1]
    ints = attributes["int"][1]
    bools = attributes["bool"][1]
    versions = attributes["version"][1]
    capacities = caches.capacities
    dns_labels = caches.dns_labels
    # Reusing the previous device's capacity map when the input map is equal needs
    # equality to imply sameness: true for parsed text, not for str subclasses.
    reuse_capacities = caches.exact_types
    last_key = (driver, bare_capacity)
    last = caches.last_capacities.get(last_key)
    base_keys = 0 if nested else 1  # "name" lives next to the fields in v1

    devices: list[Device] = []
    append = devices.append
    for d in devices_raw:
        try:
            if type(d) is not dict:
                raise _Unusual
            name = d["name"]
            if type(name) is not str or (validate and name not in dns_labels):
                raise _Unusual
            if nested:
                body = d["basic"]
                if type(body) is not dict or len(d) != 2:
                    raise _Unusual
            else:
                body = d
            a = body.get("attributes")
            c = body.get("capacity")
            if len(body) != base_keys + (a is not None) + (c is not None):
                raise _Unusual  # more fields: taints, counters, node selection ...

            attrs: dict[str, DeviceAttribute] = {}
            if a:
                if type(a) is not dict:
                    raise _Unusual
                for key, value in a.items():
                    (kind,) = value  # exactly one member (cheaper than unpacking items())
                    v = value[kind]
                    if kind == "string":
                        if type(v) is not str:
                            raise _Unusual
                        attr = strings.get(v)
                        if attr is None:
                            # Up to 16 characters, or 64 ASCII ones, are at most 64 bytes.
                            if validate and len(v) > 16 and (len(v) > 64 or not v.isascii()):
                                raise _Unusual
                            attr = _new(DeviceAttribute)
                            _set_kind(attr, "string")
                            _set_value(attr, v)
                            strings[v] = attr
                    elif kind == "int":
                        if type(v) is not int:
                            raise _Unusual
                        attr = ints[v]
                    elif kind == "bool":
                        if type(v) is not bool:
                            raise _Unusual
                        attr = bools[v]
                    elif kind == "version":
                        if type(v) is not str:
                            raise _Unusual
                        attr = versions[v]
                    else:
                        raise _Unusual
                    attrs[key_names[key]] = attr
                if len(attrs) != len(a):
                    raise _Unusual  # "model" and "<driver>/model": the checked path warns

            caps: dict[str, DeviceCapacity] = {}
            if c:
                if type(c) is not dict:
                    raise _Unusual
                if reuse_capacities and last is not None and c == last[0] and tuple(c) == last[1]:
                    caps = last[2].copy()
                else:
                    for key, value in c.items():
                        if not bare_capacity:
                            if len(value) != 1:
                                raise _Unusual
                            value = value["value"]
                        if type(value) is not str:
                            raise _Unusual
                        caps[key_names[key]] = capacities[value]
                    if len(caps) != len(c):
                        raise _Unusual
                    if reuse_capacities:
                        last = (c, tuple(c), caps)

            if validate and len(attrs) + len(caps) > _MAX_FIELDS:
                raise _Unusual
            device = Device(name, attrs, caps)
        except Exception:
            # Whatever it was, the checked decoder redoes the device from scratch and
            # decides (the caches only ever received valid values).
            device = checked(len(devices), d)
        append(device)
    if last is not None:
        caches.last_capacities[last_key] = last
    return devices
