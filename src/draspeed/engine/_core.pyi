"""Type stubs for the compiled search core (cext/engine/_core.pyx)."""

from typing import Any, TypeAlias

import numpy.typing as npt
from typing_extensions import disjoint_base

# name, dtype, expected length (expression over the shape, or None), how a node view moves it
ARRAYS: tuple[tuple[str, str, str | None, str | None], ...]
OUTCOME: dict[str, int]
OUTCOME_NAMES: dict[int, str]
SEL: dict[str, int]
CAP: dict[str, int]

@disjoint_base
class Problem:
    """One Allocate question over one or many nodes, as flat arrays (see claim_arrays)."""

    n_claims: int
    n_nodes: int
    n_positions: int
    n_alts: int
    n_constraints: int
    n_codes: int
    max_results: int
    arrays: dict[str, npt.NDArray[Any]]
    taints_enabled: bool
    consumable_enabled: bool
    exact: Any  # ExactSums (draspeed.engine.claim_arrays) when sums may leave int64, else None
    def __init__(
        self,
        arrays: dict[str, npt.ArrayLike],
        *,
        taints_enabled: bool,
        consumable_enabled: bool,
        max_results: int,
        exact: Any = None,
        n_codes: int = 0,
    ) -> None: ...
    def node_offsets(self) -> list[int]:
        """Where each node's positions start, and the end."""
        ...

_State: TypeAlias = tuple[npt.NDArray[Any], npt.NDArray[Any], npt.NDArray[Any]]

def search_nodes(
    pb: Problem,
    deadline: float = 0.0,
    nodes: npt.ArrayLike | None = None,
    state: _State | None = None,
) -> dict[str, npt.NDArray[Any]]:
    """Search the nodes (all, or these indices, in this order) one after the other.

    Keys: outcome, work, err_alt, err_pos (per node), res_n (node, claim), res_alt and
    res_pos (node, claim, max_results slots; node-local positions), chosen_sub (node, request).
    ``state``: (in_use, committed_share, slot_available) of a later cluster version."""
    ...

def search_node(
    pb: Problem, n: int, deadline: float = 0.0, state: _State | None = None
) -> tuple[int, int, tuple[tuple[tuple[int, int], ...], ...], tuple[int, ...], int, int]:
    """Node n alone: (outcome, work, picks per claim as (alternative, node-local position),
    chosen subrequest per request, erroring alternative, erroring position)."""
    ...
