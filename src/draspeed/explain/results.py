"""What :func:`~draspeed.explain.explain` answers: :class:`Explanation` with its
:class:`Funnel` per request, :class:`PoolNote` per unsearchable pool and
:class:`Blocker` per reason; :data:`STAGES` names the funnel's stages.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from draspeed.api.limits import ALLOCATION_RESULTS_MAX_SIZE
from draspeed.engine.feasibility import Status
from draspeed.quantity_sum import QuantitySum
from draspeed.rules.ids import PoolID

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


@dataclass(slots=True)
class CounterShort:
    """One counter a device would overdraw: what is left and what it needs."""

    device: int  # global index
    pool: PoolID
    counter_set: str
    counter: str
    remaining: QuantitySum
    needed: QuantitySum


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
    _counter_shorts: list[CounterShort] = field(default_factory=list, repr=False, compare=False)

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

    ``status`` is the allocator's answer (as in :class:`~draspeed.engine.feasibility.NodeOutcome`);
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
