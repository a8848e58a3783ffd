"""A node that sees hundreds of pools, and pools of many slices: the fast engine takes
the pools in upstream's order (without binding conditions first, each group by
driver and pool name) and a pool's slices by name, as the reference engine does, and
the order costs n log n per node (it was a quadratic insertion sort)."""

from __future__ import annotations

import random
from typing import Any

import pytest

import draspeed
from draspeed.cluster import split_claims
from draspeed.features import Features
from draspeed.testing.documents import resource_slice
from draspeed.testing.engines import Inputs, check_engines

_DRIVERS = ("b.example.com", "a.example.com", "a.example.co")
_NODES = 3


def _slice(
    name: str, driver: str, pool: str, count: int, where: dict[str, Any], devices: list[Any]
) -> dict[str, Any]:
    return resource_slice(name, devices, driver=driver, pool=pool, count=count, **where)


def _device(name: str, k: int, binding: bool) -> dict[str, Any]:
    device: dict[str, Any] = {
        "name": name,
        "attributes": {"group": {"int": k % 4}, "k": {"int": k}},
    }
    if binding:
        device.update(bindingConditions=["ready"], bindingFailureConditions=["failed"])
    return device


def _cluster(seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    everyone = {"nodeSelector": {"nodeSelectorTerms": [{"matchExpressions": [
        {"key": "dra", "operator": "In", "values": ["yes"]}
    ]}]}}  # fmt: skip
    docs: list[dict[str, Any]] = [
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": f"n{i}", "labels": {"dra": "yes"}},
        }
        for i in range(_NODES)
    ]
    slices = []
    k = 0
    # Hundreds of one-slice pools per driver, names that sort otherwise than they are
    # listed (and than their numbers), some with binding conditions, some node-local.
    for driver in _DRIVERS:
        for p in range(120):
            pool = f"pool-{rng.randrange(10**6):06d}-{p}"
            binding = rng.random() < 0.2
            where = {"nodeName": f"n{p % _NODES}"} if p % 5 == 0 else everyone
            devices = [_device(f"dev-{d}", k + d, binding) for d in range(2)]
            k += 2
            slices.append(_slice(f"{driver}-{pool}", driver, pool, 1, where, devices))
    # One pool of sixty slices whose names sort otherwise than they are listed, each on
    # every node, the pool's device names spread over its slices (its name sorts first).
    names = [f"wide-{rng.randrange(10**6):06d}-{s}" for s in range(60)]
    for s, name in enumerate(names):
        devices = [_device(f"wide-dev-{s}", k, False)]
        k += 1
        slices.append(_slice(name, "a.example.com", "aaa-wide", len(names), everyone, devices))
    rng.shuffle(slices)
    docs += slices
    for driver in _DRIVERS:
        docs.append(
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "DeviceClass",
                "metadata": {"name": driver.replace(".", "-")},
                "spec": {"selectors": [{"cel": {"expression": f"device.driver == '{driver}'"}}]},
            }
        )
    return docs


_EVERY_16TH = "device.attributes['a.example.co'].k % 16 == 0"
_REQUESTS: dict[str, list[dict[str, Any]]] = {
    "first": [{"name": "r", "exactly": {"deviceClassName": "a-example-com"}}],
    "seven": [{"name": "r", "exactly": {"deviceClassName": "a-example-com", "count": 7}}],
    "each-driver": [
        {"name": f"r{i}", "exactly": {"deviceClassName": d.replace(".", "-"), "count": 2}}
        for i, d in enumerate(_DRIVERS)
    ],
    "all-of-a-driver": [
        {
            "name": "r",
            "exactly": {
                "deviceClassName": "a-example-co",
                "allocationMode": "All",
                "selectors": [
                    {"cel": {"expression": "device.attributes['a.example.co'].k % 16 == 0"}}
                ],
            },
        }
    ],
}


@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize("shape", sorted(_REQUESTS))
def test_engines_agree_on_a_node_with_hundreds_of_pools(seed: int, shape: str) -> None:
    claim = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "pod-claim", "namespace": "ns"},
        "spec": {
            "devices": {
                "requests": _REQUESTS[shape],
                "constraints": [{"matchAttribute": "a.example.com/group"}]
                if shape == "seven"
                else [],
            }
        },
    }
    objs = draspeed.load([*_cluster(seed), claim])
    allocated, pending = split_claims(objs.claims)
    for node in objs.nodes:
        inputs = Inputs(objs.slices, objs.classes, allocated, pending, node, Features())
        fast, _, problems = check_engines(inputs)
        assert not problems, f"{shape} on {node.name}: {problems}"
        assert fast.outcome == "results", f"{shape} on {node.name}: {fast.error}"
