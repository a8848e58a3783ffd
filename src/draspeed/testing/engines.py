"""Both engines on the same inputs, answers in one comparable shape.

An :class:`Answer` is what one ``allocate`` call decided, in the shape of the
differential corpus (``results`` / ``unsuitable`` / ``error``): results are the
``status.allocation`` JSON of each claim with share IDs normalised (they are random
per allocation), errors keep their exact text and whether upstream would have wrapped
them as node-local (``ErrFailedAllocationOnNode``).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from draspeed.api import encode_allocation
from draspeed.api.loader import Objects
from draspeed.api.model import AllocationResult, DeviceClass, Node, ResourceClaim, ResourceSlice
from draspeed.cluster import Cluster, Engine, make_allocator
from draspeed.errors import AllocationError, AllocationTimeout, NodeAllocationError
from draspeed.features import Features
from draspeed.rules import texts

SHARE_ID = "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa"

Outcome = Literal["results", "unsuitable", "error", "timeout"]


@dataclass(frozen=True, slots=True)
class Inputs:
    """One allocate call: cluster state (taint rules applied), the pod's claims, the node."""

    slices: list[ResourceSlice]
    classes: list[DeviceClass]
    allocated: list[ResourceClaim]
    claims: list[ResourceClaim]
    node: Node
    features: Features

    @classmethod
    def from_objects(cls, objects: Objects, node_name: str, features: Features) -> Inputs:
        """As kube-scheduler sees a dump: claims with an allocation are committed state."""
        cluster = Cluster.from_objects(objects, features=features)
        return cls(
            cluster.slices,
            cluster.classes,
            cluster.allocated,
            cluster.pending,
            cluster.node(node_name),
            features,
        )


@dataclass(frozen=True, slots=True)
class Answer:
    """What one engine answered; equality ignores the work counter and raw results."""

    outcome: Outcome
    results: list[dict[str, Any]] | None = None
    error: str | None = None
    error_kind: str | None = None  # "fatal" or "node" (ErrFailedAllocationOnNode)
    work: int = field(default=0, compare=False)
    seconds: float = field(default=0.0, compare=False)
    raw: list[AllocationResult] | None = field(default=None, compare=False, repr=False)


def normalise(value: Any) -> Any:
    """Share IDs are random per allocation: compare them by presence only."""
    if isinstance(value, dict):
        return {k: (SHARE_ID if k == "shareID" else normalise(v)) for k, v in value.items()}
    if isinstance(value, list):
        return [normalise(v) for v in value]
    return value


def results_json(results: Sequence[AllocationResult]) -> list[dict[str, Any]]:
    return [normalise(encode_allocation(r)) for r in results]


def run(engine: Engine, inputs: Inputs, *, timeout: float | None = None) -> Answer:
    """Build the engine over ``inputs`` and allocate once."""
    allocator = make_allocator(
        engine, inputs.slices, inputs.classes, inputs.allocated, inputs.features
    )
    start = time.monotonic()
    deadline = None if timeout is None else start + timeout
    try:
        results = allocator.allocate(inputs.claims, inputs.node, deadline=deadline)
    except AllocationTimeout as exc:
        answer = Answer("timeout", error=str(exc))
    except NodeAllocationError as exc:
        answer = Answer("error", error=str(exc), error_kind="node")
    except AllocationError as exc:
        answer = Answer("error", error=str(exc), error_kind="fatal")
    else:
        if results is None:
            answer = Answer("unsuitable")
        else:
            answer = Answer("results", results=results_json(results), raw=results)
    work = allocator.last_stats.search_steps
    return Answer(
        answer.outcome,
        answer.results,
        answer.error,
        answer.error_kind,
        work,
        time.monotonic() - start,
        answer.raw,
    )


def answer_from_expected(expected: dict[str, Any]) -> Answer:
    """The answer a differential ``expected.json`` records (``errorContains`` unsupported)."""
    if "results" in expected:
        return Answer("results", results=normalise(expected["results"]))
    if expected.get("unsuitable"):
        return Answer("unsuitable")
    if "error" in expected:
        kind = expected.get("errorKind")
        if kind is None:
            node_local = expected["error"] == texts.INVALID_POOLS
            kind = "node" if node_local else "fatal"
        return Answer("error", error=expected["error"], error_kind=kind)
    raise ValueError("expected.json has no answer")


def describe_difference(fast: Answer, reference: Answer) -> str:
    """A short text for an assertion message."""
    return f"fast engine: {fast!r}\nreference:   {reference!r}"


def check_engines(inputs: Inputs, *, timeout: float = 20.0) -> tuple[Answer, Answer, list[str]]:
    """Run both engines; list every way they disagree or break an invariant.

    The engines must give the same answer; the fast one may search less (it prunes
    subtrees without solutions), never more; every result must pass
    :func:`~draspeed.testing.invariants.check_allocation`.
    """
    from draspeed.testing.invariants import check_allocation

    fast = run("fast", inputs, timeout=timeout)
    reference = run("reference", inputs, timeout=timeout)
    problems = []
    if "timeout" in (fast.outcome, reference.outcome):
        problems.append(f"no answer within {timeout} s: {describe_difference(fast, reference)}")
    elif fast != reference:
        problems.append(f"the engines disagree:\n{describe_difference(fast, reference)}")
    elif fast.work > reference.work:
        problems.append(
            f"the fast engine searched more: {fast.work} steps, the reference {reference.work}"
        )
    for name, answer in (("fast", fast), ("reference", reference)):
        broken = check_allocation(
            inputs.slices,
            inputs.classes,
            inputs.allocated,
            inputs.claims,
            inputs.node,
            answer.raw,
            inputs.features,
        )
        problems += [f"{name} engine result: {p}" for p in broken]
    return fast, reference, problems
