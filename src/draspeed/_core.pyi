"""Type stubs for the compiled search core (cext/_core.pyx)."""

from typing import Any

import numpy.typing as npt

OUTCOME: dict[str, int]
OUTCOME_NAMES: dict[int, str]
SEL: dict[str, int]
CAP: dict[str, int]

class Problem:
    """One Allocate call as flat arrays (built by draspeed.problem)."""

    n_claims: int
    n_positions: int
    n_alts: int
    n_constraints: int
    n_codes: int
    taints_enabled: bool
    consumable_enabled: bool
    def __init__(
        self,
        a: dict[str, npt.NDArray[Any] | int],
        *,
        taints_enabled: bool,
        consumable_enabled: bool,
    ) -> None: ...

def search(
    pb: Problem, deadline: float = 0.0
) -> tuple[int, int, list[list[tuple[int, int]]], list[int], int, int]:
    """(outcome, work, picks per claim as (alternative, position), chosen subrequest per
    request, erroring alternative, erroring position)."""
    ...

__all__ = ["CAP", "OUTCOME", "OUTCOME_NAMES", "SEL", "Problem", "search"]
