"""Type stubs for the compiled pool gathering (cext/engine/_gather.pyx)."""

from typing import Any

import numpy as np
import numpy.typing as npt

POOL_STATE: dict[str, int]
POOL_REASON: dict[str, int]
PDN: dict[str, int]
NODE_ERROR: dict[str, int]
NOT_WHOLE: int

def gather(
    table: dict[str, npt.NDArray[Any]],
    strings: list[str],
    pool_keys: list[tuple[str, str]],
    live: npt.NDArray[np.uint8],
    node_names: npt.NDArray[np.int32],
    own_slices: npt.NDArray[np.int32],
    own_lo: npt.NDArray[np.int32],
    own_hi: npt.NDArray[np.int32],
    shared_slices: npt.NDArray[np.int32],
    selector_verdict: npt.NDArray[np.uint8],
    n_selectors: int,
    holds: tuple[npt.NDArray[np.int32], npt.NDArray[np.int32], npt.NDArray[np.int32]],
    overlay_keys: npt.NDArray[np.int64],
    overlay_values: npt.NDArray[np.int32],
    quantity_whole: npt.NDArray[np.int64],
    partitionable: bool,
    sorted_slots: dict[bytes, bytes],
) -> dict[str, Any]: ...
