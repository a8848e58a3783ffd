"""Type stubs for the compiled decoding fast paths (cext/_decode.pyx)."""

from collections.abc import Callable
from typing import Any

from draspeed.api.context import DecodeContext
from draspeed.api.model import Device, DeviceAttribute, DeviceCapacity

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

def json_text_shape(text: str | bytes, max_depth: int) -> tuple[bool, int]:
    """``(too_deep, members)`` of a text msgspec decoded as JSON."""

def count_members(doc: object) -> int:
    """Entries of every dict in a decoded JSON document."""
