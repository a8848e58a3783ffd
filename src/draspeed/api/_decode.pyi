"""Type stubs for the compiled decoding fast paths (cext/api/_decode.pyx)."""

from collections.abc import Callable
from typing import Any, final

import msgspec

from draspeed.api.context import Caches, DecodeContext
from draspeed.api.model import Device, DeviceAttribute, DeviceCapacity, ResourceSlice

def decode_common_devices(
    ctx: DecodeContext,
    devices_raw: list[Any],
    driver: str,
    nested: bool,
    bare_capacity: bool,
    checked: Callable[[int, Any], Device],
) -> list[Device]:
    """The devices of one slice; ``checked(i, raw)`` decodes device ``i`` with every
    check when it is not of the common shape."""

@final
class SliceBuilder:
    """The model of typed slices (draspeed.api.slice_schema), built from and into one
    load's caches."""

    def __init__(self, caches: Caches, validate: bool) -> None: ...
    def build(
        self,
        item: object,
        raw: msgspec.Raw,
        api_version: str,
        fallback: Callable[[msgspec.Raw], Any],
    ) -> ResourceSlice | None:
        """The ResourceSlice of a JSONSlice, or None when anything but its devices needs
        the checked decoder; ``fallback(raw)(i, driver)`` builds the other devices."""

def new_device(
    name: str, attributes: dict[str, DeviceAttribute], capacity: dict[str, DeviceCapacity]
) -> Device:
    """The Device the fast path builds (it must equal ``Device(name, attributes, capacity)``)."""

def new_string_attribute(value: str) -> DeviceAttribute:
    """The string DeviceAttribute the fast path builds."""

def dns_subdomain_ok(name: object) -> bool:
    """True only when ``names.check_dns_subdomain(name)`` passes."""

def pool_name_ok(name: object) -> bool:
    """True only when ``names.check_pool_name(name)`` passes."""

def dns_label_ok(name: object) -> bool:
    """True only when ``names.check_dns_label(name)`` passes."""
