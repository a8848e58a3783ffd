"""Type stubs for a prepared pod's compiled Filter call (cext/engine/_prepared.pyx)."""

from collections.abc import Callable
from typing import Any, final

import numpy as np
import numpy.typing as npt
from typing_extensions import disjoint_base

from draspeed.api.model import AllocationResult, Node
from draspeed.engine.allocator import Stats

@final
class KnownAnswers:
    """The remembered answers of one claim set on the nodes of one layout."""

    @property
    def position(self) -> dict[int, int]: ...
    @property
    def nodes(self) -> list[Node]: ...
    @property
    def answers(self) -> dict[int, Any]: ...
    @property
    def arrays(self) -> Any: ...
    def __new__(cls, arrays: Any) -> KnownAnswers: ...

@final
class PerThread:
    """One value per thread, as ``threading.local`` keeps one attribute."""

    @property
    def default(self) -> Any: ...
    def __new__(cls, default: Any) -> PerThread: ...
    def get(self) -> Any:
        """The calling thread's value."""
    def set(self, value: Any) -> None:
        """Set the calling thread's value."""

@disjoint_base
class PreparedAnswers:
    """The compiled first step of a prepared pod's ``allocate``."""

    allocator: Any
    known: KnownAnswers | None
    stats: PerThread
    allocator_stats: PerThread
    @property
    def last_stats(self) -> Stats:
        """The counters of the calling thread's last ``allocate`` on this pod."""
    @last_stats.setter
    def last_stats(self, stats: Stats) -> None: ...
    def allocate(
        self, node: Any, *, deadline: float | None = None
    ) -> list[AllocationResult] | None: ...

def remember_filled(
    answers: dict[int, Any],
    nodes: npt.NDArray[np.int32],
    work: npt.NDArray[np.int64],
    few_steps: tuple[Any, ...],
    stats_of: Callable[[int], Any],
    shape: Any,
    leaves: tuple[object, ...],
    holes: npt.NDArray[np.int32],
    node_names: list[str],
    pools: npt.NDArray[np.int32],
    devices: npt.NDArray[np.int32],
    pool_keys: list[tuple[str, str]],
    strings: list[str],
) -> None:
    """Remember the answers of ``nodes``, all of one shape, their names filled in."""
