"""draspeed next to the upstream allocator on the same clusters (group ``vs-upstream``).

Each workload of issue #13 is generated once (``draspeed.generate``), decoded, and written
a second time as one case line of the upstream harness (``shared/oracle``,
``draspeed.testing.oracle_cases``): the same slices, classes, nodes, in-use devices (from
the generated allocated claims) and pending claim, every feature on as draspeed has them.

Upstream is ``oracle -bench-nodes -procs 1``: one scheduling cycle on one core, i.e. one
``NewAllocator`` for the pod's claims, then ``Allocate`` on every node; its median over
the cycles it times. draspeed runs in five modes, one benchmark each:

- ``cold``: a fresh ``Snapshot.build`` from the decoded objects plus the first
  ``Allocator.feasible_nodes`` over every node (what a capacity script, a freshly started
  scheduler or a benchmark pays for its first answer);
- ``first-loop``: a fresh ``Snapshot.build``, then kube-scheduler's loop for the first
  pod on it (``Allocator.prepare``, ``allocate(node)`` on every node): each node's answer
  is searched and written for the first time;
- ``warm``: the same ``feasible_nodes`` call again on that snapshot;
- ``new-pod-same-shape``: ``feasible_nodes`` for the claims of another pod made from the
  same template (renamed), on the warm snapshot;
- ``new-claim-shape``: ``feasible_nodes`` for a claim shape the snapshot has not seen, on
  the warm snapshot: the pod's claim with one more selector, a new expression each round
  (``device.driver != "shape-<k>.<workload>.example.com"``, true on every device, so the work is
  the pod's): its compilation, its evaluation over every device and the claim arrays
  are that round's; upstream answers the round-0 claim (its compiled selectors cached,
  as its scheduler's are);
- ``per-node-loop``: kube-scheduler's loop on the warm snapshot: ``Allocator.prepare``
  once, then ``allocate(node)`` on every node (one round is the whole pass).

Interleaved in one run: every benchmark runs upstream right before and right after its
own rounds, so both see the same machine; ``extra_info`` keeps both upstream medians,
their mean (``upstream_cycle_ms``), draspeed's median (``draspeed_ms``), the ratio
``upstream / draspeed``, the work counters of both (upstream's
``numAllocateOneInvocations`` summed over nodes; draspeed's ``Feasibility.work`` or the
loop's sum of ``last_stats``) and the suitable-node counts. Those must be equal: the test
fails when they are not (an outcome check; nothing here asserts a time). The problem
size (nodes, devices, allocated claims) and the 1-minute load average are recorded too.
On a disagreement the case line is copied to ``./vs-upstream-<workload>.jsonl``.

``python -m bench.vs_upstream vs.json`` prints the table of issue #13 from the JSON.

Sizes: ``DRASPEED_BENCH_VS_SCALE`` multiplies every node count (e.g. ``0.02`` for a quick
run); ``DRASPEED_BENCH_VS_BUDGET_S`` (default 2) is the time each measurement aims at
(each draspeed benchmark, each upstream run; at least 5 upstream cycles and 3 cold
rounds whatever the budget). The harness is ``$DRASPEED_ORACLE`` or
``../shared/oracle/oracle``; without it every benchmark here skips.

Run: ``pytest bench -k vs_upstream --benchmark-only --benchmark-json=vs.json``.
"""

from __future__ import annotations

import copy
import gc
import os
import shutil
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from bench.upstream_harness import UpstreamCycle, bench_nodes, missing_reason, oracle_path
from pytest_benchmark.fixture import BenchmarkFixture

from draspeed.api.loader import Objects, load
from draspeed.api.model import Node, ResourceClaim
from draspeed.engine.allocator import Allocator
from draspeed.engine.feasibility import Feasibility
from draspeed.engine.snapshot import Snapshot
from draspeed.errors import AllocationError
from draspeed.generate import Cluster, generate
from draspeed.generate.scenarios import claim_from_template
from draspeed.testing.oracle_cases import case_line, oracle_case

