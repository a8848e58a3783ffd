"""Why a pod's claims fit on a node, or why not: :func:`explain`.

The verdict is the allocator's own (``Allocator.allocate``), so it is never a guess.
Around it, for every request (and every ``firstAvailable`` alternative) the
explanation counts the node's devices stage by stage -- on the node, matching the
class selectors, matching the request's selectors, not in use, with enough shared
counters left, with enough consumable capacity left, not tainted -- next to what the
request needs. Each stage keeps the devices that passed the ones before it, so the
first stage that drops below the need is where the request runs out.

When every request has enough candidates on its own and the claims still do not
fit, the search itself was blocked by what ties requests together. Those blockers
are found exactly, by asking the allocator again: once per constraint with that
constraint dropped, and with a pool's counter sets made large enough for anything;
whatever makes the claims fit is reported, with the counters' remaining and needed
amounts taken from the solution found.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from draspeed.allocator import Allocator
from draspeed.api.limits import ALLOCATION_RESULTS_MAX_SIZE
from draspeed.api.model import (
    AllocationResult,
    Counter,
    CounterSet,
    Device,
    DeviceConstraint,
    DeviceSelector,
    DeviceToleration,
    Node,
    ObjectMeta,
    ResourceClaim,
    ResourceSlice,
)
from draspeed.errors import AllocationError, AllocationTimeout, NodeAllocationError
from draspeed.feasibility import Status
from draspeed.features import Features
from draspeed.quantity import Quantity
from draspeed.rules.capacity import UnknownCapacityError, request_fits
from draspeed.rules.ids import DeviceID, PoolID
from draspeed.rules.node_selection import NodeSelectorError, node_matches
from draspeed.rules.tolerations import taint_blocks
from draspeed.snapshot import ERROR, TRUE, NodeView, PoolView, Snapshot

# The funnel's stages: JSON key, table heading, and how a shortfall there reads.
STAGES: tuple[tuple[str, str], ...] = (
    ("onNode", "ON NODE"),
    ("classSelectors", "CLASS SEL"),
    ("requestSelectors", "REQUEST SEL"),
    ("available", "AVAILABLE"),
    ("counters", "COUNTERS"),
    ("capacity", "CAPACITY"),
    ("taints", "TAINTS"),
)

_ZERO = Quantity.from_int(0)

Counters = dict[str, dict[str, Quantity]]  # counter set -> counter -> amount


# --------------------------------------------------------------------------------------
# The answer
# --------------------------------------------------------------------------------------


@dataclass(slots=True)
class _CounterShort:
    """One counter a device would overdraw: what is left and what it needs."""

    device: int  # global index
    pool: PoolID
    counter_set: str
    counter: str
    remaining: Quantity
    needed: Quantity


@dataclass(slots=True)
class Funnel:
    """Device counts of one request (or one firstAvailable alternative) on the node.

    Each count is of the devices that passed every earlier stage. ``needs`` is the
    request's count, or for ``allocationMode: All`` the number of matching devices
    (all of which must then be allocatable). ``in_use`` is how many matching devices
    committed claims hold (0 with admin access, which ignores that).
    """

    claim: str
    request: str  # "gpu", or "gpu/small" for an alternative of a prioritized list
    device_class: str
    allocation_mode: str
    needs: int
    on_node: int = 0
    class_selectors: int = 0
    request_selectors: int = 0
    available: int = 0
    counters: int = 0
    capacity: int = 0
    taints: int = 0
    in_use: int = 0
    admin_access: bool = False
    selector_errors: int = 0
    selector_error: str | None = None  # upstream's text of the first one, in search order
    # This alternative would give its claim more devices than a claim may hold.
    over_claim_limit: bool = False
    chosen: list[str] = field(default_factory=list)  # devices allocated (when it fits)
    # Counter sets that kept available devices out (explain's own use; not in JSON).
    _counter_shorts: list[_CounterShort] = field(default_factory=list, repr=False, compare=False)

    def counts(self) -> list[tuple[str, int]]:
        """``(stage key, count)`` in funnel order."""
        return [
            ("onNode", self.on_node),
            ("classSelectors", self.class_selectors),
            ("requestSelectors", self.request_selectors),
            ("available", self.available),
            ("counters", self.counters),
            ("capacity", self.capacity),
            ("taints", self.taints),
        ]

    @property
    def short(self) -> bool:
        """Whether this request cannot be satisfied on the node, whatever else is chosen."""
        if self.over_claim_limit:
            return True
        if self.allocation_mode == "All" and self.needs == 0:
            return True  # upstream: nothing to collect means no allocation
        return self.taints < self.needs

    @property
    def short_at(self) -> str | None:
        """The first stage whose count is below ``needs`` (None when not short there)."""
        for key, count in self.counts():
            if count < self.needs:
                return key
        return None

    def shortfall(self) -> str:
        """``needs 2, 1 available (7 in use)``: what the request lacks, in words."""
        if self.over_claim_limit:
            return (
                f"needs {self.needs}, which would give claim {self.claim} more than "
                f"{ALLOCATION_RESULTS_MAX_SIZE} devices"
            )
        if self.allocation_mode == "All" and self.needs == 0:
            return "asks for all matching devices, but no device on the node matches"
        stage = self.short_at
        if stage is None:
            return f"needs {self.needs}, {self.taints} can be allocated"
        count = dict(self.counts())[stage]
        need = f"needs all {self.needs}" if self.allocation_mode == "All" else f"needs {self.needs}"
        phrase = {
            "onNode": f"{count} on the node",
            "classSelectors": f"{count} match class {self.device_class}",
            "requestSelectors": f"{count} match its selectors",
            "available": f"{count} available ({self.in_use} in use)",
            "counters": f"{count} with enough shared counters left",
            "capacity": f"{count} with enough capacity left",
            "taints": f"{count} not tainted ({self.capacity - self.taints} tainted)",
        }[stage]
        if self.selector_errors and stage in ("classSelectors", "requestSelectors"):
            phrase += f" ({self.selector_errors} selector errors)"
        return f"{need}, {phrase}"

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "claim": self.claim,
            "request": self.request,
            "deviceClass": self.device_class,
            "allocationMode": self.allocation_mode,
            "adminAccess": self.admin_access,
            "needs": self.needs,
        }
        out.update(self.counts())
        out["inUse"] = self.in_use
        out["selectorErrors"] = self.selector_errors
        if self.selector_error is not None:
            out["selectorError"] = self.selector_error
        out["overClaimLimit"] = self.over_claim_limit
        out["short"] = self.short
        out["chosen"] = list(self.chosen)
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Funnel:
        return cls(
            claim=data["claim"],
            request=data["request"],
            device_class=data["deviceClass"],
            allocation_mode=data["allocationMode"],
            needs=data["needs"],
            on_node=data["onNode"],
            class_selectors=data["classSelectors"],
            request_selectors=data["requestSelectors"],
            available=data["available"],
            counters=data["counters"],
            capacity=data["capacity"],
            taints=data["taints"],
            in_use=data["inUse"],
            admin_access=data["adminAccess"],
            selector_errors=data["selectorErrors"],
            selector_error=data.get("selectorError"),
            over_claim_limit=data["overClaimLimit"],
            chosen=list(data["chosen"]),
        )


@dataclass(slots=True)
class PoolNote:
    """A pool on the node whose devices cannot be searched: incomplete or invalid."""

    pool: str
    state: str  # "incomplete" or "invalid"
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {"pool": self.pool, "state": self.state, "reason": self.reason}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PoolNote:
        return cls(data["pool"], data["state"], data["reason"])


@dataclass(slots=True)
class Blocker:
    """One reason the claims do not fit.

    ``kind``: ``request`` (a request runs short at some stage), ``claim-limit``,
    ``selector`` (a CEL error, upstream's text), ``counter`` (a counter set has too
    little left), ``constraint`` (dropping it makes the claims fit), ``together``
    (requests compete for the same devices) or ``search`` (no single cause found).
    ``details`` are JSON values naming what is meant (claim, index, attribute, pool,
    counter set, remaining and needed amounts, ...).
    """

    kind: str
    message: str
    details: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "message": self.message, **self.details}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Blocker:
        details = {k: v for k, v in data.items() if k not in ("kind", "message")}
        return cls(data["kind"], data["message"], details)


@dataclass(slots=True)
class Explanation:
    """Whether one pod's claims fit on one node, and why (not).

    ``status`` is the allocator's answer (as in :class:`~draspeed.feasibility.NodeOutcome`);
    ``summary`` one line with the main reason; ``requests`` the funnels; ``pools`` the
    pools that cannot be searched; ``blockers`` every reason found, the main one first.
    """

    node: str
    claims: list[str]
    status: Status
    summary: str
    error: str | None = None
    work: int = 0
    allocations: dict[str, list[str]] = field(default_factory=dict)
    requests: list[Funnel] = field(default_factory=list)
    pools: list[PoolNote] = field(default_factory=list)
    blockers: list[Blocker] = field(default_factory=list)

    @property
    def fits(self) -> bool:
        return self.status == "fits"

    ROW_HEADER = (
        "CLAIM",
        "REQUEST",
        "CLASS",
        *(heading for _, heading in STAGES),
        "NEEDS",
        "RESULT",
    )

    def rows(self) -> list[list[str]]:
        """The funnels as a table: a header row, then one row per request/alternative."""
        rows = [list(self.ROW_HEADER)]
        for f in self.requests:
            needs = f"all {f.needs}" if f.allocation_mode == "All" else str(f.needs)
            if f.chosen:
                result = ", ".join(f.chosen)
            elif f.short:
                stage = f.short_at
                heading = dict(STAGES).get(stage or "", "together").lower()
                result = "over claim limit" if f.over_claim_limit else f"short: {heading}"
            else:
                result = "enough" if not self.fits else "-"
            rows.append(
                [
                    f.claim,
                    f.request,
                    f.device_class,
                    *(str(c) for _, c in f.counts()),
                    needs,
                    result,
                ]
            )
        return rows

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready; :meth:`from_dict` gives the same explanation back."""
        return {
            "node": self.node,
            "claims": list(self.claims),
            "status": self.status,
            "summary": self.summary,
            "error": self.error,
            "work": self.work,
            "allocations": {k: list(v) for k, v in self.allocations.items()},
            "requests": [f.to_dict() for f in self.requests],
            "pools": [p.to_dict() for p in self.pools],
            "blockers": [b.to_dict() for b in self.blockers],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Explanation:
        return cls(
            node=data["node"],
            claims=list(data["claims"]),
            status=data["status"],
            summary=data["summary"],
            error=data.get("error"),
            work=data.get("work", 0),
            allocations={k: list(v) for k, v in data.get("allocations", {}).items()},
            requests=[Funnel.from_dict(f) for f in data.get("requests", [])],
            pools=[PoolNote.from_dict(p) for p in data.get("pools", [])],
            blockers=[Blocker.from_dict(b) for b in data.get("blockers", [])],
        )


# --------------------------------------------------------------------------------------
# Requests as the funnel sees them
# --------------------------------------------------------------------------------------


@dataclass(slots=True)
class _Alternative:
    """A request without alternatives, or one alternative of a prioritized list."""

    claim: int
    request: int
    name: str  # as results name it: "gpu" or "gpu/small"
    class_name: str
    selectors: list[DeviceSelector]
    mode: str
    count: int
    admin: bool
    tolerations: list[DeviceToleration]
    capacity: dict[str, Quantity]


def _alternatives(claims: Sequence[ResourceClaim]) -> list[list[list[_Alternative]]]:
    """Per claim, per request, its alternatives (one for a plain request)."""
    out: list[list[list[_Alternative]]] = []
    for c, claim in enumerate(claims):
        requests: list[list[_Alternative]] = []
        for r, request in enumerate(claim.spec.devices.requests):
            if request.first_available:
                requests.append(
                    [
                        _Alternative(
                            c,
                            r,
                            f"{request.name}/{sub.name}",
                            sub.device_class_name,
                            sub.selectors,
                            sub.allocation_mode,
                            sub.count,
                            False,
                            sub.tolerations,
                            dict(sub.capacity.requests) if sub.capacity else {},
                        )
                        for sub in request.first_available
                    ]
                )
                continue
            exact = request.exactly
            if exact is None:  # a request shape this version does not know
                requests.append(
                    [_Alternative(c, r, request.name, "", [], "ExactCount", 0, False, [], {})]
                )
                continue
            requests.append(
                [
                    _Alternative(
                        c,
                        r,
                        request.name,
                        exact.device_class_name,
                        exact.selectors,
                        exact.allocation_mode,
                        exact.count,
                        bool(exact.admin_access),
                        exact.tolerations,
                        dict(exact.capacity.requests) if exact.capacity else {},
                    )
                ]
            )
        out.append(requests)
    return out


# --------------------------------------------------------------------------------------
# What the node offers, independent of the claims
# --------------------------------------------------------------------------------------


class _NodeFacts:
    """The node's searchable devices and what committed claims left of its pools."""

    def __init__(self, snapshot: Snapshot, view: NodeView) -> None:
        self.snap = snapshot
        self.view = view
        self.features = snapshot.features
        self.pool_of: dict[int, PoolView] = {}
        self.node_errors: list[str] = []
        on_node: list[int] = []
        searchable = {int(g) for g in view.positions.tolist()}
        for pool in view.pools:
            if pool.incomplete or pool.invalid:
                continue
            for g in pool.devices:
                if g not in searchable:
                    continue
                self.pool_of[g] = pool
                if self._on_node(g):
                    on_node.append(g)
        self.positions = np.asarray(on_node, dtype=np.int64)
        self.remaining = {p.id: _remaining(snapshot, p) for p in view.pools if p.counter_sets}
        self._counter_verdicts: dict[int, list[_CounterShort]] = {}

    def _on_node(self, g: int) -> bool:
        """Per-device node selection and the binding-conditions gate, as upstream applies
        them with the selectors (they are about the node, so they count here)."""
        device = self.snap.device(g)
        if not self.features.device_binding_and_status and device.binding_conditions:
            return False
        if not self.snap.device_slice_of(g).spec.per_device_node_selection:
            return True
        try:
            return node_matches(
                self.view.node, device.node_name or "", bool(device.all_nodes), device.node_selector
            )
        except NodeSelectorError as exc:
            self.node_errors.append(str(exc))
            return False

    def committed_share(self, device_id: DeviceID) -> bool:
        allocated = self.snap.allocated
        return self.features.consumable_capacity and (
            allocated.has_share(device_id) or device_id in allocated.consumed_capacity
        )

    def multi(self, device: Device) -> bool:
        return self.features.consumable_capacity and bool(device.allow_multiple_allocations)

    def available(self, g: int, admin: bool) -> bool:
        """Not held by a committed claim (a shared device: not held exclusively)."""
        if admin:
            return True
        device_id = self.snap.device_id(g)
        if device_id in self.snap.allocated.devices:
            return False
        return self.multi(self.snap.device(g)) or not self.committed_share(device_id)

    def counter_shortfalls(self, g: int) -> list[_CounterShort]:
        """The counters this device alone would overdraw (empty: it fits)."""
        found = self._counter_verdicts.get(g)
        if found is not None:
            return found
        device = self.snap.device(g)
        pool = self.pool_of[g]
        found = []
        if device.consumes_counters and not self.features.partitionable_devices:
            # Without the gate such a device is never allocated; say which counter it wants.
            use = device.consumes_counters[0]
            name, amount = next(iter(use.counters.items()), ("", Counter(_ZERO)))
            found.append(_CounterShort(g, pool.id, use.counter_set, name, _ZERO, amount.value))
        elif device.consumes_counters and not (
            self.multi(device) and self.committed_share(self.snap.device_id(g))
        ):
            needs = _consumption(device)
            for set_name, counters in self.remaining.get(pool.id, {}).items():
                for name, left in counters.items():
                    need = needs.get(set_name, {}).get(name, _ZERO)
                    if left.cmp(need) < 0:
                        found.append(_CounterShort(g, pool.id, set_name, name, left, need))
        self._counter_verdicts[g] = found
        return found

    def capacity_fits(self, g: int, requests: dict[str, Quantity]) -> bool:
        if not self.features.consumable_capacity:
            return True
        device_id = self.snap.device_id(g)
        try:
            return request_fits(
                self.snap.allocated.consumed_capacity.get(device_id, {}),
                requests,
                self.snap.device(g).capacity,
                {},
                driver=device_id.driver,
            )
        except UnknownCapacityError:
            return False

    def statically_fits(self, g: int, requests: dict[str, Quantity]) -> bool:
        """Capacity ignoring committed use: what ``allocationMode: All`` collects by."""
        if not self.features.consumable_capacity:
            return True
        device_id = self.snap.device_id(g)
        try:
            return request_fits(
                {}, requests, self.snap.device(g).capacity, {}, driver=device_id.driver
            )
        except UnknownCapacityError:
            return False

    def tainted(self, g: int, tolerations: list[DeviceToleration]) -> bool:
        return self.features.device_taints and taint_blocks(self.snap.device(g).taints, tolerations)

    def select(
        self, candidates: np.ndarray, selectors: Sequence[DeviceSelector], owner: str
    ) -> tuple[np.ndarray, int, tuple[int, str] | None]:
        """The candidates every selector accepts (in order, stopping at the first that
        does not), the number of CEL errors, and the first error (position, text)."""
        keep = np.ones(len(candidates), dtype=bool)
        errors = 0
        first: tuple[int, str] | None = None
        for i, selector in enumerate(selectors):
            pending = np.flatnonzero(keep)
            if not len(pending):
                break
            if selector.cel is None:
                message = (
                    f"{owner}: selector #{i}: CEL expression empty (unsupported selector type?)"
                )
                errors += len(pending)
                keep[pending] = False
                first = _earlier(first, (int(pending[0]), message))
                break
            results = self.snap.selector_results(selector.cel.expression)
            verdict = self.snap.evaluate(results, candidates[pending])
            keep[pending[verdict != TRUE]] = False
            failed = pending[verdict == ERROR]
            if len(failed):
                errors += len(failed)
                p = int(failed[0])
                if results.compile_error is not None:
                    message = f"{owner}: selector #{i}: CEL compile error: {results.compile_error}"
                else:
                    g = int(candidates[p])
                    message = (
                        f"{owner}: selector #{i} on device {self.snap.device_id(g)}: "
                        f"CEL runtime error: {results.messages.get(g, '')}"
                    )
                first = _earlier(first, (p, message))
        return candidates[keep], errors, first


def _earlier(a: tuple[int, str] | None, b: tuple[int, str]) -> tuple[int, str]:
    return b if a is None or b[0] < a[0] else a


def _consumption(device: Device) -> Counters:
    out: Counters = {}
    for use in device.consumes_counters:
        counters = out.setdefault(use.counter_set, {})
        for name, amount in use.counters.items():
            counters[name] = counters[name].add(amount.value) if name in counters else amount.value
    return out


def _remaining(snapshot: Snapshot, pool: PoolView) -> Counters:
    """The pool's counter sets minus what committed claims' devices consume."""
    left = {s: dict(counters) for s, counters in pool.counter_sets.items()}
    for g in [*pool.devices, *pool.other_devices]:
        if not snapshot.allocated.is_allocated(snapshot.device_id(g)):
            continue
        for set_name, counters in _consumption(snapshot.device(g)).items():
            have = left.get(set_name)
            if have is None:
                continue
            for name, amount in counters.items():
                if name in have:
                    have[name] = have[name].sub(amount)
    return left


# --------------------------------------------------------------------------------------
# explain
# --------------------------------------------------------------------------------------


@dataclass(slots=True)
class _Verdict:
    status: Status
    error: str | None
    work: int
    results: list[AllocationResult] | None


def _ask(
    snapshot: Snapshot, claims: list[ResourceClaim], node: Node, timeout: float | None
) -> _Verdict:
    """What the allocator answers, in NodeOutcome's terms."""
    allocator = Allocator(snapshot)
    deadline = None if timeout is None else time.monotonic() + timeout
    try:
        results = allocator.allocate(claims, node, deadline=deadline)
    except AllocationTimeout as exc:
        return _Verdict(
            "timeout", str(exc), allocator.last_stats.num_allocate_one_invocations, None
        )
    except NodeAllocationError as exc:
        return _Verdict(
            "node-error", str(exc), allocator.last_stats.num_allocate_one_invocations, None
        )
    except AllocationError as exc:
        return _Verdict("error", str(exc), allocator.last_stats.num_allocate_one_invocations, None)
    work = allocator.last_stats.num_allocate_one_invocations
    if results is None:
        return _Verdict("does-not-fit", None, work, None)
    return _Verdict("fits", None, work, results)


def explain(
    snapshot: Snapshot,
    claims: Sequence[ResourceClaim],
    node: Node | str,
    *,
    features: Features | None = None,
    timeout: float | None = None,
) -> Explanation:
    """Whether ``claims`` (one pod's, allocated together) fit on ``node``, and why (not).

    ``features`` other than the snapshot's explain as if those gates were set (the
    snapshot is rebuilt with them). ``timeout`` bounds each allocator run (seconds);
    a run that times out makes the status ``timeout``, or leaves that experiment out.
    """
    if features is not None and features != snapshot.features:
        snapshot = Snapshot.build(
            snapshot.slices,
            list(snapshot.classes.values()),
            snapshot.allocated_claims,
            features=features,
            nodes=list(snapshot.given_nodes.values()),
        )
    if isinstance(node, str):
        node = snapshot.given_nodes.get(node) or Node(metadata=ObjectMeta(name=node))
    claims = list(claims)
    verdict = _ask(snapshot, claims, node, timeout)
    out = Explanation(
        node=node.name,
        claims=[c.key for c in claims],
        status=verdict.status,
        summary="",
        error=verdict.error,
        work=verdict.work,
    )
    if verdict.results is not None:
        for claim, result in zip(claims, verdict.results, strict=True):
            out.allocations[claim.key] = [
                f"{r.driver}/{r.pool}/{r.device}" for r in result.devices.results
            ]
    try:
        view = snapshot.node_view(node)
    except AllocationError:
        # Pool gathering failed (a slice's node selector is broken): the allocator
        # said so in ``error``; there is nothing on the node to count.
        out.summary = verdict.error or "pool gathering failed"
        return out
    facts = _NodeFacts(snapshot, view)
    out.pools = [
        PoolNote(
            str(p.id),
            "invalid" if p.invalid else "incomplete",
            p.invalid_reason
            if p.invalid
            else "not all slices of the pool's newest generation are published (being updated)",
        )
        for p in view.pools
        if p.invalid or p.incomplete
    ]
    alternatives = _alternatives(claims)
    out.requests = _funnels(facts, claims, alternatives, verdict.results)
    if verdict.status != "fits":
        out.blockers = _blockers(snapshot, facts, claims, node, out.requests, verdict, timeout)
    out.summary = _summary(out, claims)
    return out


def _funnels(
    facts: _NodeFacts,
    claims: list[ResourceClaim],
    alternatives: list[list[list[_Alternative]]],
    results: list[AllocationResult] | None,
) -> list[Funnel]:
    chosen: dict[tuple[int, str], list[str]] = {}
    for c, result in enumerate(results or []):
        for r in result.devices.results:
            chosen.setdefault((c, r.request), []).append(f"{r.driver}/{r.pool}/{r.device}")
    funnels: list[Funnel] = []
    for c, requests in enumerate(alternatives):
        claim_funnels = [[_funnel(facts, claims[c], alt) for alt in alts] for alts in requests]
        # An alternative is unusable when even the smallest choice for every other
        # request leaves no room for it under the per-claim device limit.
        fewest = [min((f.needs for f in fs), default=0) for fs in claim_funnels]
        for ri, fs in enumerate(claim_funnels):
            others = sum(fewest) - fewest[ri]
            for f in fs:
                f.over_claim_limit = f.needs + others > ALLOCATION_RESULTS_MAX_SIZE
                f.chosen = chosen.get((c, f.request), [])
                funnels.append(f)
    return funnels


def _funnel(facts: _NodeFacts, claim: ResourceClaim, alt: _Alternative) -> Funnel:
    funnel = Funnel(
        claim=claim.key,
        request=alt.name,
        device_class=alt.class_name,
        allocation_mode=alt.mode,
        needs=alt.count,
        admin_access=alt.admin,
    )
    devices = facts.positions
    funnel.on_node = len(devices)
    device_class = facts.snap.classes.get(alt.class_name)
    if device_class is None:
        # The allocator reports the missing class as its error; nothing can match.
        if alt.mode == "All":
            funnel.needs = 0
        return funnel
    devices, errors_a, first_a = facts.select(
        devices, device_class.spec.selectors, f"class {alt.class_name}"
    )
    funnel.class_selectors = len(devices)
    offset_b = devices
    devices, errors_b, first_b = facts.select(devices, alt.selectors, f"claim {claim.key}")
    funnel.request_selectors = len(devices)
    funnel.selector_errors = errors_a + errors_b
    # Errors of the request's selectors come after the class's on the same device;
    # compare them in search order (global positions of the node's devices).
    firsts = []
    if first_a is not None:
        firsts.append((int(facts.positions[first_a[0]]), first_a[1]))
    if first_b is not None:
        firsts.append((int(offset_b[first_b[0]]), first_b[1]))
    if firsts:
        order = {int(g): i for i, g in enumerate(facts.positions.tolist())}
        funnel.selector_error = min(firsts, key=lambda e: order[e[0]])[1]

    candidates = [int(g) for g in devices.tolist()]
    if alt.mode == "All":
        candidates = [g for g in candidates if facts.statically_fits(g, alt.capacity)]
        funnel.needs = len(candidates)
    before = len(candidates)
    candidates = [g for g in candidates if facts.available(g, alt.admin)]
    funnel.available = len(candidates)
    funnel.in_use = before - len(candidates)
    kept = []
    for g in candidates:
        shortfalls = facts.counter_shortfalls(g)
        if shortfalls:
            funnel._counter_shorts.extend(shortfalls)
        else:
            kept.append(g)
    candidates = kept
    funnel.counters = len(candidates)
    candidates = [g for g in candidates if facts.capacity_fits(g, alt.capacity)]
    funnel.capacity = len(candidates)
    candidates = [g for g in candidates if not facts.tainted(g, alt.tolerations)]
    funnel.taints = len(candidates)
    return funnel


# --------------------------------------------------------------------------------------
# Blockers
# --------------------------------------------------------------------------------------


def _blockers(
    snapshot: Snapshot,
    facts: _NodeFacts,
    claims: list[ResourceClaim],
    node: Node,
    funnels: list[Funnel],
    verdict: _Verdict,
    timeout: float | None,
) -> list[Blocker]:
    blockers: list[Blocker] = []
    for f in funnels:
        if f.selector_error is not None:
            blockers.append(
                Blocker("selector", f.selector_error, {"claim": f.claim, "request": f.request})
            )
    for message in dict.fromkeys(facts.node_errors):
        blockers.append(Blocker("selector", message, {}))
    short = _short_requests(funnels)
    unsearchable = [
        f"{p.id} ({'invalid' if p.invalid else 'incomplete'})"
        for p in facts.view.pools
        if p.invalid or p.incomplete
    ]
    for key, fs in short.items():
        blocker = _request_blocker(key, fs, len(claims) > 1)
        if unsearchable and blocker.details.get("stage") == "onNode":
            blocker.message += "; not searchable: pool " + ", pool ".join(unsearchable)
        blockers.append(blocker)
    for f in (f for fs in short.values() for f in fs if f.short_at == "counters"):
        blockers.extend(_counter_blockers(f))
    if short or verdict.status in ("error", "timeout"):
        return _dedupe(blockers)
    # Every request has enough candidates on its own: the search was blocked by what
    # ties the requests together. Ask the allocator what would have made it fit.
    found = _constraint_blockers(snapshot, claims, node, timeout)
    found += _relaxed_counter_blockers(snapshot, facts, claims, node, timeout)
    if not found:
        found = _together_blockers(facts, claims, funnels)
    if not found:
        found = [
            Blocker(
                "search",
                "every request has enough devices on its own, but no combination of them "
                "satisfies all requests together",
                {},
            )
        ]
    return _dedupe(blockers + found)


def _dedupe(blockers: list[Blocker]) -> list[Blocker]:
    seen: set[str] = set()
    out = []
    for b in blockers:
        if b.message not in seen:
            seen.add(b.message)
            out.append(b)
    return out


def _short_requests(funnels: list[Funnel]) -> dict[tuple[str, str], list[Funnel]]:
    """Requests all of whose alternatives are short, keyed by (claim, request name)."""
    by_request: dict[tuple[str, str], list[Funnel]] = {}
    for f in funnels:
        by_request.setdefault((f.claim, f.request.split("/", 1)[0]), []).append(f)
    return {k: fs for k, fs in by_request.items() if all(f.short for f in fs)}


def _request_blocker(key: tuple[str, str], funnels: list[Funnel], name_claim: bool) -> Blocker:
    claim, request = key
    who = f"claim {claim}, request {request}" if name_claim else f"request {request}"
    if len(funnels) == 1 and funnels[0].request == request:
        f = funnels[0]
        message = f"{who}: {f.shortfall()}"
        stage = "claimLimit" if f.over_claim_limit else f.short_at
    else:
        parts = [f"{f.request.split('/', 1)[1]} {f.shortfall()}" for f in funnels]
        message = f"{who}: no alternative fits: " + "; ".join(parts)
        stage = None
    kind = "claim-limit" if all(f.over_claim_limit for f in funnels) else "request"
    details: dict[str, Any] = {"claim": claim, "request": request}
    if stage is not None:
        details["stage"] = stage
    return Blocker(kind, message, details)


def _counter_set_blocker(
    pool: PoolID,
    counter_set: str,
    counters: list[tuple[str, Quantity, Quantity]],
    tail: str,
    extra: dict[str, Any],
) -> Blocker:
    """One counter set with the counters it lacks: (name, remaining, needed)."""
    shown = "; ".join(f"{n} remaining {r}, needed {d}" for n, r, d in counters[:3])
    if len(counters) > 3:
        shown += f"; {len(counters) - 3} more"
    return Blocker(
        "counter",
        f"pool {pool}, counter set {counter_set}: {shown} {tail}",
        {
            "pool": str(pool),
            "counterSet": counter_set,
            "counters": [
                {"counter": n, "remaining": str(r), "needed": str(d)} for n, r, d in counters
            ],
            **extra,
        },
    )


def _counter_blockers(f: Funnel) -> list[Blocker]:
    """The counter sets that keep this request's otherwise available devices out: per
    counter, what is left and the least any of those devices needs."""
    least: dict[tuple[PoolID, str], dict[str, tuple[Quantity, Quantity]]] = {}
    devices: dict[tuple[PoolID, str], set[int]] = {}
    for s in f._counter_shorts:
        key = (s.pool, s.counter_set)
        counters = least.setdefault(key, {})
        devices.setdefault(key, set()).add(s.device)
        have = counters.get(s.counter)
        if have is None or s.needed.cmp(have[1]) < 0:
            counters[s.counter] = (s.remaining, s.needed)
    blockers = []
    for (pool, counter_set), counters in least.items():
        rows = [(n, r, d) for n, (r, d) in sorted(counters.items())]
        n = len(devices[(pool, counter_set)])
        blockers.append(
            _counter_set_blocker(
                pool,
                counter_set,
                rows,
                f"({n} device{'s' if n != 1 else ''} of request {f.request} blocked)",
                {"request": f.request, "devices": n},
            )
        )
    return blockers


def _describe(constraint: DeviceConstraint) -> tuple[str, str]:
    if constraint.match_attribute is not None:
        return "matchAttribute", constraint.match_attribute
    if constraint.distinct_attribute is not None:
        return "distinctAttribute", constraint.distinct_attribute
    return "unknown", ""


def _without_constraints(
    claims: list[ResourceClaim], drop: set[tuple[int, int]]
) -> list[ResourceClaim]:
    """Copies of the claims without the constraints named (claim index, constraint index)."""
    out = []
    for c, claim in enumerate(claims):
        kept = [k for i, k in enumerate(claim.spec.devices.constraints) if (c, i) not in drop]
        if len(kept) == len(claim.spec.devices.constraints):
            out.append(claim)
            continue
        devices = replace(claim.spec.devices, constraints=kept)
        out.append(replace(claim, spec=replace(claim.spec, devices=devices)))
    return out


def _constraint_blocker(claim: ResourceClaim, index: int, alone: bool) -> Blocker:
    constraint = claim.spec.devices.constraints[index]
    kind, attribute = _describe(constraint)
    requests = ", ".join(constraint.requests) if constraint.requests else "all requests"
    effect = "without it the claims fit" if alone else "without the constraints the claims fit"
    return Blocker(
        "constraint",
        f"claim {claim.key}, constraint #{index} ({kind} {attribute}, {requests}): {effect}",
        {
            "claim": claim.key,
            "index": index,
            "type": kind,
            "attribute": attribute,
            "requests": list(constraint.requests),
            "alone": alone,
        },
    )


def _constraint_blockers(
    snapshot: Snapshot, claims: list[ResourceClaim], node: Node, timeout: float | None
) -> list[Blocker]:
    where = [
        (c, i) for c, claim in enumerate(claims) for i in range(len(claim.spec.devices.constraints))
    ]
    found = []
    for c, i in where:
        trial = _without_constraints(claims, {(c, i)})
        if _ask(snapshot, trial, node, timeout).status == "fits":
            found.append(_constraint_blocker(claims[c], i, alone=True))
    if found or len(where) < 2:
        return found
    if _ask(snapshot, _without_constraints(claims, set(where)), node, timeout).status == "fits":
        return [_constraint_blocker(claims[c], i, alone=False) for c, i in where]
    return []


def _relaxed_snapshot(
    snapshot: Snapshot, view: NodeView, node: Node, relax: set[tuple[PoolID, str]]
) -> Snapshot:
    """The node's pools only, with the named counter sets large enough for any choice.

    Only slices of pools the node sees matter to an allocation on it; a relaxed set
    gets, per counter, what the whole pool's devices could ever consume on top.
    """
    pools = {p.id for p in view.pools}
    slices = [rs for rs in snapshot.slices if PoolID(rs.spec.driver, rs.spec.pool.name) in pools]
    totals: dict[tuple[PoolID, str], dict[str, Quantity]] = {}
    for rs in slices:
        pid = PoolID(rs.spec.driver, rs.spec.pool.name)
        for device in rs.spec.devices:
            for set_name, counters in _consumption(device).items():
                sums = totals.setdefault((pid, set_name), {})
                for name, amount in counters.items():
                    sums[name] = sums[name].add(amount) if name in sums else amount
    relaxed: list[ResourceSlice] = []
    for rs in slices:
        pid = PoolID(rs.spec.driver, rs.spec.pool.name)
        if not any((pid, cs.name) in relax for cs in rs.spec.shared_counters):
            relaxed.append(rs)
            continue
        sets = []
        for cs in rs.spec.shared_counters:
            if (pid, cs.name) not in relax:
                sets.append(cs)
                continue
            extra = totals.get((pid, cs.name), {})
            sets.append(
                CounterSet(
                    cs.name,
                    {
                        n: Counter(c.value.add(extra[n]) if n in extra else c.value)
                        for n, c in cs.counters.items()
                    },
                )
            )
        relaxed.append(replace(rs, spec=replace(rs.spec, shared_counters=sets)))
    return Snapshot.build(
        relaxed,
        list(snapshot.classes.values()),
        snapshot.allocated_claims,
        features=snapshot.features,
        nodes=[node],
    )


def _relaxed_counter_blockers(
    snapshot: Snapshot,
    facts: _NodeFacts,
    claims: list[ResourceClaim],
    node: Node,
    timeout: float | None,
) -> list[Blocker]:
    """Counter sets whose exhaustion blocked the search: with them unlimited the claims
    fit, and the solution found then needs more than they have left."""
    every = {(p.id, s) for p in facts.view.pools for s in p.counter_sets}
    if not every or not snapshot.features.partitionable_devices:
        return []
    whole = _ask(_relaxed_snapshot(snapshot, facts.view, node, every), claims, node, timeout)
    if whole.status != "fits":
        return []
    singles = []
    for key in sorted(every):
        trial = _ask(_relaxed_snapshot(snapshot, facts.view, node, {key}), claims, node, timeout)
        if trial.status == "fits":
            singles.append((key, trial))
    chosen = singles or [(key, whole) for key in sorted(every)]
    blockers = []
    for (pid, set_name), trial in chosen:
        need = _needed(facts, trial.results or [], pid, set_name)
        left = facts.remaining.get(pid, {}).get(set_name, {})
        rows = [
            (name, left.get(name, _ZERO), need[name])
            for name in sorted(need)
            if need[name].cmp(left.get(name, _ZERO)) > 0
        ]
        if rows:
            tail = (
                "(the claims fit if this set had enough)"
                if singles
                else "(the claims fit if every counter set had enough)"
            )
            blockers.append(
                _counter_set_blocker(pid, set_name, rows, tail, {"alone": bool(singles)})
            )
    return blockers


def _needed(
    facts: _NodeFacts, results: list[AllocationResult], pid: PoolID, set_name: str
) -> dict[str, Quantity]:
    """What the devices of ``results`` in that pool consume of one counter set
    (each device once; a device with a committed share has paid already)."""
    by_id = {facts.snap.device_id(g): g for g in facts.pool_of}
    need: dict[str, Quantity] = {}
    seen: set[DeviceID] = set()
    for result in results:
        for r in result.devices.results:
            device_id = DeviceID(r.driver, r.pool, r.device)
            if device_id.pool_id != pid or device_id in seen or device_id not in by_id:
                continue
            seen.add(device_id)
            device = facts.snap.device(by_id[device_id])
            if facts.multi(device) and facts.committed_share(device_id):
                continue
            for name, amount in _consumption(device).get(set_name, {}).items():
                need[name] = need[name].add(amount) if name in need else amount
    return need


def _together_blockers(
    facts: _NodeFacts, claims: list[ResourceClaim], funnels: list[Funnel]
) -> list[Blocker]:
    """Requests that need more devices between them than they have candidates in all.

    Only plain exclusive requests are counted (no alternatives, no admin access, no
    devices allowing multiple allocations), where the count is a true lower bound.
    """
    candidates: dict[tuple[str, str], set[int]] = {}
    needs: dict[tuple[str, str], int] = {}
    for requests in _alternatives(claims):
        for alts in requests:
            if len(alts) != 1 or alts[0].admin or alts[0].mode != "ExactCount":
                continue
            alt = alts[0]
            claim = claims[alt.claim]
            device_class = facts.snap.classes.get(alt.class_name)
            if device_class is None:
                continue
            devices, _, _ = facts.select(facts.positions, device_class.spec.selectors, "")
            devices, _, _ = facts.select(devices, alt.selectors, "")
            found = set()
            for g in (int(x) for x in devices.tolist()):
                if facts.multi(facts.snap.device(g)):
                    break
                if (
                    facts.available(g, False)
                    and not facts.counter_shortfalls(g)
                    and facts.capacity_fits(g, alt.capacity)
                    and not facts.tainted(g, alt.tolerations)
                ):
                    found.add(g)
            else:
                candidates[(claim.key, alt.name)] = found
                needs[(claim.key, alt.name)] = alt.count
    if len(candidates) < 2:
        return []
    union: set[int] = set().union(*candidates.values())
    total = sum(needs.values())
    if total <= len(union):
        return []
    names = ", ".join(f"{c}/{r}" if len(claims) > 1 else r for c, r in candidates)
    return [
        Blocker(
            "together",
            f"requests {names} together need {total} devices, "
            f"but only {len(union)} distinct devices can serve them",
            {
                "requests": [f"{c}/{r}" for c, r in candidates],
                "needs": total,
                "candidates": len(union),
            },
        )
    ]


# --------------------------------------------------------------------------------------
# Summary
# --------------------------------------------------------------------------------------


def _summary(out: Explanation, claims: list[ResourceClaim]) -> str:
    if out.status == "fits":
        parts = [
            f"{claim} gets {', '.join(devs) or 'no devices'}"
            for claim, devs in out.allocations.items()
        ]
        return "fits: " + "; ".join(parts) if parts else "fits: no claims to allocate"
    if out.status == "node-error":
        reasons = [f"pool {p.pool}: {p.reason}" for p in out.pools if p.state == "invalid"]
        return f"{out.error}: " + "; ".join(reasons) if reasons else (out.error or "node error")
    if out.status in ("error", "timeout"):
        return out.error or out.status
    if out.blockers:
        return out.blockers[0].message
    return "does not fit"


__all__ = ["STAGES", "Blocker", "Explanation", "Funnel", "PoolNote", "explain"]
