"""Shared fixtures of the benchmark suite (``pytest bench --benchmark-only``)."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import msgspec
import pytest
from pytest_benchmark.fixture import BenchmarkFixture

from draspeed.generate import generate
from draspeed.generate.scenarios import Loaded, Scenario

if TYPE_CHECKING:
    from draspeed.api.loader import Objects
    from draspeed.api.model import Node
    from draspeed.cluster import Engine

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


# --------------------------------------------------------------------------------------
# Generated clusters and scenarios (draspeed.generate), shared by the allocation and
# snapshot benchmarks.
# --------------------------------------------------------------------------------------


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--bench-huge",
        action="store_true",
        default=False,
        help="also run the ~1M-device dynamic-MIG snapshot build (its input takes "
        "minutes to generate and decode)",
    )


@pytest.fixture(scope="session")
def scenarios() -> Callable[[Scenario], Loaded]:
    """Decode each scenario once per session: ``scenarios(SCENARIOS["mig-1g10gb"])``."""
    cache: dict[str, Loaded] = {}

    def get(scenario: Scenario) -> Loaded:
        if scenario.name not in cache:
            cache[scenario.name] = scenario.load()
        return cache[scenario.name]

    return get


@pytest.fixture(scope="session")
def clusters() -> Callable[..., Objects]:
    """Decoded generated clusters, cached per (kind, nodes, options)."""
    cache: dict[tuple[Any, ...], Objects] = {}

    def get(kind: str, nodes: int, **options: Any) -> Objects:
        key = (kind, nodes, tuple(sorted(options.items())))
        if key not in cache:
            cache[key] = generate(kind, nodes, **options).decoded()
        return cache[key]

    return get


class PerNode:
    """Drives one ``allocate`` call per benchmark round, cycling through the nodes.

    ``warm``: one allocator for the whole run (the fast engine keeps what it learnt
    about each node). ``cold``: a fresh allocator (a new snapshot) for every pass over
    the nodes, so every timed call is the first one on its node. The snapshot is
    built, and its one-time lazy state primed by a call on the first node, in
    ``setup``, outside the timed calls; that first call is reported as
    ``first_call_ms``. ``scheduler``: kube-scheduler's loop with draspeed keeping the
    cluster state: each pass over the nodes is one pod (its claims renamed, as made
    from the same templates), prepared once (``Allocator.prepare``, as PreFilter makes
    upstream's allocator) and asked on every node (Filter); between passes, untimed,
    the pod's claims are committed on the first node that fits (``add_allocated``)
    and the next pod is asked on that new snapshot version.
    """

    def __init__(self, loaded: Loaded, engine: Engine, mode: str) -> None:
        self.loaded, self.engine, self.mode = loaded, engine, mode
        self.nodes = loaded.nodes
        # Any engine; in scheduler mode the fast Allocator (prepare, snapshot versions).
        self.allocator: Any = cast(Any, loaded.allocator(engine))
        self.next = 0
        self.work: list[int] = []
        self.fits = 0
        self.calls = 0
        self.first_call_s = 0.0
        self.claims = loaded.claims
        self.pod = 0
        self.first_fit: list[Any] | None = None
        self.prepared = self.allocator.prepare(self.claims) if mode == "scheduler" else None

    def _next_pod(self) -> None:
        """Commit this pod where it first fit, then a new pod from the same templates."""
        if self.first_fit is not None:
            allocated = [
                dataclasses.replace(c, status=dataclasses.replace(c.status, allocation=r))
                for c, r in zip(self.claims, self.first_fit, strict=True)
            ]
            snapshot = self.allocator.snapshot.add_allocated(allocated)
            self.allocator = type(self.allocator)(snapshot)
        self.pod += 1
        self.claims = [
            dataclasses.replace(
                c, metadata=dataclasses.replace(c.metadata, name=f"{c.metadata.name}-{self.pod}")
            )
            for c in self.loaded.claims
        ]
        self.first_fit = None
        self.prepared = self.allocator.prepare(self.claims)  # PreFilter: once per pod

    def _fresh(self) -> None:
        """A new allocator, primed on the first node (the pass then starts at the second)."""
        self.allocator = self.loaded.allocator(self.engine)
        start = time.perf_counter()
        self.allocate(self.nodes[0])
        self.first_call_s = time.perf_counter() - start
        self.next = 1 if len(self.nodes) > 1 else 0

    def setup(self) -> tuple[tuple[Node], dict[str, Any]]:
        if self.next == len(self.nodes):
            if self.mode == "cold":
                self._fresh()
            else:
                if self.mode == "scheduler":
                    self._next_pod()
                self.next = 0
        node = self.nodes[self.next]
        self.next += 1
        return (node,), {}

    def allocate(self, node: Node) -> None:
        if self.prepared is not None:  # Filter: the pod's prepared claims, node by node
            results = self.prepared.allocate(node)
        else:
            results = self.allocator.allocate(self.claims, node)
        if results is not None:
            self.fits += 1
            if self.first_fit is None:
                self.first_fit = results

    def teardown(self, node: Node) -> None:
        stats = (self.prepared or self.allocator).last_stats
        self.work.append(stats.search_steps)
        self.calls += 1

    def run(
        self, benchmark: BenchmarkFixture, *, budget_s: float = 3.0, max_passes: int = 2
    ) -> None:
        """Time single calls: as many as fit ``budget_s`` (at least 5; at most
        ``max_passes`` passes over the nodes, or 200 calls on small clusters). Warm runs
        first visit every node once, untimed."""
        self.allocate(self.nodes[0])  # process-wide one-time costs (imports) out of the way
        if self.mode in ("warm", "scheduler"):
            for node in self.nodes:
                self.allocate(node)
            if self.mode == "scheduler":
                self._next_pod()
        else:
            self._fresh()
        start = time.perf_counter()
        self.allocate(self.nodes[-1])
        per_call = time.perf_counter() - start
        if self.mode == "cold":
            self._fresh()
        self.fits, self.calls, self.work = 0, 0, []
        self.next = len(self.nodes) if self.mode == "scheduler" else self.next
        most = max(max_passes * len(self.nodes), 200)
        rounds = int(min(most, max(budget_s / max(per_call, 1e-6), 5)))
        benchmark.pedantic(
            self.allocate, setup=self.setup, teardown=self.teardown, rounds=rounds, iterations=1
        )
        work = sorted(self.work)
        benchmark.extra_info.update(
            {
                "engine": self.engine,
                "mode": self.mode,
                "nodes": len(self.nodes),
                "devices": self.loaded.n_devices,
                "claims": len(self.loaded.claims),
                "calls": self.calls,
                "fits": self.fits,
                "work_median": work[len(work) // 2],
                "work_max": work[-1],
            }
        )
        if self.mode == "cold":
            benchmark.extra_info["first_call_ms"] = round(self.first_call_s * 1e3, 3)
        if self.mode == "scheduler":
            benchmark.extra_info["pods"] = self.pod


@pytest.fixture
def per_node() -> Callable[[Loaded, Engine, str], PerNode]:
    return PerNode
