"""JSON text read as Go's ``encoding/json`` reads it, where msgspec reads it otherwise.

- **Numbers with a fraction or an exponent keep their text** (:class:`NumberText`). Go
  reads a ``resource.Quantity`` from a bare number's own text (``1e3`` is the quantity
  ``1e3``, ``0.00001`` is ``10u``), while a float keeps only its value (``1000.0``;
  ``1e-05``). A float read from YAML, or put in a dict by Python code, is written as
  Python's JSON encoder writes it: its repr.
- **A ``\\u`` escape of a surrogate that is not half of a pair is U+FFFD**, as Go
  replaces it; msgspec refuses the whole text. Such a text is read again by Python's
  own JSON decoder (which keeps the lone surrogate) and its strings made Go's.
- **A byte that is no part of valid UTF-8 is U+FFFD**, one per byte, as Go reads
  strings (:func:`draspeed.golang.utf8_as_go`); msgspec refuses the text.

Everything else (syntax, nesting, repeated keys: the last value kept) is msgspec's,
which reads as Go does.
"""

from __future__ import annotations

import json
import re
from typing import Any

import msgspec

from draspeed import golang
from draspeed.golang import go_string


class NumberText(float):
    """A float that remembers the JSON text it was read from (``text``)."""

    __slots__ = ("text",)
    text: str

    def __new__(cls, value: float, text: str) -> NumberText:
        number = super().__new__(cls, value)
        number.text = text
        return number

    def __reduce__(self) -> tuple[Any, ...]:
        return (NumberText, (float(self), self.text))


def _from_json(text: str) -> NumberText:
    return NumberText(float(text), text)


# (msgspec hands the hook every number with a fraction or an exponent, as written.)
_DECODER: msgspec.json.Decoder[Any] = msgspec.json.Decoder(float_hook=_from_json)
# A \u escape of a surrogate (preceded by an even run of backslashes: an escape).
_SURROGATE_ESCAPE = re.compile(rb"(?<!\\)(?:\\\\)*\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def decode(data: str | bytes | msgspec.Raw) -> Any:
    """The JSON document ``data`` (text, or its bytes in any buffer: a list item's
    ``msgspec.Raw``; see the module docstring); msgspec's DecodeError if it is not one."""
    try:
        return _DECODER.decode(data)
    except msgspec.DecodeError as exc:
        raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else bytes(data)
        if not _SURROGATE_ESCAPE.search(raw):
            raise
        try:
            return decode_by_python(raw)
        except (ValueError, RecursionError):  # (UnicodeDecodeError, JSONDecodeError)
            raise exc from None  # msgspec's error stands


def decode_by_python(data: bytes) -> Any:
    """A text msgspec refused, read by Python's JSON decoder, numbers and strings as
    :func:`decode` makes them (the decoder's ValueError if it refuses the text too)."""
    doc = json.loads(golang.utf8_as_go(data), parse_float=_from_json, parse_constant=_refuse)
    return rewritten(doc, "")  # (JSON keys are strings: only surrogates change)


def _refuse(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")  # NaN and Infinity: Python's extension


class KeyProblem(ValueError):
    """A key Python's JSON encoder refuses (``path``: the mapping's field path)."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(path, message)


def rewritten(value: Any, path: str) -> Any:
    """``value`` as Go reads the JSON Python's encoder writes of it: keys that are not
    strings written as ``json.dumps`` writes them (``1`` is ``"1"``, ``True``
    ``"true"``, ``None`` ``"null"``, a float its repr), strings as Go holds them. The
    same object where nothing changes. :class:`KeyProblem` for a key of another type."""
    if type(value) is str:
        if value.isascii():
            return value
        converted = go_string(value)
        return value if converted == value else converted
    if type(value) is dict:
        copied: dict[Any, Any] = {}
        same = True
        for key, item in value.items():
            name = _json_key(key, path)
            new = rewritten(item, f"{path}.{name}" if path else name)
            same = same and name is key and new is item
            copied[name] = new
        return value if same and len(copied) == len(value) else copied
    if type(value) is list or type(value) is tuple:
        items = [rewritten(item, f"{path}[{i}]") for i, item in enumerate(value)]
        if all(a is b for a, b in zip(items, value, strict=True)):
            return value
        return items if type(value) is list else tuple(items)
    return value


def _json_key(key: Any, path: str) -> str:
    if type(key) is str:
        return rewritten(key, path)
    if key is True or key is False:
        return "true" if key else "false"
    if key is None:
        return "null"
    if isinstance(key, int):
        return int.__repr__(key)
    if isinstance(key, float):
        return json.dumps(key)  # (its repr; NaN and the infinities by name)
    raise KeyProblem(path, f"keys must be str, int, float, bool or None, not {type(key).__name__}")


def as_written(obj: Any) -> msgspec.Raw:
    """A msgspec encoder's ``enc_hook``: a :class:`NumberText` written as it was read
    (as Go writes a RawExtension, such as opaque parameters: its bytes as given)."""
    if type(obj) is NumberText:
        return msgspec.Raw(obj.text.encode())
    raise TypeError(f"Encoding objects of type {type(obj).__name__} is unsupported")


# JSON text of what draspeed read (documents, answers, the harness's case lines).
ENCODER = msgspec.json.Encoder(enc_hook=as_written)
