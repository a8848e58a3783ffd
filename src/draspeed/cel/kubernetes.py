"""Kubernetes CEL libraries: Quantity, Semver, IP/CIDR, URL, and DRA's ``includes``.

Texts and semantics follow kubernetes/apiserver ``pkg/cel/library/{quantity,semverlib,
ip,cidr,urls}.go`` and kubernetes/dynamic-resource-allocation ``cel/compile.go``.
The ``format`` library is :mod:`draspeed.cel.formats`. The authorizer libraries are
declared (their functions type-check on a dyn receiver) but never run: DRA selectors
have no ``authorizer`` variable.
"""

from __future__ import annotations

import ipaddress
from typing import Any
from urllib.parse import parse_qs, urlsplit

from draspeed.cel import netip
from draspeed.cel.cost import UNIT_EQUALITY_TYPES
from draspeed.cel.formats import parse_request_uri_error
from draspeed.cel.functions import declare, register_guarded
from draspeed.cel.stdlib import CONVERSION_HOOKS
from draspeed.cel.values import (
    INT64_MAX,
    EvalError,
    cel_equal,
    no_such_overload,
    register_opaque,
    register_unhashable,
    same_cel_type,
    type_name,
)
from draspeed.errors import QuantityError, SemverError
from draspeed.golang import go_quote
from draspeed.quantity import DECIMAL_EXPONENT, Quantity
from draspeed.quantity_sum import QuantitySum
from draspeed.semantic_version import SemVer, is_semver, parse_semver

# DRA: 'includes' refuses lists longer than the per-device attribute value limit.
INCLUDES_MAX = 48

# ---- Quantity --------------------------------------------------------------------


class QuantityPointer(Quantity):
    """A quantity CEL's ``add`` or ``sub`` made. Upstream's library returns those by
    pointer (``&Quantity{...}``), and a Quantity's ``Equal`` type-asserts a value on
    its right: there such a quantity is "no such overload" (so ``!=`` is true and
    ``in`` does not find it); on the left of ``==``, and to every other function, it
    is a quantity like any."""

    __slots__ = ()


_QUANTITY_SLOTS = Quantity.__slots__


def _pointer(q: Quantity | QuantitySum) -> Quantity | QuantitySum:
    """``q`` as upstream's add and sub return it (a sum past the written-out limit
    is only ever made by them: a pointer already)."""
    if isinstance(q, QuantitySum):
        return q
    made = object.__new__(QuantityPointer)
    for slot in _QUANTITY_SLOTS:
        object.__setattr__(made, slot, getattr(q, slot))
    return made


def _quantity_equal(a: Any, b: Any) -> bool:
    if type(b) is QuantityPointer or type(b) is QuantitySum:
        raise no_such_overload()
    return _cmp(a, b) == 0


Quantity.cel_type_name = "kubernetes.Quantity"  # type: ignore[attr-defined]
# A sum of quantities too far apart to write out (see q_add): a Quantity to CEL.
QuantitySum.cel_type_name = "kubernetes.Quantity"  # type: ignore[attr-defined]
SemVer.cel_type_name = "kubernetes.Semver"  # type: ignore[attr-defined]
for _class in (Quantity, QuantityPointer, QuantitySum):
    register_opaque(_class, _quantity_equal)
same_cel_type(QuantityPointer, Quantity)
same_cel_type(QuantitySum, Quantity)
register_opaque(SemVer, lambda a, b: a.compare(b) == 0)
register_unhashable(SemVer)


def _q(v: Any) -> Quantity | QuantitySum:
    t = type(v)
    if t is not Quantity and t is not QuantityPointer and t is not QuantitySum:
        raise no_such_overload()
    return v


def quantity(s: Any) -> Quantity:
    if type(s) is not str:
        raise no_such_overload()
    try:
        return Quantity.parse(s)
    except QuantityError as exc:
        raise EvalError(str(exc)) from None


def is_quantity(s: Any) -> bool:
    if type(s) is not str:
        raise no_such_overload()
    try:
        Quantity.parse(s)
    except QuantityError:
        return False
    return True


def q_sign(q: Any) -> int:
    return _q(q).sign()


def q_is_integer(q: Any) -> bool:
    return _q(q).is_integer()


def q_as_integer(q: Any) -> int:
    try:
        return _q(q).as_integer()
    except QuantityError as exc:
        raise EvalError(str(exc)) from None


def q_as_float(q: Any) -> float:
    return _q(q).as_approximate_float()


