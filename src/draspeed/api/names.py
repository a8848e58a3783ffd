"""Name syntax of the Kubernetes API: DNS labels and subdomains, C identifiers,
qualified names of device attributes, label names and values, semantic versions.

Every ``check_*`` function returns ``None`` when the name is valid and otherwise the
message body of the error (see :mod:`draspeed.api.messages`), so callers decide which
object and field path to blame.
"""

from __future__ import annotations

import re

from draspeed.api import limits
from draspeed.api.messages import invalid, required, too_long
from draspeed.golang import regex_error

# DNS labels ("[a-z0-9]([-a-z0-9]*[a-z0-9])?") and subdomains (labels joined by dots) are
# checked with str methods, not a regex: every slice has unique object, pool and node
# names, and backtracking over "[-a-z0-9]*[a-z0-9]" costs more than the rest of the check.
_LABEL_CHARS = "abcdefghijklmnopqrstuvwxyz0123456789-"
_SUBDOMAIN_CHARS = _LABEL_CHARS + "."


def _is_dns_label(name: str) -> bool:
    """Lower case letters, digits and '-', starting and ending with a letter or digit."""
    return bool(name) and not name.strip(_LABEL_CHARS) and name[0] != "-" and name[-1] != "-"


def _is_dns_subdomain(name: str) -> bool:
    """DNS labels joined by single dots."""
    return (
        bool(name)
        and not name.strip(_SUBDOMAIN_CHARS)
        and name[0] not in "-."
        and name[-1] not in "-."
        and ".." not in name
        and "-." not in name
        and ".-" not in name
    )


_C_IDENTIFIER_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_LABEL_NAME_PART_RE = re.compile(r"(?:[A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")

# Semantic Versioning 2.0.0, as the API server checks version attributes: numeric parts
# without leading zeros, optional pre-release and build identifiers.
_NUMERIC = r"(?:0|[1-9][0-9]*)"
_PRERELEASE_ID = r"(?:0|[1-9][0-9]*|[0-9]*[A-Za-z-][0-9A-Za-z-]*)"
_BUILD_ID = r"[0-9A-Za-z-]+"
_SEMVER_RE = re.compile(
    rf"{_NUMERIC}\.{_NUMERIC}\.{_NUMERIC}"
    rf"(?:-{_PRERELEASE_ID}(?:\.{_PRERELEASE_ID})*)?"
    rf"(?:\+{_BUILD_ID}(?:\.{_BUILD_ID})*)?"
)

DNS_LABEL_MAX = 63
DNS_SUBDOMAIN_MAX = 253
LABEL_VALUE_MAX = 63

# apimachinery's messages (pkg/api/validate/content), byte for byte: a text, then the
# examples and the regex (``RegexError``: note the two spaces before each "or").
_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_SUBDOMAIN_FMT = _LABEL_FMT + r"(\." + _LABEL_FMT + ")*"
_LABEL_KEY_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"


_LABEL_DETAIL = regex_error(
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character",
    _LABEL_FMT,
    "my-name",
    "123-abc",
)
_SUBDOMAIN_DETAIL = regex_error(
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' "
    "or '.', and must start and end with an alphanumeric character",
    _SUBDOMAIN_FMT,
    "example.com",
)
_C_IDENTIFIER_DETAIL = regex_error(
    "a valid C identifier must start with alphabetic character or '_', followed by a string "
    "of alphanumeric characters or '_'",
    "[A-Za-z_][A-Za-z0-9_]*",
    "my_name",
    "MY_NAME",
    "MyName",
)
_LABEL_KEY_PART = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with "
    "an alphanumeric character"
)
_LABEL_KEY_DETAIL = regex_error(_LABEL_KEY_PART, _LABEL_KEY_FMT, "MyName", "my.name", "123-abc")
_LABEL_VALUE_DETAIL = regex_error(
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' "
    "or '.', and must start and end with an alphanumeric character",
    f"({_LABEL_KEY_FMT})?",
    "MyValue",
    "my_value",
    "12345",
)


def _byte_len(s: str) -> int:
    # Go measures strings in bytes; only non-ASCII text differs.
    return len(s) if s.isascii() else len(s.encode("utf-8"))


def _max_len(limit: int) -> str:
    return f"must be no more than {limit} bytes"


def dns_label_problem(name: str) -> str | None:
    """apimachinery's first IsDNS1123Label message for ``name``, or None."""
    if _byte_len(name) > DNS_LABEL_MAX:
        return _max_len(DNS_LABEL_MAX)
    if not _is_dns_label(name):
        return "must not contain dots" if _is_dns_subdomain(name) else _LABEL_DETAIL
    return None


def dns_subdomain_problem(name: str) -> str | None:
    """apimachinery's first IsDNS1123Subdomain message for ``name``, or None."""
    if _byte_len(name) > DNS_SUBDOMAIN_MAX:
        return _max_len(DNS_SUBDOMAIN_MAX)
    if not _is_dns_subdomain(name):
        return _SUBDOMAIN_DETAIL
    return None


