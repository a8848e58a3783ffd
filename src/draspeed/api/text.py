"""YAML and JSON text to plain documents, within limits.

Hostile or broken input must end in one clear error, never a crash, a hang or an
exhausted memory, so every text is parsed within :class:`Limits`:

- ``max_depth``: collections nested inside each other (a deep enough document crashes
  libyaml's recursive composer and exhausts recursion in JSON decoders and in the
  copies and dumps made of the objects later). YAML is composed here, iteratively,
  with a depth counter; JSON is measured with a compiled scan of its bytes
  (:mod:`draspeed.api._jsontext`) after the fast decode.
- ``max_alias_expansion``: what YAML aliases add to a document once expanded (nodes
  plus scalar characters). Aliases load as shared references, but every consumer
  that echoes the objects (encoders, the CLI's output) expands them: nine levels of
  nine aliases ("billion laughs") are a few hundred bytes of text and 387 million
  strings of output. Aliases that refer to an enclosing node (cycles) are refused.
- duplicate mapping keys are refused in both formats, as ``kubectl`` and the API
  server do in strict field validation (a YAML or JSON library keeps the last value
  silently); with ``duplicates="warn"`` they are reported to a callback and the last
  value is kept, with ``"ignore"`` it is kept silently (``kubectl --validate``).

The byte-size limit of files and standard input is checked by :mod:`draspeed.api.loader`
before reading; texts given in memory are already in memory.

Errors are :class:`TextError`: the 1-based document (``None`` for the whole text), a
field path and the message; the loader prefixes the file name.
"""

from __future__ import annotations

import ctypes
import json
import math
import re
from collections.abc import Callable, Hashable, Iterator
from dataclasses import dataclass
from typing import Any, Literal, cast

import msgspec
import yaml
from yaml.constructor import SafeConstructor
from yaml.events import (
    AliasEvent,
    MappingEndEvent,
    MappingStartEvent,
    ScalarEvent,
    SequenceEndEvent,
    SequenceStartEvent,
    StreamEndEvent,
)
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode
from yaml.resolver import Resolver

from draspeed import golang
from draspeed.api import _libyaml, json_as_go
from draspeed.api._jsontext import json_text_check
from draspeed.api._yaml_tree import construct_tree, no_path_resolvers, resolve_remembered

DEFAULT_MAX_BYTES = 1 << 30  # 1 GiB per file or standard input
# Kubernetes objects nest about 10 levels deep, opaque driver parameters a few more;
# 200 keeps every recursive consumer (copy.deepcopy, yaml.dump) within Python's
# default recursion limit of 1000 frames.
DEFAULT_MAX_DEPTH = 200
DEFAULT_MAX_ALIAS_EXPANSION = 10_000_000  # nodes + scalar characters added by aliases


@dataclass(frozen=True)
class Limits:
    """Input limits of :func:`draspeed.api.loader.load` (its keyword arguments)."""

    max_bytes: int = DEFAULT_MAX_BYTES
    max_depth: int = DEFAULT_MAX_DEPTH
    max_alias_expansion: int = DEFAULT_MAX_ALIAS_EXPANSION

    def __post_init__(self) -> None:
        for name in ("max_bytes", "max_depth", "max_alias_expansion"):
            value = getattr(self, name)
            if type(value) is not int or value < 1:
                raise ValueError(f"{name} must be a positive integer, not {value!r}")


class TextError(Exception):
    """A text that is not acceptable input; ``document`` is 1-based or None."""

    def __init__(self, document: int | None, path: str, message: str) -> None:
        super().__init__(message)
        self.document = document
        self.path = path
        self.message = message


# Called for a duplicate key that is not an error: (document, field path, message).
OnDuplicate = Callable[[int, str, str], None]


@dataclass(frozen=True)
class Parsed:
    """The documents of a text; ``json_exact``: every mapping key is a string and every
    value one JSON holds exactly (a string, an int, a finite float, a bool, null, a
    list, a mapping), so the documents' JSON text decodes to them again."""

    docs: list[Any]
    json_exact: bool


