"""How Go prints strings, for error texts that must match upstream's byte for byte, and
how it parses the numbers and durations CEL converts from text."""

from __future__ import annotations

import codecs
import json
import math
import re
from typing import Final

# strconv.Quote's single-character escapes (CEL's strings.quote uses the same table).
GO_ESCAPES: Final = {
    "\a": "\\a",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
    "\v": "\\v",
    "\\": "\\\\",
    '"': '\\"',
}


def go_quote(text: str) -> str:
    """Go ``%q`` / ``strconv.Quote`` of a string."""
    out = []
    for c in text:
        if c in GO_ESCAPES:
            out.append(GO_ESCAPES[c])
        elif c.isprintable():
            out.append(c)
        elif ord(c) < 0x80:
            out.append(f"\\x{ord(c):02x}")
        elif ord(c) <= 0xFFFF:
            out.append(f"\\u{ord(c):04x}")
        else:
            out.append(f"\\U{ord(c):08x}")
    return '"' + "".join(out) + '"'


def regex_error(message: str, regex: str, *examples: str) -> str:
    """apimachinery's ``validation.RegexError``: the examples each quoted and followed by
    a comma, joined by " or " (so two spaces before each "or")."""
    if not examples:
        return f"{message} (regex used for validation is '{regex}')"
    shown = " or ".join(f"'{example}', " for example in examples)
    return f"{message} (e.g. {shown}regex used for validation is '{regex}')"


def go_string(text: str) -> str:
    """``text`` as a Go string holds it: a surrogate that pairs with the next one is that
    pair's character, one that does not is U+FFFD (as Go's JSON decoding makes of a
    ``\\ud800`` escape). Only a str built in Python, or read from such an escape by
    Python, holds such code points; text read from a file cannot."""
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def utf8_as_go(data: bytes) -> str:
    """The text of ``data``, each byte that is no part of valid UTF-8 read as U+FFFD, as
    Go's JSON decoding reads strings (one U+FFFD per byte: the first two bytes of a
    three-byte character alone are two). Python's decoder reports maximal runs of
    such bytes, never one that a valid character uses, so one U+FFFD per byte of a
    run is Go's count."""
    return data.decode("utf-8", _GO_REPLACE)


def _replace_each_byte(exc: UnicodeError) -> tuple[str, int]:
    assert isinstance(exc, UnicodeDecodeError)
    return "\ufffd" * (exc.end - exc.start), exc.end


_GO_REPLACE: Final = "draspeed.go-replace"
codecs.register_error(_GO_REPLACE, _replace_each_byte)


def go_json(value: object) -> str:
    """Compact JSON as Go's ``json.Marshal`` writes it: HTML characters and the two
    line separators escaped."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    for c, escaped in _JSON_ESCAPES:
        if c in text:
            text = text.replace(c, escaped)
    return text


_JSON_ESCAPES: Final = (
    ("<", "\\u003c"),
    (">", "\\u003e"),
    ("&", "\\u0026"),
    ("\u2028", "\\u2028"),
    ("\u2029", "\\u2029"),
)


# time.ParseDuration's units, in nanoseconds.
_DURATION_UNITS: Final = {
    "ns": 1,
    "us": 1_000,
    "\u00b5s": 1_000,  # micro sign
    "\u03bcs": 1_000,  # Greek mu
    "ms": 1_000_000,
    "s": 1_000_000_000,
    "m": 60_000_000_000,
    "h": 3_600_000_000_000,
}
_MAX_DURATION: Final = (1 << 63) - 1


class DurationError(ValueError):
    """``time.ParseDuration``'s error (``time: invalid duration "x"`` ...)."""


