"""Quantities beyond the fast engine's exact range (``draspeed.engine.beyond``).

A value of 10^100000 nano units or more is not materialised: it stands in as a number
larger than any sum of exact values, which decides every comparison the engine makes
against exact values, or against sums of that same value, as the true value does. The
answers upstream gives for such cases are regression cases
(``tests/regressions/quantity-beyond-exact-range-*``); here: the boundary, exponents
upstream never finishes with, and the comparisons stand-ins cannot decide.
"""

from __future__ import annotations

import io
import json
import time
from pathlib import Path
from typing import Any

import pytest

from draspeed import load
from draspeed.cli import main
from draspeed.engine import beyond
from draspeed.engine.allocator import Allocator
from draspeed.engine.snapshot import Snapshot
from draspeed.explain import explain
from draspeed.features import Features
from draspeed.quantity import Quantity
from draspeed.testing.documents import resource_slice
from draspeed.testing.engines import Inputs, run


def test_nanos_are_exact_below_the_range_and_a_stand_in_beyond() -> None:
    last_exact = Quantity.parse(f"{'9' * 20}e{beyond.EXACT_DIGITS - 29}")  # 10^100000 - ...
    assert beyond.nanos(last_exact) == int("9" * 20) * 10 ** (beyond.EXACT_DIGITS - 20)
    assert not beyond.is_stand_in(beyond.nanos(last_exact))
    for text, sign in (("1e99991", 1), ("-1e99991", -1), ("1e2147483647", 1)):
        value = beyond.nanos(Quantity.parse(text))
        assert beyond.is_stand_in(value) and value == sign * beyond.stand_in()
    assert beyond.nanos(Quantity.parse("1e99990")) == 10**99999


def _cluster(counter: str, consumed: str) -> list[dict[str, Any]]:
    """A pool of two slices: a counter set, and a device consuming of it."""
    device = {
        "name": "d0",
        "consumesCounters": [{"counterSet": "cs", "counters": {"mem": {"value": consumed}}}],
    }
    counters = [{"name": "cs", "counters": {"mem": {"value": counter}}}]
    claim_spec = {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "c"}}]}}
    counter_slice = resource_slice(
        "s0", [], nodeName="node-1", sharedCounters=counters, pool="p", count=2
    )
    del counter_slice["spec"]["devices"]
    return [
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-1"}},
        counter_slice,
        resource_slice("s1", [device], nodeName="node-1", pool="p", count=2),
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": "c"},
            "spec": {},
        },
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim",
            "metadata": {"name": "cl", "namespace": "default", "uid": "u1"},
            "spec": claim_spec,
        },
    ]


def _inputs(counter: str, consumed: str) -> Inputs:
    return Inputs.from_objects(load(_cluster(counter, consumed)), "node-1", Features())


@pytest.mark.parametrize(
    ("counter", "consumed", "fits"),
    [("1e2147483647", "1Gi", True), ("1Gi", "1e2147483647", False)],
)
def test_exponents_upstream_never_finishes_with_are_answered_at_once(
    counter: str, consumed: str, fits: bool
) -> None:
    """Upstream's allocator materialises 10^2147483647 to compare (still running after
    20 s); the reference engine compares the quantities, the fast engine stand-ins."""
    for engine in ("fast", "reference"):
        start = time.monotonic()
        answer = run(engine, _inputs(counter, consumed))
        assert answer.outcome == ("results" if fits else "unsuitable"), engine
        assert time.monotonic() - start < 10  # (a hang guard, not a timing)


def test_different_values_on_both_sides_are_answered_by_the_reference_engine() -> None:
    """2e999999 consumed 1e999999 at a time and the like: the stand-ins cannot tell
    them apart, so the allocator asks the reference engine, whichever way it is asked
    (upstream's answers for such cases: ``counter-beyond-exact-range-both-sides-*``)."""
    inputs = _inputs("2e999999", "1e999999")
    reference = run("reference", inputs)
    assert reference.outcome == "results"
    assert run("fast", inputs) == reference
    snapshot = Snapshot.build(inputs.slices, inputs.classes, inputs.allocated, nodes=[inputs.node])
    allocator = Allocator(snapshot)
    feasible = allocator.feasible_nodes(inputs.claims)
    assert feasible.feasible == ["node-1"] and feasible.work == reference.work
    assert feasible.result("node-1") is not None
    prepared = allocator.prepare(inputs.claims)
    for _ in range(2):
        assert prepared.allocate("node-1") is not None
        assert prepared.last_stats.search_steps == reference.work
    # Laying the node out is not a search: explain and capacity analysis read it.
    assert [p.id.pool for p in snapshot.node_view(inputs.node).pools] == ["p"]


