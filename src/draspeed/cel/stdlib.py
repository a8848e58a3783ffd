"""CEL's standard library: operators, conversions, size, string predicates, matches, type.

Semantics follow cel-go as configured by Kubernetes: int64/uint64 arithmetic with
overflow errors, cross-type numeric ordering (CrossTypeNumericComparisons), and
heterogeneous equality (``==`` across unrelated types is false).
"""

from __future__ import annotations

import math
import re
from typing import Any

from draspeed.cel.functions import declare
from draspeed.cel.meter import current_meter, extend_ticking, ticking
from draspeed.cel.regex import compile_regex, rune_positions
from draspeed.cel.values import (
    INT64_MAX,
    INT64_MIN,
    UINT64_MAX,
    EvalError,
    TypeValue,
    UInt,
    cel_equal,
    check_lookup_key,
    compare_double_integer,
    format_double,
    go_string,
    map_find,
    no_such_overload,
    refused_by_trait,
    type_name,
)
from draspeed.golang import parse_go_float

_OVERFLOW = "integer overflow"
_UOVERFLOW = "unsigned integer overflow"


def _int(v: int) -> int:
    if INT64_MIN <= v <= INT64_MAX:
        return v
    raise EvalError(_OVERFLOW)


def _uint(v: int) -> UInt:
    if 0 <= v <= UINT64_MAX:
        return UInt(v)
    raise EvalError(_UOVERFLOW)


# ---- operators on values of the wrong type ------------------------------------------

# Left operand types whose own method cel-go's operator dispatch reaches (a wrong right
# operand then fails there, with a bare "no such overload"); an operator on any other
# left type is refused with its name ("no such overload: _<_"). As the upstream
# allocator answers, operator by operator and left type by left type; timestamps and
# durations (ORDER_TYPES, registered by their module) reach every one.
_REACHED: dict[str, tuple[type, ...]] = {
    "_<_": (bool, int, UInt, float, str, bytes),
    "_+_": (list, tuple, int, UInt, float, str, bytes),
    "_-_": (int, UInt, float, str),
    "_*_": (int, UInt, float, str),
    "_/_": (int, UInt, float, str),
    "_%_": (int, UInt, str),
    "-_": (bool, int, float, str),
}
_REACHED["_<=_"] = _REACHED["_>_"] = _REACHED["_>=_"] = _REACHED["_<_"]


def _refused(op: str, left: Any) -> EvalError:
    """The error of operator ``op`` on a left operand it has no implementation for."""
    t = type(left)
    if t in _REACHED[op] or t in ORDER_TYPES:
        return no_such_overload()
    return no_such_overload(op)


# ---- arithmetic ------------------------------------------------------------------


def add(a: Any, b: Any) -> Any:
    ta = type(a)
    tb = type(b)
    if ta is int and tb is int:
        return _int(a + b)
    if ta is float and tb is float:
        return a + b
    if ta is str and tb is str:
        current_meter().reserve(len(a) + len(b))
        return a + b
    if ta is UInt and tb is UInt:
        return _uint(a + b)
    if ta is bytes and tb is bytes:
        current_meter().reserve(len(a) + len(b))
        return a + b
    if (ta is list or ta is tuple) and (tb is list or tb is tuple):
        # cel-go concatenates lists lazily for a cost of 1: bounded here by allocation.
        current_meter().reserve(len(a) + len(b))
        return extend_ticking(extend_ticking([], a), b)
    hook = ADD_HOOKS.get((ta, tb))
    if hook is not None:
        return hook(a, b)
    raise _refused("_+_", a)


def sub(a: Any, b: Any) -> Any:
    ta = type(a)
    tb = type(b)
    if ta is int and tb is int:
        return _int(a - b)
    if ta is float and tb is float:
        return a - b
    if ta is UInt and tb is UInt:
        return _uint(a - b)
    hook = SUB_HOOKS.get((ta, tb))
    if hook is not None:
        return hook(a, b)
    raise _refused("_-_", a)


def mul(a: Any, b: Any) -> Any:
    ta = type(a)
    tb = type(b)
    if ta is int and tb is int:
        return _int(a * b)
    if ta is float and tb is float:
        return a * b
    if ta is UInt and tb is UInt:
        return _uint(a * b)
    raise _refused("_*_", a)


