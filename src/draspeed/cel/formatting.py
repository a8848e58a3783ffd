"""The strings extension's ``format`` as Kubernetes has it: cel-go ext.Strings version 2.

Version 2 formats with cel-go's first formatter (``ext/formatting.go``), not the one the
cel-spec text describes (that is version 4), and prints ``%f`` and ``%e`` through
golang.org/x/text's message printer for the en_US locale. Measured against upstream
(``shared/oracle``), that means:

- ``%s`` of a double is Go's ``%g`` (``1.5``, ``NaN``, ``+Inf``, ``-0``, ``1e+21``); inside a
  list or map it is ``%.6f`` (``1.500000``), quoted when not finite (``"+Inf"``); strings
  inside lists and maps are Go-quoted, bytes ``b"..."``, timestamps ``timestamp("...")``,
  durations ``duration("...")``; map entries print as ``key:value``, sorted by the key's
  text; a map key that is not a string, bool or integer is an error;
- ``%f`` groups thousands (``1,234.500000``), prints infinity as ``∞`` and no sign for -0;
- ``%e`` always has six decimals and prints ``1.234500×10⁰³``; its "precision" is really a
  field width (``%.20e`` pads to 20 characters);
- ``%b`` takes bools (``1``/``0``); ``%x`` of a string is the hex of its UTF-8 bytes.

The same clause parser serves the compile-time validator, which checks a literal format
string against the types of a literal argument list (:func:`check_format_call`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from decimal import ROUND_HALF_EVEN, Context, Decimal
from typing import Any

from draspeed.cel import types as T
from draspeed.cel.ast import ListLit, MapLit, Node
from draspeed.cel.meter import Ticker, current_meter, ticking
from draspeed.cel.stdlib import format_double
from draspeed.cel.values import EvalError, TypeValue, UInt, map_items, type_name
from draspeed.golang import go_quote

DEFAULT_PRECISION = 6

_STRING_CLAUSE_TYPES = (
    "strings, bools, bytes, ints, doubles, maps, lists, types, durations, and timestamps"
)


class FormatError(Exception):
    """A formatting failure; ``node`` is the argument it concerns (compile time)."""

    def __init__(self, message: str, node: Node | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.node = node


def _clause_error(kind: str, type_text: str, node: Node | None = None) -> FormatError:
    texts = {
        "s": f"string clause can only be used on {_STRING_CLAUSE_TYPES}, was given {type_text}",
        "d": f"decimal clause can only be used on integers, was given {type_text}",
        "f": f"fixed-point clause can only be used on doubles, was given {type_text}",
        "e": f"scientific clause can only be used on doubles, was given {type_text}",
        "b": f"only integers and bools can be formatted as binary, was given {type_text}",
        "x": (
            "only integers, byte buffers, and strings can be formatted as hex, "
            f"was given {type_text}"
        ),
        "o": f"octal clause can only be used on integers, was given {type_text}",
    }
    return FormatError(texts[kind], node)


# ---- the clause parser (ext/formatting.go parseFormatString) ------------------------


class _Clause:
    __slots__ = ("precision", "verb")

    def __init__(self, verb: str, precision: int | None) -> None:
        self.verb = verb
        self.precision = precision


def _go_atoi(text: str) -> int:
    if not text:
        raise FormatError(f'strconv.Atoi: parsing "{text}": invalid syntax')
    value = int(text)
    if value > (1 << 63) - 1:
        raise FormatError(f'strconv.Atoi: parsing "{text}": value out of range')
    return value


def _parse_clause(data: bytes, i: int) -> tuple[int, _Clause]:
    """The clause after the ``%`` at ``data[i - 1]``: (index after it, clause)."""
    precision: int | None = None
    if data[i : i + 1] == b".":
        j = i + 1
        while True:
            if j >= len(data):
                raise FormatError(
                    "could not parse formatting clause: error while parsing precision: "
                    "could not find end of precision specifier"
                )
            if not 48 <= data[j] <= 57:
                break
            j += 1
        try:
            precision = _go_atoi(data[i + 1 : j].decode())
        except FormatError as exc:
            raise FormatError(
                "could not parse formatting clause: error while parsing precision: "
                f"error while converting precision to integer: {exc.message}"
            ) from None
        i = j
    verb = chr(data[i])  # Go reads one byte as the verb
    if verb not in "sdfebxXo":
        raise FormatError(
            f'could not parse formatting clause: unrecognized formatting clause "{verb}"'
        )
    return i + 1, _Clause(verb, precision)


def _interpolate(
    text: str, count: int, render: Callable[[int, _Clause], str], *, runtime: bool
) -> tuple[str, int]:
    """Walk the format string; ``render(arg_index, clause)`` formats one argument.
    Returns the text and the number of arguments used."""
    data = text.encode("utf-8")
    out = bytearray()
    i = 0
    arg_index = 0
    n = len(data)
    meter = current_meter()
    ticker = Ticker()
    while i < n:
        ticker.step()
        if data[i] != 37:  # '%'
            out.append(data[i])
            i += 1
            continue
        if i + 1 < n and data[i + 1] == 37:
            out.append(37)
            i += 2
            continue
        if runtime and arg_index >= count:  # stringArgList.Arg fails first at run time
            raise FormatError(f"index {arg_index} out of range")
        if i + 1 >= n:
            raise FormatError("unexpected end of string")
        if arg_index >= count:
            raise FormatError(f"index {arg_index} out of range")
        i, clause = _parse_clause(data, i + 1)
        try:
            value = render(arg_index, clause)
        except FormatError as exc:
            raise FormatError(f"error during formatting: {exc.message}", exc.node) from None
        # Charged by the format string only, format can repeat its arguments: bounded here.
        meter.reserve(len(value))
        out += value.encode("utf-8")
        arg_index += 1
    return out.decode("utf-8", "replace"), arg_index


# ---- run time ------------------------------------------------------------------------


def format_string(fmt: Any, args: Any) -> str:
    """``fmt.format(args)`` at run time; EvalError with cel-go's text."""
    if type(fmt) is not str or (type(args) is not list and type(args) is not tuple):
        from draspeed.cel.values import no_such_overload

        raise no_such_overload()

    def render(index: int, clause: _Clause) -> str:
        return _format_value(clause, args[index])

    try:
        return _interpolate(fmt, len(args), render, runtime=True)[0]
    except FormatError as exc:
        raise EvalError(exc.message) from None


