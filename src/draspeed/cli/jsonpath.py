"""``-o jsonpath=TEMPLATE``: kubectl's JSONPath templates (client-go ``util/jsonpath``).

Text outside braces is printed as is; each ``{...}`` action is evaluated against the
document and its results printed, separated by spaces: strings bare, numbers and
booleans as Go prints them, maps and lists as compact JSON. Actions: fields
(``.metadata.name``, ``['key']``), ``*``, ``..`` (recursive descent), indexes and
slices (``[0]``, ``[-1]``, ``[1:3]``, ``[::2]``), unions (``[0,2]``), filters
(``[?(@.status=="fits")]``, ``==``, ``!=``, ``<``, ``<=``, ``>``, ``>=`` or existence),
quoted literals (``{"\\n"}``) and ``{range ...}...{end}``. As kubectl's printer, a
missing key prints nothing rather than failing.

Written here rather than taken from a library: the Python JSONPath libraries
(jsonpath-ng and its forks) evaluate expressions, not kubectl's template language
(text around actions, ``range``/``end``, literals, its output format).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from draspeed.errors import DraspeedError

_DICT_KEY = re.compile(r"^'([^']*)'$")
_SLICE = re.compile(r"^(-?\d*)(:-?\d*)?(:-?\d*)?$")
_FILTER = re.compile(r"^([^!<>=]+)([!<>=]+)(.+?)$", re.S)
_TERMINATORS = set(" \t\r\n.,[]$@{}")


class JSONPathError(DraspeedError, ValueError):
    """A template that does not parse, or cannot be evaluated (kubectl's texts)."""


# ------------------------------------------------------------------------------ nodes


@dataclass
class _Text:
    text: str


@dataclass
class _Field:
    name: str


@dataclass
class _Wildcard:
    pass


@dataclass
class _Recursive:
    pass


@dataclass
class _Slice:
    start: int | None
    stop: int | None
    stop_derived: bool  # "[i]": stop is i+1
    step: int | None


@dataclass
class _Union:
    branches: list[list[Any]]


@dataclass
class _Filter:
    left: list[Any]
    right: list[Any]
    operator: str  # "exists" or a comparison


@dataclass
class _Literal:
    value: Any  # int, float or bool


@dataclass
class _Identifier:
    name: str  # range, end


@dataclass
class _Action:
    nodes: list[Any]


# ----------------------------------------------------------------------------- parser


def parse(template: str) -> list[_Text | _Action]:
    """The template's text and actions; JSONPathError on a syntax error."""
    return _Parser(template).parse()


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def parse(self) -> list[_Text | _Action]:
        out: list[_Text | _Action] = []
        while self.pos < len(self.text):
            brace = self.text.find("{", self.pos)
            if brace < 0:
                out.append(_Text(self.text[self.pos :]))
                break
            if brace > self.pos:
                out.append(_Text(self.text[self.pos : brace]))
            self.pos = brace + 1
            out.append(_Action(self.inside()))
        return out

    def peek(self, n: int = 1) -> str:
        return self.text[self.pos : self.pos + n]

    def inside(self) -> list[Any]:
        nodes: list[Any] = []
        while True:
            if self.peek() == "}":
                self.pos += 1
                return nodes
            if self.peek(3) == "[?(":
                nodes.append(self.filter())
                continue
            if self.peek(2) == "..":
                if nodes and isinstance(nodes[-1], _Recursive):
                    raise JSONPathError("invalid multiple recursive descent")
                self.pos += 2
                nodes.append(_Recursive())
                if self.peek() and _alnum(self.peek()):
                    nodes.append(self.field())
                continue
            if self.pos >= len(self.text) or self.peek() in "\r\n":
                raise JSONPathError("unclosed action")
            c = self.peek()
            if c in " @$":
                self.pos += 1
            elif c == "[":
                nodes.append(self.array())
            elif c in "\"'":
                nodes.append(self.quote(c))
            elif c == ".":
                self.pos += 1
                nodes.append(self.field())
            elif c in "+-" or c.isdigit():
                nodes.append(self.number())
            elif _alnum(c):
                nodes.append(self.identifier())
            else:
                raise JSONPathError(f"unrecognized character in action: {_go_rune(c)}")

    def field(self) -> _Field | _Wildcard:
        start = self.pos
        while self.pos < len(self.text):
            c = self.text[self.pos]
            if c == "\\":
                self.pos += 2
                continue
            if c in _TERMINATORS:
                break
            self.pos += 1
        value = self.text[start : self.pos]
        if value == "*":
            return _Wildcard()
        return _Field(value.replace("\\", ""))

    def identifier(self) -> _Literal | _Identifier:
        start = self.pos
        while self.pos < len(self.text) and self.text[self.pos] not in _TERMINATORS:
            self.pos += 1
        value = self.text[start : self.pos]
        if value in ("true", "false"):
            return _Literal(value == "true")
        return _Identifier(value)

    def number(self) -> _Literal:
        start = self.pos
        if self.peek() in "+-":
            self.pos += 1
        while self.pos < len(self.text) and (
            self.text[self.pos] == "." or self.text[self.pos].isdigit()
        ):
            self.pos += 1
        value = self.text[start : self.pos]
        try:
            return _Literal(int(value))
        except ValueError:
            pass
        try:
            return _Literal(float(value))
        except ValueError:
            raise JSONPathError(f"cannot parse number {value}") from None

    def quote(self, end: str) -> _Text:
        start = self.pos
        self.pos += 1
        while True:
            if self.pos >= len(self.text) or self.text[self.pos] == "\n":
                raise JSONPathError("unterminated quoted string")
            c = self.text[self.pos]
            self.pos += 1
            if c == end and self.text[self.pos - 2] != "\\":
                break
        raw = self.text[start : self.pos]
        try:
            return _Text(_unquote(raw))
        except ValueError as exc:
            raise JSONPathError(f"unquote string {raw} error {exc}") from None

    def array(self) -> Any:
        end = self.pos
        while True:
            end += 1
            if end >= len(self.text) or self.text[end] == "\n":
                raise JSONPathError("unterminated array")
            if self.text[end] == "]":
                break
        body = self.text[self.pos + 1 : end]
        self.pos = end + 1
        if body == "*":
            body = ":"
        parts = body.split(",")
        if len(parts) > 1:
            return _Union([_action(f"[{p.strip()}]") for p in parts])
        key = _DICT_KEY.match(body)
        if key:
            nodes = _action(f".{key.group(1)}")
            return nodes[0] if len(nodes) == 1 else _Union([nodes])
        match = _SLICE.match(body)
        if match is None:
            raise JSONPathError(f"invalid array index {body}")
        start_text, stop_text, step_text = match.groups()
        start = int(start_text) if start_text else None
        stop: int | None = (start or 0) + 1
        derived = stop_text is None
        if stop_text is not None:
            stop = int(stop_text[1:]) if stop_text[1:] else None
        step = int(step_text[1:]) if step_text and step_text[1:] else None
        return _Slice(start, stop, derived, step)

    def filter(self) -> _Filter:
        self.pos += 3
        start = self.pos
        begin = end = False
        pair = ""
        while True:
            if self.pos >= len(self.text) or self.text[self.pos] == "\n":
                raise JSONPathError("unterminated filter")
            c = self.text[self.pos]
            self.pos += 1
            if c in "\"'":
                if not begin:
                    begin, pair = True, c
                    continue
                if self.text[self.pos - 2] != "\\" and c == pair:
                    end = True
            elif c == ")" and begin == end:
                break
        if self.peek() != "]":
            raise JSONPathError("unclosed array expect ]")
        self.pos += 1
        body = self.text[start : self.pos - 2]
        match = _FILTER.match(body)
        if match is None:
            return _Filter(_action(body), [], "exists")
        return _Filter(_action(match.group(1)), _action(match.group(3)), match.group(2))


def _action(text: str) -> list[Any]:
    parsed = _Parser("{" + text + "}").parse()
    action = parsed[0]
    assert isinstance(action, _Action)
    return action.nodes


def _alnum(c: str) -> bool:
    return c == "_" or c.isalpha() or c.isdigit()


def _go_rune(c: str) -> str:
    """Go's %#U of a rune: U+0023 '#'."""
    return f"U+{ord(c):04X} '{c}'"


def _unquote(raw: str) -> str:
    quote, body = raw[0], raw[1:-1]
    if quote not in "\"'" or raw[-1] != quote:
        raise ValueError("invalid syntax")
    if "\\" not in body:
        return body
    return str(json.loads('"' + body.replace('\\"', '"').replace('"', '\\"') + '"'))


# -------------------------------------------------------------------------- execution


def execute(template: str, data: Any) -> str:
    """The template applied to ``data`` (JSON-shaped), as kubectl prints it."""
    nodes = parse(template)
    out: list[str] = []
    _run(nodes, data, out, 0)
    return "".join(out)


def _run(nodes: list[_Text | _Action], data: Any, out: list[str], depth: int) -> int:
    """Print ``nodes`` against ``data``; the index after the ``{end}`` that closed a
    range of depth ``depth`` (or len(nodes))."""
    i = 0
    while i < len(nodes):
        node = nodes[i]
        if isinstance(node, _Text):
            out.append(node.text)
            i += 1
            continue
        first = node.nodes[0] if node.nodes else None
        if isinstance(first, _Identifier) and first.name == "end":
            if depth == 0:
                raise JSONPathError("not in range, nothing to end")
            return i + 1
        if isinstance(first, _Identifier) and first.name == "range":
            items = _walk([data], node.nodes[1:])
            body = nodes[i + 1 :]
            consumed = _skip_range(body)
            for item in items:
                _run(body, item, out, depth + 1)
            if not items:
                _run(body, None, [], depth + 1)  # as upstream: checked, not printed
            i += 1 + consumed
            continue
        _print(_walk([data], node.nodes), out)
        i += 1
    return i


def _skip_range(body: list[_Text | _Action]) -> int:
    """How many nodes of ``body`` a range covers (through its ``{end}``)."""
    depth = 0
    for k, node in enumerate(body):
        if isinstance(node, _Action) and node.nodes and isinstance(node.nodes[0], _Identifier):
            name = node.nodes[0].name
            if name == "range":
                depth += 1
            elif name == "end":
                if depth == 0:
                    return k + 1
                depth -= 1
    return len(body)


def _walk(values: list[Any], nodes: list[Any]) -> list[Any]:
    for node in nodes:
        values = _step(values, node)
    return values


def _step(values: list[Any], node: Any) -> list[Any]:
    if isinstance(node, _Text):
        return [node.text]
    if isinstance(node, _Literal):
        return [node.value for _ in values]
    if isinstance(node, _Field):
        return [v[node.name] for v in values if isinstance(v, dict) and node.name in v]
    if isinstance(node, _Wildcard):
        return [c for v in values for c in _children(v)]
    if isinstance(node, _Recursive):
        return [d for v in values for d in _descend(v)]
    if isinstance(node, _Slice):
        return [item for v in values if v is not None for item in _slice(v, node)]
    if isinstance(node, _Union):
        return [r for branch in node.branches for r in _walk(values, branch)]
    if isinstance(node, _Filter):
        return [r for v in values for r in _filter(v, node)]
    if isinstance(node, _Identifier):
        raise JSONPathError(f"unrecognized identifier {node.name}")
    raise JSONPathError(f"unexpected Node {node!r}")


def _children(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [value[k] for k in sorted(value)]
    if isinstance(value, list):
        return list(value)
    if isinstance(value, str):
        return list(value.encode())
    return []


def _descend(value: Any) -> Iterator[Any]:
    children = _children(value) if value is not None else []
    if children:
        yield value
        for child in children:
            yield from _descend(child)


def _slice(value: Any, node: _Slice) -> list[Any]:
    if not isinstance(value, list):
        raise JSONPathError(f"{_go_type(value)} is not array or slice")
    n = len(value)
    start = node.start or 0
    if start < 0:
        start += n
    stop = n if node.stop is None else node.stop
    if stop < 0 or (stop == 0 and node.stop_derived):
        stop += n
    if stop == start:
        return []
    if start >= n or start < 0:
        raise JSONPathError(f"array index out of bounds: index {start}, length {n}")
    if stop > n or stop < 0:
        raise JSONPathError(f"array index out of bounds: index {stop - 1}, length {n}")
    if start > stop:
        raise JSONPathError(f"starting index {start} is greater than ending index {stop}")
    step = 1 if node.step is None else node.step
    if step <= 0:
        raise JSONPathError("step must be > 0")
    return value[start:stop:step]


def _filter(value: Any, node: _Filter) -> list[Any]:
    if not isinstance(value, list):
        raise JSONPathError(f"{_go_value(value)} is not array or slice and cannot be filtered")
    kept = []
    for item in value:
        lefts = _walk([item], node.left)
        if node.operator == "exists":
            if lefts:
                kept.append(item)
            continue
        if not lefts:
            continue
        if len(lefts) > 1:
            raise JSONPathError("can only compare one element at a time")
        rights = _walk([item], node.right)
        if not rights:
            continue
        if len(rights) > 1:
            raise JSONPathError("can only compare one element at a time")
        if _compare(lefts[0], rights[0], node.operator):
            kept.append(item)
    return kept


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "string"
    raise JSONPathError("invalid type for comparison")


def _compare(left: Any, right: Any, operator: str) -> bool:
    """Go template's eq/ne/lt/le/gt/ge on basic kinds, with their errors."""
    kl, kr = _kind(left), _kind(right)
    if kl != kr:
        raise JSONPathError("incompatible types for comparison")
    if operator in ("==", "!="):
        return (left == right) == (operator == "==")
    if operator not in ("<", "<=", ">", ">="):
        raise JSONPathError(f"unrecognized filter operator {operator}")
    if kl == "bool":
        raise JSONPathError("invalid type for comparison")
    less = left < right
    if operator == "<":
        return bool(less)
    if operator == ">=":
        return not less
    less_equal = less or left == right
    return bool(less_equal) if operator == "<=" else not less_equal


def _print(results: list[Any], out: list[str]) -> None:
    texts = []
    for value in results:
        if isinstance(value, (dict, list)):
            texts.append(go_json(value))
        else:
            texts.append(_go_text(value))
    out.append(" ".join(texts))


def go_json(value: Any) -> str:
    """Go's ``json.Marshal``: compact, map keys sorted, ``<``, ``>``, ``&`` escaped."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _go_text(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return _go_float(value)
    return str(value)


def _go_float(value: float) -> str:
    """fmt's %v of a float64: the shortest digits, plain unless the exponent is below
    -4 or at least 21 (Python's repr agrees except for integral values up to 1e21)."""
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if math.isnan(value):
        return "NaN"
    if value == int(value) and abs(value) < 1e21:
        return str(int(value))
    return repr(value)


def _go_type(value: Any) -> str:
    if isinstance(value, dict):
        return "map[string]interface {}"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int64"
    if isinstance(value, float):
        return "float64"
    if isinstance(value, str):
        return "string"
    return "interface {}"


def _go_value(value: Any) -> str:
    if isinstance(value, dict):
        inner = " ".join(f"{k}:{_go_value(v)}" for k, v in sorted(value.items()))
        return f"map[{inner}]"
    if isinstance(value, list):
        return "[" + " ".join(_go_value(v) for v in value) + "]"
    if value is None:
        return "<nil>"
    return _go_text(value)
