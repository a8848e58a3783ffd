"""cel-go's syntax-error texts: what its ANTLR parser reports for a malformed expression.

draspeed parses with its own LALR parser (:mod:`draspeed.cel.parser`), which finds the
first error at the position cel-go does but cannot say what ANTLR says there. When that
parser refuses an expression, :func:`syntax_errors` reads it again the way cel-go's
generated parser does: its lexer (longest match; an unmatched character is a "token
recognition error" and is skipped), its rules in ``CEL.g4``'s order, the predictions
they make, and ANTLR's ``DefaultErrorStrategy`` (single-token deletion and insertion,
"no viable alternative", recovery up to the follow sets of the rules in progress, no
second report until a token matches again), with cel-go's limit of 30 recoveries.

The token sets below are ``CEL.g4``'s (google/cel-go, Apache-2.0), written out by hand:
the first tokens of each rule and what may follow each rule invocation. ANTLR prints a
set in token-type order, literal names quoted.
"""

from __future__ import annotations

import functools
import math
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from draspeed.cel.ast import Call, Const, CreateMessage, Ident, ListLit, MapLit, Node, Select
from draspeed.cel.literals import literal_value

__all__ = ["TreeVisitor", "syntax_errors"]

# ---- tokens ----------------------------------------------------------------------------

EOF = -1
(
    EQUALS,
    NOT_EQUALS,
    IN,
    LESS,
    LESS_EQUALS,
    GREATER_EQUALS,
    GREATER,
    LOGICAL_AND,
    LOGICAL_OR,
    LBRACKET,
    RBRACKET,
    LBRACE,
    RBRACE,
    LPAREN,
    RPAREN,
    DOT,
    COMMA,
    MINUS,
    EXCLAM,
    QUESTIONMARK,
    COLON,
    PLUS,
    STAR,
    SLASH,
    PERCENT,
    CEL_TRUE,
    CEL_FALSE,
    NUL,
    WHITESPACE,
    COMMENT,
    NUM_FLOAT,
    NUM_INT,
    NUM_UINT,
    STRING,
    BYTES,
    IDENTIFIER,
    ESC_IDENTIFIER,
) = range(1, 38)

# Fixed tokens in the grammar's rule order (a tie in length goes to the earlier rule).
_LITERALS = (
    "==",
    "!=",
    "in",
    "<",
    "<=",
    ">=",
    ">",
    "&&",
    "||",
    "[",
    "]",
    "{",
    "}",
    "(",
    ")",
    ".",
    ",",
    "-",
    "!",
    "?",
    ":",
    "+",
    "*",
    "/",
    "%",
    "true",
    "false",
    "null",
)
_SYMBOLIC = {
    NUM_FLOAT: "NUM_FLOAT",
    NUM_INT: "NUM_INT",
    NUM_UINT: "NUM_UINT",
    STRING: "STRING",
    BYTES: "BYTES",
    IDENTIFIER: "IDENTIFIER",
    ESC_IDENTIFIER: "ESC_IDENTIFIER",
}
_HIDDEN = (WHITESPACE, COMMENT)


def _name(token_type: int) -> str:
    if token_type == EOF:
        return "<EOF>"
    if token_type <= len(_LITERALS):
        return f"'{_LITERALS[token_type - 1]}'"
    return _SYMBOLIC[token_type]


def _set_text(tokens: frozenset[int]) -> str:
    """An IntervalSet as ANTLR prints it: one name alone, several in braces, EOF first."""
    names = [_name(t) for t in sorted(tokens)]
    return names[0] if len(names) == 1 else "{" + ", ".join(names) + "}"


@dataclass(frozen=True, slots=True)
class _Token:
    type: int
    start: int
    text: str
    index: int  # position in the token buffer (hidden tokens included)


# ---- lexer -----------------------------------------------------------------------------

_DIGITS = "0123456789"
_HEX = "0123456789abcdefABCDEF"
_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_IDENT_START = _LETTERS + "_"
_IDENT_PART = _IDENT_START + _DIGITS
_ESC_IDENT_PART = _IDENT_PART + ".-/ "
_SPACE = "\t \r\n\f"
_SIMPLE_ESCAPES = "abfnrtv\"'\\?`"


def _run(src: str, i: int, chars: str) -> int:
    j = i
    while j < len(src) and src[j] in chars:
        j += 1
    return j - i


def _exponent(src: str, i: int) -> tuple[int, int]:
    """(accepted length or -1, viable length) of EXPONENT at ``i``."""
    if i >= len(src) or src[i] not in "eE":
        return -1, 0
    j = i + 1
    if j < len(src) and src[j] in "+-":
        j += 1
    digits = _run(src, j, _DIGITS)
    return (j + digits - i if digits else -1), j + digits - i


def _number(src: str, i: int) -> list[tuple[int, int, int]]:
    """(type, accepted length or -1, viable length) of the number rules at ``i``."""
    found: list[tuple[int, int, int]] = []
    digits = _run(src, i, _DIGITS)
    if digits:
        end = i + digits
        # NUM_FLOAT: DIGIT+ '.' DIGIT+ EXPONENT? | DIGIT+ EXPONENT
        float_acc, float_viable = -1, digits
        if end < len(src) and src[end] == ".":
            fraction = _run(src, end + 1, _DIGITS)
            float_viable = digits + 1 + fraction
            if fraction:
                float_acc = float_viable
                exp_acc, exp_viable = _exponent(src, i + float_viable)
                if exp_viable:
                    float_viable += exp_viable
                    if exp_acc > 0:
                        float_acc = float_viable
        else:
            exp_acc, exp_viable = _exponent(src, end)
            float_viable += exp_viable
            if exp_acc > 0:
                float_acc = digits + exp_acc
        found.append((NUM_FLOAT, float_acc, float_viable))
        int_acc = digits
        int_viable = digits
        uint_acc = digits + 1 if end < len(src) and src[end] in "uU" else -1
        # (only a lowercase x starts a hexadecimal literal: "0X1f" is 0, then X1f)
        if src[i] == "0" and digits == 1 and end < len(src) and src[end] == "x":
            hex_digits = _run(src, end + 1, _HEX)
            int_viable = 2 + hex_digits
            if hex_digits:
                int_acc = int_viable
                after = i + int_viable
                uint_acc = int_viable + 1 if after < len(src) and src[after] in "uU" else -1
            # '0' alone stays a NUM_INT; "0x" dies after the x
        found.append((NUM_INT, int_acc, int_viable))
        found.append((NUM_UINT, uint_acc, max(uint_acc, int_viable)))
    elif src[i] == "." and i + 1 < len(src) and src[i + 1] in _DIGITS:
        fraction = _run(src, i + 1, _DIGITS)
        acc = viable = 1 + fraction
        exp_acc, exp_viable = _exponent(src, i + acc)
        viable += exp_viable
        if exp_acc > 0:
            acc += exp_acc
        found.append((NUM_FLOAT, acc, viable))
    return found


