"""What every allocation must satisfy, checked on results alone.

:func:`check_allocation` looks at the results of one ``allocate`` call (either
engine) together with its inputs and lists every violated property; an empty list
means the allocation is sound. It does not re-run the search: it checks what the
search promised, so it also catches bugs both engines share.

The properties (issue 5):

1. **shape** -- one result per claim; every request (or exactly one subrequest of a
   ``firstAvailable`` list) got its devices: ``count`` of them (ExactCount) or at least
   one (All); admin access and tolerations copied from the request; at most 32
   devices per claim;
2. **devices exist** and are offered to the node: the device lives in a complete,
   valid pool gathered for the node, its slice (or, with per-device node selection,
   the device) is available on the node;
3. **no double allocation**: a device that does not allow multiple allocations is
   held by at most one request of a claim, by no other claim of the call unless the
   later ones use admin access, and (without admin access) is not in use by a
   committed claim, exclusively or through a share;
4. **counters**: in every pool where the call consumes counters, committed plus new
   consumption stays within every counter of the pool's counter sets;
5. **capacity**: shares of a multi-allocatable device record a consumption for each of
   its capacities, at least what was requested and allowed by the request policy; the
   sum of committed and new shares stays within each capacity; a capacity request on
   an exclusively allocated device fits the device;
6. **selection**: the device matches its class's and its request's CEL selectors
   (without a selector error), tolerates its blocking taints (DRADeviceTaints), has no
   binding conditions unless the gates allow them, and consumes counters only with
   DRAPartitionableDevices;
7. **constraints**: ``matchAttribute`` devices share a value (as sets with
   DRAListTypeAttributes, else equal scalars), ``distinctAttribute`` devices do not;
8. **node selector**: the result's node selector selects the node, and pins it to the
   node when a chosen device is node-local or binds to the node.

Where the allocator's rules are subtle (which devices pay counters, admin access),
the checker follows upstream's experimental allocator (allocateDevice, the counter and
capacity checks, constraints) with the fixes merged after 2026-07-01 (kubernetes#140431,
#140437, #140326, #140438, #140769).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from draspeed.api.limits import ALLOCATION_RESULTS_MAX_SIZE
from draspeed.api.model import (
    AllocationResult,
    CapacityRequestPolicy,
    Device,
    DeviceAttribute,
    DeviceClass,
    DeviceConstraint,
    DeviceRequestAllocationResult,
    DeviceSelector,
    DeviceTaint,
    DeviceToleration,
    Node,
    ResourceClaim,
    ResourceSlice,
)
from draspeed.cel import compile_selector, device_input
from draspeed.errors import CELCompileError, CELRuntimeError, DraspeedError
from draspeed.features import Features
from draspeed.quantity import Quantity
from draspeed.quantity_sum import QuantitySum
from draspeed.reference.constraints import lookup_attribute
from draspeed.rules.allocated_state import AllocatedState
from draspeed.rules.ids import DeviceID, PoolID
from draspeed.rules.node_selection import node_matches, node_selector_matches
from draspeed.rules.pools import Pool, gather_pools

BLOCKING_EFFECTS = ("NoSchedule", "NoExecute")
SCALAR_KINDS = ("int", "bool", "string", "version")


@dataclass(slots=True)
class _Placed:
    """One device result, with where it sits in the call and what it refers to."""

    claim: int
    order: int  # position in the call's allocation order (claims in order, results in order)
    result: DeviceRequestAllocationResult
    device_id: DeviceID
    device: Device | None = None
    slice: ResourceSlice | None = None
    pool: Pool | None = None
    tolerations: list[DeviceToleration] = field(default_factory=list)
    selectors: list[DeviceSelector] = field(default_factory=list)
    device_class: DeviceClass | None = None
    capacity_requests: dict[str, Quantity] = field(default_factory=dict)


def check_allocation(
    slices: Sequence[ResourceSlice],
    classes: Sequence[DeviceClass],
    allocated_claims: Sequence[ResourceClaim],
    claims: Sequence[ResourceClaim],
    node: Node,
    results: Sequence[AllocationResult] | None,
    features: Features | None = None,
) -> list[str]:
    """Every violated invariant of one call's results (empty: the allocation is sound).

    ``slices`` are the cluster's slices as the allocator saw them (DeviceTaintRules
    applied), ``allocated_claims`` the committed claims, ``claims`` the pod's claims in
    the order they were allocated, ``results`` what ``allocate`` returned for them
    (None, "does not fit", has nothing to check).
    """
    if results is None:
        return []
    checker = _Checker(slices, classes, allocated_claims, claims, node, features or Features())
    return checker.run(list(results))


class _Checker:
    def __init__(
        self,
        slices: Sequence[ResourceSlice],
        classes: Sequence[DeviceClass],
        allocated_claims: Sequence[ResourceClaim],
        claims: Sequence[ResourceClaim],
        node: Node,
        features: Features,
    ) -> None:
        self.slices = list(slices)
        self.classes = {c.metadata.name: c for c in classes}
        self.claims = list(claims)
        self.node = node
        self.features = features
        self.committed = AllocatedState.from_claims(
            allocated_claims, consumable_capacity=features.consumable_capacity
        )
        self.problems: list[str] = []
        self.pools: dict[PoolID, Pool] = {}

    def fail(self, text: str) -> None:
        self.problems.append(text)

    # ----------------------------------------------------------------------------------

    def run(self, results: list[AllocationResult]) -> list[str]:
        if len(results) != len(self.claims):
            self.fail(f"{len(results)} results for {len(self.claims)} claims")
            return self.problems
        try:
            self.pools = {p.id: p for p in gather_pools(self.slices, self.node, self.features)}
        except DraspeedError as exc:
            self.fail(f"an allocation was made although pool gathering fails: {exc}")
            return self.problems
        placed: list[_Placed] = []
        for c, (claim, result) in enumerate(zip(self.claims, results, strict=True)):
            placed += self._claim_shape(c, claim, result, len(placed))
        for p in placed:
            self._locate(p)
        located = [p for p in placed if p.device is not None]
        for p in located:
            self._selection(p)
        self._exclusive_use(located)
        self._counters(located)
        self._capacity(located)
        for c, claim in enumerate(self.claims):
            mine = [p for p in located if p.claim == c]
            for i, constraint in enumerate(claim.spec.devices.constraints):
                self._constraint(claim, i, constraint, mine)
            self._node_selector(claim, results[c], mine)
        return self.problems

    # ----------------------------------------------------------------------------------
    # 1. shape
    # ----------------------------------------------------------------------------------

    def _claim_shape(
        self, c: int, claim: ResourceClaim, result: AllocationResult, first: int
    ) -> list[_Placed]:
        key = claim.key
        items = result.devices.results
        if len(items) > ALLOCATION_RESULTS_MAX_SIZE:
            self.fail(f"claim {key}: {len(items)} devices, more than {ALLOCATION_RESULTS_MAX_SIZE}")
        by_name: dict[str, list[DeviceRequestAllocationResult]] = defaultdict(list)
        for item in items:
            by_name[item.request].append(item)
        known: set[str] = set()
        placed: list[_Placed] = []
        index = {id(item): first + i for i, item in enumerate(items)}
        for request in claim.spec.devices.requests:
            if request.first_available:
                names = [f"{request.name}/{s.name}" for s in request.first_available]
                known.update(names)
                used = [n for n in names if by_name.get(n)]
                if len(used) != 1:
                    self.fail(
                        f"claim {key}, request {request.name}: devices for subrequests "
                        f"{used or 'none'}, expected exactly one subrequest"
                    )
                    continue
                sub = request.first_available[names.index(used[0])]
                self._count(key, used[0], sub.allocation_mode, sub.count, by_name[used[0]])
                for item in by_name[used[0]]:
                    self._admin_flag(key, item, False)
                    self._tolerations(key, item, sub.tolerations)
                    placed.append(
                        self._placed(
                            c,
                            index[id(item)],
                            item,
                            sub.tolerations,
                            sub.selectors,
                            sub.device_class_name,
                            sub.capacity.requests if sub.capacity else {},
                        )
                    )
                continue
            known.add(request.name)
            exact = request.exactly
            if exact is None:
                self.fail(f"claim {key}, request {request.name}: allocated without a request body")
                continue
            got = by_name.get(request.name, [])
            self._count(key, request.name, exact.allocation_mode, exact.count, got)
            for item in got:
                self._admin_flag(key, item, bool(exact.admin_access))
                self._tolerations(key, item, exact.tolerations)
                placed.append(
                    self._placed(
                        c,
                        index[id(item)],
                        item,
                        exact.tolerations,
                        exact.selectors,
                        exact.device_class_name,
                        exact.capacity.requests if exact.capacity else {},
                    )
                )
        for name in sorted(set(by_name) - known):
            self.fail(f"claim {key}: result for unknown request {name}")
        return sorted(placed, key=lambda p: p.order)

    def _placed(
        self,
        c: int,
        order: int,
        item: DeviceRequestAllocationResult,
        tolerations: list[DeviceToleration],
        selectors: list[DeviceSelector],
        class_name: str,
        capacity: dict[str, Quantity],
    ) -> _Placed:
        return _Placed(
            claim=c,
            order=order,
            result=item,
            device_id=DeviceID(item.driver, item.pool, item.device),
            tolerations=list(tolerations),
            selectors=list(selectors),
            device_class=self.classes.get(class_name),
            capacity_requests=dict(capacity),
        )

    def _count(
        self, key: str, name: str, mode: str, count: int, got: list[DeviceRequestAllocationResult]
    ) -> None:
        if mode == "All":
            if not got:
                self.fail(f"claim {key}, request {name}: allocationMode All with no device")
        elif len(got) != count:
            self.fail(f"claim {key}, request {name}: {len(got)} devices, requested {count}")

    def _admin_flag(self, key: str, item: DeviceRequestAllocationResult, admin: bool) -> None:
        if bool(item.admin_access) != admin or item.admin_access is False:
            self.fail(
                f"claim {key}, request {item.request}: adminAccess {item.admin_access} "
                f"for a request with adminAccess {admin}"
            )

    def _tolerations(
        self, key: str, item: DeviceRequestAllocationResult, tolerations: list[DeviceToleration]
    ) -> None:
        if list(item.tolerations) != list(tolerations):
            self.fail(
                f"claim {key}, request {item.request}: result tolerations differ from the request's"
            )

    # ----------------------------------------------------------------------------------
    # 2. devices exist and are offered to the node
    # ----------------------------------------------------------------------------------

    def _locate(self, p: _Placed) -> None:
        pool = self.pools.get(p.device_id.pool_id)
        where = f"device {p.device_id}"
        if pool is None:
            self.fail(f"{where}: its pool is not available on node {self.node.name}")
            return
        if pool.incomplete or pool.invalid:
            self.fail(f"{where}: allocated from an incomplete or invalid pool")
            return
        for slice_ in pool.slices:
            for device in slice_.spec.devices:
                if device.name == p.device_id.device:
                    p.device, p.slice, p.pool = device, slice_, pool
                    return
        self.fail(f"{where}: no such device in the slices of its pool for node {self.node.name}")

    # ----------------------------------------------------------------------------------
    # 6. selection: selectors, node, taints, binding conditions, counters gate
    # ----------------------------------------------------------------------------------

    def _selection(self, p: _Placed) -> None:
        assert p.device is not None and p.slice is not None
        device, where = p.device, f"device {p.device_id}"
        spec = p.slice.spec
        if (
            not node_matches(
                self.node, spec.node_name or "", bool(spec.all_nodes), spec.node_selector
            )
            and not spec.per_device_node_selection
        ):
            self.fail(f"{where}: its slice is not available on node {self.node.name}")
        if spec.per_device_node_selection and not node_matches(
            self.node, device.node_name or "", bool(device.all_nodes), device.node_selector
        ):
            self.fail(f"{where}: not available on node {self.node.name}")
        if p.device_class is None:
            self.fail(f"{where}: allocated for a request whose class does not exist")
            return
        cel_input = device_input(
            p.device_id.driver,
            device,
            list_type_attributes=self.features.list_type_attributes,
            consumable_capacity=self.features.consumable_capacity,
        )
        owners = [
            (f"class {p.device_class.metadata.name}", s) for s in p.device_class.spec.selectors
        ]
        owners += [(f"request {p.result.request}", s) for s in p.selectors]
        for owner, selector in owners:
            if selector.cel is None:
                self.fail(f"{where}: {owner} has a selector without CEL")
                continue
            expression = selector.cel.expression
            try:
                ok = compile_selector(expression).matches(cel_input)
            except (CELCompileError, CELRuntimeError) as exc:
                self.fail(f"{where}: {owner} selector {expression!r} fails: {exc}")
                continue
            if not ok:
                self.fail(f"{where}: does not match {owner} selector {expression!r}")
        if self.features.device_taints:
            for taint in device.taints:
                if taint.effect in BLOCKING_EFFECTS and not any(
                    _tolerates(t, taint) for t in p.tolerations
                ):
                    self.fail(
                        f"{where}: taint {taint.key}={taint.value}:{taint.effect} is not tolerated"
                    )
        if device.binding_conditions and not self.features.device_binding_and_status:
            self.fail(f"{where}: has binding conditions, which the gates do not allow")
        if device.consumes_counters and not self.features.partitionable_devices:
            self.fail(f"{where}: consumes counters, which DRAPartitionableDevices does not allow")

    # ----------------------------------------------------------------------------------
    # 3. no double allocation
    # ----------------------------------------------------------------------------------

    def _multi(self, device: Device) -> bool:
        return self.features.consumable_capacity and device.allow_multiple_allocations is True

    def _exclusive_use(self, placed: list[_Placed]) -> None:
        by_device: dict[DeviceID, list[_Placed]] = defaultdict(list)
        for p in placed:
            assert p.device is not None
            multi = self._multi(p.device)
            shared = p.result.share_id is not None
            if multi != shared:
                self.fail(
                    f"device {p.device_id}: shareID {'set' if shared else 'missing'} "
                    f"for a device that {'allows' if multi else 'does not allow'} "
                    "multiple allocations"
                )
            if multi:
                continue
            admin = bool(p.result.admin_access)
            if not admin:
                if p.device_id in self.committed.devices:
                    self.fail(f"device {p.device_id}: already allocated to another claim")
                if self.committed.has_share(p.device_id) or (
                    p.device_id in self.committed.consumed_capacity
                ):
                    self.fail(
                        f"device {p.device_id}: allocated whole while another claim "
                        "holds a share of it"
                    )
            by_device[p.device_id].append(p)
        for device_id, users in by_device.items():
            claims = [u.claim for u in users]
            if len(set(claims)) != len(claims):
                self.fail(f"device {device_id}: allocated twice within one claim")
            # Admin access ignores other claims' devices, never the other way round.
            for later in users[1:]:
                if not later.result.admin_access:
                    self.fail(
                        f"device {device_id}: allocated to claims "
                        f"{sorted(set(claims))} without admin access"
                    )
                    break

    # ----------------------------------------------------------------------------------
    # 4. counters
    # ----------------------------------------------------------------------------------

    def _counters(self, placed: list[_Placed]) -> None:
        if not self.features.partitionable_devices:
            return
        new: dict[PoolID, dict[tuple[str, str], QuantitySum]] = defaultdict(dict)
        paid: set[DeviceID] = set()
        for p in placed:
            assert p.device is not None
            if not p.device.consumes_counters:
                continue
            if self._multi(p.device):
                # A shared device pays its counters once, with its first share.
                if (
                    p.device_id in paid
                    or self.committed.has_share(p.device_id)
                    or (p.device_id in self.committed.consumed_capacity)
                ):
                    continue
                paid.add(p.device_id)
            _add_consumption(new[p.device_id.pool_id], p.device.consumes_counters)
        for pool_id, consumed in new.items():
            pool = self.pools[pool_id]
            committed: dict[tuple[str, str], QuantitySum] = {}
            for slice_ in [*pool.slices, *pool.slices_not_targeting_node]:
                for device in slice_.spec.devices:
                    if self.committed.is_allocated(DeviceID(pool.driver, pool.name, device.name)):
                        _add_consumption(committed, device.consumes_counters)
            for set_name, counter_set in pool.counter_sets.items():
                for name, counter in counter_set.counters.items():
                    total = _sum([committed.get((set_name, name)), consumed.get((set_name, name))])
                    if total.cmp(counter.value) > 0:
                        self.fail(
                            f"pool {pool_id}: counter {set_name}/{name} overdrawn: "
                            f"{total} consumed of {counter.value}"
                        )

    # ----------------------------------------------------------------------------------
    # 5. capacity
    # ----------------------------------------------------------------------------------

    def _capacity(self, placed: list[_Placed]) -> None:
        if not self.features.consumable_capacity:
            return
        shares: dict[DeviceID, list[_Placed]] = defaultdict(list)
        for p in placed:
            assert p.device is not None
            requested = dict(p.capacity_requests)
            where = f"device {p.device_id}"
            for name in requested:
                if name not in p.device.capacity:
                    self.fail(f"{where}: request for capacity {name}, which it does not have")
            if self._multi(p.device):
                shares[p.device_id].append(p)
                self._share(p, requested)
                continue
            if p.result.consumed_capacity:
                self.fail(f"{where}: consumedCapacity recorded for an exclusive allocation")
            for name, amount in requested.items():
                capacity = p.device.capacity.get(name)
                if capacity is not None and amount.cmp(capacity.value) > 0:
                    self.fail(f"{where}: {amount} of {name} requested, it has {capacity.value}")
        for device_id, users in shares.items():
            device = users[0].device
            assert device is not None
            committed = self.committed.consumed_capacity.get(device_id, {})
            for name, capacity in device.capacity.items():
                total = _sum([committed.get(name), *(_consumed(u, name) for u in users)])
                if total.cmp(capacity.value) > 0:
                    self.fail(
                        f"device {device_id}: capacity {name} overcommitted: {total} "
                        f"of {capacity.value}"
                    )

    def _share(self, p: _Placed, requested: dict[str, Quantity]) -> None:
        assert p.device is not None
        where = f"device {p.device_id}"
        recorded = set(p.result.consumed_capacity)
        if recorded != set(p.device.capacity):
            self.fail(
                f"{where}: consumedCapacity names {sorted(recorded)}, the device has "
                f"{sorted(p.device.capacity)}"
            )
        for name, capacity in p.device.capacity.items():
            amount = _consumed(p, name)
            if amount is None:
                continue
            want = requested.get(name)
            if want is not None and amount.cmp(want) < 0:
                self.fail(f"{where}: consumes {amount} of {name}, less than the requested {want}")
            if want is None:
                policy = capacity.request_policy
                default = policy.default if policy is not None else None
                expected = default if default is not None else capacity.value
                if amount.cmp(expected) != 0:
                    self.fail(
                        f"{where}: consumes {amount} of unrequested {name}, expected {expected}"
                    )
            elif not _policy_allows(amount, capacity.request_policy):
                self.fail(
                    f"{where}: consumes {amount} of {name}, not allowed by its request policy"
                )

    # ----------------------------------------------------------------------------------
    # 7. constraints
    # ----------------------------------------------------------------------------------

    def _constraint(
        self, claim: ResourceClaim, index: int, constraint: DeviceConstraint, mine: list[_Placed]
    ) -> None:
        name = constraint.attribute
        if name is None:
            self.fail(
                f"claim {claim.key}: constraint #{index} is empty but the claim was allocated"
            )
            return
        scope = set(constraint.requests)
        covered = [
            p
            for p in mine
            if not scope or p.result.request in scope or p.result.request.split("/", 1)[0] in scope
        ]
        values = [
            lookup_attribute(p.device, p.device_id, name) if p.device else None for p in covered
        ]
        where = f"claim {claim.key}, constraint #{index} ({name})"
        if any(v is None for v in values):
            self.fail(f"{where}: a device lacks the attribute")
            return
        attributes = [v for v in values if v is not None]
        lists = self.features.list_type_attributes
        if constraint.match_attribute is not None:
            ok = _all_match(attributes, lists)
        else:
            ok = _all_distinct(attributes, lists)
        if not ok:
            pairs = zip(covered, attributes, strict=True)
            shown = ", ".join(f"{p.device_id}={a.value!r}" for p, a in pairs)
            self.fail(f"{where}: not satisfied by {shown}")

    # ----------------------------------------------------------------------------------
    # 8. node selector
    # ----------------------------------------------------------------------------------

    def _node_selector(
        self, claim: ResourceClaim, result: AllocationResult, mine: list[_Placed]
    ) -> None:
        selector = result.node_selector
        where = f"claim {claim.key}"
        if selector is not None:
            try:
                covers = node_selector_matches(selector, self.node)
            except DraspeedError as exc:
                self.fail(f"{where}: result node selector does not parse: {exc}")
                return
            if not covers:
                self.fail(f"{where}: result node selector excludes node {self.node.name}")
        local = False
        for p in mine:
            if p.slice is None or p.device is None:
                continue
            per_device = p.slice.spec.per_device_node_selection
            node_name = p.device.node_name if per_device else p.slice.spec.node_name
            local = local or bool(node_name) or bool(p.device.binds_to_node)
        if local:
            pinned = (
                selector is not None
                and len(selector.node_selector_terms) == 1
                and not selector.node_selector_terms[0].match_expressions
                and [
                    (r.key, r.operator, r.values)
                    for r in selector.node_selector_terms[0].match_fields
                ]
                == [("metadata.name", "In", [self.node.name])]
            )
            if not pinned:
                self.fail(
                    f"{where}: a node-local device, but the result is not pinned to "
                    f"node {self.node.name}"
                )


# --------------------------------------------------------------------------------------
# Small pure helpers
# --------------------------------------------------------------------------------------


def _tolerates(toleration: DeviceToleration, taint: DeviceTaint) -> bool:
    if toleration.effect and toleration.effect != taint.effect:
        return False
    if toleration.key and toleration.key != taint.key:
        return False
    if toleration.operator == "Exists":
        return True
    return toleration.operator in ("", "Equal") and toleration.value == taint.value


def _add_consumption(totals: dict[tuple[str, str], QuantitySum], uses: Iterable[Any]) -> None:
    for use in uses:
        for name, counter in use.counters.items():
            key = (use.counter_set, name)
            totals[key] = totals.get(key, _NOTHING).add(counter.value)


_NOTHING = QuantitySum()


def _sum(amounts: Iterable[Quantity | QuantitySum | None]) -> QuantitySum:
    total = QuantitySum()
    for amount in amounts:
        if amount is not None:
            total = total.add(amount)
    return total


def _consumed(p: _Placed, name: str) -> Quantity | None:
    """A share's recorded consumption of a capacity (names compare literally)."""
    return p.result.consumed_capacity.get(name)