def parse_text(
    text: str | bytes,
    limits: Limits = Limits(),
    duplicates: Literal["strict", "warn", "ignore"] = "strict",
    on_duplicate: OnDuplicate | None = None,
) -> list[Any]:
    """The documents of a YAML or JSON text (JSON first: it is ~40x faster to parse).

    A repeated mapping key is a :class:`TextError` (``duplicates="strict"``), else the
    last value is kept, and with "warn" ``on_duplicate`` hears of it.
    """
    return parse_documents(text, limits, duplicates, on_duplicate).docs


def parse_documents(
    text: str | bytes,
    limits: Limits = Limits(),
    duplicates: Literal["strict", "warn", "ignore"] = "strict",
    on_duplicate: OnDuplicate | None = None,
) -> Parsed:
    """:func:`parse_text`, saying whether the documents are JSON-exact."""
    report: OnDuplicate | None = None
    if duplicates != "strict":
        report = (on_duplicate if duplicates == "warn" else None) or _quiet
    head = text[:64].lstrip()
    not_json: _NotJSONText | None = None
    if head[:1] in ("{", "[", b"{", b"["):
        doc = _decode_json(text, limits, report)
        if type(doc) is not _NotJSONText:
            return Parsed([doc], json_exact=False)
        not_json = doc
    try:
        docs, exact = _yaml_documents(text, limits, report)
        return Parsed(docs, json_exact=exact)
    except yaml.YAMLError as exc:
        problem = _yaml_problem(exc)
        if not_json is not None:  # meant as JSON, most likely: say what is wrong with it
            problem = f"neither JSON ({not_json.problem}) nor YAML ({problem})"
        raise TextError(None, "", problem) from exc


def _yaml_problem(exc: yaml.YAMLError) -> str:
    """PyYAML's error on one line, with positions as the rest of draspeed gives them
    (the loader names the file: PyYAML's name for a text in memory is left out)."""
    if isinstance(exc, yaml.MarkedYAMLError) and (exc.context or exc.problem):
        parts = []
        problem_mark, context_mark = exc.problem_mark, exc.context_mark
        if exc.context:
            same_place = (
                context_mark is not None
                and problem_mark is not None
                and (context_mark.line, context_mark.column)
                == (problem_mark.line, problem_mark.column)
            )
            at = _at(context_mark) if context_mark is not None and not same_place else ""
            parts.append(f"{exc.context}{at}")
        if exc.problem:
            parts.append(f"{exc.problem}{_at(problem_mark) if problem_mark is not None else ''}")
        return ": ".join(parts)
    if isinstance(exc, yaml.reader.ReaderError):
        character = exc.character
        what = (
            f"unacceptable character #x{character:04x}: {exc.reason}"
            if isinstance(character, int) and character >= 0
            else str(exc.reason)  # (libyaml's -1: no one character to name)
        )
        return f"{what} at position {exc.position}"
    return " ".join(_IN_TEXT.sub(" at", str(exc)).split())


# PyYAML's "in <name>," before a position; its names for texts in memory say nothing.
_IN_TEXT = re.compile(r'\s*in "<(?:byte|unicode) string>",')


def _quiet(document: int, path: str, message: str) -> None:
    """Duplicates kept without a word (``duplicates="ignore"``)."""


# ------------------------------------------------------------------------------ JSON


class _NotJSONText:
    """What msgspec found wrong with a text that is not one JSON document (YAML may
    still read it: flow style, or several documents)."""

    __slots__ = ("problem",)

    def __init__(self, problem: str) -> None:
        self.problem = problem


def _decode_json(text: str | bytes, limits: Limits, report: OnDuplicate | None) -> Any:
    try:
        doc = json_as_go.decode(text)
    except msgspec.ValidationError as exc:
        # An integer beyond msgspec's range (5,000 digits) stops msgspec, but the text
        # is JSON and the number a number: Go reads it as one, and refuses it for a
        # typed field. (YAML would read it as a string.)
        doc = _decode_wide_json(text, limits, exc)
        if type(doc) is _NotJSONText:
            return doc
    except msgspec.DecodeError as exc:
        return _NotJSONText(str(exc))  # YAML flow style, or several JSON documents
    except UnicodeDecodeError:
        assert isinstance(text, bytes)  # str input was decoded text already
        # Go's JSON decoding reads a byte of no valid UTF-8 as U+FFFD (the API server
        # keeps such a JSON text; go-yaml refuses a YAML one, as PyYAML does).
        return _decode_json(golang.utf8_as_go(text), limits, report)
    except UnicodeEncodeError as exc:
        raise TextError(None, "", f"not valid Unicode text: {exc.reason}") from exc
    except RecursionError as exc:  # deeper than the interpreter lets msgspec follow
        raise TextError(None, "", too_deep(limits.max_depth)) from exc
    # One compiled pass over the bytes (valid UTF-8: msgspec read them) tells whether
    # the text nests too deep and whether an object repeats a key.
    data = text if isinstance(text, bytes) else text.encode("utf-8")
    nested_too_deep, duplicate = json_text_check(data, limits.max_depth)
    if nested_too_deep:
        raise TextError(None, "", too_deep(limits.max_depth))
    if duplicate:
        found = _json_duplicates(text)
        if report is None:
            path, key = found[0]
            raise TextError(1, _child(path, key), f"duplicate key {json.dumps(key)}")
        for path, key in found:  # msgspec kept the last value, as Go's decoding does
            report(1, _child(path, key), f"duplicate key {json.dumps(key)}")
    return doc


