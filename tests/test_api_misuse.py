"""Wrong arguments to the public entry points: a TypeError or ValueError naming the
argument (issue 16, "API misuse"), never an AttributeError or KeyError from inside,
and never a string taken as a sequence of its characters."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from draspeed import analysis, binding, load
from draspeed.analysis import plots
from draspeed.api.loader import Objects
from draspeed.api.model import AllocationResult, DeviceClass, DeviceClassSpec, Node, ObjectMeta
from draspeed.cluster import Cluster
from draspeed.engine.allocator import Allocator
from draspeed.engine.snapshot import Snapshot
from draspeed.errors import AllocationTimeout, InputError
from draspeed.explain.explainer import explain
from draspeed.features import Features
from draspeed.quantity import Quantity
from draspeed.testing.documents import claim_with_parameters

CLUSTER = Path(__file__).parent / "bad_input" / "duplicate-sources.yaml"


@pytest.fixture(scope="module")
def objects() -> Objects:
    return load(CLUSTER)


@pytest.fixture(scope="module")
def snapshot(objects: Objects) -> Snapshot:
    return Snapshot.build(objects.slices, objects.classes, nodes=objects.nodes)


def _result(o: Objects, s: Snapshot) -> AllocationResult:
    results = Allocator(s).allocate(o.claims, "node-1")
    assert results
    return results[0]


def _other_gpu_class() -> DeviceClass:
    return DeviceClass(metadata=ObjectMeta(name="gpu"), spec=DeviceClassSpec())


# (call, exception type, message): the message names the argument.
MISUSES: dict[str, tuple[Callable[[Objects, Snapshot], Any], type[Exception], str]] = {
    "build-slices-str": (
        lambda o, s: Snapshot.build("x", o.classes),  # type: ignore[arg-type]
        TypeError,
        "slices: expected a ResourceSlice (a sequence of them), got str",
    ),
    "build-slices-none-item": (
        lambda o, s: Snapshot.build([None], o.classes),  # type: ignore[list-item]
        TypeError,
        "slices[0]: expected a ResourceSlice, got None",
    ),
    "build-classes-mapping": (
        lambda o, s: Snapshot.build(o.slices, {"gpu": 1}),  # type: ignore[arg-type]
        TypeError,
        "classes: expected a DeviceClass (a sequence of them), got dict",
    ),
    "build-nodes-int-item": (
        lambda o, s: Snapshot.build(o.slices, o.classes, nodes=[42]),  # type: ignore[list-item]
        TypeError,
        "nodes[0]: expected a Node or a name, got int",
    ),
    "build-features": (
        lambda o, s: Snapshot.build(o.slices, o.classes, features="all"),  # type: ignore[arg-type]
        TypeError,
        "features: expected Features, got str",
    ),
    "build-differing-classes": (
        lambda o, s: Snapshot.build(o.slices, [*o.classes, _other_gpu_class()]),
        ValueError,
        "classes[0] and classes[1]: two different DeviceClasses named 'gpu' (one object "
        "per name, as the API server keeps them)",
    ),
    "build-copy-str": (
        lambda o, s: Snapshot.build(o.slices, o.classes, copy="no"),  # type: ignore[arg-type]
        TypeError,
        "copy: expected True or False, got str",
    ),
    "allocator-snapshot": (
        lambda o, s: Allocator(None),  # type: ignore[arg-type]
        TypeError,
        "snapshot: expected a Snapshot, got None",
    ),
    "allocator-share-id": (
        lambda o, s: Allocator(s, share_id="x"),  # type: ignore[arg-type]
        TypeError,
        "share_id: expected a function, got str",
    ),
    "allocate-node-int": (
        lambda o, s: Allocator(s).allocate(o.claims, 42),
        TypeError,
        "node: expected a Node, a node name, or a Node's mapping or client model, got int",
    ),
    "allocate-node-none": (
        lambda o, s: Allocator(s).allocate(o.claims, None),
        TypeError,
        "node: expected a Node, a node name, or a Node's mapping or client model, got None",
    ),
    "allocate-deadline-nan": (
        lambda o, s: Allocator(s).allocate(o.claims, "node-1", deadline=math.nan),
        ValueError,
        "deadline: must not be NaN",
    ),
    "allocate-deadline-str": (
        lambda o, s: Allocator(s).allocate(o.claims, "node-1", deadline="soon"),  # type: ignore[arg-type]
        TypeError,
        "deadline: expected a time.monotonic() value in seconds or None, got str",
    ),
    "allocate-claims-str": (
        lambda o, s: Allocator(s).allocate("claims", "node-1"),
        TypeError,
        "claims: expected a list of ResourceClaims, got str",
    ),
    "feasible-nodes-claims-none": (
        lambda o, s: Allocator(s).feasible_nodes(None),  # type: ignore[arg-type]
        TypeError,
        "claims: expected a list of ResourceClaims, got None",
    ),
    "prepare-none-item": (
        lambda o, s: Allocator(s).prepare([None]),
        TypeError,
        "claims[0]: expected a ResourceClaim (or its mapping or client model), got None",
    ),
    "feasible-nodes-none-item": (
        lambda o, s: Allocator(s).feasible_nodes(o.claims, [None]),
        TypeError,
        "nodes[0]: expected a Node, a node name, or a Node's mapping or client model, got None",
    ),
    "feasible-nodes-int-item": (
        lambda o, s: Allocator(s).feasible_nodes(o.claims, [42]),
        TypeError,
        "nodes[0]: expected a Node, a node name, or a Node's mapping or client model, got int",
    ),
    "feasible-nodes-int": (
        lambda o, s: Allocator(s).feasible_nodes(o.claims, 42),  # type: ignore[arg-type]
        TypeError,
        "nodes: expected Nodes or node names, got int",
    ),
    "update-slices-str": (
        lambda o, s: s.update_slices("x"),  # type: ignore[arg-type]
        TypeError,
        "added: expected a ResourceSlice (a sequence of them), got str",
    ),
    "update-slices-removed-int": (
        lambda o, s: s.update_slices(removed=[42]),  # type: ignore[list-item]
        TypeError,
        "removed[0]: expected a ResourceSlice or a name, got int",
    ),
    "add-allocated-int-item": (
        lambda o, s: s.add_allocated([1]),  # type: ignore[list-item]
        TypeError,
        "claims[0]: expected a ResourceClaim, got int",
    ),
    "add-allocated-pending": (
        lambda o, s: s.add_allocated(o.claims),
        ValueError,
        "claim default/claim-0 has no status.allocation to add",
    ),
    "remove-allocated-int": (
        lambda o, s: s.remove_allocated(42),  # type: ignore[arg-type]
        TypeError,
        "claims: expected a ResourceClaim or names (a sequence of them), got int",
    ),
    "update-classes-str": (
        lambda o, s: s.update_classes("gpu"),  # type: ignore[arg-type]
        TypeError,
        "added: expected a DeviceClass (a sequence of them), got str",
    ),
    "update-nodes-none-item": (
        lambda o, s: s.update_nodes([None]),  # type: ignore[list-item]
        TypeError,
        "added[0]: expected a Node, got None",
    ),
    "feasibility-result-none": (
        lambda o, s: Allocator(s).feasible_nodes(o.claims).result(None),  # type: ignore[arg-type]
        TypeError,
        "node: expected a Node or a node name, got None",
    ),
    "explain-snapshot": (
        lambda o, s: explain(None, o.claims, "node-1"),  # type: ignore[arg-type]
        TypeError,
        "snapshot: expected a Snapshot, got None",
    ),
    "explain-node-int": (
        lambda o, s: explain(s, o.claims, 42),
        TypeError,
        "node: expected a Node, a node name, or a Node's mapping or client model, got int",
    ),
    "explain-timeout-negative": (
        lambda o, s: explain(s, o.claims, "node-1", timeout=-1),
        ValueError,
        "timeout: expected seconds (0 or None: no bound), got -1",
    ),
    "load-timeout-nan": (
        lambda o, s: load("http://127.0.0.1:9/x", timeout=math.nan),
        ValueError,
        "timeout: expected seconds (0 or None: no bound), got nan",
    ),
    "load-timeout-text": (
        lambda o, s: load("http://127.0.0.1:9/x", timeout="5s"),  # type: ignore[arg-type]
        TypeError,
        "timeout: expected seconds or None, got str",
    ),
    "cluster-feasible-engine": (
        lambda o, s: Cluster.from_objects(o).feasible_nodes(engine="x"),  # type: ignore[arg-type]
        ValueError,
        "unknown engine 'x'; expected one of fast, reference",
    ),
    "cluster-feasible-timeout-negative": (
        lambda o, s: Cluster.from_objects(o).feasible_nodes(timeout=-1),
        ValueError,
        "timeout: expected seconds (0 or None: no bound), got -1",
    ),
    "cluster-feasible-timeout-text": (
        lambda o, s: Cluster.from_objects(o).feasible_nodes(timeout="1s"),  # type: ignore[arg-type]
        TypeError,
        "timeout: expected seconds or None, got str",
    ),
    "cluster-feasible-nodes-int": (
        lambda o, s: Cluster.from_objects(o).feasible_nodes(nodes=5),  # type: ignore[arg-type]
        TypeError,
        "nodes: expected Nodes or names (a sequence of them), got int",
    ),
    "features-parse-none": (
        lambda o, s: Features.parse(None),  # type: ignore[arg-type]
        TypeError,
        "gates: expected a --feature-gates string, got None",
    ),
    "cluster-from-list": (
        lambda o, s: Cluster.from_objects([]),  # type: ignore[arg-type]
        TypeError,
        "objects: expected Objects (what draspeed.load returns), got list",
    ),
    "objects-add-int": (
        lambda o, s: Objects().add(5),  # type: ignore[arg-type]
        TypeError,
        "obj: expected a decoded object (draspeed.load), got int",
    ),
    "objects-extend-list": (
        lambda o, s: Objects().extend([]),  # type: ignore[arg-type]
        TypeError,
        "other: expected Objects (draspeed.load), got list",
    ),
    "feasibility-outcome-far": (
        lambda o, s: Allocator(s).feasible_nodes(o.claims).outcome(10**6),
        IndexError,
        "i: node index 1000000 out of range for 1 nodes",
    ),
    "feasibility-outcome-text": (
        lambda o, s: Allocator(s).feasible_nodes(o.claims).outcome("x"),  # type: ignore[arg-type]
        TypeError,
        "i: expected a node's index, got str",
    ),
    "features-truthy-text": (
        lambda o, s: Features(admin_access="no"),  # type: ignore[arg-type]
        TypeError,
        "admin_access: expected True or False, got str",
    ),
    "quantity-from-float": (
        lambda o, s: Quantity.from_int(1.5),  # type: ignore[arg-type]
        TypeError,
        "value: expected an int, got float",
    ),
    "explain-features": (
        lambda o, s: explain(s, o.claims, "node-1", features=1),  # type: ignore[arg-type]
        TypeError,
        "features: expected Features, got int",
    ),
    # draspeed.analysis
    "fit-snapshot-none": (
        lambda o, s: analysis.fit(None, o.claims),  # type: ignore[arg-type]
        TypeError,
        "snapshot: expected a Snapshot, got None",
    ),
    "fit-templates-name": (
        lambda o, s: analysis.fit(s, "single-gpu"),  # type: ignore[arg-type]
        TypeError,
        "templates: expected a ResourceClaimTemplate, ResourceClaim, PodShape or mapping "
        "(a sequence of them), got str",
    ),
    "fit-templates-none-item": (
        lambda o, s: analysis.fit(s, [None]),  # type: ignore[list-item]
        TypeError,
        "templates[0]: expected a ResourceClaimTemplate, ResourceClaim, PodShape or mapping, "
        "got None",
    ),
    "fit-strategy-int": (
        lambda o, s: analysis.fit(s, o.claims, 5),  # type: ignore[arg-type]
        TypeError,
        "strategy: expected a Strategy or its name, got int",
    ),
    "fit-ratios-text": (
        lambda o, s: analysis.fit(s, o.claims, ratios="ab"),  # type: ignore[arg-type]
        TypeError,
        "ratios: expected weights by shape name (a mapping) or by position (a sequence), got str",
    ),
    "fit-ratios-nan": (
        lambda o, s: analysis.fit(s, o.claims, ratios=[math.nan]),
        ValueError,
        "ratios[0]: expected a finite number >= 0, got nan",
    ),
    "fit-nodes-none-item": (
        lambda o, s: analysis.fit(s, o.claims, nodes=[None]),  # type: ignore[list-item]
        TypeError,
        "nodes[0]: expected Nodes or a name, got None",
    ),
    "fit-max-pods-float": (
        lambda o, s: analysis.fit(s, o.claims, max_pods=1.5),  # type: ignore[arg-type]
        TypeError,
        "max_pods: expected a whole number, got float",
    ),
    "fit-timeout-negative": (
        lambda o, s: analysis.fit(s, o.claims, timeout=-1),
        ValueError,
        "timeout: expected seconds (0 or None: no bound), got -1",
    ),
    "fit-truthy-text": (
        lambda o, s: analysis.fit(s, o.claims, explain_failures="no"),  # type: ignore[arg-type]
        TypeError,
        "explain_failures: expected True or False, got str",
    ),
    "fit-progress-text": (
        lambda o, s: analysis.fit(s, o.claims, progress="x"),  # type: ignore[arg-type]
        TypeError,
        "progress: expected a function, got str",
    ),
    "analyze-time-limit-nan": (
        lambda o, s: analysis.analyze(s, o.claims, bound=True, time_limit=math.nan),
        ValueError,
        "time_limit: expected seconds > 0 (None: no limit), got nan",
    ),
    "analyze-compare-int": (
        lambda o, s: analysis.analyze(s, o.claims, compare=5),  # type: ignore[arg-type]
        TypeError,
        "compare: expected Strategies or names (a sequence of them), got int",
    ),
    "bound-keep-text": (
        lambda o, s: analysis.optimal_bound(s, o.claims, keep="x"),  # type: ignore[arg-type]
        TypeError,
        "keep: expected a FitReport (what fit returns), got str",
    ),
    "fragmentation-snapshot-int": (
        lambda o, s: analysis.fragmentation(5),  # type: ignore[arg-type]
        TypeError,
        "snapshot: expected a Snapshot, got int",
    ),
    "fragmentation-classes-none-item": (
        lambda o, s: analysis.fragmentation(s, classes=[None]),  # type: ignore[list-item]
        TypeError,
        "classes[0]: expected a name, got None",
    ),
    "nodes-needed-node-type-text": (
        lambda o, s: analysis.nodes_needed(s, o.claims, "nvidia-gpu", 3),  # type: ignore[arg-type]
        TypeError,
        "node_type: expected an AddNodes (the node to add), got str",
    ),
    "simulate-trace-path": (
        lambda o, s: analysis.simulate(s, o.claims, "trace.csv"),  # type: ignore[arg-type]
        TypeError,
        "trace: expected a TracePod (a sequence of them), got str",
    ),
    "parse-trace-none": (
        lambda o, s: analysis.parse_trace(None),  # type: ignore[arg-type]
        TypeError,
        "text: expected a trace's text, got None",
    ),
    "what-if-changes-none-item": (
        lambda o, s: analysis.what_if(s, o.claims, [None]),  # type: ignore[list-item]
        TypeError,
        "changes[0]: expected a change (AddNodes, RemoveNodes, Cordon), got None",
    ),
    "cordon-effect": (
        lambda o, s: analysis.Cordon(pools=("p",), effect="Banana"),
        ValueError,
        "effect: unknown taint effect 'Banana'; expected one of NoExecute, NoSchedule, None",
    ),
    "cordon-pools-none-item": (
        lambda o, s: analysis.Cordon(pools=[None]),  # type: ignore[arg-type]
        TypeError,
        "pools[0]: expected a name, got None",
    ),
    "add-nodes-template-text": (
        lambda o, s: analysis.AddNodes(1, template="x"),  # type: ignore[arg-type]
        TypeError,
        "template: expected a NodeTemplate, got str",
    ),
    "strategy-node-order": (
        lambda o, s: analysis.Strategy("x", "y"),  # type: ignore[arg-type]
        ValueError,
        "nodes: unknown node order 'x'; expected one of first-fit, round-robin, "
        "least-allocated, most-allocated",
    ),
    "strategy-device-choice": (
        lambda o, s: analysis.Strategy("first-fit", "y"),  # type: ignore[arg-type]
        ValueError,
        "devices: unknown device choice 'y'; expected one of upstream, best-fit",
    ),
    "pod-shape-claims-text": (
        lambda o, s: analysis.PodShape("x", "abc"),  # type: ignore[arg-type]
        TypeError,
        "claims: expected a ResourceClaim (a sequence of them), got str",
    ),
    "sweep-scenarios-text": (
        lambda o, s: analysis.sweep("abc"),  # type: ignore[arg-type]
        TypeError,
        "scenarios: expected a CapacityScenario or TraceScenario (a sequence of them), got str",
    ),
    "sweep-max-workers-negative": (
        lambda o, s: analysis.sweep([], max_workers=-1),
        ValueError,
        "max_workers: expected a whole number >= 1, got -1",
    ),
    "run-scenario-none": (
        lambda o, s: analysis.run_scenario(None),  # type: ignore[arg-type]
        TypeError,
        "scenario: expected a CapacityScenario, got None",
    ),
    "scenario-cluster-text": (
        lambda o, s: analysis.CapacityScenario("n", "x", ("t",)),  # type: ignore[arg-type]
        TypeError,
        "cluster: expected a GeneratedCluster, FileCluster or InlineCluster, got str",
    ),
    "generated-cluster-nodes": (
        lambda o, s: analysis.GeneratedCluster("nvidia-gpu", -1),
        ValueError,
        "nodes: expected a whole number >= 1, got -1",
    ),
    "inline-cluster-list": (
        lambda o, s: analysis.InlineCluster([]),  # type: ignore[arg-type]
        TypeError,
        "objects: expected Objects (what draspeed.load returns), got list",
    ),
    # draspeed.binding
    "with-allocation-mapping": (
        lambda o, s: binding.with_allocation({}, _result(o, s)),  # type: ignore[arg-type]
        TypeError,
        "claim: expected a ResourceClaim, got dict",
    ),
    "with-allocation-none": (
        lambda o, s: binding.with_allocation(o.claims[0], None),  # type: ignore[arg-type]
        TypeError,
        "result: expected an AllocationResult (what the allocator returns), got None",
    ),
    "status-patch-pod-name": (
        lambda o, s: binding.status_patch(o.claims[0], _result(o, s), "pod"),  # type: ignore[arg-type]
        TypeError,
        "pod: expected a Pod, got str",
    ),
    "claim-document-result-text": (
        lambda o, s: binding.claim_document(o.claims[0], "x"),  # type: ignore[arg-type]
        TypeError,
        "result: expected an AllocationResult (what the allocator returns), got str",
    ),
    # draspeed.quantity
    "quantity-add-text": (
        lambda o, s: Quantity.parse("1").add("x"),  # type: ignore[arg-type]
        TypeError,
        "other: expected a Quantity, got str",
    ),
    "quantity-cmp-text": (
        lambda o, s: Quantity.parse("1").cmp("x"),  # type: ignore[arg-type]
        TypeError,
        "other: expected a Quantity or an int, got str",
    ),
    "quantity-parse-list": (
        lambda o, s: Quantity.parse([]),  # type: ignore[arg-type]
        TypeError,
        "text: expected a quantity's text (a str), got list",
    ),
    "quantity-from-json-none": (
        lambda o, s: Quantity.from_json(None),  # type: ignore[arg-type]
        TypeError,
        "text: expected a quantity's text (a str), got None",
    ),
    "quantity-from-nanos-float": (
        lambda o, s: Quantity.from_nanos(1.5),  # type: ignore[arg-type]
        TypeError,
        "nanos: expected an int, got float",
    ),
    "quantity-format": (
        lambda o, s: Quantity.from_int(1, "x"),
        ValueError,
        "format: unknown quantity format 'x'; expected one of BinarySI, DecimalExponent, DecimalSI",
    ),
    # draspeed.analysis.plots: checked before matplotlib is imported or anything drawn
    "plot-fit-curve-str": (
        lambda o, s: plots.fit_curve("123", [1, 2, 3]),  # type: ignore[arg-type]
        TypeError,
        "added: expected a sequence of whole numbers, got str",
    ),
    "plot-fit-curve-float-item": (
        lambda o, s: plots.fit_curve([1, 2], [1, 2.5]),  # type: ignore[list-item]
        TypeError,
        "pods[1]: expected a whole number, got float",
    ),
    "plot-fit-curve-lengths": (
        lambda o, s: plots.fit_curve([1, 2], [1]),
        ValueError,
        "added and pods: 2 node counts but 1 pod counts (one of each per point)",
    ),
    "plot-strategies-list": (
        lambda o, s: plots.strategies_chart([3, 4]),  # type: ignore[arg-type]
        TypeError,
        "placed: expected a mapping of strategy names to pods placed, got list",
    ),
    "plot-strategies-negative": (
        lambda o, s: plots.strategies_chart({"first-fit": -1}),
        ValueError,
        "placed['first-fit']: expected a whole number >= 0, got -1",
    ),
    "plot-strategies-bound": (
        lambda o, s: plots.strategies_chart({"first-fit": 1}, "10"),  # type: ignore[arg-type]
        TypeError,
        "bound: expected a whole number, got str",
    ),
    "plot-draw-utilisation-none": (
        lambda o, s: plots.draw_utilisation(None, None),  # type: ignore[arg-type]
        TypeError,
        "report: expected a FragmentationReport (what fragmentation returns), got None",
    ),
    "plot-draw-trace-queue-dict": (
        lambda o, s: plots.draw_trace_queue(None, {}),  # type: ignore[arg-type]
        TypeError,
        "report: expected a TraceReport (what simulate returns), got dict",
    ),
    "plot-capacity-figure-curve": (
        lambda o, s: plots.capacity_figure(
            analysis.fragmentation(s),
            curve=([1, 2], None),  # type: ignore[arg-type]
        ),
        TypeError,
        "curve[1]: expected a sequence of whole numbers, got None",
    ),
    "plot-capacity-figure-strategies": (
        lambda o, s: plots.capacity_figure(
            analysis.fragmentation(s),
            strategies={"a": 1},  # type: ignore[arg-type]
        ),
        TypeError,
        "strategies: expected a pair, got dict",
    ),
    # draspeed.cluster
    "cluster-node-int": (
        lambda o, s: Cluster.from_objects(o).node(5),  # type: ignore[arg-type]
        TypeError,
        "name: expected a node name, got int",
    ),
    "cluster-find-pod-int": (
        lambda o, s: Cluster.from_objects(o).find_pod(5),  # type: ignore[arg-type]
        TypeError,
        "key: expected a pod's namespace/name, got int",
    ),
    "cluster-pod-none": (
        lambda o, s: Cluster.from_objects(o).pod(None),  # type: ignore[arg-type]
        TypeError,
        "pod: expected a Pod or its namespace/name, got None",
    ),
}


@pytest.mark.parametrize("name", sorted(MISUSES))
def test_misuse_names_the_argument(name: str, objects: Objects, snapshot: Snapshot) -> None:
    call, error, message = MISUSES[name]
    with pytest.raises(error) as excinfo:
        call(objects, snapshot)
    assert str(excinfo.value).strip("'\"") == message


def test_a_node_name_is_one_node_everywhere(objects: Objects, snapshot: Snapshot) -> None:
    allocator = Allocator(snapshot)
    # "node-1" is one node, not six nodes named by its characters.
    assert allocator.feasible_nodes(objects.claims, "node-1").nodes == ["node-1"]
    node = Node(metadata=ObjectMeta("node-1"))
    by_name = allocator.feasible_nodes(objects.claims, ["node-1"])
    by_node = allocator.feasible_nodes(objects.claims, [node])
    assert by_name.result("node-1") == by_node.result(node) == by_node.result("node-1")
    assert allocator.allocate(objects.claims, "node-1") is not None
    assert snapshot.update_nodes(removed="node-1").update_nodes(added=objects.nodes)


def test_a_node_name_is_one_node_for_a_cluster_too(objects: Objects) -> None:
    """Cluster.feasible_nodes read a name as the sequence of its characters (six nodes
    that did not fit)."""
    cluster = Cluster.from_objects(objects)
    assert cluster.feasible_nodes(nodes="node-1").nodes == ["node-1"]
    assert (
        cluster.feasible_nodes(nodes="node-1").counts()
        == cluster.feasible_nodes(nodes=["node-1"]).counts()
    )


def test_input_errors_survive_pickling() -> None:
    """A worker process's InputError reaches the caller whole (it failed to unpickle)."""
    import pickle

    error = pickle.loads(pickle.dumps(InputError("Node n", "metadata.name", "bad")))
    assert (type(error), error.obj, error.path, error.message, str(error)) == (
        InputError,
        "Node n",
        "metadata.name",
        "bad",
        "Node n: metadata.name: bad",
    )


