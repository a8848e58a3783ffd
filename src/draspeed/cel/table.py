"""A columnar view of many devices for the vector selector path.

Everything a selector can read becomes a *value-id column*: an ``int32`` array holding,
per device, 1 + the index of the device's value in the column's list of distinct CEL
values, or 0 when the device has no such value. Ids follow the values' natural order
(numbers, strings, versions and quantities sorted), so a monotone predicate such as
``compareTo(quantity("40Gi")) >= 0`` selects one contiguous id range.

Columns are built lazily, the first time a selector reads them, and cached. Building
one costs a single pass over the devices with dictionary interning (objects shared
between devices, as decoders and the quantity parser produce, are recognised by
identity first). Devices with an attribute upstream cannot convert (no value, bad
version) are marked in :attr:`DeviceTable.conversion_error`: every selector fails on them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass
from functools import cmp_to_key
from typing import Any

import numpy as np

import draspeed.cel._columns as _columns
from draspeed.api._model_tree import untrack_list
from draspeed.api.model import Device, DeviceAttribute
from draspeed.cel.device import (
    DeviceInput,
    attribute_display_name,
    attribute_value,
    device_input,
    split_qualified_name,
)
from draspeed.quantity import Quantity
from draspeed.semantic_version import SemVer


@dataclass(frozen=True, slots=True)
class Column:
    """Per-device value ids (``ids1``: 0 = absent, i + 1 = ``values[i]``)."""

    ids1: np.ndarray
    values: list[Any]
    has_absent: bool

    @property
    def cardinality(self) -> int:
        return len(self.values)

    def present(self) -> np.ndarray:
        """The ids that occur, ascending."""
        return np.arange(0 if self.has_absent else 1, len(self.values) + 1, dtype=np.int64)


_KIND_ORDER = {
    bool: 0,
    int: 1,
    float: 2,
    str: 3,
    SemVer: 4,
    Quantity: 5,
    list: 6,
    tuple: 6,
    dict: 7,
}


def _sort_cmp(a: Any, b: Any) -> int:
    ka = _KIND_ORDER.get(type(a), 9)
    kb = _KIND_ORDER.get(type(b), 9)
    if ka != kb:
        return -1 if ka < kb else 1
    if ka <= 3:
        return (a > b) - (a < b)
    if ka == 4:
        return int(a.compare(b))
    if ka == 5:
        return int(a.cmp(b))
    return 0


# Kinds whose Python order is CEL's (bool, int, string): sorted by the values
# themselves, which is far faster than by comparison function for the many distinct
# values of a column of UUIDs or serial numbers.
_NATIVE_ORDER = frozenset({0, 1, 3})


def _natural_order(values: list[Any]) -> list[int]:
    """The indices of ``values`` in their natural order (:func:`_sort_cmp`; stable)."""
    groups: dict[int, list[int]] = {}
    types = set(map(type, values))
    if len(types) == 1:  # one kind (a column of UUIDs): no grouping pass
        groups[_KIND_ORDER.get(types.pop(), 9)] = list(range(len(values)))
    else:
        for i, value in enumerate(values):
            groups.setdefault(_KIND_ORDER.get(type(value), 9), []).append(i)
    order: list[int] = []
    for kind in sorted(groups):
        members = groups[kind]
        if kind in _NATIVE_ORDER:
            members.sort(key=values.__getitem__)
        elif kind < 6:  # floats, versions, quantities: their own comparison

            def by_value(i: int, j: int) -> int:
                return _sort_cmp(values[i], values[j])

            members.sort(key=cmp_to_key(by_value))
        order.extend(members)  # lists and maps compare equal: first-seen order
    return order


def _intern(
    rows: list[Any],
    key_of: Callable[[Any], Hashable | None],
    value_of: Callable[[Any], Any],
) -> Column:
    """Build a column: ``key_of(item)`` identifies the value (None = absent) and
    ``value_of(item)`` gives the CEL value of a new key (None = absent, e.g. unconvertible).
    The pass over the devices is compiled (draspeed.cel._columns); here the distinct
    values are put in their natural order."""
    local, values, absent = _columns.intern_rows(rows, key_of, value_of)
    return _sorted_column(local, values, absent)


def _sorted_column(local: np.ndarray, values: list[Any], absent: bool) -> Column:
    """The column of ``local`` codes (0 absent, i + 1 ``values[i]``), its values put
    in their natural order."""

    order = _natural_order(values)
    # (No Python step per value: a column of UUIDs has one per device.)
    remap = np.zeros(len(values) + 1, dtype=np.int32)
    remap[np.asarray(order, dtype=np.int64) + 1] = np.arange(1, len(order) + 1, dtype=np.int32)
    return Column(remap.take(local), list(map(values.__getitem__, order)), absent)


def _flag_column(flags: np.ndarray) -> Column:
    """The column of a yes/no per device (what :func:`_intern` makes of their list,
    without a Python object per device): ids 1 and 2 for the values that occur, False
    before True."""
    values = [v for v in (False, True) if (flags == v).any()]
    ids1 = np.zeros(len(flags), dtype=np.int32)
    for code, value in enumerate(values, start=1):
        ids1[flags == value] = code
    return Column(ids1, values, False)


def _attribute_key(attr: DeviceAttribute) -> Hashable | None:
    if attr.kind is None:
        return None
    value = attr.value
    if isinstance(value, list):
        value = tuple(value)
    return (attr.kind, value)


def _cel_attribute(attr: DeviceAttribute) -> Any:
    try:
        return attribute_value(attr.kind, attr.value)
    except ValueError:
        return None  # the device is a conversion error anyway


def _quantity_key(q: Quantity) -> tuple[Any, ...]:
    # Equal values can differ in what isInteger()/asApproximateFloat() report.
    return (q, q.format, q.is_dec_form, q.is_integer(), q.as_approximate_float())


def _map_key(value: Any) -> Hashable:
    if isinstance(value, dict):
        return ("map", frozenset((_map_key(k), _map_key(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return ("list", tuple(_map_key(v) for v in value))
    if isinstance(value, SemVer):
        return ("SemVer", str(value))
    if isinstance(value, Quantity):
        return ("Quantity", *_quantity_key(value))
    return (type(value).__name__, value)


# Reads of a device's names alone (``draspeed.cel.vector``): the identifiers of one
# attribute or capacity domain ("attr_keys"/"cap_keys", domain), or the domains
# ("attr_domains"/"cap_domains").
_KEY_READS = frozenset({"attr_keys", "cap_keys", "attr_domains", "cap_domains"})


def _names_shown(
    driver: str, names: tuple[str, ...], capacity: bool, domain: str | None
) -> tuple[str, ...]:
    """The keys of ``device.attributes`` (or ``device.capacity``) -- with ``domain``,
    of that domain's map -- for a device of ``driver`` with these names, in the order
    :func:`draspeed.cel.device.device_input` builds the maps: a bare name is in the
    driver's domain, and a capacity's bare name goes before the qualified ones."""
    if capacity:
        names = tuple(sorted(names, key=lambda name: "/" in name))
    shown: dict[str, None] = {}
    for name in names:
        where, ident = split_qualified_name(name, driver)
        if domain is None:
            shown[where] = None
        elif where == domain:
            shown[ident] = None
    return tuple(shown)


# Attribute kinds whose conversion can fail (no value, unparsable version).
_RISKY_KINDS = frozenset({None, "version", "versions"})


def _conversion_detail(attr: DeviceAttribute) -> str | None:
    """Why an attribute does not convert to a CEL value, or None when it does."""
    if attr.kind is None:
        return "unsupported attribute value"
    try:
        attribute_value(attr.kind, attr.value)
    except ValueError as exc:
        return str(exc)
    return None


def _same(value: Any) -> Any:
    return value


@dataclass(frozen=True, slots=True)
class _Attributes:
    """What one pass over every device's attributes found (see ``attribute_pass``)."""

    conversion: tuple[np.ndarray, dict[int, str]]  # error rows, and their messages
    columns: _columns.AttributeObjects  # (domain, ident) -> each row's attribute object
    filed: frozenset[tuple[str, str]] | None  # the names in ``columns`` (None: all)

    def has(self, name: tuple[str, str]) -> bool:
        """Whether ``columns`` answers for ``name``."""
        return self.filed is None or name in self.filed


