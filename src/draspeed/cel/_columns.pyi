"""Type stubs for the compiled device-table passes (cext/cel/_columns.pyx)."""

from collections.abc import Callable, Hashable
from typing import Any, final

import numpy as np
import numpy.typing as npt

from draspeed.api.model import Device, DeviceAttribute
from draspeed.quantity import Quantity

def intern_rows(
    items: list[Any],
    key_of: Callable[[Any], Hashable | None],
    value_of: Callable[[Any], Any],
) -> tuple[npt.NDArray[np.int32], list[Any], bool]: ...
def capacities(
    devices: list[Device], drivers: list[str], domain: str, ident: str
) -> list[Quantity | None]: ...
def key_sets(
    devices: list[Device], drivers: list[str], capacity: bool
) -> tuple[npt.NDArray[np.int32], list[tuple[str, tuple[str, ...]]]]: ...
def present_codes(
    codes: npt.NDArray[np.int32], wanted: npt.NDArray[np.bool_]
) -> tuple[npt.NDArray[np.intp], int]: ...
def multi_flags(devices: list[Device]) -> list[bool]: ...

@final
class AttributeObjects:
    """Each device's attribute object, per attribute name (what ``attribute_pass``
    files)."""

    def __new__(cls, n: int) -> AttributeObjects: ...
    def present(self, name: tuple[str, str]) -> npt.NDArray[np.bool_] | None:
        """Whether each device has attribute ``name``, or None when none has."""
    def listed(
        self, name: tuple[str, str]
    ) -> tuple[npt.NDArray[np.int32], list[DeviceAttribute]] | None:
        """Column ``name`` as filed (entries, objects), or None when no device has it."""
    def codes(
        self,
        name: tuple[str, str],
        key_of: Callable[[Any], Hashable | None],
        value_of: Callable[[Any], Any],
    ) -> tuple[npt.NDArray[np.int32], list[Any], bool] | None:
        """Column ``name`` numbered, as ``object_codes`` numbers it, or None."""

def object_codes(
    items: list[Any],
    key_of: Callable[[Any], Hashable | None],
    value_of: Callable[[Any], Any],
) -> tuple[npt.NDArray[np.int32], list[Any], bool]: ...
def attribute_pass(
    devices: list[Device],
    drivers: list[str],
    risky_kinds: frozenset[str | None],
    detail_of: Callable[[DeviceAttribute], str | None],
    wanted: frozenset[tuple[str, str]] | None = None,
) -> tuple[list[tuple[int, str, str]], AttributeObjects]: ...

STRING_METHODS: tuple[str, ...]

def string_calls(
    objects: list[DeviceAttribute], function: str, arg: str
) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.int64]] | None: ...