def _escape(src: str, i: int) -> int:
    """Length of a valid escape sequence at ``i`` (a backslash), or -(viable length)."""
    j = i + 1
    if j >= len(src):
        return -1
    c = src[j]
    if c in _SIMPLE_ESCAPES:
        return 2
    if c in "0123":
        ok = _run(src, j + 1, "01234567")
        return 4 if ok >= 2 else -(2 + ok)
    for lead, count in (("xX", 2), ("u", 4), ("U", 8)):
        if c in lead:
            ok = min(_run(src, j + 1, _HEX), count)
            return 2 + count if ok == count else -(2 + ok)
    return -1


def _quoted(src: str, k: int, raw: bool) -> tuple[int, int]:
    """(accepted end or -1, viable end) of a quoted body starting with the quote at ``k``."""
    q = src[k]
    if src.startswith(q * 3, k):
        # Triple quotes, up to the first closing triple (non-greedy); if there is none,
        # the two quotes read first were a complete (empty) string.
        end, viable = _body(src, k + 3, q * 3, "", raw)
        return (end if end >= 0 else k + 2), viable
    return _body(src, k + 1, q, "\n\r", raw)


def _body(src: str, j: int, closing: str, stops: str, raw: bool) -> tuple[int, int]:
    """(end or -1, viable end) of a string body from ``j`` to ``closing``; a character of
    ``stops`` or a bad escape (unless ``raw``) ends it unclosed."""
    n = len(src)
    while j < n:
        if src.startswith(closing, j):
            return j + len(closing), j + len(closing)
        c = src[j]
        if c in stops:
            return -1, j
        if c == "\\" and not raw:
            step = _escape(src, j)
            if step < 0:
                return -1, j - step
            j += step
        else:
            j += 1
    return -1, n


def _string(src: str, i: int) -> list[tuple[int, int, int]]:
    """STRING and BYTES at ``i``: optional b, optional r, a quoted body."""
    found: list[tuple[int, int, int]] = []
    for token_type in (STRING, BYTES):
        k = i
        if token_type == BYTES:
            if k >= len(src) or src[k] not in "bB":
                continue
            k += 1
        raw = k < len(src) and src[k] in "rR"
        if raw:
            k += 1
        if k >= len(src) or src[k] not in "\"'":
            continue
        acc, viable = _quoted(src, k, raw)
        found.append((token_type, acc - i if acc >= 0 else -1, viable - i))
    return found


def _scan(src: str, i: int) -> tuple[int, int, int]:
    """(type, accepted length or -1, viable length) of the longest token at ``i``."""
    candidates: list[tuple[int, int, int]] = []
    for t, literal in enumerate(_LITERALS, start=1):
        common = 0
        while (
            common < len(literal) and i + common < len(src) and src[i + common] == literal[common]
        ):
            common += 1
        if common:
            candidates.append((t, len(literal) if common == len(literal) else -1, common))
    space = _run(src, i, _SPACE)
    if space:
        candidates.append((WHITESPACE, space, space))
    if src.startswith("//", i):
        end = src.find("\n", i)
        length = (len(src) if end < 0 else end) - i
        candidates.append((COMMENT, length, length))
    candidates.extend(_number(src, i))
    candidates.extend(_string(src, i))
    if src[i] in _IDENT_START:
        length = 1 + _run(src, i + 1, _IDENT_PART)
        candidates.append((IDENTIFIER, length, length))
    if src[i] == "`":
        body = _run(src, i + 1, _ESC_IDENT_PART)
        closed = body > 0 and i + 1 + body < len(src) and src[i + 1 + body] == "`"
        candidates.append((ESC_IDENTIFIER, body + 2 if closed else -1, body + 1 + closed))
    best_type, best_len = 0, -1
    viable = 0
    for t, acc, v in candidates:  # rule order within equal lengths: first wins
        viable = max(viable, v, acc)
        if acc > best_len:
            best_type, best_len = t, acc
    return best_type, best_len, viable


# Tokens whose longest match is plain (no other rule could go further): read by one
# regular expression; everything else by _scan.
_PLAIN = re.compile(
    r"""(?P<space>[\t \r\n\f]+)"""
    r"""|(?P<ident>[A-Za-z_][A-Za-z0-9_]*)"""
    r"""|(?P<op>==|!=|<=|>=|&&|\|\||[<>\[\]{}(),\-!?:+*%]|\.(?![0-9]))"""
    r"""|(?P<int>[0-9]+(?![0-9.eExXuU]))"""
    r"""|(?P<string>"[^"\\\n\r]*"(?!")|'[^'\\\n\r]*'(?!'))"""
)
_LITERAL_TYPES = {literal: t for t, literal in enumerate(_LITERALS, start=1)}
_STRING_PREFIXES = frozenset({"b", "r", "br", "B", "R", "bR", "Br", "BR"})


