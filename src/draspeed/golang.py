"""How Go prints strings, for error texts that must match upstream's byte for byte."""

from __future__ import annotations

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
