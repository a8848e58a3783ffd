"""Shared fixtures of the benchmark suite (``pytest bench --benchmark-only``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import pytest

SLICES = 12_500
DEVICES_PER_SLICE = 8
DRIVER = "gpu.example.com"
_MODELS = ("NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-80GB", "NVIDIA L4", "NVIDIA B200")


def _device(node: int, index: int) -> dict[str, Any]:
    serial = node * DEVICES_PER_SLICE + index
    return {
        "name": f"gpu-{index}",
        "attributes": {
            "index": {"int": index},
            "productName": {"string": _MODELS[node % len(_MODELS)]},
            "uuid": {"string": f"GPU-{serial:08x}-4f2a-9c1d-7e3b-{node:012x}"},
            "driverVersion": {"version": f"550.54.{15 + node % 3}"},
            "resource.kubernetes.io/pcieRoot": {"string": f"pci0000:{index // 2:02x}"},
            "healthy": {"bool": serial % 97 != 0},
        },
        "capacity": {
            "memory": {"value": "80Gi" if node % 2 else "40Gi"},
            "cores": {"value": "132"},
        },
    }


def _slice(node: int) -> dict[str, Any]:
    name = f"node-{node:05d}"
    node_uid = f"0a1b2c3d-{node:04x}-4e5f-8a9b-{node:012x}"
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {
            "name": f"{name}-{DRIVER}-x7k2q",
            "generateName": f"{name}-{DRIVER}-",
            "uid": f"6f1c2d3e-{node:04x}-4a5b-8c9d-{node:012x}",
            "resourceVersion": str(1_000_000 + node),
            "generation": 1,
            "creationTimestamp": "2026-11-20T10:00:00Z",
            "ownerReferences": [
                {
                    "apiVersion": "v1",
                    "kind": "Node",
                    "name": name,
                    "uid": node_uid,
                    "controller": True,
                }
            ],
            "managedFields": [
                {
                    "manager": "gpu-kubeletplugin",
                    "operation": "Update",
                    "apiVersion": "resource.k8s.io/v1",
                    "time": "2026-11-20T10:00:00Z",
                    "fieldsType": "FieldsV1",
                    "fieldsV1": {
                        "f:metadata": {
                            "f:generateName": {},
                            "f:ownerReferences": {".": {}, f'k:{{"uid":"{node_uid}"}}': {}},
                        },
                        "f:spec": {
                            "f:devices": {},
                            "f:driver": {},
                            "f:nodeName": {},
                            "f:pool": {
                                ".": {},
                                "f:generation": {},
                                "f:name": {},
                                "f:resourceSliceCount": {},
                            },
                        },
                    },
                }
            ],
        },
        "spec": {
            "driver": DRIVER,
            "nodeName": name,
            "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
            "devices": [_device(node, i) for i in range(DEVICES_PER_SLICE)],
        },
    }


def resource_slice_list(slices: int = SLICES) -> dict[str, Any]:
    """A ResourceSliceList like ``kubectl get resourceslices -o json`` prints for a
    cluster of ``slices`` GPU nodes (deterministic)."""
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSliceList",
        "metadata": {"resourceVersion": "2000000"},
        "items": [_slice(n) for n in range(slices)],
    }


@pytest.fixture(scope="session")
def slice_list_json(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The 12,500-slice list as a JSON file, as the API server sends it (~50 MB)."""
    path = tmp_path_factory.mktemp("decode") / "resourceslices.json"
    path.write_bytes(msgspec.json.encode(resource_slice_list()))
    return path