def _decode_wide_json(text: str | bytes, limits: Limits, first: Exception) -> Any:
    """A JSON text with an integer msgspec cannot hold, by the standard library (Go
    reads it as a number, and refuses it for a typed field), or msgspec's problem if
    it is not JSON."""
    data = text if isinstance(text, bytes) else text.encode("utf-8", "surrogatepass")
    if json_text_check(data, limits.max_depth)[0]:  # (before a recursive decoder)
        raise TextError(None, "", too_deep(limits.max_depth))
    try:
        return json_as_go.decode_by_python(data)
    except (ValueError, RecursionError):  # JSONDecodeError is a ValueError
        return _NotJSONText(str(first))


def _json_duplicates(data: str | bytes) -> list[tuple[str, str]]:
    """Every repeated key: (path of its object, key), in order (slow: run only when
    there is one)."""
    found: list[tuple[str, str]] = []

    def pairs_hook(pairs: list[tuple[str, Any]]) -> Any:
        return _Pairs(pairs)

    def walk(value: Any, path: str) -> None:
        if isinstance(value, _Pairs):
            seen: set[str] = set()
            for key, item in value:
                if key in seen:
                    found.append((path, key))
                seen.add(key)
                walk(item, _child(path, key))
        elif isinstance(value, list):
            for i, item in enumerate(value):
                walk(item, f"{path}[{i}]")

    walk(json.loads(data, object_pairs_hook=pairs_hook), "")
    return found


class _Pairs(list[tuple[str, Any]]):
    """A JSON object as its list of (key, value) pairs, duplicates included."""


def _child(path: str, key: Any) -> str:
    return f"{path}.{key}" if path else str(key)


def too_deep(limit: int, where: str = "") -> str:
    return f"collections nest more than {limit} levels deep{where} (load(..., max_depth=...))"


# ------------------------------------------------------------------------------ YAML

_MERGE_TAG = "tag:yaml.org,2002:merge"
_SPECIAL_KEY_TAGS = (_MERGE_TAG, "tag:yaml.org,2002:value")  # what flatten_mapping edits
_EventParser: Any
_HAS_LIBYAML = True
_NULL_TAG = "tag:yaml.org,2002:null"
try:
    from yaml._yaml import CParser as _EventParser
except ImportError:
    _HAS_LIBYAML = False  # PyYAML without libyaml: the pure-Python reader and parser

    class _EventParser(yaml.reader.Reader, yaml.scanner.Scanner, yaml.parser.Parser):  # type: ignore[no-redef]
        def __init__(self, stream: Any) -> None:
            yaml.reader.Reader.__init__(self, stream)
            yaml.scanner.Scanner.__init__(self)
            yaml.parser.Parser.__init__(self)


class _NotJSON(Exception):
    """A YAML float JSON cannot hold (``.nan``, ``.inf``): kubectl's conversion of the
    document to JSON fails on it."""

    def __init__(self, node: Node, value: float) -> None:
        super().__init__()
        self.node = node
        self.value = value


class _DuplicateKey(Exception):
    def __init__(self, mapping: MappingNode, key_node: Node, first: Node, key: Any) -> None:
        super().__init__()
        self.mapping = mapping
        self.key_node = key_node
        self.first = first
        self.key = key


# Distinct scalar texts whose tags one loader remembers (UUIDs and the like are many).
_TAGS_REMEMBERED = 65536


