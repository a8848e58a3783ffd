"""draspeed: Kubernetes DRA device allocation, exactly as upstream decides it, fast.

The names below are imported lazily, so ``import draspeed`` stays cheap.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from draspeed.allocator import Allocator, PreparedClaims
    from draspeed.errors import (
        AllocationError,
        AllocationTimeout,
        DraspeedError,
        InputError,
        NodeAllocationError,
    )
    from draspeed.feasibility import Feasibility, NodeOutcome
    from draspeed.features import Features
    from draspeed.quantity import Quantity
    from draspeed.snapshot import Snapshot

_EXPORTS = {
    "Allocator": "draspeed.allocator",
    "PreparedClaims": "draspeed.allocator",
    "AllocationError": "draspeed.errors",
    "AllocationTimeout": "draspeed.errors",
    "DraspeedError": "draspeed.errors",
    "InputError": "draspeed.errors",
    "NodeAllocationError": "draspeed.errors",
    "Feasibility": "draspeed.feasibility",
    "NodeOutcome": "draspeed.feasibility",
    "Features": "draspeed.features",
    "Quantity": "draspeed.quantity",
    "Snapshot": "draspeed.snapshot",
}

__all__ = [
    "AllocationError",
    "AllocationTimeout",
    "Allocator",
    "DraspeedError",
    "Feasibility",
    "Features",
    "InputError",
    "NodeAllocationError",
    "NodeOutcome",
    "Objects",
    "PreparedClaims",
    "Quantity",
    "Snapshot",
    "__version__",
    "load",
]

# ``draspeed.load`` is a function named like its module: bind it now, after the module
# is imported, so a later ``import draspeed.load`` cannot leave the module in its place.
from draspeed.load import Objects, load  # noqa: E402


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'draspeed' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
