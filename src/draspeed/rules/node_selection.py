"""Which nodes a ResourceSlice or device is available on.

``node_matches`` decides relevance the way the allocator does (nodeName, then
allNodes, then a NodeSelector). NodeSelector semantics follow
k8s.io/component-helpers ``scheduling/corev1/nodeaffinity``: terms are ORed,
the requirements of one term are ANDed, an empty term matches nothing,
``matchExpressions`` support In/NotIn/Exists/DoesNotExist/Gt/Lt on node labels,
``matchFields`` support In/NotIn with one value on ``metadata.name``.

A selector that does not parse makes the whole selector an error (upstream
validates every term before matching any). The error texts reproduce
apimachinery's field errors and the Go ``String()`` of the selector, because
upstream embeds both in the allocation error.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

import numpy as np

from draspeed.api.model import Node, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm
from draspeed.errors import DraspeedError
from draspeed.golang import go_quote, regex_error

_LABEL_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")
_FIELD_OPERATORS = ("In", "NotIn")

_LABEL_KEY_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_LABEL_KEY_MSG = (
    "must consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character"
)
_LABEL_VALUE_FMT = f"({_LABEL_KEY_FMT})?"
_LABEL_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, "
    "'-', '_' or '.', and must start and end with an alphanumeric character"
)
_DNS_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS_SUBDOMAIN_FMT = _DNS_LABEL_FMT + "(\\." + _DNS_LABEL_FMT + ")*"
_DNS_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
    "'-' or '.', and must start and end with an alphanumeric character"
)
_LABEL_KEY_RE = re.compile(_LABEL_KEY_FMT)
_LABEL_VALUE_RE = re.compile(_LABEL_VALUE_FMT)
_DNS_SUBDOMAIN_RE = re.compile(_DNS_SUBDOMAIN_FMT)
_GO_INT_RE = re.compile(r"[+-]?[0-9]+")
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


class NodeSelectorError(DraspeedError, ValueError):
    """A node selector that does not parse; ``str()`` is upstream's text."""


# --------------------------------------------------------------------------------------
# Go formatting helpers (only what the error texts need)
# --------------------------------------------------------------------------------------