def parse_go_duration(text: str) -> int:
    """Go's ``time.ParseDuration``: ``1h30m``, ``1.5s``, ``500ms``, ``-2m``, ``0`` →
    nanoseconds; raises DurationError with Go's message otherwise."""
    quoted = go_quote(text)
    invalid = DurationError(f"time: invalid duration {quoted}")
    s = text
    negative = False
    if s[:1] in ("-", "+"):
        negative = s[0] == "-"
        s = s[1:]
    if s == "0":
        return 0
    if not s:
        raise invalid
    total = 0
    while s:
        if not (s[0] == "." or (s[0].isascii() and s[0].isdigit())):
            raise invalid
        digits = len(s) - len(s.lstrip("0123456789"))
        whole, s = s[:digits], s[digits:]
        fraction = ""
        if s[:1] == ".":
            s = s[1:]
            count = len(s) - len(s.lstrip("0123456789"))
            fraction, s = s[:count], s[count:]
            if not whole and not fraction:
                raise invalid
        elif not whole:
            raise invalid
        unit_end = 0
        while unit_end < len(s) and not (s[unit_end] == "." or s[unit_end] in "0123456789"):
            unit_end += 1
        if unit_end == 0:
            raise DurationError(f"time: missing unit in duration {quoted}")
        unit, s = s[:unit_end], s[unit_end:]
        scale = _DURATION_UNITS.get(unit)
        if scale is None:
            raise DurationError(f"time: unknown unit {go_quote(unit)} in duration {quoted}")
        value = int(whole or "0") * scale
        if fraction:
            # Go truncates the fraction's contribution to whole nanoseconds.
            value += int(fraction) * scale // 10 ** len(fraction)
        total += value
        if total > _MAX_DURATION + (1 if negative else 0):
            raise invalid
    return -total if negative else total


# strconv.ParseFloat's syntax, underscores aside (checked by _underscores_ok): a decimal
# mantissa with at most one point and an optional exponent, or a hexadecimal one with a
# required binary exponent.
_DECIMAL_FLOAT = re.compile(r"[+-]?(?:[0-9_]+\.?[0-9_]*|\.[0-9_]+)(?:[eE][+-]?[0-9_]+)?\Z")
_HEX_FLOAT = re.compile(
    r"[+-]?0[xX](?:[0-9a-fA-F_]+\.?[0-9a-fA-F_]*|\.[0-9a-fA-F_]+)[pP][+-]?[0-9_]+\Z"
)


def parse_go_float(text: str) -> float | None:
    """Go's ``strconv.ParseFloat(text, 64)``: the value, or None for its syntax and
    range errors (a finite value beyond float64 is ErrRange; one below rounds to 0)."""
    lower = text.lower()
    unsigned = lower[1:] if lower[:1] in ("+", "-") else lower
    if unsigned in ("inf", "infinity"):
        return -math.inf if lower[0] == "-" else math.inf
    if lower == "nan":  # no sign before it
        return math.nan
    hexadecimal = _HEX_FLOAT.match(text) is not None
    if not (hexadecimal or _DECIMAL_FLOAT.match(text)) or not _underscores_ok(text):
        return None
    plain = text.replace("_", "")
    try:
        value = float.fromhex(plain) if hexadecimal else float(plain)
    except OverflowError:
        return None
    return None if math.isinf(value) else value


def _underscores_ok(text: str) -> bool:
    """Go's underscoreOK: an underscore only between digits (a base prefix counts as
    one), and at least one digit in the mantissa."""
    body = text[1:] if text[:1] in ("+", "-") else text
    saw = "^"  # start; "0" a digit (or base prefix); "_" an underscore; "!" anything else
    start = 0
    hexadecimal = body[:2].lower() == "0x"
    if hexadecimal:
        saw, start = "0", 2
    digits = "0123456789abcdefABCDEF" if hexadecimal else "0123456789"
    mantissa_digit = False
    in_exponent = False
    for c in body[start:]:
        if c in digits and not (in_exponent and c not in "0123456789"):
            saw = "0"
            mantissa_digit = mantissa_digit or not in_exponent
        elif c == "_":
            if saw != "0":
                return False
            saw = "_"
        else:
            if saw == "_":
                return False
            saw = "!"
            if c in "eEpP" and not (hexadecimal and c in "eE"):
                in_exponent = True
    return saw != "_" and mantissa_digit