class _DocumentLoader(_EventParser, SafeConstructor, Resolver):
    """libyaml's event parser, a composer with limits (here) and PyYAML's safe
    constructor, refusing duplicate keys. Timestamps stay text, as Kubernetes' own
    decoding keeps them (metav1.Time fields are RFC 3339 strings)."""

    def __init__(self, stream: Any, limits: Limits, keep_duplicates: bool = False) -> None:
        _EventParser.__init__(self, stream)
        SafeConstructor.__init__(self)
        Resolver.__init__(self)
        self.limits = limits
        self.merged: dict[MappingNode, int] = {}  # merged pairs at the front, per mapping
        # Duplicate keys: raised, or (keep_duplicates) kept here and the last value used.
        self.keep_duplicates = keep_duplicates
        self.duplicates: list[_DuplicateKey] = []
        self._tags: dict[tuple[Any, Any, Any], str] = {}

    # PyYAML's tag resolution tries a list of regular expressions per plain scalar, a
    # quarter of composing a cluster's YAML, while a dump repeats a few hundred
    # distinct texts: remembered per (kind, text, implicit), in compiled code, as are
    # the path-resolver hooks libyaml's composer calls per node. Nothing else decides a
    # tag: this class sets no path resolvers (whatever another loader adds).
    yaml_path_resolvers: dict[Any, Any] = {}  # noqa: RUF012 (PyYAML's class attribute)
    tags_remembered = _TAGS_REMEMBERED
    resolve = resolve_remembered
    descend_resolver = no_path_resolvers
    ascend_resolver = no_path_resolvers

    # ---- composing ---------------------------------------------------------------

    def compose(self, document: int) -> Node:
        """The next document's node graph; every alias is measured, never expanded."""
        limits = self.limits
        max_depth = limits.max_depth
        anchors: dict[str, tuple[Node, int, int] | None] = {}  # None: still open
        first_marks: dict[str, Any] = {}
        # One frame per open collection: [node, anchor, height of the highest child,
        # size of the children (aliases expanded), a mapping's key awaiting its value].
        stack: list[list[Any]] = []
        added = 0  # what aliases added to the document so far
        get_event = self.get_event
        node: Node
        while True:
            event: Any = get_event()
            kind = type(event)  # dispatch on the class: the stubs' Mark types do not mix
            if kind is ScalarEvent:
                if event.anchor is not None:
                    self._check_anchor(event, first_marks)
                tag = event.tag
                if tag is None or tag == "!":
                    tag = self.resolve(ScalarNode, event.value, event.implicit)
                node = ScalarNode(
                    tag, event.value, event.start_mark, event.end_mark, style=event.style
                )
                height, size = 0, 1 + len(event.value)
                if event.anchor is not None:
                    anchors[event.anchor] = (node, height, size)
            elif kind is SequenceStartEvent or kind is MappingStartEvent:
                if len(stack) >= max_depth:
                    raise TextError(document, "", too_deep(max_depth, _at(event.start_mark)))
                if event.anchor is not None:
                    self._check_anchor(event, first_marks)
                    anchors[event.anchor] = None
                node_class = SequenceNode if kind is SequenceStartEvent else MappingNode
                tag = event.tag
                if tag is None or tag == "!":
                    tag = self.resolve(node_class, None, event.implicit)
                collection = node_class(
                    tag, [], event.start_mark, None, flow_style=event.flow_style
                )
                stack.append([collection, event.anchor, 0, 0, None])
                continue
            elif kind is SequenceEndEvent or kind is MappingEndEvent:
                frame = stack.pop()
                node = frame[0]
                node.end_mark = event.end_mark
                height, size = frame[2] + 1, frame[3] + 1
                if frame[1] is not None:
                    anchors[frame[1]] = (node, height, size)
            elif kind is AliasEvent:
                if event.anchor not in anchors:
                    raise yaml.composer.ComposerError(
                        None, None, f"found undefined alias {event.anchor!r}", event.start_mark
                    )
                target = anchors[event.anchor]
                if target is None:
                    raise TextError(
                        document,
                        "",
                        f"YAML alias *{event.anchor}{_at(event.start_mark)} "
                        "refers to a node that contains it",
                    )
                node, height, size = target
                if len(stack) + height > max_depth:
                    where = f" with alias *{event.anchor}{_at(event.start_mark)}"
                    raise TextError(document, "", too_deep(max_depth, where))
                added += size
                if added > limits.max_alias_expansion:
                    raise TextError(
                        document,
                        "",
                        f"YAML aliases expand to more than "
                        f"{limits.max_alias_expansion} nodes and characters with alias "
                        f"*{event.anchor}{_at(event.start_mark)} "
                        "(load(..., max_alias_expansion=...))",
                    )
            else:  # pragma: no cover - the parser emits nothing else inside a document
                raise AssertionError(event)
            if not stack:
                return node
            parent = stack[-1]
            if height > parent[2]:
                parent[2] = height
            parent[3] += size
            if type(parent[0]) is SequenceNode:
                parent[0].value.append(node)
            elif parent[4] is None:
                parent[4] = node
            else:
                parent[0].value.append((parent[4], node))
                parent[4] = None

    @staticmethod
    def _check_anchor(event: Any, first_marks: dict[str, Any]) -> None:
        anchor = event.anchor
        if anchor in first_marks:
            raise yaml.composer.ComposerError(
                f"found duplicate anchor {anchor!r}; first occurrence",
                first_marks[anchor],
                "second occurrence",
                event.start_mark,
            )
        first_marks[anchor] = event.start_mark

    # ---- constructing ------------------------------------------------------------

    def construct_json_float(self, node: ScalarNode) -> float:
        value: float = self.construct_yaml_float(node)
        if value != value or value in (math.inf, -math.inf):
            raise _NotJSON(node, value)
        return value

    def construct_json_int(self, node: ScalarNode) -> int | str:
        """An integer, or the text of one too long for Python to convert (over 4,300
        digits): a string, as go-yaml makes of an integer that no Go number holds."""
        try:
            value: int = self.construct_yaml_int(node)
        except ValueError:
            return str(node.value)
        return value

    def construct_merge_text(self, node: ScalarNode) -> str:
        """A plain ``<<`` that is not a mapping's key: text, as go-yaml reads it (PyYAML
        has no constructor for a merge key elsewhere)."""
        return str(node.value)

    def flatten_mapping(self, node: MappingNode) -> None:
        if node in self.merged:
            return  # merge keys already resolved (the node is shared by an alias)
        for key_node, _ in node.value:
            if key_node.tag in _SPECIAL_KEY_TAGS:
                break
        else:
            return  # nothing to merge or rename: the common case, kept cheap
        explicit = sum(1 for key_node, _ in node.value if key_node.tag != _MERGE_TAG)
        super().flatten_mapping(node)
        self.merged[node] = len(node.value) - explicit

    def construct_mapping(self, node: Any, deep: bool = False) -> dict[Hashable, Any]:
        if not isinstance(node, MappingNode):
            return super().construct_mapping(node, deep=deep)
        return self._mapping(node, lambda child: self.construct_object(child, deep=deep))

    def _mapping(self, node: MappingNode, construct: Callable[[Node], Any]) -> dict[Hashable, Any]:
        """A mapping's dict, its keys and values made by ``construct``: merge keys
        resolved, unhashable keys refused, duplicate keys raised or kept."""
        self.flatten_mapping(node)
        merged = self.merged.get(node, 0)
        mapping: dict[Hashable, Any] = {}
        written: dict[Hashable, Node] = {}
        for i, (key_node, value_node) in enumerate(node.value):
            key = construct(key_node)
            if type(key) is not str and isinstance(key, (bool, int, float)):
                key = _json_key(key)
            elif key is None:  # (kubectl's conversion to JSON refuses it too)
                raise yaml.constructor.ConstructorError(
                    "while constructing a mapping",
                    node.start_mark,
                    "found a null key, which JSON cannot hold",
                    key_node.start_mark,
                )
            if not isinstance(key, Hashable):
                raise yaml.constructor.ConstructorError(
                    "while constructing a mapping",
                    node.start_mark,
                    "found unhashable key",
                    key_node.start_mark,
                )
            if i >= merged:  # merged keys may be overridden; written ones appear once
                first = written.get(key)
                if first is not None:
                    duplicate = _DuplicateKey(node, key_node, first, key)
                    if not self.keep_duplicates:
                        raise duplicate
                    self.duplicates.append(duplicate)
                written[key] = key_node
            mapping[key] = construct(value_node)
        return mapping

    # ---- a tree without aliases, built in one walk ----------------------------------

    def construct_tree(self, root: Node) -> Any:
        """What ``construct_document`` makes of ``root``, for a node tree without
        aliases (libyaml's composer, no anchors), in one recursive walk: strings,
        mappings and sequences directly, other nodes by PyYAML's constructors.
        PyYAML's general walk (a generator per collection, a lookup per node for
        recursive aliases) cost half of reading a YAML cluster."""
        try:
            return construct_tree(self, root)  # compiled: _tree, for the common nodes
        finally:
            self.constructed_objects = {}
            self.recursive_objects = {}

    def _tree(self, node: Node) -> Any:
        kind = type(node)
        tag = node.tag
        if kind is ScalarNode:
            return node.value if tag == _STR_TAG else self.construct_object(node, deep=True)
        if kind is MappingNode and tag == _MAP_TAG:
            return self._mapping(cast(MappingNode, node), self._tree)
        if kind is SequenceNode and tag == _SEQ_TAG:
            return [self._tree(child) for child in node.value]
        return self.construct_object(node, deep=True)


