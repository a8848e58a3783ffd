"""Whether Go's regexp parser refuses a pattern as nested too deeply.

Go's ``regexp/syntax`` refuses a pattern whose parse tree is more than 1,000 nodes
high ("expression nests too deeply"); RE2, the matcher draspeed uses, takes it. The
height is that of Go's tree, not of the text: literals merge into one node, groups
that capture add one and groups that do not add none, concatenations and alternations
are flattened, and an alternation is factored (common leading literals and leading
character classes taken out, runs of single characters merged into one class). This
module builds that tree's shape as Go's parser does, node heights only (no character
sets), without recursion: the patterns it is asked about are the deep ones.

Where the shape needs a character set (two leading classes compared for factoring),
a class is the characters it lists, or merges, or else the text it is written as: two
classes written differently for one set count as different.
"""

from __future__ import annotations

from collections.abc import Callable

from draspeed.cel.meter import Ticker

MAX_HEIGHT = 1000

# Node kinds. The pseudo-kinds (markers on the parse stack) come last.
_LITERAL, _CLASS, _LEAF, _EMPTY, _CAPTURE, _REPEAT, _CONCAT, _ALTERNATE = range(8)
_LEFT_PAREN, _VERTICAL_BAR = 8, 9


class _TooDeep(Exception):
    """A node higher than :data:`MAX_HEIGHT` was made."""


class _RepeatTooLarge(Exception):
    """Go's parser stops at a repeat count first (RE2 words that refusal alike)."""


class _Node:
    __slots__ = ("bounds", "capture", "fold", "height", "key", "kind", "runes", "subs")

    def __init__(self, kind: int, subs: list[_Node] | None = None) -> None:
        self.kind = kind
        self.subs: list[_Node] = subs if subs is not None else []
        self.runes: list[str] = []  # a literal's characters
        self.fold = False  # a literal's case folding; a marker's saved flag
        self.key: object = None  # what makes two classes (or repeats) equal
        self.capture = False  # a left parenthesis that captures
        self.bounds: tuple[int, int] | None = None  # a counted repeat's (min, max or -1)
        self.height = 1
        self.measure()

    def measure(self) -> None:
        """The height from the children's (each measured when made)."""
        self.height = 1 + max((s.height for s in self.subs), default=0)
        if self.height > MAX_HEIGHT:
            raise _TooDeep()


def nests_too_deeply(pattern: str) -> bool:
    """Whether Go's parser refuses ``pattern`` for its height: before any repeat count
    it refuses (the one refusal that can come first which RE2 and Go share word for
    word). For a pattern RE2 refused otherwise, RE2's reason stands: False."""
    if len(pattern) < MAX_HEIGHT - 1:  # (a node higher than the text is long: none)
        return False
    try:
        _Parser(pattern).run()
    except _TooDeep:
        return True
    except (_RepeatTooLarge, ArithmeticError, LookupError, ValueError):  # (RE2 refused it)
        return False
    return False


def _literal(runes: list[str], fold: bool) -> _Node:
    node = _Node(_LITERAL)
    node.runes, node.fold = runes, fold
    return node


def _leaf(kind: int, key: object = None) -> _Node:
    node = _Node(kind)
    node.key = key
    return node


def _is_char_class(node: _Node) -> bool:
    return (node.kind == _LITERAL and len(node.runes) == 1) or node.kind == _CLASS


def _equal(a: _Node, b: _Node) -> bool:
    if a.kind != b.kind:
        return False
    if a.kind == _LITERAL:
        return a.runes == b.runes and a.fold == b.fold
    if a.kind == _CLASS:
        return a.key == b.key
    if a.kind == _REPEAT:
        return a.key == b.key and _equal(a.subs[0], b.subs[0])
    return a is b