def _format_value(clause: _Clause, arg: Any) -> str:
    verb = clause.verb
    t = type(arg)
    if verb == "s":
        return _string_clause(arg)
    if verb == "d":
        if t is int or t is UInt:
            return str(int(arg))
        raise _clause_error("d", type_name(arg))
    if verb in "fe":
        if t is str and arg in ("NaN", "Infinity", "-Infinity"):
            arg = float(arg.replace("Infinity", "inf"))
        elif t is not float:
            raise _clause_error(verb, type_name(arg))
        precision = DEFAULT_PRECISION if clause.precision is None else clause.precision
        if precision // 10 > _GO_MAX_WIDTH:
            # Go's printf reads a width or precision digit by digit and gives up (the
            # verb lost) on a digit after more than a million.
            return "%!(NOVERB)"
        if verb == "f":
            return localized_fixed(arg, precision)
        # cel-go builds "%<precision>e": the number is a width, the precision stays 6.
        return localized_scientific(arg, precision)
    if verb == "b":
        if t is bool:
            return "1" if arg else "0"
        if t is int or t is UInt:
            return _signed(int(arg), "b")
        raise _clause_error("b", type_name(arg))
    if verb in "xX":
        if t is str or t is bytes:
            data = arg.encode("utf-8") if t is str else arg
            text = data.hex()
        elif t is int or t is UInt:
            text = _signed(int(arg), "x")
        else:
            raise _clause_error("x", type_name(arg))
        return text.upper() if verb == "X" else text
    if t is int or t is UInt:  # 'o'
        return _signed(int(arg), "o")
    raise _clause_error("o", type_name(arg))