def _policy_allows(amount: Quantity, policy: CapacityRequestPolicy | None) -> bool:
    """Whether a consumed amount is one the request policy permits."""
    if policy is None:
        return True
    if policy.default is not None and amount.cmp(policy.default) == 0:
        return True
    if policy.valid_values:
        return any(amount.cmp(v) == 0 for v in policy.valid_values)
    rng = policy.valid_range
    if rng is None:
        return True
    if rng.min is not None and amount.cmp(rng.min) < 0:
        return False
    if rng.max is not None and amount.cmp(rng.max) > 0:
        return False
    if rng.step is not None and rng.step.sign() > 0:
        # Upstream steps in whole units (Quantity.Value(), rounded up).
        base = rng.min.go_value() if rng.min is not None else 0
        return (amount.go_value() - base) % rng.step.go_value() == 0
    return True


def _as_set(attribute: DeviceAttribute) -> tuple[str, frozenset[Any]] | None:
    """(element type, values): a scalar is a set of one; None without a usable value."""
    kind = attribute.kind
    if kind is None:
        return None
    if kind in SCALAR_KINDS:
        return kind, frozenset((attribute.value,))
    values = frozenset(attribute.value or ())
    return (kind.removesuffix("s"), values) if values else None


def _all_match(attributes: list[DeviceAttribute], lists: bool) -> bool:
    if lists:
        sets = [_as_set(a) for a in attributes]
        if any(s is None for s in sets):
            return False
        present = [s for s in sets if s is not None]
        if len({s[0] for s in present}) > 1:
            return False
        common = frozenset.intersection(*(s[1] for s in present)) if present else frozenset()
        return bool(common) or not present
    # Scalar mode: the first device sets the value; every later one must equal it.
    first, rest = attributes[:1], attributes[1:]
    return all(
        a.kind in SCALAR_KINDS and a.kind == first[0].kind and a.value == first[0].value
        for a in rest
    )


def _all_distinct(attributes: list[DeviceAttribute], lists: bool) -> bool:
    if lists:
        # The first device is taken whatever its value; every later one needs values,
        # disjoint from those of every earlier device that has some.
        sets = [_as_set(a) for a in attributes]
        for i, new in enumerate(sets[1:], start=1):
            if new is None:
                return False
            for old in sets[:i]:
                if old is not None and old[0] == new[0] and old[1] & new[1]:
                    return False
        return True
    # Scalar mode: every device after the first needs a scalar value no earlier one has.
    for i, a in enumerate(attributes[1:], start=1):
        if a.kind not in SCALAR_KINDS:
            return False
        if any(b.kind == a.kind and b.value == a.value for b in attributes[:i]):
            return False
    return True
