"""Model object trees in compiled code: copies and signatures (cext/api/_model_tree.pyx)."""

from typing import TypeVar

_T = TypeVar("_T")

def clone(o: _T) -> _T:
    """A deep copy: mutable model dataclasses, lists and dicts are new; the rest shared."""
    ...

def signature(o: object) -> bytes:
    """Bytes that only an equal model tree writes; TypeError for an unknown value type."""
    ...