@pytest.mark.parametrize(
    ("counter", "held", "wanted", "count", "remaining", "needed"),
    [
        # 2e999999 less 1e999999 and 1 left: one more 1e999999 is a nano unit too many.
        ("2e999999", ["1e999999", "1"], ["1e999999"], 1, "1e999999 - 1", "1e999999"),
        ("1e999999", ["1Gi"], ["1e999999"], 1, "1e999999 - 1073741824", "1e999999"),
        # The search's shortfall: 1e999998 + 9e999998 + 1n asked of 1e999999.
        ("1e999999", [], ["1e999998", "9e999998", "1n"], 3, "1e999999", "1e999999 + 1e-9"),
    ],
)
def test_explain_names_counters_past_the_exact_range_exactly(
    counter: str, held: list[str], wanted: list[str], count: int, remaining: str, needed: str
) -> None:
    """Explain subtracts and adds counter amounts as exact sums: what is left and what
    is needed are written as the sums they are, where upstream's would need a million
    digits."""
    objects = load(_counters(counter, held, wanted, count))
    allocated = [c for c in objects.claims if c.status.allocation]
    pending = [c for c in objects.claims if not c.status.allocation]
    snapshot = Snapshot.build(objects.slices, objects.classes, allocated, nodes=objects.nodes)
    explanation = explain(snapshot, pending, "node-1")
    assert explanation.status == "does-not-fit"
    counters = [b.details["counters"] for b in explanation.blockers if b.kind == "counter"]
    assert counters == [[{"counter": "mem", "remaining": remaining, "needed": needed}]]


def _counters(counter: str, held: list[str], wanted: list[str], count: int) -> list[Any]:
    """A pool: a counter set, devices consuming of it (the first ``held`` allocated by a
    committed claim), and a claim for ``count`` of them."""
    devices = [
        {
            "name": f"d{i}",
            "consumesCounters": [{"counterSet": "cs", "counters": {"mem": {"value": v}}}],
        }
        for i, v in enumerate(held + wanted)
    ]
    counters = [{"name": "cs", "counters": {"mem": {"value": counter}}}]
    counter_slice = resource_slice(
        "s0", [], nodeName="node-1", sharedCounters=counters, pool="p", count=2
    )
    del counter_slice["spec"]["devices"]

    def claim(name: str, n: int, devices: range | None) -> dict[str, Any]:
        request = {"name": "r", "exactly": {"deviceClassName": "c", "count": n}}
        made: dict[str, Any] = {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": "default", "uid": name},
            "spec": {"devices": {"requests": [request]}},
        }
        if devices is not None:
            results = [
                {"request": "r", "driver": "drv.example.com", "pool": "p", "device": f"d{i}"}
                for i in devices
            ]
            made["status"] = {"allocation": {"devices": {"results": results}}}
        return made

    return [
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-1"}},
        counter_slice,
        resource_slice("s1", devices, nodeName="node-1", pool="p", count=2),
        {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "c"}},
        *([claim("held", len(held), range(len(held)))] if held else []),
        claim("wanted", count, None),
    ]


def test_capacity_analysis_names_a_counter_it_cannot_count(tmp_path: Path) -> None:
    """Capacity analysis counts counters in plain nano units: a counter past the exact
    range is one error naming it (the allocator itself answers for it)."""
    objects = _counters("1e999999", ["1Gi"], ["1e999999"], 1)
    cluster = tmp_path / "cluster.json"
    cluster.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": objects[:-1]}))
    template = tmp_path / "template.json"
    claim_spec = objects[-1]["spec"]
    template.write_text(
        json.dumps(
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceClaimTemplate",
                "metadata": {"name": "t", "namespace": "default"},
                "spec": {"spec": claim_spec},
            }
        )
    )
    out, err = io.StringIO(), io.StringIO()
    status = main(["capacity", "-f", str(cluster), "--template", str(template)], out, err)
    assert status == 2
    assert err.getvalue() == (
        "error: pool drv.example.com/p, counter cs/mem: 1e999999 is 10^100000 nano units "
        "or more, beyond what capacity analysis counts (allocate and feasible answer for it)\n"
    )
