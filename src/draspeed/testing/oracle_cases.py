"""draspeed's model objects as one input line of the upstream allocator's harness.

``shared/oracle`` (the real upstream allocator behind a JSON-lines harness, see its
README) reads one case per line: ``slices``, ``classes`` and ``claims`` as
resource.k8s.io/v1 objects with the API server's defaults applied, the ``node`` or
``nodes`` to ask, the in-use state (``allocatedDevices``, ``allocatedSharedDevices``,
``aggregatedCapacity``) and the ``features`` by ``structured.Features`` field name.

:func:`oracle_case` writes what draspeed decoded, whatever API version the objects came
in: the v1 shape of the model, not the user's mapping, so upstream is asked about exactly
the inputs draspeed answered. Two normalisations follow from the model:

- attribute names are keyed fully qualified in the model; a name in the slice driver's
  own domain is written bare again (as drivers publish them; upstream qualifies bare
  attribute names itself). Capacity names are kept as written (upstream compares them
  literally: ``mem`` and ``<driver>/mem`` are two capacities), and so written: in
  slices, claim requests, results, committed and in-use consumption;
- the in-use state is what draspeed derives from the allocated claims
  (:class:`draspeed.rules.allocated_state.AllocatedState`, kube-scheduler's
  ``foreachAllocatedDevice``).

DeviceTaintRules are not a harness input: apply them to the slices first
(``draspeed.cluster.Cluster.from_objects`` does), as the scheduler does.

Nothing in the package calls the harness; this module only writes its input.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from draspeed.api import json_as_go
from draspeed.api.encode import encode_node_selector, encode_toleration
from draspeed.api.model import (
    CapacityRequestPolicy,
    CapacityRequirements,
    CounterSet,
    Device,
    DeviceAttribute,
    DeviceCapacity,
    DeviceClaim,
    DeviceClass,
    DeviceCounterConsumption,
    DeviceRequest,
    DeviceSelector,
    DeviceSubRequest,
    DeviceTaint,
    ExactDeviceRequest,
    Node,
    ObjectMeta,
    OpaqueDeviceConfiguration,
    ResourceClaim,
    ResourceSlice,
)
from draspeed.features import Features
from draspeed.quantity import Quantity
from draspeed.rules.allocated_state import AllocatedState

API_VERSION = "resource.k8s.io/v1"

# The harness always uses this allocator: the upstream variant with every feature.
ALLOCATOR = "experimental"

# structured.Features field -> the draspeed Features property it follows.
_FEATURES = {
    "AdminAccess": "admin_access",
    "PrioritizedList": "prioritized_list",
    "PartitionableDevices": "partitionable_devices",
    "DeviceTaints": "device_taints",
    "ConsumableCapacity": "consumable_capacity",
    "DeviceBindingAndStatus": "device_binding_and_status",
    "ListTypeAttributes": "list_type_attributes",
}

Obj = dict[str, Any]


def oracle_features(features: Features) -> dict[str, bool]:
    """``features`` of a case: upstream's ``structured.Features`` as draspeed sets them."""
    return {name: bool(getattr(features, attr)) for name, attr in _FEATURES.items()}


def oracle_case(
    slices: Sequence[ResourceSlice],
    classes: Sequence[DeviceClass],
    claims: Sequence[ResourceClaim],
    *,
    node: Node | None = None,
    nodes: Sequence[Node] = (),
    allocated: Iterable[ResourceClaim] = (),
    features: Features | None = None,
    case_id: str = "",
    normalize_share_ids: bool = True,
) -> Obj:
    """One harness case, JSON-ready: ``claims`` to allocate together on ``node``
    (``-batch``, ``-bench``) or on each of ``nodes`` (``-bench-nodes``), with the
    devices that ``allocated`` claims hold in use."""
    features = features or Features()
    case: Obj = {
        "id": case_id,
        "allocator": ALLOCATOR,
        "features": oracle_features(features),
        "slices": [encode_slice(s) for s in slices],
        "classes": [encode_class(c) for c in classes],
        "claims": [encode_claim(c) for c in claims],
    }
    if node is not None:
        case["node"] = encode_node(node)
    if nodes:
        case["nodes"] = [encode_node(n) for n in nodes]
    case.update(in_use(allocated, features))
    if normalize_share_ids:
        case["normalizeShareIDs"] = True
    return case


def case_line(case: Obj) -> bytes:
    """The case as one line of the harness's input (newline included)."""
    return json_as_go.ENCODER.encode(case) + b"\n"


