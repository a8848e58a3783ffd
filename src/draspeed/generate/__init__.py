"""Realistic, seeded DRA clusters: ``draspeed.generate`` and ``draspeed generate KIND``.

Every kind returns a :class:`Cluster` of plain ``resource.k8s.io/v1`` dicts (Nodes,
DeviceClasses, ResourceSlices, ResourceClaimTemplates and already-allocated
ResourceClaims) that pass ``draspeed.api.loader.load(..., validate=True)``. The same
arguments and seed always give the same objects; node ``i`` does not depend on how
many nodes follow it. Kinds:

- ``nvidia-gpu``: 8× H100 80GB full-GPU nodes (:func:`~draspeed.generate.nvidia.nvidia_gpu`);
- ``nvidia-mig``: the same GPUs in dynamic-MIG mode (:func:`~draspeed.generate.nvidia.nvidia_mig`);
- ``example``: dra-example-driver nodes (:func:`~draspeed.generate.example.example`);
- ``scheduler-perf``: upstream's scheduler_perf shapes
  (:func:`~draspeed.generate.scheduler_perf.scheduler_perf`);
- ``network-attached``: rack, per-device and cluster-wide pools
  (:func:`~draspeed.generate.network.network_attached`).

Usage::

    cluster = generate("nvidia-mig", nodes=4, seed=1, pool_per="gpu")
    objects = generate_objects("scheduler-perf", nodes=500, fill=0.5)   # decoded model
    claim = decoded_claim(cluster, "mig-1g10gb")
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from draspeed.api import names
from draspeed.generate._base import Cluster, check_size, claim_from_template, parse_fill
from draspeed.generate.example import example
from draspeed.generate.network import network_attached
from draspeed.generate.nvidia import nvidia_gpu, nvidia_mig
from draspeed.generate.scheduler_perf import scheduler_perf

if TYPE_CHECKING:
    from draspeed.api.loader import Objects
    from draspeed.api.model import ResourceClaim

KINDS: dict[str, Callable[..., Cluster]] = {
    "nvidia-gpu": nvidia_gpu,
    "nvidia-mig": nvidia_mig,
    "example": example,
    "scheduler-perf": scheduler_perf,
    "network-attached": network_attached,
}


def generate(kind: str, nodes: int, seed: int = 0, **options: Any) -> Cluster:
    """The cluster of one kind; ``options`` are that kind's keyword arguments.

    Sizes are bounded (:data:`~draspeed.generate._base.MAX_NODES` nodes, per-node
    counts and about a million devices in all): beyond them, a ValueError.
    """
    try:
        make = KINDS[kind]
    except KeyError:
        raise ValueError(f"unknown kind {kind!r}; expected one of {', '.join(KINDS)}") from None
    check_size(kind, nodes, options)
    namespace = options.get("namespace")
    if isinstance(namespace, str):  # (what the objects carry: the API server checks it)
        problem = names.dns_label_problem(namespace)
        if problem is not None:
            raise ValueError(f"namespace {namespace!r}: {problem}")
    return make(nodes, seed, **options)


def generate_objects(
    kind: str, nodes: int, seed: int = 0, *, validate: bool = False, **options: Any
) -> Objects:
    """:func:`generate`, then decoded to draspeed's model (for benchmarks and tests)."""
    return generate(kind, nodes, seed, **options).decoded(validate=validate)


def decoded_claim(cluster: Cluster, template: str, name: str | None = None) -> ResourceClaim:
    """A pending claim made from one of the cluster's templates, decoded."""
    from draspeed.api.loader import load

    [claim] = load(cluster.claim(template, name)).claims
    return claim


__all__ = [
    "KINDS",
    "Cluster",
    "claim_from_template",
    "decoded_claim",
    "example",
    "generate",
    "generate_objects",
    "network_attached",
    "nvidia_gpu",
    "nvidia_mig",
    "parse_fill",
    "scheduler_perf",
]
