"""draspeed.generate: determinism, validity, sizes, and an allocation smoke test per kind."""

from __future__ import annotations

import argparse
import dataclasses
import io
from collections import Counter
from typing import Any

import msgspec
import pytest
import yaml

from draspeed.api import limits
from draspeed.api.loader import load
from draspeed.cli import main
from draspeed.cli.generate import add_parser as add_generate_parser
from draspeed.cluster import make_allocator
from draspeed.features import Features
from draspeed.generate import KINDS, Cluster, decoded_claim, generate
from draspeed.generate.nvidia import PROFILES
from draspeed.generate.scenarios import SCENARIOS, identical_devices
from draspeed.reference import ReferenceAllocator

# (kind, options): every kind, and the options that change its shape.
VARIANTS: list[tuple[str, dict[str, Any]]] = [
    ("nvidia-gpu", {}),
    ("nvidia-gpu", {"allocated": 0.5, "gpus_per_node": 4}),
    ("nvidia-mig", {}),
    ("nvidia-mig", {"pool_per": "gpu", "media_extensions": True, "allocated": 0.6}),
    ("nvidia-mig", {"gpus_per_node": 10, "allocated": 1.0}),
    ("example", {"allocated": 0.25}),
    ("scheduler-perf", {}),
    ("scheduler-perf", {"fill": 0.5, "devices_per_node": 200}),
    ("scheduler-perf", {"fill": 1.0}),
    ("scheduler-perf", {"shape": "partitionable", "fill": 0.5, "pools_per_node": 2}),
    ("scheduler-perf", {"shape": "backtracking"}),
    ("scheduler-perf", {"shape": "consumable-capacity", "pools_per_node": 2}),
    ("network-attached", {"nodes_per_rack": 3}),
]
IDS = [f"{k}-{'-'.join(f'{a}={b}' for a, b in o.items()) or 'default'}" for k, o in VARIANTS]


def _bytes(cluster: Cluster) -> bytes:
    return msgspec.json.encode(cluster.document())


# --------------------------------------------------------------------------------------
# Determinism
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(("kind", "options"), VARIANTS, ids=IDS)
def test_same_seed_same_output(kind: str, options: dict[str, Any]) -> None:
    assert _bytes(generate(kind, 5, 42, **options)) == _bytes(generate(kind, 5, 42, **options))


@pytest.mark.parametrize("kind", ["nvidia-gpu", "nvidia-mig", "example", "network-attached"])
def test_other_seed_other_output(kind: str) -> None:
    assert _bytes(generate(kind, 3, 1)) != _bytes(generate(kind, 3, 2))


@pytest.mark.parametrize("kind", ["nvidia-gpu", "nvidia-mig", "example", "scheduler-perf"])
def test_first_nodes_do_not_depend_on_cluster_size(kind: str) -> None:
    small, large = generate(kind, 3, 7), generate(kind, 9, 7)
    assert large.nodes[:3] == small.nodes
    assert large.slices[: len(small.slices)] == small.slices


# --------------------------------------------------------------------------------------
# Validity
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(("kind", "options"), VARIANTS, ids=IDS)
def test_every_object_passes_validation(kind: str, options: dict[str, Any]) -> None:
    cluster = generate(kind, 4, 3, **options)
    objects = load(cluster.items(), validate=True)
    assert len(objects) == len(cluster.items())
    assert not objects.warnings


@pytest.mark.parametrize(("kind", "options"), VARIANTS, ids=IDS)
def test_slices_keep_the_api_rules(kind: str, options: dict[str, Any]) -> None:
    cluster = generate(kind, 4, 3, **options)
    slices_per_pool: Counter[tuple[str, str]] = Counter()
    for s in cluster.slices:
        spec = s["spec"]
        devices, counters = spec.get("devices"), spec.get("sharedCounters")
        assert (devices is None) != (counters is None), "devices or sharedCounters, not both"
        if devices:
            advanced = any("taints" in d or "consumesCounters" in d for d in devices)
            limit = (
                limits.RESOURCE_SLICE_MAX_DEVICES_WITH_ADVANCED_FEATURES
                if advanced
                else limits.RESOURCE_SLICE_MAX_DEVICES
            )
            assert len(devices) <= limit
        else:
            assert len(counters) <= limits.RESOURCE_SLICE_MAX_COUNTER_SETS
        slices_per_pool[(spec["driver"], spec["pool"]["name"])] += 1
    for s in cluster.slices:
        spec = s["spec"]
        assert (
            spec["pool"]["resourceSliceCount"]
            == slices_per_pool[(spec["driver"], spec["pool"]["name"])]
        )
    assert len({s["metadata"]["name"] for s in cluster.slices}) == len(cluster.slices)


