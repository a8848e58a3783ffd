"""Model trees in compiled code: the deep copies answers are handed out as, and the
signatures claim sets are remembered by."""

from __future__ import annotations

import dataclasses

import pytest

from draspeed.api._model_tree import clone, fill_template, signature, split_template
from draspeed.api.model import (
    AllocationResult,
    DeviceAllocationConfiguration,
    DeviceAllocationResult,
    DeviceAttribute,
    DeviceRequestAllocationResult,
    DeviceToleration,
    NodeSelector,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    OpaqueDeviceConfiguration,
)
from draspeed.quantity import Quantity


def _result() -> AllocationResult:
    return AllocationResult(
        devices=DeviceAllocationResult(
            results=[
                DeviceRequestAllocationResult(
                    "gpu/big",
                    "gpu.example.com",
                    "node-1",
                    "gpu-0",
                    True,
                    [DeviceToleration(key="k", operator="Exists", effect="NoSchedule")],
                    ["ready"],
                    ["failed"],
                    "1f0e-share",
                    {"memory": Quantity("8Gi")},
                )
            ],
            config=[
                DeviceAllocationConfiguration(
                    "FromClaim",
                    ["gpu"],
                    OpaqueDeviceConfiguration("gpu.example.com", {"a": [1, {"b": None}]}),
                )
            ],
        ),
        node_selector=NodeSelector(
            [NodeSelectorTerm(match_fields=[NodeSelectorRequirement("metadata.name", "In", ["n"])])]
        ),
        allocation_timestamp="2026-11-21T00:00:00Z",
    )


def _objects(o: object) -> list[object]:
    """Every mutable object of a tree: model dataclasses, lists and dicts."""
    found: list[object] = []
    if isinstance(o, list):
        found.append(o)
        for x in o:
            found += _objects(x)
    elif isinstance(o, dict):
        found.append(o)
        for x in o.values():
            found += _objects(x)
    elif dataclasses.is_dataclass(o) and not isinstance(o, type):
        if not type(o).__dataclass_params__.frozen:  # type: ignore[attr-defined]
            found.append(o)
        for f in dataclasses.fields(o):
            found += _objects(getattr(o, f.name))
    return found


def test_a_copy_is_equal_and_shares_no_mutable_object() -> None:
    original = _result()
    copy = clone(original)
    assert copy == original
    assert type(copy) is AllocationResult
    mine, theirs = _objects(original), _objects(copy)
    assert len(mine) == len(theirs) > 15
    assert not {id(o) for o in mine} & {id(o) for o in theirs}


def test_changing_the_copy_leaves_the_original_as_it_was() -> None:
    original = _result()
    copy = clone(original)
    copy.devices.results[0].tolerations.append(DeviceToleration(key="x"))
    copy.devices.results[0].consumed_capacity["cores"] = Quantity("2")
    opaque, selector = copy.devices.config[0].opaque, copy.node_selector
    assert opaque is not None and selector is not None
    opaque.parameters["a"][1]["b"] = 1
    selector.node_selector_terms[0].match_fields[0].values.append("m")
    copy.devices.results[0].share_id = "other"
    assert original == _result()


def test_immutable_values_are_shared() -> None:
    original = _result()
    copy = clone(original)
    assert (
        copy.devices.results[0].consumed_capacity["memory"]
        is (original.devices.results[0].consumed_capacity["memory"])
    )
    attribute = DeviceAttribute("string", "a")
    assert clone([attribute])[0] is attribute
    assert clone("text") == "text" and clone(None) is None


def test_empty_slots_stay_empty() -> None:
    empty = DeviceRequestAllocationResult.__new__(DeviceRequestAllocationResult)
    copy = clone(empty)
    assert type(copy) is DeviceRequestAllocationResult
    assert not hasattr(copy, "request")


def test_deep_nesting_raises_recursion_error_not_a_crash() -> None:
    deep: list[object] = []
    for _ in range(100_000):
        deep = [deep]
    try:
        clone(deep)
    except RecursionError:
        pass
    else:  # pragma: no cover - the interpreter's limit is far below 100,000
        raise AssertionError("expected RecursionError")


