"""Type stubs for the compiled device-table passes (cext/cel/_columns.pyx)."""

from collections.abc import Callable, Hashable
from typing import Any

import numpy as np
import numpy.typing as npt

from draspeed.api.model import Device, DeviceAttribute
from draspeed.quantity import Quantity

def intern_rows(
    items: list[Any],
    key_of: Callable[[Any], Hashable | None],
    value_of: Callable[[Any], Any],
) -> tuple[npt.NDArray[np.int32], list[Any], bool]: ...
def attributes(
    devices: list[Device], drivers: list[str], domain: str, ident: str
) -> list[DeviceAttribute | None]: ...
def capacities(
    devices: list[Device], drivers: list[str], domain: str, ident: str
) -> list[Quantity | None]: ...
def multi_flags(devices: list[Device]) -> list[bool]: ...
def conversion_errors(
    devices: list[Device],
    risky_kinds: frozenset[str | None],
    detail_of: Callable[[DeviceAttribute], str | None],
) -> list[tuple[int, str, str]]: ...
