"""Deadlines and concurrency.

- A search with a deadline ends with ``AllocationTimeout`` soon after it, on an
  input whose search is exponential (20 identical devices; a claim for 10 of them
  plus 10 more that a constraint makes impossible: every one of the C(20, 10)
  choices for the first request is tried before the answer is "no").
- A cold first call (fresh process, nothing warmed) also ends soon after its
  deadline: the CEL parser's tables are precomputed, so compiling the first selector
  costs ~1 ms. Importing the CEL package inside the first call (~70 ms) is still an
  expected failure, until the snapshot imports it when it is built.
- Many threads calling ``allocate`` on one allocator (one snapshot, cold caches) get
  the answers serial calls get; the compiled search releases the GIL, so another
  thread runs while it searches.

Under a free-threaded CPython (``python3.14t``) the same tests run without a GIL.
"""

from __future__ import annotations

import random
import subprocess
import sys
import textwrap
import threading
import time
from typing import Any

import pytest

from draspeed.api.loader import load
from draspeed.cluster import Engine, make_allocator
from draspeed.errors import AllocationError, AllocationTimeout
from draspeed.features import Features
from draspeed.testing.engines import Inputs, results_json

# The search looks at the clock every 64 steps, so it stops well within a millisecond
# of its deadline (bench/ measures the overshoot). A loaded machine may deschedule the
# test for a while, so the assertion only proves that the search stopped: run to its
# end, it would take minutes.
SLACK = 0.25
BUDGET = 0.05


def _run_together(threads: list[threading.Thread]) -> None:
    """Start ``threads``, wait for them all (5 minutes at most), and check none hangs."""
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not any(t.is_alive() for t in threads)


def pathological_yaml(devices: int = 20, first: int = 10, second: int = 10) -> str:
    items = "\n".join(
        f"  - name: gpu-{i}\n"
        f"    attributes:\n"
        f"      model: {{string: a100}}\n"
        f"      pcieRoot: {{string: pci-{i}}}"
        for i in range(devices)
    )
    return f"""\
apiVersion: v1
kind: Node
metadata: {{name: node-1}}
---
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {{name: gpu}}
spec:
  selectors:
  - cel: {{expression: 'device.driver == "gpu.example.com"'}}
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {{name: node-1-gpus}}
spec:
  driver: gpu.example.com
  nodeName: node-1
  pool: {{name: node-1, generation: 1, resourceSliceCount: 1}}
  devices:
{items}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {{name: two-tens, namespace: default}}
spec:
  devices:
    requests:
    - {{name: first, exactly: {{deviceClassName: gpu, count: {first}}}}}
    - {{name: second, exactly: {{deviceClassName: gpu, count: {second}}}}}
    constraints:
    # Every device has its own PCIe root: "second" can never get two devices.
    - {{matchAttribute: gpu.example.com/pcieRoot, requests: [second]}}
"""


def _inputs(text: str) -> Inputs:
    return Inputs.from_objects(load(text), "node-1", Features())


def _overshoot(engine: Engine, inputs: Inputs, budget: float) -> float:
    allocator = make_allocator(
        engine, inputs.slices, inputs.classes, inputs.allocated, inputs.features
    )
    # Warm-up: pre-flight (CEL, node view) runs, the search stops at once.
    with pytest.raises(AllocationTimeout):
        allocator.allocate(inputs.claims, inputs.node, deadline=time.monotonic())
    deadline = time.monotonic() + budget
    with pytest.raises(AllocationTimeout, match=r"^filter operation aborted: context deadline"):
        allocator.allocate(inputs.claims, inputs.node, deadline=deadline)
    assert allocator.last_stats.search_steps > 0
    return time.monotonic() - deadline


@pytest.mark.parametrize("engine", ["fast", "reference"])
def test_deadline_ends_the_search(engine: Engine) -> None:
    inputs = _inputs(pathological_yaml())
    late = sorted(_overshoot(engine, inputs, BUDGET) for _ in range(5))
    # The median guards against a busy machine descheduling the test for a moment.
    assert late[2] <= SLACK, f"overshoot per run (s): {late}"
    assert late[-1] <= 4 * SLACK, f"overshoot per run (s): {late}"