@pytest.mark.parametrize(("kind", "options"), VARIANTS, ids=IDS)
def test_no_device_is_allocated_twice(kind: str, options: dict[str, Any]) -> None:
    cluster = generate(kind, 6, 5, **options)
    taken = [
        (r["driver"], r["pool"], r["device"])
        for c in cluster.claims
        for r in c["status"]["allocation"]["devices"]["results"]
    ]
    assert len(taken) == len(set(taken))
    devices = {
        (s["spec"]["driver"], s["spec"]["pool"]["name"], d["name"])
        for s in cluster.slices
        for d in s["spec"].get("devices", ())
    }
    assert set(taken) <= devices


SLICES_OF = {p.device_part: p.size for p in PROFILES}


def test_mig_allocations_fit_their_gpu() -> None:
    """Pre-allocated placements of one GPU never share a memory slice, and a taken
    full GPU is alone on it: the counters allow exactly such sets."""
    cluster = generate("nvidia-mig", 20, 11, allocated=1.0)
    by_gpu: dict[tuple[str, str], list[str]] = {}
    for c in cluster.claims:
        [r] = c["status"]["allocation"]["devices"]["results"]
        gpu = r["device"].split("-mig-")[0]
        by_gpu.setdefault((r["pool"], gpu), []).append(r["device"])
    assert len(by_gpu) == 20 * 8
    for names in by_gpu.values():
        if any("-mig-" not in n for n in names):
            assert len(names) == 1
            continue
        used: list[int] = []
        for n in names:
            _, profile, _, start = n.rsplit("-", 3)
            used += range(int(start), int(start) + SLICES_OF[profile])
        assert len(used) == len(set(used))


# --------------------------------------------------------------------------------------
# Sizes
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "options", "per_node"),
    [
        ("nvidia-gpu", {}, 8),
        ("nvidia-mig", {}, 8 * 19),
        ("nvidia-mig", {"media_extensions": True, "pool_per": "gpu"}, 8 * 26),
        ("example", {"gpus_per_node": 31}, 31),
        ("scheduler-perf", {}, 10),
        ("scheduler-perf", {"devices_per_node": 300}, 300),
        ("scheduler-perf", {"shape": "backtracking"}, 8),
        ("scheduler-perf", {"shape": "partitionable", "pools_per_node": 3}, 3 * 6),
        ("scheduler-perf", {"shape": "consumable-capacity", "pools_per_node": 3}, 10 + 3 * 2),
    ],
)
def test_device_counts(kind: str, options: dict[str, Any], per_node: int) -> None:
    cluster = generate(kind, 7, **options)
    assert len(cluster.nodes) == 7
    assert cluster.n_devices == 7 * per_node


def test_mig_node_has_eight_counter_sets_and_152_devices() -> None:
    objects = generate("nvidia-mig", 1).decoded()
    assert sum(len(s.spec.shared_counters) for s in objects.slices) == 8
    assert {s.spec.pool.name for s in objects.slices} == {"node-00000"}
    counter_set = next(s for s in objects.slices if s.spec.shared_counters).spec.shared_counters[0]
    assert counter_set.name == "gpu-0-counter-set"
    assert {f"memory-slice-{i}" for i in range(8)} <= set(counter_set.counters)
    names = [d.name for s in objects.slices for d in s.spec.devices]
    assert "gpu-0-mig-1g10gb-19-0" in names and "gpu-7-mig-7g80gb-0-0" in names


@pytest.mark.parametrize(("fill", "expected"), [(0.0, 0), (0.5, 250), (1.0, 490)])
def test_scheduler_perf_fill(fill: float, expected: int) -> None:
    """empty / half / full as upstream: full leaves exactly 10 devices free."""
    assert len(generate("scheduler-perf", 50, fill=fill).claims) == expected