def _json_key(key: bool | int | float) -> str:
    """The JSON object key kubectl's YAML reading (sigs.k8s.io/yaml) makes of a YAML key
    that is a bool, an integer or a float: ``yes: x`` is ``"true": x``, ``1: x`` is
    ``"1": x``, and a float is written as Go's FormatFloat(key, 'g', -1, 32) writes it."""
    if isinstance(key, bool):
        return "true" if key else "false"
    if isinstance(key, int):
        return str(key)
    import numpy as np  # (a float key is rare: numpy gives float32's shortest digits)

    # The shortest digits of the float32 nearest the key, and its decimal exponent.
    digits, _, exponent_text = np.format_float_scientific(
        np.float32(key), unique=True, trim="-"
    ).partition("e")
    sign = "-" if digits.startswith("-") else ""
    digits = digits.lstrip("-").replace(".", "")
    exponent = int(exponent_text)
    if digits == "0":
        return sign + "0"
    if exponent < -4 or exponent >= 6:  # Go's %e: at least two exponent digits
        mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{sign}{mantissa}e{'-' if exponent < 0 else '+'}{abs(exponent):02d}"
    point = exponent + 1  # digits before the decimal point
    if point <= 0:
        return f"{sign}0.{'0' * -point}{digits}"
    if point >= len(digits):
        return sign + digits + "0" * (point - len(digits))
    return f"{sign}{digits[:point]}.{digits[point:]}"