pytestmark = pytest.mark.benchmark(group="vs-upstream")

SCALE = float(os.environ.get("DRASPEED_BENCH_VS_SCALE", "1"))
BUDGET_S = float(os.environ.get("DRASPEED_BENCH_VS_BUDGET_S", "2"))
MODES = ("cold", "first-loop", "warm", "new-pod-same-shape", "new-claim-shape", "per-node-loop")


@dataclass(frozen=True)
class Workload:
    """One row of issue #13's table: a generated cluster and the template of the pod's
    one claim."""

    name: str
    kind: str
    full_nodes: int
    template: str
    description: str
    # A CEL selector added to the template's first request (the claim shapes of issue
    # #13's table use none beyond their classes').
    selector: str = ""
    # Options of the generator (its shape of cluster), as (name, value) pairs.
    options: tuple[tuple[str, Any], ...] = ()

    @property
    def nodes(self) -> int:
        return max(1, round(self.full_nodes * SCALE))


WORKLOADS = (
    Workload(
        "sp-one-device",
        "scheduler-perf",
        500,
        "test-claim-template",
        "scheduler_perf 500 nodes x 10 devices, 1 device",
    ),
    Workload(
        "sp-selector",
        "scheduler-perf",
        500,
        "test-claim-template-with-selector",
        "same + upstream's CEL selector",
    ),
    Workload(
        "sp-match",
        "scheduler-perf",
        500,
        "test-claim-template-match",
        "same, 2 devices + matchAttribute",
    ),
    Workload(
        "mig-1g10gb-100",
        "nvidia-mig",
        100,
        "mig-1g10gb",
        "100 dynamic-MIG nodes, 1g.10gb",
    ),
    Workload(
        "mig-1g10gb-1000",
        "nvidia-mig",
        1000,
        "mig-1g10gb",
        "1,000 dynamic-MIG nodes, 1g.10gb",
    ),
    Workload(
        "mig-3g40gb-1000",
        "nvidia-mig",
        1000,
        "mig-3g40gb",
        "1,000 dynamic-MIG nodes, 3g.40gb",
    ),
    Workload(
        "gpu-1gpu-5000",
        "nvidia-gpu",
        5000,
        "single-gpu",
        "5,000 x 8 H100, 1 GPU",
    ),
    # Devices reached over a fabric: slices that select their nodes (by hostname label
    # and by name), shared capacity.
    Workload(
        "net-fabric-1000",
        "network-attached",
        1000,
        "fabric-gpu",
        "1,000 nodes, network-attached GPUs (slices with node selectors)",
    ),
    # Slices that all select every node (by a label), devices that consume shared
    # counters: every node sees every pool (a thousand pools per node at 64 nodes).
    Workload(
        "sp-partitionable-64",
        "scheduler-perf",
        64,
        "test-claim-template",
        "scheduler_perf partitionable, 64 nodes: every slice on every node",
        options=(("shape", "partitionable"),),
    ),
    # Selectors that read what differs on every device: a map's names alone, and a value
    # of its own (each GPU's UUID).
    Workload(
        "gpu-names-2000",
        "nvidia-gpu",
        2000,
        "single-gpu",
        '2,000 x 8 H100, 1 GPU with `"productName" in device.attributes[...]`',
        '"productName" in device.attributes["gpu.nvidia.com"]',
    ),
    Workload(
        "gpu-uuid-2000",
        "nvidia-gpu",
        2000,
        "single-gpu",
        '2,000 x 8 H100, 1 GPU with `uuid.startsWith("GPU-")`',
        'device.attributes["gpu.nvidia.com"].uuid.startsWith("GPU-")',
    ),
)

# Workload by workload, its five modes together (one cluster alive at a time).
CASES = [(w, m) for w in WORKLOADS for m in MODES]


