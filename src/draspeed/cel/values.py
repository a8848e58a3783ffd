"""Runtime values of draspeed's CEL evaluator.

CEL values are plain Python values where that is exact: ``int`` (int64, range-checked
by the operators), ``float`` (double), ``str``, ``bytes``, ``bool``, ``None`` (null),
``list``/``tuple`` (list), ``dict`` (map). Only the types without a Python twin get a
class: :class:`UInt`, :class:`Optional`, :class:`TypeValue`, and the DRA attribute
map :class:`DomainMap` whose unknown keys read as an empty map.
Quantities are :class:`draspeed.quantity.Quantity`, versions
:class:`draspeed.semantic_version.SemVer`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from draspeed.cel.meter import CostLimitExceeded as CostLimitExceeded  # re-exported
from draspeed.cel.meter import current_meter, ticking
from draspeed.errors import CELRuntimeError

INT64_MIN = -(1 << 63)
INT64_MAX = (1 << 63) - 1
UINT64_MAX = (1 << 64) - 1

EvalError = CELRuntimeError


class UInt(int):
    """A CEL ``uint`` (Python int subclass so arithmetic stays exact)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"{int(self)}u"


class Optional:
    """A CEL ``optional_type(T)`` value: empty, or holding one value."""

    __slots__ = ("has", "value")

    def __init__(self, has: bool, value: Any = None) -> None:
        self.has = has
        self.value = value

    def __repr__(self) -> str:
        return f"optional.of({self.value!r})" if self.has else "optional.none()"


OPTIONAL_NONE = Optional(False)