def _plain(src: str, i: int) -> tuple[int, int] | None:
    """(type, length) of a plain token at ``i``, or None."""
    m = _PLAIN.match(src, i)
    if m is None:
        return None
    kind, text = m.lastgroup, m.group()
    end = m.end()
    if kind == "space":
        return WHITESPACE, len(text)
    if kind == "ident":
        if text in _STRING_PREFIXES and end < len(src) and src[end] in "\"'":
            return None
        return _LITERAL_TYPES.get(text, IDENTIFIER), len(text)
    if kind == "op":
        return _LITERAL_TYPES[text], len(text)
    if kind == "int":
        return NUM_INT, len(text)
    if text in ('""', "''"):  # an empty string: or the start of a triple-quoted one
        return None
    return STRING, len(text)


def _lex(src: str, report: Callable[[int, str], None]) -> list[_Token]:
    tokens: list[_Token] = []
    i = 0
    while i < len(src):
        plain = _plain(src, i)
        if plain is not None:
            token_type, length = plain
            tokens.append(_Token(token_type, i, src[i : i + length], len(tokens)))
            i += length
            continue
        token_type, length, viable = _scan(src, i)
        if length <= 0:
            # The lexer stopped at the first character no token can continue with;
            # the message shows what it read, that character included; it is skipped.
            stop = min(i + viable + 1, len(src))
            # (the Go runtime's lexer shows the text as it is, line breaks included).
            report(i, f"token recognition error at: '{src[i:stop]}'")
            i = stop
            continue
        tokens.append(_Token(token_type, i, src[i : i + length], len(tokens)))
        i += length
    tokens.append(_Token(EOF, len(src), "<EOF>", len(tokens)))
    return tokens


def _display(text: str) -> str:
    return text.replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t")


# ---- first and follow sets of CEL.g4 ----------------------------------------------------

_LITERAL_FIRST = frozenset(
    {MINUS, NUM_INT, NUM_UINT, NUM_FLOAT, STRING, BYTES, CEL_TRUE, CEL_FALSE, NUL}
)
_PRIMARY_FIRST = frozenset({DOT, IDENTIFIER, LPAREN, LBRACKET, LBRACE}) | _LITERAL_FIRST
_EXPR_FIRST = _PRIMARY_FIRST | {EXCLAM, MINUS}
_OPT_EXPR_FIRST = _EXPR_FIRST | {QUESTIONMARK}
_RELOPS = frozenset({LESS, LESS_EQUALS, GREATER_EQUALS, GREATER, EQUALS, NOT_EQUALS, IN})
_MULOPS = frozenset({STAR, SLASH, PERCENT})
_ADDOPS = frozenset({PLUS, MINUS})
_ESCAPE_IDENT = frozenset({IDENTIFIER, ESC_IDENTIFIER})
_EPSILON = 0  # in a follow set: the invoking rule may end there
_RECOVERY_LIMIT = 30
# cel-go's errorRecoveryTokenLookaheadLimit: tokens one recovery may consume.
_LOOKAHEAD_LIMIT = 256
_END = frozenset({_EPSILON})
_RELATION_LOOP = _RELOPS | _END
_CALC_LOOP = _MULOPS | _ADDOPS | _END
_MEMBER_LOOP = frozenset({DOT, LBRACKET, _EPSILON})
_LIST_LOOP = frozenset({COMMA, _EPSILON})


class _Failed(Exception):
    """A recognition error inside a rule: reported and recovered where the rule ends."""

    def __init__(self, message: str, at: _Token) -> None:
        self.message = message
        self.at = at


class _TooDeep(Exception):
    """cel-go's recursion listener: a rule entered more than RECURSION_LIMIT deep."""


class _Stop(Exception):
    """cel-go gives up (too many recoveries, or too many errors reported)."""


class _LookaheadLimit(Exception):
    """cel-go's recovery skipped more tokens in one go than its lookahead limit."""


_HELPERS = frozenset(
    {"sync", "sync_loop_back", "match", "mismatch", "no_viable", "rule", "single_token_deletion"}
)


def _state_of(failure: _Failed, site: str) -> str:
    """Where the error arose (ANTLR's ATN state): the rule code line that raised it, and
    for a part shared by two rules (``braced``: a map's braces and a message's), the
    site it was read for: the same line there is two states in ANTLR's network."""
    where = site
    tb = failure.__traceback__
    while tb is not None:
        code = tb.tb_frame.f_code
        if code.co_name not in _HELPERS:
            shared_for = tb.tb_frame.f_locals.get("site")
            where = f"{code.co_name}:{tb.tb_lineno}"
            if shared_for is not None:
                where += f"@{shared_for}"
        tb = tb.tb_next
    return where


class TreeVisitor(Protocol):
    """What cel-go's visitor makes of identifiers and calls (reserved words, macros), for
    reading the tree ANTLR recovered: the parser module's expression builder. Each
    method returns the expression made; ``problems`` collects what it reports."""

    @property
    def problems(self) -> list[tuple[int, str]]: ...

    def ident(self, start: int, at: int, name: str, leading_dot: bool) -> Node: ...

    def global_call(
        self, start: int, paren: int, name: str, leading_dot: bool, args: list[Node]
    ) -> Node: ...

    def receiver_call(self, paren: int, name: str, target: Node, args: list[Node]) -> Node: ...

    def reads_arguments(self, name: str) -> bool:
        """False where the visitor stops at a global call's name (a reserved word) and
        never reads its arguments."""
        ...


class _Plain:
    """A visitor that reports nothing: identifiers are identifiers, calls calls."""

    def __init__(self) -> None:
        self.problems: list[tuple[int, str]] = []

    def ident(self, start: int, at: int, name: str, leading_dot: bool) -> Node:
        return Ident(at, "." + name if leading_dot else name)

    def global_call(
        self, start: int, paren: int, name: str, leading_dot: bool, args: list[Node]
    ) -> Node:
        return Node(paren)

    def receiver_call(self, paren: int, name: str, target: Node, args: list[Node]) -> Node:
        return Node(paren)

    def reads_arguments(self, name: str) -> bool:
        return True