def test_small_version_finishes_without_deadline() -> None:
    """The same shape, small enough to finish: both engines say "does not fit"."""
    inputs = _inputs(pathological_yaml(devices=8, first=4, second=2))
    for engine in ("fast", "reference"):
        allocator = make_allocator(
            engine, inputs.slices, inputs.classes, inputs.allocated, inputs.features
        )
        assert allocator.allocate(inputs.claims, inputs.node) is None


COLD_START = """
import sys, time
sys.path[:0] = {paths!r}
from draspeed.errors import AllocationTimeout
from draspeed.features import Features
from draspeed.cluster import make_allocator
from draspeed.api.loader import load
if {preimport!r}:
    import draspeed.cel
objects = load({text!r})
allocator = make_allocator({engine!r}, objects.slices, objects.classes, [], Features())
cold = "draspeed.cel" not in sys.modules
deadline = time.monotonic() + {budget!r}
try:
    allocator.allocate(objects.claims, objects.nodes[0], deadline=deadline)
except AllocationTimeout:
    pass
print(cold, time.monotonic() - deadline)
"""


def _cold_call_overshoot(engine: Engine, preimport: bool) -> float:
    """A fresh interpreter: load, build the allocator, one allocate with the budget.

    Building the fast allocator imports the CEL layer, so even without ``preimport``
    the allocate call starts with it imported (checked here)."""
    source = COLD_START.format(
        paths=[p for p in sys.path if p],
        text=pathological_yaml(),
        engine=engine,
        budget=BUDGET,
        preimport=preimport,
    )
    run = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(source)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    cold, late = run.stdout.strip().splitlines()[-1].split()
    assert cold == "False"  # the CEL layer was imported before the deadline started
    return float(late)


@pytest.mark.parametrize("engine", ["fast"])
def test_deadline_covers_a_cold_first_call(engine: Engine) -> None:
    """Nothing warmed but the imports: the first compilation of the class's selector
    (the CEL parser's tables are precomputed) and its evaluation fit the budget."""
    late = _cold_call_overshoot(engine, preimport=True)
    assert late <= SLACK, f"cold first call overshoots its deadline by {late:.3f} s"


@pytest.mark.parametrize("engine", ["fast"])
def test_deadline_covers_the_first_call_of_a_process(engine: Engine) -> None:
    """The snapshot imports the CEL layer when it is built, so the first call of a
    process spends its budget on compiling and evaluating, not importing."""
    late = _cold_call_overshoot(engine, preimport=False)
    assert late <= SLACK, f"first call of a process overshoots its deadline by {late:.3f} s"


def test_selector_compilation_and_evaluation_honour_a_deadline() -> None:
    """The CEL layer's hooks: a passed deadline stops compiling and evaluating."""
    from draspeed.cel import DeviceTable, check_deadline, compile_selector

    DEADLINE_EXCEEDED = AllocationTimeout.TEXT

    check_deadline(None)
    check_deadline(time.monotonic() + 60)
    past = time.monotonic() - 1
    with pytest.raises(AllocationTimeout, match=f"^{DEADLINE_EXCEEDED}$"):
        check_deadline(past)
    with pytest.raises(AllocationTimeout):
        compile_selector('device.driver == "deadline.example.com"', past)
    selector = compile_selector('device.driver == "deadline.example.com"')
    assert compile_selector(selector.expression, time.monotonic() + 60) is selector
    objects = load(pathological_yaml())
    table = DeviceTable.build([(s.spec.driver, d) for s in objects.slices for d in s.spec.devices])
    match, error, _ = selector.evaluate(table, deadline=time.monotonic() + 60)
    assert not match.any() and not error.any()
    # Rows that cannot be lowered to numpy run one by one, looking at the clock.
    rows = compile_selector(
        '["pci-1"].exists(p, device.attributes["gpu.example.com"].pcieRoot.startsWith(p))'
    )
    with pytest.raises(AllocationTimeout):
        rows.evaluate(table, deadline=past)
    with pytest.raises(AllocationTimeout):
        rows.evaluate_rows(table, deadline=past)
    assert rows.evaluate(table)[0].sum() == 11  # pci-1, pci-10 ... pci-19