def label_key_problem(key: str) -> str | None:
    """apimachinery's first IsLabelKey (IsQualifiedName) message for ``key``, or None."""
    parts = key.split("/")
    if len(parts) > 2:
        return (
            f"a valid label key {_LABEL_KEY_DETAIL} with an optional DNS subdomain prefix "
            "and '/' (e.g. 'example.com/MyName')"
        )
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            return "prefix part must be non-empty"
        problem = dns_subdomain_problem(prefix)
        if problem is not None:
            return f"prefix part {problem}"
    name = parts[-1]
    if not name:
        return "name part must be non-empty"
    if _byte_len(name) > DNS_LABEL_MAX:
        return f"name part {_max_len(DNS_LABEL_MAX)}"
    if _LABEL_NAME_PART_RE.fullmatch(name) is None:
        return f"name part {_LABEL_KEY_DETAIL}"
    return None


def check_dns_label(name: str) -> str | None:
    """Device names, request names, counter names, namespaces."""
    if not name:
        return required()
    problem = dns_label_problem(name)
    return None if problem is None else invalid(name, problem)


def check_dns_subdomain(name: str) -> str | None:
    """Object names, node names, device class names."""
    if dns_subdomain_ok(name):  # one compiled pass says it is certainly valid
        return None
    if not name:
        return required()
    problem = dns_subdomain_problem(name)
    return None if problem is None else invalid(name, problem)


def check_object_name(name: str) -> str | None:
    """``metadata.name`` of any object (a DNS subdomain, required)."""
    if not name:
        return required("name or generateName is required")
    return check_dns_subdomain(name)


def check_generate_name(prefix: str) -> str | None:
    """``metadata.generateName``: a DNS subdomain once a suffix is appended. As
    apimachinery checks it, a trailing '-' is masked first (the last two characters
    become one 'a'); the error shows the prefix as given."""
    masked = prefix[:-2] + "a" if len(prefix) > 1 and prefix.endswith("-") else prefix
    problem = dns_subdomain_problem(masked)
    return None if problem is None else invalid(prefix, problem)


# Finalizers the API server takes without a domain (core's standard finalizer names).
STANDARD_FINALIZERS = frozenset(("kubernetes", "orphan", "foregroundDeletion"))


def finalizer_problems(finalizers: list[str]) -> list[str]:
    """What the API server refuses in ``metadata.finalizers``, in its order: each name
    must be a qualified name; "orphan" and "foregroundDeletion" exclude each other;
    a name without a domain must be a standard one."""
    out = []
    for name in finalizers:
        problem = label_key_problem(name)  # IsQualifiedName
        if problem is not None:
            out.append(invalid(name, problem))
    if "orphan" in finalizers and "foregroundDeletion" in finalizers:
        out.append(
            invalid(finalizers, "finalizer orphan and foregroundDeletion cannot be both set")
        )
    for name in finalizers:
        if "/" not in name and name not in STANDARD_FINALIZERS:
            out.append(
                invalid(name, "name is neither a standard finalizer name nor is it fully qualified")
            )
    return out


def check_driver_name(name: str) -> str | None:
    """A DRA driver name (same rules as a CSI driver name; also attribute domains)."""
    if not name:
        return required()
    if _byte_len(name) > limits.DRIVER_NAME_MAX_LENGTH:
        return too_long(limits.DRIVER_NAME_MAX_LENGTH)
    # Upstream lower-cases before the subdomain check, so upper case letters pass.
    problem = dns_subdomain_problem(name.lower())
    return None if problem is None else invalid(name, problem)


def check_pool_name(name: str) -> str | None:
    """One or more DNS subdomains separated by slashes, at most 253 bytes in total
    (the error shows the part that is wrong)."""
    if pool_name_ok(name):  # one compiled pass says it is certainly valid
        return None
    if not name:
        return required()
    if _byte_len(name) > limits.POOL_NAME_MAX_LENGTH:
        return too_long(limits.POOL_NAME_MAX_LENGTH)
    for part in name.split("/"):
        problem = dns_subdomain_problem(part)
        if problem is not None:
            return invalid(part, problem)
    return None


def check_c_identifier(ident: str) -> str | None:
    if _byte_len(ident) > limits.DEVICE_MAX_ID_LENGTH:
        return too_long(limits.DEVICE_MAX_ID_LENGTH)
    if _C_IDENTIFIER_RE.fullmatch(ident) is None:
        return invalid(ident, _C_IDENTIFIER_DETAIL)
    return None