def test_network_attached_pools() -> None:
    cluster = generate("network-attached", 10, nodes_per_rack=4, gpus_per_rack=3, volumes=5)
    placements = Counter(
        next(
            k
            for k in ("nodeName", "nodeSelector", "allNodes", "perDeviceNodeSelection")
            if k in s["spec"]
        )
        for s in cluster.slices
    )
    assert placements == {"nodeSelector": 3, "perDeviceNodeSelection": 3, "allNodes": 1}
    assert cluster.n_devices == 3 * 3 + (2 + 2 + 1) + 5


@pytest.mark.parametrize(
    ("kind", "options"),
    [
        ("nvidia-gpu", {"gpus_per_node": 0}),
        ("nvidia-mig", {"pool_per": "rack"}),
        ("scheduler-perf", {"shape": "backtracking", "fill": 0.5}),
        ("scheduler-perf", {"shape": "sideways"}),
        ("example", {"allocated": 2.0}),
    ],
)
def test_bad_options_are_rejected(kind: str, options: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        generate(kind, 2, **options)


# --------------------------------------------------------------------------------------
# Allocation smoke test: both engines, every template, one node per kind
# --------------------------------------------------------------------------------------

SMOKE: list[tuple[str, dict[str, Any]]] = [
    ("nvidia-gpu", {}),
    ("nvidia-mig", {}),
    ("example", {}),
    ("network-attached", {}),
    ("scheduler-perf", {"fill": 0.5}),
    ("scheduler-perf", {"shape": "partitionable", "fill": 1.0, "pools_per_node": 1}),
    ("scheduler-perf", {"shape": "backtracking"}),
    ("scheduler-perf", {"shape": "consumable-capacity", "pools_per_node": 1}),
]


@pytest.mark.parametrize(("kind", "options"), SMOKE, ids=[f"{k}-{o}" for k, o in SMOKE])
def test_engines_agree_on_every_template(kind: str, options: dict[str, Any]) -> None:
    """Every claim template of a kind fits (on the least-used node) and both engines
    pick the same devices."""
    cluster = generate(kind, 2, 9, **options)
    objects = cluster.decoded(validate=True)
    # The node with the fewest pre-allocated devices.
    load_of = Counter(
        c["status"]["allocation"]["devices"]["results"][0]["pool"] for c in cluster.claims
    )
    node = min(objects.nodes, key=lambda n: load_of[n.name])
    fast = make_allocator("fast", objects.slices, objects.classes, objects.claims, Features())
    reference = make_allocator(
        "reference", objects.slices, objects.classes, objects.claims, Features()
    )
    for template in cluster.templates:
        name = template["metadata"]["name"]
        claim = decoded_claim(cluster, name)
        got, want = fast.allocate([claim], node), reference.allocate([claim], node)
        assert (got is None) == (want is None), name
        if want is not None and got is not None:
            strip = [
                [dataclasses.replace(r, share_id=None) for r in a.devices.results] for a in got
            ]
            assert strip == [
                [dataclasses.replace(r, share_id=None) for r in a.devices.results] for a in want
            ], name
        assert want is not None, f"{name} should fit on {node.name}"


def test_scenarios_name_existing_templates() -> None:
    for scenario in SCENARIOS.values():
        cluster = generate(scenario.kind, 1, **scenario.options)
        for t in scenario.templates:
            if isinstance(t, str):
                cluster.template(t)


def test_identical_devices_has_no_solution() -> None:
    loaded = identical_devices(12).load()
    allocator = loaded.allocator("reference")
    assert allocator.allocate(loaded.claims, loaded.nodes[0]) is None
    assert isinstance(allocator, ReferenceAllocator)
    assert allocator.last_stats.num_allocate_one_invocations == 2**12
    assert allocator.last_stats.search_steps == 2**12
    # The fast engine prunes: its own counter, honestly named, far below upstream's.
    fast = loaded.allocator("fast")
    assert fast.allocate(loaded.claims, loaded.nodes[0]) is None
    assert 0 < fast.last_stats.search_steps < 2**12
    assert not hasattr(fast.last_stats, "num_allocate_one_invocations")


# --------------------------------------------------------------------------------------
# CLI
# --------------------------------------------------------------------------------------


def _cli(*argv: str) -> tuple[int, str, str]:
    parser = argparse.ArgumentParser(prog="draspeed")
    add_generate_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["generate", *argv])
    out, err = io.StringIO(), io.StringIO()
    return args.run(args, out, err), out.getvalue(), err.getvalue()