def test_identical_repeats_are_one_object(objects: Objects) -> None:
    twice = Snapshot.build(objects.slices * 2, objects.classes * 2, nodes=objects.nodes * 2)
    # The pool is not "incomplete" for a slice given twice.
    results = Allocator(twice).allocate(objects.claims, "node-1")
    assert results is not None and len(results) == 1


@pytest.mark.parametrize("deadline", [math.inf, 1e300, time.monotonic() + 1e12])
def test_far_deadlines_are_no_bound(deadline: float, objects: Objects, snapshot: Snapshot) -> None:
    assert Allocator(snapshot).allocate(objects.claims, "node-1", deadline=deadline)


def test_a_past_deadline_is_upstreams_timeout(objects: Objects, snapshot: Snapshot) -> None:
    with pytest.raises(AllocationTimeout, match="context deadline exceeded"):
        Allocator(snapshot).allocate(objects.claims, "node-1", deadline=time.monotonic() - 1)


@pytest.mark.parametrize("validate", ["strict", "ignore"])
def test_parameters_that_contain_themselves(validate: Any) -> None:
    """A Python structure holding itself is an input error, not a RecursionError."""
    parameters: dict[str, Any] = {}
    parameters["self"] = parameters
    claim = claim_with_parameters(
        parameters, namespace="d", device_class="g", driver="g.example.com"
    )
    with pytest.raises(InputError) as excinfo:
        load(claim, validate=validate)
    assert str(excinfo.value) == (
        "ResourceClaim d/c: spec.devices.config[0].opaque.parameters.self: a value that "
        "contains itself cannot be written as JSON"
    )