# --------------------------------------------------------------------------------------
# Threads
# --------------------------------------------------------------------------------------


def _threads_cluster() -> str:
    """Four nodes of eight GPUs (two NUMA nodes, partitionable memory on node-1, one
    shareable GPU per node) and claims of many shapes."""
    docs = []
    for n in range(1, 5):
        docs.append(
            f"apiVersion: v1\nkind: Node\nmetadata: {{name: node-{n}, labels: "
            f"{{rack: r{n % 2}}}}}\n"
        )
        devices = []
        for i in range(8):
            fields = [
                f"  - name: gpu-{i}",
                "    attributes:",
                f"      model: {{string: {'a100' if i % 3 else 'h100'}}}",
                f"      numa: {{int: {i // 4}}}",
                "    capacity:",
                "      memory: {value: 40Gi}",
            ]
            if i == 7:
                fields.append("    allowMultipleAllocations: true")
            if n == 1 and i < 4:
                fields += [
                    "    consumesCounters:",
                    "    - counterSet: mem",
                    "      counters: {gb: {value: 20Gi}}",
                ]
            devices.append("\n".join(fields))
        count = 2 if n == 1 else 1
        docs.append(
            f"apiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata: "
            f"{{name: node-{n}-gpus}}\nspec:\n  driver: gpu.example.com\n  nodeName: node-{n}\n"
            f"  pool: {{name: node-{n}, generation: 1, resourceSliceCount: {count}}}\n"
            f"  devices:\n" + "\n".join(devices) + "\n"
        )
        if n == 1:
            docs.append(
                "apiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata: "
                "{name: node-1-counters}\nspec:\n  driver: gpu.example.com\n  nodeName: node-1\n"
                "  pool: {name: node-1, generation: 1, resourceSliceCount: 2}\n"
                "  sharedCounters:\n  - name: mem\n    counters: {gb: {value: 50Gi}}\n"
            )
    docs.append(
        "apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata: {name: gpu}\nspec:\n"
        "  selectors:\n  - cel: {expression: 'device.driver == \"gpu.example.com\"'}\n"
    )
    return "---\n".join(docs)


CLAIM_SHAPES: list[dict[str, Any]] = [
    {"requests": [{"name": "one", "exactly": {"deviceClassName": "gpu"}}]},
    {
        "requests": [{"name": "pair", "exactly": {"deviceClassName": "gpu", "count": 2}}],
        "constraints": [{"matchAttribute": "gpu.example.com/numa"}],
    },
    {
        "requests": [
            {
                "name": "h",
                "exactly": {
                    "deviceClassName": "gpu",
                    "count": 3,
                    "selectors": [
                        {
                            "cel": {
                                "expression": 'device.attributes["gpu.example.com"].model == "h100"'
                            }
                        }
                    ],
                },
            }
        ]
    },
    {"requests": [{"name": "all", "exactly": {"deviceClassName": "gpu", "allocationMode": "All"}}]},
    {
        "requests": [
            {
                "name": "share",
                "exactly": {"deviceClassName": "gpu", "capacity": {"requests": {"memory": "10Gi"}}},
            }
        ]
    },
    {
        "requests": [
            {
                "name": "pick",
                "firstAvailable": [
                    {"name": "big", "deviceClassName": "gpu", "count": 9},
                    {"name": "small", "deviceClassName": "gpu", "count": 3},
                ],
            }
        ]
    },
    {
        "requests": [{"name": "four", "exactly": {"deviceClassName": "gpu", "count": 4}}],
        "constraints": [{"distinctAttribute": "gpu.example.com/model"}],
    },
    {
        "requests": [
            {
                "name": "bad",
                "exactly": {
                    "deviceClassName": "gpu",
                    "selectors": [
                        {"cel": {"expression": 'device.attributes["gpu.example.com"].missing'}}
                    ],
                },
            }
        ]
    },
]


