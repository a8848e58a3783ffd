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

from draspeed.errors import CELRuntimeError

INT64_MIN = -(1 << 63)
INT64_MAX = (1 << 63) - 1
UINT64_MAX = (1 << 64) - 1

EvalError = CELRuntimeError


class CostLimitExceeded(Exception):
    """The evaluation used more than the runtime cost limit (never absorbed)."""

    def __init__(self) -> None:
        super().__init__("operation cancelled: actual cost limit exceeded")


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


def no_such_key(key: Any) -> EvalError:
    return EvalError(f"no such key: {format_value(key)}")


def no_such_overload(name: str = "") -> EvalError:
    return EvalError("no such overload" + (f": {name}" if name else ""))


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
        if math.isinf(value):
            return "+Inf" if value > 0 else "-Inf"
        if math.isnan(value):
            return "NaN"
        return repr(value)
    if value is None:
        return "NULL_VALUE"
    return str(value)


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
    if ta is tb:
        if ta is list or ta is tuple:
            return _list_equal(a, b)
        if ta is dict or ta is DomainMap:
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
        return bool(a == b)
    if (ta is list or ta is tuple) and (tb is list or tb is tuple):
        return _list_equal(a, b)
    if isinstance(a, dict) and isinstance(b, dict):
        return _map_equal(a, b)
    return False


_NUMERIC = frozenset((int, float, UInt))
_SCALARS = frozenset((int, UInt, str, bytes, bool, TypeValue))
# Filled by the library modules: value classes whose == with another type is an error,
# and how two values of such a class compare.
_OPAQUE: set[type] = set()
CUSTOM_EQUAL: dict[type, Callable[[Any, Any], bool]] = {}


def register_opaque(cls: type, equal: Callable[[Any, Any], bool]) -> None:
    _OPAQUE.add(cls)
    CUSTOM_EQUAL[cls] = equal


def _element_equal(a: Any, b: Any) -> bool:
    try:
        return cel_equal(a, b)
    except EvalError:
        return True  # cel-go only stops at an explicit False


def _list_equal(a: Any, b: Any) -> bool:
    if len(a) != len(b):
        return False
    return all(_element_equal(x, y) for x, y in zip(a, b, strict=False))


def _map_equal(a: dict[Any, Any], b: dict[Any, Any]) -> bool:
    if len(a) != len(b):
        return False
    for k, v in a.items():
        found, other = map_find(b, k)
        if not found or not _element_equal(v, other):
            return False
    return True


def check_map_key(key: Any) -> None:
    t = type(key)
    if t is str or t is int or t is UInt or t is bool:
        return
    raise EvalError(f"unsupported key type: {type_name(key)}")


def map_find(m: dict[Any, Any], key: Any) -> tuple[bool, Any]:
    """Look a key up with CEL semantics (bool never matches 1; numbers cross-type)."""
    t = type(key)
    if t is str:
        if key in m:
            return True, m[key]
        return False, None
    if t is bool:
        for k, v in m.items():
            if type(k) is bool and k == key:
                return True, v
        return False, None
    if t is int or t is UInt or t is float:
        if t is float and not key.is_integer():
            return False, None
        for k, v in m.items():
            tk = type(k)
            if (tk is int or tk is UInt) and k == key:
                return True, v
        return False, None
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
