"""Extended resources backed by DRA: the claim kube-scheduler makes for them.

With the DRAExtendedResource gate, a pod may ask for devices as an extended resource
(``resources.requests: {example.com/gpu: 2}``) when a DeviceClass names that resource
in ``spec.extendedResourceName``, or by the class's implicit name
``deviceclass.resource.kubernetes.io/<class>``. The scheduler's DynamicResources
plugin (``extendeddynamicresources.go``) then allocates, on each node that does not
offer the resource through a device plugin (allocatable missing or 0), one claim:

- the pod's requests are summed as ``PodRequests`` sums them (containers and sidecars
  added, init containers as a maximum, plus overhead), rounded up to integers;
- for each such resource, in sorted order, one request per container that asks for
  it, named ``container-<i>-request-<j>`` (``i`` counts init containers first, ``j``
  is the resource's position among the container's sorted request names), an
  ``ExactCount`` request of the class for the container's amount; an init container
  that is not a sidecar first uses the requests of the long-lived containers after
  it and asks only for the rest, and only the largest such request is kept;
- requests sorted by name; the claim comes after the pod's own claims.

A node that offers the resource neither way does not fit ("cannot fit resource").
Which class backs a name: the one with ``extendedResourceName`` equal to it (the
newest by ``creationTimestamp``, then the first by name, if several), else the class
named by the implicit form.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from draspeed.api import names
from draspeed.api.decode import decode_object
from draspeed.api.model import Container, DeviceClass, Node, Pod, ResourceClaim
from draspeed.pods.templates import generated_name, owner_reference
from draspeed.quantity import Quantity

DEVICE_CLASS_PREFIX = "deviceclass.resource.kubernetes.io/"
EXTENDED_RESOURCE_CLAIM_ANNOTATION = "resource.kubernetes.io/extended-resource-claim"
_NANO = 10**9


def is_dra_extended_resource_name(name: str) -> bool:
    """Upstream's IsDRAExtendedResourceName: an extended resource name (qualified, with
    a domain that is not kubernetes.io, not ``requests.``-prefixed), or the implicit
    name of a DeviceClass."""
    return name.startswith(DEVICE_CLASS_PREFIX) or names.is_extended_resource_name(name)


def class_for(resource: str, classes: Sequence[DeviceClass]) -> DeviceClass | None:
    """The DeviceClass that backs an extended resource name, or None."""
    explicit = [c for c in classes if c.spec.extended_resource_name == resource]
    if explicit:
        # Newest first (RFC 3339 UTC timestamps sort as text), then the first name.
        newest = max(_created(c) for c in explicit)
        return min((c for c in explicit if _created(c) == newest), key=lambda c: c.metadata.name)
    if resource.startswith(DEVICE_CLASS_PREFIX):
        name = resource[len(DEVICE_CLASS_PREFIX) :]
        for c in classes:
            if c.metadata.name == name:
                return c
    return None


def pod_requests(pod: Pod) -> dict[str, int]:
    """The pod's resource requests in nanos, as ``PodRequests`` adds them up."""
    total: dict[str, int] = {}
    for c in pod.containers:
        _add(total, c.requests)
    sidecars: dict[str, int] = {}
    init_max: dict[str, int] = {}
    for c in pod.init_containers:
        if c.restart_always:
            _add(total, c.requests)
            _add(sidecars, c.requests)
            needs = dict(sidecars)
        else:
            needs = {}
            _add(needs, c.requests)
            for name, v in sidecars.items():
                needs[name] = needs.get(name, 0) + v
        for name, v in needs.items():
            init_max[name] = max(init_max.get(name, 0), v)
    for name, v in init_max.items():
        total[name] = max(total.get(name, 0), v)
    for name, q in pod.overhead.items():
        total[name] = total.get(name, 0) + q.nanos
    return total


