"""draspeed.analysis.fragmentation on cases counted by hand.

One H100 in dynamic-MIG mode (nvidia-mig, 1 GPU): 8 memory slices; the full GPU,
and the placements 1g.10gb at 0..6, 1g.20gb at 0/2/4/6, 2g.20gb at 0/2/4,
3g.40gb at 0/4, 4g.40gb at 0 and 7g.80gb at 0 (18 MIG devices).
"""

from __future__ import annotations

import json
from typing import Any

from draspeed.analysis import Cordon, fragmentation
from draspeed.analysis.accounting import Accounting
from draspeed.api.loader import Objects, load
from draspeed.cluster import Cluster
from draspeed.engine.snapshot import Snapshot
from draspeed.generate import generate
from draspeed.quantity import Quantity

DRIVER = "gpu.nvidia.com"
EMPTY_GPU = {"1g.10gb": 7, "1g.20gb": 4, "2g.20gb": 3, "3g.40gb": 2, "4g.40gb": 1, "7g.80gb": 1}


def _taken(name: str, node: str, *devices: str) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "devices": {
                "requests": [{"name": "mig", "exactly": {"deviceClassName": "mig.nvidia.com"}}]
            }
        },
        "status": {
            "allocation": {
                "devices": {
                    "results": [
                        {"request": "mig", "driver": DRIVER, "pool": node, "device": d}
                        for d in devices
                    ]
                }
            }
        },
    }


def _mig(nodes: int = 1, *claims: dict[str, Any]) -> tuple[Snapshot, Objects]:
    objects = generate("nvidia-mig", nodes, gpus_per_node=1).decoded()
    objects.extend(load(list(claims)))
    return Cluster.from_objects(objects).snapshot(), objects


def test_an_empty_gpu_offers_every_placement() -> None:
    snap, _ = _mig()
    report = fragmentation(snap)
    node = report.node("node-00000")
    assert node.free_whole_devices == 1
    assert node.free_by_profile == EMPTY_GPU
    assert node.usage.devices.total == 19 and node.usage.devices.free == 19
    assert node.usage.stranded == {}
    assert node.usage.counters["memory-slice-0"].used == 0
    assert node.classes["gpu.nvidia.com"].total == 1
    assert node.classes["mig.nvidia.com"].total == 18
    assert node.utilisation("mig.nvidia.com") == 0.0
    assert report.cluster.free_by_profile == EMPTY_GPU


def test_one_small_slice_at_the_end_strands_slice_seven() -> None:
    # 1g.10gb at slice 6: the full GPU, 7g.80gb, 1g.20gb@6 and 3g.40gb@4 are blocked;
    # memory slice 7 is only used by those, so it is stranded, and so is the OFA
    # engine (only the full GPU and 7g.80gb use it).
    snap, _ = _mig(1, _taken("a", "node-00000", "gpu-0-mig-1g10gb-19-6"))
    node = fragmentation(snap).node("node-00000")
    assert node.free_whole_devices == 0
    assert node.free_by_profile == {
        "1g.10gb": 6,
        "1g.20gb": 3,
        "2g.20gb": 3,
        "3g.40gb": 1,
        "4g.40gb": 1,
    }
    d = node.usage.devices
    assert (d.total, d.in_use, d.blocked, d.free) == (19, 1, 4, 14)
    assert node.usage.stranded == {"memory-slice-7": Quantity("1"), "ofa-engines": Quantity("1")}
    assert node.usage.counters["multiprocessors"].used == 16
    assert node.classes["mig.nvidia.com"].in_use == 1
    assert node.utilisation("mig.nvidia.com") == 1 / 18


