"""Label selectors as ``kubectl -l`` parses them (apimachinery's ``labels.Parse``).

Requirements separated by commas, all of which must hold: ``key=value``,
``key==value``, ``key!=value``, ``key in (a,b)``, ``key notin (a,b)``, ``key``
(exists), ``!key`` (does not exist), ``key>1``, ``key<1`` (integers). Keys and values
are checked as label keys and values; errors carry apimachinery's texts
(``unable to parse requirement: ...``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from draspeed.api.names import check_label_name, check_label_value
from draspeed.errors import DraspeedError

_SPECIAL = "=!(),><"
_WHITESPACE = " \t\r\n"
_TOKENS = {
    ")": "closed-par",
    ",": "comma",
    "!": "does-not-exist",
    "==": "double-equals",
    "=": "equals",
    ">": "greater-than",
    "in": "in",
    "<": "less-than",
    "!=": "not-equals",
    "notin": "not-in",
    "(": "open-par",
}
_BINARY = "in, notin, =, ==, !=, gt, lt"


class SelectorError(DraspeedError, ValueError):
    """A label selector that does not parse (apimachinery's text)."""


@dataclass(frozen=True, slots=True)
class Requirement:
    key: str
    operator: str  # in, notin, =, ==, !=, exists, !, gt, lt
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        op = self.operator
        if op in ("in", "=", "=="):
            return self.key in labels and labels[self.key] in self.values
        if op in ("notin", "!="):
            return self.key not in labels or labels[self.key] not in self.values
        if op == "exists":
            return self.key in labels
        if op == "!":
            return self.key not in labels
        value = _go_int64(labels.get(self.key))
        if value is None:
            return False
        bound = int(self.values[0])
        return value > bound if op == "gt" else value < bound


@dataclass(frozen=True, slots=True)
class Selector:
    """Requirements that must all hold; the empty selector matches everything."""

    requirements: tuple[Requirement, ...] = ()
    text: str = ""  # as given (for a server-side labelSelector)

    def matches(self, labels: Mapping[str, str]) -> bool:
        return all(r.matches(labels) for r in self.requirements)


def parse_selector(text: str) -> Selector:
    """A label selector; SelectorError with apimachinery's message if it does not parse."""
    return Selector(tuple(sorted(_Parser(text).parse(), key=lambda r: r.key)), text)


def _lex(text: str) -> list[tuple[str, str]]:
    items: list[tuple[str, str]] = []
    pos, n = 0, len(text)
    while True:
        while pos < n and text[pos] in _WHITESPACE:
            pos += 1
        if pos >= n:
            items.append(("end", ""))
            return items
        if text[pos] in _SPECIAL:
            # The longest run of special symbols that is a token.
            buffer, last = "", None
            while pos < n and text[pos] in _SPECIAL:
                buffer += text[pos]
                pos += 1
                if buffer in _TOKENS:
                    last = (_TOKENS[buffer], buffer)
                elif last is not None:
                    pos -= 1
                    break
            if last is None:
                items.append(("error", f"error expected: keyword found '{buffer}'"))
            else:
                items.append(last)
            continue
        start = pos
        while pos < n and text[pos] not in _SPECIAL and text[pos] not in _WHITESPACE:
            pos += 1
        word = text[start:pos]
        items.append((_TOKENS.get(word, "identifier"), word))


class _Parser:
    def __init__(self, text: str) -> None:
        self.items = _lex(text)
        self.position = 0

    def lookahead(self, values: bool = True) -> tuple[str, str]:
        return self._as(self.items[self.position], values)

    def consume(self, values: bool = True) -> tuple[str, str]:
        self.position += 1
        return self._as(self.items[self.position - 1], values)

    @staticmethod
    def _as(item: tuple[str, str], values: bool) -> tuple[str, str]:
        # Where values are expected, "in" and "notin" are plain words.
        if values and item[0] in ("in", "not-in"):
            return "identifier", item[1]
        return item

    def parse(self) -> list[Requirement]:
        found: list[Requirement] = []
        while True:
            tok, lit = self.lookahead()
            if tok in ("identifier", "does-not-exist"):
                try:
                    found.append(self.requirement())
                except SelectorError as exc:
                    raise SelectorError(f"unable to parse requirement: {exc}") from None
                tok, lit = self.consume()
                if tok == "end":
                    return found
                if tok == "comma":
                    tok2, lit2 = self.lookahead()
                    if tok2 not in ("identifier", "does-not-exist"):
                        raise SelectorError(f"found '{lit2}', expected: identifier after ','")
                    continue
                raise SelectorError(f"found '{lit}', expected: ',' or 'end of string'")
            if tok == "end":
                return found
            raise SelectorError(f"found '{lit}', expected: !, identifier, or 'end of string'")

    def requirement(self) -> Requirement:
        operator = ""
        tok, key = self.consume()
        if tok == "does-not-exist":
            operator = "!"
            tok, key = self.consume()
        if tok != "identifier":
            raise SelectorError(f"found '{key}', expected: identifier")
        _check_key(key)
        if self.lookahead()[0] in ("end", "comma"):
            return Requirement(key, operator or "exists")
        if operator:
            return Requirement(key, operator)
        operator = self.operator()
        values = self.values() if operator in ("in", "notin") else self.exact_value()
        return _requirement(key, operator, sorted(values))

    def operator(self) -> str:
        tok, lit = self.consume(values=False)
        ops = {
            "in": "in",
            "equals": "=",
            "double-equals": "==",
            "greater-than": "gt",
            "less-than": "lt",
            "not-in": "notin",
            "not-equals": "!=",
        }
        if tok not in ops:
            raise SelectorError(f"found '{lit}', expected: {_BINARY}")
        return ops[tok]

    def values(self) -> set[str]:
        tok, lit = self.consume()
        if tok != "open-par":
            raise SelectorError(f"found '{lit}' expected: '('")
        tok, lit = self.lookahead()
        if tok in ("identifier", "comma"):
            found = self.identifiers()
            if self.consume()[0] != "closed-par":
                raise SelectorError(f"found '{lit}', expected: ')'")
            return found
        if tok == "closed-par":
            self.consume()
            return {""}
        raise SelectorError(f"found '{lit}', expected: ',', ')' or identifier")

    def identifiers(self) -> set[str]:
        found: set[str] = set()
        while True:
            tok, lit = self.consume()
            if tok == "identifier":
                found.add(lit)
                tok2, lit2 = self.lookahead()
                if tok2 == "comma":
                    continue
                if tok2 == "closed-par":
                    return found
                raise SelectorError(f"found '{lit2}', expected: ',' or ')'")
            if tok == "comma":
                if not found:
                    found.add("")
                tok2, _ = self.lookahead()
                if tok2 in ("closed-par", "comma"):
                    found.add("")
                if tok2 == "closed-par":
                    return found
                continue
            raise SelectorError(f"found '{lit}', expected: ',', or identifier")

    def exact_value(self) -> set[str]:
        tok, _ = self.lookahead()
        if tok in ("end", "comma"):
            return {""}
        tok, lit = self.consume()
        if tok == "identifier":
            return {lit}
        raise SelectorError(f"found '{lit}', expected: identifier")


def _check_key(key: str) -> None:
    problem = check_label_name(key)
    if problem is not None:
        raise SelectorError(f": {problem}")


def _requirement(key: str, operator: str, values: list[str]) -> Requirement:
    problems = []
    if operator in ("gt", "lt"):
        for i, v in enumerate(values):
            if _go_int64(v) is None:
                problems.append(
                    f"values[{i}]: Invalid value: \"{v}\": for 'Gt', 'Lt' operators, "
                    "the value must be an integer"
                )
    for i, v in enumerate(values):
        problem = check_label_value(v)
        if problem is not None:
            problems.append(f"values[{i}]: {problem}")
    if len(problems) == 1:
        raise SelectorError(problems[0])
    if problems:
        raise SelectorError("[" + ", ".join(problems) + "]")
    return Requirement(key, operator, tuple(values))


def _go_int64(text: str | None) -> int | None:
    """strconv.ParseInt(text, 10, 64), or None."""
    if text is None:
        return None
    body = text[1:] if text[:1] in "+-" else text
    if not body or not body.isascii() or not body.isdigit():
        return None
    value = int(text)
    return value if -(2**63) <= value < 2**63 else None