def in_use(claims: Iterable[ResourceClaim], features: Features) -> Obj:
    """``allocatedDevices``, ``allocatedSharedDevices`` and ``aggregatedCapacity`` of the
    claims' allocations, each sorted (the harness reads them into sets)."""
    state = AllocatedState.from_claims(claims, consumable_capacity=features.consumable_capacity)
    out: Obj = {
        "allocatedDevices": [
            {"driver": d.driver, "pool": d.pool, "device": d.device} for d in sorted(state.devices)
        ]
    }
    if state.shared_devices:
        out["allocatedSharedDevices"] = [
            {"driver": s.driver, "pool": s.pool, "device": s.device, "shareID": s.share_id}
            for s in sorted(state.shared_devices)
        ]
    if state.consumed_capacity:
        out["aggregatedCapacity"] = [
            {
                "driver": d.driver,
                "pool": d.pool,
                "device": d.device,
                "consumedCapacity": {name: q.exact_text() for name, q in sorted(consumed.items())},
            }
            for d, consumed in sorted(state.consumed_capacity.items())
        ]
    return out


# ------------------------------------------------------------------------------ objects


def _as_published(name: str, driver: str) -> str:
    """A model key (``domain/id``) as drivers publish it: bare in their own domain."""
    domain, _, ident = name.rpartition("/")
    return ident if domain == driver else name


def _metadata(meta: ObjectMeta) -> Obj:
    out: Obj = {"name": meta.name}
    if meta.namespace:
        out["namespace"] = meta.namespace
    if meta.uid:
        out["uid"] = meta.uid
    if meta.labels:
        out["labels"] = dict(meta.labels)
    return out


def _object(kind: str, meta: ObjectMeta, spec: Obj) -> Obj:
    """A v1 object (typed, so that draspeed can load the case's objects back too)."""
    return {"apiVersion": API_VERSION, "kind": kind, "metadata": _metadata(meta), "spec": spec}


def encode_node(node: Node) -> Obj:
    """A Node as the allocator reads it: name and labels."""
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": node.name, "labels": dict(node.labels)},
    }


def encode_slice(slice_: ResourceSlice) -> Obj:
    spec = slice_.spec
    driver = spec.driver
    out: Obj = {
        "driver": driver,
        "pool": {
            "name": spec.pool.name,
            "generation": spec.pool.generation,
            "resourceSliceCount": spec.pool.resource_slice_count,
        },
    }
    if spec.node_name is not None:
        out["nodeName"] = spec.node_name
    if spec.node_selector is not None:
        out["nodeSelector"] = encode_node_selector(spec.node_selector)
    if spec.all_nodes is not None:
        out["allNodes"] = spec.all_nodes
    if spec.per_device_node_selection is not None:
        out["perDeviceNodeSelection"] = spec.per_device_node_selection
    if spec.devices:
        out["devices"] = [_device(d, driver) for d in spec.devices]
    if spec.shared_counters:
        out["sharedCounters"] = [_counter_set(c) for c in spec.shared_counters]
    return _object("ResourceSlice", slice_.metadata, out)


def _device(device: Device, driver: str) -> Obj:
    out: Obj = {"name": device.name}
    if device.attributes:
        out["attributes"] = {
            _as_published(name, driver): _attribute(value)
            for name, value in device.attributes.items()
        }
    if device.capacity:
        out["capacity"] = {name: _capacity(value) for name, value in device.capacity.items()}
    if device.consumes_counters:
        out["consumesCounters"] = [_consumption(c) for c in device.consumes_counters]
    if device.node_name is not None:
        out["nodeName"] = device.node_name
    if device.node_selector is not None:
        out["nodeSelector"] = encode_node_selector(device.node_selector)
    if device.all_nodes is not None:
        out["allNodes"] = device.all_nodes
    if device.taints:
        out["taints"] = [_taint(t) for t in device.taints]
    if device.binds_to_node is not None:
        out["bindsToNode"] = device.binds_to_node
    if device.binding_conditions:
        out["bindingConditions"] = list(device.binding_conditions)
    if device.binding_failure_conditions:
        out["bindingFailureConditions"] = list(device.binding_failure_conditions)
    if device.allow_multiple_allocations is not None:
        out["allowMultipleAllocations"] = device.allow_multiple_allocations
    return out


def _attribute(attribute: DeviceAttribute) -> Obj:
    """One typed value; an attribute without a value stays ``{}`` (upstream reports it)."""
    if attribute.kind is None:
        return {}
    value = attribute.value
    return {attribute.kind: list(value) if isinstance(value, tuple) else value}


def _quantity(q: Quantity | None) -> str | None:
    return None if q is None else str(q)


def _capacity(capacity: DeviceCapacity) -> Obj:
    out: Obj = {"value": str(capacity.value)}
    if capacity.request_policy is not None:
        out["requestPolicy"] = _request_policy(capacity.request_policy)
    return out


