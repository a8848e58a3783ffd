"""The one internal model of the DRA objects, whatever API version they came in.

Class names follow the Go types of ``resource.k8s.io/v1`` (kubernetes/api
``resource/v1/types.go``); field names are the snake_case of the JSON names.
Quantities are :class:`draspeed.quantity.Quantity`; optional pointers are ``None``
when unset, lists and maps are empty when unset.

Top-level objects keep the mapping they were decoded from in ``raw`` so that
everything the user gave (unknown fields included) survives an echo: results are
written into a copy of ``raw``, never rebuilt from the model. A ResourceSlice or
ResourceClaim of a bulk JSON text may hold its JSON text instead, decoded to that
mapping on first read (see :class:`ResourceSlice`).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import msgspec

from draspeed.api import json_as_go
from draspeed.quantity import Quantity

# --------------------------------------------------------------------------------------
# Metadata and node selection
# --------------------------------------------------------------------------------------


@dataclass(slots=True)
class ObjectMeta:
    name: str = ""
    namespace: str = ""
    uid: str = ""
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    generation: int = 0
    resource_version: str = ""


@dataclass(slots=True)
class NodeSelectorRequirement:
    key: str
    operator: str  # In, NotIn, Exists, DoesNotExist, Gt, Lt
    values: list[str] = field(default_factory=list)


@dataclass(slots=True)
class NodeSelectorTerm:
    match_expressions: list[NodeSelectorRequirement] = field(default_factory=list)
    match_fields: list[NodeSelectorRequirement] = field(default_factory=list)


@dataclass(slots=True)
class NodeSelector:
    node_selector_terms: list[NodeSelectorTerm] = field(default_factory=list)


@dataclass(slots=True)
class Node:
    """A node as the allocator sees it: its name, labels and selectable fields."""

    metadata: ObjectMeta
    raw: dict[str, Any] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.metadata.name

    @property
    def labels(self) -> dict[str, str]:
        return self.metadata.labels


# --------------------------------------------------------------------------------------
# ResourceSlice
# --------------------------------------------------------------------------------------

AttributeKind = Literal["int", "bool", "string", "version", "ints", "bools", "strings", "versions"]


@dataclass(slots=True, frozen=True)
class DeviceAttribute:
    """Exactly one typed value; ``kind`` is None when the attribute has no value set.

    ``value`` is an ``int``, ``bool`` or ``str`` (versions stay strings here; CEL
    parses them), or a tuple of those for the list kinds.
    """

    kind: AttributeKind | None
    value: Any = None


@dataclass(slots=True)
class CapacityRequestPolicyRange:
    min: Quantity | None = None
    max: Quantity | None = None
    step: Quantity | None = None


@dataclass(slots=True)
class CapacityRequestPolicy:
    default: Quantity | None = None
    valid_values: list[Quantity] = field(default_factory=list)
    valid_range: CapacityRequestPolicyRange | None = None


@dataclass(slots=True)
class DeviceCapacity:
    value: Quantity
    request_policy: CapacityRequestPolicy | None = None


@dataclass(slots=True)
class Counter:
    value: Quantity


@dataclass(slots=True)
class CounterSet:
    name: str
    counters: dict[str, Counter] = field(default_factory=dict)


@dataclass(slots=True)
class DeviceCounterConsumption:
    counter_set: str
    counters: dict[str, Counter] = field(default_factory=dict)


@dataclass(slots=True)
class DeviceTaint:
    key: str
    value: str = ""
    effect: str = ""  # NoSchedule, NoExecute, None (anything else is kept and ignored)
    time_added: str | None = None


@dataclass(slots=True)
class Device:
    name: str
    # Attribute keys are fully qualified ``domain/id`` (a bare id was put under the
    # driver's domain), as upstream looks attributes up. Capacity keys are as the slice
    # wrote them: upstream compares claim requests, committed consumption and results'
    # ``consumedCapacity`` with them literally (CEL alone reads a bare one under the
    # driver's domain).
    attributes: dict[str, DeviceAttribute] = field(default_factory=dict)
    capacity: dict[str, DeviceCapacity] = field(default_factory=dict)
    consumes_counters: list[DeviceCounterConsumption] = field(default_factory=list)
    node_name: str | None = None
    node_selector: NodeSelector | None = None
    all_nodes: bool | None = None
    taints: list[DeviceTaint] = field(default_factory=list)
    binds_to_node: bool | None = None
    binding_conditions: list[str] = field(default_factory=list)
    binding_failure_conditions: list[str] = field(default_factory=list)
    allow_multiple_allocations: bool | None = None


@dataclass(slots=True)
class ResourcePool:
    name: str
    generation: int = 0
    resource_slice_count: int = 0


@dataclass(slots=True)
class ResourceSliceSpec:
    driver: str
    pool: ResourcePool
    node_name: str | None = None
    node_selector: NodeSelector | None = None
    all_nodes: bool | None = None
    per_device_node_selection: bool | None = None
    devices: list[Device] = field(default_factory=list)
    shared_counters: list[CounterSet] = field(default_factory=list)


_RAW_LOCK = threading.Lock()


def _raw_from_text(obj: Any, name: str) -> Any:
    """``__getattr__`` of a class with a lazily decoded ``raw`` (called only when the
    normal lookup fails: here, for an empty ``raw`` slot): ``raw_text`` decoded once,
    under a lock so that concurrent first readers get the same dict."""
    if name != "raw":
        raise AttributeError(f"{type(obj).__name__!r} object has no attribute {name!r}")
    slot = _RAW_SLOTS[type(obj)]
    with _RAW_LOCK:
        try:
            return slot.__get__(obj, type(obj))  # decoded meanwhile
        except AttributeError:
            pass
        text = obj.raw_text
        if text is None:
            raise AttributeError(f"{type(obj).__name__!r} object has no attribute 'raw'")
        value = json_as_go.decode(text)
        obj.raw = value
        obj.raw_text = None
        return value


@dataclass(slots=True)
class ResourceSlice:
    """A ResourceSlice. ``raw`` may be decoded on first read from ``raw_text``.

    A cluster dump is mostly ResourceSlices, and building the dict of each while the
    text is read costs as much as the rest of the decoding, while ``raw`` is rarely
    read (encoders, what-if copies). So the bulk JSON decoder leaves the ``raw`` slot
    empty and keeps the slice's JSON text (a ``msgspec.Raw`` view of the input, which
    stays in memory while such slices live) in ``raw_text`` instead. Reading ``raw``
    (also through ``==``, ``repr``, ``dataclasses.replace``, copy and pickle) then
    decodes it once, under a lock so that concurrent first readers get the same dict:
    the same content, key order and explicit nulls as decoding the whole input at once.
    ``raw_text`` is not part of equality, ``repr`` or the constructor.
    """

    metadata: ObjectMeta
    spec: ResourceSliceSpec
    api_version: str = "resource.k8s.io/v1"
    raw: dict[str, Any] = field(default_factory=dict)
    raw_text: msgspec.Raw | None = field(default=None, init=False, repr=False, compare=False)

    if not TYPE_CHECKING:  # mypy would take any misspelt attribute for one

        def __getattr__(self, name: str) -> Any:
            return _raw_from_text(self, name)


# --------------------------------------------------------------------------------------
# DeviceClass
# --------------------------------------------------------------------------------------


@dataclass(slots=True)
class CELDeviceSelector:
    expression: str


@dataclass(slots=True)
class DeviceSelector:
    cel: CELDeviceSelector | None = None  # None: a selector type this version does not know


@dataclass(slots=True)
class OpaqueDeviceConfiguration:
    driver: str
    parameters: Any = None  # the RawExtension as decoded JSON/YAML, echoed verbatim


@dataclass(slots=True)
class DeviceClassConfiguration:
    opaque: OpaqueDeviceConfiguration | None = None


@dataclass(slots=True)
class DeviceClassSpec:
    selectors: list[DeviceSelector] = field(default_factory=list)
    config: list[DeviceClassConfiguration] = field(default_factory=list)
    extended_resource_name: str | None = None


@dataclass(slots=True)
class DeviceClass:
    metadata: ObjectMeta
    spec: DeviceClassSpec
    api_version: str = "resource.k8s.io/v1"
    raw: dict[str, Any] = field(default_factory=dict)


# --------------------------------------------------------------------------------------
# ResourceClaim
# --------------------------------------------------------------------------------------


@dataclass(slots=True)
class DeviceToleration:
    key: str = ""
    operator: str = "Equal"  # Equal, Exists
    value: str = ""
    effect: str = ""
    toleration_seconds: int | None = None


@dataclass(slots=True)
class CapacityRequirements:
    requests: dict[str, Quantity] = field(default_factory=dict)


@dataclass(slots=True)
class ExactDeviceRequest:
    device_class_name: str
    selectors: list[DeviceSelector] = field(default_factory=list)
    allocation_mode: str = "ExactCount"  # ExactCount, All (other strings are kept)
    count: int = 1
    admin_access: bool | None = None
    tolerations: list[DeviceToleration] = field(default_factory=list)
    capacity: CapacityRequirements | None = None


@dataclass(slots=True)
class DeviceSubRequest:
    name: str
    device_class_name: str
    selectors: list[DeviceSelector] = field(default_factory=list)
    allocation_mode: str = "ExactCount"
    count: int = 1
    tolerations: list[DeviceToleration] = field(default_factory=list)
    capacity: CapacityRequirements | None = None


@dataclass(slots=True)
class DeviceRequest:
    name: str
    exactly: ExactDeviceRequest | None = None
    first_available: list[DeviceSubRequest] = field(default_factory=list)


@dataclass(slots=True)
class DeviceConstraint:
    requests: list[str] = field(default_factory=list)
    match_attribute: str | None = None  # fully qualified
    distinct_attribute: str | None = None

    @property
    def attribute(self) -> str | None:
        """The attribute the constraint names: ``matchAttribute`` when it is set (""
        too, which only unvalidated input has), else ``distinctAttribute``."""
        return self.match_attribute if self.match_attribute is not None else self.distinct_attribute


@dataclass(slots=True)
class DeviceClaimConfiguration:
    requests: list[str] = field(default_factory=list)
    opaque: OpaqueDeviceConfiguration | None = None


@dataclass(slots=True)
class DeviceClaim:
    requests: list[DeviceRequest] = field(default_factory=list)
    constraints: list[DeviceConstraint] = field(default_factory=list)
    config: list[DeviceClaimConfiguration] = field(default_factory=list)


@dataclass(slots=True)
class ResourceClaimSpec:
    devices: DeviceClaim = field(default_factory=DeviceClaim)


@dataclass(slots=True)
class DeviceRequestAllocationResult:
    request: str
    driver: str
    pool: str
    device: str
    admin_access: bool | None = None
    tolerations: list[DeviceToleration] = field(default_factory=list)
    binding_conditions: list[str] = field(default_factory=list)
    binding_failure_conditions: list[str] = field(default_factory=list)
    share_id: str | None = None
    consumed_capacity: dict[str, Quantity] = field(default_factory=dict)


@dataclass(slots=True)
class DeviceAllocationConfiguration:
    source: str  # FromClass, FromClaim
    requests: list[str] = field(default_factory=list)
    opaque: OpaqueDeviceConfiguration | None = None


@dataclass(slots=True)
class DeviceAllocationResult:
    results: list[DeviceRequestAllocationResult] = field(default_factory=list)
    config: list[DeviceAllocationConfiguration] = field(default_factory=list)


@dataclass(slots=True)
class AllocationResult:
    devices: DeviceAllocationResult = field(default_factory=DeviceAllocationResult)
    node_selector: NodeSelector | None = None
    allocation_timestamp: str | None = None


@dataclass(slots=True)
class ResourceClaimConsumerReference:
    resource: str
    name: str
    uid: str
    api_group: str = ""


@dataclass(slots=True)
class ResourceClaimStatus:
    allocation: AllocationResult | None = None
    reserved_for: list[ResourceClaimConsumerReference] = field(default_factory=list)
    # Device status entries are echoed, not interpreted: kept as decoded mappings.
    devices: list[dict[str, Any]] = field(default_factory=list)
    # Classic (v1alpha2) only: the claim is being deallocated but still holds its devices.
    deallocation_requested: bool = False


@dataclass(slots=True)
class ResourceClaim:
    """A ResourceClaim. ``raw`` may be decoded on first read from ``raw_text``, as for
    :class:`ResourceSlice`: a cluster dump holds thousands of allocated claims, whose
    dicts were half of their memory."""

    metadata: ObjectMeta
    spec: ResourceClaimSpec
    status: ResourceClaimStatus = field(default_factory=ResourceClaimStatus)
    api_version: str = "resource.k8s.io/v1"
    raw: dict[str, Any] = field(default_factory=dict)
    raw_text: msgspec.Raw | None = field(default=None, init=False, repr=False, compare=False)

    if not TYPE_CHECKING:

        def __getattr__(self, name: str) -> Any:
            return _raw_from_text(self, name)

    @property
    def key(self) -> str:
        """``namespace/name``, as upstream prints a claim (klog.KObj)."""
        if self.metadata.namespace:
            return f"{self.metadata.namespace}/{self.metadata.name}"
        return self.metadata.name


# The ``raw`` slot of each class with a lazily decoded ``raw``.
_RAW_SLOTS: dict[type, Any] = {
    ResourceSlice: ResourceSlice.__dict__["raw"],
    ResourceClaim: ResourceClaim.__dict__["raw"],
}


@dataclass(slots=True)
class ResourceClaimTemplate:
    metadata: ObjectMeta
    spec: ResourceClaimSpec  # the template's spec.spec
    api_version: str = "resource.k8s.io/v1"
    raw: dict[str, Any] = field(default_factory=dict)


# --------------------------------------------------------------------------------------
# DeviceTaintRule
# --------------------------------------------------------------------------------------


@dataclass(slots=True)
class DeviceTaintSelector:
    device_class_name: str | None = None
    driver: str | None = None
    pool: str | None = None
    device: str | None = None
    selectors: list[DeviceSelector] = field(default_factory=list)


@dataclass(slots=True)
class DeviceTaintRule:
    metadata: ObjectMeta
    device_selector: DeviceTaintSelector | None
    taint: DeviceTaint
    api_version: str = "resource.k8s.io/v1alpha3"
    raw: dict[str, Any] = field(default_factory=dict)


# --------------------------------------------------------------------------------------
# Pod (core/v1): only what scheduling a pod's claims reads
# --------------------------------------------------------------------------------------


@dataclass(slots=True)
class PodResourceClaim:
    """One entry of ``spec.resourceClaims``: a claim by name, or a template to make one."""

    name: str
    resource_claim_name: str | None = None
    resource_claim_template_name: str | None = None


@dataclass(slots=True)
class Container:
    """A container's resource requests (extended resources among them)."""

    name: str
    requests: dict[str, Quantity] = field(default_factory=dict)
    restart_always: bool = False  # an init container with restartPolicy Always: a sidecar


@dataclass(slots=True)
class Pod:
    metadata: ObjectMeta
    resource_claims: list[PodResourceClaim] = field(default_factory=list)
    init_containers: list[Container] = field(default_factory=list)
    containers: list[Container] = field(default_factory=list)
    overhead: dict[str, Quantity] = field(default_factory=dict)
    node_name: str = ""
    phase: str = ""
    deleting: bool = False  # metadata.deletionTimestamp is set
    # status.resourceClaimStatuses: pod claim name -> the claim made for it (None: none
    # needed), as kube-controller-manager records it.
    claim_statuses: dict[str, str | None] = field(default_factory=dict)
    raw: dict[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> str:
        """``namespace/name``."""
        return f"{self.metadata.namespace}/{self.metadata.name}"


DRAObject = (
    ResourceSlice
    | DeviceClass
    | ResourceClaim
    | ResourceClaimTemplate
    | DeviceTaintRule
    | Node
    | Pod
)
