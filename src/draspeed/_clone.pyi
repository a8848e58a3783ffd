"""Deep copies of model object trees (compiled; see cext/_clone.pyx)."""

from typing import TypeVar

_T = TypeVar("_T")

def clone(o: _T) -> _T:
    """A deep copy: mutable model dataclasses, lists and dicts are new; the rest shared."""
    ...
