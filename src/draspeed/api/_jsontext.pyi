"""Type stubs for the compiled JSON text checks (cext/api/_jsontext.pyx)."""

from typing_extensions import disjoint_base

def json_text_check(data: bytes, max_depth: int) -> tuple[bool, bool]:
    """``(too_deep, duplicate)`` of a JSON text msgspec decoded."""

def json_list_spans(data: bytes, max_depth: int) -> tuple[int, int, list[tuple[int, int]]] | None:
    """``(open, close, spans)`` of a list text ``{..., "items": [{...}, ...], ...}``
    within the limits, else None."""

def json_compact(data: bytes) -> bytes | None:
    """``data`` without whitespace outside its strings; None when that whitespace
    separates two parts of a token (the text is no JSON)."""

@disjoint_base
class JSONCompactor:
    """A JSON text compacted piece by piece (see ``json_compact``)."""

    def __new__(cls, size_hint: int = 0) -> JSONCompactor: ...
    def feed(self, piece: bytes | bytearray | memoryview) -> None: ...
    def finish(self) -> bytes | None: ...
