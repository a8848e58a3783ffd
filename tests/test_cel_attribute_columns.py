"""The device table's one pass over attributes gives what a lookup per device gives.

:class:`DeviceTable` reads every device's attributes once (``attribute_pass``): each
attribute name's column and the conversion errors together. These tests check it
against the rules written out per device: a fully qualified name first, then the bare
identifier when the domain is the device's driver; the first attribute in a device's
order that does not convert is its error. Devices are built directly (as a program
would, unchecked), so bare names, both spellings at once, shared and broken
attributes occur.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from draspeed.api.model import Device, DeviceAttribute, DeviceCapacity
from draspeed.cel.device import attribute_display_name, device_input
from draspeed.cel.table import (
    _RISKY_KINDS,
    DeviceTable,
    _attribute_key,
    _cel_attribute,
    _conversion_detail,
)
from draspeed.quantity import Quantity

_DRIVERS = ("a.example.com", "b.example.com")
_NAMES = (
    "a.example.com/x",
    "b.example.com/x",
    "x",
    "y",
    "a.example.com/y",
    "c.example.com/z",
    "a.example.com/p/q",
)
_SHARED = [
    DeviceAttribute("string", "s"),
    DeviceAttribute("int", 7),
    DeviceAttribute("version", "1.2.3"),
    DeviceAttribute("version", "not-a-version"),
    DeviceAttribute(None, None),
]
_attribute = st.one_of(
    st.sampled_from(_SHARED),
    st.builds(DeviceAttribute, st.just("int"), st.integers(-3, 3)),
    st.builds(DeviceAttribute, st.just("string"), st.sampled_from(["s", "t"])),
    st.builds(DeviceAttribute, st.just("version"), st.sampled_from(["1.0.0", "1.0", "2.0.0-rc.1"])),
    st.builds(DeviceAttribute, st.just("bool"), st.booleans()),
)
_device = st.tuples(
    st.sampled_from(_DRIVERS), st.dictionaries(st.sampled_from(_NAMES), _attribute, max_size=5)
)
_COLUMNS = [
    ("a.example.com", "x"),
    ("b.example.com", "x"),
    ("a.example.com", "y"),
    ("b.example.com", "y"),
    ("c.example.com", "z"),
    ("a.example.com", "p/q"),
    ("a.example.com/p", "q"),
    ("d.example.com", "x"),
]


def _expected(driver: str, attrs: dict[str, DeviceAttribute], domain: str, ident: str) -> Any:
    # A name is cut at its first '/' (upstream's parseQualifiedName): no domain holds
    # one, and a bare name with one is in another domain.
    if "/" in domain:
        return None
    found = attrs.get(f"{domain}/{ident}")
    if found is None and driver == domain and "/" not in ident:
        found = attrs.get(ident)
    if found is None or _attribute_key(found) is None:
        return None
    value = _cel_attribute(found)
    return None if value is None else (type(value).__name__, str(value))


def _expected_error(driver: str, attrs: dict[str, DeviceAttribute]) -> str | None:
    for name, attr in attrs.items():
        if attr.kind not in _RISKY_KINDS:
            continue
        detail = _conversion_detail(attr)
        if detail is not None:
            return f"attribute {attribute_display_name(name, driver)}: {detail}"
    return None


def _assert_read_as_per_device(
    devices: list[tuple[str, dict[str, DeviceAttribute]]],
    expected_names: list[tuple[str, str]] | None = None,
    errors_first: bool = False,
) -> None:
    """The table's columns and conversion errors are what a lookup per device gives
    (with ``expected_names``, the names the first pass files; ``errors_first``: the
    conversion errors asked before any column)."""
    table = DeviceTable.build(
        [
            (driver, Device(name=f"d{i}", attributes=attrs))
            for i, (driver, attrs) in enumerate(devices)
        ]
    )
    if expected_names is not None:
        table.expect_attributes(expected_names)
    if errors_first:
        table.conversion_messages  # noqa: B018  (the first pass, before any column)
    for domain, ident in _COLUMNS:
        present = table.column(("attr_present", domain, ident))
        assert [i > 0 and present.values[i - 1] for i in present.ids1.tolist()] == [
            "/" not in domain
            and (
                f"{domain}/{ident}" in attrs
                or (driver == domain and "/" not in ident and ident in attrs)
            )
            for driver, attrs in devices
        ]
        column = table.column(("attr", domain, ident))
        got = [
            None if i == 0 else (type(column.values[i - 1]).__name__, str(column.values[i - 1]))
            for i in column.ids1.tolist()
        ]
        assert got == [_expected(d, attrs, domain, ident) for d, attrs in devices]
        assert column.has_absent == (None in got)
    expected = {
        row: message
        for row, (driver, attrs) in enumerate(devices)
        if (message := _expected_error(driver, attrs)) is not None
    }
    assert table.conversion_messages == expected
    assert table.conversion_error.tolist() == [row in expected for row in range(len(devices))]


@settings(max_examples=300, deadline=None)
@given(devices=st.lists(_device, max_size=12))
def test_columns_and_conversion_errors_as_looked_up_per_device(
    devices: list[tuple[str, dict[str, DeviceAttribute]]],
) -> None:
    _assert_read_as_per_device(devices)


@settings(max_examples=300, deadline=None)
@given(
    devices=st.lists(_device, max_size=12),
    expected_names=st.lists(st.sampled_from(_COLUMNS), max_size=3),
    errors_first=st.booleans(),
)
def test_a_first_pass_filing_the_expected_names_alone_reads_alike(
    devices: list[tuple[str, dict[str, DeviceAttribute]]],
    expected_names: list[tuple[str, str]],
    errors_first: bool,
) -> None:
    """The first pass files only the names a selector about to be evaluated reads;
    a column of another name (asked after it) makes a pass that files them all."""
    _assert_read_as_per_device(devices, expected_names, errors_first)


@settings(max_examples=200, deadline=None)
@given(
    templates=st.lists(_device, min_size=1, max_size=3),
    picks=st.lists(st.integers(0, 2), max_size=24),
)
def test_devices_repeating_the_entries_before_them_are_read_alike(
    templates: list[tuple[str, dict[str, DeviceAttribute]]], picks: list[int]
) -> None:
    """A driver lists the same names with the same objects on device after device; the
    pass decides an entry repeated from the device before without a lookup. Each device
    here copies one of a few templates (a dict of its own, the same objects in the same
    order), so entries repeat, change, and come back, with conversion errors among them."""
    devices = [
        (driver, dict(attrs)) for driver, attrs in (templates[k % len(templates)] for k in picks)
    ]
    _assert_read_as_per_device(devices)


def _copy(text: str) -> str:
    """An equal string at another address (names a program builds one by one)."""
    return "".join(list(text))


_CAPACITY_NAMES = ("memory", "a.example.com/memory", "b.example.com/cores", "cores")
_named_device = st.tuples(
    st.sampled_from(_DRIVERS),
    st.dictionaries(st.sampled_from(_NAMES), _attribute, max_size=5),
    st.lists(st.sampled_from(_CAPACITY_NAMES), unique=True, max_size=3),
    st.booleans(),
)
_KEY_READS = [
    ("attr_domains",),
    ("cap_domains",),
    *[("attr_keys", d) for d in ("a.example.com", "b.example.com", "c.example.com", "z.io")],
    *[("cap_keys", d) for d in ("a.example.com", "b.example.com", "z.io")],
]


@settings(max_examples=300, deadline=None)
@given(devices=st.lists(_named_device, max_size=12))
def test_name_columns_as_the_device_maps_show_them(
    devices: list[tuple[str, dict[str, DeviceAttribute], list[str], bool]],
) -> None:
    """The names a selector sees of ``device.attributes`` / ``device.capacity`` (and
    of one domain of them), in the maps' order: one compiled pass numbers each device's
    set of names, by address or by value, and the names shown are worked out per set."""
    pairs = []
    for i, (driver, attrs, caps, copied) in enumerate(devices):
        if copied:
            attrs = {_copy(k): v for k, v in attrs.items()}
            caps = [_copy(c) for c in caps]
        capacity = {c: DeviceCapacity(Quantity.parse("1")) for c in caps}
        pairs.append((driver, Device(name=f"d{i}", attributes=attrs, capacity=capacity)))
    table = DeviceTable.build(pairs)
    errors = table.conversion_error.tolist()
    for read in _KEY_READS:
        column = table.column(read)
        for row, (driver, device) in enumerate(pairs):
            if errors[row] and read[0].startswith("attr"):
                continue  # every selector fails there
            maps = device_input(driver, device).value
            shown = maps["attributes" if read[0].startswith("attr") else "capacity"]
            if len(read) > 1:
                shown = shown.get(read[1], {})
            assert column.values[column.ids1[row] - 1] == tuple(shown), (read, row)


# ---- object_codes: the column codes of the objects a column lists -------------------

_SCALARS = st.one_of(
    st.integers(-3, 3), st.booleans(), st.sampled_from(["", "a", "1", "True", "1.2.3", "v1"])
)
_ATTRIBUTES = st.one_of(
    st.none(),
    # the plain kinds with values of any scalar type (an int kind holding True, ...)
    st.builds(DeviceAttribute, st.sampled_from(["int", "bool", "string"]), _SCALARS),
    st.builds(DeviceAttribute, st.just("version"), st.sampled_from(["1.2.3", "v1", "1.2"])),
    st.builds(
        DeviceAttribute, st.sampled_from(["ints", "strings"]), st.lists(_SCALARS, max_size=2)
    ),
    st.builds(DeviceAttribute, st.just(None), _SCALARS),
)


def _codes_one_by_one(items: list[Any]) -> tuple[list[int], list[Any], bool]:
    """The rule written out: a key per object, the first object of a key gives its value."""
    codes: list[int] = []
    values: list[Any] = []
    by_key: dict[Any, int] = {}
    absent = False
    for item in items:
        key = None if item is None else _attribute_key(item)
        code = 0 if key is None else by_key.get(key)
        if code is None:
            value = _cel_attribute(item)
            code = 0 if value is None else len(values) + 1
            if value is not None:
                values.append(value)
            by_key[key] = code
        absent = absent or code == 0
        codes.append(code)
    return codes, values, absent


@settings(max_examples=300)
@given(objects=st.lists(_ATTRIBUTES, max_size=12), data=st.data())
def test_object_codes_as_decided_one_by_one(objects: list[Any], data: st.DataObject) -> None:
    """Kinds with values of another type (an int kind holding True, a string kind
    holding 1), lists, absent objects, one object listed many times and equal values
    in distinct objects alike."""
    from draspeed.cel import _columns

    items = data.draw(st.lists(st.sampled_from(objects), max_size=20)) if objects else []
    codes, values, absent = _columns.object_codes(items, _attribute_key, _cel_attribute)
    want_codes, want_values, want_absent = _codes_one_by_one(items)
    assert codes.tolist() == want_codes
    assert [(type(v), v) for v in values] == [(type(v), v) for v in want_values]
    assert absent == want_absent


@settings(max_examples=200)
@given(
    codes=st.lists(st.integers(0, 40), max_size=60),
    data=st.data(),
)
def test_present_codes_as_numpy_counts_them(codes: list[int], data: st.DataObject) -> None:
    """The distinct codes of the wanted rows, ascending, and the largest code of all
    rows + 1, as ``np.unique`` and ``max`` give them."""
    from draspeed.cel import _columns

    wanted = data.draw(st.lists(st.booleans(), min_size=len(codes), max_size=len(codes)))
    array = np.asarray(codes, dtype=np.int32)
    mask = np.asarray(wanted, dtype=bool)
    present, size = _columns.present_codes(array, mask.view(np.uint8))
    assert present.tolist() == np.unique(array[mask]).tolist()
    assert size == (max(codes) + 1 if codes else 1)


class _ReadOnlyMap(dict[str, DeviceAttribute]):
    """A map of another type than dict (read through a copy by the compiled pass)."""


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_key_sets_group_devices_by_driver_and_names_in_order(data: st.DataObject) -> None:
    """Each device's set of names is its driver and its map's names in order, however
    the name objects were made and whether the device before listed the same ones
    (the pass tells such a device by address, without numbering its names again)."""
    from draspeed.cel import _columns

    pool = ["x", "y", "a.example.com/z"]
    names = st.lists(st.sampled_from(pool), unique=True, max_size=3)
    devices: list[Device] = []
    drivers: list[str] = []
    previous: list[str] = []
    for i in range(data.draw(st.integers(0, 12))):
        again = bool(previous) and data.draw(st.booleans())
        # (The same names again, maybe as fresh objects of them.)
        chosen: list[str] = list(previous) if again else data.draw(names)
        fresh = data.draw(st.booleans())
        keys = ["".join(list(k)) if fresh else k for k in chosen]
        attrs: dict[str, DeviceAttribute] = {k: DeviceAttribute("int", 1) for k in keys}
        if data.draw(st.integers(0, 5)) == 0:
            attrs = _ReadOnlyMap(attrs)
        devices.append(Device(name=f"d{i}", attributes=attrs))
        drivers.append(data.draw(st.sampled_from(_DRIVERS)))
        previous = chosen
    for capacity in (False, True):
        ids, sets = _columns.key_sets(devices, drivers, capacity)
        maps = [d.capacity if capacity else d.attributes for d in devices]
        expected = [(drv, tuple(m)) for drv, m in zip(drivers, maps, strict=True)]
        assert [sets[i] for i in ids.tolist()] == expected
        # One set per distinct (driver, names), numbered in order of first appearance.
        assert len(sets) == len(set(expected))


def test_the_first_pass_files_what_is_expected_and_a_later_name_files_all() -> None:
    """Not vacuous: the first pass files the expected names alone, and a column of a
    name it did not file makes the pass that files every name."""
    table = DeviceTable.build(
        [
            (
                "a.example.com",
                Device(
                    name="d",
                    attributes={
                        "a.example.com/x": DeviceAttribute("int", 1),
                        "y": DeviceAttribute("string", "s"),
                    },
                ),
            )
        ]
    )
    table.expect_attributes([("a.example.com", "x")])
    assert table.conversion_messages == {}
    first = table._attribute_pass
    assert first is not None and first.filed == {("a.example.com", "x")}
    assert table.column(("attr", "a.example.com", "x")).values == [1]
    assert table._attribute_pass is first  # filed already: no second pass
    assert table.column(("attr", "a.example.com", "y")).values == ["s"]
    second = table._attribute_pass
    assert second is not first and second is not None and second.filed is None
