"""Type stubs for the compiled slice reader (cext/engine/_read.pyx)."""

from collections.abc import Callable, Iterable
from typing import Any, final

import numpy as np
import numpy.typing as npt

from draspeed.api.model import DeviceAttribute, NodeSelector, ResourceSlice
from draspeed.quantity import Quantity

DEVICE_FLAGS: dict[str, int]
SELECTION: dict[str, int]

@final
class Interning:
    """The string, quantity, pool, node selector and consumption pattern tables."""

    strings: dict[str, int]
    string_list: list[str]
    pools: dict[tuple[int, int], int]
    pool_keys: list[tuple[str, str]]
    quantities: list[Quantity]
    quantity_nanos: list[int]
    selectors: list[NodeSelector]
    pattern_ptr: list[int]
    pattern_set: list[int]
    pattern_counter: list[int]
    pattern_quantity: list[int]
    def string(self, text: str) -> int: ...
    def find(self, text: str) -> int: ...
    def find_all(self, texts: Iterable[str], n: int) -> npt.NDArray[np.int32]: ...
    def pattern_arrays(
        self,
    ) -> tuple[
        npt.NDArray[np.int64], npt.NDArray[np.int32], npt.NDArray[np.int32], npt.NDArray[np.int32]
    ]: ...

def object_names(items: list[Any]) -> list[str]: ...
def read_slices(
    slices: list[ResourceSlice], names: Interning, first_device: int
) -> dict[str, Any]: ...
def attribute_codes(
    slices: list[ResourceSlice],
    s_first: npt.NDArray[np.int64],
    positions: npt.NDArray[np.int64],
    attribute: str,
    list_types: bool,
    values_of: Callable[[DeviceAttribute, bool], list[tuple[str, object]]],
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int32], npt.NDArray[np.uint8], int]: ...
def distinct_ids(
    slices: list[ResourceSlice],
    s_first: npt.NDArray[np.int64],
    positions: npt.NDArray[np.int64],
    field: str,
    by_key: dict[object, int],
    values: list[Any],
    signature_of: Callable[[object], bytes],
) -> npt.NDArray[np.int32]: ...
