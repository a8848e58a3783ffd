"""Model object trees in compiled code: copies and signatures (cext/api/_model_tree.pyx)."""

from typing import Any, TypeVar, final

_T = TypeVar("_T")

@final
class Template:
    """A remembered answer's shape, compiled: filled by fill_template."""

def clone(o: _T) -> _T:
    """A deep copy: mutable model dataclasses, lists and dicts are new; the rest shared."""
    ...

def split_template(
    o: object, known: dict[bytes, Template] | None = None
) -> tuple[bytes, Template, tuple[object, ...]]:
    """(key, shape, leaves): the tree with its string and other shared leaves as holes;
    a shape found in ``known`` is used, a new one added."""
    ...

def fill_template(shape: Template, leaves: tuple[object, ...]) -> Any:
    """A copy of the tree split_template took apart, its holes filled in walk order."""
    ...

def untrack_list(items: list[_T]) -> list[_T]:
    """``items`` itself (not what it holds) out of the cyclic collector's sight."""
    ...

def untrack(objects: list[Any]) -> None:
    """Take model trees out of the cyclic collector's sight (``raw`` excepted)."""
    ...

def signature(o: object) -> bytes:
    """Bytes that only an equal model tree writes; TypeError for an unknown value type."""
    ...
