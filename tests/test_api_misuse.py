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

from draspeed import load
from draspeed.api.loader import Objects
from draspeed.api.model import DeviceClass, DeviceClassSpec, Node, ObjectMeta
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
        "node: expected a Node, a node name, or a Node's mapping or client model, got NoneType",
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
    "prepare-none-item": (
        lambda o, s: Allocator(s).prepare([None]),
        TypeError,
        "claims[0]: expected a ResourceClaim (or its mapping or client model), got NoneType",
    ),
    "feasible-nodes-none-item": (
        lambda o, s: Allocator(s).feasible_nodes(o.claims, [None]),
        TypeError,
        "nodes[0]: expected a Node, a node name, or a Node's mapping or client model, got NoneType",
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
        "node: expected a Node or a node name, got NoneType",
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