class _Parser:
    """Go's parse-stack discipline, over node shapes."""

    def __init__(self, pattern: str) -> None:
        self.text = pattern
        self.stack: list[_Node] = []
        self.fold = False  # the (?i) flag in force

    # ---- the stack ----------------------------------------------------------------

    def maybe_concat(self) -> None:
        """Two literals on top (of one folding): the upper merged into the lower."""
        s = self.stack
        if len(s) >= 2 and s[-1].kind == _LITERAL == s[-2].kind and s[-1].fold == s[-2].fold:
            s[-2].runes.extend(s[-1].runes)
            s.pop()

    def push(self, node: _Node) -> None:
        self.maybe_concat()
        self.stack.append(node)

    def concat(self) -> None:
        self.maybe_concat()
        subs = self._above_marker()
        self.push(_Node(_EMPTY) if not subs else self.collapse(subs, _CONCAT))

    def alternate(self) -> None:
        subs = self._above_marker()
        self.push(_Node(_EMPTY) if not subs else self.collapse(subs, _ALTERNATE))

    def _above_marker(self) -> list[_Node]:
        s = self.stack
        i = len(s)
        while i > 0 and s[i - 1].kind < _LEFT_PAREN:
            i -= 1
        subs = s[i:]
        del s[i:]
        return subs

    def collapse(self, subs: list[_Node], kind: int) -> _Node:
        if len(subs) == 1:
            return subs[0]
        flat: list[_Node] = []
        for sub in subs:
            if sub.kind == kind:
                flat.extend(sub.subs)
            else:
                flat.append(sub)
        if kind == _ALTERNATE:
            flat = self.factor(flat)
            if len(flat) == 1:
                return flat[0]
        return _Node(kind, flat)

    def swap_vertical_bar(self) -> bool:
        s = self.stack
        n = len(s)
        if (
            n >= 3
            and s[-2].kind == _VERTICAL_BAR
            and _is_char_class(s[-1])
            and _is_char_class(s[-3])
        ):
            s[-3] = _merged_class(s[-3], s[-1])
            s.pop()
            return True
        if n >= 2 and s[-2].kind == _VERTICAL_BAR:
            s[-2], s[-1] = s[-1], s[-2]
            return True
        return False

    # ---- factoring an alternation (Go's four rounds) ---------------------------------

    def factor(self, subs: list[_Node]) -> list[_Node]:
        if len(subs) < 2:
            return subs
        subs = self._factor_runs(subs, _leading_string)
        subs = self._factor_runs(subs, _leading_class)
        out: list[_Node] = []
        run: list[_Node] = []
        for sub in [*subs, None]:
            if sub is not None and _is_char_class(sub):
                run.append(sub)
                continue
            if len(run) == 1:
                out.append(run[0])
            elif run:
                merged = run[0]
                for other in run[1:]:
                    merged = _merged_class(merged, other)
                out.append(merged)
            run = []
            if sub is not None:
                out.append(sub)
        return [s for i, s in enumerate(out) if not _empty_pair(out, i)]

    def _factor_runs(
        self, subs: list[_Node], leading: Callable[[_Node, object], object]
    ) -> list[_Node]:
        """Runs of branches with a common start made one ``start(rest|rest...)``:
        ``leading(branch, None)`` is what a branch starts with, ``leading(branch,
        common)`` what it shares with its run's ``common`` start (None: nothing)."""
        out: list[_Node] = []
        start = 0
        common: object = None
        for i in range(len(subs) + 1):
            if i < len(subs) and common is not None:
                shared = leading(subs[i], common)
                if shared is not None:
                    common = shared
                    continue
            if i == start + 1:
                out.append(subs[start])
            elif i > start + 1:
                out.append(self._factored(subs[start:i], common))
            start = i
            common = leading(subs[i], None) if i < len(subs) else None
        return out

    def _factored(self, run: list[_Node], common: object) -> _Node:
        if isinstance(common, tuple):
            runes, fold = common
            prefix = _literal(list(runes), fold)
            n = len(runes)
            rest = [_remove_leading_string(b, n) for b in run]
        else:
            assert isinstance(common, _Node)
            prefix = common
            rest = [_remove_leading_node(b) for b in run]
        return _Node(_CONCAT, [prefix, self.collapse(rest, _ALTERNATE)])

    # ---- reading the pattern ----------------------------------------------------------

    def run(self) -> None:
        t, i, n = self.text, 0, len(self.text)
        ticker = Ticker()  # (a pattern met at run time: the evaluation's deadline holds)
        while i < n:
            ticker.step()
            c = t[i]
            if c == "(":
                i = self._open(i)
            elif c == "|":
                self.concat()
                if not self.swap_vertical_bar():
                    self.push(_Node(_VERTICAL_BAR))
                i += 1
            elif c == ")":
                self._close()
                i += 1
            elif c in "^$":
                self.push(_leaf(_LEAF))
                i += 1
            elif c == ".":
                self.push(_leaf(_CLASS, frozenset({(".",)})))
                i += 1
            elif c == "[":
                i = self._class(i)
            elif c in "*+?":
                i = self._repeat(c, i + 1)
            elif c == "{":
                end = _repeat_end(t, i)
                if end < 0:
                    self._push_literal("{")
                    i += 1
                else:
                    i = self._repeat(t[i:end], end)
            elif c == "\\":
                i = self._escape(i)
            else:
                self._push_literal(c)
                i += 1
        self.concat()
        if self.swap_vertical_bar():
            self.stack.pop()
        self.alternate()

    def _push_literal(self, rune: str, fold: bool | None = None) -> None:
        self.push(_literal([rune], self.fold if fold is None else fold))

    def _open(self, i: int) -> int:
        t = self.text
        marker = _Node(_LEFT_PAREN)
        marker.fold = self.fold
        if t.startswith("(?P<", i) or t.startswith("(?<", i):
            marker.capture = True
            self.push(marker)
            return t.index(">", i) + 1
        if not t.startswith("(?", i):
            marker.capture = True
            self.push(marker)
            return i + 1
        j, fold, negated = i + 2, self.fold, False
        while t[j] not in ":)":
            if t[j] == "-":
                negated = True
            elif t[j] == "i":
                fold = not negated
            j += 1
        if t[j] == ":":
            self.push(marker)
        self.fold = fold
        return j + 1

    def _close(self) -> None:
        self.concat()
        if self.swap_vertical_bar():
            self.stack.pop()
        self.alternate()
        inner = self.stack.pop()
        marker = self.stack.pop()
        self.fold = marker.fold
        self.push(_Node(_CAPTURE, [inner]) if marker.capture else inner)

    def _repeat(self, operator: str, i: int) -> int:
        if self.text.startswith("?", i):
            i += 1
            operator += "?"
        sub = self.stack[-1]
        node = _Node(_REPEAT, [sub])
        node.key = operator
        if operator.startswith("{"):
            low, comma, high = operator.strip("{}?").partition(",")
            node.bounds = (int(low), int(high) if high else (-1 if comma else int(low)))
            if max(node.bounds) > 1000 or (max(node.bounds) >= 2 and not _repeat_is_valid(node)):
                raise _RepeatTooLarge()
        self.stack[-1] = node
        return i

    def _class(self, i: int) -> int:
        t = self.text
        end = _class_end(t, i)
        body = t[i + 1 : end - 1]
        single = _single_rune(body)
        if single is not None:
            # A one-character class is that character's literal; folded when (?i) gives
            # it another case.
            self._push_literal(single, self.fold and single.lower() != single.upper())
        else:
            self.push(_leaf(_CLASS, _class_key(body, self.fold)))
        return end

    def _escape(self, i: int) -> int:
        t = self.text
        c = t[i + 1 : i + 2]
        if c in ("A", "b", "B", "z"):
            self.push(_leaf(_LEAF))
            return i + 2
        if c == "Q":
            end = t.find("\\E", i + 2)
            stop = len(t) if end < 0 else end
            for rune in t[i + 2 : stop]:
                self._push_literal(rune)
            return stop if end < 0 else end + 2
        if c in ("p", "P"):
            end = t.index("}", i) + 1 if t.startswith("{", i + 2) else i + 3
            self.push(_leaf(_CLASS, frozenset({(t[i:end], self.fold)})))
            return end
        if c in ("d", "D", "s", "S", "w", "W"):
            self.push(_leaf(_CLASS, frozenset({(t[i : i + 2], self.fold)})))
            return i + 2
        if c == "x":
            braced = t.startswith("{", i + 2)
            end = t.index("}", i) + 1 if braced else i + 4
            self._push_literal(chr(int(t[i + 3 : end - 1] if braced else t[i + 2 : end], 16)))
            return end
        if c in "01234567":
            end = i + 2
            while end < min(i + 4, len(t)) and t[end] in "01234567":
                end += 1
            self._push_literal(chr(int(t[i + 1 : end], 8)))
            return end
        self._push_literal(_ESCAPED.get(c, c))
        return i + 2


