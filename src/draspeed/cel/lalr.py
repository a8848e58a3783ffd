"""The CEL parser's tables, precomputed, and the small LALR(1) driver that runs them.

Building the parser with lark from :mod:`draspeed.cel.grammar` takes ~0.5 s (grammar
loading and LALR analysis), and lark's contextual lexer then compiles one combined
regular expression per parser state on first use (~15 ms each, dozens of states):
a first ``allocate`` call with a short deadline would spend it all before the search.
So lark runs once, when the grammar changes (``python -m draspeed.cel.lalr`` writes
:mod:`draspeed.cel._lalr_tables`), and this module replays what lark's parser does:

- lexing: per parser state, the terminals the state accepts, tried in lark's order
  (priority, then longest pattern), keywords that also match ``IDENT`` retyped
  afterwards, ``WHITESPACE``/``COMMENT`` skipped; an input no accepted terminal
  matches is reported as lark reports it (the token the full lexer sees there as
  unexpected, or the character);
- parsing: shift/reduce by the table, trees shaped as lark shapes them (``?rule``
  inlining, ``-> alias`` names, ``_rule`` splicing, ``None`` for absent ``[optional]``
  items).

``Tree``/``Token`` are small stand-ins for lark's (``data``/``children``, a ``str``
with ``type``/``start_pos``). If the stored tables do not match the grammar (an edited
grammar not regenerated), they are rebuilt with lark in memory: slow, never wrong.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections.abc import Callable
from typing import Any

from draspeed.cel.grammar import GRAMMAR

_IGNORED = ("WHITESPACE", "COMMENT")


class Token(str):
    """A lexed token: the text, its terminal name and its offset in the source."""

    type: str
    start_pos: int

    def __new__(cls, type_: str, value: str, start_pos: int) -> Token:
        token = super().__new__(cls, value)
        token.type = type_
        token.start_pos = start_pos
        return token

    def __repr__(self) -> str:
        return f"Token({self.type!r}, {str(self)!r}, {self.start_pos})"


class Tree:
    """A parse-tree node: the rule (or alias) name and its children."""

    __slots__ = ("children", "data")

    def __init__(self, data: str, children: list[Any]) -> None:
        self.data = data
        self.children = children

    def __repr__(self) -> str:
        return f"Tree({self.data!r}, {self.children!r})"

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Tree) and self.data == other.data and self.children == other.children
        )

    __hash__ = None  # type: ignore[assignment]


class UnexpectedCharacter(Exception):
    """No terminal matches at ``pos``."""

    def __init__(self, pos: int) -> None:
        super().__init__(pos)
        self.pos = pos


class UnexpectedToken(Exception):
    """The parser cannot take ``token`` (type ``$END`` at the end of the input)."""

    def __init__(self, token: Token) -> None:
        super().__init__(token)
        self.token = token


# ----------------------------------------------------------------------------- tables


def grammar_digest() -> str:
    return hashlib.sha256(GRAMMAR.encode("utf-8")).hexdigest()


def build_tables() -> dict[str, Any]:
    """Run lark on the grammar and keep what its parser and contextual lexer use."""
    import lark
    from lark.lexer import BasicLexer

    built = lark.Lark(
        GRAMMAR, parser="lalr", lexer="contextual", keep_all_tokens=True, start="start"
    )
    frontend = built.parser
    table = frontend.parser.parser.parse_table
    contextual = frontend.lexer
    rules = list(built.rules)
    rule_index = {id(rule): i for i, rule in enumerate(rules)}

    lexers: list[dict[str, Any]] = []
    lexer_index: dict[int, int] = {}

    def describe(basic: BasicLexer) -> int:
        if id(basic) not in lexer_index:
            scanner = basic._build_scanner()
            callbacks: dict[str, Any] = basic.callback  # lark's UnlessCallback per terminal
            unless = {
                name: {t.pattern.value: t.name for t in callback.scanner.terminals}
                for name, callback in callbacks.items()
            }
            lexer_index[id(basic)] = len(lexers)
            lexers.append({"order": [t.name for t in scanner.terminals], "unless": unless})
        return lexer_index[id(basic)]

    root = describe(contextual.root_lexer)
    states: list[dict[str, Any]] = []
    for state in range(len(table.states)):
        actions = {}
        for symbol, (action, arg) in table.states[state].items():
            if action.name == "Shift":
                actions[symbol] = [0, arg]
            else:
                actions[symbol] = [1, rule_index[id(arg)]]
        states.append({"actions": actions, "lexer": describe(contextual.lexers[state])})
    return {
        "grammar_sha256": grammar_digest(),
        "lark_version": lark.__version__,
        "terminals": {t.name: t.pattern.to_regexp() for t in built.terminals},
        "ignore": sorted(built.ignore_tokens),
        "lexers": lexers,
        "root_lexer": root,
        "states": states,
        "start": table.start_states["start"],
        "end": table.end_states["start"],
        "rules": [_describe_rule(rule) for rule in rules],
    }


def _describe_rule(rule: Any) -> list[Any]:
    """[origin, length, tree name, inline single child, children plan, trailing Nones]
    where the plan, None when children pass as they are, lists (index, splice,
    Nones before) -- lark's ParseTreeBuilder and ChildFilterLALR, for keep_all_tokens."""
    options = rule.options
    size = len(rule.expansion)
    name = rule.alias or options.template_source or rule.origin.name
    nones = [0] * (size + 1)
    if options.empty_indices:
        runs = "".join(str(int(b)) for b in options.empty_indices).split("0")
        nones = [len(run) for run in runs]
    splice = [not sym.is_term and sym.name.startswith("_") for sym in rule.expansion]
    plan = None
    if options.empty_indices or any(splice):
        plan = [[i, splice[i], nones[i]] for i in range(size)]
    return [
        rule.origin.name,
        size,
        name,
        bool(options.expand1 and not rule.alias),
        plan,
        nones[size] if plan is not None else 0,
    ]


