"""RE2 regular expressions (as Go's regexp) for ``matches`` and the Kubernetes regex library.

google-re2 (a cel-python dependency) gives RE2's syntax and linear-time matching, which
is what Go's regexp implements; Python's ``re`` differs in syntax and can backtrack
exponentially on hostile patterns.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

import re2

from draspeed.cel.meter import Ticker, current_meter
from draspeed.cel.regex_height import nests_too_deeply
from draspeed.cel.values import EvalError

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False

_CACHE_SIZE = 512
_cache: OrderedDict[str, Any] = OrderedDict()
_lock = threading.Lock()


class RegexSyntaxError(EvalError):
    """The pattern is not valid RE2 syntax (text like Go's regexp error)."""


def compile_regex(pattern: str) -> Any:
    """Compile (cached); raises :class:`RegexSyntaxError` with Go-like text."""
    with _lock:
        compiled = _cache.get(pattern)
        if compiled is not None:
            _cache.move_to_end(pattern)
            return compiled
    try:
        compiled = re2.compile(pattern, _OPTIONS)
    except re2.error as exc:
        detail = exc.args[0] if exc.args else exc
        if isinstance(detail, bytes):
            detail = detail.decode("utf-8", "replace")
        message = _go_error_text(str(detail))
        # A repeat count both refuse: Go's parser may meet the depth limit first.
        if message.startswith("invalid repeat count") and nests_too_deeply(pattern):
            message = _too_deep(pattern)
        raise RegexSyntaxError(f"error parsing regexp: {message}") from None
    refused = _go_refuses(pattern)
    if refused is None and nests_too_deeply(pattern):
        refused = _too_deep(pattern)
    if refused is not None:
        raise RegexSyntaxError(f"error parsing regexp: {refused}")
    with _lock:
        _cache[pattern] = compiled
        if len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    return compiled


def _too_deep(pattern: str) -> str:
    """Go's words for a pattern nested too deeply (it quotes the whole pattern)."""
    return f"expression nests too deeply: `{pattern}`"


# RE2 (C++) error messages → Go regexp/syntax error codes, which quote the offending
# text in backquotes.
_GO_CODES = (
    ("missing ): ", "missing closing )"),
    ("missing ]: ", "missing closing ]"),
    ("unexpected ): ", "unexpected )"),
    ("bad repetition operator: ", "invalid nested repetition operator"),
    ("no argument for repetition operator: ", "missing argument to repetition operator"),
    ("invalid escape sequence: ", "invalid escape sequence"),
    ("invalid character class range: ", "invalid character class range"),
    ("invalid character class: ", "invalid character class"),
    ("invalid named capture group: ", "invalid named capture"),
    ("invalid perl operator: ", "invalid or unsupported Perl syntax"),
    ("invalid repetition size: ", "invalid repeat count"),
)


def _go_error_text(message: str) -> str:
    if message == "trailing \\":
        return "trailing backslash at end of expression: ``"
    for prefix, code in _GO_CODES:
        if message.startswith(prefix):
            return f"{code}: `{message[len(prefix) :]}`"
    return message


_NAME_CHARACTERS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")


def _go_refuses(pattern: str) -> str | None:
    """What Go's regexp refuses in a pattern RE2 (C++) takes, as Go words it: the
    ``\\C`` escape (any byte) and a capture name with other characters than ASCII
    letters, digits and ``_``. Scanned as Go parses: ``\\Q...\\E`` is literal text and a
    character class ends at its first unescaped ``]`` after the first character."""
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "\\":
            following = pattern[i + 1 : i + 2]
            if following == "C":
                return "invalid escape sequence: `\\C`"
            if following == "Q":
                end = pattern.find("\\E", i + 2)
                i = n if end < 0 else end + 2
                continue
            i += 2
        elif c == "[":
            i += 1
            if pattern.startswith("^", i):
                i += 1
            if pattern.startswith("]", i):
                i += 1
            while i < n and pattern[i] != "]":
                if pattern.startswith("[:", i):
                    close = pattern.find(":]", i + 2)
                    if close >= 0:
                        i = close + 2
                        continue
                if pattern[i] == "\\":
                    if pattern.startswith("C", i + 1):
                        return "invalid escape sequence: `\\C`"
                    i += 2
                    continue
                i += 1
            i += 1
        elif pattern.startswith("(?P<", i):
            end = pattern.find(">", i + 4)
            if end < 0:
                return None  # (RE2 words that one)
            name = pattern[i + 4 : end]
            if not name or not set(name) <= _NAME_CHARACTERS:
                return f"invalid named capture: `{pattern[i : end + 1]}`"
            i = end + 1
        else:
            i += 1
    return None


def regex_error(pattern: str) -> str | None:
    """None if ``pattern`` compiles, else the error text."""
    try:
        compile_regex(pattern)
    except RegexSyntaxError as exc:
        return str(exc)
    return None


def rune_positions(pattern: str, text: str) -> Any | None:
    """For a pattern that tests ``\\B`` on a text with non-ASCII characters, the
    pattern compiled as ``(?s:.)*?(pattern)``, to be used anchored (``match``) with the
    match in group 1; else None.

    Go's regexp steps through a text character by character, RE2 byte by byte: inside
    a multi-byte character both neighbours are non-word bytes and ``\\B`` holds there,
    where Go never looks (``"K\\u212ak".matches("\\\\B")`` is false upstream). Led by
    ``(?s:.)*?``, which takes whole characters, a match can only start between them;
    the laziness keeps the leftmost start, as an unanchored search keeps it."""
    if "\\B" not in pattern or text.isascii():
        return None
    with _lock:
        found = _led_by_characters.get(pattern)
    if found is None:
        try:
            found = re2.compile(f"(?s:.)*?({pattern})", _OPTIONS)
        except re2.error:  # (an unterminated \Q: its \B is text, tested nowhere)
            return None
        with _lock:
            _led_by_characters[pattern] = found
            if len(_led_by_characters) > _CACHE_SIZE:
                _led_by_characters.popitem(last=False)
    return found


_led_by_characters: OrderedDict[str, Any] = OrderedDict()


def search(regex: Any, pattern: str, text: str, pos: int = 0) -> tuple[int, int] | None:
    """The span of the leftmost match of ``regex`` (``pattern`` compiled) in ``text``
    from character ``pos``, as Go finds it (see :func:`rune_positions`); None."""
    led = rune_positions(pattern, text)
    if led is not None:
        m = led.match(text, pos)
        return None if m is None else m.span(1)
    m = regex.search(text, pos)
    return None if m is None else m.span()


def find_all(regex: Any, text: str, limit: int, pattern: str) -> list[str]:
    """Go's ``FindAllString``: successive non-overlapping matches; an empty match right
    after the previous match is skipped."""
    out: list[str] = []
    if limit == 0:
        return out
    pos = 0
    prev_end = -1
    n = len(text)
    ticker = Ticker()
    # The wrapper re-reads the text from ``pos`` on every search: a step's work grows
    # with the text (an empty pattern, cheap upstream, matches between every character).
    work = 1 + n // 64
    while pos <= n:
        ticker.step(work)
        found = search(regex, pattern, text, pos)
        if found is None:
            break
        start, end = found
        if end == start and start == prev_end:
            # empty match abutting the previous match: advance one character
            pos = start + 1
            continue
        current_meter().reserve(end - start + 1)
        out.append(text[start:end])
        if limit > 0 and len(out) >= limit:
            break
        prev_end = end
        pos = end if end > start else end + 1
    return out