def _go_json(value: object) -> str:
    """``encoding/json`` output for strings and string lists (HTML-safe escaping)."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    for raw, escaped in (
        ("<", "\\u003c"),
        (">", "\\u003e"),
        ("&", "\\u0026"),
        ("\u2028", "\\u2028"),
        ("\u2029", "\\u2029"),
    ):
        text = text.replace(raw, escaped)
    return text


def _values_json(values: Sequence[str]) -> str:
    # An unset list is a nil slice in Go and marshals as null; the model cannot tell
    # unset from empty, and unset is by far the more common way to get here.
    return _go_json(list(values)) if values else "null"


def _invalid(path: str, bad_value: str, detail: str) -> str:
    return f"{path}: Invalid value: {bad_value}: {detail}"


def _not_supported(path: str, bad_value: str, supported: Sequence[str]) -> str:
    quoted = ", ".join(go_quote(v) for v in supported)
    return f"{path}: Unsupported value: {_go_json(bad_value)}: supported values: {quoted}"


def _aggregate(messages: Sequence[str]) -> str:
    """``utilerrors.NewAggregate(...).Error()``: one message, or a bracketed, deduplicated list."""
    unique = list(dict.fromkeys(messages))
    if len(unique) == 1:
        return unique[0]
    return "[" + ", ".join(unique) + "]"


def format_node_selector(selector: NodeSelector | None) -> str:
    """The Go protobuf ``String()`` of a ``v1.NodeSelector``."""
    if selector is None:
        return "nil"

    def requirement(r: NodeSelectorRequirement) -> str:
        values = " ".join(r.values)
        return f"NodeSelectorRequirement{{Key:{r.key},Operator:{r.operator},Values:[{values}],}}"

    def term(t: NodeSelectorTerm) -> str:
        exprs = "".join(requirement(r) + "," for r in t.match_expressions)
        fields = "".join(requirement(r) + "," for r in t.match_fields)
        return (
            f"NodeSelectorTerm{{MatchExpressions:[]NodeSelectorRequirement{{{exprs}}},"
            f"MatchFields:[]NodeSelectorRequirement{{{fields}}},}}"
        )

    terms = "".join(term(t) + "," for t in selector.node_selector_terms)
    return f"&NodeSelector{{NodeSelectorTerms:[]NodeSelectorTerm{{{terms}}},}}"


# --------------------------------------------------------------------------------------
# Label key / value validation (apimachinery IsLabelKey / IsLabelValue)
# --------------------------------------------------------------------------------------


def _label_key_problems(key: str) -> list[str]:
    problems: list[str] = []
    parts = key.split("/")
    if len(parts) > 2:
        return [
            "a valid label key "
            + regex_error(_LABEL_KEY_MSG, _LABEL_KEY_FMT, "MyName", "my.name", "123-abc")
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    name = parts[-1]
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            problems.append("prefix part must be non-empty")
        else:
            if len(prefix.encode()) > 253:
                problems.append("prefix part must be no more than 253 bytes")
            if not _DNS_SUBDOMAIN_RE.fullmatch(prefix):
                problems.append(
                    "prefix part "
                    + regex_error(_DNS_SUBDOMAIN_MSG, _DNS_SUBDOMAIN_FMT, "example.com")
                )
    if not name:
        problems.append("name part must be non-empty")
    elif len(name.encode()) > 63:
        problems.append("name part must be no more than 63 bytes")
    if not _LABEL_KEY_RE.fullmatch(name):
        problems.append(
            "name part "
            + regex_error(_LABEL_KEY_MSG, _LABEL_KEY_FMT, "MyName", "my.name", "123-abc")
        )
    return problems


def _label_value_problems(value: str) -> list[str]:
    problems: list[str] = []
    if len(value.encode()) > 63:
        problems.append("must be no more than 63 bytes")
    if not _LABEL_VALUE_RE.fullmatch(value):
        problems.append(
            regex_error(_LABEL_VALUE_MSG, _LABEL_VALUE_FMT, "MyValue", "my_value", "12345")
        )
    return problems


def _parse_go_int64(text: str) -> int | None:
    """``strconv.ParseInt(text, 10, 64)``, or None where Go reports an error."""
    if not _GO_INT_RE.fullmatch(text):
        return None
    value = int(text)
    return value if _INT64_MIN <= value <= _INT64_MAX else None


# --------------------------------------------------------------------------------------
# Parsing and matching
# --------------------------------------------------------------------------------------


def _label_requirement_problems(req: NodeSelectorRequirement, path: str) -> list[str]:
    """What ``labels.NewRequirement`` (plus the operator mapping) rejects."""
    if req.operator not in _LABEL_OPERATORS:
        return [_not_supported(f"{path}.operator", req.operator, _LABEL_OPERATORS)]
    problems: list[str] = []
    key_problems = _label_key_problems(req.key)
    if key_problems:
        problems.append(_invalid(f"{path}.key", go_quote(req.key), "; ".join(key_problems)))
    values_path = f"{path}.values"
    if req.operator in ("In", "NotIn"):
        if not req.values:
            problems.append(
                _invalid(
                    values_path,
                    _values_json(req.values),
                    "for 'in', 'notin' operators, values set can't be empty",
                )
            )
    elif req.operator in ("Exists", "DoesNotExist"):
        if req.values:
            problems.append(
                _invalid(
                    values_path,
                    _values_json(req.values),
                    "values set must be empty for exists and does not exist",
                )
            )
    else:
        if len(req.values) != 1:
            problems.append(
                _invalid(
                    values_path,
                    _values_json(req.values),
                    "for 'Gt', 'Lt' operators, exactly one value is required",
                )
            )
        for i, value in enumerate(req.values):
            if _parse_go_int64(value) is None:
                problems.append(
                    _invalid(
                        f"{values_path}[{i}]",
                        go_quote(value),
                        "for 'Gt', 'Lt' operators, the value must be an integer",
                    )
                )
    for i, value in enumerate(req.values):
        value_problems = _label_value_problems(value)
        if value_problems:
            problems.append(
                _invalid(
                    f"{values_path}[{i}][{req.key}]", go_quote(value), "; ".join(value_problems)
                )
            )
    return problems


def _field_requirement_problems(req: NodeSelectorRequirement, path: str) -> list[str]:
    if req.operator not in _FIELD_OPERATORS:
        return [_not_supported(f"{path}.operator", req.operator, _FIELD_OPERATORS)]
    if len(req.values) != 1:
        return [_invalid(f"{path}.values", _values_json(req.values), "must have one element")]
    return []


def _selector_problems(selector: NodeSelector) -> list[str]:
    problems: list[str] = []
    for t, term in enumerate(selector.node_selector_terms):
        if not term.match_expressions and not term.match_fields:
            continue
        base = f"nodeSelectorTerms[{t}]"
        for i, req in enumerate(term.match_expressions):
            problems += _label_requirement_problems(req, f"{base}.matchExpressions[{i}]")
        for i, req in enumerate(term.match_fields):
            problems += _field_requirement_problems(req, f"{base}.matchFields[{i}]")
    return problems


def _label_requirement_matches(req: NodeSelectorRequirement, labels: dict[str, str]) -> bool:
    present = req.key in labels
    value = labels.get(req.key, "")
    if req.operator == "In":
        return present and value in req.values
    if req.operator == "NotIn":
        return not present or value not in req.values
    if req.operator == "Exists":
        return present
    if req.operator == "DoesNotExist":
        return not present
    # Gt / Lt: both sides must be integers, else the requirement is simply false.
    if not present or len(req.values) != 1:
        return False
    have, want = _parse_go_int64(value), _parse_go_int64(req.values[0])
    if have is None or want is None:
        return False
    return have > want if req.operator == "Gt" else have < want


def _term_matches(term: NodeSelectorTerm, node: Node) -> bool:
    labels = node.labels
    if not all(_label_requirement_matches(r, labels) for r in term.match_expressions):
        return False
    if not node.name:
        # Upstream only evaluates field selectors when the node has fields to offer.
        return True
    for req in term.match_fields:
        value = node.name if req.key == "metadata.name" else ""
        equal = value == req.values[0]
        if equal != (req.operator == "In"):
            return False
    return True


def node_selector_matches(selector: NodeSelector, node: Node | None) -> bool:
    """Match a NodeSelector against a node; raises NodeSelectorError if it does not parse."""
    problems = _selector_problems(selector)
    if problems:
        raise NodeSelectorError(
            f"failed to parse node selector {format_node_selector(selector)}: "
            f"{_aggregate(problems)}"
        )
    if node is None:
        return False
    return any(
        _term_matches(term, node)
        for term in selector.node_selector_terms
        if term.match_expressions or term.match_fields
    )


# What a selector is, as a value: selectors equal by it select the same nodes.
SelectorKey = tuple[tuple[tuple[tuple[str, str, tuple[str, ...]], ...], ...], ...]


def selector_key(selector: NodeSelector) -> SelectorKey:
    """``selector`` as a value (its terms, requirements and values in order)."""
    return tuple(
        tuple(
            tuple((r.key, r.operator, tuple(r.values)) for r in part)
            for part in (term.match_expressions, term.match_fields)
        )
        for term in selector.node_selector_terms
    )


class NodeViews:
    """Many nodes, as node selectors see them: each selector is checked once and
    matched on all of them at once (what a cluster's slices select, for its layout).

    A label requirement is decided once per distinct value the nodes have for its key
    (and once for nodes without it) and spread to the nodes as arrays: In, NotIn,
    Exists and DoesNotExist by value ids, Gt and Lt by :func:`_label_requirement_matches`
    per value; a field requirement (``metadata.name`` In/NotIn one value) compares
    arrays of name ids. Answers are :func:`node_selector_matches`' per node."""

    def __init__(self, nodes: Sequence[Node]) -> None:
        self.nodes = list(nodes)
        self._name_ids: dict[str, int] = {}
        for node in self.nodes:
            self._name_ids.setdefault(node.name, len(self._name_ids))
        n = len(self.nodes)
        self._names = np.fromiter(
            (self._name_ids[node.name] for node in self.nodes), dtype=np.int64, count=n
        )
        self._named = np.fromiter((bool(node.name) for node in self.nodes), dtype=bool, count=n)
        self._labels: dict[str, tuple[np.ndarray, dict[str, int]]] = {}

    def verdicts(self, selector: NodeSelector) -> np.ndarray:
        """Per node: 1 when ``selector`` selects it, 0 when not, 2 when the selector
        does not parse."""
        n = len(self.nodes)
        if _selector_problems(selector):
            return np.full(n, 2, dtype=np.uint8)
        selected = np.zeros(n, dtype=bool)
        for term in selector.node_selector_terms:
            if term.match_expressions or term.match_fields:
                selected |= self._term(term)
        return selected.astype(np.uint8)

    def _term(self, term: NodeSelectorTerm) -> np.ndarray:
        ok = np.ones(len(self.nodes), dtype=bool)
        for req in term.match_expressions:
            ids, value_ids = self._label(req.key)
            # Per value id (the last one: the label is absent), the requirement's verdict.
            if req.operator in ("In", "NotIn"):
                verdict = np.zeros(len(value_ids) + 1, dtype=bool)
                verdict[[value_ids[v] for v in req.values if v in value_ids]] = True
                if req.operator == "NotIn":
                    verdict = ~verdict
            elif req.operator in ("Exists", "DoesNotExist"):
                verdict = np.full(len(value_ids) + 1, req.operator == "Exists", dtype=bool)
                verdict[-1] = req.operator == "DoesNotExist"
            else:  # Gt, Lt: each value parsed, as the node-by-node match parses it
                verdict = np.fromiter(
                    (_label_requirement_matches(req, {req.key: v}) for v in value_ids),
                    dtype=bool,
                    count=len(value_ids),
                )
                verdict = np.append(verdict, _label_requirement_matches(req, {}))
            ok &= verdict[ids]
        if term.match_fields:
            fields = np.ones(len(self.nodes), dtype=bool)
            for req in term.match_fields:  # (parsed: In or NotIn, one value)
                if req.key == "metadata.name":
                    equal = self._names == self._name_ids.get(req.values[0], -1)
                else:
                    equal = np.full(len(self.nodes), req.values[0] == "", dtype=bool)
                fields &= equal if req.operator == "In" else ~equal
            # Upstream only evaluates field selectors when the node has fields to offer.
            ok &= fields | ~self._named
        return ok

    def _label(self, key: str) -> tuple[np.ndarray, dict[str, int]]:
        """Each node's value of label ``key`` as an id (the number of distinct values
        when the node has no such label), and the distinct values' ids, in id order."""
        found = self._labels.get(key)
        if found is None:
            value_ids: dict[str, int] = {}
            raw = [node.labels.get(key) for node in self.nodes]
            for value in raw:
                if value is not None:
                    value_ids.setdefault(value, len(value_ids))
            absent = len(value_ids)
            ids = np.fromiter(
                (absent if v is None else value_ids[v] for v in raw),
                dtype=np.int64,
                count=len(raw),
            )
            found = self._labels[key] = (ids, value_ids)
        return found


def node_matches(
    node: Node | None, node_name: str, all_nodes: bool, node_selector: NodeSelector | None
) -> bool:
    """Upstream's NodeMatches: nodeName wins, then allNodes, then the selector; else False."""
    if node_name:
        return node is not None and node.name == node_name
    if all_nodes:
        return True
    if node_selector is not None:
        return node_selector_matches(node_selector, node)
    return False
