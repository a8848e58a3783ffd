"""Documents built by Python code, looked over in compiled code (cext/api/_python_tree.pyx)."""

from typing import Final

PLAIN: Final[int]
REWRITE: Final[int]
TOO_DEEP: Final[int]

def document_shape(value: object, max_depth: int) -> int:
    """PLAIN, REWRITE or TOO_DEEP for ``value`` (dicts, lists and tuples of scalars),
    whose collections may nest ``max_depth`` levels."""
    ...