_ESCAPED = {"a": "\a", "f": "\f", "t": "\t", "n": "\n", "r": "\r", "v": "\v"}


def _merged_class(a: _Node, b: _Node) -> _Node:
    """Two single characters or classes merged: one class (one character when both are
    the same literal)."""
    if a.kind == _LITERAL == b.kind and a.runes == b.runes and a.fold == b.fold:
        return a
    return _leaf(_CLASS, _members(a) | _members(b))


def _members(node: _Node) -> frozenset[tuple[str, ...]]:
    """What a single character or class holds, as far as telling classes apart goes:
    its characters (both cases when folded), or its text where it has ranges, escapes
    or names (two classes written differently for one set are taken as different)."""
    if node.kind == _LITERAL:
        return _runes(node.runes[0], node.fold)
    assert isinstance(node.key, frozenset)
    return node.key


def _runes(rune: str, fold: bool) -> frozenset[tuple[str, ...]]:
    if fold:
        return frozenset({(rune.lower(), "rune"), (rune.upper(), "rune"), (rune, "rune")})
    return frozenset({(rune, "rune")})


def _class_key(body: str, fold: bool) -> frozenset[tuple[str, ...]]:
    """The members of a bracketed class: its characters when it lists plain ones."""
    if body and not body.startswith("^") and not any(c in body for c in "\\-[]"):
        return frozenset().union(*(_runes(c, fold) for c in body))
    return frozenset({("[" + body + "]", str(fold))})