def test_signature_tells_apart_what_differs() -> None:
    base = _result()
    assert signature(base) == signature(_result()) == signature(clone(base))
    variants: list[object] = []
    for change in (
        lambda r: setattr(r.devices.results[0], "request", "gpu/bigger"),
        lambda r: setattr(r.devices.results[0], "admin_access", None),
        lambda r: setattr(r.devices.results[0], "admin_access", False),
        lambda r: r.devices.results[0].binding_conditions.append(""),
        lambda r: r.devices.results[0].consumed_capacity.update(memory=Quantity("9Gi")),
        lambda r: setattr(r.devices.config[0].opaque, "parameters", {"a": [1, {"b": 0}]}),
        lambda r: setattr(r.devices.config[0].opaque, "parameters", {"a": [1, {"b": 0.0}]}),
        lambda r: setattr(r.devices.config[0].opaque, "parameters", {"a": (1, {"b": None})}),
        lambda r: setattr(r.devices.config[0].opaque, "parameters", {"a": [1, {"b": None}, 2**70]}),
        lambda r: setattr(r, "node_selector", None),
        lambda r: setattr(r, "allocation_timestamp", None),
    ):
        changed = _result()
        change(changed)
        variants.append(signature(changed))
    assert len({signature(base), *variants}) == len(variants) + 1


def test_signature_strings_cannot_run_into_each_other() -> None:
    assert signature(["ab", "c"]) != signature(["a", "bc"])
    assert signature([["a"], "b"]) != signature([["a", "b"]])
    assert signature([1, True, None]) != signature([True, 1, None])
    assert signature(DeviceAttribute("string", "a")) != signature(DeviceAttribute("version", "a"))


def test_signature_refuses_unknown_types() -> None:
    class Other:
        pass

    try:
        signature([Other()])
    except TypeError:
        pass
    else:  # pragma: no cover
        raise AssertionError("expected TypeError")


def _on_node(node: str, device: str) -> AllocationResult:
    result = _result()
    result.devices.results[0].pool = node
    result.devices.results[0].device = device
    assert result.node_selector is not None
    result.node_selector.node_selector_terms[0].match_fields[0].values = [node]
    return result


def test_a_filled_template_is_a_copy_like_clone_makes() -> None:
    original = [_result(), _on_node("node-2", "gpu-3")]
    _, shape, leaves = split_template(original)
    copy = fill_template(shape, leaves)
    assert copy == original == clone(original)
    mine, theirs = _objects(original), _objects(copy)
    assert len(mine) == len(theirs)
    assert not {id(o) for o in mine} & {id(o) for o in theirs}
    # Two copies of one template share nothing mutable either (empty lists included).
    again = fill_template(shape, leaves)
    assert not {id(o) for o in _objects(again)} & {id(o) for o in theirs}
    # Strings and quantities are the leaves, shared as clone shares them.
    memory = original[0].devices.results[0].consumed_capacity["memory"]
    assert copy[0].devices.results[0].consumed_capacity["memory"] is memory


def test_answers_that_differ_in_names_have_one_shape() -> None:
    key_1, shape_1, leaves_1 = split_template([_on_node("node-1", "gpu-0")])
    key_2, _, leaves_2 = split_template([_on_node("node-2", "gpu-7")])
    assert key_1 == key_2 and leaves_1 != leaves_2
    # The second answer filled into the first one's shape is the second answer.
    assert fill_template(shape_1, leaves_2) == [_on_node("node-2", "gpu-7")]
    # Another structure (one more value, or a flag in place of a string) is another key.
    other = _on_node("node-1", "gpu-0")
    assert other.node_selector is not None
    other.node_selector.node_selector_terms[0].match_fields[0].values.append("node-9")
    assert split_template([other])[0] != key_1
    flagged = _on_node("node-1", "gpu-0")
    flagged.devices.results[0].admin_access = None
    assert split_template([flagged])[0] != key_1


def test_a_template_filled_with_the_wrong_number_of_leaves_is_refused() -> None:
    _, shape, leaves = split_template([_result()])
    for wrong in (leaves[:-1], (*leaves, "extra")):
        with pytest.raises(ValueError, match="template"):
            fill_template(shape, wrong)
