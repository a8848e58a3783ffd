"""The CEL selector corpus (tests/data/cel/corpus.yaml) through both evaluation paths.

Every case runs through ``Selector.matches`` per device and through
``Selector.evaluate`` over a :class:`DeviceTable` of the same devices; both must give
the expected result (or exact error text) device by device.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from draspeed.api.model import Device, DeviceAttribute, DeviceCapacity
from draspeed.cel import DeviceTable, compile_selector, device_input
from draspeed.errors import CELCompileError, CELRuntimeError
from draspeed.quantity import Quantity

CORPUS = yaml.safe_load((Path(__file__).parent / "data" / "cel" / "corpus.yaml").read_text())

_KINDS = ("int", "bool", "string", "version", "ints", "bools", "strings", "versions")


def make_device(spec: dict[str, Any]) -> tuple[str, Device]:
    attributes: dict[str, DeviceAttribute] = {}
    for name, value in (spec.get("attributes") or {}).items():
        qualified = name if "/" in name else f"{spec['driver']}/{name}"
        if not value:
            attributes[qualified] = DeviceAttribute(None)
            continue
        ((kind, raw),) = value.items()
        assert kind in _KINDS, kind
        if kind in ("ints", "bools"):
            raw = tuple(raw)
        elif kind in ("strings", "versions"):
            raw = tuple(str(v) for v in raw)
        elif kind in ("string", "version"):
            raw = str(raw)
        attributes[qualified] = DeviceAttribute(kind, raw)
    capacity = {
        (name if "/" in name else f"{spec['driver']}/{name}"): DeviceCapacity(
            Quantity.parse(str(v))
        )
        for name, v in (spec.get("capacity") or {}).items()
    }
    device = Device(
        name=spec["name"],
        attributes=attributes,
        capacity=capacity,
        allow_multiple_allocations=spec.get("allowMultipleAllocations"),
    )
    return spec["driver"], device


def devices_for(ref: Any) -> list[tuple[str, Device]]:
    if isinstance(ref, list):
        name, index = ref
        return [make_device(CORPUS["device_sets"][name][index])]
    return [make_device(d) for d in CORPUS["device_sets"][ref]]


def expected(item: Any) -> Any:
    if isinstance(item, dict):
        text = item["error"]
        return ("error", "".join(text) if isinstance(text, list) else text)
    return item


CASES = CORPUS["cases"]


def _id(case: dict[str, Any]) -> str:
    return case["expr"].replace("\n", " ")[:80]


def test_corpus_size() -> None:
    assert len(CASES) >= 150


@pytest.mark.parametrize("case", [c for c in CASES if "compile_error" in c], ids=_id)
def test_compile_errors(case: dict[str, Any]) -> None:
    with pytest.raises(CELCompileError) as info:
        compile_selector(case["expr"])
    if case.get("exact"):
        assert str(info.value) == case["compile_error"]
    else:
        assert case["compile_error"] in str(info.value)


@pytest.mark.parametrize("case", [c for c in CASES if "compile_error" not in c], ids=_id)
def test_matches_and_evaluate(case: dict[str, Any]) -> None:
    selector = compile_selector(case["expr"])
    devices = devices_for(case["devices"])
    want = [expected(x) for x in case["expect"]]
    assert len(want) == len(devices)
    got: list[Any] = []
    for driver, device in devices:
        try:
            got.append(selector.matches(device_input(driver, device)))
        except CELRuntimeError as exc:
            got.append(("error", str(exc)))
    assert got == want, "matches()"
    table = DeviceTable.build(devices)
    match, error, messages = selector.evaluate(table)
    vector = [("error", messages[i]) if error[i] else bool(match[i]) for i in range(len(devices))]
    assert vector == want, "evaluate()"
