"""The ``device`` variable of a DRA selector, built once per device and reused.

Read in kubernetes/dynamic-resource-allocation @3d03671: ``cel/compile.go``
(``DeviceMatches``, ``getAttributeValue``) and the allocators' ``selectorsMatch``
(``structured/internal/{stable,incubating,experimental}/allocator_*.go``).

Upstream (``DeviceMatches``)
converts *all* of a device's attributes into the CEL input at every evaluation, before
the expression runs. So a device with an attribute that has no value ("attribute
<name>: unsupported attribute value") or an unparsable version ("attribute <name>:
parse semantic version: ...") fails *every* selector, also one that never reads that
attribute (upstream test "with-distinct-constraints-unknown-type-attribute" relies on it:
its only selector is ``device.driver == ...``). :class:`DeviceInput` records that
error and :meth:`Selector.matches` raises it before evaluating.

List-typed attributes are converted into CEL lists whatever DRAListTypeAttributes says:
``getAttributeValue`` checks the list fields first and has no feature switch, and the
allocator hands over the slice's attributes unfiltered (the API server is what drops
list fields when the gate is off). ``list_type_attributes`` is therefore accepted for
symmetry with the allocator's feature record and does not change the input.

``device.allowMultipleAllocations`` is the device's field (false when unset) in the
experimental and incubating allocators whatever DRAConsumableCapacity says; only the
stable allocator (chosen when no feature beyond AdminAccess, PrioritizedList,
PartitionableDevices and DeviceTaints is on) never passes it, so it reads false there.
``consumable_capacity=False`` reproduces that stable-variant behaviour; callers emulating
experimental/incubating pass True.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from draspeed.api.model import Device
from draspeed.cel.values import DomainMap
from draspeed.errors import SemverError
from draspeed.semantic_version import parse_semver


@dataclass(frozen=True, slots=True, eq=False)
class DeviceInput:
    """What one device looks like to every selector.

    ``value`` is the CEL ``device`` map; ``error``, when set, is the attribute conversion
    error upstream reports for any selector evaluated on this device.
    """

    driver: str
    value: dict[str, Any]
    error: str | None = None


def split_qualified_name(name: str, default_domain: str) -> tuple[str, str]:
    """``domain/id`` → (domain, id); a bare id belongs to ``default_domain``."""
    domain, sep, ident = name.partition("/")
    if not sep:
        return default_domain, name
    return domain, ident


def attribute_display_name(name: str, driver: str) -> str:
    """The attribute name as upstream prints it in conversion errors.

    Upstream prints the map key as the slice wrote it. The model only keeps qualified
    names, so an attribute in the driver's own domain is printed bare, the form drivers
    normally publish (exact whenever the slice used that form).
    """
    domain, ident = split_qualified_name(name, driver)
    return ident if domain == driver else name


def attribute_value(kind: str | None, value: Any) -> Any:
    """The CEL value of one attribute; raises ValueError with upstream's detail text."""
    if kind in ("int", "bool", "string"):
        return value
    if kind == "version":
        return _version(value)
    if kind in ("ints", "bools", "strings"):
        return list(value)
    if kind == "versions":
        return [_version(v) for v in value]
    raise ValueError("unsupported attribute value")


def _version(text: str) -> Any:
    try:
        return parse_semver(text)
    except SemverError as exc:
        raise ValueError(f"parse semantic version: {exc}") from None


def device_input(
    driver: str,
    device: Device,
    *,
    list_type_attributes: bool = True,
    consumable_capacity: bool = True,
) -> DeviceInput:
    """Build the ``device`` variable for ``device`` published by ``driver``."""
    del list_type_attributes  # see the module docstring: upstream ignores the gate here
    error: str | None = None
    attributes: DomainMap = DomainMap()
    for name, attr in device.attributes.items():
        try:
            value = attribute_value(attr.kind, attr.value)
        except ValueError as exc:
            if error is None:
                error = f"attribute {attribute_display_name(name, driver)}: {exc}"
            continue
        domain, ident = split_qualified_name(name, driver)
        inner = attributes.get(domain)
        if inner is None:
            inner = attributes[domain] = {}
        inner[ident] = value
    capacity: DomainMap = DomainMap()
    # Capacity names are kept as written, so ``memory`` and ``<driver>/memory`` may both
    # be there: the fully qualified one is read, as for attributes (and as the column
    # reader of draspeed.cel._columns does). Upstream's map iteration picks either.
    for name, cap in sorted(device.capacity.items(), key=lambda item: "/" in item[0]):
        domain, ident = split_qualified_name(name, driver)
        inner = capacity.get(domain)
        if inner is None:
            inner = capacity[domain] = {}
        inner[ident] = cap.value
    allow_multiple = bool(device.allow_multiple_allocations) if consumable_capacity else False
    value = {
        "driver": driver,
        "allowMultipleAllocations": allow_multiple,
        "attributes": attributes,
        "capacity": capacity,
    }
    return DeviceInput(driver, value, error)