def _empty_pair(out: list[_Node], i: int) -> bool:
    return i + 1 < len(out) and out[i].kind == _EMPTY == out[i + 1].kind


def _leading_literal(node: _Node) -> _Node | None:
    if node.kind == _CONCAT and node.subs:
        node = node.subs[0]
    return node if node.kind == _LITERAL else None


def _leading_string(node: _Node, common: object) -> tuple[list[str], bool] | None:
    """The literal a branch starts with (``common`` None), or the longest start it
    shares with its run's ``common`` literal (None when not one character)."""
    mine = _leading_literal(node)
    runes, fold = (mine.runes, mine.fold) if mine is not None else ([], False)
    if common is None:
        return list(runes), fold  # (a copy: the branch's own list changes when factored)
    assert isinstance(common, tuple)
    if fold != common[1]:
        return None
    same = 0
    for a, b in zip(runes, common[0], strict=False):  # (up to the shorter)
        if a != b:
            break
        same += 1
    return (runes[:same], fold) if same else None


def _remove_leading_string(node: _Node, n: int) -> _Node:
    if node.kind == _CONCAT and node.subs:
        sub = _remove_leading_string(node.subs[0], n)
        node.subs[0] = sub
        if sub.kind == _EMPTY:
            if len(node.subs) <= 1:
                return _Node(_EMPTY)
            if len(node.subs) == 2:
                return node.subs[1]
            del node.subs[0]
        node.measure()
        return node
    if node.kind == _LITERAL:
        del node.runes[:n]
        if not node.runes:
            return _Node(_EMPTY)
    return node


def _leading_node(node: _Node) -> _Node | None:
    if node.kind == _EMPTY:
        return None
    if node.kind == _CONCAT and node.subs:
        sub = node.subs[0]
        return None if sub.kind == _EMPTY else sub
    return node


def _leading_class(node: _Node, common: object) -> _Node | None:
    """The node a branch starts with (``common`` None), or its run's ``common`` start
    if it starts with an equal one and that is a class or a class repeated a fixed
    number of times (Go factors no other)."""
    mine = _leading_node(node)
    if common is None or mine is None:
        return mine
    assert isinstance(common, _Node)
    if not _equal(common, mine):
        return None
    if _is_char_class(common) or (
        common.kind == _REPEAT and _fixed_count(common.key) and _is_char_class(common.subs[0])
    ):
        return common
    return None


def _remove_leading_node(node: _Node) -> _Node:
    if node.kind == _CONCAT and node.subs:
        del node.subs[0]
        if not node.subs:
            return _Node(_EMPTY)
        if len(node.subs) == 1:
            return node.subs[0]
        node.measure()
        return node
    return _Node(_EMPTY)


def _repeat_is_valid(node: _Node) -> bool:
    """Go's rule for counted repeats: nested ones together give at most 1,000 copies
    of the innermost expression (a repeat at most 0 times holds anything)."""
    work = [(node, 1000)]
    while work:
        re, n = work.pop()
        if re.bounds is not None:
            most = re.bounds[1] if re.bounds[1] >= 0 else re.bounds[0]
            if most == 0:
                continue
            if most > n:
                return False
            n //= most
        work.extend((sub, n) for sub in re.subs)
    return True


def _fixed_count(key: object) -> bool:
    """Whether a repeat operator is ``{n}`` or ``{n,n}``."""
    if not isinstance(key, str) or not key.startswith("{"):
        return False
    body = key.strip("{}?")
    low, _, high = body.partition(",")
    return "," not in body or low == high


def _repeat_end(t: str, i: int) -> int:
    """The end of a ``{n}``, ``{n,}`` or ``{n,m}`` at ``i``, or -1 (then ``{`` is a
    literal)."""
    j = i + 1
    start = j
    while j < len(t) and t[j].isdigit() and t[j].isascii():
        j += 1
    if j == start or j >= len(t):
        return -1
    if t[j] == ",":
        j += 1
        while j < len(t) and t[j].isdigit() and t[j].isascii():
            j += 1
    return j + 1 if j < len(t) and t[j] == "}" else -1


def _class_end(t: str, i: int) -> int:
    """The end of the character class at ``i`` (after its ``]``), scanned as Go does."""
    i += 1
    if t.startswith("^", i):
        i += 1
    if t.startswith("]", i):
        i += 1
    while i < len(t) and t[i] != "]":
        if t.startswith("[:", i):
            close = t.find(":]", i + 2)
            if close >= 0:
                i = close + 2
                continue
        i += 2 if t[i] == "\\" else 1
    return i + 1


def _single_rune(body: str) -> str | None:
    """The one character a class body (between its brackets) holds, if that is all."""
    if len(body) == 1 and body not in "^\\":
        return body
    if len(body) == 2 and body[0] == "\\" and not body[1].isalnum():
        return body[1]
    return None
