"""The reference allocator: upstream's decision procedure in plain, readable Python.

Used by tests as a second opinion on the compiled engine; never imported by the
fast path. ``ReferenceAllocator(slices, classes, allocated_claims, features)
.allocate(claims, node)`` returns what upstream's newest allocator returns, with
the allocation-state fixes merged upstream after the spec's snapshot.
"""

from __future__ import annotations

from draspeed.reference.allocator import ReferenceAllocator, Stats

__all__ = ["ReferenceAllocator", "Stats"]
