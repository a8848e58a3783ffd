"""Go's ``net/netip`` address and prefix parsing, for its error texts.

The Kubernetes ``ip`` and ``cidr`` CEL libraries parse with ``netip.ParseAddr`` and
``netip.ParsePrefix`` and pass Go's error on to the selector's error; Python's
``ipaddress`` accepts and refuses about the same strings but says nothing alike. So
the grammar is walked here as Go walks it, to fail where Go fails and with its words;
the address itself is then made by ``ipaddress`` (exactness of the *value* is not in
question, only of the refusal).
"""

from __future__ import annotations

import ipaddress

from draspeed.golang import go_quote

Address = ipaddress.IPv4Address | ipaddress.IPv6Address


class NetipError(ValueError):
    """Go's error text, whole (``ParseAddr("x"): ...`` or ``netip.ParsePrefix(...)``)."""


def _addr_error(text: str, message: str, at: str = "") -> NetipError:
    where = f" (at {go_quote(at)})" if at else ""
    return NetipError(f"ParseAddr({go_quote(text)}): {message}{where}")


def _ipv4_fields(text: str, part: str) -> None:
    """Check the dotted quad ``part`` of ``text`` as Go's parseIPv4Fields does."""
    value = digits = fields = 0
    for i, c in enumerate(part):
        if "0" <= c <= "9":
            if digits == 1 and value == 0:
                raise _addr_error(text, "IPv4 field has octet with leading zero")
            value = value * 10 + ord(c) - 48
            digits += 1
            if value > 255:
                raise _addr_error(text, "IPv4 field has value >255")
        elif c == ".":
            if i == 0 or i == len(part) - 1 or part[i - 1] == ".":
                raise _addr_error(text, "IPv4 field must have at least one digit", part[i:])
            if fields == 3:
                raise _addr_error(text, "IPv4 address too long")
            fields += 1
            value = digits = 0
        else:
            raise _addr_error(text, "unexpected character", part[i:])
    if fields < 3:
        raise _addr_error(text, "IPv4 address too short")


def _ipv6(text: str) -> tuple[Address, str]:
    """Check an IPv6 address (with an optional zone) as Go's parseIPv6 does."""
    s, zone = text, ""
    if "%" in s:
        s, zone = s.split("%", 1)
        if not zone:
            raise _addr_error(text, "zone must be a non-empty string")
    groups = 0  # 16-bit groups read
    ellipsis = False
    if s.startswith("::"):
        ellipsis = True
        s = s[2:]
        if not s:
            return ipaddress.IPv6Address("::"), zone
    while groups < 8:
        n = 0
        value = 0
        while n < len(s) and s[n] in "0123456789abcdefABCDEF":
            value = value * 16 + int(s[n], 16)
            n += 1
            if n > 4:
                raise _addr_error(text, "each group must have 4 or less digits", s)
        if n == 0:
            raise _addr_error(text, "each colon-separated field must have at least one digit", s)
        if n < len(s) and s[n] == ".":
            if not ellipsis and groups != 6:
                raise _addr_error(
                    text, "embedded IPv4 address must replace the final 2 fields of the address", s
                )
            if groups + 2 > 8:
                raise _addr_error(
                    text,
                    "too many hex fields to fit an embedded IPv4 at the end of the address",
                    s,
                )
            _ipv4_fields(text, s)
            s = ""
            groups += 2
            break
        groups += 1
        s = s[n:]
        if not s:
            break
        if s[0] != ":":
            raise _addr_error(text, "unexpected character, want colon", s)
        if len(s) == 1:
            raise _addr_error(text, "colon must be followed by more characters", s)
        s = s[1:]
        if s[0] == ":":
            if ellipsis:
                raise _addr_error(text, "multiple :: in address", s)
            ellipsis = True
            s = s[1:]
            if not s:
                break
    if s:
        raise _addr_error(text, "trailing garbage after address", s)
    if groups < 8 and not ellipsis:
        raise _addr_error(text, "address string too short")
    if groups == 8 and ellipsis:
        raise _addr_error(text, "the :: must expand to at least one field of zeros", s)
    address = text.split("%", 1)[0]
    return ipaddress.IPv6Address(address), zone


def parse_addr(text: str) -> tuple[Address, str]:
    """``netip.ParseAddr``: the address and its zone (IPv6 only), or NetipError."""
    for c in text:
        if c == ".":
            _ipv4_fields(text, text)
            return ipaddress.IPv4Address(text), ""
        if c == ":":
            return _ipv6(text)
        if c == "%":
            raise _addr_error(text, "missing IPv6 address")
    raise _addr_error(text, "unable to parse IP")


def parse_prefix(text: str) -> tuple[Address, int]:
    """``netip.ParsePrefix``: the address and the prefix length, or NetipError."""

    def fail(message: str) -> NetipError:
        return NetipError(f"netip.ParsePrefix({go_quote(text)}): {message}")

    slash = text.rfind("/")
    if slash < 0:
        raise fail("no '/'")
    try:
        address, zone = parse_addr(text[:slash])
    except NetipError as exc:
        raise fail(str(exc)) from None
    if zone:
        raise fail("IPv6 zones cannot be present in a prefix")
    bits = text[slash + 1 :]
    if (len(bits) > 1 and not "1" <= bits[0] <= "9") or not _atoi_ok(bits):
        raise fail(f"bad bits after slash: {go_quote(bits)}")
    length = int(bits)
    if not 0 <= length <= address.max_prefixlen:
        raise fail("prefix length out of range")
    return address, length


def _atoi_ok(text: str) -> bool:
    """Whether Go's strconv.Atoi takes ``text`` (an optional sign, then digits)."""
    body = text[1:] if text[:1] in ("+", "-") else text
    return body.isdigit() and body.isascii()