def _nested(levels: int) -> dict[str, Any]:
    root: dict[str, Any] = {}
    inner = root
    for _ in range(levels):
        inner["x"] = {}
        inner = inner["x"]
    return root


def test_python_documents_nest_at_most_max_depth_deep() -> None:
    """A dict Python code built is held to load's max_depth as a text is (a RecursionError
    escaped at about 1,000 levels); a list of sources, or a List's items, that holds
    itself is one error (it recursed without end)."""
    claim = claim_with_parameters(_nested(1500))
    with pytest.raises(InputError, match="collections nest more than 200 levels deep"):
        load([claim])
    claim["spec"]["devices"]["config"][0]["opaque"]["parameters"] = _nested(150)
    assert load([claim]).claims
    sources: list[Any] = []
    sources.append(sources)
    with pytest.raises(InputError, match="a list that contains itself"):
        load(sources)
    listed: dict[str, Any] = {"apiVersion": "v1", "kind": "List", "items": []}
    listed["items"].append(listed)
    with pytest.raises(InputError, match="a list that contains itself"):
        load([listed])


def test_update_nodes_refuses_two_different_nodes_of_one_name(snapshot: Snapshot) -> None:
    """As Snapshot.build refuses them (the last one was kept without a word)."""
    one, other = Node(metadata=ObjectMeta("x")), Node(metadata=ObjectMeta("x", labels={"a": "b"}))
    with pytest.raises(ValueError, match="two different Nodes named 'x'"):
        snapshot.update_nodes(added=[one, other])
    assert "x" in snapshot.update_nodes(added=[one, one]).given_nodes