def q_add(q: Any, other: Any) -> Quantity | QuantitySum:
    base = _q(q)
    if type(other) is int:
        return _pointer(_sum(base, Quantity.from_int(other, DECIMAL_EXPONENT)))
    return _pointer(_sum(base, _q(other)))


def q_sub(q: Any, other: Any) -> Quantity | QuantitySum:
    base = _q(q)
    subtracted = Quantity.from_int(other, DECIMAL_EXPONENT) if type(other) is int else _q(other)
    if isinstance(base, Quantity) and isinstance(subtracted, Quantity):
        try:
            # (Sub, not Add of Neg: int64 -2^63 differs.)
            return _pointer(base.sub(subtracted))
        except QuantityError:
            pass
    return _pointer(_sum(base, subtracted.neg()))


def _sum(a: Quantity | QuantitySum, b: Quantity | QuantitySum) -> Quantity | QuantitySum:
    """``a.Add(b)`` (q_sub: of ``-b`` once past the limit). Upstream writes the sum
    out (0.15 s for 1e999999 plus 1Gi; it never finishes 1e2147483647 plus 1); past
    draspeed's limit the sum is a QuantitySum, exact without its digits, and a
    Quantity again once one holds it."""
    if isinstance(a, Quantity) and isinstance(b, Quantity):
        try:
            return a.add(b)
        except QuantityError:
            pass
    base = a if isinstance(a, QuantitySum) else QuantitySum((a,))
    return base.add(b).settled()


# ---- Semver ----------------------------------------------------------------------


def semver(s: Any, normalize: Any = False) -> SemVer:
    if type(s) is not str or type(normalize) is not bool:
        raise no_such_overload()
    try:
        return parse_semver(s, normalize)
    except SemverError as exc:
        raise EvalError(str(exc)) from None


def is_semver_fn(s: Any, normalize: Any = False) -> bool:
    if type(s) is not str or type(normalize) is not bool:
        raise no_such_overload()
    return is_semver(s, normalize)


def _v(v: Any) -> SemVer:
    if type(v) is not SemVer:
        raise no_such_overload()
    return v


def _as_int64(number: int) -> int:
    """Go's int64 conversion of a uint64 (wraps above 2**63 - 1): the library converts
    blang's parts so (``semver("18446744073709551615.0.0").major()`` is -1)."""
    return number - (1 << 64) if number > INT64_MAX else number


def major(v: Any) -> int:
    return _as_int64(_v(v).major)


def minor(v: Any) -> int:
    return _as_int64(_v(v).minor)


def patch(v: Any) -> int:
    return _as_int64(_v(v).patch)


# ---- shared comparison methods (dispatch: Quantity or Semver receiver) -----------


def _cmp(a: Any, b: Any) -> int:
    ta = type(a)
    if ta is Quantity and type(b) is Quantity:
        return a.cmp(b)
    if ta in _QUANTITY_CLASSES and type(b) in _QUANTITY_CLASSES:
        return -b.cmp(a) if ta is not QuantitySum and type(b) is QuantitySum else a.cmp(b)
    if ta is SemVer and type(b) is SemVer:
        return a.compare(b)
    raise no_such_overload()


_QUANTITY_CLASSES = (Quantity, QuantityPointer, QuantitySum)


def is_greater_than(a: Any, b: Any) -> bool:
    return _cmp(a, b) == 1


def is_less_than(a: Any, b: Any) -> bool:
    return _cmp(a, b) == -1


def compare_to(a: Any, b: Any) -> int:
    return _cmp(a, b)


# ---- DRA includes ----------------------------------------------------------------


def includes(target: Any, arg: Any) -> bool:
    if type(target) is list or type(target) is tuple:
        for i, item in enumerate(target):
            if i >= INCLUDES_MAX:
                raise EvalError(
                    "'includes' function cannot be applied to lists longer than "
                    f"{INCLUDES_MAX} values"
                )
            if _equal_true(item, arg):
                return True
        return False
    return _equal_true(target, arg)


def _equal_true(a: Any, b: Any) -> bool:
    # cel-go's ``Equal(...) == types.True``: an equality error counts as "not equal".
    try:
        return cel_equal(a, b)
    except EvalError:
        return False


# ---- IP / CIDR -------------------------------------------------------------------


class IP:
    """``net.IP``: an address without zone, never an IPv4-mapped IPv6 address."""

    __slots__ = ("addr",)
    cel_type_name = "net.IP"

    def __init__(self, addr: ipaddress.IPv4Address | ipaddress.IPv6Address) -> None:
        self.addr = addr

    def cel_string(self) -> str:
        return str(self.addr)