# Where an error has no place in the text (cel-go's NoLocation, printed as -1:0).
NO_LOCATION = -2
# Where an expression the visitor makes for a missing part of the tree is (cel-go
# places it at NoLocation's offset, -1, which reads as line 1, column -1: an error
# there prints as 1:0, with the first line and a caret at its start).
UNPLACED = -1


class _Made:
    """The expression the visitor makes of one rule's part of the tree (none yet: an
    expression placed nowhere, as the visitor makes for a missing part), and how deep
    the visitor nests to read it (it counts conditionals, relations, arithmetic,
    selects, member calls and indexes, and stops past RECURSION_LIMIT)."""

    __slots__ = ("depth", "node")

    def __init__(self) -> None:
        self.node = Node(UNPLACED)
        self.depth = 0

    def become(self, part: _Made) -> None:
        """This expression is ``part`` (unnested)."""
        self.node, self.depth = part.node, part.depth

    def counted(self, at: int, node: Node | None = None) -> None:
        """A nesting node (an operator's call unless given) at ``at`` over what was made
        so far."""
        self.node = _operator(at) if node is None else node
        self.depth += 1

    def holds(self, part: _Made, nesting: bool = True) -> None:
        """``part`` is read inside this expression (one level deeper if it nests)."""
        self.depth = max(self.depth, part.depth + nesting)


# A field name the rule could not read (the select is then an expression of no kind).
_UNREAD = Node(UNPLACED)


def _operator(at: int) -> Node:
    """An operator's expression (in cel-go a call) placed at its token."""
    return Call(at, "", [])