def _queries() -> tuple[Inputs, list[tuple[int, str]]]:
    claims = []
    for i, spec in enumerate(CLAIM_SHAPES):
        claims.append(
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceClaim",
                "metadata": {"name": f"claim-{i}", "namespace": "default"},
                "spec": {"devices": spec},
            }
        )
    objects = load(_threads_cluster(), claims)
    inputs = Inputs.from_objects(objects, "node-1", Features())
    queries = [(i, f"node-{n}") for i in range(len(claims)) for n in range(1, 5)]
    return inputs, queries


def _answer(allocator: Any, inputs: Inputs, nodes: dict[str, Any], query: tuple[int, str]) -> Any:
    claim, node = query
    try:
        results = allocator.allocate([inputs.claims[claim]], nodes[node])
    except AllocationError as exc:
        return (type(exc).__name__, str(exc), allocator.last_stats.search_steps)
    work = allocator.last_stats.search_steps  # this thread's call's, whatever others do
    return (None if results is None else results_json(results), work)


def test_threads_agree_with_serial_calls() -> None:
    inputs, queries = _queries()
    objects_nodes = {n.name: n for n in load(_threads_cluster()).nodes}

    def fresh() -> Any:
        return make_allocator(
            "fast", inputs.slices, inputs.classes, inputs.allocated, inputs.features
        )

    serial = fresh()
    expected = {q: _answer(serial, inputs, objects_nodes, q) for q in queries}
    assert any(isinstance(v[0], list) for v in expected.values())
    assert any(v[0] is None for v in expected.values())
    assert any(len(v) == 3 for v in expected.values())

    shared = fresh()  # cold: the threads fill its per-node and selector caches together
    errors: list[str] = []
    start = threading.Barrier(8)

    def worker(seed: int) -> None:
        order = queries * 6
        random.Random(seed).shuffle(order)
        start.wait()
        for q in order:
            got = _answer(shared, inputs, objects_nodes, q)
            if got != expected[q]:
                errors.append(f"{q}: {got!r} != {expected[q]!r}")

    _run_together([threading.Thread(target=worker, args=(seed,)) for seed in range(8)])
    assert errors == []


def test_search_releases_the_gil() -> None:
    """While one thread searches (until its deadline), another thread keeps running."""
    # C(30, 15) combinations under an unsatisfiable constraint: far beyond the deadline on
    # any machine, so the search is still running while the main thread counts.
    inputs = _inputs(pathological_yaml(devices=30, first=15, second=15))
    allocator = make_allocator(
        "fast", inputs.slices, inputs.classes, inputs.allocated, inputs.features
    )
    with pytest.raises(AllocationTimeout):  # warm-up: pre-flight outside the measurement
        allocator.allocate(inputs.claims, inputs.node, deadline=time.monotonic())
    done = threading.Event()
    outcome: list[BaseException] = []

    def search() -> None:
        try:
            allocator.allocate(inputs.claims, inputs.node, deadline=time.monotonic() + 0.4)
        except BaseException as exc:  # handed to the main thread
            outcome.append(exc)
        finally:
            done.set()

    thread = threading.Thread(target=search)
    ticks = 0
    thread.start()
    time.sleep(0.05)  # let the search enter the compiled core
    began = time.monotonic()
    while not done.is_set():
        ticks += 1
    elapsed = time.monotonic() - began
    thread.join()
    assert outcome and isinstance(outcome[0], AllocationTimeout)
    # Holding the GIL for the search would leave this loop a handful of ticks per switch.
    assert elapsed > 0.2 and ticks > 10_000, (elapsed, ticks)


