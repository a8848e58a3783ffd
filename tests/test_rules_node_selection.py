"""Node selection: nodeName / allNodes / NodeSelector with nodeaffinity semantics."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from draspeed.api.model import (
    Node,
    NodeSelector,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    ObjectMeta,
)
from draspeed.rules.node_selection import (
    NodeSelectorError,
    NodeViews,
    format_node_selector,
    node_matches,
    node_selector_matches,
    selector_key,
)

NODE = Node(ObjectMeta(name="node-1", labels={"zone": "z1", "gpus": "8", "region": "r1"}))


def expr(key: str, op: str, *values: str) -> NodeSelectorRequirement:
    return NodeSelectorRequirement(key, op, list(values))


def selector(*terms: NodeSelectorTerm) -> NodeSelector:
    return NodeSelector(list(terms))


def term(
    *exprs: NodeSelectorRequirement, fields: tuple[NodeSelectorRequirement, ...] = ()
) -> NodeSelectorTerm:
    return NodeSelectorTerm(match_expressions=list(exprs), match_fields=list(fields))


# (requirement, matches NODE?)
OPERATOR_CASES = [
    (expr("zone", "In", "z1", "z2"), True),
    (expr("zone", "In", "z2"), False),
    (expr("missing", "In", "z1"), False),
    (expr("zone", "NotIn", "z2"), True),
    (expr("zone", "NotIn", "z1"), False),
    (expr("missing", "NotIn", "z1"), True),
    (expr("zone", "Exists"), True),
    (expr("missing", "Exists"), False),
    (expr("missing", "DoesNotExist"), True),
    (expr("zone", "DoesNotExist"), False),
    (expr("gpus", "Gt", "7"), True),
    (expr("gpus", "Gt", "8"), False),
    (expr("gpus", "Lt", "9"), True),
    (expr("gpus", "Lt", "8"), False),
    (expr("zone", "Gt", "1"), False),  # label value not an integer: no match, no error
    (expr("missing", "Lt", "100"), False),
]


@pytest.mark.parametrize(("requirement", "expected"), OPERATOR_CASES)
def test_operators(requirement: NodeSelectorRequirement, expected: bool) -> None:
    assert node_selector_matches(selector(term(requirement)), NODE) is expected


def test_terms_or_and_requirements_and() -> None:
    z2 = term(expr("zone", "In", "z2"))
    z1_r1 = term(expr("zone", "In", "z1"), expr("region", "In", "r1"))
    z1_r2 = term(expr("zone", "In", "z1"), expr("region", "In", "r2"))
    assert node_selector_matches(selector(z2, z1_r1), NODE)
    assert not node_selector_matches(selector(z2, z1_r2), NODE)
    # An empty term matches nothing; no terms at all match nothing.
    assert not node_selector_matches(selector(NodeSelectorTerm()), NODE)
    assert not node_selector_matches(selector(), NODE)


def test_match_fields_on_name() -> None:
    assert node_selector_matches(
        selector(term(fields=(expr("metadata.name", "In", "node-1"),))), NODE
    )
    assert not node_selector_matches(
        selector(term(fields=(expr("metadata.name", "In", "node-2"),))), NODE
    )
    assert node_selector_matches(
        selector(term(fields=(expr("metadata.name", "NotIn", "node-2"),))), NODE
    )
    # Labels and fields of one term are ANDed.
    both = term(expr("zone", "In", "z2"), fields=(expr("metadata.name", "In", "node-1"),))
    assert not node_selector_matches(selector(both), NODE)


@pytest.mark.parametrize(
    ("requirement", "fields", "message"),
    [
        (
            expr("zone", "In"),
            False,
            "nodeSelectorTerms[0].matchExpressions[0].values: Invalid value: null: "
            "for 'in', 'notin' operators, values set can't be empty",
        ),
        (
            expr("zone", "Exists", "a"),
            False,
            'nodeSelectorTerms[0].matchExpressions[0].values: Invalid value: ["a"]: '
            "values set must be empty for exists and does not exist",
        ),
        (
            expr("gpus", "Gt", "x"),
            False,
            'nodeSelectorTerms[0].matchExpressions[0].values[0]: Invalid value: "x": '
            "for 'Gt', 'Lt' operators, the value must be an integer",
        ),
        (
            expr("zone", "Near", "a"),
            False,
            'nodeSelectorTerms[0].matchExpressions[0].operator: Unsupported value: "Near": '
            'supported values: "In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"',
        ),
        (
            expr("metadata.name", "Exists"),
            True,
            'nodeSelectorTerms[0].matchFields[0].operator: Unsupported value: "Exists": '
            'supported values: "In", "NotIn"',
        ),
        (
            expr("metadata.name", "In", "a", "b"),
            True,
            'nodeSelectorTerms[0].matchFields[0].values: Invalid value: ["a","b"]: '
            "must have one element",
        ),
    ],
)
def test_invalid_selectors_are_errors(
    requirement: NodeSelectorRequirement, fields: bool, message: str
) -> None:
    sel = selector(term(fields=(requirement,)) if fields else term(requirement))
    with pytest.raises(NodeSelectorError) as info:
        node_selector_matches(sel, NODE)
    assert (
        str(info.value) == f"failed to parse node selector {format_node_selector(sel)}: {message}"
    )


def test_several_problems_are_aggregated() -> None:
    sel = selector(term(expr("zone", "In"), expr("a/b/c", "Exists")))
    with pytest.raises(NodeSelectorError) as info:
        node_selector_matches(sel, NODE)
    text = str(info.value)
    assert ": [nodeSelectorTerms[0].matchExpressions[0].values: Invalid value: null" in text
    assert 'nodeSelectorTerms[0].matchExpressions[1].key: Invalid value: "a/b/c": ' in text
    assert text.endswith(
        "with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')]"
    )


def test_go_string_of_selector() -> None:
    sel = selector(term(expr("zone", "In", "z1", "z2"), fields=(expr("metadata.name", "In", "n"),)))
    assert format_node_selector(sel) == (
        "&NodeSelector{NodeSelectorTerms:[]NodeSelectorTerm{NodeSelectorTerm{MatchExpressions:"
        "[]NodeSelectorRequirement{NodeSelectorRequirement{Key:zone,Operator:In,Values:[z1 z2],},},"
        "MatchFields:[]NodeSelectorRequirement{NodeSelectorRequirement{Key:metadata.name,"
        "Operator:In,Values:[n],},},},},}"
    )


def test_node_matches_precedence() -> None:
    nowhere = selector(term(expr("zone", "In", "z9")))
    assert node_matches(NODE, "node-1", False, nowhere)  # node name wins
    assert not node_matches(NODE, "node-2", True, None)
    assert node_matches(NODE, "", True, nowhere)  # then allNodes
    assert not node_matches(NODE, "", False, nowhere)
    assert not node_matches(NODE, "", False, None)  # nothing set: unknown selection
    assert not node_matches(None, "node-1", False, None)


def test_gt_value_must_also_be_a_label_value() -> None:
    # "+8" parses as an integer but is not a valid label value, so upstream rejects it.
    with pytest.raises(NodeSelectorError, match=r"values\[0\]\[gpus\]: Invalid value: \"\+8\""):
        node_selector_matches(selector(term(expr("gpus", "Gt", "+8"))), NODE)


_KEYS = ["zone", "rack", "example.com/tier", "bad key!"]
_VALUES = ["z1", "z2", "r1", "7", "-3", "", "x" * 70]
_requirement = st.builds(
    NodeSelectorRequirement,
    st.sampled_from(_KEYS),
    st.sampled_from(["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Between"]),
    st.lists(st.sampled_from(_VALUES), max_size=2),
)
_field = st.builds(
    NodeSelectorRequirement,
    st.sampled_from(["metadata.name", "metadata.uid"]),
    st.sampled_from(["In", "NotIn", "Exists"]),
    st.lists(st.sampled_from(["node-1", "node-2"]), min_size=1, max_size=2),
)
_selectors = st.builds(
    NodeSelector,
    st.lists(
        st.builds(
            NodeSelectorTerm,
            st.lists(_requirement, max_size=2),
            st.lists(_field, max_size=1),
        ),
        max_size=3,
    ),
)
_nodes = st.lists(
    st.builds(
        lambda name, labels: Node(ObjectMeta(name=name, labels=labels)),
        st.sampled_from(["node-1", "node-2", "node-3", ""]),
        st.dictionaries(st.sampled_from(_KEYS[:3]), st.sampled_from(_VALUES[:5]), max_size=3),
    ),
    max_size=12,
)


@settings(max_examples=400, deadline=None)
@given(_selectors, _nodes)
def test_verdicts_for_many_nodes_as_matched_one_by_one(
    chosen: NodeSelector, nodes: list[Node]
) -> None:
    """A selector matched once per distinct view of the nodes answers as it does node by
    node (2: it does not parse); equal selectors have equal keys."""
    want = []
    for node in nodes:
        try:
            want.append(int(node_selector_matches(chosen, node)))
        except NodeSelectorError:
            want.append(2)
    assert NodeViews(nodes).verdicts(chosen).tolist() == want
    copy = NodeSelector(
        [
            NodeSelectorTerm(
                [
                    NodeSelectorRequirement(r.key, r.operator, list(r.values))
                    for r in t.match_expressions
                ],
                [
                    NodeSelectorRequirement(r.key, r.operator, list(r.values))
                    for r in t.match_fields
                ],
            )
            for t in chosen.node_selector_terms
        ]
    )
    assert selector_key(copy) == selector_key(chosen)
