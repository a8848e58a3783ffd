"""One ``Allocate`` call turned into arrays for the compiled search.

The pre-flight runs here, in upstream's order, and raises upstream's errors:
feature checks per request, request validation (selectors, admin access, class),
All-mode device lists, the claim size limit, constraint types.  Then every fact
the search needs that cannot change while it runs is decided once per
(alternative, position): the selector verdict (with the message of a selector
error, raised only if the search reaches that device, as upstream does), taints,
static capacity verdicts.  Constraint attribute values become small integer codes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from draspeed import _core
from draspeed.api.model import (
    CapacityRequirements,
    Device,
    DeviceClass,
    DeviceSelector,
    DeviceToleration,
    ResourceClaim,
)
from draspeed.errors import AllocationError
from draspeed.rules.capacity import UnknownCapacityError, consumed_capacity, request_fits
from draspeed.rules.node_selection import NodeSelectorError, node_matches
from draspeed.rules.tolerations import taint_blocks
from draspeed.snapshot import ERROR, FALSE, NodeView, Snapshot

if TYPE_CHECKING:
    from draspeed.quantity import Quantity

MAX_RESULTS = 32  # resource.k8s.io AllocationResultsMaxSize
SEL_NO, SEL_YES, SEL_ERROR = _core.SEL["no"], _core.SEL["yes"], _core.SEL["error"]
CAP_FAIL, CAP_OK, CAP_DYNAMIC = _core.CAP["fail"], _core.CAP["ok"], _core.CAP["dynamic"]
_INT64_LIMIT = 2**62  # headroom: sums of two in-range terms cannot wrap before the check


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
    """A pre-flighted call: the alternatives and the arrays for ``_core.Problem``."""

    view: NodeView
    alternatives: list[Alternative]
    request_alts: list[list[int]]  # global request index -> its alternatives
    request_has_subs: list[bool]
    claim_requests: list[list[int]]  # claim -> global request indices
    selector_errors: dict[tuple[int, int], str]  # (alternative, position) -> message
    problem: _core.Problem
    share_use: dict[tuple[int, int], dict[str, Quantity]]  # consumed capacity of shares


def _fail(message: str) -> AllocationError:
    return AllocationError(message)


class ProblemBuilder:
    """Builds a :class:`Prepared` for one (claims, node) against one snapshot."""

    def __init__(self, snapshot: Snapshot, view: NodeView, claims: list[ResourceClaim]):
        self.snap = snapshot
        self.view = view
        self.claims = claims
        self.features = snapshot.features
        self.n_pos = len(view.positions)
        self.alts: list[Alternative] = []
        self.request_alts: list[list[int]] = []
        self.request_has_subs: list[bool] = []
        self.claim_requests: list[list[int]] = []
        self.selector_errors: dict[tuple[int, int], str] = {}
        self._selectable_rows: list[np.ndarray] = []

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
                    raise _fail(f"claim {claim.key}, request {request.name}: has subrequests, "
                                "but the DRAPrioritizedList feature is disabled")
                if not f.consumable_capacity:
                    if request.exactly is not None and request.exactly.capacity is not None:
                        raise _fail(f"claim {claim.key}, request {request.name}: has capacity "
                                    "requests, but the DRAConsumableCapacity feature is disabled")
                    for sub in subs:
                        if sub.capacity is not None:
                            raise _fail(f"claim {claim.key}, subrequest {sub.name}: has capacity "
                                        "requests, but the DRAConsumableCapacity feature is disabled")
                alt_ids: list[int] = []
                if subs:
                    fewest = math.inf
                    for i, sub in enumerate(subs):
                        alt = self._validate(c, claim, r, i, sub.name, request.name, sub.device_class_name,
                                             sub.selectors, sub.allocation_mode, sub.count, None,
                                             sub.tolerations, sub.capacity)
                        alt_ids.append(alt)
                        fewest = min(fewest, self.alts[alt].count)
                    min_devices += int(fewest)
                else:
                    ex = request.exactly
                    alt = self._validate(
                        c, claim, r, None, request.name, None,
                        ex.device_class_name if ex else "",
                        ex.selectors if ex else [], ex.allocation_mode if ex else "ExactCount",
                        ex.count if ex else 1, ex.admin_access if ex else None,
                        ex.tolerations if ex else [], ex.capacity if ex else None,
                    )
                    alt_ids.append(alt)
                    min_devices += self.alts[alt].count
                requests_of_claim.append(len(self.request_alts))
                self.request_alts.append(alt_ids)
                self.request_has_subs.append(bool(subs))
            if min_devices > MAX_RESULTS:
                raise _fail(f"claim {claim.key}: number of requested devices {min_devices} exceeds "
                            f"the claim limit of {MAX_RESULTS}")
            for i, constraint in enumerate(claim.spec.devices.constraints):
                if constraint.match_attribute is None and constraint.distinct_attribute is None:
                    raise _fail(f"claim {claim.key}, constraint #{i}: empty constraint "
                                "(unsupported constraint type?)")
            self.claim_requests.append(requests_of_claim)

    def _validate(self, c: int, claim: ResourceClaim, r: int, sub: int | None, name: str,
                  parent: str | None, class_name: str, selectors: list[DeviceSelector], mode: str,
                  count: int, admin_access: bool | None, tolerations: list[DeviceToleration],
                  capacity: CapacityRequirements | None) -> int:
        for i, selector in enumerate(selectors):
            if selector.cel is None:
                raise _fail(f"claim {claim.key}, request {name}, selector #{i}: CEL expression "
                            "empty (unsupported selector type?)")
        if not self.features.admin_access and admin_access is not None:
            raise _fail(f"claim {claim.key}, request {name}: admin access is requested, "
                        "but the feature is disabled")
        if class_name == "":
            raise _fail(f"claim {claim.key}, request {name}: missing device class name "
                        "(unsupported request type?)")
        device_class = self.snap.classes.get(class_name)
        if device_class is None:
            raise _fail(f"claim {claim.key}, request {name}: could not retrieve device class "
                        f'{class_name}: deviceclass.resource.k8s.io "{class_name}" not found')
        alt = Alternative(
            claim=c, request=r, sub=sub, name=name, parent=parent, device_class=device_class,
            selectors=selectors, all_mode=False, count=0, admin=bool(admin_access),
            tolerations=tolerations, capacity=dict(capacity.requests) if capacity else {},
        )
        index = len(self.alts)
        self.alts.append(alt)
        self._selectable_rows.append(self._selectable(index))
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
        view = self.view
        cursor = 0
        for pool in view.pools:
            if pool.incomplete:
                raise _fail(f"claim {claim.key}, request {alt.name}: asks for all devices, but "
                            f"resource pool {pool.id} is currently being updated")
            if pool.invalid:
                raise _fail(f"claim {claim.key}, request {alt.name}: asks for all devices, but "
                            f"resource pool {pool.id} is currently invalid")
            for p in range(cursor, cursor + len(pool.devices)):
                verdict = row[p]
                if verdict == SEL_ERROR:
                    raise _fail(self.selector_error_text(a, p))
                if verdict != SEL_YES:
                    continue
                # Collected by static capacity, ignoring what committed shares use, so a
                # matching but used-up device makes the request fail (upstream #140769).
                if self.features.consumable_capacity and self._static_capacity(
                        a, p, ignore_use=True) == CAP_FAIL:
                    continue
                alt.all_positions.append(p)
            cursor += len(pool.devices)

    # ----------------------------------------------------------------------------------
    # Static verdicts
    # ----------------------------------------------------------------------------------

    def _selectable(self, a: int) -> np.ndarray:
        """Selector verdict per position: upstream isSelectable, evaluated eagerly."""
        alt = self.alts[a]
        snap, view = self.snap, self.view
        positions = view.positions
        row = np.full(self.n_pos, SEL_YES, dtype=np.uint8)
        if not self.features.device_binding_and_status:
            for p, g in enumerate(positions.tolist()):
                if snap.device(g).binding_conditions:
                    row[p] = SEL_NO
        sources = [(True, i, s) for i, s in enumerate(alt.device_class.spec.selectors)]
        sources += [(False, i, s) for i, s in enumerate(alt.selectors)]
        for from_class, i, selector in sources:
            pending = np.flatnonzero(row == SEL_YES)
            if not len(pending):
                break
            assert selector.cel is not None  # class selectors without CEL: see below
            results = snap.selector_results(selector.cel.expression)
            verdict = snap.evaluate(results, positions[pending])
            row[pending[verdict == FALSE]] = SEL_NO
            for p in pending[verdict == ERROR].tolist():
                row[p] = SEL_ERROR
                self.selector_errors[(a, p)] = self._selector_message(
                    alt, from_class, i, results.compile_error, results.messages.get(int(positions[p]))
                )
        for p in np.flatnonzero(row == SEL_YES).tolist():
            g = int(positions[p])
            if snap.device_slice_of(g).spec.per_device_node_selection:
                device = snap.device(g)
                try:
                    if not node_matches(view.node, device.node_name or "", bool(device.all_nodes),
                                        device.node_selector):
                        row[p] = SEL_NO
                except NodeSelectorError as exc:
                    row[p] = SEL_ERROR
                    self.selector_errors[(a, p)] = str(exc)
        return row

    def _selector_message(self, alt: Alternative, from_class: bool, index: int,
                          compile_error: str | None, runtime_error: str | None) -> str:
        claim = self.claims[alt.claim]
        who = f"class {alt.device_class.metadata.name}" if from_class else f"claim {claim.key}"
        if compile_error is not None:
            return f"{who}: selector #{index}: CEL compile error: {compile_error}"
        return f"{who}: selector #{index} on device {{device}}: CEL runtime error: {runtime_error}"

    def selector_error_text(self, a: int, p: int) -> str:
        message = self.selector_errors[(a, p)]
        return message.replace("{device}", str(self.snap.device_id(int(self.view.positions[p]))), 1)

    def _static_capacity(self, a: int, p: int, *, ignore_use: bool = False) -> int:
        """upstream CmpRequestOverCapacity with nothing in flight."""
        g = int(self.view.positions[p])
        device = self.snap.device(g)
        already = {} if ignore_use else self.snap.allocated.consumed_capacity.get(
            self.snap.device_id(g), {})
        try:
            fits = request_fits(already, self.alts[a].capacity, device.capacity, {},
                                driver=self.snap.device_id(g).driver)
        except UnknownCapacityError:
            return CAP_FAIL
        if not fits:
            return CAP_FAIL
        multi = self.features.consumable_capacity and bool(device.allow_multiple_allocations)
        return CAP_DYNAMIC if multi else CAP_OK

    # ----------------------------------------------------------------------------------
    # Arrays
    # ----------------------------------------------------------------------------------

    def build(self) -> Prepared:
        self.preflight()
        snap, view, f = self.snap, self.view, self.features
        P, A = self.n_pos, len(self.alts)
        positions = view.positions.tolist()
        devices = [snap.device(g) for g in positions]
        ids = [snap.device_id(g) for g in positions]

        selectable = np.concatenate(self._selectable_rows) if A else np.zeros(0, np.uint8)
        taint_rows = np.zeros((A, P), dtype=np.uint8)
        tainted = [p for p, d in enumerate(devices) if d.taints]
        for a, alt in enumerate(self.alts):
            for p in tainted:
                taint_rows[a, p] = taint_blocks(devices[p].taints, alt.tolerations)
        capacity = np.full((A, P), CAP_OK, dtype=np.uint8)
        multi = np.zeros(P, dtype=np.uint8)
        if f.consumable_capacity:
            multi[:] = [bool(d.allow_multiple_allocations) for d in devices]
            for a in range(A):
                for p in range(P):
                    if self._selectable_rows[a][p] == SEL_YES:
                        capacity[a, p] = self._static_capacity(a, p)

        # What could be allocated at all, ignoring what is in flight: an upper bound the
        # core uses to skip subtrees without solutions (never a subtree that errors).
        in_use_arr = np.asarray([i in snap.allocated.devices for i in ids], dtype=bool)
        possible = (selectable.reshape(A, P) == SEL_YES) if A else np.zeros((0, P), bool)
        if f.consumable_capacity:
            possible &= capacity != CAP_FAIL
        if f.device_taints:
            possible &= taint_rows == 0
        possible &= ~counters_blocked_mask(devices, f.partitionable_devices)[None, :]
        admin = np.asarray([alt.admin for alt in self.alts], dtype=bool)
        share_blocked = np.asarray(
            [f.consumable_capacity and (snap.allocated.has_share(i)
                                        or i in snap.allocated.consumed_capacity) for i in ids],
            dtype=bool) & (multi == 0)
        possible[~admin] &= ~(in_use_arr | share_blocked)[None, :]
        errors = selectable.reshape(A, P) == SEL_ERROR if A else np.zeros((0, P), bool)
        last_error = [int(np.flatnonzero(row)[-1]) if row.any() else -1 for row in errors]

        # Per request: what it and the claim's later requests need at least / at most,
        # and which positions any of them could use (for the core's claim-level bound).
        R = len(self.request_alts)
        rest_prunable = np.zeros(R, dtype=np.uint8)
        rest_need = np.zeros(R, dtype=np.int64)
        rest_max = np.zeros(R, dtype=np.int64)
        rest_requests = np.zeros(R, dtype=np.int32)
        rest_possible = np.zeros((R, P), dtype=bool)
        for reqs in self.claim_requests:
            prunable, need, most, union = True, 0, 0, np.zeros(P, dtype=bool)
            for n, r in enumerate(reversed(reqs), start=1):
                alts = [self.alts[a] for a in self.request_alts[r]]
                ids_r = self.request_alts[r]
                prunable = prunable and all(
                    not alt.all_mode and not alt.admin and last_error[a] < 0
                    for a, alt in zip(ids_r, alts))
                need += min(alt.count for alt in alts)
                most += max(alt.count for alt in alts)
                for a in ids_r:
                    union |= possible[a]
                rest_prunable[r], rest_need[r], rest_requests[r] = prunable, need, n
                rest_max[r] = most
                rest_possible[r] = union
        rest_need = np.minimum(rest_need, 2**31 - 1)
        rest_max = np.minimum(rest_max, 2**31 - 1)

        # Counters: one slot per (pool, counter set, counter); units chosen per slot.
        slot_base: list[int] = []
        slot_terms: list[list[int]] = []
        for slots, available in zip(view.pool_slots, view.pool_available):
            slot_base.append(len(slot_terms))
            slot_terms.extend([q.nanos] for q in available)
        slot_index: list[dict[tuple[str, str], int]] = [
            {name: slot_base[i] + k for k, name in enumerate(slots)}
            for i, slots in enumerate(view.pool_slots)
        ]
        cons_ptr = [0]
        cons_slot: list[int] = []
        cons_nanos: list[int] = []
        counters_blocked = counters_blocked_mask(devices, f.partitionable_devices)
        for p, device in enumerate(devices):
            if f.partitionable_devices:
                index = slot_index[int(view.position_pool[p])]
                for use in device.consumes_counters:
                    for name, counter in use.counters.items():
                        cons_slot.append(index[(use.counter_set, name)])
                        cons_nanos.append(counter.value.nanos)
                        slot_terms[cons_slot[-1]].append(counter.value.nanos)
            cons_ptr.append(len(cons_slot))
        units = [_unit(terms) for terms in slot_terms]
        slot_available = [terms[0] // u for terms, u in zip(slot_terms, units)]
        cons_amount = [n // units[s] for n, s in zip(cons_nanos, cons_slot)]
        # A non-shared device is charged at most once per claim (admin access may repeat
        # it across claims), a shared one once: bound every slot's worst-case sum.
        claims_n = max(len(self.claims), 1)
        slot_bound = [abs(v) for v in slot_available]
        for amount, slot in zip(cons_amount, cons_slot):
            slot_bound[slot] += abs(amount) * claims_n

        # Capacity in flight: only shared (multi-allocatable) devices can run out mid-search.
        cap_ptr = [0]
        cap_room_nanos: list[int] = []
        cap_names: list[tuple[int, str]] = []
        share_use: dict[tuple[int, int], dict[str, Quantity]] = {}
        # A committed share (with or without consumedCapacity) has paid the device's
        # counters and keeps it from being allocated whole (upstream #140437, #140798).
        committed = np.asarray(
            [snap.allocated.has_share(i) or i in snap.allocated.consumed_capacity for i in ids]
            if f.consumable_capacity else np.zeros(P), dtype=np.uint8)
        for p, device in enumerate(devices):
            if multi[p]:
                already = snap.allocated.consumed_capacity.get(ids[p])
                for name in sorted(device.capacity):
                    used = already.get(name) if already else None
                    room = device.capacity[name].value
                    cap_room_nanos.append(room.nanos - (used.nanos if used else 0))
                    cap_names.append((p, name))
            cap_ptr.append(len(cap_room_nanos))
        K = len(cap_room_nanos)
        use_nanos = np.zeros((A, K), dtype=object)
        for a, alt in enumerate(self.alts):
            for p in range(P):
                if capacity[a, p] == CAP_DYNAMIC:
                    share = consumed_capacity(alt.capacity, devices[p].capacity,
                                              driver=ids[p].driver)
                    share_use[(a, p)] = share
                    for k in range(cap_ptr[p], cap_ptr[p + 1]):
                        use_nanos[a, k] = share[cap_names[k][1]].nanos
        cap_units = [_unit([cap_room_nanos[k], *use_nanos[:, k].tolist()]) for k in range(K)]
        cap_room = [cap_room_nanos[k] // cap_units[k] for k in range(K)]
        alt_cap_use = [int(use_nanos[a, k]) // cap_units[k] for a in range(A) for k in range(K)]
        # At most MAX_RESULTS shares per claim can be in flight on one device.
        cap_bound = [abs(cap_room[k]) + MAX_RESULTS * claims_n * max(
            (abs(alt_cap_use[a * K + k]) for a in range(A)), default=0) for k in range(K)]
        exact: ExactSums | None = None
        if any(b >= _INT64_LIMIT for b in (*slot_bound, *cap_bound)):
            exact = ExactSums(view.position_pool.tolist(), [*slot_base, len(slot_terms)],
                              slot_available, cons_ptr, cons_slot, cons_amount, cap_ptr,
                              cap_room, alt_cap_use, K)
            slot_available = [0] * len(slot_available)
            cons_amount = [0] * len(cons_amount)
            cap_room, alt_cap_use = [0] * len(cap_room), [0] * len(alt_cap_use)

        # Constraints: attribute values as codes (sets; a scalar is a set of one).
        con_distinct: list[int] = []
        con_applies = np.zeros((0, A), dtype=np.uint8)
        con_value_ptr = [0]
        con_values: list[int] = []
        claim_con_ptr = [0]
        # Each constraint counts its own values: codes are per (constraint, value).
        codes: dict[tuple[int, tuple[str, object]], int] = {}
        rows = []
        for c, claim in enumerate(self.claims):
            for constraint in claim.spec.devices.constraints:
                attribute = constraint.match_attribute or constraint.distinct_attribute
                assert attribute is not None  # checked in preflight
                con_distinct.append(constraint.match_attribute is None)
                wanted = set(constraint.requests)
                row = np.zeros(A, dtype=np.uint8)
                for a, alt in enumerate(self.alts):
                    if alt.claim != c:
                        continue
                    base = alt.parent or alt.name
                    row[a] = (not wanted or base in wanted
                              or (alt.parent is not None and f"{alt.parent}/{alt.name}" in wanted))
                rows.append(row)
                for device in devices:
                    for value in _attribute_values(device.attributes.get(attribute),
                                                   f.list_type_attributes):
                        key = (len(con_distinct), value)
                        con_values.append(codes.setdefault(key, len(codes)))
                    con_value_ptr.append(len(con_values))
            claim_con_ptr.append(len(con_distinct))
        if rows:
            con_applies = np.stack(rows)

        def i32(values: object) -> np.ndarray:
            return np.ascontiguousarray(np.asarray(values, dtype=np.int32).ravel())

        def u8(values: object) -> np.ndarray:
            return np.ascontiguousarray(np.asarray(values, dtype=np.uint8).ravel())

        request_alt_ptr = [0]
        for alt_ids in self.request_alts:
            request_alt_ptr.append(request_alt_ptr[-1] + len(alt_ids))
        claim_req_ptr = [0]
        for reqs in self.claim_requests:
            claim_req_ptr.append(claim_req_ptr[-1] + len(reqs))
        all_ptr = [0]
        all_pos: list[int] = []
        for alt in self.alts:
            all_pos.extend(alt.all_positions)
            all_ptr.append(len(all_pos))
        in_use = in_use_arr
        arrays: dict[str, np.ndarray | int | ExactSums | None] = {
            "claim_req_ptr": i32(claim_req_ptr),
            "req_has_subs": u8(self.request_has_subs),
            "req_alt_ptr": i32(request_alt_ptr),
            "alt_all": u8([alt.all_mode for alt in self.alts]),
            "alt_admin": u8([alt.admin for alt in self.alts]),
            "alt_count": i32([alt.count for alt in self.alts]),
            "all_ptr": i32(all_ptr),
            "all_pos": i32(all_pos),
            "selectable": u8(selectable),
            "taint_blocks": u8(taint_rows),
            "capacity": u8(capacity),
            "possible": u8(possible),
            "last_error": i32(last_error),
            "rest_prunable": u8(rest_prunable),
            "rest_need": i32(rest_need),
            "rest_max": i32(rest_max),
            "rest_requests": i32(rest_requests),
            "rest_possible": u8(rest_possible),
            "in_use": u8(in_use),
            "allow_multi": u8(multi),
            "counters_blocked": u8(counters_blocked),
            "committed_share": u8(committed),
            "pos_pool": i32(view.position_pool),
            "cons_ptr": i32(cons_ptr),
            "cons_slot": i32(cons_slot),
            "cons_amount": _i64(cons_amount),
            "pool_slot_ptr": i32([*slot_base, len(slot_terms)]),
            "slot_available": _i64(slot_available),
            "cap_ptr": i32(cap_ptr),
            "cap_room": _i64(cap_room),
            "alt_cap_use": _i64(alt_cap_use),
            "claim_con_ptr": i32(claim_con_ptr),
            "con_distinct": u8(con_distinct),
            "con_applies": u8(con_applies),
            "con_value_ptr": i32(con_value_ptr),
            "con_values": i32(con_values),
            "n_codes": len(codes),
            "exact": exact,
        }
        problem = _core.Problem(arrays, taints_enabled=f.device_taints,
                                consumable_enabled=f.consumable_capacity)
        return Prepared(view, self.alts, [list(x) for x in self.request_alts], self.request_has_subs,
                        self.claim_requests, self.selector_errors, problem, share_use)


def counters_blocked_mask(devices: list[Device], partitionable: bool) -> np.ndarray:
    """Devices that consume counters cannot be allocated without DRAPartitionableDevices."""
    if partitionable:
        return np.zeros(len(devices), dtype=bool)
    return np.asarray([bool(d.consumes_counters) for d in devices], dtype=bool)


def _unit(terms: list[int]) -> int:
    """The largest unit in which every term is a whole number (their gcd), at least 1."""
    unit = 0
    for t in terms:
        unit = math.gcd(unit, t)
    return unit or 1


def _i64(values: list[int]) -> np.ndarray:
    return np.asarray(values, dtype=np.int64)


class ExactSums:
    """Counter and capacity sums in Python integers, for values beyond int64.

    The core calls these (taking the GIL) instead of its int64 arithmetic when the
    builder finds that some slot's worst-case sum might not fit; everything else
    about the search stays compiled. Same arrays, same meaning, unbounded integers.
    """

    def __init__(self, pos_pool: list[int], pool_slot_ptr: list[int], available: list[int],
                 cons_ptr: list[int], cons_slot: list[int], cons_amount: list[int],
                 cap_ptr: list[int], cap_room: list[int], alt_cap_use: list[int], n_cap: int):
        self.pos_pool, self.pool_slot_ptr, self.available = pos_pool, pool_slot_ptr, available
        self.cons_ptr, self.cons_slot, self.cons_amount = cons_ptr, cons_slot, cons_amount
        self.cap_ptr, self.cap_room, self.alt_cap_use, self.n_cap = cap_ptr, cap_room, alt_cap_use, n_cap
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
        return all(self.cap_used[k] + self.alt_cap_use[base + k] <= self.cap_room[k]
                   for k in range(self.cap_ptr[p], self.cap_ptr[p + 1]))

    def take(self, a: int, p: int, sign: int) -> None:
        base = a * self.n_cap
        for k in range(self.cap_ptr[p], self.cap_ptr[p + 1]):
            self.cap_used[k] += sign * self.alt_cap_use[base + k]


def _attribute_values(attribute: object, list_types: bool) -> list[tuple[str, object]]:
    """A constraint's view of one attribute: typed values; empty = no usable value."""
    from draspeed.api.model import DeviceAttribute

    if not isinstance(attribute, DeviceAttribute) or attribute.kind is None:
        return []
    kind = attribute.kind
    if kind in ("ints", "bools", "strings", "versions"):
        if not list_types:
            return []
        scalar = kind[:-1]
        return sorted({(scalar, v) for v in attribute.value}, key=repr)
    return [(kind, attribute.value)]
