"""Kubernetes' ``format`` CEL library (kubernetes/apiserver ``pkg/cel/library/format.go``).

``format.<name>()`` returns a named format (type ``kubernetes.NamedFormat``),
``format.named(name)`` the same as an optional (none for an unknown name), and
``<format>.validate(s)`` an optional list of messages: none when ``s`` is valid, else the
messages Kubernetes' validation functions give -- apimachinery's ``NameIsDNSLabel`` and
friends for the name formats, ``IsQualifiedName``, ``IsValidLabelValue``, Go's
``url.ParseRequestURI`` error for ``uri``, and kube-openapi strfmt's checks (with the
library's fixed messages) for ``uuid``, ``byte``, ``date`` and ``datetime``.
Versions: apimachinery and kube-openapi as pinned by the DRA allocator upstream.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from draspeed.cel.functions import declare, register_guarded
from draspeed.cel.timestamps import _days_in
from draspeed.cel.values import (
    OPTIONAL_NONE,
    Optional,
    no_such_overload,
    register_opaque,
    register_unhashable,
)
from draspeed.golang import go_quote, regex_error

NAMED_FORMAT_TYPE = "kubernetes.NamedFormat"

# ---- apimachinery validation messages --------------------------------------------------

_DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN_FMT = _DNS1123_LABEL_FMT + "(\\." + _DNS1123_LABEL_FMT + ")*"
_DNS1035_LABEL_FMT = "[a-z]([-a-z0-9]*[a-z0-9])?"
_LABEL_KEY_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_LABEL_VALUE_FMT = "(" + _LABEL_KEY_FMT + ")?"

_DNS1123_LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character"
)
_DNS1123_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
    "'-' or '.', and must start and end with an alphanumeric character"
)
_DNS1035_LABEL_MSG = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with "
    "an alphabetic character, and end with an alphanumeric character"
)
_LABEL_KEY_MSG = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with "
    "an alphanumeric character"
)
_LABEL_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' "
    "or '.', and must start and end with an alphanumeric character"
)


def _matches(fmt: str) -> Callable[[str], bool]:
    compiled = re.compile(fmt, re.ASCII)
    return lambda value: compiled.fullmatch(value) is not None


_is_dns1123_label = _matches(_DNS1123_LABEL_FMT)
_is_dns1123_subdomain = _matches(_DNS1123_SUBDOMAIN_FMT)
_is_dns1035_label = _matches(_DNS1035_LABEL_FMT)
_is_label_key = _matches(_LABEL_KEY_FMT)
_is_label_value = _matches(_LABEL_VALUE_FMT)


def _byte_len(value: str) -> int:
    return len(value.encode("utf-8"))


def is_dns1123_label(value: str) -> list[str]:
    errs = []
    if _byte_len(value) > 63:
        errs.append("must be no more than 63 characters")
    if not _is_dns1123_label(value):
        if _is_dns1123_subdomain(value):
            errs.append("must not contain dots")
        else:
            errs.append(regex_error(_DNS1123_LABEL_MSG, _DNS1123_LABEL_FMT, "my-name", "123-abc"))
    return errs


def is_dns1123_subdomain(value: str, unit: str = "characters") -> list[str]:
    """IsDNS1123Subdomain; the label-key prefix check (the ``content`` package's copy)
    counts the length limit in bytes."""
    errs = []
    if _byte_len(value) > 253:
        errs.append(f"must be no more than 253 {unit}")
    if not _is_dns1123_subdomain(value):
        errs.append(regex_error(_DNS1123_SUBDOMAIN_MSG, _DNS1123_SUBDOMAIN_FMT, "example.com"))
    return errs


def is_dns1035_label(value: str) -> list[str]:
    errs = []
    if _byte_len(value) > 63:
        errs.append("must be no more than 63 characters")
    if not _is_dns1035_label(value):
        errs.append(regex_error(_DNS1035_LABEL_MSG, _DNS1035_LABEL_FMT, "my-name", "abc-123"))
    return errs


def is_qualified_name(value: str) -> list[str]:
    """IsQualifiedName (apimachinery's content.IsLabelKey)."""
    errs: list[str] = []
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            errs += ["prefix part " + m for m in is_dns1123_subdomain(prefix, "bytes")]
    else:
        return [
            "a valid label key "
            + regex_error(_LABEL_KEY_MSG, _LABEL_KEY_FMT, "MyName", "my.name", "123-abc")
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    if not name:
        errs.append("name part must be non-empty")
    elif _byte_len(name) > 63:
        errs.append("name part must be no more than 63 bytes")
    if not _is_label_key(name):
        errs.append(
            "name part "
            + regex_error(_LABEL_KEY_MSG, _LABEL_KEY_FMT, "MyName", "my.name", "123-abc")
        )
    return errs


def is_label_value(value: str) -> list[str]:
    """IsValidLabelValue (apimachinery's content.IsLabelValue)."""
    errs = []
    if _byte_len(value) > 63:
        errs.append("must be no more than 63 bytes")
    if not _is_label_value(value):
        errs.append(regex_error(_LABEL_VALUE_MSG, _LABEL_VALUE_FMT, "MyValue", "my_value", "12345"))
    return errs


def _mask_trailing_dash(name: str) -> str:
    """apimachinery's maskTrailingDash: a generateName prefix may end in '-'. (Go slices
    bytes: the byte before the dash goes too.)"""
    data = name.encode("utf-8")
    if len(data) > 1 and data.endswith(b"-"):
        return (data[:-2] + b"a").decode("utf-8", "replace")
    return name


def _prefixed(check: Callable[[str], list[str]]) -> Callable[[str], list[str]]:
    return lambda value: check(_mask_trailing_dash(value))


# ---- Go's url.ParseRequestURI -------------------------------------------------------------


class _URLError(Exception):
    pass


def _is_hex(c: int) -> bool:
    return 48 <= c <= 57 or 97 <= c <= 102 or 65 <= c <= 70


def _unhex(c: int) -> int:
    if 48 <= c <= 57:
        return c - 48
    if 97 <= c <= 102:
        return c - 87
    return c - 55


_HOST_SUB_DELIMS = frozenset(b"!$&'()*+,;=:[]<>\"")


def _should_escape_host(c: int) -> bool:
    """net/url's shouldEscape in host (and zone) mode."""
    if 97 <= c <= 122 or 65 <= c <= 90 or 48 <= c <= 57:
        return False
    return c not in _HOST_SUB_DELIMS and c not in b"-_.~"


def _unescape(s: bytes, mode: str) -> None:
    """net/url's unescape, for its errors only (the decoded text is not needed)."""
    i = 0
    while i < len(s):
        c = s[i]
        if c == 37:  # '%'
            if i + 2 >= len(s) or not _is_hex(s[i + 1]) or not _is_hex(s[i + 2]):
                bad = s[i : i + 3].decode("utf-8", "replace")
                raise _URLError(f"invalid URL escape {go_quote(bad)}")
            if mode == "host" and _unhex(s[i + 1]) < 8 and s[i : i + 3] != b"%25":
                raise _URLError(f"invalid URL escape {go_quote(s[i : i + 3].decode())}")
            if mode == "zone":
                v = _unhex(s[i + 1]) << 4 | _unhex(s[i + 2])
                if s[i : i + 3] != b"%25" and v != 32 and _should_escape_host(v):
                    raise _URLError(f"invalid URL escape {go_quote(s[i : i + 3].decode())}")
            i += 3
            continue
        if mode in ("host", "zone") and c < 0x80 and _should_escape_host(c):
            raise _URLError(f"invalid character {go_quote(chr(c))} in host name")
        i += 1


def _valid_optional_port(port: bytes) -> bool:
    if not port:
        return True
    return port[:1] == b":" and all(48 <= b <= 57 for b in port[1:])


def _parse_host(host: bytes) -> None:
    if host.startswith(b"["):
        i = host.rfind(b"]")
        if i < 0:
            raise _URLError("missing ']' in host")
        colon_port = host[i + 1 :]
        if not _valid_optional_port(colon_port):
            raise _URLError(
                f"invalid port {go_quote(colon_port.decode('utf-8', 'replace'))} after host"
            )
        zone = host[:i].find(b"%25")
        if zone >= 0:
            _unescape(host[:zone], "host")
            _unescape(host[zone:i], "zone")
            _unescape(host[i:], "host")
            return
    else:
        i = host.rfind(b":")
        if i != -1 and not _valid_optional_port(host[i:]):
            shown = host[i:].decode("utf-8", "replace")
            raise _URLError(f"invalid port {go_quote(shown)} after host")
    _unescape(host, "host")


_USERINFO = frozenset(b"-._:~!$&'()*+,;=%@")


def _valid_userinfo(s: str) -> bool:
    return all(c.isascii() and (c.isalnum() or ord(c) in _USERINFO) for c in s)


def _parse_authority(authority: bytes) -> None:
    i = authority.rfind(b"@")
    _parse_host(authority[i + 1 :] if i >= 0 else authority)
    if i < 0:
        return
    userinfo = authority[:i]
    if not _valid_userinfo(userinfo.decode("utf-8", "replace")):
        raise _URLError("net/url: invalid userinfo")
    for part in userinfo.split(b":", 1):
        _unescape(part, "user")


def parse_request_uri_error(raw: str) -> str | None:
    """The error text of Go's ``url.ParseRequestURI(raw)``, or None if it parses."""
    try:
        _parse_request_uri(raw.encode("utf-8"))
    except _URLError as exc:
        return f"parse {go_quote(raw)}: {exc}"
    return None


def _parse_request_uri(raw: bytes) -> None:
    if any(b < 32 or b == 0x7F for b in raw):
        raise _URLError("net/url: invalid control character in URL")
    if not raw:
        raise _URLError("empty url")
    if raw == b"*":
        return
    scheme, rest = b"", raw
    for i, c in enumerate(raw):
        if 97 <= c <= 122 or 65 <= c <= 90:
            continue
        if 48 <= c <= 57 or c in b"+-.":
            if i == 0:
                break
            continue
        if c == 58:  # ':'
            if i == 0:
                raise _URLError("missing protocol scheme")
            scheme, rest = raw[:i], raw[i + 1 :]
        break
    rest = rest.split(b"?", 1)[0]  # the query (Go also notes a lone trailing '?')
    if not rest.startswith(b"/"):
        if scheme:
            return  # opaque
        raise _URLError("invalid URI for request")
    if scheme and rest.startswith(b"//"):
        authority, rest = rest[2:], b""
        slash = authority.find(b"/")
        if slash >= 0:
            authority, rest = authority[:slash], authority[slash:]
        _parse_authority(authority)
    _unescape(rest, "path")


# ---- kube-openapi strfmt -------------------------------------------------------------

_UUID = re.compile(
    "^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}\\Z", re.I | re.ASCII
)
_BASE64 = re.compile(
    "^(?:[A-Za-z0-9+\\/]{4})*(?:[A-Za-z0-9+\\/]{2}==|[A-Za-z0-9+\\/]{3}=|[A-Za-z0-9+\\/]{4})\\Z"
)
_DATE = re.compile("([0-9]{4})-([0-9]{2})-([0-9]{2})", re.ASCII)
_TIME = re.compile(
    "^([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))\\Z", re.ASCII
)


def is_date(value: str) -> bool:
    """strfmt IsDate: Go's ``time.Parse("2006-01-02", value)`` succeeds."""
    m = _DATE.fullmatch(value)
    if m is None:
        return False
    year, month, day = (int(g) for g in m.groups())
    return 1 <= month <= 12 and 1 <= day <= _days_in(month, year)


def is_date_time(value: str) -> bool:
    """strfmt IsDateTime (only the part between the first two 't's is checked as time)."""
    if len(value.encode("utf-8")) < 4:
        return False
    parts = value.lower().split("t")
    if len(parts) < 2 or not is_date(parts[0]):
        return False
    m = _TIME.match(parts[1])
    if m is None:
        return False
    return m.group(1) <= "23" and m.group(2) <= "59" and m.group(3) <= "59"


def _strfmt(check: Callable[[str], bool], message: str) -> Callable[[str], list[str]]:
    return lambda value: [] if check(value) else [message]


def _uri(value: str) -> list[str]:
    error = parse_request_uri_error(value)
    return [] if error is None else [error]


# ---- the library -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class NamedFormat:
    """A ``kubernetes.NamedFormat`` value; ``name`` is the Go struct's Name field."""

    name: str
    check: Callable[[str], list[str]]
    max_regex_size: int

    cel_type_name = NAMED_FORMAT_TYPE


register_opaque(NamedFormat, lambda a, b: a.name == b.name)
register_unhashable(NamedFormat)

# MaxRegexSize: the figures format.go gives each format, for the cost of validate().
_UUID_PATTERN_LEN = len("(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$")
_DATE_TIME_PATTERN_LEN = len(
    "^([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))$"
)

FORMATS: dict[str, NamedFormat] = {
    "dns1123Label": NamedFormat("DNS1123Label", is_dns1123_label, 30),
    "dns1123Subdomain": NamedFormat("DNS1123Subdomain", is_dns1123_subdomain, 60),
    "dns1035Label": NamedFormat("DNS1035Label", is_dns1035_label, 30),
    "qualifiedName": NamedFormat("QualifiedName", is_qualified_name, 60),
    "dns1123LabelPrefix": NamedFormat("DNS1123LabelPrefix", _prefixed(is_dns1123_label), 30),
    "dns1123SubdomainPrefix": NamedFormat(
        "DNS1123SubdomainPrefix", _prefixed(is_dns1123_subdomain), 60
    ),
    "dns1035LabelPrefix": NamedFormat("DNS1035LabelPrefix", _prefixed(is_dns1035_label), 30),
    "labelValue": NamedFormat("LabelValue", is_label_value, 40),
    "uri": NamedFormat("URI", _uri, 1103),
    "uuid": NamedFormat(
        "uuid",
        _strfmt(lambda v: _UUID.match(v) is not None, "does not match the UUID format"),
        _UUID_PATTERN_LEN,
    ),
    "byte": NamedFormat(
        "byte", _strfmt(lambda v: _BASE64.match(v) is not None, "invalid base64"), 84
    ),
    "date": NamedFormat("date", _strfmt(is_date, "invalid date"), _DATE_TIME_PATTERN_LEN),
    "datetime": NamedFormat(
        "datetime", _strfmt(is_date_time, "invalid datetime"), _DATE_TIME_PATTERN_LEN
    ),
}


def format_named(name: Any) -> Optional:
    if type(name) is not str:
        raise no_such_overload()
    found = FORMATS.get(name)
    return OPTIONAL_NONE if found is None else Optional(True, found)


def validate(fmt: Any, value: Any) -> Optional:
    if type(fmt) is not NamedFormat or type(value) is not str:
        raise no_such_overload()
    messages = fmt.check(value)
    return Optional(True, list(messages)) if messages else OPTIONAL_NONE


def _constant(fmt: NamedFormat) -> Callable[[], NamedFormat]:
    return lambda: fmt


def _register() -> None:
    for name, fmt in FORMATS.items():
        declare(f"g format.{name}() -> NamedFormat", _constant(fmt))
    declare("g format.named(string) -> opt(NamedFormat)", format_named)
    declare("m NamedFormat validate(string) -> opt(list(string))", validate)


register_guarded(_register)
