"""A plain-Python DRA allocator that decides exactly as upstream's newest allocator.

It follows ``structured/internal/experimental/allocator_experimental.go`` of
kubernetes/dynamic-resource-allocation (master at 3d03671, 2026-07-01, with its
``pools_experimental.go``, ``constraint.go`` and ``consumable_capacity.go``) step by
step, so that a reader can check it against that code, with the allocation-state
fixes merged upstream after that commit:

* kubernetes#140431: a candidate rejected by a taint, a constraint or its
  capacity gives back the counters it reserved; backtracking over an
  allow-multiple device gives back its counters too;
* kubernetes#140437: a device with a committed share (shareID, maybe without
  consumedCapacity) does not pay its counters again;
* kubernetes#140798: such a device is not handed out exclusively;
* kubernetes#140435: counters are kept per (driver, pool);
* kubernetes#140326 / #140438: constraints restore their state on backtrack
  (see ``constraints.py``);
* kubernetes#140769: ``allocationMode: All`` collects devices by static
  capacity, so a matching but exhausted device makes the request fail.

The search is depth-first and returns the first solution: claims in order,
requests in order, a prioritized list's subrequests in order, and within one
request the devices as combinations in pool/slice/device order. Its work is
counted in ``last_stats.num_allocate_one_invocations`` step for step as upstream's
``NumAllocateOneInvocations`` (``search_steps``, the name both engines share, is the
same number here).
"""

from __future__ import annotations

import enum
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from draspeed import arguments
from draspeed.api.coerce import (
    ClaimsInput,
    NodeInput,
    as_claims,
    as_node,
    cluster_claims,
    cluster_classes,
    cluster_slices,
)
from draspeed.api.limits import ALLOCATION_RESULTS_MAX_SIZE
from draspeed.api.model import (
    AllocationResult,
    Device,
    DeviceClass,
    DeviceSelector,
    Node,
    ResourceClaim,
    ResourceSlice,
)
from draspeed.cel import DeviceInput, compile_selector, device_input
from draspeed.errors import (
    AllocationError,
    AllocationTimeout,
    CELCompileError,
    CELRuntimeError,
    NodeAllocationError,
)
from draspeed.features import Features
from draspeed.quantity import Quantity
from draspeed.quantity_sum import QuantitySum
from draspeed.reference.constraints import Constraint, DistinctAttribute, MatchAttribute
from draspeed.reference.counters import CounterBook
from draspeed.rules import texts
from draspeed.rules.allocated_state import AllocatedState
from draspeed.rules.capacity import UnknownCapacityError, consumed_capacity, request_fits
from draspeed.rules.ids import DeviceID
from draspeed.rules.node_selection import NodeSelectorError, node_matches
from draspeed.rules.pools import Pool, PoolGatheringError, gather_pools
from draspeed.rules.preflight import RequestSpec, preflight
from draspeed.rules.results import ChosenDevice, ResultError, build_allocation_result
from draspeed.rules.tolerations import taint_blocks

# resource.k8s.io/v1 AllocationResultsMaxSize: devices per claim.


@dataclass(slots=True)
class Stats:
    """Work done by the last ``allocate`` call: upstream's counter, step for step."""

    num_allocate_one_invocations: int = 0

    @property
    def search_steps(self) -> int:
        """The work counter both engines offer (here exactly upstream's)."""
        return self.num_allocate_one_invocations


class _Step(enum.Enum):
    """How one step of the search ended."""

    FOUND = "found"
    NOT_FOUND = "not found"
    # The claim would get more than 32 devices: callers backtrack further (upstream's
    # errAllocationResultMaxSizeExceeded), a prioritized list tries its next subrequest.
    TOO_MANY = "too many devices"


@dataclass(slots=True)
class _Candidate:
    """A device together with where it lives."""

    device_id: DeviceID
    device: Device
    slice: ResourceSlice
    pool: Pool


@dataclass(slots=True)
class _RequestData:
    """What pre-flight learned about one request or subrequest."""

    request: RequestSpec
    all_devices: list[_Candidate] | None = None  # allocationMode All: the devices to take
    selected_subrequest: int = 0  # on the entry of subrequest 0: which one was used

    @property
    def parent(self) -> str | None:
        """The name of the request owning this subrequest."""
        return self.request.parent


RequestKey = tuple[int, int, int]  # claim, request, subrequest