def backed_resources(pod: Pod, classes: Sequence[DeviceClass]) -> dict[str, int]:
    """The pod's extended resources that a DeviceClass backs: name -> whole units
    (the scheduler's PreFilter: nothing to do for the pod when empty)."""
    out = {}
    for name, nanos in pod_requests(pod).items():
        if nanos and is_dra_extended_resource_name(name) and class_for(name, classes):
            out[name] = -(-nanos // _NANO)  # Value(): rounded up
    return out


@dataclass(frozen=True, slots=True)
class RequestMapping:
    """Which claim request serves which container's resource (the pod status's
    ``extendedResourceClaimStatus.requestMappings``)."""

    container: str
    resource: str
    request: str

    def to_dict(self) -> dict[str, str]:
        return {
            "containerName": self.container,
            "resourceName": self.resource,
            "requestName": self.request,
        }


class CannotFit(Exception):
    """The node offers an extended resource neither by device plugin nor by DRA
    (``str()`` is the scheduler's status message; ``resource`` names the resource)."""

    def __init__(self, resource: str) -> None:
        super().__init__("cannot fit resource")
        self.resource = resource


def node_allocatable(node: Node) -> dict[str, Any]:
    status = node.raw.get("status") if isinstance(node.raw, Mapping) else None
    allocatable = status.get("allocatable") if isinstance(status, Mapping) else None
    return dict(allocatable) if isinstance(allocatable, Mapping) else {}


def resources_for_node(pod: Pod, classes: Sequence[DeviceClass], node: Node) -> dict[str, int]:
    """What the node must give the pod through DRA (the plugin's Filter): the backed
    resources its allocatable does not offer. Raises CannotFit for a resource it
    offers neither way."""
    allocatable = node_allocatable(node)
    out = {}
    for name, nanos in sorted(pod_requests(pod).items()):
        if not is_dra_extended_resource_name(name) or not nanos:
            continue
        offered = allocatable.get(name)
        backed = class_for(name, classes) is not None
        if backed and (offered is None or Quantity.parse(str(offered)).is_zero()):
            out[name] = -(-nanos // _NANO)
        elif offered is None:
            raise CannotFit(name)
    return out


def extended_claim(
    pod: Pod, classes: Sequence[DeviceClass], resources: Mapping[str, int]
) -> tuple[ResourceClaim, list[RequestMapping]] | None:
    """The claim for ``resources`` (:func:`resources_for_node`), with the request
    mappings; None when there is nothing to ask for."""
    if not resources:
        return None
    requests, mappings = _requests_and_mappings(pod, classes, resources)
    base = f"{pod.metadata.name}-extended-resources-"
    seed = f"{pod.metadata.namespace}/{pod.metadata.name}/{pod.metadata.uid}/extended-resources"
    doc = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {
            "name": generated_name(base, seed),
            "generateName": base,
            "namespace": pod.metadata.namespace,
            "ownerReferences": [owner_reference(pod, block_owner_deletion=False)],
            "annotations": {EXTENDED_RESOURCE_CLAIM_ANNOTATION: "true"},
        },
        "spec": {"devices": {"requests": requests}},
    }
    claim = decode_object(doc, validate=False)
    assert isinstance(claim, ResourceClaim)
    return claim, mappings


def _requests_and_mappings(
    pod: Pod, classes: Sequence[DeviceClass], resources: Mapping[str, int]
) -> tuple[list[dict[str, Any]], list[RequestMapping]]:
    containers = [*pod.init_containers, *pod.containers]
    n_init = len(pod.init_containers)
    long_lived = [i for i, c in enumerate(containers) if i >= n_init or c.restart_always]
    short_lived = [i for i, c in enumerate(containers) if i < n_init and not c.restart_always]
    requests: list[dict[str, Any]] = []
    mappings: list[RequestMapping] = []
    for resource in sorted(resources):
        found = class_for(resource, classes)
        if found is None:
            continue
        class_name = found.metadata.name
        by_index: list[dict[str, Any] | None] = [None] * len(containers)
        long_maps: list[RequestMapping] = []
        for i in long_lived:
            request, maps = _container_request(i, containers[i], resource, class_name, [])
            by_index[i] = request
            long_maps.extend(maps)
        largest: dict[str, Any] | None = None
        short_names: set[str] = set()
        short_maps: list[RequestMapping] = []
        for i in short_lived:
            request, maps = _container_request(i, containers[i], resource, class_name, by_index[i:])
            if request is not None:
                short_names.add(request["name"])
                if largest is None or _count(largest) < _count(request):
                    largest = request
            short_maps.extend(maps)
        if largest is not None and len(short_names) > 1:
            # Init containers run one at a time: they share the largest request.
            short_names.discard(largest["name"])
            short_maps = [
                RequestMapping(m.container, m.resource, largest["name"])
                if m.request in short_names
                else m
                for m in short_maps
            ]
        if largest is not None:
            requests.append(largest)
        requests.extend(r for r in by_index if r is not None)
        mappings.extend(long_maps)
        mappings.extend(short_maps)
    requests.sort(key=lambda r: r["name"])
    return requests, mappings


def _container_request(
    index: int,
    container: Container,
    resource: str,
    class_name: str,
    reusable: Sequence[dict[str, Any] | None],
) -> tuple[dict[str, Any] | None, list[RequestMapping]]:
    """One container's request for ``resource`` (None if it needs none of its own),
    and the mappings of the requests it uses."""
    quantity = container.requests.get(resource)
    if quantity is None:
        return None, []
    nanos = quantity.nanos
    # AsInt64 fails, or nothing asked for (nor less: only unvalidated input has that).
    if nanos % _NANO or nanos <= 0:
        return None, []
    wanted = nanos // _NANO
    mappings = []
    total = 0
    for other in reusable:
        if other is None:
            continue
        total += _count(other)
        mappings.append(RequestMapping(container.name, resource, other["name"]))
        if total >= wanted:
            return None, mappings
    position = sorted(container.requests).index(resource)
    name = f"container-{index}-request-{position}"
    request = {
        "name": name,
        "exactly": {
            "deviceClassName": class_name,
            "allocationMode": "ExactCount",
            "count": wanted - total,
        },
    }
    mappings.append(RequestMapping(container.name, resource, name))
    return request, mappings


def _count(request: Mapping[str, Any]) -> int:
    count: int = request["exactly"]["count"]
    return count


def _add(total: dict[str, int], requests: Mapping[str, Quantity]) -> None:
    for name, q in requests.items():
        total[name] = total.get(name, 0) + q.nanos


def _created(cls: DeviceClass) -> str:
    meta = cls.raw.get("metadata") if isinstance(cls.raw, Mapping) else None
    value = meta.get("creationTimestamp") if isinstance(meta, Mapping) else None
    return str(value or "")