def _shape_selector(workload: Workload, k: int) -> str:
    """A selector no earlier claim had, true on every device (round k of new shapes of
    this workload: named after it, so no row finds another's compiled in the cache)."""
    return f'device.driver != "shape-{k}.{workload.name}.example.com"'


def _pod_claims(
    workload: Workload, cluster: Cluster, pod: int, shape: int | None = None
) -> list[ResourceClaim]:
    """The claim the claim controller makes for pod ``pod`` from the template (with the
    selector of new shape ``shape`` added, if given)."""
    doc = claim_from_template(cluster.template(workload.template), f"pod-{pod}-claim-0")
    added = [workload.selector] if workload.selector else []
    if shape is not None:
        added.append(_shape_selector(workload, shape))
    if added:
        doc = copy.deepcopy(doc)  # it shares parts with the cluster's template
        request = doc["spec"]["devices"]["requests"][0]["exactly"]
        selectors = request.setdefault("selectors", [])
        selectors.extend({"cel": {"expression": expression}} for expression in added)
    return load([doc], validate=False).claims


@dataclass(frozen=True)
class Outcome:
    """What must agree between the engines: work summed over nodes, nodes that fit,
    nodes with an error."""

    work: int
    suitable: int
    errors: int

    @classmethod
    def of(cls, answer: Feasibility) -> Outcome:
        counts = answer.counts()
        return cls(answer.work, counts["fits"], counts["error"] + counts["node-error"])

    @classmethod
    def upstream(cls, cycle: UpstreamCycle) -> Outcome:
        return cls(cycle.work, cycle.suitable, cycle.error_nodes)