class ReferenceAllocator:
    """Allocates devices for the claims of one pod on one node, like upstream ``Allocate``.

    The allocator is built once from the cluster state (slices, classes, claims
    that are already allocated) and can then be asked about any node.
    """

    def __init__(
        self,
        slices: Sequence[ResourceSlice],
        classes: Sequence[DeviceClass],
        allocated_claims: Sequence[ResourceClaim] = (),
        features: Features = Features(),  # noqa: B008 - immutable record
    ) -> None:
        self.slices = cluster_slices(slices)
        self.classes = {c.metadata.name: c for c in cluster_classes(classes)}
        self.features = arguments.instance_of(features, Features, "features", "Features")
        self.allocated = AllocatedState.from_claims(
            cluster_claims(allocated_claims, "allocated_claims"),
            consumable_capacity=features.consumable_capacity,
        )
        self.last_stats = Stats()

    def allocate(
        self, claims: ClaimsInput, node: NodeInput, *, deadline: float | None = None
    ) -> list[AllocationResult] | None:
        """One AllocationResult per claim, in order, or None when the claims do not fit.

        Raises AllocationError with upstream's message for fatal problems,
        NodeAllocationError when nothing fits and some pool was invalid, and
        AllocationTimeout once ``deadline`` (a ``time.monotonic()`` value) passes.
        """
        target = node if type(node) is Node else as_node(node)
        run = _Allocation(self, as_claims(claims), target, arguments.deadline(deadline))
        try:
            return run.run()
        finally:
            self.last_stats = Stats(run.invocations)


