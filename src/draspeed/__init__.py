"""draspeed: Kubernetes DRA device allocation, exactly as upstream decides it, fast.

The names below are imported lazily, so ``import draspeed`` stays cheap.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from draspeed.api.loader import Objects, load
    from draspeed.cluster import Cluster
    from draspeed.engine.allocator import Allocator, PreparedClaims
    from draspeed.engine.feasibility import Feasibility, NodeOutcome
    from draspeed.engine.snapshot import Snapshot
    from draspeed.errors import (
        AllocationError,
        AllocationTimeout,
        DraspeedError,
        InputError,
        NodeAllocationError,
    )
    from draspeed.features import Features
    from draspeed.quantity import Quantity

_EXPORTS = {
    "Objects": "draspeed.api.loader",
    "load": "draspeed.api.loader",
    "Cluster": "draspeed.cluster",
    "Allocator": "draspeed.engine.allocator",
    "PreparedClaims": "draspeed.engine.allocator",
    "AllocationError": "draspeed.errors",
    "AllocationTimeout": "draspeed.errors",
    "DraspeedError": "draspeed.errors",
    "InputError": "draspeed.errors",
    "NodeAllocationError": "draspeed.errors",
    "Feasibility": "draspeed.engine.feasibility",
    "NodeOutcome": "draspeed.engine.feasibility",
    "Features": "draspeed.features",
    "Quantity": "draspeed.quantity",
    "Snapshot": "draspeed.engine.snapshot",
}

__all__ = [
    "AllocationError",
    "AllocationTimeout",
    "Allocator",
    "Cluster",
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


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'draspeed' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