class DeviceTable:
    """Columns over ``(driver, device)`` pairs; build once, evaluate many selectors."""

    def __init__(
        self,
        devices: Sequence[tuple[str, Device]],
        *,
        list_type_attributes: bool = True,
        consumable_capacity: bool = True,
    ) -> None:
        self._init(
            [d for d, _ in devices],
            [dev for _, dev in devices],
            list_type_attributes,
            consumable_capacity,
        )

    def _init(
        self,
        drivers: list[str],
        devices: list[Device],
        list_type_attributes: bool,
        consumable_capacity: bool,
    ) -> None:
        self._drivers = drivers
        self._devices = devices
        self.n = len(devices)
        self.list_type_attributes = list_type_attributes
        self.consumable_capacity = consumable_capacity
        self._lock = threading.RLock()
        self._columns: dict[tuple[str, ...], Column] = {}
        # (One per device, long-lived, made on the first device evaluated one by one:
        # most tables never are.)
        self._inputs: list[DeviceInput | None] | None = None
        self._cache: dict[Hashable, Any] = {}
        self._attribute_pass: _Attributes | None = None
        self._expected: set[tuple[str, str]] = set()  # (see expect_attributes)

    @classmethod
    def build(
        cls,
        devices: Sequence[tuple[str, Device]],
        *,
        list_type_attributes: bool = True,
        consumable_capacity: bool = True,
    ) -> DeviceTable:
        return cls(
            devices,
            list_type_attributes=list_type_attributes,
            consumable_capacity=consumable_capacity,
        )

    @classmethod
    def of_devices(
        cls,
        drivers: list[str],
        devices: list[Device],
        *,
        list_type_attributes: bool = True,
        consumable_capacity: bool = True,
    ) -> DeviceTable:
        """The table of ``devices`` (driver ``drivers[i]`` for device i): lists taken as
        they are, no pair per device made."""
        table = cls.__new__(cls)
        table._init(drivers, devices, list_type_attributes, consumable_capacity)
        return table

    @property
    def devices(self) -> list[tuple[str, Device]]:
        """The ``(driver, device)`` pairs, in row order."""
        return list(zip(self._drivers, self._devices, strict=True))

    def __len__(self) -> int:
        return self.n

    @property
    def conversion_error(self) -> np.ndarray:
        """Rows with an attribute upstream cannot convert (every selector fails there)."""
        return self._conversion_errors()[0]

    @property
    def conversion_messages(self) -> dict[int, str]:
        """The conversion error of each such row, in upstream's words."""
        return self._conversion_errors()[1]

    def _conversion_errors(self) -> tuple[np.ndarray, dict[int, str]]:
        return self._attributes(None).conversion

    def expect_attributes(self, names: Iterable[tuple[str, str]]) -> None:
        """Attributes (``(domain, ident)``) a selector about to be evaluated reads:
        the first pass over the devices' attributes files these alone (filing every
        name cost a quarter of the pass, most selectors reading one or two)."""
        with self._lock:
            self._expected.update(names)

    def _attributes(self, name: tuple[str, str] | None) -> _Attributes:
        """The devices' attributes, read in one pass on first use; ``name``: the
        attribute the caller reads from its columns (None: conversion errors alone).
        The first pass files the names expected so far (and ``name``); a name it did
        not file makes a second pass that files every name."""
        with self._lock:
            found = self._attribute_pass
            if found is not None and (name is None or found.has(name)):
                return found
            filed: frozenset[tuple[str, str]] | None = None
            if found is None:
                filed = frozenset(self._expected if name is None else {*self._expected, name})
            errors, columns = _columns.attribute_pass(
                self._devices, self._drivers, _RISKY_KINDS, _conversion_detail, filed
            )
            mask = np.zeros(self.n, dtype=bool)
            messages: dict[int, str] = {}
            for row, attribute, detail in errors:
                mask[row] = True
                messages[row] = (
                    f"attribute {attribute_display_name(attribute, self._drivers[row])}: {detail}"
                )
            self._attribute_pass = _Attributes((mask, messages), columns, filed)
            return self._attribute_pass

    def _absent(self) -> Column:
        """A column no device has a value in."""
        return Column(np.zeros(self.n, dtype=np.int32), [], self.n > 0)

    def _attribute_column(self, domain: str, ident: str) -> Column:
        if "/" in domain:  # names are cut at their first '/': no domain holds one
            return self._absent()
        found = self._attributes((domain, ident)).columns.codes(
            (domain, ident), _attribute_key, _cel_attribute
        )
        if found is None:
            return self._absent()
        return _sorted_column(*found)

    def attribute_objects(
        self, domain: str, ident: str
    ) -> tuple[np.ndarray, list[DeviceAttribute]] | None:
        """Attribute ``domain/ident`` as the attribute pass filed it, not numbered: each
        device's entry (0: no such attribute, k: ``objects[k - 1]``) and the objects;
        None when no device has it."""
        if "/" in domain:  # (as for columns)
            return None
        return self._attributes((domain, ident)).columns.listed((domain, ident))

    def built(self, key: tuple[str, ...]) -> bool:
        """Whether the column of ``key`` is built already."""
        with self._lock:
            return key in self._columns

    def _presence_column(self, capacity: bool, domain: str, ident: str) -> Column:
        """Whether a device has attribute (or capacity) ``domain/ident``, as ``has()``
        asks: two values, however many the attribute takes (a UUID differs on every
        device)."""
        if capacity:  # by name, as the device's capacity map has it (whatever its value)
            return self._per_name_set(
                True, lambda driver, names: ident in _names_shown(driver, names, True, domain)
            )
        if "/" in domain:  # names are cut at their first '/': no domain holds one
            return _flag_column(np.zeros(self.n, dtype=bool))
        filed = self._attributes((domain, ident)).columns.present((domain, ident))
        return _flag_column(np.zeros(self.n, dtype=bool) if filed is None else filed)

    # ---- lazily built columns ----------------------------------------------------

    def column(self, key: tuple[str, ...]) -> Column:
        """The value-id column for a read key (see :mod:`draspeed.cel.vector`)."""
        with self._lock:
            col = self._columns.get(key)
            if col is None:
                col = self._columns[key] = self._build_column(key)
            return col

    def _build_column(self, key: tuple[str, ...]) -> Column:
        kind = key[0]
        n = self.n
        if kind == "driver":
            return _intern(self._drivers, _same, _same)
        if kind == "multi":
            flags = _columns.multi_flags(self._devices) if self.consumable_capacity else [False] * n
            return _intern(flags, _same, _same)
        if kind == "attr":
            return self._attribute_column(key[1], key[2])
        if kind == "cap":
            if "/" in key[1]:  # (as for attributes)
                return self._absent()
            caps = _columns.capacities(self._devices, self._drivers, key[1], key[2])
            return _intern(caps, _quantity_key, _same)
        if kind in ("attr_present", "cap_present"):
            return self._presence_column(kind == "cap_present", key[1], key[2])
        if kind in _KEY_READS:
            return self._key_column(kind, key[1] if len(key) > 1 else None)
        if kind in ("attr_domain", "cap_domain"):
            field = "attributes" if kind == "attr_domain" else "capacity"
            maps = [self.device_input(i).value[field].get(key[1]) for i in range(n)]
            return _intern(maps, _map_key, _same)
        if kind == "attr_presence":
            return self._domain_presence(key[1])
        if kind == "device":
            sigs = [self._device_signature(i) for i in range(n)]
            return _intern(sigs, _map_key, _same)
        raise KeyError(key)

    def _key_sets(self, capacity: bool) -> tuple[np.ndarray, list[tuple[str, tuple[str, ...]]]]:
        """Each device's (driver, attribute or capacity names) as a set id (one
        compiled pass per field, shared by every key read)."""
        found = self._cache.get(("key_sets", capacity))
        if found is None:
            found = self._cache[("key_sets", capacity)] = _columns.key_sets(
                self._devices, self._drivers, capacity
            )
        return found

    def _key_column(self, kind: str, domain: str | None) -> Column:
        """The names a device's map shows a selector (see ``_KEY_READS``), as a tuple in
        the map's order; worked out once per distinct set of names."""
        capacity = kind in ("cap_keys", "cap_domains")
        ids, sets = self._key_sets(capacity)
        shown = [_names_shown(driver, names, capacity, domain) for driver, names in sets]
        code_of = np.zeros(len(sets) + 1, dtype=np.int32)
        values: list[tuple[str, ...]] = []
        by_value: dict[tuple[str, ...], int] = {}
        for k, names in enumerate(shown):
            code = by_value.get(names)
            if code is None:
                values.append(names)
                code = by_value[names] = len(values)
            code_of[k] = code
        return Column(code_of[ids], values, False)

    def _domain_presence(self, domain: str) -> Column:
        """Whether a device has an attribute in ``domain`` (``"d" in device.attributes``)."""
        return self._per_name_set(
            False, lambda driver, names: domain in _names_shown(driver, names, False, None)
        )

    def _per_name_set(
        self, capacity: bool, decide: Callable[[str, tuple[str, ...]], bool]
    ) -> Column:
        """A yes/no column decided once per distinct (driver, attribute or capacity
        names) of the devices (see :meth:`_key_sets`)."""
        ids, sets = self._key_sets(capacity)
        per_set = np.fromiter((decide(d, names) for d, names in sets), dtype=bool, count=len(sets))
        return _flag_column(per_set[ids])

    def _device_signature(self, row: int) -> Any:
        value = self.device_input(row).value
        return {
            "driver": value["driver"],
            "allowMultipleAllocations": value["allowMultipleAllocations"],
            "attributes": dict(value["attributes"]),
            "capacity": dict(value["capacity"]),
        }

    # ---- per-device inputs (general path) ----------------------------------------

    def device_input(self, row: int) -> DeviceInput:
        inputs = self._inputs
        if inputs is None:
            with self._lock:
                if self._inputs is None:  # (out of the cyclic collector's walks)
                    self._inputs = untrack_list([None] * self.n)
                inputs = self._inputs
        dev = inputs[row]
        if dev is None:
            driver, device = self._drivers[row], self._devices[row]
            dev = device_input(
                driver,
                device,
                list_type_attributes=self.list_type_attributes,
                consumable_capacity=self.consumable_capacity,
            )
            inputs[row] = dev
        return dev

    def cached(self, key: Hashable, build: Callable[[], Any]) -> Any:
        """Cache something derived from this (immutable) table, e.g. a leaf's result."""
        with self._lock:
            found = self._cache.get(key)
            if found is None:
                found = self._cache[key] = build()
            return found