def _signed(value: int, spec: str) -> str:
    return ("-" if value < 0 else "") + format(abs(value), spec)


def _as_string(arg: Any) -> str:
    """cel-go's ConvertToType(StringType) of the types the string clause accepts."""
    t = type(arg)
    if t is str:
        return arg
    if t is bool:
        return "true" if arg else "false"
    if t is int or t is UInt:
        return str(int(arg))
    if t is float:
        return format_double(arg)
    if t is bytes:
        try:
            return arg.decode("utf-8")
        except UnicodeDecodeError:
            message = "invalid UTF-8 in bytes, cannot convert to string"
            raise FormatError(f"could not convert argument {go_quote(message)} to string") from None
    if t is TypeValue:
        return arg.name
    text = getattr(arg, "cel_string", None)
    if type_name(arg) in ("google.protobuf.Timestamp", "google.protobuf.Duration") and text:
        return str(text())
    raise _clause_error("s", type_name(arg))


def _string_clause(arg: Any) -> str:
    t = type(arg)
    if t is list or t is tuple:
        return _format_list(arg)
    if isinstance(arg, dict):
        return _format_map(arg)
    if arg is None:
        return "null"
    return _as_string(arg)


def _nested(arg: Any) -> str:
    """A list element or map value (clauseForType then quoteForCEL)."""
    t = type(arg)
    if t is int or t is UInt:
        return str(int(arg))
    if t is float:
        if math.isnan(arg) or math.isinf(arg):
            return go_quote(format_double(arg))
        return f"{arg:.6f}"
    if t is str:
        return go_quote(arg)
    if t is bytes:
        return "b" + go_quote(_as_string(arg))
    if t is bool or t is TypeValue or arg is None:
        return _string_clause(arg)
    if t is list or t is tuple:
        return _format_list(arg)
    if isinstance(arg, dict):
        return _format_map(arg)
    name = type_name(arg)
    if name == "google.protobuf.Timestamp":
        return f"timestamp({go_quote(_as_string(arg))})"
    if name == "google.protobuf.Duration":
        return f"duration({go_quote(_as_string(arg))})"
    raise FormatError(f"no formatting function for {name}")


def _format_list(items: Any) -> str:
    return "[" + ", ".join(_nested(x) for x in ticking(items)) + "]"


def _format_map(m: dict[Any, Any]) -> str:
    pairs: list[tuple[str, str]] = []
    for key, value in ticking(map_items(m)):
        t = type(key)
        if t is str:
            key_text = go_quote(key)
        elif t is bool:
            key_text = "true" if key else "false"
        elif t is int or t is UInt:
            key_text = str(int(key))
        else:
            raise FormatError(f"no formatting function for map key of type {type_name(key)}")
        pairs.append((key_text, _nested(value)))
    pairs.sort(key=lambda p: p[0].encode("utf-8"))
    return "{" + ", ".join(f"{k}:{v}" for k, v in pairs) + "}"


# ---- x/text's en_US number printing -------------------------------------------------

_SUPERSCRIPT = str.maketrans("0123456789-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻")


def _special(value: float) -> str | None:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "∞" if value > 0 else "-∞"
    return None


_GO_MAX_WIDTH = 1_000_000
# Room for any double's digits with up to 32,767 decimals.
_EXACT_DIGITS = Context(prec=34_000)


