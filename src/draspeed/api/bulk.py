"""Big JSON lists item by item: ``kubectl get -o json`` output and API list responses.

A cluster dump is one JSON object whose ``items`` are thousands of ResourceSlices.
Parsing it into dicts, then reading the dicts back into the model, costs about twice
what reading the text once costs, so :func:`read_list` takes such a text apart instead:

0. an indented text (kubectl's) loses the whitespace between its tokens first, in one
   compiled pass (:func:`draspeed.api._jsontext.json_compact`; a file, as it is read,
   see ``draspeed.api.loader``): every later pass, and every item's kept text, is
   then a third of the size;
1. one compiled pass (:func:`draspeed.api._jsontext.json_list_spans`) checks the input
   limits of :mod:`draspeed.api.text` (nesting depth, duplicate keys) and finds where
   each item starts and ends;
2. the list without its items is decoded (its ``kind`` and ``apiVersion`` apply to
   items that have none);
3. :meth:`ListText.item` decodes one item from its own bytes: a ResourceSlice into the
   Structs of :mod:`draspeed.api.slice_schema`, a ResourceClaim into those of
   :mod:`draspeed.api.bulk_claims`, when they fit it; anything else into a dict as the
   ordinary parse gives it. Each keeps its bytes (a ``msgspec.Raw`` view of the
   text read), which become the slice's or claim's ``raw``.

The loader decodes and builds one item at a time, so that each item's Structs are
freed while the next is decoded (half the memory traffic of decoding all first). An
item may then turn out not to be JSON (:class:`NotJSON`) after others were built: the
loader undoes them and parses the text the ordinary way, which reports whatever is
wrong exactly as it always does. Any surprise before that (not such a list, too deep,
a repeated key) makes :func:`read_list` return None.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import msgspec

from draspeed.api import json_as_go
from draspeed.api._jsontext import json_compact, json_list_spans
from draspeed.api.bulk_claims import CLAIM_DECODER
from draspeed.api.slice_schema import SLICE_DECODER
from draspeed.api.text import DEFAULT_MAX_DEPTH, Limits

# List kinds read item by item ("List": kubectl's mixed lists), and the kind each
# list's items are tried as first (None: as named in the item).
_LISTS: dict[str, str | None] = {
    "List": None,
    "ResourceSliceList": "ResourceSlice",
    "ResourceClaimList": "ResourceClaim",
}
_KINDS: dict[str, tuple[bytes, msgspec.json.Decoder[Any]]] = {
    "ResourceSlice": (b'"ResourceSlice"', SLICE_DECODER),
    "ResourceClaim": (b'"ResourceClaim"', CLAIM_DECODER),
}


# A text whose first 64 KiB are more than this share whitespace is read without it
# (kubectl indents by four spaces a level: two thirds of a dump's bytes); below,
# compacting costs more than it saves.
_SPACE_SHARE = 0.15
SAMPLE = 1 << 16


def indented(data: bytes) -> bool:
    """Whether ``data`` (its first :data:`SAMPLE` bytes) is mostly indentation."""
    sample = data[:SAMPLE]
    spaces = sample.count(b" ") + sample.count(b"\n") + sample.count(b"\t") + sample.count(b"\r")
    return spaces > _SPACE_SHARE * len(sample)


def indented_list(head: bytes) -> bool:
    """Whether a text that begins with ``head`` may be an indented JSON list: read
    compacted (:func:`read_list` does so itself for a text in memory)."""
    return head[:64].lstrip()[:1] == b"{" and indented(head)


class NotJSON(Exception):
    """An item msgspec cannot decode: the text is no JSON after all."""


@dataclass(frozen=True)
class ListText:
    """A JSON list taken apart by :func:`read_list`."""

    envelope: dict[str, Any]  # the list's own fields, "items" empty
    data: bytes
    spans: list[tuple[int, int]]  # where each item's text is
    item_kind: str | None  # a typed list's kind of item: each item is tried as one

    def __len__(self) -> int:
        return len(self.spans)

    def item(self, j: int) -> tuple[Any, msgspec.Raw]:
        """Item ``j`` decoded (a JSONSlice or JSONClaim when the Structs take it, else
        as a dict) and its text; :class:`NotJSON` if msgspec cannot decode it."""
        start, end = self.spans[j]
        text = msgspec.Raw(memoryview(self.data)[start:end])
        try:
            for kind, (marker, decoder) in _KINDS.items():
                if self.item_kind == kind or (
                    self.item_kind is None and self.data.find(marker, start, end) >= 0
                ):
                    try:
                        return decoder.decode(text), text
                    except msgspec.ValidationError:  # not of the shape the Structs take
                        pass
            return json_as_go.decode(text), text
        # DecodeError by name: it is a ValueError only from msgspec 0.21 on.
        except (msgspec.DecodeError, ValueError, RecursionError) as exc:
            raise NotJSON(str(exc)) from exc

    def decodes_from(self, j: int) -> bool:
        """Whether every item from ``j`` on decodes (the rest of the text is JSON)."""
        try:
            for k in range(j, len(self.spans)):
                self.item(k)
        except NotJSON:
            return False
        return True


def read_list(text: str | bytes, limits: Limits) -> ListText | None:
    """A JSON ``List``, ``ResourceSliceList`` or ``ResourceClaimList`` text within
    ``limits``, taken apart; None for any other text."""
    if text[:64].lstrip()[:1] not in ("{", b"{"):
        return None
    if limits.max_depth > DEFAULT_MAX_DEPTH:
        # Deeper texts may be more than msgspec follows when it decodes them whole (as
        # the ordinary path and a slice's raw do) but not where it skips: not here.
        return None
    if isinstance(text, str):
        try:
            data = text.encode("utf-8")
        except UnicodeEncodeError:
            return None
    else:
        data = text
    if indented(data):
        compact = json_compact(data)
        if compact is None:
            return None  # whitespace inside a token: no JSON (the ordinary parse says so)
        data = compact
    found = json_list_spans(data, limits.max_depth)
    if found is None:
        return None
    items_open, items_close, spans = found
    try:
        envelope = msgspec.json.decode(data[: items_open + 1] + data[items_close:])
    except (msgspec.DecodeError, ValueError, RecursionError):
        return None
    kind = envelope.get("kind") if type(envelope) is dict else None
    if type(kind) is not str or kind not in _LISTS:
        return None
    return ListText(envelope, data, spans, _LISTS[kind])
