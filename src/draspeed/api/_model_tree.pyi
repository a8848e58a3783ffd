"""Model object trees in compiled code: copies and signatures (cext/api/_model_tree.pyx)."""

from typing import TypeVar

_T = TypeVar("_T")

def clone(o: _T) -> _T:
    """A deep copy: mutable model dataclasses, lists and dicts are new; the rest shared."""
    ...

def split_template(o: _T) -> tuple[bytes, _T, tuple[object, ...]]:
    """(key, shape, leaves): the tree with its string and other shared leaves as holes."""
    ...

def fill_template(shape: _T, leaves: tuple[object, ...]) -> _T:
    """A copy of the tree split_template took apart, its holes filled in walk order."""
    ...

def signature(o: object) -> bytes:
    """Bytes that only an equal model tree writes; TypeError for an unknown value type."""
    ...