_STR_TAG = "tag:yaml.org,2002:str"
_MAP_TAG = "tag:yaml.org,2002:map"
_SEQ_TAG = "tag:yaml.org,2002:seq"
# The one-walk construction recurses once per level: used up to this nesting limit.
_TREE_MAX_DEPTH = 400

_DocumentLoader.add_constructor("tag:yaml.org,2002:float", _DocumentLoader.construct_json_float)
_DocumentLoader.add_constructor("tag:yaml.org,2002:int", _DocumentLoader.construct_json_int)
_DocumentLoader.add_constructor(_MERGE_TAG, _DocumentLoader.construct_merge_text)
# Not resolved: timestamps (text, as Kubernetes keeps them) and a plain ``=`` (PyYAML's
# "value" tag, which its safe constructor cannot build: text, as go-yaml reads it).
_UNRESOLVED = ("tag:yaml.org,2002:timestamp", "tag:yaml.org,2002:value")
_DocumentLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag not in _UNRESOLVED]
    for first, resolvers in Resolver.yaml_implicit_resolvers.items()
}


def _yaml_documents(
    text: str | bytes, limits: Limits, report: OnDuplicate | None = None
) -> tuple[list[Any], bool]:
    """The non-empty documents of a YAML text, and whether they are JSON-exact: the
    common case read straight from libyaml's events (:mod:`draspeed.api._libyaml`,
    which makes only JSON-exact documents), anything else the general way."""
    if _DIRECT:
        docs = _direct_documents(text, limits)
        if docs is not None:
            return docs, True
    return list(_general_documents(text, limits, report)), False