def check_qualified_name(name: str) -> str | None:
    """An attribute or capacity name: ``id`` or ``domain/id``.

    Upstream splits the name on every slash and checks one part or two: a name with
    more slashes (``a.com/b/c``) passes unchecked (kubernetes/kubernetes#141869, open
    in 2026-09), and CEL then sees domain ``a.com`` and id ``b/c``.
    """
    parts = name.split("/")
    if len(parts) == 1:
        return check_c_identifier(name)
    if len(parts) > 2:
        return None
    domain, ident = parts
    if not domain:
        return invalid("", "the domain must not be empty")
    problem = check_driver_name(domain)
    if problem is not None:
        return problem
    if not ident:
        return invalid("", "the name must not be empty")
    return check_c_identifier(ident)


def check_fully_qualified_name(name: str) -> str | None:
    """``domain/id`` as constraints use it: the domain is mandatory."""
    problem = check_qualified_name(name)
    if problem is not None:
        return problem
    if "/" not in name:
        return invalid(
            name, "a fully qualified name must be a domain and a name separated by a slash"
        )
    return None


def check_label_name(name: str) -> str | None:
    """A label key: ``[prefix/]name`` (taint and toleration keys, condition types)."""
    problem = label_key_problem(name)
    return None if problem is None else invalid(name, problem)


_HEX = frozenset("0123456789abcdefABCDEF")


def _uuid_problem(uid: str) -> str | None:
    """google/uuid's Validate: the error text for ``uid``, or None."""
    data = uid.encode("utf-8", "surrogatepass")
    n = len(data)
    if n == 36 + 9:
        if data[:9].lower() != b"urn:uuid:":
            return f"invalid urn prefix: {_go_quote(data[:9])}"
        data = data[9:]
    elif n == 36 + 2:
        if data[:1] != b"{" or data[-1:] != b"}":
            return "invalid bracketed UUID format"
        data = data[1:-1]
    elif n == 32:
        return None if all(chr(b) in _HEX for b in data) else "invalid UUID format"
    elif n != 36:
        return f"invalid UUID length: {n}"
    if any(data[i] != ord("-") for i in (8, 13, 18, 23)):
        return "invalid UUID format"
    digits = data[:8] + data[9:13] + data[14:18] + data[19:23] + data[24:]
    return None if all(chr(b) in _HEX for b in digits) else "invalid UUID format"


def _go_quote(data: bytes) -> str:
    """Go's ``%q`` of a byte string (printable ASCII as is, the rest escaped)."""
    out = []
    for b in data:
        c = chr(b)
        if c in '"\\':
            out.append("\\" + c)
        elif 0x20 <= b < 0x7F:
            out.append(c)
        else:
            out.append({"\n": "\\n", "\t": "\\t", "\r": "\\r"}.get(c, f"\\x{b:02x}"))
    return '"' + "".join(out) + '"'


def check_uid(uid: str) -> str | None:
    """A UID as the API server checks a ``shareID`` (RFC 4122, normalized)."""
    problem = _uuid_problem(uid)
    if problem is not None:
        return invalid(uid, f"error validating uid: {problem}")
    if len(uid) != 36 or uid != uid.lower():
        return invalid(
            uid,
            "uid must be in RFC 4122 normalized form, `xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx` "
            "with lowercase hexadecimal characters",
        )
    return None


def is_extended_resource_name(name: str) -> bool:
    """core/v1's IsExtendedResourceName: a domain-prefixed name outside
    ``kubernetes.io/``, not starting with ``requests.``, that is a label key once
    prefixed with ``requests.`` (as resource quotas name it)."""
    if "/" not in name or "kubernetes.io/" in name or name.startswith("requests."):
        return False
    return label_key_problem(f"requests.{name}") is None


def label_value_problem(value: str) -> str | None:
    """apimachinery's first IsLabelValue message for ``value``, or None."""
    if _byte_len(value) > LABEL_VALUE_MAX:
        return _max_len(LABEL_VALUE_MAX)
    if value and _LABEL_NAME_PART_RE.fullmatch(value) is None:
        return _LABEL_VALUE_DETAIL
    return None


def check_label_value(value: str) -> str | None:
    problem = label_value_problem(value)
    return None if problem is None else invalid(value, problem)


def check_attribute_string(value: str) -> str | None:
    if _byte_len(value) > limits.DEVICE_ATTRIBUTE_MAX_VALUE_LENGTH:
        return too_long(limits.DEVICE_ATTRIBUTE_MAX_VALUE_LENGTH)
    return None


def check_attribute_version(value: str) -> str | None:
    """The API server's check of a version attribute (a syntax check, like upstream's).

    Components beyond uint64 pass here exactly as they pass the API server; upstream's
    allocator then fails on them at CEL time, and so does draspeed.
    """
    if _SEMVER_RE.fullmatch(value) is None:
        return invalid(value, "must be a string compatible with semver.org spec 2.0.0")
    return check_attribute_string(value)


# Imported last: the compiled decoder reads this module's limits when it loads.
from draspeed.api._decode import dns_subdomain_ok, pool_name_ok  # noqa: E402