def _request_policy(policy: CapacityRequestPolicy) -> Obj:
    out: Obj = {}
    if policy.default is not None:
        out["default"] = str(policy.default)
    if policy.valid_values:
        out["validValues"] = [str(v) for v in policy.valid_values]
    if policy.valid_range is not None:
        bounds = {
            "min": _quantity(policy.valid_range.min),
            "max": _quantity(policy.valid_range.max),
            "step": _quantity(policy.valid_range.step),
        }
        out["validRange"] = {k: v for k, v in bounds.items() if v is not None}
    return out


def _counters(counters: dict[str, Any]) -> Obj:
    return {name: {"value": str(c.value)} for name, c in counters.items()}


def _counter_set(counter_set: CounterSet) -> Obj:
    return {"name": counter_set.name, "counters": _counters(counter_set.counters)}


def _consumption(consumption: DeviceCounterConsumption) -> Obj:
    return {"counterSet": consumption.counter_set, "counters": _counters(consumption.counters)}


def _taint(taint: DeviceTaint) -> Obj:
    out: Obj = {"key": taint.key}
    if taint.value:
        out["value"] = taint.value
    out["effect"] = taint.effect
    if taint.time_added is not None:
        out["timeAdded"] = taint.time_added
    return out


def encode_class(device_class: DeviceClass) -> Obj:
    spec = device_class.spec
    out: Obj = {}
    if spec.selectors:
        out["selectors"] = _selectors(spec.selectors)
    if spec.config:
        out["config"] = [
            {} if c.opaque is None else {"opaque": _opaque(c.opaque)} for c in spec.config
        ]
    if spec.extended_resource_name is not None:
        out["extendedResourceName"] = spec.extended_resource_name
    return _object("DeviceClass", device_class.metadata, out)


def _selectors(selectors: Sequence[DeviceSelector]) -> list[Obj]:
    """A selector of a type the model does not know stays ``{}`` (upstream reports it)."""
    return [{} if s.cel is None else {"cel": {"expression": s.cel.expression}} for s in selectors]


def _opaque(opaque: OpaqueDeviceConfiguration) -> Obj:
    return {"driver": opaque.driver, "parameters": opaque.parameters}


# ------------------------------------------------------------------------------- claims


def encode_claim(claim: ResourceClaim) -> Obj:
    """A claim's metadata and v1 spec with the API server's defaults (no status: the
    harness takes the in-use state separately)."""
    return _object("ResourceClaim", claim.metadata, {"devices": _device_claim(claim.spec.devices)})


def _device_claim(devices: DeviceClaim) -> Obj:
    out: Obj = {}
    if devices.requests:
        out["requests"] = [_request(r) for r in devices.requests]
    if devices.constraints:
        constraints = []
        for c in devices.constraints:
            constraint: Obj = {}
            if c.requests:
                constraint["requests"] = list(c.requests)
            if c.match_attribute is not None:
                constraint["matchAttribute"] = c.match_attribute
            if c.distinct_attribute is not None:
                constraint["distinctAttribute"] = c.distinct_attribute
            constraints.append(constraint)
        out["constraints"] = constraints
    if devices.config:
        configs = []
        for cfg in devices.config:
            config: Obj = {}
            if cfg.requests:
                config["requests"] = list(cfg.requests)
            if cfg.opaque is not None:
                config["opaque"] = _opaque(cfg.opaque)
            configs.append(config)
        out["config"] = configs
    return out


def _request(request: DeviceRequest) -> Obj:
    out: Obj = {"name": request.name}
    if request.exactly is not None:
        out["exactly"] = _exact(request.exactly)
    if request.first_available:
        out["firstAvailable"] = [_exact(s) for s in request.first_available]
    return out


def _exact(request: ExactDeviceRequest | DeviceSubRequest) -> Obj:
    out: Obj = {}
    if isinstance(request, DeviceSubRequest):
        out["name"] = request.name
    out["deviceClassName"] = request.device_class_name
    if request.selectors:
        out["selectors"] = _selectors(request.selectors)
    out["allocationMode"] = request.allocation_mode
    if request.count:
        out["count"] = request.count
    if isinstance(request, ExactDeviceRequest) and request.admin_access is not None:
        out["adminAccess"] = request.admin_access
    if request.tolerations:
        out["tolerations"] = [encode_toleration(t) for t in request.tolerations]
    if request.capacity is not None:
        out["capacity"] = _capacity_requirements(request.capacity)
    return out


def _capacity_requirements(capacity: CapacityRequirements) -> Obj:
    if not capacity.requests:
        return {}
    return {"requests": {name: str(q) for name, q in capacity.requests.items()}}
