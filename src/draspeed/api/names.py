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

_LABEL_DETAIL = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character (regex '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
_SUBDOMAIN_DETAIL = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' "
    "or '.', and must start and end with an alphanumeric character"
)
_C_IDENTIFIER_DETAIL = (
    "a valid C identifier must start with alphabetic character or '_', followed by a string "
    "of alphanumeric characters or '_' (regex '[A-Za-z_][A-Za-z0-9_]*')"
)
_LABEL_PART_DETAIL = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with "
    "an alphanumeric character"
)


def _byte_len(s: str) -> int:
    # Go measures strings in bytes; only non-ASCII text differs.
    return len(s) if s.isascii() else len(s.encode("utf-8"))


def check_dns_label(name: str) -> str | None:
    """Device names, request names, counter names, namespaces."""
    if not name:
        return required()
    if _byte_len(name) > DNS_LABEL_MAX:
        return invalid(name, f"must be no more than {DNS_LABEL_MAX} characters")
    if not _is_dns_label(name):
        return invalid(name, _LABEL_DETAIL)
    return None


def check_dns_subdomain(name: str) -> str | None:
    """Object names, node names, device class names."""
    if dns_subdomain_ok(name):  # one compiled pass says it is certainly valid
        return None
    if not name:
        return required()
    if _byte_len(name) > DNS_SUBDOMAIN_MAX:
        return invalid(name, f"must be no more than {DNS_SUBDOMAIN_MAX} characters")
    if not _is_dns_subdomain(name):
        return invalid(name, _SUBDOMAIN_DETAIL)
    return None


def check_driver_name(name: str) -> str | None:
    """A DRA driver name (same rules as a CSI driver name; also attribute domains)."""
    if not name:
        return required()
    if _byte_len(name) > limits.DRIVER_NAME_MAX_LENGTH:
        return too_long(limits.DRIVER_NAME_MAX_LENGTH)
    # Upstream lower-cases before the subdomain check, so upper case letters pass.
    if not _is_dns_subdomain(name.lower()):
        return invalid(name, _SUBDOMAIN_DETAIL)
    return None


def check_pool_name(name: str) -> str | None:
    """One or more DNS subdomains separated by slashes, at most 253 bytes in total."""
    if pool_name_ok(name):  # one compiled pass says it is certainly valid
        return None
    if not name:
        return required()
    if _byte_len(name) > limits.POOL_NAME_MAX_LENGTH:
        return too_long(limits.POOL_NAME_MAX_LENGTH)
    for part in name.split("/"):
        if not part or _byte_len(part) > DNS_SUBDOMAIN_MAX or not _is_dns_subdomain(part):
            return invalid(name, f"each '/'-separated part: {_SUBDOMAIN_DETAIL}")
    return None


def check_c_identifier(ident: str) -> str | None:
    if _byte_len(ident) > limits.DEVICE_MAX_ID_LENGTH:
        return too_long(limits.DEVICE_MAX_ID_LENGTH)
    if _C_IDENTIFIER_RE.fullmatch(ident) is None:
        return invalid(ident, _C_IDENTIFIER_DETAIL)
    return None


def check_qualified_name(name: str) -> str | None:
    """An attribute or capacity name: ``id`` or ``domain/id``."""
    parts = name.split("/")
    if len(parts) == 1:
        return check_c_identifier(name)
    if len(parts) > 2:
        return invalid(name, "must not contain more than one slash")
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
    if not name:
        return required()
    prefix, slash, local = name.rpartition("/")
    if slash:
        if "/" in prefix:
            return invalid(name, "a qualified name must consist of at most one prefix and a name")
        if not prefix:
            return invalid(name, "prefix part must be non-empty")
        problem = check_dns_subdomain(prefix)
        if problem is not None:
            return invalid(name, f"prefix part {problem}")
    if not local:
        return invalid(name, "name part must be non-empty")
    if _byte_len(local) > DNS_LABEL_MAX:
        return invalid(name, f"name part must be no more than {DNS_LABEL_MAX} characters")
    if _LABEL_NAME_PART_RE.fullmatch(local) is None:
        return invalid(name, f"name part {_LABEL_PART_DETAIL}")
    return None


def check_label_value(value: str) -> str | None:
    if not value:
        return None
    if _byte_len(value) > LABEL_VALUE_MAX:
        return invalid(value, f"must be no more than {LABEL_VALUE_MAX} characters")
    if _LABEL_NAME_PART_RE.fullmatch(value) is None:
        return invalid(value, f"a valid label {_LABEL_PART_DETAIL}")
    return None


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
