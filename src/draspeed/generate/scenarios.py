"""Named allocation problems on generated clusters: what the benchmarks measure.

A :class:`Scenario` is a cluster (kind, size, options) plus the claims of one pod
(template names, or ResourceClaimTemplate dicts for one-off claims). :meth:`Scenario.load`
decodes everything once and hands out allocators of either engine over the same
inputs, so figures compare like with like.

The shapes are those of issue 4 and upstream's scheduler_perf; ``upstream_us`` is
upstream's own per-node ``Allocate`` time for the shape where it was measured
(measured with the upstream allocator on one core: experimental variant, selectors cached).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from draspeed.generate import generate
from draspeed.generate._base import Cluster, Obj, claim_from_template, claim_template, exact_request
from draspeed.generate.example import CLASS as EXAMPLE_CLASS
from draspeed.generate.example import DRIVER as EXAMPLE_DRIVER

if TYPE_CHECKING:
    from draspeed.api.loader import Objects
    from draspeed.api.model import Node, ResourceClaim
    from draspeed.cluster import AllocatorLike, Engine
    from draspeed.features import Features


@dataclass(frozen=True)
class Scenario:
    """One pod's claims against one generated cluster, asked on every node."""

    name: str
    kind: str
    nodes: int
    templates: tuple[str | Obj, ...]
    options: dict[str, Any] = field(default_factory=dict)
    description: str = ""
    upstream_us: float | None = None

    def cluster(self, seed: int = 0) -> Cluster:
        return generate(self.kind, self.nodes, seed, **self.options)

    def load(self, seed: int = 0) -> Loaded:
        """Decode the cluster and the pod's claims (no validation: generated input is
        valid, see tests/test_generate.py)."""
        from draspeed.api.loader import load

        cluster = self.cluster(seed)
        claims = []
        for i, t in enumerate(self.templates):
            template = cluster.template(t) if isinstance(t, str) else t
            claims.append(claim_from_template(template, f"pod-0-claim-{i}"))
        return Loaded(self, cluster, cluster.decoded(), load(claims, validate=False).claims)


@dataclass
class Loaded:
    """A scenario decoded: the cluster's objects and the pending claims."""

    scenario: Scenario
    cluster: Cluster
    objects: Objects
    claims: list[ResourceClaim]

    @property
    def nodes(self) -> list[Node]:
        return self.objects.nodes

    @property
    def n_devices(self) -> int:
        return sum(len(s.spec.devices) for s in self.objects.slices)

    def allocator(self, engine: Engine, features: Features | None = None) -> AllocatorLike:
        """A fresh allocator of either engine over the cluster (fast: a new snapshot)."""
        from draspeed.cluster import make_allocator
        from draspeed.features import Features

        o = self.objects
        return make_allocator(
            engine, o.slices, o.classes, o.claims, features or Features(), o.nodes
        )


def _s(
    name: str,
    kind: str,
    nodes: int,
    templates: tuple[str | Obj, ...],
    description: str,
    upstream_us: float | None = None,
    **options: Any,
) -> Scenario:
    return Scenario(name, kind, nodes, templates, options, description, upstream_us)


SCENARIOS: dict[str, Scenario] = {
    s.name: s
    for s in (
        _s(
            "sp-500x10-one-device",
            "scheduler-perf",
            500,
            ("test-claim-template",),
            "scheduler_perf empty_500nodes: 500 nodes x 10 devices, a 1-device claim",
            11.8,
        ),
        _s(
            "sp-500x10-selector",
            "scheduler-perf",
            500,
            ("test-claim-template-with-selector",),
            "selector_empty_500nodes: the 1-device claim with upstream's CEL selector",
            15.1,
        ),
        _s(
            "sp-500x10-match",
            "scheduler-perf",
            500,
            ("test-claim-template-match",),
            "2 devices with matchAttribute on the model",
            22.7,
        ),
        _s(
            "sp-500x10-half",
            "scheduler-perf",
            500,
            ("test-claim-template",),
            "half_500nodes: half of the devices pre-allocated",
            fill=0.5,
        ),
        _s(
            "sp-500x10-full",
            "scheduler-perf",
            500,
            ("test-claim-template",),
            "full_500nodes: all but 10 devices pre-allocated",
            fill=1.0,
        ),
        _s(
            "sp-500x10-first-available",
            "scheduler-perf",
            500,
            ("test-claim-template-first-available",),
            "firstAvailable: a class without devices, then test-class",
        ),
        _s(
            "sp-backtracking",
            "scheduler-perf",
            50,
            ("test-claim-template-backtracking",),
            "partitionable backtracking: 8 devices on two counter sets, count 7",
            shape="backtracking",
        ),
        # Upstream runs these on 100 nodes; the per-node cost depends on the 2,000 pools
        # every node sees, not on the node count, so 10 nodes keep the warm-up short.
        _s(
            "sp-partitionable",
            "scheduler-perf",
            10,
            ("test-claim-template-two-devices",),
            "partitionable (2000pods_100nodes): 2,000 pools seen by every node, each with its "
            "2-counter device taken; 2 devices with matchAttribute (one backtrack)",
            shape="partitionable",
            fill=1.0,
            pools_per_node=200,
        ),
        _s(
            "sp-consumable-capacity",
            "scheduler-perf",
            10,
            ("test-claim-template-consumable",),
            "consumable capacity (2000pods_100nodes): 2,000 pools of shareable devices seen by "
            "every node; two requests of 10Gi",
            shape="consumable-capacity",
            pools_per_node=200,
        ),
        _s(
            "mig-1g10gb",
            "nvidia-mig",
            10,
            ("mig-1g10gb",),
            "8x H100 dynamic-MIG node (152 devices, 8 counter sets): a 1g.10gb slice",
            91.0,
        ),
        _s(
            "mig-3g40gb",
            "nvidia-mig",
            10,
            ("mig-3g40gb",),
            "8x H100 dynamic-MIG node: a 3g.40gb slice",
            284.0,
        ),
        _s(
            "mig-8-full-gpus",
            "nvidia-mig",
            10,
            ("eight-gpus",),
            "8x H100 dynamic-MIG node: all 8 full GPUs",
            1050.0,
        ),
        _s(
            "gpu-two-same-pcie-root",
            "nvidia-gpu",
            100,
            ("two-gpus-same-pcie-root",),
            "8x H100 full-GPU nodes, half taken: 2 GPUs under one PCIe root",
            allocated=0.5,
        ),
    )
}


def identical_devices(n: int, count: int | None = None, matching: int | None = None) -> Scenario:
    """Upstream issue #131730: ``n`` identical example GPUs on one node, a claim for
    ``count`` of them (default ``n + 1``, or ``matching + 1``): no solution exists, and an
    exhaustive search tries every combination. With ``matching``, a selector lets only
    the first ``matching`` GPUs (by index) qualify."""
    wanted = count if count is not None else (matching if matching is not None else n) + 1
    selectors = (
        [] if matching is None else [f"device.attributes['{EXAMPLE_DRIVER}'].index < {matching}"]
    )
    template = claim_template(
        "too-many",
        "default",
        {"requests": [exact_request("gpus", EXAMPLE_CLASS, count=wanted, selectors=selectors)]},
    )
    what = f"{n} identical GPUs" if matching is None else f"{matching} of {n} GPUs match"
    return Scenario(
        f"identical-{n}"
        + (f"-match-{matching}" if matching is not None else "")
        + f"-ask-{wanted}",
        "example",
        1,
        (template,),
        {"gpus_per_node": n},
        f"#131730: {what}, ask {wanted}",
    )