class TypeValue:
    """A CEL type as a value (the result of ``type(x)``, or the identifier ``int``)."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TypeValue) and other.name == self.name

    def __hash__(self) -> int:
        return hash(("type", self.name))

    def __repr__(self) -> str:
        return self.name


class DomainMap(dict):
    """``device.attributes`` / ``device.capacity``: an unknown domain reads as ``{}``.

    Only lookups default (upstream wraps the map so that Find never misses);
    ``in`` and iteration see the real keys.
    """

    __slots__ = ()


_EMPTY: dict[str, Any] = {}


# ---- map keys ------------------------------------------------------------------------
# A CEL map's keys are CEL values compared by type and value, as Go compares the ref.Val
# keys of cel-go's map: 1, 1u, 1.0 and true are four different keys. Python would merge
# them (1 == 1.0 == True), so a map with any key that is not a string is a CelMap, which
# stores such keys wrapped in _Key and hands them back unwrapped. Maps with string keys
# only (every device map) stay plain dicts.


class _Key:
    """A non-string map key: equal to another only with the same type and value."""

    __slots__ = ("by_identity", "hash", "value")

    def __init__(self, value: Any) -> None:
        self.value = value
        self.by_identity = False
        try:
            self.hash = hash((type(value), value))
        except TypeError:  # lists, maps: cel-go's Go map compares them by reference
            self.by_identity = True
            self.hash = id(value)

    def __hash__(self) -> int:
        return self.hash

    def __eq__(self, other: object) -> bool:
        if type(other) is not _Key or type(self.value) is not type(other.value):
            return False
        if self.by_identity or other.by_identity:
            return self.value is other.value
        return bool(self.value == other.value)

    def __repr__(self) -> str:
        return repr(self.value)


def _stored(key: Any) -> Any:
    return key if type(key) is str else _Key(key)


def _cel_key(key: Any) -> Any:
    return key.value if type(key) is _Key else key


class CelMap(dict[Any, Any]):
    """A CEL map with keys other than strings (see above); reads like a dict of CEL keys."""

    __slots__ = ()

    def __iter__(self) -> Any:
        return (_cel_key(k) for k in dict.__iter__(self))

    def keys(self) -> Any:
        return [_cel_key(k) for k in dict.__iter__(self)]

    def items(self) -> Any:
        return [(_cel_key(k), v) for k, v in dict.items(self)]

    def __contains__(self, key: object) -> bool:
        return dict.__contains__(self, _stored(key))

    def __getitem__(self, key: Any) -> Any:
        return dict.__getitem__(self, _stored(key))

    def get(self, key: Any, default: Any = None) -> Any:
        return dict.get(self, _stored(key), default)

    def __setitem__(self, key: Any, value: Any) -> None:
        dict.__setitem__(self, _stored(key), value)

    def __delitem__(self, key: Any) -> None:
        dict.__delitem__(self, _stored(key))

    def pop(self, key: Any, *default: Any) -> Any:
        return dict.pop(self, _stored(key), *default)

    def __repr__(self) -> str:
        return "{" + ", ".join(f"{k!r}: {v!r}" for k, v in self.items()) + "}"


def map_insert(m: dict[Any, Any], key: Any, value: Any) -> dict[Any, Any]:
    """``m[key] = value`` with CEL key identity; returns the map to keep using (a plain
    dict becomes a CelMap at its first key that is not a string)."""
    if type(key) in _UNHASHABLE:
        raise unhashable_key(key)
    if type(key) is not str and type(m) is not CelMap:
        m = CelMap(m.items())
    m[key] = value
    return m


def make_map(pairs: Any) -> dict[Any, Any]:
    """A CEL map from (key, value) pairs (a repeated key keeps the last value)."""
    out: dict[Any, Any] = {}
    for k, v in pairs:
        out = map_insert(out, k, v)
    return out


def map_items(m: dict[Any, Any]) -> Any:
    """The (key, value) pairs of a CEL map, keys as CEL values."""
    return m.items()


# What cel-go can make an index qualifier of; any other index value is refused.
QUALIFIER_TYPES: frozenset[type] = frozenset({str, int, UInt, bool, float})


def invalid_qualifier(key: Any, device: Any = None) -> EvalError:
    """cel-go's error for an index value that is no qualifier type, with Go's %T of the
    value as cel-go holds it (``device``: the device map of the evaluation, which
    Kubernetes passes as a plain Go map)."""
    return EvalError(f"invalid qualifier type: {_go_type(key, device)}")


def _go_type(value: Any, device: Any) -> str:
    if value is None:
        return "types.Null"
    t = type(value)
    if t is bytes:
        return "types.Bytes"
    if t is list or t is tuple:
        return "*types.baseList"
    if t is DomainMap:  # device.attributes, device.capacity: Kubernetes' own map type
        return "cel.mapper"
    if device is not None and value is device:
        return "map[string]interface {}"
    if isinstance(value, dict):
        return "*types.baseMap"
    if t is TypeValue:
        return "*types.Type"
    if t is bool:
        return "types.Bool"
    if t is int:
        return "types.Int"
    if t is UInt:
        return "types.Uint"
    if t is float:
        return "types.Double"
    if t is str:
        return "types.String"
    name = getattr(value, "cel_type_name", "")
    return _GO_TYPES.get(name, "*types.Optional" if t is Optional else name)


# Go's %T of the values of these CEL types (cel-go's and Kubernetes' library types).
_GO_TYPES = {
    "google.protobuf.Timestamp": "types.Timestamp",
    "google.protobuf.Duration": "types.Duration",
    "kubernetes.Quantity": "cel.Quantity",
    "kubernetes.Semver": "cel.Semver",
    "net.IP": "cel.IP",
    "net.CIDR": "cel.CIDR",
    "kubernetes.URL": "cel.URL",
    "kubernetes.NamedFormat": "cel.Format",
}


def no_such_key(key: Any) -> EvalError:
    return EvalError(f"no such key: {format_value(key)}")


def no_such_overload(name: str = "") -> EvalError:
    return EvalError("no such overload" + (f": {name}" if name else ""))


# ---- what a library function refuses, and how -------------------------------------

# Value types cel-go gives the Receiver trait (string, and the duration and timestamp
# types, registered by their module). A function bound once with a trait (size, sort,
# matches) hands a value without the trait to its Receive method, which knows none of
# them: a bare "no such overload". Any other value is refused with the function's name.
RECEIVER_TYPES: set[type] = {str}


def refused_by_trait(name: str, value: Any) -> EvalError:
    """The error of a trait-bound function (``name``) on ``value``, which lacks the trait."""
    return no_such_overload() if type(value) in RECEIVER_TYPES else no_such_overload(name)


# Value types whose Go type cannot be a Go map key (a byte slice; structs holding
# slices or functions: the apiserver's Semver and Format), registered by the library
# modules. A map that CEL builds (a literal, a transformMap) is a Go map of ref.Val:
# putting such a key in, or looking one up in a map with entries, panics. The maps of
# the device input are Go maps of strings, which look at the key's type first.
_UNHASHABLE: set[type] = {bytes}


def register_unhashable(cls: type) -> None:
    _UNHASHABLE.add(cls)


def unhashable_key(key: Any) -> GoPanic:
    return GoPanic(f"runtime error: hash of unhashable type {go_type_name(key)}")


def check_lookup_key(m: dict[Any, Any], key: Any) -> None:
    """Panic as a lookup of ``key`` in ``m`` does upstream (see _UNHASHABLE)."""
    if type(key) in _UNHASHABLE and m and not _is_input_map(m):
        raise unhashable_key(key)


def _is_input_map(m: dict[Any, Any]) -> bool:
    """Whether ``m`` is the device variable of the running evaluation or one of its
    maps (``device.attributes``, a domain's map ...), not one the expression built."""
    device = getattr(current_meter(), "device", None)
    if not isinstance(device, dict):
        return False
    if m is device:
        return True
    for field in ("attributes", "capacity"):
        top = device.get(field)
        if m is top or (isinstance(top, dict) and any(m is inner for inner in top.values())):
            return True
    return False


def go_value(value: Any) -> Any:
    """What a value's Go ``Value()`` holds, for the library functions that read their
    arguments that way (the Kubernetes regex functions, a precompiled ``matches``): a
    string or an int as itself, a type as its name, an optional as its value's (None:
    anything else, or an empty optional)."""
    while type(value) is Optional:
        if not value.has:
            return None
        value = value.value
    if type(value) is TypeValue:
        return value.name
    return value if type(value) is str or type(value) is int else None


def go_string(value: Any) -> str:
    """Go's ``v.Value().(string)``; a bare "no such overload" when it fails."""
    found = go_value(value)
    if type(found) is not str:
        raise no_such_overload()
    return found


def go_int64(value: Any) -> int:
    """Go's ``v.Value().(int64)``; a bare "no such overload" when it fails."""
    found = go_value(value)
    if type(found) is not int:
        raise no_such_overload()
    return found


class GoPanic(Exception):
    """A Go runtime panic in a library function (an unchecked type assertion), which
    cel-go recovers as the whole evaluation's error, "internal error: ...": unlike a
    CEL error value, no operator, macro or optional absorbs it."""


# Go value types with an Add method: a type assertion to traits.Lister (Add, Contains,
# Get, Iterator, Size) reports the first method missing, in that order.
_GO_ADDERS = frozenset(
    {
        "types.String",
        "types.Int",
        "types.Uint",
        "types.Double",
        "types.Bytes",
        "types.Duration",
        "types.Timestamp",
    }
)


def go_type_name(value: Any) -> str:
    """The Go type of a CEL value, or of a CEL error (*types.Err), as Go's runtime
    names it. Lists are named as most lists are (a literal, or a library's result);
    cel-go's concatenation (*types.concatList) is not told apart."""
    return "*types.Err" if isinstance(value, EvalError) else _go_type(value, None)


def not_a_list(value: Any) -> GoPanic:
    """The panic of asserting that ``value`` is a list (traits.Lister)."""
    go = go_type_name(value)
    missing = "Contains" if go in _GO_ADDERS else "Add"
    return GoPanic(f"interface conversion: {go} is not traits.Lister: missing method {missing}")


def not_an_int(value: Any) -> GoPanic:
    """The panic of asserting that ``value`` (a ref.Val) is an int (types.Int)."""
    return GoPanic(f"interface conversion: ref.Val is {go_type_name(value)}, not types.Int")


def type_name(value: Any) -> str:
    """cel-go's ``Type().TypeName()`` of a runtime value."""
    t = type(value)
    if t is bool:
        return "bool"
    if t is int:
        return "int"
    if t is UInt:
        return "uint"
    if t is float:
        return "double"
    if t is str:
        return "string"
    if t is bytes:
        return "bytes"
    if value is None:
        return "null_type"
    if t is list or t is tuple:
        return "list"
    if isinstance(value, dict):
        return "map"
    if t is Optional:
        return "optional_type"
    if t is TypeValue:
        return "type"
    name = getattr(value, "cel_type_name", None)
    if isinstance(name, str):
        return name
    return t.__name__


def format_value(value: Any) -> str:
    """Go's ``%v`` of a CEL value, as cel-go prints keys and values in errors."""
    t = type(value)
    if t is str:
        return value
    if t is bool:
        return "true" if value else "false"
    if t is float:
        return format_double(value)
    if t is UInt:
        return str(int(value))
    if value is None:
        return "NULL_VALUE"
    return str(value)


def format_double(f: float) -> str:
    """Go's ``%g`` of a float64: the shortest digits, in exponent form when the decimal
    exponent is below -4 or at least 6 (strconv's rule for the shortest precision)."""
    if math.isnan(f):
        return "NaN"
    if math.isinf(f):
        return "+Inf" if f > 0 else "-Inf"
    if f == 0.0:
        return "-0" if math.copysign(1.0, f) < 0 else "0"
    text = repr(f)
    mantissa = text.partition("e")[0]
    digits = mantissa.replace("-", "").replace(".", "").lstrip("0") or "0"
    # decimal exponent of the leading digit
    exp = math.floor(math.log10(abs(f)))
    # correct the log10 rounding at powers of ten
    if float(f"1e{exp}") > abs(f):
        exp -= 1
    elif float(f"1e{exp + 1}") <= abs(f):
        exp += 1
    ndigits = len(digits.rstrip("0")) or 1
    if exp < -4 or exp >= 6:
        sig = digits.rstrip("0") or "0"
        body = sig[0] + ("." + sig[1:] if len(sig) > 1 else "")
        sign = "-" if f < 0 else ""
        return f"{sign}{body}e{'-' if exp < 0 else '+'}{abs(exp):02d}"
    out = f"{f:.{max(0, ndigits - 1 - exp)}f}"
    if "." in out:
        out = out.rstrip("0").rstrip(".")
    return out


def cel_equal(a: Any, b: Any) -> bool:
    """CEL heterogeneous equality (cel-go ``types.Equal``).

    Null equals only null; values of unrelated built-in types are unequal; Quantity and
    Semver (apiserver types) raise "no such overload" against any other type. Lists and
    maps compare element-wise and, as in cel-go, an element comparison that errors does
    not make them unequal.
    """
    if a is None or b is None:
        return a is None and b is None
    ta = type(a)
    tb = type(b)
    if ta is not tb:
        ta = _CEL_CLASS.get(ta, ta)
        tb = _CEL_CLASS.get(tb, tb)
    if ta is tb:
        if ta is list or ta is tuple:
            return _list_equal(a, b)
        if ta is dict or ta is DomainMap or ta is CelMap:
            return _map_equal(a, b)
        if ta is Optional:
            if a.has != b.has:
                return False
            return not a.has or cel_equal(a.value, b.value)
        if ta in _SCALARS or ta is float:
            return bool(a == b)
        custom = CUSTOM_EQUAL.get(ta)
        if custom is not None:
            return custom(a, b)
        return bool(a == b)
    if ta in _OPAQUE:
        raise no_such_overload()
    if ta in _NUMERIC and tb in _NUMERIC:
        return _numbers_equal(a, b)
    if (ta is list or ta is tuple) and (tb is list or tb is tuple):
        return _list_equal(a, b)
    if isinstance(a, dict) and isinstance(b, dict):
        return _map_equal(a, b)
    return False


_NUMERIC = frozenset((int, float, UInt))
TWO_63 = 9.223372036854775807e18  # float64(math.MaxInt64) == 2**63
TWO_64 = 1.8446744073709551615e19  # float64(math.MaxUint64) == 2**64


def compare_double_integer(d: float, i: int) -> int:
    """cel-go's compareDoubleInt / compareDoubleUint (not NaN): beyond the integer
    type's range by the double alone, else the integer converted to a double (rounded
    to the nearest, as Go converts: 2**53 + 1 compares equal to 2**53)."""
    if type(i) is UInt:
        if d < 0:
            return -1
        if d > TWO_64:
            return 1
    else:
        if d < -TWO_63:
            return -1
        if d > TWO_63:
            return 1
    f = float(i)
    return -1 if d < f else (1 if d > f else 0)


def _numbers_equal(a: Any, b: Any) -> bool:
    """cel-go's Equal of two numbers of different types: a double against an int or
    uint as compare_double_integer orders them (NaN equals nothing), an int against a
    uint exactly."""
    if type(a) is float:
        return not math.isnan(a) and compare_double_integer(a, b) == 0
    if type(b) is float:
        return not math.isnan(b) and compare_double_integer(b, a) == 0
    return bool(a == b)


_SCALARS = frozenset((int, UInt, str, bytes, bool, TypeValue))
# Filled by the library modules: value classes whose == with another type is an error,
# and how two values of such a class compare.
_OPAQUE: set[type] = set()
CUSTOM_EQUAL: dict[type, Callable[[Any, Any], bool]] = {}


def register_opaque(cls: type, equal: Callable[[Any, Any], bool]) -> None:
    _OPAQUE.add(cls)
    CUSTOM_EQUAL[cls] = equal


# Value classes that are another's CEL type (a quantity sum past the written-out
# limit is a Quantity): compared as that class.
_CEL_CLASS: dict[type, type] = {}


def same_cel_type(cls: type, canonical: type) -> None:
    _CEL_CLASS[cls] = canonical


def _element_equal(a: Any, b: Any) -> bool:
    try:
        return cel_equal(a, b)
    except EvalError:
        return True  # cel-go only stops at an explicit False


def _list_equal(a: Any, b: Any) -> bool:
    if len(a) != len(b):
        return False
    return all(_element_equal(x, y) for x, y in ticking(zip(a, b, strict=False)))


def _map_equal(a: dict[Any, Any], b: dict[Any, Any]) -> bool:
    if len(a) != len(b):
        return False
    for k, v in ticking(a.items()):
        found, other = map_find(b, k)
        if not found or not _element_equal(v, other):
            return False
    return True


def map_find(m: dict[Any, Any], key: Any) -> tuple[bool, Any]:
    """cel-go's map Find: the key itself, else an int, uint or integral double key finds
    an equal number stored as the other integer types (never bool, never a double)."""
    if type(key) is str:
        if key in m:
            return True, m[key]
        return False, None
    if type(m) is not CelMap:
        return False, None  # only string keys here
    stored = _Key(key)
    if dict.__contains__(m, stored):
        return True, dict.__getitem__(m, stored)
    t = type(key)
    candidates: tuple[Any, ...] = ()
    if t is float:
        if key.is_integer() and -(2.0**63) <= key < 2.0**63:
            candidates = (int(key),)
        if key.is_integer() and 0 <= key < 2.0**64:
            candidates += (UInt(int(key)),)
    elif t is int:
        if key >= 0:
            candidates = (UInt(key),)
    elif t is UInt and key <= INT64_MAX:
        candidates = (int(key),)
    for other in candidates:
        stored = _Key(other)
        if dict.__contains__(m, stored):
            return True, dict.__getitem__(m, stored)
    return False, None


def map_index(m: dict[Any, Any], key: Any) -> Any:
    found, value = map_find(m, key)
    if found:
        return value
    if type(m) is DomainMap:
        return _EMPTY
    raise no_such_key(key)


_BOOL_CONVERSION_ERRORS = {
    "int": "unsupported type conversion from 'int' to bool",
    "uint": "unsupported type conversion from 'uint' to bool",
    "double": "type conversion error from Double to 'bool'",
    "string": "unsupported native conversion from string to 'bool'",
    "bytes": "type conversion error from Bytes to 'bool'",
    "list": "type conversion error from list to 'bool'",
    "map": "type conversion error from map to 'bool'",
    "null_type": "type conversion error from 'null_type' to 'bool'",
    "type": "type conversion not supported for 'type'",
    "kubernetes.Quantity": "type conversion error from 'Quantity' to 'bool'",
    "kubernetes.Semver": "type conversion error from 'Semver' to 'bool'",
}


def to_bool_result(value: Any) -> bool:
    """The final selector result, converted as upstream's ConvertToNative(bool) does.

    A non-bool is upstream's "CEL result of type T could not be converted to bool";
    an optional holding a bool converts to that bool (cel-go unwraps it).
    """
    if type(value) is bool:
        return value
    outer = type_name(value)
    if type(value) is Optional:
        if not value.has:
            detail = "optional.none() dereference"
        elif type(value.value) is bool:
            return value.value
        else:
            inner = type_name(value.value)
            detail = _BOOL_CONVERSION_ERRORS.get(
                inner, f"type conversion error from '{inner}' to 'bool'"
            )
    else:
        detail = _BOOL_CONVERSION_ERRORS.get(
            outer, f"type conversion error from '{outer}' to 'bool'"
        )
    raise EvalError(f"CEL result of type {outer} could not be converted to bool: {detail}")
