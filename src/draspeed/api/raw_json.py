"""Free-form JSON values (a RawExtension: opaque driver parameters) as the API server
receives them.

``kubectl`` sends an object as compact JSON (Go's ``json.Marshal``), so the API server
measures opaque parameters in those bytes (at most 10 KiB on create) and cannot be
sent what JSON does not hold: NaN and infinities (YAML's ``.nan``, ``.inf``), values
of other types, a value that contains itself (possible in Python objects only).
:func:`encoded_length` is that length, or :class:`NotJSON` naming the part that is
no JSON value.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

# Collections inside each other: far beyond what any text may nest (see api.text).
_MAX_DEPTH = 10_000

# Characters Go's encoder writes escaped, by what the escape adds to their UTF-8 length:
# '"' and '\\' one byte each, HTML-sensitive ones as \u003c (+5), the two line and
# paragraph separators as \u2028 (+3), control characters as \n (+1) or \u0001 (+5).
_CONTROL = re.compile("[\x00-\x1f]")
_SHORT_ESCAPES = frozenset("\b\f\n\r\t")


class NotJSON(Exception):
    """A value JSON cannot hold; ``path`` is where, relative to the value."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(message)
        self.path = path
        self.message = message


def encoded_length(value: Any) -> int:
    """The bytes of ``value`` as compact JSON written by Go's ``json.Marshal``."""
    return _length(value, "", set(), 0)


def _length(value: Any, path: str, active: set[int], depth: int) -> int:
    if value is None:
        return 4
    if value is True:
        return 4
    if value is False:
        return 5
    if isinstance(value, str):
        return _string_length(value)
    if isinstance(value, int):
        return len(str(value))
    if isinstance(value, float):
        return len(go_float(value, path))
    if isinstance(value, (Mapping, list, tuple)):
        if id(value) in active:
            raise NotJSON(path, "a value that contains itself cannot be written as JSON")
        if depth >= _MAX_DEPTH:
            raise NotJSON(path, f"collections nest more than {_MAX_DEPTH} levels deep")
        active.add(id(value))
        try:
            if isinstance(value, Mapping):
                total = 2 + max(len(value) - 1, 0)  # braces, commas
                for key, item in value.items():
                    name = _key(key, path)
                    total += _string_length(name) + 1  # the key and its colon
                    total += _length(item, _join(path, name), active, depth + 1)
            else:
                total = 2 + max(len(value) - 1, 0)
                for i, item in enumerate(value):
                    total += _length(item, f"{path}[{i}]", active, depth + 1)
        finally:
            active.discard(id(value))
        return total
    raise NotJSON(path, f"json: unsupported type: {type(value).__name__}")


def _key(key: Any, path: str) -> str:
    """A mapping key as it becomes a JSON key (YAML may have made it a number)."""
    if isinstance(key, str):
        return key
    if isinstance(key, bool):
        return "true" if key else "false"
    if isinstance(key, int):
        return str(key)
    if isinstance(key, float):
        return go_float(key, path)
    raise NotJSON(path, f"json: unsupported type: {type(key).__name__} as a key")


def _string_length(s: str) -> int:
    n = len(s) if s.isascii() else len(s.encode("utf-8", "surrogatepass"))
    n += 2 + s.count('"') + s.count("\\")
    n += 5 * (s.count("<") + s.count(">") + s.count("&"))
    if not s.isascii():
        n += 3 * (s.count("\u2028") + s.count("\u2029"))
    for c in _CONTROL.findall(s):
        n += 1 if c in _SHORT_ESCAPES else 5
    return n


def go_float(value: float, path: str = "") -> str:
    """A float as Go's JSON encoder writes it (NaN and infinities: :class:`NotJSON`)."""
    if math.isnan(value) or math.isinf(value):
        shown = "NaN" if math.isnan(value) else ("+Inf" if value > 0 else "-Inf")
        raise NotJSON(path, f"json: unsupported value: {shown}")
    shortest = repr(value)  # the shortest digits that read back the same, as Go's
    magnitude = abs(value)
    if magnitude != 0 and (magnitude < 1e-6 or magnitude >= 1e21):
        # Exponent form, with a two-digit negative exponent shortened: 1e-07 -> 1e-7.
        mantissa, _, exponent = shortest.partition("e")
        sign, digits = exponent[0], exponent[1:].lstrip("0") or "0"
        if sign == "+" and len(digits) < 2:
            digits = digits.zfill(2)
        return f"{mantissa.removesuffix('.0')}e{sign}{digits}"
    text = format(Decimal(shortest).normalize(), "f")
    return text


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key