def write_tables(path: str) -> None:
    """Write the tables module (run after editing the grammar)."""
    tables = json.dumps(build_tables(), sort_keys=True, separators=(",", ":"))
    lines = "".join(f"    {tables[i : i + 80]!r}\n" for i in range(0, len(tables), 80))
    with open(path, "w", encoding="utf-8") as f:
        f.write(
            '"""Generated by ``python -m draspeed.cel.lalr`` from draspeed.cel.grammar '
            '(lark\'s LALR\nanalysis); do not edit."""\n\n'
            f"TABLES = (\n{lines})\n"
        )


# ----------------------------------------------------------------------------- parser


class Parser:
    """A thread-safe parser built from the tables (no state kept between parses)."""

    def __init__(self, tables: dict[str, Any]) -> None:
        self._patterns: dict[str, str] = tables["terminals"]
        self._compiled: dict[str, Callable[..., Any]] = {}
        self._lock = threading.Lock()
        self._ignore = frozenset(tables["ignore"])
        self._lexers: list[tuple[list[str], dict[str, dict[str, str]]]] = [
            (lexer["order"], lexer["unless"]) for lexer in tables["lexers"]
        ]
        self._root = tables["root_lexer"]
        self._actions: list[dict[str, tuple[int, int]]] = [
            {symbol: (action[0], action[1]) for symbol, action in state["actions"].items()}
            for state in tables["states"]
        ]
        self._state_lexer: list[int] = [state["lexer"] for state in tables["states"]]
        self._start: int = tables["start"]
        self._end: int = tables["end"]
        self._rules: list[tuple[str, int, str, bool, Any, int]] = [
            (r[0], r[1], r[2], r[3], r[4], r[5]) for r in tables["rules"]
        ]
        for name in self._patterns:  # ~5 ms now rather than inside the first parse
            self._matcher(name)

    def _matcher(self, name: str) -> Callable[..., Any]:
        found = self._compiled.get(name)
        if found is None:
            with self._lock:  # each terminal's pattern is compiled once, when first tried
                found = self._compiled.get(name)
                if found is None:
                    found = re.compile(self._patterns[name]).match
                    self._compiled[name] = found
        return found

    def _scan(self, lexer: int, text: str, pos: int) -> tuple[str, str] | None:
        order, unless = self._lexers[lexer]
        for name in order:
            m = self._matcher(name)(text, pos)
            if m is not None:
                value = m.group(0)
                retype = unless.get(name)
                if retype is not None:
                    name = retype.get(value, name)
                return name, value
        return None

    def _next_token(self, state: int, text: str, pos: int) -> tuple[Token | None, int]:
        """The next token for the parser in ``state`` (None at the end) and the offset
        after it."""
        lexer = self._state_lexer[state]
        end = len(text)
        while pos < end:
            found = self._scan(lexer, text, pos)
            if found is None:
                # As lark's contextual lexer: what the full lexer sees here is the
                # unexpected token; if it sees nothing either, the character is.
                found = self._scan(self._root, text, pos)
                if found is None or found[0] in self._ignore:
                    raise UnexpectedCharacter(pos)
                raise UnexpectedToken(Token(found[0], found[1], pos))
            name, value = found
            if name in self._ignore:
                pos += len(value)
                continue
            return Token(name, value, pos), pos + len(value)
        return None, pos

    def parse(self, text: str) -> Tree:
        actions = self._actions
        rules = self._rules
        states = [self._start]
        values: list[Any] = []
        pos = 0
        last_pos = 0
        while True:
            token, pos = self._next_token(states[-1], text, pos)
            at_end = token is None
            if token is None:
                token = Token("$END", "", last_pos)
            else:
                last_pos = token.start_pos
            while True:
                action = actions[states[-1]].get(token.type)
                if action is None:
                    raise UnexpectedToken(token)
                if action[0] == 0:  # shift
                    states.append(action[1])
                    values.append(token)
                    break
                origin, size, name, inline_one, plan, trailing = rules[action[1]]
                if size:
                    children = values[-size:]
                    del states[-size:]
                    del values[-size:]
                else:
                    children = []
                if plan is not None:
                    children = _arrange(children, plan, trailing)
                value = children[0] if inline_one and len(children) == 1 else Tree(name, children)
                states.append(actions[states[-1]][origin][1])
                values.append(value)
                if at_end and states[-1] == self._end:
                    result: Tree = values[-1]
                    return result


def _arrange(children: list[Any], plan: list[list[Any]], trailing: int) -> list[Any]:
    out: list[Any] = []
    for index, splice, nones in plan:
        if nones:
            out.extend([None] * nones)
        if splice:
            out.extend(children[index].children)
        else:
            out.append(children[index])
    if trailing:
        out.extend([None] * trailing)
    return out


_parser_lock = threading.Lock()
_parser: Parser | None = None


def parser() -> Parser:
    """The CEL parser (built from the stored tables on first use, ~10 ms)."""
    global _parser
    if _parser is None:
        with _parser_lock:
            if _parser is None:
                from draspeed.cel._lalr_tables import TABLES

                tables = json.loads(TABLES)
                if tables.get("grammar_sha256") != grammar_digest():
                    tables = build_tables()  # the grammar changed: correct, but slow
                _parser = Parser(tables)
    return _parser


if __name__ == "__main__":
    import pathlib

    write_tables(str(pathlib.Path(__file__).with_name("_lalr_tables.py")))