class Prepared:
    """A workload decoded, written as a case line, answered once by each engine."""

    def __init__(self, workload: Workload, folder: Path, harness: Path) -> None:
        self.workload = workload
        self.harness = harness
        self.cluster = generate(workload.kind, workload.nodes, **dict(workload.options))
        self.objects: Objects = self.cluster.decoded()
        self.allocated = [c for c in self.objects.claims if c.status.allocation]
        self.claims = _pod_claims(workload, self.cluster, 0)
        self.case = self._write_case(folder / f"{workload.name}.jsonl", self.claims)
        # The round-0 claim of the new-claim-shape mode, for upstream.
        self.shape_case = self._write_case(
            folder / f"{workload.name}-new-shape.jsonl",
            _pod_claims(workload, self.cluster, 0, shape=0),
        )
        self.next_shape = 1
        # The first build ever on these objects: the cold rounds repeat it.
        gc.collect()
        start = time.perf_counter()
        self.snapshot = self.build()
        self.allocator = Allocator(self.snapshot)
        self.answer = self.allocator.feasible_nodes(self.claims)
        self.first_cold_s = time.perf_counter() - start
        self.outcome = Outcome.of(self.answer)
        self.probe = bench_nodes(harness, self.case, iters=3, warmup=1)
        self.shape_probe = bench_nodes(harness, self.shape_case, iters=3, warmup=1)
        self.next_pod = 1

    def _write_case(self, path: Path, claims: list[ResourceClaim]) -> Path:
        o = self.objects
        line = oracle_case(
            o.slices, o.classes, claims, nodes=o.nodes, allocated=self.allocated, case_id=path.stem
        )
        path.write_bytes(case_line(line))
        return path

    def build(self) -> Snapshot:
        o = self.objects
        return Snapshot.build(o.slices, o.classes, self.allocated, nodes=o.nodes)

    @property
    def n_devices(self) -> int:
        return sum(len(s.spec.devices) for s in self.objects.slices)

    def upstream(self, mode: str) -> UpstreamCycle:
        """One upstream run of about ``BUDGET_S`` (5 to 200 cycles) of the case that
        ``mode`` answers."""
        case, probe = self.case_of(mode)
        iters = min(200, max(5, round(BUDGET_S * 1e9 / max(probe.cycle_ns, 1))))
        return bench_nodes(self.harness, case, iters=iters, warmup=max(1, iters // 10))

    def case_of(self, mode: str) -> tuple[Path, UpstreamCycle]:
        """The case line ``mode`` answers and upstream's first answer to it."""
        if mode == "new-claim-shape":
            return self.shape_case, self.shape_probe
        return self.case, self.probe


_CURRENT: dict[str, Prepared] = {}


@pytest.fixture(scope="module")
def harness() -> Path:
    path = oracle_path()
    reason = missing_reason(path)
    if reason is not None:
        pytest.skip(reason)
    return path


@pytest.fixture(scope="module")
def case_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("vs-upstream")


@pytest.fixture
def prepared(
    request: pytest.FixtureRequest, harness: Path, case_folder: Path
) -> Iterator[Prepared]:
    workload: Workload = request.node.callspec.params["workload"]
    if workload.name not in _CURRENT:
        _CURRENT.clear()  # the previous workload's cluster and snapshots go first
        gc.collect()
        _CURRENT[workload.name] = Prepared(workload, case_folder, harness)
    yield _CURRENT[workload.name]
    if request.node.callspec.params["mode"] == MODES[-1]:
        _CURRENT.clear()


def _rounds(seconds_per_round: float, least: int, most: int) -> int:
    return int(min(most, max(least, BUDGET_S / max(seconds_per_round, 1e-7))))


def _timed_once(fn: Callable[[], Any]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def _run_mode(benchmark: BenchmarkFixture, p: Prepared, mode: str) -> Outcome:
    """Time ``mode``; the outcome of its last round."""
    seen: list[Outcome] = []
    claims, nodes, allocator = p.claims, p.objects.nodes, p.allocator

    if mode == "cold":

        def cold() -> None:
            seen.append(Outcome.of(Allocator(p.build()).feasible_nodes(claims)))

        def collect() -> None:  # the previous round's snapshot is not this round's work
            gc.collect()

        benchmark.pedantic(cold, setup=collect, rounds=_rounds(p.first_cold_s, 3, 50), iterations=1)
    elif mode == "first-loop":

        def first_loop() -> None:
            seen.append(_loop(Allocator(p.build()), claims, nodes))

        def collect_first() -> None:
            gc.collect()

        rounds = _rounds(_timed_once(first_loop), 3, 50)
        benchmark.pedantic(first_loop, setup=collect_first, rounds=rounds, iterations=1)
    elif mode == "warm":

        def warm() -> None:
            seen.append(Outcome.of(allocator.feasible_nodes(claims)))

        rounds = _rounds(_timed_once(warm), 5, 500)
        benchmark.pedantic(warm, rounds=rounds, iterations=1, warmup_rounds=1)
    elif mode == "new-pod-same-shape":

        def another_pod() -> tuple[tuple[list[ResourceClaim]], dict[str, Any]]:
            p.next_pod += 1
            return (_pod_claims(p.workload, p.cluster, p.next_pod),), {}

        def new_pod(pod_claims: list[ResourceClaim]) -> None:
            seen.append(Outcome.of(allocator.feasible_nodes(pod_claims)))

        rounds = _rounds(_timed_once(lambda: new_pod(*another_pod()[0])), 5, 200)
        benchmark.pedantic(new_pod, setup=another_pod, rounds=rounds, iterations=1)
    elif mode == "new-claim-shape":

        def another_shape() -> tuple[tuple[list[ResourceClaim]], dict[str, Any]]:
            p.next_shape += 1
            return (_pod_claims(p.workload, p.cluster, 0, shape=p.next_shape),), {}

        def new_shape(shape_claims: list[ResourceClaim]) -> None:
            seen.append(Outcome.of(allocator.feasible_nodes(shape_claims)))

        rounds = _rounds(_timed_once(lambda: new_shape(*another_shape()[0])), 5, 200)
        benchmark.pedantic(new_shape, setup=another_shape, rounds=rounds, iterations=1)
    else:

        def loop() -> None:
            seen.append(_loop(allocator, claims, nodes))

        rounds = _rounds(_timed_once(loop), 5, 200)
        benchmark.pedantic(loop, rounds=rounds, iterations=1, warmup_rounds=1)
    return seen[-1]


def _loop(allocator: Allocator, claims: list[ResourceClaim], nodes: list[Node]) -> Outcome:
    """kube-scheduler's loop for one pod: PreFilter, then Filter node by node."""
    pod = allocator.prepare(claims)
    work = suitable = errors = 0
    for node in nodes:
        try:
            if pod.allocate(node) is not None:
                suitable += 1
        except AllocationError:
            errors += 1
        work += pod.last_stats.search_steps
    return Outcome(work, suitable, errors)


@pytest.mark.parametrize(("workload", "mode"), CASES, ids=[f"{w.name}-{m}" for w, m in CASES])
def test_vs_upstream(
    benchmark: BenchmarkFixture, prepared: Prepared, workload: Workload, mode: str
) -> None:
    p = prepared
    nodes = len(p.objects.nodes)
    load_1m = os.getloadavg()[0]
    before = p.upstream(mode)
    outcome = _run_mode(benchmark, p, mode)
    after = p.upstream(mode)

    cycle_ns = (before.cycle_ns + after.cycle_ns) / 2
    info: dict[str, Any] = {
        "workload": workload.name,
        "description": workload.description,
        "mode": mode,
        "nodes": nodes,
        "devices": p.n_devices,
        "allocated_claims": len(p.allocated),
        "scale": SCALE,
        "upstream_cycle_ms": round(cycle_ns / 1e6, 4),
        "upstream_cycle_ms_runs": [round(before.cycle_ns / 1e6, 4), round(after.cycle_ns / 1e6, 4)],
        "upstream_per_node_us": round(cycle_ns / nodes / 1e3, 3),
        "upstream_iters": [before.iters, after.iters],
        "work_upstream": before.work,
        "work_draspeed": outcome.work,
        "suitable_upstream": before.suitable,
        "suitable_draspeed": outcome.suitable,
        "loadavg_1m": round(load_1m, 2),
    }
    if mode == "cold":
        info["first_cold_ms"] = round(p.first_cold_s * 1e3, 3)
    stats = getattr(benchmark, "stats", None)
    if stats is not None:  # None with --benchmark-disable: no timings to compare
        median_s = stats.stats.median
        info["draspeed_ms"] = round(median_s * 1e3, 4)
        info["ratio"] = round(cycle_ns / 1e9 / median_s, 3)
        if mode in ("first-loop", "per-node-loop"):
            info["draspeed_per_node_us"] = round(median_s / nodes * 1e6, 3)
    benchmark.extra_info.update(info)

    # Outcome checks: both engines did the same work and found the same nodes.
    assert len(p.answer) == nodes, "draspeed asked nodes that are not the case's nodes"
    case, probe = p.case_of(mode)
    upstream_seen = {Outcome.upstream(u) for u in (probe, before, after)}
    if upstream_seen != {outcome} or (mode != "new-claim-shape" and p.outcome != outcome):
        kept = _keep_case(p, case)
        pytest.fail(
            f"{workload.name} {mode}: upstream {', '.join(sorted(map(str, upstream_seen)))}; "
            f"draspeed {outcome} (first answer: {p.outcome}); the case line is in {kept} "
            f"(replay: oracle -bench-nodes < {kept.name})"
        )


def _keep_case(p: Prepared, case: Path) -> Path:
    """The case line copied where it outlives pytest's temporary folders."""
    kept = Path.cwd() / f"vs-upstream-{case.stem}.jsonl"
    shutil.copyfile(case, kept)
    return kept
