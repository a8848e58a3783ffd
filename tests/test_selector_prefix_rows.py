"""A claim shape that begins with the selectors of an earlier one reuses the layout's
selector row after them: asked in any order on one snapshot, every shape gets the
answer a fresh reference engine gives it.

The selectors mix every kind of verdict a row keeps: false on some devices, a runtime
error on the devices without an attribute, and one over the CEL cost limit on some
devices (whose verdicts are deferred to the search, and whose rows are never kept).
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from draspeed.api.loader import load
from draspeed.cluster import make_allocator
from draspeed.errors import AllocationError
from draspeed.features import Features
from draspeed.testing.documents import resource_slice
from draspeed.testing.engines import Inputs

DOMAIN = "gpu.example.com"
SELECTORS = {
    "index": f'device.attributes["{DOMAIN}"].index >= 1',
    "not3": f'device.attributes["{DOMAIN}"].index != 3',
    "model": f'device.attributes["{DOMAIN}"].model == "a"',  # an error where it is absent
    "heavy": f'device.attributes["{DOMAIN}"].heavy ? lists.range(400000).all(i, i >= 0) : true',
}
# (name, over the cost limit, model)
DEVICES = [
    ("d0", False, "a"),
    ("d1", False, None),
    ("d2", True, "a"),
    ("d3", False, "a"),
    ("d4", False, "a"),
    ("d5", True, "b"),
]


def _cluster(used: list[str]) -> list[dict[str, Any]]:
    devices = [
        {
            "name": name,
            "attributes": {
                "heavy": {"bool": heavy},
                "index": {"int": i},
                **({"model": {"string": model}} if model else {}),
            },
        }
        for i, (name, heavy, model) in enumerate(DEVICES)
    ]
    docs: list[dict[str, Any]] = [
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-1"}},
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": "gpu"},
            "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DOMAIN}"'}}]},
        },
        resource_slice("s", devices, driver=DOMAIN, pool="p", nodeName="node-1"),
    ]
    for name in used:
        result = {"request": "r", "driver": DOMAIN, "pool": "p", "device": name}
        claim = _claim((), 1, f"used-{name}")
        claim["status"] = {"allocation": {"devices": {"results": [result]}}}
        docs.append(claim)
    return docs


def _claim(names: tuple[str, ...], count: int, name: str = "claim") -> dict[str, Any]:
    selectors = [{"cel": {"expression": SELECTORS[n]}} for n in names]
    exactly = {"deviceClassName": "gpu", "count": count, "selectors": selectors}
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"devices": {"requests": [{"name": "r", "exactly": exactly}]}},
    }


def _answer(allocator: Any, claim: dict[str, Any], node: Any) -> str:
    claims = load([claim], validate=False).claims
    try:
        results = allocator.allocate(claims, node)
    except AllocationError as exc:
        return f"error: {exc}"
    if results is None:
        return "unsuitable"
    return ",".join(r.device for r in results[0].devices.results)


SHAPES = [
    names
    for size in (1, 2, 3)
    for names in itertools.permutations(SELECTORS, size)
    if "heavy" not in names[:-1] or size < 3  # keep the run short where it is slow
]


@pytest.mark.parametrize("used", [[], ["d0", "d2"]], ids=["free", "some-used"])
@pytest.mark.parametrize("order", ["short-first", "long-first"])
def test_shapes_sharing_selectors_answer_as_a_fresh_reference_engine(
    used: list[str], order: str
) -> None:
    inputs = Inputs.from_objects(load(_cluster(used), validate=False), "node-1", Features())
    fast = make_allocator("fast", inputs.slices, inputs.classes, inputs.allocated, inputs.features)
    shapes = SHAPES if order == "short-first" else SHAPES[::-1]
    for names in shapes:
        for count in (1, 2):
            claim = _claim(names, count)
            reference = make_allocator(
                "reference", inputs.slices, inputs.classes, inputs.allocated, inputs.features
            )
            expected = _answer(reference, claim, inputs.node)
            assert _answer(fast, claim, inputs.node) == expected, (names, count)
