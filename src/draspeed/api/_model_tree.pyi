"""Model object trees in compiled code: copies and signatures (cext/api/_model_tree.pyx)."""

from typing import TypeVar

_T = TypeVar("_T")

def clone(o: _T) -> _T:
    """A deep copy: mutable model dataclasses, lists and dicts are new; the rest shared."""
    ...

def compact_copy(o: _T) -> _T:
    """A copy for trees only ever copied: empty lists and maps one shared object each."""
    ...

def signature(o: object) -> bytes:
    """Bytes that only an equal model tree writes; TypeError for an unknown value type."""
    ...
