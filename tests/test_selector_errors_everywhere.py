"""A selector that fails on many devices (it reads an attribute some or all devices
lack) gives upstream's error on every node, whether asked node by node or for every
node at once, whichever device each node's search reaches first; the reasons of the
failing devices are kept per group and made for the devices a search reaches."""

from __future__ import annotations

import copy
import functools
from typing import Any

import pytest

from draspeed.api.loader import load
from draspeed.engine.allocator import Allocator
from draspeed.engine.snapshot import Snapshot
from draspeed.errors import AllocationError
from draspeed.features import Features
from draspeed.generate import generate
from draspeed.generate.scenarios import claim_from_template
from draspeed.testing.engines import Inputs, check_engines, results_json

SELECTORS = {
    # no device has it: every device fails
    "missing-everywhere": 'device.attributes["gpu.nvidia.com"].noSuchAttribute == "x"',
    # only some devices have it (the MIG devices' profile): the others fail
    "missing-on-some": 'device.attributes["gpu.nvidia.com"].profile == "1g.10gb"',
    # guarded: no device fails
    "guarded": '!has(device.attributes["gpu.nvidia.com"].profile) || '
    'device.attributes["gpu.nvidia.com"].profile == "1g.10gb"',
    # fails by value: a division by zero on the devices of one PCIe bus (the first
    # GPU and its MIG devices), not elsewhere
    "fails-on-one-bus": 'device.attributes["gpu.nvidia.com"].pcieBusID.startsWith("0000:18") '
    "? 1 / 0 == 1 : true",
}


@pytest.fixture(scope="module")
def cluster() -> Any:
    """Dynamic-MIG nodes: whole GPUs and MIG devices side by side."""
    return generate("nvidia-mig", 6)


def _claims(cluster: Any, expression: str, template: str) -> list[Any]:
    doc = copy.deepcopy(claim_from_template(cluster.template(template), "pending"))
    request = doc["spec"]["devices"]["requests"][0]["exactly"]
    request.setdefault("selectors", []).append({"cel": {"expression": expression}})
    return load([doc], validate=False).claims


def _answer(call: Any) -> tuple[str, Any]:
    try:
        results = call()
    except AllocationError as exc:
        return "error", str(exc)
    return ("fits", results_json(results)) if results is not None else ("no", None)


@pytest.mark.parametrize("template", ["mig-1g10gb", "single-gpu"])
@pytest.mark.parametrize("name", sorted(SELECTORS))
def test_every_node_as_upstream(cluster: Any, name: str, template: str) -> None:
    objects = cluster.decoded()
    allocated = [c for c in objects.claims if c.status.allocation]
    claims = _claims(cluster, SELECTORS[name], template)

    def snapshot() -> Snapshot:
        return Snapshot.build(objects.slices, objects.classes, allocated, nodes=objects.nodes)

    at_once = Allocator(snapshot()).feasible_nodes(claims)
    prepared = Allocator(snapshot()).prepare(claims)
    for node in objects.nodes:
        inputs = Inputs(objects.slices, objects.classes, allocated, claims, node, Features())
        problems = check_engines(inputs)[2]
        assert not problems, f"{name} on {node.name}: {problems}"
        alone = _answer(functools.partial(Allocator(snapshot()).allocate, claims, node))
        assert _answer(functools.partial(prepared.allocate, node)) == alone
        if alone[0] == "error":
            assert at_once.error(node.name) == alone[1]
        else:
            assert at_once.error(node.name) is None
            found = at_once.result(node.name)
            assert (found is not None) == (alone[0] == "fits")
            if found is not None:
                assert results_json(found) == alone[1]