@pytest.mark.parametrize("pods", ["one pod", "a pod per thread"])
def test_threads_asking_prepared_pods_get_each_nodes_answer_and_work(pods: str) -> None:
    """kube-scheduler runs one pod's Filter on many nodes at once: threads asking one
    prepared pod (or each their own) get each node's answer and its own work counter,
    as a fresh snapshot's feasible_nodes gives them."""
    from draspeed.engine.allocator import Allocator
    from draspeed.engine.snapshot import Snapshot
    from draspeed.generate import generate
    from draspeed.generate.scenarios import claim_from_template

    cluster = generate("nvidia-mig", 120, seed=5, allocated=0.3)
    objs = cluster.decoded()
    allocated = [c for c in objs.claims if c.status.allocation]
    name = cluster.templates[0]["metadata"]["name"]
    claims = load([claim_from_template(cluster.template(name), "pod")]).claims

    def snapshot() -> Snapshot:
        return Snapshot.build(objs.slices, objs.classes, allocated, nodes=objs.nodes)

    expected = {
        o.node: (None if o.results is None else results_json(o.results), o.work)
        for o in Allocator(snapshot()).feasible_nodes(claims)
    }
    assert sum(v[0] is not None for v in expected.values()) > 60
    for _ in range(3):
        allocator = Allocator(snapshot())
        shared = allocator.prepare(claims)
        errors: list[str] = []
        start = threading.Barrier(4)

        def worker(
            k: int,
            shared: Any = shared,
            allocator: Any = allocator,
            start: threading.Barrier = start,
            errors: list[str] = errors,
        ) -> None:
            pod = shared if pods == "one pod" else allocator.prepare(claims)
            nodes = objs.nodes[k * 31 :] + objs.nodes[: k * 31]
            start.wait()
            for node in nodes:
                results = pod.allocate(node)
                got = (
                    None if results is None else results_json(results),
                    pod.last_stats.search_steps,
                )
                if got != expected[node.name]:
                    errors.append(f"{node.name}: {got[1]} != {expected[node.name][1]}")
                if allocator.last_stats != pod.last_stats:
                    errors.append(f"{node.name}: the allocator's stats are another call's")

        _run_together([threading.Thread(target=worker, args=(k,)) for k in range(4)])
        assert errors == []


def test_a_per_thread_value_is_each_threads_own_and_a_new_thread_starts_without_one() -> None:
    """``last_stats`` is kept per thread by ``PerThread``: the first thread to set a
    value keeps it in a field, the others in a ``threading.local``. A thread that set
    nothing reads the default, even one started after the first setter ended (a
    thread's ident can be reused, its thread-state id cannot)."""
    from draspeed.engine._prepared import PerThread

    value = PerThread("none")
    seen: dict[str, Any] = {}

    def one_thread(name: str) -> None:
        seen[f"{name} before"] = value.get()
        value.set(name)
        seen[f"{name} after"] = value.get()

    for name in ("first", "second", "third"):  # one after the other: the first owns it
        _run_together([threading.Thread(target=one_thread, args=(name,))])
    assert seen == {
        "first before": "none",
        "first after": "first",
        "second before": "none",
        "second after": "second",
        "third before": "none",
        "third after": "third",
    }
    assert value.get() == "none"  # this thread set nothing
    value.set("main")
    assert value.get() == "main"


@pytest.mark.parametrize("deadline", [0.0, -1.0, 1e-300, "past"])
def test_a_passed_deadline_is_passed_for_every_call(deadline: Any) -> None:
    """``allocate`` raises AllocationTimeout for a deadline already passed (0 and below
    included); ``feasible_nodes`` (cold or warm, prepared or not) reports every node
    timed out. Before, feasible_nodes searched without a bound when the deadline was 0
    or below (the compiled core's "none")."""
    from draspeed import Allocator, Snapshot
    from draspeed.generate import generate

    if deadline == "past":
        deadline = time.monotonic() - 1
    cluster = generate("nvidia-gpu", 3)
    objects = cluster.decoded()
    claims = load([cluster.claim(cluster.templates[0]["metadata"]["name"], "c")]).claims
    allocator = Allocator(Snapshot.build(objects.slices, objects.classes, [], nodes=objects.nodes))
    node = objects.nodes[0].name
    for warm in (False, True):
        with pytest.raises(AllocationTimeout):
            allocator.allocate(claims, node, deadline=deadline)
        assert allocator.feasible_nodes(claims, deadline=deadline).counts()["timeout"] == 3
        prepared = allocator.prepare(claims)
        assert prepared.feasible_nodes(deadline=deadline).counts()["timeout"] == 3
        if not warm:
            assert allocator.feasible_nodes(claims).counts()["fits"] == 3  # now warm