def localized_fixed(value: float, precision: int) -> str:
    """message.Printer(en_US).Sprintf("%.<p>f", v): grouped thousands, no sign for -0.

    From a precision of 256 on, x/text reads it as a least and a most number of
    decimals (measured: ``%.256f`` of 0.1 prints its 55 exact decimals, of 1.5 ``1.5``;
    ``%.257f`` of 1.0 ``1.0``; ``%.65537f`` of 0.1 ``0.1``)."""
    special = _special(value)
    if special is not None:
        return special
    if precision < 256:
        text = f"{abs(value):,.{precision}f}"
    else:
        # x/text holds the precision as a uint8 least and an int16 most number of
        # decimals: the value rounded to the most (the shortest digits that read back
        # as the double where that wraps negative), trailing zeros down to the least.
        most = (precision + 32768) % 65536 - 32768
        if most < 0:
            exact = Decimal(repr(abs(value)))
        else:
            exact = Decimal(abs(value)).quantize(
                Decimal(1).scaleb(-most), ROUND_HALF_EVEN, _EXACT_DIGITS
            )
        whole, _, decimals = f"{exact:f}".partition(".")
        decimals = decimals.rstrip("0").ljust(precision % 256, "0")
        text = f"{int(whole):,}" + ("." + decimals if decimals else "")
    return "-" + text if value < 0 else text


def localized_scientific(value: float, width: int) -> str:
    """message.Printer(en_US).Sprintf("%<w>e", v): six decimals, ``×10`` and a
    superscript exponent of at least two digits, padded with spaces to width ``w``."""
    special = _special(value)
    if special is not None:
        text = special
    else:
        mantissa, _, exponent = f"{abs(value):.6e}".partition("e")
        exp = int(exponent)
        digits = f"{abs(exp):02d}"
        text = mantissa + "×10" + ("-" + digits if exp < 0 else digits).translate(_SUPERSCRIPT)
        if value < 0:
            text = "-" + text
    width %= 65536  # (x/text holds a width as a uint16)
    if width:
        text = text.rjust(width)
    return text


# ---- compile time --------------------------------------------------------------------

_ALLOWED: dict[str, tuple[str, ...]] = {
    "d": ("int", "uint"),
    "f": ("double", "string"),
    "e": ("double", "string"),
    "b": ("int", "uint", "bool"),
    "x": ("int", "uint", "string", "bytes"),
    "X": ("int", "uint", "string", "bytes"),
    "o": ("int", "uint"),
}
_STRING_KINDS = (
    "list",
    "map",
    "int",
    "uint",
    "double",
    "bool",
    "string",
    "bytes",
    "type",
    "null",
    T.TIMESTAMP.name,
    T.DURATION.name,
)


def type_name_of(t: T.Type) -> str:
    """cel-go's Type.TypeName(): the kind's name without parameters."""
    if t.kind in ("object", "param"):
        return t.name
    if t.kind == "null":
        return "null_type"
    return t.kind


def _kind(t: T.Type) -> str:
    return t.name if t.kind == "object" else t.kind


def check_format_call(
    fmt: str, args: list[Node], types: dict[int, T.Type]
) -> tuple[str, Node | None] | None:
    """cel-go's stringFormatValidator for ``'<literal>'.format([<literal list>])``:
    the first problem as (message, node it concerns; None for the call), or None."""

    def type_of(node: Node) -> T.Type:
        return types.get(id(node), T.DYN)

    def verify_string(node: Node) -> Node | None:
        t = type_of(node)
        if t.kind != "dyn" and _kind(t) not in _STRING_KINDS:
            return node
        children: list[Node] = []
        if isinstance(node, ListLit):
            children = list(node.elements)
        elif isinstance(node, MapLit):
            for k, v, _ in node.entries:
                children += [k, v]
        for child in children:
            bad = verify_string(child)
            if bad is not None:
                return bad
        return None

    def render(index: int, clause: _Clause) -> str:
        node = args[index]
        if clause.verb == "s":
            bad = verify_string(node)
            if bad is not None:
                raise _clause_error("s", type_name_of(type_of(bad)), bad)
            return ""
        t = type_of(node)
        if t.kind != "dyn" and _kind(t) not in _ALLOWED[clause.verb]:
            kind = clause.verb.lower()
            raise _clause_error(kind, type_name_of(t), node)
        return ""

    try:
        _, used = _interpolate(fmt, len(args), render, runtime=False)
    except FormatError as exc:
        return exc.message, exc.node
    if len(args) > used:
        return (
            f"too many arguments supplied to string.format (expected {used}, got {len(args)})",
            None,
        )
    return None
