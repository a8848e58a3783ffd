"""Parse CEL text into :mod:`draspeed.cel.ast` nodes, expanding macros as cel-go does.

Lexing and LALR parsing replay lark's tables for :mod:`draspeed.cel.grammar` (derived
from cel-python's ``cel.lark``), precomputed in :mod:`draspeed.cel.lalr`. This module
builds the AST, folds signed literals, unescapes strings, expands the macros (has, all,
exists, exists_one, map, filter, the two-variable comprehensions, transformList/Map/
MapEntry, sortBy, cel.bind), bounds the nesting depth and reports errors in cel-go's
``ERROR: <input>:line:col: message`` form with the source snippet and caret.
"""

from __future__ import annotations

import copy
import math
from typing import Any

from draspeed.cel.ast import (
    Bind,
    Call,
    Comprehension,
    Const,
    CreateMessage,
    Ident,
    Index,
    ListLit,
    Logical,
    MapLit,
    Node,
    Select,
    Ternary,
)
from draspeed.cel.lalr import Token, Tree, UnexpectedCharacter, UnexpectedToken
from draspeed.cel.lalr import parser as _lalr_parser
from draspeed.cel.literals import literal_value
from draspeed.cel.syntax_errors import NO_LOCATION, RECURSION_LIMIT, UNPLACED, syntax_errors

INT64_MIN = -(1 << 63)
INT64_MAX = (1 << 63) - 1
UINT64_MAX = (1 << 64) - 1


RESERVED = frozenset(
    [
        "as",
        "break",
        "const",
        "continue",
        "else",
        "false",
        "for",
        "function",
        "if",
        "import",
        "in",
        "let",
        "loop",
        "package",
        "namespace",
        "null",
        "return",
        "true",
        "var",
        "void",
        "while",
    ]
)

_BINARY = {
    "<": "_<_",
    "<=": "_<=_",
    ">": "_>_",
    ">=": "_>=_",
    "==": "_==_",
    "!=": "_!=_",
    "in": "@in",
    "+": "_+_",
    "-": "_-_",
    "*": "_*_",
    "/": "_/_",
    "%": "_%_",
}


class ParseError(Exception):
    """One or more parse errors, already formatted like cel-go's issues."""


# cel-go's maxErrorsToReport: errors past it are counted, not kept.
MAX_ERRORS = 100