def test_a_full_gpu_strands_what_nothing_free_can_use() -> None:
    # 3g.40gb@0 + 2g.20gb@4 + 1g.10gb@6 leave slice 7, 24 SMs, 11287Mi of memory and
    # one of each engine: no free device fits, everything left is stranded.
    snap, _ = _mig(
        1,
        _taken(
            "a",
            "node-00000",
            "gpu-0-mig-3g40gb-9-0",
            "gpu-0-mig-2g20gb-14-4",
            "gpu-0-mig-1g10gb-19-6",
        ),
    )
    node = fragmentation(snap).node("node-00000")
    assert node.free_whole_devices == 0 and node.free_by_profile == {}
    assert node.usage.devices.free == 0 and node.usage.devices.in_use == 3
    assert node.usage.stranded == {
        "copy-engines": Quantity("1"),
        "decoders": Quantity("1"),
        "jpeg-engines": Quantity("1"),
        "memory": Quantity("11287Mi"),
        "memory-slice-7": Quantity("1"),
        "multiprocessors": Quantity("24"),
        "ofa-engines": Quantity("1"),
    }
    assert node.usage.counters["memory"].used == Quantity(f"{81559 - 11287}Mi")
    json.dumps(fragmentation(snap).to_dict())


def test_full_gpus_by_node_and_cluster() -> None:
    objects = generate("nvidia-gpu", 3, gpus_per_node=2).decoded()
    objects.extend(
        load(
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceClaim",
                "metadata": {"name": "x", "namespace": "default"},
                "spec": {
                    "devices": {
                        "requests": [
                            {"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com"}}
                        ]
                    }
                },
                "status": {
                    "allocation": {
                        "devices": {
                            "results": [
                                {
                                    "request": "gpu",
                                    "driver": DRIVER,
                                    "pool": "node-00001",
                                    "device": "gpu-1",
                                }
                            ]
                        }
                    }
                },
            }
        )
    )
    snap = Cluster.from_objects(objects).snapshot()
    report = fragmentation(snap)
    assert [n.free_whole_devices for n in report.nodes] == [2, 1, 2]
    assert report.cluster.free_whole_devices == 5
    assert report.cluster.classes["gpu.nvidia.com"].in_use == 1
    assert report.cluster.utilisation("gpu.nvidia.com") == 1 / 6
    assert report.node("node-00001").utilisation("gpu.nvidia.com") == 0.5
    assert report.cluster.free_by_profile == {}


def test_cordoned_devices_are_not_free() -> None:
    snap, _ = _mig(2)
    cordoned = Cordon(nodes=("node-00001",)).apply(snap)
    report = fragmentation(cordoned)
    assert report.node("node-00000").usage.devices.cordoned == 0
    assert report.node("node-00001").usage.devices.cordoned == 19
    assert report.node("node-00001").free_by_profile == {}
    # Cordoned capacity is not stranded: it is there once the taint goes.
    assert report.node("node-00001").usage.stranded == {}
    assert report.cluster.free_by_profile == EMPTY_GPU
    # The original snapshot is untouched.
    assert fragmentation(snap).node("node-00001").usage.devices.free == 19


def test_shared_pools_count_once_in_the_cluster() -> None:
    # network-attached: rack pools (nodeSelector) and a cluster-wide pool (allNodes)
    # are seen by many nodes; the cluster total counts each device once.
    objects = generate(
        "network-attached", 4, nodes_per_rack=2, gpus_per_rack=2, volumes=3
    ).decoded()
    snap = Cluster.from_objects(objects).snapshot()
    report = fragmentation(snap)
    published = sum(len(s.spec.devices) for s in objects.slices)
    assert report.cluster.usage.devices.total == published
    assert sum(n.usage.devices.total for n in report.nodes) > published


def test_profile_attribute_and_classes_are_selectable() -> None:
    snap, _ = _mig()
    report = fragmentation(
        snap, classes=["mig.nvidia.com", "missing"], profile_attribute=f"{DRIVER}/profile"
    )
    assert report.cluster.free_by_profile == EMPTY_GPU
    assert set(report.cluster.classes) == {"mig.nvidia.com", "missing"}
    assert report.class_errors == {"missing": "no such DeviceClass"}
    assert fragmentation(snap, profile_attribute="nope").cluster.free_by_profile == {}


def test_accounting_of_an_incomplete_pool() -> None:
    objects = generate("nvidia-gpu", 1, gpus_per_node=1).decoded()
    objects.slices[0].spec.pool.resource_slice_count = 2  # one slice is missing
    snap = Cluster.from_objects(objects).snapshot()
    usage = Accounting(snap).node_usage(snap.nodes[0])
    assert usage.devices.total == 0
    assert usage.unusable_pools == {f"{DRIVER}/node-00000": "incomplete"}