class _Allocation:
    """The state of one ``allocate`` call (upstream's ``allocator``)."""

    def __init__(
        self,
        owner: ReferenceAllocator,
        claims: list[ResourceClaim],
        node: Node,
        deadline: float | None,
    ) -> None:
        self.features = owner.features
        self.classes = owner.classes
        self.allocated = owner.allocated
        self.all_slices = owner.slices
        self.claims = claims
        self.node = node
        self.deadline = deadline
        self.invocations = 0
        self.pools: list[Pool] = []
        self.request_data: dict[RequestKey, _RequestData] = {}
        self.constraints: list[list[Constraint]] = [[] for _ in claims]
        self.results: list[list[ChosenDevice]] = [[] for _ in claims]
        self.counters = CounterBook(owner.allocated)
        # Devices tentatively allocated exclusively, and for which claims.
        self.allocating: dict[DeviceID, set[int]] = {}
        # Tentative shares of multi-allocatable devices: what each one consumes.
        self.live_shares: dict[DeviceID, list[dict[str, Quantity]]] = {}
        self.match_cache: dict[tuple[DeviceID, RequestKey], bool] = {}
        self.cel_inputs: dict[DeviceID, DeviceInput] = {}

    # ----------------------------------------------------------------------------------
    # Driver
    # ----------------------------------------------------------------------------------

    def run(self) -> list[AllocationResult] | None:
        try:
            self.pools = gather_pools(self.all_slices, self.node, self.features)
        except PoolGatheringError as err:
            raise AllocationError(texts.gather_pools(str(err))) from err
        self._preflight()

        if self._allocate_one((0, 0, 0, 0), False, (0, 0, 0)) is not _Step.FOUND:
            if any(pool.invalid for pool in self.pools):
                raise NodeAllocationError(texts.INVALID_POOLS)
            return None
        return [self._claim_result(i) for i in range(len(self.claims))]

    def _claim_result(self, claim_index: int) -> AllocationResult:
        claim = self.claims[claim_index]
        classes: list[DeviceClass | None] = []
        selected: list[int | None] = []
        for request_index in range(len(claim.spec.devices.requests)):
            data = self.request_data[(claim_index, request_index, 0)]
            if data.parent is not None:
                index = data.selected_subrequest
                classes.append(
                    self.request_data[(claim_index, request_index, index)].request.device_class
                )
                selected.append(index)
            else:
                classes.append(data.request.device_class)
                selected.append(None)
        try:
            return build_allocation_result(
                claim, self.results[claim_index], classes, selected, self.node.name, self.features
            )
        except ResultError as err:
            raise AllocationError(str(err)) from err

    # ----------------------------------------------------------------------------------
    # Pre-flight: validate requests, count devices, build constraints
    # ----------------------------------------------------------------------------------

    def _preflight(self) -> None:
        """upstream's pre-flight (rules.preflight), this engine's All-mode device lists."""

        def on_request(spec: RequestSpec) -> None:
            key = (spec.claim, spec.request, spec.sub or 0)
            data = self.request_data[key] = _RequestData(spec)
            if spec.all_mode:
                data.all_devices = self._all_devices(spec.claim, key, data)
                spec.count = len(data.all_devices)

        preflight(
            self.claims, lambda c: self.claims[c].key, self.features, self.classes, on_request
        )
        list_mode = self.features.list_type_attributes
        for claim_index, claim in enumerate(self.claims):
            constraints: list[Constraint] = []
            for spec in claim.spec.devices.constraints:
                if spec.match_attribute is not None:
                    constraints.append(
                        MatchAttribute(spec.match_attribute, spec.requests, list_mode)
                    )
                elif spec.distinct_attribute is not None:
                    constraints.append(
                        DistinctAttribute(spec.distinct_attribute, spec.requests, list_mode)
                    )
            self.constraints[claim_index] = constraints

    def _all_devices(
        self, claim_index: int, request_key: RequestKey, data: _RequestData
    ) -> list[_Candidate]:
        """Every device of the node that matches an ``All`` request (all pools must be usable)."""
        key = self.claims[claim_index].key
        name = data.request.name
        devices: list[_Candidate] = []
        for pool in self.pools:
            if pool.incomplete:
                raise AllocationError(texts.all_devices_pool_incomplete(key, name, pool.id))
            if pool.invalid:
                raise AllocationError(texts.all_devices_pool_invalid(key, name, pool.id))
            for slice_ in pool.slices:
                for device in slice_.spec.devices:
                    device_id = DeviceID(slice_.spec.driver, slice_.spec.pool.name, device.name)
                    if not self._is_selectable(request_key, data, slice_, device, device_id):
                        continue
                    # Static capacity only (kubernetes#140769): a device that would match but
                    # is used up must make the request fail later, not vanish from "all".
                    if self.features.consumable_capacity:
                        try:
                            if not request_fits(
                                {},
                                data.request.capacity,
                                device.capacity,
                                {},
                            ):
                                continue
                        except UnknownCapacityError:
                            continue
                    devices.append(_Candidate(device_id, device, slice_, pool))
        return devices

    # ----------------------------------------------------------------------------------
    # Selection
    # ----------------------------------------------------------------------------------

    def _is_selectable(
        self,
        request_key: RequestKey,
        data: _RequestData,
        slice_: ResourceSlice,
        device: Device,
        device_id: DeviceID,
    ) -> bool:
        """Class selectors, request selectors and per-device node selection (cached)."""
        if not self.features.device_binding_and_status and device.binding_conditions:
            return False
        cache_key = (device_id, request_key)
        cached = self.match_cache.get(cache_key)
        if cached is not None:
            return cached
        selectable = (
            self._selectors_match(request_key[0], device, device_id, data.request.device_class)
            and self._selectors_match(
                request_key[0], device, device_id, None, data.request.selectors
            )
            and self._device_on_node(slice_, device)
        )
        self.match_cache[cache_key] = selectable
        return selectable

    def _device_on_node(self, slice_: ResourceSlice, device: Device) -> bool:
        if not slice_.spec.per_device_node_selection:
            return True
        try:
            return node_matches(
                self.node, device.node_name or "", bool(device.all_nodes), device.node_selector
            )
        except NodeSelectorError as err:
            raise AllocationError(str(err)) from err

    def _selectors_match(
        self,
        claim_index: int,
        device: Device,
        device_id: DeviceID,
        device_class: DeviceClass | None,
        selectors: Sequence[DeviceSelector] | None = None,
    ) -> bool:
        if device_class is not None:
            owner = texts.selector_owner("", device_class.metadata.name, from_class=True)
            selectors = device_class.spec.selectors
        else:
            owner = texts.selector_owner(self.claims[claim_index].key, "", from_class=False)
        for index, selector in enumerate(selectors or ()):
            if selector.cel is None:
                # Requests were checked in pre-flight; a class cannot get here through
                # API validation. Upstream would crash, so say what is wrong instead.
                raise AllocationError(texts.selector_empty(owner, index))
            try:
                compiled = compile_selector(selector.cel.expression)
            except CELCompileError as err:
                raise AllocationError(texts.selector_compile_error(owner, index, str(err))) from err
            try:
                # The deadline is looked at inside evaluation too, as upstream's context is.
                matches = compiled.matches(self._cel_input(device, device_id), self.deadline)
            except CELRuntimeError as err:
                raise AllocationError(
                    texts.selector_runtime_error(owner, index, device_id, str(err))
                ) from err
            if not matches:
                return False
        return True

    def _cel_input(self, device: Device, device_id: DeviceID) -> DeviceInput:
        cel_input = self.cel_inputs.get(device_id)
        if cel_input is None:
            cel_input = device_input(
                device_id.driver,
                device,
                list_type_attributes=self.features.list_type_attributes,
                # The experimental allocator hands CEL the device's real value whatever
                # the DRAConsumableCapacity gate says (only the stable variant hides it).
                consumable_capacity=True,
            )
            self.cel_inputs[device_id] = cel_input
        return cel_input

    # ----------------------------------------------------------------------------------
    # Availability and capacity
    # ----------------------------------------------------------------------------------

    def _allocating_for_claim(self, device_id: DeviceID, claim_index: int) -> bool:
        return claim_index in self.allocating.get(device_id, ())

    def _in_use(self, device_id: DeviceID) -> bool:
        return device_id in self.allocated.devices or bool(self.allocating.get(device_id))

    def _shared(self, device_id: DeviceID) -> bool:
        """Whether the device has a committed or tentative share (its counters are paid)."""
        return (
            device_id in self.allocated.consumed_capacity
            or self.allocated.has_share(device_id)
            or bool(self.live_shares.get(device_id))
        )

    def _allocating_capacity(self, device_id: DeviceID) -> dict[str, QuantitySum]:
        totals: dict[str, QuantitySum] = {}
        for share in self.live_shares.get(device_id, ()):
            for name, amount in share.items():
                totals[name] = totals.get(name, QuantitySum()).add(amount)
        return totals

    def _capacity_fits(self, request: RequestSpec, device: Device, device_id: DeviceID) -> bool:
        """Upstream's CmpRequestOverCapacity; a request for an unknown capacity does not fit."""
        try:
            return request_fits(
                self.allocated.consumed_capacity.get(device_id, {}),
                request.capacity,
                device.capacity,
                self._allocating_capacity(device_id),
            )
        except UnknownCapacityError:
            return False

    # ----------------------------------------------------------------------------------
    # The search
    # ----------------------------------------------------------------------------------

    def _allocate_one(
        self, position: tuple[int, int, int, int], in_subrequest: bool, start: tuple[int, int, int]
    ) -> _Step:
        """Find a device for ``position`` = (claim, request, subrequest, device index), then
        everything after it. ``start`` is where the device search resumes (pool, slice,
        device) so that one request tries combinations, not permutations."""
        self.invocations += 1
        if self.deadline is not None and time.monotonic() >= self.deadline:
            raise AllocationTimeout()

        claim_index, request_index, sub_index, device_index = position
        if claim_index >= len(self.claims):
            return _Step.FOUND
        requests = self.claims[claim_index].spec.devices.requests
        if request_index >= len(requests):
            step = self._allocate_one((claim_index + 1, 0, 0, 0), False, (0, 0, 0))
            # Too many devices in a later claim is no reason to give up on this one.
            return _Step.NOT_FOUND if step is _Step.TOO_MANY else step

        request_key = (claim_index, request_index, sub_index)
        data = self.request_data[request_key]

        if not in_subrequest and data.parent is not None:
            return self._try_subrequests(claim_index, request_index)

        request = data.request
        take_all = request.all_mode
        if take_all and not data.all_devices:
            return _Step.NOT_FOUND
        if device_index >= request.count:
            return self._allocate_one((claim_index, request_index + 1, 0, 0), False, (0, 0, 0))
        if (
            len(self.results[claim_index]) + request.count - device_index
            > ALLOCATION_RESULTS_MAX_SIZE
        ):
            return _Step.TOO_MANY

        next_position = (claim_index, request_index, sub_index, device_index + 1)
        if take_all:
            assert data.all_devices is not None
            undo = self._allocate_device(position, data.all_devices[device_index], must=True)
            if undo is None:
                return _Step.NOT_FOUND
            step = self._allocate_one(next_position, in_subrequest, (0, 0, 0))
            if step is not _Step.FOUND:
                undo()
            return step

        first_pool, first_slice, first_device = start
        for pool_index in range(first_pool, len(self.pools)):
            pool = self.pools[pool_index]
            if not pool.usable:
                continue
            slice_start = first_slice if pool_index == first_pool else 0
            for slice_index in range(slice_start, len(pool.slices)):
                slice_ = pool.slices[slice_index]
                same_slice = pool_index == first_pool and slice_index == first_slice
                devices = slice_.spec.devices
                for index in range(first_device if same_slice else 0, len(devices)):
                    device = devices[index]
                    device_id = DeviceID(pool.driver, pool.name, device.name)
                    # Being in use is cheap to check, so it comes first.
                    if request.admin:
                        if self._allocating_for_claim(device_id, claim_index):
                            continue
                    elif self._in_use(device_id):
                        continue
                    if not self._is_selectable(request_key, data, slice_, device, device_id):
                        continue
                    if self.features.consumable_capacity and not self._capacity_fits(
                        request, device, device_id
                    ):
                        continue
                    undo = self._allocate_device(
                        position, _Candidate(device_id, device, slice_, pool), must=False
                    )
                    if undo is None:
                        continue
                    step = self._allocate_one(
                        next_position, in_subrequest, (pool_index, slice_index, index + 1)
                    )
                    if step is _Step.FOUND:
                        return step
                    undo()
                    if step is _Step.TOO_MANY:
                        return step
        return _Step.NOT_FOUND

    def _try_subrequests(self, claim_index: int, request_index: int) -> _Step:
        """A prioritized list: the first subrequest that leads to a solution wins."""
        all_too_many = True
        sub_index = 0
        while (claim_index, request_index, sub_index) in self.request_data:
            step = self._allocate_one((claim_index, request_index, sub_index, 0), True, (0, 0, 0))
            if step is _Step.FOUND:
                self.request_data[(claim_index, request_index, 0)].selected_subrequest = sub_index
                return step
            if step is _Step.NOT_FOUND:
                all_too_many = False
            sub_index += 1
        return _Step.TOO_MANY if all_too_many else _Step.NOT_FOUND

    def _allocate_device(
        self, position: tuple[int, int, int, int], candidate: _Candidate, must: bool
    ) -> Callable[[], None] | None:
        """Tentatively allocate a selectable device; return how to undo it, or None.

        Checks, in upstream's order: availability, counters, taints, constraints,
        capacity. With ``must`` (allocationMode All) a violated constraint is an error.
        Whatever a rejected candidate reserved is given back before returning.
        """
        claim_index, request_index, sub_index, _ = position
        data = self.request_data[(claim_index, request_index, sub_index)]
        request = data.request
        device, device_id, pool = candidate.device, candidate.device_id, candidate.pool
        allow_multiple = (
            self.features.consumable_capacity and device.allow_multiple_allocations is True
        )

        if (
            not allow_multiple
            and request.admin
            and self._allocating_for_claim(device_id, claim_index)
        ):
            return None
        if not request.admin:
            if self._in_use(device_id):
                return None
            if not allow_multiple and self._shared(device_id):
                return None  # a committed share blocks exclusive use (kubernetes#140798)
        if not self.features.partitionable_devices and device.consumes_counters:
            return None

        # Counters are paid once per physical device, by its first share.
        pays_counters = bool(device.consumes_counters) and not (
            allow_multiple and self._shared(device_id)
        )
        if pays_counters and not self.counters.reserve(pool, device):
            return None

        def give_back_counters() -> None:
            if pays_counters:
                self.counters.release(pool, device)

        if data.parent is None:
            base_name, sub_name = request.name, None
        else:
            base_name, sub_name = data.parent, request.name

        if self.features.device_taints and taint_blocks(device.taints, request.tolerations):
            give_back_counters()
            return None

        constraints = self.constraints[claim_index]
        for index, constraint in enumerate(constraints):
            if constraint.add(base_name, sub_name, device, device_id):
                continue
            for earlier in reversed(constraints[:index]):
                earlier.remove(base_name, sub_name, device, device_id)
            give_back_counters()
            if must:
                raise AllocationError(
                    texts.constraint_not_satisfied(
                        self.claims[claim_index].key, request.name, device_id
                    )
                )
            return None

        def remove_from_constraints() -> None:
            for constraint in reversed(constraints):
                constraint.remove(base_name, sub_name, device, device_id)

        share_id: str | None = None
        consumed: dict[str, Quantity] | None = None
        if self.features.consumable_capacity:
            if not self._capacity_fits(request, device, device_id):
                remove_from_constraints()
                give_back_counters()
                return None
            if allow_multiple:
                consumed = consumed_capacity(request.capacity, device.capacity)
                share_id = str(uuid.uuid4())
                self.live_shares.setdefault(device_id, []).append(consumed)

        if not allow_multiple:
            self.allocating.setdefault(device_id, set()).add(claim_index)
        results = self.results[claim_index]
        results.append(
            ChosenDevice(
                request=request.name,
                parent_request=data.parent,
                device_id=device_id,
                device=device,
                slice=candidate.slice,
                share_id=share_id,
                consumed_capacity=consumed or None,
                admin_access=request.admin,
            )
        )
        previous_length = len(results) - 1

        def undo() -> None:
            remove_from_constraints()
            if allow_multiple:
                if consumed is not None:
                    self.live_shares[device_id].pop()
            else:
                self.allocating[device_id].discard(claim_index)
            give_back_counters()
            del results[previous_length:]

        return undo


__all__ = ["ReferenceAllocator", "Stats"]
