"""CEL string and bytes literals: their values, unescaped as cel-go's parser unescapes
them (in its unescape's own words when an escape the lexer let through names no value)."""

from __future__ import annotations

from typing import Any

_SIMPLE_ESCAPES = {
    "a": "\a",
    "b": "\b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "v": "\v",
    '"': '"',
    "'": "'",
    "\\": "\\",
    "?": "?",
    "`": "`",
}


def literal_value(text: str, as_bytes: bool) -> Any:
    """The value of a literal's text (after a bytes literal's ``b``): an optional ``r``,
    then a quoted body; a ValueError in cel-go's words when an escape names no value."""
    raw = text[0] in "rR"
    if raw:
        text = text[1:]
    quote = text[:3] if text[:3] in ('"""', "'''") else text[0]
    body = text[len(quote) : -len(quote)]
    if raw:
        return body.encode("utf-8") if as_bytes else body
    return _unescape(body, as_bytes)


_DIGITS = {8: "01234567", 16: "0123456789abcdefABCDEF"}


def _digits(body: str, start: int, width: int, base: int, error: str) -> int:
    """The number the ``width`` digits of ``base`` at ``start`` write; ValueError(error)
    when there are fewer, or one is not such a digit."""
    digits = body[start : start + width]
    if len(digits) != width or not all(c in _DIGITS[base] for c in digits):
        raise ValueError(error)
    return int(digits, base)


def _unescape(body: str, as_bytes: bool) -> Any:
    """CEL string escapes; hex/octal escapes are bytes in bytes literals, code points else."""
    out_bytes = bytearray()
    out: list[str] = []

    def emit_text(s: str) -> None:
        if as_bytes:
            out_bytes.extend(s.encode("utf-8"))
        else:
            out.append(s)

    def emit_code(value: int, is_byte: bool) -> None:
        if as_bytes and is_byte:
            out_bytes.append(value)
        else:
            if 0xD800 <= value <= 0xDFFF or value > 0x10FFFF:
                raise ValueError("invalid unicode code point")
            emit_text(chr(value))

    i = 0
    n = len(body)
    while i < n:
        ch = body[i]
        if ch != "\\":
            emit_text(ch)
            i += 1
            continue
        if i + 1 >= n:
            raise ValueError("invalid escape sequence")
        esc = body[i + 1]
        if esc in _SIMPLE_ESCAPES:
            emit_text(_SIMPLE_ESCAPES[esc])
            i += 2
        elif esc in "xX":
            emit_code(_digits(body, i + 2, 2, 16, "invalid hex escape"), True)
            i += 4
        elif esc in "uU":
            if as_bytes:  # code points have no place among bytes
                raise ValueError("unable to unescape string")
            width = 4 if esc == "u" else 8
            emit_code(_digits(body, i + 2, width, 16, "invalid unicode escape"), False)
            i += 2 + width
        elif esc in "0123":
            emit_code(_digits(body, i + 1, 3, 8, "invalid octal escape"), True)
            i += 4
        elif esc == "\n":
            raise ValueError("invalid escape sequence")
        else:
            raise ValueError(f"invalid escape sequence '\\{esc}'")
    if as_bytes:
        return bytes(out_bytes)
    return "".join(out)
