"""The optimal bound (scipy's MILP) against brute force, and against every fill.

Brute force here asks the real allocator: from each state it tries every way one
more pod could take devices -- the node asked again with all other free devices
taken out of its slices -- and keeps the best count (states remembered by what is
held). It shares nothing with the bound's model but the answer.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable
from typing import Any

import pytest

from draspeed.analysis import fit
from draspeed.analysis.bound import SHARED_POOLS, optimal_bound
from draspeed.analysis.shapes import PodShape, as_shapes
from draspeed.api.loader import load
from draspeed.api.model import Device, Node, ResourceClaim
from draspeed.cluster import Cluster
from draspeed.engine.allocator import Allocator
from draspeed.engine.snapshot import Snapshot
from draspeed.errors import AllocationError
from draspeed.generate import generate


def _claim(name: str, devices: dict[str, Any]) -> ResourceClaim:
    [claim] = load(
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"devices": devices},
        }
    ).claims
    return claim


def mig(profile: str) -> PodShape:
    expression = f"device.attributes['gpu.nvidia.com'].profile == '{profile}'"
    request = {
        "name": "mig",
        "exactly": {
            "deviceClassName": "mig.nvidia.com",
            "selectors": [{"cel": {"expression": expression}}],
        },
    }
    return PodShape.of(_claim("mig-" + profile.replace(".", ""), {"requests": [request]}))


def _free(snap: Snapshot, node: str, shares: bool) -> list[tuple[str, Device]]:
    """The node's devices not in use (with ``shares``, shareable devices whatever their
    use: a share may still fit)."""
    held = {
        (r.pool, r.device)
        for c in snap.allocated_claims
        if c.status.allocation is not None
        for r in c.status.allocation.devices.results
    }
    return [
        (rs.spec.pool.name, d)
        for rs in snap.slices
        for d in rs.spec.devices
        if rs.spec.node_name in (node, None)
        and ((rs.spec.pool.name, d.name) not in held or (shares and d.allow_multiple_allocations))
    ]


def _only(snap: Snapshot, keep: set[tuple[str, str]], held: set[tuple[str, str]]) -> Snapshot:
    """The snapshot with every device neither kept nor held taken out of its slice."""
    changed = []
    for rs in snap.slices:
        kept = [d for d in rs.spec.devices if (rs.spec.pool.name, d.name) in keep | held]
        if len(kept) != len(rs.spec.devices):
            changed.append(dataclasses.replace(rs, spec=dataclasses.replace(rs.spec, devices=kept)))
    return snap.update_slices(added=changed) if changed else snap


def brute_force(
    snap: Snapshot,
    node: Node,
    shapes: list[PodShape],
    candidates: Callable[[PodShape, str, Device], bool],
    shares: bool = False,
) -> int:
    """The most pods of the shapes on ``node``, over every device choice."""
    memo: dict[Any, int] = {}
    counter = itertools.count()

    def held_of(s: Snapshot) -> set[tuple[str, str]]:
        return {
            (r.pool, r.device)
            for c in s.allocated_claims
            if c.status.allocation is not None
            for r in c.status.allocation.devices.results
            if r.share_id is None
        }

    def key_of(s: Snapshot) -> Any:
        entries = [
            (r.pool, r.device, tuple(sorted(r.consumed_capacity.items())))
            for c in s.allocated_claims
            if c.status.allocation is not None
            for r in c.status.allocation.devices.results
        ]
        return tuple(sorted(entries))

    def best(s: Snapshot) -> int:
        key = key_of(s)
        if key in memo:
            return memo[key]
        held = held_of(s)
        found = 0
        for shape in shapes:
            size = sum(
                r.exactly.count for c in shape.claims for r in c.spec.devices.requests if r.exactly
            )
            free = [(p, d.name) for p, d in _free(s, node.name, shares) if candidates(shape, p, d)]
            for subset in itertools.combinations(free, size):
                restricted = _only(s, set(subset), held)
                claims = shape.instantiate(next(counter))
                try:
                    results = Allocator(restricted).allocate(claims, node)
                except AllocationError:
                    results = None
                if results is None:
                    continue
                after = s.add_allocated(
                    [
                        dataclasses.replace(c, status=dataclasses.replace(c.status, allocation=r))
                        for c, r in zip(claims, results, strict=True)
                    ]
                )
                found = max(found, 1 + best(after))
        memo[key] = found
        return found

    return best(snap)


def _profile_of(shape: PodShape) -> str:
    request = shape.claims[0].spec.devices.requests[0]
    assert request.exactly is not None
    expression = request.exactly.selectors[0].cel.expression  # type: ignore[union-attr]
    return expression.split("== '")[1].rstrip("'")


def _is_profile(shape: PodShape, pool: str, device: Device) -> bool:
    attribute = device.attributes.get("gpu.nvidia.com/profile")
    return attribute is not None and attribute.value == _profile_of(shape)


def _snapshot(kind: str, nodes: int, **options: Any) -> tuple[Snapshot, Any]:
    objects = generate(kind, nodes, **options).decoded()
    return Cluster.from_objects(objects).snapshot(), objects


@pytest.mark.parametrize(
    ("profiles", "held"),
    [(("1g.10gb", "3g.40gb", "7g.80gb"), None), (("1g.10gb", "2g.20gb", "4g.40gb"), "1g@3")],
    ids=["1g-3g-7g-empty", "1g-2g-4g-fragmented"],
)
def test_mig_bound_equals_brute_force(profiles: tuple[str, ...], held: str | None) -> None:
    snap, _ = _snapshot("nvidia-mig", 1, gpus_per_node=1)
    node = snap.nodes[0]
    if held is not None:  # one 1g.10gb at memory slice 3 fragments the GPU
        shape = mig("1g.10gb")
        target = {("node-00000", "gpu-0-mig-1g10gb-19-3")}
        claims = shape.instantiate(999)
        [result] = Allocator(_only(snap, target, set())).allocate(claims, node) or []
        snap = snap.add_allocated(
            [
                dataclasses.replace(
                    claims[0], status=dataclasses.replace(claims[0].status, allocation=result)
                )
            ]
        )
    shapes = [mig(p) for p in profiles]
    bound = optimal_bound(snap, shapes)
    [node_bound] = bound.nodes
    assert node_bound.exact and not node_bound.notes
    assert node_bound.optimal == brute_force(snap, node, shapes, _is_profile)
    if held is not None:  # each shape alone too (fewer states on a fragmented GPU)
        for shape in shapes:
            assert node_bound.alone[shape.name] == brute_force(snap, node, [shape], _is_profile)


def _gpu(shape: PodShape, pool: str, device: Device) -> bool:
    return True


def test_match_attribute_bound_equals_brute_force() -> None:
    # 4 H100 (two PCIe roots), one already taken: two GPUs under one root fit once,
    # and the single GPU next to the taken one is left for a 1-GPU pod.
    snap, objects = _snapshot("nvidia-gpu", 1, gpus_per_node=4, allocated=0.25)
    shapes = as_shapes(
        [
            t
            for t in objects.templates
            if t.metadata.name in ("two-gpus-same-pcie-root", "single-gpu")
        ]
    )
    [node_bound] = optimal_bound(snap, shapes).nodes
    assert node_bound.exact
    node = snap.nodes[0]
    assert node_bound.optimal == brute_force(snap, node, shapes, _gpu)
    for shape in shapes:
        assert node_bound.alone[shape.name] == brute_force(snap, node, [shape], _gpu)
    assert node_bound.alone["two-gpus-same-pcie-root"] == 1


def test_distinct_attribute_bound_equals_brute_force() -> None:
    snap, _ = _snapshot("nvidia-gpu", 1, gpus_per_node=6)
    request = {"name": "gpus", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": 2}}
    spread = PodShape.of(
        _claim(
            "two-roots",
            {
                "requests": [request],
                "constraints": [
                    {"requests": ["gpus"], "distinctAttribute": "resource.kubernetes.io/pcieRoot"}
                ],
            },
        )
    )
    [node_bound] = optimal_bound(snap, [spread]).nodes
    assert node_bound.exact
    assert node_bound.optimal == brute_force(snap, snap.nodes[0], [spread], _gpu) == 3


def test_shared_capacity_bound_equals_brute_force() -> None:
    # One node, two volumes of 100G shared in 10G slices (the policy rounds requests
    # up to whole gigabytes): twenty shares, ten per volume.
    snap, objects = _snapshot("network-attached", 1, volumes=2, gpus_per_rack=1)
    [volume] = as_shapes([t for t in objects.templates if t.metadata.name == "volume-10g"])
    [node_bound] = optimal_bound(snap, [volume]).nodes
    assert node_bound.exact and SHARED_POOLS not in node_bound.notes
    assert node_bound.optimal == 20

    def volumes(shape: PodShape, pool: str, device: Device) -> bool:
        return pool == "shared-volumes"

    small, _ = _snapshot("network-attached", 1, volumes=1, gpus_per_rack=1)
    [small_bound] = optimal_bound(small, [volume]).nodes
    assert small_bound.optimal == brute_force(small, small.nodes[0], [volume], volumes, True) == 10


CLUSTERS = [
    ("example", 3, {"gpus_per_node": 4, "allocated": 0.3}, ["single-gpu", "two-gpus-same-model"]),
    (
        "nvidia-gpu",
        3,
        {"gpus_per_node": 4, "allocated": 0.2},
        ["two-gpus-same-pcie-root", "single-gpu"],
    ),
    ("nvidia-mig", 3, {"gpus_per_node": 2, "allocated": 0.5}, ["mig-3g40gb", "mig-1g10gb"]),
    (
        "nvidia-mig",
        2,
        {"gpus_per_node": 2, "pool_per": "gpu"},
        ["gpu-or-mig", "two-mig-1g10gb-same-gpu"],
    ),
    ("scheduler-perf", 3, {"fill": 0.5}, ["test-claim-template", "test-claim-template-match"]),
    ("network-attached", 3, {}, ["fabric-gpu", "two-fabric-gpus-same-rack", "gpu-or-link"]),
]


@pytest.mark.parametrize(
    ("kind", "nodes", "options", "names"), CLUSTERS, ids=[f"{c[0]}-{len(c[3])}" for c in CLUSTERS]
)
def test_every_fill_stays_within_the_bound(
    kind: str, nodes: int, options: dict[str, Any], names: list[str]
) -> None:
    snap, objects = _snapshot(kind, nodes, **options)
    templates = [t for t in objects.templates if t.metadata.name in names]
    for strategy in ("first-fit", "best-fit", "most-allocated"):
        report = fit(snap, templates, strategy, explain_failures=False)
        bound = optimal_bound(snap, templates, keep=report)
        assert bound.optimal is not None and report.placed <= bound.optimal
        for node_fit in report.nodes:
            node_bound = bound.node(node_fit.node)
            assert node_bound.optimal is not None and node_fit.total_pods <= node_bound.optimal
            # Keeping the fill's pods, the optimum is at least the fill (gap >= 0), and
            # at most the node's bound.
            assert node_bound.kept is not None and node_fit.total_pods <= node_bound.kept
            assert node_bound.kept <= node_bound.optimal
            assert node_bound.gap is not None and node_bound.gap >= 0
            for shape, count in node_fit.pods.items():
                alone = node_bound.alone[shape]
                assert alone is not None and count <= alone


def test_unbounded_and_unknown_classes() -> None:
    snap, objects = _snapshot("nvidia-gpu", 1, gpus_per_node=2)
    admin = PodShape.of(
        _claim(
            "watch",
            {
                "requests": [
                    {
                        "name": "gpus",
                        "exactly": {"deviceClassName": "gpu.nvidia.com", "adminAccess": True},
                    }
                ]
            },
        )
    )
    missing = PodShape.of(
        _claim("nothing", {"requests": [{"name": "x", "exactly": {"deviceClassName": "no-such"}}]})
    )
    [single] = as_shapes([t for t in objects.templates if t.metadata.name == "single-gpu"])
    bound = optimal_bound(snap, [admin, missing, single])
    [node_bound] = bound.nodes
    assert node_bound.optimal is None  # admin access takes no device
    assert node_bound.alone == {"watch": None, "nothing": 0, "single-gpu": 2}
    assert bound.optimal is None


def test_a_time_limit_without_a_solution_is_one_clear_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """HiGHS may stop at its time limit before any solution (status 1, no x): one
    DraspeedError that says so (the command: exit 2), not a RuntimeError with HiGHS's
    status. (Whether a real solve gets there depends on the solver's version: stood in
    for here.)"""
    import types

    import scipy.optimize

    from draspeed.errors import SolverTimeLimit

    def stopped(*args: Any, **kwargs: Any) -> Any:
        return types.SimpleNamespace(status=1, x=None, message="Time limit reached.")

    monkeypatch.setattr(scipy.optimize, "milp", stopped)
    snap, objects = _snapshot("nvidia-gpu", 1, gpus_per_node=4, allocated=0.25)
    shapes = as_shapes([t for t in objects.templates if t.metadata.name == "single-gpu"])
    with pytest.raises(SolverTimeLimit, match="reached its time limit"):
        optimal_bound(snap, shapes, time_limit=1.0)
