"""One ``Allocate`` call turned into arrays for the compiled search.

The pre-flight runs here, in upstream's order, and raises upstream's errors:
feature checks per request, request validation (selectors, admin access, class),
All-mode device lists, the claim size limit, constraint types.  Then every fact
the search needs that cannot change while it runs is decided once per
(alternative, position): the selector verdict (with the message of a selector
error, raised only if the search reaches that device, as upstream does), taints,
static capacity verdicts.  Constraint attribute values become small integer codes.

Three caches keep repeated questions cheap, all on the snapshot's ``NodeView``
(so they live exactly as long as the snapshot): the node's claims-independent
arrays (:class:`NodeArrays`), selector verdict rows per (class, request selectors),
and whole prepared problems per claims signature -- the same pod's claims asked of
the same node again cost a lookup and the search.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import msgspec
import numpy as np

from draspeed import _core
from draspeed.api.model import (
    AllocationResult,
    CapacityRequirements,
    Device,
    DeviceAttribute,
    DeviceClass,
    DeviceSelector,
    DeviceToleration,
    ResourceClaim,
)
from draspeed.errors import AllocationError
from draspeed.rules.capacity import UnknownCapacityError, consumed_capacity, request_fits
from draspeed.rules.ids import DeviceID
from draspeed.rules.node_selection import NodeSelectorError, node_matches
from draspeed.rules.tolerations import taint_blocks
from draspeed.snapshot import ERROR, FALSE, NodeView, Snapshot

if TYPE_CHECKING:
    from draspeed.quantity import Quantity

MAX_RESULTS = 32  # resource.k8s.io AllocationResultsMaxSize
SEL_NO, SEL_YES, SEL_ERROR = _core.SEL["no"], _core.SEL["yes"], _core.SEL["error"]
CAP_FAIL, CAP_OK, CAP_DYNAMIC = _core.CAP["fail"], _core.CAP["ok"], _core.CAP["dynamic"]
_INT64_LIMIT = 2**62  # headroom: sums of two in-range terms cannot wrap before the check
_PREPARED_PER_NODE = 64  # distinct claim sets remembered per node
_signature_encoder = msgspec.msgpack.Encoder(enc_hook=str)

# (from_class, selector index, compile error, runtime error): formatted when raised.
SelectorFailure = tuple[bool, int, str | None, str | None]


@dataclass(slots=True)
class Alternative:
    """A request without subrequests, or one subrequest of a firstAvailable list."""

    claim: int
    request: int  # index in the claim
    sub: int | None  # subrequest index, or None
    name: str  # as upstream's errors name it (the subrequest's own name for a subrequest)
    parent: str | None  # the request name, for a subrequest
    device_class: DeviceClass
    selectors: list[DeviceSelector]
    all_mode: bool
    count: int
    admin: bool
    tolerations: list[DeviceToleration]
    capacity: dict[str, Quantity] = field(default_factory=dict)
    all_positions: list[int] = field(default_factory=list)


@dataclass(slots=True)
class Prepared:
    """A pre-flighted call: the alternatives and the arrays for ``_core.Problem``.

    Immutable once built, so one may serve many calls (the search keeps its own state).
    """

    view: NodeView
    alternatives: list[Alternative]
    request_alts: list[list[int]]  # global request index -> its alternatives
    request_has_subs: list[bool]
    claim_requests: list[list[int]]  # claim -> global request indices
    selector_errors: dict[tuple[int, int], SelectorFailure]  # (alternative, position)
    problem: _core.Problem
    share_use: dict[tuple[int, int], dict[str, Quantity]]  # consumed capacity of shares
    # Built results per (picks, chosen subrequests), copied for each caller.
    results: dict[Any, list[AllocationResult]] = field(default_factory=dict)


class NodeArrays:
    """What the search needs of one node that no claim changes; built once per NodeView."""

    def __init__(self, snap: Snapshot, view: NodeView) -> None:
        f = snap.features
        positions = view.positions.tolist()
        self.devices: list[Device] = [snap.device(g) for g in positions]
        self.ids: list[DeviceID] = [snap.device_id(g) for g in positions]
        devices, ids, allocated = self.devices, self.ids, snap.allocated
        P = self.n = len(devices)
        self.in_use = np.fromiter((i in allocated.devices for i in ids), dtype=bool, count=P)
        self.multi = np.fromiter(
            (f.consumable_capacity and bool(d.allow_multiple_allocations) for d in devices),
            dtype=bool,
            count=P,
        )
        # A committed share (with or without consumedCapacity) has paid the device's
        # counters and keeps it from being allocated whole (upstream #140437, #140798).
        self.committed = np.fromiter(
            (
                f.consumable_capacity
                and (allocated.has_share(i) or i in allocated.consumed_capacity)
                for i in ids
            ),
            dtype=bool,
            count=P,
        )
        self.counters_blocked = np.fromiter(
            (not f.partitionable_devices and bool(d.consumes_counters) for d in devices),
            dtype=bool,
            count=P,
        )
        self.tainted = [p for p, d in enumerate(devices) if d.taints]
        self.has_binding_conditions = [p for p, d in enumerate(devices) if d.binding_conditions]
        self.per_device_node = [
            p
            for p, g in enumerate(positions)
            if snap.device_slice_of(g).spec.per_device_node_selection
        ]
        self._counters(view, f.partitionable_devices)
        self._capacities(snap)
        self.attribute_values: dict[str, list[list[tuple[str, object]]]] = {}
        self.plain_capacity: np.ndarray | None = None

    def _counters(self, view: NodeView, partitionable: bool) -> None:
        """Counter slots per (pool, set, counter), each in its own exact unit (gcd)."""
        slot_base: list[int] = []
        slot_terms: list[list[int]] = []
        for available in view.pool_available:
            slot_base.append(len(slot_terms))
            slot_terms.extend([q.nanos] for q in available)
        index = [
            {name: slot_base[i] + k for k, name in enumerate(slots)}
            for i, slots in enumerate(view.pool_slots)
        ]
        cons_ptr, cons_slot, cons_nanos = [0], [], []
        for p, device in enumerate(self.devices):
            if partitionable:
                slots = index[int(view.position_pool[p])]
                for use in device.consumes_counters:
                    for name, counter in use.counters.items():
                        slot = slots[(use.counter_set, name)]
                        cons_slot.append(slot)
                        cons_nanos.append(counter.value.nanos)
                        slot_terms[slot].append(counter.value.nanos)
            cons_ptr.append(len(cons_slot))
        units = [_unit(terms) for terms in slot_terms]
        self.pool_slot_ptr = [*slot_base, len(slot_terms)]
        self.slot_available = [terms[0] // u for terms, u in zip(slot_terms, units, strict=True)]
        self.cons_ptr, self.cons_slot = cons_ptr, cons_slot
        self.cons_amount = [n // units[s] for n, s in zip(cons_nanos, cons_slot, strict=True)]
        # |available| and the sum of |consumption| per slot, for the worst-case bound.
        self.slot_spread = [abs(v) for v in self.slot_available]
        self.slot_charges = [0] * len(slot_terms)
        for amount, slot in zip(self.cons_amount, cons_slot, strict=True):
            self.slot_charges[slot] += abs(amount)

    def _capacities(self, snap: Snapshot) -> None:
        """Capacity entries of shared devices: the only capacity that runs out mid-search."""
        self.cap_ptr = [0]
        self.cap_room_nanos: list[int] = []
        self.cap_names: list[str] = []
        for p, device in enumerate(self.devices):
            if self.multi[p]:
                already = snap.allocated.consumed_capacity.get(self.ids[p]) or {}
                for name in sorted(device.capacity):
                    used = already.get(name)
                    room = device.capacity[name].value.nanos - (used.nanos if used else 0)
                    self.cap_room_nanos.append(room)
                    self.cap_names.append(name)
            self.cap_ptr.append(len(self.cap_room_nanos))

    def values_of(self, attribute: str, list_types: bool) -> list[list[tuple[str, object]]]:
        """Each position's values of one attribute, as a constraint compares them."""
        found = self.attribute_values.get(attribute)
        if found is None:
            found = [
                _attribute_values(d.attributes.get(attribute), list_types) for d in self.devices
            ]
            self.attribute_values[attribute] = found
        return found