class CIDR:
    """``net.CIDR``: an address with prefix length (host bits kept, as netip.Prefix)."""

    __slots__ = ("addr", "prefix")
    cel_type_name = "net.CIDR"

    def __init__(self, addr: ipaddress.IPv4Address | ipaddress.IPv6Address, prefix: int) -> None:
        self.addr = addr
        self.prefix = prefix

    def cel_string(self) -> str:
        return f"{self.addr}/{self.prefix}"

    def network(self) -> ipaddress.IPv4Network | ipaddress.IPv6Network:
        return ipaddress.ip_network(f"{self.addr}/{self.prefix}", strict=False)


register_opaque(IP, lambda a, b: a.addr == b.addr)
register_opaque(CIDR, lambda a, b: a.addr == b.addr and a.prefix == b.prefix)


def _parse_addr(s: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    try:
        addr, zone = netip.parse_addr(s)
    except netip.NetipError as exc:
        raise EvalError(
            f"IP Address {go_quote(s)} parse error during conversion from string: {exc}"
        ) from None
    if zone:
        raise EvalError(f"IP address {go_quote(s)} with zone value is not allowed")
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        raise EvalError(f"IPv4-mapped IPv6 address {go_quote(s)} is not allowed")
    return addr


def ip(s: Any) -> IP:
    if type(s) is not str:
        raise no_such_overload()
    return IP(_parse_addr(s))


def is_ip(s: Any) -> bool:
    try:
        ip(s)
    except EvalError:
        return False
    return True


def ip_is_canonical(s: Any) -> bool:
    addr = ip(s).addr
    return str(addr) == s


def _ip(v: Any) -> IP:
    if type(v) is not IP:
        raise no_such_overload()
    return v


def ip_family(v: Any) -> int:
    return _ip(v).addr.version


def ip_is_unspecified(v: Any) -> bool:
    return _ip(v).addr.is_unspecified


def ip_is_loopback(v: Any) -> bool:
    return _ip(v).addr.is_loopback


def ip_is_link_local_multicast(v: Any) -> bool:
    a = _ip(v).addr
    if a.version == 4:
        return a in ipaddress.ip_network("224.0.0.0/24")
    return a.is_multicast and (int(a) >> 112) & 0xF == 2


def ip_is_link_local_unicast(v: Any) -> bool:
    a = _ip(v).addr
    if a.version == 4:
        return a in ipaddress.ip_network("169.254.0.0/16")
    return a in ipaddress.ip_network("fe80::/10")


def ip_is_global_unicast(v: Any) -> bool:
    a = _ip(v).addr
    if a.is_unspecified or a.is_loopback or a.is_multicast:
        return False
    if ip_is_link_local_unicast(v):
        return False
    return not (a.version == 4 and a == ipaddress.IPv4Address("255.255.255.255"))


# The library wraps netip's error in this, and then again when it makes the CEL error.
_CIDR_ERROR = "network address parse error during conversion from string: "


def cidr(s: Any) -> CIDR:
    if type(s) is not str:
        raise no_such_overload()
    try:
        addr, prefix = netip.parse_prefix(s)
    except netip.NetipError as exc:
        raise EvalError(f"{_CIDR_ERROR}{_CIDR_ERROR}{exc}") from None
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        raise EvalError(f"{_CIDR_ERROR}IPv4-mapped IPv6 address {go_quote(s)} is not allowed")
    return CIDR(addr, prefix)


def is_cidr(s: Any) -> bool:
    try:
        cidr(s)
    except EvalError:
        return False
    return True


def _cidr(v: Any) -> CIDR:
    if type(v) is not CIDR:
        raise no_such_overload()
    return v


def cidr_contains_ip(c: Any, other: Any) -> bool:
    net = _cidr(c).network()
    if type(other) is str:
        try:
            addr = ip(other).addr
        except EvalError:
            # Upstream converts the string, then refuses what is not an IP naming the
            # CIDR, not the conversion's error: a bare "no such overload".
            raise no_such_overload() from None
    else:
        addr = _ip(other).addr
    return addr.version == net.version and addr in net


def cidr_contains_cidr(c: Any, other: Any) -> bool:
    outer = _cidr(c)
    inner = cidr(other) if type(other) is str else _cidr(other)
    if inner.addr.version != outer.addr.version or inner.prefix < outer.prefix:
        return False
    return inner.network().subnet_of(outer.network())  # type: ignore[arg-type]


def cidr_ip(c: Any) -> IP:
    return IP(_cidr(c).addr)


def cidr_masked(c: Any) -> CIDR:
    net = _cidr(c).network()
    return CIDR(net.network_address, net.prefixlen)


def cidr_prefix_length(c: Any) -> int:
    return _cidr(c).prefix


def _net_to_string(v: Any) -> str:
    return str(v.cel_string())


CONVERSION_HOOKS[(IP, "string")] = _net_to_string
CONVERSION_HOOKS[(CIDR, "string")] = _net_to_string


# ---- URL -------------------------------------------------------------------------


class URL:
    """``kubernetes.URL`` (parsed like Go's url.ParseRequestURI, approximately)."""

    __slots__ = ("parts", "text")
    cel_type_name = "kubernetes.URL"

    def __init__(self, text: str) -> None:
        self.text = text
        self.parts = urlsplit(text)


register_opaque(URL, lambda a, b: a.text == b.text)


def url(s: Any) -> URL:
    if type(s) is not str:
        raise no_such_overload()
    problem = parse_request_uri_error(s)  # the library parses with url.ParseRequestURI
    if problem is not None:
        raise EvalError(f"URL parse error during conversion from string: {problem}")
    return URL(s)


def is_url(s: Any) -> bool:
    try:
        url(s)
    except EvalError:
        return False
    return True


def _url(v: Any) -> URL:
    if type(v) is not URL:
        raise no_such_overload()
    return v


def url_scheme(v: Any) -> str:
    return _url(v).parts.scheme


def url_host(v: Any) -> str:
    return _url(v).parts.netloc.rpartition("@")[2]


def url_hostname(v: Any) -> str:
    host = url_host(v)
    if host.startswith("["):
        return host[1 : host.find("]")]
    return host.rpartition(":")[0] if ":" in host else host


def url_port(v: Any) -> str:
    host = url_host(v)
    if host.startswith("["):
        rest = host[host.find("]") + 1 :]
        return rest[1:] if rest.startswith(":") else ""
    return host.rpartition(":")[2] if ":" in host else ""


def url_escaped_path(v: Any) -> str:
    u = _url(v)
    scheme = u.parts.scheme
    if scheme and not u.text[len(scheme) + 1 :].startswith("/"):
        return ""  # Go keeps what follows a scheme without a slash as the opaque part
    return u.parts.path


def url_query(v: Any) -> dict[str, list[str]]:
    return {
        k: list(vals) for k, vals in parse_qs(_url(v).parts.query, keep_blank_values=True).items()
    }


def _register() -> None:
    declare("g quantity(string) -> Quantity = string_to_quantity", quantity)
    declare("g isQuantity(string) -> bool = is_quantity_string", is_quantity)
    declare("g sign(Quantity) -> int = quantity_sign", q_sign)
    declare("m Quantity isInteger() -> bool = quantity_is_integer", q_is_integer)
    declare("m Quantity asInteger() -> int = quantity_get_int", q_as_integer)
    declare("m Quantity asApproximateFloat() -> double = quantity_get_float", q_as_float)
    declare(
        "m Quantity add(Quantity) -> Quantity = quantity_add\n"
        "m Quantity add(int) -> Quantity = quantity_add_int",
        q_add,
    )
    declare(
        "m Quantity sub(Quantity) -> Quantity = quantity_sub\n"
        "m Quantity sub(int) -> Quantity = quantity_sub_int",
        q_sub,
    )
    declare(
        "m Quantity isGreaterThan(Quantity) -> bool = quantity_is_greater_than\n"
        "m Semver isGreaterThan(Semver) -> bool = semver_is_greater_than",
        is_greater_than,
    )
    declare(
        "m Quantity isLessThan(Quantity) -> bool = quantity_is_less_than\n"
        "m Semver isLessThan(Semver) -> bool = semver_is_less_than",
        is_less_than,
    )
    declare(
        "m Quantity compareTo(Quantity) -> int = quantity_compare_to\n"
        "m Semver compareTo(Semver) -> int = semver_compare_to",
        compare_to,
    )
    declare(
        "g semver(string) -> Semver = string_to_semver\n"
        "g semver(string, bool) -> Semver = string_bool_to_semver",
        semver,
    )
    declare(
        "g isSemver(string) -> bool = is_semver_string\n"
        "g isSemver(string, bool) -> bool = is_semver_string_bool",
        is_semver_fn,
    )
    declare("m Semver major() -> int = semver_major", major)
    declare("m Semver minor() -> int = semver_minor", minor)
    declare("m Semver patch() -> int = semver_patch", patch)
    declare("m dyn includes(dyn) -> bool = dra_includes_dyn_dyn", includes)
    declare("g ip(string) -> IP = string_to_ip", ip)
    declare("g isIP(string) -> bool = is_ip", is_ip)
    declare("g ip.isCanonical(string) -> bool = ip_is_canonical", ip_is_canonical)
    declare("m IP family() -> int = ip_family", ip_family)
    declare("m IP isUnspecified() -> bool = ip_is_unspecified", ip_is_unspecified)
    declare("m IP isLoopback() -> bool = ip_is_loopback", ip_is_loopback)
    declare(
        "m IP isLinkLocalMulticast() -> bool = ip_is_link_local_multicast",
        ip_is_link_local_multicast,
    )
    declare(
        "m IP isLinkLocalUnicast() -> bool = ip_is_link_local_unicast", ip_is_link_local_unicast
    )
    declare("m IP isGlobalUnicast() -> bool = ip_is_global_unicast", ip_is_global_unicast)
    declare("g cidr(string) -> CIDR = string_to_cidr", cidr)
    declare("g isCIDR(string) -> bool = is_cidr", is_cidr)
    declare(
        "m CIDR containsIP(IP) -> bool = cidr_contains_ip_ip\n"
        "m CIDR containsIP(string) -> bool = cidr_contains_ip_string",
        cidr_contains_ip,
    )
    declare(
        "m CIDR containsCIDR(CIDR) -> bool = cidr_contains_cidr\n"
        "m CIDR containsCIDR(string) -> bool = cidr_contains_cidr_string",
        cidr_contains_cidr,
    )
    declare("m CIDR ip() -> IP = cidr_ip", cidr_ip)
    declare("m CIDR masked() -> CIDR = cidr_masked", cidr_masked)
    declare("m CIDR prefixLength() -> int = cidr_prefix_length", cidr_prefix_length)
    declare("g string(IP) -> string = ip_to_string\ng string(CIDR) -> string = cidr_to_string")
    declare("g url(string) -> URL = string_to_url", url)
    declare("g isURL(string) -> bool = is_url_string", is_url)
    declare("m URL getScheme() -> string = url_get_scheme", url_scheme)
    declare("m URL getHost() -> string = url_get_host", url_host)
    declare("m URL getHostname() -> string = url_get_hostname", url_hostname)
    declare("m URL getPort() -> string = url_get_port", url_port)
    declare("m URL getEscapedPath() -> string = url_get_escaped_path", url_escaped_path)
    declare("m URL getQuery() -> map(string, list(string)) = url_get_query", url_query)

    # Authorizer library: declared in every Kubernetes environment; DRA selectors have no
    # authorizer value, so a call type-checks (on a dyn receiver) but never runs.
    declare("m Authorizer path(string) -> PathCheck = authorizer_path", _no_authorizer("path"))
    declare("m Authorizer group(string) -> GroupCheck = authorizer_group", _no_authorizer("group"))
    declare(
        "m Authorizer serviceAccount(string, string) -> Authorizer = authorizer_serviceaccount",
        _no_authorizer("serviceAccount"),
    )
    declare(
        "m GroupCheck resource(string) -> ResourceCheck = groupcheck_resource",
        _no_authorizer("resource"),
    )
    for name in ("subresource", "namespace", "name"):
        declare(
            f"m ResourceCheck {name}(string) -> ResourceCheck = resourcecheck_{name}",
            _no_authorizer(name),
        )
    declare(
        "m PathCheck check(string) -> Decision = pathcheck_check\n"
        "m ResourceCheck check(string) -> Decision = resourcecheck_check",
        _no_authorizer("check"),
    )
    declare("m Decision errored() -> bool = decision_errored", _no_authorizer("errored"))
    declare("m Decision error() -> string = decision_error", _no_authorizer("error"))
    declare("m Decision allowed() -> bool = decision_allowed", _no_authorizer("allowed"))
    declare("m Decision reason() -> string = decision_reason", _no_authorizer("reason"))
    for name in ("fieldSelector", "labelSelector"):
        declare(
            f"m ResourceCheck {name}(string) -> ResourceCheck = authorizer_{name.lower()}",
            _no_authorizer(name),
        )


def _no_authorizer(name: str) -> Any:
    """The runtime of an authorizer function: its receiver is never an authorizer value."""

    def call(*args: Any) -> Any:
        raise no_such_overload(f"{name}({', '.join(type_name(a) for a in args)})")

    return call


# The apiserver charges 1 for == on its own value types.
UNIT_EQUALITY_TYPES.update((Quantity, SemVer, IP, CIDR, URL))

register_guarded(_register)