class _Parser:
    """cel-go's generated CELParser with ANTLR's DefaultErrorStrategy, rule by rule."""

    def __init__(
        self,
        buffer: list[_Token],
        visible: list[_Token],
        report: Callable[[int, str], None],
        visitor: TreeVisitor,
    ) -> None:
        self.report_at = report
        self.visitor = visitor
        self.buffer = buffer
        self.visible = visible
        self.types = [t.type for t in self.visible]
        self.n = len(self.types)
        self.p = 0
        # The rules in progress: for each, what may follow its invocation (for recovery
        # and for what "expecting" lists after a rule that may end).
        self.follows: list[frozenset[int]] = []
        self.recovering = False
        self.last_error_index = -1
        self.last_error_states: set[str] = set()
        self.recoveries = 0
        # Errors cel-go's visitor adds when it reads the tree ANTLR recovered.
        self.visitor_errors: list[tuple[int, str]] = []
        # How deep each rule is entered now: cel-go's recursion listener stops the parse
        # when any one rule is entered more than RECURSION_LIMIT times over.
        self.rule_depth: dict[str, int] = {}
        self.fetched = 0  # the furthest visible token looked at

    # -- what the visitor said ----------------------------------------------------------

    def said(self) -> tuple[int, int]:
        """How much the visitor has reported so far (to take back what it would not read)."""
        return len(self.visitor_errors), len(self.visitor.problems)

    def unsay(self, said: tuple[int, int]) -> None:
        del self.visitor_errors[said[0] :]
        del self.visitor.problems[said[1] :]

    # -- tokens ----------------------------------------------------------------------

    def la(self, k: int = 1) -> int:
        i = self.p + k - 1
        if i > self.fetched:
            self.fetched = i
        return self.types[i] if i < self.n else EOF

    def lt(self, k: int = 1) -> _Token:
        i = min(self.p + k - 1, len(self.visible) - 1)
        if i > self.fetched:
            self.fetched = i
        return self.visible[i]

    def lexed_up_to(self) -> int:
        """Where ANTLR's lexer has got to: it makes tokens as the parser asks for them,
        up to the furthest one looked at, so later bad characters are not reported yet."""
        return self.visible[min(self.fetched, len(self.visible) - 1)].start

    def consume(self) -> None:
        if self.visible[self.p].type != EOF:
            self.p += 1

    # -- error strategy --------------------------------------------------------------

    def notify(self, token: _Token, message: str) -> None:
        self.report_at(token.start, message)

    def begin_error(self) -> None:
        self.recovering = True

    def matched(self) -> None:
        self.recovering = False
        self.last_error_index = -1
        self.last_error_states = set()

    def expected_after(self, local: frozenset[int]) -> frozenset[int]:
        """ANTLR's getExpectedTokens: the local set, then, while the rule may end, what
        follows each rule in progress; EOF once the start rule may end."""
        out = set(local)
        if _EPSILON not in out:
            return frozenset(out)
        out.discard(_EPSILON)
        for follow in reversed(self.follows):
            out |= follow - {_EPSILON}
            if _EPSILON not in follow:
                return frozenset(out)
        out.add(EOF)
        return frozenset(out)

    def recovery_set(self) -> frozenset[int]:
        out: set[int] = set()
        for follow in self.follows:
            out |= follow
        out.discard(_EPSILON)
        return frozenset(out)

    def consume_until(self, stop: frozenset[int]) -> None:
        while self.la() != EOF and self.la() not in stop:
            self.consume()

    def count_recovery(self) -> None:
        if self.recoveries == _RECOVERY_LIMIT:
            self.notify(self.lt(), f"error recovery attempt limit exceeded: {_RECOVERY_LIMIT}")
            raise _Stop
        self.recoveries += 1

    def report_error(self, failure: _Failed) -> None:
        if self.recovering:
            return
        self.begin_error()
        self.notify(failure.at, failure.message)

    def recover(self, state: str) -> None:
        """ANTLR's Recover, through cel-go's consumer that counts what one recovery
        consumes and stops the parse past _LOOKAHEAD_LIMIT tokens."""
        self.count_recovery()
        consumed = 0
        if self.last_error_index == self.p and state in self.last_error_states:
            consumed = self.counted_consume(consumed)  # the same error again: skip one
        self.last_error_index = self.p
        self.last_error_states.add(state)
        stop = self.recovery_set()
        while self.la() != EOF and self.la() not in stop:
            consumed = self.counted_consume(consumed)

    def counted_consume(self, consumed: int) -> int:
        if consumed >= _LOOKAHEAD_LIMIT:
            raise _LookaheadLimit
        self.consume()
        return consumed + 1

    def mismatch(self, expected: frozenset[int]) -> _Failed:
        return _Failed(
            f"mismatched input '{_display(self.lt().text)}' expecting {_set_text(expected)}",
            self.lt(),
        )

    def unwanted(self, expected: frozenset[int]) -> None:
        if self.recovering:
            return
        self.begin_error()
        token = self.lt()
        self.notify(
            token, f"extraneous input '{_display(token.text)}' expecting {_set_text(expected)}"
        )

    def single_token_deletion(self, expected: frozenset[int]) -> bool:
        if self.la(2) in expected:
            self.unwanted(expected)
            self.consume()
            self.matched()
            return True
        return False

    def sync(self, local: frozenset[int]) -> None:
        """``sync`` at a decision that has no exit within the rule (a block start)."""
        if self.recovering or self.la() in local:
            return
        if self.single_token_deletion(local):
            return
        raise self.mismatch(local)

    def sync_loop_back(self, local: frozenset[int]) -> None:
        """``sync`` at the end of a ``+`` loop's iteration."""
        if self.recovering or self.la() in local:
            return
        self.unwanted(local)
        self.consume_until(local | self.recovery_set())

    def match(self, token_type: int, after: frozenset[int]) -> None:
        """Match one token; ``after``: what may follow it in the rule (with epsilon if
        the rule may end there), for single-token insertion."""
        if self.la() == token_type:
            self.matched()
            self.consume()
            return
        self.count_recovery()
        expected = frozenset({token_type})
        if self.single_token_deletion(expected):
            self.consume()
            return
        if self.la() in self.expected_after(after):
            if not self.recovering:
                self.begin_error()
                self.notify(
                    self.lt(),
                    f"missing {_set_text(expected)} at '{_display(self.lt().text)}'",
                )
            return
        raise self.mismatch(expected)

    def no_viable(self, start: _Token, offending: _Token) -> _Failed:
        if start.type == EOF:
            text = "<EOF>"
        else:
            text = "".join(
                t.text for t in self.buffer[start.index : offending.index + 1] if t.type != EOF
            )
        return _Failed(f"no viable alternative at input '{_display(text)}'", offending)

    def rule(self, site: str, follow: frozenset[int], body: Callable[[_Made], None]) -> _Made:
        """Invoke a rule from ``site``, ``follow`` being what may follow it there; the
        expression cel-go's visitor makes of what the rule read (also when it failed:
        the visitor reads the tree ANTLR recovered)."""
        name = getattr(body, "func", body).__name__  # the rule (a partial for calc)
        self.enter(name)
        self.follows.append(follow)
        made = _Made()
        try:
            body(made)
        except _Failed as failure:
            self.report_error(failure)
            self.recover(_state_of(failure, site))
        finally:
            self.follows.pop()
            self.rule_depth[name] -= 1
        return made

    def enter(self, name: str) -> None:
        """Rule ``name`` entered once more, as cel-go's recursion listener counts it
        (the caller counts it down again when the rule ends)."""
        depth = self.rule_depth.get(name, 0) + 1
        if depth > RECURSION_LIMIT:
            self.la()  # the rule is entered with its first token already read
            raise _TooDeep
        self.rule_depth[name] = depth

    # -- rules -------------------------------------------------------------------------

    def start(self, made: _Made) -> None:
        made.become(self.rule("start.expr", frozenset({EOF}), self.expr))
        self.match(EOF, frozenset())

    def expr(self, made: _Made) -> None:
        made.become(self.rule("expr.or", frozenset({QUESTIONMARK, _EPSILON}), self.conditional_or))
        if self.la() == QUESTIONMARK:
            made.counted(self.lt().start)  # the conditional, at its '?'
            self.match(QUESTIONMARK, _EXPR_FIRST)
            made.holds(self.rule("expr.then", frozenset({COLON}), self.conditional_or))
            self.match(COLON, _EXPR_FIRST)
            made.holds(self.rule("expr.else", _END, self.expr))

    def conditional_or(self, made: _Made) -> None:
        self.separated(made, "or.and", LOGICAL_OR, self.conditional_and)

    def conditional_and(self, made: _Made) -> None:
        self.separated(made, "and.relation", LOGICAL_AND, self.relation)

    def separated(
        self, made: _Made, site: str, separator: int, operand: Callable[[_Made], None]
    ) -> None:
        """``operand (separator operand)*``; every operand starts an expression."""
        follow = frozenset({separator, _EPSILON})
        made.become(self.rule(site, follow, operand))
        ops: list[int] = []
        while self.la() == separator:
            ops.append(self.lt().start)
            # cel-go balances a chain of one operator: its root is the middle one; the
            # visitor does not count logical operators as nesting.
            made.node = _operator(ops[len(ops) // 2])
            self.match(separator, _EXPR_FIRST)
            made.holds(self.rule(site, follow, operand), nesting=False)

    def relation(self, made: _Made) -> None:
        operand = functools.partial(self.calc, 0)
        made.become(self.rule("relation.calc", _RELATION_LOOP, operand))
        while self.la() in _RELOPS:
            made.counted(self.lt().start)
            self.matched()
            self.consume()
            # ANTLR reads the right operand as a relation of its own (that then reads a
            # calc): the relation rule is entered once more, which its listener counts.
            self.enter("relation")
            try:
                made.holds(self.rule("relation.calc", _RELATION_LOOP, operand))
            finally:
                self.rule_depth["relation"] -= 1

    def calc(self, precedence: int, made: _Made) -> None:
        made.become(self.rule("calc.unary", _CALC_LOOP, self.unary))
        while True:
            if self.la() in _MULOPS and precedence <= 2:
                right = 3
            elif self.la() in _ADDOPS and precedence <= 1:
                right = 2
            else:
                return
            made.counted(self.lt().start)
            self.matched()
            self.consume()
            made.holds(self.rule("calc.calc", _CALC_LOOP, functools.partial(self.calc, right)))

    def unary(self, made: _Made) -> None:
        # No alternative taken: the visitor makes an error literal at the start.
        made.node = Const(self.lt().start, "string", "<<error>>")
        self.sync(_EXPR_FIRST)
        first = self.la()
        ops: list[int] = []
        if first == EXCLAM:
            while True:
                ops.append(self.lt().start)
                self.match(EXCLAM, _EXPR_FIRST)
                self.sync_loop_back(_EXPR_FIRST)
                if self.la() != EXCLAM:
                    break
        elif first == MINUS and self.la(2) not in (NUM_INT, NUM_FLOAT):
            # Negation ('-' before a number is a signed literal, the first alternative;
            # inside the loop that is ambiguous, and ANTLR takes the loop).
            while True:
                if self.la(2) not in _PRIMARY_FIRST:
                    raise self.no_viable(self.lt(), self.lt(2))
                ops.append(self.lt().start)
                self.match(MINUS, _PRIMARY_FIRST)
                self.sync_loop_back(_PRIMARY_FIRST)
                if self.la() != MINUS:
                    break
        elif first not in _PRIMARY_FIRST:
            raise self.no_viable(self.lt(), self.lt())
        made.become(self.rule("unary.member", _END, self.member))
        if len(ops) % 2:  # an even number of '!' or '-' cancels out
            made.node = _operator(ops[0])

    def member(self, made: _Made) -> None:
        start = self.lt().start  # where an expression the visitor cannot read is placed
        made.become(self.rule("member.primary", _MEMBER_LOOP, self.primary))
        while True:
            if self.la() == LBRACKET:
                made.counted(self.lt().start)
                self.match(LBRACKET, _OPT_EXPR_FIRST)
                self.sync(_OPT_EXPR_FIRST)
                if self.la() == QUESTIONMARK:
                    self.match(QUESTIONMARK, _EXPR_FIRST)
                made.holds(self.rule("member.index", frozenset({RBRACKET}), self.expr))
                self.match(RBRACKET, _MEMBER_LOOP)
            elif self.la() == DOT:
                second = self.la(2)
                if second == IDENTIFIER and self.la(3) == LPAREN:
                    target = made.node
                    made.counted(start, Node(start))
                    self.match(DOT, frozenset({IDENTIFIER}))
                    name = self.lt().text
                    self.match(IDENTIFIER, frozenset({LPAREN}))
                    paren = self.lt().start
                    args: list[_Made] = []
                    try:
                        self.call_arguments("member.args", _MEMBER_LOOP, args)
                    finally:
                        for arg in args:
                            made.holds(arg)
                        nodes = [arg.node for arg in args]
                        made.node = self.visitor.receiver_call(paren, name, target, nodes)
                elif second in (QUESTIONMARK, IDENTIFIER, ESC_IDENTIFIER):
                    target = made.node
                    made.counted(start, Node(start))  # no field name: of no kind
                    dot = self.lt().start
                    self.match(DOT, _ESCAPE_IDENT | {QUESTIONMARK})
                    self.sync(_ESCAPE_IDENT | {QUESTIONMARK})
                    optional = self.la() == QUESTIONMARK
                    if optional:
                        self.match(QUESTIONMARK, _ESCAPE_IDENT)
                    field = self.lt().text
                    read = self.rule(
                        "member.field", _MEMBER_LOOP, functools.partial(self.escape_ident, None)
                    )
                    if read.node is not _UNREAD:
                        made.node = Select(dot, target, field, optional=optional)
                else:
                    raise self.no_viable(self.lt(), self.lt(2))
            else:
                return

    def call_arguments(self, site: str, after: frozenset[int], args: list[_Made]) -> None:
        self.match(LPAREN, _EXPR_FIRST | {RPAREN})
        self.sync(_EXPR_FIRST | {RPAREN})
        if self.la() in _EXPR_FIRST:
            self.rule(site, frozenset({RPAREN}), functools.partial(self.expr_list, args))
        self.match(RPAREN, after)

    def primary(self, made: _Made) -> None:
        self.sync(_PRIMARY_FIRST)
        first = self.la()
        if first in (DOT, IDENTIFIER):
            k = 2 if first == DOT else 1
            if first == DOT and self.la(2) != IDENTIFIER:
                raise self.no_viable(self.lt(), self.lt(2))
            # IDENTIFIER '(' is a call; IDENTIFIER ('.' IDENTIFIER)* '{' a message.
            j = k + 1
            while self.la(j) == DOT and self.la(j + 1) == IDENTIFIER:
                j += 2
            call = self.la(k + 1) == LPAREN
            message = not call and self.la(j) == LBRACE
            start = self.lt().start
            if first == DOT:
                self.match(DOT, frozenset({IDENTIFIER}))
            name = self.lt()
            if call:
                self.match(IDENTIFIER, frozenset({LPAREN}))
                paren = self.lt().start
                args: list[_Made] = []
                said = self.said()
                try:
                    self.call_arguments("primary.args", _END, args)
                finally:
                    if not self.visitor.reads_arguments(name.text):
                        self.unsay(said)
                    for arg in args:
                        made.holds(arg, nesting=False)
                    nodes = [arg.node for arg in args]
                    made.node = self.visitor.global_call(
                        start, paren, name.text, first == DOT, nodes
                    )
            elif message:
                self.match(IDENTIFIER, frozenset({DOT, LBRACE}))
                while self.la() == DOT:
                    self.match(DOT, frozenset({IDENTIFIER}))
                    self.match(IDENTIFIER, frozenset({DOT, LBRACE}))
                made.node = CreateMessage(self.lt().start, "", [])  # at its '{'
                self.braced(
                    made,
                    "primary.fields",
                    frozenset({QUESTIONMARK}) | _ESCAPE_IDENT,
                    self.field_inits,
                )
            else:
                made.node = self.visitor.ident(start, name.start, name.text, first == DOT)
                self.match(IDENTIFIER, _END)
        elif first == LPAREN:
            self.match(LPAREN, _EXPR_FIRST)
            made.become(self.rule("primary.nested", frozenset({RPAREN}), self.expr))
            self.match(RPAREN, _END)
        elif first == LBRACKET:
            made.node = ListLit(self.lt().start, [])
            self.match(LBRACKET, _OPT_EXPR_FIRST | {COMMA, RBRACKET})
            self.sync(_OPT_EXPR_FIRST | {COMMA, RBRACKET})
            if self.la() in _OPT_EXPR_FIRST:
                elements = self.rule("primary.list", frozenset({COMMA, RBRACKET}), self.list_init)
                made.holds(elements, nesting=False)
            self.sync(frozenset({COMMA, RBRACKET}))
            if self.la() == COMMA:
                self.match(COMMA, frozenset({RBRACKET}))
            self.match(RBRACKET, _END)
        elif first == LBRACE:
            made.node = MapLit(self.lt().start, [])
            self.braced(made, "primary.map", _OPT_EXPR_FIRST, self.map_inits)
        elif first in _LITERAL_FIRST:
            made.become(self.rule("primary.literal", _END, self.literal))
        else:
            raise self.no_viable(self.lt(), self.lt())

    def braced(
        self,
        made: _Made,
        site: str,
        entry_first: frozenset[int],
        entries: Callable[[_Made], None],
    ) -> None:
        """``'{' entries? ','? '}'`` of a map or a message."""
        self.match(LBRACE, entry_first | {COMMA, RBRACE})
        self.sync(entry_first | {COMMA, RBRACE})
        if self.la() in entry_first:
            made.holds(self.rule(site, frozenset({COMMA, RBRACE}), entries), nesting=False)
        self.sync(frozenset({COMMA, RBRACE}))
        if self.la() == COMMA:
            self.match(COMMA, frozenset({RBRACE}))
        self.match(RBRACE, _END)

    def expr_list(self, args: list[_Made], made: _Made) -> None:
        """``expr (',' expr)*``: each argument as the visitor makes it, into ``args``."""
        follow = frozenset({COMMA, _EPSILON})
        args.append(self.rule("exprlist.expr", follow, self.expr))
        while self.la() == COMMA:
            self.match(COMMA, _EXPR_FIRST)
            args.append(self.rule("exprlist.expr", follow, self.expr))

    def list_init(self, made: _Made) -> None:
        made.holds(self.rule("list.elem", _LIST_LOOP, self.opt_expr), nesting=False)
        # ',' then no element: the trailing comma of the list, not another element.
        while self.la() == COMMA and self.la(2) in _OPT_EXPR_FIRST:
            self.match(COMMA, _OPT_EXPR_FIRST)
            made.holds(self.rule("list.elem", _LIST_LOOP, self.opt_expr), nesting=False)

    def map_inits(self, made: _Made) -> None:
        self.entries(made, "map", self.opt_expr, _OPT_EXPR_FIRST)

    def field_inits(self, made: _Made) -> None:
        # A field name of no known kind is reported at the list's start.
        key = functools.partial(self.opt_field, self.lt().start)
        self.entries(made, "fields", key, _ESCAPE_IDENT | {QUESTIONMARK})

    def entries(
        self, made: _Made, site: str, key: Callable[[_Made], None], key_first: frozenset[int]
    ) -> None:
        """``key ':' expr (',' key ':' expr)*`` of a map or a message."""
        while True:
            # cel-go's visitor reads an entry only once its ':' and value are there:
            # what it would have said of a key without them is not said.
            said = self.said()
            read = self.rule(f"{site}.key", frozenset({COLON}), key)
            made.holds(read, nesting=False)
            try:
                self.match(COLON, _EXPR_FIRST)
            except _Failed:
                self.unsay(said)
                raise
            said = self.said()
            made.holds(self.rule(f"{site}.value", _LIST_LOOP, self.expr), nesting=False)
            if read.node is _UNREAD:
                self.unsay(said)  # a field of no name: the visitor skips its value
            if not (self.la() == COMMA and self.la(2) in key_first):
                return
            self.match(COMMA, key_first)

    def opt_field(self, fields_start: int, made: _Made) -> None:
        self.sync(_ESCAPE_IDENT | {QUESTIONMARK})
        if self.la() == QUESTIONMARK:
            self.match(QUESTIONMARK, _ESCAPE_IDENT)
        made.node = _UNREAD  # until the name is read
        read = self.rule("field.ident", _END, functools.partial(self.escape_ident, fields_start))
        made.node = read.node

    def opt_expr(self, made: _Made) -> None:
        self.sync(_OPT_EXPR_FIRST)
        if self.la() == QUESTIONMARK:
            self.match(QUESTIONMARK, _EXPR_FIRST)
        made.become(self.rule("optexpr.expr", _END, self.expr))

    def escape_ident(self, at: int | None, made: _Made) -> None:
        """A field name; ``at``: where the visitor reports one of no known kind (a
        select's own start when None)."""
        start = self.lt()
        made.node = _UNREAD
        try:
            self.sync(_ESCAPE_IDENT)
            if self.la() not in _ESCAPE_IDENT:
                raise self.no_viable(self.lt(), self.lt())
        except _Failed:
            # No identifier alternative was entered: cel-go's visitor, reading the
            # recovered tree, meets a field name of no known kind there.
            self.visitor_errors.append(
                (start.start if at is None else at, "unsupported ident kind")
            )
            raise
        token = self.lt()
        made.node = Node(token.start)
        if token.type == ESC_IDENTIFIER:
            # Kubernetes does not enable escaped names: said at a select's name, or at
            # the field list (whose field the visitor then skips, value and all).
            self.visitor_errors.append(
                (token.start if at is None else at, "unsupported syntax: '`'")
            )
            if at is not None:
                made.node = _UNREAD
        self.match(self.la(), _END)

    def literal(self, made: _Made) -> None:
        self.sync(_LITERAL_FIRST)
        made.node = Const(self.lt().start, "null", None)
        if self.la() == MINUS:
            second = self.la(2)
            if second not in (NUM_INT, NUM_FLOAT):
                raise self.no_viable(self.lt(), self.lt(2))
            sign = self.lt()
            self.match(MINUS, frozenset({second}))
            self.check_literal(self.lt(), sign)
            self.match(second, _END)
            return
        if self.la() in _LITERAL_FIRST:
            self.check_literal(self.lt(), None)
            self.match(self.la(), _END)
            return
        raise self.no_viable(self.lt(), self.lt())

    def check_literal(self, token: _Token, sign: _Token | None) -> None:
        """The visitor's checks of a literal: a number's range, a string's escapes (it
        reads the tree ANTLR recovered, so these are reported next to syntax errors)."""
        text = token.text
        if token.type == NUM_INT:
            value = int(text, 16) if text[:2] == "0x" else int(text)
            if not -(2**63) <= (-value if sign is not None else value) < 2**63:
                where = sign if sign is not None else token
                self.visitor_errors.append((where.start, "invalid int literal"))
        elif token.type == NUM_UINT:
            body = text[:-1]
            if int(body, 16 if body[:2] == "0x" else 10) >= 2**64:
                self.visitor_errors.append((token.start, "invalid uint literal"))
        elif token.type in (STRING, BYTES):
            # The visitor unescapes every literal of the recovered tree as well.
            try:
                literal_value(text[1:] if token.type == BYTES else text, token.type == BYTES)
            except ValueError as exc:
                self.visitor_errors.append((token.start, str(exc)))
        elif token.type == NUM_FLOAT and math.isinf(float(text)):
            # Go's ParseFloat refuses a value beyond the largest double (Python rounds
            # the same way, to infinity).
            where = sign if sign is not None else token
            self.visitor_errors.append((where.start, "invalid double literal"))


# cel-go rewrites "no viable alternative" before a reserved word (its regexp's '.' is any
# character).
_RESERVED = re.compile("no viable alternative at input '.(true|false|null)'")
_REPORT_LIMIT = 100  # cel-go's errorReportingLimit
_LEXER_ERROR = "Syntax error: token recognition error"
RECURSION_LIMIT = 250  # cel-go's maxRecursionDepth (its listener's and its visitor's)
# Python frames the rules take per level of nesting, with room: the limit raised to
# this while reading, so that RECURSION_LIMIT levels are read rather than given up.
_FRAMES_NEEDED = 40 * RECURSION_LIMIT


# Token sequences (visible token types) the parser took without an error. Which rules
# ANTLR predicts, what it reports and how deep it nests depend on the token types alone,
# so a text the lexer reads without an error, into a sequence taken before, is taken
# again: its rules are not read a second time (they were three quarters of this
# module's time on a selector that differs from an earlier one only in its literals).
_ACCEPTED: set[tuple[int, ...]] = set()
_ACCEPTED_LIMIT = 4096


def syntax_errors(src: str, visitor: TreeVisitor | None = None) -> list[tuple[int, str]] | None:
    """(offset, message) of each syntax error cel-go reports for ``src``, in report order,
    then what its visitor reports of the tree ANTLR recovered (``visitor``: identifiers
    and calls; none by default); empty if its parser takes ``src``; None if nested too
    deep to read here (the rules recurse as ANTLR's do; cel-go stops such expressions at
    its recursion limit)."""
    found: list[tuple[int, str]] = []
    visitor = _Plain() if visitor is None else visitor

    def report(offset: int, message: str) -> None:
        message = _RESERVED.sub(r"mismatched input '\1' expecting IDENTIFIER", message)
        if len(found) == _REPORT_LIMIT:
            found.append((offset, f"More than {_REPORT_LIMIT} syntax errors"))
            raise _Stop
        found.append((offset, f"Syntax error: {message}"))

    previous = sys.getrecursionlimit()
    if previous < _FRAMES_NEEDED:
        sys.setrecursionlimit(_FRAMES_NEEDED)  # process-wide: only ever raised
    parser: _Parser | None = None
    try:
        buffer = _lex(src, report)
        visible = [t for t in buffer if t.type not in _HIDDEN]
        shape = tuple(t.type for t in visible)
        if not found and shape in _ACCEPTED:
            return []
        parser = _Parser(buffer, visible, report, visitor)
        tree = parser.rule("start", _END, parser.start)
    except _Stop:
        return found  # cel-go gives up before its visitor runs
    except (_TooDeep, _LookaheadLimit) as stopped:
        # The parse stops there: the errors reported so far stay (not those of characters
        # the lexer has not reached), and the visitor never runs.
        assert parser is not None
        reached = parser.lexed_up_to()
        kept = [e for e in found if not (e[1].startswith(_LEXER_ERROR) and e[0] >= reached)]
        if isinstance(stopped, _LookaheadLimit):
            reason = f"error recovery token lookahead limit exceeded: {_LOOKAHEAD_LIMIT}"
        else:
            reason = f"expression recursion limit exceeded: {RECURSION_LIMIT}"
        return [*kept, (NO_LOCATION, reason)]
    except RecursionError:
        return None
    # Without a syntax error the tree is whole: the tree builder reports what cel-go's
    # visitor does (literals out of range among the rest).
    if not found:
        if len(_ACCEPTED) >= _ACCEPTED_LIMIT:
            _ACCEPTED.clear()
        _ACCEPTED.add(shape)
        return []
    if tree.depth > RECURSION_LIMIT:
        # The visitor stops where it nests too deep (what it said of the rest is not
        # kept, as for a tree without syntax errors).
        return [*found, (NO_LOCATION, "max recursion depth exceeded")]
    return found + parser.visitor_errors + visitor.problems