def _fail(message: str) -> AllocationError:
    return AllocationError(message)


def claims_signature(claims: list[ResourceClaim]) -> bytes:
    """A key for a claim set: names and specs (what a prepared problem depends on)."""
    specs = [(c.key, c.spec) for c in claims]
    try:
        return _signature_encoder.encode(specs)
    except (OverflowError, TypeError, msgspec.EncodeError):
        # Opaque parameters may hold what msgpack cannot (ints beyond 64 bits): the
        # model's repr is slower but total and just as deterministic.
        return repr(specs).encode()


def prepare(snapshot: Snapshot, view: NodeView, claims: list[ResourceClaim]) -> Prepared:
    """The prepared problem for ``claims`` on ``view``'s node, built once and remembered.

    The key holds every claim's name and spec, so a hit is the same question; results
    and messages are made from the caller's claim objects. Pre-flight errors are not
    remembered: they are raised again on every call.
    """
    key = ("prepared", claims_signature(claims))
    found = view.cache.get(key)
    if found is None:
        found = ProblemBuilder(snapshot, view, claims).build()
        remembered = [k for k in view.cache if isinstance(k, tuple) and k[0] == "prepared"]
        if len(remembered) >= _PREPARED_PER_NODE:
            view.cache.pop(remembered[0], None)
        view.cache[key] = found
    return found