def test_build_reads_nodes_by_name_once(objects: Objects) -> None:
    """Snapshot.build files its Nodes by name in the walk that checks them: names and
    Nodes alike are kept in order, an equal repeat dropped, two different ones refused,
    and with ``copy=True`` the copies are filed, not the caller's objects."""
    one = Node(metadata=ObjectMeta("x", labels={"a": "b"}))
    other = Node(metadata=ObjectMeta("x"))
    o = objects
    built = Snapshot.build(o.slices, o.classes, nodes=[one, "y", one])
    assert list(built.given_nodes) == ["x", "y"]
    assert built.given_nodes["x"] is one
    assert built.given_nodes["y"] == Node(metadata=ObjectMeta("y"))
    with pytest.raises(ValueError, match=r"nodes\[0\] and nodes\[1\]: two different Nodes"):
        Snapshot.build(o.slices, o.classes, nodes=[one, other])
    copied = Snapshot.build(o.slices, o.classes, nodes=[one], copy=True)
    assert copied.given_nodes["x"] == one and copied.given_nodes["x"] is not one
    assert Snapshot.build(o.slices, o.classes).given_nodes == {}


def test_one_name_is_one_item_in_analysis(objects: Objects, snapshot: Snapshot) -> None:
    """A strategy, shape, template name or change alone is one, not the characters of a
    name (compare="best-fit" was eight unknown strategies) nor an error (one change)."""
    report = analysis.analyze(snapshot, objects.claims, compare="best-fit")
    assert [c.strategy for c in report.strategies] == ["best-fit"]
    pods = analysis.parse_trace('{"arrival": 1, "shape": "gpu"}', shapes="gpu")
    assert [p.shape for p in pods] == ["gpu"]
    change = analysis.RemoveNodes("node-1")  # type: ignore[arg-type]
    assert analysis.apply_changes(snapshot, change).nodes == (
        analysis.apply_changes(snapshot, [change]).nodes
    )
    scenario = analysis.CapacityScenario(
        "n",
        analysis.GeneratedCluster("nvidia-gpu", 1),
        "single-gpu",  # type: ignore[arg-type]
        compare="best-fit",  # type: ignore[arg-type]
    )
    assert (scenario.templates, scenario.compare, scenario.changes) == (
        ("single-gpu",),
        ("best-fit",),
        (),
    )
