"""The compiled deep copy of model trees that answers are handed out as."""

from __future__ import annotations

import dataclasses

from draspeed._clone import clone
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
    assert copy.devices.results[0].consumed_capacity["memory"] is (
        original.devices.results[0].consumed_capacity["memory"]
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
