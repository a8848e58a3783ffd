"""``feasible_nodes`` answers, for every node, what ``allocate`` answers there.

Random clusters (three labelled nodes, shared and node-local pools, committed claims,
feature gates): one ``feasible_nodes`` call over all nodes must give, node by node,
the status, the error text and the results of a fresh allocator asked about that node
alone. Generated clusters of a few hundred nodes check the same at scale.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings

from draspeed.api.loader import load
from draspeed.engine.allocator import Allocator
from draspeed.engine.snapshot import Snapshot
from draspeed.errors import AllocationError, AllocationTimeout, NodeAllocationError
from draspeed.generate import generate
from draspeed.generate.scenarios import claim_from_template
from draspeed.testing.cases import Scenario
from draspeed.testing.engines import results_json
from draspeed.testing.strategies import scenarios


def _alone(snapshot_args: dict[str, Any], claims: list[Any], node: Any) -> tuple[Any, ...]:
    """What a fresh allocator answers for one node: (status, error, results)."""
    allocator = Allocator(Snapshot.build(**snapshot_args))
    return _answer(lambda: allocator.allocate(claims, node))


def _prepared(snapshot_args: dict[str, Any], claims: list[Any], nodes: list[Any]) -> dict[str, Any]:
    """One allocator, the claims prepared once, every node asked three times (the
    second answer comes from what the first one left behind, the third from the memo
    the second filled, the short way on the snapshot's own Node objects): the third
    answers, after checking that all three agree."""
    snapshot = Snapshot.build(**snapshot_args)
    own = {n.name: n for n in snapshot.nodes}
    prepared = Allocator(snapshot).prepare(claims)
    answers: dict[str, list[Any]] = {n.name: [] for n in nodes}
    for _ in range(3):
        for node in nodes:
            mine = own.get(node.name, node)
            answers[node.name].append(_answer(lambda: prepared.allocate(mine)))  # noqa: B023
    for name, (first, second, third) in answers.items():
        assert first == second == third, name
    return {name: found[-1] for name, found in answers.items()}


def _answer(ask: Any) -> tuple[Any, ...]:
    try:
        results = ask()
    except AllocationTimeout as exc:
        return ("timeout", str(exc), None)
    except NodeAllocationError as exc:
        return ("node-error", str(exc), None)
    except AllocationError as exc:
        return ("error", str(exc), None)
    if results is None:
        return ("does-not-fit", None, None)
    return ("fits", None, results_json(results))


def _together(snapshot_args: dict[str, Any], claims: list[Any]) -> dict[str, tuple[Any, ...]]:
    feasibility = Allocator(Snapshot.build(**snapshot_args)).feasible_nodes(claims)
    return {
        o.node: (o.status, o.error, None if o.results is None else results_json(o.results))
        for o in feasibility
    }


def _check(scenario: Scenario) -> None:
    inputs = scenario.inputs()
    objects = load(scenario.documents, validate="ignore")  # for its Nodes only
    args = {
        "slices": inputs.slices,
        "classes": inputs.classes,
        "allocated_claims": inputs.allocated,
        "features": inputs.features,
        "nodes": objects.nodes,
    }
    together = _together(args, inputs.claims)
    assert set(together) == {n.name for n in objects.nodes}
    prepared = _prepared(args, inputs.claims, objects.nodes)
    for node in objects.nodes:
        alone = _alone(args, inputs.claims, node)
        assert together[node.name] == alone, node.name
        assert prepared[node.name] == alone, node.name


@settings(settings(), max_examples=max(settings().max_examples // 2, 20))
@given(scenarios())
def test_feasible_nodes_equal_allocate_per_node(scenario: Scenario) -> None:
    _check(scenario)


@pytest.mark.parametrize(
    ("kind", "nodes", "template", "options"),
    [
        ("nvidia-gpu", 40, "two-gpus-same-pcie-root", {}),
        ("nvidia-mig", 12, "two-mig-1g10gb-same-gpu", {}),
        ("scheduler-perf", 60, "test-claim-template", {"fill": 0.5}),
        ("network-attached", 24, None, {}),
    ],
)
def test_generated_clusters(kind: str, nodes: int, template: str | None, options: Any) -> None:
    cluster = generate(kind, nodes, 3, **options)
    name = template or cluster.templates[0]["metadata"]["name"]
    claims = load([claim_from_template(cluster.template(name), "pod-0-claim-0")]).claims
    objects = cluster.decoded()
    args = {
        "slices": objects.slices,
        "classes": objects.classes,
        "allocated_claims": objects.claims,
        "nodes": objects.nodes,
    }
    together = _together(args, claims)
    fits = [n for n, (status, *_) in together.items() if status == "fits"]
    assert fits, "the shape should fit somewhere"
    prepared = _prepared(args, claims, objects.nodes)
    for node in objects.nodes:
        alone = _alone(args, claims, node)
        assert together[node.name] == alone, node.name
        assert prepared[node.name] == alone, node.name


def test_prepared_claims_are_read_once() -> None:
    """Changing a prepared claim in place does not change the answers (prepare again)."""
    cluster = generate("scheduler-perf", 3, 3)
    claims = load(
        [claim_from_template(cluster.template(cluster.templates[0]["metadata"]["name"]), "c")]
    ).claims
    allocator = Allocator(Snapshot.build(cluster.decoded().slices, cluster.decoded().classes))
    node = allocator.snapshot.nodes[0]
    prepared = allocator.prepare(claims)
    before = results_json(prepared.allocate(node) or [])
    request = claims[0].spec.devices.requests[0]
    assert request.exactly is not None
    request.exactly.count = 30  # more than any node has
    assert results_json(prepared.allocate(node) or []) == before
    assert prepared.last_stats.search_steps > 0
    assert allocator.prepare(claims).allocate(node) is None
    assert allocator.allocate(claims, node) is None