def _go_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def div(a: Any, b: Any) -> Any:
    ta = type(a)
    tb = type(b)
    if ta is int and tb is int:
        if b == 0:
            raise EvalError("division by zero")
        return _int(_go_div(a, b))
    if ta is float and tb is float:
        if b == 0.0:
            if a == 0.0 or math.isnan(a):
                return math.nan
            return math.copysign(math.inf, a) * math.copysign(1.0, b)
        return a / b
    if ta is UInt and tb is UInt:
        if b == 0:
            raise EvalError("division by zero")
        return UInt(a // b)
    raise _refused("_/_", a)


def mod(a: Any, b: Any) -> Any:
    ta = type(a)
    tb = type(b)
    if ta is int and tb is int:
        if b == 0:
            raise EvalError("modulus by zero")
        if a == INT64_MIN and b == -1:
            raise EvalError(_OVERFLOW)
        return a - b * _go_div(a, b)
    if ta is UInt and tb is UInt:
        if b == 0:
            raise EvalError("modulus by zero")
        return UInt(a % b)
    raise _refused("_%_", a)


def neg(a: Any) -> Any:
    t = type(a)
    if t is int:
        return _int(-a)
    if t is float:
        return -a
    hook = NEG_HOOKS.get(t)
    if hook is not None:
        return hook(a)
    raise _refused("-_", a)


def logical_not(a: Any) -> Any:
    if type(a) is bool:
        return not a
    raise no_such_overload()


# Timestamp/duration arithmetic registers itself here.
ADD_HOOKS: dict[tuple[type, type], Any] = {}
SUB_HOOKS: dict[tuple[type, type], Any] = {}
NEG_HOOKS: dict[type, Any] = {}
ORDER_TYPES: set[type] = set()

# ---- comparison ------------------------------------------------------------------

_NUMS = (int, float, UInt)


def compare(a: Any, b: Any, op: str = "") -> int:
    """-1/0/1 for orderable pairs, as cel-go compares: numbers across types (an int or
    uint against a double in range is converted to double first), NaN an error.
    ``op``: the operator asking, for the error on values that do not order."""
    ta = type(a)
    tb = type(b)
    if ta is tb and (ta in (str, bytes, bool, int, UInt) or ta in ORDER_TYPES):
        return -1 if a < b else (1 if a > b else 0)
    if ta in _NUMS and tb in _NUMS:
        if ta is float or tb is float:
            if (ta is float and math.isnan(a)) or (tb is float and math.isnan(b)):
                raise EvalError("NaN values cannot be ordered")
            if ta is float and tb is not float:
                return compare_double_integer(a, b)
            if tb is float and ta is not float:
                return -compare_double_integer(b, a)
            return -1 if a < b else (1 if a > b else 0)
        # int against uint: exact (cel-go's compareIntUint)
        return -1 if a < b else (1 if a > b else 0)
    raise _refused(op, a) if op else no_such_overload()


def less(a: Any, b: Any) -> bool:
    return compare(a, b, "_<_") == -1


def less_equal(a: Any, b: Any) -> bool:
    return compare(a, b, "_<=_") != 1


def greater(a: Any, b: Any) -> bool:
    return compare(a, b, "_>_") == 1


def greater_equal(a: Any, b: Any) -> bool:
    return compare(a, b, "_>=_") != -1


def equal(a: Any, b: Any) -> bool:
    return cel_equal(a, b)


def not_equal(a: Any, b: Any) -> bool:
    # cel-go: ``Equal(l, r) != True``, so an equality error makes != true.
    try:
        return not cel_equal(a, b)
    except EvalError:
        return True


def contains_in(elem: Any, container: Any) -> bool:
    """``elem in container``: list membership (an erroring comparison is no match, as in
    cel-go's Contains), map key presence."""
    t = type(container)
    if t is list or t is tuple:
        for item in ticking(container):
            try:
                if cel_equal(elem, item):
                    return True
            except EvalError:
                continue
        return False
    if isinstance(container, dict):
        check_lookup_key(container, elem)
        return map_find(container, elem)[0]
    raise no_such_overload()


# ---- size and strings ------------------------------------------------------------


def size(v: Any) -> int:
    t = type(v)
    if t is str or t is bytes or t is list or t is tuple or isinstance(v, dict):
        return len(v)
    # cel-go's size is bound once, for values with a size (see refused_by_trait).
    raise refused_by_trait("size", v)


def _strs(a: Any, b: Any) -> None:
    if type(a) is not str or type(b) is not str:
        raise no_such_overload()


def str_contains(s: Any, sub_: Any) -> bool:
    _strs(s, sub_)
    return sub_ in s


def str_starts_with(s: Any, prefix: Any) -> bool:
    _strs(s, prefix)
    return s.startswith(prefix)


def str_ends_with(s: Any, suffix: Any) -> bool:
    _strs(s, suffix)
    return s.endswith(suffix)


def matches(s: Any, pattern: Any) -> bool:
    # The receiver as a precompiled pattern reads it, through its Go Value() (a
    # non-constant pattern checks its receiver first, see the evaluator).
    text = go_string(s)
    if type(pattern) is not str:
        raise no_such_overload()
    regex = compile_regex(pattern)
    led = rune_positions(pattern, text)
    if led is not None:  # (\B tested between characters only, as Go tests it)
        return led.match(text) is not None
    # The UTF-8 bytes the str search would encode itself: the verdict is the same, and
    # no match offsets are turned back into character positions (3x faster).
    return regex.search(text.encode("utf-8")) is not None


# ---- conversions -----------------------------------------------------------------

# strconv.ParseInt and ParseUint in base 10: digits only (no underscores, no base
# prefix; ParseUint takes no sign either).
_GO_INT = re.compile(r"[+-]?[0-9]+\Z")
_GO_UINT = re.compile(r"[0-9]+\Z")


def conversion_error(value: Any, target: str) -> EvalError:
    """cel-go's error for a value its conversion to ``target`` does not accept."""
    return EvalError(f"type conversion error from '{type_name(value)}' to '{target}'")


def to_int(v: Any) -> int:
    t = type(v)
    if t is int:
        return v
    if t is UInt:
        if v > INT64_MAX:
            raise EvalError(_OVERFLOW)
        return int(v)
    if t is float:
        if math.isnan(v) or v <= -9.223372036854775808e18 or v >= 9.223372036854775807e18:
            raise EvalError(_OVERFLOW)
        return int(v)
    if t is str:
        if _GO_INT.match(v):
            n = int(v)
            if INT64_MIN <= n <= INT64_MAX:
                return n
        raise conversion_error(v, "int")
    hook = CONVERSION_HOOKS.get((t, "int"))
    if hook is not None:
        return hook(v)
    raise no_such_overload(f"int({type_name(v)})")


def to_uint(v: Any) -> UInt:
    t = type(v)
    if t is UInt:
        return v
    if t is int:
        if v < 0:
            raise EvalError(_UOVERFLOW)
        return UInt(v)
    if t is float:
        if math.isnan(v) or v < 0 or v >= 1.8446744073709552e19:
            raise EvalError(_UOVERFLOW)
        return UInt(int(v))
    if t is str:
        if _GO_UINT.match(v):
            n = int(v)
            if n <= UINT64_MAX:
                return UInt(n)
        raise conversion_error(v, "uint")
    raise no_such_overload(f"uint({type_name(v)})")


def to_double(v: Any) -> float:
    t = type(v)
    if t is float:
        return v
    if t is int or t is UInt:
        return float(v)
    if t is str:
        parsed = parse_go_float(v)
        if parsed is not None:
            return parsed
        raise conversion_error(v, "double")
    raise no_such_overload(f"double({type_name(v)})")


def to_string(v: Any) -> str:
    t = type(v)
    if t is str:
        return v
    if t is bool:
        return "true" if v else "false"
    if t is int or t is UInt:
        return str(int(v))
    if t is float:
        return format_double(v)
    if t is bytes:
        try:
            return v.decode("utf-8")
        except UnicodeDecodeError:
            raise EvalError("invalid UTF-8 in bytes, cannot convert to string") from None
    hook = CONVERSION_HOOKS.get((t, "string"))
    if hook is not None:
        return hook(v)
    raise no_such_overload(f"string({type_name(v)})")


def to_bytes(v: Any) -> bytes:
    t = type(v)
    if t is bytes:
        return v
    if t is str:
        return v.encode("utf-8")
    raise no_such_overload(f"bytes({type_name(v)})")


_GO_BOOLS = {
    "1": True,
    "t": True,
    "T": True,
    "TRUE": True,
    "true": True,
    "True": True,
    "0": False,
    "f": False,
    "F": False,
    "FALSE": False,
    "false": False,
    "False": False,
}


def to_bool(v: Any) -> bool:
    t = type(v)
    if t is bool:
        return v
    if t is str:
        if v in _GO_BOOLS:
            return _GO_BOOLS[v]
        raise conversion_error(v, "bool")
    raise no_such_overload(f"bool({type_name(v)})")


def type_of(v: Any) -> TypeValue:
    return TypeValue(type_name(v))


def dyn(v: Any) -> Any:
    return v


CONVERSION_HOOKS: dict[tuple[type, str], Any] = {}


# ---- declarations ----------------------------------------------------------------

# Overloads are declared in cel-go's order (common/stdlib/standard.go): a type variable
# still free when an overload is resolved ({}[k] - x, say) is bound by the first match.
_NUMERIC_ORDER = """
g {op}(bool, bool) -> bool
g {op}(int, int) -> bool
g {op}(int, double) -> bool
g {op}(int, uint) -> bool
g {op}(uint, uint) -> bool
g {op}(uint, double) -> bool
g {op}(uint, int) -> bool
g {op}(double, double) -> bool
g {op}(double, int) -> bool
g {op}(double, uint) -> bool
g {op}(string, string) -> bool = {name}_string
g {op}(bytes, bytes) -> bool = {name}_bytes
g {op}(timestamp, timestamp) -> bool
g {op}(duration, duration) -> bool
"""


def _register() -> None:
    declare(
        """
        g _+_(bytes, bytes) -> bytes = add_bytes
        g _+_(double, double) -> double
        g _+_(duration, duration) -> duration
        g _+_(duration, timestamp) -> timestamp
        g _+_(timestamp, duration) -> timestamp
        g _+_(int, int) -> int
        g _+_(list(A), list(A)) -> list(A) = add_list
        g _+_(string, string) -> string = add_string
        g _+_(uint, uint) -> uint
        """,
        add,
    )
    declare(
        """
        g _-_(double, double) -> double
        g _-_(duration, duration) -> duration
        g _-_(int, int) -> int
        g _-_(timestamp, duration) -> timestamp
        g _-_(timestamp, timestamp) -> duration
        g _-_(uint, uint) -> uint
        """,
        sub,
    )
    for op, impl in (("_*_", mul), ("_/_", div)):
        declare(
            f"""
            g {op}(double, double) -> double
            g {op}(int, int) -> int
            g {op}(uint, uint) -> uint
            """,
            impl,
        )
    declare("g _%_(int, int) -> int\ng _%_(uint, uint) -> uint", mod)
    # No -_(duration) overload in cel-go; a dyn duration still negates at run time.
    declare("g -_(double) -> double\ng -_(int) -> int", neg)
    declare("g !_(bool) -> bool", logical_not)
    for op, name, impl in (
        ("_<_", "less", less),
        ("_<=_", "less_equals", less_equal),
        ("_>_", "greater", greater),
        ("_>=_", "greater_equals", greater_equal),
    ):
        declare(_NUMERIC_ORDER.format(op=op, name=name), impl)
    declare("g _==_(A, A) -> bool = equals", equal)
    declare("g _!=_(A, A) -> bool = not_equals", not_equal)
    declare(
        "g @in(A, list(A)) -> bool = in_list\ng @in(A, map(A, B)) -> bool = in_map", contains_in
    )
    declare(
        """
        g size(bytes) -> int
        g size(list(A)) -> int
        g size(map(A, B)) -> int
        g size(string) -> int
        m bytes size() -> int
        m list(A) size() -> int
        m map(A, B) size() -> int
        m string size() -> int
        """,
        size,
    )
    declare("m string contains(string) -> bool = contains_string", str_contains)
    declare("m string startsWith(string) -> bool = starts_with_string", str_starts_with)
    declare("m string endsWith(string) -> bool = ends_with_string", str_ends_with)
    declare(
        "m string matches(string) -> bool = matches_string\n"
        "g matches(string, string) -> bool = matches",
        matches,
    )
    declare(
        """
        g int(int) -> int
        g int(double) -> int
        g int(duration) -> int
        g int(string) -> int
        g int(timestamp) -> int
        g int(uint) -> int
        """,
        to_int,
    )
    declare(
        "g uint(uint) -> uint\ng uint(double) -> uint\ng uint(int) -> uint\ng uint(string) -> uint",
        to_uint,
    )
    declare(
        "g double(double) -> double\ng double(int) -> double\n"
        "g double(uint) -> double\ng double(string) -> double",
        to_double,
    )
    declare(
        """
        g string(string) -> string
        g string(bool) -> string
        g string(bytes) -> string = bytes_to_string
        g string(double) -> string
        g string(duration) -> string
        g string(int) -> string
        g string(timestamp) -> string
        g string(uint) -> string
        """,
        to_string,
    )
    declare("g bytes(bytes) -> bytes\ng bytes(string) -> bytes = string_to_bytes", to_bytes)
    declare("g bool(bool) -> bool\ng bool(string) -> bool", to_bool)
    declare("g type(A) -> type(A)", type_of)
    declare("g dyn(A) -> dyn", dyn)


_register()
