"""``Snapshot.build(copy=True)``: a snapshot and its versions keep answering as they
did when built, whatever the caller later does to the objects it passed in.

By default a snapshot takes its objects over (upstream's contract for informer
objects; the default tests of that live elsewhere). With ``copy=True`` every kind of
object it is given -- slices, classes, allocated claims and nodes, at the build and in
each update -- is copied, so changing any part of the originals, before or after the
first question, changes no answer.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from draspeed import load
from draspeed.api.loader import Objects
from draspeed.api.model import DeviceAttribute, DeviceTaint, ResourceClaim
from draspeed.engine.allocator import Allocator
from draspeed.engine.snapshot import Snapshot
from draspeed.testing.engines import results_json

CLUSTER = """
apiVersion: v1
kind: Node
metadata: {name: node-1, labels: {zone: a}}
---
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu}
spec:
  selectors:
  - cel: {expression: 'device.attributes["gpu.example.com"].model == "a100"'}
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: node-1-gpus}
spec:
  driver: gpu.example.com
  nodeName: node-1
  pool: {name: node-1, generation: 1, resourceSliceCount: 1}
  devices:
  - name: gpu-0
    attributes: {model: {string: a100}}
    capacity: {memory: {value: 40Gi}}
  - name: gpu-1
    attributes: {model: {string: a100}}
    capacity: {memory: {value: 40Gi}}
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: node-2-gpus}
spec:
  driver: gpu.example.com
  nodeSelector:
    nodeSelectorTerms:
    - matchExpressions: [{key: zone, operator: In, values: [a]}]
  pool: {name: shared, generation: 1, resourceSliceCount: 1}
  devices:
  - name: gpu-9
    attributes: {model: {string: a100}}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: taken, namespace: default}
spec:
  devices:
    requests:
    - name: gpu
      exactly: {deviceClassName: gpu}
status:
  allocation:
    devices:
      results:
      - {request: gpu, driver: gpu.example.com, pool: node-1, device: gpu-0}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: pending, namespace: default}
spec:
  devices:
    requests:
    - name: gpus
      exactly: {deviceClassName: gpu, count: 2}
"""


def _objects() -> Objects:
    return load(CLUSTER)


def _split(objects: Objects) -> tuple[list[ResourceClaim], list[ResourceClaim]]:
    allocated = [c for c in objects.claims if c.status.allocation is not None]
    pending = [c for c in objects.claims if c.status.allocation is None]
    return allocated, pending


def _answers(snapshot: Snapshot, pending: list[ResourceClaim]) -> Any:
    return [
        (o.node, o.status, o.error, None if o.results is None else results_json(o.results))
        for o in Allocator(snapshot).feasible_nodes(pending, ["node-1", "node-2"])
    ]


def _spoil_device(o: Objects) -> None:
    o.slices[0].spec.devices[1].attributes["gpu.example.com/model"] = DeviceAttribute(
        "string", "h100"
    )


def _spoil_taints(o: Objects) -> None:
    o.slices[0].spec.devices[1].taints.append(DeviceTaint(key="broken", effect="NoSchedule"))


def _spoil_device_list(o: Objects) -> None:
    o.slices[0].spec.devices.pop()


def _spoil_class(o: Objects) -> None:
    o.classes[0].spec.selectors[0].cel.expression = "false"  # type: ignore[union-attr]


def _spoil_allocation(o: Objects) -> None:
    allocated, _ = _split(o)
    allocated[0].status.allocation.devices.results[0].device = "gpu-1"  # type: ignore[union-attr]


def _spoil_node(o: Objects) -> None:
    o.nodes[0].metadata.labels["zone"] = "b"


SPOILERS: dict[str, Callable[[Objects], None]] = {
    "device-attribute": _spoil_device,
    "device-taint": _spoil_taints,
    "slice-device-list": _spoil_device_list,
    "class-selector": _spoil_class,
    "allocated-result": _spoil_allocation,
    "node-labels": _spoil_node,
}


@pytest.mark.parametrize("spoil", SPOILERS.values(), ids=SPOILERS.keys())
@pytest.mark.parametrize("asked_first", [False, True], ids=["before-use", "after-use"])
def test_a_copying_snapshot_ignores_later_changes(
    spoil: Callable[[Objects], None], asked_first: bool
) -> None:
    objects = _objects()
    allocated, pending = _split(objects)
    expected = _answers(
        Snapshot.build(objects.slices, objects.classes, allocated, nodes=objects.nodes),
        pending,
    )
    assert [status for _, status, _, _ in expected] == ["fits", "does-not-fit"]
    snapshot = Snapshot.build(
        objects.slices, objects.classes, allocated, nodes=objects.nodes, copy=True
    )
    if asked_first:
        assert _answers(snapshot, pending) == expected
    spoil(objects)
    assert _answers(snapshot, pending) == expected
    # The change is real: a snapshot that takes the objects over answers differently.
    changed = Snapshot.build(objects.slices, objects.classes, allocated, nodes=objects.nodes)
    assert _answers(changed, pending) != expected


def test_updates_of_a_copying_snapshot_copy_too() -> None:
    objects = _objects()
    allocated, pending = _split(objects)
    snapshot = Snapshot.build(objects.slices[1:], [], [], copy=True)
    version = (
        snapshot.update_slices(added=[objects.slices[0]])
        .update_classes(added=objects.classes)
        .add_allocated(allocated)
        .update_nodes(added=objects.nodes)
    )
    expected = _answers(version, pending)
    assert expected == _answers(
        Snapshot.build(objects.slices, objects.classes, allocated, nodes=objects.nodes), pending
    )
    for spoil in SPOILERS.values():
        spoil(objects)
    assert _answers(version, pending) == expected
    assert version.copies_inputs


def test_copies_are_equal_and_separate() -> None:
    objects = _objects()
    snapshot = Snapshot.build(objects.slices, objects.classes, nodes=objects.nodes, copy=True)
    assert snapshot.slices == objects.slices
    assert all(a is not b for a, b in zip(snapshot.slices, objects.slices, strict=True))
    assert snapshot.slices[0].spec.devices is not objects.slices[0].spec.devices
    plain = Snapshot.build(objects.slices, objects.classes, nodes=objects.nodes)
    assert plain.slices[0] is objects.slices[0]
    assert copy.deepcopy(snapshot.slices) == objects.slices