@pytest.mark.parametrize("output", ["yaml", "json"])
def test_cli_prints_the_generated_list(output: str) -> None:
    code, out, err = _cli(
        "nvidia-mig",
        "--nodes",
        "1",
        "--seed",
        "4",
        "--pool-per",
        "gpu",
        "--gpus-per-node",
        "2",
        "--allocated",
        "half",
        "-o",
        output,
    )
    assert (code, err) == (0, "")
    assert "&id" not in out  # shared sub-objects are written out, not aliased
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    parsed = msgspec.json.decode(out) if output == "json" else yaml.load(out, Loader=loader)
    expected = generate("nvidia-mig", 1, 4, gpus_per_node=2, pool_per="gpu", allocated=0.5)
    assert parsed == msgspec.json.decode(msgspec.json.encode(expected.document()))
    assert len(load(out, validate=True).slices) == 2 * 2


def test_cli_kind_options() -> None:
    code, out, _ = _cli(
        "scheduler-perf", "--nodes", "3", "--fill", "full", "--devices-per-node", "12", "-o", "json"
    )
    objects = load(out)
    assert code == 0 and len(objects.claims) == 3 * 12 - 10


def test_cli_adds_pending_claims() -> None:
    code, out, _ = _cli(
        "example",
        "--nodes",
        "2",
        "--allocated",
        "0.5",
        "--claim",
        "single-gpu",
        "--claim",
        "two-gpus-same-model",
        "-o",
        "json",
    )
    assert code == 0
    objects = load(out, validate=True)
    pending = [c.metadata.name for c in objects.claims if c.status.allocation is None]
    assert pending == ["single-gpu-0", "two-gpus-same-model-1"]
    code, out, err = _cli("example", "--nodes", "1", "--claim", "no-such-template")
    assert code == 2 and "no claim template 'no-such-template'" in err


def test_cli_reports_bad_values() -> None:
    code, out, err = _cli(
        "scheduler-perf", "--nodes", "2", "--shape", "backtracking", "--fill", "half"
    )
    assert code == 2 and out == "" and "no pre-allocated claims" in err
    with pytest.raises(SystemExit):
        _cli("example", "--nodes", "0")


def test_every_kind_has_a_cli() -> None:
    for kind in KINDS:
        code, out, _ = _cli(kind, "--nodes", "1", "-o", "json")
        assert code == 0 and load(out).slices


def test_a_claim_from_a_template_keeps_the_templates_api_version() -> None:
    """A v1beta1 template's spec is written as v1beta1 writes it (``deviceClassName``
    directly in the request): its claim says so, and loads."""
    from draspeed.generate.scenarios import claim_from_template

    template = {
        "apiVersion": "resource.k8s.io/v1beta1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "gpu", "namespace": "team"},
        "spec": {"spec": {"devices": {"requests": [{"name": "r", "deviceClassName": "c"}]}}},
    }
    claim = claim_from_template(template, "pod-gpu")
    assert claim["apiVersion"] == "resource.k8s.io/v1beta1"
    (decoded,) = load([claim], validate=True).claims
    assert decoded.key == "team/pod-gpu"
    exactly = decoded.spec.devices.requests[0].exactly
    assert exactly is not None and exactly.device_class_name == "c"


def test_a_namespace_the_api_server_refuses_is_refused_before_generating() -> None:
    """What generate writes, draspeed's own load (and the API server) must take."""
    with pytest.raises(ValueError, match="'BAD NS': a lowercase RFC 1123 label"):
        generate("nvidia-gpu", 1, namespace="BAD NS")
    out, err = io.StringIO(), io.StringIO()
    assert main(["generate", "nvidia-gpu", "--nodes", "1", "-n", "BAD NS"], out, err) == 2
    assert not out.getvalue()
    assert generate("nvidia-gpu", 1, namespace="team-a").decoded(validate=True).templates
