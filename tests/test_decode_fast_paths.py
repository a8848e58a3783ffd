"""The compiled fast paths of bulk decoding (``draspeed.api._decode``) against the checked
Python code they stand in for.

- Devices: a slice decodes to the same model, the same error or the same warnings
  whether its devices go through ``decode_common_devices`` or all through the checked
  decoder, for devices of the common shape and for random departures from it.
- Model objects built slot by slot equal the dataclasses' own.
- Name predicates: True only where ``draspeed.api.names`` accepts.

The JSON text checks (``draspeed.api._jsontext``) are tested in test_json_text.py, the
typed bulk path (``SliceBuilder``) in test_bulk_json.py.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from draspeed.api import _decode, names, slices
from draspeed.api.context import Caches
from draspeed.api.decode import decode_object
from draspeed.api.model import (
    Device,
    DeviceAttribute,
    DeviceCapacity,
    DeviceTaint,
    ResourceSlice,
)
from draspeed.errors import InputError
from draspeed.quantity import Quantity

DRIVER = "gpu.example.com"
VERSIONS = ("v1", "v1beta2", "v1beta1", "v1alpha3")

# A small pool of values, so that random devices hit the caches the warm-up slice filled.
_STRINGS = ["NVIDIA H100", "pci0000:01", "GPU-0000-4f2a-9c1d-7e3b-000000000001", ""]
_VERSIONS = ["550.54.15", "1.2.3-rc.1"]
_QUANTITIES = ["80Gi", "132", "1.5", "0"]
_KEYS = ["index", "productName", "uuid", f"{DRIVER}/productName", "resource.kubernetes.io/x"]


def _device(name: str, attributes: dict[str, Any], capacity: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "attributes": attributes, "capacity": capacity}


def _common_device(i: int, node: int = 0) -> dict[str, Any]:
    """Device ``i`` of 4 on a node: only the uuid differs from node to node."""
    return _device(
        f"gpu-{i}",
        {
            "index": {"int": i},
            "productName": {"string": _STRINGS[0]},
            "uuid": {"string": f"GPU-{i:08x}-4f2a-9c1d-7e3b-{node:012x}"},
            "driverVersion": {"version": _VERSIONS[0]},
            "healthy": {"bool": i % 2 == 0},
        },
        {"memory": {"value": _QUANTITIES[0]}, "cores": {"value": _QUANTITIES[1]}},
    )


def _in_version(device: Any, version: str) -> Any:
    """A v1 device as ``version`` writes it (``basic``, bare quantities). Entries under
    ``"top"`` go next to ``name`` in every version."""
    if type(device) is not dict:
        return device
    device = dict(device)
    top = device.pop("top", {})
    if version in ("v1", "v1beta2"):
        return {**device, **top}
    body = {k: v for k, v in device.items() if k != "name"}
    if version == "v1alpha3" and type(body.get("capacity")) is dict:
        body["capacity"] = {
            k: v["value"] if type(v) is dict and set(v) == {"value"} else v
            for k, v in body["capacity"].items()
        }
    out = {"basic": body, **top}
    if "name" in device:
        out["name"] = device["name"]
    return out


def _slice(version: str, devices: list[Any], n: int = 0) -> dict[str, Any]:
    return {
        "apiVersion": f"resource.k8s.io/{version}",
        "kind": "ResourceSlice",
        "metadata": {"name": f"node-{n}-slice"},
        "spec": {
            "driver": DRIVER,
            "nodeName": f"node-{n}",
            "pool": {"name": f"node-{n}", "generation": 1, "resourceSliceCount": 1},
            "devices": [_in_version(d, version) for d in devices],
        },
    }


def _all_checked(
    ctx: Any,
    devices_raw: list[Any],
    driver: str,
    nested: bool,
    bare_capacity: bool,
    checked: Callable[[int, Any], Device],
) -> list[Device]:
    """The fast path switched off: every device through the checked decoder."""
    return [checked(i, d) for i, d in enumerate(devices_raw)]


def _outcome(version: str, devices: list[Any], validate: bool) -> tuple[Any, list[str]]:
    """The decoded devices (or the error) and the warnings, after a warm-up slice of
    the same version filled the caches."""
    caches = Caches()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        decode_object(_slice(version, _warm_up_devices()), caches=caches)
    sink: list[str] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            decoded = decode_object(
                _slice(version, devices, 1), validate=validate, caches=caches, sink=sink
            )
        except InputError as exc:
            return ("error", str(exc)), sink
    assert isinstance(decoded, ResourceSlice)
    return decoded.spec.devices, sink


def _compare(version: str, devices: list[Any], validate: bool = True) -> None:
    fast = _outcome(version, devices, validate)
    original = slices.decode_common_devices
    slices.decode_common_devices = _all_checked
    try:
        checked = _outcome(version, devices, validate)
    finally:
        slices.decode_common_devices = original
    assert fast == checked


@pytest.mark.parametrize("version", VERSIONS)
def test_common_devices_take_the_fast_path(version: str, monkeypatch: Any) -> None:
    """Once the caches know the names and values, the checked decoder is not called at
    all (new strings, here the uuids, the fast path adds itself)."""
    caches = Caches()
    decode_object(_slice(version, [_common_device(i) for i in range(4)]), caches=caches)
    calls: list[int] = []
    original = slices._decode_device

    def counting(ctx: Any, i: int, *args: Any) -> Device:
        calls.append(i)
        return original(ctx, i, *args)

    monkeypatch.setattr(slices, "_decode_device", counting)
    devices = [_common_device(i, node=1) for i in range(4)]
    decoded = decode_object(_slice(version, devices, 1), caches=caches)
    assert calls == []
    assert isinstance(decoded, ResourceSlice)
    got = decoded.spec.devices
    assert [d.name for d in got] == [f"gpu-{i}" for i in range(4)]
    assert got[1].attributes[f"{DRIVER}/uuid"] == DeviceAttribute(
        "string", "GPU-00000001-4f2a-9c1d-7e3b-000000000001"
    )
    assert got[0].capacity["memory"] == DeviceCapacity(Quantity.parse("80Gi"))
    _compare(version, devices)


# Random departures from the common shape. Most keep the keys and values the warm-up
# cached, so that the fast path, not a cache miss, has to notice what is wrong.
_scalars = st.one_of(
    st.sampled_from(_STRINGS + _VERSIONS + _QUANTITIES),
    st.sampled_from([0, 1, 2, -1, 2**63, -(2**63) - 1, True, False, None, 1.0, 0.5]),
    st.text(max_size=3),
    st.sampled_from(["x" * 65, "é" * 17, "ü" * 40, "GPU-" + "0" * 60]),
)
_values = st.one_of(_scalars, st.lists(_scalars, max_size=2), st.dictionaries(st.text(), _scalars))
_kinds = st.sampled_from(["int", "bool", "string", "version", "ints", "strings", "x", ""])
_attribute = st.one_of(
    st.builds(lambda k, v: {k: v}, _kinds, _scalars),
    st.builds(lambda k, v: {k: v}, _kinds, _values),
    st.dictionaries(_kinds, _values, max_size=3),
    _values,
)
_capacity = st.one_of(
    st.builds(lambda v: {"value": v}, _scalars),
    st.fixed_dictionaries({"value": st.sampled_from(_QUANTITIES)}, optional={"x": _values}),
    st.fixed_dictionaries(
        {"value": st.sampled_from(_QUANTITIES), "requestPolicy": st.just({"default": "1"})}
    ),
    _values,
)
_ATTRIBUTE_KEYS = ["index", "productName", "uuid", "driverVersion", "healthy"]
_CAPACITY_KEYS = ["memory", "cores"]
_EXTRA_KEYS = [f"a{j}" for j in range(40)]  # cached by the warm-up's last two devices
_key = st.one_of(
    st.sampled_from(_ATTRIBUTE_KEYS + _CAPACITY_KEYS + [f"{DRIVER}/index", "x.io/index"]),
    st.text(max_size=4),
    st.just("a" * 40),
)


def _warm_up_devices() -> list[dict[str, Any]]:
    devices = [_common_device(i) for i in range(4)]
    for half in (_EXTRA_KEYS[:20], _EXTRA_KEYS[20:]):
        device = _common_device(len(devices))
        device["attributes"].update({k: {"int": 1} for k in half})
        devices.append(device)
    return devices


@st.composite
def _departures(draw: st.DrawFn) -> dict[str, Any] | Any:
    device: Any = _common_device(draw(st.integers(0, 6)), node=draw(st.integers(0, 1)))
    edit = draw(st.integers(0, 10))
    if edit in (0, 1):
        device["attributes"][draw(st.sampled_from(_ATTRIBUTE_KEYS))] = draw(_attribute)
    elif edit == 2:
        device["attributes"][draw(_key)] = draw(_attribute)
    elif edit == 3:
        device["capacity"][draw(st.sampled_from(_CAPACITY_KEYS))] = draw(_capacity)
    elif edit == 4:
        device[draw(st.sampled_from(["name", "attributes", "capacity"]))] = draw(_values)
    elif edit == 5:
        device[draw(st.sampled_from(["taints", "allNodes", "basic", "x"]))] = draw(_values)
    elif edit == 6:
        device.pop(draw(st.sampled_from(["name", "attributes", "capacity"])))
    elif edit == 7:  # up to 32 attributes and capacities, or more
        count = draw(st.integers(23, 27))
        device["attributes"].update({k: {"int": 1} for k in _EXTRA_KEYS[:count]})
    elif edit == 8:  # the same attribute with and without its domain
        device["attributes"][f"{DRIVER}/index"] = device["attributes"]["index"]
    elif edit == 9:
        device["name"] = draw(st.sampled_from(["GPU-0", "-x", "a" * 64, "gpu-9", "", None]))
    else:
        device = draw(_values)
    return device


# One departure each, on a key and with values the warm-up cached: type confusions
# (bool and int hash alike), strings of 17 to 64 characters beyond 64 bytes, capacity
# fields beyond the value, fields the common shape does not have.
_ATTRIBUTE_EDITS = [
    {"bool": 1},
    {"bool": 0},
    {"bool": 1.0},
    {"int": True},
    {"int": False},
    {"int": 1.0},
    {"int": "1"},
    {"int": None},
    {"string": 1},
    {"string": None},
    {"version": 1},
    {"version": "1.2"},
    {"ints": [1]},
    {"int": 1, "bool": True},
    {},
    None,
    [1],
    "x",
    {"string": "ü" * 40},
    {"string": "é" * 17},
    {"string": "x" * 65},
    {"string": "x" * 64},
]
_CAPACITY_EDITS = [
    {"value": "80Gi", "requestPolicy": {"default": "1Gi"}},
    {"value": "80Gi", "x": 1},
    {"value": 80},
    {"value": None},
    {"value": "80Gi "},
    {"x": "80Gi"},
    {},
    "80Gi",
    None,
]
_DEVICE_EDITS: list[dict[str, Any]] = [
    {"top": {"x": 1}},
    {"top": {"taints": []}},
    {"taints": []},
    {"allNodes": True},
    {"attributes": None},
    {"capacity": None},
    {"attributes": []},
    {"attributes": {}},
    {"capacity": {}},
    {"attributes": "x"},
    {"name": None},
    {"name": 5},
    {"name": "GPU-0"},
    {"name": "gpu-7"},
]


def _edited_devices() -> list[tuple[str, Any]]:
    cases: list[tuple[str, Any]] = []
    for key in ("index", "healthy", "productName", "driverVersion"):
        for value in _ATTRIBUTE_EDITS:
            device = _common_device(1)
            device["attributes"][key] = value
            cases.append((f"attributes.{key}={value!r}"[:60], device))
    for value in _CAPACITY_EDITS:
        device = _common_device(1)
        device["capacity"]["memory"] = value
        cases.append((f"capacity.memory={value!r}", device))
    for edit in _DEVICE_EDITS:
        cases.append((repr(edit), {**_common_device(1), **edit}))
    for count in (25, 26):  # 25 + 5 attributes + 2 capacities = 32: the limit
        device = _common_device(1)
        device["attributes"].update({k: {"int": 1} for k in _EXTRA_KEYS[:count]})
        cases.append((f"{count} more attributes", device))
    device = _common_device(1)
    device["attributes"][f"{DRIVER}/index"] = {"int": 2}
    cases.append(("index twice", device))
    return cases


_EDITED = _edited_devices()


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("validate", [True, False])
def test_edited_devices_decode_as_without_the_fast_path(version: str, validate: bool) -> None:
    for name, device in _EDITED:
        try:
            _compare(version, [_common_device(0, node=1), device], validate)
        except AssertionError as exc:
            raise AssertionError(f"{name}: {exc}") from None


@settings(max_examples=400)
@given(
    version=st.sampled_from(VERSIONS),
    devices=st.lists(_departures(), min_size=1, max_size=3),
    validate=st.booleans(),
)
def test_random_devices_decode_as_without_the_fast_path(
    version: str, devices: list[Any], validate: bool
) -> None:
    _compare(version, devices, validate)


def test_devices_built_slot_by_slot_equal_the_dataclasses() -> None:
    attrs = {"a/b": DeviceAttribute("int", 1)}
    caps = {"a/c": DeviceCapacity(Quantity.parse("1"))}
    built = _decode.new_device("gpu-0", attrs, caps)
    assert type(built) is Device
    assert built == Device("gpu-0", attrs, caps)
    assert built.attributes is attrs and built.capacity is caps
    other = _decode.new_device("gpu-1", {}, {})
    # Fresh containers per device, as the default factories make them.
    assert built.taints is not other.taints
    assert built.consumes_counters is not other.consumes_counters
    built.taints.append(DeviceTaint("k"))
    assert other.taints == []

    attr = _decode.new_string_attribute("v")
    assert type(attr) is DeviceAttribute
    assert attr == DeviceAttribute("string", "v")
    assert hash(attr) == hash(DeviceAttribute("string", "v"))
    with pytest.raises(AttributeError):
        attr.value = "w"  # type: ignore[misc]


# ------------------------------------------------------------------------- names

_name_text = st.text(alphabet="az09-./Aé_", max_size=12)


@given(name=st.one_of(_name_text, st.builds(lambda a, b: a * b, _name_text, st.integers(1, 80))))
def test_name_predicates_accept_only_valid_names(name: str) -> None:
    assert _decode.dns_subdomain_ok(name) == (names.check_dns_subdomain(name) is None)
    assert _decode.pool_name_ok(name) == (names.check_pool_name(name) is None)
    assert _decode.dns_label_ok(name) == (names.check_dns_label(name) is None)


@pytest.mark.parametrize(
    ("name", "subdomain", "pool"),
    [
        ("node-00001", True, True),
        ("gpu-0", True, True),
        ("a.b-c.d", True, True),
        ("a/b.c", False, True),
        ("a" * 253, True, True),
        ("a" * 254, False, False),
        ("a..b", False, False),
        ("a.-b", False, False),
        ("a-/b", False, False),
        ("a//b", False, False),
        ("Node", False, False),
        ("", False, False),
        ("é", False, False),
    ],
)
def test_name_predicates(name: str, subdomain: bool, pool: bool) -> None:
    assert _decode.dns_subdomain_ok(name) is subdomain
    assert _decode.pool_name_ok(name) is pool
    assert (names.check_dns_subdomain(name) is None) is subdomain
    assert (names.check_pool_name(name) is None) is pool


def test_name_predicates_refuse_non_strings() -> None:
    assert not _decode.dns_subdomain_ok(None)
    assert not _decode.pool_name_ok(b"abc")
    assert not _decode.dns_label_ok(7)


@pytest.mark.parametrize(
    ("name", "label"),
    [
        ("gpu-0", True),
        ("a" * 63, True),
        ("a" * 64, False),
        ("a.b", False),
        ("-a", False),
        ("a-", False),
        ("a--b", True),
        ("", False),
        ("A", False),
    ],
)
def test_dns_label_predicate(name: str, label: bool) -> None:
    assert _decode.dns_label_ok(name) is label
    assert (names.check_dns_label(name) is None) is label


@pytest.mark.parametrize("form", ["objects", "json"])
@pytest.mark.parametrize("validate", [True, False])
def test_equal_device_names_of_a_load_are_one_str_object(form: str, validate: bool) -> None:
    """Every node's devices are named alike (gpu-0 ...): each name is one str object
    per load, whichever decoder a device took (the compiled fast paths, and the
    checked one for a device with taints)."""
    import json

    from draspeed.api.loader import load

    def device(name: str, tainted: bool) -> dict[str, Any]:
        body: dict[str, Any] = {
            "name": name,
            "attributes": {"model": {"string": "A100"}},
            "capacity": {"memory": {"value": "80Gi"}},
        }
        if tainted:
            body["taints"] = [{"key": "k", "effect": "NoSchedule"}]
        return body

    # ("".join: a name made anew per node, as a decoder reads it.)
    items = [
        _slice("v1", [device("".join(["gpu-", str(k)]), n % 3 == 2) for k in range(4)], n)
        for n in range(12)
    ]
    source: Any = items
    if form == "json":
        source = json.dumps({"apiVersion": "v1", "kind": "List", "items": items}).encode()
    loaded = load(source, validate=validate)
    devices = [d for s in loaded.slices for d in s.spec.devices]
    assert len(devices) == 48 and sum(bool(d.taints) for d in devices) == 16
    assert {d.name for d in devices} == {"gpu-0", "gpu-1", "gpu-2", "gpu-3"}
    assert len({id(d.name) for d in devices}) == 4
