"""Claim constraints: ``matchAttribute`` and ``distinctAttribute``.

A constraint sees every device added to the claim (``add``) and every device
taken back when the search backtracks (``remove``, exactly once per successful
``add``, in reverse order). Constraints are monotonic: once a device is
rejected, adding more devices cannot make it acceptable again.

Two attribute modes, as upstream:

* scalar (DRAListTypeAttributes off): values are compared by type and value;
  list-typed attributes never satisfy a constraint after the first device;
* set (DRAListTypeAttributes on): a scalar is a one-element set; ``matchAttribute``
  needs a non-empty running intersection, ``distinctAttribute`` pairwise
  disjoint sets.

Both keep a stack so that ``remove`` restores the exact previous state (the
fixes of kubernetes#140326 for the intersection and kubernetes#140438 for
several devices of one request under ``distinctAttribute``).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Collection
from typing import Any

from draspeed.api.model import Device, DeviceAttribute
from draspeed.rules.ids import DeviceID

_SCALAR_KINDS = ("int", "bool", "string", "version")
# Lists and scalars of the same element type intersect (ints with int, ...).
_ELEMENT_TYPE = {
    "int": "int",
    "ints": "int",
    "bool": "bool",
    "bools": "bool",
    "string": "string",
    "strings": "string",
    "version": "version",
    "versions": "version",
}

AttributeSet = tuple[str, frozenset[Any]]


def lookup_attribute(device: Device, device_id: DeviceID, name: str) -> DeviceAttribute | None:
    """A device's attribute by fully-qualified name (a bare id only under the driver's domain).

    The model stores every attribute fully qualified, so the driver-domain fallback
    of upstream is already folded into the keys; an attribute that exists without
    a value is returned (and then fails to compare).
    """
    attribute = device.attributes.get(name)
    if attribute is not None:
        return attribute
    domain, sep, ident = name.partition("/")
    if sep and domain == device_id.driver:
        return device.attributes.get(ident)
    return None


def attribute_set(attribute: DeviceAttribute) -> AttributeSet | None:
    """The attribute as a typed set; None when it has no value (or an empty list)."""
    if attribute.kind is None:
        return None
    element_type = _ELEMENT_TYPE[attribute.kind]
    if attribute.kind in _SCALAR_KINDS:
        return element_type, frozenset((attribute.value,))
    values = frozenset(attribute.value or ())
    return (element_type, values) if values else None


def _scalar_equal(a: DeviceAttribute, b: DeviceAttribute) -> bool:
    """Upstream's scalar comparison: ``b`` decides the type; lists never compare equal."""
    if b.kind not in _SCALAR_KINDS:
        return False
    return a.kind == b.kind and a.value == b.value


class Constraint(ABC):
    """A claim constraint; request scoping is shared (an empty list means every request)."""

    def __init__(self, attribute_name: str, requests: Collection[str], list_type_attributes: bool):
        self.attribute_name = attribute_name
        self.requests = frozenset(requests)
        self.list_type_attributes = list_type_attributes

    def applies_to(self, request: str, subrequest: str | None) -> bool:
        if not self.requests:
            return True
        if request in self.requests:
            return True
        return subrequest is not None and f"{request}/{subrequest}" in self.requests

    @abstractmethod
    def add(
        self, request: str, subrequest: str | None, device: Device, device_id: DeviceID
    ) -> bool:
        """Try to add a device; False rejects it and leaves the state unchanged."""

    @abstractmethod
    def remove(
        self, request: str, subrequest: str | None, device: Device, device_id: DeviceID
    ) -> None:
        """Take back the device of the matching, most recent successful ``add``."""


class MatchAttribute(Constraint):
    """All affected devices share the attribute's value (or, as sets, some common value)."""

    def __init__(self, attribute_name: str, requests: Collection[str], list_type_attributes: bool):
        super().__init__(attribute_name, requests, list_type_attributes)
        # One entry per added device: the first device's attribute (scalar mode) or
        # the running intersection after that device (set mode).
        self._stack: list[Any] = []

    def add(
        self, request: str, subrequest: str | None, device: Device, device_id: DeviceID
    ) -> bool:
        if not self.applies_to(request, subrequest):
            return True
        attribute = lookup_attribute(device, device_id, self.attribute_name)
        if attribute is None:
            return False
        if self.list_type_attributes:
            new = attribute_set(attribute)
            if new is None:
                return False
            if self._stack:
                current: AttributeSet = self._stack[-1]
                if current[0] != new[0]:
                    return False
                common = current[1] & new[1]
                if not common:
                    return False
                new = (new[0], common)
            self._stack.append(new)
            return True
        if self._stack and not _scalar_equal(self._stack[0], attribute):
            return False
        self._stack.append(self._stack[0] if self._stack else attribute)
        return True

    def remove(
        self, request: str, subrequest: str | None, device: Device, device_id: DeviceID
    ) -> None:
        if self.applies_to(request, subrequest):
            self._stack.pop()


class DistinctAttribute(Constraint):
    """All affected devices have different values (as sets: pairwise disjoint)."""

    def __init__(self, attribute_name: str, requests: Collection[str], list_type_attributes: bool):
        super().__init__(attribute_name, requests, list_type_attributes)
        self._attributes: list[DeviceAttribute] = []

    def _distinct_from_all(self, attribute: DeviceAttribute) -> bool:
        if self.list_type_attributes:
            new = attribute_set(attribute)
            if new is None:
                return False
            for existing in self._attributes:
                old = attribute_set(existing)
                if old is not None and old[0] == new[0] and old[1] & new[1]:
                    return False
            return True
        return not any(
            _scalar_equal(existing, attribute) or attribute.kind not in _SCALAR_KINDS
            for existing in self._attributes
        )

    def add(
        self, request: str, subrequest: str | None, device: Device, device_id: DeviceID
    ) -> bool:
        if not self.applies_to(request, subrequest):
            return True
        attribute = lookup_attribute(device, device_id, self.attribute_name)
        if attribute is None:
            return False
        if self._attributes and not self._distinct_from_all(attribute):
            return False
        self._attributes.append(attribute)
        return True

    def remove(
        self, request: str, subrequest: str | None, device: Device, device_id: DeviceID
    ) -> None:
        if self.applies_to(request, subrequest):
            self._attributes.pop()
