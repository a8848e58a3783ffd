"""Kubernetes documents (dicts, as ``draspeed.load`` takes them) for tests to build
clusters from."""

from __future__ import annotations

from typing import Any


def resource_slice(
    name: str,
    devices: list[dict[str, Any]],
    *,
    driver: str = "drv.example.com",
    pool: str | None = None,
    count: int = 1,
    **spec: Any,
) -> dict[str, Any]:
    """A ResourceSlice of ``devices``, alone in its pool (named after the slice) unless
    ``pool`` and ``count`` say otherwise; ``spec``: its node selection (``nodeName``,
    ``nodeSelector``, ``allNodes``, ``perDeviceNodeSelection``) and anything else."""
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": name},
        "spec": {
            "driver": driver,
            "pool": {"name": pool or name, "generation": 1, "resourceSliceCount": count},
            **spec,
            "devices": devices,
        },
    }


def claim_with_parameters(
    parameters: Any,
    *,
    name: str = "c",
    namespace: str = "default",
    device_class: str = "gpu",
    driver: str = "gpu.example.com",
) -> dict[str, Any]:
    """A pending ResourceClaim for one device of ``device_class``, with opaque
    ``parameters`` for ``driver``."""
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "devices": {
                "requests": [{"name": "r", "exactly": {"deviceClassName": device_class}}],
                "config": [{"opaque": {"driver": driver, "parameters": parameters}}],
            }
        },
    }