class ErrorList:
    """Collects ``(offset, message)`` issues and renders them like cel-go's Errors."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.items: list[tuple[int, str]] = []
        self.dropped = 0  # reported past cel-go's limit: counted, not kept

    def add(self, offset: int, message: str) -> None:
        # cel-go keeps the first MAX_ERRORS errors reported (in report order, before
        # sorting them by place) and counts the rest.
        if len(self.items) >= MAX_ERRORS:
            self.dropped += 1
            return
        self.items.append((offset, message))

    def render(self) -> str:
        lines = self.source.split("\n")
        out: list[str] = []
        for offset, message in sorted(self.items, key=lambda item: item[0]):
            if offset == NO_LOCATION:  # cel-go prints no place and no snippet for these
                out.append(f"ERROR: <input>:-1:0: {message}")
                continue
            if not self.source:  # (cel-go places an empty text's error before it, no line)
                out.append(f"ERROR: <input>:1:0: {message}")
                continue
            # (UNPLACED is line 1, column -1: printed as column 0, no dot before the caret.)
            line, col = (1, -1) if offset == UNPLACED else _line_col(self.source, offset)
            text = f"ERROR: <input>:{line}:{col + 1}: {message}"
            snippet = lines[line - 1] if 0 < line <= len(lines) else ""
            snippet = snippet.replace("\t", " ")
            caret = "".join("\uff0e" if ord(ch) > 0x7F else "." for ch in snippet[: max(col, 0)])
            caret += "\uff3e" if 0 <= col < len(snippet) and ord(snippet[col]) > 0x7F else "^"
            text += "\n | " + snippet + "\n | " + caret
            out.append(text)
        if self.dropped:
            out.append(f"{self.dropped} more errors were truncated")
        return "\n".join(out)


def _line_col(source: str, offset: int) -> tuple[int, int]:
    offset = max(0, min(offset, len(source)))
    line = source.count("\n", 0, offset) + 1
    start = source.rfind("\n", 0, offset) + 1
    return line, offset - start


def parse(source: str, *, macros: bool = True) -> Node:
    """Parse ``source``; raises :class:`ParseError` with cel-go-formatted issues.
    Without ``macros``, has(), all(), cel.bind() etc. stay ordinary calls."""
    errors = ErrorList(source)
    # cel-go's ANTLR parser decides what is a syntax error, and what it says: every
    # error, with the tokens it expected.
    reported = syntax_errors(source, _Builder(ErrorList(source), macros))
    if reported:
        errors.items = reported
        raise ParseError(errors.render())
    try:
        tree = _lalr_parser().parse(source)
    except (UnexpectedCharacter, UnexpectedToken) as exc:
        # A form nested too deep for syntax_errors: where it stopped.
        if isinstance(exc, UnexpectedCharacter):
            text = source[exc.pos]
            errors.add(exc.pos, f"Syntax error: token recognition error at: '{text}'")
        elif exc.token.type == "$END":
            errors.add(len(source), "Syntax error: mismatched input '<EOF>'")
        else:
            errors.add(exc.token.start_pos, f"Syntax error: mismatched input '{exc.token}'")
        raise ParseError(errors.render()) from None
    try:
        node = _Builder(errors, macros).build(tree)
    except RecursionError:
        # cel-go's visitor counts its nesting of compound nodes (_NESTING_RULES).
        errors.items = [(NO_LOCATION, "max recursion depth exceeded")]
        raise ParseError(errors.render()) from None
    if errors.items:
        raise ParseError(errors.render())
    return node


def _literal_problem(node: Const) -> str | None:
    """A number literal out of its type's range (after sign folding), as cel-go's
    visitor reports it whatever else it reports (a macro's argument included)."""
    if node.kind == "int" and not INT64_MIN <= node.value <= INT64_MAX:
        return "invalid int literal"
    if node.kind == "uint" and not 0 <= node.value <= UINT64_MAX:
        return "invalid uint literal"
    if node.kind == "double" and math.isinf(node.value):
        return "invalid double literal"  # Go's ParseFloat: a range error
    return None


def _qualified_name(node: Node) -> str | None:
    """``a.b.Msg`` of the identifiers and selections it was read as, else None."""
    if isinstance(node, Ident):
        return node.name
    if isinstance(node, Select) and not (node.optional or node.test_only):
        operand = _qualified_name(node.operand)
        return None if operand is None else f"{operand}.{node.field}"
    return None


def _pos(tok: Token) -> int:
    return tok.start_pos or 0


# What cel-go's visitor counts towards its recursion limit: the compound expression,
# relation, calc, select, member call and index nodes. Parentheses, literals and calls
# of global functions open parse rules instead, which its parse listener bounds
# (syntax_errors).
# cel-go's accumulator names (the hidden one and the classic): no iteration variable's.
_ACCUMULATORS = ("@result", "__result__")
# What sortBy may sort: in cel-go, a list, select, identifier, comprehension or call
# (operators, indexes and optional selects are calls there; cel.bind a comprehension).
_SORTABLE = (ListLit, Select, Ident, Comprehension, Bind, Call, Index, Logical, Ternary)

_NESTING_RULES = frozenset(
    {"ternary", "binary", "select", "opt_select", "member_call", "index", "opt_index"}
)


# The member-chain rules, each with its receiver as first child.
_MEMBER_RULES = frozenset({"select", "opt_select", "member_call", "index", "opt_index"})


def _leading_number(item: Any) -> Token | None:
    """The INT or FLOAT token a member chain starts with (no parentheses between)."""
    while isinstance(item, Tree) and item.data in _MEMBER_RULES:
        item = item.children[0]
    if isinstance(item, Tree) and item.data == "literal":
        tok = item.children[0]
        if isinstance(tok, Token) and tok.type in ("INT", "FLOAT"):
            return tok
    return None


def _tokens(items: list[Any]) -> list[Token]:
    return [t for t in items if isinstance(t, Token)]


class _Builder:
    """Turns the lark tree into AST nodes; the walk is explicit-stack for deep trees."""

    def __init__(self, errors: ErrorList, macros: bool = True) -> None:
        self.errors = errors
        self.macros = macros
        self._depth = 0
        self.too_deep = False
        # id of an INT or FLOAT token -> the '-' that cel-go's literal rule gives it.
        self._signed: dict[int, Token] = {}
        # id of a Logical node -> the offsets of its chain's operators (cel-go places
        # the chain at its middle operator: it builds a balanced tree of them).
        self._chain: dict[int, list[int]] = {}

    def build(self, tree: Tree) -> Node:
        return self._node(tree.children[0])

    # The tree is at most a few hundred levels deep (bounded above by the depth check);
    # recursion keeps the builder readable and RecursionError is reported as cel-go does.
    def _node(self, item: Any) -> Node:
        if isinstance(item, Token):
            raise AssertionError(f"unexpected token {item!r}")
        method = getattr(self, "_" + item.data)
        # cel-go bounds the nesting of expression, relation, calc, select, call and
        # index contexts; parentheses, list/map literals and call arguments each open
        # a nested expression.
        nests = item.data in _NESTING_RULES
        if nests:
            self._depth += 1
            if self._depth > RECURSION_LIMIT:
                self.too_deep = True
                raise RecursionError
        try:
            result: Node = method(item.children)
        finally:
            if nests:
                self._depth -= 1
        return result

    # ---- operators ---------------------------------------------------------------

    def _ternary(self, ch: list[Any]) -> Node:
        return Ternary(_pos(ch[1]), self._node(ch[0]), self._node(ch[2]), self._node(ch[4]))

    def _logical(self, ch: list[Any]) -> Node:
        op = str(ch[1])
        left = self._node(ch[0])
        right = self._node(ch[2])
        operands: list[Node] = []
        for side in (left, right):
            if isinstance(side, Logical) and side.op == op:
                operands.extend(side.operands)
            else:
                operands.append(side)
        chained = isinstance(left, Logical) and left.op == op
        ops = [*(self._chain.pop(id(left), ()) if chained else ()), _pos(ch[1])]
        node = Logical(ops[len(ops) // 2], op, operands)
        self._chain[id(node)] = ops
        return node

    def _binary(self, ch: list[Any]) -> Node:
        op = ch[1]
        return Call(_pos(op), _BINARY[str(op)], [self._node(ch[0]), self._node(ch[2])])

    def _not_chain(self, ch: list[Any]) -> Node:
        ops = [t for t in _tokens(ch[:-1]) if t.type == "BANG"]
        minus = [t for t in _tokens(ch[:-1]) if t.type == "MINUS"]
        # "!-5": the sign belongs to the number (cel-go's literal rule).
        operand = self._neg_chain([*minus, ch[-1]]) if minus else self._node(ch[-1])
        if len(ops) % 2 == 0:
            return operand
        return Call(_pos(ops[0]), "!_", [operand])

    def _neg_chain(self, ch: list[Any]) -> Node:
        ops = _tokens(ch[:-1])
        member = ch[-1]
        # cel-go's literal rule takes a '-' into the int or double that leads a member
        # chain (-5, -5.x, -1.5[0]): ANTLR picks that first alternative of ``unary``.
        # With more than one '-' every one is the negation's (its loop is greedy), and
        # an even number of them cancels out.
        if len(ops) == 1:
            number = _leading_number(member)
            if number is not None:
                self._signed[id(number)] = ops[0]
                return self._node(member)
        operand = self._node(member)
        if len(ops) % 2 == 0:
            return operand
        return Call(_pos(ops[0]), "-_", [operand])

    # ---- members -----------------------------------------------------------------

    def _field_name(self, tok: Token) -> str:
        text = str(tok)
        if tok.type == "ESC_IDENT":
            # Kubernetes does not enable cel-go's EnableIdentifierEscapeSyntax.
            self.errors.add(_pos(tok), "unsupported syntax: '`'")
            return text[1:-1]
        return text

    def _select(self, ch: list[Any]) -> Node:
        return Select(_pos(ch[1]), self._node(ch[0]), self._field_name(ch[2]))

    def _opt_select(self, ch: list[Any]) -> Node:
        return Select(_pos(ch[1]), self._node(ch[0]), self._field_name(ch[3]), optional=True)

    def _index(self, ch: list[Any]) -> Node:
        return Index(_pos(ch[1]), self._node(ch[0]), self._node(ch[2]))

    def _opt_index(self, ch: list[Any]) -> Node:
        return Index(_pos(ch[1]), self._node(ch[0]), self._node(ch[3]), optional=True)

    def _args(self, item: Any) -> list[Node]:
        if item is None:
            return []
        return [self._node(c) for c in item.children if not isinstance(c, Token)]

    def _member_call(self, ch: list[Any]) -> Node:
        target = self._node(ch[0])
        name = str(ch[2])
        pos = _pos(ch[3])
        args = self._args(ch[4])
        return self._receiver_call_or_macro(pos, name, target, args)

    def _ident(self, ch: list[Any]) -> Node:
        tok = ch[-1]
        return self.ident(_pos(ch[0]), _pos(tok), str(tok), len(ch) == 2)

    def _global_call(self, ch: list[Any]) -> Node:
        leading_dot = isinstance(ch[0], Token) and ch[0].type == "DOT"
        name_tok = ch[1] if leading_dot else ch[0]
        lpar = ch[2] if leading_dot else ch[1]
        name = str(name_tok)
        # cel-go's visitor stops at a reserved name: the arguments are never read.
        args = self._args(ch[3] if leading_dot else ch[2]) if self.reads_arguments(name) else []
        return self.global_call(_pos(ch[0]), _pos(lpar), name, leading_dot, args)

    # What cel-go's visitor makes of identifiers and calls, here and (through
    # syntax_errors.TreeVisitor) on the tree ANTLR recovered after a syntax error.

    def ident(self, start: int, at: int, name: str, leading_dot: bool) -> Node:
        """``name`` or ``.name`` at ``at``."""
        refused = self._reserved(start, name)
        return refused or Ident(at, "." + name if leading_dot else name)

    def global_call(
        self, start: int, paren: int, name: str, leading_dot: bool, args: list[Node]
    ) -> Node:
        refused = self._reserved(start, name)
        return refused or self._global_call_or_macro(
            paren, "." + name if leading_dot else name, args
        )

    def _reserved(self, start: int, name: str) -> Node | None:
        """A reserved word is an error at the start, and the expression made of it is
        then no identifier (a macro refuses it); None for any other name."""
        if name not in RESERVED:
            return None
        self.errors.add(start, f"reserved identifier: {name}")
        return Node(start)

    def receiver_call(self, paren: int, name: str, target: Node, args: list[Node]) -> Node:
        return self._receiver_call_or_macro(paren, name, target, args)

    def reads_arguments(self, name: str) -> bool:
        return name not in RESERVED

    @property
    def problems(self) -> list[tuple[int, str]]:
        return self.errors.items

    def _paren(self, ch: list[Any]) -> Node:
        node = self._node(ch[1])
        self._chain.pop(id(node), None)  # a chain in parentheses is a chain of its own
        return node

    def _opt_entries(self, item: Any) -> list[tuple[bool, Node]]:
        out: list[tuple[bool, Node]] = []
        for c in item.children:
            if isinstance(c, Tree) and c.data == "opt_expr":
                optional = c.children[0] is not None
                out.append((optional, self._node(c.children[-1])))
        return out

    def _list_lit(self, ch: list[Any]) -> Node:
        inits = ch[1]
        if inits is None or not isinstance(inits, Tree):
            return ListLit(_pos(ch[0]), [])
        entries = self._opt_entries(inits)
        opt = frozenset(i for i, (o, _) in enumerate(entries) if o)
        return ListLit(_pos(ch[0]), [n for _, n in entries], opt)

    def _map_lit(self, ch: list[Any]) -> Node:
        inits = ch[1]
        if inits is None or not isinstance(inits, Tree):
            return MapLit(_pos(ch[0]), [])
        entries: list[tuple[Node, Node, bool]] = []
        parts = [
            c
            for c in inits.children
            if c is not None and not (isinstance(c, Token) and c.type == "COMMA")
        ]
        i = 0
        while i < len(parts):
            key_tree = parts[i]
            value = parts[i + 2]
            optional = key_tree.children[0] is not None
            entries.append((self._node(key_tree.children[-1]), self._node(value), optional))
            i += 3
        return MapLit(_pos(ch[0]), entries)

    def _create_message(self, ch: list[Any]) -> Node:
        brace = ch[1]
        name = _qualified_name(self._node(ch[0]))
        if name is None:  # (ANTLR refuses any other member before '{' first)
            self.errors.add(_pos(brace), "Syntax error: mismatched input '{'")
            return Const(_pos(brace), "null", None)
        fields: list[tuple[str, Node, bool, int]] = []
        inits = ch[2]
        if isinstance(inits, Tree):
            parts = [
                c
                for c in inits.children
                if c is not None and not (isinstance(c, Token) and c.type == "COMMA")
            ]
            first = parts[0].children[0] or parts[0].children[-1]  # where the list starts
            for i in range(0, len(parts), 3):
                field_tree, colon, value = parts[i], parts[i + 1], parts[i + 2]
                optional = field_tree.children[0] is not None
                name_tok = field_tree.children[-1]
                if name_tok.type == "ESC_IDENT":
                    # cel-go reports an escaped field name at the list and skips the
                    # field, value and all (Kubernetes does not enable the syntax).
                    self.errors.add(_pos(first), "unsupported syntax: '`'")
                    continue
                fields.append((str(name_tok), self._node(value), optional, _pos(colon)))
        return CreateMessage(_pos(brace), name, fields)

    # ---- literals ----------------------------------------------------------------

    def _literal(self, ch: list[Any]) -> Node:
        tok: Token = ch[0]
        text = str(tok)
        pos = tok.start_pos or 0
        kind = tok.type
        sign = self._signed.pop(id(tok), None)  # a '-' taken into the number (_neg_chain)
        if sign is not None:
            pos = _pos(sign)
        if kind in ("INT", "UINT", "FLOAT"):
            number = self._number(kind, text, pos, sign is not None)
            problem = _literal_problem(number)
            if problem is not None:
                self.errors.add(pos, problem)
            return number
        if kind == "TRUE":
            return Const(pos, "bool", True)
        if kind == "FALSE":
            return Const(pos, "bool", False)
        if kind == "NULL":
            return Const(pos, "null", None)
        if kind == "STRING":
            value = self._unquote(text, pos, as_bytes=False)
            return Const(pos, "string", value)
        if kind == "BYTES":
            raw = self._unquote(text[1:], pos, as_bytes=True)
            return Const(pos, "bytes", raw)
        raise AssertionError(kind)

    @staticmethod
    def _number(kind: str, text: str, pos: int, negative: bool) -> Const:
        if kind == "INT":
            value = int(text, 16) if text.startswith("0x") else int(text)
            return Const(pos, "int", -value if negative else value)
        if kind == "UINT":
            body = text[:-1]
            return Const(pos, "uint", int(body, 16) if body.startswith("0x") else int(body))
        return Const(pos, "double", -float(text) if negative else float(text))

    def _unquote(self, text: str, pos: int, *, as_bytes: bool) -> Any:
        try:
            return literal_value(text, as_bytes)
        except ValueError as exc:
            # cel-go's unescape reports its own words (the lexer has already refused
            # every escape that is not well-formed, as a syntax error).
            self.errors.add(pos, str(exc))
            return b"" if as_bytes else ""

    # ---- macros ------------------------------------------------------------------

    def _global_call_or_macro(self, pos: int, name: str, args: list[Node]) -> Node:
        if self.macros and name == "has" and len(args) == 1:
            arg = args[0]
            if isinstance(arg, Select) and not arg.optional:
                return Select(pos, arg.operand, arg.field, test_only=True)
            # Where cel-go places the argument: an operator's token, a call's '(', a
            # literal's start.
            return self._macro_error(arg.pos, "invalid argument to has() macro")
        return Call(pos, name, args)

    def _simple_name(self, node: Node) -> str | None:
        """A macro variable's name: any identifier, a leading '.' included (cel-go then
        binds ``.x``, which no reference can reach: ``.x`` skips the locals)."""
        if isinstance(node, Ident):
            return node.name
        return None

    def _receiver_call_or_macro(self, pos: int, name: str, target: Node, args: list[Node]) -> Node:
        n = len(args)
        if not self.macros:
            return Call(pos, name, args, target)
        if name == "bind" and n == 3 and isinstance(target, Ident) and target.name == "cel":
            var = self._simple_name(args[0])
            if var is None:
                return self._macro_error(
                    args[0].pos, "cel.bind() variable names must be simple identifiers"
                )
            return Bind(pos, var, args[1], args[2])
        one_var = {"all": "all", "exists": "exists", "exists_one": "exists_one"}
        if name in one_var and n == 2:
            return self._comprehension(pos, one_var[name], target, args[0], None, args[1], None)
        if name == "map" and n == 2:
            return self._comprehension(pos, "map", target, args[0], None, None, args[1])
        if name == "map" and n == 3:
            return self._comprehension(pos, "map", target, args[0], None, args[1], args[2])
        if name == "filter" and n == 2:
            return self._comprehension(pos, "filter", target, args[0], None, args[1], None)
        two_var = {
            "all": "all2",
            "exists": "exists2",
            "existsOne": "exists_one2",
            "exists_one": "exists_one2",
        }
        if name in two_var and n == 3:
            return self._comprehension(pos, two_var[name], target, args[0], args[1], args[2], None)
        if name == "sortBy" and n == 2:
            if not isinstance(target, _SORTABLE):
                return self._macro_error(
                    target.pos,
                    "sortBy can only be applied to a list, identifier, comprehension, call "
                    "or select expression",
                )
            return self._comprehension(pos, "sortBy", target, args[0], None, None, args[1])
        if name in ("optMap", "optFlatMap") and n == 2:
            return self._opt_map(pos, name, target, args[0], args[1])
        if name in ("transformList", "transformMap", "transformMapEntry") and n in (3, 4):
            predicate = args[2] if n == 4 else None
            return self._comprehension(pos, name, target, args[0], args[1], predicate, args[-1])
        return Call(pos, name, args, target)

    def _opt_map(self, pos: int, name: str, target: Node, var_node: Node, body: Node) -> Node:
        """cel-go's optMap/optFlatMap macros: ``t.optMap(v, e)`` is
        ``t.hasValue() ? optional.of(cel.bind(v, t.value(), e)) : optional.none()``
        (optFlatMap without the optional.of); the target is evaluated twice, as there."""
        var = self._simple_name(var_node)
        if var is None:
            return self._macro_error(
                var_node.pos, f"{name}() variable name must be a simple identifier"
            )
        value = Call(pos, "value", [], copy.deepcopy(target))
        bound: Node = Bind(pos, var, value, body)
        if name == "optMap":
            bound = Call(pos, "optional.of", [bound])
        return Ternary(
            pos,
            Call(pos, "hasValue", [], target),
            bound,
            Call(pos, "optional.none", []),
        )

    def _comprehension(
        self,
        pos: int,
        kind: str,
        target: Node,
        var_node: Node,
        var2_node: Node | None,
        predicate: Node | None,
        transform: Node | None,
    ) -> Node:
        var = self._simple_name(var_node)
        if var is None:
            # cel-go's map and filter (and sortBy, made of map) word it otherwise.
            if kind in ("map", "filter", "sortBy"):
                return self._macro_error(var_node.pos, "argument is not an identifier")
            return self._macro_error(var_node.pos, "argument must be a simple name")
        var2: str | None = None
        if var2_node is not None:
            var2 = self._simple_name(var2_node)
            if var2 is None:
                return self._macro_error(var2_node.pos, "argument must be a simple name")
            if var2 == var:
                return self._macro_error(var2_node.pos, f"duplicate variable name: {var}")
        for name, node in ((var, var_node), (var2, var2_node)):
            if name in _ACCUMULATORS and node is not None:
                return self._macro_error(
                    node.pos, "iteration variable overwrites accumulator variable"
                )
        return Comprehension(
            pos, kind, target, var, var2, predicate, transform, var_pos=var_node.pos
        )

    def _macro_error(self, at: int, message: str) -> Node:
        """A macro whose arguments are not well-formed: the error, and the expression
        cel-go's visitor makes in its place (at the error, an expression of no kind)."""
        self.errors.add(at, message)
        return Node(at)