def _direct_documents(text: str | bytes, limits: Limits) -> list[Any] | None:
    if isinstance(text, str):
        try:
            data = text.encode("utf-8")
        except UnicodeEncodeError:  # lone surrogates: the general reading words it
            return None
        if data.startswith(b"\xef\xbb\xbf"):
            return None  # a BOM in decoded text is a character, not an encoding mark
    else:
        data = text
    loader = _DocumentLoader(b"", limits)
    try:
        return _libyaml.documents(data, loader, ScalarNode, limits.max_depth)
    finally:
        loader.dispose()


def _general_documents(
    text: str | bytes, limits: Limits, report: OnDuplicate | None = None
) -> Iterator[Any]:
    loader = _DocumentLoader(text, limits, keep_duplicates=report is not None)
    count = 0
    try:
        tree = _HAS_LIBYAML and _libyaml_composer_is_safe(text, limits.max_depth)
        roots = _libyaml_roots(loader) if tree else _limited_roots(loader)
        construct = (
            loader.construct_tree
            if tree and limits.max_depth <= _TREE_MAX_DEPTH
            else loader.construct_document
        )
        for root in roots:
            try:
                doc = construct(root)
            except _DuplicateKey as dup:
                raise TextError(count + 1, _key_path(root, dup), _duplicate_text(dup)) from None
            except _NotJSON as bad:
                raise TextError(
                    count + 1,
                    _node_path(root, bad.node),
                    f"error converting YAML to JSON: json: unsupported value: "
                    f"{_go_special_float(bad.value)}",
                ) from None
            finally:
                loader.merged.clear()
            if report is not None:
                for kept in loader.duplicates:
                    report(count + 1, _key_path(root, kept), _duplicate_text(kept))
                loader.duplicates.clear()
            if doc is not None:
                count += 1
                yield doc
    except yaml.MarkedYAMLError as exc:
        # libyaml's scanner may read ahead of the composer and refuse deep flow
        # collections itself (PyYAML 6.0.4 and later, at 1,000 levels) before the
        # composer counts them: the document nests too deep either way, and the user
        # gets one error naming the document, whichever check fires first.
        if "nesting depth" not in (exc.problem or ""):
            raise
        mark = exc.problem_mark
        where = _at(mark) if mark is not None else ""
        raise TextError(count + 1, "", too_deep(limits.max_depth, where)) from None
    finally:
        loader.dispose()


# A document with every kind of scalar and collection the direct reading takes (and an
# empty document, which is skipped): libyaml is used directly only if it reads this as
# the general reading does.
_PROBE = (
    "a: 1\nb: [x, 'y', \"z\", 2.5, true, ~, null, -0x1F, 1_000, 0o17, 1:30, -.5, +12]\n"
    "c:\n  d: |\n    block\n  e: >-\n    folded\n    text\n  f: {g: h, i: [], j: {}}\n"
    "  k: 2024-01-01T00:00:00Z\nl: Yes\nm: ''\nn:\n- - o\n  - p\n- q: r\n  s:\n"
    '---\n---\n"\u00e9": "\\u00e9\\t\\x41"\n...\n--- plain\n'
)


def _libyaml_functions() -> dict[str, int]:
    """The addresses of the libyaml functions :mod:`draspeed.api._libyaml` calls, in
    PyYAML's compiled module (which carries libyaml, or links it); {} if not found."""
    try:
        from yaml import _yaml as compiled

        library = ctypes.CDLL(compiled.__file__)
        return {
            name: ctypes.cast(getattr(library, name), ctypes.c_void_p).value or 0
            for name in _libyaml.FUNCTIONS
        }
    except (ImportError, OSError, AttributeError):
        return {}


def _probe_direct() -> bool:
    probe = _PROBE.encode("utf-8")
    general = list(_general_documents(probe, Limits()))
    direct = _direct_documents(probe, Limits())
    return direct is not None and repr(direct) == repr(general)


def _libyaml_roots(loader: _DocumentLoader) -> Iterator[Node]:
    while loader.check_node():
        yield loader.get_node()


def _limited_roots(loader: _DocumentLoader) -> Iterator[Node]:
    loader.get_event()  # stream start
    count = 0
    while not loader.check_event(StreamEndEvent):
        loader.get_event()  # document start
        root = loader.compose(count + 1)
        loader.get_event()  # document end
        if not (type(root) is ScalarNode and root.tag == _NULL_TAG):
            count += 1  # numbered as the loader numbers them: empty documents skipped
        yield root