def selector_error_text(
    snapshot: Snapshot,
    view: NodeView,
    claims: list[ResourceClaim],
    alt: Alternative,
    failure: SelectorFailure,
    p: int,
) -> str:
    """Upstream's message for the selector that failed on position p for ``alt``."""
    from_class, index, compile_error, runtime_error = failure
    if from_class:
        who = f"class {alt.device_class.metadata.name}"
    else:
        who = f"claim {claims[alt.claim].key}"
    if compile_error is not None:
        return f"{who}: selector #{index}: CEL compile error: {compile_error}"
    if index < 0:  # per-device node selection failed to parse: upstream returns it bare
        return runtime_error or ""
    device = snapshot.device_id(int(view.positions[p]))
    return f"{who}: selector #{index} on device {device}: CEL runtime error: {runtime_error}"


class ProblemBuilder:
    """Builds a :class:`Prepared` for one (claims, node) against one snapshot."""

    def __init__(self, snapshot: Snapshot, view: NodeView, claims: list[ResourceClaim]):
        self.snap = snapshot
        self.view = view
        self.claims = claims
        self.features = snapshot.features
        arrays = view.cache.get("arrays")
        if arrays is None:
            arrays = view.cache["arrays"] = NodeArrays(snapshot, view)
        self.node: NodeArrays = arrays
        self.n_pos = len(view.positions)
        self.alts: list[Alternative] = []
        self.request_alts: list[list[int]] = []
        self.request_has_subs: list[bool] = []
        self.claim_requests: list[list[int]] = []
        self.selector_errors: dict[tuple[int, int], SelectorFailure] = {}
        self._selectable_rows: list[np.ndarray] = []
        self._capacity_rows: list[np.ndarray] = []

    # ----------------------------------------------------------------------------------
    # Pre-flight (upstream order)
    # ----------------------------------------------------------------------------------

    def preflight(self) -> None:
        f = self.features
        for c, claim in enumerate(self.claims):
            requests_of_claim: list[int] = []
            min_devices = 0
            for r, request in enumerate(claim.spec.devices.requests):
                subs = request.first_available
                if subs and not f.prioritized_list:
                    raise _fail(
                        f"claim {claim.key}, request {request.name}: has subrequests, "
                        "but the DRAPrioritizedList feature is disabled"
                    )
                if not f.consumable_capacity:
                    if request.exactly is not None and request.exactly.capacity is not None:
                        raise _fail(
                            f"claim {claim.key}, request {request.name}: has capacity "
                            "requests, but the DRAConsumableCapacity feature is disabled"
                        )
                    for sub in subs:
                        if sub.capacity is not None:
                            raise _fail(
                                f"claim {claim.key}, subrequest {sub.name}: has capacity "
                                "requests, but the DRAConsumableCapacity feature is disabled"
                            )
                alt_ids: list[int] = []
                if subs:
                    fewest = math.inf
                    for i, sub in enumerate(subs):
                        alt = self._validate(
                            c,
                            claim,
                            r,
                            i,
                            sub.name,
                            request.name,
                            sub.device_class_name,
                            sub.selectors,
                            sub.allocation_mode,
                            sub.count,
                            None,
                            sub.tolerations,
                            sub.capacity,
                        )
                        alt_ids.append(alt)
                        fewest = min(fewest, self.alts[alt].count)
                    min_devices += int(fewest)
                else:
                    ex = request.exactly
                    alt = self._validate(
                        c,
                        claim,
                        r,
                        None,
                        request.name,
                        None,
                        ex.device_class_name if ex else "",
                        ex.selectors if ex else [],
                        ex.allocation_mode if ex else "ExactCount",
                        ex.count if ex else 1,
                        ex.admin_access if ex else None,
                        ex.tolerations if ex else [],
                        ex.capacity if ex else None,
                    )
                    alt_ids.append(alt)
                    min_devices += self.alts[alt].count
                requests_of_claim.append(len(self.request_alts))
                self.request_alts.append(alt_ids)
                self.request_has_subs.append(bool(subs))
            if min_devices > MAX_RESULTS:
                raise _fail(
                    f"claim {claim.key}: number of requested devices {min_devices} exceeds "
                    f"the claim limit of {MAX_RESULTS}"
                )
            for i, constraint in enumerate(claim.spec.devices.constraints):
                if constraint.match_attribute is None and constraint.distinct_attribute is None:
                    raise _fail(
                        f"claim {claim.key}, constraint #{i}: empty constraint "
                        "(unsupported constraint type?)"
                    )
            self.claim_requests.append(requests_of_claim)

    def _validate(
        self,
        c: int,
        claim: ResourceClaim,
        r: int,
        sub: int | None,
        name: str,
        parent: str | None,
        class_name: str,
        selectors: list[DeviceSelector],
        mode: str,
        count: int,
        admin_access: bool | None,
        tolerations: list[DeviceToleration],
        capacity: CapacityRequirements | None,
    ) -> int:
        for i, selector in enumerate(selectors):
            if selector.cel is None:
                raise _fail(
                    f"claim {claim.key}, request {name}, selector #{i}: CEL expression "
                    "empty (unsupported selector type?)"
                )
        if not self.features.admin_access and admin_access is not None:
            raise _fail(
                f"claim {claim.key}, request {name}: admin access is requested, "
                "but the feature is disabled"
            )
        if class_name == "":
            raise _fail(
                f"claim {claim.key}, request {name}: missing device class name "
                "(unsupported request type?)"
            )
        device_class = self.snap.classes.get(class_name)
        if device_class is None:
            raise _fail(
                f"claim {claim.key}, request {name}: could not retrieve device class "
                f'{class_name}: deviceclass.resource.k8s.io "{class_name}" not found'
            )
        alt = Alternative(
            claim=c,
            request=r,
            sub=sub,
            name=name,
            parent=parent,
            device_class=device_class,
            selectors=selectors,
            all_mode=False,
            count=0,
            admin=bool(admin_access),
            tolerations=tolerations,
            capacity=dict(capacity.requests) if capacity else {},
        )
        index = len(self.alts)
        self.alts.append(alt)
        self._selectable_rows.append(self._selectable(index))
        self._capacity_rows.append(self._capacity_row(index))
        if mode == "ExactCount":
            alt.count = count
        elif mode == "All":
            alt.all_mode = True
            self._all_devices(index, claim)
            alt.count = len(alt.all_positions)
        else:
            raise _fail(f"claim {claim.key}, request {name}: unsupported count mode {mode}")
        return index

    def _all_devices(self, a: int, claim: ResourceClaim) -> None:
        """upstream's All-mode device list: every selectable device of every pool."""
        alt = self.alts[a]
        row = self._selectable_rows[a]
        cursor = 0
        for pool in self.view.pools:
            if pool.incomplete:
                raise _fail(
                    f"claim {claim.key}, request {alt.name}: asks for all devices, but "
                    f"resource pool {pool.id} is currently being updated"
                )
            if pool.invalid:
                raise _fail(
                    f"claim {claim.key}, request {alt.name}: asks for all devices, but "
                    f"resource pool {pool.id} is currently invalid"
                )
            for p in range(cursor, cursor + len(pool.devices)):
                verdict = row[p]
                if verdict == SEL_ERROR:
                    raise _fail(
                        selector_error_text(
                            self.snap, self.view, self.claims, alt, self.selector_errors[(a, p)], p
                        )
                    )
                if verdict != SEL_YES:
                    continue
                # Collected by static capacity, ignoring what committed shares use, so a
                # matching but used-up device makes the request fail (upstream #140769).
                if (
                    self.features.consumable_capacity
                    and self._static_capacity(a, p, ignore_use=True) == CAP_FAIL
                ):
                    continue
                alt.all_positions.append(p)
            cursor += len(pool.devices)

    # ----------------------------------------------------------------------------------
    # Static verdicts
    # ----------------------------------------------------------------------------------

    def _selectable(self, a: int) -> np.ndarray:
        """Selector verdict per position (upstream isSelectable, eagerly), cached per
        (class, request selectors) on the node."""
        alt = self.alts[a]
        key = (
            "selectable",
            alt.device_class.metadata.name,
            tuple(s.cel.expression for s in alt.selectors if s.cel is not None),
        )
        cached = self.view.cache.get(key)
        if cached is None:
            cached = self.view.cache[key] = self._compute_selectable(alt)
        row, failures = cached
        for p, failure in failures.items():
            self.selector_errors[(a, p)] = failure
        return row

    def _compute_selectable(
        self, alt: Alternative
    ) -> tuple[np.ndarray, dict[int, SelectorFailure]]:
        snap, view, node = self.snap, self.view, self.node
        positions = view.positions
        row = np.full(self.n_pos, SEL_YES, dtype=np.uint8)
        failures: dict[int, SelectorFailure] = {}
        if not self.features.device_binding_and_status:
            row[node.has_binding_conditions] = SEL_NO
        sources = [(True, i, s) for i, s in enumerate(alt.device_class.spec.selectors)]
        sources += [(False, i, s) for i, s in enumerate(alt.selectors)]
        for from_class, i, selector in sources:
            pending = np.flatnonzero(row == SEL_YES)
            if not len(pending):
                break
            if selector.cel is None:  # only a class can get here; upstream would crash
                raise _fail(
                    f"class {alt.device_class.metadata.name}: selector #{i}: "
                    "CEL expression empty (unsupported selector type?)"
                )
            results = snap.selector_results(selector.cel.expression)
            verdict = snap.evaluate(results, positions[pending])
            row[pending[verdict == FALSE]] = SEL_NO
            for p in pending[verdict == ERROR].tolist():
                row[p] = SEL_ERROR
                failures[p] = (
                    from_class,
                    i,
                    results.compile_error,
                    results.messages.get(int(positions[p])),
                )
        for p in node.per_device_node:
            if row[p] != SEL_YES:
                continue
            device = node.devices[p]
            try:
                if not node_matches(
                    view.node, device.node_name or "", bool(device.all_nodes), device.node_selector
                ):
                    row[p] = SEL_NO
            except NodeSelectorError as exc:
                row[p] = SEL_ERROR
                failures[p] = (False, -1, None, str(exc))
        return row, failures

    def _capacity_row(self, a: int) -> np.ndarray:
        """Static capacity verdict per position (CAP_OK everywhere without the feature)."""
        if not self.features.consumable_capacity:
            return np.full(self.n_pos, CAP_OK, dtype=np.uint8)
        if not self.alts[a].capacity and self.node.plain_capacity is not None:
            return self.node.plain_capacity
        row = np.fromiter(
            (self._static_capacity(a, p) for p in range(self.n_pos)),
            dtype=np.uint8,
            count=self.n_pos,
        )
        if not self.alts[a].capacity:
            # Without capacity requests the verdict is the device's own: same for every alt.
            self.node.plain_capacity = row
        return row

    def _static_capacity(self, a: int, p: int, *, ignore_use: bool = False) -> int:
        """upstream CmpRequestOverCapacity with nothing in flight."""
        device, device_id = self.node.devices[p], self.node.ids[p]
        already = {} if ignore_use else self.snap.allocated.consumed_capacity.get(device_id, {})
        if not self.alts[a].capacity and not already and all(
            c.request_policy is None for c in device.capacity.values()
        ):
            # Nothing requested, no policy, nothing used: each capacity is consumed whole,
            # which always fits (upstream's check would compute value <= value).
            return CAP_DYNAMIC if self.node.multi[p] else CAP_OK
        try:
            fits = request_fits(
                already, self.alts[a].capacity, device.capacity, {}, driver=device_id.driver
            )
        except UnknownCapacityError:
            return CAP_FAIL
        if not fits:
            return CAP_FAIL
        return CAP_DYNAMIC if self.node.multi[p] else CAP_OK

    # ----------------------------------------------------------------------------------
    # Arrays
    # ----------------------------------------------------------------------------------

    def build(self) -> Prepared:
        self.preflight()
        f, node = self.features, self.node
        P, A = self.n_pos, len(self.alts)
        claims_n = max(len(self.claims), 1)

        selectable = np.stack(self._selectable_rows) if A else np.zeros((0, P), np.uint8)
        capacity = np.stack(self._capacity_rows) if A else np.zeros((0, P), np.uint8)
        taint_rows = np.zeros((A, P), dtype=np.uint8)
        for a, alt in enumerate(self.alts):
            for p in node.tainted:
                taint_rows[a, p] = taint_blocks(node.devices[p].taints, alt.tolerations)

        # What could be allocated at all, ignoring what is in flight: an upper bound the
        # core uses to skip subtrees without solutions (never a subtree that errors).
        possible = selectable == SEL_YES
        if f.consumable_capacity:
            possible &= capacity != CAP_FAIL
        if f.device_taints:
            possible &= taint_rows == 0
        possible &= ~node.counters_blocked[None, :]
        admin = np.fromiter((alt.admin for alt in self.alts), dtype=bool, count=A)
        possible[~admin] &= ~(node.in_use | (node.committed & ~node.multi))[None, :]
        errors = selectable == SEL_ERROR
        last_error = [int(np.flatnonzero(row)[-1]) if row.any() else -1 for row in errors]
        rest = self._rest_bounds(possible, last_error)

        # Exact sums: int64 unless a slot's worst case could leave it.
        cap_ptr, K = node.cap_ptr, len(node.cap_room_nanos)
        share_use: dict[tuple[int, int], dict[str, Quantity]] = {}
        use_nanos = [[0] * K for _ in range(A)]
        if K:
            for a, alt in enumerate(self.alts):
                for p in np.flatnonzero(capacity[a] == CAP_DYNAMIC).tolist():
                    share = consumed_capacity(
                        alt.capacity, node.devices[p].capacity, driver=node.ids[p].driver
                    )
                    share_use[(a, p)] = share
                    for k in range(cap_ptr[p], cap_ptr[p + 1]):
                        use_nanos[a][k] = share[node.cap_names[k]].nanos
        elif f.consumable_capacity:
            for a in range(A):
                for p in np.flatnonzero(capacity[a] == CAP_DYNAMIC).tolist():
                    share_use[(a, p)] = {}
        cap_units = [
            _unit([node.cap_room_nanos[k], *(use_nanos[a][k] for a in range(A))]) for k in range(K)
        ]
        cap_room = [node.cap_room_nanos[k] // cap_units[k] for k in range(K)]
        alt_cap_use = [use_nanos[a][k] // cap_units[k] for a in range(A) for k in range(K)]
        slot_available, cons_amount = node.slot_available, node.cons_amount
        slot_bound = [
            s + c * claims_n for s, c in zip(node.slot_spread, node.slot_charges, strict=True)
        ]
        cap_bound = [
            abs(cap_room[k])
            + MAX_RESULTS
            * claims_n
            * max((abs(alt_cap_use[a * K + k]) for a in range(A)), default=0)
            for k in range(K)
        ]
        exact: ExactSums | None = None
        if any(b >= _INT64_LIMIT for b in (*slot_bound, *cap_bound)):
            exact = ExactSums(
                self.view.position_pool.tolist(),
                node.pool_slot_ptr,
                slot_available,
                node.cons_ptr,
                node.cons_slot,
                cons_amount,
                cap_ptr,
                cap_room,
                alt_cap_use,
                K,
            )
            slot_available = [0] * len(slot_available)
            cons_amount = [0] * len(cons_amount)
            cap_room, alt_cap_use = [0] * len(cap_room), [0] * len(alt_cap_use)

        con = self._constraints(A)
        request_alt_ptr = np.cumsum([0, *map(len, self.request_alts)])
        claim_req_ptr = np.cumsum([0, *map(len, self.claim_requests)])
        all_ptr = np.cumsum([0, *(len(alt.all_positions) for alt in self.alts)])
        all_pos = [p for alt in self.alts for p in alt.all_positions]
        arrays: dict[str, Any] = {
            "claim_req_ptr": _i32(claim_req_ptr),
            "req_has_subs": _u8(self.request_has_subs),
            "req_alt_ptr": _i32(request_alt_ptr),
            "alt_all": _u8([alt.all_mode for alt in self.alts]),
            "alt_admin": _u8(admin),
            "alt_count": _i32([alt.count for alt in self.alts]),
            "all_ptr": _i32(all_ptr),
            "all_pos": _i32(all_pos),
            "selectable": _u8(selectable),
            "taint_blocks": _u8(taint_rows),
            "capacity": _u8(capacity),
            "possible": _u8(possible),
            "last_error": _i32(last_error),
            **rest,
            "in_use": _u8(node.in_use),
            "allow_multi": _u8(node.multi),
            "counters_blocked": _u8(node.counters_blocked),
            "committed_share": _u8(node.committed),
            "pos_pool": _i32(self.view.position_pool),
            "cons_ptr": _i32(node.cons_ptr),
            "cons_slot": _i32(node.cons_slot),
            "cons_amount": _i64(cons_amount),
            "pool_slot_ptr": _i32(node.pool_slot_ptr),
            "slot_available": _i64(slot_available),
            "cap_ptr": _i32(cap_ptr),
            "cap_room": _i64(cap_room),
            "alt_cap_use": _i64(alt_cap_use),
            **con,
            "exact": exact,
        }
        problem = _core.Problem(
            arrays, taints_enabled=f.device_taints, consumable_enabled=f.consumable_capacity
        )
        return Prepared(
            self.view,
            self.alts,
            self.request_alts,
            self.request_has_subs,
            self.claim_requests,
            self.selector_errors,
            problem,
            share_use,
        )

    def _rest_bounds(self, possible: np.ndarray, last_error: list[int]) -> dict[str, np.ndarray]:
        """Per request: what it and the claim's later requests need at least / at most, and
        which positions any of them could use (for the core's claim-level bound)."""
        R, P = len(self.request_alts), self.n_pos
        prunable_of = np.zeros(R, dtype=bool)
        need_of = np.zeros(R, dtype=np.int64)
        max_of = np.zeros(R, dtype=np.int64)
        count_of = np.zeros(R, dtype=np.int64)
        union_of = np.zeros((R, P), dtype=bool)
        for reqs in self.claim_requests:
            prunable, need, most, union = True, 0, 0, np.zeros(P, dtype=bool)
            for n, r in enumerate(reversed(reqs), start=1):
                alt_ids = self.request_alts[r]
                alts = [self.alts[a] for a in alt_ids]
                prunable = prunable and all(
                    not alt.all_mode and not alt.admin and last_error[a] < 0
                    for a, alt in zip(alt_ids, alts, strict=True)
                )
                need += min(alt.count for alt in alts)
                most += max(alt.count for alt in alts)
                union = union | possible[alt_ids].any(axis=0)
                prunable_of[r], need_of[r], max_of[r], count_of[r] = prunable, need, most, n
                union_of[r] = union
        limit = 2**31 - 1
        return {
            "rest_prunable": _u8(prunable_of),
            "rest_need": _i32(np.minimum(need_of, limit)),
            "rest_max": _i32(np.minimum(max_of, limit)),
            "rest_requests": _i32(count_of),
            "rest_possible": _u8(union_of),
        }

    def _constraints(self, A: int) -> dict[str, Any]:
        """Constraint attribute values as codes (sets; a scalar is a set of one)."""
        distinct: list[bool] = []
        first_needs_value: list[bool] = []
        present: list[bool] = []
        applies: list[np.ndarray] = []
        value_ptr = [0]
        values: list[int] = []
        claim_con_ptr = [0]
        # Each constraint counts its own values: codes are per (constraint, value).
        codes: dict[tuple[int, tuple[str, object]], int] = {}
        for c, claim in enumerate(self.claims):
            for constraint in claim.spec.devices.constraints:
                attribute = constraint.match_attribute or constraint.distinct_attribute
                assert attribute is not None  # checked in preflight
                q = len(distinct)
                distinct.append(constraint.match_attribute is None)
                first_needs_value.append(
                    constraint.match_attribute is not None and self.features.list_type_attributes
                )
                present.extend(attribute in d.attributes for d in self.node.devices)
                wanted = set(constraint.requests)
                row = np.zeros(A, dtype=bool)
                for a, alt in enumerate(self.alts):
                    if alt.claim == c:
                        row[a] = (
                            not wanted
                            or (alt.parent or alt.name) in wanted
                            or (alt.parent is not None and f"{alt.parent}/{alt.name}" in wanted)
                        )
                applies.append(row)
                for device_values in self.node.values_of(
                    attribute, self.features.list_type_attributes
                ):
                    for value in device_values:
                        values.append(codes.setdefault((q, value), len(codes)))
                    value_ptr.append(len(values))
            claim_con_ptr.append(len(distinct))
        return {
            "claim_con_ptr": _i32(claim_con_ptr),
            "con_distinct": _u8(distinct),
            "con_applies": _u8(np.stack(applies) if applies else np.zeros((0, A), dtype=bool)),
            "con_value_ptr": _i32(value_ptr),
            "con_values": _i32(values),
            "con_present": _u8(present),
            "con_first_needs_value": _u8(first_needs_value),
            "n_codes": len(codes),
        }


def _unit(terms: list[int]) -> int:
    """The largest unit in which every term is a whole number (their gcd), at least 1."""
    unit = 0
    for t in terms:
        unit = math.gcd(unit, t)
    return unit or 1


def _i32(values: Any) -> np.ndarray:
    return np.ascontiguousarray(np.asarray(values, dtype=np.int32).ravel())


def _u8(values: Any) -> np.ndarray:
    return np.ascontiguousarray(np.asarray(values, dtype=np.uint8).ravel())


def _i64(values: list[int]) -> np.ndarray:
    return np.asarray(values, dtype=np.int64)


class ExactSums:
    """Counter and capacity sums in Python integers, for values beyond int64.

    The core calls these (taking the GIL) instead of its int64 arithmetic when the
    builder finds that some slot's worst-case sum might not fit; everything else
    about the search stays compiled. Same arrays, same meaning, unbounded integers.
    """

    def __init__(
        self,
        pos_pool: list[int],
        pool_slot_ptr: list[int],
        available: list[int],
        cons_ptr: list[int],
        cons_slot: list[int],
        cons_amount: list[int],
        cap_ptr: list[int],
        cap_room: list[int],
        alt_cap_use: list[int],
        n_cap: int,
    ):
        self.pos_pool, self.pool_slot_ptr, self.available = pos_pool, pool_slot_ptr, available
        self.cons_ptr, self.cons_slot, self.cons_amount = cons_ptr, cons_slot, cons_amount
        self.cap_ptr, self.cap_room, self.alt_cap_use, self.n_cap = (
            cap_ptr,
            cap_room,
            alt_cap_use,
            n_cap,
        )
        self.reset()

    def reset(self) -> None:
        self.consumed = [0] * len(self.available)
        self.cap_used = [0] * len(self.cap_room)

    def _add_counters(self, p: int, sign: int) -> None:
        for k in range(self.cons_ptr[p], self.cons_ptr[p + 1]):
            self.consumed[self.cons_slot[k]] += sign * self.cons_amount[k]

    def charge(self, p: int) -> bool:
        """Charge p's counters; undo and refuse if any counter of its pool is exceeded."""
        self._add_counters(p, 1)
        pool = self.pos_pool[p]
        for slot in range(self.pool_slot_ptr[pool], self.pool_slot_ptr[pool + 1]):
            if self.available[slot] < self.consumed[slot]:
                self._add_counters(p, -1)
                return False
        return True

    def release(self, p: int) -> None:
        self._add_counters(p, -1)

    def fits(self, a: int, p: int) -> bool:
        base = a * self.n_cap
        return all(
            self.cap_used[k] + self.alt_cap_use[base + k] <= self.cap_room[k]
            for k in range(self.cap_ptr[p], self.cap_ptr[p + 1])
        )

    def take(self, a: int, p: int, sign: int) -> None:
        base = a * self.n_cap
        for k in range(self.cap_ptr[p], self.cap_ptr[p + 1]):
            self.cap_used[k] += sign * self.alt_cap_use[base + k]


def _attribute_values(
    attribute: DeviceAttribute | None, list_types: bool
) -> list[tuple[str, object]]:
    """A constraint's view of one attribute: typed values; empty = no usable value."""
    if attribute is None or attribute.kind is None:
        return []
    kind = attribute.kind
    if kind in ("ints", "bools", "strings", "versions"):
        if not list_types:
            return []
        scalar = kind[:-1]
        return sorted({(scalar, v) for v in attribute.value}, key=repr)
    return [(kind, attribute.value)]