def _may_hold_anchor(data: bytes) -> bool:
    """Whether an anchor may stand in ``data``: an "&" first on its line, after an
    indicator that opens a node (":", "-", "?", "[", "{", ","; blanks between allowed)
    or after a tag. Any other "&" is text (CEL's "&&" in selectors). Quoted text may
    match too, which only costs the slower composer; every real anchor matches."""
    at = data.find(b"&")
    while at >= 0:
        before = data[max(0, at - 256) : at].rstrip(b" \t")
        if not before or before[-1:] in b"\r\n:?[{,-":
            return True
        token = before.rsplit(None, 1)[-1]
        if token.startswith(b"!") or (len(token) == len(before) and at > 256):
            return True  # after a tag; or a token too long to see its start
        at = data.find(b"&", at + 1)
    return False


# libyaml's own composer is ~1.5x faster than composing from Python events, but it
# recurses once per nesting level and knows no limits. It is used when the text cannot
# nest deeper than the limit and has no anchors (so no aliases). Sound bound: flow
# collections nest at most once per "[" or "{"; a block collection sits at a column at
# least (depth - 1) / 2 (a sequence may share its parent mapping's indentation), and
# only spaces, tabs and the indicators "-", "?", ":" can precede it on its line.
_PREFIX_OF_LINE = bytes(
    ord("a") if c in b" \t-?:" else ord("\n") if c in b"\n\r\x85\xa8\xa9" else ord("b")
    for c in range(256)
)  # NEL, LS and PS break lines too: their last byte in UTF-8 counts as one


def _libyaml_composer_is_safe(text: str | bytes, max_depth: int) -> bool:
    data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    if data[:2] in (b"\xff\xfe", b"\xfe\xff"):  # UTF-16
        return False
    if _may_hold_anchor(data):
        return False
    # Empty "[]" and "{}" hold nothing: of a chain of flow collections only the
    # innermost may be empty.
    flow = data.count(b"[") + data.count(b"{") - data.count(b"[]") - data.count(b"{}") + 1
    run = (max_depth - flow) // 2  # a line prefix this long could nest too deep
    if run < 1:
        return False
    prefixes = data.translate(_PREFIX_OF_LINE)
    return not prefixes.startswith(b"a" * run) and b"\n" + b"a" * run not in prefixes


def _duplicate_text(dup: _DuplicateKey) -> str:
    key = json.dumps(dup.key) if isinstance(dup.key, str) else str(dup.key)
    return f"duplicate key {key}{_at(dup.key_node.start_mark)} (first{_at(dup.first.start_mark)})"


def _key_path(root: Node, dup: _DuplicateKey) -> str:
    """The field path of the duplicate key (searched for only on this error)."""
    stack: list[tuple[Node, str]] = [(root, "")]
    seen: set[int] = set()
    while stack:
        node, path = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if node is dup.mapping:
            return _child(path, dup.key)
        if isinstance(node, SequenceNode):
            stack.extend((item, f"{path}[{i}]") for i, item in enumerate(node.value))
        elif isinstance(node, MappingNode):
            for key_node, value_node in node.value:
                name = key_node.value if isinstance(key_node, ScalarNode) else "?"
                stack.append((value_node, _child(path, name)))
    return ""


def _node_path(root: Node, target: Node) -> str:
    """The field path of a value node (searched for only on this error)."""
    stack: list[tuple[Node, str]] = [(root, "")]
    seen: set[int] = set()
    while stack:
        node, path = stack.pop()
        if node is target:
            return path
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, SequenceNode):
            stack.extend((item, f"{path}[{i}]") for i, item in enumerate(node.value))
        elif isinstance(node, MappingNode):
            for key_node, value_node in node.value:
                name = key_node.value if isinstance(key_node, ScalarNode) else "?"
                stack.append((key_node, path))
                stack.append((value_node, _child(path, name)))
    return ""


def _go_special_float(value: float) -> str:
    """NaN or an infinity as Go prints it."""
    if value != value:
        return "NaN"
    return "+Inf" if value > 0 else "-Inf"


def _at(mark: Any) -> str:
    return f" at line {mark.line + 1}, column {mark.column + 1}"


# (At the end: the probe reads the text the general way, with all of this module.)
_DIRECT = _HAS_LIBYAML and _libyaml.enable(_libyaml_functions(), _probe_direct)
